//! One plugin, one sandbox: a wasmtime component instance in its own `Store`, whose
//! steps take turns under the plugin's supervisor.
//!
//! - `state`: what the store holds and the host services the plugin imports;
//! - `ops`: the plugin's asynchronous operations (HTTP, timers);
//! - `limiter`: the hard memory cap;
//! - `instance`: creating an instance, loading the plugin, and running steps under
//!   fuel and deadline backstops;
//! - `turns`: instances are created one at a time (cheaper page faults);
//! - `supervisor`: the instance and its calls in flight: starts calls, delivers
//!   operation outcomes, expires and cancels calls, restarts the instance after a crash;
//! - `actor`: how calls reach the supervisor: on the caller's thread when the plugin is
//!   idle, otherwise through the plugin's actor task, which also delivers operation
//!   outcomes and watches deadlines.

mod actor;
mod instance;
mod limiter;
mod ops;
mod state;
mod supervisor;
mod turns;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

pub use actor::{PluginHandle, spawn_plugin};
pub use instance::{LoadFailure, MemoryUse, PluginPre};
pub use state::StoreState;
pub use supervisor::CallOutcome;

use crate::debug_log::DebugLog;
use crate::files::{FileAccess, Files};
use crate::grants::{Granted, Hints};
use crate::http::{HttpPolicy, HttpSettings, PluginHttp};
use crate::limits::Limits;
use crate::log_listener::LogListener;
use ops::CallId;

/// The linker every plugin is instantiated with: WASI (empty, see `StoreState::new`)
/// and the toolcell host services. Built once per process.
pub fn linker(engine: &Engine) -> Result<&'static Linker<StoreState>, String> {
    static LINKER: OnceLock<Result<Linker<StoreState>, String>> = OnceLock::new();
    LINKER
        .get_or_init(|| {
            let mut linker = Linker::new(engine);
            state::add_to_linker(&mut linker).map_err(|error| format!("{error:#}"))?;
            Ok(linker)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Links `component` against the host, checking that it fits the plugin world.
pub fn link(linker: &Linker<StoreState>, component: &Component) -> Result<PluginPre, String> {
    let pre = linker.instantiate_pre(component).map_err(|error| {
        format!("the component does not fit toolcell's plugin world: {error:#}")
    })?;
    PluginPre::new(pre)
        .map_err(|error| format!("the component does not export the plugin interface: {error:#}"))
}

/// What one plugin may do: its limits, HTTP policy and file access.
#[derive(Clone, Debug)]
pub struct PluginSettings {
    /// Resource limits.
    pub limits: Limits,
    /// Which hosts the plugin may reach.
    pub http_policy: HttpPolicy,
    /// Bounds on its HTTP requests.
    pub http_settings: HttpSettings,
    /// How it may use the file root.
    pub files: FileAccess,
    /// How to explain a refusal of what was not granted.
    pub hints: Hints,
}

impl From<Granted> for PluginSettings {
    fn from(granted: Granted) -> Self {
        PluginSettings {
            limits: granted.limits,
            http_policy: granted.http_policy,
            http_settings: granted.http_settings,
            files: granted.files,
            hints: granted.hints,
        }
    }
}

/// Services every plugin of a runtime shares.
#[derive(Clone)]
pub struct SharedServices {
    /// The user's per-tool configuration (`[tools.NAME]`), as JSON object text by NAME.
    pub tool_config: Arc<HashMap<String, String>>,
    /// The root for file access, or why there is none.
    pub files: Files,
    /// The debug log, if enabled.
    pub debug_log: Option<Arc<DebugLog>>,
    /// Who else hears what plugins log.
    pub log_listener: Option<Arc<dyn LogListener>>,
}

/// Everything a plugin's sandbox needs to know about its plugin; shared read-only by
/// the actor and every store the plugin ever gets.
pub struct PluginContext {
    /// The plugin's name: its id.
    pub name: String,
    /// The Lua script, for plugins run by the Lua guest.
    pub script: Option<Vec<u8>>,
    /// Resource limits.
    pub limits: Limits,
    /// The user's per-tool configuration (`[tools.NAME]`), as JSON object text by NAME.
    pub tool_config: Arc<HashMap<String, String>>,
    /// The root for file access, or why there is none.
    pub files: Files,
    /// How the plugin may use `files`.
    pub file_access: FileAccess,
    /// How to explain a refusal of what was not granted.
    pub hints: Hints,
    /// The debug log, if enabled.
    pub debug_log: Option<Arc<DebugLog>>,
    /// Who else hears what the plugin logs.
    pub log_listener: Option<Arc<dyn LogListener>>,
    /// The plugin's HTTP policy and bounds.
    pub http_policy: HttpPolicy,
    /// See `http_policy`.
    pub http_settings: HttpSettings,
    /// The plugin's HTTP client, created on its first request.
    http_client: OnceLock<Result<Arc<PluginHttp>, String>>,
}

impl PluginContext {
    /// A context for plugin `name` running `script` (for Lua plugins) under `settings`
    /// and the services of `services`.
    pub fn new(
        name: String,
        script: Option<Vec<u8>>,
        settings: PluginSettings,
        services: &SharedServices,
    ) -> Self {
        PluginContext {
            name,
            script,
            limits: settings.limits,
            tool_config: services.tool_config.clone(),
            files: services.files.clone(),
            file_access: settings.files,
            hints: settings.hints,
            debug_log: services.debug_log.clone(),
            log_listener: services.log_listener.clone(),
            http_policy: settings.http_policy,
            http_settings: settings.http_settings,
            http_client: OnceLock::new(),
        }
    }

    /// Whether anything hears the plugin's log: it is told so at load, and calls the
    /// host for it only then.
    pub fn logs(&self) -> bool {
        self.debug_log.is_some() || self.log_listener.is_some()
    }

    /// What the plugin wrote in call `call` (none: while it loaded).
    pub fn log(&self, call: Option<CallId>, message: &str) {
        if let Some(file) = &self.debug_log {
            file.write(&self.name, message);
        }
        if let Some(listener) = &self.log_listener {
            listener.log(&self.name, call, message);
        }
    }

    /// The plugin's HTTP client, created on first use.
    pub fn http(&self) -> Result<Arc<PluginHttp>, String> {
        self.http_client
            .get_or_init(|| {
                PluginHttp::new(self.http_policy.clone(), self.http_settings.clone())
                    .map(Arc::new)
                    .map_err(|error| error.to_string())
            })
            .clone()
    }
}
