//! The fork/exit/wake loop of [ALTIX04] E1 (altix-o1-scheduler): every CPU
//! loops over user work and a scheduler operation under the run-queue
//! lock(s) of `kernel/sched/core.rs` (2.4's one `runqueue_lock` or O(1)'s
//! per-CPU locks), whose hold times come from [`SchedCosts`]. A CPU here
//! wants one of many locks, so it keeps its own (lock, operation, asked)
//! rather than an [`RqLock`](crate::kernel::sched::rq::RqLock) per queue
//! (that would be CPUs × queues of state).

use crate::engine::{stream, CostTable, Dur, EventQueue, Lock, Time};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::{line, Line};
use crate::kernel::sched::core::SchedCosts;
use crate::kernel::sched::Runqueue;
use crate::machine::Machine;
use rand::RngExt;

/// Outcome of [`sched_ops`].
#[derive(Debug, Clone, PartialEq)]
pub struct OpsResult {
    /// Scheduler operations (fork, exit, wake, schedule) per simulated second.
    pub sched_ops_per_s: f64,
    /// Share of the CPUs' time spent waiting for run-queue locks.
    pub lock_wait_fraction: f64,
    /// Engine events scheduled (a work counter for the benches).
    pub events: u64,
}

/// Every one of `cpus` CPUs loops: `work_ns` of user work, then a
/// scheduler operation (fork, wake a task on a random CPU, exit, in turn),
/// then `schedule()`. `tasks_per_cpu` tasks are runnable on each CPU (what
/// the 2.4 `goodness()` walk visits). Each operation takes the lock of the
/// queue it changes: the one `runqueue_lock`, or the CPU's own lock (the
/// target's for a wake-up).
#[allow(clippy::too_many_arguments)]
pub fn sched_ops(
    machine: &Machine,
    kind: Runqueue,
    spin: Spinlock,
    cpus: u64,
    tasks_per_cpu: u64,
    work_ns: u64,
    duration: Dur,
    seed: u64,
) -> OpsResult {
    // CPU numbers in 32 bits: a heap entry of 24 bytes, not 32 (16,384
    // CPUs keep as many pending events; issue 31).
    #[derive(Clone, Copy)]
    enum Ev {
        Want(u32),
        Release(u32),
    }
    /// 0 fork, 1 wake, 2 exit, 3 schedule.
    const SCHEDULE: u8 = 3;
    let cost = machine.line_cost_table();
    let c = SchedCosts::of(machine);
    let n = cpus as usize;
    let node: Vec<usize> = (0..cpus)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let nlocks = match kind {
        Runqueue::Global => 1,
        Runqueue::PerCpu => n,
    };
    // Each queue's lock beside its head's line: an event touches both, so
    // they share (adjacent) cache lines rather than two random ones.
    let mut rqs: Vec<(Lock<&CostTable>, Line)> = (0..nlocks)
        .map(|l| {
            let lock = spinlock(
                machine,
                &cost,
                spin,
                node[l],
                seed ^ l as u64,
                "sched-ops-rq",
            );
            (lock, line(machine, &cost, node[l]))
        })
        .collect();
    let mut rng = stream(seed, "sched-ops", cpus);
    let mut q = EventQueue::with_capacity(2 * n);
    // What each CPU is doing or waiting to do: (lock, operation, asked at);
    // 16 bytes a CPU.
    let mut doing = vec![(0u32, 0u8, Time::ZERO); n];
    let mut waited = Dur(0);
    for (cpu, d) in doing.iter_mut().enumerate() {
        let at = Time(rng.random_range(0..work_ns.max(1)));
        *d = (lock_of(kind, cpu) as u32, 0, at);
        q.push(at, Ev::Want(cpu as u32)).expect("empty queue");
    }
    let end = Time::ZERO + duration;
    let mut ops = 0u64;
    let queued = tasks_per_cpu * cpus;
    // Hold the lock from `got`: the queue head moves to this CPU, then the
    // operation's path.
    let mut hold = |cpu: usize, got: Time, op: u8, asked: Time, head: &mut Line| {
        waited += got - asked;
        let t = head.write(got, cpu, node[cpu]);
        let ns = match (kind, op) {
            // 2.4 schedule(): goodness() over every runnable task.
            (Runqueue::Global, SCHEDULE) => c.path_ns + queued as f64 * c.goodness_ns,
            // 2.4 wake-up and fork: reschedule_idle() looks at every CPU.
            (Runqueue::Global, 0 | 1) => c.path_ns + cpus as f64 * c.cpu_scan_ns,
            _ => c.path_ns,
        };
        t + Dur::from_ns_f64(ns)
    };
    // The handled event stays on top until the CPU's next replaces it (one
    // heap sift an event, not two: the heap holds every CPU's event).
    while q.peek_time().is_some_and(|t| t <= end) {
        let (now, ev) = q.peek_pending().expect("an event is due");
        match ev {
            Ev::Want(c) => {
                let cpu = c as usize;
                let (l, op, asked) = doing[cpu];
                let (lock, head) = &mut rqs[l as usize];
                match lock.acquire(now, cpu, node[cpu]) {
                    Some(at) => {
                        let done = hold(cpu, at, op, asked, head);
                        q.replace_top(done, Ev::Release(c)).expect("future");
                    }
                    None => q.discard_top(),
                }
            }
            Ev::Release(c) => {
                let cpu = c as usize;
                ops += 1;
                let (l, op, _) = doing[cpu];
                let (lock, head) = &mut rqs[l as usize];
                if let Some(g) = lock.release(now, cpu) {
                    let (_, gop, gasked) = doing[g.cpu];
                    let done = hold(g.cpu, g.at, gop, gasked, head);
                    q.push(done, Ev::Release(g.cpu as u32)).expect("future");
                }
                // After an operation comes schedule(); after schedule(),
                // user work and the next operation in turn.
                let (at, next) = if op == SCHEDULE {
                    (now + Dur(work_ns), ((ops + cpu as u64) % 3) as u8)
                } else {
                    (now, SCHEDULE)
                };
                let target = match (kind, next) {
                    (Runqueue::PerCpu, 1) => rng.random_range(0..n),
                    _ => cpu,
                };
                doing[cpu] = (lock_of(kind, target) as u32, next, at);
                q.replace_top(at, Ev::Want(c)).expect("future");
            }
        }
    }
    OpsResult {
        sched_ops_per_s: ops as f64 / duration.as_secs_f64(),
        lock_wait_fraction: (waited.as_ns() as f64 / (n as f64 * duration.as_ns() as f64)).min(1.0),
        events: q.pushed(),
    }
}

fn lock_of(kind: Runqueue, cpu: usize) -> usize {
    match kind {
        Runqueue::Global => 0,
        Runqueue::PerCpu => cpu,
    }
}
