//! How a call ended: the kinds a caller can tell apart, and the text the model sees.
//!
//! The sandbox decides the kind where it knows it (the guest's `call-state`, a trap, a
//! deadline, a cancellation), so that callers never parse messages: the CLI picks its
//! exit code, the MCP server its result, a harness its retry or its metrics label from
//! the variant. The message of each failure is the one the model reads inside
//! `[tool failed: ...]`.

use std::borrow::Cow;

use crate::output::content::{self, ContentPart};

/// How a call ended.
///
/// Every variant but [`Completed`](CallOutcome::Completed) and
/// [`Content`](CallOutcome::Content) is a failure, which the model
/// sees as `[tool failed: MESSAGE]` ([`CallOutcome::model_text`]); the variant says what
/// failed, the message says it in words. More kinds may come, so the enum is
/// `#[non_exhaustive]`: match the kinds you act on and keep a `_` arm, or ask
/// [`CallOutcome::is_completed`].
///
/// ```
/// use toolcell::CallOutcome;
///
/// fn exit_code(outcome: &CallOutcome) -> u8 {
///     match outcome {
///         CallOutcome::Completed(_) => 0,
///         CallOutcome::TimedOut(_) | CallOutcome::Cancelled(_) => 3,
///         CallOutcome::Crashed { .. } | CallOutcome::Disabled(_) => 4,
///         _ => 1,
///     }
/// }
/// assert_eq!(exit_code(&CallOutcome::Completed("ok".to_string())), 0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The tool completed; the string is its output.
    Completed(String),
    /// The tool completed with a result of several parts (text, images, audio,
    /// resources: `ctx:complete_content`), in order.
    Content(Vec<ContentPart>),
    /// The tool failed by its own account: it called `ctx:fail`, raised an error its
    /// code did not catch, or its handler returned an error. The message is the
    /// plugin's (cut to 64 KiB).
    Failed(String),
    /// The plugin broke a rule of the tool contract (clm-tool(5)): the call ended
    /// twice, its handler returned without ending it, it ended while its tasks still
    /// ran or while a task's error went unobserved, or it waits for something that can
    /// never happen. The message names the rule and, for Lua, the line.
    BrokeRule(String),
    /// The call ran past its deadline (the tool's `timeout_ms`, else the plugin's
    /// default) and was stopped; the plugin and its state survive. A call whose code
    /// never gave control back is [`Crashed`](CallOutcome::Crashed) instead, with
    /// [`CrashCause::Deadline`].
    TimedOut(String),
    /// The call needed more memory than the plugin may use (its own memory limit, or
    /// the sandbox's hard cap) and failed gracefully; the plugin and its state
    /// survive. The message says which limit was reached, and how to grant more when
    /// the policy granted less than the plugin's manifest asks for.
    OutOfMemory(String),
    /// The sandbox trapped while the call was in flight: the instance and the
    /// plugin's state are gone, and every call it had in flight ends this way.
    Crashed {
        /// The text the model sees: the plugin, the cause and what became of it.
        message: String,
        /// What stopped the instance.
        cause: CrashCause,
        /// What became of the plugin.
        fate: PluginFate,
        /// Whether another call's step crashed the instance this call waited in (this
        /// call's own code may be fine: a retry is worth it).
        during_another_call: bool,
    },
    /// The plugin is disabled: it crashed too often, so the call never ran.
    Disabled(String),
    /// The caller cancelled the call ([`Call::cancel`](crate::Call::cancel), dropping
    /// the [`Call`](crate::Call), an MCP client's cancellation); its pending HTTP
    /// requests and timers were aborted.
    Cancelled(String),
    /// The plugin's sandbox stopped before the call ended: the runtime was dropped, or
    /// the plugin's actor is gone.
    Stopped(String),
    /// The permission policy denied the call, which never ran: a rule, a resolver, the
    /// user's answer (the message ends with their feedback), or nobody to ask. The
    /// message is `tool 'X' was denied: REASON`.
    Denied(String),
    /// A `before` interceptor refused the call, which never ran, or an interceptor
    /// failed or ran past its timeout (which refuses the call too). The message is
    /// `tool 'X' was refused: REASON`.
    Refused(String),
    /// A `before` interceptor replaced the arguments with ones that break the tool's
    /// schema; the call never ran.
    InvalidArguments(String),
}

/// What stopped a crashed instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrashCause {
    /// The instance reached the sandbox's hard memory cap.
    MemoryCap,
    /// Its code kept running past the hard deadline without giving control back
    /// (code the plugin's own deadline check cannot see, such as a C-level loop).
    Deadline,
    /// The call burnt its whole fuel budget.
    OutOfFuel,
    /// The wasm stack overflowed.
    StackOverflow,
    /// Any other trap: an abort in the plugin's code, a result the host could not
    /// read, a failed host call.
    Trap,
    /// Re-creating the instance after an earlier crash failed: its load-time code
    /// failed, ran past its deadline or trapped.
    Restart,
}

/// What became of a plugin whose instance crashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PluginFate {
    /// It runs again in a fresh instance; its state was lost.
    Restarted,
    /// Re-creating it failed; the next call tries again.
    NotRestarted,
    /// It crashed too often and takes no more calls.
    Disabled,
}

impl CallOutcome {
    /// Whether the tool completed.
    pub fn is_completed(&self) -> bool {
        matches!(self, CallOutcome::Completed(_) | CallOutcome::Content(_))
    }

    /// The parts of a result made of parts.
    pub fn content(&self) -> Option<&[ContentPart]> {
        match self {
            CallOutcome::Content(parts) => Some(parts),
            _ => None,
        }
    }

    /// The tool's output, when it completed with text (see [`CallOutcome::content`]
    /// for a result of parts).
    pub fn output(&self) -> Option<&str> {
        match self {
            CallOutcome::Completed(output) => Some(output),
            _ => None,
        }
    }

    /// The failure message (what the model reads inside `[tool failed: ...]`), when
    /// the call did not complete.
    pub fn failure(&self) -> Option<&str> {
        match self {
            CallOutcome::Completed(_) | CallOutcome::Content(_) => None,
            CallOutcome::Failed(message)
            | CallOutcome::BrokeRule(message)
            | CallOutcome::TimedOut(message)
            | CallOutcome::OutOfMemory(message)
            | CallOutcome::Crashed { message, .. }
            | CallOutcome::Disabled(message)
            | CallOutcome::Cancelled(message)
            | CallOutcome::Stopped(message)
            | CallOutcome::Denied(message)
            | CallOutcome::Refused(message)
            | CallOutcome::InvalidArguments(message) => Some(message),
        }
    }

    /// The same kind of outcome with `text` as its output (completed, a result of
    /// parts included) or its message.
    pub fn with_text(self, text: String) -> CallOutcome {
        match self {
            CallOutcome::Content(_) => CallOutcome::Completed(text),
            other => {
                let mut text = Some(text);
                other.map_text(|_| text.take().unwrap_or_default())
            }
        }
    }

    /// The kind as a stable lower-case label, for logs and metrics: `completed`,
    /// `failed`, `broke_rule`, `timed_out`, `out_of_memory`, `crashed`, `disabled`,
    /// `cancelled`, `stopped`, `denied`, `refused` or `invalid_arguments`.
    pub fn label(&self) -> &'static str {
        match self {
            CallOutcome::Completed(_) | CallOutcome::Content(_) => "completed",
            CallOutcome::Failed(_) => "failed",
            CallOutcome::BrokeRule(_) => "broke_rule",
            CallOutcome::TimedOut(_) => "timed_out",
            CallOutcome::OutOfMemory(_) => "out_of_memory",
            CallOutcome::Crashed { .. } => "crashed",
            CallOutcome::Disabled(_) => "disabled",
            CallOutcome::Cancelled(_) => "cancelled",
            CallOutcome::Stopped(_) => "stopped",
            CallOutcome::Denied(_) => "denied",
            CallOutcome::Refused(_) => "refused",
            CallOutcome::InvalidArguments(_) => "invalid_arguments",
        }
    }

    /// The same outcome with its text (the output, each text part of a result of
    /// parts, or the failure's message) passed through `change`.
    pub(crate) fn map_text(self, mut change: impl FnMut(String) -> String) -> CallOutcome {
        match self {
            CallOutcome::Completed(output) => CallOutcome::Completed(change(output)),
            CallOutcome::Content(parts) => CallOutcome::Content(
                parts
                    .into_iter()
                    .map(|part| match part {
                        ContentPart::Text(text) => ContentPart::Text(change(text)),
                        other => other,
                    })
                    .collect(),
            ),
            CallOutcome::Failed(message) => CallOutcome::Failed(change(message)),
            CallOutcome::BrokeRule(message) => CallOutcome::BrokeRule(change(message)),
            CallOutcome::TimedOut(message) => CallOutcome::TimedOut(change(message)),
            CallOutcome::OutOfMemory(message) => CallOutcome::OutOfMemory(change(message)),
            CallOutcome::Crashed {
                message,
                cause,
                fate,
                during_another_call,
            } => CallOutcome::Crashed {
                message: change(message),
                cause,
                fate,
                during_another_call,
            },
            CallOutcome::Disabled(message) => CallOutcome::Disabled(change(message)),
            CallOutcome::Cancelled(message) => CallOutcome::Cancelled(change(message)),
            CallOutcome::Stopped(message) => CallOutcome::Stopped(change(message)),
            CallOutcome::Denied(message) => CallOutcome::Denied(change(message)),
            CallOutcome::Refused(message) => CallOutcome::Refused(change(message)),
            CallOutcome::InvalidArguments(message) => {
                CallOutcome::InvalidArguments(change(message))
            }
        }
    }

    /// The text the model sees: the output (a result of parts as text, each binary
    /// part a line saying what it is), or `[tool failed: MESSAGE]`.
    pub fn model_text(&self) -> String {
        self.to_model_text().into_owned()
    }

    /// [`CallOutcome::model_text`] without copying a completed call's output.
    pub fn to_model_text(&self) -> Cow<'_, str> {
        if let CallOutcome::Content(parts) = self {
            return Cow::Owned(content::text_view(parts));
        }
        match self.failure() {
            None => Cow::Borrowed(self.output().unwrap_or_default()),
            Some(message) => Cow::Owned(format!("[tool failed: {message}]")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_reads_the_output_or_the_failure_in_brackets() {
        let done = CallOutcome::Completed("42".to_string());
        assert_eq!(done.model_text(), "42");
        assert!(matches!(done.to_model_text(), Cow::Borrowed("42")));
        assert_eq!((done.failure(), done.label()), (None, "completed"));
        let crashed = CallOutcome::Crashed {
            message: "plugin 'p' crashed: it trapped; it was restarted".to_string(),
            cause: CrashCause::Trap,
            fate: PluginFate::Restarted,
            during_another_call: false,
        };
        assert_eq!(
            crashed.model_text(),
            "[tool failed: plugin 'p' crashed: it trapped; it was restarted]"
        );
        assert_eq!(crashed.output(), None);
        assert_eq!(crashed.label(), "crashed");
        for (outcome, label) in [
            (CallOutcome::Failed("m".into()), "failed"),
            (CallOutcome::BrokeRule("m".into()), "broke_rule"),
            (CallOutcome::TimedOut("m".into()), "timed_out"),
            (CallOutcome::OutOfMemory("m".into()), "out_of_memory"),
            (CallOutcome::Disabled("m".into()), "disabled"),
            (CallOutcome::Cancelled("m".into()), "cancelled"),
            (CallOutcome::Stopped("m".into()), "stopped"),
            (CallOutcome::Denied("m".into()), "denied"),
            (CallOutcome::Refused("m".into()), "refused"),
            (
                CallOutcome::InvalidArguments("m".into()),
                "invalid_arguments",
            ),
        ] {
            assert_eq!(outcome.clone().with_text("n".into()).failure(), Some("n"));
            assert_eq!(outcome.model_text(), "[tool failed: m]");
            assert_eq!(outcome.failure(), Some("m"));
            assert_eq!(outcome.label(), label);
            assert!(!outcome.is_completed());
        }
    }
}
