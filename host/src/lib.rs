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
//! `watch` (hot reload), `mcp` (the MCP server), `oci` (plugins from OCI registries)
//! and `cli` (the command, with all of the others but `oci`); the default is `cli` and
//! `oci`.

pub mod artifact;
mod ask;
mod atomic_file;
mod bindings;
pub mod cache;
#[cfg(feature = "cli")]
pub mod cli;
mod clock;
pub mod config;
mod content;
mod debug_log;
mod diagnostic;
#[cfg(feature = "oci")]
pub mod distribution;
pub mod engine;
pub mod envelope;
mod fast_map;
pub mod files;
pub mod grants;
mod guest;
pub mod http;
mod info;
pub mod inspect;
pub mod integrity;
pub mod limits;
mod log_listener;
pub mod manifest;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod names;
mod outcome;
pub mod output;
pub mod pack;
mod permissions;
mod plugin_info;
pub mod policy;
pub mod progress;
#[cfg(feature = "watch")]
pub mod reload;
pub mod results;
mod runtime;
mod sandbox;
#[cfg(feature = "cli")]
pub mod scaffold;
pub mod schema;
mod schema_budget;
pub mod signature;
mod snapshot;
mod source;
pub mod stats;
pub mod strict_schema;
pub mod trusted;
mod validation;
pub mod wit_version;
mod wording;

pub use ask::{Question, QuestionHandler, Reply};
pub use content::{ContentPart, ResourceContents};
pub use diagnostic::{Diagnostic, DiagnosticKind, Severity};
pub use engine::Engine;
pub use log_listener::LogListener;
pub use outcome::{CallOutcome, CrashCause, PluginFate};
pub use plugin_info::PluginInfo;
pub use progress::{BadProgress, Progress, ProgressUpdates};
pub use runtime::{
    BuildError, Call, CallOptions, InvokeError, ListedTool, PluginUpdate, ReservedCallId, Runtime,
    RuntimeBuilder, Scope, Session, ToolInfo,
};
pub use sandbox::MemoryUse;
