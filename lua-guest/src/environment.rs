//! The plugin's Lua environment as clm-tool(5) defines it: only the string, table, math
//! and utf8 libraries; no os, io, debug, package or coroutine; no dofile, loadfile,
//! load, require or collectgarbage; no bytecode (`string.dump`); a private memory cap;
//! and a deadline checked every 10000 VM instructions that `pcall` cannot catch
//! (`watchdog`).

use mlua::{Function, Lua, LuaOptions, StdLib, Value};

use crate::bindings::toolcell::plugin::host;
use crate::copies::Copies;
use crate::{errors, watchdog};

/// Globals removed after the safe libraries are loaded (clm-tool(5), "Sandbox").
const REMOVED_GLOBALS: [&str; 6] = [
    "dofile",
    "loadfile",
    "load",
    "require",
    "collectgarbage",
    "coroutine",
];

/// Creates the restricted Lua state and returns it with the runtime's private
/// `coroutine.yield` (the plugin does not get the coroutine library).
pub fn new_state() -> mlua::Result<(Lua, Function)> {
    let libs = StdLib::STRING | StdLib::TABLE | StdLib::MATH | StdLib::UTF8 | StdLib::COROUTINE;
    let lua = Lua::new_with(libs, LuaOptions::new())?;
    let globals = lua.globals();
    let coroutine: mlua::Table = globals.get("coroutine")?;
    let yield_fn: Function = coroutine.get("yield")?;
    for name in REMOVED_GLOBALS {
        globals.raw_set(name, Value::Nil)?;
    }
    // The README promises no bytecode: `string.dump` would make it (and `load`, which
    // would run it, is gone already).
    let string: mlua::Table = globals.get("string")?;
    string.raw_set("dump", Value::Nil)?;
    globals.raw_set("print", lua.create_function(print)?)?;
    globals.raw_set("warn", lua.create_function(warn)?)?;
    watchdog::install(&lua)?;
    Ok((lua, yield_fn))
}

/// `print` writes to the debug log, never to stdout (stdout carries tool results and,
/// later, the MCP protocol).
fn print(lua: &Lua, values: mlua::Variadic<Value>) -> mlua::Result<()> {
    if !crate::protocol::debug_log_enabled() {
        return Ok(());
    }
    let mut copies = Copies::new(lua);
    let texts = values
        .iter()
        .map(|value| copies.display(value))
        .collect::<mlua::Result<Vec<String>>>()?;
    let line = copies.join(&texts, "\t")?;
    watchdog::charge_host_call(line.len())?;
    host::log(&line);
    Ok(())
}

/// `warn` (Lua 5.4) also goes to the debug log; its "@on"/"@off" control messages are
/// accepted and ignored.
fn warn(lua: &Lua, parts: mlua::Variadic<mlua::LuaString>) -> mlua::Result<()> {
    let control = parts
        .first()
        .is_some_and(|part| part.as_bytes().first() == Some(&b'@'));
    if control || !crate::protocol::debug_log_enabled() {
        return Ok(());
    }
    let mut copies = Copies::new(lua);
    let length = parts.iter().map(|part| part.as_bytes().len()).sum();
    copies.charge(length)?;
    watchdog::charge_bytes(length)?;
    let mut bytes = Vec::new();
    for part in parts.iter() {
        bytes.extend_from_slice(&part.as_bytes());
    }
    let texts = ["warning: ".to_string(), copies.text(&bytes)?];
    watchdog::charge(watchdog::HOST_CALL)?;
    host::log(&copies.join(&texts, "")?);
    Ok(())
}

/// Converts an error a plugin's `pcall`/`xpcall` caught into what plain Lua would give
/// it (a message string for errors raised by the runtime), or raises it again when the
/// running code is being aborted for its deadline.
pub fn caught(lua: &Lua, error: Value) -> mlua::Result<Value> {
    if watchdog::tripped() {
        return Err(watchdog::deadline_error());
    }
    match error {
        Value::Error(error) => Ok(Value::String(lua.create_string(errors::message(&error))?)),
        other => Ok(other),
    }
}
