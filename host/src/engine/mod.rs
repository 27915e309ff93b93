//! The engine: what runs plugins for the runtimes built with it. It owns one wasmtime
//! engine (compiled code, the pool of instance slots), the linker of the host's
//! services, the compiled-code cache, and the Lua guest once it is compiled and linked.
//!
//! An [`Engine`] is a handle: its clones share all of that, so runtimes built with
//! clones of one engine compile the Lua guest once, link it once, and reuse each
//! other's warm instance slots. A runtime built without one gets an engine of its own.

pub mod cache;
pub(crate) mod guest;
pub(crate) mod snapshot;

use std::fmt;
use std::sync::Arc;

use tokio::sync::OnceCell;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Enabled, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::engine::cache::CodeCache;
use crate::sandbox::{self, CodeError, PluginPre, StoreState};

/// How an engine is set up. The defaults are what the `toolcell` command runs with,
/// except the cache: the library keeps compiled code only where it is told to.
#[derive(Clone, Debug)]
pub struct Options {
    /// Fuel metering: the deterministic CPU cap per call, and the yields at which a
    /// step's hard deadline is checked. Off only to measure what it costs: plugins then
    /// run with neither backstop.
    pub fuel: bool,
    /// The pooling instance allocator (instances, memories and fiber stacks reused from
    /// slots reserved up front) instead of allocating each on demand. Where the machine
    /// refuses the reservation, the engine allocates on demand anyway, with a warning.
    pub pooling: bool,
    /// Start Lua plugins from a snapshot of the prepared Lua runtime (`snapshot.rs`)
    /// instead of building the Lua state in every instance. The snapshot is made only
    /// when `cache` can keep it: making it costs a second compilation.
    pub snapshot: bool,
    /// Write /tmp/perf-PID.map so `perf` can name compiled wasm functions.
    pub perf_map: bool,
    /// Where compiled code is kept between runs (default: nowhere).
    pub cache: CodeCache,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fuel: true,
            pooling: true,
            snapshot: true,
            perf_map: false,
            cache: CodeCache::new(None),
        }
    }
}

/// Why an engine could not be made.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// wasmtime refused the configuration.
    #[error("cannot create the wasmtime engine: {0}")]
    Wasmtime(String),
    /// The host's services could not be added to the linker.
    #[error("cannot link the host's services: {0}")]
    Linker(String),
}

/// Plugin instances the pooling allocator holds at once (loaded plugins, plus the
/// ones being replaced after a crash), across every runtime of one engine.
const POOLED_INSTANCES: u32 = 4096;

/// Dirty memory a freed instance slot keeps, reset in place to the memory image, for
/// the next instance of the same guest (a reload, a restart after a crash, another
/// runtime on the same engine): without it the slot is decommitted and that instance
/// takes a page fault for every page it touches again. A loaded trivial Lua plugin
/// dirties well under this (docs/performance.md); the pool keeps at most 100 freed
/// slots warm, so at most 12.5 MiB stay.
const KEEP_RESIDENT_BYTES: usize = 128 << 10;

/// The engine plugins run on; cheap to clone, and clones share everything (see the
/// module documentation).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    wasmtime: wasmtime::Engine,
    linker: Linker<StoreState>,
    options: Options,
    /// Whether the pooling allocator is in use (it was asked for and the machine
    /// granted its reservation).
    pooling: bool,
    /// The Lua guest, compiled and linked by the first load that needs it.
    lua_guest: OnceCell<Result<PluginPre, CodeError>>,
}

impl Engine {
    /// A new engine. With the pooling allocator, this reserves address space for every
    /// slot (a few tens of TiB, of which only what instances touch is ever backed), so
    /// a process should make one engine and share it rather than make many.
    pub fn new(options: Options) -> Result<Engine, EngineError> {
        let (wasmtime, pooling) = new_wasmtime_engine(&options)
            .map_err(|error| EngineError::Wasmtime(format!("{error:#}")))?;
        let linker = sandbox::linker(&wasmtime)
            .map_err(|error| EngineError::Linker(format!("{error:#}")))?;
        Ok(Engine {
            inner: Arc::new(Inner {
                wasmtime,
                linker,
                options,
                pooling,
                lua_guest: OnceCell::new(),
            }),
        })
    }

    /// The options the engine was made with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// Where the engine keeps compiled code.
    pub fn cache(&self) -> &CodeCache {
        &self.inner.options.cache
    }

    /// The wasmtime engine underneath, for compiling components ahead of time with
    /// [`CodeCache::component`].
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner.wasmtime
    }

    /// One line naming the settings that matter for speed, for benchmark reports.
    pub fn describe(&self) -> String {
        let options = &self.inner.options;
        let on = |flag: bool| if flag { "on" } else { "OFF" };
        let allocator = if self.inner.pooling {
            "pooling"
        } else {
            "on-demand"
        };
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

    /// Links `component` against the host, checking that it fits the plugin world.
    pub(crate) fn link(&self, component: &Component) -> Result<PluginPre, CodeError> {
        sandbox::link(&self.inner.linker, component)
    }

    /// The Lua guest, linked. The first caller prepares and compiles it (or reads it
    /// from `cache`: the engine's cache, or none for a runtime that may not use it) on
    /// the blocking pool; every later caller, from any runtime of this engine, gets a
    /// clone of the same linked guest without leaving its task.
    pub(crate) async fn lua_guest(&self, cache: &CodeCache) -> Result<PluginPre, CodeError> {
        self.inner
            .lua_guest
            .get_or_init(|| {
                let (engine, cache) = (self.clone(), cache.clone());
                async move {
                    tokio::task::spawn_blocking(move || {
                        let snapshot = engine.options().snapshot.then_some(run_once_engine as _);
                        let component = guest::compile(engine.wasmtime(), &cache, snapshot)
                            .map_err(|error| CodeError::LuaGuest(format!("{error:#}")))?;
                        engine.link(&component)
                    })
                    .await
                    .map_err(|error| CodeError::Interrupted {
                        what: "compiling the Lua runtime",
                        reason: error.to_string(),
                    })?
                }
            })
            .await
            .clone()
    }
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("options", &self.inner.options)
            .field("pooling", &self.inner.pooling)
            .finish_non_exhaustive()
    }
}

/// The wasmtime engine for `options`, and whether it got the pooling allocator.
///
/// The pooling allocator reserves address space for every slot up front; where the
/// machine refuses that (a low `ulimit -v`, valgrind, many engines in one process), the
/// engine falls back to allocating each instance on demand, which is slower to
/// instantiate but equivalent.
fn new_wasmtime_engine(options: &Options) -> wasmtime::Result<(wasmtime::Engine, bool)> {
    if options.pooling {
        match wasmtime::Engine::new(&config(options, true)) {
            Ok(engine) => return Ok((engine, true)),
            Err(error) => tracing::warn!(
                "the pooling instance allocator is unavailable ({error:#}); allocating instances on demand"
            ),
        }
    }
    Ok((wasmtime::Engine::new(&config(options, false))?, false))
}

/// The wasmtime configuration: component model, wasm exceptions (the Lua guest's
/// setjmp/longjmp), fuel metering on every store, and no component-model concurrency
/// (it costs about 3x on every export call and plugins do not use it: the step
/// protocol gives them concurrency).
fn config(options: &Options, pooling: bool) -> Config {
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

/// A wasmtime engine for code that runs once and is thrown away (the Lua runtime's
/// `prepare` step, see `snapshot.rs`): the same wasm features as a plugin engine, fuel
/// as the only backstop, instances allocated on demand, and Cranelift without
/// optimisations, which compiles the Lua runtime in about half the time.
fn run_once_engine() -> wasmtime::Result<wasmtime::Engine> {
    let options = Options {
        pooling: false,
        ..Options::default()
    };
    let mut config = config(&options, false);
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    wasmtime::Engine::new(&config)
}
