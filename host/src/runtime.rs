//! The embedding API: load plugin directories into sandboxes, list their tools, and
//! invoke them.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! let runtime = toolcell::Runtime::builder().plugin_dir("examples/plugins").build().await?;
//! let outcome = runtime.invoke("hello", r#"{"name":"world"}"#).await?;
//! println!("{}", outcome.model_text());
//! # Ok(())
//! # }
//! ```

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::oneshot;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::bindings::ToolSpec;
use crate::cache::CodeCache;
use crate::config::{Config, HttpSection};
use crate::debug_log::DebugLog;
use crate::files::{FileAccess, FileRoot};
use crate::grants::{self, Allowed};
use crate::http::HostGrant;
use crate::integrity::Pins;
use crate::limits::{Limits, MAX_TOOLS_PER_PLUGIN, bounded_message};
use crate::manifest::Manifest;
use crate::sandbox::{
    self, CallOutcome, LoadFailure, PluginContext, PluginHandle, PluginPre, SharedServices,
    StoreState,
};
use crate::signature::TrustPolicy;
use crate::source::{self, Admission, Code, Refusal};
use crate::{engine, guest, schema};

/// A tool as a plugin registered it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The tool's name, unique across all loaded plugins.
    pub name: String,
    /// What the model reads about the tool.
    pub description: String,
    /// The JSON Schema of the arguments, if the plugin gave one.
    pub params_schema: Option<serde_json::Value>,
    /// The tool's own deadline, if it set one.
    pub timeout: Option<Duration>,
    /// Whether the tool skips the permission prompt.
    pub no_prompt: bool,
    /// Whether the tool is hidden from the model.
    pub hidden: bool,
    /// The id of the plugin that registered it.
    pub plugin: String,
}

/// A loaded plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginInfo {
    /// The file it was loaded from.
    pub file: PathBuf,
    /// Its manifest (for a `.lua` without a sidecar, clm's defaults).
    pub manifest: Manifest,
}

/// Something worth telling the user about a plugin directory: a plugin that failed to
/// load or was refused, a tool name that collided, a capability the policy cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The plugin file concerned.
    pub file: PathBuf,
    /// What went wrong.
    pub kind: DiagnosticKind,
    /// Whether something failed (an error) or only looked odd (a warning).
    pub severity: Severity,
    /// One line saying what and why.
    pub message: String,
}

/// How serious a diagnostic is. `toolcell check` exits 1 when there is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// A plugin, tool or capability is missing because of it.
    Error,
    /// Everything loaded, but something deserves a look.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// The kinds of diagnostics; [`DiagnosticKind::code`] is the stable identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// The plugin did not load; none of its tools are registered.
    LoadFailed,
    /// A tool's name was already taken by an earlier plugin; the first one stays.
    ToolCollision,
    /// The plugin loaded but registered no tools.
    NoTools,
    /// A tool's registration was unusable (an invalid schema, say) and was dropped.
    ToolRejected,
    /// The plugin's manifest is malformed or breaks a rule.
    ManifestInvalid,
    /// A `.wasm` plugin carries no manifest.
    ManifestMissing,
    /// The user's policy grants less than the manifest asks for.
    CapabilityDenied,
    /// The plugin was built for a WIT version this toolcell cannot load, or is not a
    /// toolcell plugin at all.
    WitMismatch,
    /// The file's digest does not match the user's pins.
    DigestMismatch,
    /// A signature is malformed or does not match the artifact.
    SignatureInvalid,
    /// The plugin is not signed and the trust policy refuses unsigned plugins.
    SignatureMissing,
    /// The plugin is signed, but by no trusted key.
    SignatureUntrusted,
    /// Another plugin loaded earlier has the same id; this one is not loaded.
    IdCollision,
}

impl DiagnosticKind {
    /// The stable identifier scripts can match on (`tool_collision`, ...).
    pub fn code(self) -> &'static str {
        match self {
            DiagnosticKind::LoadFailed => "load_failed",
            DiagnosticKind::ToolCollision => "tool_collision",
            DiagnosticKind::NoTools => "no_tools",
            DiagnosticKind::ToolRejected => "tool_rejected",
            DiagnosticKind::ManifestInvalid => "manifest_invalid",
            DiagnosticKind::ManifestMissing => "manifest_missing",
            DiagnosticKind::CapabilityDenied => "capability_denied",
            DiagnosticKind::WitMismatch => "wit_mismatch",
            DiagnosticKind::DigestMismatch => "digest_mismatch",
            DiagnosticKind::SignatureInvalid => "signature_invalid",
            DiagnosticKind::SignatureMissing => "signature_missing",
            DiagnosticKind::SignatureUntrusted => "signature_untrusted",
            DiagnosticKind::IdCollision => "id_collision",
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

/// Why the runtime could not be built. These are the user's mistakes (exit code 2 in
/// the CLI), never a plugin's.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A plugin directory does not exist or is not a directory.
    #[error("plugin directory {0} does not exist or is not a directory")]
    MissingDirectory(PathBuf),
    /// A plugin file given by name does not exist or is not a file.
    #[error("plugin file {0} does not exist or is not a file")]
    MissingFile(PathBuf),
    /// A plugin directory could not be read.
    #[error("cannot read plugin directory {0}: {1}")]
    UnreadableDirectory(PathBuf, std::io::Error),
    /// The file root could not be opened.
    #[error("cannot use {0} as the file root: {1}")]
    Root(PathBuf, std::io::Error),
    /// The debug log could not be opened.
    #[error("cannot open the debug log {0}: {1}")]
    DebugLog(PathBuf, std::io::Error),
    /// The engine could not be set up.
    #[error("cannot set up the sandbox engine: {0}")]
    Engine(String),
}

/// Why a call could not be made at all (as opposed to a tool that ran and failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// No loaded plugin registered this tool.
    #[error("unknown tool '{name}'{}", suggestion.as_ref().map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default())]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The closest registered name, if one is close.
        suggestion: Option<String>,
    },
    /// The arguments are not a JSON object (or too large).
    #[error("invalid arguments for '{tool}': {message}")]
    InvalidArguments {
        /// The tool called.
        tool: String,
        /// What is wrong with them.
        message: String,
    },
}

/// Configures and loads a [`Runtime`].
pub struct RuntimeBuilder {
    plugin_dirs: Vec<PathBuf>,
    plugin_files: Vec<PathBuf>,
    config: Config,
    root: Option<PathBuf>,
    limits: Limits,
    http_grants: Vec<HostGrant>,
    http_overrides: HttpSection,
    file_access: Option<FileAccess>,
    pins: Pins,
    trust: Option<TrustPolicy>,
    debug_log: Option<PathBuf>,
    cache: CodeCache,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            plugin_dirs: Vec::new(),
            plugin_files: Vec::new(),
            config: Config::default(),
            root: None,
            limits: Limits::default(),
            http_grants: Vec::new(),
            http_overrides: HttpSection::default(),
            file_access: None,
            pins: Pins::default(),
            trust: None,
            debug_log: DebugLog::path_from_env(),
            cache: CodeCache::from_env(),
        }
    }
}

impl RuntimeBuilder {
    /// Loads every `*.lua` and `*.wasm` file of `dir` (in file-name order, after the
    /// directories added before it).
    pub fn plugin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plugin_dirs.push(dir.into());
        self
    }

    /// Loads one plugin file (`*.lua` or `*.wasm`), after the directories' plugins.
    pub fn plugin_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.plugin_files.push(file.into());
        self
    }

    /// Uses a parsed configuration file.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// The only directory tree plugins may read and write (default: the current
    /// directory).
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// The limits every plugin starts from (the configuration file may refine them).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Grants every plugin HTTP access to a host the default policy refuses.
    pub fn allow_http(mut self, grant: HostGrant) -> Self {
        self.http_grants.push(grant);
        self
    }

    /// HTTP bounds (and grants, as text) that win over the configuration file's, for
    /// every plugin: what the command line says.
    pub fn http_overrides(mut self, overrides: HttpSection) -> Self {
        self.http_overrides = overrides;
        self
    }

    /// The most file access any plugin may get, over the configuration file's
    /// (`--files`).
    pub fn file_access(mut self, access: FileAccess) -> Self {
        self.file_access = Some(access);
        self
    }

    /// Digests plugin files must match (`--lock`, `--require-sha256`); a file that
    /// does not is refused.
    pub fn pins(mut self, pins: Pins) -> Self {
        self.pins = pins;
        self
    }

    /// The trust policy for signatures, instead of the configuration file's `[trust]`.
    pub fn trust(mut self, trust: TrustPolicy) -> Self {
        self.trust = Some(trust);
        self
    }

    /// Appends `ctx:log` and `print` output to `path` (default: `CLM_DEBUG_LOG` or
    /// `TOOLCELL_DEBUG_LOG`); `None` turns the debug log off.
    pub fn debug_log(mut self, path: Option<PathBuf>) -> Self {
        self.debug_log = path;
        self
    }

    /// Where compiled code is cached (default: see [`CodeCache::from_env`]).
    pub fn cache(mut self, cache: CodeCache) -> Self {
        self.cache = cache;
        self
    }

    /// Finds the plugin files, checks and loads each into its own sandbox
    /// (concurrently), and registers their tools in a deterministic order. A plugin
    /// that is refused or fails to load is reported in [`Runtime::diagnostics`] and
    /// skipped; the others load.
    pub async fn build(self) -> Result<Runtime, BuildError> {
        let mut files = discover(&self.plugin_dirs)?;
        for file in &self.plugin_files {
            if !file.is_file() {
                return Err(BuildError::MissingFile(file.clone()));
            }
            files.push(file.clone());
        }
        let root = match &self.root {
            Some(root) => root.clone(),
            None => std::env::current_dir()
                .map_err(|error| BuildError::Root(PathBuf::from("."), error))?,
        };
        let files_root =
            Arc::new(FileRoot::open(&root).map_err(|error| BuildError::Root(root.clone(), error))?);
        let debug_log = match &self.debug_log {
            Some(path) => {
                Some(Arc::new(DebugLog::open(path).map_err(|error| {
                    BuildError::DebugLog(path.clone(), error)
                })?))
            }
            None => None,
        };
        let engine = engine::shared().map_err(BuildError::Engine)?.clone();
        let mut linker = Linker::new(&engine);
        sandbox::add_to_linker(&mut linker)
            .map_err(|error| BuildError::Engine(format!("{error:#}")))?;
        let trust = self.trust.unwrap_or_else(|| self.config.trust.clone());
        let loader = Arc::new(Loader {
            engine: engine.clone(),
            linker,
            cache: self.cache.clone(),
            lua: tokio::sync::OnceCell::new(),
            services: SharedServices {
                tool_config: Arc::new(self.config.tool_config_json()),
                files: Some(files_root),
                debug_log,
            },
            policy: Arc::new(Policy {
                config: self.config,
                limits: self.limits,
                http_grants: self.http_grants,
                http_overrides: self.http_overrides,
                file_access: self.file_access,
                pins: self.pins,
                trust,
            }),
        });
        let mut loads = tokio::task::JoinSet::new();
        for (index, path) in files.iter().enumerate() {
            let (loader, path) = (loader.clone(), path.clone());
            loads.spawn(async move { (index, loader.load(path).await) });
        }
        let mut reports: Vec<Option<LoadReport>> = (0..files.len()).map(|_| None).collect();
        while let Some(joined) = loads.join_next().await {
            match joined {
                Ok((index, report)) => reports[index] = Some(report),
                Err(error) => tracing::error!("a plugin load task failed: {error}"),
            }
        }
        let mut runtime = Runtime {
            tools: Vec::new(),
            by_name: HashMap::new(),
            handles: Vec::new(),
            plugins: Vec::new(),
            diagnostics: Vec::new(),
            next_call: AtomicU64::new(1),
            max_args_bytes: loader.policy.limits.max_args_bytes,
        };
        for (path, report) in files.iter().zip(reports) {
            let report = report.unwrap_or_else(|| {
                LoadReport::refused(DiagnosticKind::LoadFailed, "the load task did not finish")
            });
            runtime.register(path, report);
        }
        Ok(runtime)
    }
}

/// What the user's policy says, for every plugin of a runtime.
struct Policy {
    config: Config,
    limits: Limits,
    http_grants: Vec<HostGrant>,
    http_overrides: HttpSection,
    file_access: Option<FileAccess>,
    pins: Pins,
    trust: TrustPolicy,
}

impl Policy {
    /// What the policy allows plugin `id`.
    fn allowed_for(&self, id: &str) -> Allowed {
        let (http_policy, http_settings) =
            self.config
                .http_for(id, &self.http_grants, &self.http_overrides);
        Allowed {
            limits: self.config.limits_for(id, &self.limits),
            http_policy,
            http_settings,
            files: self.config.files_for(id, self.file_access),
        }
    }
}

/// A loaded plugin: its actor, the tools it registered and its manifest.
struct Loaded {
    handle: PluginHandle,
    specs: Vec<ToolSpec>,
    manifest: Manifest,
}

/// The outcome of loading one file, with the warnings it produced either way.
struct LoadReport {
    warnings: Vec<(DiagnosticKind, Severity, String)>,
    outcome: Result<Loaded, Refusal>,
}

impl LoadReport {
    fn refused(kind: DiagnosticKind, message: impl Into<String>) -> Self {
        LoadReport {
            warnings: Vec::new(),
            outcome: Err(Refusal {
                kind,
                message: message.into(),
            }),
        }
    }
}

/// Turns plugin files into loaded plugins; compiles the Lua guest once, on first need.
struct Loader {
    engine: Engine,
    linker: Linker<StoreState>,
    cache: CodeCache,
    lua: tokio::sync::OnceCell<Result<PluginPre, String>>,
    services: SharedServices,
    policy: Arc<Policy>,
}

impl Loader {
    async fn load(&self, path: PathBuf) -> LoadReport {
        let policy = self.policy.clone();
        let read = tokio::task::spawn_blocking(move || {
            let admission = Admission {
                pins: &policy.pins,
                trust: &policy.trust,
            };
            source::read(&path, &admission)
        })
        .await;
        let source = match read {
            Ok(Ok(source)) => source,
            Ok(Err(refusal)) => {
                return LoadReport {
                    warnings: Vec::new(),
                    outcome: Err(refusal),
                };
            }
            Err(error) => {
                return LoadReport::refused(
                    DiagnosticKind::LoadFailed,
                    format!("reading the file was interrupted: {error}"),
                );
            }
        };
        let mut warnings = source.warnings;
        let manifest = source.manifest;
        let granted = grants::grant(&manifest, self.policy.allowed_for(&manifest.id));
        warnings.extend(granted.denials.iter().map(|denial| {
            (
                DiagnosticKind::CapabilityDenied,
                Severity::Warning,
                denial.clone(),
            )
        }));
        let pre = match source.code {
            Code::EmbeddedLua => self.lua_pre().await,
            Code::Component { bytes, digest } => self.component_pre(bytes, digest).await,
        };
        let outcome = match pre {
            Err(message) => Err(Refusal {
                kind: DiagnosticKind::LoadFailed,
                message,
            }),
            Ok(pre) => {
                let context = PluginContext::new(
                    manifest.id.clone(),
                    source.script,
                    granted.into(),
                    &self.services,
                );
                sandbox::spawn_plugin(Arc::new(context), pre)
                    .await
                    .map(|(handle, specs)| Loaded {
                        handle,
                        specs,
                        manifest,
                    })
                    .map_err(|failure| Refusal {
                        kind: DiagnosticKind::LoadFailed,
                        message: match failure {
                            LoadFailure::Failed(message) => message,
                            other => other.to_string(),
                        },
                    })
            }
        };
        LoadReport { warnings, outcome }
    }

    async fn lua_pre(&self) -> Result<PluginPre, String> {
        self.lua
            .get_or_init(|| async {
                let (engine, cache) = (self.engine.clone(), self.cache.clone());
                let component =
                    tokio::task::spawn_blocking(move || guest::lua_component(&engine, &cache))
                        .await
                        .map_err(|error| error.to_string())??;
                self.pre_of(&component)
            })
            .await
            .clone()
    }

    /// Compiles a component (off the async threads: a large one takes seconds).
    async fn component_pre(&self, bytes: Vec<u8>, digest: String) -> Result<PluginPre, String> {
        let (engine, cache) = (self.engine.clone(), self.cache.clone());
        let component = tokio::task::spawn_blocking(move || {
            cache
                .component(&engine, &bytes, Some(&digest))
                .map_err(|error| format!("not a valid wasm component: {error:#}"))
        })
        .await
        .map_err(|error| format!("compiling was interrupted: {error}"))??;
        self.pre_of(&component)
    }

    fn pre_of(&self, component: &Component) -> Result<PluginPre, String> {
        let pre = self.linker.instantiate_pre(component).map_err(|error| {
            format!("the component does not fit toolcell's plugin world: {error:#}")
        })?;
        PluginPre::new(pre).map_err(|error| {
            format!("the component does not export the plugin interface: {error:#}")
        })
    }
}

/// The plugin files of `dirs`: `*.lua` and `*.wasm`, each directory in file-name order.
fn discover(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, BuildError> {
    let mut files = Vec::new();
    for dir in dirs {
        if !dir.is_dir() {
            return Err(BuildError::MissingDirectory(dir.clone()));
        }
        let entries = std::fs::read_dir(dir)
            .map_err(|error| BuildError::UnreadableDirectory(dir.clone(), error))?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| {
                path.is_file()
                    && path
                        .extension()
                        .is_some_and(|extension| extension == "lua" || extension == "wasm")
            })
            .collect();
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Loaded plugins and their tools.
pub struct Runtime {
    tools: Vec<ToolInfo>,
    by_name: HashMap<String, usize>,
    /// The plugin of each tool, parallel to `tools`.
    handles: Vec<(PluginHandle, PathBuf)>,
    plugins: Vec<PluginInfo>,
    diagnostics: Vec<Diagnostic>,
    next_call: AtomicU64,
    max_args_bytes: usize,
}

impl Runtime {
    /// Starts configuring a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Every registered tool, in load order (hidden ones included).
    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.by_name.get(name).map(|&index| &self.tools[index])
    }

    /// Every loaded plugin, in load order.
    pub fn plugins(&self) -> &[PluginInfo] {
        &self.plugins
    }

    /// What went wrong or looked odd while loading.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|diagnostic| diagnostic.severity == Severity::Error)
    }

    fn register(&mut self, path: &Path, report: LoadReport) {
        let file = file_name(path);
        for (kind, severity, message) in report.warnings {
            self.diagnose(path, kind, severity, format!("plugin {file}: {message}"));
        }
        let Loaded {
            handle,
            specs,
            manifest,
        } = match report.outcome {
            Ok(loaded) => loaded,
            Err(Refusal { kind, message }) => {
                let verb = match kind {
                    DiagnosticKind::LoadFailed => "failed to load",
                    _ => "was refused",
                };
                self.diagnose(
                    path,
                    kind,
                    Severity::Error,
                    format!("plugin {file} {verb}: {}", bounded_message(message)),
                );
                return;
            }
        };
        if specs.len() > MAX_TOOLS_PER_PLUGIN {
            self.diagnose(
                path,
                DiagnosticKind::LoadFailed,
                Severity::Error,
                format!(
                    "plugin {file} failed to load: it registered {} tools; a plugin may register at most {MAX_TOOLS_PER_PLUGIN}",
                    specs.len()
                ),
            );
            return;
        }
        if let Some(first) = self
            .plugins
            .iter()
            .find(|plugin| plugin.manifest.id == manifest.id)
        {
            let message = format!(
                "plugin {file} has the id '{}' of plugin {}, loaded first; it is not loaded",
                manifest.id,
                file_name(&first.file)
            );
            self.diagnose(path, DiagnosticKind::IdCollision, Severity::Error, message);
            return;
        }
        self.plugins.push(PluginInfo {
            file: path.to_path_buf(),
            manifest,
        });
        if specs.is_empty() {
            self.diagnose(
                path,
                DiagnosticKind::NoTools,
                Severity::Warning,
                format!("plugin {file} registered no tools"),
            );
        }
        let mut own: HashSet<String> = HashSet::new();
        for spec in specs {
            // A component other than the Lua guest hands over whatever it likes: every
            // spec is checked here, whatever produced it.
            if !schema::is_valid_tool_name(&spec.name) {
                let message = format!(
                    "tool '{}' of plugin {file} has an invalid name (use 1 to {} letters, digits, '_' or '-')",
                    spec.name.escape_debug(),
                    schema::MAX_TOOL_NAME
                );
                self.diagnose(path, DiagnosticKind::ToolRejected, Severity::Error, message);
                continue;
            }
            if !own.insert(spec.name.clone()) {
                let message = format!(
                    "plugin {file} registers tool '{}' twice; the first one stays",
                    spec.name
                );
                self.diagnose(
                    path,
                    DiagnosticKind::ToolCollision,
                    Severity::Error,
                    message,
                );
                continue;
            }
            if let Some(&existing) = self.by_name.get(&spec.name) {
                let (_, first) = &self.handles[existing];
                let message = format!(
                    "tool '{}' of plugin {file} is already registered by plugin {}; the first one stays",
                    spec.name,
                    file_name(first)
                );
                self.diagnose(
                    path,
                    DiagnosticKind::ToolCollision,
                    Severity::Error,
                    message,
                );
                continue;
            }
            let params_schema = match spec
                .params_schema
                .as_deref()
                .map(serde_json::from_str::<serde_json::Value>)
            {
                None => None,
                Some(Ok(schema @ serde_json::Value::Object(_))) => Some(schema::repair(schema)),
                Some(Ok(_)) => {
                    let message = format!(
                        "tool '{}' of plugin {file} has a schema that is not a JSON object",
                        spec.name
                    );
                    self.diagnose(path, DiagnosticKind::ToolRejected, Severity::Error, message);
                    continue;
                }
                Some(Err(error)) => {
                    let message = format!(
                        "tool '{}' of plugin {file} has an unreadable schema: {error}",
                        spec.name
                    );
                    self.diagnose(path, DiagnosticKind::ToolRejected, Severity::Error, message);
                    continue;
                }
            };
            self.by_name.insert(spec.name.clone(), self.tools.len());
            self.tools.push(ToolInfo {
                name: spec.name,
                description: spec.description,
                params_schema,
                timeout: spec.timeout_ms.map(|ms| Duration::from_millis(ms.into())),
                no_prompt: spec.no_prompt,
                hidden: spec.hidden,
                plugin: handle.name().to_string(),
            });
            self.handles.push((handle.clone(), path.to_path_buf()));
        }
    }

    fn diagnose(&mut self, file: &Path, kind: DiagnosticKind, severity: Severity, message: String) {
        tracing::warn!("{message}");
        self.diagnostics.push(Diagnostic {
            file: file.to_path_buf(),
            kind,
            severity,
            message,
        });
    }

    /// Starts a call of `tool` with its JSON arguments (`"{}"` for none). The returned
    /// [`Call`] resolves to the outcome; dropping it cancels the call.
    pub fn call(&self, tool: &str, args_json: &str) -> Result<Call, InvokeError> {
        let index = *self
            .by_name
            .get(tool)
            .ok_or_else(|| InvokeError::UnknownTool {
                name: tool.to_string(),
                suggestion: closest(tool, self.tools.iter().map(|tool| tool.name.as_str())),
            })?;
        let info = &self.tools[index];
        self.check_arguments(tool, args_json)?;
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (handle, _) = &self.handles[index];
        let outcome = handle.start(id, tool, args_json.to_string(), info.timeout);
        Ok(Call {
            id,
            handle: handle.clone(),
            outcome,
            finished: false,
        })
    }

    /// Calls `tool` and waits for its outcome.
    pub async fn invoke(&self, tool: &str, args_json: &str) -> Result<CallOutcome, InvokeError> {
        Ok(self.call(tool, args_json)?.await)
    }

    fn check_arguments(&self, tool: &str, args_json: &str) -> Result<(), InvokeError> {
        let invalid = |message: String| InvokeError::InvalidArguments {
            tool: tool.to_string(),
            message,
        };
        if args_json.len() > self.max_args_bytes {
            return Err(invalid(format!(
                "they are {} bytes; the limit is {}",
                args_json.len(),
                crate::limits::format_bytes(self.max_args_bytes as u64)
            )));
        }
        match serde_json::from_str::<serde_json::Value>(args_json) {
            Ok(serde_json::Value::Object(_)) => Ok(()),
            Ok(other) => Err(invalid(format!(
                "expected a JSON object, got {}",
                json_kind(&other)
            ))),
            Err(error) => Err(invalid(format!("not valid JSON: {error}"))),
        }
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// The registered name closest to `name`, if any is close enough to be a likely typo.
fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .map(|candidate| (strsim::jaro_winkler(name, candidate), candidate))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate.to_string())
}

/// A call in flight. Await it for the outcome; drop it (or call [`Call::cancel`]) to
/// cancel the call, which aborts its pending HTTP requests and timers.
pub struct Call {
    id: u64,
    handle: PluginHandle,
    outcome: oneshot::Receiver<CallOutcome>,
    finished: bool,
}

impl Call {
    /// The call's id (unique within the runtime).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Cancels the call; it resolves to a failure that says `reason`.
    pub fn cancel(&self, reason: &str) {
        if !self.finished {
            self.handle.cancel(self.id, reason);
        }
    }
}

impl Future for Call {
    type Output = CallOutcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CallOutcome> {
        let outcome = match Pin::new(&mut self.outcome).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(outcome)) => outcome,
            Poll::Ready(Err(_)) => {
                CallOutcome::Failed(format!("plugin '{}' stopped", self.handle.name()))
            }
        };
        self.finished = true;
        Poll::Ready(outcome)
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.finished {
            self.handle.cancel(self.id, "the caller stopped waiting");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_a_close_name_and_nothing_for_a_distant_one() {
        let names = ["hello", "read_note", "write_note"];
        assert_eq!(
            closest("helo", names.iter().copied()),
            Some("hello".to_string())
        );
        assert_eq!(
            closest("write_notes", names.iter().copied()),
            Some("write_note".to_string())
        );
        assert_eq!(closest("zzz", names.iter().copied()), None);
    }
}
