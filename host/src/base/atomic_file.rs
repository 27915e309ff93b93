//! Files toolcell writes (plugins, lock files, keys, cache entries, stored results) are
//! written whole or not at all: through a temporary file in the same directory, renamed
//! into place. (A plugin's own writes go through its file root instead, `services::files`,
//! which must not leave the root by a path.) The directories of the cache and the result
//! store are made for this user alone.

use std::path::{Path, PathBuf};

/// Who may read a file toolcell writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Readers {
    /// Everyone (0644): plugins, lock files.
    #[cfg_attr(not(any(feature = "cli", feature = "oci")), allow(dead_code))]
    Everyone,
    /// Only the owner (0600): secret keys, the code cache, stored results.
    Owner,
}

/// A file that could not be written; the file as it was is intact.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` through a temporary file in the same directory, so a
/// failure never leaves half a file (or destroys the file being replaced).
pub fn write_atomically(path: &Path, bytes: &[u8], readers: Readers) -> Result<(), WriteError> {
    write(path, bytes, readers, Replace::Yes)
}

/// As [`write_atomically`], but only when `path` does not exist yet: when another
/// process made it first, the error's kind is `AlreadyExists` and its file stays.
pub fn create_atomically(path: &Path, bytes: &[u8], readers: Readers) -> Result<(), WriteError> {
    write(path, bytes, readers, Replace::No)
}

#[derive(PartialEq)]
enum Replace {
    Yes,
    No,
}

fn write(path: &Path, bytes: &[u8], readers: Readers, replace: Replace) -> Result<(), WriteError> {
    let failed = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = match readers {
            Readers::Everyone => 0o644,
            Readers::Owner => 0o600,
        };
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = readers;
    let mut temp = builder.tempfile_in(dir).map_err(failed)?;
    std::io::Write::write_all(&mut temp, bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(failed)?;
    if replace == Replace::Yes {
        temp.persist(path).map_err(|error| failed(error.error))?;
    } else {
        temp.persist_noclobber(path)
            .map_err(|error| failed(error.error))?;
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
