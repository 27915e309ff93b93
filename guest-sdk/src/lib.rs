//! Placeholder crate root; the Rust SDK arrives with the "plugins in any wasm language" issue.
