//! How tools are named: plugin ids, tool paths, the wire names model providers accept,
//! and globs over names and paths.
//!
//! - A plugin id is one segment (`notes`) or a namespace and a name (`acme/notes`); each
//!   segment is 1 to 64 of `a-z`, `0-9`, `-`, `.` and `_` (see
//!   [`crate::artifact::manifest::check_id`]).
//! - A tool's path is its plugin's id, `/`, and its name: `acme/notes/note_read`. Tool
//!   names never contain `/`, so the last segment is always the name.
//! - A wire name is what a model provider accepts as a tool name
//!   (`[A-Za-z0-9_-]{1,64}` for OpenAI and Anthropic). [`wire_name`] maps every path to
//!   one, the same one whatever else is loaded; see there for the rule.

use std::fmt;

use globset::{GlobBuilder, GlobMatcher};
use sha2::{Digest, Sha256};

use crate::tool::schema::{MAX_TOOL_NAME, is_valid_tool_name};

/// What joins the segments of a path in its readable wire name.
const WIRE_SEPARATOR: &str = "__";

/// What comes before the digest in a hashed wire name; a readable one never contains it.
const HASH_MARKER: &str = "___";

/// Hex digits of the path's SHA-256 in a hashed wire name (64 bits).
const HASH_DIGITS: usize = 16;

/// Whether `name` contains what joins the parts of a wire name (`__`), so that it is,
/// or could one day be, another tool's wire name: no tool holds such a plain name and
/// no alias may be one.
pub fn has_wire_separator(name: &str) -> bool {
    name.contains(WIRE_SEPARATOR)
}

/// Every name one tool answers to: what rules, scopes and interceptors match, so that
/// they apply to the tool whatever name a call uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolNames {
    /// The user's aliases for it.
    pub aliases: Vec<String>,
    /// Its own name, only when it holds it: a bare name matches only its holder.
    pub plain: Option<String>,
    /// `PLUGIN-ID/TOOL`.
    pub path: String,
    /// The wire name of its path.
    pub wire: String,
}

impl ToolNames {
    /// The names of a tool at `path` that holds no plain name and has no alias.
    pub fn of_path(path: &str) -> ToolNames {
        ToolNames {
            aliases: Vec::new(),
            plain: None,
            path: path.to_string(),
            wire: wire_name(path),
        }
    }

    /// Every name, aliases first, then the plain name, the path and the wire name.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.aliases
            .iter()
            .map(String::as_str)
            .chain(self.plain.as_deref())
            .chain([self.path.as_str(), self.wire.as_str()])
    }
}

/// The path of tool `tool` of plugin `plugin_id`.
pub fn tool_path(plugin_id: &str, tool: &str) -> String {
    format!("{plugin_id}/{tool}")
}

/// The plugin id and tool name of a path, if `path` has the shape of one (at least one
/// `/`, nothing empty around the last one).
pub fn split_path(path: &str) -> Option<(&str, &str)> {
    let (id, tool) = path.rsplit_once('/')?;
    (!id.is_empty() && !tool.is_empty()).then_some((id, tool))
}

/// The name a model provider gets for the tool at `path`: valid for every provider
/// (`[A-Za-z0-9_-]{1,64}`), different for every path, and the same in every run.
///
/// - Readable form: the path's segments joined with `__` (`acme/notes/note_read` →
///   `acme__notes__note_read`), when every segment is made of letters, digits, `-` and
///   single `_` between them (no `.`, no `__`, no `_` at either end) and the result fits
///   in 64 characters. [`path_of_wire`] turns it back into the path.
/// - Hashed form otherwise: the path with `/` written `__` and `.` written `_`, cut to
///   45 characters, then `___` and the first 16 hex digits of the path's SHA-256
///   (`io.github.corp/mcp/fetch` → `io_github_corp__mcp__fetch___` + 16 digits). A
///   readable form never contains `___`, so the two never meet; the runtime maps a
///   hashed form back to its path by looking it up.
pub fn wire_name(path: &str) -> String {
    if let Some(readable) = readable_wire_name(path) {
        return readable;
    }
    let digest = Sha256::digest(path.as_bytes());
    let hex: String = digest
        .iter()
        .flat_map(|byte| [byte >> 4, byte & 0xf])
        .take(HASH_DIGITS)
        .map(|nibble| char::from_digit(u32::from(nibble), 16).unwrap_or('0'))
        .collect();
    let prefix: String = path
        .replace('/', WIRE_SEPARATOR)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME - HASH_MARKER.len() - HASH_DIGITS)
        .collect();
    format!("{prefix}{HASH_MARKER}{hex}")
}

/// The path a readable wire name stands for; `None` for a hashed one (ask the runtime)
/// or for text that is no wire name at all.
pub fn path_of_wire(wire: &str) -> Option<String> {
    if wire.contains(HASH_MARKER) {
        return None;
    }
    let segments: Vec<&str> = wire.split(WIRE_SEPARATOR).collect();
    if !(2..=3).contains(&segments.len()) {
        return None;
    }
    let path = segments.join("/");
    (readable_wire_name(&path).as_deref() == Some(wire)).then_some(path)
}

fn readable_wire_name(path: &str) -> Option<String> {
    let (id, tool) = split_path(path)?;
    let readable_segment = |segment: &str| {
        !segment.is_empty()
            && !segment.starts_with('_')
            && !segment.ends_with('_')
            && !segment.contains(WIRE_SEPARATOR)
            && segment
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
    };
    if id.split('/').count() > 2 || !id.split('/').all(readable_segment) || !readable_segment(tool)
    {
        return None;
    }
    let mut wire = id.replace('/', WIRE_SEPARATOR);
    wire.push_str(WIRE_SEPARATOR);
    wire.push_str(tool);
    is_valid_tool_name(&wire).then_some(wire)
}

/// A glob over tool names and paths, as scopes and permission rules take them: `*`
/// matches any run of characters but `/`, `?` one character but `/`, `[abc]` one of a
/// set, and `**` as a whole segment any number of segments (`acme/**`: every tool of
/// every plugin whose id starts with `acme/`, and of plugin `acme`).
///
/// A glob in wire form (one with `__`, which no alias or plain name holds) names tools
/// by their wire names: it matches a tool whose wire name it is, or whose path matches
/// it read with `/` for each `__` (`web__*` is `web/*`), so that `*` stays within a
/// segment there too.
#[derive(Clone)]
pub struct ToolGlob {
    text: String,
    matcher: GlobMatcher,
    /// For a glob in wire form: the path glob it stands for.
    wire_path: Option<GlobMatcher>,
}

/// A glob that cannot be used; the text says why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tool glob {glob:?}: {reason}")]
pub struct GlobError {
    /// The glob as given.
    pub glob: String,
    /// What is wrong with it.
    pub reason: String,
}

impl ToolGlob {
    /// Compiles `text`.
    pub fn new(text: &str) -> Result<ToolGlob, GlobError> {
        let error = |reason: String| GlobError {
            glob: text.to_string(),
            reason,
        };
        if text.is_empty() {
            return Err(error("it is empty".to_string()));
        }
        let compile = |text: &str| {
            GlobBuilder::new(text)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|glob| glob.compile_matcher())
                .map_err(|problem| error(problem.kind().to_string()))
        };
        let wire_path = if has_wire_separator(text) {
            Some(compile(&text.replace(WIRE_SEPARATOR, "/"))?)
        } else {
            None
        };
        Ok(ToolGlob {
            text: text.to_string(),
            matcher: compile(text)?,
            wire_path,
        })
    }

    /// The glob as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the glob matches `name` as a string (a tool name, alias or path).
    pub fn is_match(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }

    /// Whether the glob matches the tool that answers to `names`: one of its aliases,
    /// the plain name it holds, or its path; in wire form, its wire name or path.
    pub fn matches(&self, names: &ToolNames) -> bool {
        match &self.wire_path {
            Some(path_glob) => self.text == names.wire || path_glob.is_match(&names.path),
            None => names
                .aliases
                .iter()
                .map(String::as_str)
                .chain(names.plain.as_deref())
                .chain([names.path.as_str()])
                .any(|name| self.matcher.is_match(name)),
        }
    }
}

impl fmt::Debug for ToolGlob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ToolGlob").field(&self.text).finish()
    }
}

impl fmt::Display for ToolGlob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for ToolGlob {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for ToolGlob {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_get_readable_wire_names_that_read_back() {
        for (path, wire) in [
            ("hello/hello", "hello__hello"),
            ("acme/notes/note_read", "acme__notes__note_read"),
            ("web-search/Find-It", "web-search__Find-It"),
            ("a_b/c_d/e_f", "a_b__c_d__e_f"),
        ] {
            assert_eq!(wire_name(path), wire);
            assert_eq!(path_of_wire(wire).as_deref(), Some(path));
        }
    }

    #[test]
    fn other_paths_get_hashed_wire_names_that_fit_and_differ() {
        let paths = [
            "io.github.corp/mcp/fetch",
            "a/b__c",
            "a__b/c",
            "_a/b",
            "a_/b",
            "a/_b",
            "a.b/c",
            "a_b/c.d",
        ];
        let wires: Vec<String> = paths.iter().map(|path| wire_name(path)).collect();
        for (path, wire) in paths.iter().zip(&wires) {
            assert!(is_valid_tool_name(wire), "{path} → {wire} must be valid");
            assert!(wire.contains(HASH_MARKER), "{path} → {wire} is hashed");
            assert_eq!(path_of_wire(wire), None);
        }
        assert!(wires[0].starts_with("io_github_corp__mcp__fetch___"));
        let mut unique = wires.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), wires.len(), "{wires:?}");
        // Stable: the same path always gets the same name.
        assert_eq!(wire_name(paths[0]), wires[0]);
    }

    #[test]
    fn a_long_path_is_hashed_to_64_characters() {
        let path = format!("{}/{}/{}", "n".repeat(64), "p".repeat(64), "t".repeat(64));
        let wire = wire_name(&path);
        assert_eq!(wire.len(), MAX_TOOL_NAME);
        assert!(is_valid_tool_name(&wire));
        assert_ne!(wire, wire_name(&format!("{path}x")));
    }

    #[test]
    fn text_that_is_no_readable_wire_name_reads_back_as_nothing() {
        for text in ["hello", "a__b__c__d", "a____b", "__a", "a__", "a__b_"] {
            assert_eq!(path_of_wire(text), None, "{text}");
        }
    }

    #[test]
    fn star_stays_within_a_segment_and_double_star_crosses() {
        let glob = |text| ToolGlob::new(text).expect("valid glob");
        assert!(glob("*").is_match("note_read"));
        assert!(!glob("*").is_match("acme/notes/note_read"));
        assert!(glob("acme/notes/*").is_match("acme/notes/note_read"));
        assert!(!glob("acme/*").is_match("acme/notes/note_read"));
        assert!(glob("acme/**").is_match("acme/notes/note_read"));
        assert!(glob("*_read").is_match("note_read"));
        assert!(glob("note_?ead").is_match("note_read"));
        assert!(ToolGlob::new("").is_err());
        assert!(ToolGlob::new("a[").is_err());
    }

    #[test]
    fn a_glob_matches_a_tool_by_the_names_it_holds() {
        let glob = |text| ToolGlob::new(text).expect("valid glob");
        let holder = ToolNames {
            aliases: vec!["safe_tool".to_string()],
            plain: Some("search".to_string()),
            ..ToolNames::of_path("web/search")
        };
        // Another plugin's tool of the same name holds no plain name.
        let other = ToolNames::of_path("b_evil/search");
        for text in ["search", "safe_tool", "web/search", "web__search", "web__*"] {
            assert!(glob(text).matches(&holder), "{text}");
        }
        assert!(!glob("search").matches(&other));
        assert!(glob("b_evil__search").matches(&other));
        assert!(glob("*/search").matches(&other));
        // In wire form `*` stays within a segment, as in a path.
        assert!(!glob("b_evil__*").matches(&ToolNames::of_path("b_evil/ns/search")));
        // A hashed wire name matches as written.
        let hashed = ToolNames::of_path("io.corp/fetch");
        assert!(
            ToolGlob::new(&hashed.wire)
                .expect("valid glob")
                .matches(&hashed)
        );
        // A glob without `__` never matches a wire name: `danger*` is not `dangerous/safe`.
        assert!(!glob("danger*").matches(&ToolNames::of_path("dangerous/safe")));
    }
}
