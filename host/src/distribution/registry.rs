//! Pushing and pulling one plugin artifact, through `fetch`, which bounds every
//! response of a registry (one a reference or a committed lock file names may be
//! anyone's).

use std::time::Duration;

use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;

use super::fetch::{Fetcher, Timeouts, describe};
use super::layout::{self, MANIFEST_MEDIA_TYPE};
use super::reference::ArtifactRef;
use super::{DistributionError, credentials};
use crate::artifact::Artifact;
use crate::artifact::manifest::Manifest;
use crate::engine::cache::sha256_hex;

/// The largest artifact pulled, by default: the JavaScript and Python runtimes make
/// plugins of 12-18 MB.
pub const DEFAULT_MAX_ARTIFACT_BYTES: u64 = 128 << 20;

/// How long connecting to a registry may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a registry may stay silent while a request runs.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// What toolcell calls itself to registries.
const USER_AGENT: &str = concat!("toolcell/", env!("CARGO_PKG_VERSION"));

/// How toolcell talks to registries.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Use plain HTTP for every registry (`--plain-http`); without it, only a registry
    /// on this machine is spoken to over plain HTTP.
    pub plain_http: bool,
    /// The largest artifact pulled.
    pub max_artifact_bytes: u64,
    /// How long responses may take to arrive whole.
    pub timeouts: Timeouts,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            plain_http: false,
            max_artifact_bytes: DEFAULT_MAX_ARTIFACT_BYTES,
            timeouts: Timeouts::default(),
        }
    }
}

/// What a push stored.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The reference pinned to the manifest's digest.
    pub reference: ArtifactRef,
    /// The manifest's digest (`sha256:...`).
    pub digest: String,
    /// The component layer's digest: the plugin file's SHA-256.
    pub layer_digest: String,
}

/// What a pull fetched: the plugin file's bytes, unchecked by toolcell's admission yet
/// (but matching the digests the registry gave).
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The reference pinned to the manifest's digest.
    pub reference: ArtifactRef,
    /// The manifest's digest (`sha256:...`).
    pub digest: String,
    /// The plugin file.
    pub bytes: Vec<u8>,
}

/// A client for `reference`'s repository with the user's credentials for its
/// registry, over plain HTTP for this machine's registries or with `--plain-http`.
fn fetcher_for(
    reference: &ArtifactRef,
    options: &RegistryOptions,
) -> Result<Fetcher, DistributionError> {
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .user_agent(USER_AGENT)
        .build()
        .map_err(|error| DistributionError::Registry {
            reference: reference.to_string(),
            why: describe(&error),
        })?;
    let (auth, source) = credentials::for_registry(reference.registry())?;
    log_credentials(reference, &auth, &source);
    Ok(Fetcher::new(
        client,
        reference.oci_client_reference(),
        options.plain_http || reference.is_loopback(),
        auth,
        options.timeouts,
    ))
}

/// Says (at `info`) which credentials go to `reference`'s registry.
fn log_credentials(reference: &ArtifactRef, auth: &RegistryAuth, source: &str) {
    tracing::info!(
        "registry {}: {}",
        reference.registry(),
        match auth {
            RegistryAuth::Anonymous => "anonymous".to_string(),
            _ => format!("credentials from {source}"),
        }
    );
}

/// Pushes the plugin file `bytes` to `reference` in the Wasm artifact layout.
pub async fn push(
    reference: &ArtifactRef,
    bytes: &[u8],
    options: &RegistryOptions,
) -> Result<Pushed, DistributionError> {
    if reference.digest().is_some() {
        return Err(DistributionError::Reference {
            reference: reference.to_string(),
            why: "a push names a tag, not a digest (the registry computes the digest)".to_string(),
        });
    }
    if !bytes.starts_with(b"\0asm") {
        return Err(DistributionError::NotAPlugin(
            "it is not a .wasm file (a Lua plugin is packed first: `toolcell pack FILE.lua`)"
                .to_string(),
        ));
    }
    let artifact =
        Artifact::parse(bytes).map_err(|error| DistributionError::NotAPlugin(error.to_string()))?;
    let manifest_bytes = artifact
        .manifest()
        .map_err(|error| DistributionError::NotAPlugin(error.to_string()))?
        .ok_or_else(|| {
            DistributionError::NotAPlugin(
                "it carries no manifest; pack it first (`toolcell pack`)".to_string(),
            )
        })?;
    let plugin = Manifest::parse_bytes(manifest_bytes)
        .map_err(|error| DistributionError::NotAPlugin(format!("its manifest: {error}")))?;
    let image = layout::image(bytes, &artifact, &plugin)?;
    let failed = |why: String| DistributionError::Registry {
        reference: reference.to_string(),
        why,
    };
    let mut fetcher = fetcher_for(reference, options)?;
    let config_digest = format!("sha256:{}", sha256_hex(&image.config));
    fetcher
        .upload(&image.layer_digest, bytes)
        .await
        .map_err(|why| failed(format!("uploading the component failed: {why}")))?;
    fetcher
        .upload(&config_digest, &image.config)
        .await
        .map_err(|why| failed(format!("uploading the config failed: {why}")))?;
    let digest = format!("sha256:{}", sha256_hex(&image.manifest));
    let tag = reference.oci_client_reference().tag().unwrap_or("latest");
    fetcher
        .put_manifest(tag, MANIFEST_MEDIA_TYPE, &image.manifest)
        .await
        .map_err(|why| failed(format!("storing the manifest failed: {why}")))?;
    Ok(Pushed {
        reference: reference.pinned(&digest),
        digest,
        layer_digest: image.layer_digest,
    })
}

/// Pulls the plugin file at `reference`: the manifest (checked against the
/// reference's digest when it has one), then its one component layer, at most
/// `options.max_artifact_bytes` of it, held to its declared size and its digest.
/// Every response is bounded in size and time (`fetch`).
pub async fn pull(
    reference: &ArtifactRef,
    options: &RegistryOptions,
) -> Result<Pulled, DistributionError> {
    let failed = |why: String| DistributionError::Registry {
        reference: reference.to_string(),
        why,
    };
    let mut fetcher = fetcher_for(reference, options)?;
    let target = reference.oci_client_reference();
    let tag_or_digest = match (target.digest(), target.tag()) {
        (Some(digest), _) => digest,
        (None, Some(tag)) => tag,
        (None, None) => "latest",
    };
    let bytes = fetcher
        .manifest(tag_or_digest, MANIFEST_MEDIA_TYPE)
        .await
        .map_err(failed)?;
    let digest = format!("sha256:{}", sha256_hex(&bytes));
    if let Some(wanted) = reference.digest()
        && wanted != digest
    {
        return Err(failed(format!(
            "the manifest's digest is {digest}, not the {wanted} asked for"
        )));
    }
    let manifest: OciImageManifest = serde_json::from_slice(&bytes).map_err(|error| {
        failed(format!(
            "its manifest is not an OCI image manifest: {error}"
        ))
    })?;
    let layer = layout::component_layer(&manifest).map_err(|error| failed(error.to_string()))?;
    let limit = options.max_artifact_bytes;
    let size = u64::try_from(layer.size).map_err(|_| {
        failed(format!(
            "its manifest declares a component of {} bytes",
            layer.size
        ))
    })?;
    if size > limit {
        return Err(DistributionError::TooLarge {
            reference: reference.to_string(),
            size,
            limit,
        });
    }
    let bytes = fetcher
        .blob(&layer.digest, size)
        .await
        .map_err(|why| failed(format!("downloading the component failed: {why}")))?;
    Ok(Pulled {
        reference: reference.pinned(&digest),
        digest,
        bytes,
    })
}
