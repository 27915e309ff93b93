//! The CNCF Wasm OCI artifact layout (TAG Runtime's "Wasm OCI Artifact layout"), the
//! one `wkg`, `cargo component` and wasmCloud write, so their tools can pull what
//! toolcell pushes and the reverse:
//!
//! - an OCI image manifest (`application/vnd.oci.image.manifest.v1+json`),
//! - whose config is `application/vnd.wasm.config.v0+json`: when it was made, the
//!   architecture `wasm`, the os `wasip2`, the digests of the layers, and the
//!   component's imports, exports and target world,
//! - and whose one layer is the component itself, `application/wasm`, byte for byte
//!   the plugin file (manifest and signatures included).
//!
//! The manifest also carries the usual `org.opencontainers.image.*` annotations from
//! the plugin's manifest (title = id, version, description, created).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};

use super::DistributionError;
use crate::artifact::manifest::Manifest;
use crate::artifact::{Artifact, WIT_PACKAGE};
use crate::engine::cache::sha256_hex;

/// The media type of the image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The media type of the config blob that marks a Wasm artifact.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of the layer that holds the component.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";

/// The config blob (`application/vnd.wasm.config.v0+json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// When the artifact was made (RFC 3339).
    pub created: String,
    /// Who made it; the spec allows it here or as an annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component.
    pub os: String,
    /// The digests of the manifest's layers, in order (they make the config's own
    /// digest unique to the content).
    pub layer_digests: Vec<String>,
    /// What the component imports and exports (required for `wasip2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentInfo>,
}

/// The `component` part of the config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentInfo {
    /// Its top-level exports: interfaces (`toolcell:plugin/guest@0.2.0`) or functions.
    pub exports: Vec<String>,
    /// Its top-level imports.
    pub imports: Vec<String>,
    /// The world it targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What is pushed for one plugin: the config and the manifest, serialized exactly as
/// they are sent (the manifest's digest is the SHA-256 of `manifest`).
pub struct Image {
    /// The config blob.
    pub config: Vec<u8>,
    /// The manifest document.
    pub manifest: Vec<u8>,
    /// The layer's digest (`sha256:...`).
    pub layer_digest: String,
}

/// The artifact for a plugin file (`bytes`, already checked as `artifact`).
pub fn image(
    bytes: &[u8],
    artifact: &Artifact<'_>,
    plugin: &Manifest,
) -> Result<Image, DistributionError> {
    let layer_digest = format!("sha256:{}", sha256_hex(bytes));
    let created = created();
    let target = artifact
        .wit_version()
        .ok()
        .map(|version| format!("{WIT_PACKAGE}/plugin@{version}"));
    let config = WasmConfig {
        created: created.clone(),
        author: None,
        architecture: "wasm".to_string(),
        os: "wasip2".to_string(),
        layer_digests: vec![layer_digest.clone()],
        component: Some(ComponentInfo {
            exports: artifact.exports().iter().map(ToString::to_string).collect(),
            imports: artifact.imports().iter().map(ToString::to_string).collect(),
            target,
        }),
    };
    let config = serde_json::to_vec(&config).map_err(json_error)?;
    let mut annotations = BTreeMap::from([
        ("org.opencontainers.image.created".to_string(), created),
        (
            "org.opencontainers.image.title".to_string(),
            plugin.id.clone(),
        ),
        (
            "org.opencontainers.image.version".to_string(),
            plugin.version.to_string(),
        ),
    ]);
    if !plugin.description.is_empty() {
        annotations.insert(
            "org.opencontainers.image.description".to_string(),
            plugin.description.clone(),
        );
    }
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_string()),
        config: OciDescriptor {
            media_type: CONFIG_MEDIA_TYPE.to_string(),
            digest: format!("sha256:{}", sha256_hex(&config)),
            size: config.len() as i64,
            ..OciDescriptor::default()
        },
        layers: vec![OciDescriptor {
            media_type: LAYER_MEDIA_TYPE.to_string(),
            digest: layer_digest.clone(),
            size: bytes.len() as i64,
            ..OciDescriptor::default()
        }],
        subject: None,
        artifact_type: None,
        annotations: Some(annotations),
    };
    let manifest = serde_json::to_vec(&manifest).map_err(json_error)?;
    Ok(Image {
        config,
        manifest,
        layer_digest,
    })
}

/// The component layer of a pulled manifest; refuses anything but a Wasm artifact of
/// one `application/wasm` layer (the spec tells consumers to reject more).
pub fn component_layer(manifest: &OciImageManifest) -> Result<&OciDescriptor, DistributionError> {
    let not_a_plugin = |why: String| DistributionError::Layout(why);
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(not_a_plugin(format!(
            "its config is {:?}, not {CONFIG_MEDIA_TYPE:?}: it is not a Wasm artifact",
            manifest.config.media_type
        )));
    }
    match manifest.layers.as_slice() {
        [layer] if layer.media_type == LAYER_MEDIA_TYPE => Ok(layer),
        [layer] => Err(not_a_plugin(format!(
            "its layer is {:?}, not {LAYER_MEDIA_TYPE:?}",
            layer.media_type
        ))),
        layers => Err(not_a_plugin(format!(
            "it has {} layers; a plugin is one {LAYER_MEDIA_TYPE:?} layer",
            layers.len()
        ))),
    }
}

/// The time of the push, RFC 3339; `SOURCE_DATE_EPOCH` (seconds) makes it, and so the
/// manifest's digest, reproducible.
fn created() -> String {
    let at = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|seconds| seconds.trim().parse::<u64>().ok())
        .map_or_else(SystemTime::now, |seconds| {
            UNIX_EPOCH + Duration::from_secs(seconds)
        });
    humantime::format_rfc3339_seconds(at).to_string()
}

fn json_error(error: serde_json::Error) -> DistributionError {
    DistributionError::Layout(format!("cannot encode the artifact: {error}"))
}
