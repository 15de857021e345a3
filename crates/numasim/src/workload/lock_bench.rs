//! The lock benchmark of `wildfire-spinlock` ([WILDFIRE01] C7): every CPU
//! loops taking one `spinlock_t` (`kernel/locking/spinlock.rs`) around a
//! short critical section.

use crate::engine::{Dur, EventQueue, Time};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::spinlock;
use crate::machine::Machine;

/// Outcome of [`lock_bench`].
#[derive(Debug, Clone, PartialEq)]
pub struct LockBench {
    /// Acquisitions per simulated second, all CPUs together.
    pub acquisitions_per_s: f64,
    /// Per node: acquisitions and the longest single wait (ns).
    pub per_node: Vec<(u64, u64)>,
    /// Nodes whose CPUs got less than a tenth of their fair share.
    pub starved_nodes: u64,
}

/// A node is starved when its CPUs get less than this share of what an even
/// split of all acquisitions would give them.
pub const STARVED_SHARE: f64 = 0.1;

/// `cpus` CPUs (0..cpus) loop: take the lock, hold it `hold_ns`, release,
/// work `think_ns`, for `duration` of simulated time.
pub fn lock_bench(
    machine: &Machine,
    kind: Spinlock,
    cpus: u64,
    hold_ns: u64,
    think_ns: u64,
    duration: Dur,
    seed: u64,
) -> LockBench {
    #[derive(Clone, Copy)]
    enum Ev {
        Want(usize),
        Release(usize),
    }
    let cost = machine.line_cost_table();
    let mut lock = spinlock(machine, &cost, kind, 0, seed, "spinlock-bench").with_node_stats();
    let node_of: Vec<usize> = (0..cpus)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let mut q = EventQueue::with_capacity(cpus as usize);
    // CPUs start one local transfer apart so the first round has an order.
    let step = machine.line_transfer_ns(0, 0).round() as u64 / cpus.max(1) + 1;
    for c in 0..cpus as usize {
        q.push(Time(c as u64 * step), Ev::Want(c))
            .expect("queue starts empty");
    }
    let end = Time::ZERO + duration;
    let mut in_window = vec![0u64; machine.node_count()];
    while let Some((now, ev)) = q.pop_until(end) {
        match ev {
            Ev::Want(c) => {
                if let Some(at) = lock.acquire(now, c, node_of[c]) {
                    in_window[node_of[c]] += 1;
                    q.push(at + Dur(hold_ns), Ev::Release(c))
                        .expect("grant is not in the past");
                }
            }
            Ev::Release(c) => {
                if let Some(g) = lock.release(now, c) {
                    in_window[g.node] += 1;
                    q.push(g.at + Dur(hold_ns), Ev::Release(g.cpu))
                        .expect("grant is not in the past");
                }
                q.push(now + Dur(think_ns), Ev::Want(c)).expect("future");
            }
        }
    }
    let s = lock.stats();
    let total: u64 = in_window.iter().sum();
    let nodes_used: Vec<usize> = {
        let mut v: Vec<usize> = node_of.clone();
        v.dedup();
        v
    };
    let per_node: Vec<(u64, u64)> = (0..machine.node_count())
        .map(|n| (in_window[n], s.node(n).max_wait.as_ns()))
        .collect();
    let starved = nodes_used
        .iter()
        .filter(|&&n| {
            let cpus_here = node_of.iter().filter(|&&m| m == n).count() as f64;
            let fair = total as f64 * cpus_here / cpus as f64;
            (in_window[n] as f64) < STARVED_SHARE * fair
        })
        .count() as u64;
    LockBench {
        acquisitions_per_s: total as f64 / duration.as_secs_f64(),
        per_node,
        starved_nodes: starved,
    }
}
