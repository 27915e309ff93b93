//! Builds real plugin artifacts during the test run: the example plugins of
//! `examples/` (Rust, JavaScript, Python) by their documented commands, and small Rust
//! plugins against other versions of the WIT package.
//!
//! Each build runs once per test process; the outputs live under `target/` so that a
//! second run reuses the compiled code.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace")
        .to_path_buf()
}

/// The target directory guests are built into (shared with the Lua guest's build, so
/// common dependencies compile once).
fn guest_target_dir() -> PathBuf {
    workspace().join("target").join("guest")
}

/// Where test-built artifacts go.
pub fn artifact_dir() -> PathBuf {
    let dir = workspace().join("target").join("test-plugins");
    std::fs::create_dir_all(&dir).expect("create target/test-plugins");
    dir
}

/// A `cargo` command for building guests: the outer test run's settings must not leak
/// into it (they are for the host).
fn cargo() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let kept = [
            "CARGO_HOME",
            "CARGO_NET_",
            "CARGO_HTTP_",
            "CARGO_REGISTR",
            "CARGO_TERM_",
        ]
        .iter()
        .any(|kept| name.starts_with(kept));
        if (name.starts_with("CARGO_") && !kept)
            || ["RUSTFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER"].contains(&&*name)
        {
            command.env_remove(&*name);
        }
    }
    command
}

/// Runs `command`; the error holds its output.
pub fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|error| format!("cannot run {what}: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Serializes builds within this process; cargo's own lock serializes processes.
fn build_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The example Rust plugin (`examples/rust-plugin`), built with its documented
/// command (`cargo build --target wasm32-wasip2`, here with the guest profile).
pub fn rust_example() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let _lock = build_lock();
            run(
                cargo()
                    .current_dir(workspace())
                    .args([
                        "build",
                        "--package",
                        "toolcell-example-rust",
                        "--target",
                        "wasm32-wasip2",
                        "--profile",
                        "guest",
                    ])
                    .arg("--target-dir")
                    .arg(guest_target_dir()),
                "cargo build of examples/rust-plugin",
            )?;
            Ok(guest_target_dir()
                .join("wasm32-wasip2")
                .join("guest")
                .join("toolcell_example_rust.wasm"))
        })
        .clone()
        .unwrap_or_else(|error| panic!("{error}"))
}

/// A minimal Rust plugin built against `wit/plugin.wit` (for a 0.1.x or 0.2.x version:
/// the frozen `wit/0.1/plugin.wit` or `wit/0.2/plugin.wit`) with its package version
/// replaced by `version`: one tool, `versioned`, that answers "built for VERSION".
pub fn wit_version_guest(version: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    if let Some((_, path)) = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .find(|(built, _)| built == version)
    {
        return path.clone();
    }
    let _lock = build_lock();
    let path = build_wit_version_guest(version).unwrap_or_else(|error| panic!("{error}"));
    BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push((version.to_string(), path.clone()));
    path
}

fn build_wit_version_guest(version: &str) -> Result<PathBuf, String> {
    let slug = version.replace('.', "_");
    let crate_name = format!("wit_version_guest_{slug}");
    let dir = workspace()
        .join("target")
        .join("wit-version-guests")
        .join(&slug);
    let write = |path: &Path, content: &str| {
        std::fs::create_dir_all(path.parent().expect("a parent")).map_err(|e| e.to_string())?;
        std::fs::write(path, content).map_err(|error| format!("{}: {error}", path.display()))
    };
    let (source, declared) = if version.starts_with("0.1.") {
        ("wit/0.1/plugin.wit", "0.1.2")
    } else if version.starts_with("0.2.") {
        ("wit/0.2/plugin.wit", "0.2.0")
    } else {
        ("wit/plugin.wit", toolcell::wit_version::WIT_VERSION)
    };
    let wit = std::fs::read_to_string(workspace().join(source))
        .map_err(|error| format!("{source}: {error}"))?;
    let current = format!("package toolcell:plugin@{declared};");
    if !wit.contains(&current) {
        return Err(format!("{source} does not declare {current}"));
    }
    write(
        &dir.join("wit/plugin.wit"),
        &wit.replace(&current, &format!("package toolcell:plugin@{version};")),
    )?;
    let workspace_manifest = std::fs::read_to_string(workspace().join("Cargo.toml"))
        .map_err(|error| format!("Cargo.toml: {error}"))?;
    let guest_profile = workspace_manifest
        .split("[profile.guest]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .ok_or("the workspace has no [profile.guest]")?;
    write(
        &dir.join("Cargo.toml"),
        &format!(
            "[package]\nname = \"{crate_name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
             publish = false\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\n\
             wit-bindgen = \"0.63\"\n\n[workspace]\n\n[profile.guest]{guest_profile}\n"
        ),
    )?;
    write(
        &dir.join("src/lib.rs"),
        &VERSION_GUEST
            .replace("VERSION", version)
            .replace(
                "EXTRA_FIELDS",
                // 0.2.0 added a tool's title and output schema, 0.3.0 its task support.
                if version.starts_with("0.1.") {
                    ""
                } else if version.starts_with("0.2.") {
                    "title: None, output_schema: None,"
                } else {
                    "title: None, output_schema: None, \
                     task_support: toolcell::plugin::types::TaskSupport::Optional,"
                },
            )
            .replace(
                "RESUME_DEADLINE",
                // 0.3.0's resume carries the call's deadline.
                if version.starts_with("0.1.") || version.starts_with("0.2.") {
                    ""
                } else {
                    ", _deadline: u64"
                },
            ),
    )?;
    // The workspace's lock file: the same dependency versions as the other guests.
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock"))
        .map_err(|error| format!("copying Cargo.lock: {error}"))?;
    run(
        cargo()
            .current_dir(&dir)
            .args(["build", "--target", "wasm32-wasip2", "--profile", "guest"])
            .arg("--target-dir")
            .arg(guest_target_dir()),
        &format!("cargo build of a plugin for toolcell:plugin@{version}"),
    )?;
    let built = guest_target_dir()
        .join("wasm32-wasip2")
        .join("guest")
        .join(format!("{crate_name}.wasm"));
    Ok(built)
}

/// The source of the version guests: raw bindings, one tool.
const VERSION_GUEST: &str = r#"
wit_bindgen::generate!({ world: "plugin", path: "wit" });

use exports::toolcell::plugin::guest::{Guest, LoadRequest};
use toolcell::plugin::types::{CallState, LoadError, OpOutcome, ToolSpec};

struct Versioned;

impl Guest for Versioned {
    fn load(_request: LoadRequest) -> Result<Vec<ToolSpec>, LoadError> {
        Ok(vec![ToolSpec {
            name: "versioned".to_string(),
            description: "Says which WIT version it was built for".to_string(),
            params_schema: None,
            timeout_ms: None,
            no_prompt: true,
            hidden: false,
            EXTRA_FIELDS
        }])
    }

    fn start(_call: u64, _tool: String, _args: String, _deadline: u64) -> CallState {
        CallState::Completed("built for VERSION".to_string())
    }

    fn resume(_call: u64, _op: u64, _outcome: OpOutcome RESUME_DEADLINE) -> CallState {
        CallState::Failed("nothing to resume".to_string())
    }

    fn cancel(_call: u64, _reason: String) {}
}

export!(Versioned);
"#;

/// The `toolcell` binary (the build scripts pack with it), built if needed with the
/// same profile as the tests.
pub fn toolcell_binary() -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let _lock = build_lock();
            run(
                cargo().current_dir(workspace()).args([
                    "build",
                    "--package",
                    "toolcell",
                    "--bin",
                    "toolcell",
                ]),
                "cargo build of the toolcell binary",
            )?;
            Ok(workspace()
                .join("target")
                .join("debug")
                .join(format!("toolcell{}", std::env::consts::EXE_SUFFIX)))
        })
        .clone()
        .unwrap_or_else(|error| panic!("{error}"))
}

/// The JavaScript example (`examples/js-plugin`), built by its documented command
/// (`tools/build-js-plugin`): componentize-js from npm, then `toolcell pack` of its
/// manifest. The error says what is missing when the tools are not installed.
pub fn js_example() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let toolcell = toolcell_binary();
            let _lock = build_lock();
            let output = artifact_dir().join("js-example.wasm");
            run(
                Command::new(workspace().join("tools/build-js-plugin"))
                    .arg(workspace().join("examples/js-plugin"))
                    .arg(&output)
                    .env("TOOLCELL", &toolcell),
                "tools/build-js-plugin",
            )?;
            Ok(output)
        })
        .clone()
}

/// The Python example (`examples/python-plugin`), built by its documented command
/// (`tools/build-python-plugin`): componentize-py from PyPI, then `toolcell pack`.
pub fn python_example() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let toolcell = toolcell_binary();
            let _lock = build_lock();
            let output = artifact_dir().join("python-example.wasm");
            run(
                Command::new(workspace().join("tools/build-python-plugin"))
                    .arg(workspace().join("examples/python-plugin"))
                    .arg(&output)
                    .env("TOOLCELL", &toolcell),
                "tools/build-python-plugin",
            )?;
            Ok(output)
        })
        .clone()
}
