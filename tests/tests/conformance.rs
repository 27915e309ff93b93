//! The conformance suite of clm-tool(5) through real sandboxes (`tests/conformance/`),
//! run three times: against plain `.lua` plugin files, against the same plugins packed
//! into `.wasm` artifacts as `toolcell pack` makes them, and packed with their
//! functions compiled ahead of time (`toolcell pack --aot`). A packed plugin, compiled
//! or not, must behave exactly like its script.

// Compiling each conformance file once per plugin form is the point.
#![allow(clippy::duplicate_mod)]

#[path = "../conformance/compiled.rs"]
mod compiled;
#[path = "../conformance/lua.rs"]
mod lua;
#[path = "../conformance/packed.rs"]
mod packed;
