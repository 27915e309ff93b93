//! Plugin files given to the loader: the bytes become a `.wasm` file (a component, or
//! WAT text, to the loader) or a `.lua` file (a script for the Lua guest), chosen by
//! the first byte. Loading never panics or hangs, whatever the file; a plugin that
//! loads answers a call with an outcome.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolcell::Runtime;
use toolcell::limits::Limits;

fn tokio() -> &'static tokio::runtime::Runtime {
    static TOKIO: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    TOKIO.get_or_init(|| tokio::runtime::Runtime::new().expect("tokio"))
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, content)) = data.split_first() else {
        return;
    };
    let plugins = tempfile::TempDir::new().expect("plugins");
    let root = tempfile::TempDir::new().expect("root");
    let file = if selector % 2 == 0 {
        "fuzzed.lua"
    } else {
        "fuzzed.wasm"
    };
    std::fs::write(plugins.path().join(file), content).expect("plugin");
    // Short deadlines keep every input fast; the limits themselves are what is tested.
    let limits = Limits {
        load_timeout: std::time::Duration::from_millis(50),
        call_timeout: std::time::Duration::from_millis(50),
        fuel: 50_000_000,
        ..Limits::default()
    };
    tokio().block_on(async {
        let runtime = Runtime::builder()
            .plugin_dir(plugins.path())
            .root(root.path())
            .limits(limits)
            .debug_log(None)
            .build()
            .await
            .expect("a plugin file never stops the runtime from building");
        let names: Vec<String> = runtime
            .tools()
            .iter()
            .map(|tool| tool.name.clone())
            .collect();
        for name in names {
            let call = runtime
                .call(&name, "{}")
                .expect("a registered tool can be called");
            let _ = call.await;
        }
    });
});
