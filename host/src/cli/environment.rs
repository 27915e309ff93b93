//! What the command line takes from its environment. The library reads none of it:
//! an embedder says where the cache and the debug log are.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::engine::cache::CodeCache;
use crate::engine::{Engine, EngineError, Options};

/// The compiled-code cache: `$TOOLCELL_CACHE_DIR`, else `$XDG_CACHE_HOME/toolcell`,
/// else `~/.cache/toolcell`; `TOOLCELL_CACHE_DIR=off` turns it off.
pub fn code_cache() -> CodeCache {
    let dir = match std::env::var_os("TOOLCELL_CACHE_DIR") {
        Some(dir) if dir == "off" => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .map(|base| base.join("toolcell")),
    };
    CodeCache::new(dir)
}

/// The directory of each plugin's own directory (`RuntimeBuilder::data_dir`):
/// `$XDG_DATA_HOME/toolcell/data`, else `~/.local/share/toolcell/data`; `None` without
/// either (then plugins without a root share the current directory, under its rules).
/// A relative `XDG_DATA_HOME` is ignored, as the XDG base directory specification says.
pub fn data_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| PathBuf::from(home).join(".local/share"))
        })
        .map(|base| base.join("toolcell/data"))
}

/// The engine with `options`, keeping compiled code in [`code_cache`].
pub fn engine(options: Options) -> Result<Engine, EngineError> {
    Engine::new(Options {
        cache: code_cache(),
        ..options
    })
}

/// The debug log: the file named by `TOOLCELL_DEBUG_LOG` or `CLM_DEBUG_LOG`, if either
/// is set and not empty.
pub fn debug_log() -> Option<PathBuf> {
    ["TOOLCELL_DEBUG_LOG", "CLM_DEBUG_LOG"]
        .into_iter()
        .find_map(|name| std::env::var_os(name).filter(|value| !value.is_empty()))
        .map(PathBuf::from)
}

/// The Python whose `ziglang` module is the C toolchain of `pack --aot`:
/// `TOOLCELL_PYTHON`, as the build of toolcell itself takes it, else `python3`.
pub fn python() -> Option<OsString> {
    std::env::var_os("TOOLCELL_PYTHON").filter(|value| !value.is_empty())
}
