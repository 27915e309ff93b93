//! toolcell's translator of Lua 5.4 bytecode to C (`toolcell pack --aot`).
//!
//! A plugin's script, compiled by toolcell's patched Lua (`third_party/lua-src`) and
//! written with `lua_dump`, becomes one C unit: a C function per Lua function, made of
//! the interpreter's own opcode bodies (`lvm.c`) with each instruction a constant and
//! each jump a `goto`, plus a `struct lua_AOTModule` naming them. Linked into the Lua
//! guest, the unit's functions run in place of the interpreter for that script's
//! functions once `lua_aotbind` has checked they were made from its bytecode
//! (third_party/lua-src/lua-5.4.9/laot.h says how they run).
//!
//! The crate compiles the script with the workspace's patched Lua, natively, and writes
//! C; compiling and linking the C is the host's (`toolcell::aot`).

mod bodies;
mod chunk;
mod opcodes;
mod sources;
mod translate;

use chunk::parse;
pub use sources::SOURCES;
pub use translate::MODULE_SYMBOL;
use translate::translate;

/// Why a script could not be translated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// Lua refused the script (a syntax error), with Lua's message.
    #[error("{0}")]
    Script(String),
    /// The bytes are not a chunk `lua_dump` writes.
    #[error("unreadable Lua bytecode: {0}")]
    Chunk(String),
}

/// A script translated to C.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The C source of the unit.
    pub c: String,
    /// How many Lua functions it compiles (the script's main function and every
    /// function in it).
    pub functions: usize,
    /// The digest of the bytecode it was made from (see [`digest`]).
    pub digest: u64,
}

/// Compiles `script` with toolcell's patched Lua under `chunk_name` (`@NAME.lua`, as
/// the guest loads it; the name changes only the unit's comments, since bytecode
/// does not depend on it) and translates it into one C unit.
pub fn translate_script(script: &[u8], chunk_name: &str) -> Result<Unit, TranslateError> {
    let lua = mlua::Lua::new();
    let main = lua
        .load(script)
        .set_name(chunk_name)
        .set_mode(mlua::chunk::ChunkMode::Text)
        .into_function()
        .map_err(|error| match error {
            mlua::Error::SyntaxError { message, .. } => TranslateError::Script(message),
            other => TranslateError::Script(other.to_string()),
        })?;
    let (dump, stripped) = (main.dump(false), main.dump(true));
    let function = parse(&dump)?;
    let digest = digest(&stripped);
    Ok(Unit {
        functions: function.preorder().len(),
        c: translate(&function, digest, chunk_name),
        digest,
    })
}

/// The digest `lua_aotbind` compares: 64-bit FNV-1a of the stripped dump of a script's
/// main function (`lua_dump` with `strip`), as laot.c computes it.
pub fn digest(stripped_dump: &[u8]) -> u64 {
    stripped_dump
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |digest, byte| {
            (digest ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_becomes_one_body_per_function_and_a_module() {
        let script = b"local function add(a, b) return a + b end\n\
                       local t = { f = function() return function() end end }\n\
                       return add(1, 2)";
        let unit = translate_script(script, "@sum.lua").expect("translates");
        // The main chunk, add, t.f and the function t.f returns.
        assert_eq!(unit.functions, 4);
        for index in 0..4 {
            assert!(unit.c.contains(&format!("static CallInfo *aot_f{index} (")));
        }
        assert!(
            unit.c
                .contains(&format!("const struct lua_AOTModule {MODULE_SYMBOL} ="))
        );
        assert!(unit.c.contains(&format!("0x{:016x}ull", unit.digest)));
        assert!(unit.c.contains("@sum.lua"), "comments name the script");
    }

    #[test]
    fn the_digest_is_of_the_bytecode_not_the_name_or_the_lines() {
        let a = translate_script(b"return 1 + x", "@a.lua").expect("translates");
        let b = translate_script(b"\n\nreturn 1 + x", "@b.lua").expect("translates");
        let c = translate_script(b"return 2 + x", "@a.lua").expect("translates");
        assert_eq!(a.digest, b.digest);
        assert_ne!(a.digest, c.digest);
    }

    #[test]
    fn a_syntax_error_is_luas_message() {
        let error = translate_script(b"return 1 +", "@bad.lua").expect_err("refused");
        assert_eq!(
            error,
            TranslateError::Script("bad.lua:1: unexpected symbol near <eof>".to_string())
        );
    }

    #[test]
    fn junk_is_not_a_chunk() {
        assert!(matches!(
            parse(b"\x1bLua junk"),
            Err(TranslateError::Chunk(_))
        ));
        let lua = mlua::Lua::new();
        let dump = lua
            .load("return 1")
            .into_function()
            .expect("loads")
            .dump(false);
        assert!(parse(&dump[..dump.len() - 1]).is_err(), "a cut chunk");
        assert!(
            parse(&[dump.as_slice(), b"x"].concat()).is_err(),
            "trailing bytes"
        );
    }
}
