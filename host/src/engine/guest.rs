//! The Lua runtime component, built from `lua-guest/` by the build script and embedded
//! here so the `toolcell` binary is self-contained.

use wasmtime::component::Component;

use crate::engine::cache::CodeCache;

/// The Lua guest component (a `toolcell:plugin` world component).
pub static LUA_GUEST_WASM: &[u8] = include_bytes!(env!("TOOLCELL_LUA_GUEST_WASM"));

/// SHA-256 of [`LUA_GUEST_WASM`], computed at build time (the compiled-code cache key).
pub const LUA_GUEST_SHA256: &str = env!("TOOLCELL_LUA_GUEST_SHA256");

/// The Lua guest compiled, prepared when `snapshot` asks for it and that pays. The
/// snapshot costs a second compilation and saves a fraction of a millisecond per plugin
/// load (docs/performance.md), so it is made only when the cache keeps it. It is an
/// optimisation: if preparing fails, plugins still run on the plain guest, which builds
/// its Lua state in `load`. `snapshot` makes the engine that runs `prepare` (once, and
/// only when a snapshot is made); `None` makes none.
pub fn compile(
    engine: &wasmtime::Engine,
    cache: &CodeCache,
    snapshot: Option<RunOnceEngine>,
) -> wasmtime::Result<Component> {
    if let Some(run_once) = snapshot
        && cache.is_usable()
    {
        let prepare = || {
            cache.announce("the Lua runtime", LUA_GUEST_WASM.len());
            prepare(engine, &run_once()?)
        };
        match cache.get_or_compile(engine, prepared_key, prepare) {
            Ok(component) => return Ok(component),
            Err(error) => tracing::warn!(
                "could not prepare a snapshot of the Lua runtime ({error:#}); \
                 each Lua plugin builds its Lua state when it loads"
            ),
        }
    }
    cache.component(
        engine,
        LUA_GUEST_WASM,
        Some(LUA_GUEST_SHA256),
        "the Lua runtime",
    )
}

/// The cache key of the prepared Lua guest: the snapshot is a function of the guest's
/// bytes and of wasmtime (whose version the cache adds to every key).
fn prepared_key() -> String {
    format!("{LUA_GUEST_SHA256}-prepared")
}

/// Makes the engine for code that runs once and is thrown away (`engine::run_once_engine`).
pub type RunOnceEngine = fn() -> wasmtime::Result<wasmtime::Engine>;

/// Runs the guest's `prepare` once on `run_once` and compiles the snapshot on `engine`
/// (see [`crate::engine::snapshot`]). Called on the blocking pool, where waiting on the runtime
/// is allowed.
fn prepare(engine: &wasmtime::Engine, run_once: &wasmtime::Engine) -> wasmtime::Result<Component> {
    let wasm = tokio::runtime::Handle::current()
        .block_on(crate::engine::snapshot::prepared(run_once, LUA_GUEST_WASM))?;
    Component::new(engine, &wasm)
}
