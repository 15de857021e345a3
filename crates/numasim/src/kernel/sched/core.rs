//! Run queues, `schedule()` and wake-ups ([ALTIX04] E1, [WILDFIRE01] E4).
//!
//! Three run-queue structures, each behind spinlocks that are engine
//! [`Lock`](crate::engine::Lock)s on the machine's line costs:
//!
//! - **2.4 global** (`Runqueue::Global`, wildfire `Sched::Smp`): one queue
//!   under `runqueue_lock`. `schedule()` walks every runnable task in the
//!   queue computing `goodness()` while it holds the lock, so the hold grows
//!   with the queue; the pick prefers a task that last ran on this CPU
//!   (`PROC_CHANGE_PENALTY` dominates the other terms), else the one queued
//!   longest. A wake-up adds the task and calls `reschedule_idle()`, which
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
            .caches
            .iter()
            .max_by_key(|c| c.level)
            .map_or(10.0, |c| c.latency_cycles);
        SchedCosts {
            goodness_ns: (GOODNESS_LINES * llc + GOODNESS_CYCLES) * cycle,
            path_ns: PATH_CYCLES * cycle,
            cpu_scan_ns: (llc + PER_CPU_SCAN_CYCLES) * cycle,
        }
    }
}
