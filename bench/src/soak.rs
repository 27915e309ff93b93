//! The soak run: many calls over many plugins, a few of them hostile, with calls/s and
//! the host's RSS printed at every report interval. After warm-up the RSS must stay
//! flat: a leak per call (a store, an instance after a crash, an operation's task)
//! would show as steady growth over 100k calls.
//!
//! The plugins are written to a temporary directory: well-behaved ones of a few kinds
//! (echo, JSON, computation, files, timers) and hostile ones (a memory hog, a spinner
//! stopped by its deadline, a fuel burner that crashes its instance and is restarted,
//! an error thrower with a huge message).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use tokio::sync::Semaphore;
use toolcell::config::Config;
use toolcell::limits::{Limits, MIB};
use toolcell::{CallOutcome, Runtime};

use crate::measure;

/// Options of `soak`.
#[derive(clap::Args)]
pub struct Options {
    /// Total calls.
    #[arg(long, default_value_t = 100_000)]
    calls: u64,
    /// Plugins loaded (every fifth kind is hostile: see the module docs).
    #[arg(long, default_value_t = 50)]
    plugins: usize,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Calls between two reports.
    #[arg(long, default_value_t = 10_000)]
    report_every: u64,
    /// Reports before the RSS is taken as the warm baseline.
    #[arg(long, default_value_t = 2)]
    warm_up_reports: u64,
    /// Fail when the RSS grows by more than this many MiB past the warm baseline.
    #[arg(long, default_value_t = 32)]
    max_growth_mib: u64,
}

/// A kind of plugin: its Lua source (with `NAME` for its tool's name), the arguments
/// of a call, and whether its calls are expected to fail.
struct Kind {
    label: &'static str,
    source: &'static str,
    args: &'static str,
    hostile: bool,
}

const KINDS: [Kind; 10] = [
    Kind {
        label: "echo",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx) ctx:complete(ctx:args_raw()) end })"#,
        args: r#"{"text":"hello soak"}"#,
        hostile: false,
    },
    Kind {
        label: "json",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx)
  local t = { items = {} }
  for i = 1, 50 do t.items[i] = { id = i, name = "item" .. i } end
  ctx:complete(tostring(#json.encode(json.decode(json.encode(t)).items)))
end })"#,
        args: "{}",
        hostile: false,
    },
    Kind {
        label: "compute",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx)
  local x = 0
  for i = 1, 20000 do x = (x + i * i) % 1000003 end
  ctx:complete(tostring(x))
end })"#,
        args: "{}",
        hostile: false,
    },
    Kind {
        label: "files",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx)
  assert(clm.write_file("NAME.txt", string.rep("z", 4096)))
  ctx:complete(tostring(#assert(clm.read_file("NAME.txt"))))
end })"#,
        args: "{}",
        hostile: false,
    },
    Kind {
        label: "timers",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx)
  local tasks = {}
  for i = 1, 4 do tasks[i] = clm.spawn(function() clm.sleep(1) return i end) end
  ctx:complete(table.concat(clm.try_all(tasks), ","))
end })"#,
        args: "{}",
        hostile: false,
    },
    Kind {
        label: "memory hog (hostile)",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx)
  local t = {}
  for i = 1, math.huge do t[i] = string.rep("m", 1000) .. i end
end })"#,
        args: "{}",
        hostile: true,
    },
    Kind {
        label: "spinner (hostile)",
        source: r#"clm.tool_register("NAME", { timeout_ms = 10, invoke = function(args, ctx)
  while true do end
end })"#,
        args: "{}",
        hostile: true,
    },
    Kind {
        label: "fuel burner, crashes (hostile)",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx)
  local x = 0
  while true do x = x + 1 end
end })"#,
        args: "{}",
        hostile: true,
    },
    Kind {
        label: "huge error (hostile)",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx)
  error(string.rep("e", 1024 * 1024), 0)
end })"#,
        args: "{}",
        hostile: true,
    },
    Kind {
        label: "echo (second)",
        source: r#"clm.tool_register("NAME", { invoke = function(args, ctx) ctx:complete(args.text) end })"#,
        args: r#"{"text":"hello again"}"#,
        hostile: false,
    },
];

/// Runs the soak and prints its reports.
pub async fn run(options: Options) -> anyhow::Result<()> {
    let plugins = tempfile::TempDir::new().context("plugin directory")?;
    let root = tempfile::TempDir::new().context("file root")?;
    let mut config = String::new();
    let mut tools = Vec::new();
    for index in 0..options.plugins {
        let kind = &KINDS[index % KINDS.len()];
        let name = format!("p{index:03}");
        let source = kind.source.replace("NAME", &name);
        std::fs::write(plugins.path().join(format!("{name}.lua")), source)
            .context("writing a plugin")?;
        if kind.label.starts_with("fuel burner") {
            // A small per-call budget: the burner crashes its instance within
            // milliseconds, and the host restarts it.
            config.push_str(&format!("[plugins.{name}.limits]\nfuel = 20000000\n"));
        }
        tools.push((name, kind));
    }
    let config = Config::parse(&config).context("the soak's configuration")?;
    // Crashes are part of the load: the crash-loop breaker would disable the burners
    // after five, and the soak wants every crash to go through discard and restart.
    let limits = Limits {
        max_crashes: usize::MAX,
        ..Limits::default().with_memory(8 * MIB)
    };
    let started = Instant::now();
    let runtime = Arc::new(
        Runtime::builder()
            .engine(toolcell::cli::environment::engine(Default::default())?)
            .plugin_dir(plugins.path())
            .root(root.path())
            .config(config)
            .limits(limits)
            .build()
            .await
            .context("loading the plugins")?,
    );
    if let Some(diagnostic) = runtime.diagnostics().first() {
        bail!("a soak plugin did not load: {diagnostic}");
    }
    println!(
        "loaded {} plugins ({} hostile) in {:.0} ms; {} calls, {} in flight",
        tools.len(),
        tools.iter().filter(|(_, kind)| kind.hostile).count(),
        started.elapsed().as_secs_f64() * 1000.0,
        options.calls,
        options.concurrency
    );
    println!(
        "{:>8} {:>9} {:>10} {:>9} {:>10} {:>10}",
        "calls", "seconds", "calls/s", "RSS MiB", "completed", "failed"
    );

    let slots = Arc::new(Semaphore::new(options.concurrency));
    let mut calls = tokio::task::JoinSet::new();
    let mut tally = Tally::default();
    let mut samples: Vec<u64> = Vec::new();
    let mut interval_start = Instant::now();
    let begun = Instant::now();
    for number in 0..options.calls {
        let permit = slots.clone().acquire_owned().await.context("semaphore")?;
        let (name, kind) = &tools[(number as usize) % tools.len()];
        let call = runtime
            .call(name, kind.args)
            .with_context(|| format!("calling {name}"))?;
        let (label, hostile) = (kind.label, kind.hostile);
        calls.spawn(async move {
            let outcome = call.await;
            drop(permit);
            (label, hostile, outcome)
        });
        while let Some(done) = calls.try_join_next() {
            tally.note(done.context("a call task")?)?;
        }
        if (number + 1) % options.report_every == 0 {
            while let Some(done) = calls.join_next().await {
                tally.note(done.context("a call task")?)?;
            }
            let rss = measure::rss_kib().0 * 1024;
            samples.push(rss);
            let seconds = interval_start.elapsed().as_secs_f64();
            println!(
                "{:>8} {:>9.1} {:>10.0} {:>9.1} {:>10} {:>10}",
                number + 1,
                begun.elapsed().as_secs_f64(),
                options.report_every as f64 / seconds,
                rss as f64 / MIB as f64,
                tally.completed,
                tally.failed
            );
            interval_start = Instant::now();
        }
    }
    while let Some(done) = calls.join_next().await {
        tally.note(done.context("a call task")?)?;
    }
    println!(
        "\n{} calls in {:.1} s: {:.0} calls/s overall",
        options.calls,
        begun.elapsed().as_secs_f64(),
        options.calls as f64 / begun.elapsed().as_secs_f64()
    );
    for (label, (completed, failed)) in &tally.by_kind {
        println!("  {label:<32} {completed:>7} completed {failed:>7} failed");
    }
    verdict(&samples, &options)
}

/// Outcomes so far.
#[derive(Default)]
struct Tally {
    completed: u64,
    failed: u64,
    by_kind: BTreeMap<&'static str, (u64, u64)>,
}

impl Tally {
    /// Counts one outcome; a well-behaved plugin's failure, or a hostile one's
    /// success, means the soak itself is broken.
    fn note(
        &mut self,
        (label, hostile, outcome): (&'static str, bool, CallOutcome),
    ) -> anyhow::Result<()> {
        let entry = self.by_kind.entry(label).or_default();
        match outcome {
            CallOutcome::Completed(output) if hostile => {
                bail!("hostile plugin '{label}' completed: {output}")
            }
            CallOutcome::Completed(_) => {
                self.completed += 1;
                entry.0 += 1;
            }
            other if !hostile => {
                bail!("plugin '{label}' failed: {other:?}")
            }
            _ => {
                self.failed += 1;
                entry.1 += 1;
            }
        }
        Ok(())
    }
}

/// Compares the last RSS sample with the warm baseline.
fn verdict(samples: &[u64], options: &Options) -> anyhow::Result<()> {
    let warm = options.warm_up_reports as usize;
    let (Some(&baseline), Some(&last)) = (samples.get(warm.saturating_sub(1)), samples.last())
    else {
        println!("too few reports to judge the RSS");
        return Ok(());
    };
    let peak = samples[warm.saturating_sub(1)..]
        .iter()
        .copied()
        .max()
        .unwrap_or(last);
    let growth = last.saturating_sub(baseline) as f64 / MIB as f64;
    println!(
        "RSS after warm-up ({} calls): {:.1} MiB; at the end: {:.1} MiB (peak {:.1} MiB): {growth:+.1} MiB",
        warm as u64 * options.report_every,
        baseline as f64 / MIB as f64,
        last as f64 / MIB as f64,
        peak as f64 / MIB as f64
    );
    if growth > options.max_growth_mib as f64 {
        bail!(
            "the RSS grew by {growth:.1} MiB after warm-up, more than {} MiB",
            options.max_growth_mib
        );
    }
    println!(
        "RSS flat after warm-up (within {} MiB)",
        options.max_growth_mib
    );
    Ok(())
}
