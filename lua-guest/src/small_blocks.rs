//! Free lists of small blocks in front of the guest's general allocator.
//!
//! Lua allocates and frees a handful of small objects for nearly everything it does
//! (strings, tables, closures, coroutines' call info), even for a trivial tool call.
//! talc finds, splits and merges chunks for each one; a block of a size that was freed
//! before is instead taken from a list in a few instructions (docs/performance.md has
//! the counts). Blocks are kept per size class, so a freed block is only reused for
//! the same class, and at most [`CACHE_LIMIT`] bytes wait in the lists: past that a
//! freed block goes back to the general allocator, where it can be merged and reused
//! for any size. The memory a plugin can hold is therefore what Lua accounts for (its
//! memory limit) plus at most that much.
//!
//! Freed blocks are only kept once the owner says so ([`SmallBlocks::start_caching`]):
//! the Lua guest starts after its plugin has loaded, so preparing the Lua state (which
//! becomes the memory image every instance maps) and loading a plugin reuse their freed
//! memory for any size, and the image and a load's fresh pages stay as small as talc
//! alone leaves them.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr;

/// Blocks are kept in classes of this many bytes, which is also their alignment: the
/// largest one Lua's objects need on wasm32 (a double or a 64-bit integer).
const GRANULE: usize = 8;

/// The largest block served from the lists. Lua's strings, tables, closures and
/// userdata of a tool call are far smaller; larger blocks are rare enough that the
/// general allocator's cost does not matter.
const MAX_SMALL: usize = 256;

/// Size classes: 8, 16, ... 256 bytes.
const CLASSES: usize = MAX_SMALL / GRANULE;

/// The most bytes the lists hold at once.
const CACHE_LIMIT: usize = 64 * 1024;

/// The free lists. Not thread-safe: the owner serialises access (the guest is single
/// threaded).
pub struct SmallBlocks {
    /// The first free block of each class; each free block starts with a pointer to
    /// the next one.
    heads: [*mut u8; CLASSES],
    /// Bytes held by the lists.
    cached: usize,
    /// Whether freed small blocks go to the lists (otherwise straight back).
    caching: bool,
}

/// The class of blocks for `layout`, if it is small.
fn class_of(layout: Layout) -> Option<usize> {
    (layout.size() <= MAX_SMALL && layout.align() <= GRANULE)
        .then(|| layout.size().max(1).div_ceil(GRANULE) - 1)
}

/// The layout every block of `class` is allocated with from the general allocator.
fn class_layout(class: usize) -> Layout {
    // SAFETY: the size is a non-zero multiple of the power-of-two alignment.
    unsafe { Layout::from_size_align_unchecked((class + 1) * GRANULE, GRANULE) }
}

impl SmallBlocks {
    /// Empty lists.
    pub const fn new() -> Self {
        SmallBlocks {
            heads: [ptr::null_mut(); CLASSES],
            cached: 0,
            caching: false,
        }
    }

    /// From now on, freed small blocks wait in the lists for the next allocation of
    /// their class.
    pub fn start_caching(&mut self) {
        self.caching = true;
    }

    /// Allocates `layout`, from the lists when a block of its class is free.
    ///
    /// # Safety
    /// As [`GlobalAlloc::alloc`]; `backing` must be the allocator every other call on
    /// these lists uses.
    pub unsafe fn alloc(&mut self, backing: &impl GlobalAlloc, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            // SAFETY: forwarded from the caller.
            return unsafe { backing.alloc(layout) };
        };
        let head = self.heads[class];
        if head.is_null() {
            // SAFETY: a valid, non-zero layout.
            return unsafe { backing.alloc(class_layout(class)) };
        }
        // SAFETY: a listed block is free, aligned and starts with the next pointer.
        self.heads[class] = unsafe { head.cast::<*mut u8>().read() };
        self.cached -= class_layout(class).size();
        head
    }

    /// Frees a block allocated by [`SmallBlocks::alloc`] with `layout`.
    ///
    /// # Safety
    /// As [`GlobalAlloc::dealloc`], with the same `backing` as the allocation.
    pub unsafe fn dealloc(&mut self, backing: &impl GlobalAlloc, block: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            // SAFETY: forwarded from the caller.
            return unsafe { backing.dealloc(block, layout) };
        };
        let size = class_layout(class).size();
        if !self.caching || self.cached + size > CACHE_LIMIT {
            // SAFETY: small blocks come from `backing` with their class's layout.
            return unsafe { backing.dealloc(block, class_layout(class)) };
        }
        // SAFETY: the block is ours now, at least a pointer long and aligned for one.
        unsafe { block.cast::<*mut u8>().write(self.heads[class]) };
        self.heads[class] = block;
        self.cached += size;
    }

    /// Resizes a block allocated by [`SmallBlocks::alloc`] with `layout`.
    ///
    /// # Safety
    /// As [`GlobalAlloc::realloc`], with the same `backing` as the allocation.
    pub unsafe fn realloc(
        &mut self,
        backing: &impl GlobalAlloc,
        block: *mut u8,
        layout: Layout,
        new_size: usize,
    ) -> *mut u8 {
        // SAFETY: the caller guarantees a valid size for the old alignment.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (class_of(layout), class_of(new_layout)) {
            // Big to big: the general allocator may grow or shrink in place.
            // SAFETY: forwarded from the caller.
            (None, None) => unsafe { backing.realloc(block, layout, new_size) },
            // The block already has room for the new size.
            (Some(old), Some(new)) if old == new => block,
            _ => {
                // SAFETY: forwarded from the caller; the copy stays within both blocks.
                unsafe {
                    let moved = self.alloc(backing, new_layout);
                    if !moved.is_null() {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(backing, block, layout);
                    }
                    moved
                }
            }
        }
    }

    /// Bytes the lists hold now.
    #[cfg(test)]
    fn cached(&self) -> usize {
        self.cached
    }
}

#[cfg(test)]
mod tests {
    use std::alloc::System;

    use super::*;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    fn caching() -> SmallBlocks {
        let mut blocks = SmallBlocks::new();
        blocks.start_caching();
        blocks
    }

    #[test]
    fn nothing_is_kept_before_caching_starts() {
        let mut blocks = SmallBlocks::new();
        unsafe {
            let block = blocks.alloc(&System, layout(24));
            blocks.dealloc(&System, block, layout(24));
        }
        assert_eq!(blocks.cached(), 0);
    }

    #[test]
    fn a_freed_small_block_is_reused_for_its_class_only() {
        let mut blocks = caching();
        unsafe {
            let first = blocks.alloc(&System, layout(20));
            blocks.dealloc(&System, first, layout(20));
            assert_eq!(blocks.cached(), 24);
            // 17..=24 bytes share the class; 32 bytes do not.
            let other_class = blocks.alloc(&System, layout(32));
            assert_ne!(other_class, first);
            let same_class = blocks.alloc(&System, layout(17));
            assert_eq!(same_class, first);
            assert_eq!(blocks.cached(), 0);
            blocks.dealloc(&System, same_class, layout(17));
            blocks.dealloc(&System, other_class, layout(32));
        }
    }

    #[test]
    fn the_lists_hold_at_most_the_cache_limit() {
        let mut blocks = caching();
        let count = CACHE_LIMIT / 256 + 10;
        unsafe {
            let all: Vec<*mut u8> = (0..count)
                .map(|_| blocks.alloc(&System, layout(256)))
                .collect();
            for block in all {
                blocks.dealloc(&System, block, layout(256));
            }
        }
        assert_eq!(blocks.cached(), CACHE_LIMIT);
    }

    #[test]
    fn large_and_overaligned_blocks_bypass_the_lists() {
        let mut blocks = caching();
        unsafe {
            let large = blocks.alloc(&System, layout(MAX_SMALL + 1));
            blocks.dealloc(&System, large, layout(MAX_SMALL + 1));
            let aligned = Layout::from_size_align(16, 16).unwrap();
            let block = blocks.alloc(&System, aligned);
            assert_eq!(block as usize % 16, 0);
            blocks.dealloc(&System, block, aligned);
        }
        assert_eq!(blocks.cached(), 0);
    }

    #[test]
    fn realloc_keeps_the_contents_across_classes_and_sizes() {
        let mut blocks = caching();
        unsafe {
            let block = blocks.alloc(&System, layout(10));
            for i in 0..10 {
                block.add(i).write(i as u8);
            }
            // Within the class the block stays where it is.
            let same = blocks.realloc(&System, block, layout(10), 16);
            assert_eq!(same, block);
            // Small to small, small to large and back: every byte that fits survives.
            let grown = blocks.realloc(&System, same, layout(16), 100);
            let large = blocks.realloc(&System, grown, layout(100), 1000);
            let back = blocks.realloc(&System, large, layout(1000), 5);
            let kept: Vec<u8> = (0..5).map(|i| back.add(i).read()).collect();
            assert_eq!(kept, [0, 1, 2, 3, 4]);
            blocks.dealloc(&System, back, layout(5));
        }
    }
}
