//! `toolcell inspect`: what a plugin file is, without running it for real.
//!
//! The static facts (digest, manifest, WIT version, signatures) come from the file; the
//! tools come from loading it once in a sandbox with no file access, exactly as `call`
//! would load it otherwise.

use std::path::{Path, PathBuf};

use crate::artifact::manifest::{self, Manifest};
use crate::artifact::signature::{self, PublicKey, TrustPolicy};
use crate::artifact::wit_version;
use crate::artifact::{Artifact, ArtifactError};
use crate::engine::Engine;
use crate::engine::cache::sha256_hex;
use crate::services::files::FileAccess;
use crate::{BuildError, Diagnostic, Runtime, ToolInfo};

/// What a plugin file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `.lua` script, run by the embedded Lua guest.
    LuaScript,
    /// A Lua script packed into the Lua guest component.
    PackedLua,
    /// A component in any language.
    Component,
}

impl Kind {
    /// How `inspect` names the kind.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::LuaScript => "Lua script",
            Kind::PackedLua => "packed Lua plugin",
            Kind::Component => "component",
        }
    }
}

/// Everything `inspect` reports about one file.
#[derive(Debug)]
pub struct Report {
    /// The file.
    pub file: PathBuf,
    /// Its SHA-256, as a lock file pins it.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// What it is.
    pub kind: Kind,
    /// Its manifest, or why it has none that can be used.
    pub manifest: Result<Manifest, String>,
    /// The WIT version it was built for (a `.lua` runs on this toolcell's).
    pub wit_version: Result<semver::Version, String>,
    /// Whether this toolcell can load that version, and why not.
    pub compatible: Result<(), String>,
    /// The keys whose signatures verify, or why one does not.
    pub signatures: Result<Vec<PublicKey>, String>,
    /// The tools it registers when loaded, or why it did not load.
    pub tools: Result<Vec<ToolInfo>, String>,
    /// What loading it reported.
    pub diagnostics: Vec<Diagnostic>,
}

/// Why a plugin file could not be inspected at all.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A `.wasm` that is not a component.
    #[error("{}: {source}", path.display())]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// Why.
        source: ArtifactError,
    },
    /// No empty directory could be made to be its file root.
    #[error("cannot create an empty file root: {0}")]
    NoRoot(std::io::Error),
    /// The sandbox it is loaded into could not be set up.
    #[error(transparent)]
    Runtime(#[from] BuildError),
}

/// Inspects the plugin file `path` (`*.lua` or `*.wasm`), loading it on `engine`.
pub async fn inspect(path: &Path, engine: &Engine) -> Result<Report, InspectError> {
    let bytes = std::fs::read(path).map_err(|source| InspectError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let is_lua = path.extension().is_some_and(|extension| extension == "lua");
    let mut report = Report {
        file: path.to_path_buf(),
        sha256: sha256_hex(&bytes),
        size: bytes.len() as u64,
        kind: Kind::LuaScript,
        manifest: Err(String::new()),
        wit_version: Ok(wit_version::host_version()),
        compatible: Ok(()),
        signatures: Ok(Vec::new()),
        tools: Err(String::new()),
        diagnostics: Vec::new(),
    };
    if is_lua {
        report.manifest = manifest::read_sidecar(path)
            .and_then(|sidecar| manifest::lua_plugin_manifest(path, sidecar.as_ref()))
            .map_err(|error| error.to_string());
    } else {
        let artifact = Artifact::parse(&bytes).map_err(|source| InspectError::NotAComponent {
            path: path.to_path_buf(),
            source,
        })?;
        report.kind = match artifact.script() {
            Ok(Some(_)) => Kind::PackedLua,
            _ => Kind::Component,
        };
        report.manifest = match artifact.manifest() {
            Ok(Some(text)) => Manifest::parse_bytes(text).map_err(|error| error.to_string()),
            Ok(None) => Err("none (the file carries no manifest)".to_string()),
            Err(error) => Err(error.to_string()),
        };
        report.wit_version = artifact.wit_version().map_err(|error| error.to_string());
        report.compatible = match &report.wit_version {
            Ok(version) => wit_version::check(version).map_err(|error| error.to_string()),
            Err(error) => Err(error.clone()),
        };
        report.signatures = signature::verify(&artifact);
    }
    let (runtime, diagnostics) = load_without_files(path, engine).await?;
    report.diagnostics = diagnostics;
    report.tools = if runtime.plugins().is_empty() {
        Err(runtime
            .diagnostics()
            .iter()
            .map(|diagnostic| diagnostic.message.clone())
            .collect::<Vec<_>>()
            .join("; "))
    } else {
        Ok(runtime.tools().to_vec())
    };
    Ok(report)
}

/// Loads the plugin file `path` alone, as `call` would, but with no files to touch (its
/// root is an empty directory and its access none), for looking at a plugin without
/// running it for real (`inspect`, `pack`'s check); the plugins it requires are not
/// there, so its requirements are not checked. Returns the runtime and what loading
/// reported, less the capability cut that this implies, which is not the plugin's
/// problem.
pub async fn load_without_files(
    path: &Path,
    engine: &Engine,
) -> Result<(Runtime, Vec<Diagnostic>), InspectError> {
    let root = tempfile::tempdir().map_err(InspectError::NoRoot)?;
    let runtime = Runtime::builder()
        .plugin_file(path)
        .root(root.path())
        .file_access(FileAccess::None)
        .trust(TrustPolicy::default())
        .engine(engine.clone())
        .ignoring_dependencies()
        .build()
        .await?;
    let diagnostics = runtime
        .diagnostics()
        .iter()
        .filter(|diagnostic| diagnostic.kind != crate::DiagnosticKind::CapabilityDenied)
        .cloned()
        .collect();
    Ok((runtime, diagnostics))
}
