//! What a call gives back: how it ended (`outcome`), a result of parts (`content`), its
//! progress while it runs, what the model sees of its result (`cut`, `parts`,
//! `envelope`), the whole output kept in the result store (`results`), and the per-tool
//! statistics of how calls ended (`stats`).

pub(crate) mod content;
pub mod cut;
pub mod envelope;
pub(crate) mod outcome;
pub(crate) mod parts;
pub mod progress;
pub mod results;
pub mod stats;
