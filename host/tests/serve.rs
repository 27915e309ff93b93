//! `toolcell serve --http` in production, driven by the official MCP Python SDK
//! (tools/bootstrap installs it): the `/healthz` and `/readyz` probes and a drain on
//! SIGTERM with a slow tool call in flight (tests/mcp/shutdown.py), and clients that
//! hold connections and send nothing, with the reproduction of a backtracking schema
//! pattern tried meanwhile (tests/mcp/edges.py).

use std::path::Path;
use std::process::{Command, Stdio};

const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");

#[test]
fn probes_answer_and_sigterm_drains_calls_in_flight_within_the_grace_period() {
    run_checks("shutdown.py");
}

#[test]
fn idle_connections_and_exhausted_file_descriptors_do_not_stop_the_server() {
    run_checks("edges.py");
}

/// Runs tests/mcp/SCRIPT against the binary; it prints "all checks passed" when every
/// check held.
fn run_checks(script: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp")
        .join(script);
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
        "{} failed: {:?}\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        script.display(),
        output.status
    );
}
