//! Kernel releases whose boot-time hash sizing numasim models
//! (`kernel.version`). Each release is a formula set: what
//! `alloc_large_system_hash()` counts and how it scales, what `tcp_init()`
//! passes it, the `hashdist` default, and how `dmesg` prints a table. The
//! release and function each item comes from is in docs/placement.md.

use crate::machine::Arch;

/// A modelled release. Order is release order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Era {
    /// 2.6.9 with SGI's hashdist patch (HASHDIST04; mainline in 2.6.10).
    V2_6_9,
    V2_6_32,
    V3_10,
    V4_15,
    V5_4,
    V6_8,
}

/// How `tcp_init()` picks the TCP hash scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpScale {
    /// `(num_physpages >= 128K) ? 25 - PAGE_SHIFT : 27 - PAGE_SHIFT` (2.6.10).
    PageRelative,
    /// `(totalram_pages >= 128K) ? 13 : 15` (2.6.2x to 3.x).
    ThirteenFifteen,
    /// 17: "one slot per 128 KB of memory".
    Seventeen,
}

/// How the table line is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintStyle {
    /// `%s hash table entries: %d (order: %d, %lu bytes)`
    Plain,
    /// `... bytes, linear)`, `... bytes, vmalloc)` or `vmalloc hugepage`.
    KindHuge,
}

impl Era {
    pub const KNOWN: &'static [(&'static str, Era)] = &[
        ("2.6.9", Era::V2_6_9),
        ("2.6.32", Era::V2_6_32),
        ("3.10", Era::V3_10),
        ("4.15", Era::V4_15),
        ("5.4", Era::V5_4),
        ("6.8", Era::V6_8),
    ];

    pub fn name(self) -> &'static str {
        Era::KNOWN
            .iter()
            .find(|(_, e)| *e == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// A release key for ordering: 2.6.x by x, later ones by major.minor.
    fn key(self) -> (u32, u32, u32) {
        parse_release(self.name()).expect("known names parse")
    }

    /// The era of `version` ("5.4", "5.4.0-150-generic", "2.6.32-754.el6"):
    /// exact when major.minor (and the 2.6 sublevel) is modelled; otherwise
    /// the error names the nearest modelled releases.
    pub fn parse(version: &str) -> Result<Era, String> {
        match Era::nearest(version)? {
            (e, true) => Ok(e),
            (e, false) => Err(format!(
                "\"{version}\" is not a modelled release; nearest known: {} (known: {})",
                e.name(),
                Era::KNOWN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The modelled release nearest to `version`, and whether it is exact:
    /// the newest one not newer than it (whose formulas were in force),
    /// or the oldest for a release before all of them.
    pub fn nearest(version: &str) -> Result<(Era, bool), String> {
        let k = parse_release(version).ok_or_else(|| {
            format!("\"{version}\": expected a release like \"5.4\", \"6.8.0-45-generic\" or \"2.6.32\"")
        })?;
        let mut best = Era::V2_6_9;
        for &(_, e) in Era::KNOWN {
            if e.key() <= k {
                best = e;
            }
        }
        let exact = match k.0 {
            2 => best.key() == k,
            _ => (best.key().0, best.key().1) == (k.0, k.1),
        };
        Ok((best, exact))
    }

    pub fn tcp_scale(self) -> TcpScale {
        match self {
            Era::V2_6_9 => TcpScale::PageRelative,
            Era::V2_6_32 | Era::V3_10 => TcpScale::ThirteenFifteen,
            _ => TcpScale::Seventeen,
        }
    }

    /// Pointers per TCP established bucket: 2.6.9 `tcp_ehash_bucket`
    /// (rwlock + `hlist_head`, padded to two words); 2.6.2x–3.12
    /// `inet_ehash_bucket` (chain + twchain); one `hlist_nulls_head` since
    /// time-wait sockets share the chain (3.13).
    pub fn ehash_words(self) -> u64 {
        match self {
            Era::V2_6_9 | Era::V2_6_32 | Era::V3_10 => 2,
            _ => 1,
        }
    }

    /// Words per TCP bind bucket: spinlock + `hlist_head`; 6.1 allocates
    /// the second bind table (bhash2) in the same call, doubling it.
    pub fn bhash_words(self) -> u64 {
        match self {
            Era::V6_8 => 4,
            _ => 2,
        }
    }

    /// `tcp_init()` caps the automatic ehash at 512K entries (2.6.2x on).
    pub fn ehash_cap(self) -> u64 {
        match self {
            Era::V2_6_9 => 0,
            _ => 512 * 1024,
        }
    }

    /// The scale coarsens by one per quadrupling of memory above 64 GiB
    /// (`ADAPT_SCALE_BASE`, 4.12), for tables without a high limit, 64-bit only.
    pub fn adaptive_scale(self) -> bool {
        self >= Era::V4_15
    }

    /// `nr_kernel_pages` excludes the memory map (`free_area_init_core()`
    /// counts `freesize = size - memmap_pages` since 2.6.2x).
    pub fn counts_without_memmap(self) -> bool {
        self > Era::V2_6_9
    }

    /// A table too large for one buddy block is vmalloc'ed
    /// (`get_order(size) >= MAX_ORDER || hashdist`) instead of halved.
    pub fn vmalloc_fallback(self) -> bool {
        self >= Era::V6_8
    }

    /// `hashdist` is cleared when only one node has memory (`fixup_hashdist()`).
    pub fn single_node_fixup(self) -> bool {
        self >= Era::V6_8
    }

    pub fn print_style(self) -> PrintStyle {
        match self {
            Era::V6_8 => PrintStyle::KindHuge,
            _ => PrintStyle::Plain,
        }
    }

    /// `HASHDIST_DEFAULT`: 2.6.10 `CONFIG_NUMA && CONFIG_IA64`; later
    /// `CONFIG_NUMA && CONFIG_64BIT`; 6.x then clears it on one memory node.
    pub fn hashdist_default(self, arch: Arch, config_numa: bool, mem_nodes: usize) -> bool {
        match self {
            Era::V2_6_9 => config_numa && arch == Arch::Ia64,
            e => config_numa && arch.is_64bit() && !(e.single_node_fixup() && mem_nodes <= 1),
        }
    }

    /// vmalloc maps a table of at least one PMD with huge pages
    /// (`vmalloc_huge()`, `HAVE_ARCH_HUGE_VMALLOC`: x86_64 and powerpc).
    pub fn huge_vmalloc(self, arch: Arch, page_size: u64, bytes: u64) -> bool {
        let pmd = match (arch, page_size) {
            (Arch::X86_64, _) => 2 << 20,
            // Radix MMU: 2 MiB PMDs with 64 KiB pages.
            (Arch::Ppc64le, _) => 2 << 20,
            _ => return false,
        };
        self.print_style() == PrintStyle::KindHuge && bytes >= pmd
    }
}

/// (major, minor, sublevel): the sublevel only counts in 2.x.
fn parse_release(v: &str) -> Option<(u32, u32, u32)> {
    let v = v.trim().trim_start_matches(['v', 'V']);
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    // The separator after major must be a dot: "5-4" is not a release.
    if !v[major.to_string().len()..].starts_with('.') {
        return None;
    }
    let sub = if major == 2 {
        parts.next().and_then(|s| s.parse().ok()).unwrap_or(0)
    } else {
        0
    };
    if !(2..=9).contains(&major) {
        return None;
    }
    Some((major, minor, sub))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_strings_map_to_their_release() {
        assert_eq!(Era::parse("5.4.0-150-generic"), Ok(Era::V5_4));
        assert_eq!(Era::parse("2.6.32-754.el6.x86_64"), Ok(Era::V2_6_32));
        assert_eq!(Era::parse("3.10.0-1160.el7.x86_64"), Ok(Era::V3_10));
        assert_eq!(Era::parse("6.8"), Ok(Era::V6_8));
    }

    #[test]
    fn unknown_release_names_the_nearest_older() {
        let e = Era::parse("5.15").unwrap_err();
        assert!(e.contains("nearest known: 5.4"), "{e}");
        assert_eq!(Era::nearest("2.6.18"), Ok((Era::V2_6_9, false)));
        assert_eq!(Era::nearest("2.4.20"), Ok((Era::V2_6_9, false)));
        assert!(Era::parse("five").is_err());
    }
}
