//! `toolcell-bench compare`: the same workloads on native mlua (clm's design) and on
//! toolcell, in one run, as one table of medians and ratios.
//!
//! Measurements that need a clean process (cold start, peak memory) run in a child
//! process (`toolcell-bench probe ...`) so nothing else in this process skews them.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tempfile::TempDir;
use toolcell::limits::{Limits, MIB};
use toolcell::policy::{CommandLineRules, Verdict};
use toolcell::{CallOutcome, Engine, Runtime};

use crate::measure::{median_of, show};
use crate::native::NativePlugin;
use crate::workloads::{COMPUTE, TARGET_WORKLOADS};

/// Lua memory limit for the compute plugin on both sides: the workloads hold a few
/// megabytes of tables and strings at once.
pub const COMPUTE_MEMORY: usize = 128 * MIB as usize;

/// The trivial tool of the call benchmarks.
pub const TRIVIAL_PLUGIN: &str =
    r#"clm.tool_register("ok", { invoke = function(args, ctx) ctx:complete("ok") end })"#;

/// Options of the comparison.
pub struct Options {
    /// Measured runs per compute workload.
    pub runs: usize,
    /// Calls per call benchmark.
    pub calls: usize,
    /// Sections to run (all when empty).
    pub only: Vec<String>,
    /// Engine settings, passed on to probes.
    pub engine: crate::EngineFlags,
}

impl Options {
    fn wants(&self, section: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|wanted| wanted == section)
    }
}

/// The plugin holding one tool per compute workload (`w1`, `w2`, ...).
pub fn compute_plugin() -> String {
    let mut script = String::new();
    for (index, workload) in COMPUTE.iter().enumerate() {
        script.push_str(&format!(
            "do\n{setup}\nend\nclm.tool_register('w{n}', {{ timeout_ms = 600000, invoke = function(args, ctx)\n  ctx:complete(tostring((function()\n{code}\nend)()))\nend }})\n",
            setup = workload.setup,
            n = index + 1,
            code = workload.code,
        ));
    }
    script
}

/// A directory with the given plugins.
pub fn plugin_dir(plugins: &[(String, String)]) -> TempDir {
    let dir = TempDir::new().expect("temp dir");
    for (name, source) in plugins {
        std::fs::write(dir.path().join(name), source).expect("write plugin");
    }
    dir
}

/// The plugins of `dir`, loaded on `engine` as the CLI would, without a debug log;
/// every plugin must load cleanly.
pub async fn load(engine: &Engine, dir: &Path, limits: Limits) -> Runtime {
    let runtime = Runtime::builder()
        .engine(engine.clone())
        .plugin_dir(dir)
        .limits(limits)
        .build()
        .await
        .expect("runtime");
    assert!(
        runtime.diagnostics().is_empty(),
        "{:?}",
        runtime.diagnostics()
    );
    runtime
}

/// As [`load`], with a policy that allows every tool by a rule (`--allow '*'`, default
/// `allow`), as a harness that trusts its plugins configures it: such a policy leaves
/// the policy layer nothing to do per call but count it.
pub async fn load_allowing_all(engine: &Engine, dir: &Path) -> Runtime {
    Runtime::builder()
        .engine(engine.clone())
        .plugin_dir(dir)
        .permission_default(Verdict::Allow)
        .permission_rules(CommandLineRules {
            allow: vec!["*".to_string()],
            ..CommandLineRules::default()
        })
        .build()
        .await
        .expect("runtime")
}

async fn output(runtime: &Runtime, tool: &str) -> String {
    match runtime.call(tool, "{}").expect("call").await {
        CallOutcome::Completed(text) => text,
        other => panic!("{tool} failed: {other:?}"),
    }
}

/// Runs the whole comparison and prints the table.
pub async fn run(options: &Options) {
    let engine = options.engine.engine();
    println!(
        "toolcell bench: {} cores, {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        engine.describe()
    );
    if options.wants("compute") {
        println!();
        compute(&engine, options).await;
    }
    if options.wants("calls") {
        println!();
        calls(&engine, options).await;
    }
    if options.wants("loads") {
        println!();
        loads(options.engine).await;
    }
    if options.wants("aot") {
        println!();
        crate::aot::costs(options.engine).await;
    }
}

async fn compute(engine: &Engine, options: &Options) {
    let script = compute_plugin();
    let limits = Limits::default().with_memory(COMPUTE_MEMORY as u64);
    let dir = plugin_dir(&[("compute.lua".into(), script.clone())]);
    let runtime = load(engine, dir.path(), limits.clone()).await;
    let native = NativePlugin::load(&script, COMPUTE_MEMORY).expect("native plugin");
    // The same plugin packed compiled ahead of time, for the Lua-bound workloads.
    let compiled = match crate::aot::toolchain() {
        Ok(toolchain) => {
            let (bytes, _) = crate::aot::pack(&script, "compute", &toolchain).await;
            let dir = plugin_dir(&[]);
            crate::aot::install(dir.path(), "compute", &bytes);
            Some((load(engine, dir.path(), limits).await, dir))
        }
        Err(error) => {
            println!("(compiled: not measured: {error})");
            None
        }
    };
    println!(
        "{:<30} {:>12} {:>12} {:>7} {:>12} {:>7} {:>9}",
        "compute (median)", "native", "toolcell", "ratio", "compiled", "ratio", "speedup"
    );
    let mut ratios = Vec::new();
    for (index, workload) in COMPUTE.iter().enumerate() {
        let tool = format!("w{}", index + 1);
        let expected = native.call(&tool, "{}").expect("native run");
        assert_eq!(
            output(&runtime, &tool).await,
            expected,
            "{}: both sides compute the same",
            workload.name
        );
        let compiled = compiled
            .as_ref()
            .filter(|_| workload.lua_bound)
            .map(|(runtime, _)| runtime);
        if let Some(compiled) = compiled {
            assert_eq!(
                output(compiled, &tool).await,
                expected,
                "{}: compiled computes the same",
                workload.name
            );
        }
        // Interleaved, so drift in the machine's load hits every side alike.
        let (mut native_samples, mut toolcell_samples, mut compiled_samples) =
            (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..options.runs {
            let start = Instant::now();
            native.call(&tool, "{}").expect("native run");
            native_samples.push(start.elapsed());
            let start = Instant::now();
            output(&runtime, &tool).await;
            toolcell_samples.push(start.elapsed());
            if let Some(compiled) = compiled {
                let start = Instant::now();
                output(compiled, &tool).await;
                compiled_samples.push(start.elapsed());
            }
        }
        let native_time = crate::measure::median(&mut native_samples);
        let toolcell_time = crate::measure::median(&mut toolcell_samples);
        let ratio = toolcell_time.as_secs_f64() / native_time.as_secs_f64();
        if index < TARGET_WORKLOADS {
            ratios.push(ratio);
        }
        let compiled_columns = if compiled_samples.is_empty() {
            String::new()
        } else {
            let compiled_time = crate::measure::median(&mut compiled_samples);
            format!(
                " {:>12} {:>6.2}x {:>8.2}x",
                show(compiled_time),
                compiled_time.as_secs_f64() / native_time.as_secs_f64(),
                toolcell_time.as_secs_f64() / compiled_time.as_secs_f64()
            )
        };
        println!(
            "{:<30} {:>12} {:>12} {:>6.2}x{compiled_columns}",
            workload.name,
            show(native_time),
            show(toolcell_time),
            ratio
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "{:<30} {:>12} {:>12} {:>6.2}x   (target <= 1.3x, over the first {TARGET_WORKLOADS})",
        "median ratio",
        "",
        "",
        ratios[ratios.len() / 2]
    );
}

async fn calls(engine: &Engine, options: &Options) {
    let dir = plugin_dir(&[("trivial.lua".into(), TRIVIAL_PLUGIN.into())]);
    let runtime = Arc::new(load(engine, dir.path(), Limits::default()).await);
    let native = NativePlugin::load(TRIVIAL_PLUGIN, 8 * MIB as usize).expect("native plugin");
    let n = options.calls;
    let native_per_call = per_call(n, || {
        native.call("ok", "{}").map(drop).expect("native call")
    });
    for _ in 0..1000 {
        output(&runtime, "ok").await;
    }
    let start = Instant::now();
    for _ in 0..n {
        output(&runtime, "ok").await;
    }
    let one_caller = start.elapsed() / n as u32;
    let (default_policy, allow_all) = policy_pair(engine, dir.path(), &runtime, n).await;
    // An embedding agent calls from a task of its runtime, not from `block_on`: the
    // plugin's actor and the caller then wake each other on one worker thread.
    let in_task = {
        let runtime = runtime.clone();
        tokio::spawn(async move {
            let start = Instant::now();
            for _ in 0..n {
                output(&runtime, "ok").await;
            }
            start.elapsed() / n as u32
        })
        .await
        .expect("caller task")
    };
    let callers = 64;
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                for _ in 0..n / callers {
                    output(&runtime, "ok").await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("caller");
    }
    let many_callers = start.elapsed() / (n / callers * callers) as u32;
    println!(
        "{:<30} {:>12} {:>12} {:>7} {:>12}",
        "trivial call", "native", "toolcell", "ratio", "calls/s"
    );
    for (name, toolcell_time) in [
        ("1 caller, from block_on", one_caller),
        ("1 caller, allow-all policy", allow_all),
        ("1 caller, in a runtime task", in_task),
        ("64 concurrent callers", many_callers),
    ] {
        println!(
            "{:<30} {:>12} {:>12} {:>6.2}x {:>12.0}   (target <= 1.5x and <= 2 µs)",
            name,
            show(native_per_call),
            show(toolcell_time),
            toolcell_time.as_secs_f64() / native_per_call.as_secs_f64(),
            1.0 / toolcell_time.as_secs_f64()
        );
    }
    println!(
        "{:<30} {:>12} {:>12} {:>+6.1}%   (target <= +5 %)",
        "allow-all vs default policy",
        show(default_policy),
        show(allow_all),
        (allow_all.as_secs_f64() / default_policy.as_secs_f64() - 1.0) * 100.0
    );
}

/// The trivial call through `plain` (the embedding API's default policy, under which a
/// tool without `no_prompt` asks and, with nobody to ask, is allowed) and through a
/// runtime that allows every tool by a rule, in alternating rounds so that drift in the
/// machine's load hits both alike: the median round's time per call of each.
async fn policy_pair(
    engine: &Engine,
    dir: &Path,
    plain: &Runtime,
    n: usize,
) -> (Duration, Duration) {
    let allowing = load_allowing_all(engine, dir).await;
    for _ in 0..1000 {
        output(&allowing, "ok").await;
    }
    let rounds = 21;
    let per_round = (n / rounds).max(1);
    let (mut plain_samples, mut allowing_samples) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (runtime, samples) in [
            (plain, &mut plain_samples),
            (&allowing, &mut allowing_samples),
        ] {
            let start = Instant::now();
            for _ in 0..per_round {
                output(runtime, "ok").await;
            }
            samples.push(start.elapsed() / per_round as u32);
        }
    }
    (
        crate::measure::median(&mut plain_samples),
        crate::measure::median(&mut allowing_samples),
    )
}

fn per_call(n: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..1000 {
        f();
    }
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed() / n as u32
}

async fn loads(engine: crate::EngineFlags) {
    let native_load = median_of(200, || NativePlugin::load(TRIVIAL_PLUGIN, 8 * MIB as usize));
    let cold = probe("cold-load", engine);
    let warm = probe("warm-load", engine);
    let thousand = probe("load-1000", engine);
    let native_thousand = probe("native-load-1000", engine);
    let timers = probe("timers-10k", engine);
    println!(
        "{:<30} {:>12} {:>12} {:>7}",
        "loading", "native", "toolcell", "ratio"
    );
    let warm_time = Duration::from_nanos(warm["nanos"].as_u64().unwrap_or(0));
    println!(
        "{:<30} {:>12} {:>12} {:>6.2}x   (target <= 120 µs)",
        "warm plugin load",
        show(native_load),
        show(warm_time),
        warm_time.as_secs_f64() / native_load.as_secs_f64()
    );
    println!(
        "{:<30} {:>12} {:>12}",
        "cold plugin load (compile)",
        "-",
        show(nanos(&cold))
    );
    println!(
        "{:<30} {:>12} {:>12}   (target <= 200 ms)",
        "1000 plugins: time",
        show(nanos(&native_thousand)),
        show(nanos(&thousand))
    );
    println!(
        "{:<30} {:>9} MiB {:>8} MiB   (target <= 160 MiB)",
        "1000 plugins: peak RSS",
        native_thousand["peak_kib"].as_u64().unwrap_or(0) / 1024,
        thousand["peak_kib"].as_u64().unwrap_or(0) / 1024
    );
    println!(
        "{:<30} {:>9} MiB {:>8} MiB   (shared pages divided among their users)",
        "1000 plugins: PSS",
        native_thousand["pss_kib"].as_u64().unwrap_or(0) / 1024,
        thousand["pss_kib"].as_u64().unwrap_or(0) / 1024
    );
    println!(
        "{:<30} {:>12} {:>12}   (target <= 1.3 s; peak RSS {} MiB)",
        "10k calls x 100 ms timer",
        "-",
        show(nanos(&timers)),
        timers["peak_kib"].as_u64().unwrap_or(0) / 1024
    );
}

fn nanos(result: &serde_json::Value) -> Duration {
    Duration::from_nanos(result["nanos"].as_u64().unwrap_or(0))
}

/// Runs `toolcell-bench probe KIND` in a child process and parses its JSON line.
fn probe(kind: &str, engine: crate::EngineFlags) -> serde_json::Value {
    run_probe(kind, engine, None)
}

/// [`probe`] of an `aot-*` kind, which loads the plugins in `plugins`.
pub fn probe_with(kind: &str, engine: crate::EngineFlags, plugins: &Path) -> serde_json::Value {
    run_probe(kind, engine, Some(plugins))
}

fn run_probe(kind: &str, engine: crate::EngineFlags, plugins: Option<&Path>) -> serde_json::Value {
    let exe = std::env::current_exe().expect("own path");
    let mut command = Command::new(exe);
    command.arg("probe").arg(kind).args(engine.args());
    if let Some(plugins) = plugins {
        command.env(crate::probe::PLUGINS_VARIABLE, plugins);
    }
    let output = command.output().expect("probe runs");
    assert!(
        output.status.success(),
        "probe {kind} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("probe prints JSON")
}
