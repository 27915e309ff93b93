//! `toolcell pack`: one self-contained `.wasm` from a Lua plugin, or a component and a
//! manifest.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{Readers, usage_error, write_atomically};
use crate::cache::sha256_hex;
use crate::pack;

#[derive(Args)]
pub(super) struct PackArgs {
    /// The plugin: a .lua script, or a .wasm component.
    input: PathBuf,
    /// Where to write the artifact [default: NAME.wasm beside a .lua; the input itself
    /// for a .wasm]
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The manifest (TOML) to embed [default: NAME.lua.toml beside a .lua if present,
    /// else the defaults; the component's own for a .wasm]
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
}

pub(super) fn run(args: PackArgs) -> ExitCode {
    let packed = match pack::pack_file(&args.input, args.manifest.as_deref()) {
        Ok(packed) => packed,
        Err(error) => return usage_error(&error.to_string()),
    };
    let output = args.output.unwrap_or_else(|| {
        if args
            .input
            .extension()
            .is_some_and(|extension| extension == "lua")
        {
            args.input.with_extension("wasm")
        } else {
            args.input.clone()
        }
    });
    if let Err(error) = write_atomically(&output, &packed.bytes, Readers::Everyone) {
        return usage_error(&error.to_string());
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
