//! The Lua runtime component, built from `lua-guest/` by the build script and embedded
//! here so the `toolcell` binary is self-contained.

/// The Lua guest component (a `toolcell:plugin` world component).
pub static LUA_GUEST_WASM: &[u8] = include_bytes!(env!("TOOLCELL_LUA_GUEST_WASM"));

/// SHA-256 of [`LUA_GUEST_WASM`], computed at build time (the compiled-code cache key).
pub const LUA_GUEST_SHA256: &str = env!("TOOLCELL_LUA_GUEST_SHA256");
