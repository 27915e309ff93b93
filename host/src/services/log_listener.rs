//! Where a plugin's log goes besides the debug log file: a listener the embedder
//! registers ([`crate::RuntimeBuilder::log_listener`]), such as the MCP server, which
//! forwards each line to the client that made the call.
//!
//! With a listener, every plugin is told at load that its log is on, so `ctx:log`,
//! `print` and `warn` reach the host even while no file is written; a listener that
//! wants nothing of a line returns at once.

/// Receives every line a plugin logs.
pub trait LogListener: Send + Sync {
    /// `plugin` (its id) wrote `message` during call `call` (none: while it loaded).
    /// Called from inside the plugin's step: it must not block.
    fn log(&self, plugin: &str, call: Option<u64>, message: &str);
}
