//! The guest's global allocator: talc, fed first with the free end of the initial
//! linear memory, then with pages it grows.
//!
//! Rust's default on wasm32-wasip2 goes through std's System allocator to wasi-libc's
//! malloc (dlmalloc): a third more instructions per allocation by callgrind, and Lua
//! allocates on nearly every string and table operation. talc's own wasm source
//! (`WasmGrowAndExtend`) only uses pages it grows, so the ~50 KiB between the static
//! data and the end of the initial memory went unused and the heap began on a fresh
//! 64 KiB page. That matters for the prepared snapshot (host `snapshot.rs`): there the
//! Lua state is part of the memory image every plugin instance maps, and the kernel
//! maps image pages 64 KiB at a time (fault-around), so an image that spans fewer
//! windows costs every plugin less resident memory.

use core::alloc::Layout;
use core::arch::wasm32::{memory_grow, memory_size};
use core::ptr::NonNull;

use talc::base::binning::Binning;
use talc::base::{CHUNK_UNIT, Talc};
use talc::cell::TalcSyncCell;
use talc::source::Source;
use talc::wasm::WasmBinning;

/// A wasm page.
const PAGE_SIZE: usize = 64 * 1024;

unsafe extern "C" {
    /// Where the linker ends the static data and the stack: the heap may start here.
    static __heap_base: u8;
}

/// Every Rust and Lua allocation of the guest.
#[global_allocator]
static ALLOCATOR: TalcSyncCell<InitialThenGrow, WasmBinning> =
    TalcSyncCell::new_wasm(InitialThenGrow {
        initial_claimed: false,
        end: None,
    });

/// The memory source: the initial memory's free end first, then grown pages, each
/// extending the one heap when it is contiguous with it (it always is, since nothing
/// else grows the memory).
#[derive(Debug)]
struct InitialThenGrow {
    initial_claimed: bool,
    /// The end of the heap, once there is one.
    end: Option<NonNull<u8>>,
}

// SAFETY: `acquire` only claims memory nothing else uses (past `__heap_base`, or pages
// it grew itself) and never allocates.
unsafe impl Source for InitialThenGrow {
    fn acquire<B: Binning>(talc: &mut Talc<Self, B>, layout: Layout) -> Result<(), ()> {
        if !talc.source.initial_claimed {
            talc.source.initial_claimed = true;
            let base = (&raw const __heap_base).cast_mut();
            let memory_end = memory_size::<0>() * PAGE_SIZE;
            let size = memory_end.saturating_sub(base as usize);
            // SAFETY: from `__heap_base` to the end of the memory is free: the linker
            // placed the static data and the stack below it.
            talc.source.end = unsafe { talc.claim(base, size) };
            if talc.source.end.is_some() {
                return Ok(());
            }
        }
        // Enough pages for the allocation with talc's chunk overhead and alignment;
        // if it still does not fit, talc asks again and the heap grows further.
        let pages = (layout.size() + layout.align() + 4 * CHUNK_UNIT).div_ceil(PAGE_SIZE);
        let previous_pages = memory_grow::<0>(pages);
        if previous_pages == usize::MAX {
            return Err(());
        }
        let grown = (previous_pages * PAGE_SIZE) as *mut u8;
        let grown_bytes = pages * PAGE_SIZE;
        talc.source.end = match talc.source.end {
            // SAFETY: the grown pages are new and follow the heap's end directly.
            Some(end) if end.as_ptr() == grown => {
                Some(unsafe { talc.extend(end, grown.wrapping_add(grown_bytes)) })
            }
            // SAFETY: the grown pages are new; nothing else uses them.
            _ => unsafe { talc.claim(grown, grown_bytes) },
        };
        Ok(())
    }
}
