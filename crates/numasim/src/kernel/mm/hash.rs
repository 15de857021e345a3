//! `alloc_large_system_hash()`: how the kernel sizes its boot-time hash
//! tables from memory ([HASHDIST04] A13), and the pre-patch `tcp_init()`
//! formula it had to reproduce. Sources: docs/placement.md.

/// How one table is sized (the arguments of `alloc_large_system_hash()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashSizing {
    /// Bytes per bucket.
    pub bucket_size: u64,
    /// Entries forced by a boot parameter (`thash_entries=`…); 0 = size from memory.
    pub numentries: u64,
    /// One bucket per 2^scale bytes of memory.
    pub scale: u32,
    /// Upper bound on entries; 0 = 1/16 of memory.
    pub limit: u64,
}

/// Entries `alloc_large_system_hash()` asks for, before any allocation
/// fails: memory pages rounded up to 1 MiB, scaled to one bucket per
/// 2^`scale` bytes, rounded up to a power of two, capped at `limit` (default:
/// a table of 1/16 of memory).
pub fn hash_entries(s: &HashSizing, mem_pages: u64, page_shift: u32) -> u64 {
    let mut n = s.numentries;
    if n == 0 {
        let mb_pages = 1u64 << 20u32.saturating_sub(page_shift);
        n = mem_pages.div_ceil(mb_pages) * mb_pages;
        n = if s.scale > page_shift {
            n >> (s.scale - page_shift)
        } else {
            n << (page_shift - s.scale)
        };
    }
    let n = n.max(1).next_power_of_two();
    let max = if s.limit == 0 {
        ((mem_pages << page_shift) >> 4) / s.bucket_size
    } else {
        s.limit
    };
    // The kernel keeps a power of two: log2qty = ilog2(min(n, max)).
    let capped = n.min(max.max(1));
    1u64 << capped.ilog2()
}

/// The TCP established-hash scale `tcp_init()` passes: `25 - PAGE_SHIFT`
/// with at least 128K pages of memory, `27 - PAGE_SHIFT` below; chosen in
/// the hashdist patch so sizes stay what the old code gave. A negative
/// result (pages over 32 MiB) is clamped to 0.
pub fn tcp_scale(mem_pages: u64, page_shift: u32) -> u32 {
    let base: u32 = if mem_pages >= 128 * 1024 { 25 } else { 27 };
    base.saturating_sub(page_shift)
}

/// Bytes of the TCP established hash as `tcp_init()` of 2.6.9 computed it
/// before `alloc_large_system_hash()`: the smallest power-of-two number of
/// pages at least `num_physpages >> (21 - PAGE_SHIFT)` (>> 23 - … below 128K
/// pages). Used to check that the new sizing reproduces the old.
pub fn tcp_ehash_bytes_pre_hashdist(mem_pages: u64, page_shift: u32) -> u64 {
    let shift = if mem_pages >= 128 * 1024 { 21 } else { 23 };
    let goal = if shift >= page_shift {
        mem_pages >> (shift - page_shift)
    } else {
        mem_pages << (page_shift - shift)
    };
    let mut order = 0u32;
    while (1u64 << order) < goal {
        order += 1;
    }
    (1u64 << order) << page_shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thash_entries_is_kept_when_a_power_of_two() {
        let s = HashSizing {
            bucket_size: 16,
            numentries: 2097152,
            scale: 11,
            limit: 0,
        };
        assert_eq!(hash_entries(&s, 3_881_090, 14) * 16, 32 << 20);
    }

    #[test]
    fn limit_caps_entries() {
        let s = HashSizing {
            bucket_size: 16,
            numentries: 1 << 24,
            scale: 11,
            limit: 64 * 1024,
        };
        assert_eq!(hash_entries(&s, 3_881_090, 14), 64 * 1024);
    }
}
