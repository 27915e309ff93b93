//! `clm.read_file` / `clm.write_file`: the one directory tree a plugin may touch.
//!
//! Every access goes through a `cap_std::fs::Dir` opened on the granted root, so `..`
//! that leads out, absolute paths outside the root and symlinks that lead out fail in
//! the kernel-facing layer itself, not in string checks. Reads accept regular files
//! only (no devices, FIFOs or directories) and refuse files larger than the plugin could
//! hold. Writes go to a temporary file that replaces the target only when complete, so
//! a failed write (a full disk) leaves the old content intact; the file keeps its
//! permission bits. What the host trusts that lies inside the root (the plugin
//! directories, the cache, the config file: see `trusted`) is refused, read or write.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use crate::base::limits::format_bytes;
use crate::services::trusted::{Inside, TrustedPaths};

pub use own::{DATA_DIRS, DataDirs, DefaultRoot, FileRoots, OwnRoot};

mod own;

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

/// A word that is not a file access.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a file access (none, read-only or read-write)")]
pub struct UnknownFileAccess(pub String);

impl std::str::FromStr for FileAccess {
    type Err = UnknownFileAccess;

    /// Parses `none`, `read-only` or `read-write`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "none" => Ok(FileAccess::None),
            "read-only" => Ok(FileAccess::ReadOnly),
            "read-write" => Ok(FileAccess::ReadWrite),
            other => Err(UnknownFileAccess(other.to_string())),
        }
    }
}

/// Distinguishes temporary files of concurrent writes by this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A plugin's file root, or why it has none.
#[derive(Debug, Clone)]
pub enum Files {
    /// A root the user granted (shared, or this plugin's alone).
    Root(Arc<FileRoot>),
    /// The plugin's own directory, created on its first write.
    Own(Arc<OwnRoot>),
    /// No root: every access fails with this reason.
    Refused(Arc<str>),
}

impl Files {
    /// The root to read from; `None` when it is the plugin's own directory and that
    /// does not exist yet, so there is nothing to read. The error is why there is no
    /// root.
    pub fn reading(&self) -> Result<Option<Arc<FileRoot>>, String> {
        match self {
            Files::Root(root) => Ok(Some(root.clone())),
            Files::Own(own) => own.existing(),
            Files::Refused(reason) => Err(reason.to_string()),
        }
    }

    /// The root to write to, the plugin's own directory created if need be.
    pub fn writing(&self) -> Result<Arc<FileRoot>, String> {
        match self {
            Files::Root(root) => Ok(root.clone()),
            Files::Own(own) => own.created(),
            Files::Refused(reason) => Err(reason.to_string()),
        }
    }

    /// Where the root is, as the plugin sees it (`clm.data_dir`); `None` without one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Files::Root(root) => Some(root.path()),
            Files::Own(own) => Some(own.path()),
            Files::Refused(_) => None,
        }
    }
}

/// Why a directory cannot be the file root.
#[derive(Debug, thiserror::Error)]
pub enum RootError {
    /// It cannot be opened (missing, not a directory, no permission).
    #[error("{0}")]
    Open(#[from] std::io::Error),
    /// It is, or lies inside, a path the host trusts: plugins could change it.
    #[error("it is or lies inside {0}, which plugins may not read or change")]
    Trusted(String),
}

/// What a plugin tried to do with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `read_file`.
    Read,
    /// `write_file`.
    Write,
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Action::Read => "read",
            Action::Write => "write",
        })
    }
}

/// Why a read or write under the root failed; the text names the path as the plugin
/// gave it, never what it resolved to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// The path is empty.
    #[error("the path is empty")]
    EmptyPath,
    /// The path contains a NUL byte.
    #[error("invalid path {path:?}: it contains a NUL byte")]
    NulByte {
        /// The path.
        path: String,
    },
    /// The path leads outside the root.
    #[error("cannot {action} {path}: it is outside the granted root")]
    OutsideRoot {
        /// What was tried.
        action: Action,
        /// The path.
        path: String,
    },
    /// The path is, or lies inside, something the host trusts.
    #[error("cannot {action} {path}: {relation} {trusted}, which plugins may not read or change")]
    Protected {
        /// What was tried.
        action: Action,
        /// The path.
        path: String,
        /// "it is" or "it lies inside".
        relation: &'static str,
        /// What the host trusts there, and where in the root ("the plugin directory
        /// (plugins)").
        trusted: String,
    },
    /// It is a directory, a device, a FIFO, ...
    #[error("cannot {action} {path}: not a regular file")]
    NotRegularFile {
        /// What was tried.
        action: Action,
        /// The path.
        path: String,
    },
    /// A path that names a directory (`x/`, `x/.`) given to a write.
    #[error("cannot write {path}: the path ends with '{end}', so it names a directory")]
    DirectoryPath {
        /// The path.
        path: String,
        /// `/` or `/.`.
        end: &'static str,
    },
    /// A write to a path without a file name (`..`).
    #[error("cannot write {path}: not a file name")]
    NotAFileName {
        /// The path.
        path: String,
    },
    /// The file is larger than the plugin could hold.
    #[error(
        "cannot read {path}: the file is {size} bytes, more than the plugin's {} of memory",
        format_bytes(*max)
    )]
    TooLarge {
        /// The path.
        path: String,
        /// Its size.
        size: u64,
        /// The plugin's memory.
        max: u64,
    },
    /// The file grew past the plugin's memory while it was read.
    #[error("cannot read {path}: the file grew past {}", format_bytes(*max))]
    Grew {
        /// The path.
        path: String,
        /// The plugin's memory.
        max: u64,
    },
    /// The system refused or failed.
    #[error("cannot {action} {path}: {reason}")]
    Io {
        /// What was tried.
        action: Action,
        /// The path.
        path: String,
        /// Why, in words ("no such file or directory").
        reason: String,
    },
}

/// The granted root of file access.
#[derive(Debug)]
pub struct FileRoot {
    dir: Dir,
    /// The canonical path of the root, for turning absolute paths inside it into
    /// relative ones.
    path: PathBuf,
    /// What the host trusts inside the root: plugins may neither read nor write there.
    protected: Vec<Inside>,
}

impl FileRoot {
    /// Opens `root`, which must be an existing directory that is not, and does not lie
    /// inside, any of `trusted`; the trusted paths inside it are protected. `root` is
    /// resolved as they were, so a path `trusted` resolved already costs nothing more.
    pub fn open(root: &Path, trusted: &mut TrustedPaths) -> Result<Self, RootError> {
        let path = trusted.resolve(root);
        // Opened before the check, so a root that does not exist is reported as such.
        let dir = Dir::open_ambient_dir(&path, ambient_authority())?;
        if let Some(enclosing) = trusted.enclosing(&path) {
            return Err(RootError::Trusted(enclosing.describe()));
        }
        let protected = trusted.inside(&path);
        Ok(FileRoot {
            dir,
            path,
            protected,
        })
    }

    /// The canonical path of the root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads a whole regular file of at most `max_bytes`.
    pub fn read(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, FileError> {
        let read = |error: std::io::Error| describe(path, Action::Read, &error);
        let mut relative = self.relative(path, Action::Read)?;
        if !self.protected.is_empty() {
            relative = self.dir.canonicalize(&relative).map_err(read)?;
            self.check_unprotected(&relative, path, Action::Read)?;
        }
        let mut options = OpenOptions::new();
        options.read(true);
        set_nonblocking(&mut options);
        let mut file = self.dir.open_with(&relative, &options).map_err(read)?;
        let metadata = file.metadata().map_err(read)?;
        if !metadata.is_file() {
            return Err(FileError::NotRegularFile {
                action: Action::Read,
                path: path.to_string(),
            });
        }
        if metadata.len() > max_bytes {
            return Err(FileError::TooLarge {
                path: path.to_string(),
                size: metadata.len(),
                max: max_bytes,
            });
        }
        let mut content = Vec::with_capacity(metadata.len() as usize);
        // Bound the read too: the file may grow after the size check.
        (&mut file)
            .take(max_bytes + 1)
            .read_to_end(&mut content)
            .map_err(read)?;
        if content.len() as u64 > max_bytes {
            return Err(FileError::Grew {
                path: path.to_string(),
                max: max_bytes,
            });
        }
        Ok(content)
    }

    /// Replaces (or creates) a whole file; the old content survives any failure, and
    /// an existing file keeps its permission bits (a new one gets 0666 less the umask).
    /// A symlink is written through to its target, which must lie inside the root too.
    pub fn write(&self, path: &str, content: &[u8]) -> Result<(), FileError> {
        let write = |error: std::io::Error| describe(path, Action::Write, &error);
        // `Path` drops a trailing `/` or `/.`, which would make "x/" write the file x.
        if path.ends_with('/') || path.ends_with("/.") {
            let end = if path.ends_with('/') { "/" } else { "/." };
            return Err(FileError::DirectoryPath {
                path: path.to_string(),
                end,
            });
        }
        let mut target = self.relative(path, Action::Write)?;
        let mut mode = None;
        if let Ok(metadata) = self.dir.symlink_metadata(&target) {
            if metadata.is_symlink() {
                target = self.dir.canonicalize(&target).map_err(write)?;
                mode = self
                    .dir
                    .metadata(&target)
                    .ok()
                    .map(|target| permission_bits(&target));
            } else if !metadata.is_file() {
                return Err(FileError::NotRegularFile {
                    action: Action::Write,
                    path: path.to_string(),
                });
            } else {
                mode = Some(permission_bits(&metadata));
            }
        }
        let name = target
            .file_name()
            .ok_or_else(|| FileError::NotAFileName {
                path: path.to_string(),
            })?
            .to_string_lossy()
            .into_owned();
        let mut parent = target.parent().unwrap_or(Path::new("")).to_path_buf();
        if !self.protected.is_empty() {
            let here = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                &parent
            };
            parent = self.dir.canonicalize(here).map_err(write)?;
            target = parent.join(&name);
            self.check_unprotected(&target, path, Action::Write)?;
        }
        let unique = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = parent.join(format!(
            ".{name}.toolcell-{}-{unique}.tmp",
            std::process::id()
        ));
        let result = self
            .write_new(&temp, content, mode)
            .and_then(|()| self.dir.rename(&temp, &self.dir, &target))
            .map_err(write);
        if result.is_err() {
            let _ = self.dir.remove_file(&temp);
        }
        result
    }

    /// Writes `content` to the new file `temp`, with permission bits `mode` when the
    /// file it will replace had them (set before any content is written, so a private
    /// file's content is never readable by others on the way).
    fn write_new(&self, temp: &Path, content: &[u8], mode: Option<u32>) -> std::io::Result<()> {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        if mode.is_some() {
            private_mode(&mut options);
        }
        let mut file = self.dir.open_with(temp, &options)?;
        if let Some(mode) = mode {
            set_mode(&file, mode)?;
        }
        file.write_all(content)?;
        file.sync_all()
    }

    /// Refuses `resolved` (relative to the root, symlinks resolved) when it is or lies
    /// inside a protected path.
    fn check_unprotected(
        &self,
        resolved: &Path,
        path: &str,
        action: Action,
    ) -> Result<(), FileError> {
        // Only names remain of a resolved path, but it may begin with `.`.
        let resolved: PathBuf = resolved
            .components()
            .filter(|component| matches!(component, Component::Normal(_)))
            .collect();
        let Some(inside) = self
            .protected
            .iter()
            .find(|inside| resolved.starts_with(&inside.relative))
        else {
            return Ok(());
        };
        let relation = if resolved == inside.relative {
            "it is"
        } else {
            "it lies inside"
        };
        Err(FileError::Protected {
            action,
            path: path.to_string(),
            relation,
            // Named by where it lies in the root: the plugin sees root-relative paths,
            // and the host's own layout (home, cache) is none of its business.
            trusted: format!("{} ({})", inside.trusted.what, inside.relative.display()),
        })
    }

    /// The path relative to the root: relative paths as given, absolute paths only
    /// when they lie inside the root. Where a `..` leads is for cap-std to judge.
    fn relative(&self, path: &str, action: Action) -> Result<PathBuf, FileError> {
        if path.is_empty() {
            return Err(FileError::EmptyPath);
        }
        if path.contains('\0') {
            return Err(FileError::NulByte {
                path: path.to_string(),
            });
        }
        let given = Path::new(path);
        if !given.is_absolute() {
            return Ok(given.to_path_buf());
        }
        match given.strip_prefix(&self.path) {
            Ok(inside) if inside.as_os_str().is_empty() => Ok(PathBuf::from(".")),
            Ok(inside) => Ok(inside.to_path_buf()),
            Err(_) => Err(FileError::OutsideRoot {
                action,
                path: path.to_string(),
            }),
        }
    }
}

/// The permission bits a rewritten file keeps: read, write and execute for each class.
/// Set-user-ID, set-group-ID and sticky bits are dropped, as the kernel drops the
/// first two when anyone but root writes to such a file.
#[cfg(unix)]
fn permission_bits(metadata: &cap_std::fs::Metadata) -> u32 {
    use cap_std::fs::PermissionsExt;
    metadata.permissions().mode() & 0o777
}

#[cfg(not(unix))]
fn permission_bits(_metadata: &cap_std::fs::Metadata) -> u32 {
    0
}

/// Creates the file readable by its owner alone, until `set_mode` gives it its bits.
#[cfg(unix)]
fn private_mode(options: &mut OpenOptions) {
    use cap_std::fs::OpenOptionsExt;
    options.mode(0o600);
}

#[cfg(not(unix))]
fn private_mode(_options: &mut OpenOptions) {}

/// Gives the open file exactly `mode` (the umask does not apply).
#[cfg(unix)]
fn set_mode(file: &cap_std::fs::File, mode: u32) -> std::io::Result<()> {
    use cap_std::fs::PermissionsExt;
    file.set_permissions(cap_std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &cap_std::fs::File, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn set_nonblocking(options: &mut OpenOptions) {
    use cap_std::fs::OpenOptionsExt;
    // Opening a FIFO for reading would block until a writer appears.
    options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
}

#[cfg(not(unix))]
fn set_nonblocking(_options: &mut OpenOptions) {}

/// What failed, where, and why, in words.
fn describe(path: &str, action: Action, error: &std::io::Error) -> FileError {
    let path = path.to_string();
    let text = error.to_string();
    if text.contains("outside of the filesystem") {
        return FileError::OutsideRoot { action, path };
    }
    let reason = match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "it is a directory".to_string(),
        std::io::ErrorKind::StorageFull => "no space left on the device".to_string(),
        _ => text.split(" (os error").next().unwrap_or(&text).to_string(),
    };
    FileError::Io {
        action,
        path,
        reason,
    }
}

#[cfg(test)]
mod tests;
