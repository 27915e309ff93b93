//! What every layer uses and nothing else: the limits plugins run under, how messages
//! word paths and values, the hash maps of the call path, files written whole. Nothing
//! here imports another part of the crate.

pub(crate) mod atomic_file;
pub(crate) mod fast_map;
pub mod limits;
pub(crate) mod wording;
