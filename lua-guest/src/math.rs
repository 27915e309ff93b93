//! The transcendental functions Lua's C code calls (`math.exp`, `math.log`, `^`,
//! `math.sin`, ...), from the `libm` crate instead of wasi-libc.
//!
//! wasi-libc (musl) computes `exp`, `log`, `log2` and `pow` from lookup tables, and
//! reduces the arguments of `sin`, `cos` and `tan` with a table sized for 128-bit long
//! double: 15.6 KiB of read-only data together. Read-only data is part of the memory
//! image every plugin instance maps, and the kernel maps an image's pages 64 KiB at a
//! time whether they are read or not, so those tables cost every loaded plugin four
//! pages of resident memory. `libm` ports FreeBSD's msun versions of the same functions,
//! which need no tables (0.3 KiB of constants), with the same error bound (under one
//! unit in the last place). Defining the symbols here keeps the linker from taking
//! musl's objects. (rustc also exports `#[no_mangle]` functions from the guest's core
//! module; the component does not export them, and each costs wasmtime one function
//! reference per instance.)

/// Defines C's `NAME(x)` as `libm::NAME(x)` for each name.
macro_rules! from_libm {
    ($($name:ident),*) => {$(
        #[unsafe(no_mangle)]
        extern "C" fn $name(x: f64) -> f64 {
            libm::$name(x)
        }
    )*};
}

// `math.exp`, `math.log(x)`, `math.log(x, 2)`, `math.sin`, `math.cos`, `math.tan`.
from_libm!(exp, log, log2, sin, cos, tan);

/// `pow(x, y)`: Lua's `x ^ y`.
#[unsafe(no_mangle)]
extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}
