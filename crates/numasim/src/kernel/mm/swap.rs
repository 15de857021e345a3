//! Swap space (`mm/swapfile.c`): slots counted, not tracked one by one.

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
