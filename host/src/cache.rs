//! The on-disk cache of compiled components, so a second run does not recompile.
//!
//! An entry is keyed by the artifact's SHA-256 and by the engine's compatibility hash
//! (wasmtime version and every setting that affects code generation). Entries are
//! native code the host will map and run, so the cache only trusts a directory it
//! created for itself (owned by this user, not writable by others), and writes entries
//! atomically (temp file + rename) so concurrent runs never see half a file.
//!
//! wasmtime has a built-in cache (`Config::cache`); this one exists because it loads an
//! entry with `Component::deserialize_file` (mapped, ~0.2 ms) instead of decompressing
//! it, which is most of a warm start.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Where compiled components are kept, if anywhere.
#[derive(Clone, Debug)]
pub struct CodeCache {
    dir: Option<PathBuf>,
}

impl CodeCache {
    /// The cache in `dir`, or no cache at all.
    pub fn new(dir: Option<PathBuf>) -> Self {
        CodeCache { dir }
    }

    /// The default location: `$TOOLCELL_CACHE_DIR`, else `$XDG_CACHE_HOME/toolcell`,
    /// else `~/.cache/toolcell`; `TOOLCELL_CACHE_DIR=off` disables caching.
    pub fn from_env() -> Self {
        let dir = match std::env::var_os("TOOLCELL_CACHE_DIR") {
            Some(dir) if dir == "off" => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
                .map(|base| base.join("toolcell")),
        };
        CodeCache { dir }
    }

    /// The compiled component for `wasm`, from the cache when possible. `digest` is the
    /// artifact's SHA-256 in hex when the caller already knows it.
    pub fn component(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: Option<&str>,
    ) -> wasmtime::Result<Component> {
        let key = || {
            digest
                .map(str::to_string)
                .unwrap_or_else(|| sha256_hex(wasm))
        };
        self.get_or_compile(engine, key, || Component::new(engine, wasm))
    }

    /// The compiled component cached under `key` (which must name the code exactly, as
    /// a digest does), or the one `compile` makes, which is then cached.
    pub fn get_or_compile(
        &self,
        engine: &Engine,
        key: impl FnOnce() -> String,
        compile: impl FnOnce() -> wasmtime::Result<Component>,
    ) -> wasmtime::Result<Component> {
        let Some(dir) = self.usable_dir() else {
            return compile();
        };
        let entry = dir.join(format!("{}-{:016x}.cwasm", key(), engine_key(engine)));
        if entry.is_file() {
            // SAFETY: the entry was written by `store` below into a directory that only this
            // user can write (checked by `usable_dir`), under a name that includes the
            // code's key and the engine's compatibility hash.
            match unsafe { Component::deserialize_file(engine, &entry) } {
                Ok(component) => return Ok(component),
                Err(error) => {
                    tracing::debug!("ignoring cache entry {}: {error:#}", entry.display())
                }
            }
        }
        let component = compile()?;
        if let Err(error) = store(&component, &entry) {
            tracing::debug!("could not write cache entry {}: {error:#}", entry.display());
        }
        Ok(component)
    }

    /// The cache's directory, if there is one (whether or not it is usable).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether compiled code will be kept (the directory exists or can be created, and
    /// is safe to load code from).
    pub fn is_usable(&self) -> bool {
        self.usable_dir().is_some()
    }

    /// The cache directory, created if needed, if it is safe to load code from.
    fn usable_dir(&self) -> Option<&Path> {
        let dir = self.dir.as_deref()?;
        if let Err(error) = create_private_dir(dir) {
            tracing::debug!("compiled-code cache disabled: {}: {error}", dir.display());
            return None;
        }
        private_to_this_user(dir).then_some(dir)
    }
}

/// The SHA-256 of `bytes`, in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn engine_key(engine: &Engine) -> u64 {
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.finish()
}

fn store(component: &Component, entry: &Path) -> wasmtime::Result<()> {
    let bytes = component.serialize()?;
    let temp = entry.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temp, bytes)?;
    if let Err(error) = std::fs::rename(&temp, entry) {
        let _ = std::fs::remove_file(&temp);
        return Err(error.into());
    }
    Ok(())
}

/// Creates `dir` (and its parents) for this user alone.
#[cfg(unix)]
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_to_this_user(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(metadata) = std::fs::metadata(dir) else {
        return false;
    };
    let uid = rustix::process::geteuid().as_raw();
    metadata.uid() == uid && metadata.mode() & 0o022 == 0
}

#[cfg(not(unix))]
fn private_to_this_user(_dir: &Path) -> bool {
    true
}
