//! The file root as a security boundary: every way out of the root, and every way into
//! what the host trusts inside it, is refused; what lies inside is read and written.

use std::os::unix::fs::{PermissionsExt, symlink};

use tempfile::TempDir;

use super::*;

/// A temporary directory holding the root `root/` and, beside it, `outside/secret`
/// (what a plugin must never reach).
struct Fixture {
    base: TempDir,
}

impl Fixture {
    fn new() -> Self {
        let base = TempDir::new().expect("temp dir");
        std::fs::create_dir_all(base.path().join("root/sub")).expect("root");
        std::fs::create_dir(base.path().join("outside")).expect("outside");
        std::fs::write(base.path().join("outside/secret"), "secret").expect("secret");
        std::fs::write(base.path().join("root/file.txt"), "inside").expect("file");
        std::fs::write(base.path().join("root/sub/nested.txt"), "nested").expect("nested");
        Fixture { base }
    }

    fn root_dir(&self) -> PathBuf {
        self.base.path().join("root").canonicalize().expect("root")
    }

    fn outside(&self) -> PathBuf {
        self.base
            .path()
            .join("outside")
            .canonicalize()
            .expect("outside")
    }

    fn open(&self) -> FileRoot {
        FileRoot::open(&self.root_dir(), &mut TrustedPaths::default()).expect("root opens")
    }

    /// The root, with `trusted` (paths relative to the root) protected.
    fn open_trusting(&self, trusted: &[(&'static str, &str)]) -> FileRoot {
        let mut paths = TrustedPaths::default();
        for (what, path) in trusted {
            paths.add(what, &self.root_dir().join(path));
        }
        FileRoot::open(&self.root_dir(), &mut paths).expect("root opens")
    }

    fn read_root(&self, path: &str) -> String {
        std::fs::read_to_string(self.root_dir().join(path)).expect("readable")
    }

    fn secret(&self) -> String {
        std::fs::read_to_string(self.outside().join("secret")).expect("secret")
    }
}

const MAX: u64 = 1 << 20;

fn outside(action: Action, path: &str) -> FileError {
    FileError::OutsideRoot {
        action,
        path: path.to_string(),
    }
}

#[test]
fn files_inside_the_root_are_read_by_relative_and_absolute_path() {
    let fixture = Fixture::new();
    let root = fixture.open();

    assert_eq!(root.read("file.txt", MAX).expect("read"), b"inside");
    assert_eq!(root.read("./sub/nested.txt", MAX).expect("read"), b"nested");
    // A `..` that stays inside the root is fine.
    assert_eq!(root.read("sub/../file.txt", MAX).expect("read"), b"inside");
    let absolute = fixture.root_dir().join("sub/nested.txt");
    assert_eq!(
        root.read(absolute.to_str().expect("utf-8"), MAX)
            .expect("read"),
        b"nested"
    );
    assert_eq!(root.path(), fixture.root_dir());
}

#[test]
fn dot_dot_out_of_the_root_is_refused_for_reads_and_writes() {
    let fixture = Fixture::new();
    let root = fixture.open();

    for path in ["../outside/secret", "sub/../../outside/secret", ".."] {
        assert_eq!(
            root.read(path, MAX),
            Err(outside(Action::Read, path)),
            "{path}"
        );
    }
    for path in ["../outside/secret", "sub/../../outside/new"] {
        assert_eq!(
            root.write(path, b"planted"),
            Err(outside(Action::Write, path)),
            "{path}"
        );
    }
    assert_eq!(fixture.secret(), "secret");
    assert!(!fixture.outside().join("new").exists());
}

#[test]
fn absolute_paths_outside_the_root_are_refused_even_when_they_share_its_prefix() {
    let fixture = Fixture::new();
    let root = fixture.open();
    let secret = fixture.outside().join("secret");
    let secret = secret.to_str().expect("utf-8");
    // `root2/` begins with the root's name but is not inside it.
    let sibling = format!("{}2/x", fixture.root_dir().display());

    assert_eq!(root.read(secret, MAX), Err(outside(Action::Read, secret)));
    assert_eq!(
        root.read("/etc/passwd", MAX),
        Err(outside(Action::Read, "/etc/passwd"))
    );
    assert_eq!(
        root.write(secret, b"planted"),
        Err(outside(Action::Write, secret))
    );
    assert_eq!(
        root.write(&sibling, b"planted"),
        Err(outside(Action::Write, &sibling))
    );
    assert_eq!(fixture.secret(), "secret");
}

#[test]
fn symlinks_that_lead_out_of_the_root_are_refused_and_the_target_is_untouched() {
    let fixture = Fixture::new();
    let root_dir = fixture.root_dir();
    symlink(fixture.outside().join("secret"), root_dir.join("absolute")).expect("symlink");
    symlink("../outside/secret", root_dir.join("relative")).expect("symlink");
    symlink(fixture.outside(), root_dir.join("dir")).expect("symlink");
    let root = fixture.open();

    for path in ["absolute", "relative", "dir/secret"] {
        assert_eq!(
            root.read(path, MAX),
            Err(outside(Action::Read, path)),
            "{path}"
        );
        assert_eq!(
            root.write(path, b"planted"),
            Err(outside(Action::Write, path)),
            "{path}"
        );
    }
    assert_eq!(
        root.write("dir/new", b"planted"),
        Err(outside(Action::Write, "dir/new"))
    );
    assert_eq!(fixture.secret(), "secret");
    assert!(!fixture.outside().join("new").exists());
    // The refused writes left no temporary file behind either.
    let mut left: Vec<_> = std::fs::read_dir(fixture.outside())
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["secret"]);
}

#[test]
fn a_symlink_inside_the_root_is_read_and_written_through_to_its_target() {
    let fixture = Fixture::new();
    let root_dir = fixture.root_dir();
    symlink("sub/nested.txt", root_dir.join("alias")).expect("symlink");
    let root = fixture.open();

    assert_eq!(root.read("alias", MAX).expect("read"), b"nested");
    root.write("alias", b"rewritten").expect("write");

    assert_eq!(fixture.read_root("sub/nested.txt"), "rewritten");
    let link = std::fs::symlink_metadata(root_dir.join("alias")).expect("alias");
    assert!(link.file_type().is_symlink(), "the link itself is kept");
}

#[test]
fn trusted_paths_inside_the_root_are_refused_by_every_name() {
    let fixture = Fixture::new();
    let root_dir = fixture.root_dir();
    std::fs::create_dir(root_dir.join("plugins")).expect("plugins");
    std::fs::write(root_dir.join("plugins/tool.lua"), "return {}").expect("plugin");
    std::fs::write(root_dir.join("toolcell.toml"), "").expect("config");
    symlink("plugins", root_dir.join("innocent")).expect("symlink");
    let root = fixture.open_trusting(&[
        ("the plugin directory", "plugins"),
        ("the config file", "toolcell.toml"),
    ]);
    // Named where they lie in the root: the host's absolute layout is not the
    // plugin's to know.
    let plugins = "the plugin directory (plugins)";
    let config = "the config file (toolcell.toml)";
    let protected = |action, path: &str, relation, trusted: &str| FileError::Protected {
        action,
        path: path.to_string(),
        relation,
        trusted: trusted.to_string(),
    };

    for path in [
        "plugins/tool.lua",
        "./plugins/tool.lua",
        "sub/../plugins/tool.lua",
        "innocent/tool.lua",
    ] {
        assert_eq!(
            root.read(path, MAX),
            Err(protected(Action::Read, path, "it lies inside", plugins)),
            "{path}"
        );
        assert_eq!(
            root.write(path, b"planted"),
            Err(protected(Action::Write, path, "it lies inside", plugins)),
            "{path}"
        );
    }
    // A new file in the plugin directory would be loaded as a plugin.
    assert_eq!(
        root.write("plugins/new.lua", b"planted"),
        Err(protected(
            Action::Write,
            "plugins/new.lua",
            "it lies inside",
            plugins
        ))
    );
    let absolute = root_dir.join("toolcell.toml");
    let absolute = absolute.to_str().expect("utf-8");
    for path in ["toolcell.toml", absolute] {
        assert_eq!(
            root.read(path, MAX),
            Err(protected(Action::Read, path, "it is", config)),
            "{path}"
        );
        assert_eq!(
            root.write(path, b"[files]\naccess = \"read-write\""),
            Err(protected(Action::Write, path, "it is", config)),
            "{path}"
        );
    }
    assert_eq!(fixture.read_root("plugins/tool.lua"), "return {}");
    assert_eq!(fixture.read_root("toolcell.toml"), "");
    assert!(!root_dir.join("plugins/new.lua").exists());
    // What is not trusted stays usable, including a name that merely begins alike.
    root.write("plugins2", b"fine")
        .expect("write beside the plugin directory");
    assert_eq!(root.read("plugins2", MAX).expect("read"), b"fine");
    assert_eq!(root.read("file.txt", MAX).expect("read"), b"inside");
}

#[test]
fn a_root_that_is_or_lies_inside_a_trusted_path_cannot_be_opened() {
    let fixture = Fixture::new();
    let root_dir = fixture.root_dir();
    let mut trusted = TrustedPaths::default();
    trusted.add("the cache", &root_dir);

    let error = FileRoot::open(&root_dir, &mut trusted).expect_err("the root is trusted");
    assert_eq!(
        error.to_string(),
        format!(
            "it is or lies inside the cache {}, which plugins may not read or change",
            root_dir.display()
        )
    );
    assert!(matches!(
        FileRoot::open(&root_dir.join("sub"), &mut trusted),
        Err(RootError::Trusted(_))
    ));
    assert!(matches!(
        FileRoot::open(&root_dir.join("missing"), &mut TrustedPaths::default()),
        Err(RootError::Open(_))
    ));
}

#[test]
fn writes_to_paths_that_name_a_directory_or_no_file_are_refused() {
    let fixture = Fixture::new();
    let root = fixture.open();

    assert_eq!(root.write("", b"x"), Err(FileError::EmptyPath));
    assert_eq!(root.read("", MAX), Err(FileError::EmptyPath));
    assert_eq!(
        root.write("a\0b", b"x"),
        Err(FileError::NulByte {
            path: "a\0b".to_string()
        })
    );
    // Without the check, `file.txt/` would write the file `file.txt`.
    assert_eq!(
        root.write("file.txt/", b"x"),
        Err(FileError::DirectoryPath {
            path: "file.txt/".to_string(),
            end: "/"
        })
    );
    assert_eq!(
        root.write("file.txt/.", b"x"),
        Err(FileError::DirectoryPath {
            path: "file.txt/.".to_string(),
            end: "/."
        })
    );
    assert_eq!(
        root.write("sub", b"x"),
        Err(FileError::NotRegularFile {
            action: Action::Write,
            path: "sub".to_string()
        })
    );
    assert_eq!(
        root.write("sub/..", b"x"),
        Err(FileError::NotRegularFile {
            action: Action::Write,
            path: "sub/..".to_string()
        })
    );
    assert_eq!(
        root.write("missing/new.txt", b"x"),
        Err(FileError::Io {
            action: Action::Write,
            path: "missing/new.txt".to_string(),
            reason: "no such file or directory".to_string()
        })
    );
    assert_eq!(fixture.read_root("file.txt"), "inside");
}

#[test]
fn reads_take_regular_files_within_the_plugins_memory_only() {
    let fixture = Fixture::new();
    let root_dir = fixture.root_dir();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root_dir.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("fifo");
    std::fs::write(root_dir.join("big"), vec![b'x'; 1025]).expect("big");
    let root = fixture.open();

    // A FIFO without a writer must neither block nor be read.
    assert_eq!(
        root.read("fifo", MAX),
        Err(FileError::NotRegularFile {
            action: Action::Read,
            path: "fifo".to_string()
        })
    );
    assert_eq!(
        root.read("sub", MAX),
        Err(FileError::NotRegularFile {
            action: Action::Read,
            path: "sub".to_string()
        })
    );
    assert_eq!(
        root.read("big", 1024),
        Err(FileError::TooLarge {
            path: "big".to_string(),
            size: 1025,
            max: 1024
        })
    );
    assert_eq!(root.read("big", 1025).expect("fits").len(), 1025);
    let missing = root.read("missing.txt", MAX).expect_err("missing");
    assert_eq!(
        missing.to_string(),
        "cannot read missing.txt: no such file or directory"
    );
}

#[test]
fn a_rewrite_replaces_the_whole_content_and_keeps_the_files_permissions() {
    let fixture = Fixture::new();
    let root_dir = fixture.root_dir();
    std::fs::set_permissions(
        root_dir.join("file.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .expect("chmod");
    let root = fixture.open();

    root.write("file.txt", b"new").expect("write");
    root.write("sub/created.txt", b"created").expect("create");

    assert_eq!(fixture.read_root("file.txt"), "new");
    assert_eq!(fixture.read_root("sub/created.txt"), "created");
    let mode = |path: &str| {
        std::fs::metadata(root_dir.join(path))
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("file.txt"), 0o640);
    // A new file is not private: 0666 less the umask (never more than 0666).
    let created = mode("sub/created.txt");
    assert_eq!(created & !0o666, 0, "{created:o}");
    assert_ne!(created & 0o600, 0, "{created:o}");
    // No temporary file is left beside the targets.
    for dir in [root_dir.clone(), root_dir.join("sub")] {
        for entry in std::fs::read_dir(&dir).expect("list") {
            let name = entry.expect("entry").file_name();
            assert!(
                !name.to_string_lossy().ends_with(".tmp"),
                "{name:?} left in {}",
                dir.display()
            );
        }
    }
}

#[test]
fn file_access_parses_its_three_words_and_orders_them_by_what_they_allow() {
    for access in [
        FileAccess::None,
        FileAccess::ReadOnly,
        FileAccess::ReadWrite,
    ] {
        assert_eq!(access.as_str().parse(), Ok(access));
        assert_eq!(access.to_string(), access.as_str());
    }
    assert_eq!(
        "write".parse::<FileAccess>(),
        Err(UnknownFileAccess("write".to_string()))
    );
    assert_eq!(
        UnknownFileAccess("rw".to_string()).to_string(),
        "\"rw\" is not a file access (none, read-only or read-write)"
    );
    let can = |access: FileAccess| (access.can_read(), access.can_write());
    assert_eq!(can(FileAccess::None), (false, false));
    assert_eq!(can(FileAccess::ReadOnly), (true, false));
    assert_eq!(can(FileAccess::ReadWrite), (true, true));
    // The grant is the lesser of ask and policy: `min` must follow what is allowed.
    assert_eq!(
        FileAccess::ReadWrite.min(FileAccess::ReadOnly),
        FileAccess::ReadOnly
    );
    assert_eq!(FileAccess::ReadOnly.min(FileAccess::None), FileAccess::None);
    assert_eq!(FileAccess::default(), FileAccess::None);
}

#[test]
fn a_runtime_without_a_root_refuses_with_its_reason() {
    let refused = Files::Refused("no file root: --root is not set".into());
    for error in [refused.reading().err(), refused.writing().err()] {
        assert_eq!(error.as_deref(), Some("no file root: --root is not set"));
    }
    assert_eq!(refused.path(), None);
    let fixture = Fixture::new();
    let files = Files::Root(Arc::new(fixture.open()));
    let reading = files.reading().expect("root").expect("an open root");
    assert_eq!(reading.path(), fixture.root_dir().as_path());
    assert_eq!(files.writing().expect("root").path(), reading.path());
    assert_eq!(files.path(), Some(fixture.root_dir().as_path()));
}
