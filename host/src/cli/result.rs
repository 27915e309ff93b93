//! `toolcell result`: print the whole output of a result the model saw cut.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{environment, output_for_stdout, usage_error};
use crate::config::Config;
use crate::output::results::ResultError;

#[derive(Args)]
pub(super) struct ResultArgs {
    /// The configuration file whose `[output] results_dir` names the result store.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The result's id, as the notice at the end of the cut result gives it.
    id: String,
}

/// Prints the whole output and exits 0; exits 1 when there is no such result, 2 for a
/// malformed id or configuration.
pub(super) fn run(args: ResultArgs) -> ExitCode {
    let config = match &args.config {
        Some(path) => match Config::load(path) {
            Ok(config) => config,
            Err(error) => return usage_error(&error.to_string()),
        },
        None => Config::default(),
    };
    let cache = environment::code_cache();
    let Some(store) = config.result_store(cache.dir()) else {
        eprintln!(
            "error: no result store is set (the cache is off and no results_dir is configured)"
        );
        return ExitCode::FAILURE;
    };
    match store.get(&args.id) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(output_for_stdout(&text).as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(error @ ResultError::BadId(_)) => usage_error(&error.to_string()),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
