//! The plugin's Lua environment as clm-tool(5) defines it: only the string, table, math
//! and utf8 libraries; no os, io, debug, package or coroutine; no dofile, loadfile,
//! load, require or collectgarbage; a private memory cap; and a deadline checked every
//! 10000 VM instructions that `pcall` cannot catch.

use std::cell::Cell;
use std::rc::Rc;

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Value, VmState};

use crate::bindings::toolcell::plugin::host;
use crate::copies::Copies;
use crate::errors;

/// How many VM instructions run between two deadline checks (clm-tool(5)). toolcell's
/// Lua counts them in bulk, per loop iteration and per call, at most this many apart
/// (third_party/lua-src/PATCHED.md).
const INSTRUCTIONS_PER_CHECK: u32 = 10_000;

/// Globals removed after the safe libraries are loaded (clm-tool(5), "Sandbox").
const REMOVED_GLOBALS: [&str; 6] = [
    "dofile",
    "loadfile",
    "load",
    "require",
    "collectgarbage",
    "coroutine",
];

/// The deadline of whatever runs now (the load, or one step of one invocation), checked
/// from the instruction-count hook. Once tripped it stays tripped until the next step
/// sets a new deadline, so every later check aborts again: an abort cannot be swallowed.
pub struct Watchdog {
    deadline: Cell<u64>,
    tripped: Cell<bool>,
}

/// The deadline of a watchdog nothing has armed yet: while the runtime prepares itself
/// no plugin runs and the host's clock may not be asked (see `runtime::prepare`); the
/// host's fuel and hard deadline still stop a runaway.
const UNARMED: u64 = u64::MAX;

impl Default for Watchdog {
    fn default() -> Self {
        Watchdog {
            deadline: Cell::new(UNARMED),
            tripped: Cell::new(false),
        }
    }
}

impl Watchdog {
    /// Arms the watchdog for the code about to run.
    pub fn arm(&self, deadline: u64) {
        self.deadline.set(deadline);
        self.tripped.set(false);
    }

    /// Whether the running code is being aborted for passing its deadline.
    pub fn tripped(&self) -> bool {
        self.tripped.get()
    }

    fn check(&self) -> mlua::Result<VmState> {
        let deadline = self.deadline.get();
        if !self.tripped.get() && (deadline == UNARMED || host::now() <= deadline) {
            return Ok(VmState::Continue);
        }
        self.tripped.set(true);
        Err(mlua::Error::RuntimeError("deadline exceeded".to_string()))
    }
}

/// Creates the restricted Lua state and returns it with the runtime's private
/// `coroutine.yield` (the plugin does not get the coroutine library).
pub fn new_state(watchdog: Rc<Watchdog>) -> mlua::Result<(Lua, Function)> {
    let libs = StdLib::STRING | StdLib::TABLE | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
    let lua = Lua::new_with(libs, LuaOptions::new())?;
    let globals = lua.globals();
    let coroutine: mlua::Table = globals.get("coroutine")?;
    let yield_fn: Function = coroutine.get("yield")?;
    for name in REMOVED_GLOBALS {
        globals.raw_set(name, Value::Nil)?;
    }
    globals.raw_set("print", lua.create_function(print)?)?;
    globals.raw_set("warn", lua.create_function(warn)?)?;
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(INSTRUCTIONS_PER_CHECK),
        move |_, _| watchdog.check(),
    )?;
    Ok((lua, yield_fn))
}

/// `print` writes to the debug log, never to stdout (stdout carries tool results and,
/// later, the MCP protocol).
fn print(lua: &Lua, values: mlua::Variadic<Value>) -> mlua::Result<()> {
    if !crate::runtime::debug_log_enabled(lua) {
        return Ok(());
    }
    let mut copies = Copies::new(lua);
    let texts = values
        .iter()
        .map(|value| copies.display(value))
        .collect::<mlua::Result<Vec<String>>>()?;
    host::log(&copies.join(&texts, "\t")?);
    Ok(())
}

/// `warn` (Lua 5.4) also goes to the debug log; its "@on"/"@off" control messages are
/// accepted and ignored.
fn warn(lua: &Lua, parts: mlua::Variadic<mlua::LuaString>) -> mlua::Result<()> {
    let control = parts
        .first()
        .is_some_and(|part| part.as_bytes().first() == Some(&b'@'));
    if control || !crate::runtime::debug_log_enabled(lua) {
        return Ok(());
    }
    let mut copies = Copies::new(lua);
    copies.charge(parts.iter().map(|part| part.as_bytes().len()).sum())?;
    let mut bytes = Vec::new();
    for part in parts.iter() {
        bytes.extend_from_slice(&part.as_bytes());
    }
    let texts = ["warning: ".to_string(), copies.text(&bytes)?];
    host::log(&copies.join(&texts, "")?);
    Ok(())
}

/// Converts an error a plugin's `pcall`/`xpcall` caught into what plain Lua would give
/// it (a message string for errors raised by the runtime), or raises it again when the
/// running code is being aborted for its deadline.
pub fn caught(lua: &Lua, watchdog: &Watchdog, error: Value) -> mlua::Result<Value> {
    if watchdog.tripped() {
        return Err(mlua::Error::RuntimeError("deadline exceeded".to_string()));
    }
    match error {
        Value::Error(error) => Ok(Value::String(lua.create_string(errors::message(&error))?)),
        other => Ok(other),
    }
}
