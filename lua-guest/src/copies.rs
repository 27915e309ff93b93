//! Copies the Rust side makes of what a plugin hands it: a log message, a request's
//! URL, headers and body, a result, a tool's description and schema.
//!
//! Lua's allocator limit only sees Lua's own allocations; these copies live in Rust
//! memory beside them. Unchecked, a plugin could hand over far more than its limit (a
//! `warn` of 40 strings of 1 MiB each) and grow the instance to the host's hard cap,
//! which traps it. So every copy is charged to the same limit first: one that does not
//! fit beside what Lua holds fails as Lua's ordinary "not enough memory" error, which
//! `pcall` catches and which, uncaught, fails the call with "out of memory" (after a full
//! collection, as Lua tries before it refuses an allocation). A copy made for one host
//! call is charged while it is made ([`Copies`]); what the plugin keeps for its whole
//! life (its tools' specs) lowers Lua's own limit for good ([`keep`]).

use std::cell::Cell;

use mlua::{Lua, Value};

thread_local! {
    /// Bytes of Rust memory kept for the plugin's life (its tools' specs), taken from
    /// its memory limit.
    static KEPT: Cell<usize> = const { Cell::new(0) };
}

/// The error of a copy that does not fit: the same as Lua's own allocation failure.
fn not_enough_memory() -> mlua::Error {
    mlua::Error::MemoryError("not enough memory".to_string())
}

/// Bytes the plugin may still use: its limit, less what Lua holds and what is kept.
/// Unlimited while no plugin is loaded (the runtime preparing itself).
fn available(lua: &Lua) -> usize {
    match crate::protocol::memory_limit() {
        0 => usize::MAX,
        limit => limit
            .saturating_sub(KEPT.get())
            .saturating_sub(lua.used_memory()),
    }
}

/// Whether `bytes` more fit in what the plugin has left, after a full collection if
/// need be: as for Lua's own allocations, garbage is collected before memory is refused.
fn fits(lua: &Lua, bytes: usize) -> bool {
    if bytes <= available(lua) {
        return true;
    }
    // A failed collection (a finalizer's error) leaves what is left as it was.
    let _ = lua.gc_collect();
    bytes <= available(lua)
}

/// Keeps `bytes` of Rust memory for the plugin's life: fails unless they fit, then
/// lowers Lua's limit by them.
pub fn keep(lua: &Lua, bytes: usize) -> mlua::Result<()> {
    let limit = crate::protocol::memory_limit();
    if limit == 0 {
        return Ok(());
    }
    if !fits(lua, bytes) {
        return Err(not_enough_memory());
    }
    KEPT.set(KEPT.get() + bytes);
    lua.set_memory_limit(limit - KEPT.get())?;
    Ok(())
}

/// The copies made for one use (one host call, one result), charged as they are made.
pub struct Copies<'lua> {
    lua: &'lua Lua,
    held: usize,
}

impl<'lua> Copies<'lua> {
    /// Starts charging copies against the memory `lua` has left.
    pub fn new(lua: &'lua Lua) -> Self {
        Copies { lua, held: 0 }
    }

    /// Charges `bytes` more, or fails with "not enough memory" when they do not fit.
    pub fn charge(&mut self, bytes: usize) -> mlua::Result<()> {
        if !fits(self.lua, bytes.saturating_add(self.held)) {
            return Err(not_enough_memory());
        }
        self.held += bytes;
        Ok(())
    }

    /// `bytes` as text, invalid UTF-8 replaced by U+FFFD (as `String::from_utf8_lossy`
    /// does), charged at its final size: a replacement makes a byte three.
    pub fn text(&mut self, bytes: &[u8]) -> mlua::Result<String> {
        // Valid text (nearly always) is checked once and copied as it is.
        if let Ok(text) = std::str::from_utf8(bytes) {
            self.charge(text.len())?;
            return Ok(text.to_owned());
        }
        self.charge(lossy_len(bytes))?;
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }

    /// What `tostring` makes of `value`, as text (see [`Copies::text`]), charged.
    pub fn display(&mut self, value: &Value) -> mlua::Result<String> {
        match value {
            Value::String(text) => self.text(&text.as_bytes()),
            other => {
                // Only a `__tostring` metamethod makes this long, and its result is a Lua
                // string already within the limit: the charge comes after the copy.
                let text = other.to_string()?;
                self.charge(text.len())?;
                Ok(text)
            }
        }
    }

    /// A copy of `bytes`, charged.
    pub fn bytes(&mut self, bytes: &[u8]) -> mlua::Result<Vec<u8>> {
        self.charge(bytes.len())?;
        Ok(bytes.to_vec())
    }

    /// `parts` joined with `separator`, charged (the parts are held meanwhile).
    pub fn join(&mut self, parts: &[String], separator: &str) -> mlua::Result<String> {
        let length = parts.iter().map(String::len).sum::<usize>()
            + separator.len() * parts.len().saturating_sub(1);
        self.charge(length)?;
        Ok(parts.join(separator))
    }
}

/// The length of `String::from_utf8_lossy(bytes)`, without making it.
fn lossy_len(bytes: &[u8]) -> usize {
    bytes
        .utf8_chunks()
        .map(|chunk| {
            let replacement = if chunk.invalid().is_empty() {
                0
            } else {
                char::REPLACEMENT_CHARACTER.len_utf8()
            };
            chunk.valid().len() + replacement
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::lossy_len;

    #[test]
    fn lossy_len_is_the_length_of_the_lossy_text() {
        for bytes in [
            &b""[..],
            b"plain",
            b"\xff",
            b"\xff\xff\xff",
            b"a\xffb\xe2\x82",
            "é€😀".as_bytes(),
            b"\xe2\x82\xac\xf0\x9f",
        ] {
            assert_eq!(
                lossy_len(bytes),
                String::from_utf8_lossy(bytes).len(),
                "{bytes:?}"
            );
        }
    }
}
