//! A result of parts within its tool's output limits (`cut`). Every part the model gets
//! costs at least one line of the text limits: a text part its lines and bytes, a
//! resource link the line that names it, a binary part (image, audio, embedded resource)
//! one line; so `max_lines` bounds how many parts a result has. Binary parts also share
//! `max_binary_bytes`.
//!
//! A text part over the text limits is cut like a text result and the parts after it
//! are left out. A binary part is never cut: one over the binary limit is kept in the
//! result store and the model gets a resource link to it instead (a notice when it
//! cannot be kept); one left out is kept there too. The whole result, as text with every
//! part kept aside named by its id, is the call's result in the store, and a last text
//! part says what the model did not get and where it is.

use std::path::{Path, PathBuf};

use super::content::ContentPart;
use super::cut::{self, OutputLimits, count_lines};
use super::results::{self, ResultStore};
use crate::base::limits::format_bytes;

/// What becomes of one part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// The model gets it whole.
    Shown,
    /// A text part, of which the model gets the first so many bytes (not none).
    Cut(usize),
    /// A binary part over the binary limit: the model gets a link to it.
    Aside,
    /// After the text limits ran out: the model does not get it.
    Left,
}

/// Whether `parts` are over `limits`: what [`fit`] would change.
pub fn over(parts: &[ContentPart], limits: &OutputLimits) -> bool {
    plan(parts, limits).iter().any(|fate| *fate != Fate::Shown)
}

/// What becomes of each part, in order.
fn plan(parts: &[ContentPart], limits: &OutputLimits) -> Vec<Fate> {
    let (mut lines, mut bytes, mut binary) =
        (limits.max_lines, limits.max_bytes, limits.max_binary_bytes);
    let mut text_ran_out = false;
    let mut fates = Vec::with_capacity(parts.len());
    for part in parts {
        let fate = if text_ran_out {
            Fate::Left
        } else if let ContentPart::Text(text) = part {
            let text_lines = count_lines(text).max(1);
            if text_lines <= lines && text.len() <= bytes {
                lines -= text_lines;
                bytes -= text.len();
                Fate::Shown
            } else {
                text_ran_out = true;
                let within = OutputLimits {
                    max_lines: lines,
                    max_bytes: bytes,
                    ..*limits
                };
                match cut::cut(text, &within).map_or(0, |cut| cut.kept.len()) {
                    0 => Fate::Left,
                    end => Fate::Cut(end),
                }
            }
        } else {
            let text_bytes = match part {
                ContentPart::ResourceLink { .. } => part.text_view().len(),
                _ => 0,
            };
            if lines == 0 || text_bytes > bytes {
                text_ran_out = true;
                Fate::Left
            } else {
                lines -= 1;
                bytes -= text_bytes;
                let payload = part.binary_len();
                if payload <= binary {
                    binary -= payload;
                    Fate::Shown
                } else {
                    Fate::Aside
                }
            }
        };
        fates.push(fate);
    }
    fates
}

/// Where the whole of a result goes: the store (or why there is none) and the call's
/// result id.
pub struct Keeping<'a> {
    /// The result store, or why there is none.
    pub store: Result<&'a ResultStore, &'a str>,
    /// The call's result id.
    pub id: &'a str,
}

impl Keeping<'_> {
    /// Keeps `data` as `id`; the file, or why not.
    fn put(&self, id: &str, data: &[u8]) -> Result<PathBuf, String> {
        let store = self.store.map_err(str::to_string)?;
        store.put_bytes(id, data).map_err(|error| error.to_string())
    }
}

/// `parts` as the model gets them within `limits`, keeping what it does not get as
/// `keeping` says; `parts` unchanged when they are within the limits.
pub fn fit(
    parts: Vec<ContentPart>,
    limits: &OutputLimits,
    keeping: &Keeping<'_>,
) -> Vec<ContentPart> {
    let fates = plan(&parts, limits);
    if fates.iter().all(|fate| *fate == Fate::Shown) {
        return parts;
    }
    let total = parts.len();
    let mut tally = Tally::default();
    let mut shown = Vec::with_capacity(parts.len() + 1);
    let mut whole = Vec::with_capacity(parts.len());
    for (index, (part, fate)) in parts.into_iter().zip(fates).enumerate() {
        if let ContentPart::Text(text) = &part {
            tally.text(text, fate);
        }
        match fate {
            Fate::Shown => {
                whole.push(part.text_view());
                shown.push(part);
            }
            Fate::Cut(end) => {
                let ContentPart::Text(text) = part else {
                    unreachable!("only a text part is cut")
                };
                shown.push(ContentPart::Text(text[..end].to_string()));
                whole.push(text);
            }
            Fate::Aside | Fate::Left => {
                if matches!(fate, Fate::Aside) {
                    tally.aside += 1;
                } else {
                    tally.left += 1;
                }
                let Some(data) = part.payload() else {
                    whole.push(part.text_view());
                    continue;
                };
                let id = results::part_id(keeping.id, index + 1);
                let kept = keeping.put(&id, data);
                whole.push(match &kept {
                    Ok(_) => format!("{} (result {id})", part.text_view()),
                    Err(reason) => format!("{} (not kept: {reason})", part.text_view()),
                });
                if fate == Fate::Aside {
                    shown.push(match kept {
                        Ok(path) => link(&part, &id, &path),
                        Err(reason) => ContentPart::Text(format!(
                            "{} (over the result's limit for binary parts, {}; not kept: {reason})",
                            part.text_view(),
                            format_bytes(limits.max_binary_bytes as u64)
                        )),
                    });
                }
            }
        }
    }
    let kept = keeping.put(keeping.id, whole.join("\n").as_bytes());
    if let Err(reason) = &kept {
        tracing::warn!("the whole result {} was not kept: {reason}", keeping.id);
    }
    shown.push(ContentPart::Text(
        tally.notice(total, limits, keeping.id, kept),
    ));
    shown
}

/// A resource link to `part`, kept as result `id` in file `path`.
fn link(part: &ContentPart, id: &str, path: &Path) -> ContentPart {
    let mime_type = match part {
        ContentPart::Image { mime_type, .. } | ContentPart::Audio { mime_type, .. } => {
            Some(mime_type.clone())
        }
        ContentPart::Resource { mime_type, .. } => mime_type.clone(),
        ContentPart::Text(_) | ContentPart::ResourceLink { .. } => None,
    };
    let uri = url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|()| path.display().to_string());
    ContentPart::ResourceLink {
        uri,
        name: format!(
            "{} {id} ({})",
            part.kind(),
            format_bytes(part.binary_len() as u64)
        ),
        mime_type,
    }
}

/// What the model did not get, for the notice.
#[derive(Default)]
struct Tally {
    lines: usize,
    shown_lines: usize,
    bytes: usize,
    shown_bytes: usize,
    aside: usize,
    left: usize,
}

impl Tally {
    fn text(&mut self, text: &str, fate: Fate) {
        self.lines += count_lines(text);
        self.bytes += text.len();
        let shown = match fate {
            Fate::Shown => text,
            Fate::Cut(end) => &text[..end],
            Fate::Aside | Fate::Left => "",
        };
        self.shown_lines += count_lines(shown);
        self.shown_bytes += shown.len();
    }

    fn notice(
        &self,
        total: usize,
        limits: &OutputLimits,
        id: &str,
        kept: Result<PathBuf, String>,
    ) -> String {
        let mut what = Vec::new();
        if self.shown_bytes < self.bytes {
            what.push(format!(
                "shown {} of {} lines, {} of {} of text",
                self.shown_lines,
                self.lines,
                cut::bytes(self.shown_bytes),
                cut::bytes(self.bytes)
            ));
        }
        if self.left > 0 {
            what.push(format!("left out the last {} of {total} parts", self.left));
        }
        if self.aside > 0 {
            what.push(format!(
                "{} binary part{} over the result's limit of {} {} a link instead",
                self.aside,
                if self.aside == 1 { "" } else { "s" },
                format_bytes(limits.max_binary_bytes as u64),
                if self.aside == 1 { "is" } else { "are" },
            ));
        }
        let whereabouts = match kept {
            Ok(path) => format!(
                "the whole output is result {id}: `toolcell result {id}` prints it; it is in {}",
                path.display()
            ),
            Err(reason) => format!("the whole output was not kept: {reason}"),
        };
        format!("[output cut: {}; {whereabouts}]", what.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_lines: usize, max_bytes: usize, max_binary_bytes: usize) -> OutputLimits {
        OutputLimits {
            max_lines,
            max_bytes,
            max_binary_bytes,
        }
    }

    fn image(bytes: usize) -> ContentPart {
        ContentPart::Image {
            data: vec![7; bytes],
            mime_type: "image/png".into(),
        }
    }

    fn text(text: &str) -> ContentPart {
        ContentPart::Text(text.into())
    }

    #[test]
    fn parts_within_every_limit_are_given_unchanged() {
        let parts = vec![text("a\nb"), image(100), text("c")];
        assert!(!over(&parts, &limits(4, 4, 100)));
        assert!(over(&parts, &limits(3, 4, 100)), "each part is a line");
        assert!(over(&parts, &limits(4, 4, 99)));
        let keeping = Keeping {
            store: Err("unused"),
            id: "0a1b2c3d-1",
        };
        assert_eq!(fit(parts.clone(), &limits(4, 4, 100), &keeping), parts);
    }

    #[test]
    fn a_binary_part_over_the_limit_is_kept_whole_and_linked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = ResultStore::new(dir.path(), 10_000);
        let keeping = Keeping {
            store: Ok(&store),
            id: "0a1b2c3d-1",
        };
        // The first image fits; the second would pass the limit, the third fits again.
        let parts = vec![image(600), image(600), image(300), text("done")];
        assert!(over(&parts, &limits(100, 100, 1000)));
        let shown = fit(parts, &limits(100, 100, 1000), &keeping);
        assert_eq!(shown[0], image(600));
        let ContentPart::ResourceLink {
            uri,
            name,
            mime_type,
        } = &shown[1]
        else {
            panic!("a link, not {:?}", shown[1]);
        };
        assert_eq!(
            uri,
            &format!("file://{}/0a1b2c3d-1-2.bin", dir.path().display())
        );
        assert_eq!(name, "image 0a1b2c3d-1-2 (600 bytes)");
        assert_eq!(mime_type.as_deref(), Some("image/png"));
        assert_eq!(store.get_bytes("0a1b2c3d-1-2").expect("kept"), vec![7; 600]);
        assert_eq!(shown[2..4], [image(300), text("done")]);
        let ContentPart::Text(notice) = &shown[4] else {
            panic!("a notice");
        };
        assert_eq!(
            notice,
            &format!(
                "[output cut: 1 binary part over the result's limit of 1000 bytes is a link instead; \
                 the whole output is result 0a1b2c3d-1: `toolcell result 0a1b2c3d-1` prints it; \
                 it is in {}/0a1b2c3d-1.txt]",
                dir.path().display()
            )
        );
        assert_eq!(
            store.get("0a1b2c3d-1").expect("the whole"),
            "[image: image/png, 600 bytes]\n[image: image/png, 600 bytes] (result 0a1b2c3d-1-2)\n\
             [image: image/png, 300 bytes]\ndone"
        );
    }

    #[test]
    fn text_parts_share_the_text_limits_and_the_parts_after_the_cut_are_left_out() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = ResultStore::new(dir.path(), 10_000);
        let keeping = Keeping {
            store: Ok(&store),
            id: "0a1b2c3d-2",
        };
        // 10 bytes of text: "12345" fits, "67890abc" is cut after "6789".
        let parts = vec![
            text("12345"),
            image(10),
            text("67890abc"),
            image(20),
            text("z"),
        ];
        let shown = fit(parts, &limits(100, 9, 1000), &keeping);
        assert_eq!(shown[..3], [text("12345"), image(10), text("6789")]);
        assert_eq!(shown.len(), 4);
        let ContentPart::Text(notice) = &shown[3] else {
            panic!("a notice");
        };
        assert!(
            notice.starts_with(
                "[output cut: shown 2 of 3 lines, 9 bytes of 14 bytes of text; \
                 left out the last 2 of 5 parts; the whole output is result 0a1b2c3d-2"
            ),
            "{notice}"
        );
        assert_eq!(
            store
                .get_bytes("0a1b2c3d-2-4")
                .expect("the image left out is kept"),
            vec![7; 20]
        );
        assert_eq!(
            store.get("0a1b2c3d-2").expect("the whole"),
            "12345\n[image: image/png, 10 bytes]\n67890abc\n\
             [image: image/png, 20 bytes] (result 0a1b2c3d-2-4)\nz"
        );
    }

    #[test]
    fn every_part_costs_a_line_so_max_lines_bounds_how_many_parts_there_are() {
        let parts: Vec<ContentPart> = (0..10).map(|_| image(0)).chain([text("")]).collect();
        let keeping = Keeping {
            store: Err("no result store"),
            id: "0a1b2c3d-3",
        };
        let shown = fit(parts, &limits(4, 100, 100), &keeping);
        assert_eq!(shown[..4], [image(0), image(0), image(0), image(0)]);
        assert_eq!(
            shown[4],
            text(
                "[output cut: left out the last 7 of 11 parts; the whole output was not kept: \
                 no result store]"
            )
        );
        assert_eq!(shown.len(), 5);
    }

    #[test]
    fn without_a_store_a_part_over_the_limit_becomes_a_notice() {
        let keeping = Keeping {
            store: Err("no result store"),
            id: "0a1b2c3d-4",
        };
        let shown = fit(vec![image(2048)], &limits(10, 100, 1024), &keeping);
        assert_eq!(
            shown[0],
            text(
                "[image: image/png, 2 KiB] (over the result's limit for binary parts, 1 KiB; \
                 not kept: no result store)"
            )
        );
    }
}
