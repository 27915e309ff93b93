//! The host's monotonic clock, shared with plugins.
//!
//! Deadlines cross the host/guest boundary as nanoseconds on this clock (`host.now`), so
//! the guest's own deadline checks and the host's backstops agree on what time it is.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Nanoseconds since the clock's origin (the first use in this process).
pub fn now() -> u64 {
    instant_to_nanos(Instant::now())
}

/// An `Instant` expressed on this clock.
pub fn instant_to_nanos(instant: Instant) -> u64 {
    let since = instant.saturating_duration_since(origin());
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

/// The instant `duration` from now, on this clock.
pub fn after(duration: Duration) -> u64 {
    now().saturating_add(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX))
}
