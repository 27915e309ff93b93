//! The Lua runtime component, built from `lua-guest/` by the build script and embedded
//! here so the `toolcell` binary is self-contained.

use std::sync::OnceLock;

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::cache::CodeCache;
use crate::sandbox::{self, PluginPre, StoreState};

/// The Lua guest component (a `toolcell:plugin` world component).
pub static LUA_GUEST_WASM: &[u8] = include_bytes!(env!("TOOLCELL_LUA_GUEST_WASM"));

/// SHA-256 of [`LUA_GUEST_WASM`], computed at build time (the compiled-code cache key).
pub const LUA_GUEST_SHA256: &str = env!("TOOLCELL_LUA_GUEST_SHA256");

/// The compiled Lua guest, compiled (or read from `cache`) once per process.
pub fn lua_component(engine: &Engine, cache: &CodeCache) -> Result<Component, String> {
    static COMPONENT: OnceLock<Result<Component, String>> = OnceLock::new();
    COMPONENT
        .get_or_init(|| {
            cache
                .component(engine, LUA_GUEST_WASM, Some(LUA_GUEST_SHA256))
                .map_err(|error| format!("the embedded Lua runtime does not compile: {error:#}"))
        })
        .clone()
}

/// The Lua guest linked against the host, once per process.
pub fn lua_pre(
    engine: &Engine,
    cache: &CodeCache,
    linker: &Linker<StoreState>,
) -> Result<PluginPre, String> {
    static PRE: OnceLock<Result<PluginPre, String>> = OnceLock::new();
    PRE.get_or_init(|| sandbox::link(linker, &lua_component(engine, cache)?))
        .clone()
}
