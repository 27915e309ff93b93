//! The `toolcell` command line.
//!
//! Exit codes: 0 when the command (or the tool) succeeded, 1 when the tool ran and
//! failed, 2 for usage errors (unknown tool, bad arguments, missing directory, bad
//! config). Results go to stdout; logs and diagnostics go to stderr.

mod call;
mod check;
pub mod environment;
mod inspect;
mod list;
mod new;
mod pack;
mod prompt;
#[cfg(feature = "oci")]
mod registry;
mod result;
pub mod scaffold;
mod serve;
mod sign;

use std::borrow::Cow;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::artifact::integrity::Pins;
use crate::base::atomic_file::{Readers, write_atomically};
use crate::base::wording::terminal_safe;
use crate::config::{Config, HttpSection};
use crate::engine::Options;
use crate::output::envelope::UntrustedOutput;
use crate::policy::{CommandLineRules, Verdict};
use crate::services::files::FileAccess;
use crate::services::http::HostGrant;
use crate::{Runtime, RuntimeBuilder, Scope, Session};

/// Exit code of a usage error.
const USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "toolcell",
    version,
    about = "Run AI-agent tool plugins inside WebAssembly sandboxes"
)]
struct Cli {
    /// More log output on stderr (-v: info, -vv: debug). RUST_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Invoke one tool and print its result.
    Call(call::CallArgs),
    /// List the tools of the loaded plugins.
    List(list::ListArgs),
    /// Load plugins exactly as `call` would and report every problem (exit 1 on errors).
    Check(check::CheckArgs),
    /// Write a new plugin project (Lua, Rust, JavaScript or Python) to start from.
    New(new::NewArgs),
    /// Pack a Lua plugin (or a component and a manifest) into one .wasm file.
    Pack(pack::PackArgs),
    /// Print the whole output of a result the model saw cut (its id is in the notice).
    Result(result::ResultArgs),
    /// Show a plugin file's id, version, tools, capabilities, WIT version and digest.
    Inspect(inspect::InspectArgs),
    /// Sign a .wasm plugin with an Ed25519 key.
    Sign(sign::SignArgs),
    /// Check a .wasm plugin's signatures against trusted keys (exit 1 unless trusted).
    Verify(sign::VerifyArgs),
    /// Create an Ed25519 signing key and print its public key.
    Keygen(sign::KeygenArgs),
    /// Serve the tools of the loaded plugins to MCP clients (stdio, or streamable HTTP).
    Serve(serve::ServeArgs),
    /// Push a .wasm plugin to an OCI registry (the CNCF Wasm artifact layout).
    #[cfg(feature = "oci")]
    Push(registry::PushArgs),
    /// Pull a plugin from an OCI registry into a directory, after checking it.
    #[cfg(feature = "oci")]
    Pull(registry::PullArgs),
    /// Install a plugin from an OCI registry and record it in the lock file; without a
    /// reference, re-install exactly what the lock file records.
    #[cfg(feature = "oci")]
    Install(registry::InstallArgs),
}

/// Where plugins come from and what they may touch; shared by every command that
/// loads plugins.
#[derive(Args, Debug)]
struct PluginArgs {
    /// A directory of plugins (*.lua, *.wasm); repeatable. Default: ~/.config/toolcell/plugins
    #[arg(long = "plugins", value_name = "DIR")]
    plugins: Vec<PathBuf>,
    /// A TOML configuration file ([tools.NAME] tables become clm.config; see docs/configuration.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// One directory tree every plugin may read and write (clm.read_file /
    /// clm.write_file), shared. Default: the config's [files] root, else each plugin its
    /// own directory, $XDG_DATA_HOME/toolcell/data/ID (a plugin's [plugins.ID.files]
    /// root wins over both)
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Let plugins reach HOST (any port) or HOST:PORT even if it is loopback, private or
    /// link-local; `*.domain` matches subdomains. Repeatable.
    #[arg(long = "allow-http", value_name = "HOST[:PORT]")]
    allow_http: Vec<HostGrant>,
    /// Time limit of one HTTP request, body included, in ms [default: 30000, or the config's]
    #[arg(long, value_name = "MS")]
    http_timeout_ms: Option<u64>,
    /// Largest HTTP response body accepted, in bytes [default: 4194304 (4 MiB), or the config's]
    #[arg(long, value_name = "BYTES")]
    http_max_response_bytes: Option<u64>,
    /// Redirects followed per HTTP request [default: 5, or the config's]
    #[arg(long, value_name = "N")]
    http_max_redirects: Option<usize>,
    /// The most file access any plugin gets: none, read-only or read-write [default:
    /// the config's, else read-write]; a plugin gets no more than its manifest asks for
    #[arg(long, value_name = "ACCESS")]
    files: Option<FileAccess>,
    /// A lock file (`sha256sum` output): every plugin file must match its entry
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// Every plugin file must have one of these SHA-256 digests; repeatable
    #[arg(long = "require-sha256", value_name = "HEX")]
    require_sha256: Vec<String>,
    /// Run the tools matching GLOB without asking: a name, a path PLUGIN-ID/TOOL (`*`
    /// within a segment, `**` across) or a $preset; repeatable. Before [permissions]
    #[arg(long = "allow", value_name = "GLOB")]
    allow: Vec<String>,
    /// Ask before running the tools matching GLOB; repeatable
    #[arg(long = "ask", value_name = "GLOB")]
    ask: Vec<String>,
    /// Refuse the tools matching GLOB and leave them out of every list; repeatable
    #[arg(long = "deny", value_name = "GLOB")]
    deny: Vec<String>,
}

impl PluginArgs {
    /// Loads the plugins as the arguments say. Errors are usage errors.
    fn load(&self, tokio_rt: &tokio::runtime::Runtime) -> Result<Runtime, String> {
        self.load_with(tokio_rt, &[])
    }

    /// Loads the plugins of `--plugins` and of `extra_dirs`.
    fn load_with(
        &self,
        tokio_rt: &tokio::runtime::Runtime,
        extra_dirs: &[PathBuf],
    ) -> Result<Runtime, String> {
        let builder = self.builder(extra_dirs)?;
        tokio_rt
            .block_on(builder.build())
            .map_err(|error| error.to_string())
    }

    /// The runtime's builder for the plugins of `--plugins` and of `extra_dirs`, with
    /// every option applied, on an engine that keeps compiled code where the
    /// environment says. Errors are usage errors.
    fn builder(&self, extra_dirs: &[PathBuf]) -> Result<RuntimeBuilder, String> {
        let engine = environment::engine(Options::default()).map_err(|error| error.to_string())?;
        // Without any permission configuration every tool runs, as it always has on the
        // command line; `[permissions] default` changes that.
        let mut builder = RuntimeBuilder::default()
            .engine(engine)
            .debug_log(environment::debug_log())
            .permission_default(Verdict::Allow)
            .permission_rules(CommandLineRules {
                allow: self.allow.clone(),
                ask: self.ask.clone(),
                deny: self.deny.clone(),
            });
        if let Some(path) = &self.config {
            builder = builder.config(Config::load(path).map_err(|error| error.to_string())?);
        }
        let dirs = if self.plugins.is_empty() && extra_dirs.is_empty() {
            vec![default_plugin_dir()?]
        } else {
            self.plugins.iter().chain(extra_dirs).cloned().collect()
        };
        for dir in dirs {
            builder = builder.plugin_dir(dir);
        }
        if let Some(root) = &self.root {
            builder = builder.root(root.clone());
        }
        if let Some(dir) = environment::data_dir() {
            builder = builder.data_dir(dir);
        }
        for grant in &self.allow_http {
            builder = builder.allow_http(grant.clone());
        }
        builder = builder.http_overrides(HttpSection {
            timeout_ms: self.http_timeout_ms,
            max_response_bytes: self.http_max_response_bytes,
            max_redirects: self.http_max_redirects,
            ..HttpSection::default()
        });
        if let Some(access) = self.files {
            builder = builder.file_access(access);
        }
        let mut pins = Pins::default();
        if let Some(lock) = &self.lock {
            pins.load_lock(lock).map_err(|error| error.to_string())?;
        }
        for digest in &self.require_sha256 {
            pins.require(digest)
                .map_err(|error| format!("--require-sha256: {error}"))?;
        }
        Ok(builder.pins(pins))
    }
}

/// Which tools a model sees: shared by `call`, `list` and `serve`.
#[derive(Args, Debug)]
struct ScopeArgs {
    /// Only the tools GLOB matches: names, aliases or PLUGIN-ID/TOOL paths (`*` stays
    /// within a path segment, `**` crosses them); `!GLOB` removes. Repeatable, read in
    /// order. Default: every tool
    #[arg(long = "tools", value_name = "GLOB")]
    tools: Vec<String>,
}

impl ScopeArgs {
    /// The scope the arguments give. Errors are usage errors.
    fn scope(&self) -> Result<Scope, String> {
        Scope::parse(self.tools.iter().map(String::as_str))
            .map_err(|error| format!("--tools: {error}"))
    }

    /// A session of `runtime` with this scope; a glob that matches no tool is a
    /// warning that names it.
    fn session(&self, runtime: &Runtime) -> Result<Session, String> {
        let session = Session::new().with_scope(self.scope()?);
        warn_unmatched(&session, runtime);
        Ok(session)
    }
}

/// Warns about each glob of `session`'s scope that matches no tool of `runtime`.
fn warn_unmatched(session: &Session, runtime: &Runtime) {
    for glob in session.unmatched_globs(runtime) {
        tracing::warn!("--tools {glob} matches no tool");
    }
}

/// How untrusted output reaches the model: shared by `call` and `serve`.
#[derive(Args, Debug)]
struct OutputArgs {
    /// How the output of plugins not exempt in the config reaches the model: plain, or
    /// inside <untrusted_output_NONCE> tags [default: the config's [output] untrusted,
    /// else plain]
    #[arg(long, value_name = "MODE")]
    untrusted_output: Option<UntrustedOutput>,
}

impl OutputArgs {
    fn apply(&self, builder: RuntimeBuilder) -> RuntimeBuilder {
        match self.untrusted_output {
            Some(mode) => builder.untrusted_output(mode),
            None => builder,
        }
    }
}

fn default_plugin_dir() -> Result<PathBuf, String> {
    let home =
        std::env::var_os("HOME").ok_or("no --plugins directory given and HOME is not set")?;
    Ok(PathBuf::from(home).join(".config/toolcell/plugins"))
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { USAGE } else { 0 });
        }
    };
    // `check`, `inspect` and `pack` print every diagnostic themselves; the log would
    // repeat them.
    let quiet = matches!(
        cli.command,
        Command::Check(_) | Command::Inspect(_) | Command::Pack(_)
    );
    init_logging(cli.verbose, quiet);
    let tokio_rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(tokio_rt) => tokio_rt,
        Err(error) => return usage_error(&format!("cannot start the async runtime: {error}")),
    };
    let code = match cli.command {
        Command::Call(args) => call::run(&tokio_rt, args),
        Command::List(args) => list::run(&tokio_rt, args),
        Command::Check(args) => check::run(&tokio_rt, args),
        Command::New(args) => new::run(args),
        Command::Pack(args) => pack::run(&tokio_rt, args),
        Command::Inspect(args) => inspect::run(&tokio_rt, args),
        Command::Result(args) => result::run(args),
        Command::Sign(args) => sign::sign(args),
        Command::Verify(args) => sign::verify(args),
        Command::Keygen(args) => sign::keygen(args),
        Command::Serve(args) => serve::run(&tokio_rt, args),
        #[cfg(feature = "oci")]
        Command::Push(args) => registry::push(&tokio_rt, args),
        #[cfg(feature = "oci")]
        Command::Pull(args) => registry::pull(&tokio_rt, args),
        #[cfg(feature = "oci")]
        Command::Install(args) => registry::install(&tokio_rt, args),
    };
    // Plugins may have timers or requests pending; do not wait for them.
    tokio_rt.shutdown_background();
    code
}

fn init_logging(verbose: u8, quiet: bool) {
    // The MCP SDK logs every error response it sends (an unknown tool, a cancelled
    // call) as a warning; those are the client's business, not the log's.
    // A first compilation's notice is shown at every level: without it a first run
    // seems to hang.
    let default = match verbose {
        0 if quiet => "error",
        0 => "warn,rmcp=error",
        1 => "info",
        _ => "debug",
    };
    let default = format!("{default},{}=info", crate::engine::cache::NOTICE_TARGET);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .with_target(false)
        .try_init();
}

/// A plugin's output as `call` and `result` print it: its bytes when piped; on a
/// terminal, its control characters escaped, so that it cannot drive the terminal.
fn output_for_stdout(text: &str) -> Cow<'_, str> {
    if std::io::stdout().is_terminal() {
        terminal_safe(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// Prints a usage error and returns its exit code. The message may quote a plugin
/// (why its tool is unavailable, its schema): its control characters are escaped.
fn usage_error(message: &str) -> ExitCode {
    eprintln!("error: {}", terminal_safe(message));
    ExitCode::from(USAGE)
}
