//! The Lua runtime component, built from `lua-guest/` by the build script and embedded
//! here so the `toolcell` binary is self-contained.

use tokio::sync::OnceCell;
use wasmtime::Engine;
use wasmtime::component::Linker;

use crate::cache::CodeCache;
use crate::sandbox::{self, PluginPre, StoreState};

/// The Lua guest component (a `toolcell:plugin` world component).
pub static LUA_GUEST_WASM: &[u8] = include_bytes!(env!("TOOLCELL_LUA_GUEST_WASM"));

/// SHA-256 of [`LUA_GUEST_WASM`], computed at build time (the compiled-code cache key).
pub const LUA_GUEST_SHA256: &str = env!("TOOLCELL_LUA_GUEST_SHA256");

/// The Lua guest compiled (or read from `cache`) and linked against the host, once per
/// process. The first caller compiles on the blocking pool; every later load only
/// clones the linked guest, without leaving its task.
pub async fn lua_pre(
    engine: &Engine,
    cache: &CodeCache,
    linker: &'static Linker<StoreState>,
) -> Result<PluginPre, String> {
    static PRE: OnceCell<Result<PluginPre, String>> = OnceCell::const_new();
    PRE.get_or_init(|| {
        let (engine, cache) = (engine.clone(), cache.clone());
        async move {
            tokio::task::spawn_blocking(move || {
                let component = cache
                    .component(&engine, LUA_GUEST_WASM, Some(LUA_GUEST_SHA256))
                    .map_err(|error| {
                        format!("the embedded Lua runtime does not compile: {error:#}")
                    })?;
                sandbox::link(linker, &component)
            })
            .await
            .map_err(|error| format!("compiling the Lua runtime was interrupted: {error}"))?
        }
    })
    .await
    .clone()
}
