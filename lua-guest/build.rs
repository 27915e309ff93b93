//! Provides the two C libraries mlua's Lua build links on wasm32-wasip2 but Rust's
//! sysroot lacks: `libsetjmp` (setjmp/longjmp over wasm exceptions) and an empty
//! `libwasi-emulated-signal` (Lua only needs the headers' declarations); the guest's
//! reference to the bodies `toolcell pack --aot` may link into it (`csrc/aot.c`); and
//! the runtime's Lua prelude as the guest carries it.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=src/prelude.lua");
    // host/build.rs: a digest of the guest's linker (tools/guest-link), which cargo
    // does not watch; a new one relinks the guest.
    println!("cargo:rerun-if-env-changed=TOOLCELL_GUEST_LINKER");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let prelude = std::fs::read_to_string("src/prelude.lua").expect("src/prelude.lua");
    std::fs::write(Path::new(&out_dir).join("prelude.lua"), compact(&prelude))
        .expect("writing the compacted prelude");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("wasm32") {
        return;
    }
    cc::Build::new()
        .file("csrc/setjmp.c")
        .file("csrc/longjmp_tag.s")
        .opt_level(2)
        .compile("setjmp");
    cc::Build::new()
        .file("csrc/empty.c")
        .compile("wasi-emulated-signal");
    cc::Build::new()
        .file("csrc/aot.c")
        .opt_level(2)
        .compile("toolcell-aot-link");
}

/// The prelude without its comment lines and indentation, every line kept in place so
/// that its line numbers stay those of the source. Its text is read-only data in the
/// guest's linear memory, so it is part of the memory image every plugin instance maps:
/// a page more of image is 4 KiB more resident memory per loaded plugin. The prelude
/// has no multi-line strings, whose contents this would change.
fn compact(source: &str) -> String {
    assert!(
        !source.contains("[[") && !source.contains("[="),
        "src/prelude.lua has a long string or comment, which compact() would alter"
    );
    source
        .lines()
        .map(|line| {
            let code = line.trim_start();
            if code.starts_with("--") { "" } else { code }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
