//! The wasmtime engine every plugin shares, and how running plugin code gets back to
//! the host so its hard deadline can be checked.

use std::sync::OnceLock;

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How much fuel running plugin code burns between two yields to the async executor,
/// where its hard deadline is checked: about 5 ms of Lua on the benchmark machine
/// (fib(30) burns 1.3-1.6 x 10^9 in 150-190 ms). Fuel metering is paid for anyway,
/// where epoch interruption would add a check to every loop of the interpreter; but
/// each yield wakes an idle tokio worker (a futex wake, costly in a VM), so yields are
/// kept about as rare as the 10 ms epoch ticks they replace.
pub const FUEL_YIELD_INTERVAL: u64 = 50_000_000;

/// Engine settings a benchmark may vary; the defaults are what toolcell runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Fuel metering: the deterministic CPU cap per call, and the yields every
    /// `FUEL_YIELD_INTERVAL` units at which a step's hard deadline is checked. Off only
    /// to measure what it costs: plugins then run with neither backstop.
    pub fuel: bool,
    /// Write /tmp/perf-PID.map so `perf` can name compiled wasm functions.
    pub perf_map: bool,
    /// The pooling instance allocator (instances, memories and fiber stacks are reused
    /// from pre-reserved pools) instead of allocating each on demand.
    pub pooling: bool,
    /// Start Lua plugins from a snapshot of the prepared Lua runtime (`snapshot.rs`)
    /// instead of building the Lua state in every instance.
    pub snapshot: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fuel: true,
            perf_map: false,
            pooling: true,
            snapshot: true,
        }
    }
}

/// Plugin instances the pooling allocator holds at once (loaded plugins, plus the
/// ones being replaced after a crash).
const POOLED_INSTANCES: u32 = 4096;

/// Dirty memory a freed instance slot keeps, reset in place to the memory image, for
/// the next instance of the same guest (a reload, a restart after a crash, a runtime
/// built again): without it the slot is decommitted and that instance takes a page
/// fault for every page it touches again (half of a 100 µs warm load on the benchmark
/// machine). A loaded trivial Lua plugin dirties about 40 KiB of the image (a called one
/// some stack as well); the pool keeps at most 100 freed slots warm, so at most 13 MiB
/// stay.
const KEEP_RESIDENT_BYTES: usize = 128 << 10;

static OPTIONS: OnceLock<Options> = OnceLock::new();

/// Chooses the engine settings before the engine exists (benchmarks only). Fails if
/// the engine was already created or configured.
pub fn configure(options: Options) -> Result<(), String> {
    OPTIONS
        .set(options)
        .map_err(|_| "the engine is already configured".to_string())
}

/// The settings the shared engine has (or will have).
pub fn options() -> Options {
    *OPTIONS.get_or_init(Options::default)
}

/// Builds the engine configuration: component model, wasm exceptions (the Lua guest's
/// setjmp/longjmp), fuel metering on every store, and no
/// component-model concurrency (it costs about 3x on every export call and plugins do
/// not use it: the step protocol gives them concurrency).
///
/// The pooling allocator reserves address space for every slot up front; where the
/// machine refuses that (a low `ulimit -v`, valgrind), the engine falls back to
/// allocating each instance on demand, which is slower to instantiate but equivalent.
fn new_engine() -> wasmtime::Result<Engine> {
    let options = options();
    if options.pooling {
        match Engine::new(&engine_config(options, true)) {
            Ok(engine) => {
                let _ = POOLING_ACTIVE.set(true);
                return Ok(engine);
            }
            Err(error) => tracing::warn!(
                "the pooling instance allocator is unavailable ({error:#}); allocating instances on demand"
            ),
        }
    }
    let _ = POOLING_ACTIVE.set(false);
    Engine::new(&engine_config(options, false))
}

/// Whether the shared engine ended up with the pooling allocator.
static POOLING_ACTIVE: OnceLock<bool> = OnceLock::new();

fn engine_config(options: Options, pooling: bool) -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .wasm_exceptions(true)
        .concurrency_support(false)
        .consume_fuel(options.fuel);
    if options.perf_map {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    if pooling {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(POOLED_INSTANCES)
            .total_core_instances(POOLED_INSTANCES * 8)
            .total_memories(POOLED_INSTANCES * 2)
            .total_tables(POOLED_INSTANCES * 4)
            .total_gc_heaps(POOLED_INSTANCES)
            .total_stacks(POOLED_INSTANCES)
            .max_memory_size(1 << 32);
        // Only the PAGEMAP_SCAN ioctl (Linux 6.7) finds the pages an instance dirtied;
        // without it wasmtime would reset the lowest addresses instead, which for the
        // Lua guest are untouched stack.
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            pool.pagemap_scan(Enabled::Yes)
                .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
                .table_keep_resident(KEEP_RESIDENT_BYTES);
        }
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    config
}

/// An engine for code that runs once and is thrown away (the Lua runtime's `prepare`
/// step, see `snapshot.rs`): the same wasm features as the shared engine, fuel as the
/// only backstop, instances allocated on demand, and Cranelift without optimisations,
/// which compiles the Lua runtime in about half the time.
pub fn run_once_engine() -> wasmtime::Result<Engine> {
    let mut config = engine_config(
        Options {
            fuel: true,
            ..options()
        },
        false,
    );
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    Engine::new(&config)
}

/// The process-wide engine, created on first use.
///
/// One engine serves every runtime of the process: compiled code and the instance pool
/// are shared, and a second runtime starts without recompiling.
pub fn shared() -> Result<&'static Engine, String> {
    static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| new_engine().map_err(|error| format!("{error:#}")))
        .as_ref()
        .map_err(Clone::clone)
}

/// One line naming the engine settings that matter for speed, for benchmark reports.
pub fn describe() -> String {
    let options = options();
    let on = |flag: bool| if flag { "on" } else { "OFF" };
    let pooling = POOLING_ACTIVE.get().copied().unwrap_or(options.pooling);
    let allocator = if pooling { "pooling" } else { "on-demand" };
    let deadline = if options.fuel {
        "hard deadline checked at fuel yields"
    } else {
        "NO hard deadline"
    };
    format!(
        "fuel {}, {deadline}, {allocator} instance allocator, Lua runtime snapshot {}, Cranelift opt speed",
        on(options.fuel),
        on(options.snapshot),
    )
}
