//! HUGETLB population ([ALTIX04] C12).
//!
//! The huge-page pool is reserved at boot from every node's free memory
//! (as much as fits, above `pages_min`). A page is taken from the pool the
//! way `dequeue_huge_page()` does: the allocating CPU's node first, then
//! the nodes of its zonelist, nearest first.
//!
//! - `prefault` (stock 2.4.21 `hugetlb_prefault()`): at `mmap()` the calling
//!   thread takes and zeroes every huge page of the mapping, one after the
//!   other, holding `mmap_sem` (for writing) and `page_table_lock`
//!   throughout; anything that needs them (`ps`, `w`) waits that long.
//! - `fault` (SGI's patch): each huge page is taken and zeroed in the fault
//!   handler of the CPU that first touches it, under `mmap_sem` for reading;
//!   `hugetlb_lock` is held to dequeue the page and `page_table_lock` to
//!   install it, neither while zeroing. Zeroing then proceeds in parallel.
//!
//! Zeroing runs at the CPU's zeroing rate divided by the distance ratio to
//! the page's node, and CPUs zeroing into the same node split its memory
//! bandwidth.

use super::memory::{self, FaultPath, FaultThread, Scope, Stage};
use super::page_alloc::{PlacementSum, ZoneWalk};
use super::Placement;
use crate::kernel::boot::Booted;
use crate::kernel::locking::contention::{ContentionKnobs, Hugetlb};
use crate::machine::Machine;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HugetlbResult {
    /// Until every huge page of the mapping is zeroed, s.
    pub zero_time_s: f64,
    /// Longest continuous hold of `mmap_sem`/`page_table_lock`, s.
    pub lock_hold_s: f64,
    /// Bytes actually mapped (the request, capped by the pool).
    pub bytes: u64,
}

/// The fault path with the SGI patch: `mmap_sem` read, `hugetlb_lock` (0)
/// to dequeue, zero, `page_table_lock` (1) to install, `mmap_sem` release.
/// Dequeuing writes the free list and `free_huge_pages` (one line).
const HUGETLB_FAULT: FaultPath = FaultPath {
    teardown: &[],
    stages: &[
        Stage::Sem,
        Stage::Lock(0),
        Stage::Write(0),
        Stage::Unlock(0),
        Stage::Work,
        Stage::Lock(1),
        Stage::PtlWork,
        Stage::Unlock(1),
        Stage::Sem,
    ],
    locks: &[Scope::Global, Scope::Global],
    lines: &[Scope::Global],
    batch: memory::Batches::NONE,
};
/// `hugetlb_prefault()`: one thread zeroes every page under both locks,
/// which nobody else asks for.
const HUGETLB_PREFAULT: FaultPath = FaultPath {
    teardown: &[],
    stages: &[Stage::Work],
    locks: &[],
    lines: &[],
    batch: memory::Batches::NONE,
};

/// Huge pages that fit on each node (the boot-time pool).
pub fn pool(booted: &Booted, hpage: u64) -> Vec<u64> {
    let per = (hpage / booted.mm.page_size()).max(1);
    booted
        .mm
        .nodes()
        .iter()
        .map(|n| n.free.saturating_sub(n.watermark[0]) / per)
        .collect()
}

/// Map `bytes` of huge pages and populate them with `cpus` CPUs (0..cpus)
/// under `knobs.hugetlb`.
pub fn simulate(
    machine: &Machine,
    booted: &mut Booted,
    knobs: &ContentionKnobs,
    cpus: u64,
    bytes: u64,
    seed: u64,
) -> HugetlbResult {
    let hpage = knobs.hugepagesz;
    let mut free = pool(booted, hpage);
    let want = bytes.div_ceil(hpage).min(free.iter().sum());
    let zeroers: Vec<u64> = match knobs.hugetlb {
        Hugetlb::Prefault => vec![0],
        Hugetlb::Fault => (0..cpus.min(want.max(1))).collect(),
    };
    let k = zeroers.len() as u64;
    let mut placed = vec![PlacementSum::default(); zeroers.len()];
    let mut left: Vec<u64> = (0..k).map(|t| want / k + u64::from(t < want % k)).collect();
    // Each CPU walks its zonelist once: a pool never grows back, so a node
    // found empty stays empty and the walk resumes where it stopped (the
    // first node with a free page, as a walk from the start would find).
    let mut walks: Vec<(ZoneWalk, Option<usize>)> = zeroers
        .iter()
        .map(|&cpu| {
            let mut w = booted.mm.zonelist(machine.cpu_node(cpu).unwrap_or(0));
            let first = w.next().map(|m| m as usize);
            (w, first)
        })
        .collect();
    // Concurrent faults: every CPU takes its next page in turn.
    while left.iter().any(|&l| l > 0) {
        for t in 0..zeroers.len() {
            if left[t] == 0 {
                continue;
            }
            let (walk, at) = &mut walks[t];
            while at.is_some_and(|m| free[m] == 0) {
                *at = walk.next().map(|m| m as usize);
            }
            let from = at.expect("`want` is capped by the pool");
            free[from] -= 1;
            left[t] -= 1;
            placed[t].add(from, 1);
        }
    }
    let placed: Vec<Placement> = placed
        .into_iter()
        .map(PlacementSum::into_placement)
        .collect();
    let threads = FaultThread::on_placements(machine, &zeroers, &placed, hpage, &[]);
    let path = match knobs.hugetlb {
        Hugetlb::Prefault => &HUGETLB_PREFAULT,
        Hugetlb::Fault => &HUGETLB_FAULT,
    };
    let run = memory::simulate(machine, &threads, path, knobs.spinlock, u64::MAX, seed);
    HugetlbResult {
        zero_time_s: run.time_s,
        lock_hold_s: match knobs.hugetlb {
            // Both locks are held from the first page to the last.
            Hugetlb::Prefault => run.time_s,
            Hugetlb::Fault => run.max_hold_s,
        },
        bytes: want * hpage,
    }
}
