//! The `ctx` object every invocation receives (clm-tool(5), "The ctx object").
//!
//! A ctx is a plain Lua userdata made here rather than by mlua: mlua gives every
//! userdata it makes a `__gc` metamethod (to drop the Rust value inside), and an object
//! with a finalizer is the costliest garbage there is: the collector sets it apart, runs
//! its finalizer and frees it only a cycle later. Every call leaves its ctx behind, so a
//! ctx holds nothing Rust must drop: its block is its call's id, its one user value the
//! raw JSON arguments (a Lua string, counted in the plugin's memory like the decoded
//! table), and every ctx shares one metatable without `__gc`. A ctx kept past its call
//! still answers `args_raw`; ending or reporting on an ended call fails as before.

use std::cell::Cell;
use std::ffi::{CStr, c_int, c_void};

use mlua::{AnyUserData, FromLua, Function, Lua, LuaString, MultiValue, Table, Value, ffi};

use crate::bindings::toolcell::plugin::host;
use crate::bindings::toolcell::plugin::types::{
    ContentPart, EmbeddedResource, Media, Question, ResourceContents, ResourceLink,
};
use crate::copies::Copies;
use crate::errors::{self, api_error, type_name};
use crate::scheduler::{self, Call, CallId, Ending, Strand};
use crate::{json, tasks, waiting, watchdog};

/// The metatable every ctx shares: its reference in the registry (an integer key, the
/// quickest lookup there) and its address, which tells a ctx from other userdata
/// without a lookup. The registry holds the table for the state's life, and Lua never
/// moves an object, so the address stays valid.
#[derive(Clone, Copy)]
struct Metatable {
    reference: c_int,
    address: *const c_void,
}

thread_local! {
    static METATABLE: Cell<Metatable> = const {
        Cell::new(Metatable {
            reference: ffi::LUA_NOREF,
            address: std::ptr::null(),
        })
    };
}

/// Makes the methods and the shared metatable, at the plugin's first call rather than
/// while the state is prepared: objects added to the prepared state move what a plugin's
/// load allocates after them, and a load then dirties one more page of the memory image
/// in every instance (about 5 MiB over 1000 plugins).
fn install(lua: &Lua) -> mlua::Result<()> {
    let methods = lua.create_table()?;
    methods.raw_set("complete", lua.create_function(complete)?)?;
    methods.raw_set("complete_json", lua.create_function(complete_json)?)?;
    methods.raw_set("complete_content", lua.create_function(complete_content)?)?;
    // `ask` waits, so it is the prelude's Lua wrapper around `ask_start`.
    let ask: Function = lua.named_registry_value(ASK_KEY)?;
    methods.raw_set("ask", ask)?;
    methods.raw_set("fail", lua.create_function(fail)?)?;
    methods.raw_set("progress", lua.create_function(progress)?)?;
    methods.raw_set("args_raw", lua.create_function(args_raw)?)?;
    methods.raw_set("log", lua.create_function(log)?)?;
    let metatable = lua.create_table()?;
    metatable.raw_set("__index", methods)?;
    metatable.raw_set("__name", "ctx")?;
    // As for mlua's userdata: `getmetatable(ctx)` gives false, the methods stay private.
    metatable.raw_set("__metatable", false)?;
    // SAFETY: the metatable (exec_raw's one argument) is at the top of the stack;
    // `luaL_ref` pops it into the registry, and exec_raw runs this protected, so a
    // registry that cannot grow raises a Lua error, not a longjmp out of Rust.
    unsafe {
        lua.exec_raw::<()>(metatable, |state| {
            let address = ffi::lua_topointer(state, -1);
            let reference = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
            METATABLE.set(Metatable { reference, address });
        })
    }
}

/// The ctx of call `call`, whose raw JSON arguments are `args_raw`.
pub fn create(lua: &Lua, call: CallId, args_raw: &str) -> mlua::Result<AnyUserData> {
    if METATABLE.get().reference == ffi::LUA_NOREF {
        install(lua)?;
    }
    // SAFETY: exec_raw runs this protected (an allocation failing raises a Lua error it
    // returns as `Err`); nothing here owns anything a longjmp would leak. The block is
    // written once, before any Lua code can see it.
    unsafe {
        lua.exec_raw((), |state| {
            let block = ffi::lua_newuserdatauv(state, size_of::<CallId>(), 1).cast::<CallId>();
            block.write_unaligned(call);
            ffi::lua_pushlstring(state, args_raw.as_ptr().cast(), args_raw.len());
            ffi::lua_setiuservalue(state, -2, 1);
            let reference = METATABLE.get().reference;
            ffi::lua_rawgeti(
                state,
                ffi::LUA_REGISTRYINDEX,
                ffi::lua_Integer::from(reference),
            );
            ffi::lua_setmetatable(state, -2);
        })
    }
}

/// What a ctx method is called on: the call of a ctx, or the Lua type of whatever else
/// it got (`ctx.complete("x")` instead of `ctx:complete("x")`).
pub struct Receiver(Result<CallId, &'static str>);

impl Receiver {
    /// Reads the value at `index` of the running coroutine's stack in place: a method
    /// call then makes no reference to its receiver.
    ///
    /// # Safety
    /// `index` must be a valid index of `state`'s stack.
    unsafe fn read(state: *mut ffi::lua_State, index: c_int) -> Receiver {
        // SAFETY: nothing here allocates or raises: the stack is grown first (which
        // reports failure instead of raising), then a metatable is read and popped
        // again. Only `create` sets the shared metatable, on a userdata whose block holds
        // its call's id; a plugin cannot set it on anything (`__metatable` hides it, and
        // plugins have no debug library). The type is checked all the same, so that a
        // value of another type never has its block read.
        unsafe {
            let index = ffi::lua_absindex(state, index);
            let kind = ffi::lua_type(state, index);
            if kind == ffi::LUA_TUSERDATA
                && ffi::lua_checkstack(state, 1) != 0
                && ffi::lua_getmetatable(state, index) != 0
            {
                let is_ctx = ffi::lua_topointer(state, -1) == METATABLE.get().address;
                ffi::lua_pop(state, 1);
                if is_ctx {
                    let call = ffi::lua_touserdata(state, index)
                        .cast::<CallId>()
                        .read_unaligned();
                    return Receiver(Ok(call));
                }
            }
            Receiver(Err(type_name_of(state, kind)))
        }
    }

    /// The receiver's call, or the error of a method `what` called on something else.
    fn call(&self, lua: &Lua, what: &str) -> mlua::Result<CallId> {
        self.0.map_err(|kind| {
            api_error(
                lua,
                format!("{what} must be called on a ctx (write {what}(...)), got {kind}"),
            )
        })
    }
}

impl FromLua for Receiver {
    fn from_lua(value: Value, lua: &Lua) -> mlua::Result<Receiver> {
        // SAFETY: `read_pushed` gives the index of the value it pushed.
        read_pushed(lua, &value, |raw, index| {
            Ok(unsafe { Receiver::read(raw.state(), index) })
        })
    }

    unsafe fn from_stack(index: c_int, lua: &mlua::state::RawLua) -> mlua::Result<Receiver> {
        // SAFETY: mlua passes an index of the callback's arguments.
        Ok(unsafe { Receiver::read(lua.state(), index) })
    }
}

/// Runs `read` with `value` pushed on the stack (at the index it is given), as a
/// callback's argument is read in place, and pops it again.
fn read_pushed<R>(
    lua: &Lua,
    value: &Value,
    read: impl FnOnce(&mlua::state::RawLua, c_int) -> mlua::Result<R>,
) -> mlua::Result<R> {
    lua.exec_raw_lua(|raw| {
        // SAFETY: the stack is grown first (which reports failure instead of raising),
        // for the value and what `read` pushes; pushing a value from its reference
        // allocates nothing; the stack is left as found.
        unsafe {
            let state = raw.state();
            if ffi::lua_checkstack(state, 3) == 0 {
                return Err(mlua::Error::StackError);
            }
            raw.push_value(value)?;
            let index = ffi::lua_gettop(state);
            let result = read(raw, index);
            ffi::lua_settop(state, index - 1);
            result
        }
    })
}

/// `ctx:args_raw()`: the raw JSON arguments, also once the call has ended.
fn args_raw(lua: &Lua, this: Value) -> mlua::Result<LuaString> {
    read_pushed(lua, &this, |raw, index| {
        // SAFETY: `index` holds the pushed value; once it is known to be a ctx, its user
        // value 1 is its arguments string, which `pop` takes off the stack again.
        unsafe {
            let state = raw.state();
            Receiver::read(state, index).call(lua, "ctx:args_raw")?;
            ffi::lua_getiuservalue(state, index, 1);
            raw.pop::<LuaString>()
        }
    })
}

fn complete(lua: &Lua, (this, result): (Receiver, TextArgument)) -> mlua::Result<()> {
    let call = this.call(lua, "ctx:complete")?;
    let result = string_argument(lua, "ctx:complete", result)?;
    end(lua, call, "ctx:complete", Ending::Completed(result))
}

fn complete_json(lua: &Lua, (this, value): (Receiver, Value)) -> mlua::Result<()> {
    let call = this.call(lua, "ctx:complete_json")?;
    let limit = crate::protocol::memory_limit();
    let text = json::encode(lua, &value, limit)
        .map_err(|error| api_error(lua, format!("ctx:complete_json: {error}")))?;
    watchdog::charge_bytes(text.len())?;
    end(lua, call, "ctx:complete_json", Ending::Completed(text))
}

/// `ctx:complete_content(parts)`: ends the call with a result of several parts.
fn complete_content(lua: &Lua, (this, parts): (Receiver, Value)) -> mlua::Result<()> {
    let what = "ctx:complete_content";
    let call = this.call(lua, what)?;
    let Value::Table(parts) = parts else {
        return Err(api_error(
            lua,
            format!("{what} expects a list of parts, got {}", type_name(&parts)),
        ));
    };
    let mut copies = Copies::new(lua);
    let mut read = Vec::new();
    for (index, part) in parts.sequence_values::<Value>().enumerate() {
        let part = content_part(&mut copies, part?)
            .map_err(|problem| api_error(lua, format!("{what}: part {}: {problem}", index + 1)))?;
        read.push(part);
    }
    if read.is_empty() {
        return Err(api_error(
            lua,
            format!("{what} expects at least one part (ctx:complete(\"\") completes with nothing)"),
        ));
    }
    watchdog::charge_bytes(read.iter().map(part_bytes).sum())?;
    end(lua, call, what, Ending::CompletedContent(read))
}

/// The bytes a part carries, as its copy is charged.
fn part_bytes(part: &ContentPart) -> usize {
    match part {
        ContentPart::Text(text) => text.len(),
        ContentPart::Image(media) | ContentPart::Audio(media) => media.data.len(),
        ContentPart::ResourceLink(link) => link.uri.len() + link.name.len(),
        ContentPart::Resource(resource) => match &resource.contents {
            ResourceContents::Text(text) => text.len(),
            ResourceContents::Blob(data) => data.len(),
        },
    }
}

/// Reads one part: `{ type = "text"|"image"|"audio"|"resource_link"|"resource", text =,
/// data =, mime_type =, uri =, name = }`; the error says what is missing or wrong.
fn content_part(copies: &mut Copies, part: Value) -> Result<ContentPart, String> {
    let Value::Table(part) = part else {
        return Err(format!("must be a table, got {}", type_name(&part)));
    };
    let kind = string_field(&part, "type")?
        .ok_or("has no type (\"text\", \"image\", \"audio\", \"resource_link\" or \"resource\")")?;
    let field = |name: &str| string_field(&part, name);
    let required = |name: &str, what: &str| -> Result<LuaString, String> {
        let kind = kind.to_string_lossy();
        let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        field(name)?.ok_or_else(|| format!("{article} {kind} part needs {name}, {what}"))
    };
    let text = |copies: &mut Copies, value: LuaString| {
        copies
            .text(&value.as_bytes())
            .map_err(|error| errors::message(&error))
    };
    let bytes = |copies: &mut Copies, value: LuaString| {
        copies
            .bytes(&value.as_bytes())
            .map_err(|error| errors::message(&error))
    };
    let optional_text = |copies: &mut Copies, name: &str| -> Result<Option<String>, String> {
        field(name)?.map(|value| text(copies, value)).transpose()
    };
    Ok(match &*kind.as_bytes() {
        b"text" => ContentPart::Text(text(copies, required("text", "a string")?)?),
        b"image" | b"audio" => {
            let media = Media {
                data: bytes(copies, required("data", "a string of the raw bytes")?)?,
                mime_type: text(
                    copies,
                    required("mime_type", "a string such as \"image/png\"")?,
                )?,
            };
            if &*kind.as_bytes() == b"image" {
                ContentPart::Image(media)
            } else {
                ContentPart::Audio(media)
            }
        }
        b"resource_link" => ContentPart::ResourceLink(ResourceLink {
            uri: text(copies, required("uri", "a string")?)?,
            name: text(copies, required("name", "a string")?)?,
            mime_type: optional_text(copies, "mime_type")?,
        }),
        b"resource" => {
            let contents = match (field("text")?, field("data")?) {
                (Some(value), None) => ResourceContents::Text(text(copies, value)?),
                (None, Some(value)) => ResourceContents::Blob(bytes(copies, value)?),
                _ => return Err("a resource part needs either text or data (not both)".into()),
            };
            ContentPart::Resource(EmbeddedResource {
                uri: text(copies, required("uri", "a string")?)?,
                mime_type: optional_text(copies, "mime_type")?,
                contents,
            })
        }
        _ => {
            return Err(format!(
                "unknown type \"{}\" (\"text\", \"image\", \"audio\", \"resource_link\" or \"resource\")",
                kind.to_string_lossy()
            ));
        }
    })
}

/// A string field of a part table, or none; anything else is an error naming it.
fn string_field(part: &Table, name: &str) -> Result<Option<LuaString>, String> {
    match part.raw_get::<Value>(name) {
        Ok(Value::Nil) => Ok(None),
        Ok(Value::String(value)) => Ok(Some(value)),
        Ok(other) => Err(format!(
            "{name} must be a string, got {}",
            type_name(&other)
        )),
        Err(error) => Err(errors::message(&error)),
    }
}

/// The named registry key of the prelude's `ctx:ask` wrapper.
pub const ASK_KEY: &str = "toolcell.ctx_ask";

/// `rt.ask_start(ctx, message, schema)`, the first half of `ctx:ask`: checks its
/// arguments, asks the host, and records that the calling coroutine waits for the
/// answer; or returns `nil, reason` at once when the host refuses.
pub fn ask_start(
    lua: &Lua,
    (this, message, schema): (Receiver, Value, Value),
) -> mlua::Result<MultiValue> {
    let what = "ctx:ask";
    let call = this.call(lua, what)?;
    let Value::String(message) = message else {
        return Err(api_error(
            lua,
            format!(
                "{what} expects a message string, got {}",
                type_name(&message)
            ),
        ));
    };
    let Value::Table(_) = &schema else {
        return Err(api_error(
            lua,
            format!(
                "{what} expects the form as a table (a JSON Schema object of flat fields), got {}",
                type_name(&schema)
            ),
        ));
    };
    let schema = json::encode(lua, &schema, json::MAX_DECODE_BYTES)
        .map_err(|error| api_error(lua, format!("{what}: the form: {error}")))?;
    let question = Question {
        message: Copies::new(lua).text(&message.as_bytes())?,
        schema,
    };
    let running = waiting::running_strand(lua, what)?;
    if running.0 != call {
        return Err(api_error(
            lua,
            format!("{what}: this ctx belongs to another tool invocation"),
        ));
    }
    let bytes = question.message.len() + question.schema.len();
    waiting::start_operation(lua, running, bytes, |call| host::ask_start(call, &question))
}

fn fail(lua: &Lua, (this, message): (Receiver, TextArgument)) -> mlua::Result<()> {
    let call = this.call(lua, "ctx:fail")?;
    let message = string_argument(lua, "ctx:fail", message)?;
    end(lua, call, "ctx:fail", Ending::Failed(message))
}

fn progress(
    lua: &Lua,
    (this, done, total, message): (Receiver, Value, Value, Value),
) -> mlua::Result<()> {
    let call = this.call(lua, "ctx:progress")?;
    let number = |what: &str, value: &Value| match value {
        Value::Integer(n) => Ok(*n as f64),
        Value::Number(n) => Ok(*n),
        other => Err(api_error(
            lua,
            format!(
                "ctx:progress: {what} must be a number, got {}",
                type_name(other)
            ),
        )),
    };
    let done = number("done", &done)?;
    let total = match &total {
        Value::Nil => None,
        value => Some(number("total", value)?),
    };
    let message = match message {
        Value::Nil => None,
        Value::String(text) => Some(text.to_string_lossy()),
        other => {
            return Err(api_error(
                lua,
                format!(
                    "ctx:progress: message must be a string, got {}",
                    type_name(&other)
                ),
            ));
        }
    };
    watchdog::charge_host_call(message.as_ref().map_or(0, String::len))?;
    host::progress(call, done, total, message.as_deref())
        .map_err(|error| api_error(lua, format!("ctx:{error}")))
}

fn log(lua: &Lua, (this, message): (Receiver, Value)) -> mlua::Result<()> {
    this.call(lua, "ctx:log")?;
    if crate::protocol::debug_log_enabled() {
        let message = Copies::new(lua).display(&message)?;
        watchdog::charge_host_call(message.len())?;
        host::log(&message);
    }
    Ok(())
}

/// Records how invocation `id` ends; only its main coroutine may, and only once.
fn end(lua: &Lua, id: CallId, what: &str, ending: Ending) -> mlua::Result<()> {
    scheduler::with(|scheduler| {
        if scheduler.running != Some((id, Strand::Main)) {
            let text = scheduler::running_main(scheduler, what)
                .err()
                .unwrap_or_else(|| format!("{what}: this ctx belongs to another tool invocation"));
            return Err(api_error(lua, text));
        }
        let call = scheduler
            .calls
            .get_mut(&id)
            .ok_or_else(|| mlua::Error::runtime("the invocation has ended"))?;
        if let Some(previous) = &call.ending {
            let earlier = match previous {
                Ending::Completed(_) | Ending::BrokeRule(_) => "ctx:complete",
                Ending::CompletedContent(_) => "ctx:complete_content",
                Ending::Failed(_) => "ctx:fail",
            };
            let error = api_error(
                lua,
                format!("{what} called after {earlier}: an invocation ends exactly once"),
            );
            call.ended_twice = Some(errors::message(&error));
            return Err(error);
        }
        call.ending = Some(match ending {
            Ending::Failed(_) | Ending::BrokeRule(_) => ending,
            completed => completion(lua, call, what, completed)?,
        });
        Ok(())
    })
}

/// A completion (by `what`), unless the call still has live tasks or an unobserved
/// task error, which fail the tool instead (clm-tool(5)); live tasks are cancelled.
fn completion(lua: &Lua, call: &mut Call, what: &str, completed: Ending) -> mlua::Result<Ending> {
    let what = if what == "ctx:complete_json" {
        "ctx:complete"
    } else {
        what
    };
    let live = tasks::live_count(call);
    if live > 0 {
        tasks::cancel_live(lua, call, "the tool completed")?;
        return Ok(Ending::BrokeRule(format!(
            "{what} was called while {live} task(s) were still running; they were cancelled"
        )));
    }
    if let Some(error) = tasks::unobserved_error(call) {
        return Ok(Ending::BrokeRule(format!(
            "{what} was called while a task error was never observed: {error}"
        )));
    }
    Ok(completed)
}

/// The string argument of `ctx:complete` and `ctx:fail`. Read in place on the
/// callback's stack where mlua reads arguments there, so the call makes (and drops) no
/// Lua reference to its result.
enum TextArgument {
    /// A string among the callback's arguments. They stay on its stack, and so alive,
    /// until the callback returns, and a `TextArgument` never outlives the callback.
    InPlace(*const u8, usize),
    /// A string reached through a Lua reference.
    Held(LuaString),
    /// Not a string: the Lua type of what was given.
    Other(&'static str),
}

impl FromLua for TextArgument {
    fn from_lua(value: Value, _: &Lua) -> mlua::Result<TextArgument> {
        Ok(match value {
            Value::String(text) => TextArgument::Held(text),
            other => TextArgument::Other(type_name(&other)),
        })
    }

    unsafe fn from_stack(index: c_int, lua: &mlua::state::RawLua) -> mlua::Result<TextArgument> {
        let state = lua.state();
        // SAFETY: mlua passes an index of the callback's arguments; `lua_tolstring` is
        // called on a string only, so it converts nothing and cannot raise.
        unsafe {
            Ok(match ffi::lua_type(state, index) {
                ffi::LUA_TSTRING => {
                    let mut length = 0;
                    let bytes = ffi::lua_tolstring(state, index, &mut length);
                    TextArgument::InPlace(bytes.cast(), length)
                }
                kind => TextArgument::Other(type_name_of(state, kind)),
            })
        }
    }
}

/// The name Lua's `type()` gives the type `kind`.
///
/// # Safety
/// `kind` must be a Lua type tag (`lua_type` of a valid index).
unsafe fn type_name_of(state: *mut ffi::lua_State, kind: c_int) -> &'static str {
    // SAFETY: `lua_typename` returns one of Lua's static names.
    unsafe { CStr::from_ptr(ffi::lua_typename(state, kind)) }
        .to_str()
        .unwrap_or("value")
}

/// The text of a string argument, charged as it is copied; or the error of anything
/// else, with a hint at how to turn it into a string.
fn string_argument(lua: &Lua, what: &str, value: TextArgument) -> mlua::Result<String> {
    let kind = match value {
        TextArgument::InPlace(bytes, length) => {
            // SAFETY: see `TextArgument::InPlace`: this runs inside the callback.
            return copy_text(lua, unsafe { std::slice::from_raw_parts(bytes, length) });
        }
        TextArgument::Held(text) => return copy_text(lua, &text.as_bytes()),
        TextArgument::Other(kind) => kind,
    };
    let hint = match kind {
        "table" => " (json.encode(value) turns a table into a JSON string)",
        "number" | "boolean" => " (convert it with tostring)",
        _ => "",
    };
    Err(api_error(
        lua,
        format!("{what} expects a string, got {kind}{hint}"),
    ))
}

fn copy_text(lua: &Lua, bytes: &[u8]) -> mlua::Result<String> {
    watchdog::charge_bytes(bytes.len())?;
    Copies::new(lua).text(bytes)
}
