//! The permission policy and the metrics through the `toolcell` binary: `list` and
//! `call` with `--allow`/`--ask`/`--deny`, `[permissions]`, `--yes` and the terminal
//! prompt; `serve` asking the client's user through MCP elicitation (the official
//! Python SDK, tests/mcp/policy.py); and `serve --metrics` scraped by a real
//! Prometheus server (Debian's `prometheus`, which tools/bootstrap installs).

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

mod common;
#[path = "common/run.rs"]
mod run;
use common::{HANG_LIMIT, cache_dir, collect, drain, wait, workspace_root};
use run::Run;

/// The binary under test.
const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");

/// Plugin `policy`: `writes` counts the calls that reached the write tools.
const PLUGIN: &str = r#"
local writes = 0
clm.tool_register("hello", {
  description = "Greets",
  no_prompt = true,
  invoke = function(_, ctx) ctx:complete("hi") end,
})
clm.tool_register("note_write", {
  description = "Writes a note",
  params_schema = { type = "object", properties = { text = { type = "string" } } },
  invoke = function(args, ctx)
    writes = writes + 1
    ctx:complete("written " .. tostring(args.text) .. " (" .. writes .. ")")
  end,
})
clm.tool_register("danger_zone", {
  description = "Refused by the rules",
  invoke = function(_, ctx) ctx:complete("boom") end,
})
clm.tool_register("fail", {
  description = "Always fails",
  no_prompt = true,
  invoke = function(_, ctx) ctx:fail("no luck") end,
})
"#;

/// A directory with `policy.lua`, and a file root beside it.
struct Setup {
    plugins: TempDir,
    root: TempDir,
}

impl Setup {
    fn new() -> Setup {
        let plugins = TempDir::new().expect("temporary directory");
        fs::write(plugins.path().join("policy.lua"), PLUGIN).expect("write the plugin");
        Setup {
            plugins,
            root: TempDir::new().expect("temporary directory"),
        }
    }

    /// Writes a configuration file with `text` and returns its path.
    fn config(&self, text: &str) -> PathBuf {
        let path = self.root.path().join("toolcell.toml");
        fs::write(&path, text).expect("write the config");
        path
    }

    /// `toolcell SUBCOMMAND --plugins DIR --root DIR`, in a clean environment.
    fn toolcell(&self, subcommand: &str) -> Command {
        let mut command = Command::new(TOOLCELL);
        command
            .arg(subcommand)
            .arg("--plugins")
            .arg(self.plugins.path())
            .arg("--root")
            .arg(self.root.path())
            .env("TOOLCELL_CACHE_DIR", cache_dir())
            .current_dir(self.root.path());
        for name in ["CLM_DEBUG_LOG", "TOOLCELL_DEBUG_LOG", "RUST_LOG"] {
            command.env_remove(name);
        }
        command
    }
}

/// Runs `command` with `input` on stdin (none: stdin is /dev/null, no terminal).
fn run_with(command: &mut Command, input: Option<&str>) -> Run {
    command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start toolcell");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(input.as_bytes()).expect("write stdin");
    }
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let code = wait(&mut child, HANG_LIMIT);
    Run {
        code,
        stdout: collect(stdout),
        stderr: collect(stderr),
    }
}

fn run(command: &mut Command) -> Run {
    run_with(command, None)
}

/// The tool names `list` prints, in any format.
fn listed(setup: &Setup, extra: &[&str], format: &[&str]) -> Vec<String> {
    let output = run(setup.toolcell("list").args(extra).args(format));
    assert_eq!(output.code, Some(0), "list must succeed{output}");
    if format.is_empty() {
        // The table: one tool a line, its name first, after a header line.
        return output
            .stdout
            .lines()
            .skip(1)
            .filter_map(|line| line.split_whitespace().next())
            .map(str::to_string)
            .collect();
    }
    let parsed: Value = serde_json::from_str(&output.stdout).expect("list prints JSON");
    parsed
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|definition| {
            let name = definition
                .pointer("/function/name")
                .or_else(|| definition.get("name"))
                .and_then(Value::as_str)
                .expect("a named definition");
            name.to_string()
        })
        .collect()
}

// ---------------------------------------------------------------------------------
// list and call
// ---------------------------------------------------------------------------------

#[test]
fn a_denied_tool_is_in_no_list_format_and_its_call_fails_with_the_reason() {
    let setup = Setup::new();
    let all = ["danger_zone", "fail", "hello", "note_write"];
    let mut everything = listed(&setup, &[], &[]);
    everything.sort();
    assert_eq!(everything, all, "without rules every tool is listed");
    let deny = ["--deny", "danger*"];
    for format in [
        &[][..],
        &["--json"][..],
        &["--format", "anthropic"][..],
        &["--format", "mcp"][..],
    ] {
        let mut names = listed(&setup, &deny, format);
        names.sort();
        assert_eq!(
            names,
            ["fail", "hello", "note_write"],
            "--deny hides the tool in {format:?}"
        );
    }
    let output = run(setup.toolcell("call").args(deny).arg("danger_zone"));
    assert_eq!(output.code, Some(1), "a denied call exits 1{output}");
    assert_eq!(
        output.stdout,
        "[tool failed: tool 'danger_zone' was denied: it matches --deny \"danger*\"]\n",
        "{output}"
    );
    // The same from the configuration file, and the command line's rules win over it.
    let config = setup.config("[permissions]\ndeny = [\"policy/danger_*\"]\n");
    let output = run(setup
        .toolcell("call")
        .arg("--config")
        .arg(&config)
        .arg("danger_zone"));
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (
            Some(1),
            "[tool failed: tool 'danger_zone' was denied: it matches \"policy/danger_*\" in [permissions] deny]\n"
        ),
        "{output}"
    );
    let output = run(setup.toolcell("call").arg("--config").arg(&config).args([
        "--allow",
        "danger_zone",
        "danger_zone",
    ]));
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (Some(0), "boom\n"),
        "{output}"
    );
}

#[test]
fn ask_without_a_terminal_is_refused_unless_yes_and_no_prompt_tools_run() {
    let setup = Setup::new();
    let config = setup.config("[permissions]\ndefault = \"ask\"\n");
    let call = |extra: &[&str]| {
        run(setup
            .toolcell("call")
            .arg("--config")
            .arg(&config)
            .args(extra))
    };
    let output = call(&["note_write", r#"{"text":"a"}"#]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (
            Some(1),
            "[tool failed: tool 'note_write' was denied: it needs approval and there is no terminal to ask on (pass --yes to allow it)]\n"
        ),
        "{output}"
    );
    let output = call(&["--yes", "note_write", r#"{"text":"a"}"#]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (Some(0), "written a (1)\n"),
        "{output}"
    );
    // no_prompt = true: clm-tool(5)'s "skip the permission prompt".
    let output = call(&["hello"]);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (Some(0), "hi\n"),
        "{output}"
    );
    // --ask on the command line, without any configuration.
    let output = run(setup
        .toolcell("call")
        .args(["--ask", "note_*", "note_write"]));
    assert_eq!(output.code, Some(1), "{output}");
    assert!(output.stdout.contains("no terminal to ask on"), "{output}");
}

/// Runs `toolcell call` on a real pseudo-terminal (util-linux `script`), typing
/// `typed`; the run's output as the terminal showed it.
fn on_a_terminal(setup: &Setup, call: &str, typed: &str) -> Option<Run> {
    if !Path::new("/usr/bin/script").exists() {
        eprintln!("skipped: util-linux `script` is missing; it gives the call a terminal");
        return None;
    }
    let line = format!(
        "{TOOLCELL} call --plugins {} --root {} --ask 'note_*' {call}",
        setup.plugins.path().display(),
        setup.root.path().display()
    );
    let mut command = Command::new("/usr/bin/script");
    command
        .args(["-qec", &line, "/dev/null"])
        .env("TOOLCELL_CACHE_DIR", cache_dir())
        .env_remove("RUST_LOG");
    Some(run_with(&mut command, Some(typed)))
}

#[test]
fn the_terminal_prompt_allows_or_denies_with_the_users_feedback() {
    let setup = Setup::new();
    let Some(output) = on_a_terminal(&setup, r#"note_write '{"text":"t"}'"#, "maybe\ny\n") else {
        return;
    };
    assert_eq!(output.code, Some(0), "{output}");
    assert!(
        output
            .stdout
            .contains("tool 'note_write' of plugin 'policy'")
            && output.stdout.contains(r#"{"text":"t"}"#),
        "the question names the tool, its plugin and the arguments{output}"
    );
    assert_eq!(
        output.stdout.matches("Allow it?").count(),
        2,
        "an answer that is no choice asks again{output}"
    );
    assert!(output.stdout.contains("written t (1)"), "{output}");
    let Some(output) = on_a_terminal(&setup, "note_write", "n\nnot now\n") else {
        return;
    };
    assert_eq!(output.code, Some(1), "{output}");
    assert!(
        output
            .stdout
            .contains("[tool failed: tool 'note_write' was denied: the user denied it: not now]"),
        "{output}"
    );
}

#[test]
fn malformed_rules_are_usage_errors_saying_where() {
    let setup = Setup::new();
    let output = run(setup.toolcell("list").args(["--deny", "[oops"]));
    assert_eq!(output.code, Some(2), "{output}");
    assert!(
        output.stderr.contains("--deny") && output.stderr.contains("\"[oops\" is not a valid glob"),
        "{output}"
    );
    let config = setup.config("[permissions]\nallow = [\"$nope\"]\n");
    let output = run(setup.toolcell("list").arg("--config").arg(&config));
    assert_eq!(output.code, Some(2), "{output}");
    assert!(
        output.stderr.contains("[permissions] allow")
            && output.stderr.contains("unknown preset \"$nope\""),
        "{output}"
    );
    let config = setup.config("[permissions]\ndefault = \"maybe\"\n");
    let output = run(setup.toolcell("list").arg("--config").arg(&config));
    assert_eq!(output.code, Some(2), "{output}");
    assert!(
        output.stderr.contains("line 2")
            && output
                .stderr
                .contains("expected one of `allow`, `ask`, `deny`"),
        "{output}"
    );
}

// ---------------------------------------------------------------------------------
// serve: MCP elicitation
// ---------------------------------------------------------------------------------

/// Runs tests/mcp/policy.py over `transport`; panics with its output unless every
/// check passed.
fn python_policy_client(transport: &str) {
    let script = workspace_root().join("tests/mcp/policy.py");
    let python = std::env::var("TOOLCELL_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let output = run(Command::new(&python)
        .arg(&script)
        .args(["--toolcell", TOOLCELL, "--transport", transport])
        .env("TOOLCELL_CACHE_DIR", cache_dir()));
    if output.stderr.contains("No module named 'mcp'") {
        panic!("the MCP Python SDK is missing: run tools/bootstrap (pip install mcp){output}");
    }
    assert!(
        output.code == Some(0) && output.stdout.contains("all checks passed"),
        "the Python MCP client failed ({transport}){output}"
    );
}

#[test]
fn serve_asks_through_elicitation_over_stdio() {
    python_policy_client("stdio");
}

#[test]
fn serve_asks_through_elicitation_over_http() {
    python_policy_client("http");
}

#[test]
fn metrics_on_a_remote_address_need_allow_remote() {
    let setup = Setup::new();
    let output = run(setup.toolcell("serve").args(["--metrics", "0.0.0.0:0"]));
    assert_eq!(output.code, Some(2), "{output}");
    assert!(
        output
            .stderr
            .contains("--metrics 0.0.0.0:0 is not a loopback address")
            && output.stderr.contains("--allow-remote-metrics"),
        "{output}"
    );
}

// ---------------------------------------------------------------------------------
// serve --metrics, scraped by Prometheus
// ---------------------------------------------------------------------------------

/// A `toolcell serve` over stdio with `--metrics 127.0.0.1:0`.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    metrics: String,
    next_id: u64,
}

impl Server {
    fn start(setup: &Setup) -> Server {
        let mut child = setup
            .toolcell("serve")
            .args(["--metrics", "127.0.0.1:0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolcell serve");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(at) = line.split("serving metrics at ").nth(1) {
                    let _ = sender.send(at.trim().to_string());
                }
            }
        });
        let metrics = receiver
            .recv_timeout(HANG_LIMIT)
            .expect("serve --metrics says where it serves");
        let mut server = Server {
            child,
            stdin,
            stdout,
            metrics,
            next_id: 1,
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "policy-test", "version": "1"}}),
        );
        writeln!(
            server.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .expect("send initialized");
        server
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{message}").expect("send a request");
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("read stdout");
            assert!(
                read > 0,
                "the server closed stdout while {method} was pending"
            );
            let reply: Value = serde_json::from_str(&line).expect("a JSON-RPC message");
            if reply.get("id") == Some(&json!(id)) {
                return reply;
            }
        }
    }

    fn call(&mut self, tool: &str) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": {}}))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET url` over HTTP/1.0 (the servers here are on 127.0.0.1); the status and body.
fn http_get(url: &str) -> Option<(u16, String)> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_at(rest.find('/')?);
    let mut stream = TcpStream::connect(host).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// `text` as a URL query value.
fn query_value(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' => {
                (byte as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// A running Prometheus, stopped when dropped.
struct Prometheus {
    child: Child,
    api: String,
    _dir: TempDir,
}

impl Prometheus {
    /// Starts Prometheus on a free loopback port, scraping `target` every second.
    fn start(binary: &Path, target: &str) -> Prometheus {
        let dir = TempDir::new().expect("temporary directory");
        let config = dir.path().join("prometheus.yml");
        fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: toolcell\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            api: format!("http://127.0.0.1:{port}/api/v1"),
            _dir: dir,
        }
    }

    /// The value of instant query `query` once it has one, as text.
    fn value(&self, query: &str) -> Option<String> {
        let (status, body) = http_get(&format!("{}/query?query={}", self.api, query_value(query)))?;
        if status != 200 {
            return None;
        }
        let parsed: Value = serde_json::from_str(&body).ok()?;
        let sample = parsed.pointer("/data/result/0/value/1")?;
        sample.as_str().map(str::to_string)
    }

    /// Waits until `query` has the value `expected`; the last value seen otherwise.
    fn wait_for(&self, query: &str, expected: &str) -> Result<(), Option<String>> {
        let started = Instant::now();
        let mut last = None;
        while started.elapsed() < Duration::from_secs(60) {
            last = self.value(query);
            if last.as_deref() == Some(expected) {
                return Ok(());
            }
            thread::sleep(Duration::from_millis(250));
        }
        Err(last)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn prometheus_scrapes_the_calls_by_outcome_and_the_latency_histogram() {
    let binary = Path::new("/usr/bin/prometheus");
    if !binary.exists() {
        eprintln!(
            "skipped: Debian's prometheus is not installed (tools/bootstrap installs it); \
             serve --metrics was not scraped"
        );
        return;
    }
    let setup = Setup::new();
    let mut server = Server::start(&setup);
    for _ in 0..3 {
        let reply = server.call("hello");
        assert_eq!(reply.pointer("/result/content/0/text"), Some(&json!("hi")));
    }
    let reply = server.call("fail");
    assert_eq!(reply.pointer("/result/isError"), Some(&json!(true)));
    // The exposition itself, before Prometheus reads it.
    let (status, text) = http_get(&server.metrics).expect("GET /metrics");
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains(
            "toolcell_calls_total{tool=\"hello\",plugin=\"policy\",outcome=\"completed\"} 3"
        ),
        "{text}"
    );
    let target = server
        .metrics
        .trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_string();
    let prometheus = Prometheus::start(binary, &target);
    let expectations = [
        (
            r#"toolcell_calls_total{tool="hello",plugin="policy",outcome="completed"}"#,
            "3",
        ),
        (
            r#"toolcell_calls_total{tool="fail",plugin="policy",outcome="failed"}"#,
            "1",
        ),
        (
            r#"toolcell_calls_total{tool="hello",outcome="denied"}"#,
            "0",
        ),
        (r#"toolcell_call_duration_seconds_count{tool="hello"}"#, "3"),
        // Every call is under the last finite bound (30 s).
        (
            r#"toolcell_call_duration_seconds_bucket{tool="hello",le="30"}"#,
            "3",
        ),
        (r#"toolcell_fuel_used_total{tool="hello"} > 0"#, "1"),
        (
            r#"toolcell_plugin_peak_memory_bytes{plugin="policy"} > 0"#,
            "1",
        ),
    ];
    for (query, expected) in expectations {
        // A comparison keeps the series' value; `bool` turns it into 1 or 0.
        let query = query.replace(" > 0", " > bool 0");
        if let Err(last) = prometheus.wait_for(&query, expected) {
            panic!("Prometheus query {query}: expected {expected}, last saw {last:?}\n{text}");
        }
    }
    // A new call shows up at the next scrape.
    server.call("hello");
    let query = r#"toolcell_calls_total{tool="hello",outcome="completed"}"#;
    if let Err(last) = prometheus.wait_for(query, "4") {
        panic!("Prometheus query {query}: expected 4 after one more call, last saw {last:?}");
    }
}
