//! Rust bindings of the `toolcell:plugin` WIT world (`wit/plugin.wit`).
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
    CallState, HttpRequest, HttpResponse, LoadError, OpOutcome, ToolSpec,
};
