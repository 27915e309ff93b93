//! `toolcell inspect`: what a packed plugin is and asks for.

use std::fs;

use crate::support::*;

#[test]
fn inspect_prints_id_version_tools_capabilities_wit_and_digest() {
    let (_dir, wasm) = packed_plugin("greeter", GREETER);
    let digest = toolcell::cache::sha256_hex(&fs::read(&wasm).expect("read"));
    let output = toolcell_run(&["inspect", path_str(&wasm)]);
    assert_eq!(output.code, Some(0), "{output}");
    for line in [
        format!("sha256:       {digest}"),
        "kind:         packed Lua plugin".to_string(),
        "id:           greeter".to_string(),
        "version:      0.0.0".to_string(),
        "  http:       any host".to_string(),
        "  files:      read-write".to_string(),
        format!(
            "wit:          toolcell:plugin@{0} (this toolcell: {0}, compatible)",
            toolcell::wit_version::WIT_VERSION
        ),
        "signatures:   none".to_string(),
        "  greet     Greets someone".to_string(),
    ] {
        assert!(
            output.stdout.lines().any(|printed| printed == line),
            "missing line {line:?}{output}"
        );
    }
    assert_eq!(output.stderr, "", "{output}");
}

#[test]
fn inspect_shows_what_the_manifest_says_about_the_plugin_and_what_it_requires() {
    let dir = temp_dir();
    let source = dir.path().join("acme+notes.lua");
    write(&source, GREETER);
    write(
        &dir.path().join("acme+notes.lua.toml"),
        r#"id = "acme/notes"
version = "1.2.0"
author = "Ada <ada@example.org>"
license = "MIT"
homepage = "https://example.org/notes"
keywords = ["notes", "markdown"]
conflicts = ["old/notes"]
[requires]
"acme/store" = ">=1.2, <2"
"#,
    );
    let wasm = dir.path().join("acme+notes.wasm");
    let packed = toolcell_run(&["pack", path_str(&source), "-o", path_str(&wasm)]);
    assert_eq!(packed.code, Some(0), "{packed}");
    let output = toolcell_run(&["inspect", path_str(&wasm)]);
    assert_eq!(output.code, Some(0), "{output}");
    for line in [
        "id:           acme/notes",
        "author:       Ada <ada@example.org>",
        "license:      MIT",
        "homepage:     https://example.org/notes",
        "keywords:     notes, markdown",
        "requires:     'acme/store' >=1.2, <2",
        "conflicts:    old/notes",
    ] {
        assert!(
            output.stdout.lines().any(|printed| printed == line),
            "missing line {line:?}{output}"
        );
    }
    let json = toolcell_run(&["inspect", "--json", path_str(&wasm)]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(
        report["manifest"]["requires"],
        serde_json::json!({"acme/store": ">=1.2, <2"})
    );
    assert_eq!(
        report["manifest"]["conflicts"],
        serde_json::json!(["old/notes"])
    );
}
