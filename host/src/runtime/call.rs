//! A call in flight (`Call`): the future of its outcome, with what the model may see
//! of it (cut, kept, enveloped) and its count in the statistics.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::task::JoinHandle;

use super::{Runtime, ToolInfo};
use crate::output::cut::{self, Kept, OutputLimits};
use crate::output::envelope::Envelope;
use crate::output::outcome::CallOutcome;
use crate::output::parts;
use crate::output::progress::{self, ProgressReceiver, ProgressUpdates};
use crate::output::results::{self, ResultStore};
use crate::output::stats::ToolMeter;
use crate::policy::Cancellation;
use crate::sandbox::{Ended, PluginCall};
use crate::tool::validation::SchemaValidator;

/// Whether a tracing subscriber may want a call's span and its events. Checked before
/// making them, so that without one a call makes no span at all: tracing's `log`
/// fallback (on when any crate in the build enables tracing's `log` feature) would
/// otherwise format the span's fields for the `log` crate on every call.
pub(super) fn traced() -> bool {
    use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
    tracing::Level::DEBUG <= STATIC_MAX_LEVEL && tracing::Level::DEBUG <= LevelFilter::current()
}

/// A call in flight. Await it for the outcome; drop it (or call [`Call::cancel`]) to
/// cancel the call, which aborts its pending HTTP requests and timers (or takes it out
/// of the queue of a concurrency cap, or stops waiting for an answer to `ask`).
///
/// A result longer than the tool's output limits is cut before the outcome is given:
/// the outcome's text is what the model should see, and the whole output is kept in
/// the result store under [`Call::result_id`].
pub struct Call {
    pub(super) id: u64,
    pub(super) meter: Arc<ToolMeter>,
    /// The call's tracing span (`tool_call`, with the call's id, tool and plugin).
    pub(super) span: tracing::Span,
    /// Until the outcome is delivered.
    pub(super) route: Option<Route>,
    pub(super) progress: ProgressReceiver,
    /// The tool's output schema, compiled: a completed call's output must be the JSON
    /// text of a value it accepts.
    pub(super) output_validator: Option<Arc<SchemaValidator>>,
    pub(super) output: Output,
    /// Keeping a cut result's whole output, off the async threads.
    pub(super) keeping: Option<JoinHandle<CallOutcome>>,
    /// Where the outcome's text goes, when the plugin's output is untrusted.
    pub(super) envelope: Option<Envelope>,
    /// A structured result's value, as its output was checked ([`Call::structured`]).
    pub(super) structured: Option<serde_json::Value>,
}

/// How a call reaches its tool.
pub(super) enum Route {
    /// Straight to the plugin, which has the call.
    Direct(PluginCall),
    /// Through the policy; `cancel` cancels it wherever it is.
    Gated {
        future: Pin<Box<dyn Future<Output = Ended> + Send>>,
        cancel: Arc<Cancellation>,
    },
    /// Answered by the host itself (`search_tools`).
    Answered(CallOutcome),
}

/// The output policy of one call.
#[derive(Clone)]
pub(super) struct Output {
    pub(super) limits: OutputLimits,
    pub(super) results: Result<Arc<ResultStore>, Arc<str>>,
    pub(super) run: u32,
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
    pub(super) fn answered(runtime: &Runtime, tool: &ToolInfo, outcome: CallOutcome) -> Call {
        let (_, progress) = progress::channel();
        Call {
            id: runtime.next_call.fetch_add(1, Ordering::Relaxed),
            meter: runtime.policy.meters.tool(&tool.name, &tool.plugin),
            span: tracing::Span::none(),
            route: Some(Route::Answered(outcome)),
            progress,
            output_validator: None,
            output: Output {
                limits: OutputLimits::default(),
                results: runtime.results.clone(),
                run: runtime.run,
            },
            keeping: None,
            envelope: None,
            structured: None,
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
    #[cfg(feature = "mcp")]
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

    /// The value of a structured result ([`Call::is_structured`]) once the call has
    /// completed with one, as its output was parsed to be checked: the output
    /// parsed, without parsing it again. None for any other outcome, or a result cut
    /// to the output limits (its text is no longer JSON). It is handed out once.
    pub fn structured(&mut self) -> Option<serde_json::Value> {
        self.structured.take()
    }

    /// Cancels the call; it resolves to a failure that says `reason`.
    pub fn cancel(&self, reason: &str) {
        match &self.route {
            Some(Route::Direct(leg)) => leg.cancel(reason),
            Some(Route::Gated { cancel, .. }) => cancel.cancel(reason),
            Some(Route::Answered(_)) | None => {}
        }
    }

    /// Counts the call's end and logs it in its span.
    fn record(&self, ended: &Ended) {
        self.meter
            .record(&ended.outcome, ended.ran, ended.fuel_used);
        if !traced() {
            return;
        }
        tracing::debug!(
            parent: &self.span,
            outcome = ended.outcome.label(),
            ran_us = ended.ran.map(|ran| ran.as_micros() as u64),
            fuel = ended.fuel_used,
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
        let ended = match &mut self.route {
            Some(Route::Direct(leg)) => std::task::ready!(Pin::new(leg).poll(cx)),
            Some(Route::Gated { future, .. }) => std::task::ready!(future.as_mut().poll(cx)),
            Some(Route::Answered(outcome)) => Ended {
                outcome: std::mem::replace(outcome, CallOutcome::Completed(String::new())),
                ran: Some(Duration::ZERO),
                fuel_used: 0,
            },
            None => {
                return Poll::Ready(CallOutcome::Stopped(
                    "the call's outcome was already delivered".to_string(),
                ));
            }
        };
        self.route = None;
        self.record(&ended);
        // The output is checked whole, cut to what the model may see, then enveloped.
        let (outcome, structured) = match &self.output_validator {
            Some(validator) => checked_output(ended.outcome, validator),
            None => (ended.outcome, None),
        };
        if !self.output.cuts(&outcome) {
            if self.envelope.is_none() {
                self.structured = structured;
            }
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
/// With a completed call's output, its value.
fn checked_output(
    outcome: CallOutcome,
    validator: &SchemaValidator,
) -> (CallOutcome, Option<serde_json::Value>) {
    let output = match outcome {
        CallOutcome::Completed(output) => output,
        CallOutcome::Content(_) => {
            return (
                CallOutcome::BrokeRule(
                    "the tool's output is a result of parts; a tool with an output schema \
                     completes with a JSON value"
                        .to_string(),
                ),
                None,
            );
        }
        other => return (other, None),
    };
    let problem = match serde_json::from_str::<serde_json::Value>(&output) {
        Ok(value) => match validator.check_output(&value) {
            Ok(()) => return (CallOutcome::Completed(output), Some(value)),
            Err(problems) => format!("does not match its output schema: {problems}"),
        },
        Err(error) => format!(
            "is not JSON ({error}); a tool with an output schema completes with a JSON value"
        ),
    };
    (
        CallOutcome::BrokeRule(format!("the tool's output {problem}")),
        None,
    )
}

impl Drop for Call {
    fn drop(&mut self) {
        // Dropping the route cancels the call wherever it is: in the policy, or in
        // the plugin.
        let ran = match &self.route {
            Some(Route::Answered(_)) | None => return,
            Some(Route::Direct(leg)) => Some(leg.elapsed()),
            Some(Route::Gated { .. }) => None,
        };
        self.record(&Ended {
            outcome: CallOutcome::Cancelled("cancelled: the caller stopped waiting".to_string()),
            ran,
            fuel_used: 0,
        });
    }
}
