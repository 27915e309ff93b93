//! Invocations as coroutine families, stepped by the host.
//!
//! Every tool invocation is a *call*: one main coroutine running `invoke(args, ctx)`
//! plus the tasks it spawns. A step (the host's `start`, `resume` or `cancel`) runs the
//! ready coroutines of one call until each is finished or waits on something: a host
//! operation (HTTP, timer) or, for the main coroutine, other tasks. The call ends when
//! its main coroutine ends, when it passes its deadline, or when the host cancels it.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use mlua::{Function, Lua, MultiValue, Table, Thread, Value};

use crate::bindings::toolcell::plugin::host;
use crate::bindings::toolcell::plugin::types::{Answer, CallState, ContentPart, OpOutcome};
use crate::tasks::{self, MainWait, Task};
use crate::{errors, json, watchdog};

/// Host-chosen identifier of an invocation.
pub type CallId = u64;
/// Host-chosen identifier of an asynchronous operation.
pub type OpId = u64;

/// Hashes host-chosen ids (sequential integers) with one multiplication, and the
/// plugin's own tool names a byte at a time: SipHash's protection against chosen keys
/// buys nothing here and costs on every step.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by host-chosen ids.
pub type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// One coroutine of a call family.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Strand {
    /// The coroutine running the tool's `invoke`.
    Main,
    /// The coroutine of the task with this index in `Call::tasks`.
    Task(usize),
}

/// How the invocation ended, as recorded by `ctx:complete` / `ctx:fail` (or by a rule
/// the plugin broke while doing so).
pub enum Ending {
    /// `ctx:complete(result)`.
    Completed(String),
    /// `ctx:complete_content(parts)`.
    CompletedContent(Vec<ContentPart>),
    /// `ctx:fail(message)`.
    Failed(String),
    /// A `ctx:complete` that broke the task rules; the message says which.
    BrokeRule(String),
}

/// One invocation in flight.
pub struct Call {
    /// The coroutine running `invoke`.
    pub main: Thread,
    /// The invocation must end before this instant (host clock).
    pub deadline: u64,
    /// Set once by `ctx:complete` / `ctx:fail`; reported when `invoke` returns.
    pub ending: Option<Ending>,
    /// The error raised by a second `ctx:complete` / `ctx:fail`: if `invoke` ends
    /// with it uncaught, the call broke the rule that it ends exactly once.
    pub ended_twice: Option<String>,
    /// Every task spawned by this call, in spawn order (a handle is an index).
    pub tasks: Vec<Task>,
    /// Coroutines ready to run, with the values their resumption returns.
    pub ready: VecDeque<(Strand, MultiValue)>,
    /// Which coroutine waits on which host operation.
    pub ops: IdMap<Strand>,
    /// What the main coroutine waits for, when it waits on tasks.
    pub main_wait: Option<MainWait>,
}

impl Call {
    /// A call whose main coroutine will start with `args` on the first step.
    pub fn new(main: Thread, deadline: u64, args: MultiValue) -> Self {
        Call {
            main,
            deadline,
            ending: None,
            ended_twice: None,
            tasks: Vec::new(),
            ready: VecDeque::from([(Strand::Main, args)]),
            ops: IdMap::default(),
            main_wait: None,
        }
    }

    /// The coroutine of a strand.
    fn thread(&self, strand: Strand) -> Option<Thread> {
        match strand {
            Strand::Main => Some(self.main.clone()),
            Strand::Task(index) => self.tasks.get(index).map(|task| task.thread.clone()),
        }
    }

    /// Records that `strand` waits on host operation `op`.
    pub fn wait_on_op(&mut self, strand: Strand, op: OpId) {
        self.ops.insert(op, strand);
        if let Strand::Task(index) = strand
            && let Some(task) = self.tasks.get_mut(index)
        {
            task.waiting_op = Some(op);
        }
    }

    /// Wakes the main coroutine if what it waits for has happened.
    pub fn wake_main(&mut self, lua: &Lua) -> mlua::Result<()> {
        let Some(wait) = self.main_wait.take() else {
            return Ok(());
        };
        match tasks::resolve(lua, self, &wait)? {
            Some(values) => self.ready.push_back((Strand::Main, values)),
            None => self.main_wait = Some(wait),
        }
        Ok(())
    }
}

/// All calls of the plugin, and which coroutine runs right now.
#[derive(Default)]
pub struct Scheduler {
    /// The calls in flight, by id.
    pub calls: IdMap<Call>,
    /// The coroutine running now, if any: the API checks it (only the main coroutine may
    /// complete, spawn or wait; HTTP and sleep need a coroutine at all).
    pub running: Option<(CallId, Strand)>,
    /// Main coroutines of ended calls that returned normally, kept for the next calls.
    spare_threads: Vec<Thread>,
}

/// How many finished main coroutines are kept. Creating a coroutine (its stack and
/// call-info list) and collecting it again is a sizeable part of a trivial call
/// (docs/performance.md).
const SPARE_THREADS: usize = 4;

/// A coroutine that will run `function`: a finished main coroutine of an earlier call,
/// reset, or a new one. Plugin code never holds a reference to a main coroutine (it has
/// no coroutine library), so nothing can tell the two apart.
pub fn main_coroutine(lua: &Lua, function: Function) -> mlua::Result<Thread> {
    match with(|scheduler| Ok(scheduler.spare_threads.pop()))? {
        Some(thread) => {
            thread.reset(function)?;
            Ok(thread)
        }
        None => lua.create_thread(function),
    }
}

thread_local! {
    /// The plugin's scheduler (an instance runs one plugin, on one thread).
    static SCHEDULER: RefCell<Scheduler> = RefCell::new(Scheduler::default());
}

/// Runs `f` on the plugin's scheduler. Fails (as a Lua error, never a panic) if the
/// scheduler is already borrowed, which only a finalizer running mid-operation can cause.
pub fn with<R>(f: impl FnOnce(&mut Scheduler) -> mlua::Result<R>) -> mlua::Result<R> {
    SCHEDULER.with(|scheduler| {
        let mut scheduler = scheduler.try_borrow_mut().map_err(|_| {
            mlua::Error::runtime("the toolcell runtime is busy (called from a finalizer?)")
        })?;
        f(&mut scheduler)
    })
}

/// The call a strand belongs to, for the running coroutine, if it is the main coroutine.
pub fn running_main(scheduler: &Scheduler, what: &str) -> Result<CallId, String> {
    match scheduler.running {
        Some((call, Strand::Main)) => Ok(call),
        Some((_, Strand::Task(_))) => Err(format!(
            "{what} may only be called from the tool's main coroutine, not from a task"
        )),
        None => Err(format!(
            "{what} may only be called while a tool runs, not at load time"
        )),
    }
}

/// How a coroutine came back from a resumption that did not merely yield.
enum Finish {
    Returned(MultiValue),
    Raised(mlua::Error),
}

/// Runs the ready coroutines of `id` until none is ready, and reports where the call
/// stands. Ends (and forgets) the call when its main coroutine ends or it times out.
pub fn run(lua: &Lua, id: CallId) -> CallState {
    let state = match run_until_blocked(lua, id) {
        Ok(state) => state,
        Err(error) => end_call(id, failed(&error)),
    };
    if matches!(state, CallState::OutOfMemory) {
        reclaim(lua);
    }
    state
}

/// Frees what a call that ran out of memory left for the collector. The collections
/// Lua makes when an allocation fails at the limit do not run finalizers, so objects
/// with one (userdata, tables with `__gc`) stay, and would fill the memory for every
/// later call. A full collection runs them; the second frees what they released.
fn reclaim(lua: &Lua) {
    // A finalizer's error is Lua's to report (as a warning), not the call's.
    let _ = lua.gc_collect();
    let _ = lua.gc_collect();
}

/// `state`, unless the watchdog stopped the step: then the call ends as timed out,
/// whichever part of the step (plugin code, or the runtime's own work for it) the
/// deadline error interrupted.
pub fn stopped_or(id: CallId, state: CallState) -> CallState {
    if watchdog::tripped() {
        end_call(id, CallState::TimedOut)
    } else {
        state
    }
}

fn run_until_blocked(lua: &Lua, id: CallId) -> mlua::Result<CallState> {
    loop {
        let next = with(|scheduler| {
            let Some(call) = scheduler.calls.get_mut(&id) else {
                return Ok(None);
            };
            let Some((strand, values)) = call.ready.pop_front() else {
                return Ok(None);
            };
            let thread = call.thread(strand);
            scheduler.running = Some((id, strand));
            Ok(thread.map(|thread| (strand, thread, values)))
        })?;
        let Some((strand, thread, values)) = next else {
            return Ok(if with(|s| Ok(s.calls.contains_key(&id)))? {
                CallState::Pending
            } else {
                CallState::Failed("the invocation is unknown to the plugin".to_string())
            });
        };
        let result = thread.resume::<MultiValue>(values);
        with(|scheduler| {
            scheduler.running = None;
            Ok(())
        })?;
        if watchdog::tripped() {
            return Ok(end_call(id, CallState::TimedOut));
        }
        let finish = match result {
            Ok(_) if yielded(&thread) => continue,
            Ok(values) => Finish::Returned(values),
            Err(error) => Finish::Raised(error),
        };
        match strand {
            Strand::Main => return Ok(main_finished(lua, id, finish)),
            Strand::Task(index) => task_finished(lua, id, index, finish)?,
        }
    }
}

/// Whether a coroutine that came back from a resumption without an error yielded
/// rather than returned: `Thread::status` without its lock and its walk of the stack.
fn yielded(thread: &Thread) -> bool {
    // SAFETY: `thread` keeps the coroutine alive, and it is not running.
    unsafe { mlua::ffi::lua_status(thread.state()) == mlua::ffi::LUA_YIELD }
}

/// The main coroutine ended: the call ends with it.
fn main_finished(lua: &Lua, id: CallId, finish: Finish) -> CallState {
    let returned = matches!(finish, Finish::Returned(_));
    let verdict = with(|scheduler| {
        let call = scheduler
            .calls
            .get_mut(&id)
            .ok_or_else(|| mlua::Error::runtime("call vanished"))?;
        let live = tasks::cancel_live(lua, call, "the tool's invoke function returned")?;
        Ok(match finish {
            Finish::Raised(error) => {
                let message = errors::message(&error);
                if call.ended_twice.as_ref() == Some(&message) {
                    CallState::BrokeRule(message)
                } else {
                    failed(&error)
                }
            }
            Finish::Returned(values) => match call.ending.take() {
                Some(Ending::Failed(message)) => CallState::Failed(message),
                Some(Ending::BrokeRule(message)) => CallState::BrokeRule(message),
                _ if live > 0 => CallState::BrokeRule(format!(
                    "invoke returned while {live} task(s) were still running; they were cancelled"
                )),
                None => CallState::BrokeRule(match values.front() {
                    None | Some(Value::Nil) => {
                        "invoke returned without calling ctx:complete or ctx:fail".to_string()
                    }
                    Some(value) => format!(
                        "invoke returned a value ({}) without calling ctx:complete or ctx:fail; \
                         the value is ignored: pass the result as a string to ctx:complete",
                        errors::type_name(value)
                    ),
                }),
                Some(completed) => match tasks::unobserved_error(call) {
                    Some(error) => CallState::BrokeRule(format!(
                        "the tool completed while a task error was never observed: {error}"
                    )),
                    None => match completed {
                        Ending::CompletedContent(parts) => CallState::CompletedContent(parts),
                        Ending::Completed(result) => CallState::Completed(result),
                        Ending::Failed(message) => CallState::Failed(message),
                        Ending::BrokeRule(message) => CallState::BrokeRule(message),
                    },
                },
            },
        })
    });
    let verdict = verdict.unwrap_or_else(|error| failed(&error));
    end_call_reusing(id, verdict, returned)
}

/// How a call ends when `error` ended its main coroutine: out of memory (the host
/// words it, knowing the limit and its own cap), or the error as the tool's failure.
fn failed(error: &mlua::Error) -> CallState {
    if errors::is_out_of_memory(error) {
        CallState::OutOfMemory
    } else {
        CallState::Failed(failure_text(error))
    }
}

/// A task ended: record its outcome and wake the main coroutine if it waited for this.
fn task_finished(lua: &Lua, id: CallId, index: usize, finish: Finish) -> mlua::Result<()> {
    let outcome = match finish {
        Finish::Returned(values) => tasks::Settled::Succeeded(values),
        Finish::Raised(error) => tasks::Settled::Failed(failure_text(&error)),
    };
    with(|scheduler| {
        let Some(call) = scheduler.calls.get_mut(&id) else {
            return Ok(());
        };
        tasks::settle(lua, call, index, outcome)?;
        call.wake_main(lua)
    })
}

/// Delivers the outcome of operation `op` to the coroutine waiting on it.
pub fn deliver(lua: &Lua, id: CallId, op: OpId, outcome: OpOutcome) -> mlua::Result<()> {
    // Convert before borrowing the scheduler: building Lua values may run finalizers.
    let values = outcome_values(lua, outcome);
    with(|scheduler| {
        let Some(call) = scheduler.calls.get_mut(&id) else {
            return Ok(());
        };
        let Some(strand) = call.ops.remove(&op) else {
            // The waiter was cancelled while the operation finished: nothing to do.
            return Ok(());
        };
        if strand == Strand::Main
            && let Some(MainWait::Any { timer, .. }) = &call.main_wait
            && *timer == Some(op)
        {
            call.main_wait = None;
            let timeout = lua.create_string("timeout")?;
            let values = MultiValue::from_iter([Value::Nil, Value::String(timeout)]);
            call.ready.push_back((Strand::Main, values));
            return Ok(());
        }
        if let Strand::Task(index) = strand
            && let Some(task) = call.tasks.get_mut(index)
        {
            task.waiting_op = None;
        }
        call.ready.push_back((strand, values?));
        Ok(())
    })
}

/// What `http.get`/`http.post`/`clm.sleep`/`ctx:ask` return when their operation
/// completes.
fn outcome_values(lua: &Lua, outcome: OpOutcome) -> mlua::Result<MultiValue> {
    let failure = |reason: &str| -> mlua::Result<MultiValue> {
        Ok(MultiValue::from_iter([
            Value::Nil,
            Value::String(lua.create_string(reason)?),
        ]))
    };
    match outcome {
        OpOutcome::TimerFired => Ok(MultiValue::new()),
        OpOutcome::Answered(Answer::Accepted(json)) => match json::decode(lua, json.as_bytes()) {
            Ok(answer) => Ok(MultiValue::from_iter([answer])),
            Err(error) => failure(&format!("the answer could not be read: {error}")),
        },
        OpOutcome::Answered(Answer::Declined) => failure("declined"),
        OpOutcome::Answered(Answer::Cancelled) => failure("cancelled"),
        OpOutcome::Answered(Answer::Unanswered(reason)) => failure(&reason),
        OpOutcome::HttpError(message) => Ok(MultiValue::from_iter([
            Value::Nil,
            Value::String(lua.create_string(message)?),
        ])),
        OpOutcome::HttpResponse(response) => match crate::waiting::response_table(lua, response) {
            Ok(table) => Ok(MultiValue::from_iter([Value::Table(table)])),
            Err(error) if errors::is_out_of_memory(&error) => {
                let message = "the response does not fit in the plugin's memory";
                Ok(MultiValue::from_iter([
                    Value::Nil,
                    Value::String(lua.create_string(message)?),
                ]))
            }
            Err(error) => Err(error),
        },
    }
}

/// Cancels every coroutine of a call that has not ended and forgets the call. The host
/// aborts the call's pending operations and words the failure itself.
pub fn cancel(id: CallId) {
    end_call(id, CallState::Pending);
}

/// Forgets a call and returns `state`. Its coroutines are abandoned (the host aborts
/// their pending operations when it sees the call end).
fn end_call(id: CallId, state: CallState) -> CallState {
    end_call_reusing(id, state, false)
}

/// [`end_call`], keeping the call's main coroutine for a later call when `returned`:
/// its `invoke` returned normally, so the coroutine is finished and can be reset.
fn end_call_reusing(id: CallId, state: CallState, returned: bool) -> CallState {
    let removed = with(|scheduler| Ok(scheduler.calls.remove(&id)));
    if returned && let Ok(Some(Call { main, .. })) = removed {
        // The rest of the call (and with it the references to its other coroutines)
        // is dropped when this returns, outside the borrow, where finalizers may run.
        let _ = with(|scheduler| {
            if scheduler.spare_threads.len() < SPARE_THREADS {
                scheduler.spare_threads.push(main);
            }
            Ok(())
        });
    }
    state
}

/// The message of an error that ended a coroutine, as the task's failure reads (and, for
/// the main coroutine, the tool's).
pub fn failure_text(error: &mlua::Error) -> String {
    if errors::is_out_of_memory(error) {
        let limit = crate::protocol::memory_limit();
        return format!(
            "out of memory: the plugin reached its memory limit of {}",
            toolcell_limits::format_bytes(limit as u64)
        );
    }
    errors::message(error)
}

/// Values for the outcome table of a successful task: one value stored directly,
/// several in an array, none omitted.
pub fn normalized_value(lua: &Lua, values: MultiValue) -> mlua::Result<Option<Value>> {
    let mut values: Vec<Value> = values.into_iter().collect();
    match values.len() {
        0 => Ok(None),
        1 => Ok(values.pop()),
        _ => {
            let array: Table = lua.create_table_with_capacity(values.len(), 0)?;
            for (index, value) in values.into_iter().enumerate() {
                array.raw_set(index + 1, value)?;
            }
            Ok(Some(Value::Table(array)))
        }
    }
}

/// Asks the host to abort an operation nobody waits for any more.
pub fn abort_op(op: OpId) {
    host::cancel_op(op);
}
