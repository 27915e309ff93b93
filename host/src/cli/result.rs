//! `toolcell result`: print the whole output of a result the model saw cut, or the bytes
//! of a part it got as a link.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{environment, usage_error};
use crate::base::wording::terminal_safe;
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
    match store.get_bytes(&args.id) {
        Ok(data) => {
            let mut stdout = std::io::stdout().lock();
            // On a terminal, the plugin's control characters are escaped; piped, its
            // bytes are kept.
            let shown: Cow<'_, [u8]> = if stdout.is_terminal() {
                Cow::Owned(
                    terminal_safe(&String::from_utf8_lossy(&data))
                        .into_owned()
                        .into_bytes(),
                )
            } else {
                Cow::Borrowed(&data)
            };
            match stdout.write_all(&shown).and_then(|()| stdout.flush()) {
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
