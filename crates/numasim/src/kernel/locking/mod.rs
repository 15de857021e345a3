//! Locking primitives as cache-line conflicts ([ALTIX04] C6, [WILDFIRE01]
//! C7), laid out like Linux `kernel/locking/`: spinlocks (test-and-set or
//! queued), the `mmap_sem` reader-writer semaphore, seqlocks, per-CPU and
//! per-node counters, and the XFS distributed per-CPU counter.
//!
//! Every primitive is built on the engine's [`CacheLine`](crate::engine::CacheLine)
//! and [`Lock`](crate::engine::Lock) with the machine's transfer costs, so a
//! lock costs what its contended line costs on that machine.

pub mod contention;
pub(crate) mod mutex;
pub(crate) mod percpu_counter;
pub(crate) mod rwsem;
pub(crate) mod seqlock;
pub(crate) mod spinlock;
pub(crate) mod xfs_counter;

use crate::engine::{CacheLine, CostTable, LineSet};
use crate::machine::Machine;

/// A cache line of the simulated machine.
pub type Line<'a> = CacheLine<&'a CostTable>;

/// A line homed on `home`, with the machine's directory occupancy.
pub fn line<'a>(machine: &Machine, cost: &'a CostTable, home: usize) -> Line<'a> {
    CacheLine::new(home, cost).with_directory(machine.coherence.directory_ns.round() as u64)
}

/// Many written-only lines (one per run queue's head) with the machine's
/// directory occupancy, as [`line`] would make each.
pub fn line_set<'a>(machine: &Machine, cost: &'a CostTable) -> LineSet<&'a CostTable> {
    LineSet::new(cost, machine.coherence.directory_ns.round() as u64)
}
