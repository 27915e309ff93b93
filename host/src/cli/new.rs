//! `toolcell new`: write a plugin project to start from (see `crate::cli::scaffold`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::usage_error;
use crate::cli::scaffold::{self, Lang, Options};

#[derive(Args)]
pub(super) struct NewArgs {
    /// The plugin's name: its id, its tool's name and its directory (a-z, 0-9, '-', '_').
    name: String,
    /// The language of the plugin.
    #[arg(long, value_enum, default_value = "lua")]
    lang: Lang,
    /// Where to write the project (absent or empty) [default: ./NAME]
    #[arg(short, long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// A toolcell source checkout: a Rust project's `toolcell-guest` dependency, and the
    /// build scripts of JavaScript and Python projects [default: the checkout this
    /// toolcell was built from, if it is still there]
    #[arg(long, value_name = "DIR")]
    toolcell_src: Option<PathBuf>,
}

/// Writes the project and says what is where and what to run next.
pub(super) fn run(args: NewArgs) -> ExitCode {
    let options = Options {
        dir: args.output.unwrap_or_else(|| PathBuf::from(&args.name)),
        name: args.name,
        lang: args.lang,
        toolcell_src: args.toolcell_src,
    };
    let project = match scaffold::create(&options) {
        Ok(project) => project,
        Err(error) => return usage_error(&error.to_string()),
    };
    println!(
        "created {} plugin '{}' in {}:",
        options.lang.describe(),
        options.name,
        project.dir.display()
    );
    for file in &project.files {
        println!("  {}", file.display());
    }
    if let Some(dependency) = &project.guest_dependency {
        println!("Cargo.toml: {dependency}");
    }
    if project.toolcell_src.is_none() && options.lang != Lang::Lua {
        println!(
            "no toolcell source checkout was found: {}",
            match options.lang {
                Lang::Rust =>
                    "toolcell-guest comes from the repository by git; --toolcell-src DIR uses a checkout instead",
                _ => "set TOOLCELL_SRC to one before ./test.sh, or give --toolcell-src DIR",
            }
        );
    }
    println!("next:");
    for step in &project.next_steps {
        println!("  {step}");
    }
    ExitCode::SUCCESS
}
