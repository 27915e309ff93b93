//! The long soak: one plugin, a million calls, a few in flight at a time, with the
//! plugin's Lua memory, its instance's linear memory and the host's RSS printed as it
//! goes.
//!
//! The soak run (`soak.rs`) spreads its calls over many plugins, so each plugin sees a
//! few thousand calls: a leak of a few dozen bytes per call inside one sandbox needs
//! hundreds of thousands of calls of one plugin to fill its 8 MiB. Here every call goes
//! to the same plugin, and after the warm-up neither figure may grow. The Lua figure
//! is the Lua runtime's own count (what the memory limit applies to), read between
//! calls through its `lua-memory` export; it includes garbage the collector has not
//! reached yet, so it moves between the live size and about twice that.

use std::collections::VecDeque;
use std::time::Instant;

use anyhow::{Context, bail};
use toolcell::limits::{Limits, MIB};
use toolcell::{Call, MemoryUse, Runtime};

use crate::measure;

/// Options of `long-soak`.
#[derive(clap::Args)]
pub struct Options {
    /// Total calls.
    #[arg(long, default_value_t = 1_000_000)]
    calls: u64,
    /// Calls in flight at once: calls made while the plugin is busy queue for its
    /// actor, as an MCP server's concurrent requests do.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Calls between two reports.
    #[arg(long, default_value_t = 100_000)]
    report_every: u64,
    /// The plugin's memory limit in MiB.
    #[arg(long, default_value_t = 8)]
    memory_mib: u64,
    /// Reports before the figures are taken as the warm baseline.
    #[arg(long, default_value_t = 1)]
    warm_up_reports: u64,
    /// Fail when the plugin's Lua memory grows by more than this many KiB past the
    /// warm baseline (a leak of one byte per call is 1 KiB per 1000 calls).
    #[arg(long, default_value_t = 64)]
    max_lua_growth_kib: u64,
    /// Fail when the host's RSS grows by more than this many MiB past the warm
    /// baseline.
    #[arg(long, default_value_t = 16)]
    max_rss_growth_mib: u64,
}

/// The plugin: clm-tool(5)'s example, with a schema, so each call is validated too.
const PLUGIN: &str = r#"clm.tool_register("hello", {
  description = "Say hello to someone",
  params_schema = {
    type = "object",
    properties = { name = { type = "string" } },
    required = { "name" },
  },
  invoke = function(args, ctx)
    ctx:complete("Hello, " .. args.name .. "!")
  end,
})
"#;

/// One report's figures.
struct Sample {
    lua: u64,
    linear: u64,
    rss: u64,
}

/// Runs the long soak and prints its reports.
pub async fn run(options: Options) -> anyhow::Result<()> {
    let plugins = tempfile::TempDir::new().context("plugin directory")?;
    let root = tempfile::TempDir::new().context("file root")?;
    std::fs::write(plugins.path().join("hello.lua"), PLUGIN).context("writing the plugin")?;
    let runtime = Runtime::builder()
        .plugin_dir(plugins.path())
        .root(root.path())
        .limits(Limits::default().with_memory(options.memory_mib * MIB))
        .debug_log(None)
        .build()
        .await
        .context("loading the plugin")?;
    if let Some(diagnostic) = runtime.diagnostics().first() {
        bail!("the soak plugin did not load: {diagnostic}");
    }
    println!(
        "one plugin, {} calls, memory limit {} MiB",
        options.calls, options.memory_mib
    );
    let first = sample(&runtime).await?;
    println!(
        "{:>9} {:>9} {:>10} {:>12} {:>14} {:>9}",
        "calls", "seconds", "calls/s", "Lua KiB", "linear KiB", "RSS MiB"
    );
    print_row(0, 0.0, None, &first);
    let mut samples = vec![first];
    let begun = Instant::now();
    let mut interval_start = Instant::now();
    let mut in_flight = VecDeque::with_capacity(options.concurrency);
    for number in 1..=options.calls {
        if in_flight.len() == options.concurrency.max(1) {
            finish(in_flight.pop_front()).await?;
        }
        let call = runtime
            .call("hello", r#"{"name":"soak"}"#)
            .context("calling hello")?;
        in_flight.push_back((number, call));
        if number % options.report_every == 0 {
            while !in_flight.is_empty() {
                finish(in_flight.pop_front()).await?;
            }
            let rate = options.report_every as f64 / interval_start.elapsed().as_secs_f64();
            let now = sample(&runtime).await?;
            print_row(number, begun.elapsed().as_secs_f64(), Some(rate), &now);
            samples.push(now);
            interval_start = Instant::now();
        }
    }
    verdict(&samples, &options)
}

/// Waits for a call; any failure ends the soak.
async fn finish(call: Option<(u64, Call)>) -> anyhow::Result<()> {
    if let Some((number, call)) = call {
        let outcome = call.await;
        if !outcome.is_completed() {
            bail!("call {number} failed: {}", outcome.to_model_text());
        }
    }
    Ok(())
}

async fn sample(runtime: &Runtime) -> anyhow::Result<Sample> {
    let memory = runtime
        .memory("hello")
        .context("the plugin is not loaded")?
        .await;
    let Some(MemoryUse {
        lua: Some(lua),
        linear,
    }) = memory
    else {
        bail!("the plugin's instance reports no Lua memory");
    };
    Ok(Sample {
        lua,
        linear,
        rss: measure::rss_kib().0 * 1024,
    })
}

fn print_row(calls: u64, seconds: f64, rate: Option<f64>, sample: &Sample) {
    let rate = rate.map_or_else(|| "-".to_string(), |rate| format!("{rate:.0}"));
    println!(
        "{calls:>9} {seconds:>9.1} {rate:>10} {:>12.1} {:>14} {:>9.1}",
        sample.lua as f64 / 1024.0,
        sample.linear / 1024,
        sample.rss as f64 / MIB as f64
    );
}

/// Compares the last report with the warm baseline.
fn verdict(samples: &[Sample], options: &Options) -> anyhow::Result<()> {
    let (Some(baseline), Some(last)) = (
        samples.get(options.warm_up_reports as usize),
        samples.last(),
    ) else {
        println!("too few reports to judge");
        return Ok(());
    };
    let lua_growth = last.lua as i64 - baseline.lua as i64;
    let rss_growth = last.rss as i64 - baseline.rss as i64;
    println!(
        "after warm-up: Lua memory {:+.1} KiB, linear memory {:+} KiB, RSS {:+.1} MiB",
        lua_growth as f64 / 1024.0,
        (last.linear as i64 - baseline.linear as i64) / 1024,
        rss_growth as f64 / MIB as f64
    );
    if lua_growth > (options.max_lua_growth_kib * 1024) as i64 {
        bail!(
            "the plugin's Lua memory grew by more than {} KiB",
            options.max_lua_growth_kib
        );
    }
    if rss_growth > (options.max_rss_growth_mib * MIB) as i64 {
        bail!(
            "the host's RSS grew by more than {} MiB",
            options.max_rss_growth_mib
        );
    }
    println!("flat after warm-up");
    Ok(())
}
