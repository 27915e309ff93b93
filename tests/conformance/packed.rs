//! The suite with the plugins packed into `.wasm` artifacts.

pub use toolcell_tests::packed::Fixture;

#[path = "api.rs"]
mod api;
#[path = "authoring.rs"]
mod authoring;
#[path = "http.rs"]
mod http;
#[path = "returns.rs"]
mod returns;
#[path = "sandbox.rs"]
mod sandbox;
#[path = "tasks.rs"]
mod tasks;
