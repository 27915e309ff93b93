//! Mistakes a plugin author makes in the first hour, and the messages that name their
//! cause: globals the sandbox leaves out, a result returned instead of passed to
//! `ctx:complete`, a table given to `ctx:complete`; and `clm.time`, the clock that
//! stands in for `os.time`.

use super::Fixture;
use toolcell_tests::{assert_contains, failure, output};

fn tool(name: &str, body: &str) -> String {
    format!("clm.tool_register({name:?}, {{ invoke = function(args, ctx)\n{body}\nend }})\n")
}

#[tokio::test]
async fn an_absent_global_says_it_is_not_in_the_sandbox_and_where_to_look() {
    let plugin = [
        tool("uses_os", "ctx:complete(tostring(os.time()))"),
        tool("uses_io", r#"local f = io.open("x")"#),
        tool("uses_require", r#"local m = require("lfs")"#),
        tool("uses_coroutine", "coroutine.wrap(function() end)()"),
        tool("uses_unpack", "ctx:complete(unpack({ 'a' }))"),
        tool("uses_dofile", r#"dofile("other.lua")"#),
        tool(
            "checks_os",
            "ctx:complete(tostring(os == nil and io == nil))",
        ),
    ]
    .concat();
    let fixture = Fixture::new(&[("absent.lua", &plugin)]);
    let runtime = fixture.load().await;
    assert_eq!(
        failure(&runtime, "uses_os", "{}").await,
        "absent.lua:2: attempt to index a nil value (global 'os') ('os' is not available in \
         the sandbox: for the time use clm.time(); files: clm.read_file, clm.write_file; see \
         docs/lua-api.md, \"The sandbox\")"
    );
    assert_eq!(
        failure(&runtime, "uses_require", "{}").await,
        "absent.lua:8: attempt to call a nil value (global 'require') ('require' is not \
         available in the sandbox: a plugin is one file: no module loading; see \
         docs/lua-api.md, \"The sandbox\")"
    );
    for (tool, name, instead) in [
        ("uses_io", "io", "files: clm.read_file, clm.write_file"),
        ("uses_coroutine", "coroutine", "clm.spawn"),
        ("uses_unpack", "unpack", "table.unpack"),
        ("uses_dofile", "dofile", "no code loading"),
    ] {
        assert_contains(
            &failure(&runtime, tool, "{}").await,
            &[
                &format!("(global '{name}') ('{name}' is not available in the sandbox: "),
                instead,
                "docs/lua-api.md",
            ],
        );
    }
    // The globals stay nil, as clm-tool(5) says: only the error's text changed.
    assert_eq!(output(&runtime, "checks_os", "{}").await, "true");
}

#[tokio::test]
async fn an_absent_global_at_load_time_names_the_cause_in_the_load_failure() {
    let fixture = Fixture::new(&[("early.lua", "local started = os.clock()\n")]);
    let runtime = fixture.load().await;
    let messages: Vec<&str> = runtime
        .diagnostics()
        .iter()
        .map(|diagnostic| diagnostic.message.as_str())
        .collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_contains(
        messages[0],
        &[
            "failed to load: early.lua:1: attempt to index a nil value (global 'os')",
            "'os' is not available in the sandbox",
        ],
    );
}

#[tokio::test]
async fn a_value_returned_from_invoke_is_named_as_ignored() {
    let plugin = [
        tool("returns_text", r#"return "Hello, " .. args.name"#),
        tool("returns_table", "return { ok = true }"),
        tool("returns_nil", "return nil"),
        tool(
            "completes_and_returns",
            r#"ctx:complete("done"); return "extra""#,
        ),
    ]
    .concat();
    let fixture = Fixture::new(&[("returns.lua", &plugin)]);
    let runtime = fixture.load().await;
    assert_eq!(
        failure(&runtime, "returns_text", r#"{"name":"Ada"}"#).await,
        "invoke returned a value (string) without calling ctx:complete or ctx:fail; the value \
         is ignored: pass the result as a string to ctx:complete"
    );
    assert_contains(
        &failure(&runtime, "returns_table", "{}").await,
        &["invoke returned a value (table)", "the value is ignored"],
    );
    assert_eq!(
        failure(&runtime, "returns_nil", "{}").await,
        "invoke returned without calling ctx:complete or ctx:fail"
    );
    // A completed call may return whatever it likes.
    assert_eq!(
        output(&runtime, "completes_and_returns", "{}").await,
        "done"
    );
}

#[tokio::test]
async fn ctx_complete_with_a_table_suggests_json_encode() {
    let plugin = [
        tool("table", "ctx:complete({ answer = 42 })"),
        tool("number", "ctx:complete(42)"),
        tool("encoded", "ctx:complete(json.encode({ answer = 42 }))"),
    ]
    .concat();
    let fixture = Fixture::new(&[("complete.lua", &plugin)]);
    let runtime = fixture.load().await;
    assert_eq!(
        failure(&runtime, "table", "{}").await,
        "complete.lua:2: ctx:complete expects a string, got table (json.encode(value) turns a \
         table into a JSON string)"
    );
    assert_eq!(
        failure(&runtime, "number", "{}").await,
        "complete.lua:5: ctx:complete expects a string, got number (convert it with tostring)"
    );
    assert_eq!(output(&runtime, "encoded", "{}").await, r#"{"answer":42}"#);
}

#[tokio::test]
async fn clm_time_is_the_wall_clock_in_seconds() {
    let plugin = tool(
        "now",
        r#"local t = clm.time(); ctx:complete(math.type(t) .. " " .. string.format("%.3f", t))"#,
    );
    let fixture = Fixture::new(&[("clock.lua", &plugin)]);
    let runtime = fixture.load().await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_secs_f64();
    let text = output(&runtime, "now", "{}").await;
    let (kind, seconds) = text.split_once(' ').expect("two words");
    assert_eq!(kind, "float");
    let seconds: f64 = seconds.parse().expect("a number");
    assert!(
        (seconds - before).abs() < 5.0,
        "clm.time() = {seconds}, the host's clock {before}"
    );
}
