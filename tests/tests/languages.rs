//! The JavaScript and Python example plugins (`examples/js-plugin`,
//! `examples/python-plugin`), built during the run by their documented commands
//! (componentize-js from npm, componentize-py from PyPI, then `toolcell pack`), loaded
//! next to a Lua plugin and called: arguments, configuration, sleeping, two HTTP
//! requests at once from two tasks, files, and the same limits as every plugin.
//!
//! The tools come from `tools/bootstrap`; without them the build fails with its reason.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use toolcell::Runtime;
use toolcell::config::Config;
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
