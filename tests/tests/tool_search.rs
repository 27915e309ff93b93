//! Tool search for large sets (`RuntimeBuilder::deferred`, `[tools] deferred`,
//! `[plugins.ID] defer`, `search_tools`), through the embedding API's `Session` with
//! real plugins in real sandboxes: a runtime of 1000 tools lists only `search_tools`
//! and what it finds.

use toolcell::config::Config;
use toolcell::{DiagnosticKind, InvokeError, Runtime, SEARCH_TOOLS, Session};
use toolcell_tests::{Fixture, assert_contains};

/// Words the filler tools' descriptions are made of: none of them is in a query below.
const FILLER: [&str; 10] = [
    "apple", "river", "stone", "cloud", "maple", "tiger", "piano", "ocean", "lemon", "comet",
];

/// A plugin of 100 tools `p{plugin}_t{i}`, described by filler words, except that
/// plugin 7's tool 42 is `convert_length` and plugin 3's tool 5 is `danger_length`.
fn plugin(plugin: usize) -> String {
    let mut source = String::new();
    for tool in 0..100 {
        let (name, description) = match (plugin, tool) {
            (7, 42) => (
                "convert_length".to_string(),
                "Convert a length between metric and imperial units".to_string(),
            ),
            (3, 5) => (
                "danger_length".to_string(),
                "Erase every imperial length".to_string(),
            ),
            _ => (
                format!("p{plugin}_t{tool}"),
                format!(
                    "The {} {} tool",
                    FILLER[tool % 10],
                    FILLER[(tool / 10 + plugin) % 10]
                ),
            ),
        };
        source.push_str(&format!(
            "clm.tool_register({name:?}, {{ description = {description:?}, \
             params_schema = {{ type = \"object\", properties = {{ x = {{ type = \"number\" }} }} }}, \
             invoke = function(_, ctx) ctx:complete({name:?} .. \" ran\") end }})\n"
        ));
    }
    source
}

fn listed(session: &Session, runtime: &Runtime) -> Vec<String> {
    session
        .tools(runtime)
        .into_iter()
        .map(|tool| tool.name)
        .collect()
}

async fn thousand_tools(config: &str) -> (Fixture, Runtime) {
    let sources: Vec<(String, String)> = (0..10)
        .map(|index| (format!("p{index}.lua"), plugin(index)))
        .chain([(
            "keep.lua".to_string(),
            "clm.tool_register(\"always_here\", { invoke = function(_, ctx) ctx:complete(\"here\") end })\n"
                .to_string(),
        )])
        .collect();
    let files: Vec<(&str, &str)> = sources
        .iter()
        .map(|(name, source)| (name.as_str(), source.as_str()))
        .collect();
    let fixture = Fixture::new(&files);
    let config = Config::parse(config).expect("config");
    let runtime = fixture
        .load_with(|builder| builder.config(config).deferred(true))
        .await;
    assert_eq!(runtime.tools().len(), 1001);
    (fixture, runtime)
}

#[tokio::test]
async fn a_thousand_deferred_tools_list_only_search_tools_and_what_it_finds() {
    let (_fixture, runtime) =
        thousand_tools("[plugins.keep]\ndefer = false\n[permissions]\ndeny = [\"danger_*\"]\n")
            .await;
    let session = Session::new();
    assert_eq!(listed(&session, &runtime), ["always_here", SEARCH_TOOLS]);
    // A deferred tool the session has not found is as unknown as any tool it cannot see.
    assert!(matches!(
        session.call(&runtime, "convert_length", "{}"),
        Err(InvokeError::UnknownTool { .. })
    ));

    // The model's call: the best match first, with its schema; a denied tool is never
    // found, however well it matches.
    let outcome = session
        .invoke(
            &runtime,
            SEARCH_TOOLS,
            r#"{"query": "convert an imperial length", "limit": 3}"#,
        )
        .await
        .expect("a call");
    let found: serde_json::Value =
        serde_json::from_str(outcome.output().expect("completed")).expect("JSON");
    let tools = found["tools"].as_array().expect("a list");
    assert_eq!(tools.len(), 1, "{found}");
    assert_eq!(tools[0]["name"], "convert_length");
    assert_eq!(
        tools[0]["description"],
        "Convert a length between metric and imperial units"
    );
    assert_eq!(
        tools[0]["input_schema"]["properties"]["x"]["type"],
        "number"
    );
    assert_eq!(session.found_tools(), ["p7/convert_length"]);
    assert_eq!(
        listed(&session, &runtime),
        ["always_here", "convert_length", SEARCH_TOOLS]
    );
    let outcome = session
        .invoke(&runtime, "convert_length", "{}")
        .await
        .expect("a call");
    assert_eq!(outcome.output(), Some("convert_length ran"));

    // Another session has found nothing; the embedding API searches directly too.
    let other = Session::new();
    assert_eq!(listed(&other, &runtime), ["always_here", SEARCH_TOOLS]);
    let hits = other.search_tools(&runtime, "river stone", 2);
    assert_eq!(hits.len(), 2);
    for hit in &hits {
        assert_contains(&hit.description, &["river"]);
    }
    assert_eq!(other.tools(&runtime).len(), 4);
    let stats = runtime.stats();
    assert_eq!(stats.tool(SEARCH_TOOLS).map(|tool| tool.total()), Some(1));
}

#[tokio::test]
async fn search_arguments_are_checked_and_the_name_is_kept_for_it() {
    let (fixture, runtime) = thousand_tools("").await;
    let session = Session::new();
    match session.call(&runtime, SEARCH_TOOLS, r#"{"query": "x", "limit": 0}"#) {
        Err(InvokeError::InvalidArguments { tool, message }) => {
            assert_eq!(tool, SEARCH_TOOLS);
            assert_contains(&message, &["`limit` must be a whole number from 1 to 50"]);
        }
        other => panic!("{:?}", other.map(|call| call.id())),
    }
    // Nothing found: an empty list, and nothing added.
    let outcome = session
        .invoke(&runtime, SEARCH_TOOLS, r#"{"query": "zebra"}"#)
        .await
        .expect("a call");
    assert_eq!(outcome.output(), Some(r#"{"tools":[]}"#));
    assert!(session.found_tools().is_empty());

    // A plugin's tool of that name answers only to its path while tools may be deferred.
    fixture.add_plugin(
        "zz.lua",
        "clm.tool_register(\"search_tools\", { invoke = function(_, ctx) ctx:complete(\"mine\") end })\n",
    );
    let runtime = fixture.load_with(|builder| builder.deferred(true)).await;
    assert!(
        runtime
            .diagnostics()
            .iter()
            .any(
                |diagnostic| diagnostic.kind == DiagnosticKind::ToolCollision
                    && diagnostic.message.contains("zz/search_tools")
            )
    );
    assert_eq!(
        toolcell_tests::output(&runtime, "zz/search_tools", "{}").await,
        "mine"
    );
}

#[tokio::test]
async fn one_plugin_deferred_by_the_configuration() {
    let fixture = Fixture::new(&[
        ("big.lua", &plugin(7)),
        (
            "small.lua",
            "clm.tool_register(\"small\", { invoke = function(_, ctx) ctx:complete(\"s\") end })\n",
        ),
    ]);
    let config = Config::parse("[plugins.big]\ndefer = true\n").expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    assert!(runtime.offers_tool_search());
    let session = Session::new();
    assert_eq!(listed(&session, &runtime), ["small", SEARCH_TOOLS]);

    // `[tools] deferred` in the file, with a plugin that opts out.
    let config = Config::parse("[tools]\ndeferred = true\n[plugins.small]\ndefer = false\n")
        .expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    assert_eq!(listed(&session, &runtime), ["small", SEARCH_TOOLS]);

    // Without deferral no search is offered and nothing is kept from the plugins.
    let runtime = fixture.load().await;
    assert!(!runtime.offers_tool_search());
    assert_eq!(session.tools(&runtime).len(), 101);
}
