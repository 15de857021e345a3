//! Kernel knobs of the contention mechanisms ([ALTIX04] C2–C12,
//! [WILDFIRE01] C7), read with the other knobs by `KernelConfig::read`.
//! Defaults are the stock kernel of the period unless said otherwise;
//! docs/contention.md lists them.

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::kernel::era::Era;
use crate::kernel::knobs::{self, choice_knob, Allowed, Knob};
use crate::kernel::mm::page_alloc::zone_batchsize;
use crate::kernel::mm::swap::pagevec_size;
use crate::machine::{Arch, Machine};
use serde_json::{json, Value as Json};

knob_enum! {
    /// `prof_cpu_mask` (C2): which CPUs bump a profile bin at every tick.
    ProfCpuMask { All = "all", None = "none" }
}
knob_enum! {
    /// The HZ-vs-microseconds adjustment variable (C3).
    TimerAdjust { Global = "global", PerCpu = "per-cpu" }
}
knob_enum! {
    /// How `gettimeofday()` keeps time monotonic across CPUs.
    Gettimeofday {
        /// ia64 2.6 `time_interpolator_get_counter()` (C5): every call
        /// `cmpxchg`es a shared "last value returned" word.
        Cmpxchg = "cmpxchg",
        /// Generic timekeeping (x86-64 vsyscall/vDSO, and ia64 itself once
        /// the interpolator gave way to clocksources in 2.6.22): readers
        /// only read a seqcount-protected copy of the time; nothing shared
        /// is written per call.
        Seqcount = "seqcount",
    }
}
knob_enum! {
    /// The anonymous not-present fault path (C9, C10).
    AnonFault {
        /// Stock 2.4.21: `page_table_lock` in `handle_mm_fault()` and again
        /// in `do_anonymous_page()`.
        PageTableLock = "page-table-lock",
        /// Altix: no lock on this path, PTE installed with `cmpxchg`.
        CmpxchgPte = "cmpxchg-pte",
        /// Linux 6.4 on: the VMA's per-VMA lock (a reader count every
        /// faulting thread writes), the page from the per-CPU lists, the
        /// LRU through the per-CPU folio batch (`lru_add_batch`, `pcp_batch`).
        PerVmaLock = "per-vma-lock",
    }
}
knob_enum! {
    /// `/dev/zero` private mappings (C11).
    Devzero {
        /// Superblock lock once per mapping and once per fault.
        V24 = "2.4",
        /// The same lock in the 2.6 path.
        V26 = "2.6",
        /// Lock removed.
        Altix = "altix",
        /// No superblock lock (a private mapping faults as anonymous
        /// memory, as in mainline), on the per-CPU batched LRU and page
        /// allocator paths of `kernel.version`.
        Anon = "anon",
    }
}
knob_enum! {
    /// HUGETLB population (C12).
    Hugetlb {
        /// `hugetlb_prefault()`: the `mmap()` caller zeroes every page.
        Prefault = "prefault",
        /// Allocate and zero in the fault handler of the touching CPU.
        Fault = "fault",
    }
}
knob_enum! {
    /// The page-cache page count (C8).
    PagecacheCount { Global = "global", PerNode = "per-node" }
}
knob_enum! {
    /// `spinlock_t` implementation (C6, C7).
    Spinlock {
        /// Test-and-set: the releaser's node wins the line more often.
        Tas = "tas",
        /// Queued (MCS-style) fair lock: FIFO hand-off to one waiter.
        Fair = "fair",
    }
}

/// The contention knobs in force.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentionKnobs {
    pub prof_cpu_mask: ProfCpuMask,
    pub timer_adjust: TimerAdjust,
    pub gettimeofday: Gettimeofday,
    pub anon_fault: AnonFault,
    pub devzero: Devzero,
    pub hugetlb: Hugetlb,
    /// `hugepagesz=`: bytes per huge page.
    pub hugepagesz: u64,
    pub pagecache_count: PagecacheCount,
    pub spinlock: Spinlock,
    /// `PAGEVEC_SIZE`: pages per per-CPU LRU add (and per `release_pages()`
    /// chunk) on the fault paths of 2.6 and later (mm/swap.rs).
    pub lru_add_batch: u64,
    /// `pcp->batch`: pages per per-CPU list refill and bulk free under
    /// `zone->lock` on those paths (mm/page_alloc.rs `zone_batchsize`).
    pub pcp_batch: u64,
}

impl ContentionKnobs {
    /// The defaults of 2.6.9 (numasim's default release).
    pub fn defaults(machine: &Machine) -> Self {
        ContentionKnobs::defaults_for(machine, Era::V2_6_9)
    }

    /// The defaults of release `version` on `machine`.
    pub fn defaults_for(machine: &Machine, version: Era) -> Self {
        ContentionKnobs {
            // Profiling off until a mask is set: SGI's CPU_MASK_NONE fix,
            // and what a kernel booted without `profile=` does.
            prof_cpu_mask: ProfCpuMask::None,
            timer_adjust: TimerAdjust::PerCpu,
            // The interpolator's shared word is ia64's (and sparc64's);
            // the other architectures modelled read a seqcount.
            gettimeofday: if machine.arch == Arch::Ia64 {
                Gettimeofday::Cmpxchg
            } else {
                Gettimeofday::Seqcount
            },
            anon_fault: AnonFault::PageTableLock,
            devzero: Devzero::V24,
            hugetlb: Hugetlb::Prefault,
            // include/asm-ia64/page.h HPAGE_SHIFT_DEFAULT = 28 (256 MB);
            // 2 MB (x86_64 PMD) elsewhere.
            hugepagesz: if machine.arch == Arch::Ia64 {
                256 << 20
            } else {
                2 << 20
            },
            pagecache_count: PagecacheCount::Global,
            spinlock: Spinlock::Tas,
            lru_add_batch: pagevec_size(version),
            pcp_batch: default_pcp_batch(machine, version),
        }
    }

    pub fn knob_json(&self, knob: &str) -> Option<Json> {
        knobs::json_of(KNOBS, self, knob)
    }

    pub fn read(r: &mut TableReader, machine: &Machine) -> Result<Self, InputError> {
        ContentionKnobs::read_for(r, machine, Era::V2_6_9)
    }

    /// Read over the defaults of release `version`.
    pub fn read_for(
        r: &mut TableReader,
        machine: &Machine,
        version: Era,
    ) -> Result<Self, InputError> {
        let mut k = ContentionKnobs::defaults_for(machine, version);
        knobs::read_all(KNOBS, r, &mut k, machine)?;
        Ok(k)
    }
}

/// The contention knobs, declared once (kernel/knobs.rs); read in this order.
pub const KNOBS: &[Knob<ContentionKnobs>] = &[
    choice_knob!(ContentionKnobs, prof_cpu_mask, ProfCpuMask,
        default: "`none`",
        doc: "CPUs that bump a profile bin at every tick (C2); `none` is SGI's CPU_MASK_NONE fix and a boot without `profile=`"),
    choice_knob!(ContentionKnobs, timer_adjust, TimerAdjust,
        default: "`per-cpu`",
        doc: "where the HZ-vs-microseconds adjustment variable lives (C3)"),
    choice_knob!(ContentionKnobs, gettimeofday, Gettimeofday,
        default: "`cmpxchg` on ia64, `seqcount` elsewhere",
        doc: "how gettimeofday() stays monotonic: ia64 2.6's shared cmpxchg word (C5) or a seqcount read"),
    choice_knob!(ContentionKnobs, anon_fault, AnonFault,
        default: "`page-table-lock`",
        doc: "the anonymous fault path: stock 2.4.21's page_table_lock or Altix's cmpxchg PTE (C9, C10), or Linux 6.4's per-VMA lock with per-CPU page and LRU batches"),
    choice_knob!(ContentionKnobs, devzero, Devzero,
        default: "`2.4`",
        doc: "the superblock lock of /dev/zero private mappings (C11); each value names its kernel's fault path: `2.4` and `altix` (2.4.21) a page at a time, `2.6` and `anon` (no lock, mainline) through the per-CPU batches of `version`"),
    choice_knob!(ContentionKnobs, hugetlb, Hugetlb,
        default: "`prefault`",
        doc: "who zeroes huge pages: the mmap() caller (hugetlb_prefault) or the faulting CPU (C12)"),
    Knob {
        name: "hugepagesz",
        allowed: Allowed::Text("a power of two from the base page to 1 TB"),
        default: "256 MB on ia64 (HPAGE_SHIFT_DEFAULT), 2 MB elsewhere",
        doc: "`hugepagesz=`: bytes per huge page",
        read: |r, k, machine| {
            if let Some(sz) = r.size("hugepagesz")? {
                if !sz.is_power_of_two() || sz < machine.page_size || sz > 1 << 40 {
                    return Err(InputError::at(
                        r.key("hugepagesz"),
                        format!(
                            "{sz} bytes: must be a power of two from the base page ({}) to 1 TB",
                            crate::input::size::format_size(machine.page_size)
                        ),
                    ));
                }
                k.hugepagesz = sz;
            }
            Ok(())
        },
        json: |k| json!(crate::input::size::format_size(k.hugepagesz)),
    },
    choice_knob!(ContentionKnobs, pagecache_count, PagecacheCount,
        default: "`global`",
        doc: "the page-cache page count: one global counter or one per node (C8)"),
    choice_knob!(ContentionKnobs, spinlock, Spinlock,
        default: "`tas`",
        doc: "spinlock_t: test-and-set or a queued fair lock (C6, C7)"),
    Knob {
        name: "lru_add_batch",
        allowed: Allowed::Text("1..1024 pages"),
        default: "`PAGEVEC_SIZE` of `version`: 16 (2.6.9), 14 (2.6.32 .. 4.15), 15 (5.4, 6.8)",
        doc: "pages lru_cache_add() gathers per CPU before one hold of the LRU lock (mm/swap.c; 1 = per page, as 2.4); also the munmap chunk of release_pages(); used by `devzero` = `2.6`, `anon`",
        read: |r, k, _| {
            if let Some(v) = r.u64_in("lru_add_batch", 1, 1024)? {
                k.lru_add_batch = v;
            }
            Ok(())
        },
        json: |k| json!(k.lru_add_batch),
    },
    Knob {
        name: "pcp_batch",
        allowed: Allowed::Text("1..4096 pages"),
        default: "`zone_batchsize()` of `version` for a node's memory: a thousandth of it, at most 256 KB / 4 (2.6.9), 512 KB / 4 rounded to 2^n-1 (2.6.32 .. 4.15), 1 MB / 4 so (5.4, 6.8: 63 pages of 4 KiB)",
        doc: "pages per per-CPU page list refill and bulk free, each under one hold of zone->lock (mm/page_alloc.c; 1 = per page); used by `devzero` = `2.6`, `anon`",
        read: |r, k, _| {
            if let Some(v) = r.u64_in("pcp_batch", 1, 4096)? {
                k.pcp_batch = v;
            }
            Ok(())
        },
        json: |k| json!(k.pcp_batch),
    },
];

/// `pcp->batch` of the mean node's zone (one zone a node here).
fn default_pcp_batch(machine: &Machine, version: Era) -> u64 {
    let nodes = machine
        .nodes
        .iter()
        .filter(|n| n.mem_bytes > 0)
        .count()
        .max(1) as u64;
    let page = machine.page_size.max(1);
    zone_batchsize(version, machine.mem_bytes() / nodes / page, page)
}
