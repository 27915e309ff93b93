//! The interpreter's sources a translated unit is compiled against: Lua's headers,
//! `laot.h` and `lvm.c` (whose opcode bodies the translator copies), embedded so that
//! translating and compiling need nothing but this crate and a C compiler.

/// The content of a file of toolcell's patched Lua 5.4.9.
macro_rules! lua_source {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../third_party/lua-src/lua-5.4.9/",
            $name
        ))
    };
}

/// The interpreter, whose opcode bodies the translator copies.
pub const LVM_C: &str = lua_source!("lvm.c");

/// The opcodes, in the interpreter's numbering.
pub const LOPCODES_H: &str = lua_source!("lopcodes.h");

/// Every file a translated unit includes, directly or not: (file name, content).
pub const SOURCES: &[(&str, &str)] = &[
    ("laot.h", lua_source!("laot.h")),
    ("lapi.h", lua_source!("lapi.h")),
    ("lauxlib.h", lua_source!("lauxlib.h")),
    ("lcode.h", lua_source!("lcode.h")),
    ("lctype.h", lua_source!("lctype.h")),
    ("ldebug.h", lua_source!("ldebug.h")),
    ("ldo.h", lua_source!("ldo.h")),
    ("lfunc.h", lua_source!("lfunc.h")),
    ("lgc.h", lua_source!("lgc.h")),
    ("ljumptab.h", lua_source!("ljumptab.h")),
    ("llex.h", lua_source!("llex.h")),
    ("llimits.h", lua_source!("llimits.h")),
    ("lmem.h", lua_source!("lmem.h")),
    ("lobject.h", lua_source!("lobject.h")),
    ("lopcodes.h", LOPCODES_H),
    ("lopnames.h", lua_source!("lopnames.h")),
    ("lparser.h", lua_source!("lparser.h")),
    ("lprecall.h", lua_source!("lprecall.h")),
    ("lprefix.h", lua_source!("lprefix.h")),
    ("lstate.h", lua_source!("lstate.h")),
    ("lstring.h", lua_source!("lstring.h")),
    ("ltable.h", lua_source!("ltable.h")),
    ("ltm.h", lua_source!("ltm.h")),
    ("lua.h", lua_source!("lua.h")),
    ("luaconf.h", lua_source!("luaconf.h")),
    ("lualib.h", lua_source!("lualib.h")),
    ("lundump.h", lua_source!("lundump.h")),
    ("lvm.h", lua_source!("lvm.h")),
    ("lzio.h", lua_source!("lzio.h")),
    ("lvm.c", LVM_C),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_header_of_the_interpreter_is_embedded() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../third_party/lua-src/lua-5.4.9"
        );
        let mut headers: Vec<String> = std::fs::read_dir(dir)
            .expect("the Lua sources")
            .map(|entry| {
                entry
                    .expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.ends_with(".h"))
            .collect();
        headers.sort();
        let embedded: Vec<&str> = SOURCES
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| name.ends_with(".h"))
            .collect();
        assert_eq!(embedded, headers);
    }
}
