//! The host services a plugin reaches through its imports: files under one root, HTTP
//! under its policy, the clock, questions to the user (`ask`), and its log (the debug
//! log file and the embedder's listener); and the paths the host trusts, which no plugin
//! may reach.

pub(crate) mod ask;
pub(crate) mod clock;
pub(crate) mod debug_log;
pub mod files;
pub mod http;
pub(crate) mod log_listener;
pub mod trusted;
