//! The task that owns one plugin's instance.
//!
//! Everything that touches the instance happens here, one step at a time: starting
//! calls, delivering operation outcomes, cancelling calls (on request or when their
//! deadline passes), and replacing the instance after a crash. Many actors run
//! concurrently on tokio, so plugins never wait for each other; a long step yields to
//! the executor at every fuel yield.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;

use super::PluginContext;
use super::instance::{Crash, Instance, LoadFailure, PluginPre};
use super::ops::{CallId, OpEvent};
use crate::bindings::{CallState, ToolSpec};
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

enum Command {
    Start {
        call: CallId,
        tool: String,
        args: String,
        timeout: Option<Duration>,
        reply: oneshot::Sender<CallOutcome>,
    },
    Cancel {
        call: CallId,
        reason: String,
    },
}

/// A handle to a loaded plugin: how the runtime sends it calls.
#[derive(Clone)]
pub struct PluginHandle {
    name: Arc<str>,
    actor: Arc<Mutex<ActorSlot>>,
}

/// The plugin's actor: loaded but not started until the plugin's first call, then
/// running. Spawning a task from outside the runtime's worker threads (a `block_on`,
/// `#[tokio::main]`) wakes an idle worker, which cost about a third of a plugin load on
/// the benchmark machine, and the actor's two channels take about 5 KiB: a plugin that
/// is never called needs neither.
struct ActorSlot {
    /// The loaded plugin, until its first call starts the actor.
    unstarted: Option<UnstartedActor>,
    /// The running actor's commands (none before its first call).
    commands: Option<UnboundedSender<Command>>,
}

/// A loaded plugin whose actor is not spawned yet.
struct UnstartedActor {
    context: Arc<PluginContext>,
    pre: PluginPre,
    instance: Instance,
    /// The runtime the plugin was loaded on, which the actor runs on (calls may be
    /// started from threads outside it).
    runtime: tokio::runtime::Handle,
}

impl UnstartedActor {
    /// Makes the actor's channels, connects the instance's operations to it and
    /// spawns its task; returns where its commands go.
    fn start(self) -> UnboundedSender<Command> {
        let (events_tx, events) = mpsc::unbounded_channel();
        let events_tx = Arc::new(events_tx);
        let (commands_tx, commands) = mpsc::unbounded_channel();
        let mut instance = self.instance;
        instance.ops().connect(events_tx.clone());
        let actor = Actor {
            context: self.context,
            pre: self.pre,
            instance: Some(instance),
            calls: HashMap::new(),
            crashes: VecDeque::new(),
            disabled: None,
            events_tx,
        };
        self.runtime.spawn(actor.run(commands, events));
        commands_tx
    }
}

impl PluginHandle {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts call `call` of `tool`, whose own deadline is `timeout` (none: the
    /// plugin's default); the receiver yields its outcome.
    pub fn start(
        &self,
        call: CallId,
        tool: &str,
        args: String,
        timeout: Option<Duration>,
    ) -> oneshot::Receiver<CallOutcome> {
        let (reply, outcome) = oneshot::channel();
        let command = Command::Start {
            call,
            tool: tool.to_string(),
            args,
            timeout,
            reply,
        };
        if let Err(Command::Start { reply, .. }) = self.send(command) {
            let _ = reply.send(CallOutcome::Failed(format!(
                "plugin '{}' is not running",
                self.name
            )));
        }
        outcome
    }

    /// Cancels call `call` if it is still in flight; it fails with `reason`.
    pub fn cancel(&self, call: CallId, reason: &str) {
        let _ = self.send(Command::Cancel {
            call,
            reason: reason.to_string(),
        });
    }

    /// Sends `command` to the actor. The first `Start` starts the actor (before it, no
    /// call is in flight, so there is nothing to cancel). Gives the command back if the
    /// actor is not running.
    fn send(&self, command: Command) -> Result<(), Command> {
        // A poisoned lock only means a panic elsewhere while holding it; the slot
        // itself is still whole.
        let mut slot = self
            .actor
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if matches!(command, Command::Start { .. })
            && let Some(unstarted) = slot.unstarted.take()
        {
            slot.commands = Some(unstarted.start());
        }
        match &slot.commands {
            Some(commands) => commands
                .send(command)
                .map_err(|mpsc::error::SendError(command)| command),
            None => Err(command),
        }
    }
}

/// Loads a plugin into a fresh instance; its actor starts with the plugin's first
/// call. Returns the handle and the tools the plugin registered.
pub async fn spawn_plugin(
    context: Arc<PluginContext>,
    pre: PluginPre,
) -> Result<(PluginHandle, Vec<ToolSpec>), LoadFailure> {
    let (instance, specs) = Instance::create(&context, &pre).await?;
    let name = Arc::from(context.name.as_str());
    let unstarted = UnstartedActor {
        context,
        pre,
        instance,
        runtime: tokio::runtime::Handle::current(),
    };
    let handle = PluginHandle {
        name,
        actor: Arc::new(Mutex::new(ActorSlot {
            unstarted: Some(unstarted),
            commands: None,
        })),
    };
    Ok((handle, specs))
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

struct Actor {
    context: Arc<PluginContext>,
    pre: PluginPre,
    /// None after a crash, until the next call creates a fresh instance.
    instance: Option<Instance>,
    calls: HashMap<CallId, HostCall>,
    crashes: VecDeque<Instant>,
    disabled: Option<String>,
    events_tx: Arc<UnboundedSender<OpEvent>>,
}

impl Actor {
    async fn run(
        mut self,
        mut commands: UnboundedReceiver<Command>,
        mut events: UnboundedReceiver<OpEvent>,
    ) {
        loop {
            let next_deadline = self.calls.values().map(|call| call.deadline).min();
            tokio::select! {
                command = commands.recv() => match command {
                    Some(Command::Start { call, tool, args, timeout, reply }) => {
                        self.start(call, tool, args, timeout, reply).await;
                    }
                    Some(Command::Cancel { call, reason }) => {
                        self.cancel(call, &format!("cancelled: {reason}")).await;
                    }
                    None => break,
                },
                Some(event) = events.recv() => self.deliver(event).await,
                () = sleep_until(next_deadline) => self.expire().await,
            }
        }
        for (_, call) in self.calls.drain() {
            let _ = call
                .reply
                .send(CallOutcome::Failed("the runtime shut down".to_string()));
        }
    }

    async fn start(
        &mut self,
        call: CallId,
        tool: String,
        args: String,
        timeout: Option<Duration>,
        reply: oneshot::Sender<CallOutcome>,
    ) {
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
                instance.ops().connect(self.events_tx.clone());
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

    async fn deliver(&mut self, event: OpEvent) {
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
    async fn expire(&mut self) {
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

    /// Ends call `call` inside the plugin and fails it with `message`.
    async fn cancel(&mut self, call: CallId, message: &str) {
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

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}
