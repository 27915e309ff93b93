//! The plugin's one Lua state and the four steps the host drives it with.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::chunk::ChunkMode;
use mlua::{Lua, MultiValue, Value};

use crate::api::{self, Ctx, Registry};
use crate::bindings::exports::toolcell::plugin::guest::LoadRequest;
use crate::bindings::toolcell::plugin::types::{CallState, LoadError, OpOutcome, ToolSpec};
use crate::errors::type_name;
use crate::sandbox::{self, Watchdog};
use crate::scheduler::{self, Call, CallId, OpId};
use crate::{errors, json};

/// The loaded plugin: its Lua state and the watchdog that enforces deadlines in it.
struct Runtime {
    lua: Lua,
    watchdog: Rc<Watchdog>,
}

thread_local! {
    /// A component instance runs exactly one plugin, loaded once.
    static RUNTIME: RefCell<Option<Runtime>> = const { RefCell::new(None) };
}

/// Facts about the plugin that never change after load.
struct Settings {
    debug_log: bool,
    memory_limit: usize,
}

/// Whether `ctx:log` and `print` should reach the host (read once at load, so a disabled
/// log costs one flag test).
pub fn debug_log_enabled(lua: &Lua) -> bool {
    lua.app_data_ref::<Settings>()
        .is_some_and(|settings| settings.debug_log)
}

/// The plugin's memory limit in bytes.
pub fn memory_limit(lua: &Lua) -> usize {
    lua.app_data_ref::<Settings>()
        .map_or(0, |settings| settings.memory_limit)
}

/// Formats a byte count the way limits are written in messages ("8 MiB").
pub fn format_bytes(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    const KIB: usize = 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Creates the Lua state, runs the plugin's load-time code under its deadline, and
/// returns the tools it registered.
pub fn load(request: LoadRequest) -> Result<Vec<ToolSpec>, LoadError> {
    if RUNTIME.with_borrow(Option::is_some) {
        return Err(LoadError::Failed(
            "the plugin is already loaded".to_string(),
        ));
    }
    let script = request.script.ok_or_else(|| {
        LoadError::Failed("no Lua script was given to the Lua runtime".to_string())
    })?;
    let memory_limit = usize::try_from(request.memory_limit).unwrap_or(usize::MAX);
    let watchdog = Rc::new(Watchdog::default());
    watchdog.arm(request.deadline);
    let lua = new_plugin_state(
        watchdog.clone(),
        &request.name,
        memory_limit,
        request.debug_log,
    )
    .map_err(|error| {
        LoadError::Failed(format!(
            "could not create the Lua state: {}",
            errors::message(&error)
        ))
    })?;
    let chunk_name = format!("@{}.lua", request.name);
    let result = lua
        .load(script)
        .set_name(chunk_name)
        .set_mode(ChunkMode::Text)
        .exec();
    if watchdog.tripped() {
        return Err(LoadError::TimedOut);
    }
    if let Err(error) = result {
        return Err(LoadError::Failed(scheduler::failure_text(&lua, &error)));
    }
    let specs = match lua.app_data_mut::<Registry>() {
        Some(mut registry) => {
            registry.loading = false;
            registry.specs.clone()
        }
        None => Vec::new(),
    };
    RUNTIME.set(Some(Runtime { lua, watchdog }));
    Ok(specs)
}

fn new_plugin_state(
    watchdog: Rc<Watchdog>,
    name: &str,
    memory_limit: usize,
    debug_log: bool,
) -> mlua::Result<Lua> {
    let (lua, yield_fn) = sandbox::new_state(watchdog.clone())?;
    lua.set_app_data(Settings {
        debug_log,
        memory_limit,
    });
    lua.set_app_data(Registry {
        loading: true,
        plugin_name: name.to_string(),
        ..Registry::default()
    });
    api::install(&lua, yield_fn, watchdog, memory_limit)?;
    lua.gc_set_mode(mlua::state::GcMode::Incremental(
        mlua::state::GcIncParams::default().pause(1000),
    ));
    lua.set_memory_limit(memory_limit)?;
    Ok(lua)
}

/// Runs `f` with the loaded plugin, or reports that nothing is loaded.
fn with_runtime(f: impl FnOnce(&Runtime) -> CallState) -> CallState {
    RUNTIME.with_borrow(|runtime| match runtime {
        Some(runtime) => f(runtime),
        None => CallState::Failed("the plugin is not loaded".to_string()),
    })
}

/// Starts invocation `call` of `tool` and runs it until it ends or waits.
pub fn start(call: CallId, tool: &str, args_json: String, deadline: u64) -> CallState {
    with_runtime(|runtime| {
        let lua = &runtime.lua;
        runtime.watchdog.arm(deadline);
        match begin_call(lua, call, tool, args_json, deadline) {
            Ok(()) => scheduler::run(lua, &runtime.watchdog, call),
            Err(message) => CallState::Failed(message),
        }
    })
}

/// Decodes the arguments and creates the call's main coroutine and `ctx`.
fn begin_call(
    lua: &Lua,
    id: CallId,
    tool: &str,
    args_json: String,
    deadline: u64,
) -> Result<(), String> {
    let registry = lua
        .app_data_ref::<Registry>()
        .ok_or("the plugin has no tools")?;
    let invoke = registry
        .invoke(tool)
        .ok_or_else(|| format!("the plugin has no tool named '{tool}'"))?;
    drop(registry);
    let args = match json::decode(lua, args_json.as_bytes()) {
        Ok(Value::Table(args)) => args,
        Ok(other) => {
            return Err(format!(
                "the arguments must be a JSON object, got {}",
                type_name(&other)
            ));
        }
        Err(error) => return Err(format!("invalid JSON arguments: {error}")),
    };
    let failure = |error: mlua::Error| scheduler::failure_text(lua, &error);
    let ctx = lua
        .create_userdata(Ctx::new(id, Rc::from(args_json)))
        .map_err(failure)?;
    let main = lua.create_thread(invoke).map_err(failure)?;
    let values = MultiValue::from_iter([Value::Table(args), Value::UserData(ctx)]);
    scheduler::with(|scheduler| {
        scheduler
            .calls
            .insert(id, Call::new(main, deadline, values));
        Ok(())
    })
    .map_err(failure)
}

/// Delivers an operation's outcome to invocation `call` and runs it until it ends or
/// waits again.
pub fn resume(call: CallId, op: OpId, outcome: OpOutcome) -> CallState {
    with_runtime(|runtime| {
        let lua = &runtime.lua;
        let deadline =
            scheduler::with(|scheduler| Ok(scheduler.calls.get(&call).map(|call| call.deadline)));
        let Ok(Some(deadline)) = deadline else {
            return CallState::Failed("the invocation is unknown to the plugin".to_string());
        };
        runtime.watchdog.arm(deadline);
        if let Err(error) = scheduler::deliver(lua, call, op, outcome) {
            return CallState::Failed(scheduler::failure_text(lua, &error));
        }
        scheduler::run(lua, &runtime.watchdog, call)
    })
}

/// Ends invocation `call` and its tasks without running any more of its code.
pub fn cancel(call: CallId, _reason: &str) {
    scheduler::cancel(call);
}
