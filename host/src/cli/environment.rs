//! What the command line takes from its environment. The library reads none of it:
//! an embedder says where the cache and the debug log are.

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
