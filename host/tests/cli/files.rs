//! `--root` and `--files`: `clm.read_file` / `clm.write_file` inside the file root only.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::*;

/// Runs a tool of [`FILES_PLUGIN`] with `--root root`.
fn file_tool(plugins: &Path, root: &Path, tool: &str, args: Value) -> Run {
    run(toolcell()
        .arg("call")
        .arg("--plugins")
        .arg(plugins)
        .arg("--root")
        .arg(root)
        .arg(tool)
        .arg(args.to_string()))
}

/// Asserts a [`FILES_PLUGIN`] result is a refusal.
fn assert_refused(output: &Run, what: &str) {
    if let Err(problem) = refusal(output, what) {
        panic!("{problem}");
    }
}

/// A root with `inside.txt` and `sub/`, next to `outside.txt`, plus the plugin.
struct FilesFixture {
    base: TempDir,
}

impl FilesFixture {
    fn new() -> Self {
        let base = temp_dir();
        write(&base.path().join("plugins/files.lua"), FILES_PLUGIN);
        write(&base.path().join("root/inside.txt"), "inside content");
        fs::create_dir_all(base.path().join("root/sub")).expect("create root/sub");
        write(&base.path().join("outside.txt"), "outside original");
        FilesFixture { base }
    }

    fn plugins(&self) -> PathBuf {
        self.base.path().join("plugins")
    }

    fn root(&self) -> PathBuf {
        self.base.path().join("root")
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.base.path().join(name)
    }

    fn tool(&self, tool: &str, args: Value) -> Run {
        file_tool(&self.plugins(), &self.root(), tool, args)
    }

    fn assert_outside_untouched(&self) {
        assert_eq!(
            fs::read_to_string(self.outside("outside.txt")).expect("read outside.txt"),
            "outside original",
            "the file outside the root must be unchanged"
        );
    }
}

#[test]
fn read_file_reads_inside_the_root() {
    let fixture = FilesFixture::new();
    fixture
        .tool("read", json!({ "path": "inside.txt" }))
        .assert_completed("inside content|nil|nil");
    let absolute = fixture
        .root()
        .canonicalize()
        .expect("canonical root")
        .join("inside.txt");
    fixture
        .tool("read", json!({ "path": absolute.to_string_lossy() }))
        .assert_completed("inside content|nil|nil");
    assert_refused(
        &fixture.tool("read", json!({ "path": "sub/missing.txt" })),
        "reading a missing file",
    );
}

#[test]
fn read_file_refuses_paths_outside_the_root() {
    let fixture = FilesFixture::new();
    let absolute_outside = fixture.outside("outside.txt");
    for path in [
        "../outside.txt".to_string(),
        "sub/../../outside.txt".to_string(),
        absolute_outside.to_string_lossy().into_owned(),
    ] {
        let output = fixture.tool("read", json!({ "path": path }));
        assert_refused(&output, &format!("reading {path}"));
        assert!(
            !output.stdout.contains("outside original"),
            "the content outside the root must not leak{output}"
        );
    }
}

#[test]
fn write_file_writes_inside_the_root() {
    let fixture = FilesFixture::new();
    fixture
        .tool("write", json!({ "path": "new.txt", "content": "fresh" }))
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("new.txt")).expect("read new.txt"),
        "fresh"
    );
    fixture
        .tool(
            "write",
            json!({ "path": "sub/nested.txt", "content": "nested" }),
        )
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("sub/nested.txt")).expect("read nested.txt"),
        "nested"
    );
    fixture
        .tool(
            "write",
            json!({ "path": "inside.txt", "content": "replaced" }),
        )
        .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(fixture.root().join("inside.txt")).expect("read inside.txt"),
        "replaced"
    );
}

#[test]
fn write_file_refuses_paths_outside_the_root() {
    let fixture = FilesFixture::new();
    let cases = [
        ("../outside.txt".to_string(), "outside.txt"),
        ("../escaped.txt".to_string(), "escaped.txt"),
        ("sub/../../escaped_sub.txt".to_string(), "escaped_sub.txt"),
        (
            fixture
                .outside("escaped_abs.txt")
                .to_string_lossy()
                .into_owned(),
            "escaped_abs.txt",
        ),
        (
            fixture
                .outside("outside.txt")
                .to_string_lossy()
                .into_owned(),
            "outside.txt",
        ),
    ];
    for (path, target) in cases {
        let output = fixture.tool("write", json!({ "path": path, "content": "pwned" }));
        assert_refused(&output, &format!("writing {path}"));
        if target != "outside.txt" {
            assert!(
                !fixture.outside(target).exists(),
                "writing {path} must not create {target}{output}"
            );
        }
        fixture.assert_outside_untouched();
    }
}

#[cfg(unix)]
#[test]
fn symlinks_leading_out_of_the_root_are_refused() {
    use std::os::unix::fs::symlink;

    let fixture = FilesFixture::new();
    symlink(
        fixture.outside("outside.txt"),
        fixture.root().join("link_out"),
    )
    .expect("create a file symlink");
    symlink(fixture.base.path(), fixture.root().join("dir_out")).expect("create a dir symlink");
    let before = snapshot(fixture.base.path());

    for path in ["link_out", "dir_out/outside.txt"] {
        let output = fixture.tool("read", json!({ "path": path }));
        assert_refused(&output, &format!("reading through the symlink {path}"));
        assert!(!output.stdout.contains("outside original"), "{output}");
    }
    let mut failures = Vec::new();
    for path in [
        "dir_out/escaped_link.txt",
        "dir_out/outside.txt",
        "link_out",
    ] {
        let output = fixture.tool("write", json!({ "path": path, "content": "pwned" }));
        // Collect rather than stop at the first, so every escape shows up at once.
        if let Err(problem) = refusal(&output, &format!("writing through the symlink {path}")) {
            failures.push(problem);
        }
    }
    fixture.assert_outside_untouched();
    assert!(!fixture.outside("escaped_link.txt").exists());
    assert_eq!(
        snapshot(fixture.base.path()),
        before,
        "refused writes touch nothing, inside or outside the root (failures: {failures:#?})"
    );
    assert!(
        failures.is_empty(),
        "writes through symlinks leading out must fail: {failures:#?}"
    );
}

#[test]
fn the_root_defaults_to_the_current_directory() {
    let fixture = FilesFixture::new();
    let cwd = temp_dir();
    write(&cwd.path().join("present.txt"), "in the working directory");
    let in_cwd = |tool: &str, args: Value| {
        run(toolcell()
            .current_dir(cwd.path())
            .arg("call")
            .arg("--plugins")
            .arg(fixture.plugins())
            .arg(tool)
            .arg(args.to_string()))
    };
    in_cwd("read", json!({ "path": "present.txt" }))
        .assert_completed("in the working directory|nil|nil");
    in_cwd(
        "write",
        json!({ "path": "made_here.txt", "content": "made" }),
    )
    .assert_completed("true|nil|nil");
    assert_eq!(
        fs::read_to_string(cwd.path().join("made_here.txt")).expect("read made_here.txt"),
        "made"
    );
    // The default root is the working directory, not somewhere else such as the
    // plugin directory.
    assert_refused(
        &in_cwd("read", json!({ "path": "../plugins/files.lua" })),
        "reading out of the default root",
    );
    assert!(!fixture.plugins().join("made_here.txt").exists());
}

/// The process's umask, from /proc/self/status (reading it with umask(2) would change it
/// for the other tests' threads).
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))
        .expect("a Umask line");
    u32::from_str_radix(line.trim(), 8).expect("an octal umask")
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).expect("metadata").permissions().mode() & 0o7777
}

#[cfg(unix)]
#[test]
fn write_file_keeps_the_permission_bits_and_refuses_a_trailing_slash() {
    use std::os::unix::fs::{PermissionsExt, symlink};

    let fixture = FilesFixture::new();
    let root = fixture.root();
    for (name, bits) in [("secret.txt", 0o600), ("tool.sh", 0o755)] {
        write(&root.join(name), "before");
        fs::set_permissions(root.join(name), fs::Permissions::from_mode(bits)).expect("chmod");
    }
    symlink("secret.txt", root.join("secret_link")).expect("symlink");

    for (path, file, bits) in [
        ("secret.txt", "secret.txt", 0o600),
        ("tool.sh", "tool.sh", 0o755),
        ("secret_link", "secret.txt", 0o600),
    ] {
        fixture
            .tool("write", json!({ "path": path, "content": "after" }))
            .assert_completed("true|nil|nil");
        assert_eq!(fs::read_to_string(root.join(file)).expect("read"), "after");
        assert_eq!(
            mode(&root.join(file)),
            bits,
            "writing {path} keeps {file}'s bits"
        );
    }
    // A new file gets 0666 less the umask, as any program's would.
    fixture
        .tool("write", json!({ "path": "fresh.txt", "content": "new" }))
        .assert_completed("true|nil|nil");
    assert_eq!(mode(&root.join("fresh.txt")), 0o666 & !umask());

    for (path, end) in [
        ("inside.txt/", "/"),
        ("sub/", "/"),
        ("sub/new.txt/", "/"),
        ("inside.txt/.", "/."),
    ] {
        fixture
            .tool("write", json!({ "path": path, "content": "x" }))
            .assert_completed(&format!(
                "nil|string|cannot write {path}: the path ends with '{end}', so it names a \
                 directory"
            ));
    }
    assert_eq!(
        fs::read_to_string(root.join("inside.txt")).expect("read"),
        "inside content"
    );
    assert!(!root.join("sub/new.txt").exists());
}

#[test]
fn the_files_flag_caps_file_access_for_every_plugin() {
    let plugins = plugin_dir(&[("greeter.lua", GREETER)]);
    let root = temp_dir();
    let output = run(toolcell()
        .args([
            "call",
            "--files",
            "read-only",
            "--plugins",
            path_str(plugins.path()),
        ])
        .arg("--root")
        .arg(root.path())
        .arg("scribble"));
    let message = output.failure();
    assert!(message.contains("cannot write scribble.txt"), "{output}");
    assert!(message.contains("--files read-write"), "{output}");
    assert!(!root.path().join("scribble.txt").exists());
    let bad = toolcell_run(&["call", "--files", "all", "greet"]);
    assert_eq!(bad.code, Some(2), "{bad}");
}
