//! How messages name things: paths and JSON values, worded the same everywhere.

use std::path::Path;

use serde_json::Value;

/// The last component of `path`, for messages whose context already names its directory.
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What kind of JSON value `value` is, with its article: "a string", "an object", "null".
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `text` safe to print to a terminal: every control character but newline and tab
/// written as an escape (`\u{1b}`, `\r`), as `ls` and `git` show names, so that text a
/// plugin wrote (a description, an error, its output) cannot move the cursor, clear the
/// screen or set the clipboard. Borrowed when there is nothing to escape.
#[cfg(feature = "cli")]
pub(crate) fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;

    let escaped = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            safe.extend(c.escape_debug());
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
}

#[cfg(all(test, feature = "cli"))]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn control_characters_but_newline_and_tab_are_escaped_for_a_terminal() {
        assert!(matches!(terminal_safe("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            terminal_safe("a\u{1b}[2Jb\rc\u{7}\u{9b}d\u{7f}\né"),
            "a\\u{1b}[2Jb\\rc\\u{7}\\u{9b}d\\u{7f}\né"
        );
    }
}
