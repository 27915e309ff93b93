//! A result of several parts: text, images, audio, resource links and embedded
//! resources (`ctx:complete_content`, the WIT world's `completed-content`, MCP's content
//! types). The host owns these types so that callers never see the WIT bindings; a
//! guest's parts are converted once, where the sandbox reads its call-state.

use crate::base::limits::format_bytes;
use crate::sandbox::wit;

/// One part of a tool's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentPart {
    /// Text the model reads.
    Text(String),
    /// An image: its bytes and MIME type.
    Image {
        /// The raw bytes.
        data: Vec<u8>,
        /// Their MIME type ("image/png").
        mime_type: String,
    },
    /// An audio clip: its bytes and MIME type.
    Audio {
        /// The raw bytes.
        data: Vec<u8>,
        /// Their MIME type ("audio/wav").
        mime_type: String,
    },
    /// A resource the caller may read or fetch itself.
    ResourceLink {
        /// Where it is.
        uri: String,
        /// A name for it.
        name: String,
        /// Its MIME type, when known.
        mime_type: Option<String>,
    },
    /// A resource with its contents.
    Resource {
        /// Where it is.
        uri: String,
        /// Its MIME type, when known.
        mime_type: Option<String>,
        /// What it holds.
        contents: ResourceContents,
    },
}

/// What an embedded resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl ContentPart {
    /// The part's kind as clm-tool's Lua API names it: `text`, `image`, `audio`,
    /// `resource_link` or `resource`.
    pub fn kind(&self) -> &'static str {
        match self {
            ContentPart::Text(_) => "text",
            ContentPart::Image { .. } => "image",
            ContentPart::Audio { .. } => "audio",
            ContentPart::ResourceLink { .. } => "resource_link",
            ContentPart::Resource { .. } => "resource",
        }
    }

    /// The bytes the part carries besides the result's text: an image's, an audio
    /// clip's, an embedded resource's (its text too: a document handed over, not text of
    /// the result). `None` for text and resource links.
    pub fn payload(&self) -> Option<&[u8]> {
        match self {
            ContentPart::Image { data, .. } | ContentPart::Audio { data, .. } => Some(data),
            ContentPart::Resource { contents, .. } => Some(match contents {
                ResourceContents::Text(text) => text.as_bytes(),
                ResourceContents::Blob(data) => data,
            }),
            ContentPart::Text(_) | ContentPart::ResourceLink { .. } => None,
        }
    }

    /// How many bytes [`ContentPart::payload`] has: what the per-result limit for
    /// binary parts counts.
    pub fn binary_len(&self) -> usize {
        self.payload().map_or(0, <[u8]>::len)
    }

    /// The part as plain text, for callers that show text only: a text part as it is,
    /// any other as one line saying what it is (`[image: image/png, 1.2 KiB]`).
    pub fn text_view(&self) -> String {
        match self {
            ContentPart::Text(text) => text.clone(),
            ContentPart::Image { data, mime_type } | ContentPart::Audio { data, mime_type } => {
                format!(
                    "[{}: {mime_type}, {}]",
                    self.kind(),
                    format_bytes(data.len() as u64)
                )
            }
            ContentPart::ResourceLink { uri, name, .. } => format!("[resource link: {name} {uri}]"),
            ContentPart::Resource { uri, contents, .. } => match contents {
                ResourceContents::Text(text) => format!("[resource: {uri}]\n{text}"),
                ResourceContents::Blob(data) => {
                    format!("[resource: {uri}, {}]", format_bytes(data.len() as u64))
                }
            },
        }
    }
}

/// A result's parts as plain text, one part after the other on lines of their own.
pub fn text_view(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .map(ContentPart::text_view)
        .collect::<Vec<_>>()
        .join("\n")
}

impl From<wit::ContentPart> for ContentPart {
    fn from(part: wit::ContentPart) -> Self {
        match part {
            wit::ContentPart::Text(text) => ContentPart::Text(text),
            wit::ContentPart::Image(media) => ContentPart::Image {
                data: media.data,
                mime_type: media.mime_type,
            },
            wit::ContentPart::Audio(media) => ContentPart::Audio {
                data: media.data,
                mime_type: media.mime_type,
            },
            wit::ContentPart::ResourceLink(link) => ContentPart::ResourceLink {
                uri: link.uri,
                name: link.name,
                mime_type: link.mime_type,
            },
            wit::ContentPart::Resource(resource) => ContentPart::Resource {
                uri: resource.uri,
                mime_type: resource.mime_type,
                contents: match resource.contents {
                    wit::ResourceContents::Text(text) => ResourceContents::Text(text),
                    wit::ResourceContents::Blob(data) => ResourceContents::Blob(data),
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_parts_read_as_one_line_saying_what_they_are() {
        let parts = [
            ContentPart::Text("a chart".into()),
            ContentPart::Image {
                data: vec![0; 2048],
                mime_type: "image/png".into(),
            },
            ContentPart::ResourceLink {
                uri: "file:///r/x.csv".into(),
                name: "x.csv".into(),
                mime_type: None,
            },
        ];
        assert_eq!(
            text_view(&parts),
            "a chart\n[image: image/png, 2 KiB]\n[resource link: x.csv file:///r/x.csv]"
        );
        assert_eq!(
            parts.iter().map(ContentPart::binary_len).sum::<usize>(),
            2048
        );
    }
}
