//! Which tools a plugin that did not load would have offered, so that a call of one of
//! them says why it is unavailable instead of calling it unknown.
//!
//! A plugin that fails to load registered nothing, so the names come from elsewhere:
//! from its previous load when a reload failed (see `Runtime::apply`), else from its
//! Lua script (a `.lua` file, or the script packed into a `.wasm`), read without
//! running it: every `clm.tool_register("NAME"` whose name is a string literal. A name
//! built at run time, or a component in another language that never loaded, offers
//! nothing this way; its tools stay unknown.

use std::path::Path;

use crate::artifact::Artifact;
use crate::tool::schema;

/// The tool names the plugin file at `path` registers with string literals, in the
/// order they appear, without repeats; nothing when the file holds no Lua script.
pub(super) fn in_file(path: &Path) -> Vec<String> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    if path.extension().is_some_and(|extension| extension == "lua") {
        return in_script(&bytes);
    }
    match Artifact::parse(&bytes).map(|artifact| artifact.script()) {
        Ok(Ok(Some(script))) => in_script(script),
        _ => Vec::new(),
    }
}

/// The names registered by `tool_register("NAME"` or `tool_register('NAME'` in a Lua
/// script (a call with a table argument, `tool_register{...}`, has no name to find).
fn in_script(script: &[u8]) -> Vec<String> {
    const CALL: &[u8] = b"tool_register";
    let mut names: Vec<String> = Vec::new();
    let mut rest = script;
    while let Some(found) = rest.windows(CALL.len()).position(|window| window == CALL) {
        rest = &rest[found + CALL.len()..];
        let after_paren = skip_space(rest)
            .strip_prefix(b"(")
            .map(skip_space)
            .unwrap_or_default();
        let Some((&quote, literal)) = after_paren.split_first() else {
            continue;
        };
        if quote != b'"' && quote != b'\'' {
            continue;
        }
        let Some(end) = literal.iter().position(|&byte| byte == quote) else {
            continue;
        };
        if let Ok(name) = std::str::from_utf8(&literal[..end])
            && schema::is_valid_tool_name(name)
            && !names.iter().any(|known| known == name)
        {
            names.push(name.to_string());
        }
    }
    names
}

fn skip_space(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|byte| !byte.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

#[cfg(test)]
mod tests {
    use super::in_script;

    #[test]
    fn finds_literal_names_in_order_once_each() {
        let script = br#"
            clm.tool_register("first", { invoke = f })
            clm.tool_register ( 'second' , spec)
            clm.tool_register("first", spec)
            clm.tool_register(name_from_a_variable, spec)
            clm.tool_register("not a valid name", spec)
            local register = clm.tool_register
        "#;
        assert_eq!(in_script(script), ["first", "second"]);
    }

    #[test]
    fn a_truncated_script_yields_what_it_holds() {
        assert_eq!(
            in_script(b"clm.tool_register(\"ok\", {}) clm.tool_register(\"cut"),
            ["ok"]
        );
        assert!(in_script(b"tool_register").is_empty());
    }
}
