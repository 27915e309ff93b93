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
