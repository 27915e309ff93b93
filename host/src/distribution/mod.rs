//! Plugins as files for others to run: one self-contained `.wasm` per plugin (`pack`),
//! what such a file holds (`inspect`), and, with the `oci` feature, OCI registries:
//! `toolcell push`, `pull` and `install`.
//!
//! The registry parts:
//!
//! - `reference`: `REGISTRY/REPOSITORY:TAG[@sha256:DIGEST]`, and which registries may be
//!   spoken to over plain HTTP (this machine's, or any with `--plain-http`);
//! - `credentials`: from `TOOLCELL_REGISTRY_USERNAME`/`_PASSWORD` or the Docker config
//!   file, never logged;
//! - `layout`: the CNCF Wasm OCI artifact layout (config
//!   `application/vnd.wasm.config.v0+json`, one `application/wasm` layer);
//! - `registry`: one push or pull;
//! - `fetch`: their requests, every response bounded by size and time, a pulled layer
//!   held to its declared size and digest;
//! - `install`: the checks a pulled file passes before it is written, `pull` into a
//!   directory, `install` with its lock record, and the re-install of a lock file;
//! - `lock`: the install records in the lock file that `--lock` reads.

pub mod inspect;
pub mod pack;

#[cfg(feature = "oci")]
mod credentials;
#[cfg(feature = "oci")]
mod fetch;
#[cfg(feature = "oci")]
mod install;
#[cfg(feature = "oci")]
mod layout;
#[cfg(feature = "oci")]
mod lock;
#[cfg(feature = "oci")]
mod reference;
#[cfg(feature = "oci")]
mod registry;

#[cfg(feature = "oci")]
pub use credentials::{PASSWORD_VAR, USERNAME_VAR};
#[cfg(feature = "oci")]
pub use fetch::{
    MAX_MANIFEST_BYTES, MAX_SMALL_BODY_BYTES, RESPONSE_TIMEOUT, TRANSFER_TIMEOUT, Timeouts,
};
#[cfg(feature = "oci")]
pub use install::{Installed, Installer, Verified, pull_into, pull_verified};
#[cfg(feature = "oci")]
pub use layout::{
    CONFIG_MEDIA_TYPE, ComponentInfo, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, WasmConfig,
};
#[cfg(feature = "oci")]
pub use lock::{Entry, LockFile, Record};
#[cfg(feature = "oci")]
pub use reference::ArtifactRef;
#[cfg(feature = "oci")]
pub use registry::{
    CONNECT_TIMEOUT, DEFAULT_MAX_ARTIFACT_BYTES, Pulled, Pushed, READ_TIMEOUT, RegistryOptions,
    pull, push,
};

/// Why a push, pull or install failed. Never contains a credential.
#[cfg(feature = "oci")]
#[derive(Debug, thiserror::Error)]
pub enum DistributionError {
    /// The reference does not parse, or does not fit the operation.
    #[error(
        "{reference} is not a valid OCI reference (REGISTRY/REPOSITORY:TAG[@sha256:DIGEST]): {why}"
    )]
    Reference {
        /// The reference as given.
        reference: String,
        /// What is wrong with it.
        why: String,
    },
    /// The credentials for a registry could not be read.
    #[error("credentials for {registry}: {why}")]
    Credentials {
        /// The registry.
        registry: String,
        /// What went wrong.
        why: String,
    },
    /// The registry refused or failed a request, or sent something unusable.
    #[error("{reference}: {why}")]
    Registry {
        /// The reference.
        reference: String,
        /// What happened.
        why: String,
    },
    /// A pulled manifest is not the Wasm artifact layout.
    #[error("{0}")]
    Layout(String),
    /// A file to push is not a plugin artifact.
    #[error("not a plugin artifact: {0}")]
    NotAPlugin(String),
    /// The artifact is larger than the limit.
    #[error(
        "{reference}: the artifact is {size} bytes, more than the limit of {limit} bytes (--max-artifact-bytes)"
    )]
    TooLarge {
        /// The reference.
        reference: String,
        /// Its size, or what was read before the limit was passed.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The pulled file failed a check; nothing was written.
    #[error("{reference}: refused ({code}), nothing was written: {why}")]
    Refused {
        /// The reference, pinned to the manifest's digest.
        reference: String,
        /// The diagnostic code of the check that failed (`signature_invalid`, ...).
        code: &'static str,
        /// Why.
        why: String,
    },
    /// A lock file could not be read or written.
    #[error("{0}")]
    Lock(String),
    /// A plugin file could not be written.
    #[error("{0}")]
    Write(String),
}
