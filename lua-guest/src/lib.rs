//! The Lua guest: a Lua 5.4 interpreter (mlua) built as a `toolcell:plugin` component.
//!
//! It runs one clm plugin (clm-tool(5)) per component instance, unchanged: the plugin's
//! script arrives in `load`, registers its tools with `clm.tool_register`, and every
//! invocation then runs as a coroutine family driven step by step by the host (see
//! `wit/plugin.wit`). Nothing here performs I/O on its own; files, HTTP, timers and the
//! clock all go through the host's imports.

// Natively (for the json module's unit tests) nothing is exported, so the runtime is
// unreachable; it is exercised through real sandboxes by the host's integration tests.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

#[cfg(target_arch = "wasm32")]
mod allocator;
mod api;
mod copies;
mod ctx;
mod environment;
mod errors;
pub mod json;
#[cfg(target_arch = "wasm32")]
mod math;
mod protocol;
mod scheduler;
mod small_blocks;
mod tasks;
mod waiting;
mod watchdog;

#[allow(clippy::all, missing_docs)]
mod bindings {
    wit_bindgen::generate!({ world: "lua-runtime", path: "../wit" });
}

#[cfg(target_arch = "wasm32")]
use bindings::exports::toolcell::plugin::guest::{Guest, LoadRequest};
#[cfg(target_arch = "wasm32")]
use bindings::toolcell::plugin::types::{CallId, CallState, LoadError, OpId, OpOutcome, ToolSpec};

/// The component's export: forwards each step to the plugin's one runtime.
#[cfg(target_arch = "wasm32")]
struct LuaGuest;

#[cfg(target_arch = "wasm32")]
impl bindings::Guest for LuaGuest {
    fn prepare() -> Result<(), String> {
        protocol::prepare()
    }

    fn lua_memory() -> u64 {
        protocol::lua_memory()
    }
}

#[cfg(target_arch = "wasm32")]
impl Guest for LuaGuest {
    fn load(request: LoadRequest) -> Result<Vec<ToolSpec>, LoadError> {
        protocol::load(request)
    }

    fn start(call: CallId, tool: String, args_json: String, deadline: u64) -> CallState {
        protocol::start(call, &tool, args_json, deadline)
    }

    fn resume(call: CallId, op: OpId, outcome: OpOutcome, deadline: u64) -> CallState {
        protocol::resume(call, op, outcome, deadline)
    }

    fn cancel(call: CallId, reason: String) {
        protocol::cancel(call, &reason)
    }
}

// Exported only in the component: native builds (the json unit tests) cannot link the
// component model's export names.
#[cfg(target_arch = "wasm32")]
bindings::export!(LuaGuest with_types_in bindings);
