//! What a plugin's calls run against: its instance, the calls it has in flight and its
//! record of crashes.
//!
//! Every step of the instance happens through the `Supervisor`: starting calls,
//! delivering operation outcomes, cancelling calls (on request or when their deadline
//! passes), and replacing the instance after a crash. It sits behind an async lock
//! that the plugin's actor and callers who find the plugin idle take in turn
//! (`actor.rs`), so one step runs at a time.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use super::PluginContext;
use super::call::Ended;
use super::instance::{Crash, Instance, MemoryUse, PluginPre, Step};
use super::operations::{CallId, OpEvent};
use crate::base::fast_map::FastMap;
use crate::base::limits::bounded_message;
use crate::output::outcome::{CallOutcome, CrashCause, PluginFate};
use crate::output::progress::ProgressSender;
use crate::services::ask::Questions;

/// A call to start: what the caller asked for and where its outcome goes.
pub struct CallRequest {
    /// The call's id, unique for the life of the runtime.
    pub call: CallId,
    /// The tool called.
    pub tool: String,
    /// Its arguments, JSON object text.
    pub args: String,
    /// The tool's own deadline (none: the plugin's default).
    pub timeout: Option<Duration>,
    /// Receives the outcome.
    pub reply: oneshot::Sender<Ended>,
    /// Receives the progress the plugin reports.
    pub progress: ProgressSender,
    /// Answers the questions the plugin asks (none: nobody can be asked).
    pub questions: Option<Questions>,
}

/// A call in flight, as the host sees it.
struct HostCall {
    /// Says what of the call's log was dropped once the call ends, however it ends.
    log: LogEnd,
    tool: String,
    reply: oneshot::Sender<Ended>,
    /// The deadline as the call started: it moves later by the time the call waits
    /// for answers (`Operations::waited`).
    deadline: Instant,
    timeout: Duration,
    /// Set when the call runs under the plugin's default deadline and the policy
    /// granted less than its manifest asks for: the timeout message adds it.
    timeout_hint: Option<String>,
    /// The fuel it has left.
    fuel: u64,
    /// The fuel it started with.
    budget: u64,
}

/// One plugin's instance and calls.
pub struct Supervisor {
    context: Arc<PluginContext>,
    pre: PluginPre,
    /// None after a crash, until the next call creates a fresh instance.
    instance: Option<Instance>,
    calls: FastMap<CallId, HostCall>,
    crashes: VecDeque<Instant>,
    disabled: Option<String>,
    /// Where the instance's operations send their outcomes: the plugin's actor, once
    /// it runs.
    events: Option<Arc<UnboundedSender<OpEvent>>>,
    /// The deadline the actor sleeps until (none: no call was in flight when it last
    /// looked).
    watched: Option<Instant>,
}

impl Supervisor {
    /// Supervises `instance`, a loaded instance of `pre` for the plugin of `context`.
    pub fn new(context: Arc<PluginContext>, pre: PluginPre, instance: Instance) -> Self {
        Supervisor {
            context,
            pre,
            instance: Some(instance),
            calls: FastMap::default(),
            crashes: VecDeque::new(),
            disabled: None,
            events: None,
            watched: None,
        }
    }

    /// Sends the outcomes of the instance's operations (and of every instance after
    /// it) to `events`.
    pub fn connect(&mut self, events: Arc<UnboundedSender<OpEvent>>) {
        if let Some(instance) = self.instance.as_mut() {
            instance.operations().connect(events.clone());
        }
        self.events = Some(events);
    }

    /// Whether operation outcomes have somewhere to go: before that, no call may start.
    pub fn is_connected(&self) -> bool {
        self.events.is_some()
    }

    /// The earliest deadline of a call in flight, which the actor watches from now on.
    /// A call waiting for an answer has none while it waits.
    pub fn watch_next_deadline(&mut self) -> Option<Instant> {
        self.watched = (self.calls.keys())
            .filter_map(|&call| self.running_deadline(call))
            .min();
        self.watched
    }

    /// Whether `call` is in flight with a deadline before the one the actor watches,
    /// so that the actor must be told to look again.
    pub fn needs_watching(&self, call: CallId) -> bool {
        self.running_deadline(call)
            .is_some_and(|deadline| self.watched.is_none_or(|watched| deadline < watched))
    }

    /// The deadline of call `call` in flight: where it started, moved by the time it
    /// has waited for answers (while it waits, the deadline moves with the clock).
    fn deadline_of(&self, call: CallId) -> Option<Instant> {
        let host_call = self.calls.get(&call)?;
        let waited = (self.instance.as_ref()).map_or(Duration::ZERO, |instance| {
            instance.operations_ref().waited(call)
        });
        Some(host_call.deadline + waited)
    }

    /// The deadline that can pass: none while the call waits for an answer.
    fn running_deadline(&self, call: CallId) -> Option<Instant> {
        let asking = (self.instance.as_ref())
            .is_some_and(|instance| instance.operations_ref().is_asking(call));
        if asking {
            return None;
        }
        self.deadline_of(call)
    }

    /// Runs the first step of a call; its outcome is sent once it ends.
    pub async fn start(&mut self, request: CallRequest) {
        let CallRequest {
            call,
            tool,
            args,
            timeout,
            reply,
            progress,
            questions,
        } = request;
        if let Some(reason) = &self.disabled {
            let _ = reply.send(Ended::before_running(CallOutcome::Disabled(reason.clone())));
            return;
        }
        if self.instance.is_none()
            && let Err(failure) = self.restart().await
        {
            let name = &self.context.name;
            let _ = reply.send(Ended::before_running(CallOutcome::Crashed {
                message: format!("plugin '{name}' {failure}"),
                cause: CrashCause::Restart,
                fate: self.fate_after_failed_restart(),
                during_another_call: false,
            }));
            return;
        }
        let Some(instance) = self.instance.as_mut() else {
            return;
        };
        let (timeout, timeout_hint) = match timeout {
            Some(own) => (own, None),
            None => (
                self.context.grants.limits.call_timeout,
                self.context.grants.hints.timeout.clone(),
            ),
        };
        let deadline = Instant::now() + timeout;
        let budget = self.context.grants.limits.fuel;
        let mut fuel = budget;
        let state = instance
            .start(call, &tool, &args, progress, questions, deadline, &mut fuel)
            .await;
        let host_call = HostCall {
            log: LogEnd {
                context: self.context.clone(),
                call,
            },
            tool,
            reply,
            deadline,
            timeout,
            timeout_hint,
            fuel,
            budget,
        };
        self.settle(call, host_call, state).await;
    }

    /// Re-creates the instance after a crash. A failure counts as another crash; the
    /// error says what became of the plugin ("it could not be restarted: ...").
    async fn restart(&mut self) -> Result<(), String> {
        match Instance::create(&self.context, &self.pre).await {
            Ok((mut instance, _)) => {
                if let Some(events) = &self.events {
                    instance.operations().connect(events.clone());
                }
                self.instance = Some(instance);
                Ok(())
            }
            Err(failure) => {
                let message = format!("it could not be restarted: {failure}");
                self.note_crash(&message);
                Err(message)
            }
        }
    }

    /// What became of the plugin after a failed restart (which counts as a crash).
    fn fate_after_failed_restart(&self) -> PluginFate {
        if self.disabled.is_some() {
            PluginFate::Disabled
        } else {
            PluginFate::NotRestarted
        }
    }

    /// Acts on the state a step left the call in.
    async fn settle(&mut self, call: CallId, host_call: HostCall, state: Result<Step, Crash>) {
        let outcome = match state {
            Ok(Step::Pending) => {
                self.calls.insert(call, host_call);
                return;
            }
            Ok(Step::Completed(output)) => CallOutcome::Completed(output),
            Ok(Step::CompletedContent(parts)) => CallOutcome::Content(parts),
            Ok(Step::Failed(message)) => CallOutcome::Failed(bounded_message(message)),
            Ok(Step::BrokeRule(message)) => CallOutcome::BrokeRule(bounded_message(message)),
            Ok(Step::OutOfMemory(message)) => CallOutcome::OutOfMemory(bounded_message(message)),
            Ok(Step::TimedOut) => self.stopped(call, &host_call),
            Err(crash) => {
                self.crashed(crash, Some(host_call)).await;
                return;
            }
        };
        if let Some(instance) = self.instance.as_mut() {
            instance.end_call(call);
        }
        host_call.finish(outcome);
    }

    /// How a call ended whose step the guest stopped: cancelled, when the caller
    /// cancelled it (the guest's deadline check saw it), else timed out, with what the
    /// guest said was running then.
    fn stopped(&mut self, call: CallId, host_call: &HostCall) -> CallOutcome {
        let note = self.instance.as_mut().and_then(Instance::take_timeout_note);
        if let Some(reason) = self.context.interrupts.take(call) {
            return CallOutcome::Cancelled(format!("cancelled: {reason}"));
        }
        CallOutcome::TimedOut(match note {
            Some(note) => format!("{}; {note}", timeout_message(host_call)),
            None => timeout_message(host_call),
        })
    }

    /// Delivers an operation's outcome to the call waiting for it.
    pub async fn deliver(&mut self, event: OpEvent) {
        let Some(instance) = self.instance.as_mut() else {
            return;
        };
        if !instance.operations().complete(event.op, event.call) {
            return;
        }
        let Some(deadline) = self.deadline_of(event.call) else {
            return;
        };
        let Some(instance) = self.instance.as_mut() else {
            return;
        };
        let Some(mut host_call) = self.calls.remove(&event.call) else {
            return;
        };
        let state = instance
            .resume(
                event.call,
                event.op,
                event.outcome,
                deadline,
                &mut host_call.fuel,
            )
            .await;
        self.settle(event.call, host_call, state).await;
    }

    /// Fails every call whose deadline has passed.
    pub async fn expire(&mut self) {
        let now = Instant::now();
        let due: Vec<CallId> = (self.calls.keys())
            .copied()
            .filter(|&call| (self.running_deadline(call)).is_some_and(|deadline| deadline <= now))
            .collect();
        for call in due {
            if let Some(host_call) = self.calls.get(&call) {
                let outcome = CallOutcome::TimedOut(timeout_message(host_call));
                self.end(call, outcome).await;
            }
        }
    }

    /// Cancels call `call`, if it is in flight: it fails with "cancelled: REASON".
    pub async fn cancel(&mut self, call: CallId, reason: &str) {
        if self.calls.contains_key(&call) {
            let outcome = CallOutcome::Cancelled(format!("cancelled: {reason}"));
            self.end(call, outcome).await;
        }
    }

    /// Ends call `call` inside the plugin (its whole family, with the failure message
    /// as the reason) and answers it with `outcome`.
    async fn end(&mut self, call: CallId, outcome: CallOutcome) {
        self.context.interrupts.take(call);
        let Some(host_call) = self.calls.remove(&call) else {
            return;
        };
        let Some(instance) = self.instance.as_mut() else {
            return;
        };
        let reason = outcome.failure().unwrap_or_default();
        match instance.cancel(call, reason).await {
            Ok(()) => {
                host_call.finish(outcome);
            }
            Err(crash) => self.crashed(crash, Some(host_call)).await,
        }
    }

    /// How much memory the instance holds; none while it has none (it crashed and
    /// could not be restarted, or crashed answering this).
    pub async fn memory(&mut self) -> Option<MemoryUse> {
        let instance = self.instance.as_mut()?;
        match instance.memory().await {
            Ok(memory) => Some(memory),
            Err(crash) => {
                self.crashed(crash, None).await;
                None
            }
        }
    }

    /// Fails every call in flight: nobody can call the plugin any more.
    pub fn shut_down(&mut self) {
        for (_, call) in self.calls.drain() {
            call.finish(CallOutcome::Stopped("the runtime shut down".to_string()));
        }
    }

    /// Discards the trapped instance, restarts the plugin in a fresh one (unless it
    /// crashed too often), and fails every call the old one had in flight with a
    /// message saying what happened to the plugin and why.
    async fn crashed(&mut self, crash: Crash, running: Option<HostCall>) {
        let name = self.context.name.clone();
        let reason = &crash.reason;
        tracing::warn!("plugin '{name}' crashed: {reason}");
        if let Some(mut instance) = self.instance.take() {
            instance.operations().abort_all();
        }
        let waiting: Vec<HostCall> = self.calls.drain().map(|(_, call)| call).collect();
        self.note_crash(reason);
        let (fate, what_became) = match &self.disabled {
            Some(_) => (
                PluginFate::Disabled,
                format!(
                    "it is now disabled: it crashed {} times within {} s",
                    self.crashes.len(),
                    self.context.grants.limits.crash_window.as_secs()
                ),
            ),
            None => match self.restart().await {
                Ok(()) => (
                    PluginFate::Restarted,
                    "it was restarted in a fresh sandbox (its state was lost)".to_string(),
                ),
                Err(failure) => (self.fate_after_failed_restart(), failure),
            },
        };
        let outcome = |message: String, during_another_call: bool| CallOutcome::Crashed {
            message,
            cause: crash.cause,
            fate,
            during_another_call,
        };
        if let Some(call) = running {
            let message = format!("plugin '{name}' crashed: {reason}; {what_became}");
            call.finish(outcome(message, false));
        }
        for call in waiting {
            let message =
                format!("plugin '{name}' crashed during another call: {reason}; {what_became}");
            call.finish(outcome(message, true));
        }
    }

    /// Counts a crash; too many within the window disable the plugin.
    fn note_crash(&mut self, reason: &str) {
        let limits = &self.context.grants.limits;
        let now = Instant::now();
        self.crashes.push_back(now);
        while self
            .crashes
            .front()
            .is_some_and(|at| now.duration_since(*at) > limits.crash_window)
        {
            self.crashes.pop_front();
        }
        if self.crashes.len() >= limits.max_crashes {
            let message = format!(
                "plugin '{}' is disabled: it crashed {} times within {} s (last: {reason})",
                self.context.name,
                self.crashes.len(),
                limits.crash_window.as_secs()
            );
            tracing::error!("{message}");
            self.disabled = Some(message);
        }
    }
}

impl HostCall {
    /// Ends the call with `outcome`: its log first, so that whoever awaits the outcome
    /// finds the log complete.
    fn finish(self, outcome: CallOutcome) {
        drop(self.log);
        let fuel_used = self.budget.saturating_sub(self.fuel);
        let _ = self.reply.send(Ended {
            outcome,
            ran: None,
            fuel_used,
        });
    }
}

/// Ends a call's log when the call ends (see `PluginLog::end`).
struct LogEnd {
    context: Arc<PluginContext>,
    call: CallId,
}

impl Drop for LogEnd {
    fn drop(&mut self) {
        self.context.log.end(Some(self.call));
    }
}

fn timeout_message(call: &HostCall) -> String {
    let hint = match &call.timeout_hint {
        Some(hint) => format!(" ({hint})"),
        None => String::new(),
    };
    format!(
        "tool '{}' timed out after {} ms{hint}",
        call.tool,
        call.timeout.as_millis()
    )
}
