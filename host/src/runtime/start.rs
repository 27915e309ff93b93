//! Starting a call: finding the tool, checking the arguments, and handing the call to
//! the policy or straight to the plugin.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use tracing::Instrument;

use super::arguments::Arguments;
use super::call::{Output, Route, traced};
use super::error::closest;
use super::{Call, InvokeError, Runtime, ToolInfo};
use crate::output::envelope::Envelope;
use crate::output::outcome::CallOutcome;
use crate::output::progress;
use crate::policy::{Approvals, Cancellation, Gated};
use crate::services::ask::{Questions, Route as QuestionRoute};

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

impl Runtime {
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

    /// As [`Runtime::call`], as `options` say. The arguments may also be a JSON value
    /// the caller already parsed ([`Arguments`]: an MCP server has its client's), which
    /// is then not parsed again.
    pub fn call_with<'a>(
        &self,
        tool: &str,
        args: impl Into<Arguments<'a>>,
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
            args.into(),
            &self.envelope,
            options.id,
            approvals,
        )
    }

    /// Why `name` found no tool: unavailable (a plugin that did not load would offer
    /// it; the reason, which may quote the plugin, in `envelope` when its output is
    /// untrusted), or unknown, with the closest of `candidates`.
    pub(super) fn not_found<'a>(
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
    pub(super) fn start(
        &self,
        index: usize,
        name: &str,
        args: Arguments<'_>,
        envelope: &Envelope,
        id: Option<ReservedCallId>,
        approvals: &Arc<Approvals>,
    ) -> Result<Call, InvokeError> {
        let info = &self.tools[index];
        let entry = &self.entries[index];
        let gate = &self.gates[index];
        let validator = entry.validator.as_deref();
        let args = match args.check(self.max_args_bytes, info, validator) {
            Ok(args) => args,
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
            Questions::Route(Arc::new(QuestionRoute {
                handler: handler.clone(),
                tool: info.name.clone(),
                envelope: envelope.clone(),
            }))
        });
        let route = if gate.is_open(approvals) {
            Route::Direct(span.in_scope(|| {
                entry
                    .handle
                    .start(id, &info.name, args.text, info.timeout, sender, questions)
            }))
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
                args: args.text,
                arguments: args.value,
                check: Box::new(move |arguments| {
                    let (info, validator) = &checked;
                    Arguments::from(arguments.clone())
                        .check(max_args_bytes, info, validator.as_deref())
                        .map(|checked| checked.text)
                }),
                progress: sender,
                questions,
                cancel: cancel.clone(),
            };
            Route::Gated {
                future: Box::pin(gated.run().instrument(span.clone())),
                cancel,
            }
        };
        Ok(Call {
            id,
            meter: gate.meter.clone(),
            span,
            route: Some(route),
            progress,
            output_validator: entry.output_validator.clone(),
            output: Output {
                limits: entry.output,
                results: self.results.clone(),
                run: self.run,
            },
            keeping: None,
            envelope,
            structured: None,
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
