//! Rust bindings of the `toolcell:plugin` WIT worlds the host links: the current one
//! (`wit/plugin.wit`) and the last of each older series (`wit/0.2/plugin.wit`,
//! `wit/0.1/plugin.wit`), which plugins built before 0.3 target. A plugin of any of
//! them runs the same way; the few types that differ are converted here, at the edge.
//!
//! Exports are async so a long step can yield to tokio at every fuel yield; the file
//! imports are async so disk I/O runs off the executor's threads.

wasmtime::component::bindgen!({
    world: "plugin",
    path: "../wit",
    imports: {
        "toolcell:plugin/host.read-file": async,
        "toolcell:plugin/host.write-file": async,
        default: tracing,
    },
    exports: { default: async },
});

pub use self::exports::toolcell::plugin::guest::LoadRequest;
pub use self::toolcell::plugin::types::{
    Answer, CallState, ContentPart, HttpRequest, HttpResponse, LoadError, OpOutcome, Question,
    ResourceContents, ToolSpec,
};

/// What an older guest, which cannot ask, gets if an answer ever reached it: the
/// outcome of an operation it cannot have started.
const NOT_ASKED: &str = "an answer to a question this plugin cannot ask";

/// The conversions every older world needs the same way: the load request and its
/// result, an operation's outcome, an HTTP request. The module that uses it names its
/// world's types `old` and `old_guest`, the current world's `new`, and defines
/// `tool_spec` (the one conversion that differs).
macro_rules! older_world_conversions {
    () => {
        /// A load request for a guest of this world.
        pub fn load_request(request: &super::LoadRequest) -> old_guest::LoadRequest {
            old_guest::LoadRequest {
                name: request.name.clone(),
                script: request.script.clone(),
                deadline: request.deadline,
                memory_limit: request.memory_limit,
                debug_log: request.debug_log,
            }
        }

        /// A load result of this world in the current world's terms.
        pub fn load_result(
            result: Result<Vec<old::ToolSpec>, old::LoadError>,
        ) -> Result<Vec<super::ToolSpec>, super::LoadError> {
            match result {
                Ok(specs) => Ok(specs.into_iter().map(tool_spec).collect()),
                Err(old::LoadError::TimedOut) => Err(new::LoadError::TimedOut),
                Err(old::LoadError::Failed(message)) => Err(new::LoadError::Failed(message)),
            }
        }

        /// An operation's outcome for a guest of this world, which cannot ask.
        pub fn op_outcome(outcome: super::OpOutcome) -> old::OpOutcome {
            match outcome {
                new::OpOutcome::TimerFired => old::OpOutcome::TimerFired,
                new::OpOutcome::HttpResponse(response) => {
                    old::OpOutcome::HttpResponse(old::HttpResponse {
                        status: response.status,
                        headers: response.headers,
                        body: response.body,
                    })
                }
                new::OpOutcome::HttpError(message) => old::OpOutcome::HttpError(message),
                new::OpOutcome::Answered(_) => old::OpOutcome::HttpError(super::NOT_ASKED.into()),
            }
        }

        /// A guest's HTTP request in the current world's terms.
        pub fn http_request(request: old::HttpRequest) -> super::HttpRequest {
            new::HttpRequest {
                method: request.method,
                url: request.url,
                headers: request.headers,
                body: request.body,
            }
        }
    };
}

/// `toolcell:plugin@0.2.0`, and what its values become in the current world.
pub mod v0_2 {
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
}

/// `toolcell:plugin@0.1.1`, and what its values become in the current world.
pub mod v0_1 {
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
}
