//! The hard cap on a plugin instance's memory, enforced by the host.
//!
//! The guest's own allocator limit (8 MiB of Lua memory by default) is the first layer;
//! this is the backstop for everything else in the instance (the runtime's Rust heap,
//! buffers, a hostile component). A refused growth makes the guest's allocation fail,
//! which traps it; the limiter remembers why so the crash message can say so. It also
//! keeps the plugin's peak memory (across its instances) for the runtime's statistics.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use wasmtime::ResourceLimiter;

/// Caps linear memory and table growth of one store.
#[derive(Debug)]
pub struct MemoryCap {
    max_memory: usize,
    max_table_elements: usize,
    refusals: u64,
    /// The bytes of linear memory the store's instances have (every creation and
    /// growth is asked here first).
    linear_memory: u64,
    /// The growth allowed last, taken back if wasmtime then fails to make it.
    allowed_growth: u64,
    /// The most linear memory any instance of the plugin has had.
    peak: Arc<AtomicU64>,
}

impl MemoryCap {
    /// A cap of `max_memory` bytes of linear memory per instance; the plugin's peak
    /// goes to `peak`.
    pub fn new(max_memory: u64, peak: Arc<AtomicU64>) -> Self {
        MemoryCap {
            max_memory: usize::try_from(max_memory).unwrap_or(usize::MAX),
            max_table_elements: 100_000,
            refusals: 0,
            linear_memory: 0,
            allowed_growth: 0,
            peak,
        }
    }

    /// The cap in bytes.
    pub fn max_memory(&self) -> u64 {
        self.max_memory as u64
    }

    /// The bytes of linear memory the store's instances have now.
    pub fn linear_memory(&self) -> u64 {
        self.linear_memory
    }

    /// How many growths were refused since the store was created.
    pub fn refusals(&self) -> u64 {
        self.refusals
    }
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.max_memory;
        self.refusals += u64::from(!allowed);
        self.allowed_growth = if allowed {
            desired.saturating_sub(current) as u64
        } else {
            0
        };
        self.linear_memory += self.allowed_growth;
        self.peak.fetch_max(self.linear_memory, Ordering::Relaxed);
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        // A growth past the memory type's own maximum fails before this limiter is
        // asked; taking back the last allowed growth then understates the figure,
        // which only a plugin asking for more than 4 GiB can cause.
        self.linear_memory -= std::mem::take(&mut self.allowed_growth);
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.max_table_elements;
        self.refusals += u64::from(!allowed);
        Ok(allowed)
    }

    fn instances(&self) -> usize {
        // The Lua guest is one component of a handful of core instances.
        64
    }

    fn memories(&self) -> usize {
        16
    }

    fn tables(&self) -> usize {
        16
    }
}
