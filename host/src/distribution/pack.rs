//! `toolcell pack`: one self-contained `.wasm` per plugin.
//!
//! A Lua plugin becomes the Lua guest component embedded in this toolcell with two
//! custom sections appended: the manifest and the script. The loader reads both and
//! passes the script to the guest in `load`, exactly as for a `.lua` file, so a packed
//! plugin behaves like its script; and since the guest part is byte for byte the
//! embedded one, this toolcell runs it on the guest it has already compiled. Any
//! toolcell whose WIT version is compatible can load it, using the guest inside the file.
//!
//! With `--aot` (the `aot` feature), the guest is instead this toolcell's guest linked
//! with the script compiled ahead of time (`crate::aot`), prepared here as the host
//! prepares the embedded guest (`snapshot.rs`), and a `toolcell-aot` section says what
//! compiled it. Any toolcell loads it as a component of its own; the script still
//! travels with it and is what the guest loads (its functions then run compiled).
//!
//! A component (Rust, JavaScript, Python, ...) gets its manifest section replaced.
//! Signatures are dropped: they would no longer match.

use std::path::Path;

#[cfg(feature = "aot")]
use crate::artifact::AOT_SECTION;
use crate::artifact::manifest::{self, MANIFEST_SECTION, Manifest, ManifestFile};
use crate::artifact::wit_version;
use crate::artifact::{Artifact, SCRIPT_SECTION, SIGNATURE_SECTION};
use crate::distribution::inspect;
use crate::engine::Engine;
use crate::engine::guest::LUA_GUEST_WASM;
use crate::runtime::diagnostic::Diagnostic;

/// Why a plugin could not be packed; the text says what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PackError(pub String);

/// What `pack` produced.
#[derive(Debug)]
pub struct Packed {
    /// The artifact's bytes.
    pub bytes: Vec<u8>,
    /// The manifest it carries.
    pub manifest: Manifest,
    /// How many signatures of the input were dropped because they no longer match.
    pub dropped_signatures: usize,
}

/// The Lua guest carrying `script` and `manifest`.
pub fn pack_lua(script: &[u8], manifest: &Manifest) -> Result<Vec<u8>, PackError> {
    let guest = Artifact::parse(LUA_GUEST_WASM)
        .map_err(|error| PackError(format!("the embedded Lua guest is unreadable: {error}")))?;
    let manifest = manifest.to_toml();
    Ok(guest.rewrite(
        &[MANIFEST_SECTION, SCRIPT_SECTION, SIGNATURE_SECTION],
        &[
            (MANIFEST_SECTION, manifest.as_bytes()),
            (SCRIPT_SECTION, script),
        ],
    ))
}

/// The Lua guest linked with `script` compiled ahead of time, prepared, carrying
/// `script` and `manifest`; compiled with `toolchain`.
#[cfg(feature = "aot")]
pub async fn pack_lua_compiled(
    script: &[u8],
    manifest: &Manifest,
    toolchain: &crate::aot::Toolchain,
) -> Result<Vec<u8>, PackError> {
    let chunk_name = format!("@{}.lua", manifest.id);
    let (source, toolchain) = (script.to_vec(), toolchain.clone());
    let compiled =
        tokio::task::spawn_blocking(move || crate::aot::compile(&source, &chunk_name, &toolchain))
            .await
            .map_err(|error| PackError(format!("compiling was interrupted: {error}")))?
            .map_err(|error| PackError(error.to_string()))?;
    let run_once = crate::engine::run_once_engine()
        .map_err(|error| PackError(format!("cannot prepare the compiled guest: {error:#}")))?;
    let prepared = crate::engine::snapshot::prepared(&run_once, &compiled.component)
        .await
        .map_err(|error| PackError(format!("cannot prepare the compiled guest: {error:#}")))?;
    let guest = Artifact::parse(&prepared)
        .map_err(|error| PackError(format!("the compiled guest is unreadable: {error}")))?;
    let compiled_by = toml::to_string(&crate::artifact::CompiledBy {
        toolcell: env!("CARGO_PKG_VERSION").to_string(),
        functions: compiled.functions as u64,
    })
    .map_err(|error| PackError(format!("cannot write the {AOT_SECTION} section: {error}")))?;
    let manifest = manifest.to_toml();
    Ok(guest.rewrite(
        &[
            MANIFEST_SECTION,
            SCRIPT_SECTION,
            SIGNATURE_SECTION,
            AOT_SECTION,
        ],
        &[
            (MANIFEST_SECTION, manifest.as_bytes()),
            (SCRIPT_SECTION, script),
            (AOT_SECTION, compiled_by.as_bytes()),
        ],
    ))
}

/// `component` with `manifest` as its manifest, and without signatures.
pub fn with_manifest(component: &[u8], manifest: &Manifest) -> Result<Packed, PackError> {
    let artifact = Artifact::parse(component).map_err(|error| PackError(error.to_string()))?;
    let version = artifact
        .wit_version()
        .map_err(|error| PackError(error.to_string()))?;
    wit_version::check(&version)
        .map_err(|error| PackError(format!("the component cannot be loaded: {error}")))?;
    let text = manifest.to_toml();
    Ok(Packed {
        bytes: artifact.rewrite(
            &[MANIFEST_SECTION, SIGNATURE_SECTION],
            &[(MANIFEST_SECTION, text.as_bytes())],
        ),
        manifest: manifest.clone(),
        dropped_signatures: artifact.signatures().len(),
    })
}

/// Packs `input` (a `.lua` script or a `.wasm` component). The manifest comes from
/// `manifest_file`; else, for a script, from its sidecar `NAME.lua.toml` or clm's
/// defaults, as loading the script takes it (`manifest::lua_plugin_manifest`); a
/// component without `manifest_file` keeps the manifest it has.
pub fn pack_file(input: &Path, manifest_file: Option<&Path>) -> Result<Packed, PackError> {
    if is_lua(input) {
        let (script, manifest) = lua_input(input, manifest_file)?;
        return Ok(Packed {
            bytes: pack_lua(&script, &manifest)?,
            manifest,
            dropped_signatures: 0,
        });
    }
    let bytes = read(input)?;
    let manifest = match manifest_file {
        Some(path) => {
            let text = read(path)?;
            let text = std::str::from_utf8(&text)
                .map_err(|_| PackError(format!("{}: not UTF-8 text", path.display())))?;
            Some(
                Manifest::parse(text)
                    .map_err(|error| PackError(format!("{}: {error}", path.display())))?,
            )
        }
        None => None,
    };
    match manifest {
        Some(manifest) => with_manifest(&bytes, &manifest),
        None => {
            let artifact = Artifact::parse(&bytes).map_err(|error| PackError(error.to_string()))?;
            let text = artifact
                .manifest()
                .map_err(|error| PackError(error.to_string()))?
                .ok_or_else(|| {
                    PackError(format!(
                        "{} carries no manifest; give one with --manifest",
                        input.display()
                    ))
                })?;
            let manifest = Manifest::parse_bytes(text)
                .map_err(|error| PackError(format!("its manifest: {error}")))?;
            with_manifest(&bytes, &manifest)
        }
    }
}

/// Packs the Lua plugin `input` as [`pack_file`] does, compiled ahead of time with
/// `toolchain` ([`pack_lua_compiled`]).
#[cfg(feature = "aot")]
pub async fn pack_file_compiled(
    input: &Path,
    manifest_file: Option<&Path>,
    toolchain: &crate::aot::Toolchain,
) -> Result<Packed, PackError> {
    if !is_lua(input) {
        return Err(PackError(format!(
            "{} is a component; only a Lua plugin (.lua) is compiled ahead of time",
            input.display()
        )));
    }
    let (script, manifest) = lua_input(input, manifest_file)?;
    Ok(Packed {
        bytes: pack_lua_compiled(&script, &manifest, toolchain)
            .await
            .map_err(|PackError(why)| {
                PackError(format!("cannot compile {}: {why}", input.display()))
            })?,
        manifest,
        dropped_signatures: 0,
    })
}

fn is_lua(input: &Path) -> bool {
    input
        .extension()
        .is_some_and(|extension| extension == "lua")
}

fn read(path: &Path) -> Result<Vec<u8>, PackError> {
    std::fs::read(path)
        .map_err(|error| PackError(format!("cannot read {}: {error}", path.display())))
}

/// The script `input` and its manifest: `manifest_file`, else its sidecar, else clm's
/// defaults.
fn lua_input(input: &Path, manifest_file: Option<&Path>) -> Result<(Vec<u8>, Manifest), PackError> {
    let script = read(input)?;
    let sidecar = match manifest_file {
        Some(path) => Some(ManifestFile {
            path: path.to_path_buf(),
            bytes: read(path)?,
        }),
        None => manifest::read_sidecar(input).map_err(|error| PackError(error.to_string()))?,
    };
    let manifest = manifest::lua_plugin_manifest(input, sidecar.as_ref())
        .map_err(|error| PackError(error.to_string()))?;
    Ok((script, manifest))
}

/// Loads the packed plugin `bytes` once, as `toolcell check` would load it from a file
/// named `file_name`, and returns what loading reported: the script compiled and ran its
/// load-time code, and every tool's name and schema were checked. As for `inspect`, the
/// load gets no files to touch.
pub async fn check(
    bytes: &[u8],
    file_name: &str,
    engine: &Engine,
) -> Result<Vec<Diagnostic>, PackError> {
    let dir = tempfile::tempdir()
        .map_err(|error| PackError(format!("cannot make a directory to check in: {error}")))?;
    let path = dir.path().join(file_name);
    std::fs::write(&path, bytes)
        .map_err(|error| PackError(format!("cannot write {}: {error}", path.display())))?;
    let (_, diagnostics) = inspect::load_without_files(&path, engine)
        .await
        .map_err(|error| PackError(error.to_string()))?;
    Ok(diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cache::sha256_hex;
    use crate::engine::guest::LUA_GUEST_SHA256;

    #[test]
    fn a_packed_script_is_the_embedded_guest_plus_two_sections() {
        let manifest = Manifest::clm_default("hello");
        let bytes = pack_lua(b"return 1", &manifest).expect("packs");
        let artifact = Artifact::parse(&bytes).expect("parses");
        assert_eq!(artifact.script(), Ok(Some(&b"return 1"[..])));
        let carried = Manifest::parse_bytes(
            artifact
                .manifest()
                .expect("one manifest")
                .expect("a manifest"),
        );
        assert_eq!(carried, Ok(manifest));
        assert_eq!(sha256_hex(&artifact.code()), LUA_GUEST_SHA256);
        assert_eq!(
            artifact.wit_version().map(|v| v.to_string()),
            Ok(wit_version::WIT_VERSION.to_string())
        );
    }

    #[test]
    #[cfg(feature = "signing")]
    fn re_packing_replaces_the_manifest_and_drops_signatures() {
        let first = pack_lua(b"return 1", &Manifest::clm_default("one")).expect("packs");
        let key = crate::artifact::signature::SecretKey::generate();
        let signed =
            crate::artifact::signature::sign(&Artifact::parse(&first).expect("parses"), &key);
        let packed = with_manifest(&signed, &Manifest::clm_default("two")).expect("packs");
        assert_eq!(packed.dropped_signatures, 1);
        let artifact = Artifact::parse(&packed.bytes).expect("parses");
        assert!(artifact.signatures().is_empty());
        let manifest = artifact.manifest().expect("one").expect("some");
        assert_eq!(
            Manifest::parse_bytes(manifest).map(|m| m.id),
            Ok("two".to_string())
        );
        assert_eq!(artifact.script(), Ok(Some(&b"return 1"[..])));
    }
}
