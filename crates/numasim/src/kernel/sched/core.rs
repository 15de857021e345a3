//! Run queues, `schedule()` and wake-ups ([ALTIX04] E1, [WILDFIRE01] E4).
//!
//! Three run-queue structures, each behind spinlocks that are engine
//! [`Lock`](crate::engine::Lock)s on the machine's line costs:
//!
//! - **2.4 global** (`Runqueue::Global`, wildfire `Sched::Smp`): one queue
//!   under `runqueue_lock`. `schedule()` walks every runnable task in the
//!   queue computing `goodness()` while it holds the lock, so the hold grows
//!   with the queue; the pick prefers a task that last ran on this CPU
//!   (`PROC_CHANGE_PENALTY` taken to dominate the other terms), else the one
//!   queued longest, or, with `rq::Counters`, weighs 2.4's `counter` against
//!   the penalty. [`WalkCost`] prices the walk (B-cache hits, or a
//!   direct-mapped B-cache's colour conflicts). A wake-up adds the task and calls `reschedule_idle()`, which
//!   looks at every CPU for an idle one (the task's last CPU first).
//! - **O(1) per-CPU** (`Runqueue::PerCpu`): one queue and lock per CPU, a
//!   constant-time pick; a wake-up locks the target CPU's queue.
//! - **wildfire per-node** (`Sched::Numa`): one queue per node, the lock
//!   still global. A wake-up goes to an idle CPU of the task's node, else an
//!   idle CPU of another node (the task migrates and its new allocations
//!   follow it, A1), else waits on its own node; `schedule()` walks only its
//!   node's queue, and a CPU about to idle takes from the longest other
//!   node's queue.
//!
//! Costs come from the machine: a `goodness()` step reads
//! [`GOODNESS_LINES`] lines that hit in the last-level cache plus
//! [`GOODNESS_CYCLES`] of arithmetic; a critical section's fixed path is
//! [`PATH_CYCLES`]; the queue head is an engine cache line that moves with
//! each holder. docs/sched.md gives the derivations.
//!
//! The queues and their locks are [`super::rq`]'s structs; the experiments
//! that drive them are `workload/sched_ops.rs` (E1) and `workload/aim7.rs`
//! (E4).

use crate::machine::Machine;

/// Lines one `goodness()` step reads: the `run_list` link and the task's
/// scheduling fields (`counter`, `nice`, `processor`, `mm`).
pub const GOODNESS_LINES: f64 = 2.0;
/// Arithmetic of one `goodness()` step and the loop around it (about 20
/// instructions of 2.4's `goodness()`).
pub const GOODNESS_CYCLES: f64 = 20.0;
/// Fixed path of a run-queue critical section (enqueue or dequeue, state
/// change, `need_resched`): a few hundred instructions.
pub const PATH_CYCLES: f64 = 300.0;
/// What `reschedule_idle()` reads per CPU: the CPU's current task (one
/// line) and a compare.
pub const PER_CPU_SCAN_CYCLES: f64 = 10.0;

/// Per-machine costs of the scheduler's code paths, ns.
#[derive(Debug, Clone, Copy)]
pub struct SchedCosts {
    /// One `goodness()` step.
    pub goodness_ns: f64,
    /// A critical section's fixed path.
    pub path_ns: f64,
    /// `reschedule_idle()`'s look at one CPU.
    pub cpu_scan_ns: f64,
}

impl SchedCosts {
    pub fn of(machine: &Machine) -> Self {
        let cycle = 1e3 / machine.cpu.clock_mhz.max(1.0);
        let llc = machine
            .cpu
            .last_level_cache()
            .map_or(10.0, |c| c.latency_cycles);
        SchedCosts {
            goodness_ns: (GOODNESS_LINES * llc + GOODNESS_CYCLES) * cycle,
            path_ns: PATH_CYCLES * cycle,
            cpu_scan_ns: (llc + PER_CPU_SCAN_CYCLES) * cycle,
        }
    }
}

/// Pages of a 2.4 `task_struct` and its kernel stack: `alloc_task_struct()`
/// is `__get_free_pages(GFP_KERNEL, 1)` (alpha, i386), so every task's
/// scheduling fields sit at the same offset of a block aligned to two pages.
pub const TASK_STRUCT_PAGES: u64 = 2;

/// What one `schedule()`'s `goodness()` walk over `len` queued tasks costs,
/// ns: [`SchedCosts::goodness_ns`] a step with the task's lines in the
/// last-level cache or, with `conflicts`, the expected misses of a
/// direct-mapped last-level cache added (the 21264/EV67 B-cache: one tag
/// per index). The task lines of a queue map to `colours` = cache size /
/// task-block size slots, so a task's lines survive from this CPU's last
/// walk only if none of the other `len - 1` tasks shares their slot:
/// probability (1 − 1/colours)^(len − 1). Each miss is one dependent load
/// (the `run_list` link; the fields line is fetched beside it) from the
/// node holding the `task_struct`, taken as spread evenly over the nodes.
/// A lower bound on the misses: the CPU's own work between walks and the
/// list's churn (links rewritten by other CPUs) evict more.
#[derive(Debug, Clone)]
pub struct WalkCost {
    step_ns: f64,
    conflicts: bool,
    /// ln(1 − 1/colours).
    ln_keep: f64,
    /// Mean miss latency seen from each node, ns.
    miss_ns: Vec<f64>,
}

impl WalkCost {
    pub fn of(machine: &Machine, costs: &SchedCosts, conflicts: bool) -> Self {
        let llc = machine.cpu.last_level_cache().map_or(0, |c| c.size);
        let colours = (llc / (TASK_STRUCT_PAGES * machine.page_size).max(1)).max(1) as f64;
        // Nodes × nodes latencies, only where a walk can miss: the default
        // (all hits) must not cost a 4,096-node machine 16 M lookups.
        let nn = machine.node_count().max(1);
        let miss_ns = if conflicts {
            (0..nn)
                .map(|a| (0..nn).map(|b| machine.mem_latency_ns(a, b)).sum::<f64>() / nn as f64)
                .collect()
        } else {
            Vec::new()
        };
        WalkCost {
            step_ns: costs.goodness_ns,
            conflicts,
            ln_keep: (-1.0 / colours).ln_1p(),
            miss_ns,
        }
    }

    /// The walk of `len` queued tasks by a CPU of `node`, ns.
    pub fn ns(&self, len: usize, node: usize) -> f64 {
        let hits = len as f64 * self.step_ns;
        if !self.conflicts || len < 2 {
            return hits;
        }
        let missed = 1.0 - (self.ln_keep * (len - 1) as f64).exp();
        hits + len as f64 * missed * self.miss_ns[node]
    }
}

/// `NICE_TO_TICKS(0)` of 2.4 `kernel/sched.c`: `TICK_SCALE(20) + 1`, the
/// time slice scaled so that it stays near 50 ms whatever HZ is (41 ticks
/// at alpha's 1024).
pub fn nice_to_ticks0(hz: u32) -> u32 {
    let x = 20u32;
    let scaled = match hz {
        0..200 => x >> 2,
        200..400 => x >> 1,
        400..800 => x,
        800..1600 => x << 1,
        _ => x << 2,
    };
    scaled + 1
}

/// `PROC_CHANGE_PENALTY` (2.4 `include/asm-*/smp.h`): 20 on alpha (and
/// sparc, mips, s390), 15 on i386, arm and parisc, taken for the rest.
pub fn proc_change_penalty(arch: crate::machine::Arch) -> u32 {
    match arch {
        crate::machine::Arch::Alpha => 20,
        _ => 15,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_stays_near_50_ms_at_every_hz() {
        assert_eq!(nice_to_ticks0(100), 6);
        assert_eq!(nice_to_ticks0(1024), 41);
        assert_eq!(nice_to_ticks0(1000), 41);
        for hz in [100u32, 250, 500, 1000, 1024, 2000] {
            let ms = f64::from(nice_to_ticks0(hz)) * 1e3 / f64::from(hz);
            assert!((20.0..=70.0).contains(&ms), "{hz}: {ms} ms");
        }
    }
}
