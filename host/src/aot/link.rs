//! The Lua guest in linkable form, as tools/guest-link kept it when toolcell was built:
//! one relocatable object of everything the guest component is linked from, and the
//! flags of its final link. Linking a plugin's compiled Lua with it makes that plugin's
//! own copy of the guest, which `componentize` turns into a component of the same WIT
//! world (the world's types travel in the object's `component-type` sections).

use std::path::Path;

use super::AotError;
use super::toolchain::{Toolchain, run};

/// The guest as one relocatable wasm object.
static GUEST_OBJECT: &[u8] = include_bytes!(env!("TOOLCELL_LUA_GUEST_LINK_OBJECT"));

/// The flags of the guest's final link, one a line.
static LINK_ARGS: &str = include_str!(env!("TOOLCELL_LUA_GUEST_LINK_ARGS"));

/// Links `object` (a compiled unit) into the guest, in `dir`; returns the core module.
pub(super) fn link(dir: &Path, toolchain: &Toolchain, object: &Path) -> Result<Vec<u8>, AotError> {
    let guest = dir.join("guest.o");
    let core = dir.join("guest.wasm");
    std::fs::write(&guest, GUEST_OBJECT)
        .map_err(|error| AotError::Build(format!("cannot write {}: {error}", guest.display())))?;
    let mut command = toolchain.wasm_ld();
    command
        .args(LINK_ARGS.lines().filter(|line| !line.is_empty()))
        .arg(&guest)
        .arg(object)
        .arg("-o")
        .arg(&core);
    run(command, "linking the compiled Lua into the guest")?;
    std::fs::read(&core)
        .map_err(|error| AotError::Build(format!("cannot read {}: {error}", core.display())))
}

/// The component of the linked core module `core`.
pub(super) fn componentize(core: &[u8]) -> Result<Vec<u8>, AotError> {
    wit_component::ComponentEncoder::default()
        .module(core)
        .and_then(|encoder| encoder.validate(true).encode())
        .map_err(|error| AotError::Build(format!("making the component: {error:#}")))
}
