//! Helpers shared by the modules: running the real binary with a clean environment,
//! what a run left behind, plugin directories, and the plugins several modules use.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// The binary under test.
pub const TOOLCELL: &str = env!("CARGO_BIN_EXE_toolcell");

/// A run taking longer than this is a hang, whatever the machine's speed.
pub const HANG_LIMIT: Duration = Duration::from_secs(120);

/// Writes `content` to `path`, creating parent directories.
pub fn write(path: &Path, content: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .unwrap_or_else(|error| panic!("create {}: {error}", parent.display()));
    }
    fs::write(path, content).unwrap_or_else(|error| panic!("write {}: {error}", path.display()));
}

/// A fresh temporary directory.
pub fn temp_dir() -> TempDir {
    TempDir::new().expect("create a temporary directory")
}

/// A temporary plugin directory holding `plugins` (file name, content), written in
/// the order given.
pub fn plugin_dir(plugins: &[(&str, &str)]) -> TempDir {
    let dir = temp_dir();
    for (name, content) in plugins {
        write(&dir.path().join(name), content);
    }
    dir
}

/// The compiled-code cache shared by every run of this test suite.
pub fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("toolcell-test-cache")
}

/// A working directory of its own: the default file root of runs that give none, so it
/// must not contain the cache (the runtime would not use it) nor be the source tree.
pub fn neutral_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("toolcell-test-cwd");
    fs::create_dir_all(&dir).expect("create the neutral working directory");
    dir
}

/// A `toolcell` command with a clean, predictable environment: the shared code cache,
/// the test data directory, no debug log, no log filter, no proxies, and a neutral
/// working directory.
pub fn toolcell() -> Command {
    warm_cache();
    bare_toolcell()
}

/// Compiles the Lua runtime into the shared cache once per test run, so that no test's
/// stderr depends on whether it was the first to need it (a first compilation says so
/// on stderr, see `a_first_compilation_says_so_on_stderr`).
pub fn warm_cache() {
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

/// Where the plugins of runs that give no root keep their own directories, rather than
/// in the user's `~/.local/share`.
pub fn data_home() -> PathBuf {
    std::env::temp_dir().join("toolcell-test-data")
}

/// [`toolcell`] without warming the cache first.
pub fn bare_toolcell() -> Command {
    let mut command = Command::new(TOOLCELL);
    command
        .env("TOOLCELL_CACHE_DIR", cache_dir())
        .env("XDG_DATA_HOME", data_home())
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
pub struct Run {
    pub command: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
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
    pub fn assert_completed(&self, result: &str) {
        assert_eq!(self.code, Some(0), "expected exit code 0{self}");
        assert_eq!(
            self.stdout,
            format!("{result}\n"),
            "stdout must be exactly the result and one newline{self}"
        );
    }

    /// The tool failed: exit 1 and stdout exactly "[tool failed: MESSAGE]\n". Returns
    /// MESSAGE.
    pub fn failure(&self) -> String {
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
    pub fn usage_error(&self) -> String {
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
    pub fn stderr_lines_with(&self, needles: &[&str]) -> Vec<String> {
        self.stderr
            .lines()
            .filter(|line| needles.iter().all(|needle| line.contains(needle)))
            .map(str::to_string)
            .collect()
    }

    /// Asserts some stderr line contains all of `needles`.
    pub fn assert_stderr_line(&self, needles: &[&str]) {
        assert!(
            !self.stderr_lines_with(needles).is_empty(),
            "expected a stderr line containing all of {needles:?}{self}"
        );
    }
}

/// Runs `command` to completion (killing it if it hangs) and captures its output.
pub fn run(command: &mut Command) -> Run {
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

pub fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// `toolcell call --plugins DIR TOOL [ARGS_JSON]`.
pub fn call(plugins: &Path, tool: &str, args_json: Option<&str>) -> Run {
    let mut command = toolcell();
    command.arg("call").arg("--plugins").arg(plugins).arg(tool);
    if let Some(args_json) = args_json {
        command.arg(args_json);
    }
    run(&mut command)
}

/// Runs a `toolcell list --json ...` command that must succeed; parses its JSON array.
pub fn list_json(command: &mut Command) -> (Run, Vec<Value>) {
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
pub fn function_names(functions: &[Value]) -> Vec<String> {
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
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
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

/// A plugin whose tools report both return values of `clm.read_file` and
/// `clm.write_file` as `FIRST|TYPE_OF_SECOND|SECOND`.
pub const FILES_PLUGIN: &str = r#"
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

/// Whether a [`FILES_PLUGIN`] result is a refusal: nil plus a non-empty error string.
pub fn refusal(output: &Run, what: &str) -> Result<(), String> {
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

pub const HEALTHY_PLUGIN: &str = r#"
clm.tool_register("healthy", {
  description = "Still works",
  invoke = function(args, ctx) ctx:complete("healthy answer") end,
})
"#;

pub fn tool_plugin(tool: &str, answer: &str) -> String {
    format!(
        r#"clm.tool_register("{tool}", {{ description = "from {answer}", invoke = function(_, ctx) ctx:complete("{answer}") end }})"#
    )
}

/// The name of the prepared Lua runtime's entry in `cache`.
pub fn prepared_entry(cache: &Path) -> String {
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

/// A plugin with a greeting tool and a tool that writes a file.
pub const GREETER: &str = r#"
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
pub fn toolcell_run(args: &[&str]) -> Run {
    run(toolcell().args(args))
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp paths")
}

/// Packs `script` (written as `NAME.lua` in a fresh directory) into `dist/NAME.wasm`.
pub fn packed_plugin(name: &str, script: &str) -> (TempDir, PathBuf) {
    let dir = temp_dir();
    let source = dir.path().join(format!("{name}.lua"));
    write(&source, script);
    let output = dir.path().join("dist").join(format!("{name}.wasm"));
    fs::create_dir_all(output.parent().expect("a parent")).expect("mkdir dist");
    let packed = toolcell_run(&["pack", path_str(&source), "-o", path_str(&output)]);
    assert_eq!(packed.code, Some(0), "pack must succeed{packed}");
    (dir, output)
}
