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
use crate::validation::ArgumentValidator;
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
        let dirs = PluginDirs::new(self.plugin_dirs)?;
        let files = dirs.discover()?;
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
            config: self.config,
            limits: self.limits.clone(),
            http_grants: self.http_grants,
            http_overrides: self.http_overrides,
        });
        let mut loads = tokio::task::JoinSet::new();
        for (index, file) in files.iter().enumerate() {
            let (loader, file) = (loader.clone(), file.clone());
            loads.spawn(async move { (index, loader.load_plugin(file).await) });
        }
        let mut plugins: Vec<Option<Plugin>> = files.iter().map(|_| None).collect();
        while let Some(joined) = loads.join_next().await {
            match joined {
                Ok((index, plugin)) => plugins[index] = Some(plugin),
                Err(error) => tracing::error!("a plugin load task failed: {error}"),
            }
        }
        let plugins = files
            .into_iter()
            .zip(plugins)
            .map(|(file, plugin)| {
                plugin.unwrap_or_else(|| {
                    Plugin::failed(file, "the load task did not finish".to_string())
                })
            })
            .collect();
        let mut runtime = Runtime {
            plugins,
            tools: Vec::new(),
            entries: Vec::new(),
            by_name: HashMap::new(),
            diagnostics: Vec::new(),
            next_call: AtomicU64::new(1),
            default_timeout: self.limits.call_timeout,
            max_args_bytes: self.limits.max_args_bytes,
            dirs,
            loader,
        };
        runtime.rebuild();
        for diagnostic in &runtime.diagnostics {
            tracing::warn!("{}", diagnostic.message);
        }
        Ok(runtime)
    }
}

/// The plugin directories in the order given, and where a plugin file belongs among them.
struct PluginDirs {
    /// As given by the user (used in messages and to build file paths).
    given: Vec<PathBuf>,
    /// The same, canonical, to recognise paths reported by a file watcher.
    canonical: Vec<PathBuf>,
}

impl PluginDirs {
    fn new(given: Vec<PathBuf>) -> Result<PluginDirs, BuildError> {
        let mut canonical = Vec::with_capacity(given.len());
        for dir in &given {
            if !dir.is_dir() {
                return Err(BuildError::MissingDirectory(dir.clone()));
            }
            canonical.push(
                dir.canonicalize()
                    .map_err(|error| BuildError::UnreadableDirectory(dir.clone(), error))?,
            );
        }
        Ok(PluginDirs { given, canonical })
    }

    /// The plugin files: `*.lua` and `*.wasm`, each directory in file-name order.
    fn discover(&self) -> Result<Vec<PluginFile>, BuildError> {
        let mut files = Vec::new();
        for (dir_index, dir) in self.given.iter().enumerate() {
            let entries = std::fs::read_dir(dir)
                .map_err(|error| BuildError::UnreadableDirectory(dir.clone(), error))?;
            let mut found: Vec<PluginFile> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_file() && is_plugin_file(path))
                .filter_map(|path| {
                    let name = path.file_name()?.to_os_string();
                    Some(PluginFile {
                        dir: dir_index,
                        name,
                        path,
                    })
                })
                .collect();
            found.sort_by(|a, b| a.name.cmp(&b.name));
            files.extend(found);
        }
        Ok(files)
    }

    /// The plugin file `path` names, if it is a `*.lua` or `*.wasm` file directly in one
    /// of the directories (whether or not it exists now).
    fn locate(&self, path: &Path) -> Option<PluginFile> {
        if !is_plugin_file(path) {
            return None;
        }
        let name = path.file_name()?.to_os_string();
        let parent = path.parent()?;
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let parent = parent.canonicalize().ok()?;
        let dir = self.canonical.iter().position(|dir| *dir == parent)?;
        Some(PluginFile {
            dir,
            path: self.given[dir].join(&name),
            name,
        })
    }
}

fn is_plugin_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension == "lua" || extension == "wasm")
}

/// A plugin file's place: its directory (by position) and its name there. Plugins load
/// in the order of (directory, name).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PluginFile {
    dir: usize,
    name: std::ffi::OsString,
    path: PathBuf,
}

impl PluginFile {
    fn order(&self) -> (usize, &std::ffi::OsStr) {
        (self.dir, &self.name)
    }

    fn stem(&self) -> String {
        self.path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    fn display_name(&self) -> String {
        self.name.to_string_lossy().into_owned()
    }
}

/// A loaded plugin and the tools it registered, or why it did not load.
type LoadResult = Result<(PluginHandle, Vec<ToolSpec>), String>;

/// Turns plugin files into loaded plugins; compiles the Lua guest once, on first need.
struct Loader {
    engine: Engine,
    linker: Linker<StoreState>,
    cache: CodeCache,
    lua: tokio::sync::OnceCell<Result<PluginPre, String>>,
    services: SharedServices,
    config: Config,
    limits: Limits,
    http_grants: Vec<HostGrant>,
    http_overrides: HttpSection,
}

impl Loader {
    /// Loads `file` into a fresh sandbox and prepares its tools (schemas checked and
    /// compiled), ready to be registered.
    async fn load_plugin(&self, file: PluginFile) -> Plugin {
        let name = file.stem();
        let (http_policy, http_settings) =
            self.config
                .http_for(&name, &self.http_grants, &self.http_overrides);
        let settings = PluginSettings {
            limits: self.config.limits_for(&name, &self.limits),
            http_policy,
            http_settings,
        };
        let result = self.load(&file.path, name, settings).await;
        Plugin::prepare(file, result)
    }

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

    fn component_pre(&self, bytes: &[u8]) -> Result<PluginPre, String> {
        let component = self
            .cache
            .component(&self.engine, bytes, None)
            .map_err(|error| format!("not a valid wasm component: {error:#}"))?;
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

/// One plugin file as loaded: its sandbox (none if it failed to load) and its tools,
/// each ready to register or rejected.
struct Plugin {
    file: PluginFile,
    /// What is wrong with the plugin as a whole (failed to load, no tools).
    diagnostics: Vec<Diagnostic>,
    /// The tools in registration order: ready, or rejected with the reason.
    tools: Vec<Result<PreparedTool, Diagnostic>>,
}

/// A tool ready to register: what callers see and what the runtime needs to call it.
#[derive(Clone)]
struct PreparedTool {
    info: ToolInfo,
    entry: ToolEntry,
}

/// How to call a registered tool.
#[derive(Clone)]
struct ToolEntry {
    handle: PluginHandle,
    validator: Option<Arc<ArgumentValidator>>,
    file: PathBuf,
}

impl Plugin {
    fn failed(file: PluginFile, message: String) -> Plugin {
        let diagnostic = Diagnostic {
            file: file.path.clone(),
            kind: DiagnosticKind::LoadFailed,
            message: format!("plugin {} failed to load: {message}", file.display_name()),
        };
        Plugin {
            file,
            diagnostics: vec![diagnostic],
            tools: Vec::new(),
        }
    }

    /// Checks each registered tool's schema and compiles its validator.
    fn prepare(file: PluginFile, result: LoadResult) -> Plugin {
        let (handle, specs) = match result {
            Ok(loaded) => loaded,
            Err(message) => return Plugin::failed(file, message),
        };
        let display = file.display_name();
        let mut diagnostics = Vec::new();
        if specs.is_empty() {
            diagnostics.push(Diagnostic {
                file: file.path.clone(),
                kind: DiagnosticKind::NoTools,
                message: format!("plugin {display} registered no tools"),
            });
        }
        let tools = specs
            .into_iter()
            .map(|spec| {
                let rejected = |reason: String| Diagnostic {
                    file: file.path.clone(),
                    kind: DiagnosticKind::ToolRejected,
                    message: format!(
                        "tool '{}' of plugin {display} has an invalid schema and is not registered: {reason}",
                        spec.name
                    ),
                };
                let (params_schema, validator) = match spec.params_schema.as_deref() {
                    None => (None, None),
                    Some(text) => {
                        let schema = serde_json::from_str::<serde_json::Value>(text)
                            .map(schema::repair)
                            .map_err(|error| rejected(format!("not JSON: {error}")))?;
                        let validator = ArgumentValidator::compile(&schema).map_err(rejected)?;
                        (Some(schema), Some(Arc::new(validator)))
                    }
                };
                Ok(PreparedTool {
                    info: ToolInfo {
                        name: spec.name,
                        description: spec.description,
                        params_schema,
                        timeout: spec.timeout_ms.map(|ms| Duration::from_millis(ms.into())),
                        no_prompt: spec.no_prompt,
                        hidden: spec.hidden,
                        plugin: handle.name().to_string(),
                    },
                    entry: ToolEntry {
                        handle: handle.clone(),
                        validator,
                        file: file.path.clone(),
                    },
                })
            })
            .collect();
        Plugin {
            file,
            diagnostics,
            tools,
        }
    }
}

/// A plugin file read again (or found gone), ready to take its place in a [`Runtime`]
/// with [`Runtime::apply`]. Made by [`Runtime::load_file`].
pub struct PluginUpdate {
    file: PluginFile,
    /// The plugin as loaded now; none when the file is gone.
    plugin: Option<Plugin>,
}

impl PluginUpdate {
    /// The plugin file concerned.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// Whether the file is gone (the update unregisters its plugin).
    pub fn is_removal(&self) -> bool {
        self.plugin.is_none()
    }
}

/// Loaded plugins and their tools.
///
/// Calls take `&self`; changing the set of plugins ([`Runtime::apply`],
/// [`Runtime::reload`]) takes `&mut self`, so a server that reloads plugins while it
/// serves keeps the runtime behind a lock and holds it only to start a call or to swap
/// a plugin in: a [`Call`] does not borrow the runtime, and loading happens outside.
pub struct Runtime {
    /// Every plugin file, in load order.
    plugins: Vec<Plugin>,
    /// The registered tools, in load order: derived from `plugins` by `rebuild`.
    tools: Vec<ToolInfo>,
    /// How to call each tool, parallel to `tools`.
    entries: Vec<ToolEntry>,
    by_name: HashMap<String, usize>,
    diagnostics: Vec<Diagnostic>,
    next_call: AtomicU64,
    default_timeout: Duration,
    max_args_bytes: usize,
    dirs: PluginDirs,
    loader: Arc<Loader>,
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

    /// What went wrong or looked odd with the plugins as they are loaded now.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The plugin directories, in load order, as given to the builder.
    pub fn plugin_dirs(&self) -> &[PathBuf] {
        &self.dirs.given
    }

    /// Reads plugin file `path` again: a future that loads it into a fresh sandbox (or
    /// finds it gone) without touching this runtime; [`Runtime::apply`] then puts it in
    /// place. `None` when `path` is not a `*.lua` or `*.wasm` file directly inside one
    /// of the plugin directories.
    pub fn load_file(
        &self,
        path: &Path,
    ) -> Option<impl Future<Output = PluginUpdate> + Send + 'static> {
        let file = self.dirs.locate(path)?;
        let loader = self.loader.clone();
        Some(async move {
            let exists = tokio::fs::metadata(&file.path)
                .await
                .is_ok_and(|metadata| metadata.is_file());
            let plugin = if exists {
                Some(loader.load_plugin(file.clone()).await)
            } else {
                None
            };
            PluginUpdate { file, plugin }
        })
    }

    /// Replaces, adds or removes the plugin of `update`; every other plugin keeps its
    /// sandbox and its state. The plugin keeps its place in the load order, so the rule
    /// that the first registration of a name wins holds as if everything had loaded
    /// afresh. Calls in flight on the old sandbox finish there; new calls go to the new
    /// one. Returns the diagnostics that are new (also logged).
    pub fn apply(&mut self, update: PluginUpdate) -> Vec<Diagnostic> {
        let position = self
            .plugins
            .binary_search_by(|plugin| plugin.file.order().cmp(&update.file.order()));
        match (position, update.plugin) {
            (Ok(index), Some(plugin)) => self.plugins[index] = plugin,
            (Err(index), Some(plugin)) => self.plugins.insert(index, plugin),
            (Ok(index), None) => {
                self.plugins.remove(index);
            }
            (Err(_), None) => {}
        }
        let before = std::mem::take(&mut self.diagnostics);
        self.rebuild();
        let new: Vec<Diagnostic> = self
            .diagnostics
            .iter()
            .filter(|diagnostic| !before.contains(diagnostic))
            .cloned()
            .collect();
        for diagnostic in &new {
            tracing::warn!("{}", diagnostic.message);
        }
        new
    }

    /// [`Runtime::load_file`] and [`Runtime::apply`] in one step, for callers that own
    /// the runtime outright. `None` when `path` is not a plugin file of this runtime.
    pub async fn reload(&mut self, path: &Path) -> Option<Vec<Diagnostic>> {
        let update = self.load_file(path)?.await;
        Some(self.apply(update))
    }

    /// Derives the registry from the plugins in load order: the first registration of a
    /// name wins, later ones are reported.
    fn rebuild(&mut self) {
        self.tools.clear();
        self.entries.clear();
        self.by_name.clear();
        self.diagnostics.clear();
        for plugin in &self.plugins {
            self.diagnostics.extend(plugin.diagnostics.iter().cloned());
            for tool in &plugin.tools {
                let tool = match tool {
                    Ok(tool) => tool,
                    Err(rejected) => {
                        self.diagnostics.push(rejected.clone());
                        continue;
                    }
                };
                if let Some(&existing) = self.by_name.get(&tool.info.name) {
                    let first = &self.entries[existing].file;
                    self.diagnostics.push(Diagnostic {
                        file: plugin.file.path.clone(),
                        kind: DiagnosticKind::ToolCollision,
                        message: format!(
                            "tool '{}' of plugin {} is already registered by plugin {}; the first one stays",
                            tool.info.name,
                            plugin.file.display_name(),
                            first
                                .file_name()
                                .map(|name| name.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        ),
                    });
                    continue;
                }
                self.by_name
                    .insert(tool.info.name.clone(), self.tools.len());
                self.tools.push(tool.info.clone());
                self.entries.push(tool.entry.clone());
            }
        }
    }

    /// Starts a call of `tool` with its JSON arguments (`"{}"` for none). The arguments
    /// must be a JSON object that satisfies the tool's `params_schema`; otherwise the
    /// call never reaches the plugin. The returned [`Call`] resolves to the outcome;
    /// dropping it cancels the call.
    pub fn call(&self, tool: &str, args_json: &str) -> Result<Call, InvokeError> {
        let index = *self
            .by_name
            .get(tool)
            .ok_or_else(|| InvokeError::UnknownTool {
                name: tool.to_string(),
                suggestion: closest(tool, self.tools.iter().map(|tool| tool.name.as_str())),
            })?;
        let info = &self.tools[index];
        let entry = &self.entries[index];
        self.check_arguments(tool, args_json, entry.validator.as_deref())?;
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let timeout = info.timeout.unwrap_or(self.default_timeout);
        let outcome = entry.handle.start(id, tool, args_json.to_string(), timeout);
        Ok(Call {
            id,
            handle: entry.handle.clone(),
            outcome,
            finished: false,
        })
    }

    /// Calls `tool` and waits for its outcome.
    pub async fn invoke(&self, tool: &str, args_json: &str) -> Result<CallOutcome, InvokeError> {
        Ok(self.call(tool, args_json)?.await)
    }

    fn check_arguments(
        &self,
        tool: &str,
        args_json: &str,
        validator: Option<&ArgumentValidator>,
    ) -> Result<(), InvokeError> {
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
        let args = match serde_json::from_str::<serde_json::Value>(args_json) {
            Ok(args @ serde_json::Value::Object(_)) => args,
            Ok(other) => {
                return Err(invalid(format!(
                    "expected a JSON object, got {}",
                    json_kind(&other)
                )));
            }
            Err(error) => return Err(invalid(format!("not valid JSON: {error}"))),
        };
        match validator {
            Some(validator) => validator.check(&args).map_err(invalid),
            None => Ok(()),
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
