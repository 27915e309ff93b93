//! `toolcell-bench`: measurements too long or too noisy for `cargo test`, run with
//! `cargo run --release -p toolcell-bench -- SUBCOMMAND`:
//!
//! - `compare`: toolcell against native mlua (clm's design), side by side, one table;
//! - `soak`: many calls over many plugins, some hostile, with the host's RSS;
//! - `long-soak`: a million calls of one plugin, with its Lua memory and the host's RSS.
//!
//! Each subcommand lives in its own module; this file only dispatches.

mod aot;
mod compare;
mod long_soak;
mod measure;
mod native;
mod probe;
mod soak;
mod workloads;

use clap::{Parser, Subcommand};

/// toolcell's benchmarks.
#[derive(Parser)]
#[command(name = "toolcell-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Many calls over many plugins, some hostile: calls/s and the host's RSS as it goes.
    Soak(soak::Options),
    /// A million calls of one plugin: its Lua memory and the host's RSS as it goes.
    LongSoak(long_soak::Options),
    /// Run every workload on native mlua and on toolcell and print one table.
    Compare {
        /// Measured runs per compute workload (the median is reported).
        #[arg(long, default_value_t = 7)]
        runs: usize,
        /// Calls per trivial-call measurement.
        #[arg(long, default_value_t = 20_000)]
        calls: usize,
        /// Only these sections (compute, calls, loads, aot); all when not given.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        #[command(flatten)]
        engine: EngineFlags,
    },
    /// One measurement in a process of its own (used by `compare`).
    #[command(hide = true)]
    Probe {
        kind: String,
        #[command(flatten)]
        engine: EngineFlags,
    },
}

/// Engine settings to vary, to measure what each costs or buys.
#[derive(clap::Args, Clone, Copy, Default)]
pub struct EngineFlags {
    /// Turn fuel metering off, and with it the CPU cap per call and the hard deadline:
    /// the cost of wasm alone.
    #[arg(long)]
    no_fuel: bool,
    /// Allocate instances on demand instead of from the pooling allocator.
    #[arg(long)]
    no_pooling: bool,
    /// Build the Lua state in every plugin instance instead of starting from the
    /// snapshot of the prepared Lua runtime.
    #[arg(long)]
    no_snapshot: bool,
    /// Write a perf map of compiled wasm code (for `perf record`).
    #[arg(long)]
    perf_map: bool,
}

impl EngineFlags {
    /// The engine options these flags ask for, without a compiled-code cache.
    pub fn options(self) -> toolcell::engine::Options {
        toolcell::engine::Options {
            fuel: !self.no_fuel,
            pooling: !self.no_pooling,
            perf_map: self.perf_map,
            snapshot: !self.no_snapshot,
            ..toolcell::engine::Options::default()
        }
    }

    /// The engine these flags ask for, with the compiled-code cache the `toolcell`
    /// command uses: every runtime of one measurement runs on it, as every runtime of
    /// an embedding agent would.
    pub fn engine(self) -> toolcell::Engine {
        toolcell::cli::environment::engine(self.options()).expect("the engine")
    }

    /// The same flags, for a child process.
    pub fn args(self) -> Vec<&'static str> {
        [
            (self.no_fuel, "--no-fuel"),
            (self.no_pooling, "--no-pooling"),
            (self.no_snapshot, "--no-snapshot"),
            (self.perf_map, "--perf-map"),
        ]
        .into_iter()
        .filter_map(|(on, flag)| on.then_some(flag))
        .collect()
    }
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Soak(options) => multi_thread()?.block_on(soak::run(options)),
        Command::LongSoak(options) => multi_thread()?.block_on(long_soak::run(options)),
        Command::Compare {
            runs,
            calls,
            only,
            engine,
        } => {
            let options = compare::Options {
                runs,
                calls,
                only,
                engine,
            };
            block_on(compare::run(&options))
        }
        Command::Probe { kind, engine } => block_on(probe::run(&kind, engine)),
    }
}

/// A multi-threaded tokio runtime, as the CLI runs on.
fn multi_thread() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Runs a measurement on a multi-threaded tokio runtime, as the CLI does (or on a
/// current-thread one with `BENCH_CURRENT_THREAD` set, to compare).
fn block_on(measurement: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
    let runtime = if std::env::var_os("BENCH_CURRENT_THREAD").is_some() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    };
    runtime?.block_on(measurement);
    Ok(())
}
