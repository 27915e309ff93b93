//! The Lua runtime component, built from `lua-guest/` by the build script and embedded
//! here so the `toolcell` binary is self-contained.

use tokio::sync::OnceCell;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::cache::CodeCache;
use crate::sandbox::{self, CodeError, PluginPre, StoreState};

/// The Lua guest component (a `toolcell:plugin` world component).
pub static LUA_GUEST_WASM: &[u8] = include_bytes!(env!("TOOLCELL_LUA_GUEST_WASM"));

/// SHA-256 of [`LUA_GUEST_WASM`], computed at build time (the compiled-code cache key).
pub const LUA_GUEST_SHA256: &str = env!("TOOLCELL_LUA_GUEST_SHA256");

/// The Lua guest, prepared and compiled (or read from `cache`) and linked against the
/// host, once per process. The first caller prepares and compiles on the blocking pool;
/// every later load only clones the linked guest, without leaving its task.
pub async fn lua_pre(
    engine: &Engine,
    cache: &CodeCache,
    linker: &'static Linker<StoreState>,
) -> Result<PluginPre, CodeError> {
    static PRE: OnceCell<Result<PluginPre, CodeError>> = OnceCell::const_new();
    PRE.get_or_init(|| {
        let (engine, cache) = (engine.clone(), cache.clone());
        async move {
            tokio::task::spawn_blocking(move || {
                let component = compile(&engine, &cache)
                    .map_err(|error| CodeError::LuaRuntime(format!("{error:#}")))?;
                sandbox::link(linker, &component)
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

/// The Lua guest compiled, prepared when that pays. The snapshot costs a second
/// compilation (about 0.6 s) and saves about 0.2 ms per plugin load, so it is made only
/// when the cache keeps it. It is an optimisation: if preparing fails, plugins still
/// run on the plain guest, which builds its Lua state in `load`.
fn compile(engine: &Engine, cache: &CodeCache) -> wasmtime::Result<Component> {
    if crate::engine::options().snapshot && cache.is_usable() {
        let prepare = || {
            cache.announce("the Lua runtime", LUA_GUEST_WASM.len());
            prepare(engine)
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

/// Runs the guest's `prepare` once and compiles the snapshot (see [`crate::snapshot`]).
/// Called on the blocking pool, where waiting on the runtime is allowed.
fn prepare(engine: &Engine) -> wasmtime::Result<Component> {
    let wasm =
        tokio::runtime::Handle::current().block_on(crate::snapshot::prepared(LUA_GUEST_WASM))?;
    Component::new(engine, &wasm)
}
