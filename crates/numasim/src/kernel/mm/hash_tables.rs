//! Every boot-time hash table Linux prints as `… hash table entries: …`,
//! by release and architecture: the `alloc_large_system_hash()` tables
//! (dentry, inode, PID, mount, futex, TCP, UDP, route, IP idents, …) and
//! the few that size themselves and print in the same words (2.6's PID
//! hash and one-page mount hash, the quota hash).
//!
//! Each rule below is the kernel's own arithmetic, read in a tree of the
//! release named beside it; docs/placement.md, "Boot logs", lists the tree
//! read for every change and which dates are brackets (a change seen absent
//! in one tree and present in the next, the release between unread). No
//! number here is fitted: what varies between machines comes in through
//! [`HashInputs`] (memory counted as the kernel counts it, CPUs, nodes,
//! boot parameters).

use crate::kernel::era::Era;
use crate::kernel::release::{Backport, Release, Vendor};
use crate::machine::Arch;

/// How a table line is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// `alloc_large_system_hash()`: `%s hash table entries: %ld (order: %d,
    /// %lu bytes)`, with `, %s)` (`linear`, `vmalloc`, `vmalloc hugepage`)
    /// from 5.3; the order is `ilog2(size) - PAGE_SHIFT`.
    Alsh,
    /// 2.6.0–2.6.8 `pidhash_init()`: `(order %d: %Zd bytes)`, the "order"
    /// being the hash shift.
    OrderColon,
    /// Written by the caller as `(order: %d, %Zd bytes)`: 2.6.9–2.6.30
    /// `pidhash_init()` (the order is the hash shift) and the one-page
    /// mount hash of 2.6.0–2.6.1x (order 0).
    OrderComma,
    /// 2.6.1x–3.12 `mnt_init()`: `Mount-cache hash table entries: %lu`.
    EntriesOnly,
    /// `dquot_init()`: `(order %ld, %ld bytes)` (one page).
    Dquot,
}

/// One predicted table line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predicted {
    /// The name the kernel prints ("Dentry cache").
    pub label: &'static str,
    pub entries: u64,
    pub order: i64,
    pub bytes: u64,
    /// `linear`, `vmalloc`, `vmalloc hugepage`: only where the release prints it.
    pub kind: Option<&'static str>,
    pub format: LineFormat,
    /// Built only with an option distributions may leave out
    /// (`CONFIG_QUOTA`, `CONFIG_MPTCP`, paravirt spinlocks), or a table a
    /// stable or vendor update may add: a log without it is not short of
    /// anything.
    pub optional: bool,
    /// How the entries came about, for notes ("scale 17: one bucket per 128 KiB").
    pub why: String,
}

/// What the kernel reads when it sizes the tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashInputs {
    pub arch: Arch,
    /// `PAGE_SHIFT`.
    pub page_shift: u32,
    /// `nr_kernel_pages`: lowmem pages, less the memory map from 2.6.20.
    pub kernel_pages: u64,
    /// `nr_all_pages`: every page, likewise (the 1/16 cap; `HASH_HIGHMEM`).
    pub all_pages: u64,
    /// `max_pfn`: the highest page frame (2.6.0–2.6.8 `pidhash_init()`).
    pub max_pfn: u64,
    /// `num_possible_cpus()`.
    pub possible_cpus: u64,
    /// `num_online_nodes()`: nodes up at boot, memoryless ones included.
    pub online_nodes: u64,
    /// `num_node_state(N_MEMORY)`: nodes with memory.
    pub memory_nodes: u64,
    /// `hashdist=` on the command line; None: the release's default.
    pub hashdist_param: Option<bool>,
    /// `CONFIG_NUMA` of the build (distributions' 64-bit kernels have it).
    pub config_numa: bool,
    /// `thash_entries=`, `dhash_entries=`, `ihash_entries=`, `uhash_entries=`,
    /// `rhash_entries=`, `mhash_entries=`, `mphash_entries=` (0: size from memory).
    pub thash_entries: u64,
    pub dhash_entries: u64,
    pub ihash_entries: u64,
    pub uhash_entries: u64,
    pub rhash_entries: u64,
    pub mhash_entries: u64,
    pub mphash_entries: u64,
    /// `MAX_ORDER` (exclusive: the largest buddy block is 2^(MAX_ORDER-1) pages).
    pub max_order: u32,
    /// The largest vmalloc that succeeds, bytes; 0: no limit.
    pub vmalloc_limit: u64,
    /// POWER with the radix MMU (huge vmalloc mappings); the hash MMU has none.
    pub ppc_radix: bool,
}

impl HashInputs {
    /// Inputs for `arch` with `pages` pages of memory on one node, one CPU
    /// and the arch's defaults; callers fill in what they know.
    pub fn new(arch: Arch, page_shift: u32, pages: u64) -> HashInputs {
        HashInputs {
            arch,
            page_shift,
            kernel_pages: pages,
            all_pages: pages,
            max_pfn: pages,
            possible_cpus: 1,
            online_nodes: 1,
            memory_nodes: 1,
            hashdist_param: None,
            config_numa: arch.is_64bit(),
            thash_entries: 0,
            dhash_entries: 0,
            ihash_entries: 0,
            uhash_entries: 0,
            rhash_entries: 0,
            mhash_entries: 0,
            mphash_entries: 0,
            max_order: arch.default_max_order(1 << page_shift),
            vmalloc_limit: 0,
            ppc_radix: true,
        }
    }
    fn page(&self) -> u64 {
        1u64 << self.page_shift
    }
    fn ptr(&self) -> u64 {
        self.arch.pointer_bytes()
    }
}

/// The release's rules, one question each. `sgi` is numasim's model of
/// 2.6.9 with SGI's hashdist patch (HASHDIST04), which the experiments use:
/// the 2.6.10 code, rounding with `roundup_pow_of_two`.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    key: (u32, u32, u32),
    sgi: bool,
    ehash_one_word: bool,
    mount_hash: bool,
    futex_hash: bool,
}

impl Rules {
    pub fn of(r: &Release) -> Rules {
        Rules {
            key: (r.major, r.minor, r.sublevel),
            sgi: r.vendor == Vendor::Numasim(Era::V2_6_9),
            ehash_one_word: r.has_backport(Backport::EhashOneWord),
            mount_hash: r.has_backport(Backport::MountHash),
            futex_hash: r.has_backport(Backport::FutexHash),
        }
    }
    pub fn of_era(era: Era) -> Rules {
        Rules::of(&Release::of_era(era))
    }
    fn at(&self, major: u32, minor: u32, sub: u32) -> bool {
        self.key >= (major, minor, sub)
    }
    /// `alloc_large_system_hash()` exists (2.6.8, `mm/page_alloc.c`).
    pub fn has_alsh(&self) -> bool {
        self.sgi || self.at(2, 6, 8)
    }
    /// 2.6.8: `max = (1 << (PAGE_SHIFT + MAX_SYS_HASH_TABLE_ORDER)) /
    /// bucketsize`, no 1/16 cap, and `dhash_entries=` only lowers it.
    fn alsh_v1(&self) -> bool {
        !self.sgi && !self.at(2, 6, 9)
    }
    /// `numentries = 1UL << (long_log2(numentries) + 1)` (2.6.8–2.6.11; an
    /// exact power of two doubles); `roundup_pow_of_two()` by 2.6.18.
    fn doubles_powers(&self) -> bool {
        !self.sgi && !self.at(2, 6, 18)
    }
    /// `HASH_HIGHMEM` counts all pages (removed by 2.6.20).
    fn honours_highmem(&self) -> bool {
        self.sgi || !self.at(2, 6, 20)
    }
    /// `nr_kernel_pages` leaves out the memory map and the DMA reserve
    /// (`free_area_init_core()`, 2.6.20; not in 2.6.18).
    pub fn counts_without_memmap(&self) -> bool {
        !self.sgi && self.at(2, 6, 20)
    }
    /// "Make sure we've got at least a 0-order allocation" (2.6.20).
    fn one_page_minimum(&self) -> bool {
        !self.sgi && self.at(2, 6, 20)
    }
    /// `HASH_SMALL` (2.6.32, gone by 6.8 with its last user's need).
    fn hash_small(&self) -> bool {
        self.at(2, 6, 32) && !self.at(6, 8, 0)
    }
    /// `max = min(max, 0x80000000ULL)` (by 3.4; absent in 3.0).
    fn cap_2g(&self) -> bool {
        self.at(3, 4, 0)
    }
    /// The `low_limit` argument (by 3.6; absent in 3.4).
    fn low_limit(&self) -> bool {
        self.at(3, 6, 0)
    }
    /// `ADAPT_SCALE_*`: one more scale step per 4× of memory above 64 GiB
    /// for tables without a high limit, 64-bit only (absent in a 4.12
    /// tree, present in 4.14; 4.13 per the merge, unverified here).
    fn adaptive(&self, arch: Arch) -> bool {
        self.at(4, 13, 0) && arch.is_64bit()
    }
    /// A table of `get_order(size) >= MAX_ORDER` is vmalloc'ed instead of
    /// halved, the kind is printed, and `hashdist` is cleared with one
    /// memory node (all three in 5.3: absent in 5.2.1, present in 5.3.1).
    pub fn vmalloc_when_too_big(&self) -> bool {
        self.at(5, 3, 0)
    }
    pub fn prints_kind(&self) -> bool {
        self.at(5, 3, 0)
    }
    pub fn single_node_hashdist_off(&self) -> bool {
        self.at(5, 3, 0)
    }
    /// `HASHDIST_DEFAULT`: `CONFIG_NUMA && CONFIG_IA64` (2.6.10–2.6.20),
    /// `|| CONFIG_X86_64` (2.6.24), `CONFIG_NUMA && CONFIG_64BIT` (2.6.30).
    pub fn hashdist_default(&self, arch: Arch, config_numa: bool, memory_nodes: u64) -> bool {
        if !config_numa {
            return false;
        }
        let on = if self.sgi || !self.at(2, 6, 24) {
            arch == Arch::Ia64
        } else if !self.at(2, 6, 30) {
            matches!(arch, Arch::Ia64 | Arch::X86_64)
        } else {
            arch.is_64bit()
        };
        on && !(self.single_node_hashdist_off() && memory_nodes <= 1)
    }
    /// vmalloc maps with huge pages where the arch allows it: ppc64 radix
    /// (5.13; absent in 5.11, present in 5.14), x86_64 (`vmalloc_huge()` for
    /// the hash tables, 5.18; absent from the x86 Kconfig of 5.15 per the
    /// merge, present in 5.19), arm64 (absent in 5.19, present in 6.1).
    pub fn huge_vmalloc(&self, arch: Arch) -> bool {
        match arch {
            Arch::Ppc64le | Arch::Ppc64 => self.at(5, 13, 0),
            Arch::X86_64 => self.at(5, 18, 0),
            Arch::Aarch64 => self.at(6, 1, 0),
            _ => false,
        }
    }
    /// The hash tables' interleave over nodes comes from `hashdist`.
    fn dentry_inode_lines(&self) -> bool {
        true
    }
}

/// `PMD_SIZE` where vmalloc may map a table with huge pages.
fn pmd_size(arch: Arch, page_shift: u32) -> Option<u64> {
    match arch {
        Arch::X86_64 => Some(2 << 20),
        // 4 KiB pages: 2 MiB; 16 KiB: 32 MiB; 64 KiB: 512 MiB.
        Arch::Aarch64 => Some(1u64 << (page_shift + page_shift - 3)),
        // Radix: 2 MiB PMDs with 4 KiB and 64 KiB pages.
        Arch::Ppc64le | Arch::Ppc64 => Some(2 << 20),
        _ => None,
    }
}

/// `L1_CACHE_BYTES`: a futex bucket is `____cacheline_aligned_in_smp`.
/// arm64 was 128 (a 4.4 tree) then 64 (a 4.19 tree).
fn l1_cache_bytes(arch: Arch, r: &Rules) -> u64 {
    match arch {
        Arch::Ppc64le | Arch::Ppc64 | Arch::Ia64 => 128,
        Arch::Aarch64 if !r.at(4, 19, 0) => 128,
        Arch::Ppc32 => 32,
        _ => 64,
    }
}

/// `get_order(size)`: the buddy order holding `size` bytes.
fn get_order(size: u64, page_shift: u32) -> u32 {
    let pages = size.div_ceil(1 << page_shift).max(1);
    pages.next_power_of_two().trailing_zeros()
}

/// The arguments of one `alloc_large_system_hash()` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alsh {
    pub bucket: u64,
    /// From a boot parameter or the caller; 0: size from memory.
    pub numentries: u64,
    pub scale: u32,
    /// `HASH_EARLY`: from bootmem/memblock, before vmalloc exists.
    pub early: bool,
    /// `HASH_SMALL` with the initial shift (`*_hash_shift`).
    pub small_shift: Option<u32>,
    /// `HASH_HIGHMEM` (2.6.10–2.6.18 TCP tables).
    pub highmem: bool,
    pub low: u64,
    /// `high_limit` (before 3.6 `limit`); 0: 1/16 of memory.
    pub high: u64,
}

impl Alsh {
    fn mem(bucket: u64, numentries: u64, scale: u32) -> Alsh {
        Alsh {
            bucket,
            numentries,
            scale,
            early: false,
            small_shift: None,
            highmem: false,
            low: 0,
            high: 0,
        }
    }
}

/// Entries `alloc_large_system_hash()` asks for, before any allocation fails.
pub fn alsh_entries(r: &Rules, inp: &HashInputs, s: &Alsh) -> u64 {
    let ps = inp.page_shift;
    let bucket = s.bucket.max(1);
    let mb_pages = 1u64 << 20u32.saturating_sub(ps);
    let pages = if s.highmem && r.honours_highmem() {
        inp.all_pages
    } else {
        inp.kernel_pages
    };
    let from_memory = |adapt: bool| -> u64 {
        let n = pages.div_ceil(mb_pages).saturating_mul(mb_pages);
        let mut scale = s.scale;
        if adapt {
            // ADAPT_SCALE_BASE (64 GiB) >> PAGE_SHIFT, << ADAPT_SCALE_SHIFT (2).
            let mut adapt = (64u64 << 30) >> ps;
            while adapt < n {
                scale += 1;
                adapt = adapt.saturating_mul(4);
            }
        }
        if scale > ps {
            n.checked_shr(scale - ps).unwrap_or(0)
        } else {
            n.saturating_mul(1u64.checked_shl(ps - scale).unwrap_or(u64::MAX))
        }
    };
    let log2_up = |n: u64| -> u64 {
        let n = n.max(1);
        if r.doubles_powers() {
            1u64 << (n.ilog2() + 1).min(63)
        } else {
            n.checked_next_power_of_two().unwrap_or(1 << 63)
        }
    };
    if r.alsh_v1() {
        // 2.6.8: mem sized, rounded, capped by MAX_SYS_HASH_TABLE_ORDER.
        let mem = log2_up(from_memory(false));
        let sys_order = inp.max_order.max(14) as u64;
        let max = (1u64
            .checked_shl((ps as u64 + sys_order) as u32)
            .unwrap_or(u64::MAX)
            / bucket)
            .min(mem);
        let n = if s.numentries == 0 || s.numentries > max {
            max
        } else {
            s.numentries
        };
        return 1 << n.max(1).ilog2();
    }
    let mut n = s.numentries;
    if n == 0 {
        n = from_memory(r.adaptive(inp.arch) && s.high == 0);
        if r.one_page_minimum() {
            match s.small_shift.filter(|_| r.hash_small()) {
                Some(sh) => {
                    if n >> sh == 0 {
                        n = 1 << sh;
                    }
                }
                None => {
                    if n.saturating_mul(bucket) < inp.page() {
                        n = inp.page() / bucket;
                    }
                }
            }
        }
    }
    let mut n = log2_up(n);
    let mut max = if s.high == 0 || (!r.sgi && !r.at(2, 6, 10)) {
        (inp.all_pages.saturating_mul(inp.page()) >> 4) / bucket
    } else {
        s.high
    };
    if r.cap_2g() {
        max = max.min(0x8000_0000);
    }
    if r.low_limit() && n < s.low {
        n = s.low;
    }
    n = n.min(max);
    1 << n.max(1).ilog2()
}

/// How `alloc_large_system_hash()` got the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// bootmem/memblock (`HASH_EARLY`) or the buddy allocator: `linear`.
    Linear,
    Vmalloc,
    VmallocHuge,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Linear => "linear",
            Source::Vmalloc => "vmalloc",
            Source::VmallocHuge => "vmalloc hugepage",
        }
    }
}

/// `hashdist` as the release sets it for these inputs.
pub fn hashdist(r: &Rules, inp: &HashInputs) -> bool {
    inp.hashdist_param
        .unwrap_or_else(|| r.hashdist_default(inp.arch, inp.config_numa, inp.memory_nodes))
}

/// Whether a vmalloc of `bytes` is mapped with huge pages: the arch allows
/// it and the share of one node, `size / num_online_nodes()`, fills a PMD
/// (`__vmalloc_node_range()`).
pub fn vmalloc_is_huge(r: &Rules, inp: &HashInputs, bytes: u64) -> bool {
    if !r.huge_vmalloc(inp.arch)
        || (matches!(inp.arch, Arch::Ppc64le | Arch::Ppc64) && !inp.ppc_radix)
    {
        return false;
    }
    pmd_size(inp.arch, inp.page_shift).is_some_and(|pmd| bytes / inp.online_nodes.max(1) >= pmd)
}

/// Allocate `requested` entries as the kernel does: early tables from
/// bootmem, `hashdist` (or, from 5.3, a size past `MAX_ORDER`) from vmalloc,
/// the rest from the buddy allocator; a failure halves the table
/// (`while (!table && size > PAGE_SIZE && --log2qty)`).
pub fn alsh_allocate(r: &Rules, inp: &HashInputs, s: &Alsh, requested: u64) -> (u64, Source) {
    let dist = hashdist(r, inp);
    let mut log2qty = requested.max(1).ilog2();
    loop {
        let size = s.bucket.saturating_mul(1u64 << log2qty);
        let order = get_order(size, inp.page_shift);
        let (ok, src) = if s.early {
            (true, Source::Linear)
        } else if dist || (r.vmalloc_when_too_big() && order >= inp.max_order) {
            let ok = inp.vmalloc_limit == 0 || size <= inp.vmalloc_limit;
            let src = if vmalloc_is_huge(r, inp, size) {
                Source::VmallocHuge
            } else {
                Source::Vmalloc
            };
            (ok, src)
        } else {
            (order < inp.max_order, Source::Linear)
        };
        if ok || size <= inp.page() || log2qty == 0 {
            return (1 << log2qty, src);
        }
        log2qty -= 1;
    }
}

fn line(
    r: &Rules,
    inp: &HashInputs,
    label: &'static str,
    s: Alsh,
    optional: bool,
    why: String,
) -> Predicted {
    let requested = alsh_entries(r, inp, &s);
    let (entries, src) = alsh_allocate(r, inp, &s, requested);
    let bytes = s.bucket.saturating_mul(entries);
    Predicted {
        label,
        entries,
        order: bytes.max(1).ilog2() as i64 - inp.page_shift as i64,
        bytes,
        kind: r.prints_kind().then(|| src.name()),
        format: LineFormat::Alsh,
        optional,
        why,
    }
}

/// `fls()`: the 1-based index of the highest set bit, 0 for 0.
fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// The TCP established hash's `alloc_large_system_hash()` arguments.
pub fn tcp_ehash(r: &Rules, inp: &HashInputs) -> Alsh {
    let ptr = inp.ptr();
    let big = inp.all_pages >= 128 * 1024;
    let ps = inp.page_shift;
    // Bucket: rwlock + hlist_head (2.6.10–2.6.23; 8 bytes aligned on
    // 32-bit); chain + twchain (2.6.24–3.12); one hlist_nulls_head (3.13).
    let bucket = if r.at(3, 13, 0) || r.ehash_one_word {
        ptr
    } else {
        2 * ptr
    };
    let scale = if r.sgi || !r.at(2, 6, 18) {
        (if big { 25u32 } else { 27 }).saturating_sub(ps)
    } else if !r.at(3, 8, 0) {
        if big {
            13
        } else {
            15
        }
    } else {
        17
    };
    Alsh {
        bucket,
        numentries: inp.thash_entries,
        scale,
        early: false,
        small_shift: None,
        highmem: !r.at(2, 6, 20),
        low: 0,
        // thash_entries ? 0 : 512 * 1024 (2.6.24; absent in 2.6.20).
        high: if inp.thash_entries == 0 && !r.sgi && r.at(2, 6, 24) {
            512 * 1024
        } else {
            0
        },
    }
}

/// The TCP bind hash, from the established hash's entries.
pub fn tcp_bhash(r: &Rules, inp: &HashInputs, ehash_entries: u64) -> Alsh {
    let e = tcp_ehash(r, inp);
    Alsh {
        // spinlock + hlist_head; 6.1 allocates bhash2 in the same call.
        bucket: 2 * inp.ptr() * if r.at(6, 1, 0) { 2 } else { 1 },
        // 2.6.10–2.6.23: tcp_ehash_size = (1 << shift) >> 1.
        numentries: if r.sgi || !r.at(2, 6, 24) {
            ehash_entries / 2
        } else {
            ehash_entries
        },
        high: 64 * 1024,
        ..e
    }
}

/// The dentry (`"dentry"`) or inode (`"inode"`) hash.
pub fn vfs_hash(r: &Rules, inp: &HashInputs, which: &str) -> Alsh {
    let (n, scale) = if which == "dentry" {
        (inp.dhash_entries, 13)
    } else {
        (inp.ihash_entries, 14)
    };
    Alsh {
        early: !r.at(2, 6, 10) && !r.sgi || !hashdist(r, inp),
        ..Alsh::mem(inp.ptr(), n, scale)
    }
}

/// Every table line a kernel of release `rel` prints for `inp`, in boot order.
pub fn predict(rel: &Release, inp: &HashInputs) -> Vec<Predicted> {
    let r = Rules::of(rel);
    let ptr = inp.ptr();
    let page = inp.page();
    let ps = inp.page_shift;
    let mut out = Vec::new();

    // PID: pidhash_init(), early in start_kernel().
    if !r.at(2, 6, 9) && !r.sgi {
        let mb = inp.max_pfn >> 20u32.saturating_sub(ps);
        let shift = fls(mb.saturating_mul(4)).clamp(4, 12);
        let n = 1u64 << shift;
        out.push(Predicted {
            label: "PID",
            entries: n,
            order: shift as i64,
            bytes: n * 2 * ptr,
            kind: None,
            format: LineFormat::OrderColon,
            optional: false,
            why: format!("shift {shift} from max_pfn ({mb} MiB); one list_head each"),
        });
    } else if !r.at(2, 6, 32) {
        let mb = inp.kernel_pages >> 20u32.saturating_sub(ps);
        let shift = fls(mb.saturating_mul(4)).clamp(4, 12);
        let n = 1u64 << shift;
        // 2.6.9–2.6.1x: one hash per PID type (PIDTYPE_MAX = 4).
        let types = if r.at(2, 6, 18) { 1 } else { 4 };
        out.push(Predicted {
            label: "PID",
            entries: n,
            order: shift as i64,
            bytes: n * types * ptr,
            kind: None,
            format: LineFormat::OrderComma,
            optional: false,
            why: format!("shift {shift} from {mb} MiB of kernel memory"),
        });
    } else if !r.at(4, 15, 0) {
        out.push(line(
            &r,
            inp,
            "PID",
            Alsh {
                early: true,
                small_shift: Some(4),
                high: 4096,
                ..Alsh::mem(ptr, 0, 18)
            },
            false,
            "scale 18, at most 4096".into(),
        ));
    }

    // vfs_caches_init_early() / vfs_caches_init(): dentry, inode.
    if r.dentry_inode_lines() {
        for (which, label) in [("dentry", "Dentry cache"), ("inode", "Inode-cache")] {
            let s = vfs_hash(&r, inp, which);
            let why = format!(
                "scale {}, {}",
                s.scale,
                if s.early {
                    "early (bootmem)"
                } else {
                    "after mem_init (hashdist)"
                }
            );
            out.push(line(&r, inp, label, s, false, why));
        }
    }

    // mnt_init().
    if r.at(3, 13, 0) || r.mount_hash {
        for (label, n) in [
            ("Mount-cache", inp.mhash_entries),
            ("Mountpoint-cache", inp.mphash_entries),
        ] {
            out.push(line(
                &r,
                inp,
                label,
                Alsh::mem(ptr, n, 19),
                false,
                "scale 19: one bucket per 512 KiB".into(),
            ));
        }
    } else {
        let n = page / (2 * ptr);
        let format = if r.at(2, 6, 18) {
            LineFormat::EntriesOnly
        } else {
            LineFormat::OrderComma
        };
        out.push(Predicted {
            label: "Mount-cache",
            entries: n,
            order: 0,
            bytes: page,
            kind: None,
            format,
            optional: false,
            why: "one page of list_heads".into(),
        });
    }

    // Paravirt spinlocks (guests only).
    if r.at(4, 2, 0) && inp.arch == Arch::X86_64 {
        let per_line = 64 / (2 * ptr);
        let min = page / (2 * ptr);
        let size = (4 * inp.possible_cpus)
            .div_ceil(per_line)
            .saturating_mul(per_line)
            .max(min);
        out.push(line(
            &r,
            inp,
            "PV qspinlock",
            Alsh {
                early: true,
                low: size,
                high: size,
                ..Alsh::mem(2 * ptr, size, 0)
            },
            true,
            format!(
                "4 per possible CPU ({}), at least a page",
                inp.possible_cpus
            ),
        ));
    }

    // futex_init().
    if r.at(3, 14, 0) || r.futex_hash {
        let n = 256u64
            .saturating_mul(inp.possible_cpus.max(1))
            .checked_next_power_of_two()
            .unwrap_or(1 << 63);
        out.push(line(
            &r,
            inp,
            "futex",
            Alsh {
                low: n,
                high: n,
                ..Alsh::mem(l1_cache_bytes(inp.arch, &r), n, 0)
            },
            false,
            format!("256 per possible CPU ({})", inp.possible_cpus),
        ));
    }

    // inet_init() → ip_rt_init(), tcp_init(), udp_init().
    if r.at(2, 6, 18) && !r.at(3, 6, 0) {
        out.push(line(
            &r,
            inp,
            "IP route cache",
            Alsh {
                high: if inp.rhash_entries == 0 && r.at(2, 6, 30) {
                    512 * 1024
                } else {
                    0
                },
                ..Alsh::mem(
                    ptr,
                    inp.rhash_entries,
                    if inp.all_pages >= 128 * 1024 { 15 } else { 17 },
                )
            },
            false,
            "scale 15 (17 below 128K pages)".into(),
        ));
    }
    if r.at(5, 13, 0) {
        out.push(line(
            &r,
            inp,
            "IP idents",
            Alsh {
                low: 2048,
                high: 256 * 1024,
                ..Alsh::mem(8, 0, 16)
            },
            true,
            "scale 16, 2048 to 256K".into(),
        ));
    }
    if r.at(4, 16, 0) {
        // spinlock + count + head (16 B; 12 on 32-bit), then spinlock + head (5.19).
        let bucket = if r.at(5, 19, 0) { 2 * ptr } else { 8 + ptr };
        out.push(line(
            &r,
            inp,
            "tcp_listen_portaddr_hash",
            Alsh {
                high: 64 * 1024,
                ..Alsh::mem(bucket, inp.thash_entries, 21)
            },
            false,
            "scale 21, at most 64K".into(),
        ));
    }
    if r.at(5, 19, 0) {
        out.push(line(
            &r,
            inp,
            "Table-perturb",
            Alsh {
                low: 1 << 16,
                high: 1 << 16,
                ..Alsh::mem(4, 1 << 16, 0)
            },
            true,
            "INET_TABLE_PERTURB_SIZE".into(),
        ));
    }
    if r.has_alsh() && (r.at(2, 6, 10) || r.sgi) {
        let e = tcp_ehash(&r, inp);
        let est = line(
            &r,
            inp,
            "TCP established",
            e,
            false,
            format!("scale {}", e.scale),
        );
        let b = tcp_bhash(&r, inp, est.entries);
        out.push(est);
        out.push(line(
            &r,
            inp,
            "TCP bind",
            b,
            false,
            "from the established hash, at most 64K".into(),
        ));
    }
    if r.at(5, 7, 0) {
        out.push(line(
            &r,
            inp,
            "MPTCP token",
            Alsh {
                high: 64 * 1024,
                ..Alsh::mem(8 + 2 * ptr, 0, 20)
            },
            true,
            "scale 20, at most 64K".into(),
        ));
    }
    if r.at(2, 6, 33) {
        for label in ["UDP", "UDP-Lite"] {
            out.push(line(
                &r,
                inp,
                label,
                Alsh {
                    low: 256,
                    high: 64 * 1024,
                    ..Alsh::mem(32, inp.uhash_entries, 21)
                },
                label == "UDP-Lite",
                "scale 21: one slot per 2 MiB".into(),
            ));
        }
    }

    // dquot_init(): one page of hlist_heads.
    out.push(Predicted {
        label: "Dquot-cache",
        entries: page / ptr,
        order: 0,
        bytes: page,
        kind: None,
        format: LineFormat::Dquot,
        optional: true,
        why: "one page".into(),
    });
    out
}

/// The sizing of one of the four tables numasim's boot model places
/// (`kernel/boot.rs`): dentry, inode, TCP established, TCP bind.
pub fn core_sizing(r: &Rules, inp: &HashInputs, name: &str, ehash_entries: u64) -> Option<Alsh> {
    Some(match name {
        "dentry" | "inode" => vfs_hash(r, inp, name),
        "tcp_ehash" => tcp_ehash(r, inp),
        "tcp_bhash" => tcp_bhash(r, inp, ehash_entries),
        _ => return None,
    })
}

/// The boot-table rules of a release live here, beside the rules, so
/// `era.rs` (the release type) needs nothing above it.
impl Era {
    /// The release's boot-table rules (kernel/mm/hash_tables.rs).
    pub fn rules(self) -> Rules {
        Rules::of_era(self.boot_tables())
    }

    /// `hashdist`'s default for this release (`HASHDIST_DEFAULT`, and from
    /// 5.3 off with one memory node); 2.6.9 is SGI's `CONFIG_NUMA &&
    /// CONFIG_IA64`.
    pub fn hashdist_default(self, arch: Arch, config_numa: bool, mem_nodes: usize) -> bool {
        self.rules()
            .hashdist_default(arch, config_numa, mem_nodes as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> Release {
        Release::parse(s).unwrap()
    }

    fn get<'a>(p: &'a [Predicted], label: &str) -> &'a Predicted {
        p.iter().find(|t| t.label == label).unwrap()
    }

    #[test]
    fn ubuntu_5_4_on_64_gib_prints_what_its_log_shows() {
        let mut inp = HashInputs::new(Arch::X86_64, 12, 16_502_105);
        inp.possible_cpus = 8;
        let p = predict(&rel("5.4.44"), &inp);
        let d = get(&p, "Dentry cache");
        assert_eq!(
            (d.entries, d.order, d.bytes, d.kind),
            (8388608, 14, 67108864, Some("linear"))
        );
        assert_eq!(get(&p, "TCP established").entries, 524288);
        assert_eq!(get(&p, "futex").bytes, 131072);
        assert_eq!(get(&p, "UDP").entries, 32768);
        assert_eq!(get(&p, "tcp_listen_portaddr_hash").bytes, 524288);
    }

    #[test]
    fn tcp_scale_17_from_3_8() {
        let inp = HashInputs::new(Arch::X86_64, 12, 8_253_490);
        let e = |v: &str| get(&predict(&rel(v), &inp), "TCP established").entries;
        assert_eq!(e("3.7.0"), 512 * 1024);
        assert_eq!(e("3.8.0"), 262144);
    }

    #[test]
    fn adaptive_scale_from_4_13() {
        // 256 GiB: two quadruplings past 64 GiB? 64→256 is one: scale +1.
        let inp = HashInputs::new(Arch::X86_64, 12, 256 << 18);
        let d = |v: &str| get(&predict(&rel(v), &inp), "Dentry cache").entries;
        assert_eq!(d("4.12.0") / d("4.13.0"), 2);
    }

    #[test]
    fn exact_powers_double_before_2_6_18() {
        let inp = HashInputs::new(Arch::X86_64, 12, 1 << 20);
        let d = |v: &str| get(&predict(&rel(v), &inp), "Dentry cache").entries;
        assert_eq!(d("2.6.11"), 2 * d("2.6.18"));
    }
}
