//! What a plugin's calls run against: its instance, the calls it has in flight and its
//! record of crashes.
//!
//! Every step of the instance happens through the `Supervisor`: starting calls,
//! delivering operation outcomes, cancelling calls (on request or when their deadline
//! passes), and replacing the instance after a crash. It sits behind an async lock
//! that the plugin's actor and callers who find the plugin idle take in turn
//! (`actor.rs`), so one step runs at a time.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use super::PluginContext;
use super::instance::{Crash, Instance, MemoryUse, PluginPre};
use super::ops::{CallId, OpEvent};
use crate::bindings::CallState;
use crate::limits::bounded_message;

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// The tool completed; the string is its output.
    Completed(String),
    /// The tool failed; the string is the message the model sees inside
    /// "[tool failed: ...]".
    Failed(String),
}

impl CallOutcome {
    /// The text the model sees: the output, or "[tool failed: MESSAGE]".
    pub fn model_text(&self) -> String {
        match self {
            CallOutcome::Completed(output) => output.clone(),
            CallOutcome::Failed(message) => format!("[tool failed: {message}]"),
        }
    }
}

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
    pub reply: oneshot::Sender<CallOutcome>,
}

/// A call in flight, as the host sees it.
struct HostCall {
    tool: String,
    reply: oneshot::Sender<CallOutcome>,
    deadline: Instant,
    timeout: Duration,
    /// Set when the call runs under the plugin's default deadline and the policy
    /// granted less than its manifest asks for: the timeout message adds it.
    timeout_hint: Option<String>,
    fuel: u64,
}

/// One plugin's instance and calls.
pub struct Supervisor {
    context: Arc<PluginContext>,
    pre: PluginPre,
    /// None after a crash, until the next call creates a fresh instance.
    instance: Option<Instance>,
    calls: HashMap<CallId, HostCall>,
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
            calls: HashMap::new(),
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
            instance.ops().connect(events.clone());
        }
        self.events = Some(events);
    }

    /// Whether operation outcomes have somewhere to go: before that, no call may start.
    pub fn is_connected(&self) -> bool {
        self.events.is_some()
    }

    /// The earliest deadline of a call in flight, which the actor watches from now on.
    pub fn watch_next_deadline(&mut self) -> Option<Instant> {
        self.watched = self.calls.values().map(|call| call.deadline).min();
        self.watched
    }

    /// Whether `call` is in flight with a deadline before the one the actor watches,
    /// so that the actor must be told to look again.
    pub fn needs_watching(&self, call: CallId) -> bool {
        self.calls
            .get(&call)
            .is_some_and(|call| self.watched.is_none_or(|watched| call.deadline < watched))
    }

    /// Runs the first step of a call; its outcome is sent once it ends.
    pub async fn start(&mut self, request: CallRequest) {
        let CallRequest {
            call,
            tool,
            args,
            timeout,
            reply,
        } = request;
        if let Some(reason) = &self.disabled {
            let _ = reply.send(CallOutcome::Failed(reason.clone()));
            return;
        }
        if self.instance.is_none()
            && let Err(failure) = self.restart().await
        {
            let name = &self.context.name;
            let _ = reply.send(CallOutcome::Failed(format!("plugin '{name}' {failure}")));
            return;
        }
        let Some(instance) = self.instance.as_mut() else {
            return;
        };
        let (timeout, timeout_hint) = match timeout {
            Some(own) => (own, None),
            None => (
                self.context.limits.call_timeout,
                self.context.hints.timeout.clone(),
            ),
        };
        let deadline = Instant::now() + timeout;
        let mut fuel = self.context.limits.fuel;
        let state = instance
            .start(call, &tool, &args, deadline, &mut fuel)
            .await;
        let host_call = HostCall {
            tool,
            reply,
            deadline,
            timeout,
            timeout_hint,
            fuel,
        };
        self.settle(call, host_call, state).await;
    }

    /// Re-creates the instance after a crash. A failure counts as another crash; the
    /// error says what became of the plugin ("it could not be restarted: ...").
    async fn restart(&mut self) -> Result<(), String> {
        match Instance::create(&self.context, &self.pre).await {
            Ok((mut instance, _)) => {
                if let Some(events) = &self.events {
                    instance.ops().connect(events.clone());
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

    /// Acts on the state a step left the call in.
    async fn settle(&mut self, call: CallId, host_call: HostCall, state: Result<CallState, Crash>) {
        let outcome = match state {
            Ok(CallState::Pending) => {
                self.calls.insert(call, host_call);
                return;
            }
            Ok(CallState::Completed(output)) => CallOutcome::Completed(output),
            Ok(CallState::Failed(message)) => CallOutcome::Failed(bounded_message(message)),
            Ok(CallState::TimedOut) => CallOutcome::Failed(timeout_message(&host_call)),
            Err(crash) => {
                self.crashed(crash, Some(host_call)).await;
                return;
            }
        };
        if let Some(instance) = self.instance.as_mut() {
            instance.end_call(call);
        }
        let _ = host_call.reply.send(outcome);
    }

    /// Delivers an operation's outcome to the call waiting for it.
    pub async fn deliver(&mut self, event: OpEvent) {
        let Some(instance) = self.instance.as_mut() else {
            return;
        };
        if !instance.ops().complete(event.op, event.call) {
            return;
        }
        let Some(mut host_call) = self.calls.remove(&event.call) else {
            return;
        };
        let state = instance
            .resume(
                event.call,
                event.op,
                &event.outcome,
                host_call.deadline,
                &mut host_call.fuel,
            )
            .await;
        self.settle(event.call, host_call, state).await;
    }

    /// Fails every call whose deadline has passed.
    pub async fn expire(&mut self) {
        let now = Instant::now();
        let due: Vec<CallId> = self
            .calls
            .iter()
            .filter(|(_, call)| call.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for call in due {
            let message = self
                .calls
                .get(&call)
                .map(timeout_message)
                .unwrap_or_default();
            self.cancel(call, &message).await;
        }
    }

    /// Ends call `call` inside the plugin, if it is in flight, and fails it with
    /// `message`.
    pub async fn cancel(&mut self, call: CallId, message: &str) {
        let Some(host_call) = self.calls.remove(&call) else {
            return;
        };
        let Some(instance) = self.instance.as_mut() else {
            return;
        };
        match instance.cancel(call, message).await {
            Ok(()) => {
                let _ = host_call
                    .reply
                    .send(CallOutcome::Failed(message.to_string()));
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
            let _ = call
                .reply
                .send(CallOutcome::Failed("the runtime shut down".to_string()));
        }
    }

    /// Discards the trapped instance, restarts the plugin in a fresh one (unless it
    /// crashed too often), and fails every call the old one had in flight with a
    /// message saying what happened to the plugin and why.
    async fn crashed(&mut self, crash: Crash, running: Option<HostCall>) {
        let name = self.context.name.clone();
        tracing::warn!("plugin '{name}' crashed: {}", crash.0);
        if let Some(mut instance) = self.instance.take() {
            instance.ops().abort_all();
        }
        let waiting: Vec<HostCall> = self.calls.drain().map(|(_, call)| call).collect();
        self.note_crash(&crash.0);
        let fate = match &self.disabled {
            Some(_) => format!(
                "it is now disabled: it crashed {} times within {} s",
                self.crashes.len(),
                self.context.limits.crash_window.as_secs()
            ),
            None => match self.restart().await {
                Ok(()) => "it was restarted in a fresh sandbox (its state was lost)".to_string(),
                Err(failure) => failure,
            },
        };
        if let Some(call) = running {
            let message = format!("plugin '{name}' crashed: {}; {fate}", crash.0);
            let _ = call.reply.send(CallOutcome::Failed(message));
        }
        for call in waiting {
            let message = format!(
                "plugin '{name}' crashed during another call: {}; {fate}",
                crash.0
            );
            let _ = call.reply.send(CallOutcome::Failed(message));
        }
    }

    /// Counts a crash; too many within the window disable the plugin.
    fn note_crash(&mut self, reason: &str) {
        let limits = &self.context.limits;
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
