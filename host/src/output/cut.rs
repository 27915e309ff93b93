//! What the model sees of a tool's result: at most so many lines and bytes. A longer
//! result is cut on a character boundary and ends with a notice saying how much was
//! cut and where the whole output is (the result store, `results`). Every plugin
//! language gets the same policy: it is applied by the host, to the text the plugin
//! completed with.

use std::path::Path;

use crate::base::limits::{format_bytes, prefix_within};

/// The default [`OutputLimits::max_lines`].
pub const DEFAULT_MAX_LINES: usize = 2000;
/// The default [`OutputLimits::max_bytes`].
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// The default [`OutputLimits::max_binary_bytes`]: an image of this size is already
/// thousands of tokens to most models.
pub const DEFAULT_MAX_BINARY_BYTES: usize = 1024 * 1024;
/// The default longest tool description the model sees, in bytes.
pub const DEFAULT_MAX_DESCRIPTION_BYTES: usize = 4096;
/// The longest tool title the model (and an MCP client's user) sees, in bytes: a title
/// is a display name, and `tools/list` carries it twice.
pub const MAX_TITLE_BYTES: usize = 256;

/// How much of one tool's result the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// The most lines.
    pub max_lines: usize,
    /// The most bytes (of UTF-8).
    pub max_bytes: usize,
    /// The most bytes of a result's binary parts (images, audio, embedded resources)
    /// together; a part that does not fit is never cut (see `parts`).
    pub max_binary_bytes: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
            max_binary_bytes: DEFAULT_MAX_BINARY_BYTES,
        }
    }
}

/// A result over its limits: the part the model sees, and the size of the whole.
#[derive(Debug, PartialEq, Eq)]
pub struct Cut<'a> {
    /// The start of the result that is kept.
    pub kept: &'a str,
    /// The lines of the result that are kept (the last one may be partial).
    pub kept_lines: usize,
    /// The lines of the whole result.
    pub lines: usize,
    /// The bytes of the whole result.
    pub bytes: usize,
}

/// `text` cut to `limits`, or `None` when it is within them. A line is what ends with
/// a newline, or the rest after the last one.
pub fn cut<'a>(text: &'a str, limits: &OutputLimits) -> Option<Cut<'a>> {
    // A text has no more lines than bytes: most results need no counting.
    if text.len() <= limits.max_bytes.min(limits.max_lines) {
        return None;
    }
    let lines = count_lines(text);
    if lines <= limits.max_lines && text.len() <= limits.max_bytes {
        return None;
    }
    let mut end = prefix_within(text, limits.max_bytes).len();
    if let Some((newline, _)) = text[..end]
        .match_indices('\n')
        .nth(limits.max_lines.saturating_sub(1))
        .filter(|_| limits.max_lines > 0)
    {
        end = end.min(newline + 1);
    } else if limits.max_lines == 0 {
        end = 0;
    }
    let kept = &text[..end];
    Some(Cut {
        kept,
        kept_lines: count_lines(kept),
        lines,
        bytes: text.len(),
    })
}

/// The lines of `text`: what ends with a newline, or the rest after the last one.
pub(crate) fn count_lines(text: &str) -> usize {
    let newlines = text.bytes().filter(|&byte| byte == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Where the whole of a cut result is.
#[derive(Debug)]
pub enum Kept<'a> {
    /// In the result store, as result `id`, in file `path`.
    Stored { id: &'a str, path: &'a Path },
    /// Nowhere; the text says why.
    Lost(String),
}

/// The part of `cut` the model sees, followed by the notice: how much was cut and
/// where the whole is.
pub fn shown(cut: &Cut<'_>, kept: &Kept<'_>) -> String {
    let whereabouts = match kept {
        Kept::Stored { id, path } => format!(
            "the whole output is result {id}: `toolcell result {id}` prints it; it is in {}",
            path.display()
        ),
        Kept::Lost(reason) => format!("the whole output was not kept: {reason}"),
    };
    let separator = if cut.kept.is_empty() || cut.kept.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!(
        "{}{separator}[output cut: shown {} of {} lines, {} of {}; {whereabouts}]",
        cut.kept,
        cut.kept_lines,
        cut.lines,
        bytes(cut.kept.len()),
        bytes(cut.bytes),
    )
}

/// `count` bytes, exactly, and rounded when that is shorter to read.
pub(crate) fn bytes(count: usize) -> String {
    match format_bytes(count as u64) {
        exact if !exact.ends_with("iB") => exact,
        rounded => format!("{count} bytes ({rounded})"),
    }
}

/// `description` cut to `max_bytes` (an ellipsis ends it), or `None` when it fits.
pub fn cut_description(description: &str, max_bytes: usize) -> Option<String> {
    if description.len() <= max_bytes {
        return None;
    }
    let kept = prefix_within(description, max_bytes.saturating_sub('…'.len_utf8()));
    Some(format!("{kept}…"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_lines: usize, max_bytes: usize) -> OutputLimits {
        OutputLimits {
            max_lines,
            max_bytes,
            ..OutputLimits::default()
        }
    }

    #[test]
    fn text_within_both_limits_is_not_cut() {
        assert_eq!(cut("a\nb\nc", &limits(3, 5)), None);
        assert_eq!(cut("a\nb\nc\n", &limits(3, 6)), None);
        assert_eq!(cut("", &limits(0, 0)), None);
    }

    #[test]
    fn lines_cut_first_when_they_come_first() {
        let cut = cut("one\ntwo\nthree\nfour", &limits(2, 100)).expect("cut");
        assert_eq!(cut.kept, "one\ntwo\n");
        assert_eq!((cut.kept_lines, cut.lines, cut.bytes), (2, 4, 18));
    }

    #[test]
    fn bytes_cut_on_a_character_boundary() {
        // 'é' is two bytes: a cut at 4 would split the second one.
        let cut = cut("éééé", &limits(10, 5)).expect("cut");
        assert_eq!(cut.kept, "éé");
        assert_eq!((cut.kept_lines, cut.lines, cut.bytes), (1, 1, 8));
    }

    #[test]
    fn the_notice_says_how_much_and_where() {
        let text = "x".repeat(3000);
        let cut = cut(&text, &limits(10, 2048)).expect("cut");
        let path = Path::new("/cache/results/0a1b2c3d-7.txt");
        assert_eq!(
            shown(
                &cut,
                &Kept::Stored {
                    id: "0a1b2c3d-7",
                    path
                }
            ),
            format!(
                "{}\n[output cut: shown 1 of 1 lines, 2048 bytes (2 KiB) of 3000 bytes; the whole output is result 0a1b2c3d-7: `toolcell result 0a1b2c3d-7` prints it; it is in /cache/results/0a1b2c3d-7.txt]",
                "x".repeat(2048)
            )
        );
        let lines = "l\n".repeat(5);
        let cut = super::cut(&lines, &limits(2, 100)).expect("cut");
        assert_eq!(
            shown(&cut, &Kept::Lost("no result store".to_string())),
            "l\nl\n[output cut: shown 2 of 5 lines, 4 bytes of 10 bytes; the whole output was not kept: no result store]"
        );
    }

    #[test]
    fn descriptions_are_cut_with_an_ellipsis_within_the_limit() {
        assert_eq!(cut_description("short", 10), None);
        let cut = cut_description(&"é".repeat(10), 10).expect("cut");
        assert_eq!(cut, "ééé…");
        assert!(cut.len() <= 10);
    }
}
