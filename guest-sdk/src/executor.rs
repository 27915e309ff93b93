//! A single-threaded executor driven by toolcell's steps.
//!
//! Each invocation (call) owns a set of tasks: its handler (the main task) and the
//! children it spawns. A step (`start`, `resume`) polls the call's ready tasks until
//! none is ready; a task waiting on a host operation is woken when `resume` delivers
//! that operation's outcome. Nothing here blocks: when no task is ready, the step
//! returns and the host calls again once an operation finishes.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::bindings::{OpOutcome, host};

/// Identifies an invocation (chosen by the host).
pub(crate) type CallId = u64;
/// Identifies a host operation (chosen by the host).
pub(crate) type OpId = u64;
/// Identifies a task within its call.
pub(crate) type TaskId = u64;

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Where an operation's outcome waits for its future.
#[derive(Default)]
struct OpSlot {
    outcome: Option<OpOutcome>,
    waker: Option<Waker>,
}

/// One invocation's tasks.
struct CallTasks {
    /// Tasks not being polled right now; a task being polled is taken out.
    tasks: HashMap<TaskId, Task>,
    next_task: TaskId,
    ops: HashMap<OpId, OpSlot>,
}

thread_local! {
    static CALLS: RefCell<HashMap<CallId, CallTasks>> = RefCell::new(HashMap::new());
    /// Tasks woken and not yet polled, as (call, task).
    static READY: RefCell<VecDeque<(CallId, TaskId)>> = const { RefCell::new(VecDeque::new()) };
}

/// Wakes one task by queueing it. Wakers are only used on the one thread a component
/// has; the ids are plain numbers, so the waker is trivially `Send + Sync`.
struct TaskWaker {
    call: CallId,
    task: TaskId,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        READY.with_borrow_mut(|ready| {
            if !ready.contains(&(self.call, self.task)) {
                ready.push_back((self.call, self.task));
            }
        });
    }
}

/// Creates call `call` with its main task.
pub(crate) fn begin(call: CallId, main: impl Future<Output = ()> + 'static) {
    CALLS.with_borrow_mut(|calls| {
        calls.insert(
            call,
            CallTasks {
                tasks: HashMap::new(),
                next_task: 0,
                ops: HashMap::new(),
            },
        );
    });
    spawn(call, Box::pin(main));
}

/// Adds a task to call `call` and queues it; returns its id, or `None` when the call
/// has ended.
pub(crate) fn spawn(call: CallId, task: Task) -> Option<TaskId> {
    let id = CALLS.with_borrow_mut(|calls| {
        let tasks = calls.get_mut(&call)?;
        let id = tasks.next_task;
        tasks.next_task += 1;
        tasks.tasks.insert(id, task);
        Some(id)
    })?;
    READY.with_borrow_mut(|ready| ready.push_back((call, id)));
    Some(id)
}

/// Drops a task that has not finished (`JoinHandle::abort`).
pub(crate) fn abort(call: CallId, task: TaskId) {
    let removed = CALLS.with_borrow_mut(|calls| {
        calls
            .get_mut(&call)
            .and_then(|tasks| tasks.tasks.remove(&task))
    });
    // Dropped outside the borrow: dropping a task drops its futures, which cancel
    // their operations through this module.
    drop(removed);
}

/// Why `run` stopped.
pub(crate) enum Stop {
    /// `done` said the call is over.
    Done,
    /// No task of the call is ready; some wait on host operations.
    Waiting,
    /// No task is ready and nothing the call waits on can ever finish.
    Stuck,
    /// The deadline passed.
    TimedOut,
}

/// Polls call `call`'s ready tasks until none is ready, `done` says the call is over,
/// or `deadline` (host clock) passes.
pub(crate) fn run(call: CallId, deadline: u64, done: impl Fn() -> bool) -> Stop {
    loop {
        if done() {
            return Stop::Done;
        }
        let next = READY.with_borrow_mut(|ready| {
            let position = ready.iter().position(|(c, _)| *c == call)?;
            ready.remove(position)
        });
        let Some((_, id)) = next else {
            let waits_on_host = CALLS
                .with_borrow(|calls| calls.get(&call).is_some_and(|tasks| !tasks.ops.is_empty()));
            return if waits_on_host {
                Stop::Waiting
            } else {
                Stop::Stuck
            };
        };
        let task = CALLS.with_borrow_mut(|calls| {
            calls
                .get_mut(&call)
                .and_then(|tasks| tasks.tasks.remove(&id))
        });
        let Some(mut task) = task else {
            continue;
        };
        let waker = Waker::from(Arc::new(TaskWaker { call, task: id }));
        let finished = task
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready();
        if finished {
            drop(task);
        } else {
            let returned = CALLS.with_borrow_mut(|calls| match calls.get_mut(&call) {
                Some(tasks) => {
                    tasks.tasks.insert(id, task);
                    None
                }
                None => Some(task),
            });
            drop(returned);
        }
        if host::now() > deadline {
            return Stop::TimedOut;
        }
    }
}

/// Ends call `call`: drops every task it still has (their pending operations are
/// cancelled in the host) and forgets its wake-ups.
pub(crate) fn end(call: CallId) {
    let removed = CALLS.with_borrow_mut(|calls| calls.remove(&call));
    READY.with_borrow_mut(|ready| ready.retain(|(c, _)| *c != call));
    drop(removed);
}

/// Delivers an operation's outcome and wakes the task waiting for it. An operation
/// nobody waits for any more is ignored.
pub(crate) fn deliver(call: CallId, op: OpId, outcome: OpOutcome) {
    let waker = CALLS.with_borrow_mut(|calls| {
        let slot = calls.get_mut(&call)?.ops.get_mut(&op)?;
        slot.outcome = Some(outcome);
        slot.waker.take()
    });
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// The future of one host operation, started by the caller with `op` as its id.
pub(crate) struct Operation {
    call: CallId,
    op: OpId,
    finished: bool,
}

impl Operation {
    /// Waits for operation `op` of call `call`.
    pub(crate) fn new(call: CallId, op: OpId) -> Operation {
        CALLS.with_borrow_mut(|calls| {
            if let Some(tasks) = calls.get_mut(&call) {
                tasks.ops.insert(op, OpSlot::default());
            }
        });
        Operation {
            call,
            op,
            finished: false,
        }
    }
}

impl Future for Operation {
    type Output = OpOutcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<OpOutcome> {
        let (call, op) = (self.call, self.op);
        let outcome = CALLS.with_borrow_mut(|calls| {
            let tasks = calls.get_mut(&call)?;
            let slot = tasks.ops.get_mut(&op)?;
            match slot.outcome.take() {
                Some(outcome) => {
                    tasks.ops.remove(&op);
                    Some(outcome)
                }
                None => {
                    slot.waker = Some(cx.waker().clone());
                    None
                }
            }
        });
        match outcome {
            Some(outcome) => {
                self.finished = true;
                Poll::Ready(outcome)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Operation {
    /// An operation nobody waits for is cancelled in the host.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        CALLS.with_borrow_mut(|calls| {
            if let Some(tasks) = calls.get_mut(&self.call) {
                tasks.ops.remove(&self.op);
            }
        });
        host::cancel_op(self.op);
    }
}

/// What a spawned task leaves for its [`JoinHandle`](crate::JoinHandle).
pub(crate) struct JoinSlot<T> {
    pub value: Option<T>,
    pub waker: Option<Waker>,
}

/// A shared join slot.
pub(crate) type SharedSlot<T> = Rc<RefCell<JoinSlot<T>>>;
