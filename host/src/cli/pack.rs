//! `toolcell pack`: one self-contained `.wasm` from a Lua plugin, or a component and a
//! manifest.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{Readers, environment, usage_error, write_atomically};
use crate::Severity;
use crate::artifact::manifest;
use crate::distribution::pack;
use crate::engine::Options;
use crate::engine::cache::sha256_hex;

#[derive(Args)]
pub(super) struct PackArgs {
    /// The plugin: a .lua script, or a .wasm component.
    input: PathBuf,
    /// Where to write the artifact [default: beside a .lua, ID.wasm (`acme+notes.wasm`
    /// for `acme/notes`), the only name it loads under; the input itself for a .wasm]
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The manifest (TOML) to embed [default: NAME.lua.toml beside a .lua if present,
    /// else the defaults; the component's own for a .wasm]
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// Write a Lua plugin without loading it first. By default it is loaded once, as
    /// `check` does (with no files to touch), and not written if that reports an error.
    #[arg(long)]
    no_check: bool,
}

pub(super) fn run(tokio_rt: &tokio::runtime::Runtime, args: PackArgs) -> ExitCode {
    let packed = match pack::pack_file(&args.input, args.manifest.as_deref()) {
        Ok(packed) => packed,
        Err(error) => return usage_error(&error.to_string()),
    };
    let is_lua = args
        .input
        .extension()
        .is_some_and(|extension| extension == "lua");
    // Beside a .lua, the file name the id loads under (`acme+notes.wasm`).
    let output = args.output.unwrap_or_else(|| {
        if is_lua {
            args.input
                .with_file_name(manifest::file_name_of(&packed.manifest.id, "wasm"))
        } else {
            args.input.clone()
        }
    });
    if is_lua && !args.no_check {
        let file_name = output
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plugin.wasm".to_string());
        let engine = match environment::engine(Options::default()) {
            Ok(engine) => engine,
            Err(error) => return usage_error(&error.to_string()),
        };
        let diagnostics = match tokio_rt.block_on(pack::check(&packed.bytes, &file_name, &engine)) {
            Ok(diagnostics) => diagnostics,
            Err(error) => return usage_error(&error.to_string()),
        };
        for diagnostic in &diagnostics {
            eprintln!(
                "{}[{}] {}",
                diagnostic.severity.as_str(),
                diagnostic.kind.code(),
                diagnostic.message
            );
        }
        let errors = diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.severity == Severity::Error)
            .count();
        if errors > 0 {
            eprintln!(
                "error: {} was not written: loading the plugin reported {errors} error{} (see above)",
                output.display(),
                if errors == 1 { "" } else { "s" }
            );
            return ExitCode::FAILURE;
        }
    }
    if let Some(parent) = output
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        && let Err(error) = std::fs::create_dir_all(parent)
    {
        return usage_error(&format!("cannot create {}: {error}", parent.display()));
    }
    if let Err(error) = write_atomically(&output, &packed.bytes, Readers::Everyone) {
        return usage_error(&error.to_string());
    }
    let loads_as = manifest::file_name_of(&packed.manifest.id, "wasm");
    if output
        .file_name()
        .is_some_and(|name| name != loads_as.as_str())
    {
        eprintln!(
            "warning: {} does not load under this name: a .wasm plugin is named after its id, \
             {loads_as}",
            output.display()
        );
    }
    if packed.dropped_signatures > 0 {
        eprintln!(
            "warning: dropped {} signature(s) that no longer match; sign {} again",
            packed.dropped_signatures,
            output.display()
        );
    }
    println!(
        "packed {} {} into {} ({} bytes, sha256 {})",
        packed.manifest.id,
        packed.manifest.version,
        output.display(),
        packed.bytes.len(),
        sha256_hex(&packed.bytes)
    );
    ExitCode::SUCCESS
}
