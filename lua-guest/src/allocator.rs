//! The guest's global allocator: talc, whose heap grows a few host pages at a time,
//! first into the free end of the initial linear memory, then into pages it grows, with
//! free lists of small blocks in front of it (`small_blocks.rs`).
//!
//! Rust's default on wasm32-wasip2 goes through std's System allocator to wasi-libc's
//! malloc (dlmalloc), which takes more instructions per allocation (docs/performance.md),
//! and Lua allocates on nearly every string and table operation. talc's own wasm source
//! (`WasmGrowAndExtend`) only uses pages it grows, so the space between the static data
//! and the end of the initial memory would go unused and the heap begin on a fresh
//! 64 KiB page.
//!
//! Both choices here are about the prepared snapshot (host `snapshot.rs`): the Lua state
//! is part of the memory image that every plugin instance maps, and the kernel maps
//! image pages 64 KiB at a time (fault-around), read or not. The image ends at the last
//! non-zero byte of memory, and talc writes the size of a free gap at the gap's end: a
//! heap that spanned the whole free end of the initial memory would put one such word on
//! its last page, so the image would cover pages of empty heap in every instance. A heap
//! that ends a little past its last allocation keeps the image to the pages in use.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32::memory_grow;
use core::cell::UnsafeCell;
use core::ptr::NonNull;

use talc::base::binning::Binning;
use talc::base::{CHUNK_UNIT, Talc};
use talc::cell::TalcCell;
use talc::min_first_heap_size;
use talc::source::Source;
use talc::wasm::WasmBinning;

use crate::small_blocks::SmallBlocks;

/// A wasm page.
const PAGE_SIZE: usize = 64 * 1024;

/// A host page: the unit of resident memory, so the heap's end is rounded to it.
const HOST_PAGE_SIZE: usize = 4 * 1024;

/// Each extension of the heap adds at least this fraction of its size, so a heap that
/// grows to megabytes asks for memory a few dozen times, not once per page.
const GROWTH_DIVISOR: usize = 8;

unsafe extern "C" {
    /// Where the linker ends the static data and the stack: the heap may start here.
    static __heap_base: u8;
    /// The end of the initial memory (wasm-ld's symbol).
    static __heap_end: u8;
}

/// Every Rust and Lua allocation of the guest.
#[global_allocator]
static ALLOCATOR: GuestAllocator = GuestAllocator {
    talc: TalcCell::new(StepwiseHeap {
        end: None,
        owned_end: 0,
    }),
    small: UnsafeCell::new(SmallBlocks::new()),
};

/// Lets freed small blocks wait for reuse from now on (see `small_blocks.rs`): called
/// once the plugin has loaded.
pub fn cache_small_blocks() {
    // SAFETY: the guest is single-threaded, and no allocation is running while this is.
    unsafe { (*ALLOCATOR.small.get()).start_caching() }
}

/// Ends the heap at its last allocation: the free memory above it goes back to the
/// heap's source, zeroed. Called once the Lua runtime is prepared, before the host
/// snapshots it: the memory image ends at the last non-zero byte, and the heap's free
/// top (up to a growth step, ending in talc's record of the gap and holding whatever
/// was freed there) would otherwise put pages without any of the prepared state in the
/// image every plugin instance maps. The heap grows again on its next extension.
pub fn trim_heap() {
    let talc = &ALLOCATOR.talc;
    let StepwiseHeap {
        end: Some(end),
        owned_end,
    } = talc.clone_source()
    else {
        return;
    };
    // SAFETY: `end` is the heap's current end (the source keeps it up to date), and the
    // guest is single-threaded: nothing allocates while this runs.
    let trimmed = unsafe { talc.truncate(end, core::ptr::null_mut()) };
    if let Some(new_end) = trimmed {
        // SAFETY: the memory from the new end to the old one is no longer talc's, and
        // this source owns it.
        unsafe {
            new_end
                .as_ptr()
                .write_bytes(0, end.as_ptr() as usize - new_end.as_ptr() as usize);
        }
    }
    // `None` (nothing was allocated, and talc gave the heap up whole) makes the next
    // request claim a new heap.
    talc.replace_source(StepwiseHeap {
        end: trimmed,
        owned_end,
    });
}

/// talc, with free lists of small blocks in front of it (`small_blocks.rs`).
struct GuestAllocator {
    talc: TalcCell<StepwiseHeap, WasmBinning>,
    small: UnsafeCell<SmallBlocks>,
}

// SAFETY: the guest is single-threaded wasm (built without atomics), and neither talc
// nor the free lists allocate while one of these calls runs, so no two borrows of
// `talc` or `small` overlap.
unsafe impl Sync for GuestAllocator {}

// SAFETY: every block comes from talc, directly or through the free lists, which only
// hand out blocks talc allocated for their class and give them back to talc with it.
unsafe impl GlobalAlloc for GuestAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the `Sync` impl; the layout is the caller's.
        unsafe { (*self.small.get()).alloc(&self.talc, layout) }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: as `alloc`.
        unsafe { (*self.small.get()).dealloc(&self.talc, block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe { (*self.small.get()).realloc(&self.talc, block, layout, new_size) }
    }
}

/// The memory source: one heap from `__heap_base`, extended a few host pages at a time
/// through the memory this source owns (the free end of the initial memory, then the
/// pages it grew).
#[derive(Clone, Debug)]
struct StepwiseHeap {
    /// The end of the heap, once there is one.
    end: Option<NonNull<u8>>,
    /// The end of the memory this source may give the heap (0 until the first request,
    /// which takes the initial memory's end).
    owned_end: usize,
}

// SAFETY: `acquire` only gives talc memory nothing else uses (past `__heap_base` up to
// the end of the initial memory, or pages it grew itself) and never allocates.
unsafe impl Source for StepwiseHeap {
    fn acquire<B: Binning>(talc: &mut Talc<Self, B>, layout: Layout) -> Result<(), ()> {
        let base = (&raw const __heap_base).cast_mut();
        if talc.source.owned_end == 0 {
            talc.source.owned_end = (&raw const __heap_end) as usize;
        }
        let heap_end = talc
            .source
            .end
            .map_or(base as usize, |end| end.as_ptr() as usize);
        // Room for the allocation with talc's chunk overhead and alignment, and for
        // talc's own metadata when this is the first heap; if it still does not fit,
        // talc asks again and the heap grows further.
        let first = if talc.source.end.is_none() {
            min_first_heap_size::<B>()
        } else {
            0
        };
        let needed = layout.size() + layout.align() + 4 * CHUNK_UNIT + first;
        loop {
            let owned_end = talc.source.owned_end;
            // Extend into the memory this source owns while any useful room is left
            // (talc asks again if a partial extension is not enough).
            if owned_end.saturating_sub(heap_end) >= 2 * CHUNK_UNIT {
                let step = needed.max((heap_end - base as usize) / GROWTH_DIVISOR);
                let new_end = heap_end
                    .saturating_add(step)
                    .next_multiple_of(HOST_PAGE_SIZE)
                    .min(owned_end);
                talc.source.end = match talc.source.end {
                    // SAFETY: the memory up to `owned_end` is this source's and unused.
                    Some(end) => Some(unsafe { talc.extend(end, new_end as *mut u8) }),
                    // SAFETY: from `__heap_base` to the end of the initial memory is
                    // free: the linker placed the static data and the stack below it.
                    None => unsafe { talc.claim(base, new_end - base as usize) },
                };
                if talc.source.end.is_some() {
                    return Ok(());
                }
            }
            let pages = needed.div_ceil(PAGE_SIZE);
            let previous_pages = memory_grow::<0>(pages);
            if previous_pages == usize::MAX {
                return Err(());
            }
            let grown = previous_pages * PAGE_SIZE;
            let grown_end = grown + pages * PAGE_SIZE;
            if grown == owned_end && talc.source.end.is_some() {
                // The grown pages follow the heap's memory: the next round extends
                // the heap into them.
                talc.source.owned_end = grown_end;
                continue;
            }
            // Something else grew the memory in between (or the initial memory had no
            // room for a first heap): the grown pages become a heap of their own.
            // SAFETY: the grown pages are new; nothing else uses them.
            let heap = unsafe { talc.claim(grown as *mut u8, pages * PAGE_SIZE) }.ok_or(())?;
            talc.source.end = Some(heap);
            talc.source.owned_end = grown_end;
            return Ok(());
        }
    }
}
