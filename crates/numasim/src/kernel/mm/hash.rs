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

/// What `alloc_large_system_hash()` of 2.6.2x and later counts and caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashMemory {
    /// `nr_kernel_pages`: lowmem pages less the memory map.
    pub kernel_pages: u64,
    /// `nr_all_pages`: every page less the memory map (the 1/16 cap).
    pub all_pages: u64,
    pub page_shift: u32,
    /// `ADAPT_SCALE_*` (4.12+, `__BITS_PER_LONG > 32`).
    pub adaptive: bool,
    /// `max = min(max, 0x80000000ULL)` (4.x+).
    pub cap_2g_entries: bool,
}

/// Entries the later `alloc_large_system_hash()` asks for: as
/// [`hash_entries`], plus the adaptive scale above 64 GiB (one step per
/// quadrupling, only for tables with no high limit), at least one page of
/// buckets, and the 2^31-entry cap. `s.limit` is the high limit.
pub fn hash_entries_late(s: &HashSizing, m: &HashMemory) -> u64 {
    let ps = m.page_shift;
    let mut n = s.numentries;
    if n == 0 {
        let mb_pages = 1u64 << 20u32.saturating_sub(ps);
        n = m.kernel_pages.div_ceil(mb_pages) * mb_pages;
        let mut scale = s.scale;
        if m.adaptive && s.limit == 0 {
            let mut adapt = (64u64 << 30) >> ps;
            while adapt < n {
                scale += 1;
                adapt <<= 2;
            }
        }
        n = if scale > ps {
            n >> (scale - ps)
        } else {
            n << (ps - scale)
        };
        let page = 1u64 << ps;
        if n.saturating_mul(s.bucket_size) < page {
            n = page / s.bucket_size;
        }
    }
    let n = n.max(1).next_power_of_two();
    let mut max = if s.limit == 0 {
        ((m.all_pages << ps) >> 4) / s.bucket_size
    } else {
        s.limit
    };
    if m.cap_2g_entries {
        max = max.min(0x8000_0000);
    }
    let capped = n.min(max.max(1));
    1u64 << capped.ilog2()
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

    fn mem(gib: u64, adaptive: bool) -> HashMemory {
        let pages = (gib << 30) >> 12;
        HashMemory {
            kernel_pages: pages,
            all_pages: pages,
            page_shift: 12,
            adaptive,
            cap_2g_entries: true,
        }
    }

    #[test]
    fn adaptive_scale_coarsens_once_per_quadrupling_above_64g() {
        let dentry = HashSizing {
            bucket_size: 8,
            numentries: 0,
            scale: 13,
            limit: 0,
        };
        // Below the base the two agree; at 1 TiB (16x the base, two
        // quadruplings past it) the scale grows by 2: 4x fewer buckets.
        assert_eq!(
            hash_entries_late(&dentry, &mem(32, true)),
            hash_entries_late(&dentry, &mem(32, false))
        );
        let fixed = hash_entries_late(&dentry, &mem(1024, false));
        let adapted = hash_entries_late(&dentry, &mem(1024, true));
        assert_eq!(fixed / adapted, 4);
        // A high limit switches adaptation off (the TCP tables).
        let capped = HashSizing {
            limit: 1 << 40,
            ..dentry
        };
        assert_eq!(hash_entries_late(&capped, &mem(1024, true)), fixed);
    }

    #[test]
    fn a_tiny_table_still_fills_one_page() {
        let s = HashSizing {
            bucket_size: 8,
            numentries: 0,
            scale: 30,
            limit: 0,
        };
        assert_eq!(hash_entries_late(&s, &mem(1, false)) * 8, 4096);
    }
}
