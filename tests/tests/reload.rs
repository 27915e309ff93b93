//! Replacing one plugin while the others keep serving (`Runtime::load_file`,
//! `Runtime::apply`, `Runtime::reload`), and argument validation against
//! `params_schema`, through the embedding API with real plugins in real sandboxes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use toolcell::{CallOutcome, DiagnosticKind, InvokeError, Runtime, reload};
use toolcell_tests::{Fixture, HANG_GUARD, assert_contains, output};

fn answer(name: &str, text: &str) -> String {
    format!(
        "clm.tool_register({name:?}, {{ invoke = function(_, ctx) ctx:complete({text:?}) end }})\n"
    )
}

fn names(runtime: &Runtime) -> Vec<&str> {
    runtime
        .tools()
        .iter()
        .map(|tool| tool.name.as_str())
        .collect()
}

async fn reload(runtime: &mut Runtime, fixture: &Fixture, file: &str) -> Vec<toolcell::Diagnostic> {
    runtime
        .reload(&fixture.plugin_dir().join(file))
        .await
        .unwrap_or_else(|| panic!("{file} is a plugin file of the runtime"))
}

const COUNTER: &str = r#"
local count = 0
clm.tool_register("bump", { invoke = function(_, ctx) count = count + 1; ctx:complete(tostring(count)) end })
"#;

#[tokio::test]
async fn a_changed_plugin_is_replaced_and_the_others_keep_their_state() {
    let fixture = Fixture::new(&[
        ("counter.lua", COUNTER),
        ("word.lua", &answer("word", "old")),
    ]);
    let mut runtime = fixture.load().await;
    assert_eq!(output(&runtime, "bump", "{}").await, "1");
    assert_eq!(output(&runtime, "word", "{}").await, "old");

    fixture.add_plugin("word.lua", &answer("word", "new"));
    assert_eq!(reload(&mut runtime, &fixture, "word.lua").await, vec![]);

    assert_eq!(output(&runtime, "word", "{}").await, "new");
    assert_eq!(
        output(&runtime, "bump", "{}").await,
        "2",
        "the counter plugin was not reloaded"
    );
    assert_eq!(names(&runtime), ["bump", "word"]);
}

#[tokio::test]
async fn a_call_in_flight_finishes_on_the_old_sandbox() {
    let slow = |text: &str| {
        format!(
            "clm.tool_register(\"slow\", {{ invoke = function(_, ctx) clm.sleep(300) ctx:complete({text:?}) end }})\n"
        )
    };
    let fixture = Fixture::new(&[("slow.lua", &slow("old"))]);
    let mut runtime = fixture.load().await;
    let in_flight = runtime.call("slow", "{}").expect("the call starts");

    fixture.add_plugin("slow.lua", &slow("new"));
    reload(&mut runtime, &fixture, "slow.lua").await;

    let outcome = tokio::time::timeout(HANG_GUARD, in_flight)
        .await
        .expect("the old call finishes");
    assert_eq!(outcome, CallOutcome::Completed("old".to_string()));
    assert_eq!(output(&runtime, "slow", "{}").await, "new");
}

#[tokio::test]
async fn an_added_plugin_takes_its_place_in_the_load_order() {
    let fixture = Fixture::new(&[
        ("a.lua", &answer("x", "from a")),
        ("c.lua", &answer("y", "from c")),
    ]);
    let mut runtime = fixture.load().await;
    assert_eq!(output(&runtime, "y", "{}").await, "from c");

    // b.lua loads before c.lua, so its registration of `y` holds the name and c's is
    // reported; c's stays reachable by its path.
    fixture.add_plugin(
        "b.lua",
        &format!("{}{}", answer("y", "from b"), answer("z", "z")),
    );
    let diagnostics = reload(&mut runtime, &fixture, "b.lua").await;
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0].kind, DiagnosticKind::ToolCollision);
    assert_eq!(diagnostics[0].file, fixture.plugin_dir().join("c.lua"));
    assert_contains(&diagnostics[0].message, &["'y'", "c.lua", "b.lua"]);
    assert_eq!(names(&runtime), ["x", "y", "z", "y"]);
    assert_eq!(output(&runtime, "y", "{}").await, "from b");
    assert_eq!(output(&runtime, "c/y", "{}").await, "from c");

    // Without b.lua, c's `y` is registered again and the collision is gone.
    std::fs::remove_file(fixture.plugin_dir().join("b.lua")).expect("remove b.lua");
    assert_eq!(reload(&mut runtime, &fixture, "b.lua").await, vec![]);
    assert_eq!(names(&runtime), ["x", "y"]);
    assert_eq!(output(&runtime, "y", "{}").await, "from c");
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
}

#[tokio::test]
async fn a_reloaded_plugin_keeps_its_place_so_the_first_registration_still_wins() {
    let fixture = Fixture::new(&[
        ("a.lua", &answer("shared", "from a")),
        ("b.lua", &answer("shared", "from b")),
    ]);
    let mut runtime = fixture.load().await;
    assert_eq!(output(&runtime, "shared", "{}").await, "from a");
    assert_eq!(runtime.diagnostics().len(), 1);

    // a.lua drops the name: b's registration takes over.
    fixture.add_plugin("a.lua", &answer("other", "a again"));
    reload(&mut runtime, &fixture, "a.lua").await;
    assert_eq!(output(&runtime, "shared", "{}").await, "from b");
    assert_eq!(names(&runtime), ["other", "shared"]);

    // a.lua takes it back: it still loads first, so it wins again.
    fixture.add_plugin("a.lua", &answer("shared", "a is back"));
    let diagnostics = reload(&mut runtime, &fixture, "a.lua").await;
    assert_eq!(output(&runtime, "shared", "{}").await, "a is back");
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0].file, fixture.plugin_dir().join("b.lua"));
}

#[tokio::test]
async fn a_removed_plugin_takes_its_tools_with_it() {
    let fixture = Fixture::new(&[
        ("gone.lua", &answer("gone", "here")),
        ("stays.lua", &answer("stays", "ok")),
    ]);
    let mut runtime = fixture.load().await;
    std::fs::remove_file(fixture.plugin_dir().join("gone.lua")).expect("remove gone.lua");
    reload(&mut runtime, &fixture, "gone.lua").await;
    assert_eq!(names(&runtime), ["stays"]);
    assert!(matches!(
        runtime.call("gone", "{}"),
        Err(InvokeError::UnknownTool { .. })
    ));
    assert_eq!(output(&runtime, "stays", "{}").await, "ok");
}

#[tokio::test]
async fn a_plugin_that_no_longer_loads_is_reported_and_the_others_serve() {
    let fixture = Fixture::new(&[
        ("fragile.lua", &answer("fragile", "fine")),
        ("solid.lua", &answer("solid", "ok")),
    ]);
    let mut runtime = fixture.load().await;
    fixture.add_plugin("fragile.lua", "this is not Lua");
    let diagnostics = reload(&mut runtime, &fixture, "fragile.lua").await;
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0].kind, DiagnosticKind::LoadFailed);
    assert_contains(&diagnostics[0].message, &["fragile.lua", "failed to load"]);
    assert_eq!(names(&runtime), ["solid"]);
    assert_eq!(output(&runtime, "solid", "{}").await, "ok");
}

#[tokio::test]
async fn only_plugin_files_of_the_plugin_directories_can_be_reloaded() {
    let fixture = Fixture::new(&[("p.lua", &answer("p", "p"))]);
    let runtime = fixture.load().await;
    std::fs::write(fixture.plugin_dir().join("notes.txt"), "not a plugin").expect("write");
    assert!(
        runtime
            .load_file(&fixture.plugin_dir().join("notes.txt"))
            .is_none()
    );
    let elsewhere = Fixture::new(&[("q.lua", &answer("q", "q"))]);
    assert!(
        runtime
            .load_file(&elsewhere.plugin_dir().join("q.lua"))
            .is_none()
    );
    assert!(
        runtime
            .load_file(&fixture.plugin_dir().join("p.lua"))
            .is_some()
    );
}

const CHECKED: &str = r#"
local ran = 0
clm.tool_register("checked", {
  params_schema = {
    type = "object",
    properties = {
      name = { type = "string" },
      count = { type = "integer", minimum = 1 },
    },
    required = { "name" },
  },
  invoke = function(args, ctx) ran = ran + 1; ctx:complete(args.name) end,
})
clm.tool_register("ran", { invoke = function(_, ctx) ctx:complete(tostring(ran)) end })
"#;

#[tokio::test]
async fn arguments_that_fail_the_schema_never_reach_the_plugin() {
    let fixture = Fixture::new(&[("checked.lua", CHECKED)]);
    let runtime = fixture.load().await;
    let invalid = |args: &str| match runtime.call("checked", args) {
        Err(InvokeError::InvalidArguments { tool, message }) => {
            assert_eq!(tool, "checked");
            message
        }
        Err(other) => panic!("{args}: expected invalid arguments, got {other}"),
        Ok(_) => panic!("{args}: the call must not start"),
    };
    assert_eq!(
        invalid(r#"{"name": 1}"#),
        r#"value at `/name` is not of type "string""#
    );
    assert_eq!(invalid("{}"), r#""name" is a required property"#);
    assert_eq!(
        invalid(r#"{"name": ["x"], "count": 0}"#),
        r#"value at `/count` is less than the minimum of 1; value at `/name` is not of type "string""#
    );
    assert_eq!(output(&runtime, "ran", "{}").await, "0");
    assert_eq!(
        output(&runtime, "checked", r#"{"name": "ok", "count": 2}"#).await,
        "ok"
    );
    assert_eq!(output(&runtime, "ran", "{}").await, "1");
}

#[tokio::test]
async fn an_invalid_schema_is_reported_at_load_and_only_that_tool_is_dropped() {
    let fixture = Fixture::new(&[(
        "mixed.lua",
        r#"
        clm.tool_register("broken", {
          params_schema = { type = "object", properties = { n = { type = "numbre" } } },
          invoke = function(_, ctx) ctx:complete("") end,
        })
        clm.tool_register("fine", { invoke = function(_, ctx) ctx:complete("fine") end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(names(&runtime), ["fine"]);
    let diagnostics = runtime.diagnostics();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0].kind, DiagnosticKind::ToolRejected);
    assert_contains(
        &diagnostics[0].message,
        &["tool 'broken'", "plugin mixed.lua", "invalid schema"],
    );
    assert!(!diagnostics[0].message.contains('\n'));
    assert_eq!(output(&runtime, "fine", "{}").await, "fine");
}

#[tokio::test]
async fn a_schema_over_budget_is_refused_at_reload_as_at_load() {
    let huge = r#"
        clm.tool_register("named", {
          params_schema = { type = "object", properties = { name = { type = "string", pattern = "^[\\p{L}\\p{N}]{0,120}$" } } },
          invoke = function(_, ctx) ctx:complete("named") end,
        })
        "#;
    let fixture = Fixture::new(&[("named.lua", &answer("named", "small"))]);
    let mut runtime = fixture.load().await;
    assert_eq!(output(&runtime, "named", "{}").await, "small");

    fixture.add_plugin("named.lua", huge);
    let diagnostics = reload(&mut runtime, &fixture, "named.lua").await;
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0].kind, DiagnosticKind::ToolRejected);
    assert_eq!(
        diagnostics[0].message,
        r#"tool 'named' of plugin named.lua is over its schema budget and is not registered: the pattern "^[\\p{L}\\p{N}]{0,120}$" at `/properties/name/pattern` compiles to more than 2 MiB (the limit per pattern)"#
    );
    assert!(runtime.tool("named").is_none());
}

#[tokio::test]
async fn a_changed_sidecar_manifest_reloads_its_script() {
    let fixture = Fixture::new(&[("word.lua", &answer("word", "same"))]);
    let mut runtime = fixture.load().await;
    assert_eq!(runtime.plugins()[0].manifest.id, "word");

    fixture.add_plugin(
        "word.lua.toml",
        "version = \"2.0.0\"\n[capabilities]\nfiles = \"read-only\"\n",
    );
    assert_eq!(
        reload(&mut runtime, &fixture, "word.lua.toml").await,
        vec![]
    );

    let plugin = &runtime.plugins()[0];
    assert_eq!(
        (
            plugin.manifest.id.as_str(),
            plugin.manifest.version.to_string()
        ),
        ("word", "2.0.0".to_string())
    );
    assert!(!plugin.grants.may_write_files());
    assert_eq!(output(&runtime, "word", "{}").await, "same");
}

#[tokio::test]
async fn a_file_added_with_the_id_of_a_loaded_plugin_refuses_both() {
    let fixture = Fixture::new(&[("word.lua", &answer("word", "first"))]);
    let mut runtime = fixture.load().await;
    assert_eq!(output(&runtime, "word", "{}").await, "first");

    fixture.add_plugin("Word.lua", &answer("other", "second"));
    let diagnostics = reload(&mut runtime, &fixture, "Word.lua").await;
    let kinds: Vec<DiagnosticKind> = diagnostics.iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        [DiagnosticKind::IdCollision, DiagnosticKind::IdCollision],
        "{diagnostics:?}"
    );
    assert!(runtime.plugins().is_empty());
    assert!(runtime.tool("word").is_none() && runtime.tool("other").is_none());
}

#[tokio::test]
async fn a_plugin_that_breaks_on_reload_leaves_its_tools_unavailable_with_the_reason() {
    // The name is not a literal, so only the earlier registration can tell it.
    let working = "local name = 'dyn' .. 'amic'\nclm.tool_register(name, { invoke = function(_, ctx) ctx:complete('ok') end })\n";
    let fixture = Fixture::new(&[("dynamic.lua", working)]);
    let mut runtime = fixture.load().await;
    assert_eq!(output(&runtime, "dynamic", "{}").await, "ok");

    fixture.add_plugin("dynamic.lua", "error('half-edited')\n");
    reload(&mut runtime, &fixture, "dynamic.lua").await;
    let file = fixture.file_name("dynamic.lua");
    assert_eq!(
        runtime.call("dynamic", "{}").err(),
        Some(InvokeError::Unavailable {
            name: "dynamic".into(),
            reason: format!("plugin {file} failed to load: dynamic.lua:1: half-edited"),
        })
    );
    assert_eq!(
        runtime
            .call("dynamic", "{}")
            .err()
            .map(|error| error.to_string()),
        Some(format!(
            "tool 'dynamic' is unavailable: plugin {file} failed to load: dynamic.lua:1: half-edited"
        ))
    );

    // Fixed again, it is callable again.
    fixture.add_plugin("dynamic.lua", working);
    reload(&mut runtime, &fixture, "dynamic.lua").await;
    assert_eq!(output(&runtime, "dynamic", "{}").await, "ok");
}

/// Writes and reads files for whoever calls it: `plant` writes `args.path`.
const PLANTER: &str = r#"
local function show(value, err) return tostring(value) .. " | " .. tostring(err) end
local planted = 'clm.tool_register("planted", { invoke = function(_, ctx) ctx:complete("pwned") end })'
clm.tool_register("plant", { invoke = function(args, ctx)
  ctx:complete(show(clm.write_file(args.path, planted)))
end })
clm.tool_register("peek", { invoke = function(args, ctx)
  ctx:complete(show(clm.read_file(args.path)))
end })
"#;

/// Calls `tool` without holding the lock while the call runs (the watcher needs it).
async fn call_shared(runtime: &RwLock<Runtime>, tool: &str, args: &str) -> String {
    let call = runtime
        .read()
        .expect("lock")
        .call(tool, args)
        .expect("the call starts");
    match tokio::time::timeout(HANG_GUARD, call).await {
        Ok(CallOutcome::Completed(output)) => output,
        other => panic!("{tool}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_watch_a_plugin_cannot_plant_or_replace_a_plugin_in_its_root() {
    let root = tempfile::TempDir::new().expect("temp dir");
    let plugins = root.path().join("plugins");
    std::fs::create_dir(&plugins).expect("plugins");
    std::fs::write(plugins.join("planter.lua"), PLANTER).expect("planter");
    let runtime = Runtime::builder()
        .engine(toolcell_tests::engine())
        .plugin_dir(&plugins)
        .root(root.path())
        .build()
        .await
        .expect("the runtime builds");
    let runtime = Arc::new(RwLock::new(runtime));
    let changes = Arc::new(AtomicUsize::new(0));
    let counted = changes.clone();
    let _watcher = reload::watch(
        runtime.clone(),
        move || {
            counted.fetch_add(1, Ordering::SeqCst);
        },
        |_| {},
    )
    .expect("watch");

    let refused = |action: &str, path: &str| {
        format!(
            "nil | cannot {action} {path}: it lies inside the plugin directory (plugins), \
             which plugins may not read or change"
        )
    };
    for path in [
        "plugins/planted.lua",
        "plugins/planter.lua",
        "plugins/planter.lua.toml",
    ] {
        let args = format!(r#"{{"path":"{path}"}}"#);
        assert_eq!(
            call_shared(&runtime, "plant", &args).await,
            refused("write", path)
        );
    }
    assert_eq!(
        call_shared(&runtime, "peek", r#"{"path":"plugins/planter.lua"}"#).await,
        refused("read", "plugins/planter.lua")
    );
    assert!(!plugins.join("planted.lua").exists());
    assert!(!plugins.join("planter.lua.toml").exists());
    assert_eq!(
        std::fs::read_to_string(plugins.join("planter.lua")).expect("planter"),
        PLANTER
    );

    // The watcher is live: a plugin the user adds loads, and nothing else changed.
    std::fs::write(plugins.join("user.lua"), answer("user", "mine")).expect("user.lua");
    let started = std::time::Instant::now();
    while runtime.read().expect("lock").tool("user").is_none() {
        assert!(started.elapsed() < HANG_GUARD, "user.lua was never loaded");
        tokio::time::sleep(reload::DEBOUNCE).await;
    }
    assert_eq!(changes.load(Ordering::SeqCst), 1);
    assert_eq!(
        names(&runtime.read().expect("lock")),
        ["plant", "peek", "user"]
    );
    assert_eq!(call_shared(&runtime, "user", "{}").await, "mine");
}
