//! A live plugin instance: creating it, loading the plugin, and running one step at a
//! time under the backstops (fuel per call, a hard deadline per step checked at fuel yields,
//! the memory cap). A trap ends the instance; the caller discards it.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use wasmtime::component::{ComponentExportIndex, InstancePre, TypedFunc};
use wasmtime::{Engine, Store, Trap, UpdateDeadline};

use super::PluginContext;
use super::ops::Operations;
use super::state::StoreState;
use crate::bindings::{
    CallState, LoadError, LoadRequest, OpOutcome, Plugin, PluginIndices, ToolSpec,
};
use crate::clock;
use crate::limits::format_bytes;

/// A component linked against the host, ready to instantiate many times.
#[derive(Clone)]
pub struct PluginPre {
    pre: InstancePre<StoreState>,
    indices: PluginIndices,
    /// The Lua runtime's `lua-memory` export (`world lua-runtime`); other plugins,
    /// and Lua runtimes built before it existed, have none.
    lua_memory: Option<ComponentExportIndex>,
}

/// The signature of `lua-memory`.
type LuaMemoryFunc = TypedFunc<(), (u64,)>;

impl PluginPre {
    /// Pre-links `pre` (an `InstancePre` of a component targeting the plugin world).
    pub fn new(pre: InstancePre<StoreState>) -> wasmtime::Result<Self> {
        let indices = PluginIndices::new(&pre)?;
        let lua_memory = pre.component().get_export_index(None, LUA_MEMORY);
        Ok(PluginPre {
            pre,
            indices,
            lua_memory,
        })
    }

    fn engine(&self) -> &Engine {
        self.pre.engine()
    }
}

/// The name of the Lua runtime's export that reports its Lua memory.
const LUA_MEMORY: &str = "lua-memory";

/// How much memory a plugin instance holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// The bytes its Lua state holds (what the plugin's memory limit counts), for a
    /// Lua plugin whose runtime reports it.
    pub lua: Option<u64>,
    /// The size of its linear memories, in bytes: everything the instance ever grew
    /// to (wasm memory never shrinks).
    pub linear: u64,
}

/// Why a plugin could not load.
#[derive(Debug, Clone)]
pub enum LoadFailure {
    /// Its load-time code ran past the load deadline.
    TimedOut(Duration),
    /// Its load-time code failed (a Lua error, a bad registration, ...).
    Failed(String),
    /// The instance trapped or could not be created.
    Crashed(String),
}

impl std::fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadFailure::TimedOut(limit) => {
                write!(
                    f,
                    "its load-time code ran past the {} ms deadline",
                    limit.as_millis()
                )
            }
            LoadFailure::Failed(message) => f.write_str(message),
            LoadFailure::Crashed(reason) => write!(f, "the sandbox trapped: {reason}"),
        }
    }
}

/// A trap that ended an instance, with the reason as users should read it.
#[derive(Debug, Clone)]
pub struct Crash(pub String);

/// A step overran its hard deadline (seen at a fuel yield or an epoch tick).
#[derive(Debug)]
struct HardDeadline;

impl std::fmt::Display for HardDeadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hard deadline passed")
    }
}

impl std::error::Error for HardDeadline {}

/// A loaded plugin instance.
pub struct Instance {
    store: Store<StoreState>,
    plugin: Plugin,
    lua_memory: Option<LuaMemoryFunc>,
    /// The memory cap's refusals before the current step.
    refusals_before_step: u64,
}

impl Instance {
    /// Instantiates the plugin and runs its load-time code, when it is this creation's
    /// turn (`turns.rs`). Returns the instance and the tools the plugin registered.
    pub async fn create(
        context: &Arc<PluginContext>,
        pre: &PluginPre,
    ) -> Result<(Instance, Vec<ToolSpec>), LoadFailure> {
        // Boxed, so the futures that await a creation (the actor's among them) stay small.
        super::turns::in_turn(Box::pin(Self::instantiate_and_load(context, pre))).await
    }

    async fn instantiate_and_load(
        context: &Arc<PluginContext>,
        pre: &PluginPre,
    ) -> Result<(Instance, Vec<ToolSpec>), LoadFailure> {
        let limits = &context.limits;
        let mut store = Store::new(pre.engine(), StoreState::new(context.clone()));
        store.limiter(|state| &mut state.cap);
        let engine = crate::engine::options();
        if engine.fuel {
            store
                .fuel_async_yield_interval(Some(crate::engine::FUEL_YIELD_INTERVAL))
                .map_err(|error| LoadFailure::Crashed(format!("{error:#}")))?;
        }
        if engine.epoch {
            store.epoch_deadline_callback(|store| {
                if Instant::now() >= store.data().hard_deadline {
                    Err(wasmtime::Error::new(HardDeadline))
                } else {
                    Ok(UpdateDeadline::Yield(1))
                }
            });
        }
        let hard_deadline = Instant::now() + limits.load_timeout + limits.deadline_grace;
        arm(&mut store, limits.fuel, hard_deadline);
        let instance = until(hard_deadline, pre.pre.instantiate_async(&mut store))
            .await
            .map_err(|error| LoadFailure::Crashed(crash_reason(&store, &error, 0).0))?;
        let plugin = pre
            .indices
            .load(&mut store, &instance)
            .map_err(|error| LoadFailure::Crashed(format!("{error:#}")))?;
        let lua_memory = pre
            .lua_memory
            .and_then(|index| instance.get_typed_func(&mut store, index).ok());
        let request = LoadRequest {
            name: context.name.clone(),
            script: context.script.clone(),
            deadline: clock::after(limits.load_timeout),
            memory_limit: limits.memory,
            debug_log: context.logs(),
        };
        let guest = plugin.toolcell_plugin_guest();
        let result = until(hard_deadline, guest.call_load(&mut store, &request)).await;
        match result {
            // Load-time code that never returned control (C-level work, a bare wasm
            // loop) ran past the load deadline like any other: say so, unless the
            // memory cap is what stopped it.
            Err(error)
                if error.downcast_ref::<HardDeadline>().is_some()
                    && store.data().cap.refusals() == 0 =>
            {
                Err(LoadFailure::TimedOut(limits.load_timeout))
            }
            Err(error) => Err(LoadFailure::Crashed(crash_reason(&store, &error, 0).0)),
            Ok(Err(LoadError::TimedOut)) => Err(LoadFailure::TimedOut(limits.load_timeout)),
            Ok(Err(LoadError::Failed(message))) => Err(LoadFailure::Failed(message)),
            Ok(Ok(specs)) => Ok((
                Instance {
                    store,
                    plugin,
                    lua_memory,
                    refusals_before_step: 0,
                },
                specs,
            )),
        }
    }

    /// The instance's operations.
    pub fn ops(&mut self) -> &mut Operations {
        &mut self.store.data_mut().ops
    }

    /// Starts call `call` of `tool`; `fuel` is the call's remaining budget.
    pub async fn start(
        &mut self,
        call: u64,
        tool: &str,
        args: &str,
        deadline: Instant,
        fuel: &mut u64,
    ) -> Result<CallState, Crash> {
        self.ops().begin_call(call);
        let hard_deadline = self.prepare(call, *fuel, deadline);
        let guest = self.plugin.toolcell_plugin_guest();
        let deadline_ns = clock::instant_to_nanos(deadline);
        let step = guest.call_start(&mut self.store, call, tool, args, deadline_ns);
        let result = until(hard_deadline, step).await;
        self.finish(result, fuel)
            .map(|state| self.memory_hint(state))
    }

    /// Delivers the outcome of `op` to call `call`.
    pub async fn resume(
        &mut self,
        call: u64,
        op: u64,
        outcome: &OpOutcome,
        deadline: Instant,
        fuel: &mut u64,
    ) -> Result<CallState, Crash> {
        let hard_deadline = self.prepare(call, *fuel, deadline);
        let guest = self.plugin.toolcell_plugin_guest();
        let step = guest.call_resume(&mut self.store, call, op, outcome);
        let result = until(hard_deadline, step).await;
        self.finish(result, fuel)
            .map(|state| self.memory_hint(self.explain_memory(state)))
    }

    /// Ends call `call` inside the plugin, and aborts its operations.
    pub async fn cancel(&mut self, call: u64, reason: &str) -> Result<(), Crash> {
        // Cancelling runs no plugin code beyond the runtime's own bookkeeping; it gets a
        // fresh budget and the grace period as its deadline.
        let mut fuel = self.store.data().plugin.limits.fuel;
        let hard_deadline = self.prepare(call, fuel, Instant::now());
        let guest = self.plugin.toolcell_plugin_guest();
        let step = guest.call_cancel(&mut self.store, call, reason);
        let result = until(hard_deadline, step).await;
        self.ops().end_call(call);
        self.finish(result, &mut fuel)
    }

    /// How much memory the instance holds now. Asking the Lua runtime runs a step of
    /// its own, which runs no plugin code (a few hundred instructions, under the
    /// plugin's fuel and the grace period as its deadline); a trap there is a crash
    /// like any other.
    pub async fn memory(&mut self) -> Result<MemoryUse, Crash> {
        let linear = self.store.data().cap.linear_memory();
        let Some(lua_memory) = self.lua_memory else {
            return Ok(MemoryUse { lua: None, linear });
        };
        let mut fuel = self.store.data().plugin.limits.fuel;
        let hard_deadline = Instant::now() + self.store.data().plugin.limits.deadline_grace;
        arm(&mut self.store, fuel, hard_deadline);
        self.refusals_before_step = self.store.data().cap.refusals();
        let result = until(hard_deadline, lua_memory.call_async(&mut self.store, ())).await;
        let (lua,) = self.finish(result, &mut fuel)?;
        Ok(MemoryUse {
            lua: Some(lua),
            linear,
        })
    }

    /// Ends a call the plugin reported as ended: aborts what it left pending.
    pub fn end_call(&mut self, call: u64) {
        self.ops().end_call(call);
    }

    /// Arms the backstops for a step of `call` that should end by `deadline`; returns
    /// the hard deadline (the deadline plus the grace period).
    fn prepare(&mut self, call: u64, fuel: u64, deadline: Instant) -> Instant {
        self.store.data_mut().running = Some(call);
        let hard_deadline = deadline + self.store.data().plugin.limits.deadline_grace;
        arm(&mut self.store, fuel, hard_deadline);
        self.refusals_before_step = self.store.data().cap.refusals();
        hard_deadline
    }

    /// The guest only sees a failed allocation; when the host's cap refused memory
    /// during the step, say that it was the cap, not the plugin's own limit.
    fn explain_memory(&self, state: CallState) -> CallState {
        let cap = &self.store.data().cap;
        match state {
            CallState::Failed(message)
                if message.starts_with("out of memory")
                    && cap.refusals() > self.refusals_before_step =>
            {
                CallState::Failed(format!(
                    "out of memory: the sandbox reached its memory cap of {}",
                    format_bytes(cap.max_memory())
                ))
            }
            other => other,
        }
    }

    /// When the policy granted less memory than the plugin's manifest asks for, an
    /// out-of-memory failure says so and how to grant it.
    fn memory_hint(&self, state: CallState) -> CallState {
        match (state, &self.store.data().plugin.hints.memory) {
            (CallState::Failed(message), Some(hint)) if message.starts_with("out of memory") => {
                CallState::Failed(format!("{message}; {hint}"))
            }
            (state, _) => state,
        }
    }

    fn finish<R>(&mut self, result: wasmtime::Result<R>, fuel: &mut u64) -> Result<R, Crash> {
        *fuel = self.store.get_fuel().unwrap_or(0);
        result.map_err(|error| crash_reason(&self.store, &error, self.refusals_before_step))
    }
}

/// Arms the backstops for the next step: the fuel it may burn and the instant after
/// which it is stopped.
fn arm(store: &mut Store<StoreState>, fuel: u64, hard_deadline: Instant) {
    // Fuel is only unavailable when metering is off (benchmarks can turn it off).
    let _ = store.set_fuel(fuel);
    store.data_mut().hard_deadline = hard_deadline;
    store.set_epoch_deadline(1);
}

/// Runs one step of plugin code, stopping it at `hard_deadline`. Running wasm yields
/// to the executor every `engine::FUEL_YIELD_INTERVAL` units of fuel (or at epoch
/// ticks, when those stand in); each time, the deadline is checked. A step stopped
/// this way is dropped mid-flight, which unwinds its fiber: the instance is then
/// replaced, as after any trap.
async fn until<R>(
    hard_deadline: Instant,
    step: impl Future<Output = wasmtime::Result<R>>,
) -> wasmtime::Result<R> {
    let mut step = std::pin::pin!(step);
    std::future::poll_fn(|cx| match step.as_mut().poll(cx) {
        Poll::Pending if Instant::now() >= hard_deadline => {
            Poll::Ready(Err(wasmtime::Error::new(HardDeadline)))
        }
        other => other,
    })
    .await
}

/// Words a trap for users: which limit it hit, or what went wrong. `refusals_before`
/// is the memory cap's count of refusals when the step began.
fn crash_reason(store: &Store<StoreState>, error: &wasmtime::Error, refusals_before: u64) -> Crash {
    let limits = &store.data().plugin.limits;
    if store.data().cap.refusals() > refusals_before {
        let hint = match &store.data().plugin.hints.memory {
            Some(hint) => format!("; {hint}"),
            None => String::new(),
        };
        return Crash(format!(
            "it exceeded its memory cap of {}{hint}",
            format_bytes(limits.linear_memory)
        ));
    }
    if error.downcast_ref::<HardDeadline>().is_some() {
        return Crash("it kept running past its deadline without returning control".to_string());
    }
    let reason = match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => format!(
            "it ran out of fuel (its budget is {} per call)",
            limits.fuel
        ),
        Some(Trap::StackOverflow) => "its wasm stack overflowed".to_string(),
        Some(Trap::Interrupt) => "it was interrupted".to_string(),
        Some(Trap::UnreachableCodeReached) => {
            "it aborted (a trap in the plugin's own code)".to_string()
        }
        Some(trap) => format!("it trapped: {trap}"),
        None => format!("{error:#}"),
    };
    Crash(reason)
}
