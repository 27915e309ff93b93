//! The opcode bodies of the interpreter: the block each `vmcase(OP_...)` of
//! `luaV_execute` runs, read from toolcell's own `lvm.c`, so that compiled code does
//! exactly what the interpreter does, count hook charges included.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::sources::LVM_C;

/// Each opcode's body (`{ ... }`, as written in `lvm.c`), by opcode name.
pub fn bodies() -> &'static HashMap<String, String> {
    static BODIES: LazyLock<HashMap<String, String>> = LazyLock::new(|| {
        extract(LVM_C)
            .unwrap_or_else(|error| panic!("the opcode bodies of lvm.c: {error}"))
            .into_iter()
            .collect()
    });
    &BODIES
}

/// The bodies of the `vmcase`s of `luaV_execute` in `source`, in order.
fn extract(source: &str) -> Result<Vec<(String, String)>, String> {
    let start = source
        .find("void luaV_execute (")
        .ok_or("no luaV_execute")?;
    let bytes = source.as_bytes();
    let mut bodies = Vec::new();
    let mut at = start;
    while at < bytes.len() {
        if let Some(next) = skip_non_code(bytes, at) {
            at = next;
            continue;
        }
        if source[at..].starts_with("vmcase(") {
            let name_start = at + "vmcase(".len();
            let name_end = name_start
                + source[name_start..]
                    .find(')')
                    .ok_or("an unterminated vmcase")?;
            let name = source[name_start..name_end].trim().to_string();
            let open = name_end
                + 1
                + source[name_end + 1..]
                    .find(|c: char| !c.is_whitespace())
                    .ok_or("a vmcase without a body")?;
            if bytes[open] != b'{' {
                return Err(format!("{name}: its body is not a block"));
            }
            let close = matching_brace(bytes, open).ok_or_else(|| format!("{name}: unbalanced"))?;
            bodies.push((name, source[open..=close].to_string()));
            at = close + 1;
            continue;
        }
        at += 1;
    }
    Ok(bodies)
}

/// Where the comment or literal that starts at `at` ends, if one does.
fn skip_non_code(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    if rest.starts_with(b"/*") {
        let end = find(bytes, at + 2, b"*/").map_or(bytes.len(), |end| end + 2);
        return Some(end);
    }
    if rest.starts_with(b"//") {
        return Some(find(bytes, at, b"\n").unwrap_or(bytes.len()));
    }
    if let Some(quote @ (b'"' | b'\'')) = rest.first().copied() {
        let mut end = at + 1;
        while end < bytes.len() && bytes[end] != quote {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        return Some(end + 1);
    }
    None
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes[from..]
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|position| from + position)
}

/// The `}` closing the `{` at `open`.
fn matching_brace(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = open;
    while at < bytes.len() {
        if let Some(next) = skip_non_code(bytes, at) {
            at = next;
            continue;
        }
        match bytes[at] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opcodes;

    #[test]
    fn every_opcode_has_one_body_in_lvm_c() {
        let extracted = extract(LVM_C).expect("lvm.c's opcodes");
        let mut names: Vec<&str> = extracted.iter().map(|(name, _)| name.as_str()).collect();
        let mut expected: Vec<&str> = opcodes::names().iter().map(String::as_str).collect();
        names.sort_unstable();
        expected.sort_unstable();
        assert_eq!(names, expected, "one vmcase per opcode of lopcodes.h");
    }

    /// The labels an opcode body may jump to. `startfunc` (a Lua call, which the
    /// translator points at the call's continuation, or a tail call) and `ret` (a
    /// return) are the compiled function's; `l_tforcall` and `l_tforloop` are the
    /// generic `for` loop's steps, which the translator points at the right instruction.
    const LABELS: &[&str] = &["startfunc", "ret", "l_tforcall", "l_tforloop"];

    /// A body is copied once per instruction into a C function of many: it may leave
    /// only through the labels the translator provides.
    #[test]
    fn bodies_jump_only_to_the_labels_the_translator_provides() {
        for (name, body) in bodies() {
            let mut rest = body.as_str();
            while let Some(at) = rest.find("goto ") {
                let label: String = rest[at + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(LABELS.contains(&label.as_str()), "{name} jumps to {label}");
                rest = &rest[at + 5..];
            }
        }
    }

    #[test]
    fn comments_and_literals_do_not_confuse_the_reader() {
        let source = "void luaV_execute (x) { vmcase(OP_A) { /* } */ a = '}'; b = \"{\"; } \
                      vmcase(OP_B) { { c; } // }\n }";
        let extracted = extract(source).expect("extracts");
        assert_eq!(extracted.len(), 2);
        assert_eq!(extracted[0].1, "{ /* } */ a = '}'; b = \"{\"; }");
        assert_eq!(extracted[1].1, "{ { c; } // }\n }");
    }
}
