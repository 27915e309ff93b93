//! Bookkeeping of a plugin's asynchronous operations (HTTP requests, timers and
//! questions to the user).
//!
//! Operations run as tokio tasks beside the plugin; each sends its outcome to the
//! plugin's actor, which delivers it to the guest with `resume`. The table here knows
//! which call started which operation, enforces clm-tool(5)'s HTTP limits (8 in flight
//! per plugin, 128 per call; the extra request fails at once, it is not queued) and the
//! number of questions a call may ask, keeps how long each call has waited for answers
//! (which its deadline does not count), and aborts an operation's task when its waiter
//! is cancelled or its call ends, which drops an HTTP request's connection.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::AbortHandle;

use crate::base::fast_map::{FastMap, FastSet};
use crate::sandbox::wit::OpOutcome;

/// Host-chosen identifier of an invocation.
pub type CallId = u64;
/// Host-chosen identifier of an operation.
pub type OpId = u64;

/// At most this many HTTP requests of one plugin may be in flight (clm-tool(5)).
pub const MAX_HTTP_IN_FLIGHT: usize = 8;
/// A single tool call may make at most this many HTTP requests in total (clm-tool(5)).
pub const MAX_HTTP_PER_CALL: u32 = 128;

/// Why an operation may not start; the plugin sees the text as the operation's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The call is not in flight (another call's id, or one that ended).
    #[error("call {0} is not running")]
    CallNotRunning(CallId),
    /// The plugin's actor does not run yet, so no outcome could be delivered.
    #[error("operations cannot start before the plugin's actor runs")]
    NoActor,
    /// The plugin has as many operations pending as it may.
    #[error("too many pending operations (a plugin may have at most {0})")]
    TooManyPending(usize),
    /// The plugin has as many HTTP requests in flight as it may.
    #[error(
        "too many HTTP requests in flight: a plugin may have at most {MAX_HTTP_IN_FLIGHT} at once"
    )]
    TooManyInFlight,
    /// The call has made as many HTTP requests as one call may.
    #[error("too many HTTP requests: a tool call may make at most {MAX_HTTP_PER_CALL}")]
    TooManyForCall,
    /// The call has asked as many questions as one call may.
    #[error("too many questions: a tool call may ask at most {0}")]
    TooManyQuestions(u32),
    /// The policy does not let the plugin ask (`questions_per_call = 0`).
    #[error("the policy does not let this plugin ask the user ([limits] questions_per_call = 0)")]
    AskingOff,
}

/// What kind of operation it is: each kind has limits of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// A timer.
    Timer,
    /// An HTTP request.
    Http,
    /// A question to the user.
    Ask,
}

/// An operation's outcome on its way to the plugin's actor.
#[derive(Debug)]
pub struct OpEvent {
    /// The call that started the operation.
    pub call: CallId,
    /// The operation.
    pub op: OpId,
    /// What happened.
    pub outcome: OpOutcome,
}

struct Pending {
    call: CallId,
    abort: AbortHandle,
    kind: OpKind,
}

#[derive(Default)]
struct CallOps {
    http_started: u32,
    asks_started: u32,
    /// Questions waiting for an answer, and since when the first of them waits.
    asking: u32,
    asking_since: Option<Instant>,
    /// How long the call waited for answers before `asking_since`.
    waited: Duration,
    ops: FastSet<OpId>,
}

impl CallOps {
    fn waited(&self, now: Instant) -> Duration {
        self.waited
            + self
                .asking_since
                .map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
    }
}

/// The operations of one plugin instance.
pub struct Operations {
    next: OpId,
    pending: FastMap<OpId, Pending>,
    calls: FastMap<CallId, CallOps>,
    http_in_flight: usize,
    max_pending: usize,
    max_questions: u32,
    /// Where outcomes go: the plugin's actor, once it runs (`connect`).
    events: Option<Arc<UnboundedSender<OpEvent>>>,
}

impl Operations {
    /// An empty table; at most `max_pending` operations may be pending at once, and a
    /// call may ask at most `max_questions` questions. No operation may start until
    /// `connect` says where outcomes go.
    pub fn new(max_pending: usize, max_questions: u32) -> Self {
        Operations {
            next: 1,
            pending: FastMap::default(),
            calls: FastMap::default(),
            http_in_flight: 0,
            max_pending,
            max_questions,
            events: None,
        }
    }

    /// Sends the outcomes of operations started from now on to `events`. The actor
    /// connects an instance before its first call: a plugin's actor and its channels
    /// are only made when the plugin is first called.
    pub fn connect(&mut self, events: Arc<UnboundedSender<OpEvent>>) {
        self.events = Some(events);
    }

    /// Makes `call` known, so its coroutines may start operations.
    pub fn begin_call(&mut self, call: CallId) {
        self.calls.entry(call).or_default();
    }

    /// Forgets `call` and aborts every operation it still has pending.
    pub fn end_call(&mut self, call: CallId) {
        if let Some(call_ops) = self.calls.remove(&call) {
            for op in call_ops.ops {
                self.abort(op);
            }
        }
    }

    /// Aborts every pending operation of every call.
    pub fn abort_all(&mut self) {
        let calls: Vec<CallId> = self.calls.keys().copied().collect();
        for call in calls {
            self.end_call(call);
        }
    }

    /// Takes `op` of `call` off the table when its outcome arrives. False when nobody
    /// waits for it any more (cancelled, or its call ended), in which case the outcome is
    /// dropped. Op ids start afresh in every instance, so an outcome that was already
    /// on its way when an instance crashed can name an op of the new instance: the call
    /// (unique for the life of the runtime) tells them apart.
    pub fn complete(&mut self, op: OpId, call: CallId) -> bool {
        if self
            .pending
            .get(&op)
            .is_none_or(|pending| pending.call != call)
        {
            return false;
        }
        match self.pending.remove(&op) {
            Some(pending) => {
                self.release(op, &pending);
                true
            }
            None => false,
        }
    }

    /// Aborts `op` if it is still pending (the plugin stopped waiting for it).
    pub fn abort(&mut self, op: OpId) {
        if let Some(pending) = self.pending.remove(&op) {
            pending.abort.abort();
            self.release(op, &pending);
        }
    }

    fn release(&mut self, op: OpId, pending: &Pending) {
        if pending.kind == OpKind::Http {
            self.http_in_flight -= 1;
        }
        if let Some(call_ops) = self.calls.get_mut(&pending.call) {
            call_ops.ops.remove(&op);
            if pending.kind == OpKind::Ask {
                call_ops.asking -= 1;
                if call_ops.asking == 0
                    && let Some(since) = call_ops.asking_since.take()
                {
                    call_ops.waited += since.elapsed();
                }
            }
        }
    }

    /// Whether `call` waits for an answer now: its deadline stands still.
    pub fn is_asking(&self, call: CallId) -> bool {
        self.calls.get(&call).is_some_and(|ops| ops.asking > 0)
    }

    /// How long `call` has waited for answers so far: what its deadline moves by.
    pub fn waited(&self, call: CallId) -> Duration {
        self.calls
            .get(&call)
            .map_or(Duration::ZERO, |ops| ops.waited(Instant::now()))
    }

    /// Checks that `call` may start one more operation of `kind`.
    pub fn admit(&mut self, call: CallId, kind: OpKind) -> Result<(), Refused> {
        let Some(call_ops) = self.calls.get(&call) else {
            return Err(Refused::CallNotRunning(call));
        };
        if self.events.is_none() {
            return Err(Refused::NoActor);
        }
        if self.pending.len() >= self.max_pending {
            return Err(Refused::TooManyPending(self.max_pending));
        }
        match kind {
            OpKind::Http if self.http_in_flight >= MAX_HTTP_IN_FLIGHT => {
                Err(Refused::TooManyInFlight)
            }
            OpKind::Http if call_ops.http_started >= MAX_HTTP_PER_CALL => {
                Err(Refused::TooManyForCall)
            }
            OpKind::Ask if self.max_questions == 0 => Err(Refused::AskingOff),
            OpKind::Ask if call_ops.asks_started >= self.max_questions => {
                Err(Refused::TooManyQuestions(self.max_questions))
            }
            _ => Ok(()),
        }
    }

    /// Starts an admitted operation: runs `work` as a task and reports its outcome.
    pub fn spawn(
        &mut self,
        call: CallId,
        kind: OpKind,
        work: impl Future<Output = OpOutcome> + Send + 'static,
    ) -> OpId {
        let op = self.next;
        self.next += 1;
        let events = self.events.clone();
        let task = tokio::spawn(async move {
            let outcome = work.await;
            if let Some(events) = events {
                let _ = events.send(OpEvent { call, op, outcome });
            }
        });
        let call_ops = self.calls.entry(call).or_default();
        call_ops.ops.insert(op);
        match kind {
            OpKind::Http => {
                call_ops.http_started += 1;
                self.http_in_flight += 1;
            }
            OpKind::Ask => {
                call_ops.asks_started += 1;
                call_ops.asking += 1;
                call_ops.asking_since.get_or_insert_with(Instant::now);
            }
            OpKind::Timer => {}
        }
        self.pending.insert(
            op,
            Pending {
                call,
                abort: task.abort_handle(),
                kind,
            },
        );
        op
    }
}

impl Drop for Operations {
    fn drop(&mut self) {
        for pending in self.pending.values() {
            pending.abort.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::mpsc;

    use super::{OpKind, Operations, Refused};
    use crate::sandbox::wit::OpOutcome;

    #[test]
    fn no_operation_is_admitted_before_the_actor_connects() {
        let mut ops = Operations::new(16, 4);
        ops.begin_call(7);
        assert_eq!(ops.admit(7, OpKind::Timer), Err(Refused::NoActor));
        assert_eq!(
            Refused::NoActor.to_string(),
            "operations cannot start before the plugin's actor runs"
        );
        let (events, _receiver) = mpsc::unbounded_channel();
        ops.connect(Arc::new(events));
        assert_eq!(ops.admit(7, OpKind::Timer), Ok(()));
    }

    #[tokio::test]
    async fn an_outcome_for_another_call_does_not_complete_an_op_with_the_same_id() {
        let (events, _receiver) = mpsc::unbounded_channel();
        let mut ops = Operations::new(16, 4);
        ops.connect(Arc::new(events));
        ops.begin_call(7);
        let op = ops.spawn(7, OpKind::Timer, std::future::pending::<OpOutcome>());
        // A late outcome of a crashed instance's op 1, which belonged to call 3.
        assert!(!ops.complete(op, 3));
        assert!(ops.complete(op, 7));
        assert!(!ops.complete(op, 7), "an op completes once");
    }

    #[tokio::test]
    async fn a_call_waiting_for_an_answer_counts_the_wait_until_the_answer_comes() {
        let (events, _receiver) = mpsc::unbounded_channel();
        let mut ops = Operations::new(64, 4);
        ops.connect(Arc::new(events));
        ops.begin_call(7);
        assert!(!ops.is_asking(7));
        let op = ops.spawn(7, OpKind::Ask, std::future::pending::<OpOutcome>());
        assert!(ops.is_asking(7));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(ops.complete(op, 7));
        assert!(!ops.is_asking(7));
        let waited = ops.waited(7);
        assert!(waited >= std::time::Duration::from_millis(20), "{waited:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(ops.waited(7), waited, "the wait ended with the answer");
        for _ in 1..4 {
            assert_eq!(ops.admit(7, OpKind::Ask), Ok(()));
            ops.spawn(7, OpKind::Ask, std::future::pending::<OpOutcome>());
        }
        assert_eq!(ops.admit(7, OpKind::Ask), Err(Refused::TooManyQuestions(4)));
        let mut off = Operations::new(64, 0);
        let (events, _receiver) = mpsc::unbounded_channel();
        off.connect(Arc::new(events));
        off.begin_call(1);
        assert_eq!(off.admit(1, OpKind::Ask), Err(Refused::AskingOff));
    }
}
