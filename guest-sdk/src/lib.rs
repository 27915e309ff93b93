//! Write toolcell plugins in Rust against the `toolcell:plugin` WIT world.
//!
//! This first layer is the world's raw bindings: implement [`bindings::Guest`] (the
//! `load`/`start`/`resume`/`cancel` steps of `wit/plugin.wit`), call the host through
//! [`bindings::host`], and export the implementation with [`export_plugin!`]. A typed,
//! `async` layer on top of the step protocol is the next step for this crate.
//!
//! ```text
//! struct Echo;
//! impl toolcell_guest::bindings::Guest for Echo { /* ... */ }
//! toolcell_guest::export_plugin!(Echo with_types_in toolcell_guest::bindings);
//! ```

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
