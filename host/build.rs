//! Builds the Lua guest component (`lua-guest/`) for wasm32-wasip2 and tells the host
//! crate where it is, so `toolcell` embeds it and ships as one file.
//!
//! The guest is built by a nested `cargo build` into its own target directory (the
//! outer build holds the lock of its own). Its C code (Lua) is compiled by zig's clang
//! through `tools/wasm-cc`; both the Rust target and zig are checked up front so a
//! missing one gives a one-line fix instead of a page of compiler errors.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const TARGET: &str = "wasm32-wasip2";
const PROFILE: &str = "guest";

fn main() {
    let host_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = host_dir
        .parent()
        .expect("host/ lives in the workspace")
        .to_path_buf();
    for watched in [
        "lua-guest/src",
        "lua-guest/csrc",
        "lua-guest/build.rs",
        "lua-guest/Cargo.toml",
        "limits",
        "wit",
        "tools",
        // The Lua sources, and the guest profile and dependency versions: the inner
        // cargo decides what really changed.
        "third_party/lua-src",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(watched).display()
        );
    }
    println!("cargo:rerun-if-env-changed=TOOLCELL_GUEST_TARGET_DIR");
    println!("cargo:rerun-if-env-changed=TOOLCELL_PYTHON");

    let target_dir = env::var_os("TOOLCELL_GUEST_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target").join("guest"));
    check_prerequisites();
    build_guest(&workspace, &target_dir);

    let artifact = target_dir
        .join(TARGET)
        .join(PROFILE)
        .join("toolcell_lua_guest.wasm");
    let bytes = std::fs::read(&artifact).unwrap_or_else(|error| {
        fail(&format!(
            "the guest build produced no {}: {error}",
            artifact.display()
        ))
    });
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    println!(
        "cargo:rustc-env=TOOLCELL_LUA_GUEST_WASM={}",
        artifact.display()
    );
    // What tools/guest-link kept of the last link of the guest: the guest as one
    // relocatable object, and the final link's flags.
    let linked = target_dir
        .join(TARGET)
        .join(PROFILE)
        .join("deps")
        .join("toolcell_lua_guest.wasm");
    for (suffix, variable) in [
        ("link.o", "TOOLCELL_LUA_GUEST_LINK_OBJECT"),
        ("link.args", "TOOLCELL_LUA_GUEST_LINK_ARGS"),
    ] {
        let path = linked.with_extension(format!("wasm.{suffix}"));
        if !path.exists() {
            fail(&format!("the guest build left no {}", path.display()));
        }
        println!("cargo:rustc-env={variable}={}", path.display());
    }
    println!("cargo:rustc-env=TOOLCELL_LUA_GUEST_SHA256={hex}");
}

fn check_prerequisites() {
    let sysroot = Command::new(env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()));
    if let Some(sysroot) = sysroot
        && !sysroot.join("lib/rustlib").join(TARGET).exists()
    {
        fail(&format!(
            "the Rust target {TARGET} is missing: run `rustup target add {TARGET}`"
        ));
    }
    let python = env::var("TOOLCELL_PYTHON").unwrap_or_else(|_| "python3".into());
    let zig = Command::new(&python)
        .args(["-m", "ziglang", "version"])
        .output()
        .ok()
        .filter(|output| output.status.success());
    let Some(zig) = zig else {
        fail(&format!(
            "zig (the C compiler for the Lua guest) is missing: run `{python} -m pip install ziglang==0.17.1`"
        ));
    };
    // `pack --aot` links with the zig the linkable guest was made with.
    println!(
        "cargo:rustc-env=TOOLCELL_ZIG_VERSION={}",
        String::from_utf8_lossy(&zig.stdout).trim()
    );
}

fn build_guest(workspace: &Path, target_dir: &Path) {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tools = workspace.join("tools");
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args([
            "build",
            "--package",
            "toolcell-lua-guest",
            "--target",
            TARGET,
            "--profile",
            PROFILE,
        ])
        .arg("--target-dir")
        .arg(target_dir)
        .env(
            format!("CC_{}", TARGET.replace('-', "_")),
            tools.join("wasm-cc"),
        )
        .env(
            format!("AR_{}", TARGET.replace('-', "_")),
            tools.join("wasm-ar"),
        );
    // The outer build's settings are for the host; none of them may leak into the guest.
    // Keep what concerns fetching crates and the jobserver.
    const KEPT: [&str; 8] = [
        "CARGO_HOME",
        "CARGO_MAKEFLAGS",
        "CARGO_NET_",
        "CARGO_HTTP_",
        "CARGO_REGISTRIES_",
        "CARGO_REGISTRY_",
        "CARGO_SOURCE_",
        "CARGO_TERM_",
    ];
    for (name, _) in env::vars_os() {
        let name = name.to_string_lossy();
        let leaks = name.starts_with("CARGO_") && !KEPT.iter().any(|kept| name.starts_with(kept));
        if leaks
            || [
                "RUSTFLAGS",
                "RUSTC_WORKSPACE_WRAPPER",
                "RUSTC_WRAPPER",
                "RUSTDOCFLAGS",
            ]
            .contains(&&*name)
        {
            command.env_remove(&*name);
        }
    }
    // tools/guest-link links the component as rustc would and keeps the guest in
    // linkable form for `toolcell pack --aot`. Cargo does not watch a linker: the
    // guest's build script watches this digest of it, so an edit relinks the guest.
    let linker_path = tools.join("guest-link");
    let linker = format!("-Clinker={}", linker_path.display());
    let linker_digest = std::fs::read(&linker_path)
        .map(|script| format!("{:x}", Sha256::digest(script)))
        .unwrap_or_else(|error| fail(&format!("cannot read {}: {error}", linker_path.display())));
    command.env("TOOLCELL_GUEST_LINKER", linker_digest);
    command.env(
        "CARGO_ENCODED_RUSTFLAGS",
        format!("{}\u{1f}{linker}", remap_flags(workspace)),
    );
    let status = command.status().unwrap_or_else(|error| {
        fail(&format!(
            "could not run cargo to build the Lua guest: {error}"
        ))
    });
    if !status.success() {
        fail("building the Lua guest (lua-guest/) for wasm32-wasip2 failed; see the errors above");
    }
}

/// rustc flags that cut the build machine's directories out of the source paths the
/// guest carries (panic locations: about 70 of them). The paths are read-only data in
/// every plugin instance's memory image, and without the machine's directories in them
/// the guest's bytes, and so its code-cache key, no longer depend on where the
/// workspace and the crate registry happen to live. Joined by 0x1f, as
/// `CARGO_ENCODED_RUSTFLAGS` takes them.
fn remap_flags(workspace: &Path) -> String {
    let mut prefixes = vec![workspace.to_path_buf()];
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    if let Some(cargo_home) = cargo_home {
        // One directory per registry index (crates.io's, and any other configured);
        // crates from git keep their longer path.
        if let Ok(indexes) = std::fs::read_dir(cargo_home.join("registry").join("src")) {
            let mut indexes: Vec<PathBuf> = indexes.flatten().map(|index| index.path()).collect();
            // A stable order, so the flags (and with them the guest) do not change
            // from one build to the next.
            indexes.sort();
            prefixes.extend(indexes);
        }
    }
    prefixes
        .iter()
        .map(|prefix| format!("--remap-path-prefix={}/=", prefix.display()))
        .collect::<Vec<_>>()
        .join("\u{1f}")
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    println!("cargo:warning={message}");
    std::process::exit(1);
}
