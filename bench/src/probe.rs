//! Measurements run in a child process of their own (`toolcell-bench probe KIND`), so
//! cold starts are really cold and peak memory is this measurement's alone. Each prints
//! one JSON object: `nanos` (the measured time), `rss_kib`, `peak_kib` and `pss_kib`.

use std::time::{Duration, Instant};

use toolcell::limits::{Limits, MIB};
use toolcell::{CallOutcome, Engine, Runtime};

use crate::EngineFlags;
use crate::compare::{COMPUTE_MEMORY, TRIVIAL_PLUGIN, load, load_allowing_all, plugin_dir};
use crate::measure::{median, pss_kib, rss_kib};
use crate::native::NativePlugin;

/// Runs probe `kind` on an engine made as `flags` say, and prints its result.
pub async fn run(kind: &str, flags: EngineFlags) {
    if kind == "cold-load" {
        return report(cold_load(flags, trivial_dir(1).path()).await);
    }
    if kind == "aot-cold-load" {
        return report(cold_load(flags, &given_plugins()).await);
    }
    let engine = &flags.engine();
    let nanos = match kind {
        "aot-warm-load" => warm_load_of(engine, &given_plugins()).await,
        "aot-load" => load_given(engine).await,
        "warm-load" => warm_load(engine).await,
        "native-load-1000" => native_load_many(1000),
        "timers-10k" => timers(engine, 100, 100).await,
        other => match other.strip_prefix("calls-") {
            Some(count) => calls(engine, count.parse().expect("calls-N"), false).await,
            None if other.starts_with("allow-all-calls-") => {
                calls(
                    engine,
                    other[16..].parse().expect("allow-all-calls-N"),
                    true,
                )
                .await
            }
            None if other.starts_with("load-") => {
                load_many(engine, other[5..].parse().expect("load-N")).await
            }
            None => match other.strip_prefix("native-calls-") {
                Some(count) => native_calls(count.parse().expect("native-calls-N")),
                None => match other.split_once(':') {
                    Some((workload, runs)) => {
                        let runs = runs.parse().expect("wN:RUNS");
                        match workload.strip_prefix("native-") {
                            Some(workload) => native_compute(workload, runs),
                            None => compute(engine, workload, runs).await,
                        }
                    }
                    None => panic!("unknown probe {other}"),
                },
            },
        },
    };
    report(nanos);
}

/// Prints the measured time with the process's memory.
fn report(nanos: Duration) {
    let (rss_kib, peak_kib) = rss_kib();
    println!(
        "{}",
        serde_json::json!({
            "nanos": nanos.as_nanos() as u64,
            "rss_kib": rss_kib,
            "peak_kib": peak_kib,
            "pss_kib": pss_kib(),
        })
    );
}

fn trivial_dir(count: usize) -> tempfile::TempDir {
    let plugins: Vec<(String, String)> = (0..count)
        .map(|i| {
            (
                format!("p{i:05}.lua"),
                TRIVIAL_PLUGIN.replacen("\"ok\"", &format!("\"ok{i}\""), 1),
            )
        })
        .collect();
    plugin_dir(&plugins)
}

/// The plugin directory `compare` made for an `aot-*` probe (`PLUGINS_VARIABLE`).
fn given_plugins() -> std::path::PathBuf {
    std::env::var_os(PLUGINS_VARIABLE)
        .map(Into::into)
        .unwrap_or_else(|| panic!("{PLUGINS_VARIABLE} names the plugins to load"))
}

/// Where `compare` tells an `aot-*` probe which plugins to load: packing them compiled
/// takes seconds each, so it is done once, outside the probes.
pub const PLUGINS_VARIABLE: &str = "TOOLCELL_BENCH_PLUGINS";

/// The plugins of `dir` on a new engine, nothing cached: compiling dominates.
async fn cold_load(flags: EngineFlags, dir: &std::path::Path) -> Duration {
    let start = Instant::now();
    let engine = Engine::new(flags.options()).expect("the engine");
    let runtime = Runtime::builder()
        .engine(engine)
        .plugin_dir(dir)
        .build()
        .await
        .expect("runtime");
    let elapsed = start.elapsed();
    assert!(
        runtime.diagnostics().is_empty() && !runtime.tools().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    elapsed
}

/// The plugins `compare` made, their compiled code in the disk cache (`compare` loaded
/// them once): time, and the memory the report adds.
async fn load_given(engine: &Engine) -> Duration {
    let dir = given_plugins();
    let start = Instant::now();
    let runtime = load(engine, &dir, Limits::default()).await;
    let elapsed = start.elapsed();
    std::mem::forget(runtime);
    elapsed
}

/// One plugin with the compiled code at hand: instantiation plus load-time Lua.
async fn warm_load(engine: &Engine) -> Duration {
    warm_load_of(engine, trivial_dir(1).path()).await
}

/// [`warm_load`] of the one plugin in `dir`.
async fn warm_load_of(engine: &Engine, dir: &std::path::Path) -> Duration {
    load(engine, dir, Limits::default()).await;
    let mut samples = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        let runtime = load(engine, dir, Limits::default()).await;
        samples.push(start.elapsed());
        assert_eq!(runtime.tools().len(), 1);
        // The plugin was never called, so its actor never started: dropping the
        // runtime tears the instance down here, before the next sample, as dropping a
        // native Lua state does in the native measurement.
        drop(runtime);
    }
    median(&mut samples)
}

/// `count` plugins in one runtime, compiled code cached on disk.
async fn load_many(engine: &Engine, count: usize) -> Duration {
    let dir = trivial_dir(count);
    // Compile (or read from the disk cache) outside the measurement.
    let warm = trivial_dir(1);
    load(engine, warm.path(), Limits::default()).await;
    let start = Instant::now();
    let runtime = load(engine, dir.path(), Limits::default()).await;
    let elapsed = start.elapsed();
    assert_eq!(runtime.tools().len(), count);
    std::mem::forget(runtime);
    elapsed
}

fn native_load_many(count: usize) -> Duration {
    let start = Instant::now();
    let plugins: Vec<NativePlugin> = (0..count)
        .map(|_| NativePlugin::load(TRIVIAL_PLUGIN, 8 * MIB as usize).expect("native plugin"))
        .collect();
    let elapsed = start.elapsed();
    std::mem::forget(plugins);
    elapsed
}

/// `plugins` x `calls` concurrent calls that each sleep 100 ms.
async fn timers(engine: &Engine, plugins: usize, calls: usize) -> Duration {
    let sources: Vec<(String, String)> = (0..plugins)
        .map(|i| {
            (
                format!("nap{i:04}.lua"),
                format!(r#"clm.tool_register("nap{i}", {{ invoke = function(_, ctx) clm.sleep(100) ctx:complete("") end }})"#),
            )
        })
        .collect();
    let dir = plugin_dir(&sources);
    let runtime = load(engine, dir.path(), Limits::default()).await;
    let start = Instant::now();
    let pending: Vec<_> = (0..plugins * calls)
        .map(|n| {
            runtime
                .call(&format!("nap{}", n % plugins), "{}")
                .expect("call")
        })
        .collect();
    for call in pending {
        assert_eq!(call.await, CallOutcome::Completed(String::new()));
    }
    start.elapsed()
}

/// `count` trivial calls, one after the other (for instruction counts under callgrind:
/// the difference between two counts, divided by the difference in calls, is the cost
/// of one call whatever else the machine does); with `allow_all`, through a policy
/// that allows every tool by a rule (`allow-all-calls-N`).
async fn calls(engine: &Engine, count: usize, allow_all: bool) -> Duration {
    let dir = trivial_dir(1);
    let runtime = if allow_all {
        load_allowing_all(engine, dir.path()).await
    } else {
        load(engine, dir.path(), Limits::default()).await
    };
    let start = Instant::now();
    for _ in 0..count {
        assert_eq!(
            runtime.call("ok0", "{}").expect("call").await,
            CallOutcome::Completed("ok".into())
        );
    }
    start.elapsed()
}

fn native_calls(count: usize) -> Duration {
    let plugin = NativePlugin::load(TRIVIAL_PLUGIN, 8 * MIB as usize).expect("native plugin");
    let start = Instant::now();
    for _ in 0..count {
        plugin.call("ok", "{}").expect("native call");
    }
    start.elapsed()
}

/// Compute workload `tool` (`w1`, `w2`, ...) run `runs` times on toolcell; like
/// `calls`, for instruction counts under callgrind (two run counts, subtracted, give
/// one run whatever the machine does).
async fn compute(engine: &Engine, tool: &str, runs: usize) -> Duration {
    let dir = plugin_dir(&[("compute.lua".into(), crate::compare::compute_plugin())]);
    let limits = Limits {
        // The setup builds 1 MB documents at load; under callgrind that takes long.
        load_timeout: Duration::from_secs(600),
        ..Limits::default().with_memory(COMPUTE_MEMORY as u64)
    };
    let runtime = load(engine, dir.path(), limits).await;
    let start = Instant::now();
    for _ in 0..runs {
        let outcome = runtime.call(tool, "{}").expect("call").await;
        assert!(matches!(outcome, CallOutcome::Completed(_)), "{outcome:?}");
    }
    start.elapsed()
}

/// `compute` on native mlua.
fn native_compute(tool: &str, runs: usize) -> Duration {
    let plugin = NativePlugin::load(&crate::compare::compute_plugin(), COMPUTE_MEMORY)
        .expect("native plugin");
    let start = Instant::now();
    for _ in 0..runs {
        plugin.call(tool, "{}").expect("native run");
    }
    start.elapsed()
}
