//! One plugin, one sandbox: a wasmtime component instance in its own `Store`, whose
//! steps take turns under the plugin's supervisor.
//!
//! - `wit`: the bindings of the WIT worlds the host links, one file per older version;
//! - `state`: what the store holds and the host services the plugin imports;
//! - `operations`: the plugin's asynchronous operations (HTTP, timers, questions);
//! - `log`: the plugin's log lines, under its log budget, to every sink;
//! - `limiter`: the hard memory cap;
//! - `instance`: creating an instance, loading the plugin, and running steps under
//!   fuel and deadline backstops;
//! - `turns`: instances are created one at a time (cheaper page faults);
//! - `supervisor`: the instance and its calls in flight: starts calls, delivers
//!   operation outcomes, expires and cancels calls, restarts the instance after a crash;
//! - `actor`: how calls reach the supervisor: on the caller's thread when the plugin is
//!   idle, otherwise through the plugin's actor task, which also delivers operation
//!   outcomes and watches deadlines;
//! - `call`: a call's leg in its plugin, the future the runtime and the policy hold,
//!   and how a call ended (`Ended`);
//! - `interrupts`: cancellations that reach a step while it runs.

mod actor;
mod call;
mod instance;
mod interrupts;
mod limiter;
mod log;
mod operations;
mod state;
mod supervisor;
mod turns;
pub(crate) mod wit;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use wasmtime::component::{Component, Linker};

pub use actor::{PluginHandle, spawn_plugin};
pub use call::{Ended, PluginCall};
pub use instance::{LoadFailure, MemoryUse, PluginPre};
pub use state::StoreState;

use crate::base::fast_map::FastSet;
use crate::config::grants::Grants;
use crate::services::debug_log::DebugLog;
use crate::services::files::{FileRoots, Files};
use crate::services::http::PluginHttp;
use crate::services::log_listener::LogListener;
use interrupts::Interrupts;
use log::PluginLog;

/// The linker every plugin is instantiated with: WASI (empty, see `StoreState::new`)
/// and the toolcell host services. The engine (`crate::engine`) makes one and keeps it.
pub fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<StoreState>> {
    let mut linker = Linker::new(engine);
    state::add_to_linker(&mut linker)?;
    Ok(linker)
}

/// Why a plugin's code cannot run: it does not compile, or does not fit the plugin
/// world. (The texts carry wasmtime's reasons, so that a failed compilation can be
/// shared by every load that waited for it.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    /// The bytes are not a component wasmtime can compile.
    #[error("not a valid wasm component: {0}")]
    NotAComponent(String),
    /// The Lua guest built into toolcell does not compile (a broken build).
    #[error("the embedded Lua runtime does not compile: {0}")]
    LuaGuest(String),
    /// The compilation's task ended before it did ("compiling", "compiling the Lua
    /// runtime").
    #[error("{what} was interrupted: {reason}")]
    Interrupted {
        /// What was compiling.
        what: &'static str,
        /// Why it stopped.
        reason: String,
    },
    /// Its imports are not what the host provides.
    #[error("the component does not fit toolcell's plugin world: {0}")]
    DoesNotFit(String),
    /// It does not export the guest interface the host calls.
    #[error("the component does not export the plugin interface: {0}")]
    NoPluginInterface(String),
}

/// Links `component` against the host, checking that it fits the plugin world.
pub fn link(linker: &Linker<StoreState>, component: &Component) -> Result<PluginPre, CodeError> {
    let pre = linker
        .instantiate_pre(component)
        .map_err(|error| CodeError::DoesNotFit(format!("{error:#}")))?;
    PluginPre::new(pre).map_err(|error| CodeError::NoPluginInterface(format!("{error:#}")))
}

/// The key of `host.config` that answers with the path of the plugin's file root
/// (`clm.data_dir`): a key no `[tools.NAME]` table can have, since no plugin id or tool
/// name holds a `:`, so guests of every version ask for it without a new import.
pub const DATA_DIR_KEY: &str = "toolcell:data_dir";

/// Services every plugin of a runtime shares.
#[derive(Clone)]
pub struct SharedServices {
    /// The user's per-tool configuration (`[tools.NAME]`), as JSON object text by NAME.
    pub tool_config: Arc<HashMap<String, String>>,
    /// Each plugin's root for file access, or why it has none.
    pub files: FileRoots,
    /// The debug log, if enabled.
    pub debug_log: Option<Arc<DebugLog>>,
    /// Who else hears what plugins log.
    pub log_listener: Option<Arc<dyn LogListener>>,
}

/// Everything a plugin's sandbox needs to know about its plugin; shared by the actor
/// and every store the plugin ever gets, read-only but for `interrupts`.
pub struct PluginContext {
    /// The plugin's name: its id.
    pub name: String,
    /// The Lua script, for plugins run by the Lua guest.
    pub script: Option<Vec<u8>>,
    /// What the plugin may do: its limits, HTTP policy and file access.
    pub grants: Grants,
    /// The user's per-tool configuration (`[tools.NAME]`), as JSON object text by NAME.
    pub tool_config: Arc<HashMap<String, String>>,
    /// The keys of `tool_config` this plugin does not get: other plugin files' ids.
    pub withheld_config: FastSet<String>,
    /// The plugin's root for file access, or why it has none.
    pub files: Files,
    /// The path of that root, when the plugin may use it: what the guest is told
    /// ([`DATA_DIR_KEY`]).
    pub data_dir: Option<String>,
    /// Where `ctx:log`, `print` and `warn` go, within the plugin's log budget.
    pub log: PluginLog,
    /// The plugin's HTTP client, created on its first request.
    http_client: OnceLock<Result<Arc<PluginHttp>, String>>,
    /// Its calls cancelled while a step may be running.
    pub interrupts: Interrupts,
    /// The most linear memory any of its instances has had, in bytes.
    pub peak_memory: Arc<AtomicU64>,
}

impl PluginContext {
    /// A context for plugin `name` running `script` (for Lua plugins) under `grants`
    /// and the services of `services`, without the configuration tables of
    /// `withheld_config`.
    pub fn new(
        name: String,
        script: Option<Vec<u8>>,
        grants: Grants,
        services: &SharedServices,
        withheld_config: FastSet<String>,
    ) -> Self {
        let log = PluginLog::new(
            &name,
            grants.limits().log.clone(),
            services.debug_log.clone(),
            services.log_listener.clone(),
        );
        let files = services.files.of(&name);
        let data_dir = grants
            .files
            .can_read()
            .then(|| files.path().map(|path| path.display().to_string()))
            .flatten();
        PluginContext {
            name,
            script,
            grants,
            tool_config: services.tool_config.clone(),
            withheld_config,
            files,
            data_dir,
            log,
            http_client: OnceLock::new(),
            interrupts: Interrupts::default(),
            peak_memory: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The plugin's HTTP client, created on first use.
    pub fn http(&self) -> Result<Arc<PluginHttp>, String> {
        self.http_client
            .get_or_init(|| {
                let grants = &self.grants;
                PluginHttp::new(grants.http_policy.clone(), grants.http_settings.clone())
                    .map(Arc::new)
                    .map_err(|error| error.to_string())
            })
            .clone()
    }
}

#[cfg(test)]
mod tests;
