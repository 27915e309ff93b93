//! From a plugin file to what the sandbox runs: the checks every file passes before
//! any of its code is compiled, in this order.
//!
//! 1. its digest against the user's pins (`integrity`);
//! 2. for a `.wasm`: that it is a component (`artifact`), its signatures against the
//!    trust policy (`signature`), the WIT version it was built for (`wit_version`), and
//!    its manifest (`manifest`);
//! 3. for a `.lua`: its sidecar manifest if it has one, else clm's defaults; a `.lua`
//!    cannot be signed, so it is unsigned to the trust policy;
//! 4. that the id it claims is its file name's (`manifest::lua_id`,
//!    `manifest::file_name_of`): a plugin cannot take another file's id, and with it
//!    that plugin's settings, grants and data directory.
//!
//! A refusal carries the diagnostic kind that names the failed check.

use std::path::Path;

use crate::artifact::Artifact;
use crate::artifact::integrity::Pins;
use crate::artifact::manifest::{self, Manifest};
use crate::artifact::signature::{
    PublicKey, SIGNING_UNAVAILABLE, TrustPolicy, UnsignedPolicy, Verdict,
};
use crate::artifact::wit_version;
use crate::base::wording::file_name;
use crate::engine::cache::sha256_hex;
use crate::engine::guest::LUA_GUEST_WASM;
use crate::runtime::diagnostic::{DiagnosticKind, Severity};

/// The code of a plugin.
pub(crate) enum Code {
    /// The Lua guest embedded in this toolcell (a `.lua` file, or a packed Lua plugin
    /// whose guest is byte for byte the embedded one).
    EmbeddedLua,
    /// A component to compile: the file without toolcell's sections.
    Component {
        /// The bytes to compile.
        bytes: Vec<u8>,
        /// Their SHA-256, the compiled-code cache key.
        digest: String,
    },
}

/// A plugin file that passed every check.
pub(crate) struct Source {
    /// Its manifest (from the artifact, the sidecar, or clm's defaults).
    pub manifest: Manifest,
    /// What to compile.
    pub code: Code,
    /// The Lua script, for Lua plugins (plain or packed).
    pub script: Option<Vec<u8>>,
    /// The trusted key whose signature admitted it, if one did (an install records it;
    /// loading does not need it).
    #[cfg_attr(not(feature = "oci"), allow(dead_code))]
    pub signer: Option<PublicKey>,
    /// Things worth a warning that did not stop the plugin.
    pub warnings: Vec<(DiagnosticKind, Severity, String)>,
}

impl Source {
    /// What identifies the code the plugin runs: the SHA-256 of its Lua script, or of
    /// its component's code (with the script, for a component that runs one). Unchanged
    /// by re-packing or signing; an approval "for the session" holds for this digest.
    pub fn code_digest(&self) -> String {
        match (&self.code, &self.script) {
            (Code::EmbeddedLua, Some(script)) => sha256_hex(script),
            (Code::EmbeddedLua, None) => sha256_hex(LUA_GUEST_WASM),
            (Code::Component { digest, .. }, None) => digest.clone(),
            (Code::Component { digest, .. }, Some(script)) => {
                let mut both = digest.as_bytes().to_vec();
                both.extend_from_slice(script);
                sha256_hex(&both)
            }
        }
    }
}

/// Why a plugin file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Refusal {
    /// The check that failed.
    pub kind: DiagnosticKind,
    /// One line: what and why.
    pub message: String,
    /// The id the file claimed without holding it (`id_mismatch`): the registry names
    /// the plugin that does hold it, if one is loaded.
    pub claimed_id: Option<String>,
}

impl Refusal {
    /// A refusal by the check `kind`, for the reason `message`.
    pub fn new(kind: DiagnosticKind, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
            claimed_id: None,
        }
    }
}

/// What a file must satisfy to be accepted.
pub(crate) struct Admission<'a> {
    /// Digest pins.
    pub pins: &'a Pins,
    /// Trusted keys and what to do with unsigned plugins.
    pub trust: &'a TrustPolicy,
}

/// What the caller knows of a `.lua` plugin's sidecar manifest `NAME.lua.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sidecar {
    /// Nothing: the loader looks for it.
    Unknown,
    /// The plugin was found in a directory listing that has no entry of that name: the
    /// plugin has none, as if the loader had looked when the directory was listed.
    NotListed,
}

/// Reads and checks `path` (a `*.lua` or `*.wasm` file).
pub(crate) fn read(
    path: &Path,
    sidecar: Sidecar,
    admission: &Admission<'_>,
) -> Result<Source, Refusal> {
    let bytes = std::fs::read(path).map_err(|error| {
        Refusal::new(
            DiagnosticKind::LoadFailed,
            format!("cannot read the file: {error}"),
        )
    })?;
    admit(path, bytes, sidecar, admission)
}

/// Checks `bytes`, the content of `path` (a `*.lua` or `*.wasm` file), already read.
pub(crate) fn admit(
    path: &Path,
    bytes: Vec<u8>,
    sidecar: Sidecar,
    admission: &Admission<'_>,
) -> Result<Source, Refusal> {
    if !admission.pins.is_empty() {
        admission
            .pins
            .check(path, &sha256_hex(&bytes))
            .map_err(|mismatch| {
                Refusal::new(DiagnosticKind::DigestMismatch, mismatch.to_string())
            })?;
    }
    if path.extension().is_some_and(|extension| extension == "lua") {
        read_lua(path, bytes, sidecar, admission)
    } else {
        let source = admit_component(&bytes, admission)?;
        let id = &source.manifest.id;
        let expected = manifest::file_name_of(id, "wasm");
        if path
            .file_name()
            .is_none_or(|name| name != expected.as_str())
        {
            return Err(Refusal {
                claimed_id: Some(id.clone()),
                ..Refusal::new(
                    DiagnosticKind::IdMismatch,
                    format!(
                        "its manifest claims the id '{id}', which is not its file's: a .wasm \
                         plugin is named after its id, as `toolcell install` writes it \
                         ({expected})"
                    ),
                )
            });
        }
        Ok(source)
    }
}

fn read_lua(
    path: &Path,
    script: Vec<u8>,
    sidecar: Sidecar,
    admission: &Admission<'_>,
) -> Result<Source, Refusal> {
    if admission.trust.unsigned == UnsignedPolicy::Refuse {
        return Err(Refusal::new(
            DiagnosticKind::SignatureMissing,
            "a .lua file cannot be signed and the trust policy refuses unsigned plugins \
             (pack it with `toolcell pack`, then `toolcell sign` the .wasm)",
        ));
    }
    let sidecar = match sidecar {
        Sidecar::Unknown => manifest::read_sidecar(path)
            .map_err(|error| Refusal::new(DiagnosticKind::ManifestInvalid, error.to_string()))?,
        Sidecar::NotListed => None,
    };
    if let Some(sidecar) = &sidecar {
        admission
            .pins
            .check(&sidecar.path, &sha256_hex(&sidecar.bytes))
            .map_err(|mismatch| {
                Refusal::new(
                    DiagnosticKind::DigestMismatch,
                    format!("its manifest {}: {mismatch}", file_name(&sidecar.path)),
                )
            })?;
    }
    let manifest = manifest::lua_plugin_manifest(path, sidecar.as_ref())
        .map_err(|error| Refusal::new(DiagnosticKind::ManifestInvalid, error.to_string()))?;
    let own = manifest::lua_id(path);
    if manifest.id != own
        && let Some(sidecar) = &sidecar
    {
        return Err(Refusal {
            claimed_id: Some(manifest.id.clone()),
            ..Refusal::new(
                DiagnosticKind::IdMismatch,
                format!(
                    "its manifest {} claims the id '{}', but a .lua plugin's id is its file \
                     name's, '{own}' (name the file {}, or leave `id` out of the manifest)",
                    file_name(&sidecar.path),
                    manifest.id,
                    manifest::file_name_of(&manifest.id, "lua")
                ),
            )
        });
    }
    let warnings = sidecar
        .and_then(|sidecar| {
            unknown_keys(
                &manifest,
                &format!("its manifest {}", file_name(&sidecar.path)),
            )
        })
        .into_iter()
        .collect();
    Ok(Source {
        manifest,
        code: Code::EmbeddedLua,
        script: Some(script),
        signer: None,
        warnings,
    })
}

/// Checks a `.wasm` plugin's bytes (step 2 above); also what `toolcell install` and
/// `pull` run on a downloaded artifact before they write it.
pub(crate) fn admit_component(bytes: &[u8], admission: &Admission<'_>) -> Result<Source, Refusal> {
    let artifact = Artifact::parse(bytes)
        .map_err(|error| Refusal::new(DiagnosticKind::LoadFailed, error.to_string()))?;
    let mut warnings = Vec::new();
    let refuses_unsigned = admission.trust.unsigned == UnsignedPolicy::Refuse;
    // The trusted signer, or why no trusted key vouches for a signed artifact.
    let (signer, untrusted) = match admission.trust.judge(&artifact) {
        Verdict::Trusted(key) => (Some(key), None),
        Verdict::Invalid(message) => {
            return Err(Refusal::new(DiagnosticKind::SignatureInvalid, message));
        }
        Verdict::Unsigned if refuses_unsigned => {
            return Err(Refusal::new(
                DiagnosticKind::SignatureMissing,
                "it is not signed and the trust policy refuses unsigned plugins \
                 ([trust] unsigned = \"refuse\")",
            ));
        }
        Verdict::Unsigned => (None, None),
        Verdict::Unchecked => (
            None,
            Some(format!(
                "its signatures were not checked: {SIGNING_UNAVAILABLE}"
            )),
        ),
        Verdict::Untrusted(keys) => {
            let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
            let message = format!(
                "it is signed by {}, which is not among the trusted keys ([trust] keys)",
                keys.join(", ")
            );
            (None, Some(message))
        }
    };
    if let Some(message) = untrusted {
        if refuses_unsigned {
            return Err(Refusal::new(DiagnosticKind::SignatureUntrusted, message));
        }
        warnings.push((
            DiagnosticKind::SignatureUntrusted,
            Severity::Warning,
            message,
        ));
    }
    let version = artifact
        .wit_version()
        .map_err(|error| Refusal::new(DiagnosticKind::WitMismatch, error.to_string()))?;
    wit_version::check(&version)
        .map_err(|error| Refusal::new(DiagnosticKind::WitMismatch, error.to_string()))?;
    let manifest_bytes = artifact
        .manifest()
        .map_err(|error| Refusal::new(DiagnosticKind::ManifestInvalid, error.to_string()))?
        .ok_or_else(|| {
            Refusal::new(
                DiagnosticKind::ManifestMissing,
                format!(
                    "it carries no manifest (a `{}` custom section); add one with \
                     `toolcell pack FILE.wasm --manifest MANIFEST.toml`",
                    manifest::MANIFEST_SECTION
                ),
            )
        })?;
    let manifest = Manifest::parse_bytes(manifest_bytes).map_err(|error| {
        Refusal::new(
            DiagnosticKind::ManifestInvalid,
            format!("its manifest: {error}"),
        )
    })?;
    warnings.extend(unknown_keys(&manifest, "its manifest"));
    let script = artifact
        .script()
        .map_err(|error| Refusal::new(DiagnosticKind::LoadFailed, error.to_string()))?
        .map(<[u8]>::to_vec);
    let code = artifact.code();
    // A packed Lua plugin whose guest is this toolcell's own runs on the guest already
    // compiled; any other code is compiled (and cached) by its digest.
    let code = if script.is_some() && code == LUA_GUEST_WASM {
        Code::EmbeddedLua
    } else {
        Code::Component {
            digest: sha256_hex(&code),
            bytes: code,
        }
    };
    Ok(Source {
        manifest,
        code,
        script,
        signer,
        warnings,
    })
}

/// The warning about the keys `manifest` (`whose`, as a message names it) has that
/// toolcell does not know, if it has any: ignored, so that a plugin written for a newer
/// manifest format still loads, but said, since one may be a typo.
fn unknown_keys(manifest: &Manifest, whose: &str) -> Option<(DiagnosticKind, Severity, String)> {
    if manifest.unknown_keys.is_empty() {
        return None;
    }
    let keys: Vec<String> = manifest
        .unknown_keys
        .iter()
        .map(|key| format!("`{key}`"))
        .collect();
    Some((
        DiagnosticKind::ManifestUnknownKey,
        Severity::Warning,
        format!(
            "{whose} has keys toolcell does not know, which it ignores: {}",
            keys.join(", ")
        ),
    ))
}
