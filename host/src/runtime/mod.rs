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
//! `plugin` checks what a load produced; this module keeps the registry; `start`
//! starts calls, `call` is a call in flight, `error` why a call could not be made.

pub(crate) mod admission;
mod arguments;
mod builder;
mod call;
mod dependencies;
pub(crate) mod diagnostic;
mod error;
mod loader;
mod offered;
mod plugin;
mod registry;
#[cfg(feature = "watch")]
pub mod reload;
mod search;
mod session;
mod start;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::output::envelope::{Envelope, OutputPolicy};
use crate::output::results::{ResultError, ResultStore};
use crate::output::stats::{PluginStats, Stats};
use crate::policy::plugin_info::PluginInfo;
use crate::policy::{Approvals, Gate, Policy};
use crate::runtime::admission::Refusal;
use crate::sandbox::MemoryUse;

use crate::runtime::diagnostic::{Diagnostic, DiagnosticKind, Severity};
pub use crate::tool::info::{ListedTool, ToolInfo};
use crate::tool::names::ToolNames;
pub use arguments::Arguments;
pub use builder::{BuildError, RuntimeBuilder};
pub use call::Call;
pub use error::InvokeError;
pub use plugin::PluginUpdate;
pub use search::{DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, SEARCH_TOOLS};
pub use session::{Scope, Session};
pub use start::{CallOptions, ReservedCallId};

use error::{closest, did_you_mean};
use loader::Loader;
use plugin::{FileIds, PluginDirs, PluginEntry, ToolEntry};
use registry::{Names, Naming};

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
