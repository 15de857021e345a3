//! The page-cache page count experiment ([ALTIX04] C8,
//! altix-pagecache-counter), driving the kernel's split counter
//! (`kernel/locking/percpu_counter.rs`): one global variable
//! (`page_cache_size` in 2.4) updated by every CPU on every insertion and
//! removal, or one count per node updated on the page's own node and summed
//! by readers such as `/proc/meminfo`.
//!
//! Each CPU loops: insert a page (the insertion path's own work, then the
//! counter update), remove it (work, counter update). Pages are on the
//! CPU's own node (first-touch page-cache allocation), so with per-node
//! counts only the CPUs of one node share a line.

use crate::engine::{Dur, EventQueue, Time};
use crate::kernel::locking::contention::PagecacheCount;
use crate::kernel::locking::line;
use crate::kernel::locking::percpu_counter::{Layout, SplitCounter};
use crate::machine::Machine;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PagecacheResult {
    pub insertions_per_s: f64,
    /// Share of the CPUs' time spent updating (and waiting for) the count.
    pub counter_share_of_time_pct: f64,
}

/// `cpus` CPUs each do `ops` insert/remove pairs; `work_ns` is the rest of
/// one insertion or removal.
pub fn simulate(
    machine: &Machine,
    count: PagecacheCount,
    cpus: u64,
    ops: u64,
    work_ns: u64,
) -> PagecacheResult {
    let cost = machine.line_cost_table();
    let layout = match count {
        PagecacheCount::Global => Layout::Global,
        PagecacheCount::PerNode => Layout::PerNode,
    };
    let mut counter = SplitCounter::new(machine, layout, |h| line(machine, &cost, h));
    let n = cpus as usize;
    let node: Vec<usize> = (0..cpus)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let mut done = vec![0u64; n];
    let mut on_counter = Dur(0);
    let mut end = Time::ZERO;
    let mut q = EventQueue::with_capacity(n);
    for c in 0..n {
        q.push(Time::ZERO + Dur(work_ns), c).expect("empty queue");
    }
    // Each event: CPU c has finished the work of its next step and updates
    // the count (+1 on insertion, -1 on removal). The handled event stays
    // on top of the heap and the CPU's next replaces it (one sift where
    // pop then push took two; the same sequence number, the same order).
    while let Some((now, c)) = q.peek_pending() {
        let delta = if done[c].is_multiple_of(2) { 1 } else { -1 };
        let t = counter.add(now, c, node[c], delta);
        on_counter += t - now;
        done[c] += 1;
        if done[c] < 2 * ops {
            q.replace_top(t + Dur(work_ns), c).expect("future");
        } else {
            end = end.max(t);
            q.discard_top();
        }
    }
    let busy = end.as_secs_f64() * n as f64;
    PagecacheResult {
        insertions_per_s: (ops * cpus) as f64 / end.as_secs_f64(),
        counter_share_of_time_pct: 100.0 * on_counter.as_secs_f64() / busy,
    }
}
