//! Run queues, `schedule()` and wake-ups ([ALTIX04] E1, [WILDFIRE01] E4).
//!
//! Three run-queue structures, each behind spinlocks that are engine
//! [`Lock`]s on the machine's line costs:
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

use crate::engine::{stream, CostTable, Dur, EventQueue, Lock, Time};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::{line, Line};
use crate::kernel::sched::trace::{Segment, Trace};
use crate::kernel::sched::{Runqueue, Sched};
use crate::machine::Machine;
use rand::RngExt;
use std::collections::VecDeque;

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

// ---------------------------------------------------------------------
// The fork/exit/wake loop (altix-o1-scheduler).

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
    #[derive(Clone, Copy)]
    enum Ev {
        Want(usize),
        Release(usize),
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
    let mut locks: Vec<Lock<&CostTable>> = (0..nlocks)
        .map(|l| {
            spinlock(
                machine,
                &cost,
                spin,
                node[l],
                seed ^ l as u64,
                "sched-ops-rq",
            )
        })
        .collect();
    let mut heads: Vec<Line> = (0..nlocks).map(|l| line(machine, &cost, node[l])).collect();
    let mut rng = stream(seed, "sched-ops", cpus);
    let mut q = EventQueue::with_capacity(2 * n);
    // What each CPU is doing or waiting to do: (lock, operation, asked at).
    let mut doing = vec![(0usize, 0u8, Time::ZERO); n];
    let mut waited = Dur(0);
    for (cpu, d) in doing.iter_mut().enumerate() {
        let at = Time(rng.random_range(0..work_ns.max(1)));
        *d = (lock_of(kind, cpu), 0, at);
        q.push(at, Ev::Want(cpu)).expect("empty queue");
    }
    let end = Time::ZERO + duration;
    let mut ops = 0u64;
    let queued = tasks_per_cpu * cpus;
    // Hold the lock from `got`: the queue head moves to this CPU, then the
    // operation's path.
    let mut hold = |cpu: usize, got: Time, doing: &[(usize, u8, Time)], heads: &mut [Line]| {
        let (l, op, asked) = doing[cpu];
        waited += got - asked;
        let t = heads[l].write(got, cpu, node[cpu]);
        let ns = match (kind, op) {
            // 2.4 schedule(): goodness() over every runnable task.
            (Runqueue::Global, SCHEDULE) => c.path_ns + queued as f64 * c.goodness_ns,
            // 2.4 wake-up and fork: reschedule_idle() looks at every CPU.
            (Runqueue::Global, 0 | 1) => c.path_ns + cpus as f64 * c.cpu_scan_ns,
            _ => c.path_ns,
        };
        t + Dur::from_ns_f64(ns)
    };
    while let Some((now, ev)) = q.pop_until(end) {
        match ev {
            Ev::Want(cpu) => {
                let l = doing[cpu].0;
                if let Some(at) = locks[l].acquire(now, cpu, node[cpu]) {
                    let done = hold(cpu, at, &doing, &mut heads);
                    q.push(done, Ev::Release(cpu)).expect("future");
                }
            }
            Ev::Release(cpu) => {
                ops += 1;
                let (l, op, _) = doing[cpu];
                if let Some(g) = locks[l].release(now, cpu) {
                    let done = hold(g.cpu, g.at, &doing, &mut heads);
                    q.push(done, Ev::Release(g.cpu)).expect("future");
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
                doing[cpu] = (lock_of(kind, target), next, at);
                q.push(at, Ev::Want(cpu)).expect("future");
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

// ---------------------------------------------------------------------
// The multi-user mix (wildfire-aim7).

/// The AIM VII-like mix: each task runs jobs back to back; a job is
/// `waits` CPU bursts, each followed by a sleep on I/O.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// CPU time of one job with all its memory local, ns.
    pub cpu_ns: f64,
    /// I/O sleep of one job, ns (exponential per wait, mean `io_ns / waits`).
    pub io_ns: f64,
    /// Sleeps (and so wake-ups and `schedule()` calls) per job.
    pub waits: u64,
    /// Share of the CPU time that is memory stall at local latency; it
    /// scales with the latency to the node the job's memory is on.
    pub mem_stall: f64,
}

/// Outcome of [`aim7`].
#[derive(Debug, Clone, PartialEq)]
pub struct Aim7Result {
    pub jobs_per_min: f64,
    /// Share of the CPUs' time spent spinning on or holding the run-queue lock.
    pub lock_fraction: f64,
    /// Share of CPU bursts that ran on the node holding the job's memory.
    pub local_fraction: f64,
    /// Tasks that changed node (NUMA: remote wake-up placements).
    pub migrations: u64,
    /// Mean length of the queue(s) a `schedule()` walked.
    pub mean_walk: f64,
    /// At the end every task is in exactly one place: running on the CPU
    /// that names it, counted in one queue, or asleep.
    pub tasks_conserved: bool,
    /// Engine events scheduled (a work counter for the benches).
    pub events: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskState {
    Running,
    Queued,
    Sleeping,
}

#[derive(Debug, Clone)]
struct Task {
    state: TaskState,
    last_cpu: usize,
    /// The queue it is on or would go to (node under NUMA, 0 under SMP).
    queue: usize,
    /// Node the current job's memory was allocated on (first touch, A1).
    mem_node: usize,
    bursts_left: u64,
    /// Node of the CPU it last ran on.
    ran_node: usize,
    /// Bumped at every enqueue, so stale list entries can be skipped.
    stamp: u64,
}

/// Simulate `tasks` tasks of `mix` on `machine` under `sched` for `warmup`
/// then `measure` of simulated time; jobs finished in the measured window
/// give the rate. With `trace`, the schedule is recorded (capped).
#[allow(clippy::too_many_arguments)]
pub fn aim7(
    machine: &Machine,
    sched: Sched,
    spin: Spinlock,
    mix: &Mix,
    tasks: u64,
    warmup: Dur,
    measure: Dur,
    seed: u64,
    mut trace: Option<&mut Trace>,
) -> Aim7Result {
    #[derive(Clone, Copy, Debug)]
    enum Ev {
        /// A task's CPU burst ends (delayed by interrupt work the CPU did).
        BurstEnd(usize),
        /// A sleeping task's I/O completes: its last CPU runs the wake-up.
        IoDone(usize),
        /// A CPU was kicked (or found itself idle): it calls schedule().
        Kick(usize),
        /// A CPU got the run-queue lock: its critical section starts.
        Granted(usize),
        /// The holder releases the lock.
        Unlock(usize),
    }
    #[derive(Clone, Copy, Debug)]
    enum Want {
        Schedule,
        Wake(usize),
    }
    let cost = machine.line_cost_table();
    let c = SchedCosts::of(machine);
    let ncpu = machine.cpu_count() as usize;
    let node: Vec<usize> = (0..ncpu as u64)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let nnodes = machine.node_count();
    let nq = match sched {
        Sched::Smp => 1,
        Sched::Numa => nnodes,
    };
    let local_ns = machine.mem_latency_ns(0, 0).max(1.0);
    let mut lock = spinlock(machine, &cost, spin, 0, seed, "runqueue_lock");
    let mut head = line(machine, &cost, 0);
    let mut rng = stream(seed, "aim7", tasks);
    let mut q: EventQueue<Ev> = EventQueue::with_capacity(ncpu + tasks as usize);

    // Queues: arrival order per queue, and per CPU the queued tasks that
    // last ran there (goodness()'s PROC_CHANGE_PENALTY pick).
    let mut fifo: Vec<VecDeque<(usize, u64)>> = vec![VecDeque::new(); nq];
    let mut mine: Vec<VecDeque<(usize, u64)>> = vec![VecDeque::new(); ncpu];
    let mut qlen = vec![0usize; nq];
    let mut t: Vec<Task> = Vec::with_capacity(tasks as usize);
    let mut curr: Vec<Option<usize>> = vec![None; ncpu];
    // Idle CPUs, and since when (reschedule_idle() takes the one idle longest).
    let mut idle_since: Vec<Option<Time>> = vec![Some(Time::ZERO); ncpu];
    let mut kicked = vec![false; ncpu];
    // Interrupt work a CPU did during its current burst (delays its end).
    let mut stolen = vec![Dur(0); ncpu];
    let mut burst_started = vec![Time::ZERO; ncpu];
    let mut wants: Vec<Option<(Want, Time)>> = vec![None; ncpu];
    // A burst ended or a kick arrived while the CPU was in a wake-up's
    // critical section: handled when it unlocks.
    let mut end_pending = vec![false; ncpu];
    let mut kick_pending = vec![false; ncpu];
    let mut deferred: VecDeque<usize> = VecDeque::new();
    let mut lock_busy = Dur(0);
    let (mut bursts, mut local_bursts, mut migrations) = (0u64, 0u64, 0u64);
    let (mut walks, mut walked) = (0u64, 0u64);
    let start_measure = Time::ZERO + warmup;
    let end = start_measure + measure;
    let mut jobs = 0u64;

    // Every task starts asleep at a random point of a job and wakes at a
    // random moment of the first mean wait: the steady state AIM measures
    // after its ramp-up, without simulating the ramp.
    let first_wait = (mix.io_ns / mix.waits.max(1) as f64).max(1.0) as u64;
    for i in 0..tasks as usize {
        let cpu = i % ncpu;
        t.push(Task {
            state: TaskState::Sleeping,
            last_cpu: cpu,
            queue: if nq == 1 { 0 } else { node[cpu] },
            mem_node: node[cpu],
            bursts_left: rng.random_range(1..=mix.waits.max(1)),
            ran_node: node[cpu],
            stamp: 0,
        });
        q.push(Time(rng.random_range(0..first_wait)), Ev::IoDone(i))
            .expect("empty queue");
    }

    let burst_ns = mix.cpu_ns / mix.waits.max(1) as f64;
    let sleep_mean = mix.io_ns / mix.waits.max(1) as f64;
    while let Some((now, ev)) = q.pop_until(end) {
        match ev {
            Ev::BurstEnd(cpu) => {
                if stolen[cpu] > Dur(0) {
                    let d = std::mem::replace(&mut stolen[cpu], Dur(0));
                    q.push(now + d, Ev::BurstEnd(cpu)).expect("future");
                    continue;
                }
                if wants[cpu].is_some() {
                    end_pending[cpu] = true;
                    continue;
                }
                let i = curr[cpu].take().expect("a burst ends on a running CPU");
                if let Some(tr) = trace.as_deref_mut() {
                    tr.segment(Segment {
                        cpu,
                        task: i,
                        start: burst_started[cpu],
                        end: now,
                    });
                }
                let task = &mut t[i];
                task.state = TaskState::Sleeping;
                task.bursts_left -= 1;
                if task.bursts_left == 0 {
                    if now >= start_measure {
                        jobs += 1;
                    }
                    // The next job allocates where the task runs now (A1).
                    task.bursts_left = mix.waits.max(1);
                    task.mem_node = node[cpu];
                }
                let u: f64 = rng.random::<f64>();
                let sleep = -sleep_mean * (1.0 - u).ln();
                q.push(now + Dur::from_ns_f64(sleep), Ev::IoDone(i))
                    .expect("future");
                wants[cpu] = Some((Want::Schedule, now));
                if let Some(at) = lock.acquire(now, cpu, node[cpu]) {
                    q.push(at, Ev::Granted(cpu)).expect("future");
                }
            }
            Ev::IoDone(i) => {
                let cpu = t[i].last_cpu;
                // The completion interrupt runs the wake-up on the task's
                // last CPU; if that CPU is itself waiting for the lock (a
                // nested spin_lock_irqsave is impossible), the wake-up runs
                // on the next CPU of its node that is not.
                let Some(w) = (0..ncpu)
                    .map(|k| (cpu + k) % ncpu)
                    .find(|&w| wants[w].is_none())
                else {
                    // Every CPU is in or waiting for the lock: the
                    // interrupt stays pending until one unlocks.
                    deferred.push_back(i);
                    continue;
                };
                wants[w] = Some((Want::Wake(i), now));
                if let Some(at) = lock.acquire(now, w, node[w]) {
                    q.push(at, Ev::Granted(w)).expect("future");
                }
            }
            Ev::Kick(cpu) => {
                if wants[cpu].is_some() {
                    kick_pending[cpu] = true;
                    continue;
                }
                kicked[cpu] = false;
                if curr[cpu].is_some() {
                    continue;
                }
                wants[cpu] = Some((Want::Schedule, now));
                if let Some(at) = lock.acquire(now, cpu, node[cpu]) {
                    q.push(at, Ev::Granted(cpu)).expect("future");
                }
            }
            Ev::Unlock(cpu) => {
                wants[cpu] = None;
                if let Some(g) = lock.release(now, cpu) {
                    q.push(g.at, Ev::Granted(g.cpu)).expect("future");
                }
                if std::mem::take(&mut end_pending[cpu]) {
                    q.push(now, Ev::BurstEnd(cpu)).expect("now");
                }
                if std::mem::take(&mut kick_pending[cpu]) {
                    q.push(now, Ev::Kick(cpu)).expect("now");
                }
                if let Some(i) = deferred.pop_front() {
                    wants[cpu] = Some((Want::Wake(i), now));
                    if let Some(at) = lock.acquire(now, cpu, node[cpu]) {
                        q.push(at, Ev::Granted(cpu)).expect("future");
                    }
                }
            }
            Ev::Granted(cpu) => {
                let (want, asked) = wants[cpu].expect("a CPU holds the lock for a reason");
                let got = head.write(now, cpu, node[cpu]);
                let mut ns = c.path_ns;
                match want {
                    Want::Schedule => {
                        let mut qi = if nq == 1 { 0 } else { node[cpu] };
                        if nq > 1 && qlen[qi] == 0 {
                            // About to idle: take from the longest other queue.
                            let (best, len) = (0..nq)
                                .map(|k| (k, qlen[k]))
                                .max_by_key(|&(k, l)| (l, std::cmp::Reverse(k)))
                                .expect("at least one queue");
                            if len > 0 {
                                ns += nq as f64 * c.cpu_scan_ns;
                                qi = best;
                            }
                        }
                        ns += qlen[qi] as f64 * c.goodness_ns;
                        walks += 1;
                        walked += qlen[qi] as u64;
                        let picked = pick(&mut fifo[qi], &mut mine[cpu], &t, qi);
                        let done = got + Dur::from_ns_f64(ns);
                        lock_busy += done - asked;
                        if let Some(i) = picked {
                            qlen[qi] -= 1;
                            if let Some(tr) = trace.as_deref_mut() {
                                tr.queue_length(done, qi, qlen[qi]);
                            }
                            let task = &mut t[i];
                            if task.ran_node != node[cpu] {
                                migrations += 1;
                                task.ran_node = node[cpu];
                            }
                            task.state = TaskState::Running;
                            task.last_cpu = cpu;
                            task.queue = if nq == 1 { 0 } else { node[cpu] };
                            let local = task.mem_node == node[cpu];
                            bursts += 1;
                            local_bursts += local as u64;
                            let ratio = machine.mem_latency_ns(node[cpu], task.mem_node) / local_ns;
                            let run = burst_ns * (1.0 - mix.mem_stall + mix.mem_stall * ratio);
                            curr[cpu] = Some(i);
                            idle_since[cpu] = None;
                            burst_started[cpu] = done;
                            q.push(done + Dur::from_ns_f64(run), Ev::BurstEnd(cpu))
                                .expect("future");
                        } else if idle_since[cpu].is_none() {
                            idle_since[cpu] = Some(done);
                        }
                        q.push(done, Ev::Unlock(cpu)).expect("future");
                    }
                    Want::Wake(i) => {
                        // add_to_runqueue() and reschedule_idle().
                        let task_node = node[t[i].last_cpu];
                        let last = t[i].last_cpu;
                        let target = match sched {
                            Sched::Smp => {
                                ns += ncpu as f64 * c.cpu_scan_ns;
                                if idle_since[last].is_some() && !kicked[last] {
                                    Some(last)
                                } else {
                                    longest_idle(&idle_since, &kicked, 0..ncpu)
                                }
                            }
                            Sched::Numa => {
                                let lo = node.partition_point(|&n| n < task_node);
                                let hi = node.partition_point(|&n| n <= task_node);
                                ns += (hi - lo) as f64 * c.cpu_scan_ns;
                                let here = if idle_since[last].is_some() && !kicked[last] {
                                    Some(last)
                                } else {
                                    longest_idle(&idle_since, &kicked, lo..hi)
                                };
                                here.or_else(|| {
                                    ns += ncpu as f64 * c.cpu_scan_ns;
                                    longest_idle(&idle_since, &kicked, 0..ncpu)
                                })
                            }
                        };
                        let qi = match (sched, target) {
                            (Sched::Smp, _) => 0,
                            (Sched::Numa, Some(k)) => node[k],
                            (Sched::Numa, None) => task_node,
                        };
                        let task = &mut t[i];
                        task.state = TaskState::Queued;
                        task.queue = qi;
                        task.stamp += 1;
                        fifo[qi].push_back((i, task.stamp));
                        // goodness() prefers the CPU it ran on, or the idle
                        // one it was sent to.
                        let pref = target.unwrap_or(last);
                        mine[pref].push_back((i, task.stamp));
                        if pref != last {
                            t[i].last_cpu = pref;
                        }
                        qlen[qi] += 1;
                        if let Some(tr) = trace.as_deref_mut() {
                            tr.queue_length(got, qi, qlen[qi]);
                        }
                        let done = got + Dur::from_ns_f64(ns);
                        lock_busy += done - asked;
                        if curr[cpu].is_some() && !end_pending[cpu] {
                            stolen[cpu] += done - asked;
                        }
                        if let Some(k) = target {
                            kicked[k] = true;
                            // The kick is a write to the idle CPU's
                            // need_resched line: one transfer.
                            let ipi = machine.line_transfer_ns(node[cpu], node[k]);
                            q.push(done + Dur::from_ns_f64(ipi), Ev::Kick(k))
                                .expect("future");
                        }
                        q.push(done, Ev::Unlock(cpu)).expect("future");
                    }
                }
            }
        }
    }
    let cpu_time = ncpu as f64 * end.as_ns() as f64;
    let running = t.iter().filter(|x| x.state == TaskState::Running).count();
    let queued_n = t.iter().filter(|x| x.state == TaskState::Queued).count();
    let on_cpus = curr.iter().flatten().count();
    let named_right = curr
        .iter()
        .flatten()
        .all(|&i| t[i].state == TaskState::Running);
    let per_queue_ok = (0..nq).all(|k| {
        t.iter()
            .filter(|x| x.state == TaskState::Queued && x.queue == k)
            .count()
            == qlen[k]
    });
    let tasks_conserved = running == on_cpus
        && named_right
        && per_queue_ok
        && queued_n == qlen.iter().sum::<usize>()
        && t.len() == tasks as usize;
    Aim7Result {
        jobs_per_min: jobs as f64 / measure.as_secs_f64() * 60.0,
        lock_fraction: (lock_busy.as_ns() as f64 / cpu_time).min(1.0),
        local_fraction: if bursts == 0 {
            1.0
        } else {
            local_bursts as f64 / bursts as f64
        },
        migrations,
        mean_walk: if walks == 0 {
            0.0
        } else {
            walked as f64 / walks as f64
        },
        tasks_conserved,
        events: q.pushed(),
    }
}

/// The idle CPU in `range` idle longest, not already kicked.
fn longest_idle(
    idle_since: &[Option<Time>],
    kicked: &[bool],
    range: std::ops::Range<usize>,
) -> Option<usize> {
    range
        .filter(|&k| !kicked[k])
        .filter_map(|k| idle_since[k].map(|t| (t, k)))
        .min()
        .map(|(_, k)| k)
}

/// goodness()'s pick from queue `qi` for a CPU: a task that last ran on
/// it, else the one queued longest. Stale entries (moved or dequeued
/// since) are dropped on the way.
fn pick(
    fifo: &mut VecDeque<(usize, u64)>,
    mine: &mut VecDeque<(usize, u64)>,
    t: &[Task],
    qi: usize,
) -> Option<usize> {
    let live = |&(i, s): &(usize, u64)| {
        t[i].state == TaskState::Queued && t[i].stamp == s && t[i].queue == qi
    };
    while let Some(e) = mine.front() {
        if live(e) {
            return mine.pop_front().map(|(i, _)| i);
        }
        if t[e.0].state == TaskState::Queued && t[e.0].stamp == e.1 {
            // Queued elsewhere: not this queue's to take; keep looking.
            break;
        }
        mine.pop_front();
    }
    while let Some(e) = fifo.pop_front() {
        if live(&e) {
            return Some(e.0);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets;

    #[test]
    fn aim7_small_runs() {
        let m = presets::preset("wildfire-gs320").unwrap();
        let mix = Mix {
            cpu_ns: 70e6,
            io_ns: 140e6,
            waits: 12,
            mem_stall: 0.2,
        };
        for s in [Sched::Smp, Sched::Numa] {
            let r = aim7(
                &m,
                s,
                Spinlock::Tas,
                &mix,
                300,
                Dur::from_secs_f64(0.5),
                Dur::from_secs_f64(1.0),
                1,
                None,
            );
            assert!(r.jobs_per_min > 0.0, "{r:?}");
        }
    }
}
