//! Manifests and capabilities through real sandboxes: a plugin gets the intersection of
//! what its manifest asks for and what the user's policy allows, and using more fails
//! with an error that names the capability and how to grant it. A `.lua` without a
//! manifest keeps clm-tool(5)'s rights (the conformance suite covers that).

use std::time::{Duration, Instant};

use toolcell::config::Config;
use toolcell::files::FileAccess;
use toolcell::{DiagnosticKind, Severity};
use toolcell_tests::http_server::TestServer;
use toolcell_tests::{Fixture, assert_contains, failure, output};

/// A plugin that reads, writes, fetches, sleeps and allocates on request.
const ASKER: &str = r#"
clm.tool_register("read", { invoke = function(args, ctx)
  local text, err = clm.read_file(args.path)
  if text == nil then return ctx:fail(err) end
  ctx:complete(text)
end })
clm.tool_register("write", { invoke = function(args, ctx)
  local ok, err = clm.write_file(args.path, args.text)
  if not ok then return ctx:fail(err) end
  ctx:complete("written")
end })
clm.tool_register("get", { invoke = function(args, ctx)
  local resp, err = http.get(args.url)
  if resp == nil then return ctx:fail(err) end
  ctx:complete(resp.status .. " " .. resp.body)
end })
clm.tool_register("nap", { invoke = function(args, ctx)
  clm.sleep(args.ms)
  ctx:complete("rested")
end })
clm.tool_register("hog", { invoke = function(args, ctx)
  local parts = {}
  for i = 1, args.mib do parts[i] = string.rep("x", 1024 * 1024) end
  ctx:complete("held " .. #parts .. " MiB")
end })
"#;

fn args(value: serde_json::Value) -> String {
    value.to_string()
}

#[tokio::test]
async fn a_sidecar_manifest_names_the_plugin_and_limits_its_files_to_reading() {
    let fixture = Fixture::new(&[
        ("reader.lua", ASKER),
        (
            "reader.lua.toml",
            "id = \"reader\"\nversion = \"1.2.3\"\n[capabilities]\nfiles = \"read-only\"\n",
        ),
    ]);
    std::fs::write(fixture.root().join("note.txt"), "kept").expect("write");
    let runtime = fixture.load().await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    let plugin = &runtime.plugins()[0];
    assert_eq!(plugin.manifest.id, "reader");
    assert_eq!(plugin.manifest.version.to_string(), "1.2.3");
    // The grants say what the sandbox enforces: reading, and no HTTP (none asked).
    assert_eq!(plugin.grants.files(), FileAccess::ReadOnly);
    assert!(!plugin.grants.may_use_http() && plugin.grants.is_read_only());
    assert_eq!(
        runtime.tool("read").map(|tool| tool.plugin.as_str()),
        Some("reader")
    );
    assert_eq!(
        output(
            &runtime,
            "read",
            &args(serde_json::json!({"path": "note.txt"}))
        )
        .await,
        "kept"
    );
    let refused = failure(
        &runtime,
        "write",
        &args(serde_json::json!({"path": "note.txt", "text": "changed"})),
    )
    .await;
    assert_contains(
        &refused,
        &[
            "cannot write note.txt",
            "plugin 'reader' may only read files",
            "its manifest asks for files = \"read-only\"",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(fixture.root().join("note.txt")).expect("read"),
        "kept"
    );
}

#[tokio::test]
async fn what_a_manifest_does_not_ask_for_it_does_not_get() {
    let server = TestServer::start().await;
    let fixture = Fixture::new(&[
        ("bare.lua", ASKER),
        ("bare.lua.toml", "description = \"asks for nothing\"\n"),
    ]);
    std::fs::write(fixture.root().join("note.txt"), "secret").expect("write");
    let runtime = fixture
        .load_with(|builder| builder.allow_http("127.0.0.1".parse().expect("grant")))
        .await;
    let refused = failure(
        &runtime,
        "read",
        &args(serde_json::json!({"path": "note.txt"})),
    )
    .await;
    assert_contains(
        &refused,
        &["cannot read note.txt", "plugin 'bare' has no file access"],
    );
    let refused = failure(
        &runtime,
        "get",
        &args(serde_json::json!({"url": server.url("/hello")})),
    )
    .await;
    assert_contains(&refused, &["asks for no HTTP access", "capabilities.http"]);
    assert_eq!(server.stats().requests, 0);
}

#[tokio::test]
async fn http_goes_only_to_the_asked_hosts_that_the_policy_also_allows() {
    let server = TestServer::start().await;
    let port = server.port();
    let fixture = Fixture::new(&[
        ("web.lua", ASKER),
        (
            "web.lua.toml",
            &format!("[capabilities]\nhttp = [\"127.0.0.1:{port}\"]\n"),
        ),
    ]);
    // Asked for, but loopback is not granted by the user: refused by the policy, and
    // the load says so.
    let runtime = fixture.load().await;
    let denial = runtime
        .diagnostics()
        .iter()
        .find(|d| d.kind == DiagnosticKind::CapabilityDenied)
        .expect("a capability_denied warning");
    assert_eq!(denial.severity, Severity::Warning);
    assert_contains(&denial.message, &["web.lua", "--allow-http 127.0.0.1"]);
    let refused = failure(
        &runtime,
        "get",
        &args(serde_json::json!({"url": server.url("/hello")})),
    )
    .await;
    assert_contains(&refused, &["refused by policy", "--allow-http"]);

    // Granted by the user too: allowed; another port of the same host is not asked for.
    let runtime = fixture
        .load_with(|builder| builder.allow_http("127.0.0.1".parse().expect("grant")))
        .await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    assert_eq!(
        output(
            &runtime,
            "get",
            &args(serde_json::json!({"url": server.url("/hello")}))
        )
        .await,
        "200 hello"
    );
    let other = TestServer::start().await;
    let refused = failure(
        &runtime,
        "get",
        &args(serde_json::json!({"url": other.url("/hello")})),
    )
    .await;
    assert_contains(
        &refused,
        &[
            &format!("127.0.0.1:{} is not among the hosts", other.port()),
            "capabilities.http",
        ],
    );
    assert_eq!(other.stats().requests, 0);
}

#[tokio::test]
async fn the_policy_can_cut_file_access_below_what_the_manifest_asks() {
    let fixture = Fixture::new(&[("plain.lua", ASKER)]);
    std::fs::write(fixture.root().join("note.txt"), "kept").expect("write");
    let runtime = fixture
        .load_with(|builder| builder.file_access(FileAccess::ReadOnly))
        .await;
    let denial = &runtime.diagnostics()[0];
    assert_eq!(
        (denial.kind, denial.severity),
        (DiagnosticKind::CapabilityDenied, Severity::Warning)
    );
    assert_contains(
        &denial.message,
        &["asks for files = \"read-write\"", "--files read-write"],
    );
    assert_eq!(
        output(
            &runtime,
            "read",
            &args(serde_json::json!({"path": "note.txt"}))
        )
        .await,
        "kept"
    );
    let refused = failure(
        &runtime,
        "write",
        &args(serde_json::json!({"path": "note.txt", "text": "x"})),
    )
    .await;
    assert_contains(
        &refused,
        &[
            "plugin 'plain' may only read files",
            "the policy allows files = \"read-only\"",
            "[plugins.plain.files] access = \"read-write\"",
        ],
    );
}

#[tokio::test]
async fn the_config_file_sets_file_access_per_plugin_id() {
    let fixture = Fixture::new(&[("plain.lua", ASKER)]);
    let config = Config::parse("[plugins.plain.files]\naccess = \"none\"\n").expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    let refused = failure(&runtime, "read", &args(serde_json::json!({"path": "x"}))).await;
    assert_contains(
        &refused,
        &["plugin 'plain' has no file access", "the policy allows"],
    );
}

#[tokio::test]
async fn the_command_line_wins_over_the_config_file() {
    let fixture = Fixture::new(&[("plain.lua", ASKER)]);
    let config =
        Config::parse("[files]\naccess = \"none\"\n[plugins.plain.files]\naccess = \"none\"\n")
            .expect("config");
    let runtime = fixture
        .load_with(|builder| builder.config(config).file_access(FileAccess::ReadWrite))
        .await;
    let grants = &runtime.plugins()[0].grants;
    assert_eq!(grants.files(), FileAccess::ReadWrite);
    assert!(grants.may_write_files() && !grants.is_read_only());
    assert_eq!(
        output(
            &runtime,
            "write",
            &args(serde_json::json!({"path": "note.txt", "text": "granted"}))
        )
        .await,
        "written"
    );
    assert_eq!(
        std::fs::read_to_string(fixture.root().join("note.txt")).expect("read"),
        "granted"
    );
}

#[tokio::test]
async fn a_manifest_asking_for_less_memory_gets_less() {
    let fixture = Fixture::new(&[
        ("small.lua", ASKER),
        ("small.lua.toml", "[capabilities]\nmemory_mib = 4\n"),
    ]);
    let runtime = fixture.load().await;
    assert_eq!(
        output(&runtime, "hog", &args(serde_json::json!({"mib": 2}))).await,
        "held 2 MiB"
    );
    let refused = failure(&runtime, "hog", &args(serde_json::json!({"mib": 6}))).await;
    assert_contains(&refused, &["out of memory", "4 MiB"]);
}

#[tokio::test]
async fn more_memory_than_the_policy_allows_is_cut_and_the_failure_says_how_to_grant_it() {
    let fixture = Fixture::new(&[
        ("big.lua", ASKER),
        ("big.lua.toml", "[capabilities]\nmemory_mib = 16\n"),
    ]);
    let runtime = fixture.load().await;
    let denial = &runtime.diagnostics()[0];
    assert_eq!(denial.kind, DiagnosticKind::CapabilityDenied);
    assert_contains(
        &denial.message,
        &["16 MiB", "8 MiB", "[plugins.big.limits] memory_mib = 16"],
    );
    let refused = failure(&runtime, "hog", &args(serde_json::json!({"mib": 12}))).await;
    assert_contains(
        &refused,
        &["out of memory", "[plugins.big.limits] memory_mib = 16"],
    );
    // Granted by the user: the same call succeeds.
    let config = Config::parse("[plugins.big.limits]\nmemory_mib = 16\n").expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    assert_eq!(
        output(&runtime, "hog", &args(serde_json::json!({"mib": 12}))).await,
        "held 12 MiB"
    );
}

#[tokio::test]
async fn the_manifest_sets_the_default_deadline_within_the_policy() {
    let fixture = Fixture::new(&[
        ("quick.lua", ASKER),
        ("quick.lua.toml", "[capabilities]\ntimeout_ms = 200\n"),
    ]);
    let runtime = fixture.load().await;
    let started = Instant::now();
    let refused = failure(&runtime, "nap", &args(serde_json::json!({"ms": 5000}))).await;
    assert_eq!(refused, "tool 'nap' timed out after 200 ms");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );

    let fixture = Fixture::new(&[
        ("patient.lua", ASKER),
        ("patient.lua.toml", "[capabilities]\ntimeout_ms = 60000\n"),
    ]);
    let config = Config::parse("[limits]\ncall_timeout_ms = 300\n").expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    assert_eq!(
        runtime.diagnostics()[0].kind,
        DiagnosticKind::CapabilityDenied
    );
    let refused = failure(&runtime, "nap", &args(serde_json::json!({"ms": 5000}))).await;
    assert_contains(
        &refused,
        &[
            "tool 'nap' timed out after 300 ms",
            "[plugins.patient.limits] call_timeout_ms = 60000",
        ],
    );
}

#[tokio::test]
async fn the_config_files_default_deadline_applies_to_plain_lua_plugins() {
    let fixture = Fixture::new(&[("plain.lua", ASKER)]);
    let config = Config::parse("[plugins.plain.limits]\ncall_timeout_ms = 250\n").expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    let refused = failure(&runtime, "nap", &args(serde_json::json!({"ms": 5000}))).await;
    assert_eq!(refused, "tool 'nap' timed out after 250 ms");
}

#[tokio::test]
async fn a_bad_sidecar_refuses_only_its_plugin_and_an_unknown_key_is_a_warning() {
    let fixture = Fixture::new(&[
        ("a_bad.lua", ASKER),
        ("a_bad.lua.toml", "id = \"Bad Id\"\n"),
        ("b_typo.lua", ASKER),
        ("b_typo.lua.toml", "[capabilities]\nfile = \"read-only\"\n"),
        (
            "c_good.lua",
            r#"clm.tool_register("fine", { invoke = function(_, ctx) ctx:complete("fine") end })"#,
        ),
    ]);
    let runtime = fixture.load().await;
    let diagnostics: Vec<_> = runtime
        .diagnostics()
        .iter()
        .map(|d| (d.kind, d.severity, d.message.clone()))
        .collect();
    assert_eq!(diagnostics.len(), 2, "{diagnostics:?}");
    assert_eq!(diagnostics[0].0, DiagnosticKind::ManifestInvalid);
    assert_eq!(diagnostics[0].1, Severity::Error);
    assert_contains(
        &diagnostics[0].2,
        &["a_bad.lua", "a_bad.lua.toml", "\"Bad Id\""],
    );
    // The misspelt key is ignored, and said: the plugin loads without what it meant to
    // ask for (a sidecar's omitted `files` asks for none).
    assert_eq!(diagnostics[1].0, DiagnosticKind::ManifestUnknownKey);
    assert_eq!(diagnostics[1].1, Severity::Warning);
    assert_contains(
        &diagnostics[1].2,
        &["b_typo.lua", "b_typo.lua.toml", "`capabilities.file`"],
    );
    assert_eq!(output(&runtime, "fine", "{}").await, "fine");
    std::fs::write(fixture.root().join("note.txt"), "hi").expect("write");
    assert_contains(
        &failure(&runtime, "b_typo/read", r#"{"path":"note.txt"}"#).await,
        &["plugin 'b_typo' has no file access"],
    );
}

#[tokio::test]
async fn two_files_with_one_id_are_both_refused_and_a_claimed_id_is_refused() {
    let fixture = Fixture::new(&[
        (
            "notes.lua",
            r#"clm.tool_register("from_lower", { invoke = function(_, ctx) ctx:complete("a") end })"#,
        ),
        (
            "Notes.lua",
            r#"clm.tool_register("from_upper", { invoke = function(_, ctx) ctx:complete("b") end })"#,
        ),
        (
            "helper.lua",
            r#"clm.tool_register("helper", { invoke = function(_, ctx) ctx:complete("c") end })"#,
        ),
        ("helper.lua.toml", "id = \"weather\"\n"),
        (
            "weather.lua",
            r#"clm.tool_register("forecast", { invoke = function(_, ctx) ctx:complete("sun") end })"#,
        ),
    ]);
    let runtime = fixture.load().await;
    let refusals: Vec<(DiagnosticKind, &str)> = runtime
        .diagnostics()
        .iter()
        .map(|diagnostic| (diagnostic.kind, diagnostic.message.as_str()))
        .collect();
    assert_eq!(
        refusals,
        [
            (
                DiagnosticKind::IdCollision,
                "plugin Notes.lua was refused: its name gives the id 'notes', as the name of \
                 plugin notes.lua does; an id names one plugin, so none of them is loaded \
                 (rename all but one)"
            ),
            (
                DiagnosticKind::IdMismatch,
                "plugin helper.lua was refused: its manifest helper.lua.toml claims the id \
                 'weather', but a .lua plugin's id is its file name's, 'helper' (name the file \
                 weather.lua, or leave `id` out of the manifest); 'weather' is the id of plugin \
                 weather.lua"
            ),
            (
                DiagnosticKind::IdCollision,
                "plugin notes.lua was refused: its name gives the id 'notes', as the name of \
                 plugin Notes.lua does; an id names one plugin, so none of them is loaded \
                 (rename all but one)"
            ),
        ]
    );
    assert!(runtime.tool("from_lower").is_none() && runtime.tool("from_upper").is_none());
    assert!(runtime.tool("helper").is_none());
    assert_eq!(output(&runtime, "forecast", "{}").await, "sun");
    assert_eq!(runtime.plugins().len(), 1, "weather alone holds its id");
}

#[tokio::test]
async fn configuration_is_found_by_the_plugin_id() {
    let fixture = Fixture::new(&[
        (
            "greeter.lua",
            r#"clm.tool_register("show", { invoke = function(_, ctx) ctx:complete(tostring(clm.config.greeting)) end })"#,
        ),
        ("greeter.lua.toml", "id = \"greeter\"\n"),
    ]);
    let config = Config::parse("[tools.greeter]\ngreeting = \"hi\"\n").expect("config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    assert_eq!(output(&runtime, "show", "{}").await, "hi");
}
