//! The sandbox of clm-tool(5) and its limits, through real Lua plugins in real
//! component instances: the restricted globals, the load and call deadlines that
//! `pcall` cannot catch, the memory limit, and the backstops (fuel, the hard deadline
//! checked at fuel yields for code that never returns to the Lua VM), with recovery
//! after a crash.

use std::collections::BTreeSet;

use super::Fixture;
use toolcell::limits::{Limits, MIB};
use toolcell::{CallOutcome, CrashCause, DiagnosticKind, PluginFate};
use toolcell_tests::{assert_contains, call, failure, output};

#[tokio::test]
async fn only_the_safe_libraries_and_the_clm_api_are_global() {
    let fixture = Fixture::new(&[(
        "globals.lua",
        r#"
        clm.tool_register("globals", { invoke = function(_, ctx)
          local names = {}
          for name in pairs(_G) do names[#names + 1] = name end
          ctx:complete(table.concat(names, " "))
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    let names: BTreeSet<String> = output(&runtime, "globals", "{}")
        .await
        .split(' ')
        .map(str::to_string)
        .collect();
    // Lua 5.4's base library without dofile, loadfile, load and collectgarbage; the
    // string, table, math and utf8 libraries; and the clm API (clm, json, http).
    let expected: BTreeSet<String> = [
        "_G",
        "_VERSION",
        "assert",
        "error",
        "getmetatable",
        "ipairs",
        "next",
        "pairs",
        "pcall",
        "print",
        "rawequal",
        "rawget",
        "rawlen",
        "rawset",
        "select",
        "setmetatable",
        "tonumber",
        "tostring",
        "type",
        "warn",
        "xpcall",
        "string",
        "table",
        "math",
        "utf8",
        "clm",
        "json",
        "http",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    assert_eq!(names, expected);
}

#[tokio::test]
async fn load_and_bytecode_are_out_of_reach() {
    let fixture = Fixture::new(&[(
        "probe.lua",
        r#"
        clm.tool_register("probe", { invoke = function(_, ctx)
          local found = {}
          for _, name in ipairs({ "os", "io", "debug", "package", "coroutine", "dofile",
                                  "loadfile", "load", "require", "collectgarbage" }) do
            if _G[name] ~= nil then found[#found + 1] = name end
          end
          -- No bytecode either: string.dump would make it.
          if string.dump ~= nil then found[#found + 1] = "string.dump" end
          -- The string metatable is the string library itself, nothing more.
          local meta = getmetatable("")
          ctx:complete(#found .. " " .. tostring(meta.__index == string))
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(output(&runtime, "probe", "{}").await, "0 true");
}

/// Every plugin instance seeds math.random from the host's entropy: two plugins, and
/// the same plugin in another runtime, draw different numbers (the state they start
/// from was prepared once and snapshotted, seed included, for all of them).
#[tokio::test]
async fn math_random_is_seeded_per_instance() {
    const DRAW: &str = r#"
        clm.tool_register(NAME, { invoke = function(_, ctx)
          ctx:complete(math.random(0, 1 << 62) .. " " .. math.random(0, 1 << 62))
        end })
    "#;
    let one = DRAW.replace("NAME", "\"one\"");
    let two = DRAW.replace("NAME", "\"two\"");
    let fixture = Fixture::new(&[("one.lua", &one), ("two.lua", &two)]);
    let first = fixture.load().await;
    let second = fixture.load().await;
    let draws = [
        output(&first, "one", "{}").await,
        output(&first, "two", "{}").await,
        output(&second, "one", "{}").await,
    ];
    assert_ne!(draws[0], draws[1]);
    assert_ne!(draws[0], draws[2]);
    assert_ne!(draws[1], draws[2]);
}

/// The math library's transcendental functions in the sandbox (the `libm` crate's, see
/// lua-guest/src/math.rs) against the host's C library, which native clm plugins use:
/// both stay within one unit in the last place of the exact result, so they may differ
/// by one unit but no more. The inputs cover subnormal results, overflow, domain errors
/// and trigonometry of huge arguments, whose reduction needs the most care.
#[tokio::test]
async fn math_functions_agree_with_the_host_c_library_to_one_unit_in_the_last_place() {
    let cases: [(&str, f64); 24] = [
        ("math.exp(1)", 1f64.exp()),
        ("math.exp(-745)", (-745f64).exp()),
        ("math.exp(710)", 710f64.exp()),
        ("math.exp(1e-10)", 1e-10f64.exp()),
        ("math.log(10)", 10f64.ln()),
        ("math.log(1e-310)", 1e-310f64.ln()),
        ("math.log(0)", 0f64.ln()),
        ("math.log(-1)", (-1f64).ln()),
        ("math.log(3, 2)", 3f64.log2()),
        ("math.log(1024, 2)", 1024f64.log2()),
        ("2 ^ 0.5", 2f64.powf(0.5)),
        ("(-8) ^ (1 / 3)", (-8f64).powf(1.0 / 3.0)),
        ("0 ^ 0", 0f64.powf(0.0)),
        ("(-2) ^ 3", (-2f64).powf(3.0)),
        ("10 ^ -320", 10f64.powf(-320.0)),
        ("2 ^ 1023.5", 2f64.powf(1023.5)),
        ("1.0000001 ^ 1e9", 1.0000001f64.powf(1e9)),
        ("math.sin(0.5)", 0.5f64.sin()),
        ("math.cos(2)", 2f64.cos()),
        ("math.tan(1.5)", 1.5f64.tan()),
        ("math.sin(1e22)", 1e22f64.sin()),
        ("math.cos(1e300)", 1e300f64.cos()),
        ("math.tan(-1e15)", (-1e15f64).tan()),
        ("math.sin(-0.0)", (-0.0f64).sin()),
    ];
    let expressions: Vec<&str> = cases.iter().map(|(lua, _)| *lua).collect();
    let source = format!(
        r#"
        clm.tool_register("math", {{ invoke = function(_, ctx)
          local out = {{}}
          for _, x in ipairs({{ {} }}) do
            out[#out + 1] = x ~= x and "nan" or string.format("%.17g", x)
          end
          ctx:complete(table.concat(out, " "))
        end }})
        "#,
        expressions.join(", ")
    );
    let fixture = Fixture::new(&[("math.lua", source.as_str())]);
    let runtime = fixture.load().await;
    let results = output(&runtime, "math", "{}").await;
    let results: Vec<&str> = results.split(' ').collect();
    assert_eq!(results.len(), cases.len(), "{results:?}");
    for ((lua, expected), got) in cases.iter().zip(results) {
        if expected.is_nan() {
            assert_eq!(got, "nan", "{lua}");
            continue;
        }
        let got: f64 = got.parse().unwrap_or_else(|_| panic!("{lua} gave {got}"));
        assert!(
            units_apart(got, *expected) <= 1,
            "{lua} is {got:e} in the sandbox and {expected:e} natively"
        );
    }
}

/// How many representable doubles lie between `a` and `b` (0 when equal; infinities of
/// the same sign are equal).
fn units_apart(a: f64, b: f64) -> u64 {
    // Maps doubles onto integers in the same order, so neighbours differ by one.
    let ordered = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    ordered(a).abs_diff(ordered(b))
}

#[tokio::test]
async fn a_plugin_file_of_lua_bytecode_is_refused() {
    // "\27Lua" starts precompiled chunks; only source text may be loaded.
    let fixture = Fixture::new(&[("binary.lua", "\x1bLuaT\x00 rest of a compiled chunk")]);
    let runtime = fixture.load().await;
    let diagnostic = &runtime.diagnostics()[0];
    assert_eq!(diagnostic.kind, DiagnosticKind::LoadFailed);
    assert_contains(
        &diagnostic.message,
        &[&fixture.file_name("binary.lua"), "binary chunk"],
    );
    assert!(runtime.tools().is_empty());
}

#[tokio::test]
async fn a_tight_loop_at_load_time_hits_the_500_ms_deadline_and_the_others_still_load() {
    let fixture = Fixture::new(&[
        ("a_spin.lua", "while true do end"),
        (
            "b_ok.lua",
            r#"clm.tool_register("ok", { invoke = function(_, ctx) ctx:complete("ok") end })"#,
        ),
    ]);
    let runtime = fixture.load().await;
    let diagnostic = &runtime.diagnostics()[0];
    assert_eq!(diagnostic.kind, DiagnosticKind::LoadFailed);
    assert_contains(
        &diagnostic.message,
        &[&fixture.file_name("a_spin.lua"), "500 ms"],
    );
    assert_eq!(output(&runtime, "ok", "{}").await, "ok");
}

#[tokio::test]
async fn pcall_cannot_catch_the_load_deadline() {
    let fixture = Fixture::new(&[(
        "stubborn.lua",
        "while true do pcall(function() while true do end end) end",
    )]);
    let runtime = fixture.load().await;
    assert_contains(
        &runtime.diagnostics()[0].message,
        &[&fixture.file_name("stubborn.lua"), "500 ms"],
    );
}

const DEADLINES: &str = r#"
calls = 0
clm.tool_register("spin", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  while true do end
end })
clm.tool_register("spin_pcall", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  while true do pcall(function() while true do end end) end
end })
clm.tool_register("spin_xpcall", { timeout_ms = 200, invoke = function(_, ctx)
  calls = calls + 1
  local handled = 0
  while true do
    xpcall(function() while true do end end, function(e) handled = handled + 1; return e end)
  end
end })
clm.tool_register("count", { invoke = function(_, ctx)
  ctx:complete(tostring(calls))
end })
"#;

#[tokio::test]
async fn a_call_deadline_stops_loops_even_under_pcall_and_the_plugin_keeps_its_state() {
    let fixture = Fixture::new(&[("deadlines.lua", DEADLINES)]);
    let runtime = fixture.load().await;
    for tool in ["spin", "spin_pcall", "spin_xpcall"] {
        assert_eq!(
            call(&runtime, tool, "{}").await,
            CallOutcome::TimedOut(format!("tool '{tool}' timed out after 200 ms"))
        );
    }
    // The same Lua state survived all three: no restart, the counter is intact.
    assert_eq!(output(&runtime, "count", "{}").await, "3");
}

#[tokio::test]
async fn running_out_of_lua_memory_is_a_catchable_error() {
    let fixture = Fixture::new(&[(
        "mem.lua",
        r#"
        clm.tool_register("catch", { invoke = function(_, ctx)
          local ok, err = pcall(string.rep, "x", 64 * 1024 * 1024)
          ctx:complete(tostring(ok) .. ": " .. tostring(err))
        end })
        clm.tool_register("hog", { invoke = function(_, ctx)
          local t = {}
          for i = 1, 1e9 do t[i] = string.rep("x", 100) .. i end
        end })
        clm.tool_register("small", { invoke = function(_, ctx) ctx:complete("fine") end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(
        output(&runtime, "catch", "{}").await,
        "false: not enough memory"
    );
    assert_eq!(
        call(&runtime, "hog", "{}").await,
        CallOutcome::OutOfMemory(
            "out of memory: the plugin reached its memory limit of 8 MiB".to_string()
        )
    );
    // The table was local to the failed call: the plugin works again.
    assert_eq!(output(&runtime, "small", "{}").await, "fine");
}

/// Every call leaves garbage for Lua's collector, some of it with a finalizer (each
/// `ctx` is userdata). With a collector that let such garbage push each cycle further
/// out, a plugin called often enough filled its memory and then failed every call; at
/// 256 KiB that took a few thousand calls.
#[tokio::test]
async fn a_plugin_called_ten_thousand_times_keeps_its_memory() {
    let fixture = Fixture::new(&[(
        "greeter.lua",
        r#"
        clm.tool_register("greet", { invoke = function(args, ctx)
          ctx:complete("Hello, " .. args.name .. "!")
        end })
        "#,
    )]);
    let limit = 256 * 1024;
    let runtime = fixture
        .load_with(|builder| builder.limits(Limits::default().with_memory(limit)))
        .await;
    let plugin = runtime
        .tool("greet")
        .expect("greet is registered")
        .plugin
        .clone();
    for _ in 0..10_000 {
        assert_eq!(
            output(&runtime, "greet", r#"{"name":"again"}"#).await,
            "Hello, again!"
        );
    }
    let memory = runtime
        .memory(&plugin)
        .expect("the plugin is loaded")
        .await
        .expect("the plugin has an instance");
    let lua = memory.lua.expect("the Lua runtime reports its memory");
    assert!(
        lua < limit / 2,
        "after 10000 calls the plugin holds {lua} bytes of its {limit}"
    );
}

/// When a call runs out of memory, what it left with a finalizer must not keep the
/// memory from later calls: the collections Lua makes at the limit never run
/// finalizers.
#[tokio::test]
async fn garbage_with_finalizers_is_freed_after_a_call_runs_out_of_memory() {
    let fixture = Fixture::new(&[(
        "finalizers.lua",
        r#"
        local finalized = 0
        local counted = { __gc = function() finalized = finalized + 1 end }
        clm.tool_register("hog", { invoke = function(_, ctx)
          local t = {}
          for i = 1, 1e9 do t[i] = setmetatable({ string.rep("x", 100) .. i }, counted) end
        end })
        clm.tool_register("quarter", { invoke = function(_, ctx)
          local s = string.rep("y", 2 * 1024 * 1024)
          ctx:complete(#s .. " " .. tostring(finalized > 0))
        end })
        "#,
    )]);
    let runtime = fixture.load().await;
    assert_eq!(
        failure(&runtime, "hog", "{}").await,
        "out of memory: the plugin reached its memory limit of 8 MiB"
    );
    // A quarter of the limit is free again (the string and the buffer it was built
    // in), and the finalizers ran.
    assert_eq!(output(&runtime, "quarter", "{}").await, "2097152 true");
}

#[tokio::test]
async fn the_memory_limit_is_configurable() {
    let fixture = Fixture::new(&[(
        "big.lua",
        r#"
        clm.tool_register("big", { invoke = function(_, ctx)
          local s = string.rep("x", 12 * 1024 * 1024)
          ctx:complete(tostring(#s))
        end })
        "#,
    )]);
    let default = fixture.load().await;
    assert_contains(
        &failure(&default, "big", "{}").await,
        &["out of memory", "8 MiB"],
    );
    let larger = fixture
        .load_with(|builder| builder.limits(Limits::default().with_memory(32 * MIB)))
        .await;
    assert_eq!(output(&larger, "big", "{}").await, (12 * MIB).to_string());
}

#[tokio::test]
async fn the_hosts_memory_cap_holds_when_the_plugins_own_limit_is_higher() {
    let fixture = Fixture::new(&[(
        "hog.lua",
        r#"
        clm.tool_register("hog", { invoke = function(_, ctx)
          local t = {}
          for i = 1, 1e9 do t[i] = string.rep("x", 4096) .. i end
        end })
        clm.tool_register("small", { invoke = function(_, ctx) ctx:complete("fine") end })
        "#,
    )]);
    // Lua may use 256 MiB, but the instance's linear memory is capped at 24 MiB: the
    // host's limiter, not the Lua allocator, is what stops the plugin.
    let limits = Limits {
        memory: 256 * MIB,
        linear_memory: 24 * MIB,
        ..Limits::default()
    };
    let runtime = fixture.load_with(|builder| builder.limits(limits)).await;
    match call(&runtime, "hog", "{}").await {
        CallOutcome::Crashed {
            message,
            cause: CrashCause::MemoryCap,
            fate: PluginFate::Restarted,
            ..
        } => assert_contains(&message, &["memory cap of 24 MiB"]),
        other => panic!("hog should crash at the memory cap, got {other:?}"),
    }
    assert_eq!(output(&runtime, "small", "{}").await, "fine");
}

const CRASHERS: &str = r#"
clm.tool_register("burn", { invoke = function(_, ctx)
  local x = 0
  for i = 1, 1e12 do x = x + i end
  ctx:complete(tostring(x))
end })
clm.tool_register("backtrack", { timeout_ms = 200, invoke = function(_, ctx)
  -- Pattern matching runs in C and never returns to the Lua VM, so the count hook
  -- never fires: only the host's hard deadline can stop it.
  local s = string.rep("a", 30000)
  ctx:complete(tostring(s:find(".-.-.-.-.-b")))
end })
clm.tool_register("nap", { invoke = function(_, ctx)
  clm.sleep(5000)
  ctx:complete("woke")
end })
clm.tool_register("ping", { invoke = function(_, ctx) ctx:complete("pong") end })
local count = 0
local ballast = {}
clm.tool_register("count", { invoke = function(_, ctx)
  count = count + 1
  -- Dirty more of the heap than the load did, so a reset that missed a page shows.
  for i = 1, 2000 do ballast[#ballast + 1] = string.rep("d", 64) .. i end
  ctx:complete(tostring(count))
end })
"#;

/// Limits under which the crashers' `burn` tool runs out of fuel quickly (200 million
/// units, so a test that burns several times stays fast).
fn burn_limits() -> Limits {
    Limits {
        fuel: 200_000_000,
        ..Limits::default()
    }
}

#[tokio::test]
async fn running_out_of_fuel_discards_the_instance_and_the_next_call_gets_a_fresh_one() {
    let fixture = Fixture::new(&[("crashers.lua", CRASHERS)]);
    let limits = burn_limits();
    let runtime = fixture.load_with(|builder| builder.limits(limits)).await;
    let message = failure(&runtime, "burn", "{}").await;
    assert_contains(
        &message,
        &["plugin 'crashers' crashed", "ran out of fuel", "200000000"],
    );
    assert_eq!(output(&runtime, "ping", "{}").await, "pong");
}

/// Freed instance slots are kept warm and reset in place for the next instance of the
/// same guest (`host/src/engine/mod.rs`): whatever lands in such a slot must start from the plugin's
/// load-time state, never from what the previous instance left there.
#[tokio::test]
async fn a_restarted_or_reloaded_plugin_starts_from_its_load_time_state() {
    let fixture = Fixture::new(&[("crashers.lua", CRASHERS)]);
    let limits = burn_limits();
    for _ in 0..3 {
        let runtime = fixture
            .load_with(|builder| builder.limits(limits.clone()))
            .await;
        assert_eq!(output(&runtime, "count", "{}").await, "1");
        assert_eq!(output(&runtime, "count", "{}").await, "2");
        assert_contains(&failure(&runtime, "burn", "{}").await, &["ran out of fuel"]);
        assert_eq!(output(&runtime, "count", "{}").await, "1");
    }
}

#[tokio::test]
async fn code_that_never_returns_to_the_lua_vm_is_stopped_at_its_hard_deadline() {
    let fixture = Fixture::new(&[("crashers.lua", CRASHERS)]);
    let runtime = fixture.load().await;
    let message = failure(&runtime, "backtrack", "{}").await;
    assert_contains(
        &message,
        &["plugin 'crashers' crashed", "past its deadline"],
    );
    assert_eq!(output(&runtime, "ping", "{}").await, "pong");
}

#[tokio::test]
async fn a_crash_fails_the_plugins_other_calls_and_spares_other_plugins() {
    let fixture = Fixture::new(&[
        ("crashers.lua", CRASHERS),
        (
            "sibling.lua",
            r#"
            clm.tool_register("sibling_nap", { invoke = function(_, ctx)
              clm.sleep(300)
              ctx:complete("sibling fine")
            end })
        "#,
        ),
    ]);
    let runtime = fixture.load().await;
    let napping = runtime.call("nap", "{}").expect("nap");
    let sibling = runtime.call("sibling_nap", "{}").expect("sibling_nap");
    match call(&runtime, "backtrack", "{}").await {
        CallOutcome::Crashed {
            message,
            cause: CrashCause::Deadline,
            fate: PluginFate::Restarted,
            during_another_call: false,
            ..
        } => assert_contains(&message, &["plugin 'crashers' crashed: "]),
        other => panic!("backtrack should crash at its hard deadline, got {other:?}"),
    }
    match napping.await {
        CallOutcome::Crashed {
            message,
            cause: CrashCause::Deadline,
            fate: PluginFate::Restarted,
            during_another_call: true,
            ..
        } => assert_contains(&message, &["plugin 'crashers' crashed during another call"]),
        other => panic!("the napping call should fail with the crash, got {other:?}"),
    }
    assert_eq!(
        sibling.await,
        CallOutcome::Completed("sibling fine".to_string())
    );
}

#[tokio::test]
async fn a_plugin_that_keeps_crashing_is_disabled() {
    let fixture = Fixture::new(&[("crashers.lua", CRASHERS)]);
    let limits = burn_limits();
    let runtime = fixture.load_with(|builder| builder.limits(limits)).await;
    for _ in 0..5 {
        assert_contains(&failure(&runtime, "burn", "{}").await, &["ran out of fuel"]);
    }
    let message = failure(&runtime, "ping", "{}").await;
    assert_contains(
        &message,
        &[
            "plugin 'crashers' is disabled",
            "crashed 5 times within 60 s",
            "ran out of fuel",
        ],
    );
}

#[tokio::test]
async fn print_and_ctx_log_go_to_the_debug_log_only() {
    let fixture = Fixture::new(&[(
        "talk.lua",
        r#"
        print("loading", 1, nil)
        clm.tool_register("talk", { invoke = function(_, ctx)
          print("in", "invoke")
          ctx:log("from ctx")
          ctx:complete("done")
        end })
        "#,
    )]);
    let log = fixture.root().join("debug.log");
    let runtime = fixture
        .load_with(|builder| builder.debug_log(Some(log.clone())))
        .await;
    assert_eq!(output(&runtime, "talk", "{}").await, "done");
    // The log is written by a thread of its own; dropping the runtime waits for it.
    drop(runtime);
    let text = std::fs::read_to_string(&log).expect("the debug log exists");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].ends_with("[talk] loading\t1\tnil"), "{text}");
    assert!(lines[1].ends_with("[talk] in\tinvoke"), "{text}");
    assert!(lines[2].ends_with("[talk] from ctx"), "{text}");
}

#[tokio::test]
async fn two_plugins_never_share_state() {
    let writer = r#"
        shared = "set by writer"
        clm.tool_register("write_global", { invoke = function(_, ctx)
          string.secret = "leak"
          ctx:complete(shared)
        end })
    "#;
    let reader = r#"
        clm.tool_register("read_global", { invoke = function(_, ctx)
          ctx:complete(tostring(shared) .. " " .. tostring(string.secret))
        end })
    "#;
    let fixture = Fixture::new(&[("reader.lua", reader), ("writer.lua", writer)]);
    let runtime = fixture.load().await;
    assert_eq!(
        output(&runtime, "write_global", "{}").await,
        "set by writer"
    );
    assert_eq!(output(&runtime, "read_global", "{}").await, "nil nil");
}

#[tokio::test]
async fn every_call_starts_in_a_clean_coroutine_whatever_the_last_one_did() {
    // The runtime reuses the coroutine of a call that returned normally; a call sees
    // exactly its two arguments, after calls that completed, raised,
    // returned without completing or were stopped by their deadline.
    let fixture = Fixture::new(&[(
        "steps.lua",
        r##"
        calls = 0
        clm.tool_register("step", { invoke = function(args, ctx, ...)
          calls = calls + 1
          local extra = select("#", ...)
          if args.mode == "raise" then error("boom") end
          if args.mode == "spin" then while true do end end
          if args.mode == "forget" then return "left on the stack" end
          ctx:complete(calls .. " " .. extra .. " " .. tostring(args.n))
        end })
    "##,
    )]);
    let limits = Limits {
        call_timeout: std::time::Duration::from_millis(200),
        ..Limits::default()
    };
    let runtime = fixture.load_with(|builder| builder.limits(limits)).await;
    assert_eq!(output(&runtime, "step", r#"{"n":1}"#).await, "1 0 1");
    assert_contains(
        &failure(&runtime, "step", r#"{"mode":"forget"}"#).await,
        &["without calling ctx:complete"],
    );
    assert_eq!(output(&runtime, "step", r#"{"n":3}"#).await, "3 0 3");
    assert_contains(
        &failure(&runtime, "step", r#"{"mode":"raise"}"#).await,
        &["boom"],
    );
    assert_eq!(output(&runtime, "step", r#"{"n":5}"#).await, "5 0 5");
    assert_contains(
        &failure(&runtime, "step", r#"{"mode":"spin"}"#).await,
        &["timed out"],
    );
    for n in 7..20 {
        assert_eq!(
            output(&runtime, "step", &format!(r#"{{"n":{n}}}"#)).await,
            format!("{n} 0 {n}")
        );
    }
}

#[tokio::test]
async fn a_failed_call_reports_the_lua_error_with_its_position() {
    let fixture = Fixture::new(&[(
        "oops.lua",
        "clm.tool_register(\"oops\", { invoke = function(args, ctx)\n  local t = nil\n  return t.field\nend })\n",
    )]);
    let runtime = fixture.load().await;
    assert_contains(
        &failure(&runtime, "oops", "{}").await,
        &["oops.lua:3:", "attempt to index a nil value"],
    );
    // Being stepped by the host, the error did not take the plugin down.
    assert!(matches!(
        call(&runtime, "oops", "{}").await,
        CallOutcome::Failed(_)
    ));
}
