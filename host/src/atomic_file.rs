//! Files toolcell writes (plugins, lock files, keys) are written whole or not at all.

use std::path::Path;

/// Who may read a file toolcell writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Readers {
    /// Everyone (0644): plugins, lock files.
    Everyone,
    /// Only the owner (0600): secret keys.
    Owner,
}

/// Writes `bytes` to `path` through a temporary file in the same directory, so a
/// failure never leaves half a file (or destroys the file being replaced).
pub fn write_atomically(path: &Path, bytes: &[u8], readers: Readers) -> Result<(), String> {
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
    let mut temp = builder
        .tempfile_in(dir)
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    std::io::Write::write_all(&mut temp, bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    temp.persist(path)
        .map_err(|error| format!("cannot write {}: {}", path.display(), error.error))?;
    Ok(())
}
