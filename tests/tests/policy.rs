//! The policy layer through the embedding API, with real Lua plugins in real sandboxes:
//! approval (the resolver chain, rules, presets, `no_prompt`, the default, the session's
//! answers), interceptors, concurrency caps and statistics.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolcell::config::Config;
use toolcell::policy::{
    After, Answer, Approvals, Before, CommandLineRules, Decision, Interceptor, PermissionPrompt,
};
use toolcell::{CallOutcome, Runtime};
use toolcell_tests::{Fixture, HANG_GUARD, failure_labelled, output};

/// Tools that write, read and wait, and one marked `no_prompt`.
const NOTES: &str = r#"
clm.tool_register("note_write", {
  params_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } },
  invoke = function(args, ctx) ctx:complete("wrote " .. args.text) end,
})
clm.tool_register("note_read", {
  no_prompt = true,
  invoke = function(_, ctx) ctx:complete("read") end,
})
clm.tool_register("danger_zone", {
  invoke = function(_, ctx) ctx:complete("boom") end,
})
"#;

/// Counts the calls running at once: `nap` sleeps `ms` and answers the most it saw;
/// `order` logs its tag, `log` reads the log.
const NAPPER: &str = r#"
local running, peak, log = 0, 0, {}
clm.tool_register("nap", {
  timeout_ms = 300,
  invoke = function(args, ctx)
    running = running + 1
    if running > peak then peak = running end
    log[#log + 1] = args.tag or "?"
    clm.sleep(args.ms or 100)
    running = running - 1
    ctx:complete(tostring(peak))
  end,
})
clm.tool_register("nap2", {
  invoke = function(args, ctx)
    running = running + 1
    if running > peak then peak = running end
    clm.sleep(args.ms or 100)
    running = running - 1
    ctx:complete(tostring(peak))
  end,
})
clm.tool_register("log", { invoke = function(_, ctx) ctx:complete(table.concat(log, ",")) end })
"#;

fn config(text: &str) -> Config {
    Config::parse(text).unwrap_or_else(|error| panic!("config: {error}"))
}

/// A permission handler that answers from `answers` in turn and records each prompt.
fn answering(
    answers: Vec<Answer>,
) -> (
    impl Fn(PermissionPrompt) -> std::future::Ready<Answer> + Send + Sync + 'static,
    Arc<Mutex<Vec<PermissionPrompt>>>,
) {
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let seen = prompts.clone();
    let answers = Mutex::new(answers.into_iter());
    let handler = move |prompt: PermissionPrompt| {
        seen.lock().unwrap().push(prompt);
        let answer = answers.lock().unwrap().next().expect("an answer left");
        std::future::ready(answer)
    };
    (handler, prompts)
}

/// The tools a session's model is shown.
fn listed(runtime: &Runtime) -> Vec<String> {
    toolcell::Session::new()
        .tools(runtime)
        .into_iter()
        .map(|tool| tool.name)
        .collect()
}

// ---------------------------------------------------------------------------------
// Approval
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn without_a_handler_every_tool_runs_and_with_one_tools_without_no_prompt_ask() {
    let fixture = Fixture::new(&[("notes.lua", NOTES)]);
    // clm-tool(5): tools ask by default, and with nobody to ask they run.
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "danger_zone", "{}").await, "boom");

    let (handler, prompts) = answering(vec![Answer::AllowOnce, Answer::AllowOnce]);
    let runtime = fixture.load_with(|b| b.on_permission(handler)).await;
    assert_eq!(output(&runtime, "note_read", "{}").await, "read");
    assert!(
        prompts.lock().unwrap().is_empty(),
        "no_prompt = true never asks"
    );
    assert_eq!(
        output(&runtime, "note_write", r#"{"text":"a"}"#).await,
        "wrote a"
    );
    // Allowed once: the next call asks again.
    assert_eq!(
        output(&runtime, "note_write", r#"{"text":"b"}"#).await,
        "wrote b"
    );
    let prompts = prompts.lock().unwrap();
    assert_eq!(prompts.len(), 2);
    let prompt = &prompts[1];
    assert_eq!(prompt.tool.name, "note_write");
    assert_eq!(prompt.plugin.manifest.id, "notes");
    assert!(
        prompt.plugin.grants.may_write_files(),
        "the prompt shows what the plugin may do"
    );
    assert_eq!(prompt.arguments, json!({"text": "b"}));
}

#[tokio::test]
async fn allow_for_the_session_is_remembered_and_a_denial_carries_the_feedback() {
    let fixture = Fixture::new(&[("notes.lua", NOTES)]);
    let (handler, prompts) = answering(vec![
        Answer::AllowForSession,
        Answer::Deny { feedback: None },
        Answer::Deny {
            feedback: Some("use note_read instead".to_string()),
        },
    ]);
    let runtime = fixture.load_with(|b| b.on_permission(handler)).await;
    for text in ["a", "b", "c"] {
        let args = json!({ "text": text }).to_string();
        assert_eq!(
            output(&runtime, "note_write", &args).await,
            format!("wrote {text}")
        );
    }
    assert_eq!(
        prompts.lock().unwrap().len(),
        1,
        "asked once for the session"
    );
    let notes = &runtime.plugins()[0];
    assert!(
        runtime
            .approvals()
            .allowed_for_session("notes/note_write", notes)
    );

    // Another session asks again, with its own answers.
    let session = Arc::new(Approvals::new(Some(Arc::new(answering(vec![]).0))));
    assert!(!session.allowed_for_session("notes/note_write", notes));
    let denied = runtime.call("danger_zone", "{}").expect("starts").await;
    assert_eq!(
        denied,
        CallOutcome::Denied("tool 'danger_zone' was denied: the user denied it".to_string())
    );
    assert_eq!(
        denied.model_text(),
        "[tool failed: tool 'danger_zone' was denied: the user denied it]"
    );
    let denied = runtime.call("danger_zone", "{}").expect("starts").await;
    assert_eq!(
        denied.model_text(),
        "[tool failed: tool 'danger_zone' was denied: the user denied it: use note_read instead]"
    );
}

/// A writer asking for nothing, and the same writer after an update that asks for files.
const QUIET_WRITER: &str = r#"
clm.tool_register("jot", { invoke = function(args, ctx) ctx:complete("jotted") end })
"#;

#[tokio::test]
async fn allow_for_the_session_is_tied_to_the_plugins_code_and_grants() {
    let fixture = Fixture::new(&[
        ("jotter.lua", QUIET_WRITER),
        ("jotter.lua.toml", "[capabilities]\n"),
    ]);
    let (handler, prompts) = answering(vec![
        Answer::AllowForSession,
        Answer::AllowForSession,
        Answer::AllowOnce,
    ]);
    let mut runtime = fixture.load_with(|b| b.on_permission(handler)).await;
    let path = fixture.plugin_dir().join("jotter.lua");
    assert_eq!(output(&runtime, "jot", "{}").await, "jotted");
    assert_eq!(output(&runtime, "jot", "{}").await, "jotted");
    assert_eq!(prompts.lock().unwrap().len(), 1, "allowed for the session");

    // Reloaded unchanged: the same code and grants, still allowed.
    runtime.reload(&path).await.expect("a plugin file");
    assert_eq!(output(&runtime, "jot", "{}").await, "jotted");
    assert_eq!(prompts.lock().unwrap().len(), 1, "the same plugin");

    // New code: asked again.
    fixture.add_plugin(
        "jotter.lua",
        &QUIET_WRITER.replace("\"jotted\"", "\"jotted again\""),
    );
    runtime.reload(&path).await.expect("a plugin file");
    assert_eq!(output(&runtime, "jot", "{}").await, "jotted again");
    assert_eq!(prompts.lock().unwrap().len(), 2, "new code asks again");

    // The same code granted read-write files and HTTP: asked again.
    fixture.add_plugin(
        "jotter.lua.toml",
        "[capabilities]\nfiles = \"read-write\"\nhttp = [\"*\"]\n",
    );
    runtime.reload(&path).await.expect("a plugin file");
    assert_eq!(output(&runtime, "jot", "{}").await, "jotted again");
    let prompts = prompts.lock().unwrap();
    assert_eq!(prompts.len(), 3, "new grants ask again");
    assert!(prompts[2].plugin.grants.may_write_files());
}

#[tokio::test]
async fn rules_match_names_and_paths_deny_hides_and_presets_come_after_globs() {
    let fixture = Fixture::new(&[("notes.lua", NOTES), ("napper.lua", NAPPER)]);
    let (handler, prompts) = answering(vec![Answer::AllowOnce]);
    let runtime = fixture
        .load_with(|b| {
            b.config(config(
                r#"
[permissions]
default = "deny"
allow = ["napper/*", "$mine"]
ask = ["*_write"]
deny = ["danger*"]
[permissions.presets]
"$mine" = ["$readonly"]
"#,
            ))
            .on_permission(handler)
        })
        .await;
    // Denied tools are not listed: danger_zone by its rule, note_read by the default
    // (its plugin may write files, so $readonly does not name it, and its `no_prompt`
    // does not overrule the user's deny).
    assert_eq!(listed(&runtime), ["nap", "nap2", "log", "note_write"]);
    assert_eq!(
        runtime.tools().len(),
        6,
        "a denied tool is still registered"
    );
    let (label, message) = failure_labelled(&runtime, "danger_zone", "{}").await;
    assert_eq!(
        (label, message.as_str()),
        (
            "denied",
            "tool 'danger_zone' was denied: it matches \"danger*\" in [permissions] deny"
        )
    );
    // A path glob allows the napper's tools, and *_write asks.
    assert_eq!(output(&runtime, "log", "{}").await, "");
    assert_eq!(
        failure_labelled(&runtime, "note_read", "{}").await.1,
        "tool 'note_read' was denied: the permission policy's default is deny"
    );
    assert_eq!(
        output(&runtime, "note_write", r#"{"text":"x"}"#).await,
        "wrote x"
    );
    assert_eq!(prompts.lock().unwrap().len(), 1);

    // The default decides what nothing else does; the command line's rules come first.
    let runtime = fixture
        .load_with(|b| {
            b.config(config(
                "[permissions]\ndefault = \"deny\"\ndeny = [\"note_read\"]",
            ))
            .permission_rules(CommandLineRules {
                allow: vec!["note_read".to_string()],
                ..CommandLineRules::default()
            })
        })
        .await;
    assert_eq!(listed(&runtime), ["note_read"]);
    assert_eq!(
        failure_labelled(&runtime, "log", "{}").await.1,
        "tool 'log' was denied: the permission policy's default is deny"
    );
}

#[tokio::test]
async fn a_rule_or_preset_member_matching_no_tool_is_a_warning_with_the_closest_names() {
    let fixture = Fixture::new(&[("notes.lua", NOTES)]);
    let runtime = fixture
        .load_with(|b| {
            b.config(config(
                "[permissions]\nallow = [\"$mine\", \"notes/*\"]\n\
                 [permissions.presets]\n\"$mine\" = [\"note_wirte\"]",
            ))
            .permission_rules(CommandLineRules {
                deny: vec!["danger_zones".to_string(), "zzz".to_string()],
                ..CommandLineRules::default()
            })
        })
        .await;
    let warnings: Vec<&str> = runtime
        .diagnostics()
        .iter()
        .filter(|diagnostic| diagnostic.kind == toolcell::DiagnosticKind::RuleUnmatched)
        .map(|diagnostic| {
            assert_eq!(diagnostic.severity, toolcell::Severity::Warning);
            diagnostic.message.as_str()
        })
        .collect();
    assert_eq!(
        warnings,
        [
            // Up to three names, the closest first.
            "[permissions.presets] \"$mine\" \"note_wirte\" matches no tool (did you mean \
             'note_write', 'note_read' or 'notes/note_write'?)",
            "--deny \"danger_zones\" matches no tool (did you mean 'danger_zone'?)",
            "--deny \"zzz\" matches no tool",
        ]
    );
}

#[tokio::test]
async fn sandboxed_allows_every_tool_and_readonly_judges_the_plugins_grants() {
    let fixture = Fixture::new(&[
        ("notes.lua", NOTES),
        (
            "reader.lua",
            r#"clm.tool_register("peek", { invoke = function(_, ctx) ctx:complete("peeked") end })"#,
        ),
        (
            "reader.lua.toml",
            "id = \"reader\"\nversion = \"1.0.0\"\n[capabilities]\nfiles = \"read-only\"\n",
        ),
    ]);
    let runtime = fixture
        .load_with(|b| {
            b.config(config(
                "[permissions]\ndefault = \"deny\"\nallow = [\"$readonly\"]",
            ))
        })
        .await;
    // peek's plugin may only read files and has no HTTP; note_read is no_prompt, which
    // says nothing of what its plugin may do.
    assert_eq!(listed(&runtime), ["peek"]);
    let runtime = fixture
        .load_with(|b| {
            b.config(config(
                "[permissions]\ndefault = \"deny\"\nallow = [\"$sandboxed\"]",
            ))
        })
        .await;
    assert_eq!(listed(&runtime).len(), 4);
}

#[tokio::test]
async fn resolvers_decide_by_priority_and_one_that_fails_is_skipped() {
    let fixture = Fixture::new(&[("notes.lua", NOTES)]);
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = asked.clone();
    let runtime = fixture
        .load_with(|b| {
            b.config(config("[permissions]\ndeny = [\"note_write\"]"))
                // Before the rules: looks at the arguments.
                .resolver(
                    "by-text",
                    200,
                    |request: &toolcell::policy::PermissionRequest<'_>| {
                        let text = request.arguments.and_then(|args| args["text"].as_str());
                        Ok(match text {
                            Some("ok") => Some(Decision::Allow),
                            Some("no") => {
                                Some(Decision::Deny("text 'no' is not allowed".to_string()))
                            }
                            _ => None,
                        })
                    },
                )
                .resolver(
                    "broken",
                    300,
                    move |_: &toolcell::policy::PermissionRequest<'_>| {
                        counted.fetch_add(1, Ordering::Relaxed);
                        Err("the policy server is down".into())
                    },
                )
                // After the rules: never reached for a tool a rule decides.
                .resolver(
                    "fallback",
                    10,
                    |request: &toolcell::policy::PermissionRequest<'_>| {
                        Ok((request.tool.name == "danger_zone")
                            .then(|| Decision::Deny("never dangerous".to_string())))
                    },
                )
        })
        .await;
    assert_eq!(
        output(&runtime, "note_write", r#"{"text":"ok"}"#).await,
        "wrote ok"
    );
    assert_eq!(
        failure_labelled(&runtime, "note_write", r#"{"text":"no"}"#)
            .await
            .1,
        "tool 'note_write' was denied: text 'no' is not allowed"
    );
    assert_eq!(
        failure_labelled(&runtime, "note_write", r#"{"text":"other"}"#)
            .await
            .1,
        "tool 'note_write' was denied: it matches \"note_write\" in [permissions] deny"
    );
    assert_eq!(
        failure_labelled(&runtime, "danger_zone", "{}").await.1,
        "tool 'danger_zone' was denied: never dangerous"
    );
    assert!(
        asked.load(Ordering::Relaxed) >= 4,
        "the failing resolver was asked each time"
    );
    // Listing asks the chain without arguments: by-text passes, the rule denies.
    assert_eq!(listed(&runtime), ["note_read"]);
}

// ---------------------------------------------------------------------------------
// Interceptors
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn interceptors_run_in_order_refuse_replace_and_rewrite_the_text() {
    let fixture = Fixture::new(&[("notes.lua", NOTES)]);
    let trail = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = |trail: &Arc<Mutex<Vec<String>>>, name: &'static str| {
        let trail = trail.clone();
        move |call: toolcell::policy::InterceptedCall| {
            trail.lock().unwrap().push(format!("{name}:{}", call.tool));
            async move { Ok(Before::Continue) }
        }
    };
    let seen = trail.clone();
    let runtime = fixture
        .load_with(|b| {
            b.interceptor(
                Interceptor::before("tool-first", record(&trail, "specific")).tools("note_*"),
            )
            .interceptor(Interceptor::before("global", record(&trail, "global")))
            .interceptor(
                Interceptor::before(
                    "rewrite",
                    |mut call: toolcell::policy::InterceptedCall| async move {
                        Ok(match call.arguments["text"].as_str() {
                            Some("secret") => Before::Refuse("no secrets".to_string()),
                            Some("shout") => {
                                call.arguments["text"] = json!("SHOUT");
                                Before::Replace(call.arguments)
                            }
                            Some("break") => Before::Replace(json!({"text": 5})),
                            _ => Before::Continue,
                        })
                    },
                )
                .tools("notes/note_write"),
            )
            .interceptor(Interceptor::after(
                "stamp",
                move |call: toolcell::policy::InterceptedCall, outcome: CallOutcome| {
                    seen.lock().unwrap().push(format!("after:{}", call.tool));
                    async move {
                        Ok(match outcome.output() {
                            Some(text) => After::Replace(format!("{text} (checked)")),
                            None => After::Keep,
                        })
                    }
                },
            ))
        })
        .await;
    assert_eq!(
        output(&runtime, "note_write", r#"{"text":"hi"}"#).await,
        "wrote hi (checked)"
    );
    assert_eq!(
        *trail.lock().unwrap(),
        [
            "global:note_write",
            "specific:note_write",
            "after:note_write"
        ]
    );
    assert_eq!(
        output(&runtime, "note_write", r#"{"text":"shout"}"#).await,
        "wrote SHOUT (checked)"
    );
    assert_eq!(
        failure_labelled(&runtime, "note_write", r#"{"text":"secret"}"#).await,
        (
            "refused",
            "tool 'note_write' was refused: no secrets".to_string()
        )
    );
    let (label, message) = failure_labelled(&runtime, "note_write", r#"{"text":"break"}"#).await;
    assert_eq!(label, "invalid_arguments");
    assert!(
        message.starts_with("interceptor 'rewrite' replaced the arguments with invalid ones: ")
            && message.contains("/text"),
        "{message}"
    );
    // Arguments that fail validation reach no interceptor.
    trail.lock().unwrap().clear();
    assert!(runtime.call("note_write", r#"{"text":1}"#).is_err());
    assert!(trail.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_interceptor_that_fails_or_times_out_refuses_the_call() {
    let fixture = Fixture::new(&[("notes.lua", NOTES)]);
    let runtime = fixture
        .load_with(|b| {
            b.interceptor_timeout(Duration::from_millis(100))
                .interceptor(
                    Interceptor::before("slow", |_| async {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                        Ok(Before::Continue)
                    })
                    .tools("danger_zone"),
                )
                .interceptor(
                    Interceptor::after("broken", |_, _| async { Err("lost the audit log".into()) })
                        .tools("note_read"),
                )
        })
        .await;
    assert_eq!(
        failure_labelled(&runtime, "danger_zone", "{}").await,
        (
            "refused",
            "tool 'danger_zone' was refused: interceptor 'slow' timed out after 100 ms".to_string()
        )
    );
    assert_eq!(
        failure_labelled(&runtime, "note_read", "{}").await.1,
        "tool 'note_read' was refused: interceptor 'broken' failed: lost the audit log"
    );
    // Tools no interceptor applies to are untouched.
    assert_eq!(
        output(&runtime, "note_write", r#"{"text":"a"}"#).await,
        "wrote a"
    );
}

// ---------------------------------------------------------------------------------
// Concurrency caps
// ---------------------------------------------------------------------------------

async fn all(calls: Vec<toolcell::Call>) -> Vec<CallOutcome> {
    tokio::time::timeout(HANG_GUARD, futures_join(calls))
        .await
        .expect("the calls finish")
}

async fn futures_join(calls: Vec<toolcell::Call>) -> Vec<CallOutcome> {
    let handles: Vec<_> = calls.into_iter().map(tokio::spawn).collect();
    let mut outcomes = Vec::new();
    for handle in handles {
        outcomes.push(handle.await.expect("the call's task"));
    }
    outcomes
}

#[tokio::test]
async fn a_tool_cap_runs_calls_one_at_a_time_in_order_of_arrival() {
    let fixture = Fixture::new(&[("napper.lua", NAPPER)]);
    let runtime = fixture
        .load_with(|b| b.config(config("[tools.nap]\nmax_concurrent = 1")))
        .await;
    let calls: Vec<_> = ["a", "b", "c", "d"]
        .iter()
        .map(|tag| {
            runtime
                .call("nap", &json!({"tag": tag, "ms": 150}).to_string())
                .expect("starts")
        })
        .collect();
    // Three calls of 150 ms each wait behind the first: 600 ms in all, twice the
    // tool's 300 ms deadline, which counts from the start in the plugin.
    let outcomes = all(calls).await;
    for outcome in &outcomes {
        assert_eq!(outcome, &CallOutcome::Completed("1".to_string()));
    }
    assert_eq!(output(&runtime, "log", "{}").await, "a,b,c,d");
}

#[tokio::test]
async fn plugin_and_runtime_caps_and_a_cancelled_waiting_call_leaves_the_queue() {
    let fixture = Fixture::new(&[("napper.lua", NAPPER)]);
    let runtime = fixture
        .load_with(|b| b.config(config("[plugins.napper]\nmax_concurrent = 2")))
        .await;
    let calls: Vec<_> = (0..4)
        .map(|_| runtime.call("nap2", r#"{"ms":100}"#).expect("starts"))
        .collect();
    let peaks: Vec<String> = all(calls)
        .await
        .iter()
        .map(|outcome| outcome.output().expect("completed").to_string())
        .collect();
    assert!(
        peaks.iter().all(|peak| peak == "1" || peak == "2"),
        "{peaks:?}"
    );
    assert!(
        peaks.contains(&"2".to_string()),
        "two ran at once: {peaks:?}"
    );

    let runtime = fixture.load_with(|b| b.max_concurrent(1)).await;
    let first = runtime
        .call("nap", r#"{"tag":"first","ms":200}"#)
        .expect("starts");
    let waiting = runtime.call("nap", r#"{"tag":"waiting"}"#).expect("starts");
    let last = runtime
        .call("nap", r#"{"tag":"last","ms":10}"#)
        .expect("starts");
    let first = tokio::spawn(first);
    let last = tokio::spawn(last);
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Polled once, so it queues; then cancelled while it waits.
    let mut waiting = Box::pin(waiting);
    assert!(futures_poll_once(&mut waiting).await.is_none());
    waiting.cancel("changed my mind");
    assert_eq!(
        waiting.await,
        CallOutcome::Cancelled("cancelled: changed my mind".to_string())
    );
    assert!(first.await.expect("task").is_completed());
    assert!(last.await.expect("task").is_completed());
    assert_eq!(output(&runtime, "log", "{}").await, "first,last");
}

/// Polls `call` once: its outcome if it is ready.
async fn futures_poll_once(call: &mut std::pin::Pin<Box<toolcell::Call>>) -> Option<CallOutcome> {
    std::future::poll_fn(|cx| match call.as_mut().poll(cx) {
        std::task::Poll::Ready(outcome) => std::task::Poll::Ready(Some(outcome)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

// ---------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn stats_count_each_outcome_latency_fuel_and_peak_memory() {
    let fixture = Fixture::new(&[("notes.lua", NOTES)]);
    let runtime = fixture
        .load_with(|b| b.config(config("[permissions]\ndeny = [\"danger_zone\"]")))
        .await;
    for _ in 0..3 {
        output(&runtime, "note_write", r#"{"text":"a"}"#).await;
    }
    assert!(runtime.call("note_write", "{}").is_err());
    assert_eq!(
        failure_labelled(&runtime, "danger_zone", "{}").await.0,
        "denied"
    );
    let stats = runtime.stats();
    let write = stats.tool("note_write").expect("note_write has stats");
    assert_eq!(write.plugin, "notes");
    assert_eq!(
        (
            write.calls("completed"),
            write.calls("invalid_arguments"),
            write.total()
        ),
        (3, 1, 4)
    );
    assert_eq!(write.latency.count, 3, "only calls that ran are timed");
    assert!(write.latency.sum > Duration::ZERO);
    assert!(write.fuel_used > 0);
    let danger = stats.tool("danger_zone").expect("danger_zone has stats");
    assert_eq!((danger.calls("denied"), danger.latency.count), (1, 0));
    let notes = stats.plugin("notes").expect("notes has stats");
    assert!(notes.peak_memory >= 64 * 1024, "{}", notes.peak_memory);
}

/// What a `tracing` subscriber writes, kept for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_subscriber_sees_each_call_as_a_span_with_its_id_and_how_it_ended() {
    use tracing_subscriber::fmt::format::FmtSpan;
    let fixture = Fixture::new(&[("notes.lua", NOTES)]);
    let runtime = fixture
        .load_with(|b| b.config(config("[permissions]\ndeny = [\"danger_zone\"]")))
        .await;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    // One call that goes straight to its plugin, one the policy stops.
    let read = runtime.call("note_read", "{}").expect("note_read starts");
    let read_id = read.id();
    assert_eq!(read.await, CallOutcome::Completed("read".into()));
    let denied = runtime
        .call("danger_zone", "{}")
        .expect("danger_zone starts");
    let denied_id = denied.id();
    assert!(matches!(denied.await, CallOutcome::Denied(_)));
    drop(guard);
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).expect("UTF-8");
    for (id, tool, outcome) in [
        (read_id, "note_read", "completed"),
        (denied_id, "danger_zone", "denied"),
    ] {
        let span = format!("tool_call{{call={id} tool={tool} plugin=notes}}");
        let ended = text
            .lines()
            .find(|line| line.contains(&span) && line.contains("call ended"))
            .unwrap_or_else(|| panic!("no end of call {id} in:\n{text}"));
        assert!(ended.contains(&format!("outcome=\"{outcome}\"")), "{ended}");
        assert!(
            text.lines()
                .any(|line| line.contains(&span) && line.contains("close")),
            "call {id}'s span is not closed in:\n{text}"
        );
    }
}

// ---------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------

#[test]
fn malformed_policy_configuration_is_refused_with_where_and_why() {
    let error = |text: &str| Config::parse(text).expect_err("refused").to_string();
    assert!(
        error("[permissions]\ndefault = \"maybe\"").contains("unknown variant `maybe`"),
        "{}",
        error("[permissions]\ndefault = \"maybe\"")
    );
    assert_eq!(
        error("[permissions]\nallow = [\"$nope\"]"),
        "[permissions] allow: unknown preset \"$nope\" (the presets are $readonly, $sandboxed)"
    );
    assert!(error("[permissions]\nallow = \"hello\"").contains("invalid type"));
    assert!(error("[permissions]\nalow = []").contains("unknown field `alow`"));
    assert_eq!(
        error("[tools.nap]\nmax_concurrent = -1"),
        "[tools.nap] max_concurrent: expected a whole number of calls (0 or more), got -1"
    );
    assert_eq!(
        error("[tools.nap]\nmax_concurrent = \"two\""),
        "[tools.nap] max_concurrent: expected a whole number of calls (0 or more), got \"two\""
    );
    assert_eq!(
        error("[plugins.napper.limits]\nmax_concurrent = 2"),
        "[plugins.napper.limits] max_concurrent: a plugin's cap goes in [plugins.napper] max_concurrent"
    );
    assert!(error("[limits]\nmax_concurrent = -2").contains("line 2, column 18"));
}

#[tokio::test]
async fn max_concurrent_is_toolcells_and_stays_out_of_clm_config() {
    let fixture = Fixture::new(&[(
        "conf.lua",
        r#"clm.tool_register("conf", { invoke = function(_, ctx)
  ctx:complete(json.encode(clm.config))
end })"#,
    )]);
    let runtime = fixture
        .load_with(|b| {
            b.config(config(
                "[tools.conf]\nmax_concurrent = 3\ncolour = \"blue\"",
            ))
        })
        .await;
    assert_eq!(output(&runtime, "conf", "{}").await, r#"{"colour":"blue"}"#);
}
