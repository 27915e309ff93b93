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
//! musl's objects.

/// `exp(x)`: Lua's `math.exp`.
#[unsafe(no_mangle)]
extern "C" fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// `log(x)`: Lua's `math.log(x)`.
#[unsafe(no_mangle)]
extern "C" fn log(x: f64) -> f64 {
    libm::log(x)
}

/// `log2(x)`: Lua's `math.log(x, 2)`.
#[unsafe(no_mangle)]
extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

/// `pow(x, y)`: Lua's `x ^ y`.
#[unsafe(no_mangle)]
extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// `sin(x)`: Lua's `math.sin`.
#[unsafe(no_mangle)]
extern "C" fn sin(x: f64) -> f64 {
    libm::sin(x)
}

/// `cos(x)`: Lua's `math.cos`.
#[unsafe(no_mangle)]
extern "C" fn cos(x: f64) -> f64 {
    libm::cos(x)
}

/// `tan(x)`: Lua's `math.tan`.
#[unsafe(no_mangle)]
extern "C" fn tan(x: f64) -> f64 {
    libm::tan(x)
}
