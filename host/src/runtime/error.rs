//! Why a call could not be made at all, with the closest names to an unknown one.

#[cfg(doc)]
use super::CallOptions;
#[cfg(doc)]
use super::Session;

/// Why a call could not be made at all (as opposed to a tool that ran and failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// The tool belongs to a plugin that did not load (or a registration the host
    /// refused); `reason` says why.
    #[error("tool {} is unavailable: {reason}", quoted_name(name))]
    Unavailable {
        /// The name asked for.
        name: String,
        /// The diagnostic that explains it.
        reason: String,
    },
    /// No loaded plugin registered this tool (or, for a [`Session`], it is not in the
    /// session's scope; or it is hidden, and the call was made with
    /// [`CallOptions::refuse_hidden`]).
    #[error("unknown tool {}{}", quoted_name(name), did_you_mean(suggestions))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The closest names that would have been found, closest first (at most three).
        suggestions: Vec<String>,
    },
    /// The arguments are not a JSON object, too large, or break the tool's schema.
    #[error("invalid arguments for '{tool}': {message}")]
    InvalidArguments {
        /// The tool called.
        tool: String,
        /// What is wrong with them.
        message: String,
    },
}

/// A tool name as errors quote it: at most its first [`SHOWN_NAME_CHARS`] characters,
/// escaped, since a name a client sent can be anything.
fn quoted_name(name: &str) -> String {
    let count = name.chars().count();
    let shown: String = name.chars().take(SHOWN_NAME_CHARS).collect();
    let shown = shown.escape_debug();
    if count > SHOWN_NAME_CHARS {
        format!("'{shown}…' (a name of {count} characters)")
    } else {
        format!("'{shown}'")
    }
}

/// How much of an unknown tool's name an error quotes.
const SHOWN_NAME_CHARS: usize = 64;

/// The most names [`closest`] suggests.
const MAX_SUGGESTIONS: usize = 3;

/// The names among `candidates` close enough to `name` to be a likely typo, closest
/// first, at most [`MAX_SUGGESTIONS`].
pub(super) fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = candidates
        .map(|candidate| (strsim::jaro_winkler(name, candidate), candidate))
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, candidate)| candidate.to_string())
        .collect()
}

/// ` (did you mean 'a'?)`, ` (did you mean 'a', 'b' or 'c'?)`, or nothing.
pub(super) fn did_you_mean(suggestions: &[String]) -> String {
    let quoted: Vec<String> = suggestions.iter().map(|name| format!("'{name}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean {one}?)"),
        [rest @ .., last] => format!(" (did you mean {} or {last}?)", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::{closest, did_you_mean};

    #[test]
    fn suggests_close_names_closest_first_and_nothing_for_a_distant_one() {
        let names = ["hello", "read_note", "write_note", "write_notes2"];
        assert_eq!(closest("helo", names.iter().copied()), ["hello"]);
        assert_eq!(
            closest("write_notes", names.iter().copied()),
            ["write_notes2", "write_note"]
        );
        assert!(closest("zzz", names.iter().copied()).is_empty());
    }

    #[test]
    fn suggestions_read_as_a_question() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(did_you_mean(&names(&["a"])), " (did you mean 'a'?)");
        assert_eq!(
            did_you_mean(&names(&["a", "b", "c"])),
            " (did you mean 'a', 'b' or 'c'?)"
        );
    }
}
