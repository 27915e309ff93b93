//! `toolcell new`: plugin projects to start from (the builds of the Rust, JavaScript and
//! Python projects are tested in tests/tests/languages.rs).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::*;

/// `toolcell new ARGS...` run in `dir`.
fn new_in(dir: &Path, args: &[&str]) -> Run {
    run(toolcell().current_dir(dir).arg("new").args(args))
}

#[test]
fn new_writes_a_lua_project_whose_test_passes_and_that_packs() {
    let parent = temp_dir();
    let output = new_in(parent.path(), &["greeter"]);
    assert_eq!(output.code, Some(0), "{output}");
    assert_eq!(
        output.stdout.lines().take(8).collect::<Vec<_>>(),
        [
            "created Lua plugin 'greeter' in greeter:",
            "  greeter.lua",
            "  greeter.lua.toml",
            "  types/clm.lua",
            "  .luarc.json",
            "  test.sh",
            "  README.md",
            "  .gitignore",
        ],
        "{output}"
    );
    let project = parent.path().join("greeter");
    // The definitions are the repository's.
    assert_eq!(
        fs::read_to_string(project.join("types/clm.lua")).expect("types/clm.lua"),
        toolcell::scaffold::LUA_DEFINITIONS
    );
    let test = run(Command::new(project.join("test.sh"))
        .env("TOOLCELL", TOOLCELL)
        .env("TOOLCELL_CACHE_DIR", cache_dir()));
    assert_eq!(test.code, Some(0), "{test}");
    assert_eq!(
        test.stdout,
        "1 plugin loaded, 1 tool; 0 errors, 0 warnings\nok: greeter {\"name\":\"world\"}\n",
        "{test}"
    );
    let check = run(toolcell().arg("check").arg(&project));
    assert_eq!(check.code, Some(0), "{check}");
    let packed = run(toolcell().current_dir(&project).args([
        "pack",
        "greeter.lua",
        "-o",
        "dist/greeter.wasm",
    ]));
    assert_eq!(packed.code, Some(0), "{packed}");
    call(&project.join("dist"), "greeter", Some(r#"{"name":"dist"}"#))
        .assert_completed("Hello, dist!");
    // The manifest beside the script names the plugin.
    let listed = run(toolcell().arg("list").arg("--plugins").arg(&project));
    assert!(listed.stdout.contains("greeter"), "{listed}");
}

#[test]
fn new_writes_the_files_each_language_builds_from() {
    let parent = temp_dir();
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace");
    for (lang, files) in [
        (
            "rust",
            &[
                "Cargo.toml",
                "src/lib.rs",
                "toolcell.toml",
                "test.sh",
                "README.md",
            ][..],
        ),
        (
            "js",
            &["plugin.js", "toolcell.toml", "test.sh", "README.md"][..],
        ),
        (
            "python",
            &["app.py", "toolcell.toml", "test.sh", "README.md"][..],
        ),
    ] {
        let name = format!("p-{lang}");
        let output = new_in(parent.path(), &[&name, "--lang", lang]);
        assert_eq!(output.code, Some(0), "{output}");
        let project = parent.path().join(&name);
        for file in files {
            assert!(project.join(file).is_file(), "{lang}: no {file}{output}");
        }
        let manifest = fs::read_to_string(project.join("toolcell.toml")).expect("manifest");
        assert!(manifest.contains(&format!("id = \"{name}\"")), "{manifest}");
    }
    let cargo = fs::read_to_string(parent.path().join("p-rust/Cargo.toml")).expect("Cargo.toml");
    for part in [
        "[lib]\ncrate-type = [\"cdylib\"]",
        &format!(
            "toolcell-guest = {{ path = \"{}\" }}",
            checkout.join("guest-sdk").display()
        ),
        "\n[workspace]\n",
    ] {
        assert!(cargo.contains(part), "expected {part:?} in\n{cargo}");
    }
    assert!(
        fs::read_to_string(parent.path().join("p-js/plugin.js"))
            .expect("plugin.js")
            .contains("export const guest = plugin(")
    );
    let test = fs::read_to_string(parent.path().join("p-python/test.sh")).expect("test.sh");
    for part in [
        &format!("default_src='{}'\n", checkout.display()),
        "src=${TOOLCELL_SRC:-$default_src}",
        "\"$src/tools/build-python-plugin\" . dist/p-python.wasm",
    ] {
        assert!(test.contains(part), "expected {part:?} in\n{test}");
    }
}

#[test]
fn a_checkout_path_is_never_run_as_shell_code() {
    // Issue 33: the path was pasted unquoted into test.sh, so a `$(...)` in it ran.
    let parent = temp_dir();
    let checkout = parent.path().join("it's $(touch pwned) `touch pwned2`");
    write(&checkout.join("guest-sdk/Cargo.toml"), "[package]\n");
    let output = new_in(
        parent.path(),
        &[
            "p",
            "--lang",
            "python",
            "--toolcell-src",
            path_str(&checkout),
        ],
    );
    assert_eq!(output.code, Some(0), "{output}");
    let project = parent.path().join("p");
    let test = run(Command::new(project.join("test.sh"))
        .current_dir(parent.path())
        .env_remove("TOOLCELL_SRC"));
    for planted in ["pwned", "pwned2"] {
        for dir in [parent.path(), project.as_path()] {
            assert!(!dir.join(planted).exists(), "test.sh ran the path's code");
        }
    }
    // The path reached the script whole: it is not a checkout with the build script.
    assert_eq!(test.code, Some(2), "{test}");
    assert!(
        test.stderr
            .contains("set TOOLCELL_SRC to a toolcell source checkout"),
        "{test}"
    );
}

#[test]
fn new_takes_another_checkout_and_refuses_what_it_cannot_write() {
    let parent = temp_dir();
    let checkout = temp_dir();
    write(&checkout.path().join("guest-sdk/Cargo.toml"), "[package]\n");
    let output = new_in(
        parent.path(),
        &[
            "elsewhere",
            "--lang",
            "rust",
            "--toolcell-src",
            path_str(checkout.path()),
        ],
    );
    assert_eq!(output.code, Some(0), "{output}");
    let dependency = format!(
        "toolcell-guest = {{ path = \"{}\" }}",
        checkout.path().join("guest-sdk").display()
    );
    assert!(
        output.stdout.contains(&format!("Cargo.toml: {dependency}")),
        "{output}"
    );

    for (args, expected) in [
        (
            &["Greeter"][..],
            "error: 'Greeter' cannot be a plugin name: use 1 to 64 characters of a-z, 0-9, '-' \
             and '_', starting with a letter",
        ),
        (
            &["elsewhere"][..],
            "error: elsewhere already exists and is not empty; choose another name or --output",
        ),
        (
            &["x", "--toolcell-src", "/"][..],
            "error: / is not a toolcell source checkout (it has no guest-sdk/Cargo.toml)",
        ),
    ] {
        let line = new_in(parent.path(), args).usage_error();
        assert_eq!(line, expected);
    }
    let output = new_in(parent.path(), &["x", "--lang", "cobol"]);
    assert_eq!(output.code, Some(2), "{output}");
    output.assert_stderr_line(&["invalid value 'cobol'"]);
    output.assert_stderr_line(&["[possible values: lua, rust, js, python]"]);
}

#[test]
fn the_lua_examples_and_a_new_lua_project_type_check_clean() {
    let parent = temp_dir();
    assert_eq!(new_in(parent.path(), &["typed"]).code, Some(0));
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .join("examples/plugins");
    for dir in [parent.path().join("typed"), examples] {
        let output = Command::new("emmylua_check")
            .arg("--warnings-as-errors")
            .arg(&dir)
            .output()
            .unwrap_or_else(|error| {
                panic!("emmylua_check is not installed ({error}); run tools/bootstrap")
            });
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && text.contains("No issues found"),
            "emmylua_check {}:\n{text}{}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
