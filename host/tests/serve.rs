//! `toolcell serve --http` in production: the `/healthz` and `/readyz` probes, and a
//! drain on SIGTERM with a slow tool call in flight, driven by the official MCP Python
//! SDK (tests/mcp/shutdown.py; tools/bootstrap installs the SDK).

use std::path::Path;
use std::process::{Command, Stdio};

const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");

#[test]
fn probes_answer_and_sigterm_drains_calls_in_flight_within_the_grace_period() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/shutdown.py");
    let python = std::env::var("TOOLCELL_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let output = Command::new(&python)
        .arg(&script)
        .args(["--toolcell", TOOLCELL])
        .env(
            "TOOLCELL_CACHE_DIR",
            std::env::temp_dir().join("toolcell-test-cache"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {python} {}: {error}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("No module named 'mcp'") {
        panic!("the MCP Python SDK is missing: run tools/bootstrap (pip install mcp)\n{stderr}");
    }
    assert!(
        output.status.success() && stdout.contains("all checks passed"),
        "the shutdown checks failed: {:?}\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        output.status
    );
}
