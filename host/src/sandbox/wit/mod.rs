//! Rust bindings of the `toolcell:plugin` WIT worlds the host links: the current one
//! (`wit/plugin.wit`) and the last of the 0.1 series (`wit/0.1/plugin.wit`), which
//! plugins built before 0.2 target. A plugin of either world runs the same way; the
//! few types that differ are converted here, at the edge.
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

pub mod v0_1;

pub use self::exports::toolcell::plugin::guest::LoadRequest;
pub use self::toolcell::plugin::types::{
    CallState, HttpRequest, HttpResponse, LoadError, OpOutcome, ToolSpec,
};
