//! Write toolcell plugins in Rust: typed tools with `async` handlers.
//!
//! ```no_run
//! use toolcell_guest::{Ctx, Error, Plugin, Tool};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! fn plugin() -> Plugin {
//!     Plugin::new().tool(Tool::new(
//!         "greet",
//!         "Greets someone by name",
//!         |args: Greet, ctx: Ctx| async move {
//!             ctx.sleep(std::time::Duration::from_millis(10)).await?;
//!             Ok::<_, Error>(format!("Hello, {}!", args.name))
//!         },
//!     ))
//! }
//!
//! toolcell_guest::export!(plugin);
//! toolcell_guest::manifest!(r#"
//!     id = "greeter"
//!     version = "0.1.0"
//! "#);
//! ```
//!
//! Build with `cargo build --target wasm32-wasip2 --release`; the `.wasm` it writes is
//! a toolcell plugin. Handlers are ordinary `async` blocks: they can make HTTP requests
//! ([`Ctx::http_get`], [`Ctx::http`]), sleep ([`Ctx::sleep`]), spawn child tasks and
//! join them ([`Ctx::spawn`], [`JoinHandle`]), read and write files inside the granted
//! root, and read their configuration. Underneath, toolcell's step protocol drives a
//! small single-threaded executor ([`protocol`]): every host operation is a future that
//! is woken when the host delivers its outcome, so a plugin never sees an operation id.
//!
//! [`bindings`] stays available for plugins that want to speak the protocol directly.

mod ctx;
mod error;
mod executor;
pub mod protocol;
mod tool;

pub use bindings::{
    ContentPart, EmbeddedResource, Media, ResourceContents, ResourceLink, TaskSupport,
};
pub use ctx::{Ctx, JoinHandle, Request, Response, UserAnswer};
pub use error::Error;
pub use tool::{Plugin, Tool};

/// Re-exported so plugins derive `JsonSchema` with the version this crate uses.
pub use schemars;

/// The generated bindings of the `plugin` world.
#[allow(missing_docs, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "plugin",
        path: "../wit",
        pub_export_macro: true,
        export_macro_name: "export_plugin",
        default_bindings_module: "toolcell_guest::bindings",
    });

    pub use self::exports::toolcell::plugin::guest::{Guest, LoadRequest};
    pub use self::toolcell::plugin::host;
    pub use self::toolcell::plugin::types::*;
}

/// Exports a plugin: `export!(plugin)` where `plugin` is a `fn() -> Plugin` called
/// once, when the host loads the component.
#[macro_export]
macro_rules! export {
    ($plugin:path) => {
        struct ToolcellPluginExport;

        impl $crate::bindings::Guest for ToolcellPluginExport {
            fn load(
                request: $crate::bindings::LoadRequest,
            ) -> ::core::result::Result<
                ::std::vec::Vec<$crate::bindings::ToolSpec>,
                $crate::bindings::LoadError,
            > {
                $crate::protocol::load(request, $plugin)
            }

            fn start(
                call: u64,
                tool: ::std::string::String,
                args_json: ::std::string::String,
                deadline: u64,
            ) -> $crate::bindings::CallState {
                $crate::protocol::start(call, tool, args_json, deadline)
            }

            fn resume(
                call: u64,
                op: u64,
                outcome: $crate::bindings::OpOutcome,
                deadline: u64,
            ) -> $crate::bindings::CallState {
                $crate::protocol::resume(call, op, outcome, deadline)
            }

            fn cancel(call: u64, reason: ::std::string::String) {
                $crate::protocol::cancel(call, &reason)
            }
        }

        $crate::bindings::export_plugin!(ToolcellPluginExport with_types_in $crate::bindings);
    };
}

/// Embeds the plugin's manifest (TOML text, see toolcell's docs/configuration.md) in the
/// component, where toolcell finds it: `manifest!(include_str!("../toolcell.toml"))`.
#[macro_export]
macro_rules! manifest {
    ($text:expr) => {
        #[cfg(target_arch = "wasm32")]
        #[unsafe(link_section = "toolcell-manifest")]
        #[used]
        static TOOLCELL_MANIFEST: [u8; $text.len()] = $crate::protocol::manifest_bytes($text);
    };
}
