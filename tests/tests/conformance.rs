//! The conformance suite of clm-tool(5) through real sandboxes (`tests/conformance/`),
//! run twice: against plain `.lua` plugin files, and against the same plugins packed
//! into `.wasm` artifacts as `toolcell pack` makes them. A packed plugin must behave
//! exactly like its script.

// Compiling each conformance file twice, once per plugin form, is the point.
#![allow(clippy::duplicate_mod)]

#[path = "../conformance/lua.rs"]
mod lua;
#[path = "../conformance/packed.rs"]
mod packed;
