//! toolcell: Lua's C sources are compiled by the build script of the crate that uses
//! this one (mlua-sys), which cargo runs again only when this crate is rebuilt, and
//! rustc sees only this crate's Rust code. Naming the C sources here makes an edit to
//! them rebuild this crate, and so Lua.

fn main() {
    println!("cargo:rerun-if-changed=lua-5.4.9");
    println!("cargo:rerun-if-changed=unity");
}
