//! The on-disk cache of compiled components, so a second run does not recompile.
//!
//! An entry is keyed by the artifact's SHA-256 and by the engine's compatibility hash
//! (wasmtime version and every setting that affects code generation). Entries are
//! native code the host maps and runs, so nothing in the cache is taken on trust:
//!
//! - the directory must be this user's alone (owned by them, not writable by others);
//! - every entry ends with a MAC: keyed BLAKE3, under a per-user key kept in the
//!   directory (`key`, mode 0600), over the entry's file name and its bytes. An entry
//!   whose MAC is missing or wrong (written by anything but a toolcell holding the key,
//!   or renamed from another entry) is deleted with a warning and compiled again; its
//!   bytes never reach `deserialize`;
//! - nothing in the directory is followed through a symlink;
//! - the runtime refuses to use a cache that lies inside a plugin's file root
//!   (`runtime::builder`), and plugins cannot read or write it (`trusted`).
//!
//! Entries are written atomically (temp file + rename) so concurrent runs never see
//! half a file.
//!
//! wasmtime has a built-in cache (`Config::cache`); this one exists because it loads an
//! entry with `Component::deserialize_file` (mapped) instead of decompressing it, which
//! would be most of a warm start. The MAC is checked over the mapped file (one pass of
//! BLAKE3; docs/security.md gives its cost), and the same open file is then handed to
//! wasmtime, so the bytes checked are the bytes mapped.

use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use crate::base::atomic_file::{Readers, create_atomically, create_private_dir, write_atomically};

/// The log target of the notice a compilation gives.
pub const NOTICE_TARGET: &str = "toolcell::compile";

/// How many bytes of wasm Cranelift compiles per second on a 2-core machine, for the
/// notice's estimate.
const COMPILED_BYTES_PER_SECOND: f64 = 800_000.0;

/// The name of the MAC key's file inside the cache directory.
const KEY_FILE: &str = "key";

/// The MAC key's length: a BLAKE3 key.
const KEY_LEN: usize = blake3::KEY_LEN;

/// What ends every entry: this marker, then the 32-byte MAC.
const MAC_MARKER: &[u8; 16] = b"toolcell-mac-v1\n";

/// The length of the trailer (marker and MAC) after an entry's compiled bytes.
const TRAILER_LEN: usize = MAC_MARKER.len() + blake3::OUT_LEN;

/// Why an entry without a MAC is not loaded.
const NO_MAC: &str = "it carries no MAC (written by an older toolcell, or by someone else)";

/// Where compiled components are kept, if anywhere.
#[derive(Clone, Debug)]
pub struct CodeCache {
    dir: Option<PathBuf>,
    /// The MAC key, read or created on first use and shared by every clone; `None`
    /// when it could not be had (then nothing is cached).
    key: Arc<OnceLock<Option<MacKey>>>,
}

/// A per-user secret: whoever holds it can make entries the cache will load.
#[derive(Clone)]
struct MacKey([u8; KEY_LEN]);

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MacKey(..)")
    }
}

/// What looking an entry up found.
enum Lookup {
    /// A trusted entry, loaded.
    Hit(Component),
    /// No entry.
    Miss,
    /// An entry that must not be loaded, and why.
    Untrusted(String),
    /// A trusted entry wasmtime could not load (it is compiled again).
    Unloadable(wasmtime::Error),
}

impl CodeCache {
    /// The cache in `dir`, or no cache at all.
    pub fn new(dir: Option<PathBuf>) -> Self {
        CodeCache {
            dir,
            key: Arc::new(OnceLock::new()),
        }
    }

    /// The cache directory, if caching is on (whether or not it is usable).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The compiled component for `wasm`, from the cache when possible. `digest` is the
    /// artifact's SHA-256 in hex when the caller already knows it; `what` names it in the
    /// notice a compilation gives ("plugin x.wasm").
    pub fn component(
        &self,
        engine: &wasmtime::Engine,
        wasm: &[u8],
        digest: Option<&str>,
        what: &str,
    ) -> wasmtime::Result<Component> {
        let key = || {
            digest
                .map(str::to_string)
                .unwrap_or_else(|| sha256_hex(wasm))
        };
        self.get_or_compile(engine, key, || {
            self.announce(what, wasm.len());
            Component::new(engine, wasm)
        })
    }

    /// Tells the user that `what` (`bytes` of wasm) is being compiled for the cache and
    /// about how long it takes, so that the first run's wait is not a silent one. Logged
    /// at info level under [`NOTICE_TARGET`], which the command line shows by default.
    /// Without a cache every run compiles, as whoever turned it off knows (or was warned).
    pub fn announce(&self, what: &str, bytes: usize) {
        if !self.is_usable() {
            return;
        }
        let seconds = (bytes as f64 / COMPILED_BYTES_PER_SECOND).round().max(1.0);
        tracing::info!(target: NOTICE_TARGET, "compiling {what} (first run, about {seconds} s)");
    }

    /// The compiled component cached under `key` (which must name the code exactly, as
    /// a digest does), or the one `compile` makes, which is then cached.
    pub fn get_or_compile(
        &self,
        engine: &wasmtime::Engine,
        key: impl FnOnce() -> String,
        compile: impl FnOnce() -> wasmtime::Result<Component>,
    ) -> wasmtime::Result<Component> {
        let Some((dir, mac_key)) = self.usable() else {
            return compile();
        };
        let name = format!("{}-{:016x}.cwasm", key(), engine_key(engine));
        let entry = dir.join(&name);
        match lookup(engine, &entry, &name, mac_key) {
            Lookup::Hit(component) => return Ok(component),
            Lookup::Miss => {}
            Lookup::Untrusted(reason) => {
                tracing::warn!(
                    "not loading the compiled-code cache entry {}: {reason}; deleted it, \
                     compiling again",
                    entry.display()
                );
                remove_entry(&entry);
            }
            Lookup::Unloadable(error) => {
                tracing::debug!("ignoring cache entry {}: {error:#}", entry.display());
                remove_entry(&entry);
            }
        }
        let component = compile()?;
        if let Err(error) = store(&component, &entry, &name, mac_key) {
            tracing::debug!("could not write cache entry {}: {error:#}", entry.display());
        }
        Ok(component)
    }

    /// Whether compiled code will be kept (the directory exists or can be created, is
    /// safe to load code from, and its key can be read or made).
    pub fn is_usable(&self) -> bool {
        self.usable().is_some()
    }

    /// The cache directory, created if needed, and the MAC key, if the directory is
    /// safe to load code from.
    fn usable(&self) -> Option<(&Path, &MacKey)> {
        let dir = self.dir.as_deref()?;
        if let Err(error) = create_private_dir(dir) {
            tracing::debug!("compiled-code cache disabled: {}: {error}", dir.display());
            return None;
        }
        if !private_to_this_user(dir) {
            return None;
        }
        let key = self.key.get_or_init(|| match read_or_create_key(dir) {
            Ok(key) => Some(key),
            Err(reason) => {
                tracing::warn!(
                    "not using the compiled-code cache {}: {reason}",
                    dir.display()
                );
                None
            }
        });
        Some((dir, key.as_ref()?))
    }
}

/// The SHA-256 of `bytes`, in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn engine_key(engine: &wasmtime::Engine) -> u64 {
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.finish()
}

/// The MAC of the entry `name` holding `body`. The name is covered so that a trusted
/// entry renamed to another entry's name is not trusted there.
fn mac(key: &MacKey, name: &str, body: &[u8]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new_keyed(&key.0);
    hasher.update(name.as_bytes());
    hasher.update(&[0]);
    hasher.update(body);
    hasher.finalize()
}

/// Looks the entry up, checks its MAC over the mapped file, and loads that same file.
fn lookup(engine: &wasmtime::Engine, entry: &Path, name: &str, key: &MacKey) -> Lookup {
    let file = match open_no_follow(entry) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
        Err(_) if is_symlink(entry) => return Lookup::Untrusted("it is a symlink".to_string()),
        Err(error) => return Lookup::Untrusted(format!("it cannot be opened: {error}")),
    };
    let length = match file.metadata() {
        Ok(metadata) if metadata.is_file() => metadata.len(),
        Ok(_) => return Lookup::Untrusted("it is not a regular file".to_string()),
        Err(error) => return Lookup::Untrusted(format!("it cannot be read: {error}")),
    };
    if length < TRAILER_LEN as u64 {
        return Lookup::Untrusted(NO_MAC.to_string());
    }
    // SAFETY: the mapping is read-only and dropped before this function returns. The
    // file lies in a directory only this user can write, and every writer replaces
    // entries by renaming a new file over them, so the mapped file does not change
    // while it is hashed.
    let mapped = match unsafe { memmap2::Mmap::map(&file) } {
        Ok(mapped) => mapped,
        Err(error) => return Lookup::Untrusted(format!("it cannot be mapped: {error}")),
    };
    let (body, trailer) = mapped.split_at(mapped.len() - TRAILER_LEN);
    let (marker, stored) = trailer.split_at(MAC_MARKER.len());
    if marker != MAC_MARKER {
        return Lookup::Untrusted(NO_MAC.to_string());
    }
    let stored: [u8; blake3::OUT_LEN] = stored.try_into().unwrap_or([0; blake3::OUT_LEN]);
    // `blake3::Hash` compares in constant time.
    if mac(key, name, body) != blake3::Hash::from_bytes(stored) {
        return Lookup::Untrusted(
            "its MAC does not match this user's cache key (it was not written by \
             toolcell for this entry)"
                .to_string(),
        );
    }
    match deserialize(engine, &file, body) {
        Ok(component) => Lookup::Hit(component),
        Err(error) => Lookup::Unloadable(error),
    }
}

/// Loads the checked entry: the open file itself, mapped by wasmtime (the trailer after
/// the compiled object is ignored by its ELF reader). Where the open file cannot be
/// named (no `/proc`), the checked bytes are copied instead.
fn deserialize(engine: &wasmtime::Engine, file: &File, body: &[u8]) -> wasmtime::Result<Component> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // Opening /proc/self/fd/N opens the file behind the descriptor, whatever its
        // name now points to.
        let reopened = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if reopened.exists() {
            // SAFETY: the file carries this user's MAC over its name and bytes, so this
            // toolcell's `store` wrote it from a `Component` compiled by an engine with
            // the same compatibility hash (part of the name).
            return unsafe { Component::deserialize_file(engine, &reopened) };
        }
    }
    let _ = file;
    // SAFETY: as above; these are the very bytes the MAC was checked over.
    unsafe { Component::deserialize(engine, body) }
}

/// Writes the entry with its MAC, through a temporary file renamed into place.
fn store(component: &Component, entry: &Path, name: &str, key: &MacKey) -> wasmtime::Result<()> {
    let mut bytes = component.serialize()?;
    let tag = mac(key, name, &bytes);
    bytes.reserve_exact(TRAILER_LEN);
    bytes.extend_from_slice(MAC_MARKER);
    bytes.extend_from_slice(tag.as_bytes());
    write_atomically(entry, &bytes, Readers::Owner)?;
    Ok(())
}

fn remove_entry(entry: &Path) {
    if let Err(error) = std::fs::remove_file(entry)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::debug!("could not delete {}: {error}", entry.display());
    }
}

/// The cache's MAC key, created (mode 0600, random) when there is none. A key that is
/// not a 32-byte regular file readable by this user alone is replaced, with a warning:
/// it may have been read by others.
fn read_or_create_key(dir: &Path) -> Result<MacKey, String> {
    let path = dir.join(KEY_FILE);
    match read_key(&path) {
        Ok(Some(key)) => return Ok(key),
        Ok(None) => {}
        Err(reason) => {
            tracing::warn!(
                "replacing the compiled-code cache's key {}: {reason}; every cache entry \
                 will be compiled again",
                path.display()
            );
            std::fs::remove_file(&path)
                .map_err(|error| format!("cannot delete its key {}: {error}", path.display()))?;
        }
    }
    let mut key = [0; KEY_LEN];
    rand_core::RngCore::try_fill_bytes(&mut rand_core::OsRng, &mut key)
        .map_err(|error| format!("cannot draw a random key: {error}"))?;
    let cannot =
        |error: std::io::Error| format!("cannot create its key {}: {error}", path.display());
    match create_atomically(&path, &key, Readers::Owner) {
        Ok(()) => Ok(MacKey(key)),
        // Another process made the key first: use theirs.
        Err(error) if error.source.kind() == std::io::ErrorKind::AlreadyExists => {
            read_key(&path)?.ok_or_else(|| format!("its key {} vanished", path.display()))
        }
        Err(error) => Err(cannot(error.source)),
    }
}

/// The key at `path`: `None` when there is none, an error when it cannot be trusted.
fn read_key(path: &Path) -> Result<Option<MacKey>, String> {
    let mut file = match open_no_follow(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) if is_symlink(path) => return Err("it is a symlink".to_string()),
        Err(error) => return Err(format!("it cannot be opened: {error}")),
    };
    let metadata = file
        .metadata()
        .map_err(|error| format!("it cannot be read: {error}"))?;
    if !metadata.is_file() || metadata.len() != KEY_LEN as u64 {
        return Err(format!("it is not a file of {KEY_LEN} bytes"));
    }
    if !owned_by_this_user_alone(&metadata) {
        return Err("others may read it (it must be mode 0600, yours)".to_string());
    }
    let mut key = [0; KEY_LEN];
    file.read_exact(&mut key)
        .map_err(|error| format!("it cannot be read: {error}"))?;
    Ok(Some(MacKey(key)))
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_symlink())
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn owned_by_this_user_alone(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    metadata.uid() == rustix::process::geteuid().as_raw() && metadata.mode() & 0o077 == 0
}

#[cfg(not(unix))]
fn owned_by_this_user_alone(_metadata: &std::fs::Metadata) -> bool {
    true
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A component whose one export is the function `name`, so tests can tell which
    /// code a cache returned.
    fn exporting(engine: &wasmtime::Engine, name: &str) -> wasmtime::Result<Component> {
        Component::new(
            engine,
            format!(
                r#"(component
                    (core module $m (func (export "f")))
                    (core instance $i (instantiate $m))
                    (func (export "{name}") (canon lift (core func $i "f"))))"#
            ),
        )
    }

    fn exports(engine: &wasmtime::Engine, component: &Component) -> Vec<String> {
        component
            .component_type()
            .exports(engine)
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// The entry file of `key` in `dir`.
    fn entry(engine: &wasmtime::Engine, dir: &Path, key: &str) -> PathBuf {
        dir.join(format!("{key}-{:016x}.cwasm", engine_key(engine)))
    }

    /// Looks `key` up in a fresh handle on `dir` (its key read from disk, as a new
    /// process would), compiling `exporting(name)` on a miss; returns the exports of
    /// what came back and whether it was compiled.
    fn fetch(engine: &wasmtime::Engine, dir: &Path, key: &str, name: &str) -> (Vec<String>, bool) {
        let compiled = Cell::new(false);
        let cache = CodeCache::new(Some(dir.to_path_buf()));
        let component = cache
            .get_or_compile(
                engine,
                || key.to_string(),
                || {
                    compiled.set(true);
                    exporting(engine, name)
                },
            )
            .expect("component");
        (exports(engine, &component), compiled.get())
    }

    #[test]
    fn an_entry_is_stored_with_its_mac_and_loaded_by_a_later_run() {
        let engine = wasmtime::Engine::default();
        let dir = tempfile::TempDir::new().expect("temp dir");
        assert_eq!(
            fetch(&engine, dir.path(), "k", "x"),
            (vec!["x".into()], true)
        );
        let bytes = std::fs::read(entry(&engine, dir.path(), "k")).expect("entry");
        assert_eq!(
            &bytes[bytes.len() - TRAILER_LEN..][..MAC_MARKER.len()],
            MAC_MARKER
        );
        // The second run loads it: `compile` is not called.
        assert_eq!(
            fetch(&engine, dir.path(), "k", "x"),
            (vec!["x".into()], false)
        );

        let key = dir.path().join(KEY_FILE);
        let metadata = std::fs::metadata(&key).expect("key");
        assert_eq!(metadata.len(), KEY_LEN as u64);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn an_entry_made_with_another_key_is_never_loaded_and_is_replaced() {
        let engine = wasmtime::Engine::default();
        let (ours, theirs) = (
            tempfile::TempDir::new().expect("temp dir"),
            tempfile::TempDir::new().expect("temp dir"),
        );
        fetch(&engine, ours.path(), "k", "x");
        // A valid wasmtime artifact with a valid MAC, under another user's key, for
        // other code, put where our entry was.
        assert_eq!(
            fetch(&engine, theirs.path(), "k", "planted"),
            (vec!["planted".into()], true)
        );
        let planted = entry(&engine, theirs.path(), "k");
        std::fs::copy(&planted, entry(&engine, ours.path(), "k")).expect("plant");

        assert_eq!(
            fetch(&engine, ours.path(), "k", "x"),
            (vec!["x".into()], true)
        );
        // The recompiled entry replaced the planted one and is trusted again.
        assert_eq!(
            fetch(&engine, ours.path(), "k", "x"),
            (vec!["x".into()], false)
        );
    }

    #[test]
    fn an_artifact_without_a_mac_a_renamed_entry_and_a_symlink_are_never_loaded() {
        let engine = wasmtime::Engine::default();
        let dir = tempfile::TempDir::new().expect("temp dir");
        fetch(&engine, dir.path(), "k", "x");

        // What a plugin could write: a plain serialized component.
        let plain = exporting(&engine, "planted")
            .and_then(|component| component.serialize())
            .expect("serialize");
        std::fs::write(entry(&engine, dir.path(), "k"), &plain).expect("plant");
        assert_eq!(
            fetch(&engine, dir.path(), "k", "x"),
            (vec!["x".into()], true)
        );

        // A trusted entry of other code, renamed to this entry's name.
        fetch(&engine, dir.path(), "other", "planted");
        std::fs::rename(
            entry(&engine, dir.path(), "other"),
            entry(&engine, dir.path(), "k"),
        )
        .expect("rename");
        assert_eq!(
            fetch(&engine, dir.path(), "k", "x"),
            (vec!["x".into()], true)
        );

        // A symlink to a trusted entry of other code.
        fetch(&engine, dir.path(), "other", "planted");
        std::fs::remove_file(entry(&engine, dir.path(), "k")).expect("remove");
        std::os::unix::fs::symlink(
            entry(&engine, dir.path(), "other"),
            entry(&engine, dir.path(), "k"),
        )
        .expect("symlink");
        assert_eq!(
            fetch(&engine, dir.path(), "k", "x"),
            (vec!["x".into()], true)
        );
        assert!(!is_symlink(&entry(&engine, dir.path(), "k")));
    }

    #[test]
    fn a_key_others_may_read_is_replaced_and_its_entries_are_not_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let engine = wasmtime::Engine::default();
        let dir = tempfile::TempDir::new().expect("temp dir");
        fetch(&engine, dir.path(), "k", "x");
        let key = dir.path().join(KEY_FILE);
        let old = std::fs::read(&key).expect("key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");

        assert_eq!(
            fetch(&engine, dir.path(), "k", "x"),
            (vec!["x".into()], true)
        );
        assert_ne!(std::fs::read(&key).expect("new key"), old);
        let mode = std::fs::metadata(&key).expect("key").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
