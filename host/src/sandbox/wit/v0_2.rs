//! `toolcell:plugin@0.2.0`, the last of the 0.2 series, and what its values become in
//! the current world.

wasmtime::component::bindgen!({
    world: "plugin",
    path: "../wit/0.2",
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

/// A 0.2 call-state in the current world's terms.
pub fn call_state(state: old::CallState) -> super::CallState {
    match state {
        old::CallState::Pending => new::CallState::Pending,
        old::CallState::Completed(output) => new::CallState::Completed(output),
        old::CallState::Failed(message) => new::CallState::Failed(message),
        old::CallState::TimedOut => new::CallState::TimedOut,
        old::CallState::BrokeRule(message) => new::CallState::BrokeRule(message),
        old::CallState::OutOfMemory => new::CallState::OutOfMemory,
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
        title: spec.title,
        output_schema: spec.output_schema,
        task_support: new::TaskSupport::Optional,
    }
}
