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

use std::collections::HashMap;
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
use crate::files::FileRoot;
use crate::http::HostGrant;
use crate::limits::Limits;
use crate::sandbox::{
    self, CallOutcome, LoadFailure, PluginContext, PluginHandle, PluginPre, PluginSettings,
    SharedServices, StoreState,
};
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
    /// The name of the plugin that registered it.
    pub plugin: String,
}

/// Something worth telling the user about a plugin directory: a plugin that failed to
/// load, a tool name that collided, a plugin that registered nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The plugin file concerned.
    pub file: PathBuf,
    /// What went wrong.
    pub kind: DiagnosticKind,
    /// One line saying what and why.
    pub message: String,
}

/// The kinds of diagnostics, as stable identifiers.
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
    config: Config,
    root: Option<PathBuf>,
    limits: Limits,
    http_grants: Vec<HostGrant>,
    http_overrides: HttpSection,
    debug_log: Option<PathBuf>,
    cache: CodeCache,
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            plugin_dirs: Vec::new(),
            config: Config::default(),
            root: None,
            limits: Limits::default(),
            http_grants: Vec::new(),
            http_overrides: HttpSection::default(),
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

    /// Finds the plugin files, loads each into its own sandbox (concurrently), and
    /// registers their tools in a deterministic order. A plugin that fails to load is
    /// reported in [`Runtime::diagnostics`] and skipped; the others load.
    pub async fn build(self) -> Result<Runtime, BuildError> {
        let files = discover(&self.plugin_dirs)?;
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
        let linker = sandbox::linker(&engine).map_err(BuildError::Engine)?;
        let loader = Arc::new(Loader {
            engine,
            linker,
            cache: self.cache.clone(),
            services: SharedServices {
                tool_config: Arc::new(self.config.tool_config_json()),
                files: Some(files_root),
                debug_log,
            },
        });
        let mut loads = tokio::task::JoinSet::new();
        for (index, path) in files.iter().enumerate() {
            let name = stem(path);
            let (http_policy, http_settings) =
                self.config
                    .http_for(&name, &self.http_grants, &self.http_overrides);
            let limits = self.config.limits_for(&name, &self.limits);
            let settings = PluginSettings {
                limits,
                http_policy,
                http_settings,
            };
            let (loader, path) = (loader.clone(), path.clone());
            loads.spawn(async move { (index, loader.load(&path, name, settings).await) });
        }
        let mut results: Vec<Option<LoadResult>> = vec![None; files.len()];
        while let Some(joined) = loads.join_next().await {
            match joined {
                Ok((index, result)) => results[index] = Some(result),
                Err(error) => tracing::error!("a plugin load task failed: {error}"),
            }
        }
        let mut runtime = Runtime {
            tools: Vec::new(),
            by_name: HashMap::new(),
            handles: Vec::new(),
            diagnostics: Vec::new(),
            next_call: AtomicU64::new(1),
            default_timeout: self.limits.call_timeout,
            max_args_bytes: self.limits.max_args_bytes,
        };
        for (path, result) in files.iter().zip(results) {
            let result = result.unwrap_or_else(|| Err("the load task did not finish".to_string()));
            runtime.register(path, result);
        }
        Ok(runtime)
    }
}

/// A loaded plugin and the tools it registered, or why it did not load.
type LoadResult = Result<(PluginHandle, Vec<ToolSpec>), String>;

/// Turns plugin files into loaded plugins.
struct Loader {
    engine: Engine,
    linker: &'static Linker<StoreState>,
    cache: CodeCache,
    services: SharedServices,
}

impl Loader {
    async fn load(&self, path: &Path, name: String, settings: PluginSettings) -> LoadResult {
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|error| format!("cannot read the file: {error}"))?;
        let is_lua = path.extension().is_some_and(|extension| extension == "lua");
        let (pre, script) = if is_lua {
            (self.lua_pre().await?, Some(bytes))
        } else {
            (self.component_pre(&bytes)?, None)
        };
        let context = PluginContext::new(name, script, settings, &self.services);
        sandbox::spawn_plugin(Arc::new(context), pre)
            .await
            .map_err(|failure| match failure {
                LoadFailure::Failed(message) => message,
                other => other.to_string(),
            })
    }

    /// The Lua guest, linked once per process (compiling it, or reading the compiled
    /// code from the cache, the first time).
    async fn lua_pre(&self) -> Result<PluginPre, String> {
        let (engine, cache, linker) = (self.engine.clone(), self.cache.clone(), self.linker);
        tokio::task::spawn_blocking(move || guest::lua_pre(&engine, &cache, linker))
            .await
            .map_err(|error| error.to_string())?
    }

    fn component_pre(&self, bytes: &[u8]) -> Result<PluginPre, String> {
        let component = self
            .cache
            .component(&self.engine, bytes, None)
            .map_err(|error| format!("not a valid wasm component: {error:#}"))?;
        self.pre_of(&component)
    }

    fn pre_of(&self, component: &Component) -> Result<PluginPre, String> {
        sandbox::link(self.linker, component)
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

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Loaded plugins and their tools.
pub struct Runtime {
    tools: Vec<ToolInfo>,
    by_name: HashMap<String, usize>,
    /// The plugin of each tool, parallel to `tools`.
    handles: Vec<(PluginHandle, PathBuf)>,
    diagnostics: Vec<Diagnostic>,
    next_call: AtomicU64,
    default_timeout: Duration,
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

    /// What went wrong or looked odd while loading.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    fn register(&mut self, path: &Path, result: LoadResult) {
        let file = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (handle, specs) = match result {
            Ok(loaded) => loaded,
            Err(message) => {
                self.diagnose(
                    path,
                    DiagnosticKind::LoadFailed,
                    format!("plugin {file} failed to load: {message}"),
                );
                return;
            }
        };
        if specs.is_empty() {
            self.diagnose(
                path,
                DiagnosticKind::NoTools,
                format!("plugin {file} registered no tools"),
            );
        }
        for spec in specs {
            if let Some(&existing) = self.by_name.get(&spec.name) {
                let (_, first) = &self.handles[existing];
                let message = format!(
                    "tool '{}' of plugin {file} is already registered by plugin {}; the first one stays",
                    spec.name,
                    first
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_default()
                );
                self.diagnose(path, DiagnosticKind::ToolCollision, message);
                continue;
            }
            let params_schema = match spec
                .params_schema
                .as_deref()
                .map(serde_json::from_str::<serde_json::Value>)
            {
                None => None,
                Some(Ok(schema)) => Some(schema::repair(schema)),
                Some(Err(error)) => {
                    let message = format!(
                        "tool '{}' of plugin {file} has an unreadable schema: {error}",
                        spec.name
                    );
                    self.diagnose(path, DiagnosticKind::ToolRejected, message);
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

    fn diagnose(&mut self, file: &Path, kind: DiagnosticKind, message: String) {
        tracing::warn!("{message}");
        self.diagnostics.push(Diagnostic {
            file: file.to_path_buf(),
            kind,
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
        let timeout = info.timeout.unwrap_or(self.default_timeout);
        let (handle, _) = &self.handles[index];
        let outcome = handle.start(id, tool, args_json.to_string(), timeout);
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
