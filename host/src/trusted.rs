//! The paths the host trusts, and where they meet a plugin's file root.
//!
//! The host acts on what it finds in some places: it maps compiled code from the cache,
//! loads plugins from the plugin directories, takes grants from the config file and
//! digests from the lock file, and writes every plugin's messages to the debug log. A
//! plugin that could write one of them would escape its sandbox the next time the host
//! reads it (a planted cache entry runs as native code, a planted plugin with `serve
//! --watch` at once); one that could read them would see other plugins' secrets and
//! output. So every such path is listed in [`TrustedPaths`] and compared with the file
//! root, both with symlinks resolved:
//!
//! - a root that is, or lies inside, a trusted path is refused;
//! - a trusted path inside the root is out of plugins' reach: [`crate::files::FileRoot`]
//!   refuses to read or write it (and the builder does not use a cache that lies there).

use std::path::{Component, Path, PathBuf};

/// One path the host trusts.
#[derive(Debug, Clone)]
pub struct TrustedPath {
    /// What it is, as messages name it: "the plugin directory", "the config file".
    pub what: &'static str,
    /// The path as it was given, for messages.
    pub path: PathBuf,
    /// The absolute path with every symlink of its existing part resolved.
    resolved: PathBuf,
}

impl TrustedPath {
    /// "the config file /home/me/toolcell.toml".
    pub fn describe(&self) -> String {
        format!("{} {}", self.what, self.path.display())
    }
}

/// A trusted path inside a file root.
#[derive(Debug, Clone)]
pub struct Inside {
    /// The trusted path.
    pub trusted: TrustedPath,
    /// Where it lies, relative to the root (resolved, so it can be compared with other
    /// resolved paths under the root).
    pub relative: PathBuf,
}

/// Every path the host trusts: what it runs, what grants, what it writes for the user.
#[derive(Debug, Clone, Default)]
pub struct TrustedPaths {
    paths: Vec<TrustedPath>,
}

impl TrustedPaths {
    /// Adds `path`, described as `what` ("the plugin directory"). It need not exist yet
    /// (a cache directory is created on first use).
    pub fn add(&mut self, what: &'static str, path: &Path) {
        self.paths.push(TrustedPath {
            what,
            path: path.to_path_buf(),
            resolved: resolve(path),
        });
    }

    /// The trusted path that `root` (resolved) is, or lies inside, if any: such a root
    /// cannot be granted.
    pub fn enclosing(&self, root: &Path) -> Option<&TrustedPath> {
        self.paths
            .iter()
            .find(|trusted| root.starts_with(&trusted.resolved))
    }

    /// The trusted paths inside `root` (resolved), each relative to it.
    pub fn inside(&self, root: &Path) -> Vec<Inside> {
        self.paths
            .iter()
            .filter_map(|trusted| {
                let relative = trusted.resolved.strip_prefix(root).ok()?;
                Some(Inside {
                    trusted: trusted.clone(),
                    relative: relative.to_path_buf(),
                })
            })
            .collect()
    }
}

/// Whether `path` lies inside `dir` or is `dir`, both resolved with [`resolve`].
pub fn lies_within(path: &Path, dir: &Path) -> bool {
    resolve(path).starts_with(resolve(dir))
}

/// `path` made absolute, with the symlinks of its longest existing prefix resolved and
/// the rest (which does not exist yet, so holds no symlink) normalised as written.
pub fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(_) => path.to_path_buf(),
        }
    };
    let components: Vec<Component> = absolute.components().collect();
    for existing in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..existing].iter().collect();
        if let Ok(mut resolved) = prefix.canonicalize() {
            for component in &components[existing..] {
                match component {
                    Component::ParentDir => {
                        resolved.pop();
                    }
                    Component::Normal(name) => resolved.push(name),
                    _ => {}
                }
            }
            return resolved;
        }
    }
    absolute
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_resolved_through_symlinks_even_when_they_do_not_exist_yet() {
        let base = tempfile::TempDir::new().expect("temp dir");
        let real = base.path().join("real");
        std::fs::create_dir(&real).expect("real");
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let real = real.canonicalize().expect("canonical");

        assert_eq!(resolve(&link), real);
        assert_eq!(resolve(&link.join("new/cache")), real.join("new/cache"));
        assert_eq!(resolve(&link.join("new/../cache")), real.join("cache"));
        assert!(lies_within(&link.join("new"), &real));
        assert!(!lies_within(&base.path().join("other"), &real));
    }

    #[test]
    fn a_root_inside_a_trusted_path_is_found_and_trusted_paths_inside_a_root_too() {
        let base = tempfile::TempDir::new().expect("temp dir");
        let root = base.path().canonicalize().expect("canonical");
        let mut trusted = TrustedPaths::default();
        trusted.add("the plugin directory", &root.join("plugins"));
        trusted.add("the config file", Path::new("/nowhere/toolcell.toml"));

        let inside = trusted.inside(&root);
        assert_eq!(inside.len(), 1);
        assert_eq!(inside[0].relative, Path::new("plugins"));
        assert_eq!(
            inside[0].trusted.describe(),
            format!("the plugin directory {}", root.join("plugins").display())
        );
        assert!(trusted.enclosing(&root).is_none());
        let within = trusted
            .enclosing(&root.join("plugins/sub"))
            .expect("inside the plugin directory");
        assert_eq!(within.what, "the plugin directory");
        // A sibling sharing a prefix of the name is not inside.
        assert!(trusted.enclosing(&root.join("plugins2")).is_none());
    }
}
