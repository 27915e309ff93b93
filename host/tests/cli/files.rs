//! `--root` and `--files`: `clm.read_file` / `clm.write_file` inside the file root only.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::*;

/// Runs a tool of [`FILES_PLUGIN`] with `--root root`.
fn file_tool(plugins: &Path, root: &Path, tool: &str, args: Value) -> Run {
    run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins)
        .arg("--root")
        .arg(root)
        .arg(tool)
        .arg(args.to_string()))
}

/// Asserts a [`FILES_PLUGIN`] result is a refusal.
fn assert_refused(output: &Run, what: &str) {
    if let Err(problem) = refusal(output, what) {
        panic!("{problem}");
    }
}

/// A root with `inside.txt` and `sub/`, next to `outside.txt`, plus the plugin.
struct FilesFixture {
    base: TempDir,
}

impl FilesFixture {
    fn new() -> Self {
        let base = temp_dir();
        write(&base.path().join("plugins/files.lua"), FILES_PLUGIN);
        write(&base.path().join("root/inside.txt"), "inside content");
        fs::create_dir_all(base.path().join("root/sub")).expect("create root/sub");
        write(&base.path().join("outside.txt"), "outside original");
        FilesFixture { base }
    }

    fn plugins(&self) -> PathBuf {
        self.base.path().join("plugins")
    }

    fn root(&self) -> PathBuf {
        self.base.path().join("root")
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.base.path().join(name)
    }

    fn tool(&self, tool: &str, args: Value) -> Run {
        file_tool(&self.plugins(), &self.root(), tool, args)
    }

    fn assert_outside_untouched(&self) {
        assert_eq!(
            fs::read_to_string(self.outside("outside.txt")).expect("read outside.txt"),
            "outside original",
            "the file outside the root must be unchanged"
        );
    }
}

#[test]
fn read_file_reads_inside_the_root() {
    let fixture = FilesFixture::new();
    fixture
        .tool("read", json!({ "path": "inside.txt" }))
        .assert_completed("inside content|nil|nil");
    let absolute = fixture
        .root()
        .canonicalize()
        .expect("canonical root")
        .join("inside.txt");
    fixture
        .tool("read", json!({ "path": absolute.to_string_lossy() }))
        .assert_completed("inside content|nil|nil");
    assert_refused(
        &fixture.tool("read", json!({ "path": "sub/missing.txt" })),
        "reading a missing file",
    );
}

#[test]
fn read_file_refuses_paths_outside_the_root() {
    let fixture = FilesFixture::new();
    let absolute_outside = fixture.outside("outside.txt");
    for path in [
        "../outside.txt".to_string(),
        "sub/../../outside.txt".to_string(),
        absolute_outside.to_string_lossy().into_owned(),
    ] {
        let output = fixture.tool("read", json!({ "path": path }));
        assert_refused(&output, &format!("reading {path}"));
        assert!(
            !output.stdout.contains("outside original"),
            "the content outside the root must not leak{output}"
        );
    }
}

#[test]
fn write_file_writes_inside_the_root() {
    let fixture = FilesFixture::new();
    fixture
        .tool("write", json!({ "path": "new.txt", "content": "fresh" }))
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("new.txt")).expect("read new.txt"),
        "fresh"
    );
    fixture
        .tool(
            "write",
            json!({ "path": "sub/nested.txt", "content": "nested" }),
        )
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("sub/nested.txt")).expect("read nested.txt"),
        "nested"
    );
    fixture
        .tool(
            "write",
            json!({ "path": "inside.txt", "content": "replaced" }),
        )
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("inside.txt")).expect("read inside.txt"),
        "replaced"
    );
}

#[test]
fn write_file_refuses_paths_outside_the_root() {
    let fixture = FilesFixture::new();
    let cases = [
        ("../outside.txt".to_string(), "outside.txt"),
        ("../escaped.txt".to_string(), "escaped.txt"),
        ("sub/../../escaped_sub.txt".to_string(), "escaped_sub.txt"),
        (
            fixture
                .outside("escaped_abs.txt")
                .to_string_lossy()
                .into_owned(),
            "escaped_abs.txt",
        ),
        (
            fixture
                .outside("outside.txt")
                .to_string_lossy()
                .into_owned(),
            "outside.txt",
        ),
    ];
    for (path, target) in cases {
        let output = fixture.tool("write", json!({ "path": path, "content": "pwned" }));
        assert_refused(&output, &format!("writing {path}"));
        if target != "outside.txt" {
            assert!(
                !fixture.outside(target).exists(),
                "writing {path} must not create {target}{output}"
            );
        }
        fixture.assert_outside_untouched();
    }
}

#[cfg(unix)]
#[test]
fn symlinks_leading_out_of_the_root_are_refused() {
    use std::os::unix::fs::symlink;

    let fixture = FilesFixture::new();
    symlink(
        fixture.outside("outside.txt"),
        fixture.root().join("link_out"),
    )
    .expect("create a file symlink");
    symlink(fixture.base.path(), fixture.root().join("dir_out")).expect("create a dir symlink");
    let before = snapshot(fixture.base.path());

    for path in ["link_out", "dir_out/outside.txt"] {
        let output = fixture.tool("read", json!({ "path": path }));
        assert_refused(&output, &format!("reading through the symlink {path}"));
        assert!(!output.stdout.contains("outside original"), "{output}");
    }
    let mut failures = Vec::new();
    for path in [
        "dir_out/escaped_link.txt",
        "dir_out/outside.txt",
        "link_out",
    ] {
        let output = fixture.tool("write", json!({ "path": path, "content": "pwned" }));
        // Collect rather than stop at the first, so every escape shows up at once.
        if let Err(problem) = refusal(&output, &format!("writing through the symlink {path}")) {
            failures.push(problem);
        }
    }
    fixture.assert_outside_untouched();
    assert!(!fixture.outside("escaped_link.txt").exists());
    assert_eq!(
        snapshot(fixture.base.path()),
        before,
        "refused writes touch nothing, inside or outside the root (failures: {failures:#?})"
    );
    assert!(
        failures.is_empty(),
        "writes through symlinks leading out must fail: {failures:#?}"
    );
}

/// A plugin of tools `PREFIX_read`, `PREFIX_write` (as [`FILES_PLUGIN`]'s) and
/// `PREFIX_dir`, which answers `clm.data_dir`.
fn own_files_plugin(prefix: &str) -> String {
    format!(
        r#"
local function report(first, second)
  return tostring(first) .. "|" .. type(second) .. "|" .. tostring(second)
end
clm.tool_register("{prefix}_read", {{ invoke = function(args, ctx)
  ctx:complete(report(clm.read_file(args.path)))
end }})
clm.tool_register("{prefix}_write", {{ invoke = function(args, ctx)
  ctx:complete(report(clm.write_file(args.path, args.content)))
end }})
clm.tool_register("{prefix}_dir", {{ invoke = function(_, ctx)
  ctx:complete(tostring(clm.data_dir))
end }})
"#
    )
}

/// Two plugins, `a` and `b`, in one plugin directory, run with `XDG_DATA_HOME` set to
/// a directory of their own and a working directory that holds `present.txt`.
struct TwoPlugins {
    base: TempDir,
}

impl TwoPlugins {
    fn new() -> Self {
        let base = temp_dir();
        write(&base.path().join("plugins/a.lua"), own_files_plugin("a"));
        write(&base.path().join("plugins/b.lua"), own_files_plugin("b"));
        write(
            &base.path().join("cwd/present.txt"),
            "in the working directory",
        );
        fs::create_dir(base.path().join("data_home")).expect("data home");
        TwoPlugins { base }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.base.path().join(relative)
    }

    /// Where plugin `id`'s own directory is (the data home resolved, as the runtime
    /// resolves it).
    fn own_dir(&self, id: &str) -> PathBuf {
        self.path("data_home")
            .canonicalize()
            .expect("canonical data home")
            .join("toolcell/data")
            .join(id)
    }

    fn call(&self, extra: &[&str], tool: &str, args: Value) -> Run {
        run(toolcell()
            .env("XDG_DATA_HOME", self.path("data_home"))
            .current_dir(self.path("cwd"))
            .arg("call")
            .arg("--plugins")
            .arg(self.path("plugins"))
            .args(extra)
            .arg(tool)
            .arg(args.to_string()))
    }
}

#[cfg(unix)]
#[test]
fn without_a_root_each_plugin_gets_its_own_private_directory() {
    let plugins = TwoPlugins::new();
    // Loading creates nothing: the directory comes with the first write.
    let listed = run(toolcell()
        .env("XDG_DATA_HOME", plugins.path("data_home"))
        .arg("list")
        .arg("--plugins")
        .arg(plugins.path("plugins")));
    assert_eq!(listed.code, Some(0), "{listed}");
    assert!(
        !plugins.path("data_home/toolcell").exists(),
        "no directory before a write"
    );
    // Each plugin is told its own directory, which relative paths are taken from.
    for id in ["a", "b"] {
        plugins
            .call(&[], &format!("{id}_dir"), json!({}))
            .assert_completed(&plugins.own_dir(id).display().to_string());
    }
    // Reading before any write finds nothing, and not the working directory's files.
    plugins
        .call(&[], "a_read", json!({ "path": "present.txt" }))
        .assert_completed("nil|string|cannot read present.txt: no such file or directory");

    plugins
        .call(&[], "a_write", json!({ "path": "x.txt", "content": "a's" }))
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(plugins.own_dir("a").join("x.txt")).expect("a's file"),
        "a's"
    );
    assert!(!plugins.path("cwd/x.txt").exists());
    for dir in [
        plugins.own_dir("a"),
        plugins.path("data_home/toolcell/data"),
    ] {
        assert_eq!(mode(&dir), 0o700, "{} is private", dir.display());
    }
    plugins
        .call(&[], "a_read", json!({ "path": "x.txt" }))
        .assert_completed("a's|nil|nil");

    // b sees none of it: not by the same name, not by `..`, not by a's absolute path.
    plugins
        .call(
            &[],
            "b_write",
            json!({ "path": "mine.txt", "content": "b's" }),
        )
        .assert_completed("true|nil|nil");
    plugins
        .call(&[], "b_read", json!({ "path": "x.txt" }))
        .assert_completed("nil|string|cannot read x.txt: no such file or directory");
    let absolute = plugins.own_dir("a").join("x.txt").display().to_string();
    for path in ["../a/x.txt", absolute.as_str()] {
        plugins
            .call(&[], "b_read", json!({ "path": path }))
            .assert_completed(&format!(
                "nil|string|cannot read {path}: it is outside the granted root"
            ));
        plugins
            .call(
                &[],
                "b_write",
                json!({ "path": path, "content": "b was here" }),
            )
            .assert_completed(&format!(
                "nil|string|cannot write {path}: it is outside the granted root"
            ));
    }
    assert_eq!(
        fs::read_to_string(plugins.own_dir("a").join("x.txt")).expect("a's file"),
        "a's"
    );
}

#[test]
fn a_root_given_is_shared_and_a_plugins_own_root_wins_over_it() {
    let plugins = TwoPlugins::new();
    let shared = plugins.path("shared");
    fs::create_dir(&shared).expect("shared root");
    let root = ["--root", shared.to_str().expect("UTF-8 path")];
    plugins
        .call(
            &root,
            "a_write",
            json!({ "path": "x.txt", "content": "a's" }),
        )
        .assert_completed("true|nil|nil");
    plugins
        .call(&root, "b_read", json!({ "path": "x.txt" }))
        .assert_completed("a's|nil|nil");
    plugins.call(&root, "b_dir", json!({})).assert_completed(
        &shared
            .canonicalize()
            .expect("canonical")
            .display()
            .to_string(),
    );

    // `[plugins.b.files] root`, relative to the config file: b's alone, over --root.
    write(
        &plugins.path("config/toolcell.toml"),
        "[plugins.b.files]\nroot = \"b_tree\"\n",
    );
    fs::create_dir(plugins.path("config/b_tree")).expect("b's tree");
    let config = plugins.path("config/toolcell.toml");
    let with_config = [
        &root[..],
        &["--config", config.to_str().expect("UTF-8 path")],
    ]
    .concat();
    plugins
        .call(
            &with_config,
            "b_write",
            json!({ "path": "y.txt", "content": "b's" }),
        )
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(plugins.path("config/b_tree/y.txt")).expect("b's file"),
        "b's"
    );
    plugins
        .call(&with_config, "b_read", json!({ "path": "x.txt" }))
        .assert_completed("nil|string|cannot read x.txt: no such file or directory");
    plugins
        .call(&with_config, "a_read", json!({ "path": "y.txt" }))
        .assert_completed("nil|string|cannot read y.txt: no such file or directory");
    // Without --root, a still gets its own directory next to b's tree.
    let config_only = ["--config", config.to_str().expect("UTF-8 path")];
    plugins
        .call(&config_only, "a_dir", json!({}))
        .assert_completed(&plugins.own_dir("a").display().to_string());
    assert!(!shared.join("y.txt").exists());
    assert!(!plugins.path("data_home/toolcell/data/b").exists());
}

#[test]
fn a_plugin_without_file_access_is_told_no_directory() {
    let plugins = TwoPlugins::new();
    plugins
        .call(&["--files", "none"], "a_dir", json!({}))
        .assert_completed("nil");
}

/// The process's umask, from /proc/self/status (reading it with umask(2) would change it
/// for the other tests' threads).
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))
        .expect("a Umask line");
    u32::from_str_radix(line.trim(), 8).expect("an octal umask")
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).expect("metadata").permissions().mode() & 0o7777
}

#[cfg(unix)]
#[test]
fn write_file_keeps_the_permission_bits_and_refuses_a_trailing_slash() {
    use std::os::unix::fs::{PermissionsExt, symlink};

    let fixture = FilesFixture::new();
    let root = fixture.root();
    for (name, bits) in [("secret.txt", 0o600), ("tool.sh", 0o755)] {
        write(&root.join(name), "before");
        fs::set_permissions(root.join(name), fs::Permissions::from_mode(bits)).expect("chmod");
    }
    symlink("secret.txt", root.join("secret_link")).expect("symlink");

    for (path, file, bits) in [
        ("secret.txt", "secret.txt", 0o600),
        ("tool.sh", "tool.sh", 0o755),
        ("secret_link", "secret.txt", 0o600),
    ] {
        fixture
            .tool("write", json!({ "path": path, "content": "after" }))
            .assert_completed("true|nil|nil");
        assert_eq!(fs::read_to_string(root.join(file)).expect("read"), "after");
        assert_eq!(
            mode(&root.join(file)),
            bits,
            "writing {path} keeps {file}'s bits"
        );
    }
    // A new file gets 0666 less the umask, as any program's would.
    fixture
        .tool("write", json!({ "path": "fresh.txt", "content": "new" }))
        .assert_completed("true|nil|nil");
    assert_eq!(mode(&root.join("fresh.txt")), 0o666 & !umask());

    for (path, end) in [
        ("inside.txt/", "/"),
        ("sub/", "/"),
        ("sub/new.txt/", "/"),
        ("inside.txt/.", "/."),
    ] {
        fixture
            .tool("write", json!({ "path": path, "content": "x" }))
            .assert_completed(&format!(
                "nil|string|cannot write {path}: the path ends with '{end}', so it names a \
                 directory"
            ));
    }
    assert_eq!(
        fs::read_to_string(root.join("inside.txt")).expect("read"),
        "inside content"
    );
    assert!(!root.join("sub/new.txt").exists());
}

#[test]
fn the_files_flag_caps_file_access_for_every_plugin() {
    let plugins = plugin_dir(&[("greeter.lua", GREETER)]);
    let root = temp_dir();
    let output = run(toolcell()
        .args([
            "call",
            "--files",
            "read-only",
            "--plugins",
            path_str(plugins.path()),
        ])
        .arg("--root")
        .arg(root.path())
        .arg("scribble"));
    let message = output.failure();
    assert!(message.contains("cannot write scribble.txt"), "{output}");
    assert!(message.contains("--files read-write"), "{output}");
    assert!(!root.path().join("scribble.txt").exists());
    let bad = toolcell_run(&["call", "--files", "all", "greet"]);
    assert_eq!(bad.code, Some(2), "{bad}");
}
