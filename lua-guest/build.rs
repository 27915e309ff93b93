//! Provides the two C libraries mlua's Lua build links on wasm32-wasip2 but Rust's
//! sysroot lacks: `libsetjmp` (setjmp/longjmp over wasm exceptions) and an empty
//! `libwasi-emulated-signal` (Lua only needs the headers' declarations).

fn main() {
    println!("cargo:rerun-if-changed=csrc");
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
}
