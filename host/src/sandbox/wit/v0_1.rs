//! `toolcell:plugin@0.1.1`, the last of the 0.1 series, and what its values become in
//! the current world.

wasmtime::component::bindgen!({
    world: "plugin",
    path: "../wit/0.1",
    imports: {
        "toolcell:plugin/host.read-file": async,
        "toolcell:plugin/host.write-file": async,
        default: tracing,
    },
    exports: { default: async },
});

use self::exports::toolcell::plugin::guest as old_guest;
use self::toolcell::plugin::types as old;
use super::toolcell::plugin::types as new;

older_world_conversions!();

/// How a 0.1 guest says that a call ran out of memory: the 0.1 world has no case
/// for it, so the Lua guest (and any other) could only say it in words.
const OUT_OF_MEMORY: &str = "out of memory";

/// A 0.1 call-state in the current world's terms, with the guest's own text of an
/// out-of-memory failure.
pub fn call_state(state: old::CallState) -> (super::CallState, Option<String>) {
    match state {
        old::CallState::Pending => (super::CallState::Pending, None),
        old::CallState::Completed(output) => (super::CallState::Completed(output), None),
        old::CallState::Failed(message) if message.starts_with(OUT_OF_MEMORY) => {
            (super::CallState::OutOfMemory, Some(message))
        }
        old::CallState::Failed(message) => (super::CallState::Failed(message), None),
        old::CallState::TimedOut => (super::CallState::TimedOut, None),
    }
}

fn tool_spec(spec: old::ToolSpec) -> super::ToolSpec {
    new::ToolSpec {
        name: spec.name,
        description: spec.description,
        params_schema: spec.params_schema,
        timeout_ms: spec.timeout_ms,
        no_prompt: spec.no_prompt,
        hidden: spec.hidden,
        title: None,
        output_schema: None,
        task_support: new::TaskSupport::Optional,
    }
}
