//! The JavaScript and Python example plugins (`examples/js-plugin`,
//! `examples/python-plugin`), built during the run by their documented commands
//! (componentize-js from npm, componentize-py from PyPI, then `toolcell pack`), loaded
//! next to a Lua plugin and called: arguments, configuration, sleeping, two HTTP
//! requests at once from two tasks, files, and the same limits as every plugin. And the
//! projects `toolcell new` writes in Rust, JavaScript and Python, built and tested by
//! their own test.sh, with the build scripts' messages for what is missing or refused.
//!
//! The tools come from `tools/bootstrap`; without them the build fails with its reason.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use toolcell::config::Config;
use toolcell::{ContentPart, Question, Reply, Runtime};
use toolcell_tests::http_server::TestServer;
use toolcell_tests::{Fixture, assert_contains, call, failure, guest_build, output};

/// Two overlapping 400 ms waits finish well before 800 ms.
const NOT_SERIAL: Duration = Duration::from_millis(750);

/// One language's example: where it is built and how its tools are named.
struct Example {
    built: fn() -> Result<PathBuf, String>,
    id: &'static str,
    prefix: &'static str,
}

const JS: Example = Example {
    built: guest_build::js_example,
    id: "js-example",
    prefix: "js",
};

const PYTHON: Example = Example {
    built: guest_build::python_example,
    id: "python-example",
    prefix: "py",
};

impl Example {
    fn tool(&self, name: &str) -> String {
        format!("{}_{name}", self.prefix)
    }

    fn fixture(&self) -> Fixture {
        let built = (self.built)().unwrap_or_else(|error| panic!("{error}"));
        let fixture = Fixture::new(&[(
            "lua_neighbour.lua",
            r#"clm.tool_register("lua_hi", { invoke = function(_, ctx) ctx:complete("hi from Lua") end })"#,
        )]);
        std::fs::copy(
            built,
            fixture.plugin_dir().join(format!("{}.wasm", self.id)),
        )
        .expect("copy the built plugin");
        fixture
    }

    async fn load(&self, fixture: &Fixture, config: &str) -> Runtime {
        let config = Config::parse(config).expect("config");
        fixture
            .load_with(|builder| {
                builder
                    .config(config)
                    .allow_http("127.0.0.1".parse().expect("grant"))
                    .on_question(|question: Question| async move {
                        // The user answers with the tool's name, so the test sees
                        // which question reached it.
                        let mut answer = serde_json::Map::new();
                        answer.insert("name".into(), question.tool.into());
                        Reply::Accepted(answer)
                    })
            })
            .await
    }

    async fn exercise(&self) {
        let fixture = self.fixture();
        let runtime = self
            .load(
                &fixture,
                &format!("[tools.{}]\ngreeting = \"Hej\"\n", self.id),
            )
            .await;
        assert!(
            runtime.diagnostics().is_empty(),
            "{:?}",
            runtime.diagnostics()
        );
        assert!(
            runtime
                .plugins()
                .iter()
                .any(|plugin| plugin.manifest.id == self.id),
            "the plugin's manifest names it"
        );
        let greet = runtime.tool(&self.tool("greet")).expect("registered");
        assert_eq!(greet.plugin, self.id);
        assert_eq!(
            greet
                .params_schema
                .as_ref()
                .map(|schema| &schema["required"]),
            Some(&serde_json::json!(["name"]))
        );
        assert_eq!(
            output(&runtime, &self.tool("greet"), r#"{"name":"Ada"}"#).await,
            "Hej, Ada!"
        );
        assert_eq!(output(&runtime, "lua_hi", "{}").await, "hi from Lua");

        // A result of parts, and a question the embedder's handler answers.
        let shown = call(&runtime, &self.tool("show"), "{}").await;
        assert_eq!(
            shown.content(),
            Some(
                &[
                    ContentPart::Text("a picture:".into()),
                    ContentPart::Image {
                        data: vec![0x89, 0x50, 0x4E, 0x47, 0xFF],
                        mime_type: "image/png".into()
                    },
                    ContentPart::ResourceLink {
                        uri: "file:///data.csv".into(),
                        name: "data.csv".into(),
                        mime_type: None
                    },
                ][..]
            )
        );
        assert_eq!(
            output(&runtime, &self.tool("ask"), "{}").await,
            format!("hello {}", self.tool("ask"))
        );

        // A structured result, with the progress reported on the way.
        let count = self.tool("count_words");
        let info = runtime.tool(&count).expect("registered");
        assert_eq!(info.title.as_deref(), Some("Count words"));
        assert_eq!(
            info.output_schema
                .as_ref()
                .map(|schema| &schema["required"]),
            Some(&serde_json::json!(["words"]))
        );
        let started = runtime
            .call(&count, r#"{"text":"one two three"}"#)
            .expect("call");
        assert!(started.is_structured());
        let mut updates = started.progress();
        let outcome = started.await;
        let value: serde_json::Value =
            serde_json::from_str(outcome.output().expect("completed")).expect("JSON output");
        assert_eq!(value, serde_json::json!({ "words": 3 }));
        // The last report outlives the call.
        assert_eq!(
            updates.next().await.map(|p| (p.done, p.total)),
            Some((3.0, Some(3.0)))
        );

        // Two sleeping calls overlap.
        let started = Instant::now();
        let sleep = self.tool("sleep");
        let (a, b) = tokio::join!(
            call(&runtime, &sleep, r#"{"ms":400}"#),
            call(&runtime, &sleep, r#"{"ms":400}"#)
        );
        assert_eq!(a.model_text(), "slept 400 ms");
        assert_eq!(b.model_text(), "slept 400 ms");
        assert!(started.elapsed() < NOT_SERIAL, "{:?}", started.elapsed());

        // Two tasks fetch at once and are joined.
        let server = TestServer::start().await;
        server.reset_max_in_flight();
        let args = serde_json::json!({
            "a": server.url("/slow?ms=400"),
            "b": server.url("/slow?ms=401"),
        });
        assert_eq!(
            output(&runtime, &self.tool("fetch_both"), &args.to_string()).await,
            "200 slow 400; 200 slow 401"
        );
        // Both requests were at the server at once: neither waited for the other.
        assert_eq!(server.stats().max_in_flight, 2);

        // Files inside the root; nothing outside it.
        assert_eq!(
            output(
                &runtime,
                &self.tool("note_write"),
                r#"{"path":"note.txt","text":"héllo"}"#
            )
            .await,
            "wrote 6 bytes"
        );
        assert_eq!(
            std::fs::read_to_string(fixture.root().join("note.txt")).expect("written"),
            "héllo"
        );
        assert_eq!(
            output(&runtime, &self.tool("note_read"), r#"{"path":"note.txt"}"#).await,
            "héllo"
        );
        assert_contains(
            &failure(
                &runtime,
                &self.tool("note_read"),
                r#"{"path":"/etc/hostname"}"#,
            )
            .await,
            &["outside the granted root"],
        );
    }

    async fn limits(&self) {
        let fixture = self.fixture();
        // The policy's deadline (shorter than the manifest's 10 s) stops a waiting
        // handler, the failure says how to grant more, and the plugin keeps working.
        let config = format!("[plugins.{}.limits]\ncall_timeout_ms = 300\n", self.id);
        let runtime = self.load(&fixture, &config).await;
        assert_contains(
            &failure(&runtime, &self.tool("sleep"), r#"{"ms":5000}"#).await,
            &[
                &format!("tool '{}' timed out after 300 ms", self.tool("sleep")),
                &format!("[plugins.{}.limits] call_timeout_ms = 10000", self.id),
            ],
        );
        assert_eq!(
            output(&runtime, &self.tool("sleep"), r#"{"ms":1}"#).await,
            "slept 1 ms"
        );
    }
}

// One test per language: its component is compiled once (then cached) for both parts.

#[tokio::test(flavor = "multi_thread")]
async fn the_javascript_plugin_runs_next_to_lua_with_the_same_limits() {
    JS.exercise().await;
    JS.limits().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_plugin_runs_next_to_lua_with_the_same_limits() {
    PYTHON.exercise().await;
    PYTHON.limits().await;
}

// ---------------------------------------------------------------------------------
// `toolcell new`: each language's project, as generated, builds with its own test.sh,
// passes `toolcell check` and answers. The builds reuse what the examples' builds
// compiled: the Rust project builds into the guests' target directory with the guest
// profile and the workspace's lock file.
// ---------------------------------------------------------------------------------

/// A project made by `toolcell new NAME --lang LANG` in a fresh directory outside the
/// repository; returns the directory holding it and the project's path.
fn new_project(lang: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
    let parent = tempfile::TempDir::new().expect("a temp dir");
    let output = Command::new(guest_build::toolcell_binary())
        .current_dir(parent.path())
        .args(["new", name, "--lang", lang])
        .output()
        .expect("toolcell new runs");
    assert!(
        output.status.success(),
        "toolcell new failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let project = parent.path().join(name);
    (parent, project)
}

/// Runs the project's test.sh with `env`, with a fresh code cache; returns its output
/// (stdout and stderr) after asserting it passed.
fn run_test_script(project: &std::path::Path, env: &[(&str, &str)]) -> String {
    let cache = tempfile::TempDir::new().expect("a temp dir");
    let output = Command::new(project.join("test.sh"))
        .env("TOOLCELL", guest_build::toolcell_binary())
        .env("TOOLCELL_CACHE_DIR", cache.path())
        .envs(env.iter().copied())
        .output()
        .expect("test.sh runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "test.sh failed:\n{text}");
    text
}

/// What every project's test.sh says when its plugin checks clean and answers.
fn assert_checked_and_answered(text: &str, name: &str) {
    assert_contains(
        text,
        &[
            "1 plugin loaded, 1 tool; 0 errors, 0 warnings",
            &format!("ok: {name} {{\"name\":\"world\"}}"),
        ],
    );
}

#[test]
fn a_new_rust_project_builds_checks_and_answers() {
    guest_build::rust_example();
    let (_parent, project) = new_project("rust", "rusty-greeter");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).expect("Cargo.toml");
    assert_contains(
        &manifest,
        &[
            "crate-type = [\"cdylib\"]",
            &format!(
                "toolcell-guest = {{ path = \"{}\" }}",
                guest_build::workspace().join("guest-sdk").display()
            ),
        ],
    );
    // The workspace's lock file and guest profile: the dependencies are already built.
    std::fs::copy(
        guest_build::workspace().join("Cargo.lock"),
        project.join("Cargo.lock"),
    )
    .expect("copy Cargo.lock");
    let target = guest_build::workspace().join("target").join("guest");
    let target = target.to_str().expect("a UTF-8 path");
    let text = run_test_script(
        &project,
        &[
            ("PROFILE", "guest"),
            ("CARGO_TARGET_DIR", target),
            ("CARGO_PROFILE_GUEST_INHERITS", "release"),
            ("CARGO_PROFILE_GUEST_OPT_LEVEL", "3"),
            ("CARGO_PROFILE_GUEST_LTO", "true"),
            ("CARGO_PROFILE_GUEST_CODEGEN_UNITS", "1"),
            ("CARGO_PROFILE_GUEST_PANIC", "abort"),
            ("CARGO_PROFILE_GUEST_STRIP", "debuginfo"),
        ],
    );
    assert_checked_and_answered(&text, "rusty-greeter");
    // A component compiled for the first time says so.
    assert_contains(
        &text,
        &["compiling plugin rusty-greeter.wasm (first run, about "],
    );
}

#[test]
fn a_new_javascript_project_builds_checks_and_answers() {
    let (_parent, project) = new_project("js", "js-greeter");
    assert!(project.join("plugin.js").is_file() && project.join("toolcell.toml").is_file());
    let text = run_test_script(&project, &[]);
    assert_checked_and_answered(&text, "js-greeter");
}

#[test]
fn a_new_python_project_builds_checks_and_answers() {
    let (_parent, project) = new_project("python", "py-greeter");
    assert_contains(
        &std::fs::read_to_string(project.join("app.py")).expect("app.py"),
        &["Guest = plugin.guest_class()"],
    );
    let text = run_test_script(&project, &[]);
    assert_checked_and_answered(&text, "py-greeter");
}

/// Runs a build script on `dir`; returns its exit code and stderr.
fn build(script: &str, dir: &std::path::Path) -> (Option<i32>, String) {
    let output = Command::new(guest_build::workspace().join("tools").join(script))
        .arg(dir)
        .arg(dir.join("out.wasm"))
        .env("TOOLCELL", guest_build::toolcell_binary())
        .output()
        .expect("the build script runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_build_scripts_say_what_is_missing() {
    let dir = tempfile::TempDir::new().expect("a temp dir");
    let d = dir.path().display();
    let cases = [
        (
            "build-js-plugin",
            format!("build-js-plugin: {d} has no plugin.js"),
        ),
        (
            "build-python-plugin",
            format!("build-python-plugin: {d} has no app.py"),
        ),
    ];
    for (script, expected) in &cases {
        let (code, stderr) = build(script, dir.path());
        assert_eq!(code, Some(1), "{script}: {stderr}");
        assert!(stderr.starts_with(expected.as_str()), "{script}: {stderr}");
    }
    std::fs::write(dir.path().join("plugin.js"), "const tools = [];\n").expect("write");
    std::fs::write(dir.path().join("app.py"), "plugin = None\n").expect("write");
    let (_, stderr) = build("build-js-plugin", dir.path());
    assert_contains(&stderr, &["plugin.js does not export guest"]);
    let (_, stderr) = build("build-python-plugin", dir.path());
    assert_contains(&stderr, &["app.py does not define Guest"]);
    std::fs::write(dir.path().join("plugin.js"), "export const guest = 1;\n").expect("write");
    std::fs::write(dir.path().join("app.py"), "Guest = None\n").expect("write");
    for script in ["build-js-plugin", "build-python-plugin"] {
        let (code, stderr) = build(script, dir.path());
        assert_eq!(code, Some(1), "{script}: {stderr}");
        assert_contains(&stderr, &["has no toolcell.toml (the manifest"]);
    }
}

#[test]
fn a_javascript_run_that_is_not_a_generator_is_refused_naming_the_tool() {
    let (_parent, project) = new_project("js", "js-plain");
    let source = std::fs::read_to_string(project.join("plugin.js")).expect("plugin.js");
    let plain = source.replace("*run(args, ctx)", "run(args, ctx)");
    assert_ne!(plain, source, "the template has a generator run");
    std::fs::write(project.join("plugin.js"), plain).expect("write");
    let (code, stderr) = build("build-js-plugin", &project);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line, no stack: {stderr}");
    assert_contains(
        &stderr,
        &[
            "Error: tool 'js-plain': run is a plain function; it must be a generator function \
             (*run(args, ctx) { ... } or function* (args, ctx) { ... }) that yields operations",
        ],
    );
}

#[test]
fn a_python_handler_that_is_not_async_is_refused_naming_the_tool() {
    let (_parent, project) = new_project("python", "py-plain");
    let source = std::fs::read_to_string(project.join("app.py")).expect("app.py");
    let plain = source.replace("async def greet", "def greet");
    assert_ne!(plain, source, "the template has an async handler");
    std::fs::write(project.join("app.py"), plain).expect("write");
    let (code, stderr) = build("build-python-plugin", &project);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "one line, no traceback: {stderr}"
    );
    assert_contains(
        &stderr,
        &[
            "app.py:",
            "TypeError: tool 'py-plain': the handler greet is a plain function; it must be an \
             `async def` function",
        ],
    );
}
