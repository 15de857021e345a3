//! Swap space (`mm/swapfile.c`): slots counted, not tracked one by one;
//! and the LRU's per-CPU batches of `mm/swap.c`.

use crate::kernel::era::Era;

/// Mainline `SWAP_CLUSTER_MAX` (`include/linux/swap.h`): pages reclaimed
/// per batch; on SN2 one global TLB purge each (`workload/iosim.rs`).
pub const SWAP_CLUSTER_MAX: u64 = 32;

/// The machine's swap area.
#[derive(Debug, Clone, PartialEq)]
pub struct SwapSpace {
    /// Slots, in pages.
    pub size: u64,
    /// Slots holding a swapped-out page.
    pub used: u64,
}

impl SwapSpace {
    pub fn new(size_pages: u64) -> SwapSpace {
        SwapSpace {
            size: size_pages,
            used: 0,
        }
    }
    /// `nr_swap_pages`: free slots.
    pub fn free(&self) -> u64 {
        self.size - self.used
    }
    /// Take up to `pages` slots; returns how many were free (`get_swap_page()`).
    pub fn take(&mut self, pages: u64) -> u64 {
        let t = pages.min(self.free());
        self.used += t;
        t
    }
    /// Give slots back (swap-in, or the owner exits).
    pub fn release(&mut self, pages: u64) {
        debug_assert!(pages <= self.used);
        self.used -= pages.min(self.used);
    }
}

/// `PAGEVEC_SIZE` (include/linux/pagevec.h): pages `lru_cache_add()` keeps
/// per CPU before adding them to the LRU under its lock in one hold.
/// Per-CPU LRU adds came with Andrew Morton's "deferred and batched
/// addition of pages to the LRU" (2002-08-14, in 2.5.32), 16 at a time;
/// 14 from 2.6.10 (Marcelo Tosatti, "Change pagevec counters back to
/// unsigned long and cacheline align", 2004-10-25); 15 after Matthew
/// Wilcox's "Get 7% more pages in a pagevec" (linux-mm, 2017-12-06: after
/// 4.15's merge window), kept by 6.8's `folio_batch`. 2.4 has no pagevec:
/// `lru_cache_add()` takes `pagemap_lru_lock` for every page (1 here).
/// The I/O releases take 2.6.9's value, as they take its boot tables.
pub fn pagevec_size(version: Era) -> u64 {
    match version.boot_tables() {
        Era::V2_6_9 => 16,
        Era::V2_6_32 | Era::V3_10 | Era::V4_15 => 14,
        _ => 15,
    }
}
