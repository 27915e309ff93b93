//! The clm tool API of clm-tool(5) through real plugins: `clm.tool_register`, the `ctx`
//! object, the `json` module, `clm.config`, and `clm.read_file`/`clm.write_file` inside
//! the granted root.

use super::Fixture;
use toolcell::config::Config;
use toolcell::{CallOutcome, DiagnosticKind, InvokeError};
use toolcell_tests::{assert_contains, call, failure, failure_labelled, output, outside_dir};

fn tool(name: &str, body: &str) -> String {
    format!("clm.tool_register({name:?}, {{ invoke = function(args, ctx)\n{body}\nend }})\n")
}

#[tokio::test]
async fn tool_register_records_every_field() {
    let fixture = Fixture::new(&[(
        "full.lua",
        r#"
        clm.tool_register("full", {
          description = "Does everything",
          params_schema = { type = "object", properties = { n = { type = "integer" } }, required = { "n" } },
          invoke = function(args, ctx) ctx:complete(tostring(args.n)) end,
          timeout_ms = 1234,
          no_prompt = true,
          hidden = true,
        })
        clm.tool_register("bare", { invoke = function(_, ctx) ctx:complete("") end })
        "#,
    )]);
    let runtime = fixture.load().await;
    let full = runtime.tool("full").expect("full is registered");
    assert_eq!(full.description, "Does everything");
    assert_eq!(
        full.params_schema,
        Some(serde_json::json!({
            "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"]
        }))
    );
    assert_eq!(full.timeout, Some(std::time::Duration::from_millis(1234)));
    assert!(full.no_prompt && full.hidden);
    assert_eq!(full.plugin, "full");
    let bare = runtime.tool("bare").expect("bare is registered");
    assert_eq!(
        (bare.description.as_str(), &bare.params_schema),
        ("", &None)
    );
    assert_eq!(
        (bare.timeout, bare.no_prompt, bare.hidden),
        (None, false, false)
    );
    assert_eq!(output(&runtime, "full", r#"{"n": 7}"#).await, "7");
}

#[tokio::test]
async fn an_empty_required_list_reaches_the_model_as_an_array() {
    let fixture = Fixture::new(&[(
        "empty.lua",
        r#"clm.tool_register("empty", {
             params_schema = { type = "object", properties = {}, required = {} },
             invoke = function(_, ctx) ctx:complete("") end })"#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(
        runtime
            .tool("empty")
            .and_then(|tool| tool.params_schema.clone()),
        Some(serde_json::json!({ "type": "object", "properties": {}, "required": [] }))
    );
}

#[tokio::test]
async fn bad_registrations_fail_the_load_with_a_message_naming_the_problem() {
    let cases = [
        (
            "no_invoke.lua",
            r#"clm.tool_register("t", { description = "x" })"#,
            "the spec has no invoke function",
        ),
        (
            "bad_description.lua",
            r#"clm.tool_register("t", { description = 5, invoke = print })"#,
            "description must be a string, got number",
        ),
        (
            "bad_schema.lua",
            r#"clm.tool_register("t", { params_schema = "{}", invoke = print })"#,
            "params_schema must be a table, got string",
        ),
        (
            "bad_timeout.lua",
            r#"clm.tool_register("t", { timeout_ms = -5, invoke = print })"#,
            "timeout_ms must be a positive whole number",
        ),
        (
            "fraction_timeout.lua",
            r#"clm.tool_register("t", { timeout_ms = 1.5, invoke = print })"#,
            "timeout_ms must be a positive whole number",
        ),
        (
            "bad_flag.lua",
            r#"clm.tool_register("t", { hidden = "yes", invoke = print })"#,
            "hidden must be a boolean, got string",
        ),
        (
            "bad_name.lua",
            r#"clm.tool_register("two words", { invoke = print })"#,
            "invalid tool name 'two words'",
        ),
        (
            "no_spec.lua",
            r#"clm.tool_register("t")"#,
            "the spec must be a table, got nil",
        ),
        (
            "twice.lua",
            r#"clm.tool_register("t", { invoke = print }); clm.tool_register("t", { invoke = print })"#,
            "tool 't' is already registered",
        ),
    ];
    let fixture = Fixture::new(&cases.map(|(file, source, _)| (file, source)));
    let runtime = fixture.load().await;
    assert!(runtime.tools().is_empty());
    for (file, _, expected) in cases {
        let diagnostic = runtime
            .diagnostics()
            .iter()
            .find(|d| d.file.ends_with(fixture.file_name(file)))
            .unwrap_or_else(|| panic!("no diagnostic for {file}"));
        assert_eq!(diagnostic.kind, DiagnosticKind::LoadFailed);
        // The error points at the plugin's own line, like a Lua error would.
        assert_contains(
            &diagnostic.message,
            &[file, &format!("{file}:1:"), expected],
        );
    }
}

#[tokio::test]
async fn tools_cannot_be_registered_after_load() {
    let fixture = Fixture::new(&[(
        "late.lua",
        &tool("late", r#"clm.tool_register("later", { invoke = print })"#),
    )]);
    let runtime = fixture.load().await;
    assert_contains(
        &failure(&runtime, "late", "{}").await,
        &["late.lua:2:", "only be registered at load time"],
    );
    assert!(runtime.tool("later").is_none());
}

#[tokio::test]
async fn a_tool_name_taken_by_an_earlier_plugin_stays_with_it() {
    let fixture = Fixture::new(&[
        ("a_first.lua", &tool("dup", r#"ctx:complete("first")"#)),
        (
            "b_second.lua",
            &(tool("dup", r#"ctx:complete("second")"#) + &tool("own", r#"ctx:complete("own")"#)),
        ),
    ]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "dup", "{}").await, "first");
    assert_eq!(output(&runtime, "own", "{}").await, "own");
    let collision = &runtime.diagnostics()[0];
    assert_eq!(collision.kind, DiagnosticKind::ToolCollision);
    assert_contains(
        &collision.message,
        &[
            "'dup'",
            &fixture.file_name("b_second.lua"),
            &fixture.file_name("a_first.lua"),
        ],
    );
}

#[tokio::test]
async fn ctx_completes_fails_and_forwards_raw_arguments() {
    let plugin = [
        tool("done", r#"ctx:complete("result text")"#),
        tool("refuse", r#"ctx:fail("not today")"#),
        tool("raw", "ctx:complete(ctx:args_raw())"),
        tool("twice", r#"ctx:complete("one"); ctx:complete("two")"#),
        tool("fail_then_complete", r#"ctx:fail("no"); ctx:complete("yes")"#),
        tool("caught_twice", r#"ctx:complete("kept"); local ok, err = pcall(ctx.complete, ctx, "again"); ctx:log(err)"#),
        tool("report_second", r#"ctx:complete("kept"); local ok, err = pcall(ctx.fail, ctx, "x"); if type(err) ~= "string" then error("not a string") end"#),
        tool("number", "ctx:complete(42)"),
        tool("silent", "local x = 1"),
    ]
    .concat();
    let fixture = Fixture::new(&[("ctx.lua", &plugin)]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "done", "{}").await, "result text");
    assert_eq!(failure(&runtime, "refuse", "{}").await, "not today");
    let raw = "{ \"spaced\" :  [1, 2.50, \"x\"] }";
    assert_eq!(output(&runtime, "raw", raw).await, raw);
    assert_eq!(output(&runtime, "raw", "{}").await, "{}");
    // Ending twice, uncaught, breaks the rule that an invocation ends exactly once.
    let (kind, message) = failure_labelled(&runtime, "twice", "{}").await;
    assert_eq!(kind, "broke_rule");
    assert_contains(
        &message,
        &["ctx.lua:", "ctx:complete called after ctx:complete"],
    );
    let (kind, message) = failure_labelled(&runtime, "fail_then_complete", "{}").await;
    assert_eq!(kind, "broke_rule");
    assert_contains(&message, &["ctx:complete called after ctx:fail"]);
    // A caught second completion is an ordinary Lua error (a string): the first stands.
    assert_eq!(output(&runtime, "caught_twice", "{}").await, "kept");
    assert_eq!(output(&runtime, "report_second", "{}").await, "kept");
    assert_contains(
        &failure(&runtime, "number", "{}").await,
        &["ctx:complete expects a string, got number"],
    );
    assert_eq!(
        call(&runtime, "silent", "{}").await,
        CallOutcome::BrokeRule("invoke returned without calling ctx:complete or ctx:fail".into())
    );
    // The tool's own failure and a bad argument to the API are the tool's failures.
    assert_eq!(
        call(&runtime, "refuse", "{}").await,
        CallOutcome::Failed("not today".into())
    );
    assert_eq!(failure_labelled(&runtime, "number", "{}").await.0, "failed");
}

#[tokio::test]
async fn a_ctx_kept_past_its_call_still_reads_its_arguments_but_ends_nothing() {
    let plugin = r#"
        local kept
        clm.tool_register("keep", { invoke = function(args, ctx) kept = ctx; ctx:complete("kept") end })
        clm.tool_register("use_kept", { invoke = function(args, ctx)
          local ok, err = pcall(kept.complete, kept, "stolen")
          ctx:complete(kept:args_raw() .. " | " .. tostring(ok) .. " | " .. err)
        end })
        clm.tool_register("shape", { invoke = function(args, ctx)
          local ok, err = pcall(ctx.complete, "not a ctx")
          ctx:complete(type(ctx) .. " | " .. tostring(getmetatable(ctx)) .. " | "
            .. tostring(ctx):sub(1, 4) .. " | " .. tostring(ok) .. " | " .. err)
        end })
    "#;
    let fixture = Fixture::new(&[("ctx.lua", plugin)]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "keep", r#"{"n": 1}"#).await, "kept");
    // The first call's ctx keeps its own arguments, and cannot end the second call.
    let text = output(&runtime, "use_kept", r#"{"n": 2}"#).await;
    assert_contains(
        &text,
        &[
            r#"{"n": 1} | false | ctx.lua:"#,
            "ctx:complete: this ctx belongs to another tool invocation",
        ],
    );
    // A ctx is an opaque userdata whose metatable stays private; a method called
    // with `.` instead of `:` says so.
    let text = output(&runtime, "shape", "{}").await;
    assert_contains(
        &text,
        &[
            "userdata | false | ctx: | false | ctx.lua:",
            "ctx:complete must be called on a ctx (write ctx:complete(...)), got string",
        ],
    );
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_never_reach_a_plugin() {
    let fixture = Fixture::new(&[("hello.lua", &tool("hello", r#"ctx:complete("hi")"#))]);
    let runtime = fixture.load().await;
    assert_eq!(
        runtime.call("helo", "{}").err(),
        Some(InvokeError::UnknownTool {
            name: "helo".into(),
            suggestions: vec!["hello".into()]
        })
    );
    for (args, expected) in [
        ("[1]", "expected a JSON object, got an array"),
        ("{", "not valid JSON"),
        ("3", "got a number"),
    ] {
        match runtime.call("hello", args) {
            Err(InvokeError::InvalidArguments { message, .. }) => {
                assert_contains(&message, &[expected])
            }
            Err(other) => panic!("{args}: unexpected error {other}"),
            Ok(_) => panic!("{args}: accepted"),
        }
    }
    let huge = format!("{{\"x\":\"{}\"}}", "a".repeat(2 * 1024 * 1024));
    assert!(matches!(
        runtime.call("hello", &huge),
        Err(InvokeError::InvalidArguments { .. })
    ));
}

#[tokio::test]
async fn json_round_trips_and_keeps_null_apart_from_nil() {
    let plugin = [
        tool("roundtrip", "ctx:complete(json.encode(json.decode(ctx:args_raw())))"),
        tool(
            "null",
            r#"local v = json.decode('{"a":null,"b":[1,null,3]}')
               ctx:complete(tostring(v.a == json.null) .. " " .. tostring(v.a ~= nil) .. " " .. #v.b .. " " .. json.encode(v))"#,
        ),
        tool("empties", r#"ctx:complete(json.encode({ fresh = {}, decoded = json.decode("[]") }))"#),
        tool("invalid", r#"local v, err = json.decode("{oops"); ctx:complete(tostring(v) .. " | " .. err)"#),
        tool(
            "too_big",
            r#"local v, err = json.decode(string.rep(" ", 2 * 1024 * 1024 + 1) .. "1"); ctx:complete(tostring(v) .. " | " .. err)"#,
        ),
        tool("unencodable", "ctx:complete(json.encode({ f = print }))"),
    ]
    .concat();
    let fixture = Fixture::new(&[("j.lua", &plugin)]);
    let runtime = fixture.load().await;
    assert_eq!(
        output(
            &runtime,
            "roundtrip",
            r#"{"n":1,"f":1.5,"s":"é","l":[true,false],"o":{}}"#
        )
        .await,
        r#"{"f":1.5,"l":[true,false],"n":1,"o":{},"s":"é"}"#
    );
    assert_eq!(
        output(&runtime, "null", "{}").await,
        r#"true true 3 {"a":null,"b":[1,null,3]}"#
    );
    assert_eq!(
        output(&runtime, "empties", "{}").await,
        r#"{"decoded":[],"fresh":{}}"#
    );
    assert_contains(
        &output(&runtime, "invalid", "{}").await,
        &["nil | json.decode: "],
    );
    assert_contains(
        &output(&runtime, "too_big", "{}").await,
        &["nil | json.decode:", "2097152"],
    );
    assert_contains(
        &failure(&runtime, "unencodable", "{}").await,
        &[
            "j.lua:",
            "json.encode: cannot encode a function value at $.f",
        ],
    );
}

#[tokio::test]
async fn clm_config_comes_from_the_tools_table_by_file_or_tool_name() {
    let report = "ctx:complete(json.encode(clm.config))";
    let fixture = Fixture::new(&[
        ("by_stem.lua", &tool("stem_tool", report)),
        ("by_tool.lua", &tool("named_tool", report)),
        (
            "nothing.lua",
            &tool(
                "plain_tool",
                r#"ctx:complete(type(clm.config) .. " " .. tostring(next(clm.config)))"#,
            ),
        ),
        (
            "at_load.lua",
            &format!(
                "local seen = clm.config.greeting\n{}",
                tool("load_tool", "ctx:complete(tostring(seen))")
            ),
        ),
    ]);
    let config = Config::parse(
        r#"
        [tools.by_stem]
        level = 3
        [tools.named_tool]
        words = ["a", "b"]
        nested = { on = true }
        [tools.at_load]
        greeting = "hi"
        "#,
    )
    .expect("valid config");
    let runtime = fixture.load_with(|builder| builder.config(config)).await;
    assert_eq!(output(&runtime, "stem_tool", "{}").await, r#"{"level":3}"#);
    assert_eq!(
        output(&runtime, "named_tool", "{}").await,
        r#"{"nested":{"on":true},"words":["a","b"]}"#
    );
    assert_eq!(output(&runtime, "plain_tool", "{}").await, "table nil");
    assert_eq!(output(&runtime, "load_tool", "{}").await, "hi");
}

const FILES: &str = r#"
local loaded = clm.read_file("seed.txt")
clm.write_file("written_at_load.txt", "from load")
local function both(a, b) return tostring(a) .. " | " .. tostring(b) end
clm.tool_register("read", { invoke = function(args, ctx) ctx:complete(both(clm.read_file(args.path))) end })
clm.tool_register("write", { invoke = function(args, ctx) ctx:complete(both(clm.write_file(args.path, args.text))) end })
clm.tool_register("loaded", { invoke = function(_, ctx) ctx:complete(tostring(loaded)) end })
"#;

fn args(path: &str, text: &str) -> String {
    serde_json::json!({ "path": path, "text": text }).to_string()
}

#[tokio::test]
async fn files_inside_the_root_can_be_read_and_written_at_load_time_and_in_calls() {
    let fixture = Fixture::new(&[("files.lua", FILES)]);
    std::fs::write(fixture.root().join("seed.txt"), "seeded").expect("seed");
    std::fs::create_dir(fixture.root().join("sub")).expect("sub");
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "loaded", "{}").await, "seeded");
    assert_eq!(
        std::fs::read_to_string(fixture.root().join("written_at_load.txt")).expect("written"),
        "from load"
    );
    assert_eq!(
        output(&runtime, "write", &args("sub/new.txt", "hello")).await,
        "true | nil"
    );
    assert_eq!(
        output(&runtime, "read", &args("sub/new.txt", "")).await,
        "hello | nil"
    );
    // Overwriting replaces the content entirely.
    assert_eq!(
        output(&runtime, "write", &args("sub/new.txt", "hi")).await,
        "true | nil"
    );
    assert_eq!(
        std::fs::read_to_string(fixture.root().join("sub/new.txt")).expect("read"),
        "hi"
    );
    // An absolute path inside the root is the same file.
    let absolute = fixture
        .root()
        .canonicalize()
        .expect("root")
        .join("sub/new.txt");
    assert_eq!(
        output(
            &runtime,
            "read",
            &args(absolute.to_str().expect("utf8"), "")
        )
        .await,
        "hi | nil"
    );
    assert_eq!(
        output(&runtime, "read", &args("missing.txt", "")).await,
        "nil | cannot read missing.txt: no such file or directory"
    );
    assert_contains(
        &output(&runtime, "write", &args("nodir/x.txt", "x")).await,
        &["nil | cannot write nodir/x.txt"],
    );
}

#[tokio::test]
async fn nothing_outside_the_root_can_be_touched() {
    let fixture = Fixture::new(&[("files.lua", FILES)]);
    let outside = outside_dir();
    std::fs::write(outside.join("secret.txt"), "secret").expect("secret");
    std::os::unix::fs::symlink(&outside, fixture.root().join("link_out")).expect("symlink");
    std::os::unix::fs::symlink(
        outside.join("secret.txt"),
        fixture.root().join("secret_link"),
    )
    .expect("symlink");
    let runtime = fixture.load().await;
    let secret = outside.join("secret.txt");
    let secret = secret.to_str().expect("utf8");
    let escapes = [
        "../secret.txt".to_string(),
        format!(
            "../{}/secret.txt",
            outside.file_name().and_then(|n| n.to_str()).expect("name")
        ),
        secret.to_string(),
        "link_out/secret.txt".to_string(),
        "secret_link".to_string(),
        "/etc/hostname".to_string(),
    ];
    for path in &escapes {
        let read = output(&runtime, "read", &args(path, "")).await;
        assert!(read.starts_with("nil | cannot read"), "{path}: {read}");
        let write = output(&runtime, "write", &args(path, "overwritten")).await;
        assert!(write.starts_with("nil | cannot write"), "{path}: {write}");
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).expect("secret"),
        "secret"
    );
    assert_eq!(
        std::fs::read_dir(&outside).expect("outside").count(),
        1,
        "nothing new appeared outside"
    );
    assert_contains(
        &output(&runtime, "read", &args("../x", "")).await,
        &["outside the granted root"],
    );
    let _ = std::fs::remove_dir_all(outside);
}

#[tokio::test]
async fn special_files_and_odd_paths_are_refused_cleanly() {
    let fixture = Fixture::new(&[("files.lua", FILES)]);
    std::fs::create_dir(fixture.root().join("adir")).expect("dir");
    let fifo = fixture.root().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let runtime = fixture.load().await;
    assert_eq!(
        output(&runtime, "read", &args("adir", "")).await,
        "nil | cannot read adir: not a regular file"
    );
    // A FIFO would block a reader forever; it is refused instead.
    assert_eq!(
        output(&runtime, "read", &args("pipe", "")).await,
        "nil | cannot read pipe: not a regular file"
    );
    assert_eq!(
        output(&runtime, "read", &args("", "")).await,
        "nil | the path is empty"
    );
    let nul = output(&runtime, "read", &args("a\u{0}b", "")).await;
    assert_contains(&nul, &["nil | invalid path", "NUL"]);
}

#[tokio::test]
async fn a_file_too_large_for_the_plugin_is_not_read() {
    let fixture = Fixture::new(&[("files.lua", FILES)]);
    let big = std::fs::File::create(fixture.root().join("big.bin")).expect("big");
    big.set_len(9 * 1024 * 1024).expect("size");
    let runtime = fixture.load().await;
    assert_eq!(
        output(&runtime, "read", &args("big.bin", "")).await,
        "nil | cannot read big.bin: the file is 9437184 bytes, more than the plugin's 8 MiB of memory"
    );
}

#[tokio::test]
async fn hidden_tools_can_still_be_called() {
    let fixture = Fixture::new(&[(
        "h.lua",
        r#"clm.tool_register("secret", { hidden = true, invoke = function(_, ctx) ctx:complete("ok") end })"#,
    )]);
    let runtime = fixture.load().await;
    assert!(matches!(
        toolcell_tests::call(&runtime, "secret", "{}").await,
        CallOutcome::Completed(_)
    ));
}

/// A runtime of its own for a test that calls from outside it.
fn one_worker_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A plugin's actor starts with its first call and runs on the runtime that loaded the
/// plugin, even when that call comes from a thread outside it.
#[test]
fn the_first_call_may_come_from_a_thread_outside_the_loading_runtime() {
    let fixture = Fixture::new(&[(
        "echo.lua",
        &tool("echo", r#"ctx:complete("called from " .. args.caller)"#),
    )]);
    let loading = one_worker_runtime();
    let runtime = loading.block_on(fixture.load());
    let outcome = std::thread::spawn(move || {
        let call = runtime
            .call("echo", r#"{"caller":"a plain thread"}"#)
            .expect("the call starts");
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a second tokio runtime")
            .block_on(call)
    })
    .join()
    .expect("the calling thread finishes");
    assert_eq!(
        outcome,
        CallOutcome::Completed("called from a plain thread".to_string())
    );
}

/// Polls `call` once, without waiting: its outcome if it has one already.
fn outcome_now(call: toolcell::Call) -> Option<CallOutcome> {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let mut call = std::pin::pin!(call);
    match call.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => Some(outcome),
        Poll::Pending => None,
    }
}

/// A call to an idle plugin runs its first step on the caller's thread: a call that
/// ends there is complete when `call` returns. On this single-threaded runtime no other
/// task can have run in between.
#[tokio::test]
async fn a_call_to_an_idle_plugin_is_complete_when_call_returns() {
    let fixture = Fixture::new(&[("ok.lua", &tool("ok", r#"ctx:complete("ok " .. args.n)"#))]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "ok", r#"{"n":1}"#).await, "ok 1");
    for n in 2..5 {
        let call = runtime
            .call("ok", &format!(r#"{{"n":{n}}}"#))
            .expect("the call starts");
        assert_eq!(
            outcome_now(call),
            Some(CallOutcome::Completed(format!("ok {n}")))
        );
    }
}

/// Calls made while a long call runs wait for it and then start in the order they were
/// made, and a call whose first step waits on a timer still completes.
#[tokio::test]
async fn calls_made_while_a_long_call_runs_start_in_the_order_they_were_made() {
    let plugin = r#"
        local seen = {}
        clm.tool_register("record", { invoke = function(args, ctx)
          seen[#seen + 1] = args.n
          ctx:complete(table.concat(seen, ","))
        end })
        clm.tool_register("spin", { invoke = function(_, ctx)
          local sum = 0
          for i = 1, 3000000 do sum = sum + i end
          ctx:complete(tostring(sum))
        end })
        clm.tool_register("nap", { invoke = function(_, ctx)
          clm.sleep(5)
          ctx:complete("rested")
        end })
    "#;
    let fixture = Fixture::new(&[("order.lua", plugin)]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "record", r#"{"n":0}"#).await, "0");
    let spin = runtime.call("spin", "{}").expect("spin starts");
    let records: Vec<_> = (1..=3)
        .map(|n| {
            runtime
                .call("record", &format!(r#"{{"n":{n}}}"#))
                .expect("record starts")
        })
        .collect();
    let nap = runtime.call("nap", "{}").expect("nap starts");
    // 1 + 2 + ... + 3000000
    assert_eq!(
        spin.await,
        CallOutcome::Completed("4500001500000".to_string())
    );
    let mut outputs = Vec::new();
    for record in records {
        outputs.push(record.await);
    }
    assert_eq!(
        outputs,
        ["0,1", "0,1,2", "0,1,2,3"].map(|text| CallOutcome::Completed(text.to_string()))
    );
    assert_eq!(nap.await, CallOutcome::Completed("rested".to_string()));
    assert_eq!(output(&runtime, "record", r#"{"n":4}"#).await, "0,1,2,3,4");
}

/// The first step of a call may start operations (here a timer, a task of the plugin's
/// runtime) even when the call is made on a thread outside every runtime, as the CLI
/// makes its call.
#[test]
fn a_call_made_outside_every_runtime_may_start_a_timer_in_its_first_step() {
    let fixture = Fixture::new(&[(
        "nap.lua",
        &tool("nap", r#"clm.sleep(5) ctx:complete("rested " .. args.n)"#),
    )]);
    let loading = one_worker_runtime();
    let runtime = loading.block_on(fixture.load());
    for n in 1..=3 {
        let call = runtime
            .call("nap", &format!(r#"{{"n":{n}}}"#))
            .expect("the call starts");
        assert_eq!(
            loading.block_on(call),
            CallOutcome::Completed(format!("rested {n}"))
        );
    }
}
