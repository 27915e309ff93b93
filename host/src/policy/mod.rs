//! The policy layer around every call: whether it may run (approval), the embedder's
//! code around it (interceptors), how many run at once (concurrency caps), and what
//! happened (`crate::output::stats`). The same for every plugin language, from the embedding
//! API, `call` and `serve`; docs/policy.md is the guide.
//!
//! - `approval`: decisions, the resolver chain, sessions' approvals and who answers `ask`;
//! - `interceptors`: `before` and `after`;
//! - `caps`: `max_concurrent` per tool, plugin and runtime;
//! - `plugin_info`: what a runtime reports of a loaded plugin, and resolvers are shown.
//!
//! The user's rules (`[permissions]`, `--allow`/`--ask`/`--deny`) and presets are read
//! with the rest of the configuration (`config::permissions`) and re-exported here.
//!
//! What depends on the tool alone is worked out once per tool when the registry is built
//! (its [`Gate`]). A tool with nothing to do (allowed without asking, no interceptor, no
//! cap, no embedder resolver) is *open*: its calls go straight to the plugin, as if there
//! were no policy, with no allocation, lock or task switch of the policy's own. Every
//! other call runs [`Gated::run`]: approval, `before`, caps, the plugin, `after`.

mod approval;
mod caps;
mod interceptors;
pub(crate) mod plugin_info;

use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::output::outcome::CallOutcome;
use crate::output::progress::ProgressSender;
use crate::output::stats::{Meters, ToolMeter};
use crate::policy::plugin_info::PluginInfo;
use crate::sandbox::{Ended, PluginHandle};
use crate::services::ask::Questions;
use crate::tool::info::ToolInfo;
use crate::tool::names::ToolNames;

pub use crate::config::permissions::{
    CommandLineRules, Decision, PermissionsSection, RuleError, Verdict,
};
pub use approval::{
    Answer, Approvals, BoxFuture, EMBEDDER_PRIORITY, NO_PROMPT_PRIORITY, PRESETS_PRIORITY,
    PermissionHandler, PermissionPrompt, PermissionRequest, RULES_PRIORITY, Resolver,
    ResolverError, SHOWN_ARGUMENTS,
};
pub use interceptors::{
    After, Before, DEFAULT_INTERCEPTOR_TIMEOUT, InterceptedCall, Interceptor, InterceptorError,
};

pub(crate) use crate::config::permissions::Rules;
pub(crate) use approval::{Chain, RegisteredResolver};
pub(crate) use caps::Caps;
pub(crate) use interceptors::Interceptors;

use crate::config::permissions::ToolFacts;
use approval::Verdicts;
use interceptors::{Stop, ToolInterceptors};

/// A runtime's policy: everything the embedder and the user configured.
pub(crate) struct Policy {
    pub chain: Chain,
    pub rules: Rules,
    /// The decision when nothing else decides and `[permissions] default` is not set.
    pub default: Verdict,
    pub interceptors: Interceptors,
    pub caps: Caps,
    pub meters: Meters,
    /// The approvals of calls made without a session of their own.
    pub approvals: Arc<Approvals>,
}

/// What the policy does with one tool's calls, worked out when the registry is built.
pub(crate) struct Gate {
    /// The tool's path, `PLUGIN-ID/TOOL`.
    pub path: String,
    /// Its plugin.
    pub plugin: Arc<PluginInfo>,
    verdicts: Verdicts,
    interceptors: ToolInterceptors,
    caps: Vec<Arc<Semaphore>>,
    pub meter: Arc<ToolMeter>,
    /// Nothing to do: calls go straight to the plugin.
    open: bool,
    /// Nothing to do but `ask`, which allows when nobody is there to answer.
    open_unless_asked: bool,
}

impl Policy {
    /// The gate of `tool` of `plugin`, which answers to `names`: rules, interceptors and
    /// caps apply to the tool by any of them.
    pub fn gate(&self, tool: &ToolInfo, names: &ToolNames, plugin: Arc<PluginInfo>) -> Gate {
        let facts = ToolFacts {
            names,
            read_only: plugin.grants.is_read_only(),
        };
        let default = match self.rules.default.unwrap_or(self.default) {
            Verdict::Allow => Decision::Allow,
            Verdict::Ask => Decision::Ask,
            Verdict::Deny => Decision::Deny("the permission policy's default is deny".to_string()),
        };
        let verdicts = Verdicts {
            rules: self.rules.by_glob(&facts),
            presets: self.rules.by_preset(&facts),
            // A plugin's `no_prompt` answers the default's `ask` and nothing else: it
            // never turns a deny of the user's (rule, preset or default) into an allow.
            no_prompt: (tool.no_prompt && default == Decision::Ask).then_some(Decision::Allow),
            default,
        };
        let interceptors = self.interceptors.for_tool(&facts);
        let caps = self.caps.for_tool(names, &plugin.manifest.id);
        let nothing_else =
            !self.chain.has_resolvers() && interceptors.is_empty() && caps.is_empty();
        let decision = verdicts.decision().clone();
        Gate {
            meter: self.meters.tool(&tool.name, &plugin.manifest.id),
            open: nothing_else && decision == Decision::Allow,
            open_unless_asked: nothing_else && decision == Decision::Ask,
            path: tool.path.clone(),
            plugin,
            verdicts,
            interceptors,
            caps,
        }
    }

    /// Whether `tool` is listed: the chain does not deny it outright (asked without
    /// arguments).
    pub fn lists(&self, gate: &Gate, tool: &ToolInfo) -> bool {
        let decision = if self.chain.has_resolvers() {
            let request = PermissionRequest {
                tool,
                plugin: &gate.plugin,
                arguments: None,
            };
            self.chain.decide(&gate.verdicts, &request)
        } else {
            gate.verdicts.decision().clone()
        };
        !matches!(decision, Decision::Deny(_))
    }
}

impl Gate {
    /// Whether a call of the session of `approvals` goes straight to the plugin.
    pub fn is_open(&self, approvals: &Approvals) -> bool {
        self.open || (self.open_unless_asked && !approvals.handles_ask())
    }
}

/// A call's cancellation, before or while it runs.
#[derive(Default)]
pub(crate) struct Cancellation {
    token: CancellationToken,
    reason: OnceLock<String>,
}

impl Cancellation {
    /// Cancels the call; the first reason given stays.
    pub fn cancel(&self, reason: &str) {
        let _ = self.reason.set(reason.to_string());
        self.token.cancel();
    }

    /// Why the call was cancelled ("cancelled" when no reason was given).
    fn reason(&self) -> &str {
        self.reason.get().map_or("cancelled", String::as_str)
    }

    fn outcome(&self) -> CallOutcome {
        CallOutcome::Cancelled(format!("cancelled: {}", self.reason()))
    }

    /// `work`, unless the call is cancelled first.
    async fn unless_cancelled<T>(&self, work: impl Future<Output = T>) -> Result<T, CallOutcome> {
        tokio::select! {
            biased;
            () = self.token.cancelled() => Err(self.outcome()),
            value = work => Ok(value),
        }
    }
}

/// Checks arguments an interceptor gave against the tool's schema and limits: their
/// text, or what is wrong.
pub(crate) type ArgumentCheck = dyn Fn(&serde_json::Value) -> Result<String, String> + Send + Sync;

/// A call whose tool is not open: everything it needs to go through the policy.
pub(crate) struct Gated {
    pub id: u64,
    pub tool: ToolInfo,
    pub gate: Arc<Gate>,
    pub policy: Arc<Policy>,
    pub approvals: Arc<Approvals>,
    pub handle: PluginHandle,
    /// The arguments, as text and parsed (once, by the runtime).
    pub args: String,
    pub arguments: serde_json::Value,
    /// Checks arguments an interceptor replaced.
    pub check: Box<ArgumentCheck>,
    /// Where the plugin's progress goes.
    pub progress: ProgressSender,
    /// Where the plugin's questions go.
    pub questions: Option<Questions>,
    pub cancel: Arc<Cancellation>,
}

impl Gated {
    /// Approval, `before`, caps, the plugin, `after`.
    pub async fn run(self) -> Ended {
        let name = self.tool.name.clone();
        let decision = match self.decide().await {
            Ok(decision) => decision,
            Err(cancelled) => return Ended::before_running(cancelled),
        };
        if let Decision::Deny(reason) = decision {
            tracing::info!("tool '{name}' was denied: {reason}");
            return Ended::before_running(CallOutcome::Denied(format!(
                "tool '{name}' was denied: {reason}"
            )));
        }
        let mut call = InterceptedCall {
            call: self.id,
            tool: name.clone(),
            plugin: self.gate.plugin.manifest.id.clone(),
            arguments: self.arguments,
        };
        let interceptors = &self.gate.interceptors;
        let args = match self
            .cancel
            .unless_cancelled(interceptors.before(&mut call, &self.check))
            .await
        {
            Err(cancelled) => return Ended::before_running(cancelled),
            Ok(Err(Stop::Refused(reason))) => {
                return Ended::before_running(CallOutcome::Refused(format!(
                    "tool '{name}' was refused: {reason}"
                )));
            }
            Ok(Err(Stop::Invalid(message))) => {
                return Ended::before_running(CallOutcome::InvalidArguments(message));
            }
            Ok(Ok(replaced)) => replaced.unwrap_or(self.args),
        };
        let permits = match self
            .cancel
            .unless_cancelled(caps::acquire(&self.gate.caps))
            .await
        {
            Ok(permits) => permits,
            Err(cancelled) => return Ended::before_running(cancelled),
        };
        let mut leg = self.handle.start(
            self.id,
            &name,
            args,
            self.tool.timeout,
            self.progress,
            self.questions,
        );
        let ended = tokio::select! {
            ended = &mut leg => ended,
            () = self.cancel.token.cancelled() => {
                leg.cancel(self.cancel.reason());
                leg.await
            }
        };
        drop(permits);
        let outcome = match interceptors.after(&call, ended.outcome).await {
            Ok(outcome) => outcome,
            Err(reason) => CallOutcome::Refused(format!("tool '{name}' was refused: {reason}")),
        };
        Ended { outcome, ..ended }
    }

    /// The chain's decision, and the session's answer when it says `ask`.
    async fn decide(&self) -> Result<Decision, CallOutcome> {
        let chain = &self.policy.chain;
        let decision = if chain.has_resolvers() {
            let request = PermissionRequest {
                tool: &self.tool,
                plugin: &self.gate.plugin,
                arguments: Some(&self.arguments),
            };
            chain.decide(&self.gate.verdicts, &request)
        } else {
            self.gate.verdicts.decision().clone()
        };
        if decision != Decision::Ask {
            return Ok(decision);
        }
        let prompt = PermissionPrompt {
            call: self.id,
            tool: self.tool.clone(),
            plugin: self.gate.plugin.clone(),
            arguments: self.arguments.clone(),
        };
        self.cancel
            .unless_cancelled(self.approvals.ask(&self.gate.path, prompt))
            .await
    }
}
