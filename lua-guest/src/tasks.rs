//! `clm.spawn` and the task API of clm-tool(5): task handles, outcome tables, and what
//! the main coroutine may wait for (`task:wait`, `clm.wait_any`, `clm.await_all`,
//! `clm.try_all`).

use std::collections::HashSet;

use mlua::{AnyUserData, Lua, MultiValue, Table, Thread, UserData, Value};

use crate::bindings::toolcell::plugin::host;
use crate::errors::{api_error, type_name};
use crate::scheduler::{self, Call, CallId, OpId, Strand};

/// Named registry key of the table of task methods defined by the prelude.
pub const METHODS_KEY: &str = "toolcell.task_methods";

/// The default reason of `task:cancel()` (clm-tool(5)).
const DEFAULT_CANCEL_REASON: &str = "task cancelled";

/// At most this many tasks may be waited on at once with `clm.wait_any` (clm-tool(5)).
const MAX_WAIT_ANY: usize = 128;

/// One spawned task.
pub struct Task {
    /// The coroutine running the task's function.
    pub thread: Thread,
    /// Where the task stands.
    pub status: TaskStatus,
    /// The host operation the task waits on, so cancelling the task can abort it.
    pub waiting_op: Option<OpId>,
}

/// Where a task stands; terminal states keep the stable outcome table.
pub enum TaskStatus {
    /// Not finished: scheduled, running or waiting.
    Pending,
    /// Returned normally.
    Succeeded(Table),
    /// Raised an error; `observed` turns true once the plugin read the outcome.
    Failed {
        outcome: Table,
        error: String,
        observed: bool,
    },
    /// Cancelled by the main coroutine or by the end of its call.
    Cancelled(Table),
}

impl TaskStatus {
    fn is_pending(&self) -> bool {
        matches!(self, TaskStatus::Pending)
    }

    /// The outcome table of a terminal task, marking a failure as observed.
    fn read_outcome(&mut self) -> Option<Table> {
        match self {
            TaskStatus::Pending => None,
            TaskStatus::Succeeded(outcome) | TaskStatus::Cancelled(outcome) => {
                Some(outcome.clone())
            }
            TaskStatus::Failed {
                outcome, observed, ..
            } => {
                *observed = true;
                Some(outcome.clone())
            }
        }
    }
}

/// How a task ended, before it is turned into an outcome table.
pub enum Settled {
    /// The task's function returned these values.
    Succeeded(MultiValue),
    /// The task's function raised this error.
    Failed(String),
}

/// What the main coroutine waits for, when it waits on tasks.
pub enum MainWait {
    /// `task:wait()`.
    One(usize),
    /// `clm.wait_any(tasks [, timeout_ms])`, with the timer of the timeout.
    Any {
        tasks: Vec<usize>,
        timer: Option<OpId>,
    },
    /// `clm.await_all(tasks)`.
    All(Vec<usize>),
    /// `clm.try_all(tasks)`.
    Try(Vec<usize>),
}

/// The handle `clm.spawn` returns: opaque to the plugin, valid only in its own call.
#[derive(Clone, Copy)]
pub struct TaskHandle {
    call: CallId,
    index: usize,
}

impl UserData for TaskHandle {
    fn add_fields<F: mlua::UserDataFields<Self>>(fields: &mut F) {
        fields.add_meta_field_with("__index", |lua| {
            lua.named_registry_value::<Table>(METHODS_KEY)
        });
        fields.add_meta_field("__name", "task");
    }

    fn add_methods<M: mlua::UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method("__tostring", |_, handle, ()| {
            Ok(format!("task {} of call {}", handle.index + 1, handle.call))
        });
    }
}

/// Records a task's end as its outcome table and releases its coroutine's operation.
pub fn settle(lua: &Lua, call: &mut Call, index: usize, settled: Settled) -> mlua::Result<()> {
    let outcome = lua.create_table()?;
    let status = match settled {
        Settled::Succeeded(values) => {
            outcome.raw_set("ok", true)?;
            if let Some(value) = scheduler::normalized_value(lua, values)? {
                outcome.raw_set("value", value)?;
            }
            TaskStatus::Succeeded(outcome)
        }
        Settled::Failed(error) => {
            outcome.raw_set("ok", false)?;
            outcome.raw_set("error", error.as_str())?;
            TaskStatus::Failed {
                outcome,
                error,
                observed: false,
            }
        }
    };
    if let Some(task) = call.tasks.get_mut(index) {
        task.status = status;
        task.waiting_op = None;
    }
    Ok(())
}

/// Cancels task `index` of `call` if it is pending. Returns whether it is now cancelled
/// (true also when it already was), as `task:cancel` reports.
fn cancel_task(lua: &Lua, call: &mut Call, index: usize, reason: &str) -> mlua::Result<bool> {
    let Some(task) = call.tasks.get_mut(index) else {
        return Ok(false);
    };
    match task.status {
        TaskStatus::Cancelled(_) => return Ok(true),
        TaskStatus::Succeeded(_) | TaskStatus::Failed { .. } => return Ok(false),
        TaskStatus::Pending => {}
    }
    let outcome = lua.create_table()?;
    outcome.raw_set("ok", false)?;
    outcome.raw_set("cancelled", true)?;
    outcome.raw_set("error", reason)?;
    task.status = TaskStatus::Cancelled(outcome);
    if let Some(op) = task.waiting_op.take() {
        call.ops.remove(&op);
        scheduler::abort_op(op);
    }
    call.ready
        .retain(|(strand, _)| *strand != Strand::Task(index));
    Ok(true)
}

/// Cancels every pending task of a call and returns how many there were.
pub fn cancel_live(lua: &Lua, call: &mut Call, reason: &str) -> mlua::Result<usize> {
    let mut cancelled = 0;
    for index in 0..call.tasks.len() {
        if call.tasks[index].status.is_pending() {
            cancel_task(lua, call, index, reason)?;
            cancelled += 1;
        }
    }
    Ok(cancelled)
}

/// How many tasks of the call are still pending.
pub fn live_count(call: &Call) -> usize {
    call.tasks
        .iter()
        .filter(|task| task.status.is_pending())
        .count()
}

/// The error of a failed task nobody read, if any.
pub fn unobserved_error(call: &Call) -> Option<String> {
    call.tasks.iter().find_map(|task| match &task.status {
        TaskStatus::Failed {
            error,
            observed: false,
            ..
        } => Some(error.clone()),
        _ => None,
    })
}

/// The values that end a main-coroutine wait, or `None` while it must go on waiting.
pub fn resolve(lua: &Lua, call: &mut Call, wait: &MainWait) -> mlua::Result<Option<MultiValue>> {
    match wait {
        MainWait::One(index) => {
            let done = !call.tasks[*index].status.is_pending();
            Ok(done.then(|| MultiValue::from_iter([Value::Boolean(true)])))
        }
        MainWait::Any { tasks, timer } => {
            let Some(position) = tasks
                .iter()
                .position(|&index| !call.tasks[index].status.is_pending())
            else {
                return Ok(None);
            };
            if let Some(timer) = timer {
                call.ops.remove(timer);
                scheduler::abort_op(*timer);
            }
            Ok(Some(MultiValue::from_iter([Value::Integer(
                position as i64 + 1,
            )])))
        }
        MainWait::All(tasks) => {
            if tasks
                .iter()
                .any(|&index| call.tasks[index].status.is_pending())
            {
                return Ok(None);
            }
            let outcomes = lua.create_table_with_capacity(tasks.len(), 0)?;
            for (position, &index) in tasks.iter().enumerate() {
                outcomes.raw_set(position + 1, call.tasks[index].status.read_outcome())?;
            }
            Ok(Some(MultiValue::from_iter([Value::Table(outcomes)])))
        }
        MainWait::Try(tasks) => resolve_try(lua, call, tasks),
    }
}

/// `clm.try_all`: the values in input order once all succeeded; `nil, error` as soon as
/// one failed, after cancelling the unfinished rest of the set.
fn resolve_try(lua: &Lua, call: &mut Call, tasks: &[usize]) -> mlua::Result<Option<MultiValue>> {
    let failed = tasks.iter().copied().find(|&index| {
        matches!(
            call.tasks[index].status,
            TaskStatus::Failed { .. } | TaskStatus::Cancelled(_)
        )
    });
    if let Some(failed) = failed {
        let error = match &mut call.tasks[failed].status {
            TaskStatus::Failed {
                error, observed, ..
            } => {
                *observed = true;
                error.clone()
            }
            TaskStatus::Cancelled(outcome) => outcome.raw_get::<String>("error")?,
            _ => unreachable!("selected a failed or cancelled task"),
        };
        for &index in tasks {
            cancel_task(
                lua,
                call,
                index,
                "cancelled by clm.try_all after another task failed",
            )?;
        }
        let error = lua.create_string(error)?;
        return Ok(Some(MultiValue::from_iter([
            Value::Nil,
            Value::String(error),
        ])));
    }
    if tasks
        .iter()
        .any(|&index| call.tasks[index].status.is_pending())
    {
        return Ok(None);
    }
    let values = lua.create_table_with_capacity(tasks.len(), 0)?;
    for (position, &index) in tasks.iter().enumerate() {
        if let TaskStatus::Succeeded(outcome) = &call.tasks[index].status {
            values.raw_set(position + 1, outcome.raw_get::<Value>("value")?)?;
        }
    }
    Ok(Some(MultiValue::from_iter([Value::Table(values)])))
}

/// Installs the task primitives into the runtime table `rt` used by the prelude.
pub fn install(lua: &Lua, rt: &Table) -> mlua::Result<()> {
    rt.raw_set("spawn", lua.create_function(spawn)?)?;
    rt.raw_set("task_wait", lua.create_function(task_wait)?)?;
    rt.raw_set("task_result", lua.create_function(task_result)?)?;
    rt.raw_set("task_cancel", lua.create_function(task_cancel)?)?;
    rt.raw_set("wait_any", lua.create_function(wait_any)?)?;
    rt.raw_set("await_all", lua.create_function(await_all)?)?;
    rt.raw_set("try_all", lua.create_function(try_all)?)?;
    Ok(())
}

/// `clm.spawn(fn)`: the task runs on a later iteration, never before `spawn` returns.
fn spawn(lua: &Lua, function: Value) -> mlua::Result<AnyUserData> {
    let Value::Function(function) = function else {
        return Err(api_error(
            lua,
            format!("clm.spawn expects a function, got {}", type_name(&function)),
        ));
    };
    let thread = lua.create_thread(function)?;
    let handle = scheduler::with(|scheduler| {
        let id = scheduler::running_main(scheduler, "clm.spawn").map_err(|e| api_error(lua, e))?;
        let call = scheduler
            .calls
            .get_mut(&id)
            .ok_or_else(|| mlua::Error::runtime("no call"))?;
        let index = call.tasks.len();
        call.tasks.push(Task {
            thread,
            status: TaskStatus::Pending,
            waiting_op: None,
        });
        call.ready
            .push_back((Strand::Task(index), MultiValue::new()));
        Ok(TaskHandle { call: id, index })
    })?;
    lua.create_userdata(handle)
}

/// Runs `f` on the current call, checked to be running its main coroutine, with the
/// task handle resolved to an index of that call.
fn with_own_task<R>(
    lua: &Lua,
    what: &str,
    task: &Value,
    f: impl FnOnce(&mut Call, usize) -> mlua::Result<R>,
) -> mlua::Result<R> {
    let handle = handle_of(lua, what, task)?;
    scheduler::with(|scheduler| {
        let id = scheduler::running_main(scheduler, what).map_err(|e| api_error(lua, e))?;
        if handle.call != id {
            return Err(api_error(
                lua,
                format!("{what}: the task belongs to another tool invocation"),
            ));
        }
        let call = scheduler
            .calls
            .get_mut(&id)
            .ok_or_else(|| mlua::Error::runtime("no call"))?;
        f(call, handle.index)
    })
}

fn handle_of(lua: &Lua, what: &str, value: &Value) -> mlua::Result<TaskHandle> {
    if let Value::UserData(data) = value
        && let Ok(handle) = data.borrow::<TaskHandle>()
    {
        return Ok(*handle);
    }
    Err(api_error(
        lua,
        format!("{what} expects a task handle, got {}", type_name(value)),
    ))
}

/// `task:wait()`: returns true once the task is terminal, without reading its result.
fn task_wait(lua: &Lua, task: Value) -> mlua::Result<MultiValue> {
    let index = with_own_task(lua, "task:wait", &task, |_, index| Ok(index))?;
    let id = handle_of(lua, "task:wait", &task)?.call;
    begin_wait(lua, "task:wait", id, MainWait::One(index))
}

/// `task:result()`: nil while pending, else the stable outcome table.
fn task_result(lua: &Lua, task: Value) -> mlua::Result<Option<Table>> {
    with_own_task(lua, "task:result", &task, |call, index| {
        Ok(call.tasks[index].status.read_outcome())
    })
}

/// `task:cancel([reason])`: true when cancelled now or before, false when it had
/// already succeeded or failed.
fn task_cancel(lua: &Lua, (task, reason): (Value, Option<Value>)) -> mlua::Result<bool> {
    let reason = match reason {
        None | Some(Value::Nil) => DEFAULT_CANCEL_REASON.to_string(),
        Some(Value::String(text)) => text.to_string_lossy(),
        Some(other) => {
            return Err(api_error(
                lua,
                format!(
                    "task:cancel expects a string reason, got {}",
                    type_name(&other)
                ),
            ));
        }
    };
    with_own_task(lua, "task:cancel", &task, |call, index| {
        cancel_task(lua, call, index, &reason)
    })
}

/// Reads a list of task handles of the current call (unique, in input order).
fn task_list(lua: &Lua, what: &str, tasks: &Value, call: CallId) -> mlua::Result<Vec<usize>> {
    let Value::Table(table) = tasks else {
        return Err(api_error(
            lua,
            format!("{what} expects an array of tasks, got {}", type_name(tasks)),
        ));
    };
    let mut seen = HashSet::new();
    let mut indices = Vec::new();
    for position in 1..=table.raw_len() {
        let value: Value = table.raw_get(position)?;
        let handle = handle_of(lua, &format!("{what} (element {position})"), &value)?;
        if handle.call != call {
            return Err(api_error(
                lua,
                format!("{what}: element {position} is a task of another tool invocation"),
            ));
        }
        if !seen.insert(handle.index) {
            return Err(api_error(
                lua,
                format!("{what}: element {position} repeats a task"),
            ));
        }
        indices.push(handle.index);
    }
    Ok(indices)
}

/// Checks the caller is a main coroutine and reads its task list.
fn main_and_tasks(lua: &Lua, what: &str, tasks: &Value) -> mlua::Result<(CallId, Vec<usize>)> {
    let id = scheduler::with(|scheduler| {
        scheduler::running_main(scheduler, what).map_err(|e| api_error(lua, e))
    })?;
    Ok((id, task_list(lua, what, tasks, id)?))
}

/// Starts waiting for `wait`, or returns its values at once if it is already over.
/// Returns `true, values...` when over, `false` when the caller must yield.
fn begin_wait(lua: &Lua, what: &str, id: CallId, wait: MainWait) -> mlua::Result<MultiValue> {
    // Checked before borrowing the scheduler; only needed if the wait does not end at once.
    let yieldable = crate::waiting::is_yieldable(lua);
    scheduler::with(|scheduler| {
        let call = scheduler
            .calls
            .get_mut(&id)
            .ok_or_else(|| mlua::Error::runtime("no call"))?;
        match resolve(lua, call, &wait)? {
            Some(values) => Ok(std::iter::once(Value::Boolean(true))
                .chain(values)
                .collect()),
            None if !yieldable => Err(api_error(lua, crate::waiting::not_yieldable(what))),
            None => {
                call.main_wait = Some(wait);
                Ok(MultiValue::from_iter([Value::Boolean(false)]))
            }
        }
    })
}

/// `clm.wait_any(tasks [, timeout_ms])`.
fn wait_any(lua: &Lua, (tasks, timeout): (Value, Option<Value>)) -> mlua::Result<MultiValue> {
    let (id, indices) = main_and_tasks(lua, "clm.wait_any", &tasks)?;
    if indices.is_empty() {
        return Err(api_error(lua, "clm.wait_any expects at least one task"));
    }
    if indices.len() > MAX_WAIT_ANY {
        return Err(api_error(
            lua,
            format!(
                "clm.wait_any waits on at most {MAX_WAIT_ANY} tasks, got {}",
                indices.len()
            ),
        ));
    }
    let timeout = match timeout {
        None | Some(Value::Nil) => None,
        Some(value) => Some(crate::waiting::milliseconds(lua, "clm.wait_any", &value)?),
    };
    let values = begin_wait(
        lua,
        "clm.wait_any",
        id,
        MainWait::Any {
            tasks: indices,
            timer: None,
        },
    )?;
    let waiting = matches!(values.front(), Some(Value::Boolean(false)));
    match timeout {
        Some(0) if waiting => {
            scheduler::with(|scheduler| {
                if let Some(call) = scheduler.calls.get_mut(&id) {
                    call.main_wait = None;
                }
                Ok(())
            })?;
            let timeout = lua.create_string("timeout")?;
            Ok(MultiValue::from_iter([
                Value::Boolean(true),
                Value::Nil,
                Value::String(timeout),
            ]))
        }
        Some(ms) if waiting => {
            crate::watchdog::charge_host_call(0)?;
            let timer = host::timer_start(id, ms)
                .map_err(|error| api_error(lua, format!("clm.wait_any: {error}")))?;
            scheduler::with(|scheduler| {
                let call = scheduler
                    .calls
                    .get_mut(&id)
                    .ok_or_else(|| mlua::Error::runtime("no call"))?;
                call.ops.insert(timer, Strand::Main);
                if let Some(MainWait::Any { timer: slot, .. }) = &mut call.main_wait {
                    *slot = Some(timer);
                }
                Ok(())
            })?;
            Ok(values)
        }
        _ => Ok(values),
    }
}

/// `clm.await_all(tasks)`: an array of outcome tables, in input order.
fn await_all(lua: &Lua, tasks: Value) -> mlua::Result<MultiValue> {
    let (id, indices) = main_and_tasks(lua, "clm.await_all", &tasks)?;
    begin_wait(lua, "clm.await_all", id, MainWait::All(indices))
}

/// `clm.try_all(tasks)`: the values in order, or `nil, err` after cancelling the rest.
fn try_all(lua: &Lua, tasks: Value) -> mlua::Result<MultiValue> {
    let (id, indices) = main_and_tasks(lua, "clm.try_all", &tasks)?;
    begin_wait(lua, "clm.try_all", id, MainWait::Try(indices))
}
