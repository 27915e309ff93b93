//! `toolcell push`, `pull` and `install`: plugins to and from OCI registries.
//!
//! Exit codes: 0 done; 1 when the registry failed or refused, or the artifact failed a
//! check (nothing was written); 2 for usage errors (a bad reference, a file that is
//! not a plugin, unreadable credentials, configuration or lock file).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{USAGE, default_plugin_dir, usage_error};
use crate::artifact::signature::{PublicKey, TrustPolicy};
use crate::base::wording::terminal_safe;
use crate::config::Config;
use crate::distribution::{
    self, ArtifactRef, DEFAULT_MAX_ARTIFACT_BYTES, DistributionError, Installed, Installer,
    RegistryOptions,
};

/// How to reach registries; shared by the three commands.
#[derive(Args)]
struct RegistryArgs {
    /// Speak plain HTTP to the registry, not HTTPS (a registry on this machine,
    /// localhost or 127.0.0.0/8 or [::1], always gets plain HTTP).
    #[arg(long)]
    plain_http: bool,
}

impl RegistryArgs {
    fn options(&self, max_artifact_bytes: u64) -> RegistryOptions {
        RegistryOptions {
            plain_http: self.plain_http,
            max_artifact_bytes,
            ..RegistryOptions::default()
        }
    }
}

/// What a pull must satisfy; shared by `pull` and `install`.
#[derive(Args)]
struct CheckArgs {
    /// A TOML configuration file whose [trust] policy the pulled plugin must satisfy.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The largest artifact pulled, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_ARTIFACT_BYTES)]
    max_artifact_bytes: u64,
}

impl CheckArgs {
    fn trust(&self) -> Result<TrustPolicy, String> {
        match &self.config {
            Some(path) => Config::load(path)
                .map(|config| config.trust)
                .map_err(|error| error.to_string()),
            None => Ok(TrustPolicy::default()),
        }
    }
}

#[derive(Args)]
pub(super) struct PushArgs {
    /// The plugin file (.wasm, packed and signed as it should be installed).
    file: PathBuf,
    /// Where to push it: REGISTRY/REPOSITORY:TAG.
    reference: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

#[derive(Args)]
pub(super) struct PullArgs {
    /// What to pull: REGISTRY/REPOSITORY:TAG, or REGISTRY/REPOSITORY[:TAG]@sha256:DIGEST.
    reference: String,
    /// The directory to write the plugin to, as ID.wasm (created if missing).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    #[command(flatten)]
    checks: CheckArgs,
    #[command(flatten)]
    registry: RegistryArgs,
}

#[derive(Args)]
pub(super) struct InstallArgs {
    /// What to install: REGISTRY/REPOSITORY:TAG or ...@sha256:DIGEST. Without it,
    /// re-install exactly what the lock file records.
    reference: Option<String>,
    /// The plugin directory to install into (created if missing). Default:
    /// ~/.config/toolcell/plugins
    #[arg(long = "plugins", value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// The lock file recording what is installed [default: toolcell.lock in the plugin
    /// directory]
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    #[command(flatten)]
    checks: CheckArgs,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub(super) fn push(tokio_rt: &tokio::runtime::Runtime, args: PushArgs) -> ExitCode {
    let reference = match parse_reference(&args.reference) {
        Ok(reference) => reference,
        Err(code) => return code,
    };
    let bytes = match std::fs::read(&args.file) {
        Ok(bytes) => bytes,
        Err(error) => {
            return usage_error(&format!("cannot read {}: {error}", args.file.display()));
        }
    };
    let options = args.registry.options(DEFAULT_MAX_ARTIFACT_BYTES);
    match tokio_rt.block_on(distribution::push(&reference, &bytes, &options)) {
        Ok(pushed) => {
            println!(
                "pushed {} to {} (layer sha256:{})",
                args.file.display(),
                pushed.reference,
                pushed.layer_digest.trim_start_matches("sha256:")
            );
            ExitCode::SUCCESS
        }
        Err(error) => failure(&error),
    }
}

pub(super) fn pull(tokio_rt: &tokio::runtime::Runtime, args: PullArgs) -> ExitCode {
    let reference = match parse_reference(&args.reference) {
        Ok(reference) => reference,
        Err(code) => return code,
    };
    let trust = match args.checks.trust() {
        Ok(trust) => trust,
        Err(message) => return usage_error(&message),
    };
    let options = args.registry.options(args.checks.max_artifact_bytes);
    match tokio_rt.block_on(distribution::pull_into(
        &reference,
        &args.output,
        &options,
        &trust,
    )) {
        Ok(installed) => {
            report("pulled", &installed);
            ExitCode::SUCCESS
        }
        Err(error) => failure(&error),
    }
}

pub(super) fn install(tokio_rt: &tokio::runtime::Runtime, args: InstallArgs) -> ExitCode {
    let trust = match args.checks.trust() {
        Ok(trust) => trust,
        Err(message) => return usage_error(&message),
    };
    let plugin_dir = match args.plugins.map_or_else(default_plugin_dir, Ok) {
        Ok(dir) => dir,
        Err(message) => return usage_error(&message),
    };
    let installer = Installer {
        options: args.registry.options(args.checks.max_artifact_bytes),
        trust,
        lock: args
            .lock
            .unwrap_or_else(|| plugin_dir.join("toolcell.lock")),
        plugin_dir,
    };
    let result = match &args.reference {
        Some(text) => {
            let reference = match parse_reference(text) {
                Ok(reference) => reference,
                Err(code) => return code,
            };
            tokio_rt
                .block_on(installer.install(&reference))
                .map(|installed| vec![installed])
        }
        None => tokio_rt.block_on(installer.reinstall()),
    };
    match result {
        Ok(installed) => {
            for plugin in &installed {
                report("installed", plugin);
            }
            println!(
                "recorded in {} ({} plugin{})",
                installer.lock.display(),
                installed.len(),
                if installed.len() == 1 { "" } else { "s" }
            );
            ExitCode::SUCCESS
        }
        Err(error) => failure(&error),
    }
}

fn parse_reference(text: &str) -> Result<ArtifactRef, ExitCode> {
    text.parse()
        .map_err(|error: DistributionError| usage_error(&error.to_string()))
}

fn report(done: &str, plugin: &Installed) {
    for warning in &plugin.warnings {
        // A warning may quote the artifact's manifest.
        eprintln!("warning: {}: {}", plugin.id, terminal_safe(warning));
    }
    println!(
        "{done} {} {} from {} to {}, {}",
        plugin.id,
        plugin.version,
        plugin.reference,
        plugin.path.display(),
        signed_by(plugin.signer)
    );
}

fn signed_by(signer: Option<PublicKey>) -> String {
    match signer {
        Some(key) => format!("signed by trusted key {key}"),
        None => "not signed by a trusted key".to_string(),
    }
}

/// Prints the error (which may quote a registry or a manifest); usage errors exit 2,
/// everything else 1.
fn failure(error: &DistributionError) -> ExitCode {
    eprintln!("error: {}", terminal_safe(&error.to_string()));
    match error {
        DistributionError::Reference { .. }
        | DistributionError::NotAPlugin(_)
        | DistributionError::Credentials { .. }
        | DistributionError::Lock(_) => ExitCode::from(USAGE),
        _ => ExitCode::FAILURE,
    }
}
