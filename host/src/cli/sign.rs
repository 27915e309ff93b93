//! `toolcell sign`, `toolcell verify` and `toolcell keygen`: Ed25519 signatures over
//! plugin artifacts.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{Readers, usage_error, write_atomically};
use crate::artifact::Artifact;
use crate::artifact::signature::{
    self, PublicKey, SIGNING_UNAVAILABLE, SecretKey, TrustPolicy, Verdict,
};
use crate::config::Config;

#[derive(Args)]
pub(super) struct SignArgs {
    /// The Ed25519 secret key (PKCS#8 PEM, as `toolcell keygen` writes it).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// The .wasm plugin to sign.
    file: PathBuf,
    /// Where to write the signed artifact [default: the file itself]
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
pub(super) struct VerifyArgs {
    /// The .wasm plugin to verify.
    file: PathBuf,
    /// A trusted public key (base64), besides the config's [trust] keys; repeatable.
    #[arg(long = "key", value_name = "BASE64")]
    keys: Vec<PublicKey>,
    /// A TOML configuration file whose [trust] keys are trusted.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Args)]
pub(super) struct KeygenArgs {
    /// Where to write the new secret key (PKCS#8 PEM, readable only by you).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

/// Appends a signature; prints the signer's public key.
pub(super) fn sign(args: SignArgs) -> ExitCode {
    let key = match std::fs::read_to_string(&args.key) {
        Ok(text) => match SecretKey::from_pem(&text) {
            Ok(key) => key,
            Err(error) => return usage_error(&format!("{}: {error}", args.key.display())),
        },
        Err(error) => return usage_error(&format!("cannot read {}: {error}", args.key.display())),
    };
    let signed = match with_artifact(&args.file, |artifact| signature::sign(&artifact, &key)) {
        Ok(signed) => signed,
        Err(message) => return usage_error(&message),
    };
    let output = args.output.unwrap_or(args.file);
    if let Err(error) = write_atomically(&output, &signed, Readers::Everyone) {
        return usage_error(&error.to_string());
    }
    println!("signed {} with key {}", output.display(), key.public());
    ExitCode::SUCCESS
}

/// Prints each valid signature and whether its key is trusted; exits 0 only when a
/// trusted key signed the artifact and no signature is invalid.
pub(super) fn verify(args: VerifyArgs) -> ExitCode {
    let mut trust = match &args.config {
        Some(path) => match Config::load(path) {
            Ok(config) => config.trust,
            Err(error) => return usage_error(&error.to_string()),
        },
        None => TrustPolicy::default(),
    };
    trust.keys.extend(args.keys);
    if trust.keys.is_empty() {
        return usage_error("no trusted keys: give --key or a --config with [trust] keys");
    }
    let verdict = match with_artifact(&args.file, |artifact| trust.judge(&artifact)) {
        Ok(verdict) => verdict,
        Err(message) => return usage_error(&message),
    };
    let file = args.file.display();
    match verdict {
        Verdict::Trusted(key) => {
            println!("{file}: signed by trusted key {key}");
            ExitCode::SUCCESS
        }
        Verdict::Untrusted(keys) => {
            for key in keys {
                println!("{file}: valid signature by {key}, which is not trusted");
            }
            ExitCode::FAILURE
        }
        Verdict::Unsigned => {
            println!("{file}: not signed");
            ExitCode::FAILURE
        }
        Verdict::Invalid(message) => {
            println!("{file}: INVALID: {message}");
            ExitCode::FAILURE
        }
        Verdict::Unchecked => {
            println!("{file}: not checked: {SIGNING_UNAVAILABLE}");
            ExitCode::FAILURE
        }
    }
}

/// Writes a new secret key (never over an existing file) and prints its public key.
pub(super) fn keygen(args: KeygenArgs) -> ExitCode {
    if args.output.exists() {
        return usage_error(&format!(
            "{} exists; keygen never overwrites a key",
            args.output.display()
        ));
    }
    let key = SecretKey::generate();
    let pem = match key.to_pem() {
        Ok(pem) => pem,
        Err(error) => return usage_error(&error.to_string()),
    };
    if let Err(error) = write_atomically(&args.output, pem.as_bytes(), Readers::Owner) {
        return usage_error(&error.to_string());
    }
    println!("{}", key.public());
    ExitCode::SUCCESS
}

/// Reads and parses the artifact at `path` and hands it to `use_it`; the error is the
/// line to print.
fn with_artifact<T>(
    path: &std::path::Path,
    use_it: impl FnOnce(Artifact<'_>) -> T,
) -> Result<T, String> {
    let bytes =
        std::fs::read(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let artifact =
        Artifact::parse(&bytes).map_err(|error| format!("{}: {error}", path.display()))?;
    Ok(use_it(artifact))
}
