//! Files toolcell writes (plugins, lock files, keys) are written whole or not at all.

use std::path::{Path, PathBuf};

/// Who may read a file toolcell writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Readers {
    /// Everyone (0644): plugins, lock files.
    Everyone,
    /// Only the owner (0600): secret keys (`toolcell keygen`, with the `cli` feature).
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    Owner,
}

/// A file that could not be written; the file as it was is intact.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    path: PathBuf,
    source: std::io::Error,
}

/// Writes `bytes` to `path` through a temporary file in the same directory, so a
/// failure never leaves half a file (or destroys the file being replaced).
pub fn write_atomically(path: &Path, bytes: &[u8], readers: Readers) -> Result<(), WriteError> {
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
    temp.persist(path).map_err(|error| failed(error.error))?;
    Ok(())
}
