//! What a runtime reports about a loaded plugin: its file, manifest and grants. Below
//! both the runtime, which makes it, and the policy, whose resolvers are shown it.

use std::path::PathBuf;

use crate::artifact::manifest::Manifest;
use crate::config::grants::Grants;

/// A loaded plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginInfo {
    /// The file it was loaded from.
    pub file: PathBuf,
    /// Its manifest (for a `.lua` without a sidecar, clm's defaults).
    pub manifest: Manifest,
    /// What it was granted: its manifest's asks, cut to what the user's policy allows.
    pub grants: Grants,
    /// The SHA-256 of the code it runs (its Lua script, or its component's code): what
    /// an approval "for the session" is tied to, with the grants.
    pub digest: String,
}
