//! The suite with the plugins as `.lua` files.

pub use toolcell_tests::Fixture;

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
