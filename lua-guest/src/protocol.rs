//! The plugin's one Lua state and the four steps the host drives it with.

use std::cell::{Cell, RefCell};

use mlua::chunk::ChunkMode;
use mlua::{Lua, MultiValue, Value};

use crate::api;
use crate::bindings::exports::toolcell::plugin::guest::LoadRequest;
use crate::bindings::toolcell::plugin::types::{CallState, LoadError, OpOutcome, ToolSpec};
use crate::errors::type_name;
use crate::scheduler::{self, Call, CallId, OpId};
use crate::{ctx, environment, errors, json, watchdog};

/// The plugin's Lua state.
struct State {
    lua: Lua,
    /// Whether a plugin has been loaded into the state (it serves one plugin, once).
    loaded: bool,
}

thread_local! {
    /// A component instance runs exactly one plugin, loaded once.
    ///
    /// Initialised on first use rather than in a `const` block: a lazy thread-local
    /// starts as zeros and so lives in `.bss`, on a page every step writes anyway (the
    /// allocator's state, the export's return area). The const form put it alone among
    /// read-only data on a page of the memory image, which every plugin instance then
    /// copied on its first borrow of it.
    #[allow(clippy::missing_const_for_thread_local)]
    static STATE: RefCell<Option<State>> = RefCell::new(None);
}

/// Facts about the plugin that never change after load.
#[derive(Clone, Copy)]
struct Settings {
    debug_log: bool,
    memory_limit: usize,
}

thread_local! {
    /// The loaded plugin's settings (all zeros before load, so in `.bss`), read on
    /// every call: a thread-local is a few instructions, Lua's app data a map lookup.
    static SETTINGS: Cell<Settings> = const {
        Cell::new(Settings {
            debug_log: false,
            memory_limit: 0,
        })
    };
}

/// Whether `ctx:log` and `print` should reach the host (read once at load, so a disabled
/// log costs one flag test).
pub fn debug_log_enabled() -> bool {
    SETTINGS.get().debug_log
}

/// The plugin's memory limit in bytes (0 before a plugin is loaded: no limit).
pub fn memory_limit() -> usize {
    SETTINGS.get().memory_limit
}

/// Creates the Lua state with the sandboxed libraries and the whole plugin API, before
/// any plugin is known. The host calls this once through the `prepare` export and
/// snapshots the instance (wasmtime-wizer), so every plugin instance starts with this
/// state already in its memory image instead of building it again; an instance that
/// was not prepared prepares itself in `load`.
pub fn prepare() -> Result<(), String> {
    if STATE.with_borrow(Option::is_some) {
        return Ok(());
    }
    let lua = prepared_state().map_err(|error| {
        format!(
            "could not create the Lua state: {}",
            errors::message(&error)
        )
    })?;
    STATE.set(Some(State { lua, loaded: false }));
    #[cfg(target_arch = "wasm32")]
    crate::allocator::trim_heap();
    Ok(())
}

fn prepared_state() -> mlua::Result<Lua> {
    let (lua, yield_fn) = environment::new_state()?;
    api::install(&lua, yield_fn)?;
    set_gc_pause(&lua, LOAD_GC_PAUSE);
    // Finish the collector's cycle now: with the long pause a plugin's load then
    // allocates far less than it takes to start the next one, so it does not walk
    // (and, in a snapshot, touch and copy) every page of the prepared state.
    lua.gc_collect()?;
    Ok(lua)
}

/// The collector's pause while the runtime prepares and a plugin loads, in percent of
/// the memory in use after a cycle: the next cycle starts at ten times that, so a load
/// never starts one.
const LOAD_GC_PAUSE: i32 = 1000;

/// The pause once the plugin has loaded: Lua's default, the next cycle at twice the
/// memory in use. A longer pause cannot be bounded: the objects a cycle finds dead
/// but with a finalizer (every task handle, which is an mlua userdata, and any table
/// or plugin object with `__gc`) survive it to be finalized and count in the memory
/// the next pause is measured from, so when more than 1/(pause - 1) of a call's
/// garbage has a finalizer, each cycle starts later than the one before, and the
/// plugin reaches its memory limit after enough calls.
const CALL_GC_PAUSE: i32 = 200;

fn set_gc_pause(lua: &Lua, pause: i32) {
    lua.gc_set_mode(mlua::state::GcMode::Incremental(
        mlua::state::GcIncParams::default().pause(pause),
    ));
}

/// The bytes the Lua state holds now (0 before `prepare`), garbage the collector has
/// not reached yet included: with the pause of [`CALL_GC_PAUSE`], at most about twice
/// what is live.
pub fn lua_memory() -> u64 {
    STATE.with_borrow(|state| {
        state
            .as_ref()
            .map_or(0, |state| state.lua.used_memory() as u64)
    })
}

/// Tells the prepared state which plugin it runs, runs the plugin's load-time code
/// under its deadline, and returns the tools it registered.
pub fn load(request: LoadRequest) -> Result<Vec<ToolSpec>, LoadError> {
    prepare().map_err(LoadError::Failed)?;
    // The borrow ends before any plugin code runs.
    let lua = STATE
        .with_borrow_mut(|state| match state {
            Some(state) if !state.loaded => {
                state.loaded = true;
                Some(state.lua.clone())
            }
            _ => None,
        })
        .ok_or_else(|| LoadError::Failed("the plugin is already loaded".to_string()))?;
    let loaded = load_plugin(&lua, request);
    set_gc_pause(&lua, CALL_GC_PAUSE);
    // Only now: preparing the state and loading the plugin reuse what they free for any
    // size, which keeps the memory image and a load's fresh pages small.
    #[cfg(target_arch = "wasm32")]
    crate::allocator::cache_small_blocks();
    loaded
}

fn load_plugin(lua: &Lua, request: LoadRequest) -> Result<Vec<ToolSpec>, LoadError> {
    let script = request.script.ok_or_else(|| {
        LoadError::Failed("no Lua script was given to the Lua runtime".to_string())
    })?;
    let memory_limit = usize::try_from(request.memory_limit).unwrap_or(usize::MAX);
    watchdog::arm(request.deadline);
    SETTINGS.set(Settings {
        debug_log: request.debug_log,
        memory_limit,
    });
    api::configure(lua, &request.name)
        .and_then(|()| lua.set_memory_limit(memory_limit).map(drop))
        .map_err(|error| {
            LoadError::Failed(format!(
                "could not set up the Lua state: {}",
                errors::message(&error)
            ))
        })?;
    let chunk_name = format!("@{}.lua", request.name);
    let result = lua
        .load(script)
        .set_name(chunk_name)
        .set_mode(ChunkMode::Text)
        .exec();
    if watchdog::tripped() {
        return Err(LoadError::TimedOut);
    }
    if let Err(error) = result {
        return Err(LoadError::Failed(scheduler::failure_text(&error)));
    }
    api::with_registry(|registry| {
        registry.loading = false;
        registry.specs.clone()
    })
    .map_err(|error| LoadError::Failed(errors::message(&error)))
}

/// Runs `f` with the loaded plugin, or reports that nothing is loaded.
fn with_loaded(f: impl FnOnce(&State) -> CallState) -> CallState {
    STATE.with_borrow(|state| match state {
        Some(state) if state.loaded => f(state),
        _ => CallState::Failed("the plugin is not loaded".to_string()),
    })
}

/// Starts invocation `call` of `tool` and runs it until it ends or waits.
pub fn start(call: CallId, tool: &str, args_json: String, deadline: u64) -> CallState {
    with_loaded(|loaded| {
        let lua = &loaded.lua;
        watchdog::arm(deadline);
        let state = match begin_call(lua, call, tool, &args_json, deadline) {
            Ok(()) => scheduler::run(lua, call),
            Err(message) => CallState::Failed(message),
        };
        scheduler::stopped_or(call, state)
    })
}

/// Decodes the arguments and creates the call's main coroutine and `ctx`.
fn begin_call(
    lua: &Lua,
    id: CallId,
    tool: &str,
    args_json: &str,
    deadline: u64,
) -> Result<(), String> {
    let invoke =
        api::invoke(tool).ok_or_else(|| format!("the plugin has no tool named '{tool}'"))?;
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
    let failure = |error: mlua::Error| scheduler::failure_text(&error);
    let ctx = ctx::create(lua, id, args_json).map_err(failure)?;
    let main = scheduler::main_coroutine(lua, invoke).map_err(failure)?;
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
/// waits again, under `deadline` (the host moves it later by the time the call waited
/// for answers).
pub fn resume(call: CallId, op: OpId, outcome: OpOutcome, deadline: u64) -> CallState {
    with_loaded(|loaded| {
        let lua = &loaded.lua;
        let known = scheduler::with(|scheduler| {
            Ok(scheduler.calls.get_mut(&call).map(|call| {
                call.deadline = deadline;
            }))
        });
        let Ok(Some(())) = known else {
            return CallState::Failed("the invocation is unknown to the plugin".to_string());
        };
        watchdog::arm(deadline);
        let state = match scheduler::deliver(lua, call, op, outcome) {
            Ok(()) => scheduler::run(lua, call),
            Err(error) => CallState::Failed(scheduler::failure_text(&error)),
        };
        scheduler::stopped_or(call, state)
    })
}

/// Ends invocation `call` and its tasks without running any more of its code. What Lua
/// code the ending still runs (finalizers of what the call drops) stays under the
/// call's deadline.
pub fn cancel(call: CallId, _reason: &str) {
    if let Ok(Some(deadline)) =
        scheduler::with(|scheduler| Ok(scheduler.calls.get(&call).map(|call| call.deadline)))
    {
        watchdog::arm(deadline);
    }
    scheduler::cancel(call);
}
