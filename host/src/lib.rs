//! toolcell: run AI-agent tool plugins inside WebAssembly sandboxes.
//!
//! Each plugin file (a clm Lua plugin, or a component in any language that targets the
//! `toolcell:plugin` WIT world) runs in its own wasmtime component instance with its
//! own memory cap, fuel budget and deadlines, and reaches files and the network only
//! through host services that check every access. [`Runtime`] is the embedding API;
//! the `toolcell` binary is a thin CLI over it.
//!
//! Cargo features add the command's parts to the library, which loads and runs plugins
//! with none of them: `http` (plugins' HTTP requests), `signing` (Ed25519 signatures),
//! `watch` (hot reload), `mcp` (the MCP server), `aot` (Lua plugins compiled ahead of
//! time), `oci` (plugins from OCI registries) and `cli` (the command, with all of the
//! others but `oci`); the default is `cli` and `oci`.

#[cfg(feature = "aot")]
pub mod aot;
pub mod artifact;
mod base;
#[cfg(feature = "cli")]
pub mod cli;
pub mod config;
pub mod distribution;
pub mod engine;
#[cfg(feature = "mcp")]
pub mod mcp;
mod output;
pub mod policy;
mod runtime;
mod sandbox;
mod services;
mod tool;

// The modules' public paths as they were before the crate was grouped into folders.
pub use artifact::{integrity, manifest, signature, wit_version};
pub use base::limits;
#[cfg(feature = "cli")]
pub use cli::scaffold;
pub use config::grants;
pub use distribution::{inspect, pack};
pub use engine::cache;
pub use output::{envelope, progress, results, stats};
#[cfg(feature = "watch")]
pub use runtime::reload;
pub use services::{files, http, trusted};
pub use tool::{names, schema, strict_schema};

pub use engine::Engine;
pub use output::content::{ContentPart, ResourceContents};
pub use output::outcome::{CallOutcome, CrashCause, PluginFate};
pub use output::progress::{BadProgress, Progress, ProgressUpdates};
pub use policy::plugin_info::PluginInfo;
pub use runtime::diagnostic::{Diagnostic, DiagnosticKind, Severity};
pub use runtime::{
    Arguments, BuildError, Call, CallOptions, DEFAULT_SEARCH_LIMIT, InvokeError, ListedTool,
    MAX_SEARCH_LIMIT, PluginUpdate, ReservedCallId, Runtime, RuntimeBuilder, SEARCH_TOOLS, Scope,
    Session, ToolInfo,
};
pub use sandbox::MemoryUse;
pub use services::ask::{Question, QuestionHandler, Reply};
pub use services::log_listener::LogListener;
