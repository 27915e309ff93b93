//! Hash maps on the call path: keyed by tool names and by the ids the host hands out
//! (calls, operations), looked up on every call. foldhash hashes such short keys several
//! times faster than the standard library's SipHash, still with a per-process random
//! seed.

/// A `HashMap` hashed with foldhash.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` hashed with foldhash.
pub(crate) type FastSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
