//! The fork/exit/wake loop of [ALTIX04] E1 (altix-o1-scheduler): every CPU
//! loops over user work and a scheduler operation under the run-queue
//! lock(s) of `kernel/sched/core.rs` (2.4's one `runqueue_lock` or O(1)'s
//! per-CPU locks), whose hold times come from [`SchedCosts`]. A CPU here
//! wants one of many locks, so it keeps its own (lock, operation, asked)
//! rather than an [`RqLock`](crate::kernel::sched::rq::RqLock) per queue
//! (that would be CPUs × queues of state).

use crate::engine::{
    stream, CostTable, Dur, Grant, LaneQueue, LineCell, LineSet, Lock, LockCell, LockSet, Time,
};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::{line, line_set, Line};
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
    let cost = machine.line_cost_table();
    let n = cpus as usize;
    let rq = |l: usize, node: usize| -> Rq<'_> {
        let lock = spinlock(machine, &cost, spin, node, seed ^ l as u64, "sched-ops-rq");
        (lock, line(machine, &cost, node))
    };
    let node_of = |c: usize| machine.cpu_node(c as u64).unwrap_or(0);
    let mut cpu_state = (0..n).map(|c| CpuState {
        lock: lock_of(kind, c) as u32,
        op: 0,
        asked: Time::ZERO,
    });
    let run = Run {
        kind,
        costs: SchedCosts::of(machine),
        cpus,
        tasks_per_cpu,
        work_ns,
        duration,
        seed,
    };
    match kind {
        // One lock: the CPUs' states in their own array.
        Runqueue::Global => {
            let cpus: Vec<(CpuState, u32)> = cpu_state
                .enumerate()
                .map(|(c, s)| (s, node_of(c) as u32))
                .collect();
            let rqs = vec![rq(0, node_of(0))];
            run.simulate(&mut Split { cpus, rqs })
        }
        // A lock per CPU: each CPU's state beside its own queue's lock and
        // head, the ones most of its events touch (one 64-byte line, not a
        // 448-byte `Lock` and `CacheLine` apart; a wake-up's random queue
        // then costs the host one cache miss; issue 31). Same grants, same
        // times, same random streams as a `Lock` per queue.
        Runqueue::PerCpu => {
            let mut locks = LockSet::new(spinlock(machine, &cost, spin, 0, seed, "sched-ops-rq"));
            let lines = line_set(machine, &cost);
            let mut slots = Vec::with_capacity(n);
            for l in 0..n {
                let cpu = cpu_state.next().expect("a state per CPU");
                let node = node_of(l);
                let lock = locks.add(Some(node), stream(seed ^ l as u64, "sched-ops-rq", 0));
                slots.push(Slot {
                    cpu,
                    lock,
                    line: lines.add(),
                });
            }
            run.simulate(&mut Cells {
                slots,
                locks,
                lines,
            })
        }
    }
}

/// A run queue: its lock and its head's cache line (an event touches both,
/// so they sit side by side).
type Rq<'a> = (Lock<&'a CostTable>, Line<'a>);

/// What a CPU is doing or waiting to do: the lock it wants, the operation
/// (0 fork, 1 wake, 2 exit, 3 schedule) and when it asked. 16 bytes: its
/// node is its own queue's home ([`Store::node`]).
#[derive(Clone, Copy)]
struct CpuState {
    lock: u32,
    op: u8,
    asked: Time,
}

/// Where the CPUs' states and the run queues live.
trait Store {
    fn cpu(&mut self, c: usize) -> &mut CpuState;
    /// CPU `c`'s node.
    fn node(&self, c: usize) -> usize;
    /// Queue `l`'s lock, as [`Lock::acquire`] and [`Lock::release`].
    fn acquire(&mut self, l: usize, now: Time, cpu: usize, node: usize) -> Option<Time>;
    fn release(&mut self, l: usize, now: Time, cpu: usize) -> Option<Grant>;
    /// Queue `l`'s head written by `cpu` at `now`: when it is done.
    fn write_head(&mut self, l: usize, now: Time, cpu: usize, node: usize) -> Time;
    fn len(&self) -> usize;
}

/// The states (and nodes) in one array, the queues in another.
struct Split<'a> {
    cpus: Vec<(CpuState, u32)>,
    rqs: Vec<Rq<'a>>,
}

impl Store for Split<'_> {
    #[inline(always)]
    fn cpu(&mut self, c: usize) -> &mut CpuState {
        &mut self.cpus[c].0
    }
    #[inline(always)]
    fn node(&self, c: usize) -> usize {
        self.cpus[c].1 as usize
    }
    #[inline(always)]
    fn acquire(&mut self, l: usize, now: Time, cpu: usize, node: usize) -> Option<Time> {
        self.rqs[l].0.acquire(now, cpu, node)
    }
    #[inline(always)]
    fn release(&mut self, l: usize, now: Time, cpu: usize) -> Option<Grant> {
        self.rqs[l].0.release(now, cpu)
    }
    #[inline(always)]
    fn write_head(&mut self, l: usize, now: Time, cpu: usize, node: usize) -> Time {
        self.rqs[l].1.write(now, cpu, node)
    }
    fn len(&self) -> usize {
        self.cpus.len()
    }
}

/// CPU `i`'s state, queue `i`'s lock cell and its head's line cell: one
/// 64-byte line of the host (a wake-up touches a random CPU's; issue 31).
/// The CPU's node is its queue's home, kept once, in the lock cell.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    cpu: CpuState,
    lock: LockCell,
    line: LineCell,
}

const _: () = assert!(
    std::mem::size_of::<Slot>() == 64,
    "a CPU's slot is one 64-byte line"
);

/// Every CPU's [`Slot`]; the locks' and lines' shared settings (and their
/// pools for the rare lock with waiters) apart.
struct Cells<'a> {
    slots: Vec<Slot>,
    locks: LockSet<&'a CostTable>,
    lines: LineSet<&'a CostTable>,
}

impl Store for Cells<'_> {
    #[inline(always)]
    fn cpu(&mut self, c: usize) -> &mut CpuState {
        &mut self.slots[c].cpu
    }
    #[inline(always)]
    fn node(&self, c: usize) -> usize {
        self.slots[c].lock.home().unwrap_or(0)
    }
    #[inline(always)]
    fn acquire(&mut self, l: usize, now: Time, cpu: usize, node: usize) -> Option<Time> {
        self.locks.acquire(&mut self.slots[l].lock, now, cpu, node)
    }
    #[inline(always)]
    fn release(&mut self, l: usize, now: Time, cpu: usize) -> Option<Grant> {
        self.locks.release(&mut self.slots[l].lock, now, cpu)
    }
    #[inline(always)]
    fn write_head(&mut self, l: usize, now: Time, cpu: usize, node: usize) -> Time {
        let s = &mut self.slots[l];
        let home = s.lock.home().unwrap_or(0);
        self.lines.write(&mut s.line, home, now, cpu, node)
    }
    fn len(&self) -> usize {
        self.slots.len()
    }
}

/// The parameters of one [`sched_ops`] run.
struct Run {
    kind: Runqueue,
    costs: SchedCosts,
    cpus: u64,
    tasks_per_cpu: u64,
    work_ns: u64,
    duration: Dur,
    seed: u64,
}

impl Run {
    fn simulate<S: Store>(&self, st: &mut S) -> OpsResult {
        // CPU numbers in 32 bits: a heap entry of 24 bytes, not 32 (16,384
        // CPUs keep as many pending events; issue 31).
        #[derive(Clone, Copy)]
        enum Ev {
            Want(u32),
            Release(u32),
        }
        const SCHEDULE: u8 = 3;
        let Run {
            kind,
            ref costs,
            cpus,
            tasks_per_cpu,
            work_ns,
            duration,
            seed,
        } = *self;
        let c = costs;
        let n = st.len();
        let mut rng = stream(seed, "sched-ops", cpus);
        // Every CPU's next operation after its user work is `work_ns` after
        // the clock, so those events come in time order: a FIFO lane, not
        // the heap. The heap keeps the grants' releases and the operations
        // due at once: at 16,384 CPUs 6,200 of the 14,400 events pending on
        // average, where it held all of them (issue 31).
        let mut q = LaneQueue::with_capacity(2 * n, n);
        let mut waited = Dur(0);
        for cpu in 0..n {
            let at = Time(rng.random_range(0..work_ns.max(1)));
            st.cpu(cpu).asked = at;
            q.push(at, Ev::Want(cpu as u32)).expect("empty queue");
        }
        let end = Time::ZERO + duration;
        let mut ops = 0u64;
        let queued = tasks_per_cpu * cpus;
        // Each operation's path, rounded once here: a float rounding is a
        // library call, 1.7% of the run's instructions done at each hold.
        // 2.4 schedule(): goodness() over every runnable task.
        let goodness = Dur::from_ns_f64(c.path_ns + queued as f64 * c.goodness_ns);
        // 2.4 wake-up and fork: reschedule_idle() looks at every CPU.
        let reschedule_idle = Dur::from_ns_f64(c.path_ns + cpus as f64 * c.cpu_scan_ns);
        let path = Dur::from_ns_f64(c.path_ns);
        // Hold the lock from `got`: the queue head moves to this CPU, then
        // the operation's path.
        let mut hold = |st: &mut S, cpu: usize, got: Time, s: CpuState| {
            waited += got - s.asked;
            let t = st.write_head(s.lock as usize, got, cpu, st.node(cpu));
            t + match (kind, s.op) {
                (Runqueue::Global, SCHEDULE) => goodness,
                (Runqueue::Global, 0 | 1) => reschedule_idle,
                _ => path,
            }
        };
        // The handled event stays pending until the CPU's next replaces it
        // (one heap sift an event, not two, where it is the heap's).
        while q.peek_time().is_some_and(|t| t <= end) {
            let (now, ev) = q.peek_pending().expect("an event is due");
            match ev {
                Ev::Want(i) => {
                    let cpu = i as usize;
                    let s = *st.cpu(cpu);
                    match st.acquire(s.lock as usize, now, cpu, st.node(cpu)) {
                        Some(at) => {
                            let done = hold(st, cpu, at, s);
                            q.replace_top(done, Ev::Release(i)).expect("future");
                        }
                        None => q.discard_top(),
                    }
                }
                Ev::Release(i) => {
                    let cpu = i as usize;
                    ops += 1;
                    let s = *st.cpu(cpu);
                    let l = s.lock as usize;
                    if let Some(g) = st.release(l, now, cpu) {
                        let gs = *st.cpu(g.cpu);
                        let done = hold(st, g.cpu, g.at, gs);
                        q.push(done, Ev::Release(g.cpu as u32)).expect("future");
                    }
                    // After an operation comes schedule(); after schedule(),
                    // user work and the next operation in turn.
                    let (at, next) = if s.op == SCHEDULE {
                        (now + Dur(work_ns), ((ops + cpu as u64) % 3) as u8)
                    } else {
                        (now, SCHEDULE)
                    };
                    let target = match (kind, next) {
                        (Runqueue::PerCpu, 1) => rng.random_range(0..n),
                        _ => cpu,
                    };
                    let me = st.cpu(cpu);
                    me.lock = lock_of(kind, target) as u32;
                    me.op = next;
                    me.asked = at;
                    if s.op == SCHEDULE {
                        q.replace_top_lane(at, Ev::Want(i))
                    } else {
                        q.replace_top(at, Ev::Want(i))
                    }
                    .expect("future");
                }
            }
        }
        OpsResult {
            sched_ops_per_s: ops as f64 / duration.as_secs_f64(),
            lock_wait_fraction: (waited.as_ns() as f64 / (n as f64 * duration.as_ns() as f64))
                .min(1.0),
            events: q.pushed(),
        }
    }
}

fn lock_of(kind: Runqueue, cpu: usize) -> usize {
    match kind {
        Runqueue::Global => 0,
        Runqueue::PerCpu => cpu,
    }
}
