//! Configuring and loading a [`Runtime`]: where plugins come from, what the user's
//! policy allows them, and the first load of every plugin file.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use futures_util::FutureExt;

use crate::artifact::integrity::Pins;
use crate::artifact::manifest::sidecar_path;
use crate::artifact::signature::TrustPolicy;
use crate::base::limits::Limits;
use crate::config::grants::{CapabilityPolicy, CommandLine};
use crate::config::{Config, HttpSection};
use crate::engine::cache::CodeCache;
use crate::engine::{Engine, EngineError, Options};
use crate::output::envelope::{Envelope, UntrustedOutput};
use crate::output::results::ResultStore;
use crate::output::stats::Meters;
use crate::policy::{
    Approvals, Caps, Chain, CommandLineRules, DEFAULT_INTERCEPTOR_TIMEOUT, Interceptor,
    Interceptors, PermissionHandler, Policy as CallPolicy, RegisteredResolver, Resolver, RuleError,
    Rules, Verdict,
};
use crate::runtime::admission::Sidecar;
use crate::sandbox::SharedServices;
use crate::services::ask::QuestionHandler;
use crate::services::debug_log::DebugLog;
use crate::services::files::{
    DATA_DIRS, DataDirs, DefaultRoot, FileAccess, FileRoot, FileRoots, Files, RootError,
};
use crate::services::http::HostGrant;
use crate::services::log_listener::LogListener;
use crate::services::trusted::{TrustedPaths, relative_to};

use super::Runtime;
use super::loader::{Loader, Policy};
use super::plugin::{FileIds, PluginDirs, PluginEntry, PluginFile};
use super::registry::{Names, Naming};
use super::search::{Deferral, SEARCH_TOOLS};

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
    /// The file root could not be opened, or plugins could change what the host trusts
    /// through it.
    #[error("cannot use {0} as the file root: {1}")]
    Root(PathBuf, RootError),
    /// The directory of the plugins' own directories lies inside what the host trusts.
    #[error("cannot keep the plugins' data in {0}: {1}")]
    DataDir(PathBuf, RootError),
    /// The debug log could not be opened.
    #[error("cannot open the debug log {0}: {1}")]
    DebugLog(PathBuf, std::io::Error),
    /// No engine was given and a new one could not be made.
    #[error("cannot set up the sandbox engine: {0}")]
    Engine(#[from] EngineError),
    /// A permission rule, preset or interceptor glob cannot be used.
    #[error("{0}")]
    Permissions(#[from] RuleError),
    /// A `max_concurrent` of the configuration is not a number of calls.
    #[error("{0}")]
    Config(String),
}

/// Adds to `trusted` what the plugin files found in plugin directories, and their
/// sidecar manifests, point to when they are symlinks: the directory is trusted, but
/// a link's target may lie anywhere, in the file root too, where a plugin could
/// rewrite another plugin's code. (A file given alone is trusted through its links
/// already.)
fn trust_link_targets(files: &[PluginFile], trusted: &mut TrustedPaths) {
    let is_link = |path: &Path| {
        std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink())
    };
    for file in files {
        if is_link(&file.path) {
            trusted.add("the plugin file", &file.path);
        }
        let sidecar = sidecar_path(&file.path);
        if !matches!(file.sidecar, Sidecar::NotListed) && is_link(&sidecar) {
            trusted.add("the plugin manifest", &sidecar);
        }
    }
}

/// Configures and loads a [`Runtime`].
#[derive(Default)]
pub struct RuntimeBuilder {
    plugin_dirs: Vec<PathBuf>,
    plugin_files: Vec<PathBuf>,
    config: Config,
    root: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    limits: Limits,
    command_line: CommandLine,
    pins: Pins,
    trust: Option<TrustPolicy>,
    debug_log: Option<PathBuf>,
    engine: Option<Engine>,
    log_listener: Option<Arc<dyn LogListener>>,
    resolvers: Vec<RegisteredResolver>,
    on_permission: Option<Arc<dyn PermissionHandler>>,
    on_question: Option<Arc<dyn QuestionHandler>>,
    /// `None`: `ask`.
    permission_default: Option<Verdict>,
    rules: CommandLineRules,
    interceptors: Vec<Interceptor>,
    /// `None`: [`DEFAULT_INTERCEPTOR_TIMEOUT`].
    interceptor_timeout: Option<Duration>,
    max_concurrent: Option<usize>,
    reserved: HashSet<String>,
    untrusted_output: Option<UntrustedOutput>,
    /// `None`: the configuration's, or the engine cache's `results/`.
    results: Option<Option<ResultStore>>,
    /// Whether plugins' `requires` and `conflicts` are ignored.
    alone: bool,
    /// `None`: the configuration's `[tools] deferred`, else off.
    deferred: Option<bool>,
    /// Files the embedder's host reads for itself (a bearer token, a key), with what
    /// messages call them.
    host_files: Vec<(&'static str, PathBuf)>,
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

    /// The one directory tree every plugin without a root of its own
    /// (`[plugins.ID.files] root`) shares. Default: the config's `[files] root`, else
    /// each plugin its own directory under [`RuntimeBuilder::data_dir`] when one is
    /// given, else the current directory, unless that is `/`, the home directory or an
    /// ancestor of it (then plugins get no file access, with a warning: they could
    /// change the user's startup files). A root that is, or lies inside, a path the host
    /// trusts (a plugin directory, the cache, ...) is refused; such paths inside the
    /// root are out of plugins' reach (see [`crate::services::trusted`]).
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// Gives each plugin without a root of its own (`[plugins.ID.files] root`) or a
    /// shared one ([`RuntimeBuilder::root`], `[files] root`) the directory `dir/ID`
    /// (a namespaced id's `/` written `+`), created with mode 0700 on the plugin's first
    /// write; no plugin reaches another's. Without it, such plugins share the current
    /// directory as [`RuntimeBuilder::root`] says. The command gives
    /// `$XDG_DATA_HOME/toolcell/data`.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// The limits every plugin starts from: the defaults, which the configuration
    /// file refines (see [`crate::config::grants`] for the order of precedence).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Grants every plugin HTTP access to a host the default policy refuses
    /// (`--allow-http`; added to the configuration file's grants).
    pub fn allow_http(mut self, grant: HostGrant) -> Self {
        self.command_line.http_grants.push(grant);
        self
    }

    /// HTTP bounds (and grants, as text) that win over the configuration file's, for
    /// every plugin: what the command line says.
    pub fn http_overrides(mut self, overrides: HttpSection) -> Self {
        self.command_line.http = overrides;
        self
    }

    /// The most file access any plugin may get, over the configuration file's
    /// (`--files`).
    pub fn file_access(mut self, access: FileAccess) -> Self {
        self.command_line.files = Some(access);
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

    /// Appends `ctx:log` and `print` output to `path`; `None` (the default) turns the
    /// debug log off.
    pub fn debug_log(mut self, path: Option<PathBuf>) -> Self {
        self.debug_log = path;
        self
    }

    /// Keeps `names` for the embedder's own tools (clm-tool(5): a name is unique across
    /// plugins *and* built-in tools): a plugin tool registered under one of them is
    /// reported (`tool_collision`) and answers only to its path.
    pub fn reserve_tool_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.reserved.extend(names.into_iter().map(Into::into));
        self
    }

    /// How the output of plugins that are not trusted reaches the model, over the
    /// configuration's `[output] untrusted` (`--untrusted-output`); a plugin's own
    /// `[plugins.ID.output] untrusted` still decides for it (see [`crate::output::envelope`]).
    pub fn untrusted_output(mut self, mode: UntrustedOutput) -> Self {
        self.untrusted_output = Some(mode);
        self
    }

    /// The engine plugins run on, with its compiled-code cache. Give clones of one
    /// engine to several builders to share compiled code, the instance pool and the
    /// linked Lua guest. Default: a new engine with [`Options::default`] (no cache).
    pub fn engine(mut self, engine: Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Tells `listener` every line plugins log (`ctx:log`, `print`, `warn`), besides
    /// the debug log; with one, plugins always report their log to the host.
    pub fn log_listener(mut self, listener: Arc<dyn LogListener>) -> Self {
        self.log_listener = Some(listener);
        self
    }

    /// Adds a permission resolver, asked before the user's rules unless `priority`
    /// says otherwise (see [`crate::policy`]; [`EMBEDDER_PRIORITY`] is the usual
    /// choice). Resolvers of one priority are asked in the order they were added.
    ///
    /// [`EMBEDDER_PRIORITY`]: crate::policy::EMBEDDER_PRIORITY
    pub fn resolver(mut self, name: &str, priority: i32, resolver: impl Resolver) -> Self {
        self.resolvers.push(RegisteredResolver {
            name: name.to_string(),
            priority,
            resolver: Arc::new(resolver),
        });
        self
    }

    /// Who answers when the policy says `ask`, for calls made without a session of
    /// their own. Without one, `ask` allows the call.
    pub fn on_permission(mut self, handler: impl PermissionHandler) -> Self {
        self.on_permission = Some(Arc::new(handler));
        self
    }

    /// Who answers the questions plugins ask (`ctx:ask`) during calls made without a
    /// session of their own. Without one, a plugin's question is unanswered.
    pub fn on_question(mut self, handler: impl QuestionHandler) -> Self {
        self.on_question = Some(Arc::new(handler));
        self
    }

    /// The decision when no resolver, rule, preset or `no_prompt` decides and the
    /// configuration sets no `[permissions] default`. Default: `ask` (clm-tool(5):
    /// a tool without `no_prompt` is confirmed first); the CLI uses `allow`.
    pub fn permission_default(mut self, verdict: Verdict) -> Self {
        self.permission_default = Some(verdict);
        self
    }

    /// Permission rules that come before the configuration file's (`--allow`,
    /// `--ask`, `--deny`).
    pub fn permission_rules(mut self, rules: CommandLineRules) -> Self {
        self.rules = rules;
        self
    }

    /// Adds an interceptor (see [`Interceptor`]).
    pub fn interceptor(mut self, interceptor: Interceptor) -> Self {
        self.interceptors.push(interceptor);
        self
    }

    /// How long an interceptor may take unless it says otherwise (default 10 s).
    pub fn interceptor_timeout(mut self, timeout: Duration) -> Self {
        self.interceptor_timeout = Some(timeout);
        self
    }

    /// How many calls of the whole runtime run at once (0: no cap), over the
    /// configuration's `[limits] max_concurrent`.
    pub fn max_concurrent(mut self, calls: usize) -> Self {
        self.max_concurrent = Some(calls);
        self
    }

    /// Marks `path` as a file the host reads for itself (`what` names it in messages:
    /// "the bearer token file"): like the config and lock files, plugins may neither
    /// read nor change it when it lies in their file root, whether given there or
    /// reached through a symlink, and a root inside it is refused.
    pub fn host_file(mut self, what: &'static str, path: impl Into<PathBuf>) -> Self {
        self.host_files.push((what, path.into()));
        self
    }

    /// Keeps the whole outputs of results the model sees cut in `store` (`None`: keeps
    /// them nowhere). Default: the configuration's `[output] results_dir`, else
    /// `results/` in the directory of the engine's compiled-code cache.
    pub fn result_store(mut self, store: Option<ResultStore>) -> Self {
        self.results = Some(store);
        self
    }

    /// Whether sessions list a tool only once `search_tools` finds it (`serve
    /// --deferred`), over the configuration's `[tools] deferred`; a plugin's own
    /// `[plugins.ID] defer` still decides for its tools. Either way, a session offers
    /// `search_tools` while some tool in its scope is deferred, and the name
    /// `search_tools` is kept for it (see docs/tool-search.md).
    pub fn deferred(mut self, deferred: bool) -> Self {
        self.deferred = Some(deferred);
        self
    }

    /// Registers every plugin whatever it requires or conflicts with: for a plugin file
    /// loaded by itself to be looked at (`inspect`, `pack`'s check), where what it
    /// requires is not there by design.
    pub(crate) fn ignoring_dependencies(mut self) -> Self {
        self.alone = true;
        self
    }

    /// Finds the plugin files, checks and loads each into its own sandbox
    /// (concurrently), and registers their tools in a deterministic order. A plugin
    /// that is refused or fails to load is reported in [`Runtime::diagnostics`] and
    /// skipped; the others load.
    pub async fn build(mut self) -> Result<Runtime, BuildError> {
        let engine = match self.engine.take() {
            Some(engine) => engine,
            None => Engine::new(Options::default())?,
        };
        let store = self.result_store_or_default(&engine);
        let mut trusted = self.trusted_paths(&engine, store.as_ref());
        let results: Result<Arc<ResultStore>, Arc<str>> = match store {
            Some(store) => Ok(Arc::new(store)),
            None => Err("no result store is set".into()),
        };
        let dirs = PluginDirs::new(self.plugin_dirs, self.plugin_files, &mut trusted);
        let files = dirs.discover()?;
        trust_link_targets(&files, &mut trusted);
        let debug_log = match &self.debug_log {
            Some(path) => {
                Some(Arc::new(DebugLog::open(path).map_err(|error| {
                    BuildError::DebugLog(path.clone(), error)
                })?))
            }
            None => None,
        };
        let file_roots = file_roots(
            self.root.take(),
            self.data_dir.as_deref(),
            &self.config,
            &mut trusted,
        )?;
        let mut cache = engine.cache().clone();
        let granted = file_roots
            .by_plugin
            .values()
            .chain(match &file_roots.default {
                DefaultRoot::Shared(files) => Some(files),
                DefaultRoot::Own(_) => None,
            });
        for files in granted {
            if let (Files::Root(root), Some(dir)) = (files, cache.dir())
                && relative_to(&trusted.resolve(dir), root.path()).is_some()
            {
                tracing::warn!(
                    "not using the compiled-code cache {}: it lies inside the file root {}, \
                     where plugins could write native code the host would run (set \
                     TOOLCELL_CACHE_DIR, or choose another root)",
                    dir.display(),
                    root.path().display()
                );
                cache = CodeCache::new(None);
                break;
            }
        }
        let trust = self.trust.unwrap_or_else(|| self.config.trust.clone());
        let max_args_bytes = self.limits.max_args_bytes;
        let caps = Caps::new(
            self.max_concurrent
                .or(self.config.limits.max_concurrent)
                .unwrap_or(0),
            self.config
                .tool_caps()
                .map_err(|error| BuildError::Config(error.to_string()))?,
            self.config.plugin_caps(),
        );
        let call_policy = CallPolicy {
            chain: Chain::new(self.resolvers),
            rules: Rules::new(&self.config.permissions, &self.rules)?,
            default: self.permission_default.unwrap_or(Verdict::Ask),
            interceptors: Interceptors::new(
                self.interceptors,
                self.interceptor_timeout
                    .unwrap_or(DEFAULT_INTERCEPTOR_TIMEOUT),
            )?,
            caps,
            meters: Meters::default(),
            approvals: Arc::new(match self.on_question {
                Some(handler) => Approvals::new(self.on_permission).with_questions(handler),
                None => Approvals::new(self.on_permission),
            }),
        };
        let deferral = Deferral {
            default: self
                .deferred
                .or(self.config.tools.deferred)
                .unwrap_or(false),
            plugins: self
                .config
                .plugins
                .iter()
                .filter_map(|(id, plugin)| Some((id.clone(), plugin.defer?)))
                .collect(),
        };
        if deferral.is_possible() {
            self.reserved.insert(SEARCH_TOOLS.to_string());
        }
        let naming = Naming {
            aliases: self
                .config
                .aliases
                .iter()
                .map(|(alias, target)| (alias.clone(), target.clone()))
                .collect(),
            reserved: self.reserved,
            config_file: self
                .config
                .path()
                .map_or_else(|| PathBuf::from("(config)"), Path::to_path_buf),
        };
        let descriptions = self.config.tool_descriptions();
        let untrusted = self.config.untrusted_policy(self.untrusted_output);
        let services = SharedServices {
            tool_config: Arc::new(self.config.tool_config_json()),
            files: file_roots,
            debug_log,
            log_listener: self.log_listener,
        };
        let policy = Policy {
            capabilities: CapabilityPolicy::new(self.limits, self.config, self.command_line),
            pins: self.pins,
            trust,
        };
        let loader = Arc::new(Loader::new(engine, cache, services, policy));
        // The loads run concurrently inside this task rather than as tasks of their own:
        // what they wait on (reading large files, compiling) already runs on the
        // blocking pool, instances are created one at a time anyway (`sandbox::turns`),
        // and a load handed to another thread costs two cross-thread wake-ups.
        let ids = Arc::new(FileIds::of(&files));
        let loads = files.into_iter().map(|file| {
            // Boxed: a load's future is large, and joining moves it.
            AssertUnwindSafe(Box::pin(loader.load_plugin(file.clone(), ids.clone())))
                .catch_unwind()
                .map(move |loaded| {
                    loaded.unwrap_or_else(|_| {
                        tracing::error!("loading {} panicked", file.path.display());
                        PluginEntry::unfinished(file, "loading it panicked (a toolcell bug)")
                    })
                })
        });
        let plugins = futures_util::future::join_all(loads).await;
        let mut runtime = Runtime {
            plugins,
            infos: Vec::new(),
            tools: Vec::new(),
            entries: Vec::new(),
            names: Names::default(),
            naming,
            descriptions,
            untrusted,
            envelope: Envelope::fresh(),
            unavailable: HashMap::new(),
            diagnostics: Vec::new(),
            next_call: AtomicU64::new(1),
            run: crate::output::results::new_run(),
            results,
            max_args_bytes,
            dirs,
            loader,
            policy: Arc::new(call_policy),
            gates: Vec::new(),
            ignore_dependencies: self.alone,
            deferral,
        };
        runtime.rebuild();
        for diagnostic in &runtime.diagnostics {
            tracing::warn!("{}", diagnostic.message);
        }
        Ok(runtime)
    }

    /// Everything this runtime's host trusts on disk (see [`crate::services::trusted`]), with
    /// `results`, the result store.
    fn trusted_paths(&self, engine: &Engine, results: Option<&ResultStore>) -> TrustedPaths {
        let mut trusted = TrustedPaths::default();
        if let Some(dir) = engine.cache().dir() {
            trusted.add("the compiled-code cache", dir);
        }
        for dir in &self.plugin_dirs {
            trusted.add("the plugin directory", dir);
        }
        for file in &self.plugin_files {
            trusted.add("the plugin file", file);
            trusted.add("the plugin manifest", &sidecar_path(file));
        }
        if let Some(path) = self.config.path() {
            trusted.add("the config file", path);
        }
        if let Some(path) = self.pins.lock_file() {
            trusted.add("the lock file", path);
        }
        if let Some(path) = &self.debug_log {
            trusted.add("the debug log", path);
        }
        if let Some(store) = results {
            trusted.add("the result store", store.dir());
        }
        for (what, path) in &self.host_files {
            trusted.add(what, path);
        }
        trusted
    }

    /// The result store set, else the configuration's, else `results/` in the
    /// engine's cache.
    fn result_store_or_default(&self, engine: &Engine) -> Option<ResultStore> {
        match &self.results {
            Some(store) => store.clone(),
            None => self.config.result_store(engine.cache().dir()),
        }
    }
}

/// The root of each plugin: `[plugins.ID.files] root` of `config`, else the shared
/// root (`root`, else `[files] root`), else its own directory under `data_dir`, else the
/// current directory. The plugins' data directory is trusted from here on, so a root
/// that holds it keeps it out of reach and a root inside it is refused; the plugins' own
/// directories are checked against what was trusted before it.
fn file_roots(
    root: Option<PathBuf>,
    data_dir: Option<&Path>,
    config: &Config,
    trusted: &mut TrustedPaths,
) -> Result<FileRoots, BuildError> {
    let before_data = trusted.clone();
    if let Some(base) = data_dir {
        trusted.add(DATA_DIRS, base);
    }
    let default = match (root.or_else(|| config.files_root()), data_dir) {
        (None, Some(base)) => DefaultRoot::Own(Arc::new(
            DataDirs::new(base, before_data)
                .map_err(|error| BuildError::DataDir(base.to_path_buf(), error))?,
        )),
        (shared, _) => DefaultRoot::Shared(open_root(shared, trusted)?),
    };
    let mut by_plugin = HashMap::new();
    for (id, root) in config.plugin_roots() {
        let files = open_root(Some(root), trusted)?;
        by_plugin.insert(id.to_string(), files);
    }
    Ok(FileRoots { by_plugin, default })
}

/// The file root: `root` when given (an error when it cannot be granted), else the
/// current directory, which is refused (plugins get no file access, with one warning)
/// where a plugin could reach the user's startup files or what the host trusts.
fn open_root(root: Option<PathBuf>, trusted: &mut TrustedPaths) -> Result<Files, BuildError> {
    if let Some(root) = root {
        let opened =
            FileRoot::open(&root, trusted).map_err(|error| BuildError::Root(root, error))?;
        return Ok(Files::Root(Arc::new(opened)));
    }
    let cwd = trusted
        .current_dir()
        .map_err(|error| BuildError::Root(PathBuf::from("."), error.into()))?;
    let resolved = trusted.resolve(&cwd);
    let home = std::env::home_dir().map(|home| trusted.resolve(&home));
    let refusal = match default_root_refusal(&resolved, home.as_deref()) {
        Some(refusal) => refusal,
        None => match FileRoot::open(&cwd, trusted) {
            Ok(opened) => return Ok(Files::Root(Arc::new(opened))),
            Err(RootError::Trusted(what)) => format!("it is or lies inside {what}"),
            Err(error) => return Err(BuildError::Root(cwd, error)),
        },
    };
    let reason = format!(
        "file access is off: no file root was given, and the default, the current \
         directory {}, {refusal}; grant a directory with --root DIR (or [files] root in \
         the config)",
        cwd.display()
    );
    tracing::warn!("{reason}");
    Ok(Files::Refused(reason.into()))
}

/// Why the current directory `cwd` cannot be the default file root, if it cannot:
/// from `/`, the home directory or any ancestor of it, a plugin could write the user's
/// startup files (`~/.bashrc`, `~/.ssh/authorized_keys`). Both paths are resolved
/// ([`TrustedPaths::resolve`]), so a symlink to home is home.
fn default_root_refusal(cwd: &Path, home: Option<&Path>) -> Option<String> {
    if cwd.parent().is_none() {
        return Some("is the filesystem root".to_string());
    }
    let home = home?;
    if cwd == home {
        Some("is your home directory".to_string())
    } else if relative_to(home, cwd).is_some() {
        Some(format!("contains your home directory {}", home.display()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_root_is_refused_at_home_above_it_and_at_the_filesystem_root() {
        let base = tempfile::TempDir::new().expect("temp dir");
        let home = base.path().join("home/me");
        std::fs::create_dir_all(home.join("project")).expect("home");
        let refused = |cwd: &Path| {
            let mut paths = TrustedPaths::default();
            let cwd = paths.resolve(cwd);
            default_root_refusal(&cwd, Some(&paths.resolve(&home)))
        };

        assert_eq!(refused(&home).as_deref(), Some("is your home directory"));
        assert!(
            refused(&base.path().join("home"))
                .is_some_and(|why| why.starts_with("contains your home directory"))
        );
        assert_eq!(
            refused(Path::new("/")).as_deref(),
            Some("is the filesystem root")
        );
        assert_eq!(refused(&home.join("project")), None);
        assert_eq!(refused(&base.path().join("elsewhere")), None);
        // Through a symlink, home is still home.
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&home, &link).expect("symlink");
        assert_eq!(refused(&link).as_deref(), Some("is your home directory"));
        // Without a home directory, only `/` is refused.
        let base = TrustedPaths::default().resolve(base.path());
        assert_eq!(default_root_refusal(&base, None), None);
    }
}
