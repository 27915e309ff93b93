//! Digest pins (`--require-sha256`) and lock files (`--lock`) refuse changed plugins.

use std::fs;

use crate::support::*;

#[test]
fn digest_pins_and_lock_files_refuse_changed_plugins() {
    let (dir, wasm) = packed_plugin("greeter", GREETER);
    let dist = wasm.parent().expect("dist");
    let digest = toolcell::cache::sha256_hex(&fs::read(&wasm).expect("read"));
    let pinned = run(toolcell()
        .args([
            "call",
            "--plugins",
            path_str(dist),
            "--require-sha256",
            &digest,
        ])
        .args(["greet", r#"{"name":"pinned"}"#]));
    pinned.assert_completed("Hello, pinned!");
    let wrong = run(toolcell()
        .args([
            "call",
            "--plugins",
            path_str(dist),
            "--require-sha256",
            &"ab".repeat(32),
        ])
        .args(["greet", "{}"]));
    assert_eq!(wrong.code, Some(2), "{wrong}");
    wrong.assert_stderr_line(&["greeter.wasm", "was refused", &digest]);
    let malformed = run(toolcell().args([
        "call",
        "--plugins",
        path_str(dist),
        "--require-sha256",
        "abc",
        "greet",
    ]));
    assert!(
        malformed.usage_error().contains("--require-sha256"),
        "{malformed}"
    );

    // A lock file as sha256sum writes it; then the artifact changes.
    let lock = dir.path().join("toolcell.lock");
    write(&lock, format!("{digest}  dist/greeter.wasm\n"));
    let locked = run(toolcell()
        .args([
            "call",
            "--plugins",
            path_str(dist),
            "--lock",
            path_str(&lock),
        ])
        .args(["greet", r#"{"name":"locked"}"#]));
    locked.assert_completed("Hello, locked!");
    let (_other, replacement) = packed_plugin("greeter", &GREETER.replace("Hello", "Hi"));
    fs::copy(&replacement, &wasm).expect("replace the artifact");
    let changed = run(toolcell()
        .args([
            "call",
            "--plugins",
            path_str(dist),
            "--lock",
            path_str(&lock),
        ])
        .args(["greet", "{}"]));
    assert_eq!(changed.code, Some(2), "{changed}");
    changed.assert_stderr_line(&["greeter.wasm", "was refused", "pins"]);
}
