//! `toolcell-bench`: measurements too long or too noisy for `cargo test`, run with
//! `cargo run --release -p toolcell-bench -- SUBCOMMAND`. Each subcommand lives in its
//! own module; this file only dispatches.

mod rss;
mod soak;

use clap::{Parser, Subcommand};

/// toolcell's benchmarks.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Many calls over many plugins, some hostile: calls/s and the host's RSS as it goes.
    Soak(soak::Options),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Soak(options) => soak::run(options),
    }
}
