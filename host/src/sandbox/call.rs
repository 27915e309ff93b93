//! A call's leg in its plugin, as the runtime and the policy hold it: a future of how
//! the call ended, which cancels the call in the plugin when dropped before it ends.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::actor::PluginHandle;
use super::operations::CallId;
use crate::output::outcome::CallOutcome;

/// How a call ended, between the sandbox and the runtime: its outcome, how long it
/// was in its plugin and the fuel it burnt (for the runtime's statistics).
#[derive(Debug)]
pub struct Ended {
    /// The call's outcome.
    pub outcome: CallOutcome,
    /// How long it was in its plugin, from its start to its outcome; none if it
    /// never got there (the policy stopped it first).
    pub ran: Option<Duration>,
    /// The fuel its steps consumed.
    pub fuel_used: u64,
}

impl Ended {
    /// A call that ended before any of its code ran.
    pub fn before_running(outcome: CallOutcome) -> Ended {
        Ended {
            outcome,
            ran: None,
            fuel_used: 0,
        }
    }
}

/// A call started in its plugin ([`PluginHandle::start`]). Await it for how the call
/// ended; [`PluginCall::cancel`] or dropping it first cancels the call in the plugin.
pub struct PluginCall {
    handle: PluginHandle,
    id: CallId,
    started: Instant,
    /// The supervisor's answer (its `ran` is this leg's to measure).
    reply: oneshot::Receiver<Ended>,
    ended: bool,
}

impl PluginCall {
    pub(super) fn new(handle: PluginHandle, id: CallId, reply: oneshot::Receiver<Ended>) -> Self {
        PluginCall {
            handle,
            id,
            started: Instant::now(),
            reply,
            ended: false,
        }
    }

    /// Cancels the call; it ends as cancelled with `reason` (unless it ended first).
    pub fn cancel(&self, reason: &str) {
        if !self.ended {
            self.handle.cancel(self.id, reason);
        }
    }

    /// How long the call has been in its plugin.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Future for PluginCall {
    type Output = Ended;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Ended> {
        let reply = std::task::ready!(Pin::new(&mut self.reply).poll(cx));
        self.ended = true;
        let ran = Some(self.started.elapsed());
        Poll::Ready(match reply {
            Ok(ended) => Ended { ran, ..ended },
            // The supervisor let the call go unanswered: its instance is gone.
            Err(_) => Ended {
                outcome: CallOutcome::Stopped(format!("plugin '{}' stopped", self.handle.name())),
                ran,
                fuel_used: 0,
            },
        })
    }
}

impl Drop for PluginCall {
    fn drop(&mut self) {
        self.cancel("the caller stopped waiting");
    }
}
