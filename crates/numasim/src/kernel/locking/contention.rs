//! Kernel knobs of the contention mechanisms ([ALTIX04] C2–C12,
//! [WILDFIRE01] C7), read with the other knobs by `KernelConfig::read`.
//! Defaults are the stock kernel of the period unless said otherwise;
//! docs/contention.md lists them.

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::kernel::knobs::{self, choice_knob, Allowed, Knob};
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
}

impl ContentionKnobs {
    pub fn defaults(machine: &Machine) -> Self {
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
        }
    }

    pub fn knob_json(&self, knob: &str) -> Option<Json> {
        knobs::json_of(KNOBS, self, knob)
    }

    pub fn read(r: &mut TableReader, machine: &Machine) -> Result<Self, InputError> {
        let mut k = ContentionKnobs::defaults(machine);
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
        doc: "the anonymous fault path: stock 2.4.21's page_table_lock or Altix's cmpxchg PTE (C9, C10)"),
    choice_knob!(ContentionKnobs, devzero, Devzero,
        default: "`2.4`",
        doc: "the superblock lock of /dev/zero private mappings (C11)"),
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
];
