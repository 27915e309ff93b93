//! A plugin packed with `toolcell pack --aot` runs its functions compiled: its copy of
//! the guest is linked with the C the translator made of its script (toolcell-aot),
//! and the bodies are attached to the functions the script loads into before any of
//! them runs. The packed file still carries the script, which the guest compiles at
//! load as always (source positions in errors come from it); `lua_aotbind` refuses
//! bodies made from any other bytecode, and the load then fails rather than run them.

use std::ffi::{c_int, c_void};

use mlua::{Function, Lua, ffi};

unsafe extern "C" {
    /// The translated unit's module, or null when none was linked (csrc/aot.c).
    fn toolcell_aot_linked() -> *const c_void;
    /// third_party/lua-src/lua-5.4.9/laot.c.
    fn lua_aotbind(state: *mut ffi::lua_State, index: c_int, module: *const c_void) -> c_int;
}

/// Attaches the compiled bodies, if this guest has any, to `main` (the plugin's script,
/// loaded and not yet run). Errs with why they do not fit it.
pub fn attach(lua: &Lua, main: &Function) -> mlua::Result<()> {
    // SAFETY: a plain accessor of a link-time constant.
    let module = unsafe { toolcell_aot_linked() };
    if module.is_null() {
        return Ok(());
    }
    // SAFETY: exec_raw runs this protected, with `main` (its one argument) at index 1;
    // lua_aotbind reads it and pushes a message when it refuses, which lua_error raises.
    unsafe {
        lua.exec_raw::<()>(main, |state| {
            if lua_aotbind(state, 1, module) != ffi::LUA_OK {
                ffi::lua_error(state);
            }
        })
    }
}
