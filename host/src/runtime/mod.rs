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
//!
//! `builder` configures and loads; `loader` admits, grants and instantiates one file;
//! `plugin` checks what a load produced; this module keeps the registry and makes calls.

pub(crate) mod admission;
mod builder;
mod dependencies;
pub(crate) mod diagnostic;
mod loader;
mod offered;
mod plugin;
mod registry;
#[cfg(feature = "watch")]
pub mod reload;
mod search;
mod session;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::base::wording::json_kind;
use crate::output::cut::{self, Kept, OutputLimits};
use crate::output::envelope::{Envelope, OutputPolicy};
use crate::output::outcome::CallOutcome;
use crate::output::parts;
use crate::output::progress::{self, ProgressReceiver, ProgressUpdates};
use crate::output::results::{self, ResultError, ResultStore};
use crate::output::stats::{PluginStats, Stats, ToolMeter};
use crate::policy::plugin_info::PluginInfo;
use crate::policy::{Approvals, Cancellation, Finished, Gate, Gated, Policy};
use crate::runtime::admission::Refusal;
use crate::sandbox::{Ended, MemoryUse, PluginHandle};
use crate::services::ask::{Questions, Route};
use crate::tool::strict_schema::drop_optional_nulls;
use crate::tool::validation::SchemaValidator;

use crate::runtime::diagnostic::{Diagnostic, DiagnosticKind, Severity};
pub use crate::tool::info::{ListedTool, ToolInfo};
use crate::tool::names::ToolNames;
pub use builder::{BuildError, RuntimeBuilder};
pub use plugin::PluginUpdate;
pub use search::{DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, SEARCH_TOOLS};
pub use session::{Scope, Session};

use loader::Loader;
use plugin::{FileIds, PluginDirs, PluginEntry, ToolEntry};
use registry::{Names, Naming};

/// Why a call could not be made at all (as opposed to a tool that ran and failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// The tool belongs to a plugin that did not load (or a registration the host
    /// refused); `reason` says why.
    #[error("tool {} is unavailable: {reason}", quoted_name(name))]
    Unavailable {
        /// The name asked for.
        name: String,
        /// The diagnostic that explains it.
        reason: String,
    },
    /// No loaded plugin registered this tool (or, for a [`Session`], it is not in the
    /// session's scope; or it is hidden, and the call was made with
    /// [`CallOptions::refuse_hidden`]).
    #[error("unknown tool {}{}", quoted_name(name), did_you_mean(suggestions))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The closest names that would have been found, closest first (at most three).
        suggestions: Vec<String>,
    },
    /// The arguments are not a JSON object, too large, or break the tool's schema.
    #[error("invalid arguments for '{tool}': {message}")]
    InvalidArguments {
        /// The tool called.
        tool: String,
        /// What is wrong with them.
        message: String,
    },
}

/// How a call is made, beyond its tool and arguments ([`Runtime::call_with`]).
#[derive(Debug, Default)]
pub struct CallOptions {
    /// The id the call takes, reserved with [`Runtime::reserve_call_id`] so that the
    /// caller can be ready for what the call does (say, its log) before it starts;
    /// none: a fresh one.
    pub id: Option<ReservedCallId>,
    /// Refuse a hidden tool as unknown. Hidden tools are for plugin code, not for a
    /// model: MCP clients and `toolcell call` (without `--include-hidden`) get this.
    pub refuse_hidden: bool,
    /// The approvals whose handler answers `ask` and that remember "allow for the
    /// session" answers (see docs/policy.md); none: the session's, or without a
    /// session the runtime's own ([`Runtime::approvals`]).
    pub approvals: Option<Arc<Approvals>>,
}

/// A call id handed out by [`Runtime::reserve_call_id`], for one call.
#[derive(Debug)]
pub struct ReservedCallId(u64);

impl ReservedCallId {
    /// The id (what [`Call::id`] will say).
    pub fn get(&self) -> u64 {
        self.0
    }
}

/// A tool name as errors quote it: at most its first [`SHOWN_NAME_CHARS`] characters,
/// escaped, since a name a client sent can be anything.
fn quoted_name(name: &str) -> String {
    let count = name.chars().count();
    let shown: String = name.chars().take(SHOWN_NAME_CHARS).collect();
    let shown = shown.escape_debug();
    if count > SHOWN_NAME_CHARS {
        format!("'{shown}…' (a name of {count} characters)")
    } else {
        format!("'{shown}'")
    }
}

/// How much of an unknown tool's name an error quotes.
const SHOWN_NAME_CHARS: usize = 64;

/// Loaded plugins and their tools.
///
/// Calls take `&self`; changing the set of plugins ([`Runtime::apply`],
/// [`Runtime::reload`]) takes `&mut self`, so a server that reloads plugins while it
/// serves keeps the runtime behind a lock and holds it only to start a call or to swap
/// a plugin in: a [`Call`] does not borrow the runtime, and loading happens outside.
pub struct Runtime {
    /// Every plugin file, in load order.
    plugins: Vec<PluginEntry>,
    /// The plugins that loaded and hold their id, in load order: derived by `rebuild`.
    infos: Vec<Arc<PluginInfo>>,
    /// The registered tools, in load order: derived from `plugins` by `rebuild`.
    tools: Vec<ToolInfo>,
    /// How to call each tool, parallel to `tools`.
    entries: Vec<ToolEntry>,
    /// The names each tool answers to, and the names the model sees: derived by
    /// `rebuild`.
    names: Names,
    /// The user's aliases and the embedder's reserved names.
    naming: Naming,
    /// `[tools.NAME] description`: what the model reads instead of the plugin's words.
    descriptions: HashMap<String, String>,
    /// Which plugins' output is enveloped as untrusted.
    untrusted: OutputPolicy,
    /// The envelope of calls made without a session.
    envelope: Envelope,
    /// Tools no loaded plugin offers, but a plugin that failed would have (or offered a
    /// registration the host refused), with the reason: derived by `rebuild`.
    unavailable: HashMap<String, Unavailable>,
    diagnostics: Vec<Diagnostic>,
    next_call: AtomicU64,
    /// This run's id, which the ids of its stored results start with.
    run: u32,
    /// Where whole outputs of cut results go, or why they go nowhere.
    results: Result<Arc<ResultStore>, Arc<str>>,
    max_args_bytes: usize,
    dirs: PluginDirs,
    loader: Arc<Loader>,
    /// Approval, interceptors, caps and meters.
    policy: Arc<Policy>,
    /// What the policy does with each tool's calls, parallel to `tools`.
    gates: Vec<Arc<Gate>>,
    /// Whether plugins register whatever they require or conflict with
    /// ([`RuntimeBuilder::ignoring_dependencies`]).
    ignore_dependencies: bool,
    /// Which tools a session lists only once `search_tools` finds them.
    deferral: search::Deferral,
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

    /// The tool a name calls: an alias, a plain name, a path (`PLUGIN-ID/TOOL`) or the
    /// wire name of a path (see [`crate::tool::names::wire_name`]).
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.names.resolve(name).map(|index| &self.tools[index])
    }

    /// Whether some tools may be deferred (`serve --deferred`, `[tools] deferred`,
    /// `[plugins.ID] defer`): sessions then offer `search_tools` while any tool in
    /// their scope is left to find, and their lists change as it finds them.
    pub fn offers_tool_search(&self) -> bool {
        self.deferral.is_possible()
    }

    /// The tag of the envelope around the output of calls made without a session
    /// (`untrusted_output_NONCE`; see [`crate::output::envelope`]).
    pub fn envelope_tag(&self) -> &str {
        self.envelope.tag()
    }

    /// What the runtime has counted: every tool's calls by outcome, their latency and
    /// fuel, and every plugin's peak memory.
    pub fn stats(&self) -> Stats {
        Stats {
            tools: self.policy.meters.read(),
            plugins: self
                .plugins
                .iter()
                .filter_map(|plugin| {
                    let (info, handle) = (plugin.info.as_ref()?, plugin.handle.as_ref()?);
                    self.infos.contains(info).then(|| PluginStats {
                        plugin: info.manifest.id.clone(),
                        peak_memory: handle.peak_memory(),
                    })
                })
                .collect(),
        }
    }

    /// The approvals of calls made without a session of their own: the handler given
    /// to [`RuntimeBuilder::on_permission`], and the tools allowed for the rest of the
    /// runtime's life.
    pub fn approvals(&self) -> &Arc<Approvals> {
        &self.policy.approvals
    }

    /// Whether the permission policy lists the tool at `index`: it does not deny it
    /// outright (whatever the arguments).
    fn permits_listing(&self, index: usize) -> bool {
        self.policy.lists(&self.gates[index], &self.tools[index])
    }

    /// Every loaded plugin, in load order.
    pub fn plugins(&self) -> &[Arc<PluginInfo>] {
        &self.infos
    }

    /// What went wrong or looked odd with the plugins as they are loaded now.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|diagnostic| diagnostic.severity == Severity::Error)
    }

    /// The result store that keeps the whole outputs of results the model saw cut, if
    /// there is one (see [`Call::result_id`]).
    pub fn result_store(&self) -> Option<&ResultStore> {
        self.results.as_deref().ok()
    }

    /// The whole output of a result the model saw cut, by the id its notice gave.
    /// A part kept aside (`0a1b2c3d-17-2`) is bytes: read it from
    /// [`Runtime::result_store`] with [`ResultStore::get_bytes`].
    pub fn result(&self, id: &str) -> Result<String, ResultError> {
        match &self.results {
            Ok(store) => store.get(id),
            Err(reason) => Err(ResultError::NoStore(reason.to_string())),
        }
    }

    /// How much memory plugin `plugin` (its id) holds: a future that resolves once
    /// the plugin's running step is done, and does not borrow the runtime. `None` when
    /// no loaded plugin with tools has that id; the future gives `None` while the
    /// plugin has no instance (it crashed and could not be restarted).
    pub fn memory(&self, plugin: &str) -> Option<impl Future<Output = Option<MemoryUse>> + use<>> {
        let handle = self
            .entries
            .iter()
            .find(|entry| entry.handle.name() == plugin)?
            .handle
            .clone();
        Some(async move { handle.memory().await })
    }

    /// The plugin directories, in load order, as given to the builder.
    pub fn plugin_dirs(&self) -> &[PathBuf] {
        &self.dirs.given
    }

    /// Reads plugin file `path` again: a future that loads it into a fresh sandbox (or
    /// finds it gone) without touching this runtime; [`Runtime::apply`] then puts it in
    /// place. `path` may also be a `.lua` plugin's sidecar manifest. `None` when `path`
    /// is not a `*.lua` or `*.wasm` file (or sidecar) directly inside one of the plugin
    /// directories.
    pub fn load_file(
        &self,
        path: &Path,
    ) -> Option<impl Future<Output = PluginUpdate> + Send + 'static> {
        let file = self.dirs.locate(path)?;
        let loader = self.loader.clone();
        let others = self.plugins.iter().map(|plugin| &plugin.file);
        let ids = Arc::new(FileIds::of(others.chain([&file])));
        Some(async move {
            let exists = tokio::fs::metadata(&file.path)
                .await
                .is_ok_and(|metadata| metadata.is_file());
            let plugin = if exists {
                Some(loader.load_plugin(file.clone(), ids).await)
            } else {
                None
            };
            PluginUpdate { file, plugin }
        })
    }

    /// Replaces, adds or removes the plugin of `update`; every other plugin keeps its
    /// sandbox and its state. The plugin keeps its place in the load order, so the rule
    /// that the first registration of a name (or id) wins holds as if everything had
    /// loaded afresh. Calls in flight on the old sandbox finish there; new calls go to
    /// the new one. Returns the diagnostics that are new (also logged).
    pub fn apply(&mut self, update: PluginUpdate) -> Vec<Diagnostic> {
        let position = self
            .plugins
            .binary_search_by(|plugin| plugin.file.order().cmp(&update.file.order()));
        match (position, update.plugin) {
            (Ok(index), Some(mut plugin)) => {
                if plugin.info.is_none() {
                    // A reload that failed: the tools the plugin offered before are the
                    // ones a caller will look for.
                    let before: Vec<String> = self.plugins[index]
                        .tool_names()
                        .map(str::to_string)
                        .collect();
                    for name in before {
                        if !plugin.offered.contains(&name) {
                            plugin.offered.push(name);
                        }
                    }
                }
                self.plugins[index] = plugin;
            }
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

    /// Derives the registry from the plugins in file order: the first plugin with an
    /// id wins it; plugins whose requirements or conflicts fail are left out, and the
    /// rest register in file order, each after the plugins it requires
    /// (`dependencies`); the first registration of a name wins. What is left out is
    /// reported.
    fn rebuild(&mut self) {
        self.infos.clear();
        self.tools.clear();
        self.entries.clear();
        self.gates.clear();
        self.unavailable.clear();
        self.diagnostics.clear();
        let tools = self.plugins.iter().map(|plugin| plugin.tools.len()).sum();
        self.infos.reserve(self.plugins.len());
        self.tools.reserve(tools);
        self.entries.reserve(tools);
        let mut owners: Vec<Arc<PluginInfo>> = Vec::with_capacity(tools);
        // A file added after a plugin of the same id loaded refuses both, as a fresh
        // build would: an id names one plugin file.
        let ids = FileIds::of(self.plugins.iter().map(|plugin| &plugin.file));
        // The plugins that loaded and hold their id, in file order.
        let mut present = Vec::with_capacity(self.plugins.len());
        for (index, plugin) in self.plugins.iter().enumerate() {
            self.diagnostics.extend(plugin.diagnostics.iter().cloned());
            if plugin.info.is_none() {
                if let Some(failure) = plugin
                    .diagnostics
                    .iter()
                    .rfind(|diagnostic| diagnostic.severity == Severity::Error)
                {
                    mark_unavailable(&mut self.unavailable, plugin, &failure.message);
                }
                continue;
            }
            if let Some(shared) = ids.shared(&plugin.file) {
                let refusal = Refusal::new(DiagnosticKind::IdCollision, shared);
                let collision = plugin::refusal_diagnostic(&plugin.file, refusal);
                mark_unavailable(&mut self.unavailable, plugin, &collision.message);
                self.diagnostics.push(collision);
                continue;
            }
            present.push(index);
        }
        let resolution = if self.ignore_dependencies {
            dependencies::Resolution {
                order: present,
                refused: Vec::new(),
            }
        } else {
            dependencies::resolve(&self.plugins, &present)
        };
        for (index, refusal) in resolution.refused {
            mark_unavailable(
                &mut self.unavailable,
                &self.plugins[index],
                &refusal.message,
            );
            self.diagnostics.push(refusal);
        }
        for index in resolution.order {
            let plugin = &self.plugins[index];
            let Some(info) = &plugin.info else { continue };
            self.infos.push(info.clone());
            if plugin.tools.is_empty() {
                self.diagnostics.push(Diagnostic {
                    file: plugin.file.path.clone(),
                    kind: DiagnosticKind::NoTools,
                    severity: Severity::Warning,
                    message: format!("plugin {} registered no tools", plugin.file.display_name()),
                });
            }
            for tool in &plugin.tools {
                match tool {
                    Ok(tool) => {
                        owners.push(Arc::clone(info));
                        self.tools.push(tool.info.clone());
                        self.entries.push(tool.entry.clone());
                    }
                    Err(rejected) => {
                        self.diagnostics.push(rejected.diagnostic.clone());
                        self.unavailable
                            .entry(rejected.name.clone())
                            .or_insert_with(|| Unavailable {
                                reason: rejected.diagnostic.message.clone(),
                                plugin: info.manifest.id.clone(),
                            });
                    }
                }
            }
        }
        let files: Vec<&Path> = self
            .entries
            .iter()
            .map(|entry| entry.file.as_path())
            .collect();
        let (names, diagnostics) = Names::build(&self.tools, &files, &self.naming);
        self.names = names;
        self.diagnostics.extend(diagnostics);
        // Rules apply to tools by every name they answer to, so gates come after names.
        self.gates
            .extend(
                self.tools
                    .iter()
                    .zip(owners)
                    .enumerate()
                    .map(|(index, (tool, plugin))| {
                        Arc::new(self.policy.gate(tool, self.names.of(index), plugin))
                    }),
            );
        self.diagnostics.extend(self.unmatched_rules());
        // Each plugin's diagnostics together, in load order; the configuration's last.
        if self.diagnostics.len() > 1 {
            let order: HashMap<&Path, usize> = self
                .plugins
                .iter()
                .enumerate()
                .map(|(index, plugin)| (plugin.file.path.as_path(), index))
                .collect();
            self.diagnostics.sort_by_key(|diagnostic| {
                order
                    .get(diagnostic.file.as_path())
                    .copied()
                    .unwrap_or(usize::MAX)
            });
        }
        let names = &self.names;
        self.unavailable.retain(|name, _| !names.contains(name));
    }

    /// A warning for each glob of the user's permission rules and presets that matches
    /// no tool, with the closest names.
    fn unmatched_rules(&self) -> Vec<Diagnostic> {
        self.policy
            .rules
            .unmatched(self.names.all())
            .into_iter()
            .map(|(place, glob)| {
                let known = self.names.all().iter().flat_map(ToolNames::iter);
                Diagnostic {
                    file: self.naming.config_file.clone(),
                    kind: DiagnosticKind::RuleUnmatched,
                    severity: Severity::Warning,
                    message: format!(
                        "{place} matches no tool{}",
                        did_you_mean(&closest(glob.as_str(), known))
                    ),
                }
            })
            .collect()
    }

    /// Starts a call of `tool` with its JSON arguments (`"{}"` for none). The arguments
    /// must be a JSON object that satisfies the tool's `params_schema`; otherwise the
    /// call never reaches the plugin. The returned [`Call`] resolves to the outcome;
    /// dropping it cancels the call.
    ///
    /// The call then goes through the policy (docs/policy.md): approval, `before`
    /// interceptors, concurrency caps, the plugin, `after` interceptors. A tool with
    /// nothing of that to do goes straight to its plugin: when the plugin is idle, the
    /// call's first step runs on this thread before `call` returns (a trivial call is
    /// then already complete, and no other thread is woken); plugin code that runs on
    /// past its first yield to the executor, a few milliseconds, continues as a task of
    /// the runtime the plugin was loaded on. Otherwise the policy's work and the call
    /// start when the `Call` is first polled.
    pub fn call(&self, tool: &str, args_json: &str) -> Result<Call, InvokeError> {
        self.call_with(tool, args_json, CallOptions::default())
    }

    /// As [`Runtime::call`], as `options` say.
    pub fn call_with(
        &self,
        tool: &str,
        args_json: &str,
        options: CallOptions,
    ) -> Result<Call, InvokeError> {
        let callable = |info: &ToolInfo| !(options.refuse_hidden && info.hidden);
        let index = self
            .names
            .resolve(tool)
            .filter(|&index| callable(&self.tools[index]))
            .ok_or_else(|| {
                let hidden = self
                    .tools
                    .iter()
                    .filter(|info| info.hidden && callable(info));
                self.not_found(
                    tool,
                    self.names
                        .listed()
                        .iter()
                        .map(|listing| listing.name.as_str())
                        .chain(hidden.map(|info| info.name.as_str())),
                    &self.envelope,
                )
            })?;
        let approvals = options.approvals.as_ref().unwrap_or(&self.policy.approvals);
        self.start(
            index,
            tool,
            args_json,
            &self.envelope,
            options.id,
            approvals,
        )
    }

    /// Why `name` found no tool: unavailable (a plugin that did not load would offer
    /// it; the reason, which may quote the plugin, in `envelope` when its output is
    /// untrusted), or unknown, with the closest of `candidates`.
    fn not_found<'a>(
        &self,
        name: &str,
        candidates: impl Iterator<Item = &'a str>,
        envelope: &Envelope,
    ) -> InvokeError {
        match self.unavailable.get(name) {
            Some(unavailable) => InvokeError::Unavailable {
                name: name.to_string(),
                reason: self.plugin_text(&unavailable.plugin, envelope, &unavailable.reason),
            },
            None => InvokeError::UnknownTool {
                name: name.to_string(),
                suggestions: closest(name, candidates),
            },
        }
    }

    /// Checks the arguments and starts the tool at `index`, called as `name`, with the
    /// id `id` (none: a fresh one), through the policy with `approvals`; its output goes
    /// into `envelope` unless its plugin is trusted.
    fn start(
        &self,
        index: usize,
        name: &str,
        args_json: &str,
        envelope: &Envelope,
        id: Option<ReservedCallId>,
        approvals: &Arc<Approvals>,
    ) -> Result<Call, InvokeError> {
        let info = &self.tools[index];
        let entry = &self.entries[index];
        let gate = &self.gates[index];
        let validator = entry.validator.as_deref();
        let args = match check_arguments(self.max_args_bytes, args_json, info, validator) {
            Ok(args) => args.unwrap_or_else(|| args_json.to_string()),
            Err(message) => {
                gate.meter.invalid_arguments();
                // What is wrong may quote the tool's schema: the plugin's words.
                return Err(InvokeError::InvalidArguments {
                    tool: name.to_string(),
                    message: self.plugin_text(&info.plugin, envelope, &message),
                });
            }
        };
        let id = match id {
            Some(ReservedCallId(id)) => id,
            None => self.next_call.fetch_add(1, Ordering::Relaxed),
        };
        let span = if traced() {
            tracing::debug_span!("tool_call", call = id, tool = %info.name, plugin = %info.plugin)
        } else {
            tracing::Span::none()
        };
        let (sender, progress) = progress::channel();
        let envelope = self
            .untrusted
            .envelops(&info.plugin)
            .then(|| envelope.clone());
        let questions = approvals.question_handler().map(|handler| {
            Questions::Route(Arc::new(Route {
                handler: handler.clone(),
                tool: info.name.clone(),
                envelope: envelope.clone(),
            }))
        });
        let state = if gate.is_open(approvals) {
            let started = Instant::now();
            let outcome = span.in_scope(|| {
                entry
                    .handle
                    .start(id, &info.name, args, info.timeout, sender, questions)
            });
            CallState::Running {
                handle: entry.handle.clone(),
                outcome,
                started,
            }
        } else {
            let cancel = Arc::new(Cancellation::default());
            let max_args_bytes = self.max_args_bytes;
            let checked = (info.clone(), entry.validator.clone());
            let gated = Gated {
                id,
                tool: info.clone(),
                gate: gate.clone(),
                policy: self.policy.clone(),
                approvals: approvals.clone(),
                handle: entry.handle.clone(),
                arguments: serde_json::from_str(&args).unwrap_or_default(),
                args,
                check: Box::new(move |arguments| {
                    let text = arguments.to_string();
                    let (info, validator) = &checked;
                    check_arguments(max_args_bytes, &text, info, validator.as_deref())
                        .map(|stripped| stripped.unwrap_or(text))
                }),
                progress: sender,
                questions,
                cancel: cancel.clone(),
            };
            CallState::Gated {
                future: Box::pin(gated.run().instrument(span.clone())),
                cancel,
            }
        };
        Ok(Call {
            id,
            meter: gate.meter.clone(),
            span,
            state,
            progress,
            output_validator: entry.output_validator.clone(),
            output: Output {
                limits: entry.output,
                results: self.results.clone(),
                run: self.run,
            },
            keeping: None,
            envelope,
        })
    }

    /// `text`, which plugin `plugin` may have written, as the model gets it: inside
    /// `envelope` when the plugin's output is untrusted.
    fn plugin_text(&self, plugin: &str, envelope: &Envelope, text: &str) -> String {
        if self.untrusted.envelops(plugin) {
            envelope.wrap(text)
        } else {
            text.to_string()
        }
    }

    /// An id for a call not made yet ([`CallOptions::id`]): unique within the runtime.
    pub fn reserve_call_id(&self) -> ReservedCallId {
        ReservedCallId(self.next_call.fetch_add(1, Ordering::Relaxed))
    }

    /// Calls `tool` and waits for its outcome.
    pub async fn invoke(&self, tool: &str, args_json: &str) -> Result<CallOutcome, InvokeError> {
        Ok(self.call(tool, args_json)?.await)
    }
}

/// Whether a tracing subscriber may want a call's span and its events. Checked before
/// making them, so that without one a call makes no span at all: tracing's `log`
/// fallback (on when any crate in the build enables tracing's `log` feature) would
/// otherwise format the span's fields for the `log` crate on every call.
fn traced() -> bool {
    use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
    tracing::Level::DEBUG <= STATIC_MAX_LEVEL && tracing::Level::DEBUG <= LevelFilter::current()
}

/// Checks the arguments of a call of the tool `info`: a JSON object of at most
/// `max_bytes` that satisfies the tool's schema. Returns them as the plugin gets them:
/// as given (`None`), or without the `null`s a model held to OpenAI's strict mode sends
/// for optional properties, when only those broke the schema (see
/// [`crate::tool::strict_schema`]); or what is wrong with them.
fn check_arguments(
    max_bytes: usize,
    args_json: &str,
    info: &ToolInfo,
    validator: Option<&SchemaValidator>,
) -> Result<Option<String>, String> {
    if args_json.len() > max_bytes {
        return Err(format!(
            "they are {} bytes; the limit is {}",
            args_json.len(),
            crate::base::limits::format_bytes(max_bytes as u64)
        ));
    }
    let args = match serde_json::from_str::<serde_json::Value>(args_json) {
        Ok(args @ serde_json::Value::Object(_)) => args,
        Ok(other) => return Err(format!("expected a JSON object, got {}", json_kind(&other))),
        Err(error) => return Err(format!("not valid JSON: {error}")),
    };
    let Some(validator) = validator else {
        return Ok(None);
    };
    let problems = match validator.check(&args) {
        Ok(()) => return Ok(None),
        Err(problems) => problems,
    };
    let mut without_nulls = args;
    if let Some(schema) = &info.params_schema
        && drop_optional_nulls(&mut without_nulls, schema)
        && validator.check(&without_nulls).is_ok()
    {
        return Ok(Some(without_nulls.to_string()));
    }
    Err(problems.to_string())
}

impl Drop for Runtime {
    /// What the plugins logged reaches the file before the runtime goes (a process
    /// exits right after).
    fn drop(&mut self) {
        self.loader.flush_log();
    }
}

/// Why a tool cannot be called, and whose words the reason may quote.
#[derive(Debug, Clone)]
struct Unavailable {
    /// The diagnostic that explains it (a load error may quote the plugin).
    reason: String,
    /// The id of the plugin that offered the tool.
    plugin: String,
}

/// Remembers that the tools `plugin` offers cannot be called, and why (the first reason
/// found for a name stays).
fn mark_unavailable(
    unavailable: &mut HashMap<String, Unavailable>,
    plugin: &PluginEntry,
    reason: &str,
) {
    for name in plugin.tool_names() {
        unavailable
            .entry(name.to_string())
            .or_insert_with(|| Unavailable {
                reason: reason.to_string(),
                plugin: plugin.file.id.clone(),
            });
    }
}

/// The most names [`closest`] suggests.
const MAX_SUGGESTIONS: usize = 3;

/// The names among `candidates` close enough to `name` to be a likely typo, closest
/// first, at most [`MAX_SUGGESTIONS`].
fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = candidates
        .map(|candidate| (strsim::jaro_winkler(name, candidate), candidate))
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, candidate)| candidate.to_string())
        .collect()
}

/// ` (did you mean 'a'?)`, ` (did you mean 'a', 'b' or 'c'?)`, or nothing.
fn did_you_mean(suggestions: &[String]) -> String {
    let quoted: Vec<String> = suggestions.iter().map(|name| format!("'{name}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean {one}?)"),
        [rest @ .., last] => format!(" (did you mean {} or {last}?)", rest.join(", ")),
    }
}

/// A call in flight. Await it for the outcome; drop it (or call [`Call::cancel`]) to
/// cancel the call, which aborts its pending HTTP requests and timers (or takes it out
/// of the queue of a concurrency cap, or stops waiting for an answer to `ask`).
///
/// A result longer than the tool's output limits is cut before the outcome is given:
/// the outcome's text is what the model should see, and the whole output is kept in
/// the result store under [`Call::result_id`].
pub struct Call {
    id: u64,
    meter: Arc<ToolMeter>,
    /// The call's tracing span (`tool_call`, with the call's id, tool and plugin).
    span: tracing::Span,
    state: CallState,
    progress: ProgressReceiver,
    /// The tool's output schema, compiled: a completed call's output must be the JSON
    /// text of a value it accepts.
    output_validator: Option<Arc<SchemaValidator>>,
    output: Output,
    /// Keeping a cut result's whole output, off the async threads.
    keeping: Option<JoinHandle<CallOutcome>>,
    /// Where the outcome's text goes, when the plugin's output is untrusted.
    envelope: Option<Envelope>,
}

enum CallState {
    /// Straight to the plugin, which has the call.
    Running {
        handle: PluginHandle,
        outcome: oneshot::Receiver<Ended>,
        started: Instant,
    },
    /// Through the policy.
    Gated {
        future: Pin<Box<dyn Future<Output = Finished> + Send>>,
        cancel: Arc<Cancellation>,
    },
    /// Answered by the host itself (`search_tools`), not yet delivered.
    Answered(Option<CallOutcome>),
    /// The outcome was delivered.
    Done,
}

/// The output policy of one call.
#[derive(Clone)]
struct Output {
    limits: OutputLimits,
    results: Result<Arc<ResultStore>, Arc<str>>,
    run: u32,
}

impl Output {
    /// Whether `outcome` is a result over the limits.
    fn cuts(&self, outcome: &CallOutcome) -> bool {
        match outcome {
            CallOutcome::Completed(text) => cut::cut(text, &self.limits).is_some(),
            CallOutcome::Content(content) => parts::over(content, &self.limits),
            _ => false,
        }
    }

    /// `outcome` as the model sees it: a result over the limits is cut, with a notice
    /// saying where the whole is; the whole is kept in the result store.
    fn apply(&self, call: u64, outcome: CallOutcome) -> CallOutcome {
        let id = results::result_id(self.run, call);
        let text = match outcome {
            CallOutcome::Completed(text) => text,
            CallOutcome::Content(content) => {
                let keeping = parts::Keeping {
                    store: self.results.as_deref().map_err(|reason| &**reason),
                    id: &id,
                };
                return CallOutcome::Content(parts::fit(content, &self.limits, &keeping));
            }
            other => return other,
        };
        let Some(cut) = cut::cut(&text, &self.limits) else {
            return CallOutcome::Completed(text);
        };
        let stored = match &self.results {
            Ok(store) => store.put(&id, &text).map_err(|error| error.to_string()),
            Err(reason) => Err(reason.to_string()),
        };
        let shown = match &stored {
            Ok(path) => cut::shown(&cut, &Kept::Stored { id: &id, path }),
            Err(reason) => {
                tracing::warn!("the whole output of call {call} was not kept: {reason}");
                cut::shown(&cut, &Kept::Lost(reason.clone()))
            }
        };
        CallOutcome::Completed(shown)
    }
}

impl Call {
    /// A call of `tool` the host answered itself with `outcome` (`search_tools`),
    /// counted and cut as any other.
    fn answered(runtime: &Runtime, tool: &ToolInfo, outcome: CallOutcome) -> Call {
        let (_, progress) = progress::channel();
        Call {
            id: runtime.next_call.fetch_add(1, Ordering::Relaxed),
            meter: runtime.policy.meters.tool(&tool.name, &tool.plugin),
            span: tracing::Span::none(),
            state: CallState::Answered(Some(outcome)),
            progress,
            output_validator: None,
            output: Output {
                limits: OutputLimits::default(),
                results: runtime.results.clone(),
                run: runtime.run,
            },
            keeping: None,
            envelope: None,
        }
    }

    /// The call's id (unique within the runtime).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The id under which the whole output is kept if the result is cut (see
    /// [`Runtime::result`] and `toolcell result`): unique across runs sharing a store.
    pub fn result_id(&self) -> String {
        results::result_id(self.output.run, self.id)
    }

    /// The progress the plugin reports while the call runs (`ctx:progress`), at most
    /// one update every 100 ms; each `progress()` reads them from the call's start.
    /// When the plugin's output is untrusted, each message is inside the call's
    /// envelope, as its output is.
    pub fn progress(&self) -> ProgressUpdates {
        self.progress.updates(self.envelope.clone())
    }

    /// The envelope the call's text goes in (its output, its progress messages, what
    /// it logs), when its plugin's output is untrusted.
    pub(crate) fn envelope(&self) -> Option<&Envelope> {
        self.envelope.as_ref()
    }

    /// Whether the call's output, when it completes, is the JSON text of a structured
    /// result (the tool declared an output schema, which the output was checked
    /// against) that is not in an envelope: what MCP gives as `structuredContent`.
    pub fn is_structured(&self) -> bool {
        self.output_validator.is_some() && self.envelope.is_none()
    }

    /// `outcome` in the call's envelope, when its plugin's output is untrusted.
    fn enveloped(&self, outcome: CallOutcome) -> CallOutcome {
        match &self.envelope {
            Some(envelope) => envelope.wrap_outcome(outcome),
            None => outcome,
        }
    }

    /// Cancels the call; it resolves to a failure that says `reason`.
    pub fn cancel(&self, reason: &str) {
        match &self.state {
            CallState::Running { handle, .. } => handle.cancel(self.id, reason),
            CallState::Gated { cancel, .. } => cancel.cancel(reason),
            CallState::Answered(_) | CallState::Done => {}
        }
    }

    /// Counts the call's end and logs it in its span.
    fn record(&self, finished: &Finished) {
        self.meter
            .record(&finished.outcome, finished.ran, finished.fuel);
        if !traced() {
            return;
        }
        tracing::debug!(
            parent: &self.span,
            outcome = finished.outcome.label(),
            ran_us = finished.ran.map(|ran| ran.as_micros() as u64),
            fuel = finished.fuel,
            "call ended"
        );
    }
}

impl Future for Call {
    type Output = CallOutcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CallOutcome> {
        if let Some(keeping) = self.keeping.as_mut() {
            let kept = std::task::ready!(Pin::new(keeping).poll(cx)).unwrap_or_else(|error| {
                CallOutcome::Stopped(format!("keeping the result failed: {error}"))
            });
            return Poll::Ready(self.enveloped(kept));
        }
        let finished = match &mut self.state {
            CallState::Running {
                handle,
                outcome,
                started,
            } => {
                let ended = match Pin::new(outcome).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(ended)) => ended,
                    Poll::Ready(Err(_)) => Ended::before_running(CallOutcome::Stopped(format!(
                        "plugin '{}' stopped",
                        handle.name()
                    ))),
                };
                Finished {
                    outcome: ended.outcome,
                    ran: Some(started.elapsed()),
                    fuel: ended.fuel_used,
                }
            }
            CallState::Gated { future, .. } => match future.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(finished) => finished,
            },
            CallState::Answered(outcome) => Finished {
                outcome: outcome.take().unwrap_or_else(|| {
                    CallOutcome::Stopped("the call's outcome was already delivered".to_string())
                }),
                ran: Some(std::time::Duration::ZERO),
                fuel: 0,
            },
            CallState::Done => {
                return Poll::Ready(CallOutcome::Stopped(
                    "the call's outcome was already delivered".to_string(),
                ));
            }
        };
        self.state = CallState::Done;
        self.record(&finished);
        let outcome = finished.outcome;
        // The output is checked whole, cut to what the model may see, then enveloped.
        let outcome = match &self.output_validator {
            Some(validator) => checked_output(outcome, validator),
            None => outcome,
        };
        if !self.output.cuts(&outcome) {
            return Poll::Ready(self.enveloped(outcome));
        }
        // Writing the whole output may wait on the disk: not on an async thread.
        let output = self.output.clone();
        let call = self.id;
        match tokio::runtime::Handle::try_current() {
            Ok(tokio) => {
                self.keeping = Some(tokio.spawn_blocking(move || output.apply(call, outcome)));
                self.poll(cx)
            }
            Err(_) => Poll::Ready(self.enveloped(output.apply(call, outcome))),
        }
    }
}

/// `outcome`, or the failure of a completed call whose output is not the JSON text of a
/// value its tool's output schema accepts: the plugin broke the contract it declared.
fn checked_output(outcome: CallOutcome, validator: &SchemaValidator) -> CallOutcome {
    let output = match outcome {
        CallOutcome::Completed(output) => output,
        CallOutcome::Content(_) => {
            return CallOutcome::BrokeRule(
                "the tool's output is a result of parts; a tool with an output schema \
                 completes with a JSON value"
                    .to_string(),
            );
        }
        other => return other,
    };
    let problem = match serde_json::from_str::<serde_json::Value>(&output) {
        Ok(value) => match validator.check_output(&value) {
            Ok(()) => return CallOutcome::Completed(output),
            Err(problems) => format!("does not match its output schema: {problems}"),
        },
        Err(error) => format!(
            "is not JSON ({error}); a tool with an output schema completes with a JSON value"
        ),
    };
    CallOutcome::BrokeRule(format!("the tool's output {problem}"))
}

impl Drop for Call {
    fn drop(&mut self) {
        let ran = match &self.state {
            CallState::Answered(_) | CallState::Done => return,
            CallState::Running {
                handle, started, ..
            } => {
                handle.cancel(self.id, "the caller stopped waiting");
                Some(started.elapsed())
            }
            // Dropping the future cancels the call in the plugin, if it got there.
            CallState::Gated { .. } => None,
        };
        self.record(&Finished {
            outcome: CallOutcome::Cancelled("cancelled: the caller stopped waiting".to_string()),
            ran,
            fuel: 0,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{closest, did_you_mean};

    #[test]
    fn suggests_close_names_closest_first_and_nothing_for_a_distant_one() {
        let names = ["hello", "read_note", "write_note", "write_notes2"];
        assert_eq!(closest("helo", names.iter().copied()), ["hello"]);
        assert_eq!(
            closest("write_notes", names.iter().copied()),
            ["write_notes2", "write_note"]
        );
        assert!(closest("zzz", names.iter().copied()).is_empty());
    }

    #[test]
    fn suggestions_read_as_a_question() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(did_you_mean(&names(&["a"])), " (did you mean 'a'?)");
        assert_eq!(
            did_you_mean(&names(&["a", "b", "c"])),
            " (did you mean 'a', 'b' or 'c'?)"
        );
    }
}
