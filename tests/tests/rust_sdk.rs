//! The example Rust plugin (`examples/rust-plugin`, written with `toolcell-guest`),
//! built during the run with its documented `cargo build --target wasm32-wasip2`, then
//! loaded and called next to a Lua plugin: typed arguments and derived schemas, async
//! handlers that sleep, fetch, spawn and join tasks, files, configuration, the
//! manifest it embeds, and the same limits as every plugin.

use std::time::{Duration, Instant};

use toolcell::config::Config;
use toolcell::files::FileAccess;
use toolcell::{ContentPart, DiagnosticKind, Question, Reply, Runtime};
use toolcell_tests::http_server::TestServer;
use toolcell_tests::{Fixture, assert_contains, call, failure, guest_build, output};

/// Two overlapping 400 ms waits finish well before 800 ms.
const NOT_SERIAL: Duration = Duration::from_millis(750);

fn fixture() -> Fixture {
    let fixture = Fixture::new(&[(
        "lua_neighbour.lua",
        r#"clm.tool_register("lua_hi", { invoke = function(_, ctx) ctx:complete("hi from Lua") end })"#,
    )]);
    std::fs::copy(
        guest_build::rust_example(),
        fixture.plugin_dir().join("rust-example.wasm"),
    )
    .expect("copy the built plugin");
    fixture
}

async fn load(fixture: &Fixture) -> Runtime {
    fixture
        .load_with(|builder| builder.allow_http("127.0.0.1".parse().expect("grant")))
        .await
}

#[tokio::test]
async fn the_rust_plugin_returns_parts_and_asks_the_embedders_user() {
    let fixture = fixture();
    let runtime = fixture
        .load_with(|builder| {
            builder.on_question(|question: Question| async move {
                assert_eq!(question.message, "Who are you?");
                let mut answer = serde_json::Map::new();
                answer.insert("name".into(), "Ada".into());
                Reply::Accepted(answer)
            })
        })
        .await;
    let shown = call(&runtime, "rs_show", "{}").await;
    assert_eq!(
        shown.content(),
        Some(
            &[
                ContentPart::Text("a picture:".into()),
                ContentPart::Image {
                    data: vec![0x89, 0x50, 0x4E, 0x47, 0xFF],
                    mime_type: "image/png".into()
                },
            ][..]
        )
    );
    assert_eq!(output(&runtime, "rs_ask", "{}").await, "hello Ada");
    // Without a handler, nobody answers and the handler gets the reason.
    let runtime = load(&fixture).await;
    assert_contains(
        &failure(&runtime, "rs_ask", "{}").await,
        &["nobody can be asked"],
    );
}

#[tokio::test]
async fn the_rust_plugin_loads_with_its_manifest_and_derived_schemas() {
    let fixture = fixture();
    let runtime = load(&fixture).await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    let plugin = runtime
        .plugins()
        .iter()
        .find(|plugin| plugin.manifest.id == "rust-example")
        .expect("the manifest embedded by toolcell_guest::manifest! is found");
    assert_eq!(plugin.manifest.version.to_string(), "0.1.0");
    assert_eq!(plugin.manifest.capabilities.files, FileAccess::ReadWrite);
    let greet = runtime.tool("rs_greet").expect("registered");
    assert_eq!(greet.plugin, "rust-example");
    assert_eq!(greet.description, "Greets someone by name");
    let schema = greet.params_schema.as_ref().expect("a derived schema");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["properties"]["name"]["description"], "Who to greet.");
    assert_eq!(schema["required"], serde_json::json!(["name"]));
    assert!(schema.get("$schema").is_none());
    assert!(runtime.tool("rs_sleep").is_some_and(|tool| tool.no_prompt));
    assert_eq!(output(&runtime, "lua_hi", "{}").await, "hi from Lua");
}

#[tokio::test]
async fn a_structured_tool_declares_its_output_schema_and_reports_progress() {
    let fixture = fixture();
    let runtime = load(&fixture).await;
    let info = runtime.tool("rs_count_words").expect("registered");
    assert_eq!(info.title.as_deref(), Some("Count words"));
    // Derived from the output type, like the arguments' schema.
    let schema = info.output_schema.as_ref().expect("an output schema");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], serde_json::json!(["words"]));
    assert_eq!(
        schema["properties"]["words"]["description"],
        "How many words the text has."
    );
    let started = runtime
        .call("rs_count_words", r#"{"text":"one two three"}"#)
        .expect("call");
    assert!(started.is_structured());
    let mut updates = started.progress();
    let outcome = started.await;
    assert_eq!(outcome.output(), Some(r#"{"words":3}"#));
    assert_eq!(
        updates.next().await.map(|p| (p.done, p.total)),
        Some((3.0, Some(3.0)))
    );
}

#[tokio::test]
async fn typed_arguments_reach_the_handler_and_bad_ones_are_refused_by_the_schema() {
    let fixture = fixture();
    let runtime = load(&fixture).await;
    assert_eq!(
        output(&runtime, "rs_greet", r#"{"name":"Ada"}"#).await,
        "Hello, Ada!"
    );
    // The schema the SDK derived is checked by the host: the call never reaches the
    // plugin.
    let refused = runtime
        .call("rs_greet", r#"{"nom":"Ada"}"#)
        .err()
        .expect("arguments without `name` are refused");
    assert_contains(
        &refused.to_string(),
        &[
            "invalid arguments for 'rs_greet'",
            "\"name\" is a required property",
        ],
    );
}

#[tokio::test]
async fn the_handler_reads_its_configuration_by_plugin_id() {
    let fixture = fixture();
    let config = Config::parse("[tools.rust-example]\ngreeting = \"Bonjour\"\n").expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    assert_eq!(
        output(&runtime, "rs_greet", r#"{"name":"Ada"}"#).await,
        "Bonjour, Ada!"
    );
}

#[tokio::test]
async fn two_sleeping_calls_overlap() {
    let fixture = fixture();
    let runtime = load(&fixture).await;
    let started = Instant::now();
    let (a, b) = tokio::join!(
        call(&runtime, "rs_sleep", r#"{"ms":400}"#),
        call(&runtime, "rs_sleep", r#"{"ms":400}"#)
    );
    let elapsed = started.elapsed();
    assert_eq!(a.model_text(), "slept 400 ms");
    assert_eq!(b.model_text(), "slept 400 ms");
    assert!(
        elapsed < NOT_SERIAL,
        "the calls ran one after the other: {elapsed:?}"
    );
}

#[tokio::test]
async fn spawned_tasks_fetch_at_the_same_time_and_are_joined() {
    let server = TestServer::start().await;
    let fixture = fixture();
    let runtime = load(&fixture).await;
    let args = serde_json::json!({
        "a": server.url("/slow?ms=400"),
        "b": server.url("/slow?ms=400"),
    })
    .to_string();
    server.reset_max_in_flight();
    assert_eq!(
        output(&runtime, "rs_fetch_both", &args).await,
        "200 slow 400; 200 slow 400"
    );
    // Both requests were at the server at once: neither waited for the other.
    assert_eq!(server.stats().max_in_flight, 2);
}

#[tokio::test]
async fn http_follows_the_policy_like_any_plugin() {
    let server = TestServer::start().await;
    let fixture = fixture();
    // No grant for loopback: refused, and the error reaches the model.
    let runtime = fixture.load().await;
    let args = serde_json::json!({ "a": server.url("/hello"), "b": server.url("/hello") });
    assert_contains(
        &failure(&runtime, "rs_fetch_both", &args.to_string()).await,
        &["refused by policy", "--allow-http"],
    );
    assert_eq!(server.stats().requests, 0);
}

#[tokio::test]
async fn files_are_written_and_read_inside_the_root_only() {
    let fixture = fixture();
    let runtime = load(&fixture).await;
    assert_eq!(
        output(
            &runtime,
            "rs_note_write",
            r#"{"path":"note.txt","text":"from rust"}"#
        )
        .await,
        "wrote 9 bytes"
    );
    assert_eq!(
        std::fs::read_to_string(fixture.root().join("note.txt")).expect("written"),
        "from rust"
    );
    assert_eq!(
        output(&runtime, "rs_note_read", r#"{"path":"note.txt"}"#).await,
        "from rust"
    );
    assert_contains(
        &failure(&runtime, "rs_note_read", r#"{"path":"../outside.txt"}"#).await,
        &["outside the granted root"],
    );
    // The policy can cut the manifest's read-write access.
    let runtime = fixture
        .load_with(|builder| builder.file_access(FileAccess::ReadOnly))
        .await;
    assert!(
        runtime
            .diagnostics()
            .iter()
            .any(|d| d.kind == DiagnosticKind::CapabilityDenied)
    );
    assert_contains(
        &failure(&runtime, "rs_note_write", r#"{"path":"n","text":"x"}"#).await,
        &[
            "plugin 'rust-example' may only read files",
            "--files read-write",
        ],
    );
}

#[tokio::test]
async fn the_deadline_the_policy_grants_stops_a_waiting_handler() {
    let fixture = fixture();
    let config = Config::parse("[limits]\ncall_timeout_ms = 300\n").expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    let started = Instant::now();
    assert_contains(
        &failure(&runtime, "rs_sleep", r#"{"ms":5000}"#).await,
        &[
            "tool 'rs_sleep' timed out after 300 ms",
            "[plugins.rust-example.limits] call_timeout_ms = 10000",
        ],
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // The plugin keeps working after a timed-out call.
    assert_eq!(
        output(&runtime, "rs_sleep", r#"{"ms":1}"#).await,
        "slept 1 ms"
    );
}

#[tokio::test]
async fn cancelling_a_call_aborts_its_requests() {
    let server = TestServer::start().await;
    let fixture = fixture();
    let runtime = load(&fixture).await;
    let args = serde_json::json!({ "a": server.url("/never"), "b": server.url("/never") });
    let pending = runtime
        .call("rs_fetch_both", &args.to_string())
        .expect("the call starts");
    assert!(
        server.wait_for_in_flight(2, Duration::from_secs(10)).await,
        "both requests arrive"
    );
    drop(pending);
    assert!(
        server
            .wait_for_client_closes(2, Duration::from_secs(10))
            .await,
        "cancelling the call closes both connections"
    );
}
