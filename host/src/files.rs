//! `clm.read_file` / `clm.write_file`: the one directory tree a plugin may touch.
//!
//! Every access goes through a `cap_std::fs::Dir` opened on the granted root, so `..`
//! that leads out, absolute paths outside the root and symlinks that lead out fail in
//! the kernel-facing layer itself, not in string checks. Reads accept regular files
//! only (no devices, FIFOs or directories) and refuse files larger than the plugin could
//! hold. Writes go to a temporary file that replaces the target only when complete, so
//! a failed write (a full disk) leaves the old content intact.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use crate::limits::format_bytes;

/// How a plugin may use the file root: what a manifest asks for, what the user's
/// policy allows, and what a plugin is granted (the lesser of the two).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Default,
    serde::Deserialize,
    serde::Serialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum FileAccess {
    /// No file access at all.
    #[default]
    None,
    /// `read_file` only.
    ReadOnly,
    /// `read_file` and `write_file`.
    ReadWrite,
}

impl FileAccess {
    /// The value as written in manifests, the config file and `--files`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileAccess::None => "none",
            FileAccess::ReadOnly => "read-only",
            FileAccess::ReadWrite => "read-write",
        }
    }

    /// Whether reading is allowed.
    pub fn can_read(self) -> bool {
        self >= FileAccess::ReadOnly
    }

    /// Whether writing is allowed.
    pub fn can_write(self) -> bool {
        self == FileAccess::ReadWrite
    }
}

impl std::fmt::Display for FileAccess {
    /// The value as written in manifests and the config file.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for FileAccess {
    type Err = String;

    /// Parses `none`, `read-only` or `read-write`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "none" => Ok(FileAccess::None),
            "read-only" => Ok(FileAccess::ReadOnly),
            "read-write" => Ok(FileAccess::ReadWrite),
            other => Err(format!(
                "{other:?} is not a file access (none, read-only or read-write)"
            )),
        }
    }
}

/// Distinguishes temporary files of concurrent writes by this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The granted root of file access.
#[derive(Debug)]
pub struct FileRoot {
    dir: Dir,
    /// The canonical path of the root, for turning absolute paths inside it into
    /// relative ones.
    path: PathBuf,
}

impl FileRoot {
    /// Opens `root`, which must be an existing directory.
    pub fn open(root: &Path) -> std::io::Result<Self> {
        let path = root.canonicalize()?;
        let dir = Dir::open_ambient_dir(&path, ambient_authority())?;
        Ok(FileRoot { dir, path })
    }

    /// The canonical path of the root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads a whole regular file of at most `max_bytes`.
    pub fn read(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, String> {
        let relative = self.relative(path, "read")?;
        let mut options = OpenOptions::new();
        options.read(true);
        set_nonblocking(&mut options);
        let mut file = self
            .dir
            .open_with(&relative, &options)
            .map_err(|e| describe(path, "read", &e))?;
        let metadata = file.metadata().map_err(|e| describe(path, "read", &e))?;
        if !metadata.is_file() {
            return Err(format!("cannot read {path}: not a regular file"));
        }
        if metadata.len() > max_bytes {
            return Err(format!(
                "cannot read {path}: the file is {} bytes, more than the plugin's {} of memory",
                metadata.len(),
                format_bytes(max_bytes)
            ));
        }
        let mut content = Vec::with_capacity(metadata.len() as usize);
        // Bound the read too: the file may grow after the size check.
        (&mut file)
            .take(max_bytes + 1)
            .read_to_end(&mut content)
            .map_err(|e| describe(path, "read", &e))?;
        if content.len() as u64 > max_bytes {
            return Err(format!(
                "cannot read {path}: the file grew past {}",
                format_bytes(max_bytes)
            ));
        }
        Ok(content)
    }

    /// Replaces (or creates) a whole file; the old content survives any failure. A
    /// symlink is written through to its target, which must lie inside the root too.
    pub fn write(&self, path: &str, content: &[u8]) -> Result<(), String> {
        let mut target = self.relative(path, "write")?;
        if let Ok(metadata) = self.dir.symlink_metadata(&target) {
            if metadata.is_symlink() {
                target = self
                    .dir
                    .canonicalize(&target)
                    .map_err(|e| describe(path, "write", &e))?;
            } else if !metadata.is_file() {
                return Err(format!("cannot write {path}: not a regular file"));
            }
        }
        let name = target
            .file_name()
            .ok_or_else(|| format!("cannot write {path}: not a file name"))?
            .to_string_lossy()
            .into_owned();
        let parent = target.parent().unwrap_or(Path::new(""));
        let unique = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = parent.join(format!(
            ".{name}.toolcell-{}-{unique}.tmp",
            std::process::id()
        ));
        let result = self.write_new(&temp, content).and_then(|()| {
            self.dir
                .rename(&temp, &self.dir, &target)
                .map_err(|e| describe(path, "write", &e))
        });
        if result.is_err() {
            let _ = self.dir.remove_file(&temp);
        }
        result.map_err(|error| error.replace(&*temp.to_string_lossy(), path))
    }

    fn write_new(&self, temp: &Path, content: &[u8]) -> Result<(), String> {
        let shown = temp.to_string_lossy();
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        let mut file = self
            .dir
            .open_with(temp, &options)
            .map_err(|e| describe(&shown, "write", &e))?;
        file.write_all(content)
            .map_err(|e| describe(&shown, "write", &e))?;
        file.sync_all().map_err(|e| describe(&shown, "write", &e))
    }

    /// The path relative to the root: relative paths as given, absolute paths only
    /// when they lie inside the root. Where a `..` leads is for cap-std to judge.
    fn relative(&self, path: &str, action: &str) -> Result<PathBuf, String> {
        if path.is_empty() {
            return Err("the path is empty".to_string());
        }
        if path.contains('\0') {
            return Err(format!("invalid path {path:?}: it contains a NUL byte"));
        }
        let given = Path::new(path);
        if !given.is_absolute() {
            return Ok(given.to_path_buf());
        }
        match given.strip_prefix(&self.path) {
            Ok(inside) if inside.as_os_str().is_empty() => Ok(PathBuf::from(".")),
            Ok(inside) => Ok(inside.to_path_buf()),
            Err(_) => Err(format!(
                "cannot {action} {path}: it is outside the granted root"
            )),
        }
    }
}

#[cfg(unix)]
fn set_nonblocking(options: &mut OpenOptions) {
    use cap_std::fs::OpenOptionsExt;
    // Opening a FIFO for reading would block until a writer appears.
    options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
}

#[cfg(not(unix))]
fn set_nonblocking(_options: &mut OpenOptions) {}

/// One line saying what failed, where, and why.
fn describe(path: &str, action: &str, error: &std::io::Error) -> String {
    let text = error.to_string();
    if text.contains("outside of the filesystem") {
        return format!("cannot {action} {path}: it is outside the granted root");
    }
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
        std::io::ErrorKind::StorageFull => "no space left on the device".to_string(),
        _ => text.split(" (os error").next().unwrap_or(&text).to_string(),
    };
    format!("cannot {action} {path}: {reason}")
}
