//! The C toolchain `pack --aot` needs: zig from PyPI (`ziglang`), run as
//! `PYTHON -m ziglang`, the one the Lua guest is built with (tools/wasm-cc). Its clang
//! compiles the translated C for wasm32 and its wasm-ld links it into the guest.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::AotError;

/// The zig this toolcell was built with. The linkable guest is made by its wasm-ld,
/// and the translated C is compiled with the guest's settings: another zig may link
/// objects it does not read alike, so no other is used.
const ZIG_VERSION: &str = env!("TOOLCELL_ZIG_VERSION");

/// What the Lua guest's Lua is compiled with (lua-src's build for wasi targets, and
/// tools/wasm-cc): the translated C reads the same structures.
const LUA_FLAGS: &[&str] = &[
    "-target",
    "wasm32-wasi",
    "-mexception-handling",
    "-DLUA_USE_POSIX",
    "-D_WASI_EMULATED_SIGNAL",
    "-DLUA_COMPAT_5_3",
];

/// A zig that can compile and link for the Lua guest.
#[derive(Debug, Clone)]
pub struct Toolchain {
    python: OsString,
}

impl Toolchain {
    /// Finds zig as the `ziglang` module of `python` (`python3` when none is given).
    pub fn find(python: Option<OsString>) -> Result<Toolchain, AotError> {
        let toolchain = Toolchain {
            python: python.unwrap_or_else(|| "python3".into()),
        };
        let python = toolchain.python.to_string_lossy().into_owned();
        let install = format!(
            "compiling ahead of time needs zig {ZIG_VERSION} from PyPI: \
             `{python} -m pip install ziglang=={ZIG_VERSION}`"
        );
        let output = toolchain
            .zig()
            .arg("version")
            .output()
            .map_err(|error| AotError::Toolchain(format!("{install} ({python}: {error})")))?;
        if !output.status.success() {
            return Err(AotError::Toolchain(format!(
                "{install} ({python} -m ziglang: {})",
                first_line(&output.stderr)
            )));
        }
        let found = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if found != ZIG_VERSION {
            return Err(AotError::Toolchain(format!(
                "{install}; {python} has zig {found}"
            )));
        }
        Ok(toolchain)
    }

    /// `PYTHON -m ziglang`.
    fn zig(&self) -> Command {
        let mut command = Command::new(&self.python);
        command.args(["-m", "ziglang"]);
        command
    }

    /// Compiles the translated unit `c` in `dir` (with the interpreter's headers beside
    /// it) into a wasm32 object; returns its path.
    pub(super) fn compile(&self, dir: &Path, c: &str) -> Result<PathBuf, AotError> {
        let headers = dir.join("lua");
        let write = |path: &Path, text: &str| {
            std::fs::write(path, text).map_err(|error| {
                AotError::Build(format!("cannot write {}: {error}", path.display()))
            })
        };
        std::fs::create_dir_all(&headers).map_err(|error| {
            AotError::Build(format!("cannot make {}: {error}", headers.display()))
        })?;
        for (name, text) in toolcell_aot::SOURCES {
            write(&headers.join(name), text)?;
        }
        let source = dir.join("plugin.c");
        let object = dir.join("plugin.o");
        write(&source, c)?;
        let mut command = self.zig();
        command
            .arg("cc")
            .args(LUA_FLAGS)
            .args(["-O2", "-w", "-c"])
            .arg("-I")
            .arg(&headers)
            .arg(&source)
            .arg("-o")
            .arg(&object);
        run(command, "compiling the translated Lua")?;
        Ok(object)
    }

    /// `wasm-ld`, with `args`.
    pub(super) fn wasm_ld(&self) -> Command {
        let mut command = self.zig();
        command.arg("wasm-ld");
        command
    }
}

/// Runs `command`; errs with its diagnostics, naming `step`.
pub(super) fn run(mut command: Command, step: &str) -> Result<Output, AotError> {
    let output = command
        .output()
        .map_err(|error| AotError::Build(format!("{step}: cannot run zig: {error}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let shown: Vec<&str> = stderr.lines().take(20).collect();
        return Err(AotError::Build(format!(
            "{step} failed ({}):\n{}",
            output.status,
            shown.join("\n")
        )));
    }
    Ok(output)
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("no output")
        .trim()
        .to_string()
}
