//! A call's outcome as MCP content: a result of parts becomes one content block per
//! part (images, audio and blobs base64-encoded, as MCP carries bytes); any other
//! outcome is the text the model sees.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents};

use crate::output::content::{self, ContentPart};
use crate::output::outcome::CallOutcome;

/// The MCP result of a call that ended with `outcome`.
pub(super) fn result(outcome: &CallOutcome) -> CallToolResult {
    if let Some(parts) = outcome.content() {
        return CallToolResult::success(parts.iter().map(block).collect());
    }
    let text = ContentBlock::text(outcome.model_text());
    if outcome.is_completed() {
        CallToolResult::success(vec![text])
    } else {
        CallToolResult::error(vec![text])
    }
}

/// One part as an MCP content block.
fn block(part: &ContentPart) -> ContentBlock {
    match part {
        ContentPart::Text(text) => ContentBlock::text(text.clone()),
        ContentPart::Image { data, mime_type } => {
            ContentBlock::image(BASE64.encode(data), mime_type.clone())
        }
        ContentPart::Audio { data, mime_type } => {
            ContentBlock::audio(BASE64.encode(data), mime_type.clone())
        }
        ContentPart::ResourceLink {
            uri,
            name,
            mime_type,
        } => {
            let mut resource = Resource::new(uri.clone(), name.clone());
            resource.mime_type = mime_type.clone();
            ContentBlock::resource_link(resource)
        }
        ContentPart::Resource {
            uri,
            mime_type,
            contents,
        } => ContentBlock::resource(match contents {
            content::ResourceContents::Text(text) => ResourceContents::TextResourceContents {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: text.clone(),
                meta: None,
            },
            content::ResourceContents::Blob(data) => ResourceContents::BlobResourceContents {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                blob: BASE64.encode(data),
                meta: None,
            },
        }),
    }
}
