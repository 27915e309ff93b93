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
//! - a trusted path inside the root is out of plugins' reach: [`crate::services::files::FileRoot`]
//!   refuses to read or write it (and the builder does not use a cache that lies there).

use std::os::unix::ffi::OsStrExt;
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
/// Made for one build: it remembers how each path resolved (see [`ResolvedPaths`]), so
/// a symlink changed later is seen by the next build.
#[derive(Debug, Clone, Default)]
pub struct TrustedPaths {
    paths: Vec<TrustedPath>,
    resolved: ResolvedPaths,
}

impl TrustedPaths {
    /// Adds `path`, described as `what` ("the plugin directory"). It need not exist yet
    /// (a cache directory is created on first use).
    pub fn add(&mut self, what: &'static str, path: &Path) {
        let resolved = self.resolved.resolve(path);
        self.paths.push(TrustedPath {
            what,
            path: path.to_path_buf(),
            resolved,
        });
    }

    /// `path` resolved as the trusted paths were (see [`ResolvedPaths::resolve`]), to
    /// compare it with them.
    pub fn resolve(&mut self, path: &Path) -> PathBuf {
        self.resolved.resolve(path)
    }

    /// The current directory, as relative paths were resolved against it.
    pub fn current_dir(&mut self) -> std::io::Result<PathBuf> {
        self.resolved.current_dir()
    }

    /// The trusted path that `root` (resolved) is, or lies inside, if any: such a root
    /// cannot be granted.
    pub fn enclosing(&self, root: &Path) -> Option<&TrustedPath> {
        self.paths
            .iter()
            .find(|trusted| relative_to(root, &trusted.resolved).is_some())
    }

    /// The trusted paths inside `root` (resolved), each relative to it.
    pub fn inside(&self, root: &Path) -> Vec<Inside> {
        self.paths
            .iter()
            .filter_map(|trusted| {
                let relative = relative_to(&trusted.resolved, root)?;
                Some(Inside {
                    trusted: trusted.clone(),
                    relative: relative.to_path_buf(),
                })
            })
            .collect()
    }
}

/// Paths made absolute, with every symlink of their existing part resolved and the part
/// that does not exist yet (which holds no symlink) kept as written. What one build
/// resolved is remembered for the rest of it: the build compares the same few
/// directories several times (the cache, the root, the current and home directories),
/// a path that does not exist yet is resolved from its parent, which usually was
/// resolved just before (the result store in the cache), with one `readlink`, and a
/// directory on the way to a path that resolved to itself (the home directory, on the
/// way to the default cache) is known to resolve to itself too.
#[derive(Debug, Clone, Default)]
pub struct ResolvedPaths {
    /// The current directory, once asked for.
    cwd: Option<PathBuf>,
    /// Each absolute path resolved so far, as written, and what it resolved to. A
    /// build resolves a handful, so a list.
    resolved: Vec<(PathBuf, PathBuf)>,
}

impl ResolvedPaths {
    /// `path` resolved: relative to the current directory, through every symlink of
    /// the part that exists.
    pub fn resolve(&mut self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            return self.resolve_absolute(path);
        }
        match self.current_dir() {
            Ok(cwd) => self.resolve_absolute(&cwd.join(path)),
            Err(_) => path.to_path_buf(),
        }
    }

    /// The current directory (asked of the system once).
    pub fn current_dir(&mut self) -> std::io::Result<PathBuf> {
        if let Some(cwd) = &self.cwd {
            return Ok(cwd.clone());
        }
        let cwd = std::env::current_dir()?;
        // POSIX `getcwd`: the path holds no symlink, `.` or `..`; it is resolved.
        self.resolved.push((cwd.clone(), cwd.clone()));
        self.cwd = Some(cwd.clone());
        Ok(cwd)
    }

    /// What `path` (absolute) resolves to, if that is known without asking the system:
    /// it was resolved before, or it leads to a path that resolved to itself. Such a
    /// path has no symlink, `.` or `..` on its way (a symlink would have been replaced
    /// by its target, which cannot lead through the symlink), so every directory on
    /// the way resolves to itself as well.
    fn known(&self, path: &Path) -> Option<PathBuf> {
        if let Some((_, resolved)) = self
            .resolved
            .iter()
            .find(|(given, _)| given.as_os_str() == path.as_os_str())
        {
            return Some(resolved.clone());
        }
        let on_the_way = is_plain(path)
            && self.resolved.iter().any(|(given, resolved)| {
                given.as_os_str() == resolved.as_os_str() && relative_to(resolved, path).is_some()
            });
        on_the_way.then(|| path.to_path_buf())
    }

    /// `path` (absolute) resolved: from its parent when the parent's resolution is
    /// known, else by the system, else (part of it does not exist) from its parent.
    fn resolve_absolute(&mut self, path: &Path) -> PathBuf {
        if let Some(resolved) = self.known(path) {
            return resolved;
        }
        let resolved = match path.parent() {
            // The filesystem root.
            None => path.to_path_buf(),
            Some(parent) => match self.known(parent) {
                Some(parent) => resolve_name(parent, path),
                None => match path.canonicalize() {
                    Ok(resolved) => resolved,
                    Err(_) => {
                        let parent = self.resolve_absolute(parent);
                        resolve_name(parent, path)
                    }
                },
            },
        };
        self.resolved.push((path.to_path_buf(), resolved.clone()));
        resolved
    }
}

/// Whether `path` (absolute) is written as a resolved path is: no `.` or `..`, no
/// repeated or trailing `/`.
fn is_plain(path: &Path) -> bool {
    match path.as_os_str().as_bytes() {
        b"/" => true,
        [b'/', rest @ ..] => rest
            .split(|&byte| byte == b'/')
            .all(|name| !matches!(name, b"" | b"." | b"..")),
        _ => false,
    }
}

/// `path` (absolute) resolved, given `parent`, its parent resolved: `..` goes up from
/// there, as the kernel does; a name that is a symlink is followed to the end of its
/// chain; any other name, or one that does not exist, is appended as written.
fn resolve_name(mut parent: PathBuf, path: &Path) -> PathBuf {
    match path.components().next_back() {
        Some(Component::ParentDir) => {
            parent.pop();
        }
        Some(Component::Normal(name)) => {
            parent.push(name);
            // `readlink` fails on anything but a symlink (and on what does not exist);
            // a dangling symlink stays as written: what it names does not exist.
            if std::fs::read_link(&parent).is_ok()
                && let Ok(target) = parent.canonicalize()
            {
                parent = target;
            }
        }
        _ => {}
    }
    parent
}

/// `path` relative to `base`, if it is `base` or lies inside it; both resolved (see
/// [`ResolvedPaths`]). Resolved absolute paths hold no `.`, `..`, repeated or trailing
/// `/`, so comparing their bytes compares their components.
pub fn relative_to<'a>(path: &'a Path, base: &Path) -> Option<&'a Path> {
    if !path.is_absolute() || !base.is_absolute() {
        // Left relative: the current directory could not be read.
        return path.strip_prefix(base).ok();
    }
    let (path_bytes, base_bytes) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
    let rest = path_bytes.strip_prefix(base_bytes)?;
    // Past the filesystem root (the one resolved path ending in `/`), or with nothing
    // past `base`, the rest is whole names; otherwise it must start at a `/` (`/a/bc`
    // is not inside `/a/b`).
    let rest = if base_bytes.ends_with(b"/") || rest.is_empty() {
        rest
    } else {
        rest.strip_prefix(b"/")?
    };
    Some(Path::new(std::ffi::OsStr::from_bytes(rest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_resolved_through_symlinks_even_when_they_do_not_exist_yet() {
        let base = tempfile::TempDir::new().expect("temp dir");
        let real = base.path().join("real");
        std::fs::create_dir_all(real.join("sub")).expect("real");
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        // A symlink inside the tree, and one whose target does not exist.
        std::os::unix::fs::symlink(&link, real.join("sub/back")).expect("symlink");
        std::os::unix::fs::symlink(base.path().join("nowhere"), real.join("dangling"))
            .expect("symlink");
        let real = real.canonicalize().expect("canonical");
        let base = base.path().canonicalize().expect("canonical");

        // One resolver for all, as in a build: what it remembers of one path must not
        // change how the next resolves.
        let mut resolved = ResolvedPaths::default();
        let cases = [
            (link.clone(), real.clone()),
            (link.join("new/cache"), real.join("new/cache")),
            (link.join("new/../cache"), real.join("cache")),
            (link.join("./sub//."), real.join("sub")),
            (link.join("sub/.."), real.clone()),
            // `..` after a symlink leaves where it leads, not where it was written.
            (link.join(".."), base),
            (link.join("sub/back/sub/back/x"), real.join("x")),
            (link.join("dangling"), real.join("dangling")),
        ];
        for (written, expected) in cases {
            assert_eq!(
                resolved.resolve(&written),
                expected,
                "{}",
                written.display()
            );
        }
        assert_eq!(resolved.resolve(Path::new("/")), Path::new("/"));
        // Each agrees with the system's own resolution where the path exists.
        for path in [
            link.clone(),
            link.join("sub/back"),
            link.join("sub/back/.."),
        ] {
            let system = path.canonicalize().expect("exists");
            assert_eq!(resolved.resolve(&path), system, "{}", path.display());
            assert_eq!(ResolvedPaths::default().resolve(&path), system);
        }
    }

    #[test]
    fn directories_on_the_way_to_a_resolved_path_resolve_as_the_system_says() {
        let base = tempfile::TempDir::new().expect("temp dir");
        let base = base.path().canonicalize().expect("canonical");
        let real = base.join("real");
        std::fs::create_dir_all(real.join("sub/deeper")).expect("real");
        std::os::unix::fs::symlink(real.join("sub"), base.join("link")).expect("symlink");

        let mut resolved = ResolvedPaths::default();
        let deep = real.join("sub/deeper");
        assert_eq!(resolved.resolve(&deep), deep);
        for path in [real.join("sub"), real.clone(), base.clone()] {
            assert_eq!(resolved.resolve(&path), path, "{}", path.display());
        }
        // Not on the way, or not written as a resolved path: resolved as usual.
        assert_eq!(resolved.resolve(&base.join("link")), real.join("sub"));
        assert_eq!(resolved.resolve(&base.join("link/deeper")), deep);
        let trailing = PathBuf::from(format!("{}/", real.display()));
        assert_eq!(resolved.resolve(&trailing), real);
        assert_eq!(resolved.resolve(&real.join("sub/..")), real);
        assert_eq!(resolved.resolve(&real.join("su")), real.join("su"));
        assert!(!is_plain(Path::new("/a/./b")) && !is_plain(Path::new("/a//b")));
        assert!(is_plain(Path::new("/")) && is_plain(Path::new("/a/.b")));
    }

    #[test]
    fn relative_to_compares_whole_names() {
        let within = |path: &str, base: &str| {
            relative_to(Path::new(path), Path::new(base)).map(|rest| rest.to_path_buf())
        };
        assert_eq!(within("/a/b/c", "/a/b"), Some(PathBuf::from("c")));
        assert_eq!(within("/a/b", "/a/b"), Some(PathBuf::new()));
        assert_eq!(within("/a/b", "/"), Some(PathBuf::from("a/b")));
        assert_eq!(within("/", "/"), Some(PathBuf::new()));
        assert_eq!(within("/a/bc", "/a/b"), None);
        assert_eq!(within("/a", "/a/b"), None);
        assert_eq!(within("/x/b", "/a/b"), None);
        // Relative (the current directory could not be read): by components.
        assert_eq!(within("a/b", "a"), Some(PathBuf::from("b")));
        assert_eq!(within("ab", "a"), None);
    }

    #[test]
    fn relative_paths_are_resolved_against_the_current_directory() {
        let cwd = std::env::current_dir().expect("cwd");
        let mut resolved = ResolvedPaths::default();
        assert_eq!(
            resolved.resolve(Path::new("not-here/x")),
            cwd.canonicalize().expect("cwd").join("not-here/x")
        );
        assert_eq!(resolved.current_dir().expect("cwd"), cwd);
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
