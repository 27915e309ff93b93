//! How calls reach a plugin: on the caller's thread when the plugin is idle, through
//! the plugin's actor otherwise.
//!
//! A call to an idle plugin runs its first step right away, where it was made: a call
//! that ends in that step (a trivial tool, or one that fails its checks) never leaves
//! the caller's thread, which saves two thread wake-ups per call. A step that goes on
//! past its first yield to the executor is handed to a task of the plugin's runtime.
//! Calls made while the plugin is busy queue for the actor: the task that runs queued
//! calls in order, delivers operation outcomes, and enforces the deadlines of calls in
//! flight. The `Supervisor` lock makes every step of the instance take its turn, and
//! calls start in the order they were made. Many actors run concurrently on tokio, so
//! plugins never wait for each other.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;

use super::PluginContext;
use super::call::{Ended, PluginCall};
use super::instance::{Instance, LoadFailure, MemoryUse, PluginPre};
use super::operations::{CallId, OpEvent};
use super::supervisor::{CallRequest, Supervisor};
use crate::output::outcome::CallOutcome;
use crate::output::progress::ProgressSender;
use crate::sandbox::wit::ToolSpec;
use crate::services::ask::Questions;

enum Command {
    Start(CallRequest),
    Cancel {
        call: CallId,
        reason: String,
    },
    /// A call started on its caller's thread is in flight with a deadline before
    /// the one the actor watches.
    Watch,
}

/// A handle to a loaded plugin: how the runtime sends it calls.
#[derive(Clone)]
pub struct PluginHandle {
    name: Arc<str>,
    shared: Arc<HandleState>,
}

/// What every handle of one plugin shares.
struct HandleState {
    supervisor: Arc<tokio::sync::Mutex<Supervisor>>,
    /// The plugin's context, for its interrupts.
    context: Arc<PluginContext>,
    /// Starts sent to the actor and not run yet. While there are any, a new call
    /// queues behind them instead of running on its caller's thread.
    queued_starts: Arc<AtomicUsize>,
    /// The actor's commands: none until the plugin's first call starts the actor.
    /// Spawning a task from outside the runtime's worker threads wakes an idle worker
    /// (a large part of a plugin load), and the actor's two channels take memory
    /// (docs/performance.md): a plugin that is never called needs neither.
    commands: Mutex<Option<UnboundedSender<Command>>>,
    /// The tokio runtime the plugin was loaded on: its actor runs there, and so do steps
    /// started on threads outside it.
    tokio_rt: tokio::runtime::Handle,
}

impl PluginHandle {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The most linear memory any instance of the plugin has had, in bytes.
    pub fn peak_memory(&self) -> u64 {
        self.shared.context.peak_memory.load(Ordering::Relaxed)
    }

    /// Starts call `call` of `tool`, whose own deadline is `timeout` (none: the
    /// plugin's default), whose progress goes to `progress` and whose questions go
    /// where `questions` says (none: nobody can be asked); the returned future yields
    /// how it ended, and cancels it if dropped first. When the plugin is idle,
    /// the call's first step runs before this returns (at most until running code
    /// first yields, a few milliseconds).
    pub fn start(
        &self,
        call: CallId,
        tool: &str,
        args: String,
        timeout: Option<Duration>,
        progress: ProgressSender,
        questions: Option<Questions>,
    ) -> PluginCall {
        let (reply, outcome) = oneshot::channel();
        let leg = PluginCall::new(self.clone(), call, outcome);
        let request = CallRequest {
            call,
            tool: tool.to_string(),
            args,
            timeout,
            reply,
            progress,
            questions,
        };
        let Err(request) = self.run_here(request) else {
            return leg;
        };
        if let Err(Command::Start(request)) = self.shared.send_to_actor(Command::Start(request)) {
            let _ = request
                .reply
                .send(Ended::before_running(CallOutcome::Stopped(format!(
                    "plugin '{}' is not running",
                    self.name
                ))));
        }
        leg
    }

    /// How much memory the plugin's instance holds, measured when the step running
    /// now (if any) is done; none while the plugin has no instance.
    pub async fn memory(&self) -> Option<MemoryUse> {
        self.shared.supervisor.lock().await.memory().await
    }

    /// Cancels call `call` if it is still in flight; it fails with `reason`. A step of
    /// the call running now stops at its next deadline check (`interrupts.rs`).
    pub fn cancel(&self, call: CallId, reason: &str) {
        let interrupts = &self.shared.context.interrupts;
        interrupts.request(call, reason);
        let command = Command::Cancel {
            call,
            reason: reason.to_string(),
        };
        if self.shared.send_to_actor(command).is_err() {
            interrupts.take(call);
        }
    }

    /// Runs the first step of `request` on this thread, if the plugin is idle, its
    /// actor runs, and no earlier call waits for it; otherwise gives the request back.
    fn run_here(&self, request: CallRequest) -> Result<(), CallRequest> {
        let shared = &self.shared;
        let Ok(mut supervisor) = shared.supervisor.clone().try_lock_owned() else {
            return Err(request);
        };
        if !supervisor.is_connected() || shared.queued_starts.load(Ordering::Acquire) > 0 {
            return Err(request);
        }
        let call = request.call;
        let watcher = shared.clone();
        let mut step = Box::pin(async move {
            supervisor.start(request).await;
            if supervisor.needs_watching(call) {
                drop(supervisor);
                let _ = watcher.send_to_actor(Command::Watch);
            }
        });
        // Host services spawn tokio tasks, and the caller may be outside the runtime.
        let _entered = shared.tokio_rt.enter();
        // Polled without a waker: a step still pending is spawned, and the task's own
        // first poll registers the wake-ups it waits for.
        if step
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending()
        {
            shared.tokio_rt.spawn(step);
        }
        Ok(())
    }
}

impl HandleState {
    /// Sends `command` to the actor. The first `Start` starts the actor (before it, no
    /// call is in flight, so there is nothing to cancel or watch). Gives the command
    /// back if the actor is not running.
    fn send_to_actor(&self, command: Command) -> Result<(), Command> {
        let mut commands = self.lock_commands();
        let start = matches!(command, Command::Start(_));
        if start && commands.is_none() {
            *commands = Some(self.spawn_actor());
        }
        let Some(commands) = commands.as_ref() else {
            return Err(command);
        };
        if start {
            self.queued_starts.fetch_add(1, Ordering::AcqRel);
        }
        commands
            .send(command)
            .map_err(|mpsc::error::SendError(command)| {
                if start {
                    self.queued_starts.fetch_sub(1, Ordering::AcqRel);
                }
                command
            })
    }

    /// Makes the actor's channels and spawns its task; returns where its commands go.
    fn spawn_actor(&self) -> UnboundedSender<Command> {
        let (events_tx, events) = mpsc::unbounded_channel();
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        let actor = Actor {
            supervisor: self.supervisor.clone(),
            queued_starts: self.queued_starts.clone(),
        };
        self.tokio_rt
            .spawn(actor.run(commands_rx, Arc::new(events_tx), events));
        commands_tx
    }

    fn lock_commands(&self) -> std::sync::MutexGuard<'_, Option<UnboundedSender<Command>>> {
        // A poisoned lock only means a panic elsewhere while holding it; the sender
        // itself is still whole.
        self.commands
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
    let supervisor = Supervisor::new(context.clone(), pre, instance);
    let handle = PluginHandle {
        name,
        shared: Arc::new(HandleState {
            supervisor: Arc::new(tokio::sync::Mutex::new(supervisor)),
            context,
            queued_starts: Arc::new(AtomicUsize::new(0)),
            commands: Mutex::new(None),
            tokio_rt: tokio::runtime::Handle::current(),
        }),
    };
    Ok((handle, specs))
}

/// The task that runs a plugin's queued calls, delivers its operations' outcomes and
/// expires its calls in flight. It holds the supervisor, not the handles' `HandleState`:
/// that holds the actor's command sender, and the actor stops when the last handle
/// goes and the channel closes.
struct Actor {
    supervisor: Arc<tokio::sync::Mutex<Supervisor>>,
    queued_starts: Arc<AtomicUsize>,
}

/// What woke the actor.
enum Work {
    Command(Option<Command>),
    Event(OpEvent),
    Deadline,
}

impl Actor {
    async fn run(
        self,
        mut commands: UnboundedReceiver<Command>,
        events_tx: Arc<UnboundedSender<OpEvent>>,
        mut events: UnboundedReceiver<OpEvent>,
    ) {
        let mut next_deadline = {
            let mut supervisor = self.supervisor.lock().await;
            supervisor.connect(events_tx);
            supervisor.watch_next_deadline()
        };
        loop {
            let work = tokio::select! {
                command = commands.recv() => Work::Command(command),
                Some(event) = events.recv() => Work::Event(event),
                () = sleep_until(next_deadline) => Work::Deadline,
            };
            let mut supervisor = self.supervisor.lock().await;
            match work {
                Work::Command(Some(Command::Start(request))) => {
                    supervisor.start(request).await;
                    self.queued_starts.fetch_sub(1, Ordering::AcqRel);
                }
                Work::Command(Some(Command::Cancel { call, reason })) => {
                    supervisor.cancel(call, &reason).await;
                }
                Work::Command(Some(Command::Watch)) => {}
                Work::Command(None) => {
                    supervisor.shut_down();
                    return;
                }
                Work::Event(event) => supervisor.deliver(event).await,
                Work::Deadline => supervisor.expire().await,
            }
            next_deadline = supervisor.watch_next_deadline();
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}
