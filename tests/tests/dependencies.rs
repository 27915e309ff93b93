//! Plugin dependencies (manifest `requires`, `conflicts`) and the manifest's metadata,
//! through the embedding API with real plugins in real sandboxes: which plugins
//! register, in what order, what the others are told, and what a reload re-checks.

use toolcell::{DiagnosticKind, InvokeError, Runtime, Severity};
use toolcell_tests::{Fixture, assert_contains, output};

/// A plugin registering `name`, which answers `text`.
fn answer(name: &str, text: &str) -> String {
    format!(
        "clm.tool_register({name:?}, {{ invoke = function(_, ctx) ctx:complete({text:?}) end }})\n"
    )
}

/// The errors of `runtime` about dependencies, as (code, message).
fn errors(runtime: &Runtime) -> Vec<(&'static str, String)> {
    runtime
        .diagnostics()
        .iter()
        .filter(|diagnostic| {
            diagnostic.severity == Severity::Error && diagnostic.kind.code().starts_with("plugin_")
        })
        .map(|diagnostic| (diagnostic.kind.code(), diagnostic.message.clone()))
        .collect()
}

fn ids(runtime: &Runtime) -> Vec<&str> {
    runtime
        .plugins()
        .iter()
        .map(|plugin| plugin.manifest.id.as_str())
        .collect()
}

fn unavailable(runtime: &Runtime, tool: &str) -> String {
    match runtime.call(tool, "{}") {
        Err(InvokeError::Unavailable { reason, .. }) => reason,
        Err(other) => panic!("{tool}: {other}"),
        Ok(_) => panic!("{tool} is callable"),
    }
}

#[tokio::test]
async fn requirements_order_the_load_and_refuse_what_is_missing_mismatched_ambiguous_or_in_conflict()
 {
    // A plugin's id is its file's name (`NAMESPACE+NAME.lua` for `NAMESPACE/NAME`).
    let fixture = Fixture::new(&[
        // First in file order, but it waits for what it requires, so the plugin it
        // requires keeps the tool name both register.
        (
            "a_app.lua",
            &(answer("shared", "app") + &answer("app", "app ran")),
        ),
        (
            "a_app.lua.toml",
            "version = \"1.0.0\"\n[requires]\n\"acme/http-utils\" = \">=1.2, <2\"\n",
        ),
        ("acme+http-utils.lua", &answer("shared", "utils")),
        ("acme+http-utils.lua.toml", "version = \"1.4.0\"\n"),
        ("chain.lua", &answer("chain", "chain ran")),
        (
            "chain.lua.toml",
            "version = \"1.0.0\"\n[requires]\nlonely = \"1\"\n",
        ),
        ("lonely.lua", &answer("lonely", "lonely ran")),
        (
            "lonely.lua.toml",
            "version = \"1.0.0\"\n[requires]\nnowhere = \"*\"\n",
        ),
        ("newer.lua", &answer("newer", "newer ran")),
        (
            "newer.lua.toml",
            "version = \"1.0.0\"\n[requires]\n\"acme/http-utils\" = \">=2\"\n",
        ),
        ("one+json.lua", &answer("json_one", "one")),
        ("one+json.lua.toml", "version = \"1.0.0\"\n"),
        ("rival.lua", &answer("rival", "rival ran")),
        (
            "rival.lua.toml",
            "version = \"1.0.0\"\nconflicts = [\"acme/http-utils\"]\n",
        ),
        // A name without a namespace finds the one plugin of that name.
        ("short.lua", &answer("short", "short ran")),
        (
            "short.lua.toml",
            "version = \"1.0.0\"\n[requires]\nhttp-utils = \"^1.4\"\n",
        ),
        ("two+json.lua", &answer("json_two", "two")),
        ("two+json.lua.toml", "version = \"1.0.0\"\n"),
        ("vague.lua", &answer("vague", "vague ran")),
        (
            "vague.lua.toml",
            "version = \"1.0.0\"\n[requires]\njson = \"*\"\n",
        ),
    ]);
    let runtime = fixture.load().await;
    let errors = errors(&runtime);
    // In file order.
    assert_eq!(
        errors.iter().map(|(code, _)| *code).collect::<Vec<_>>(),
        [
            "plugin_not_installed",
            "plugin_not_installed",
            "plugin_version_mismatch",
            "plugin_conflict",
            "plugin_ambiguous",
        ],
        "{errors:#?}"
    );
    assert_eq!(
        errors[0].1,
        "plugin 'chain' 1.0.0 (chain.lua) requires plugin 'lonely' ^1, but plugin 'lonely' \
         1.0.0 (lonely.lua), which is not loaded either; it is not loaded"
    );
    assert_eq!(
        errors[1].1,
        "plugin 'lonely' 1.0.0 (lonely.lua) requires plugin 'nowhere', but no loaded plugin \
         has that id; it is not loaded"
    );
    assert_eq!(
        errors[2].1,
        "plugin 'newer' 1.0.0 (newer.lua) requires plugin 'acme/http-utils' >=2, but plugin \
         'acme/http-utils' 1.4.0 (acme+http-utils.lua) does not satisfy it; it is not loaded"
    );
    assert_eq!(
        errors[3].1,
        "plugin 'rival' 1.0.0 (rival.lua) conflicts with plugin 'acme/http-utils' 1.4.0 \
         (acme+http-utils.lua), which loaded; it is not loaded (remove one of the two)"
    );
    assert_contains(
        &errors[4].1,
        &[
            "plugin 'vague' 1.0.0 (vague.lua) requires plugin 'json'",
            "plugin 'one/json' 1.0.0 (one+json.lua) and plugin 'two/json' 1.0.0 (two+json.lua)",
            "give the id with its namespace",
        ],
    );

    // File order, each plugin after what it requires; the refused are left out.
    assert_eq!(
        ids(&runtime),
        ["acme/http-utils", "a_app", "one/json", "short", "two/json"]
    );
    assert_eq!(output(&runtime, "shared", "{}").await, "utils");
    assert_eq!(output(&runtime, "a_app/shared", "{}").await, "app");
    assert_eq!(output(&runtime, "app", "{}").await, "app ran");
    assert_eq!(output(&runtime, "short", "{}").await, "short ran");
    // A refused plugin's tools say why they cannot be called.
    assert_eq!(unavailable(&runtime, "chain"), errors[0].1);
    assert_eq!(unavailable(&runtime, "newer"), errors[2].1);
    assert_eq!(unavailable(&runtime, "rival"), errors[3].1);
}

#[tokio::test]
async fn a_reload_that_changes_or_removes_a_dependency_rechecks_its_dependents() {
    const COUNTER: &str = r#"
local count = 0
clm.tool_register("bump", { invoke = function(_, ctx) count = count + 1; ctx:complete(tostring(count)) end })
"#;
    let fixture = Fixture::new(&[
        ("app.lua", COUNTER),
        (
            "app.lua.toml",
            "version = \"1.0.0\"\n[requires]\nutils = \">=1.2, <2\"\n",
        ),
        ("utils.lua", &answer("util", "1.4")),
        ("utils.lua.toml", "version = \"1.4.0\"\n"),
    ]);
    let mut runtime = fixture.load().await;
    assert_eq!(errors(&runtime), []);
    assert_eq!(output(&runtime, "bump", "{}").await, "1");

    fixture.add_plugin("utils.lua.toml", "version = \"2.0.0\"\n");
    let new = runtime
        .reload(&fixture.plugin_dir().join("utils.lua.toml"))
        .await
        .expect("a plugin file");
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0].kind, DiagnosticKind::PluginVersionMismatch);
    assert_contains(
        &new[0].message,
        &[
            "plugin 'app' 1.0.0 (app.lua)",
            "plugin 'utils' 2.0.0 (utils.lua)",
        ],
    );
    assert_eq!(ids(&runtime), ["utils"]);
    assert_contains(&unavailable(&runtime, "bump"), &["does not satisfy it"]);

    // Satisfied again: the dependent is back, in the sandbox it kept (its state too).
    fixture.add_plugin("utils.lua.toml", "version = \"1.9.0\"\n");
    let new = runtime
        .reload(&fixture.plugin_dir().join("utils.lua"))
        .await
        .expect("a plugin file");
    assert_eq!(new, []);
    assert_eq!(ids(&runtime), ["utils", "app"]);
    assert_eq!(output(&runtime, "bump", "{}").await, "2");

    std::fs::remove_file(fixture.plugin_dir().join("utils.lua")).expect("remove");
    let new = runtime
        .reload(&fixture.plugin_dir().join("utils.lua"))
        .await
        .expect("a plugin file");
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0].kind, DiagnosticKind::PluginNotInstalled);
    assert!(runtime.tools().is_empty());
}

#[tokio::test]
async fn plugins_that_require_each_other_both_load() {
    let fixture = Fixture::new(&[
        ("a.lua", &answer("from_a", "a")),
        ("a.lua.toml", "[requires]\nb = \"*\"\n"),
        ("b.lua", &answer("from_b", "b")),
        ("b.lua.toml", "[requires]\na = \"*\"\n"),
    ]);
    let runtime = fixture.load().await;
    assert_eq!(errors(&runtime), []);
    assert_eq!(ids(&runtime), ["a", "b"]);
}

#[tokio::test]
async fn the_common_metadata_is_accepted_and_kept() {
    let fixture = Fixture::new(&[
        ("acme+notes.lua", &answer("note", "n")),
        (
            "acme+notes.lua.toml",
            r#"
id = "acme/notes"
version = "1.2.0"
author = "Ada <ada@example.org>"
license = "MIT"
homepage = "https://example.org/notes"
repository = "https://example.org/notes.git"
keywords = ["notes", "markdown"]
"#,
        ),
    ]);
    let runtime = fixture.load().await;
    assert_eq!(runtime.diagnostics(), []);
    let about = &runtime.plugins()[0].manifest.about;
    assert_eq!(about.author.as_deref(), Some("Ada <ada@example.org>"));
    assert_eq!(about.license.as_deref(), Some("MIT"));
    assert_eq!(about.homepage.as_deref(), Some("https://example.org/notes"));
    assert_eq!(
        about.repository.as_deref(),
        Some("https://example.org/notes.git")
    );
    assert_eq!(about.keywords, ["notes", "markdown"]);
}
