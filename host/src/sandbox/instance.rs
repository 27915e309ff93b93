//! A live plugin instance: creating it, loading the plugin, and running one step at a
//! time under the backstops (fuel per call, a hard deadline per step checked at fuel yields,
//! the memory cap). A trap ends the instance; the caller discards it.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use wasmtime::component::{ComponentExportIndex, InstancePre, TypedFunc};
use wasmtime::{Store, Trap};

use super::PluginContext;
use super::operations::Operations;
use super::state::StoreState;
use crate::base::limits::format_bytes;
use crate::output::content::ContentPart;
use crate::output::outcome::CrashCause;
use crate::output::progress::ProgressSender;
use crate::sandbox::wit::{
    self, CallState, LoadError, LoadRequest, OpOutcome, ToolSpec, v0_1, v0_2,
};
use crate::services::ask::Questions;
use crate::services::clock;

/// How much fuel running plugin code burns between two yields to the async executor,
/// where its hard deadline is checked: a few milliseconds of Lua. Each yield wakes an
/// idle tokio worker, so yields are kept that rare (docs/performance.md).
const FUEL_YIELD_INTERVAL: u64 = 50_000_000;

/// A component linked against the host, ready to instantiate many times.
#[derive(Clone)]
pub struct PluginPre {
    pre: InstancePre<StoreState>,
    world: WorldExports,
    /// The Lua runtime's `lua-memory` export (`world lua-runtime`); other plugins,
    /// and Lua runtimes built before it existed, have none.
    lua_memory: Option<ComponentExportIndex>,
}

/// Where the guest's exports are in the component, by the world it was built for:
/// looked up by name once, so an instance finds them by index.
#[derive(Clone)]
enum WorldExports {
    /// A plugin of the current world.
    Current(wit::PluginIndices),
    /// A plugin built for `toolcell:plugin@0.2.0`.
    V0_2(v0_2::PluginIndices),
    /// A plugin built for `toolcell:plugin@0.1.x`.
    V0_1(v0_1::PluginIndices),
}

/// The signature of `lua-memory`.
type LuaMemoryFunc = TypedFunc<(), (u64,)>;

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

/// A plugin instance's exports, in the world it was built for.
enum Guest {
    Current(wit::Plugin),
    V0_2(v0_2::Plugin),
    V0_1(v0_1::Plugin),
}

impl PluginPre {
    /// Pre-links `pre` (an `InstancePre` of a component targeting the plugin world of
    /// this toolcell or of an older series, by the version of the guest interface it
    /// exports).
    pub fn new(pre: InstancePre<StoreState>) -> wasmtime::Result<Self> {
        let engine = pre.engine();
        let exports_series = |series: &str| {
            let prefix = format!("toolcell:plugin/guest@{series}.");
            pre.component()
                .component_type()
                .exports(engine)
                .any(|(name, _)| name.starts_with(&prefix))
        };
        let lua_memory = pre.component().get_export_index(None, LUA_MEMORY);
        let world = if exports_series("0.1") {
            WorldExports::V0_1(v0_1::PluginIndices::new(&pre)?)
        } else if exports_series("0.2") {
            WorldExports::V0_2(v0_2::PluginIndices::new(&pre)?)
        } else {
            WorldExports::Current(wit::PluginIndices::new(&pre)?)
        };
        Ok(PluginPre {
            pre,
            world,
            lua_memory,
        })
    }

    fn engine(&self) -> &wasmtime::Engine {
        self.pre.engine()
    }

    /// An instance's exports: the guest's, and `lua-memory` when it has it.
    async fn instantiate(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<(Guest, Option<LuaMemoryFunc>)> {
        let instance = self.pre.instantiate_async(&mut *store).await?;
        let guest = match &self.world {
            WorldExports::Current(indices) => Guest::Current(indices.load(&mut *store, &instance)?),
            WorldExports::V0_2(indices) => Guest::V0_2(indices.load(&mut *store, &instance)?),
            WorldExports::V0_1(indices) => Guest::V0_1(indices.load(&mut *store, &instance)?),
        };
        let lua_memory = self
            .lua_memory
            .and_then(|index| instance.get_typed_func(&mut *store, index).ok());
        Ok((guest, lua_memory))
    }
}

/// The guest's four exports, with an older guest's values converted at the edge (see
/// `wit::v0_2`, `wit::v0_1`). The second value of `start` and `resume` is a 0.1 guest's own
/// words for running out of memory.
impl Guest {
    async fn load(
        &self,
        store: &mut Store<StoreState>,
        request: &LoadRequest,
    ) -> wasmtime::Result<Result<Vec<ToolSpec>, LoadError>> {
        match self {
            Guest::Current(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                guest.call_load(store, request).await
            }
            Guest::V0_2(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                let request = v0_2::load_request(request);
                Ok(v0_2::load_result(guest.call_load(store, &request).await?))
            }
            Guest::V0_1(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                let request = v0_1::load_request(request);
                Ok(v0_1::load_result(guest.call_load(store, &request).await?))
            }
        }
    }

    async fn start(
        &self,
        store: &mut Store<StoreState>,
        call: u64,
        tool: &str,
        args: &str,
        deadline: u64,
    ) -> wasmtime::Result<(CallState, Option<String>)> {
        match self {
            Guest::Current(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                let state = guest.call_start(store, call, tool, args, deadline).await?;
                Ok((state, None))
            }
            Guest::V0_2(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                let state = guest.call_start(store, call, tool, args, deadline).await?;
                Ok((v0_2::call_state(state), None))
            }
            Guest::V0_1(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                let state = guest.call_start(store, call, tool, args, deadline).await?;
                Ok(v0_1::call_state(state))
            }
        }
    }

    async fn resume(
        &self,
        store: &mut Store<StoreState>,
        call: u64,
        op: u64,
        outcome: OpOutcome,
        deadline: u64,
    ) -> wasmtime::Result<(CallState, Option<String>)> {
        match self {
            Guest::Current(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                let state = guest
                    .call_resume(store, call, op, &outcome, deadline)
                    .await?;
                Ok((state, None))
            }
            Guest::V0_2(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                let outcome = v0_2::op_outcome(outcome);
                let state = guest.call_resume(store, call, op, &outcome).await?;
                Ok((v0_2::call_state(state), None))
            }
            Guest::V0_1(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                let outcome = v0_1::op_outcome(outcome);
                let state = guest.call_resume(store, call, op, &outcome).await?;
                Ok(v0_1::call_state(state))
            }
        }
    }

    async fn cancel(
        &self,
        store: &mut Store<StoreState>,
        call: u64,
        reason: &str,
    ) -> wasmtime::Result<()> {
        match self {
            Guest::Current(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                guest.call_cancel(store, call, reason).await
            }
            Guest::V0_2(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                guest.call_cancel(store, call, reason).await
            }
            Guest::V0_1(plugin) => {
                let guest = plugin.toolcell_plugin_guest();
                guest.call_cancel(store, call, reason).await
            }
        }
    }
}

/// Why a plugin could not load.
#[derive(Debug, Clone)]
pub enum LoadFailure {
    /// Its load-time code ran past the load deadline.
    TimedOut(Duration),
    /// Its load-time code failed (a Lua error, a bad registration, ...).
    Failed(String),
    /// The instance trapped or could not be created.
    Crashed(Crash),
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
            LoadFailure::Crashed(crash) => write!(f, "the sandbox trapped: {}", crash.reason),
        }
    }
}

/// A trap that ended an instance: what stopped it, and the reason as users should
/// read it.
#[derive(Debug, Clone)]
pub struct Crash {
    /// What stopped the instance.
    pub cause: CrashCause,
    /// What happened, in words ("it ran out of fuel (its budget is ...)").
    pub reason: String,
}

impl Crash {
    fn new(cause: CrashCause, reason: impl Into<String>) -> Self {
        Crash {
            cause,
            reason: reason.into(),
        }
    }
}

/// Where a call stands after a step, as the host reads the guest's `call-state`.
#[derive(Debug)]
pub enum Step {
    /// It waits on an operation.
    Pending,
    /// It completed with this output.
    Completed(String),
    /// It completed with these parts.
    CompletedContent(Vec<ContentPart>),
    /// The tool failed with this message.
    Failed(String),
    /// The plugin broke a rule of the tool contract; the message says which.
    BrokeRule(String),
    /// It ran out of memory; the message says which limit it reached.
    OutOfMemory(String),
    /// It ran past its deadline and stopped itself.
    TimedOut,
}

/// A step overran its hard deadline (seen at a fuel yield).
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
    guest: Guest,
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
        let limits = &context.grants.limits;
        let mut store = Store::new(pre.engine(), StoreState::new(context.clone()));
        store.limiter(|state| &mut state.cap);
        // Fuel can be read only where the engine meters it.
        if store.get_fuel().is_ok() {
            store
                .fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))
                .map_err(|error| {
                    LoadFailure::Crashed(Crash::new(CrashCause::Trap, format!("{error:#}")))
                })?;
        }
        let hard_deadline = Instant::now() + limits.load_timeout + limits.deadline_grace;
        refuel(&mut store, limits.fuel);
        let (guest, lua_memory) = until(hard_deadline, pre.instantiate(&mut store))
            .await
            .map_err(|error| LoadFailure::Crashed(crash_reason(&store, &error, 0)))?;
        let request = LoadRequest {
            name: context.name.clone(),
            script: context.script.clone(),
            deadline: clock::after(limits.load_timeout),
            memory_limit: limits.memory,
            debug_log: context.log.is_on(),
        };
        let result = until(hard_deadline, guest.load(&mut store, &request)).await;
        context.log.end(None);
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
            Err(error) => Err(LoadFailure::Crashed(crash_reason(&store, &error, 0))),
            Ok(Err(LoadError::TimedOut)) => Err(LoadFailure::TimedOut(limits.load_timeout)),
            Ok(Err(LoadError::Failed(message))) => Err(LoadFailure::Failed(message)),
            Ok(Ok(specs)) => Ok((
                Instance {
                    store,
                    guest,
                    lua_memory,
                    refusals_before_step: 0,
                },
                specs,
            )),
        }
    }

    /// The instance's operations.
    pub fn operations(&mut self) -> &mut Operations {
        &mut self.store.data_mut().operations
    }

    /// The instance's operations, to read.
    pub fn operations_ref(&self) -> &Operations {
        &self.store.data().operations
    }

    /// Starts call `call` of `tool`, whose progress goes to `progress` and whose
    /// questions go where `questions` says; `fuel` is the call's remaining budget.
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        &mut self,
        call: u64,
        tool: &str,
        args: &str,
        progress: ProgressSender,
        questions: Option<Questions>,
        deadline: Instant,
        fuel: &mut u64,
    ) -> Result<Step, Crash> {
        self.operations().begin_call(call);
        let state = self.store.data_mut();
        state.progress.insert(call, progress);
        if let Some(questions) = questions {
            state.questions.insert(call, questions);
        }
        let hard_deadline = self.arm_backstops(call, *fuel, deadline);
        let deadline_ns = clock::instant_to_nanos(deadline);
        let step = self
            .guest
            .start(&mut self.store, call, tool, args, deadline_ns);
        let result = until(hard_deadline, step).await;
        self.finish(result, fuel).map(|state| self.step(state))
    }

    /// Delivers the outcome of `op` to call `call`.
    pub async fn resume(
        &mut self,
        call: u64,
        op: u64,
        outcome: OpOutcome,
        deadline: Instant,
        fuel: &mut u64,
    ) -> Result<Step, Crash> {
        let hard_deadline = self.arm_backstops(call, *fuel, deadline);
        let deadline_ns = clock::instant_to_nanos(deadline);
        let step = self
            .guest
            .resume(&mut self.store, call, op, outcome, deadline_ns);
        let result = until(hard_deadline, step).await;
        self.finish(result, fuel).map(|state| self.step(state))
    }

    /// Ends call `call` inside the plugin, and aborts its operations.
    pub async fn cancel(&mut self, call: u64, reason: &str) -> Result<(), Crash> {
        // Cancelling runs no plugin code beyond the runtime's own bookkeeping; it gets a
        // fresh budget and the grace period as its deadline.
        let mut fuel = self.store.data().plugin.grants.limits.fuel;
        let hard_deadline = self.arm_backstops(call, fuel, Instant::now());
        let step = self.guest.cancel(&mut self.store, call, reason);
        let result = until(hard_deadline, step).await;
        self.end_call(call);
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
        let limits = &self.store.data().plugin.grants.limits;
        let mut fuel = limits.fuel;
        let hard_deadline = Instant::now() + limits.deadline_grace;
        refuel(&mut self.store, fuel);
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
        self.operations().end_call(call);
        let state = self.store.data_mut();
        state.progress.remove(&call);
        state.questions.remove(&call);
    }

    /// What the guest said was running when it stopped the last step (for Lua: a
    /// finalizer), to add to a timeout's message.
    pub fn take_timeout_note(&mut self) -> Option<String> {
        self.store.data_mut().timeout_note.take()
    }

    /// Arms the backstops for a step of `call` that should end by `deadline`; returns
    /// the hard deadline (the deadline plus the grace period).
    fn arm_backstops(&mut self, call: u64, fuel: u64, deadline: Instant) -> Instant {
        let hard_deadline = deadline + self.store.data().plugin.grants.limits.deadline_grace;
        refuel(&mut self.store, fuel);
        let state = self.store.data_mut();
        state.running = Some(call);
        state.timeout_note = None;
        self.refusals_before_step = self.store.data().cap.refusals();
        hard_deadline
    }

    /// Reads the state a step left the call in (with a 0.1 guest's own words for
    /// running out of memory).
    fn step(&self, (state, guest_text): (CallState, Option<String>)) -> Step {
        match state {
            CallState::Pending => Step::Pending,
            CallState::Completed(output) => Step::Completed(output),
            CallState::CompletedContent(parts) => {
                Step::CompletedContent(parts.into_iter().map(ContentPart::from).collect())
            }
            CallState::Failed(message) => Step::Failed(message),
            CallState::BrokeRule(message) => Step::BrokeRule(message),
            CallState::OutOfMemory => Step::OutOfMemory(self.memory_message(guest_text)),
            CallState::TimedOut => Step::TimedOut,
        }
    }

    /// Why a call ran out of memory: the guest only sees a failed allocation, so when
    /// the host's cap refused memory during the step, it was the cap, not the plugin's
    /// own limit (`guest_text`, the guest's own words, else the host's). When the
    /// policy granted less memory than the plugin's manifest asks for, the message
    /// says so and how to grant it.
    fn memory_message(&self, guest_text: Option<String>) -> String {
        let data = self.store.data();
        let cap = &data.cap;
        let message = if cap.refusals() > self.refusals_before_step {
            format!(
                "out of memory: the sandbox reached its memory cap of {}",
                format_bytes(cap.max_memory())
            )
        } else {
            guest_text.unwrap_or_else(|| {
                format!(
                    "out of memory: the plugin reached its memory limit of {}",
                    format_bytes(data.plugin.grants.limits.memory)
                )
            })
        };
        match &data.plugin.grants.hints.memory {
            Some(hint) => format!("{message}; {hint}"),
            None => message,
        }
    }

    fn finish<R>(&mut self, result: wasmtime::Result<R>, fuel: &mut u64) -> Result<R, Crash> {
        *fuel = self.store.get_fuel().unwrap_or(0);
        result.map_err(|error| crash_reason(&self.store, &error, self.refusals_before_step))
    }
}

/// Gives the next step the fuel it may burn (its hard deadline is `until`'s).
fn refuel(store: &mut Store<StoreState>, fuel: u64) {
    // Fuel is only unavailable when metering is off (benchmarks can turn it off).
    let _ = store.set_fuel(fuel);
}

/// Runs one step of plugin code, stopping it at `hard_deadline`. Running wasm yields
/// to the executor every `FUEL_YIELD_INTERVAL` units of fuel; each time, the
/// deadline is checked. A step stopped
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
    let limits = &store.data().plugin.grants.limits;
    if store.data().cap.refusals() > refusals_before {
        let hint = match &store.data().plugin.grants.hints.memory {
            Some(hint) => format!("; {hint}"),
            None => String::new(),
        };
        return Crash::new(
            CrashCause::MemoryCap,
            format!(
                "it exceeded its memory cap of {}{hint}",
                format_bytes(limits.linear_memory)
            ),
        );
    }
    if error.downcast_ref::<HardDeadline>().is_some() {
        // A Lua plugin's deadline check runs everywhere Lua code runs and in the
        // standard library's own loops (third_party/lua-src/PATCHED.md): what it cannot
        // stop is a loop inside one C function.
        let reason = if store.data().plugin.script.is_some() {
            "it kept running past its deadline inside one C function, where no deadline \
             check runs (such as string.rep of a huge count, or a pattern that backtracks)"
        } else {
            "it kept running past its deadline without returning control"
        };
        return Crash::new(CrashCause::Deadline, reason);
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => Crash::new(
            CrashCause::OutOfFuel,
            format!(
                "it ran out of fuel (its budget is {} per call)",
                limits.fuel
            ),
        ),
        Some(Trap::StackOverflow) => {
            Crash::new(CrashCause::StackOverflow, "its wasm stack overflowed")
        }
        Some(Trap::Interrupt) => Crash::new(CrashCause::Trap, "it was interrupted"),
        Some(Trap::UnreachableCodeReached) => Crash::new(
            CrashCause::Trap,
            "it aborted (a trap in the plugin's own code)",
        ),
        Some(trap) => Crash::new(CrashCause::Trap, format!("it trapped: {trap}")),
        None => Crash::new(CrashCause::Trap, format!("{error:#}")),
    }
}
