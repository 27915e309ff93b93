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

mod builder;
mod diagnostic;
mod loader;
mod offered;
mod plugin;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::grants::Grants;
use crate::manifest::Manifest;
use crate::outcome::CallOutcome;
use crate::output::{self, Kept, OutputLimits};
use crate::policy::{Approvals, Cancellation, Finished, Gate, Gated, Policy};
use crate::results::{self, ResultError, ResultStore};
use crate::sandbox::{Ended, MemoryUse, PluginHandle};
use crate::stats::{PluginStats, Stats, ToolMeter};
use crate::validation::ArgumentValidator;

pub use builder::{BuildError, RuntimeBuilder};
pub use diagnostic::{Diagnostic, DiagnosticKind, Severity};
pub use plugin::PluginUpdate;

use loader::Loader;
use plugin::{Plugin, PluginDirs, ToolEntry};

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
    /// What it was granted: its manifest's asks, cut to what the user's policy allows.
    pub grants: Grants,
}

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
    /// No loaded plugin registered this tool (or it is hidden, and the call was made
    /// with [`CallOptions::refuse_hidden`]).
    #[error("unknown tool {}{}", quoted_name(name), suggestion.as_ref().map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default())]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The closest registered name, if one is close.
        suggestion: Option<String>,
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
    /// The session whose handler answers `ask` and that remembers "allow for the
    /// session" answers (see docs/policy.md); none: the runtime's own
    /// ([`Runtime::approvals`]).
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
    plugins: Vec<Plugin>,
    /// The plugins that loaded and hold their id, in load order: derived by `rebuild`.
    infos: Vec<PluginInfo>,
    /// The registered tools, in load order: derived from `plugins` by `rebuild`.
    tools: Vec<ToolInfo>,
    /// How to call each tool, parallel to `tools`.
    entries: Vec<ToolEntry>,
    by_name: HashMap<String, usize>,
    /// Tools no loaded plugin offers, but a plugin that failed would have (or offered a
    /// registration the host refused), with the reason: derived by `rebuild`.
    unavailable: HashMap<String, String>,
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

    /// The tools the permission policy does not deny outright, in load order (hidden
    /// ones included): what `list` and MCP `tools/list` show. A denied tool is still
    /// in [`Runtime::tools`], and a call of it fails as denied.
    pub fn listed_tools(&self) -> impl Iterator<Item = &ToolInfo> {
        self.tools
            .iter()
            .zip(&self.gates)
            .filter(|(tool, gate)| self.policy.lists(gate, tool))
            .map(|(tool, _)| tool)
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

    /// The approvals of calls made with [`Runtime::call`]: the handler given to
    /// [`RuntimeBuilder::on_permission`], and the tools allowed for the rest of the
    /// runtime's life.
    pub fn approvals(&self) -> &Arc<Approvals> {
        &self.policy.approvals
    }

    /// Every loaded plugin, in load order.
    pub fn plugins(&self) -> &[PluginInfo] {
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

    /// Derives the registry from the plugins in load order: the first plugin with an
    /// id and the first registration of a name win, later ones are reported.
    fn rebuild(&mut self) {
        self.infos.clear();
        self.tools.clear();
        self.entries.clear();
        self.gates.clear();
        self.by_name.clear();
        self.unavailable.clear();
        self.diagnostics.clear();
        let mut ids: HashMap<&str, &Path> = HashMap::new();
        for plugin in &self.plugins {
            self.diagnostics.extend(plugin.diagnostics.iter().cloned());
            let Some(info) = &plugin.info else {
                if let Some(failure) = plugin
                    .diagnostics
                    .iter()
                    .rfind(|diagnostic| diagnostic.severity == Severity::Error)
                {
                    mark_unavailable(&mut self.unavailable, plugin, &failure.message);
                }
                continue;
            };
            let manifest = &info.manifest;
            let display = plugin.file.display_name();
            if let Some(first) = ids.get(manifest.id.as_str()) {
                let collision = Diagnostic::error(
                    plugin.file.path.clone(),
                    DiagnosticKind::IdCollision,
                    format!(
                        "plugin {display} has the id '{}' of plugin {}, loaded first; it is not loaded",
                        manifest.id,
                        file_name(first)
                    ),
                );
                mark_unavailable(&mut self.unavailable, plugin, &collision.message);
                self.diagnostics.push(collision);
                continue;
            }
            ids.insert(&manifest.id, &plugin.file.path);
            self.infos.push(info.clone());
            if plugin.tools.is_empty() {
                self.diagnostics.push(Diagnostic {
                    file: plugin.file.path.clone(),
                    kind: DiagnosticKind::NoTools,
                    severity: Severity::Warning,
                    message: format!("plugin {display} registered no tools"),
                });
            }
            for tool in &plugin.tools {
                let tool = match tool {
                    Ok(tool) => tool,
                    Err(rejected) => {
                        self.diagnostics.push(rejected.diagnostic.clone());
                        self.unavailable
                            .entry(rejected.name.clone())
                            .or_insert_with(|| rejected.diagnostic.message.clone());
                        continue;
                    }
                };
                if let Some(&existing) = self.by_name.get(&tool.info.name) {
                    let first = &self.entries[existing].file;
                    self.diagnostics.push(Diagnostic::error(
                        plugin.file.path.clone(),
                        DiagnosticKind::ToolCollision,
                        format!(
                            "tool '{}' of plugin {display} is already registered by plugin {}; the first one stays",
                            tool.info.name,
                            file_name(first)
                        ),
                    ));
                    continue;
                }
                self.by_name
                    .insert(tool.info.name.clone(), self.tools.len());
                self.gates
                    .push(Arc::new(self.policy.gate(&tool.info, info)));
                self.tools.push(tool.info.clone());
                self.entries.push(tool.entry.clone());
            }
        }
        let by_name = &self.by_name;
        self.unavailable
            .retain(|name, _| !by_name.contains_key(name));
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
            .by_name
            .get(tool)
            .copied()
            .filter(|&index| callable(&self.tools[index]))
            .ok_or_else(|| match self.unavailable.get(tool) {
                Some(reason) => InvokeError::Unavailable {
                    name: tool.to_string(),
                    reason: reason.clone(),
                },
                None => InvokeError::UnknownTool {
                    name: tool.to_string(),
                    suggestion: closest(
                        tool,
                        self.tools
                            .iter()
                            .filter(|info| callable(info))
                            .map(|info| info.name.as_str()),
                    ),
                },
            })?;
        let info = &self.tools[index];
        let entry = &self.entries[index];
        let gate = &self.gates[index];
        let validator = entry.validator.as_deref();
        let arguments = match check_arguments(self.max_args_bytes, args_json, validator) {
            Ok(arguments) => arguments,
            Err(message) => {
                gate.meter.invalid_arguments();
                return Err(InvokeError::InvalidArguments {
                    tool: tool.to_string(),
                    message,
                });
            }
        };
        let id = match options.id {
            Some(ReservedCallId(id)) => id,
            None => self.next_call.fetch_add(1, Ordering::Relaxed),
        };
        let approvals = options.approvals.as_ref().unwrap_or(&self.policy.approvals);
        let output = Output {
            limits: entry.output,
            results: self.results.clone(),
            run: self.run,
        };
        let span =
            tracing::debug_span!("tool_call", call = id, tool = %info.name, plugin = %info.plugin);
        if gate.is_open(approvals) {
            let started = Instant::now();
            let outcome = span.in_scope(|| {
                entry
                    .handle
                    .start(id, tool, args_json.to_string(), info.timeout)
            });
            return Ok(Call {
                id,
                meter: gate.meter.clone(),
                span,
                state: CallState::Running {
                    handle: entry.handle.clone(),
                    outcome,
                    started,
                },
                output,
                keeping: None,
            });
        }
        let cancel = Arc::new(Cancellation::default());
        let validator = entry.validator.clone();
        let max_args_bytes = self.max_args_bytes;
        let gated = Gated {
            id,
            tool: info.clone(),
            gate: gate.clone(),
            policy: self.policy.clone(),
            approvals: approvals.clone(),
            handle: entry.handle.clone(),
            args: args_json.to_string(),
            arguments,
            check: Box::new(move |arguments| {
                let text = arguments.to_string();
                check_arguments(max_args_bytes, &text, validator.as_deref()).map(|_| text)
            }),
            cancel: cancel.clone(),
        };
        Ok(Call {
            id,
            meter: gate.meter.clone(),
            state: CallState::Gated {
                future: Box::pin(gated.run().instrument(span.clone())),
                cancel,
            },
            span,
            output,
            keeping: None,
        })
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

/// Checks call arguments: a JSON object of at most `max_bytes` that satisfies the
/// tool's schema. Returns them parsed, or what is wrong with them.
fn check_arguments(
    max_bytes: usize,
    args_json: &str,
    validator: Option<&ArgumentValidator>,
) -> Result<serde_json::Value, String> {
    if args_json.len() > max_bytes {
        return Err(format!(
            "they are {} bytes; the limit is {}",
            args_json.len(),
            crate::limits::format_bytes(max_bytes as u64)
        ));
    }
    let args = match serde_json::from_str::<serde_json::Value>(args_json) {
        Ok(args @ serde_json::Value::Object(_)) => args,
        Ok(other) => return Err(format!("expected a JSON object, got {}", json_kind(&other))),
        Err(error) => return Err(format!("not valid JSON: {error}")),
    };
    if let Some(validator) = validator {
        validator
            .check(&args)
            .map_err(|problems| problems.to_string())?;
    }
    Ok(args)
}

impl Drop for Runtime {
    /// What the plugins logged reaches the file before the runtime goes (a process
    /// exits right after).
    fn drop(&mut self) {
        self.loader.flush_log();
    }
}

/// Remembers that the tools `plugin` offers cannot be called, and why (the first reason
/// found for a name stays).
fn mark_unavailable(unavailable: &mut HashMap<String, String>, plugin: &Plugin, reason: &str) {
    for name in plugin.tool_names() {
        unavailable
            .entry(name.to_string())
            .or_insert_with(|| reason.to_string());
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
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
    output: Output,
    /// Keeping a cut result's whole output, off the async threads.
    keeping: Option<JoinHandle<CallOutcome>>,
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
        matches!(outcome, CallOutcome::Completed(text) if output::cut(text, &self.limits).is_some())
    }

    /// `outcome` as the model sees it: a result over the limits is cut, with a notice
    /// saying where the whole is; the whole is kept in the result store.
    fn apply(&self, call: u64, outcome: CallOutcome) -> CallOutcome {
        let CallOutcome::Completed(text) = outcome else {
            return outcome;
        };
        let Some(cut) = output::cut(&text, &self.limits) else {
            return CallOutcome::Completed(text);
        };
        let id = results::result_id(self.run, call);
        let stored = match &self.results {
            Ok(store) => store.put(&id, &text).map_err(|error| error.to_string()),
            Err(reason) => Err(reason.to_string()),
        };
        let shown = match &stored {
            Ok(path) => output::shown(&cut, &Kept::Stored { id: &id, path }),
            Err(reason) => {
                tracing::warn!("the whole output of call {call} was not kept: {reason}");
                output::shown(&cut, &Kept::Lost(reason.clone()))
            }
        };
        CallOutcome::Completed(shown)
    }
}

impl Call {
    /// The call's id (unique within the runtime).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The id under which the whole output is kept if the result is cut (see
    /// [`Runtime::result`] and `toolcell result`): unique across runs sharing a store.
    pub fn result_id(&self) -> String {
        results::result_id(self.output.run, self.id)
    }

    /// Cancels the call; it resolves to a failure that says `reason`.
    pub fn cancel(&self, reason: &str) {
        match &self.state {
            CallState::Running { handle, .. } => handle.cancel(self.id, reason),
            CallState::Gated { cancel, .. } => cancel.cancel(reason),
            CallState::Done => {}
        }
    }

    /// Counts the call's end and logs it in its span.
    fn record(&self, finished: &Finished) {
        self.meter
            .record(&finished.outcome, finished.ran, finished.fuel);
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
            return Pin::new(keeping).poll(cx).map(|kept| {
                kept.unwrap_or_else(|error| {
                    CallOutcome::Stopped(format!("keeping the result failed: {error}"))
                })
            });
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
            CallState::Done => {
                return Poll::Ready(CallOutcome::Stopped(
                    "the call's outcome was already delivered".to_string(),
                ));
            }
        };
        self.state = CallState::Done;
        self.record(&finished);
        let outcome = finished.outcome;
        if !self.output.cuts(&outcome) {
            return Poll::Ready(outcome);
        }
        // Writing the whole output may wait on the disk: not on an async thread.
        let output = self.output.clone();
        let call = self.id;
        match tokio::runtime::Handle::try_current() {
            Ok(tokio) => {
                self.keeping = Some(tokio.spawn_blocking(move || output.apply(call, outcome)));
                self.poll(cx)
            }
            Err(_) => Poll::Ready(output.apply(call, outcome)),
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let ran = match &self.state {
            CallState::Done => return,
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
