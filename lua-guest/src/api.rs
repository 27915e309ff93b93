//! The plugin-facing globals of clm-tool(5): `clm` (tool registration, files, config,
//! and through the prelude sleep/spawn/tasks), `http`, `json`, and the `ctx` object
//! every invocation receives.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use mlua::{Function, Lua, MultiValue, Table, Value};

use crate::bindings::toolcell::plugin::host;
use crate::bindings::toolcell::plugin::types::{TaskSupport, ToolSpec};
use crate::copies::{self, Copies};
use crate::errors::{self, api_error, type_name};
use crate::scheduler::IdHasher;
use crate::{environment, json, tasks, waiting, watchdog};

/// The runtime's Lua code (src/prelude.lua, without its comments: see build.rs).
const PRELUDE: &str = include_str!(concat!(env!("OUT_DIR"), "/prelude.lua"));

use toolcell_limits::{MAX_TOOL_NAME, MAX_TOOLS_PER_PLUGIN, is_valid_tool_name};

/// The tools a plugin registered, in registration order.
#[derive(Default)]
pub struct Registry {
    /// Whether the plugin's load-time code is running (the only time it may register).
    pub loading: bool,
    /// Each tool's spec as reported to the host.
    pub specs: Vec<ToolSpec>,
    /// Each tool's `invoke` function, parallel to `specs`.
    pub invokes: Vec<Function>,
    /// Tool name to index in `specs` (looked up on every call; the names are the
    /// plugin's own, so a cheap hash has nothing to defend against).
    pub by_name: HashMap<String, usize, BuildHasherDefault<IdHasher>>,
    /// Whether `clm.config` has been filled from the user's configuration.
    pub config_matched: bool,
}

thread_local! {
    /// The plugin's tools (an instance runs one plugin, on one thread): a thread-local
    /// is a few instructions on every call, Lua's app data a map lookup.
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
}

/// Runs `f` on the plugin's registry, or fails when it is already borrowed (which
/// only code running inside a registry operation could cause).
pub fn with_registry<R>(f: impl FnOnce(&mut Registry) -> R) -> mlua::Result<R> {
    REGISTRY.with(|registry| {
        let mut registry = registry
            .try_borrow_mut()
            .map_err(|_| mlua::Error::runtime("the tool registry is busy"))?;
        Ok(f(&mut registry))
    })
}

/// The `invoke` function of a tool.
pub fn invoke(name: &str) -> Option<Function> {
    with_registry(|registry| {
        registry
            .by_name
            .get(name)
            .and_then(|&index| registry.invokes.get(index))
            .cloned()
    })
    .ok()
    .flatten()
}

/// Installs every global of the plugin API. Nothing here depends on which plugin will
/// run: that is told later by [`configure`], so this state can be prepared once and
/// snapshotted (see `protocol::prepare`).
pub fn install(lua: &Lua, yield_fn: Function) -> mlua::Result<()> {
    json::install(lua, |_| crate::protocol::memory_limit())?;
    install_clm(lua)?;
    let rt = lua.create_table()?;
    rt.raw_set("yield", yield_fn)?;
    rt.raw_set("caught", lua.create_function(environment::caught)?)?;
    rt.raw_set(
        "aborting",
        lua.create_function(|_, ()| Ok(watchdog::tripped()))?,
    )?;
    waiting::install(lua, &rt)?;
    tasks::install(lua, &rt)?;
    let (task_methods, ask): (Table, Function) =
        lua.load(PRELUDE).set_name(errors::RUNTIME_CHUNK).call(rt)?;
    lua.set_named_registry_value(tasks::METHODS_KEY, task_methods)?;
    lua.set_named_registry_value(crate::ctx::ASK_KEY, ask)?;
    Ok(())
}

fn install_clm(lua: &Lua) -> mlua::Result<()> {
    lua.set_app_data(SpecFields::new(lua)?);
    let clm = lua.create_table()?;
    clm.raw_set("tool_register", lua.create_function(tool_register)?)?;
    clm.raw_set("read_file", lua.create_function(read_file)?)?;
    clm.raw_set("write_file", lua.create_function(write_file)?)?;
    clm.raw_set("time", lua.create_function(time)?)?;
    let config = lua.create_table()?;
    clm.raw_set("config", config.clone())?;
    lua.set_named_registry_value(CONFIG_KEY, config)?;
    lua.globals().raw_set("clm", clm)
}

/// Tells the prepared API which plugin it serves: the registry of its tools,
/// `clm.config` filled from the user's configuration under the plugin's name, and
/// `clm.data_dir`, the path of its file root (nil when it may not use files).
pub fn configure(lua: &Lua, plugin_name: &str) -> mlua::Result<()> {
    with_registry(|registry| {
        *registry = Registry {
            loading: true,
            ..Registry::default()
        }
    })?;
    let clm: Table = lua.globals().raw_get("clm")?;
    clm.raw_set("data_dir", host::config(DATA_DIR_KEY))?;
    adopt_config(lua, plugin_name)
}

/// The `host.config` key that answers with the path of the plugin's file root.
const DATA_DIR_KEY: &str = "toolcell:data_dir";

/// Named registry key of the `clm.config` table (the plugin may replace the field).
const CONFIG_KEY: &str = "toolcell.config";

/// Fills `clm.config` from the user's configuration under `key`, unless an earlier key
/// (the plugin's name, then its tools in registration order) already matched. The
/// table stays the same object, so a reference taken at load time sees the contents.
fn adopt_config(lua: &Lua, key: &str) -> mlua::Result<()> {
    if with_registry(|registry| registry.config_matched)? {
        return Ok(());
    }
    let Some(text) = host::config(key) else {
        return Ok(());
    };
    let Ok(Value::Table(entries)) = json::decode(lua, text.as_bytes()) else {
        return Ok(());
    };
    let config: Table = lua.named_registry_value(CONFIG_KEY)?;
    for pair in entries.pairs::<Value, Value>() {
        let (name, value) = pair?;
        config.raw_set(name, value)?;
    }
    with_registry(|registry| registry.config_matched = true)
}

/// `clm.time()`: the wall-clock time in seconds since the Unix epoch, with millisecond
/// precision. The sandbox has no `os`, so this is how a plugin tells the time (beyond
/// clm-tool(5)); differences of two readings measure how long something took.
fn time(_: &Lua, (): ()) -> mlua::Result<f64> {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(since_epoch.as_millis() as f64 / 1000.0)
}

/// `clm.read_file(path)`: the content (one value), or nil plus an error string.
fn read_file(lua: &Lua, path: Value) -> mlua::Result<MultiValue> {
    let path = path_argument(lua, "clm.read_file", path)?;
    watchdog::charge_host_call(path.len())?;
    match host::read_file(&path) {
        Ok(content) => Ok(MultiValue::from_iter([Value::String(
            lua.create_string(content)?,
        )])),
        Err(message) => failure(lua, message),
    }
}

/// `nil, message`: how the file functions fail.
fn failure(lua: &Lua, message: String) -> mlua::Result<MultiValue> {
    Ok(MultiValue::from_iter([
        Value::Nil,
        Value::String(lua.create_string(message)?),
    ]))
}

/// `clm.write_file(path, content)`: true (one value), or nil plus an error string.
fn write_file(lua: &Lua, (path, content): (Value, Value)) -> mlua::Result<MultiValue> {
    let path = path_argument(lua, "clm.write_file", path)?;
    let Value::String(content) = content else {
        return Err(api_error(
            lua,
            format!(
                "clm.write_file expects the content as a string, got {}",
                type_name(&content)
            ),
        ));
    };
    let content = content.as_bytes();
    watchdog::charge_host_call(path.len() + content.len())?;
    match host::write_file(&path, &content) {
        Ok(()) => Ok(MultiValue::from_iter([Value::Boolean(true)])),
        Err(message) => failure(lua, message),
    }
}

fn path_argument(lua: &Lua, what: &str, path: Value) -> mlua::Result<String> {
    match path {
        Value::String(path) => match path.to_str() {
            Ok(path) => {
                Copies::new(lua).charge(path.len())?;
                Ok(path.to_string())
            }
            Err(_) => Err(api_error(
                lua,
                format!("{what}: the path is not valid UTF-8"),
            )),
        },
        other => Err(api_error(
            lua,
            format!("{what} expects a path string, got {}", type_name(&other)),
        )),
    }
}

/// The names of a tool spec's fields as Lua strings, made once when the state is
/// prepared: looking a field up by a Rust `&str` makes (hashes and interns) the Lua
/// string on every lookup, eight times per registered tool.
struct SpecFields {
    invoke: mlua::LuaString,
    description: mlua::LuaString,
    params_schema: mlua::LuaString,
    title: mlua::LuaString,
    output_schema: mlua::LuaString,
    timeout_ms: mlua::LuaString,
    no_prompt: mlua::LuaString,
    hidden: mlua::LuaString,
    task: mlua::LuaString,
}

impl SpecFields {
    fn new(lua: &Lua) -> mlua::Result<SpecFields> {
        Ok(SpecFields {
            invoke: lua.create_string("invoke")?,
            description: lua.create_string("description")?,
            params_schema: lua.create_string("params_schema")?,
            title: lua.create_string("title")?,
            output_schema: lua.create_string("output_schema")?,
            timeout_ms: lua.create_string("timeout_ms")?,
            no_prompt: lua.create_string("no_prompt")?,
            hidden: lua.create_string("hidden")?,
            task: lua.create_string("task")?,
        })
    }
}

/// `clm.tool_register(name, spec)`, allowed only while the plugin loads.
fn tool_register(lua: &Lua, (name, spec): (Value, Value)) -> mlua::Result<()> {
    let name = tool_name(lua, name)?;
    let Value::Table(spec) = spec else {
        return Err(api_error(
            lua,
            format!(
                "clm.tool_register('{name}'): the spec must be a table, got {}",
                type_name(&spec)
            ),
        ));
    };
    let field_error = |field: &str, expected: &str, got: &Value| {
        api_error(
            lua,
            format!(
                "clm.tool_register('{name}'): {field} must be {expected}, got {}",
                type_name(got)
            ),
        )
    };
    // The app data is borrowed only for the lookup: encoding a schema may set app data.
    let field = |pick: fn(&SpecFields) -> &mlua::LuaString| -> mlua::Result<Value> {
        let fields = lua
            .app_data_ref::<SpecFields>()
            .ok_or_else(|| mlua::Error::runtime("the plugin API is not installed"))?;
        spec.raw_get(pick(&fields))
    };
    let invoke = match field(|fields| &fields.invoke)? {
        Value::Function(invoke) => invoke,
        Value::Nil => {
            return Err(api_error(
                lua,
                format!("clm.tool_register('{name}'): the spec has no invoke function"),
            ));
        }
        other => return Err(field_error("invoke", "a function", &other)),
    };
    let description = match field(|fields| &fields.description)? {
        Value::Nil => String::new(),
        Value::String(text) => Copies::new(lua).text(&text.as_bytes())?,
        other => return Err(field_error("description", "a string", &other)),
    };
    let params_schema = match field(|fields| &fields.params_schema)? {
        Value::Nil => None,
        Value::Table(schema) => Some(
            json::encode(lua, &Value::Table(schema), json::MAX_DECODE_BYTES).map_err(|error| {
                api_error(
                    lua,
                    format!("clm.tool_register('{name}'): params_schema: {error}"),
                )
            })?,
        ),
        other => return Err(field_error("params_schema", "a table", &other)),
    };
    let title = match field(|fields| &fields.title)? {
        Value::Nil => None,
        Value::String(text) => Some(text.to_string_lossy()),
        other => return Err(field_error("title", "a string", &other)),
    };
    let output_schema = match field(|fields| &fields.output_schema)? {
        Value::Nil => None,
        Value::Table(schema) => Some(
            json::encode(lua, &Value::Table(schema), json::MAX_DECODE_BYTES).map_err(|error| {
                api_error(
                    lua,
                    format!("clm.tool_register('{name}'): output_schema: {error}"),
                )
            })?,
        ),
        other => return Err(field_error("output_schema", "a table", &other)),
    };
    let timeout_ms = match field(|fields| &fields.timeout_ms)? {
        Value::Nil => None,
        value => Some(timeout(&value).ok_or_else(|| {
            field_error(
                "timeout_ms",
                "a positive whole number of milliseconds",
                &value,
            )
        })?),
    };
    let flag = |pick: fn(&SpecFields) -> &mlua::LuaString, name: &str| -> mlua::Result<bool> {
        match field(pick)? {
            Value::Nil => Ok(false),
            Value::Boolean(flag) => Ok(flag),
            other => Err(field_error(name, "a boolean", &other)),
        }
    };
    let no_prompt = flag(|fields| &fields.no_prompt, "no_prompt")?;
    let hidden = flag(|fields| &fields.hidden, "hidden")?;
    let task_support = match field(|fields| &fields.task)? {
        Value::Nil => TaskSupport::Optional,
        Value::String(text) => match &*text.as_bytes() {
            b"optional" => TaskSupport::Optional,
            b"required" => TaskSupport::Required,
            b"forbidden" => TaskSupport::Forbidden,
            _ => {
                return Err(api_error(
                    lua,
                    format!(
                        "clm.tool_register('{name}'): task must be \"optional\", \"required\" \
                         or \"forbidden\", got \"{}\"",
                        text.to_string_lossy()
                    ),
                ));
            }
        },
        other => return Err(field_error("task", "a string", &other)),
    };
    with_registry(|registry| {
        if !registry.loading {
            return Err(api_error(
                lua,
                format!("clm.tool_register('{name}'): tools can only be registered at load time"),
            ));
        }
        if registry.specs.len() >= MAX_TOOLS_PER_PLUGIN {
            return Err(api_error(
                lua,
                format!(
                    "clm.tool_register: a plugin may register at most {MAX_TOOLS_PER_PLUGIN} tools"
                ),
            ));
        }
        if registry.by_name.contains_key(&name) {
            return Err(api_error(
                lua,
                format!("clm.tool_register: tool '{name}' is already registered"),
            ));
        }
        // The spec stays in Rust memory for the plugin's life: it counts against its limit.
        let kept = name.len() + description.len() + params_schema.as_ref().map_or(0, String::len);
        copies::keep(lua, kept)?;
        let index = registry.specs.len();
        registry.by_name.insert(name.clone(), index);
        registry.specs.push(ToolSpec {
            name: name.clone(),
            description,
            params_schema,
            timeout_ms,
            no_prompt,
            hidden,
            title,
            output_schema,
            task_support,
        });
        registry.invokes.push(invoke);
        Ok(())
    })??;
    adopt_config(lua, &name)
}

fn tool_name(lua: &Lua, name: Value) -> mlua::Result<String> {
    let Value::String(name) = name else {
        return Err(api_error(
            lua,
            format!(
                "clm.tool_register expects a tool name string, got {}",
                type_name(&name)
            ),
        ));
    };
    let name = name.to_string_lossy();
    if !is_valid_tool_name(&name) {
        return Err(api_error(
            lua,
            format!(
                "clm.tool_register: invalid tool name '{name}' (use 1 to {MAX_TOOL_NAME} letters, digits, '_' or '-')"
            ),
        ));
    }
    Ok(name)
}

fn timeout(value: &Value) -> Option<u32> {
    let ms = match value {
        Value::Integer(ms) => *ms,
        Value::Number(ms) if ms.fract() == 0.0 && ms.is_finite() => *ms as i64,
        _ => return None,
    };
    u32::try_from(ms).ok().filter(|ms| *ms > 0)
}
