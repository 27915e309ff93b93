//! The baseline: clm's design, a native mlua state per plugin inside the host process.
//!
//! Same Lua version (mlua's vendored 5.4, compiled natively), same sandbox (the same
//! libraries and removed globals, the same 8 MiB-style memory limit, a count hook every
//! 10000 instructions checking a deadline), the same json module (toolcell's, compiled
//! natively), and a minimal clm.tool_register/ctx so the very same plugin script runs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, UserData, Value, VmState};

/// A plugin loaded the clm way.
pub struct NativePlugin {
    lua: Lua,
    tools: Rc<RefCell<HashMap<String, Function>>>,
    deadline: Rc<RefCell<Instant>>,
}

struct Ctx {
    result: Rc<RefCell<Option<String>>>,
}

impl UserData for Ctx {
    fn add_methods<M: mlua::UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("complete", |_, ctx, text: String| {
            *ctx.result.borrow_mut() = Some(text);
            Ok(())
        });
        methods.add_method("fail", |_, _, text: String| {
            Err::<(), _>(mlua::Error::runtime(text))
        });
    }
}

impl NativePlugin {
    /// Creates the sandboxed state and runs the plugin's load-time code.
    pub fn load(script: &str, memory: usize) -> mlua::Result<NativePlugin> {
        let libs = StdLib::STRING | StdLib::TABLE | StdLib::MATH | StdLib::UTF8;
        let lua = Lua::new_with(libs, LuaOptions::new())?;
        let globals = lua.globals();
        for name in ["dofile", "loadfile", "load", "require", "collectgarbage"] {
            globals.raw_set(name, Value::Nil)?;
        }
        toolcell_lua_guest::json::install(&lua, move |_| memory)?;
        let tools = Rc::new(RefCell::new(HashMap::new()));
        let registry = tools.clone();
        let clm = lua.create_table()?;
        clm.raw_set(
            "tool_register",
            lua.create_function(move |_, (name, spec): (String, Table)| {
                registry
                    .borrow_mut()
                    .insert(name, spec.get::<Function>("invoke")?);
                Ok(())
            })?,
        )?;
        globals.raw_set("clm", clm)?;
        // The same time toolcell gives a call: the compute setup (1 MB documents) is
        // load-time work, and under callgrind it takes seconds.
        let deadline = Rc::new(RefCell::new(Instant::now() + Duration::from_secs(30)));
        let watched = deadline.clone();
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(10_000),
            move |_, _| {
                if Instant::now() > *watched.borrow() {
                    return Err(mlua::Error::runtime("deadline exceeded"));
                }
                Ok(VmState::Continue)
            },
        )?;
        lua.set_memory_limit(memory)?;
        lua.load(script).set_name("@plugin.lua").exec()?;
        Ok(NativePlugin {
            lua,
            tools,
            deadline,
        })
    }

    /// One tool call the clm way: decode the JSON arguments, run `invoke` in a new
    /// coroutine with a ctx, and return the completed string.
    pub fn call(&self, tool: &str, args_json: &str) -> mlua::Result<String> {
        *self.deadline.borrow_mut() = Instant::now() + Duration::from_secs(30);
        let invoke = self
            .tools
            .borrow()
            .get(tool)
            .cloned()
            .ok_or_else(|| mlua::Error::runtime(format!("no tool {tool}")))?;
        let args = toolcell_lua_guest::json::decode(&self.lua, args_json.as_bytes())
            .map_err(mlua::Error::runtime)?;
        let result = Rc::new(RefCell::new(None));
        let ctx = self.lua.create_userdata(Ctx {
            result: result.clone(),
        })?;
        let thread = self.lua.create_thread(invoke)?;
        thread.resume::<()>((args, ctx))?;
        result
            .take()
            .ok_or_else(|| mlua::Error::runtime("no result"))
    }
}
