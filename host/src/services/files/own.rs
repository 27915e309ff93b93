//! Which file root each plugin gets, and the plugins' own data directories.
//!
//! Plugins do not share files unless the user says so: a plugin's root is its
//! `[plugins.ID.files] root`, else the one shared root (`--root`, `[files] root`), else
//! its own directory `BASE/ID` under the data directory the embedder gave
//! (`RuntimeBuilder::data_dir`; the command's is `$XDG_DATA_HOME/toolcell/data`). An own
//! directory is created (mode 0700) on the plugin's first write, not at load, so a
//! plugin that never writes leaves nothing behind. Each is a [`FileRoot`] of its own, so
//! every rule of a root holds in it: `..`, absolute paths and symlinks that lead out,
//! into another plugin's directory included, are refused by cap-std.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{FileRoot, Files, RootError};
use crate::services::trusted::TrustedPaths;

/// What messages call the directory that holds the plugins' own directories, when it is
/// protected in a root that contains it.
pub const DATA_DIRS: &str = "the plugins' data directory";

/// The file root of every plugin of a runtime.
#[derive(Debug, Clone)]
pub struct FileRoots {
    /// `[plugins.ID.files] root`, by plugin id.
    pub by_plugin: HashMap<String, Files>,
    /// What every other plugin gets.
    pub default: DefaultRoot,
}

/// The root of a plugin the user gave none of its own.
#[derive(Debug, Clone)]
pub enum DefaultRoot {
    /// One root every such plugin shares (or why there is none).
    Shared(Files),
    /// Each plugin its own directory under this base.
    Own(Arc<DataDirs>),
}

impl FileRoots {
    /// Every plugin shares `files` (tests, and runtimes with one root).
    pub fn shared(files: Files) -> Self {
        FileRoots {
            by_plugin: HashMap::new(),
            default: DefaultRoot::Shared(files),
        }
    }

    /// The root of plugin `id`.
    pub fn of(&self, id: &str) -> Files {
        if let Some(files) = self.by_plugin.get(id) {
            return files.clone();
        }
        match &self.default {
            DefaultRoot::Shared(files) => files.clone(),
            DefaultRoot::Own(dirs) => dirs.of(id),
        }
    }
}

/// The directory under which each plugin gets its own.
#[derive(Debug)]
pub struct DataDirs {
    /// The base, with the symlinks of its existing part resolved, so the paths plugins
    /// are shown compare with the roots' resolved paths.
    base: PathBuf,
    /// What the host trusts, without the base itself: checked again when a plugin's
    /// directory is opened, which may be long after the build.
    trusted: TrustedPaths,
}

impl DataDirs {
    /// The plugins' directories under `base`, which must not be, nor lie inside, a path
    /// of `trusted`. `base` need not exist yet.
    pub fn new(base: &Path, mut trusted: TrustedPaths) -> Result<Self, RootError> {
        let base = trusted.resolve(base);
        if let Some(enclosing) = trusted.enclosing(&base) {
            return Err(RootError::Trusted(enclosing.describe()));
        }
        Ok(DataDirs { base, trusted })
    }

    /// The root of plugin `id`: `BASE/ID`, a namespaced id's `/` written `+` (as
    /// `install` names its file), so no plugin's directory lies inside another's.
    pub fn of(self: &Arc<Self>, id: &str) -> Files {
        match dir_name(id) {
            Some(name) => Files::Own(Arc::new(OwnRoot {
                path: self.base.join(name),
                dirs: self.clone(),
                opened: Mutex::new(None),
            })),
            None => Files::Refused(
                format!("the plugin id {id:?} cannot name a directory of its own").into(),
            ),
        }
    }
}

/// `id` as one directory name, or `None` when it is not one (ids are checked when the
/// manifest is read; this keeps a path from being built of anything else).
fn dir_name(id: &str) -> Option<String> {
    let segment = |text: &str| {
        text.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && text
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._".contains(c))
    };
    let segments: Vec<&str> = id.split('/').collect();
    (segments.len() <= 2 && segments.iter().all(|text| segment(text))).then(|| segments.join("+"))
}

/// One plugin's own directory, opened on first use.
#[derive(Debug)]
pub struct OwnRoot {
    /// `BASE/ID`.
    path: PathBuf,
    dirs: Arc<DataDirs>,
    /// The root once the directory exists and was opened.
    opened: Mutex<Option<Arc<FileRoot>>>,
}

impl OwnRoot {
    /// Where the directory is (or will be, once the plugin writes).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory as a root, if it exists.
    pub fn existing(&self) -> Result<Option<Arc<FileRoot>>, String> {
        let mut opened = self
            .opened
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(root) = &*opened {
            return Ok(Some(root.clone()));
        }
        if !self.path.is_dir() {
            return Ok(None);
        }
        self.open_into(&mut opened).map(Some)
    }

    /// The directory as a root, created first (0700, with its missing parents) if it
    /// does not exist.
    pub fn created(&self) -> Result<Arc<FileRoot>, String> {
        let mut opened = self
            .opened
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(root) = &*opened {
            return Ok(root.clone());
        }
        create_private(&self.path).map_err(|error| {
            format!(
                "cannot create the plugin's directory {}: {error}",
                self.path.display()
            )
        })?;
        self.open_into(&mut opened)
    }

    /// Opens the directory as a root under every rule of a granted one, and keeps it.
    fn open_into(&self, opened: &mut Option<Arc<FileRoot>>) -> Result<Arc<FileRoot>, String> {
        let mut trusted = self.dirs.trusted.clone();
        let root = FileRoot::open(&self.path, &mut trusted).map_err(|error| {
            format!(
                "cannot use the plugin's directory {}: {error}",
                self.path.display()
            )
        })?;
        let root = Arc::new(root);
        *opened = Some(root.clone());
        Ok(root)
    }
}

/// Creates `path` and its missing parents readable by their owner alone.
#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

#[cfg(not(unix))]
fn create_private(path: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_names_one_directory_that_holds_no_other() {
        assert_eq!(dir_name("notes").as_deref(), Some("notes"));
        assert_eq!(dir_name("acme/notes").as_deref(), Some("acme+notes"));
        for bad in [
            "", ".", "..", "a/b/c", "/abs", "a/..", "-x", "A", "a\0b", ".hidden",
        ] {
            assert_eq!(dir_name(bad), None, "{bad:?} must name no directory");
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_own_directory_is_made_private_on_first_write_only() {
        use std::os::unix::fs::PermissionsExt;

        let base = tempfile::TempDir::new().expect("temp dir");
        let dirs = Arc::new(
            DataDirs::new(&base.path().join("data"), TrustedPaths::default()).expect("dirs"),
        );
        let Files::Own(own) = dirs.of("acme/notes") else {
            panic!("an own directory");
        };
        assert!(own.existing().expect("no error").is_none());
        assert!(
            !base.path().join("data").exists(),
            "reading creates nothing"
        );
        let root = own.created().expect("created");
        assert!(own.existing().expect("no error").is_some());
        let made = base.path().join("data/acme+notes");
        assert_eq!(root.path(), made.canonicalize().expect("canonical"));
        for dir in [base.path().join("data"), made] {
            let mode = std::fs::metadata(&dir)
                .expect("metadata")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "{} is private", dir.display());
        }
    }

    #[test]
    fn a_base_inside_a_trusted_path_is_refused() {
        let base = tempfile::TempDir::new().expect("temp dir");
        let mut trusted = TrustedPaths::default();
        trusted.add("the plugin directory", base.path());
        let refused = DataDirs::new(&base.path().join("data"), trusted);
        assert!(
            matches!(&refused, Err(RootError::Trusted(what)) if what.starts_with("the plugin directory")),
            "{refused:?}"
        );
    }
}
