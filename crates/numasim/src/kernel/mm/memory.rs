//! Page faults under contention ([ALTIX04] C9, C10, C11): many threads
//! fault pages in at once and meet on shared locks and lines.
//!
//! A fault is a short program of stages run by one thread:
//!
//! - `Sem`: an atomic on the address space's `mmap_sem` count line
//!   (`down_read()` or `up_read()`: readers take the line exclusively too);
//! - `Lock(i)` / `Unlock(i)`: take or release spinlock `i`;
//! - `Write(i)`: write shared line `i` (a list head, a counter), wherever
//!   it was written last;
//! - `PtlWork`: CPU work inside a `page_table_lock` section
//!   (`fault.ptl_hold_ns`);
//! - `Work`: the fault's own CPU time: the fixed fault path plus zeroing the
//!   page at the rate of the memory it landed on;
//! - `Drain(b, n)` / `Refill(b, n)`: the next `n` stages run only on the
//!   fault that fills (drain) or finds empty (refill) the thread's per-CPU
//!   batch `b` (see "Per-CPU batches" below);
//! - `PageWrite(i, b)`: write shared line `i` once for every page of batch
//!   `b` (once when the path does not batch): the list operations of a
//!   drained batch, the first a transfer, the rest hits.
//!
//! A lock or line is global or one per node ([`Scope`]); so the hold time
//! of a lock is whatever its section's stages cost on that machine, never a
//! number of its own.
//!
//! Anonymous write fault, stock 2.4.21 (`handle_mm_fault()` then
//! `do_anonymous_page()`): `page_table_lock` for the walk, dropped to
//! allocate and zero, retaken to install the page, and inside it
//! `lru_cache_add()` under `pagemap_lru_lock`: `list_add()` writes the list
//! head and the `struct page` of the page added before, and
//! `nr_inactive_pages++`. The Altix path takes no `page_table_lock` (PTE by
//! `cmpxchg` on a line only the faulting thread touches) and its LRU lists
//! and their lock are per node ([ALTIX04] B2). Private `/dev/zero` faults
//! (`kernel.devzero`): each process has its own `mm`; what they share is
//! the superblock lock, whose section updates the two counters it guards
//! (one line), and the LRU.
//!
//! **Per-CPU batches** (kernels from 2.5.32 on; [`Batches`]): 2.4.21 adds
//! every new page to the LRU under the LRU lock (`lru_cache_add()`), and
//! takes the page from the buddy lists under `zone->lock` (`rmqueue()`).
//! Later kernels put the page in a per-CPU pagevec and add `PAGEVEC_SIZE`
//! pages at a time under the lock (mm/swap.c, 2.5.32), and take order-0
//! pages from per-CPU lists refilled `pcp->batch` pages at a time under
//! `zone->lock` (mm/page_alloc.c, 2.5.45); at `munmap()` the gathered pages
//! leave the LRU a chunk at a time (`release_pages()`) and go back to the
//! buddy lists `pcp->batch` at a time (`free_pages_bulk()`), after the
//! mapping's last fault, as will-it-scale's page_fault2 does it (a path's
//! `teardown`, with its own CPU time `fault.unmap_ns`). A batched
//! path takes each lock once per batch, not once per page; the per-page
//! list work stays under the lock ([`Stage::PageWrite`]). The 2.4 paths
//! here do not batch (every batch is one page: `zone->lock` and the LRU
//! lock once a fault, [`RMQUEUE`]); the paths of 2.6 and later batch
//! both ([`devzero_batched`]). docs/contention.md, "Fault path by release".
//!
//! **Batching.** Millions of faults repeat the same contention pattern. The
//! simulator runs every fault of every thread as events until each thread
//! has done `sample` faults (threads keep faulting meanwhile, so contention
//! stays realistic), then finishes each thread at the rate it achieved in
//! that window. With `sample` ≥ the faults per thread it simulates every
//! fault, and always with a teardown (its unmaps are a phase after the
//! faults, which a window of faults alone would miss); `tests/contention.rs` checks the two agree at small scale and
//! docs/contention.md discusses the limits.

use crate::engine::{CostTable, Dur, EventQueue, Lock, Time};
use crate::kernel::boot::Booted;
use crate::kernel::locking::contention::{ContentionKnobs, Spinlock};
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::{line, rwsem::RwSem, Line};
use crate::kernel::mm::mempolicy::{alloc_pages, Allocator};
use crate::kernel::mm::{Gfp, MemPolicy, Placement, Use};
use crate::machine::Machine;

/// Faults every thread runs as events before the rest is extrapolated.
pub const DEFAULT_SAMPLE: u64 = 64;

/// One stage of a fault; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Sem,
    Lock(usize),
    Unlock(usize),
    Write(usize),
    /// Write lines `.0` and `.1` with both misses in flight at once: an
    /// in-order Itanium 2 stalls on a load's first use, not on a store, so
    /// a store's miss overlaps what follows until the next release
    /// (`st4.rel`) waits for it.
    WritePair(usize, usize),
    PtlWork,
    Work,
    /// A page's share of `munmap()` outside its locks (`fault.unmap_ns`).
    UnmapWork,
    /// Run the next `.1` stages only on the fault that fills per-CPU batch
    /// `.0` (every `batch[.0]`-th fault of the thread: a pagevec drain).
    Drain(usize, usize),
    /// Run the next `.1` stages only on the fault that finds batch `.0`
    /// empty (the first of every `batch[.0]` faults: a pcp refill).
    Refill(usize, usize),
    /// Write line `.0` once for each page of batch `.1`.
    PageWrite(usize, usize),
}

/// Pages per per-CPU batch of each kind a path names; 1 = no batching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batches {
    /// `lru_cache_add()`'s pagevec: `PAGEVEC_SIZE` (mm/swap.c).
    pub lru_add: u64,
    /// `pcp->batch`: pages per refill from, and per bulk free to, the
    /// buddy lists (`rmqueue_bulk()`, `free_pages_bulk()`; mm/page_alloc.c).
    pub pcp: u64,
    /// Pages `release_pages()` takes off the LRU under one hold of the LRU
    /// lock at `munmap()`.
    pub lru_free: u64,
}

impl Batches {
    /// Every page on its own: the 2.4 paths.
    pub const NONE: Batches = Batches {
        lru_add: 1,
        pcp: 1,
        lru_free: 1,
    };

    /// The batches of the knobs in force: `lru_add_batch`, `pcp_batch`;
    /// the free side's `release_pages()` chunk is taken as one pagevec
    /// (2.6.9's `free_pages_and_swap_cache()` hands it `chunk = 16` pages,
    /// its `PAGEVEC_SIZE`; later releases' chunking is not modelled apart).
    pub fn from_knobs(k: &ContentionKnobs) -> Batches {
        Batches {
            lru_add: k.lru_add_batch,
            pcp: k.pcp_batch,
            lru_free: k.lru_add_batch,
        }
    }

    fn pages(&self, b: usize) -> u64 {
        match b {
            batch::LRU_ADD => self.lru_add,
            batch::PCP => self.pcp,
            _ => self.lru_free,
        }
        .max(1)
    }
}

/// The per-CPU batches a stage names ([`Batches`]).
pub mod batch {
    pub const LRU_ADD: usize = 0;
    pub const PCP: usize = 1;
    pub const LRU_FREE: usize = 2;
}

/// Whether a lock or line is one for the machine or one per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    PerNode,
    /// One per address space (`mm_struct`), homed on the node of its first
    /// thread: `mmap_sem`, `page_table_lock`, `mm->rss`.
    PerMm,
}

/// The locks and lines a fault path names by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPath {
    pub stages: &'static [Stage],
    /// Stages run once a page after all of a thread's faults: will-it-scale's
    /// page_fault2 touches its whole mapping, then `munmap()`s it, so the
    /// frees come as a phase of their own, not one after each fault.
    pub teardown: &'static [Stage],
    /// Scope of each lock index.
    pub locks: &'static [Scope],
    /// Scope of each line index.
    pub lines: &'static [Scope],
    /// Pages per per-CPU batch ([`Stage::Drain`], [`Stage::Refill`]).
    pub batch: Batches,
}

/// Lock and line indices every fault path uses: its own lock (0), the LRU
/// lock (1), the LRU's lines, and the superblock counters' line.
pub mod idx {
    /// `mm->page_table_lock`, or the `/dev/zero` superblock lock.
    pub const OWN_LOCK: usize = 0;
    /// `pagemap_lru_lock` (stock 2.4), or the node's LRU lock.
    pub const LRU_LOCK: usize = 1;
    /// The inactive list head.
    pub const LRU_HEAD: usize = 0;
    /// The `struct page` that `list_add()` links the new page in front of.
    pub const LRU_PREV: usize = 1;
    /// `nr_inactive_pages`.
    pub const LRU_COUNT: usize = 2;
    /// The two counters the `/dev/zero` superblock lock guards.
    pub const SB_COUNT: usize = 3;
    /// `zone->lock` of the node's zone.
    pub const ZONE_LOCK: usize = 2;
    /// The zone's order-0 free list head (`free_area[0]`).
    pub const ZONE_FREE: usize = 4;
    /// `mm->rss`, written under `page_table_lock` when a page is installed
    /// (2.4's `do_anonymous_page()`, `do_no_page()`); not on the lock's own
    /// line: 2.4's `mm_struct` puts `mmap_sem` and `page_table_lock` in its
    /// first 128 bytes and `rss` after the ten layout words that follow.
    pub const RSS: usize = 5;
    /// `page_cache_size`, the atomic that 2.4's `add_page_to_hash_queue()`
    /// increments for every page-cache page (`/dev/zero` pages are shmem
    /// pages): one global word in stock 2.4, one per node in the Altix
    /// kernel ([ALTIX04] C8).
    pub const PC_COUNT: usize = 6;
    /// The word of the process's `page_table_lock` on the `/dev/zero`
    /// paths, where one single-threaded process faults into each `mm`: the
    /// lock is never contended, so `spin_lock()` is an atomic on a line in
    /// the faulting CPU's cache (while it stays there) and `spin_unlock()`'s
    /// store a hit; a line, not a `Lock` (lock 0 is the superblock lock).
    pub const PTL_WORD: usize = 7;
}

use idx::*;
use Stage::*;

/// `lru_cache_add()`: the LRU lock around `add_page_to_inactive_list()`.
/// `list_add()` loads `head->next` (a miss the CPU stalls on), then
/// stores `next->prev` into the page added before; `nr_inactive_pages++`
/// loads the count (a second stall) while that store's miss is in
/// flight, and `spin_unlock()`'s release waits for both stores. So the
/// hold is two transfers in turn, not three.
const LRU_ADD: [Stage; 4] = [
    Lock(LRU_LOCK),
    Write(LRU_HEAD),
    WritePair(LRU_PREV, LRU_COUNT),
    Unlock(LRU_LOCK),
];

/// 2.4.21's `rmqueue()` for the order-0 page every fault allocates
/// (`alloc_page()` → `__alloc_pages()`, mm/page_alloc.c): `zone->lock`
/// of the page's zone (a node's: each node is a `pg_data_t` on
/// discontiguous ia64) around `memlist_del()` of the free list's first
/// page. `zone_t` puts the lock, `free_pages` and the order-0 list head
/// in its first 128 bytes, so the lock's hand-off brings them; the
/// unlinked page's `struct page` was written by whoever allocated before
/// (its `prev` pointed at their page): one transfer when that was another
/// CPU. No per-CPU page lists before 2.5.45 ([`PCP_REFILL`]).
const RMQUEUE: [Stage; 3] = [Lock(ZONE_LOCK), Write(ZONE_FREE), Unlock(ZONE_LOCK)];

const fn concat<const N: usize>(parts: &[&[Stage]]) -> [Stage; N] {
    let mut out = [Work; N];
    let (mut i, mut k) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[k] = parts[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// Stock 2.4.21: `handle_mm_fault()` takes `page_table_lock` for the walk
/// ([`PtlWork`]) and `do_anonymous_page()` drops it to allocate and zero;
/// retaken, `mm->rss++` (a line every thread of the process writes), then
/// `lru_cache_add()`; `pte_none()`'s re-read and `set_pte()` hit the PTE's
/// line, which the walk brought in.
const ANON_PTL_STAGES: [Stage; 16] = concat(&[
    &[Sem, Lock(OWN_LOCK), PtlWork, Unlock(OWN_LOCK)],
    &RMQUEUE,
    &[Work, Lock(OWN_LOCK), Write(RSS)],
    &LRU_ADD,
    &[Unlock(OWN_LOCK), Sem],
]);
const ANON_CMPXCHG_STAGES: [Stage; 10] = concat(&[&[Sem], &RMQUEUE, &[Work], &LRU_ADD, &[Sem]]);

/// `mmap()` of `/dev/zero` with the superblock lock: the section that
/// updates its two counters, also taken once per fault.
pub const DEVZERO_SETUP: &[Stage] = &[Lock(OWN_LOCK), Write(SB_COUNT), Unlock(OWN_LOCK)];
/// A private `/dev/zero` write fault on 2.4 (`do_page_fault()` →
/// `handle_mm_fault()` → `do_no_page()` → `shmem_nopage()`), in the
/// process's own `mm`: `down_read(mmap_sem)`; `page_table_lock` for the
/// walk, dropped before `->nopage`; [`DEVZERO_SETUP`]'s section
/// (`shmem_getpage()`'s `stat_lock`, 2.4 only); the page allocated and
/// zeroed; `add_to_page_cache()` (`page_cache_size`) and `lru_cache_add()`;
/// `page_table_lock` again for `++mm->rss` and `set_pte()`; `up_read()`.
const DEVZERO_24_HEAD: [Stage; 3] = [Sem, Write(PTL_WORD), PtlWork];
const DEVZERO_24_TAIL: [Stage; 12] = concat(&[
    &RMQUEUE,
    &[Work, Write(PC_COUNT)],
    &LRU_ADD,
    &[Write(PTL_WORD), Write(RSS), Sem],
]);
const DEVZERO_LOCKED_STAGES: [Stage; 18] =
    concat(&[&DEVZERO_24_HEAD, DEVZERO_SETUP, &DEVZERO_24_TAIL]);
const DEVZERO_ALTIX_STAGES: [Stage; 15] = concat(&[&DEVZERO_24_HEAD, &DEVZERO_24_TAIL]);

/// `rmqueue_pcplist()` / `buffered_rmqueue()`: the per-CPU list is
/// refilled from the buddy lists under `zone->lock`, `pcp->batch` pages
/// (each unlinked from the free list) at a time.
const PCP_REFILL: [Stage; 4] = [
    Refill(batch::PCP, 3),
    Lock(ZONE_LOCK),
    PageWrite(ZONE_FREE, batch::PCP),
    Unlock(ZONE_LOCK),
];
/// `lru_cache_add()` into the per-CPU pagevec; the full pagevec is added
/// under the LRU lock (`__pagevec_lru_add()`), a list add per page.
const LRU_ADD_BATCHED: [Stage; 6] = [
    Drain(batch::LRU_ADD, 5),
    Lock(LRU_LOCK),
    PageWrite(LRU_HEAD, batch::LRU_ADD),
    PageWrite(LRU_PREV, batch::LRU_ADD),
    PageWrite(LRU_COUNT, batch::LRU_ADD),
    Unlock(LRU_LOCK),
];
/// The page's share of `munmap()`: `release_pages()` takes a chunk of the
/// gathered pages off the LRU under one hold of the LRU lock (a list
/// delete per page), and `free_hot_cold_page()` puts the page on the
/// per-CPU list, which gives `pcp->batch` pages back to the buddy lists
/// under `zone->lock` when it is full (`free_pages_bulk()`).
const UNMAP_BATCHED: [Stage; 10] = [
    UnmapWork,
    Drain(batch::LRU_FREE, 4),
    Lock(LRU_LOCK),
    PageWrite(LRU_HEAD, batch::LRU_FREE),
    PageWrite(LRU_COUNT, batch::LRU_FREE),
    Unlock(LRU_LOCK),
    Drain(batch::PCP, 3),
    Lock(ZONE_LOCK),
    PageWrite(ZONE_FREE, batch::PCP),
    Unlock(ZONE_LOCK),
];
const ANON_BATCHED_STAGES: [Stage; 13] =
    concat(&[&[Sem], &PCP_REFILL, &[Work], &LRU_ADD_BATCHED, &[Sem]]);
const DEVZERO_BATCHED_STAGES: [Stage; 14] =
    concat(&[DEVZERO_SETUP, &PCP_REFILL, &[Work], &LRU_ADD_BATCHED]);

/// Stock 2.4.21 anonymous write fault with `lru` LRU lists.
pub fn anon_ptl(lru: Scope) -> FaultPath {
    FaultPath {
        stages: &ANON_PTL_STAGES,
        teardown: &[],
        locks: lock_scopes(lru),
        lines: line_scopes(lru),
        batch: Batches::NONE,
    }
}

/// The Altix anonymous fault: no `page_table_lock`, PTE by `cmpxchg`.
pub fn anon_cmpxchg(lru: Scope) -> FaultPath {
    FaultPath {
        stages: &ANON_CMPXCHG_STAGES,
        teardown: &[],
        locks: lock_scopes(lru),
        lines: line_scopes(lru),
        batch: Batches::NONE,
    }
}

/// The batched paths' locks (own, the node's LRU lock, its `zone->lock`)
/// and lines (the LRU's three, the superblock counters, the zone's free
/// list), by [`idx`].
const BATCHED_LOCKS: [Scope; 3] = [Scope::Global, Scope::PerNode, Scope::PerNode];
const BATCHED_LINES: [Scope; 5] = [
    Scope::PerNode,
    Scope::PerNode,
    Scope::PerNode,
    Scope::Global,
    Scope::PerNode,
];

/// An anonymous write fault of the per-VMA-lock kernels (Linux 6.4 on;
/// mm/memory.c `lock_vma_under_rcu()` from `do_user_addr_fault()`, then
/// `do_anonymous_page()`): the VMA's reader count taken and dropped
/// (`vma_start_read()`, `vma_end_read()`: an atomic each on a line every
/// thread faulting in that VMA writes, [`Stage::Sem`] here, since the
/// probe's threads share one mapping); the page from the per-CPU lists,
/// refilled under `zone->lock` (`rmqueue_pcplist()`); zeroed; installed
/// under the split PTE lock of its own page-table page (no line another
/// thread writes: not a stage); added to the LRU through the per-CPU
/// folio batch, drained under the lruvec lock (`folio_add_lru()`,
/// mm/swap.c). `mm->rss_stat` is a per-CPU counter (6.2 on) and is not a
/// shared line either. `batch` gives the batches' sizes.
pub fn anon_batched(batch: Batches) -> FaultPath {
    FaultPath {
        stages: &ANON_BATCHED_STAGES,
        teardown: &[],
        locks: &BATCHED_LOCKS,
        lines: &BATCHED_LINES,
        batch,
    }
}

/// A private `/dev/zero` fault, with the superblock lock (2.4, 2.6) or
/// without it (Altix), and `lru` LRU lists.
pub fn devzero_fault(locked: bool, lru: Scope) -> FaultPath {
    FaultPath {
        stages: if locked {
            &DEVZERO_LOCKED_STAGES
        } else {
            &DEVZERO_ALTIX_STAGES
        },
        teardown: &[],
        locks: lock_scopes(lru),
        lines: line_scopes(lru),
        batch: Batches::NONE,
    }
}

/// A private `/dev/zero` fault of 2.6 and later: with the superblock lock
/// or without it, per-node LRU lists and zones, the per-CPU batches
/// `batch`; with `unmap`, the `munmap()` of the whole mapping after its
/// last fault, each page's share of it in turn (will-it-scale's page_fault2
/// touches its 128 MB, then unmaps it, in its timed loop).
pub fn devzero_batched(locked: bool, unmap: bool, batch: Batches) -> FaultPath {
    let all: &'static [Stage] = &DEVZERO_BATCHED_STAGES;
    FaultPath {
        stages: if locked {
            all
        } else {
            &all[DEVZERO_SETUP.len()..]
        },
        teardown: if unmap { &UNMAP_BATCHED } else { &[] },
        locks: &BATCHED_LOCKS,
        lines: &BATCHED_LINES,
        batch,
    }
}

/// The path's own lock is global (the superblock lock, or the one
/// process's `page_table_lock`); the LRU lock has `lru`'s scope;
/// `zone->lock` is the node's.
fn lock_scopes(lru: Scope) -> &'static [Scope] {
    match lru {
        Scope::PerNode => &[Scope::Global, Scope::PerNode, Scope::PerNode],
        _ => &[Scope::Global, Scope::Global, Scope::PerNode],
    }
}

/// The LRU's lines have `lru`'s scope, and so has `page_cache_size`: a
/// kernel with per-node LRU lists here is the Altix kernel, which counts
/// page-cache pages per node too ([ALTIX04] B2, C8); the superblock
/// counters are global, `mm->rss` and `page_table_lock`'s word each
/// address space's; the zone's free list is the node's.
fn line_scopes(lru: Scope) -> &'static [Scope] {
    use Scope::*;
    match lru {
        PerNode => &[
            PerNode, PerNode, PerNode, Global, PerNode, PerMm, PerNode, PerMm,
        ],
        _ => &[
            Global, Global, Global, Global, PerNode, PerMm, Global, PerMm,
        ],
    }
}

/// One faulting thread.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultThread {
    pub cpu: u64,
    pub node: usize,
    pub faults: u64,
    /// CPU time of one fault outside locks and shared lines, ns.
    pub work_ns: u64,
    /// Stages run once before the first fault (e.g. `mmap()` taking the
    /// superblock lock).
    pub setup: &'static [Stage],
    /// The address space it faults into (threads of one process share it,
    /// processes each have their own): picks its [`Scope::PerMm`] locks
    /// and lines.
    pub mm: usize,
}

impl FaultThread {
    /// The threads on `cpus` faulting in the pages `placed` (one placement
    /// per CPU, in `unit`-byte pages): each fault costs the machine's fault
    /// path plus zeroing its page where it landed, under the zeroing load
    /// of every thread on the same memory.
    pub fn on_placements(
        machine: &Machine,
        cpus: &[u64],
        placed: &[Placement],
        unit: u64,
        setup: &'static [Stage],
    ) -> Vec<FaultThread> {
        let nodes: Vec<usize> = cpus
            .iter()
            .map(|&cpu| machine.cpu_node(cpu).unwrap_or(0))
            .collect();
        let zero = zeroing_ns(machine, &nodes, placed, unit);
        cpus.iter()
            .zip(placed)
            .zip(nodes.iter().zip(zero))
            .map(|((&cpu, p), (&node, z))| FaultThread {
                cpu,
                node,
                faults: p.pages(),
                work_ns: (machine.fault.fault_ns + z).round() as u64,
                setup,
                mm: 0,
            })
            .collect()
    }
}

/// The result of [`simulate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultRun {
    /// When the last thread finishes, s.
    pub time_s: f64,
    /// Share of the threads' time spent acquiring `mmap_sem` and spinlocks.
    pub lock_wait_fraction: f64,
    /// Longest single lock hold, s.
    pub max_hold_s: f64,
    /// Faults run as events (the rest extrapolated).
    pub simulated_faults: u64,
    /// Acquisitions of each lock index of the path (all instances) while
    /// faults ran as events.
    pub acquisitions: [u64; 3],
    /// Writes to each line index of the path (all instances), likewise.
    pub line_writes: [u64; 8],
}

/// Index of the instance of a resource of `scope` used from `node` by a
/// thread of address space `mm`.
fn instance(base: &[usize], scope: &[Scope], i: usize, node: usize, mm: usize) -> usize {
    base[i]
        + match scope[i] {
            Scope::Global => 0,
            Scope::PerNode => node,
            Scope::PerMm => mm,
        }
}

/// Where one thread is in its program. One record a thread, with the
/// stages it is running kept beside the index into them: a stage event
/// reads and moves one place instead of five arrays and the phase test.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// The stages being run: the setup's (while `in_setup`), the fault's
    /// or the teardown's.
    stages: &'static [Stage],
    /// Index into `stages`.
    stage: usize,
    /// The page the current unit is on (within its phase).
    page: u64,
    /// Units done: the faults, then (with a teardown) the same pages' unmaps.
    fault: u64,
    /// The thread's faults, and its units (twice that with a teardown).
    faults: u64,
    units: u64,
    in_setup: bool,
    finish: Option<Time>,
}

impl Cursor {
    /// The stages of unit `fault` and the page it is on.
    fn phase(fault: u64, faults: u64, path: &FaultPath) -> (&'static [Stage], u64) {
        if fault < faults {
            (path.stages, fault)
        } else {
            (path.teardown, fault - faults)
        }
    }

    /// Step over the batch markers at the current stage: into the section
    /// on the page that drains or refills, past it on every other.
    fn settle(&mut self, path: &FaultPath) {
        while let Some(&st) = self.stages.get(self.stage) {
            let (len, runs) = match st {
                Drain(b, len) => {
                    let k = path.batch.pages(b);
                    (len, self.page % k == k - 1)
                }
                Refill(b, len) => (len, self.page.is_multiple_of(path.batch.pages(b))),
                _ => return,
            };
            self.stage += if runs { 1 } else { len + 1 };
        }
    }
}

/// Where every thread is in its program.
struct Progress {
    sample: u64,
    th: Vec<Cursor>,
    /// Threads that have done their sample.
    reached: usize,
    /// Faults run as events.
    simulated: u64,
}

impl Progress {
    fn new(threads: &[FaultThread], sample: u64, path: &FaultPath) -> Self {
        let tears = !path.teardown.is_empty();
        let th = threads
            .iter()
            .map(|t| {
                let in_setup = !t.setup.is_empty();
                let mut c = Cursor {
                    stages: if in_setup { t.setup } else { path.stages },
                    stage: 0,
                    page: 0,
                    fault: 0,
                    faults: t.faults,
                    units: t.faults * if tears { 2 } else { 1 },
                    in_setup,
                    finish: None,
                };
                // A path may open with a batch section (a pcp refill).
                if !in_setup && t.faults > 0 {
                    c.settle(path);
                }
                c
            })
            .collect();
        Progress {
            sample,
            th,
            reached: 0,
            simulated: 0,
        }
    }

    /// Thread `i`'s units: its faults, and as many unmaps with a teardown.
    fn units(&self, i: usize) -> u64 {
        self.th[i].units
    }

    fn current(&self, i: usize) -> Stage {
        let c = &self.th[i];
        c.stages[c.stage]
    }

    /// Move thread `i` past its current stage at `now`; false when it has
    /// done all its faults.
    fn advance(&mut self, i: usize, now: Time, path: &FaultPath) -> bool {
        let c = &mut self.th[i];
        c.stage += 1;
        loop {
            if !c.in_setup {
                c.settle(path);
            }
            if c.stage < c.stages.len() {
                return true;
            }
            c.stage = 0;
            if c.in_setup {
                c.in_setup = false;
            } else {
                c.fault += 1;
                self.simulated += 1;
                if c.fault == self.sample.min(c.units) {
                    self.reached += 1;
                }
            }
            if c.fault >= c.units {
                c.finish = Some(now);
                return false;
            }
            (c.stages, c.page) = Cursor::phase(c.fault, c.faults, path);
        }
    }
}

/// The page-table walk `handle_mm_fault()` does under `page_table_lock`
/// before it drops the lock for the page ([`Stage::PtlWork`]), from the
/// machine's caches: 2.4's three levels, each a load that depends on the
/// one before (`pgd_offset()`, `pmd_alloc()`, `pte_alloc()`, then
/// `handle_pte_fault()` reads the PTE). The pgd and pmd entries are read by
/// every fault and stay in the last-level cache (zeroing a page sweeps the
/// smaller ones); a thread touching its pages in order finds a new PTE line
/// every `cache_line / 8` faults, a miss to the page-table page its node
/// allocated (`dram.latency_ns`), and the same line cached otherwise.
/// Altix: 2 × 14 cycles at 1.3 GHz + (150 + 15 × 10.8) / 16 ≈ 41 ns.
pub fn walk_ns(machine: &Machine) -> f64 {
    let cpu = &machine.cpu;
    let llc = cpu.caches.last().map_or(0.0, |c| c.latency_cycles) * 1e3 / cpu.clock_mhz.max(1.0);
    let ptes = (f64::from(cpu.cache_line) / 8.0).max(1.0);
    2.0 * llc + (machine.memory.latency_ns + (ptes - 1.0) * llc) / ptes
}

/// Run `threads` through `path` with spinlocks of `kind`.
pub fn simulate(
    machine: &Machine,
    threads: &[FaultThread],
    path: &FaultPath,
    kind: Spinlock,
    sample: u64,
    seed: u64,
) -> FaultRun {
    let cost: CostTable = machine.line_cost_table();
    let nodes = machine.node_count();
    // Each address space lives on the node of its first thread.
    let mut mm_home: Vec<usize> = Vec::new();
    for t in threads {
        if t.mm >= mm_home.len() {
            mm_home.resize(t.mm + 1, usize::MAX);
        }
        if mm_home[t.mm] == usize::MAX {
            mm_home[t.mm] = t.node;
        }
    }
    let mm_home: Vec<usize> = mm_home
        .into_iter()
        .map(|h| if h == usize::MAX { 0 } else { h })
        .collect();
    let mms = mm_home.len().max(1);
    let count = |s: &Scope| match s {
        Scope::Global => 1,
        Scope::PerNode => nodes,
        Scope::PerMm => mms,
    };
    let prefix = |scopes: &[Scope]| -> Vec<usize> {
        scopes
            .iter()
            .scan(0, |acc, s| {
                let b = *acc;
                *acc += count(s);
                Some(b)
            })
            .collect()
    };
    let lock_base = prefix(path.locks);
    let line_base = prefix(path.lines);
    // Each address space's `mmap_sem`: threads of one process share its
    // count line, processes each have their own.
    let mut sems: Vec<RwSem> = (0..mms)
        .map(|m| RwSem::new(line(machine, &cost, mm_home.get(m).copied().unwrap_or(0))))
        .collect();
    // A per-node lock or line lives on its node; a global one on node 0
    // (boot-time or static data); an address space's on its home.
    let homes = |scopes: &[Scope]| -> Vec<usize> {
        scopes
            .iter()
            .flat_map(|s| match s {
                Scope::Global => vec![0],
                Scope::PerNode => (0..nodes).collect(),
                Scope::PerMm => (0..mms)
                    .map(|m| mm_home.get(m).copied().unwrap_or(0))
                    .collect(),
            })
            .collect()
    };
    let mut lk: Vec<Lock<&CostTable>> = homes(path.locks)
        .into_iter()
        .enumerate()
        .map(|(i, home)| {
            spinlock(
                machine,
                &cost,
                kind,
                home,
                seed.wrapping_add(i as u64),
                "fault-lock",
            )
        })
        .collect();
    let mut lines: Vec<Line> = homes(path.lines)
        .into_iter()
        .map(|home| line(machine, &cost, home))
        .collect();
    let hold_ns = (walk_ns(machine) + machine.fault.ptl_hold_ns).round() as u64;
    let unmap_ns = machine.fault.unmap_ns.round() as u64;
    let n = threads.len();
    // With a teardown the window is the whole run: its faults and its
    // unmaps are phases, and a window of faults alone would see only one.
    let sample = if path.teardown.is_empty() {
        sample.max(1)
    } else {
        u64::MAX
    };
    let mut p = Progress::new(threads, sample, path);
    let mut wait = Dur(0);
    let mut asked = vec![Time::ZERO; n];
    let mut waiting = vec![false; n];
    let mut q = EventQueue::with_capacity(2 * n);
    for (i, t) in threads.iter().enumerate() {
        if t.faults == 0 && t.setup.is_empty() {
            p.th[i].finish = Some(Time::ZERO);
            p.reached += 1;
        } else {
            q.push(Time::ZERO, i).expect("empty queue");
        }
    }
    let mut t_end = Time::ZERO;
    // The window ends when every thread has done its sample or, if a lock
    // starves some, when the threads together have done as many faults.
    let budget: u64 = (0..n).map(|i| sample.min(p.units(i))).sum();
    // The handled event stays on top until its thread's next replaces it
    // (one heap sift a stage, not two: the heap is every thread's).
    while let Some((now, i)) = q.peek_pending() {
        t_end = now;
        if p.reached == n || p.simulated >= budget {
            break;
        }
        let node = threads[i].node;
        let mm = threads[i].mm;
        // When this stage is over (None: the thread waits for a lock and
        // the release moves it on).
        let done = match p.current(i) {
            Sem => {
                let d = sems[mm.min(mms - 1)].down_read(now, i, node);
                wait += d - now;
                Some(d)
            }
            PtlWork => Some(now + Dur(hold_ns)),
            UnmapWork => Some(now + Dur(unmap_ns)),
            Work => Some(now + Dur(threads[i].work_ns)),
            Write(l) => {
                Some(lines[instance(&line_base, path.lines, l, node, mm)].write(now, i, node))
            }
            WritePair(a, b) => {
                let x = lines[instance(&line_base, path.lines, a, node, mm)].write(now, i, node);
                let y = lines[instance(&line_base, path.lines, b, node, mm)].write(now, i, node);
                Some(x.max(y))
            }
            PageWrite(l, b) => {
                // One write a page, each after the last: the first moves
                // the line here, the rest hit it.
                let line = &mut lines[instance(&line_base, path.lines, l, node, mm)];
                Some(line.write_times(now, i, node, path.batch.pages(b)))
            }
            // `settle` steps over the markers before a thread reaches them.
            Drain(..) | Refill(..) => Some(now),
            Lock(l) => {
                asked[i] = now;
                waiting[i] = true;
                let at = lk[instance(&lock_base, path.locks, l, node, mm)].acquire(now, i, node);
                if let Some(at) = at {
                    waiting[i] = false;
                    wait += at - now;
                }
                at
            }
            Unlock(l) => {
                let li = instance(&lock_base, path.locks, l, node, mm);
                if let Some(g) = lk[li].release(now, i) {
                    waiting[g.cpu] = false;
                    wait += g.at - asked[g.cpu];
                    if p.advance(g.cpu, g.at, path) {
                        q.push(g.at, g.cpu).expect("future");
                    }
                }
                Some(now)
            }
        };
        match done {
            Some(d) if p.advance(i, d, path) => q.replace_top(d, i).expect("future"),
            _ => q.discard_top(),
        }
    }
    // Waits still in progress when the window closed count too (a starved
    // thread's wait would otherwise vanish from the share).
    for i in 0..n {
        if waiting[i] && t_end > asked[i] {
            wait += t_end - asked[i];
        }
    }
    // Finish the run at the rates of the window: each thread that did its
    // sample at its own rate, and all of them together at the aggregate
    // rate (which also covers threads a lock starved in the window).
    let mut total = 0.0f64;
    let mut active = 0.0f64;
    let (mut all_faults, mut done_faults) = (0u64, 0u64);
    for i in 0..n {
        let units = p.units(i);
        all_faults += units;
        done_faults += p.th[i].fault;
        let end = match p.th[i].finish {
            Some(f) => {
                active += f.as_secs_f64();
                f.as_secs_f64()
            }
            None => {
                active += t_end.as_secs_f64();
                if p.th[i].fault >= sample.min(units) {
                    t_end.as_secs_f64() * units as f64 / p.th[i].fault as f64
                } else {
                    0.0
                }
            }
        };
        total = total.max(end);
    }
    if done_faults < all_faults && done_faults > 0 {
        total = total.max(t_end.as_secs_f64() * all_faults as f64 / done_faults as f64);
    }
    let max_hold = lk
        .iter()
        .map(|l| l.stats().max_hold)
        .max()
        .unwrap_or_default();
    FaultRun {
        time_s: total,
        lock_wait_fraction: if active > 0.0 {
            (wait.as_secs_f64() / active).min(1.0)
        } else {
            0.0
        },
        max_hold_s: max_hold.as_secs_f64(),
        // Faults, not units: a page's unmap is part of its fault's cost.
        simulated_faults: threads
            .iter()
            .zip(&p.th)
            .map(|(t, c)| c.fault.min(t.faults))
            .sum(),
        acquisitions: per_index(&lock_base, path.locks.len(), lk.len(), |j| {
            lk[j].stats().acquisitions
        }),
        line_writes: per_index(&line_base, path.lines.len(), lines.len(), |j| {
            lines[j].stats().writes
        }),
    }
}

/// Sums of `stat` over the instances of each resource index (`base` is the
/// first instance of each; `total` instances in all).
fn per_index<const N: usize>(
    base: &[usize],
    kinds: usize,
    total: usize,
    stat: impl Fn(usize) -> u64,
) -> [u64; N] {
    let mut out = [0u64; N];
    for (k, slot) in out.iter_mut().enumerate().take(kinds) {
        let end = base.get(k + 1).copied().unwrap_or(total);
        *slot = (base[k]..end).map(&stat).sum();
    }
    out
}

/// Where `threads` first-touching `bytes_per_thread` each land, allocated
/// concurrently (every thread in turn takes `1/rounds` of its pages, as in
/// the `touch` workload) in `booted`; `chunk` bytes per allocation unit.
/// Returns each thread's placement in units of `chunk`, or None if memory
/// runs out.
pub fn first_touch(
    booted: &mut Booted,
    machine: &Machine,
    cpus: &[u64],
    bytes_per_thread: u64,
    chunk: u64,
    rounds: u64,
) -> Option<Vec<Placement>> {
    let per_chunk = (chunk / booted.mm.page_size()).max(1);
    let chunks = bytes_per_thread.div_ceil(chunk);
    let rounds = rounds.clamp(1, chunks.max(1));
    let mut placed = vec![Placement::default(); cpus.len()];
    for round in 0..rounds {
        let share = chunks / rounds + u64::from(round < chunks % rounds);
        for (t, &cpu) in cpus.iter().enumerate() {
            let node = machine.cpu_node(cpu).unwrap_or(0);
            let who = Allocator {
                task: 1 + t as u32,
                cpu,
                node,
            };
            for _ in 0..if per_chunk > 1 { share } else { 1 } {
                let pages = if per_chunk > 1 { per_chunk } else { share };
                if pages == 0 {
                    continue;
                }
                let p = alloc_pages(
                    &mut booted.mm,
                    &mut booted.cursors,
                    &MemPolicy::Local,
                    who,
                    pages,
                    Gfp::Normal,
                    Use::Anon,
                )
                .ok()?;
                placed[t].merge(&p);
            }
        }
    }
    // Back to units of `chunk`.
    for p in &mut placed {
        for part in &mut p.parts {
            part.1 /= per_chunk;
        }
    }
    Some(placed)
}

/// Mean ns to zero one `unit`-byte page of `p` from a CPU on `node`, when
/// `load[m]` threads on average zero into node `m` at once (they split its
/// memory bandwidth).
pub fn mean_zero_ns(machine: &Machine, node: usize, p: &Placement, unit: u64, load: &[f64]) -> f64 {
    let pages = p.pages().max(1) as f64;
    p.parts
        .iter()
        .map(|&(m, k)| {
            let m = m as usize;
            let cpu_rate = machine.fault.zero_gbps / machine.distances.ratio(node, m);
            let mem_rate =
                machine.memory.bandwidth_gbps / (load[m].max(1.0) * zero_traffic(machine));
            k as f64 * unit as f64 / cpu_rate.min(mem_rate)
        })
        .sum::<f64>()
        / pages
}

/// Bytes of memory traffic per byte a CPU zeroes. ia64's `clear_page()`
/// (arch/ia64/lib/clear_page.S) zeroes with `stf.spill` stores into
/// write-back, write-allocate caches, so every line is read from memory
/// for ownership before it is written back: two bytes moved for each byte
/// zeroed. Other architectures keep one byte for each, as before (not
/// derived here: x86's fast string stores may write whole lines without
/// reading them; EV6 has a write hint, `wh64`).
pub fn zero_traffic(machine: &Machine) -> f64 {
    match machine.arch {
        crate::machine::Arch::Ia64 => 2.0,
        _ => 1.0,
    }
}

/// Rounds of the zeroing-load fixed point in [`zeroing_ns`]; it converges
/// from above (fewer zeroing threads, faster zeroing, a smaller share of
/// each fault spent zeroing), and a few rounds settle it to well under a
/// nanosecond per fault.
const ZEROING_ROUNDS: usize = 16;

/// Mean ns each thread spends zeroing one page, when the threads zeroing
/// into a node at once split its memory bandwidth. A thread zeroes only
/// for the zeroing share of each fault (the rest of `fault_ns` touches no
/// page), so a node's load is each thread's share of its pages there times
/// that duty: with 2004's 16 KiB pages at 2 GB/s zeroing takes most of a
/// fault and the load is nearly the thread count; with today's 4 KiB pages
/// at 13.7 GB/s (0.3 of a 3 µs fault) it is a tenth of it. Solved by
/// iterating from every thread always zeroing ([`sharers`]) down to the
/// largest fixed point. A fault's lock waits are not in the duty (they are
/// simulated later, from this work), so where locks bind the load is an
/// upper bound.
pub fn zeroing_ns(machine: &Machine, nodes: &[usize], placed: &[Placement], unit: u64) -> Vec<f64> {
    let mut load = sharers(machine, placed);
    let mut zero = Vec::new();
    for _ in 0..ZEROING_ROUNDS {
        zero = nodes
            .iter()
            .zip(placed)
            .map(|(&node, p)| mean_zero_ns(machine, node, p, unit, &load))
            .collect();
        let mut next = vec![0.0f64; machine.node_count()];
        for (p, &z) in placed.iter().zip(&zero) {
            let duty = z / (machine.fault.fault_ns + z).max(f64::MIN_POSITIVE);
            let total = p.pages().max(1) as f64;
            for &(m, k) in &p.parts {
                next[m as usize] += duty * k as f64 / total;
            }
        }
        // A load below one thread does not change a node's rate.
        let settled = next
            .iter()
            .zip(&load)
            .all(|(a, b)| (a.max(1.0) - b.max(1.0)).abs() < 1e-9);
        load = next;
        if settled {
            break;
        }
    }
    zero
}

/// How many threads zero into each node at once if every thread were
/// always zeroing: each spends the share of its pages that lie on a node
/// zeroing into it (the start of [`zeroing_ns`]'s fixed point).
pub fn sharers(machine: &Machine, placed: &[Placement]) -> Vec<f64> {
    let mut s = vec![0.0f64; machine.node_count()];
    for p in placed {
        let total = p.pages().max(1) as f64;
        for &(m, k) in &p.parts {
            s[m as usize] += k as f64 / total;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stream;
    use rand::RngExt;

    /// The stage walk as it was before [`Cursor`] (one array per field, the
    /// phase found again at every step), kept to check the new one.
    struct Reference<'a> {
        threads: &'a [FaultThread],
        sample: u64,
        /// Index into the setup stages (while `in_setup`), the fault's or the
        /// teardown's.
        stage: Vec<usize>,
        in_setup: Vec<bool>,
        /// Units done: the faults, then (with a teardown) the same pages' unmaps.
        fault: Vec<u64>,
        /// Whether the path has a teardown phase (units are twice the faults).
        tears: bool,
        finish: Vec<Option<Time>>,
        /// Threads that have done their sample.
        reached: usize,
        /// Faults run as events.
        simulated: u64,
    }

    impl<'a> Reference<'a> {
        fn new(threads: &'a [FaultThread], sample: u64, path: &FaultPath) -> Self {
            let n = threads.len();
            let mut p = Reference {
                threads,
                sample,
                stage: vec![0; n],
                in_setup: threads.iter().map(|t| !t.setup.is_empty()).collect(),
                fault: vec![0; n],
                tears: !path.teardown.is_empty(),
                finish: vec![None; n],
                reached: 0,
                simulated: 0,
            };
            // A path may open with a batch section (a pcp refill).
            for i in 0..n {
                if !p.in_setup[i] && threads[i].faults > 0 {
                    p.settle(i, path);
                }
            }
            p
        }

        /// Thread `i`'s units: its faults, and as many unmaps with a teardown.
        fn units(&self, i: usize) -> u64 {
            self.threads[i].faults * if self.tears { 2 } else { 1 }
        }

        /// The stages of thread `i`'s current unit and the page it is on.
        fn phase(&self, i: usize, path: &FaultPath) -> (&'static [Stage], u64) {
            let f = self.threads[i].faults;
            if self.fault[i] < f {
                (path.stages, self.fault[i])
            } else {
                (path.teardown, self.fault[i] - f)
            }
        }

        /// Step over the batch markers at thread `i`'s stage: into the section
        /// on the page that drains or refills, past it on every other.
        fn settle(&mut self, i: usize, path: &FaultPath) {
            let (stages, page) = self.phase(i, path);
            while let Some(&st) = stages.get(self.stage[i]) {
                let (len, runs) = match st {
                    Drain(b, len) => {
                        let k = path.batch.pages(b);
                        (len, page % k == k - 1)
                    }
                    Refill(b, len) => (len, page.is_multiple_of(path.batch.pages(b))),
                    _ => return,
                };
                self.stage[i] += if runs { 1 } else { len + 1 };
            }
        }

        fn current(&self, i: usize, path: &FaultPath) -> Stage {
            if self.in_setup[i] {
                self.threads[i].setup[self.stage[i]]
            } else {
                self.phase(i, path).0[self.stage[i]]
            }
        }

        /// Move thread `i` past its current stage at `now`; false when it has
        /// done all its faults.
        fn advance(&mut self, i: usize, now: Time, path: &FaultPath) -> bool {
            self.stage[i] += 1;
            loop {
                if !self.in_setup[i] {
                    self.settle(i, path);
                }
                let len = if self.in_setup[i] {
                    self.threads[i].setup.len()
                } else {
                    self.phase(i, path).0.len()
                };
                if self.stage[i] < len {
                    return true;
                }
                self.stage[i] = 0;
                if self.in_setup[i] {
                    self.in_setup[i] = false;
                } else {
                    self.fault[i] += 1;
                    self.simulated += 1;
                    if self.fault[i] == self.sample.min(self.units(i)) {
                        self.reached += 1;
                    }
                }
                if self.fault[i] >= self.units(i) {
                    self.finish[i] = Some(now);
                    return false;
                }
            }
        }
    }

    /// Random threads (with and without a setup, some with no faults) on
    /// every path shape (batch markers, a teardown, a setup), advanced in
    /// random order: the per-thread cursors give the stage sequence, the
    /// finish times and the counts the arrays gave.
    #[test]
    fn cursors_walk_the_stages_as_the_arrays_did() {
        let batches = Batches {
            lru_add: 15,
            pcp: 7,
            lru_free: 4,
        };
        let paths = [
            anon_ptl(Scope::Global),
            anon_cmpxchg(Scope::PerNode),
            anon_batched(batches),
            anon_batched(Batches::NONE),
            devzero_fault(true, Scope::Global),
            devzero_fault(false, Scope::PerNode),
            devzero_batched(true, true, batches),
            devzero_batched(false, true, batches),
            devzero_batched(true, false, Batches::NONE),
        ];
        let mut rng = stream(7, "progress-test", 0);
        for round in 0..300 {
            let path = &paths[round % paths.len()];
            let n = rng.random_range(1..6usize);
            let threads: Vec<FaultThread> = (0..n)
                .map(|i| FaultThread {
                    cpu: i as u64,
                    node: i % 2,
                    faults: rng.random_range(0..40u64),
                    work_ns: 1,
                    setup: if rng.random_bool(0.5) {
                        DEVZERO_SETUP
                    } else {
                        &[]
                    },
                    mm: 0,
                })
                .collect();
            let sample = rng.random_range(1..50u64);
            let mut new = Progress::new(&threads, sample, path);
            let mut old = Reference::new(&threads, sample, path);
            let mut live: Vec<usize> = (0..n)
                .filter(|&i| threads[i].faults > 0 || !threads[i].setup.is_empty())
                .collect();
            let mut now = Time::ZERO;
            while !live.is_empty() {
                let k = rng.random_range(0..live.len());
                let i = live[k];
                assert_eq!(new.current(i), old.current(i, path));
                now += Dur(rng.random_range(0..3u64));
                let (a, b) = (new.advance(i, now, path), old.advance(i, now, path));
                assert_eq!(a, b);
                if !a {
                    live.swap_remove(k);
                }
                assert_eq!((new.reached, new.simulated), (old.reached, old.simulated));
                assert_eq!(new.th[i].fault, old.fault[i]);
                assert_eq!(new.th[i].finish, old.finish[i]);
                assert_eq!(new.units(i), old.units(i));
            }
        }
    }
}
