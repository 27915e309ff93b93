//! Lua plugins compiled ahead of time (`toolcell pack --aot`).
//!
//! The translator (toolcell-aot) turns a plugin's script into C: one C function per
//! Lua function, made of the patched interpreter's own opcode bodies. Here that C is
//! compiled for wasm32 with zig's clang (`toolchain`), linked into a copy of the Lua
//! guest that this toolcell embeds in linkable form (`link`), and the result made a
//! component again, with the same WIT world as the embedded guest. `pack` then
//! prepares it (the snapshot of `snapshot.rs`) and adds the manifest, the script and
//! a `toolcell-aot` section saying what compiled it.
//!
//! At load, the guest compiles the script as for any Lua plugin and attaches the
//! compiled functions to it, refusing them if they were made from other bytecode
//! (third_party/lua-src/lua-5.4.9/laot.h).

mod link;
mod toolchain;

pub use toolchain::Toolchain;

/// Why a plugin could not be compiled ahead of time.
#[derive(Debug, thiserror::Error)]
pub enum AotError {
    /// No usable C compiler for wasm32: what was looked for, and how to get it.
    #[error("{0}")]
    Toolchain(String),
    /// Lua refused the script.
    #[error("{0}")]
    Script(String),
    /// Compiling, linking or making the component failed; the text says which step.
    #[error("{0}")]
    Build(String),
}

/// A script compiled ahead of time: the Lua guest with the script's functions linked in.
#[derive(Debug)]
pub struct Compiled {
    /// The component (not yet prepared).
    pub component: Vec<u8>,
    /// How many Lua functions were compiled.
    pub functions: usize,
}

/// Compiles `script` (a plugin loaded as `chunk_name`, `@ID.lua`) and links it into a
/// copy of the Lua guest, with `toolchain`.
pub fn compile(
    script: &[u8],
    chunk_name: &str,
    toolchain: &Toolchain,
) -> Result<Compiled, AotError> {
    let unit = toolcell_aot::translate_script(script, chunk_name).map_err(|error| match error {
        toolcell_aot::TranslateError::Script(message) => AotError::Script(message),
        other => AotError::Build(other.to_string()),
    })?;
    let work = tempfile::tempdir()
        .map_err(|error| AotError::Build(format!("cannot make a build directory: {error}")))?;
    let object = toolchain.compile(work.path(), &unit.c)?;
    let core = link::link(work.path(), toolchain, &object)?;
    let component = link::componentize(&core)?;
    Ok(Compiled {
        component,
        functions: unit.functions,
    })
}
