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

pub mod v0_1;
pub mod v0_2;
