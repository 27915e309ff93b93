//! Turning mlua errors into the one-line messages plugins and models see.
//!
//! mlua wraps errors raised by Rust callbacks in userdata and appends tracebacks to
//! errors that cross a coroutine boundary. Plugins (through `pcall`) and the model
//! (through "[tool failed: ...]") should see what a plain Lua interpreter would show:
//! `file.lua:12: message`.

use mlua::{Error, Lua, Value};

/// The chunk name of the runtime's own Lua code; frames from it are skipped when an
/// error is attributed to a plugin line.
pub const RUNTIME_CHUNK: &str = "=toolcell";

/// The plugin-facing message of an error: its root cause, without mlua's decorations
/// or tracebacks.
pub fn message(error: &Error) -> String {
    let text = match root_cause(error) {
        Error::RuntimeError(text) => text.clone(),
        Error::SyntaxError { message, .. } => message.clone(),
        Error::MemoryError(_) => "not enough memory".to_string(),
        Error::BadArgument {
            to,
            pos,
            name,
            cause,
        } => {
            let which = match name {
                Some(name) => format!("'{name}'"),
                None => format!("#{pos}"),
            };
            let function = to
                .as_deref()
                .map(|to| format!(" to '{to}'"))
                .unwrap_or_default();
            format!("bad argument {which}{function} ({})", message(cause))
        }
        Error::FromLuaConversionError { from, to, message } => match message {
            Some(message) => format!("expected {to}, got {from} ({message})"),
            None => format!("expected {to}, got {from}"),
        },
        other => other.to_string(),
    };
    with_sandbox_hint(strip_traceback(&text))
}

/// Globals a plugin written for plain Lua may expect but the sandbox leaves out
/// (clm-tool(5), "Sandbox"), each with what to use instead.
const ABSENT_GLOBALS: [(&str, &str); 14] = [
    (
        "os",
        "for the time use clm.time(); files: clm.read_file, clm.write_file",
    ),
    ("io", "files: clm.read_file, clm.write_file"),
    ("require", "a plugin is one file: no module loading"),
    ("package", "a plugin is one file: no module loading"),
    ("dofile", "a plugin is one file: no code loading"),
    ("loadfile", "a plugin is one file: no code loading"),
    ("load", "no code loading"),
    ("loadstring", "no code loading"),
    ("collectgarbage", "memory is managed for the plugin"),
    (
        "coroutine",
        "run work concurrently with clm.spawn and the task API",
    ),
    ("debug", "log with ctx:log or print"),
    ("unpack", "Lua 5.4 has table.unpack"),
    ("setfenv", "Lua 5.4 has no function environments"),
    ("getfenv", "Lua 5.4 has no function environments"),
];

/// Where the reference of the plugin API lives, for messages that point to it.
pub const REFERENCE: &str = "docs/lua-api.md";

/// `text` with a hint appended when it reports the use of a global the sandbox leaves
/// out ("attempt to index a nil value (global 'os')"): the global stays nil, as
/// clm-tool(5) says, but the error names the cause.
fn with_sandbox_hint(text: &str) -> String {
    let absent = ABSENT_GLOBALS.iter().find(|(name, _)| {
        text.contains("attempt to") && text.contains(&format!("(global '{name}')"))
    });
    match absent {
        Some((name, instead)) => format!(
            "{text} ('{name}' is not available in the sandbox: {instead}; see {REFERENCE}, \"The sandbox\")"
        ),
        None => text.to_string(),
    }
}

/// Whether the error is Lua running out of its memory allowance.
pub fn is_out_of_memory(error: &Error) -> bool {
    matches!(root_cause(error), Error::MemoryError(_))
}

fn root_cause(mut error: &Error) -> &Error {
    while let Error::CallbackError { cause, .. } = error {
        error = cause;
    }
    error
}

fn strip_traceback(text: &str) -> &str {
    match text.find("\nstack traceback:") {
        Some(end) => &text[..end],
        None => text,
    }
}

/// An error raised by the runtime's Lua API, positioned like `luaL_error` does: at the
/// plugin line that called the API (skipping the runtime's own wrapper frames).
pub fn api_error(lua: &Lua, text: impl std::fmt::Display) -> Error {
    match plugin_position(lua) {
        Some(position) => Error::RuntimeError(format!("{position}{text}")),
        None => Error::RuntimeError(text.to_string()),
    }
}

fn plugin_position(lua: &Lua) -> Option<String> {
    (1..8).find_map(|level| {
        lua.inspect_stack(level, |frame| {
            let source = frame.source();
            let from_plugin = source.what != "C" && source.source.as_deref() != Some(RUNTIME_CHUNK);
            let line = frame.current_line()?;
            let file = source.short_src?;
            from_plugin.then(|| format!("{file}:{line}: "))
        })
        .flatten()
    })
}

/// The name Lua's `type()` gives a value ("number" for integers and floats alike),
/// for messages that name what a plugin passed.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Integer(_) | Value::Number(_) => "number",
        Value::LightUserData(_) | Value::UserData(_) | Value::Error(_) => "userdata",
        other => other.type_name(),
    }
}
