//! WIT values coming back from a guest: tool specs from `load` and call states from
//! `start`, lifted by the host from whatever bytes a component leaves in its memory.
//! The fuzzer's bytes become the component's memory image from offset 1024 (through a
//! data segment of the plugin shell used by the hostile suite); `load` and `start`
//! return pointers into it, chosen by the input's first bytes. The host lifts, checks
//! and registers what it can, and reports the rest; it never panics.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use toolcell::Runtime;
use toolcell::cache::CodeCache;
use toolcell::limits::Limits;

const SHELL: &str = include_str!("../../tests/hostile/wasm/shell.wat");

fn tokio() -> &'static tokio::runtime::Runtime {
    static TOKIO: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    TOKIO.get_or_init(|| tokio::runtime::Runtime::new().expect("tokio"))
}

/// A core module that returns `load_at` from `load` and `start_at` from `start`, over
/// a memory whose bytes from 1024 are `image`.
fn component(load_at: u32, start_at: u32, image: &[u8]) -> Vec<u8> {
    let escaped: String = image.iter().map(|byte| format!("\\{byte:02x}")).collect();
    let main = format!(
        r#"(core module $Main
  (import "env" "memory" (memory 1))
  (data (i32.const 1024) "{escaped}")
  (func (export "load") (param i32 i32 i32 i32 i32 i64 i64 i32) (result i32) (i32.const {load_at}))
  (func (export "start") (param i64 i32 i32 i32 i32 i64) (result i32) (i32.const {start_at}))
  (func (export "resume") (param i64 i64 i32 i32 i32 i32 i32 i32) (result i32) (i32.const {start_at}))
  (func (export "cancel") (param i64 i32 i32)))"#
    );
    wat::parse_str(SHELL.replace(";; @MAIN@", &main)).expect("the shell assembles")
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 || data.len() > 4096 {
        return;
    }
    // Pointers land inside the image (or just past it), 4-byte aligned as the ABI
    // requires of these results.
    let span = (data.len() as u32).max(16);
    let load_at = 1024 + (u32::from(u16::from_le_bytes([data[0], data[1]])) % span & !3);
    let start_at = 1024 + (u32::from(u16::from_le_bytes([data[2], data[3]])) % span & !3);
    let wasm = component(load_at, start_at, &data[4..]);
    let plugins = tempfile::TempDir::new().expect("plugins");
    let root = tempfile::TempDir::new().expect("root");
    std::fs::write(plugins.path().join("values.wasm"), wasm).expect("plugin");
    let limits = Limits {
        call_timeout: std::time::Duration::from_millis(20),
        ..Limits::default()
    };
    tokio().block_on(async {
        let runtime = Runtime::builder()
            .plugin_dir(plugins.path())
            .root(root.path())
            .limits(limits)
            .cache(CodeCache::new(None))
            .debug_log(None)
            .build()
            .await
            .expect("a component's values never stop the runtime from building");
        for tool in runtime.tools() {
            assert!(
                toolcell::schema::is_valid_tool_name(&tool.name),
                "{:?}",
                tool.name
            );
        }
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
