//! What a runtime reports about the tools it loaded: each tool as its plugin registered
//! it, and as one model sees it. A leaf module: the schema and listing code (`schema`,
//! `strict_schema`) reads these without depending on the runtime.

use std::time::Duration;

/// A tool as a plugin registered it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The name the plugin registered it under. The first tool registered under a name
    /// answers to it; every tool answers to its `path`.
    pub name: String,
    /// `PLUGIN-ID/NAME`: unique across all loaded plugins.
    pub path: String,
    /// What the model reads about the tool.
    pub description: String,
    /// The JSON Schema of the arguments, if the plugin gave one.
    pub params_schema: Option<serde_json::Value>,
    /// The tool's own deadline, if it set one.
    pub timeout: Option<Duration>,
    /// Whether the tool skips the permission prompt.
    pub no_prompt: bool,
    /// Whether the tool is hidden from the model.
    pub hidden: bool,
    /// A short human-readable name for user interfaces (MCP's `title`), if the plugin
    /// gave one.
    pub title: Option<String>,
    /// The JSON Schema of its output (an object schema), if it gives structured
    /// results: its output is then the JSON text of a value the schema accepts.
    pub output_schema: Option<serde_json::Value>,
    /// The id of the plugin that registered it.
    pub plugin: String,
}

/// A tool as one model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// The name the model sees and calls: an alias, the tool's own name, or the wire
    /// name of its path ([`crate::tool::names::wire_name`]).
    pub name: String,
    /// What the model reads: the session's override, else `[tools.NAME] description`,
    /// else the plugin's.
    pub description: String,
    /// The tool as its plugin registered it.
    pub tool: ToolInfo,
    /// Whether the tool changes nothing outside its sandbox: its plugin is granted no
    /// file writes and no HTTP. Judged from the grants alone, never from what the plugin
    /// says of itself (`no_prompt`).
    pub read_only: bool,
    /// Whether its plugin may make HTTP requests (reach the world beyond the host).
    pub open_world: bool,
    /// Whether its output reaches the model inside the session's envelope (its plugin
    /// is not trusted and the runtime envelopes untrusted output).
    pub enveloped: bool,
}
