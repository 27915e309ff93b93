//! The suite with the plugins packed with their functions compiled ahead of time
//! (`toolcell pack --aot`).

pub use toolcell_tests::compiled::Fixture;

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
