//! `clm.sleep`, `clm.spawn` and the task API of clm-tool(5), and concurrency: several
//! invocations of one plugin in flight at once, sharing its one Lua state, stepped by
//! the host. Timing bounds only catch serialisation (two 300 ms waits must not take
//! 600 ms); they never assert milliseconds.

use std::time::{Duration, Instant};

use super::Fixture;
use toolcell::CallOutcome;
use toolcell_tests::{assert_contains, call, failure, output};

/// Generous bound for "about 300 ms" that still catches two 300 ms waits run in series.
const NOT_SERIAL: Duration = Duration::from_millis(550);

#[tokio::test]
async fn two_sleeping_invocations_of_one_plugin_overlap() {
    let fixture = Fixture::new(&[(
        "sleepy.lua",
        r#"
        count = 0
        clm.tool_register("nap", { invoke = function(_, ctx)
          count = count + 1
          clm.sleep(300)
          ctx:complete("woke " .. count)
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    let started = Instant::now();
    let first = runtime.call("nap", "{}").expect("first");
    let second = runtime.call("nap", "{}").expect("second");
    let (first, second) = tokio::join!(first, second);
    assert!(
        started.elapsed() < NOT_SERIAL,
        "took {:?}",
        started.elapsed()
    );
    // Both ran in the same Lua state: each saw the other's increment before waking.
    assert_eq!(first, CallOutcome::Completed("woke 2".into()));
    assert_eq!(second, CallOutcome::Completed("woke 2".into()));
}

#[tokio::test]
async fn a_task_never_runs_before_spawn_returns() {
    let fixture = Fixture::new(&[(
        "order.lua",
        r#"
        clm.tool_register("order", { invoke = function(_, ctx)
          local log = {}
          local task = clm.spawn(function() log[#log + 1] = "task" end)
          log[#log + 1] = "after spawn"
          task:wait()
          ctx:complete(table.concat(log, ","))
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "order", "{}").await, "after spawn,task");
}

const OUTCOMES: &str = r#"
local function show(outcome)
  if outcome == nil then return "nil" end
  local value = outcome.value
  if type(value) == "table" then value = "{" .. table.concat(value, ",") .. "}" end
  return string.format("ok=%s value=%s error=%s cancelled=%s",
    tostring(outcome.ok), tostring(value), tostring(outcome.error), tostring(outcome.cancelled))
end

clm.tool_register("outcomes", { invoke = function(_, ctx)
  local none = clm.spawn(function() end)
  local one = clm.spawn(function() return 7 end)
  local many = clm.spawn(function() return 1, 2, 3 end)
  local boom = clm.spawn(function() error("boom", 0) end)
  local slow = clm.spawn(function() clm.sleep(10000) end)
  local pending = show(slow:result())
  local all = clm.await_all({ none, one, many, boom })
  local cancelled = slow:cancel()
  local lines = { pending }
  for _, outcome in ipairs(all) do lines[#lines + 1] = show(outcome) end
  lines[#lines + 1] = show(slow:result())
  lines[#lines + 1] = tostring(one:result() == all[2])
  lines[#lines + 1] = tostring(cancelled)
  ctx:complete(table.concat(lines, "\n"))
end })

clm.tool_register("cancel_returns", { invoke = function(_, ctx)
  local done = clm.spawn(function() return "x" end)
  local failed = clm.spawn(function() error("no") end)
  local waiting = clm.spawn(function() clm.sleep(10000) end)
  clm.await_all({ done, failed })
  local results = {
    tostring(waiting:cancel("my reason")), tostring(waiting:cancel()),
    tostring(done:cancel()), tostring(failed:cancel()), waiting:result().error,
  }
  ctx:complete(table.concat(results, " "))
end })
"#;

#[tokio::test]
async fn task_outcomes_are_the_stable_tables_of_the_man_page() {
    let fixture = Fixture::new(&[("outcomes.lua", OUTCOMES)]);
    let runtime = fixture.load().await;
    let lines = output(&runtime, "outcomes", "{}").await;
    assert_eq!(
        lines.lines().collect::<Vec<_>>(),
        [
            "nil",
            "ok=true value=nil error=nil cancelled=nil",
            "ok=true value=7 error=nil cancelled=nil",
            "ok=true value={1,2,3} error=nil cancelled=nil",
            "ok=false value=nil error=boom cancelled=nil",
            "ok=false value=nil error=task cancelled cancelled=true",
            "true",
            "true",
        ]
    );
}

#[tokio::test]
async fn cancel_reports_whether_the_task_is_cancelled() {
    let fixture = Fixture::new(&[("outcomes.lua", OUTCOMES)]);
    let runtime = fixture.load().await;
    assert_eq!(
        output(&runtime, "cancel_returns", "{}").await,
        "true true false false my reason"
    );
}

#[tokio::test]
async fn wait_any_returns_the_first_terminal_task_or_times_out_without_cancelling() {
    let fixture = Fixture::new(&[(
        "any.lua",
        r#"
        clm.tool_register("first", { invoke = function(_, ctx)
          local slow = clm.spawn(function() clm.sleep(400) return "slow" end)
          local quick = clm.spawn(function() clm.sleep(20) return "quick" end)
          local index = clm.wait_any({ slow, quick })
          slow:cancel()
          ctx:complete(tostring(index))
        end })
        clm.tool_register("timeout", { invoke = function(_, ctx)
          local task = clm.spawn(function() clm.sleep(150) return "late" end)
          local index, err = clm.wait_any({ task }, 20)
          local after = task:result()
          task:wait()
          ctx:complete(tostring(index) .. " " .. err .. " " .. tostring(after) .. " " .. task:result().value)
        end })
        clm.tool_register("already", { invoke = function(_, ctx)
          local a = clm.spawn(function() clm.sleep(1000) end)
          local b = clm.spawn(function() return 1 end)
          b:wait()
          local index = clm.wait_any({ a, b }, 5000)
          a:cancel()
          ctx:complete(tostring(index))
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "first", "{}").await, "2");
    assert_eq!(
        output(&runtime, "timeout", "{}").await,
        "nil timeout nil late"
    );
    assert_eq!(output(&runtime, "already", "{}").await, "2");
}

#[tokio::test]
async fn wait_any_checks_its_task_list() {
    let fixture = Fixture::new(&[(
        "checks.lua",
        r#"
        local function attempt(tasks)
          local ok, err = pcall(clm.wait_any, tasks)
          return err
        end
        clm.tool_register("checks", { invoke = function(_, ctx)
          local t = clm.spawn(function() end)
          local many = {}
          for i = 1, 129 do many[i] = clm.spawn(function() end) end
          local errors = {
            attempt({ t, t }),
            attempt(many),
            attempt({}),
            attempt({ "not a task" }),
            attempt(stored),
          }
          clm.await_all(many)
          t:wait()
          ctx:complete(table.concat(errors, "\n"))
        end })
        clm.tool_register("store", { invoke = function(_, ctx)
          local t = clm.spawn(function() end)
          t:wait()
          stored = { t }
          ctx:complete("stored")
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "store", "{}").await, "stored");
    let errors = output(&runtime, "checks", "{}").await;
    let errors: Vec<&str> = errors.lines().collect();
    assert_contains(errors[0], &["clm.wait_any: element 2 repeats a task"]);
    assert_contains(
        errors[1],
        &["clm.wait_any waits on at most 128 tasks, got 129"],
    );
    assert_contains(errors[2], &["clm.wait_any expects at least one task"]);
    assert_contains(errors[3], &["expects a task handle, got string"]);
    assert_contains(
        errors[4],
        &["element 1 is a task of another tool invocation"],
    );
}

#[tokio::test]
async fn await_all_waits_for_every_task_and_a_failure_affects_no_other() {
    let fixture = Fixture::new(&[(
        "all.lua",
        r#"
        clm.tool_register("all", { invoke = function(_, ctx)
          local tasks = {
            clm.spawn(function() clm.sleep(30) return "a" end),
            clm.spawn(function() error("b failed", 0) end),
            clm.spawn(function() clm.sleep(60) return "c" end),
          }
          local outcomes = clm.await_all(tasks)
          ctx:complete(outcomes[1].value .. " " .. outcomes[2].error .. " " .. outcomes[3].value)
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "all", "{}").await, "a b failed c");
}

#[tokio::test]
async fn try_all_returns_values_in_order_or_the_first_error_after_cancelling_the_rest() {
    let fixture = Fixture::new(&[(
        "try.lua",
        r#"
        clm.tool_register("good", { invoke = function(_, ctx)
          local values = clm.try_all({
            clm.spawn(function() clm.sleep(40) return "x" end),
            clm.spawn(function() return "y" end),
          })
          ctx:complete(values[1] .. values[2])
        end })
        clm.tool_register("bad", { invoke = function(_, ctx)
          local slow = clm.spawn(function() clm.sleep(10000) return "never" end)
          local failing = clm.spawn(function() clm.sleep(20) error("broke", 0) end)
          local values, err = clm.try_all({ slow, failing })
          local outcome = slow:result()
          ctx:complete(tostring(values) .. " " .. err .. " " .. tostring(outcome.cancelled))
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "good", "{}").await, "xy");
    let started = Instant::now();
    assert_eq!(output(&runtime, "bad", "{}").await, "nil broke true");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "try_all waited for the slow task"
    );
}

#[tokio::test]
async fn only_the_main_coroutine_may_spawn_wait_cancel_or_complete() {
    let fixture = Fixture::new(&[(
        "main_only.lua",
        r#"
        local function from_task(f)
          local task = clm.spawn(function() f() end)
          task:wait()
          return task:result().error
        end
        clm.tool_register("rules", { invoke = function(_, ctx)
          local sibling = clm.spawn(function() clm.sleep(10) end)
          local errors = {
            from_task(function() clm.spawn(function() end) end),
            from_task(function() sibling:wait() end),
            from_task(function() sibling:cancel() end),
            from_task(function() sibling:result() end),
            from_task(function() clm.await_all({ sibling }) end),
            from_task(function() ctx:complete("from a task") end),
            from_task(function() ctx:fail("from a task") end),
          }
          sibling:wait()
          ctx:complete(table.concat(errors, "\n"))
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    let errors = output(&runtime, "rules", "{}").await;
    let errors: Vec<&str> = errors.lines().collect();
    assert_eq!(errors.len(), 7, "{errors:?}");
    for (error, api) in errors.iter().zip([
        "clm.spawn",
        "task:wait",
        "task:cancel",
        "task:result",
        "clm.await_all",
        "ctx:complete",
        "ctx:fail",
    ]) {
        assert_contains(
            error,
            &[
                "main_only.lua:",
                api,
                "only be called from the tool's main coroutine",
            ],
        );
    }
}

#[tokio::test]
async fn live_tasks_and_unobserved_errors_fail_the_tool() {
    let fixture = Fixture::new(&[(
        "rules.lua",
        r#"
        clm.tool_register("return_live", { invoke = function(_, ctx)
          clm.spawn(function() clm.sleep(10000) end)
          ctx:complete("too early")
        end })
        clm.tool_register("return_live_no_complete", { invoke = function(_, ctx)
          clm.spawn(function() clm.sleep(10000) end)
        end })
        clm.tool_register("unobserved", { invoke = function(_, ctx)
          local task = clm.spawn(function() error("lost", 0) end)
          task:wait()
          ctx:complete("done")
        end })
        clm.tool_register("observed", { invoke = function(_, ctx)
          local task = clm.spawn(function() error("seen", 0) end)
          task:wait()
          ctx:complete("read: " .. task:result().error)
        end })
        clm.tool_register("cancelled_is_fine", { invoke = function(_, ctx)
          local task = clm.spawn(function() clm.sleep(10000) end)
          task:cancel()
          ctx:complete("ok")
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    // Each breaks a rule of the tool contract, which the outcome says.
    for (tool, message) in [
        (
            "return_live",
            "ctx:complete was called while 1 task(s) were still running; they were cancelled",
        ),
        (
            "return_live_no_complete",
            "invoke returned while 1 task(s) were still running; they were cancelled",
        ),
        (
            "unobserved",
            "ctx:complete was called while a task error was never observed: lost",
        ),
    ] {
        assert_eq!(
            call(&runtime, tool, "{}").await,
            CallOutcome::BrokeRule(message.to_string())
        );
    }
    assert_eq!(output(&runtime, "observed", "{}").await, "read: seen");
    assert_eq!(output(&runtime, "cancelled_is_fine", "{}").await, "ok");
}

#[tokio::test]
async fn waiting_services_are_not_available_at_load_time() {
    let fixture = Fixture::new(&[
        ("a_sleep.lua", "clm.sleep(10)"),
        ("b_http.lua", "http.get('http://example.com/')"),
        ("c_spawn.lua", "clm.spawn(function() end)"),
    ]);
    let runtime = fixture.load().await;
    let messages: Vec<&str> = runtime
        .diagnostics()
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_contains(
        messages[0],
        &["a_sleep.lua:1:", "clm.sleep is not available at load time"],
    );
    assert_contains(
        messages[1],
        &["b_http.lua:1:", "http.get is not available at load time"],
    );
    assert_contains(
        messages[2],
        &[
            "c_spawn.lua:1:",
            "clm.spawn may only be called while a tool runs",
        ],
    );
}

#[tokio::test]
async fn waiting_inside_a_c_function_is_an_error_not_a_hang() {
    let fixture = Fixture::new(&[(
        "sorter.lua",
        r#"
        clm.tool_register("sorter", { invoke = function(_, ctx)
          local ok, err = pcall(table.sort, { 3, 1, 2 }, function(a, b) clm.sleep(1) return a < b end)
          ctx:complete(tostring(ok) .. " " .. err)
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_contains(
        &output(&runtime, "sorter", "{}").await,
        &["false", "clm.sleep cannot wait here"],
    );
}

#[tokio::test]
async fn a_deadline_passing_while_waiting_fails_the_call_and_its_tasks() {
    let fixture = Fixture::new(&[(
        "waits.lua",
        r#"
        clm.tool_register("stuck", { timeout_ms = 200, invoke = function(_, ctx)
          local task = clm.spawn(function() clm.sleep(60000) end)
          clm.sleep(60000)
        end })
        clm.tool_register("ping", { invoke = function(_, ctx) ctx:complete("pong") end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(
        failure(&runtime, "stuck", "{}").await,
        "tool 'stuck' timed out after 200 ms"
    );
    assert_eq!(output(&runtime, "ping", "{}").await, "pong");
}

#[tokio::test]
async fn a_caller_can_cancel_a_call_in_flight() {
    let fixture = Fixture::new(&[(
        "cancel.lua",
        r#"
        clm.tool_register("long", { invoke = function(_, ctx)
          clm.sleep(60000)
          ctx:complete("never")
        end })
        clm.tool_register("ping", { invoke = function(_, ctx) ctx:complete("pong") end })
        "#,
    )]);
    let runtime = fixture.load().await;
    let call = runtime.call("long", "{}").expect("long");
    tokio::time::sleep(Duration::from_millis(50)).await;
    call.cancel("the user pressed stop");
    assert_eq!(
        call.await,
        CallOutcome::Cancelled("cancelled: the user pressed stop".into())
    );
    assert_eq!(output(&runtime, "ping", "{}").await, "pong");
}

/// Issue 17 point 7: a cancelled call whose Lua code is running stops at its next
/// deadline check, long before its own deadline; the plugin keeps its state.
#[tokio::test]
async fn a_cancelled_call_running_lua_code_stops_at_its_next_check() {
    let fixture = Fixture::new(&[(
        "spin.lua",
        r#"
        spins = 0
        clm.tool_register("spin", { timeout_ms = 60000, invoke = function(_, ctx)
          spins = spins + 1
          while true do end
        end })
        clm.tool_register("spins", { invoke = function(_, ctx) ctx:complete(tostring(spins)) end })
        "#,
    )]);
    let runtime = fixture.load().await;
    for round in 1..=2 {
        let call = runtime.call("spin", "{}").expect("spin");
        tokio::time::sleep(Duration::from_millis(100)).await;
        call.cancel("the user pressed stop");
        // Were it not stopped, it would run for 60 s (HANG_GUARD is 30 s).
        let outcome = tokio::time::timeout(toolcell_tests::HANG_GUARD, call)
            .await
            .expect("the cancelled call stopped");
        assert_eq!(
            outcome,
            CallOutcome::Cancelled("cancelled: the user pressed stop".into())
        );
        assert_eq!(output(&runtime, "spins", "{}").await, round.to_string());
    }
}

#[tokio::test]
async fn sleep_rejects_bad_durations() {
    let fixture = Fixture::new(&[(
        "bad_sleep.lua",
        r#"
        clm.tool_register("bad_sleep", { invoke = function(_, ctx)
          local a = select(2, pcall(clm.sleep, -1))
          local b = select(2, pcall(clm.sleep, "soon"))
          ctx:complete(a .. "\n" .. b)
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    let text = output(&runtime, "bad_sleep", "{}").await;
    let lines: Vec<&str> = text.lines().collect();
    assert_contains(
        lines[0],
        &["clm.sleep expects a non-negative number of milliseconds, got -1"],
    );
    assert_contains(
        lines[1],
        &["clm.sleep expects a non-negative number of milliseconds, got string"],
    );
}
