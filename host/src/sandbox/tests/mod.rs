//! The sandbox on a small hand-written component (`scripted.core.wat` in the hostile
//! suite's plugin shell), so that the actor, the supervisor and the instance are tested
//! without the Lua toolchain: each tool of the plugin is one behaviour the sandbox must
//! handle (a queued call, a wait, a trap, a loop, a memory grab).

mod actor;
mod files;
mod instance;
mod supervisor;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wasmtime::component::Component;

use super::{PluginCall, PluginContext, PluginHandle, PluginPre, SharedServices, spawn_plugin};
use crate::artifact::manifest::Manifest;
use crate::base::limits::Limits;
use crate::config::Config;
use crate::config::grants::{CapabilityPolicy, CommandLine};
use crate::engine::{Engine, Options};
use crate::output::outcome::CallOutcome;
use crate::services::files::{FileRoots, Files};

/// The plugin shell of the hostile suite: a component of the plugin world around one
/// core module.
const SHELL: &str = include_str!("../../../../tests/hostile/wasm/shell.wat");

/// The test plugin's core module.
const SCRIPTED: &str = include_str!("scripted.core.wat");

/// The name the test plugin is loaded under.
const NAME: &str = "scripted";

/// The longest any test waits for an outcome: past it, the sandbox hangs.
const HANG_LIMIT: Duration = Duration::from_secs(30);

/// The test plugin, compiled and linked once per test binary.
fn scripted_pre() -> PluginPre {
    static PRE: std::sync::OnceLock<PluginPre> = std::sync::OnceLock::new();
    PRE.get_or_init(|| {
        let engine = Engine::new(Options::default()).expect("the engine");
        let text = SHELL.replace(";; @MAIN@", SCRIPTED);
        let component = Component::new(engine.wasmtime(), text).expect("the test plugin compiles");
        engine.link(&component).expect("the test plugin links")
    })
    .clone()
}

/// The context of plugin [`NAME`] (a `.lua` plugin's default manifest, which asks for
/// everything) under a policy of `limits` and `command_line`, with the file root `files`.
fn context(limits: Limits, command_line: CommandLine, files: Files) -> Arc<PluginContext> {
    let policy = CapabilityPolicy::new(limits, Config::default(), command_line);
    let grants = policy.grant(&Manifest::clm_default(NAME));
    let services = SharedServices {
        tool_config: Arc::new(HashMap::new()),
        files: FileRoots::shared(files),
        debug_log: None,
        log_listener: None,
    };
    Arc::new(PluginContext::new(
        NAME.to_string(),
        None,
        grants,
        &services,
        Default::default(),
    ))
}

/// A loaded instance of the test plugin.
struct Plugin {
    handle: PluginHandle,
    next_call: AtomicU64,
}

impl Plugin {
    /// Loads the test plugin with clm-tool(5)'s defaults.
    async fn load() -> Plugin {
        Plugin::load_with(Limits::default()).await
    }

    /// Loads the test plugin under `limits`.
    async fn load_with(limits: Limits) -> Plugin {
        let files = Files::Refused("no file root in these tests".into());
        let context = context(limits, CommandLine::default(), files);
        let (handle, specs) = spawn_plugin(context, scripted_pre())
            .await
            .unwrap_or_else(|failure| panic!("the test plugin loads: {failure}"));
        let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "note", "journal", "count", "sleep", "wait", "busy", "loop", "trap", "grow", "oom"
            ]
        );
        Plugin {
            handle,
            next_call: AtomicU64::new(1),
        }
    }

    /// Starts a call of `tool` with `args` (its own deadline: `timeout`, else the
    /// plugin's default); returns its id and its leg, which yields its outcome.
    fn start(&self, tool: &str, args: &str, timeout: Option<Duration>) -> (u64, PluginCall) {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed);
        // The plugin reports no progress: nobody needs to listen.
        let (progress, _) = crate::output::progress::channel();
        let outcome = self
            .handle
            .start(call, tool, args.to_string(), timeout, progress, None);
        (call, outcome)
    }

    /// Calls `tool` with `args` and waits for the outcome.
    async fn call(&self, tool: &str, args: &str) -> CallOutcome {
        outcome(self.start(tool, args, None).1).await
    }

    /// What the plugin's journal holds: its notes and the cancellations it was told of.
    async fn journal(&self) -> String {
        completed(self.call("journal", "").await)
    }
}

/// The outcome a call's leg yields; a hang fails the test.
async fn outcome(leg: PluginCall) -> CallOutcome {
    tokio::time::timeout(HANG_LIMIT, leg)
        .await
        .expect("the call ends")
        .outcome
}

/// The output of a completed call.
fn completed(outcome: CallOutcome) -> String {
    match outcome {
        CallOutcome::Completed(output) => output,
        other => panic!("the call did not complete: {other:?}"),
    }
}
