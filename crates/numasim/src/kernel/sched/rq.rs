//! The run queue as state the drivers share (`struct rq` in
//! `kernel/sched/sched.h`, 2.4's `runqueue_head`): its spinlock and what
//! each CPU wants it for ([`RqLock`]), and the queued tasks with
//! `goodness()`'s pick ([`TaskQueues`]). The experiments that drive them
//! (`workload/aim7.rs`, `workload/boot_balance.rs`) own only their events
//! and counters.

use crate::engine::{CostTable, Grant, Lock, Time};
use std::cell::Cell;
use std::collections::VecDeque;

/// A run-queue lock (`rq->lock`, 2.4's `runqueue_lock`) and, per CPU, what
/// it asked the lock for (`W`) and when: a CPU asks, is granted (now or on
/// a release), holds it for its critical section and releases it.
pub struct RqLock<'c, W> {
    pub lock: Lock<&'c CostTable>,
    wants: Vec<Option<(W, Time)>>,
    /// Bit `cpu % 64` of word `cpu / 64`: `wants[cpu]` is Some. A wake-up
    /// interrupt looks for the next CPU not in the lock
    /// ([`next_free`](Self::next_free)); when nearly every CPU is, a
    /// CPU-by-CPU search walked thousands of them (issue 31: aim7 at
    /// 16,384 CPUs, 2,700 a wake-up). Kept at every size, so there is one
    /// search, not a second CPU-by-CPU walk (a `%` a step) for 64 CPUs and
    /// under: the same answer (`next_free_is_the_walks`); at wildfire's 32
    /// CPUs the walk was short, and wildfire-aim7's time does not move
    /// (docs/engine.md, "Session 20").
    wanting_bits: Vec<u64>,
}

impl<'c, W: Copy> RqLock<'c, W> {
    pub fn new(lock: Lock<&'c CostTable>, cpus: usize) -> Self {
        RqLock {
            lock,
            wants: vec![None; cpus],
            wanting_bits: vec![0; cpus.div_ceil(64)],
        }
    }

    /// CPU `cpu` (on `node`) asks for the lock at `now` for `w`: when it
    /// holds it, if at once (else a later [`release`](Self::release) grants it).
    pub fn want(&mut self, now: Time, cpu: usize, node: usize, w: W) -> Option<Time> {
        self.wants[cpu] = Some((w, now));
        if let Some(b) = self.wanting_bits.get_mut(cpu / 64) {
            *b |= 1 << (cpu % 64);
        }
        self.lock.acquire(now, cpu, node)
    }

    /// What `cpu` last asked the lock for, and when; None if it never asked
    /// or is [`done`](Self::done).
    pub fn wanting(&self, cpu: usize) -> Option<(W, Time)> {
        self.wants[cpu]
    }

    /// `cpu` has nothing more to do under the lock.
    pub fn done(&mut self, cpu: usize) {
        self.wants[cpu] = None;
        if let Some(b) = self.wanting_bits.get_mut(cpu / 64) {
            *b &= !(1 << (cpu % 64));
        }
    }

    /// The first CPU from `from` on, wrapping past the last, that wants
    /// nothing of the lock (`wanting` is None); None if every CPU does. A
    /// word of 64 CPUs a step.
    #[inline]
    pub fn next_free(&self, from: usize) -> Option<usize> {
        let n = self.wants.len();
        self.first_free_in(from, n)
            .or_else(|| self.first_free_in(0, from.min(n)))
    }

    /// The lowest CPU in `lo..hi` whose bit is clear.
    fn first_free_in(&self, lo: usize, hi: usize) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        for w in lo / 64..hi.div_ceil(64) {
            let mut free = !self.wanting_bits[w];
            if w == lo / 64 {
                free &= u64::MAX << (lo % 64);
            }
            if free != 0 {
                let cpu = w * 64 + free.trailing_zeros() as usize;
                return (cpu < hi).then_some(cpu);
            }
        }
        None
    }

    /// `cpu` releases the lock at `now`: the next holder, if any, and when.
    pub fn release(&mut self, now: Time, cpu: usize) -> Option<Grant> {
        self.lock.release(now, cpu)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Running,
    Queued,
    Sleeping,
}

/// A task as the run queues see it.
#[derive(Debug, Clone)]
pub struct Task {
    pub state: TaskState,
    pub last_cpu: usize,
    /// The queue it is on or would go to (node under NUMA, 0 under SMP).
    pub queue: usize,
    /// Bumped at every enqueue, so stale list entries can be skipped.
    stamp: u64,
}

/// The queued tasks of one or more run queues (2.4's one queue, wildfire's
/// one per node): arrival order per queue and, per CPU, the queued tasks
/// that last ran there (`goodness()`'s `PROC_CHANGE_PENALTY` pick). Lists
/// are lazy: a task that moves leaves a stale entry behind, skipped by
/// its stamp.
pub struct TaskQueues {
    pub tasks: Vec<Task>,
    fifo: Vec<VecDeque<(usize, u64)>>,
    mine: Vec<VecDeque<(usize, u64)>>,
    len: Vec<usize>,
    /// With 2.4's `counter` term, the pick is [`Counters`]'.
    pub counters: Option<Counters>,
}

impl TaskQueues {
    pub fn new(queues: usize, cpus: usize, tasks: usize) -> Self {
        TaskQueues {
            tasks: Vec::with_capacity(tasks),
            fifo: vec![VecDeque::new(); queues],
            mine: vec![VecDeque::new(); cpus],
            len: vec![0; queues],
            counters: None,
        }
    }

    /// Pick by `goodness()` with its `counter` term ([`Counters`]).
    pub fn with_counters(mut self, k: Counters) -> Self {
        self.counters = Some(k);
        self
    }

    /// A new task, asleep, last on `cpu`, belonging to `queue`; its index.
    pub fn add_sleeping(&mut self, cpu: usize, queue: usize) -> usize {
        self.tasks.push(Task {
            state: TaskState::Sleeping,
            last_cpu: cpu,
            queue,
            stamp: 0,
        });
        self.tasks.len() - 1
    }

    /// Tasks queued on `qi`.
    pub fn len(&self, qi: usize) -> usize {
        self.len[qi]
    }

    /// `add_to_runqueue()`: task `i` joins queue `qi`, preferred by CPU
    /// `pref` (the CPU it ran on, or the idle one it was sent to, which
    /// becomes its last CPU).
    pub fn enqueue(&mut self, i: usize, qi: usize, pref: usize) {
        let task = &mut self.tasks[i];
        task.state = TaskState::Queued;
        task.queue = qi;
        task.stamp += 1;
        task.last_cpu = pref;
        match self.counters.as_mut() {
            Some(k) => k.file(i, qi, pref),
            None => {
                self.fifo[qi].push_back((i, task.stamp));
                self.mine[pref].push_back((i, task.stamp));
            }
        }
        self.len[qi] += 1;
    }

    /// The pick from queue `qi` for `cpu` (`own`: `qi` is `cpu`'s own
    /// queue) under the model in force, and how many tasks a counter
    /// recalculation walked first (0 without one).
    pub fn pick_for(&mut self, cpu: usize, qi: usize, own: bool) -> (Option<usize>, usize) {
        match self.counters.as_mut() {
            None => (self.pick(cpu, qi), 0),
            Some(k) => {
                let (picked, walked) = k.pick(cpu, qi, own);
                if picked.is_some() {
                    self.len[qi] -= 1;
                }
                (picked, walked)
            }
        }
    }

    /// `goodness()`'s pick from queue `qi` for `cpu`: a task that last ran
    /// on it, else the one queued longest; it leaves the queue (its state
    /// is the caller's to set). Stale entries are dropped on the way.
    pub fn pick(&mut self, cpu: usize, qi: usize) -> Option<usize> {
        let t = &self.tasks;
        let live = |&(i, s): &(usize, u64)| {
            t[i].state == TaskState::Queued && t[i].stamp == s && t[i].queue == qi
        };
        let mut picked = None;
        let mine = &mut self.mine[cpu];
        while let Some(e) = mine.front() {
            if live(e) {
                picked = mine.pop_front().map(|(i, _)| i);
                break;
            }
            if t[e.0].state == TaskState::Queued && t[e.0].stamp == e.1 {
                // Queued elsewhere: not this queue's to take; keep looking.
                break;
            }
            mine.pop_front();
        }
        if picked.is_none() {
            let fifo = &mut self.fifo[qi];
            while let Some(e) = fifo.pop_front() {
                if live(&e) {
                    picked = Some(e.0);
                    break;
                }
            }
        }
        if picked.is_some() {
            self.len[qi] -= 1;
        }
        picked
    }

    /// Every task is in exactly one place: running on the CPU that names
    /// it in `curr`, counted in one queue, or asleep.
    pub fn conserved(&self, curr: &[Option<usize>]) -> bool {
        let t = &self.tasks;
        let running = t.iter().filter(|x| x.state == TaskState::Running).count();
        let queued = t.iter().filter(|x| x.state == TaskState::Queued).count();
        let on_cpus = curr.iter().flatten().count();
        let named_right = curr
            .iter()
            .flatten()
            .all(|&i| t[i].state == TaskState::Running);
        let per_queue_ok = (0..self.len.len()).all(|k| {
            t.iter()
                .filter(|x| x.state == TaskState::Queued && x.queue == k)
                .count()
                == self.len[k]
        });
        running == on_cpus
            && named_right
            && per_queue_ok
            && queued == self.len.iter().sum::<usize>()
    }
}

/// 2.4 `goodness()` with its `counter` term (`kernel/sched.c`): a queued
/// task weighs its `counter` (ticks left of its slice) plus
/// `PROC_CHANGE_PENALTY` if it last ran on the picking CPU (the `+ 1` for
/// the same `mm` and `20 − nice` are equal for AIM's tasks); weight 0
/// (counter spent) is never preferred, and when every queued task is at 0
/// `schedule()` recalculates every task's counter (`for_each_task(p)
/// p->counter = (p->counter >> 1) + NICE_TO_TICKS(p->nice)`). Among equal
/// weights the list's first wins, and `add_to_runqueue()` adds at the head:
/// the newest. Buckets by counter value (at most 2 × the slice), lazy like
/// [`TaskQueues`]' lists, so a pick costs the counter range, not the queue.
pub struct Counters {
    /// `p->counter` of every task, ticks.
    pub counter: Vec<u32>,
    /// `NICE_TO_TICKS(0)`.
    slice: u32,
    penalty: u32,
    /// Per queue, per counter value: (task, entry) newest last.
    q: Vec<Vec<Vec<(usize, u64)>>>,
    qn: Vec<Vec<u32>>,
    /// The same per CPU the task is queued for (its `processor`).
    own: Vec<Vec<Vec<(usize, u64)>>>,
    ownn: Vec<Vec<u32>>,
    /// Each task's live entry (0: none) and the CPU and counter it is filed under.
    entry: Vec<u64>,
    filed: Vec<(usize, usize, u32)>,
    seq: u64,
    /// Ticks' worth of run time not yet taken off `counter`, ns.
    ran_ns: Vec<f64>,
    /// Counter recalculations so far.
    pub recalcs: u64,
}

impl Counters {
    /// `tasks` tasks with counters spread over a slice (the steady state
    /// after ramp-up); `slice` = `NICE_TO_TICKS(0)`, `penalty` =
    /// `PROC_CHANGE_PENALTY`.
    pub fn new(queues: usize, cpus: usize, tasks: usize, slice: u32, penalty: u32) -> Self {
        let top = 2 * slice as usize + 1;
        Counters {
            counter: (0..tasks)
                .map(|i| 1 + (i as u32 * 7919) % slice.max(1))
                .collect(),
            slice,
            penalty,
            q: vec![vec![Vec::new(); top]; queues],
            qn: vec![vec![0; top]; queues],
            own: vec![vec![Vec::new(); top]; cpus],
            ownn: vec![vec![0; top]; cpus],
            entry: vec![0; tasks],
            filed: vec![(0, 0, 0); tasks],
            seq: 0,
            ran_ns: vec![0.0; tasks],
            recalcs: 0,
        }
    }

    fn file(&mut self, i: usize, qi: usize, cpu: usize) {
        let c = (self.counter[i] as usize).min(self.q[qi].len() - 1);
        self.seq += 1;
        self.entry[i] = self.seq;
        self.filed[i] = (qi, cpu, c as u32);
        self.q[qi][c].push((i, self.seq));
        self.qn[qi][c] += 1;
        self.own[cpu][c].push((i, self.seq));
        self.ownn[cpu][c] += 1;
    }

    fn unfile(&mut self, i: usize) {
        let (qi, cpu, c) = self.filed[i];
        self.entry[i] = 0;
        self.qn[qi][c as usize] -= 1;
        self.ownn[cpu][c as usize] -= 1;
    }

    /// The task's burst ran `ns`: the timer ticks that fell in it come off
    /// its counter (`update_process_times()`), never below 0.
    pub fn ran(&mut self, i: usize, ns: f64, tick_ns: f64) {
        self.ran_ns[i] += ns;
        let ticks = (self.ran_ns[i] / tick_ns).floor();
        self.ran_ns[i] -= ticks * tick_ns;
        self.counter[i] = self.counter[i].saturating_sub(ticks as u32);
    }

    /// Newest live entry of a bucket, left in place.
    fn newest(entry: &[u64], b: &mut Vec<(usize, u64)>) -> Option<(usize, u64)> {
        while let Some(&(i, s)) = b.last() {
            if entry[i] == s {
                return Some((i, s));
            }
            b.pop();
        }
        None
    }

    fn top(n: &[u32]) -> Option<usize> {
        (1..n.len()).rev().find(|&c| n[c] > 0)
    }

    /// Every task's counter halved plus a slice, and the queued re-filed
    /// in their list order. Returns how many tasks it touched.
    fn recalc(&mut self) -> usize {
        self.recalcs += 1;
        for c in &mut self.counter {
            *c = (*c >> 1) + self.slice;
        }
        let mut live: Vec<(u64, usize)> = (0..self.entry.len())
            .filter(|&i| self.entry[i] != 0)
            .map(|i| (self.entry[i], i))
            .collect();
        live.sort_unstable();
        for b in self.q.iter_mut().chain(self.own.iter_mut()).flatten() {
            b.clear();
        }
        for n in self.qn.iter_mut().chain(self.ownn.iter_mut()) {
            n.fill(0);
        }
        for &(_, i) in &live {
            let (qi, cpu, _) = self.filed[i];
            self.file(i, qi, cpu);
        }
        self.counter.len()
    }

    /// `goodness()`'s pick from queue `qi` for `cpu` (`own` if `qi` is
    /// `cpu`'s own queue): the task and how many tasks a recalculation
    /// touched (0 if none ran).
    fn pick(&mut self, cpu: usize, qi: usize, own: bool) -> (Option<usize>, usize) {
        let mut touched = 0;
        if Self::top(&self.qn[qi]).is_none() {
            if self.qn[qi][0] == 0 {
                return (None, 0);
            }
            touched = self.recalc();
        }
        let cq = Self::top(&self.qn[qi]).expect("recalculated counters are at least a slice");
        let co = if own {
            Self::top(&self.ownn[cpu])
        } else {
            None
        };
        let from_own = match co {
            Some(co) if co + self.penalty as usize > cq => true,
            Some(co) if co + self.penalty as usize == cq => {
                let a = Self::newest(&self.entry, &mut self.own[cpu][co]).map(|e| e.1);
                let b = Self::newest(&self.entry, &mut self.q[qi][cq]).map(|e| e.1);
                a > b
            }
            _ => false,
        };
        let e = if from_own {
            let co = co.expect("own");
            Self::newest(&self.entry, &mut self.own[cpu][co])
        } else {
            Self::newest(&self.entry, &mut self.q[qi][cq])
        };
        let (i, _) = e.expect("a counted bucket holds a live entry");
        self.unfile(i);
        (Some(i), touched)
    }
}

/// The CPUs' idle state for `reschedule_idle()`: since when each is idle
/// (None: running) and whether a kick is on its way, with a count of the
/// CPUs idle and not kicked. Under load no CPU is, and a wake-up's search
/// over every CPU ([`longest_idle`]) is skipped on the count (issue 31:
/// the scan was a twelfth of wildfire-aim7).
#[derive(Debug, Clone)]
pub struct IdleCpus {
    since: Vec<Option<Time>>,
    kicked: Vec<bool>,
    /// CPUs idle and not kicked.
    free: usize,
    /// The same count per block of [`IDLE_BLOCK`] CPUs: a search skips the
    /// blocks with none (issue 31: aim7 at 16,384 CPUs, where a handful
    /// are free, scanned all 16,384 a wake-up).
    block_free: Vec<u32>,
    /// Each block's [`longest_idle`] as (since, cpu), kept while it stays
    /// right: a CPU becoming free can only lower it, and only the CPU it
    /// names leaving (or changing) makes it stale, and then it is found
    /// again at the next search that needs it (a search over the machine
    /// reads one entry a block, not 64 CPUs).
    block_min: Vec<Cell<Option<(Time, usize)>>>,
    block_stale: Vec<Cell<bool>>,
}

/// CPUs per block of [`IdleCpus`]' counts.
const IDLE_BLOCK: usize = 64;

impl IdleCpus {
    /// `n` CPUs, all idle since time 0, none kicked.
    pub fn new(n: usize) -> Self {
        let blocks = n.div_ceil(IDLE_BLOCK);
        IdleCpus {
            since: vec![Some(Time::ZERO); n],
            kicked: vec![false; n],
            free: n,
            block_free: (0..blocks)
                .map(|b| (n - b * IDLE_BLOCK).min(IDLE_BLOCK) as u32)
                .collect(),
            block_min: (0..blocks)
                .map(|b| Cell::new(Some((Time::ZERO, b * IDLE_BLOCK))))
                .collect(),
            block_stale: vec![Cell::new(false); blocks],
        }
    }

    /// Idle and not kicked: a wake-up may send its task there (what
    /// the count counts).
    pub fn available(&self, cpu: usize) -> bool {
        self.since[cpu].is_some() && !self.kicked[cpu]
    }

    /// Change `cpu`'s state, keeping the counts and the blocks' minima.
    fn set(&mut self, cpu: usize, since: Option<Time>, kicked: bool) {
        let before = self.available(cpu);
        self.since[cpu] = since;
        self.kicked[cpu] = kicked;
        let after = self.available(cpu);
        self.free = self.free + usize::from(after) - usize::from(before);
        // One block (up to 64 CPUs, every replayed machine): `free` is its
        // count and a search is one scan; nothing more to keep.
        if self.block_free.len() == 1 {
            return;
        }
        let b = cpu / IDLE_BLOCK;
        self.block_free[b] = self.block_free[b] + u32::from(after) - u32::from(before);
        if self.block_stale[b].get() {
            return;
        }
        let min = self.block_min[b].get();
        if before && min.is_some_and(|(_, k)| k == cpu) {
            self.block_stale[b].set(true);
        } else if let (true, Some(t)) = (after, since) {
            if min.is_none_or(|m| (t, cpu) < m) {
                self.block_min[b].set(Some((t, cpu)));
            }
        }
    }

    /// Block `b`'s (since, cpu) idle longest, found again if stale.
    fn block_longest(&self, b: usize) -> Option<(Time, usize)> {
        if self.block_stale[b].replace(false) {
            let hi = ((b + 1) * IDLE_BLOCK).min(self.since.len());
            let k = longest_idle(&self.since, &self.kicked, b * IDLE_BLOCK..hi);
            self.block_min[b].set(k.and_then(|k| Some((self.since[k]?, k))));
        }
        self.block_min[b].get()
    }

    pub fn since(&self, cpu: usize) -> Option<Time> {
        self.since[cpu]
    }

    /// `cpu` idle (since `at`) or running (None).
    pub fn set_since(&mut self, cpu: usize, at: Option<Time>) {
        self.set(cpu, at, self.kicked[cpu]);
    }

    /// A kick sent to `cpu` (true) or handled by it (false).
    pub fn set_kicked(&mut self, cpu: usize, kicked: bool) {
        self.set(cpu, self.since[cpu], kicked);
    }

    /// [`longest_idle`] over `range`; none without a scan when no CPU is
    /// available, blocks with none available skipped, a whole block's
    /// minimum read from its entry. The same CPU: the minimum of (since,
    /// cpu) over the blocks' minima.
    #[inline]
    pub fn longest(&self, range: std::ops::Range<usize>) -> Option<usize> {
        if self.free == 0 {
            return None;
        }
        if self.block_free.len() == 1 {
            return longest_idle(&self.since, &self.kicked, range);
        }
        if range.is_empty() {
            return None;
        }
        if range.start / IDLE_BLOCK == (range.end - 1) / IDLE_BLOCK {
            // Inside one block (a node's CPUs, a small machine): its scan.
            if self.block_free[range.start / IDLE_BLOCK] == 0 {
                return None;
            }
            return longest_idle(&self.since, &self.kicked, range);
        }
        (range.start / IDLE_BLOCK..range.end.div_ceil(IDLE_BLOCK))
            .filter(|&b| self.block_free[b] > 0)
            .filter_map(|b| {
                let lo = range.start.max(b * IDLE_BLOCK);
                let hi = range.end.min((b + 1) * IDLE_BLOCK);
                let whole =
                    hi - lo == IDLE_BLOCK || (lo == b * IDLE_BLOCK && hi == self.since.len());
                if whole {
                    self.block_longest(b)
                } else {
                    longest_idle(&self.since, &self.kicked, lo..hi)
                        .and_then(|k| Some((self.since[k]?, k)))
                }
            })
            .min()
            .map(|(_, k)| k)
    }
}

/// `reschedule_idle()`'s choice: the idle CPU in `range` idle longest, not
/// already kicked.
pub fn longest_idle(
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

#[cfg(test)]
mod want_tests {
    use super::*;
    use crate::engine::stream;
    use crate::kernel::locking::contention::Spinlock;
    use crate::kernel::locking::spinlock::spinlock;
    use crate::machine::presets;
    use rand::RngExt;

    /// Random asks and dones: the next CPU not in the lock, from any CPU
    /// and wrapping, is the one a CPU-by-CPU walk finds, at sizes inside
    /// one word, on a word's edges and over several, with every CPU and
    /// no CPU wanting drawn.
    #[test]
    fn next_free_is_the_walks() {
        let m = presets::preset("wildfire-gs320").unwrap();
        let cost = m.line_cost_table();
        let mut rng = stream(17, "rq-next-free-test", 0);
        for n in [1usize, 5, 63, 64, 65, 200] {
            let lock = spinlock(&m, &cost, Spinlock::Tas, 0, 1, "t");
            let mut rq: RqLock<()> = RqLock::new(lock, n);
            let (mut full, mut empty) = (0, 0);
            for step in 0..20_000u32 {
                let cpu = rng.random_range(0..n);
                // Asks as often as dones, then only asks (every CPU comes
                // to want), then only dones (none does): both ends are
                // reached at every size.
                let ask = match step {
                    0..8_000 => rng.random::<bool>(),
                    8_000..14_000 => true,
                    _ => false,
                };
                if ask {
                    if rq.wanting(cpu).is_none() {
                        rq.wants[cpu] = Some(((), Time::ZERO));
                        if let Some(b) = rq.wanting_bits.get_mut(cpu / 64) {
                            *b |= 1 << (cpu % 64);
                        }
                    }
                } else {
                    rq.done(cpu);
                }
                let from = rng.random_range(0..n);
                let walk = (0..n)
                    .map(|k| (from + k) % n)
                    .find(|&w| rq.wanting(w).is_none());
                full += u32::from(walk.is_none());
                empty += u32::from((0..n).all(|w| rq.wanting(w).is_none()));
                assert_eq!(
                    rq.next_free(from),
                    walk,
                    "{n} CPUs, step {step}, from {from}"
                );
            }
            assert!(full > 0, "{n} CPUs: every CPU wanting never drawn");
            assert!(empty > 0, "{n} CPUs: none wanting never drawn");
        }
    }
}

#[cfg(test)]
mod idle_tests {
    use super::*;
    use crate::engine::stream;
    use rand::RngExt;

    /// Random idle, run, kick and unkick steps: the counted state picks the
    /// CPU the plain arrays' scan picks, over the whole machine and over
    /// random ranges, and agrees with them CPU by CPU.
    #[test]
    fn idle_cpus_choose_as_the_scan_does() {
        let mut rng = stream(11, "idle-cpus-test", 0);
        for n in [1usize, 4, 32, 64, 130] {
            let mut idle = IdleCpus::new(n);
            let mut since = vec![Some(Time::ZERO); n];
            let mut kicked = vec![false; n];
            let mut nones = 0;
            for step in 0..20_000u64 {
                let cpu = rng.random_range(0..n);
                // Running and kicked more often than idle and unkicked, so
                // that at 32 CPUs both "none available" and a choice occur.
                match rng.random_range(0..10u32) {
                    0 => {
                        // Ties on purpose: a few distinct times.
                        let t = Some(Time(rng.random_range(0..4u64)));
                        idle.set_since(cpu, t);
                        since[cpu] = t;
                    }
                    1 => {
                        idle.set_kicked(cpu, false);
                        kicked[cpu] = false;
                    }
                    2..6 => {
                        idle.set_since(cpu, None);
                        since[cpu] = None;
                    }
                    _ => {
                        idle.set_kicked(cpu, true);
                        kicked[cpu] = true;
                    }
                }
                let lo = rng.random_range(0..n);
                let hi = rng.random_range(lo..=n);
                let whole = longest_idle(&since, &kicked, 0..n);
                nones += u64::from(whole.is_none());
                assert_eq!(idle.longest(0..n), whole, "step {step}");
                assert_eq!(idle.longest(lo..hi), longest_idle(&since, &kicked, lo..hi));
                assert_eq!(idle.since(cpu), since[cpu]);
                assert_eq!(idle.available(cpu), since[cpu].is_some() && !kicked[cpu]);
            }
            assert!(nones > 0 && nones < 20_000, "both outcomes drawn: {nones}");
        }
    }
}

#[cfg(test)]
mod counter_tests {
    use super::*;

    /// One queue, 2 CPUs, `n` tasks asleep on CPU 0, counters given.
    fn queues(counters: &[u32]) -> TaskQueues {
        let n = counters.len();
        let mut k = Counters::new(1, 2, n, 41, 20);
        k.counter.copy_from_slice(counters);
        let mut tq = TaskQueues::new(1, 2, n).with_counters(k);
        for _ in 0..n {
            tq.add_sleeping(0, 0);
        }
        tq
    }

    fn take(tq: &mut TaskQueues, cpu: usize) -> Option<usize> {
        let (p, _) = tq.pick_for(cpu, 0, true);
        if let Some(i) = p {
            tq.tasks[i].state = TaskState::Running;
        }
        p
    }

    #[test]
    fn own_cpu_wins_by_the_penalty_and_loses_past_it() {
        // Task 0 last ran on CPU 0 with 10 ticks; task 1 on CPU 1 with 29:
        // 10 + 20 > 29, so CPU 0 takes its own.
        let mut tq = queues(&[10, 29]);
        tq.enqueue(0, 0, 0);
        tq.enqueue(1, 0, 1);
        assert_eq!(take(&mut tq, 0), Some(0));
        // With 31 ticks the other CPU's task outbids it (10 + 20 < 31).
        let mut tq = queues(&[10, 31]);
        tq.enqueue(0, 0, 0);
        tq.enqueue(1, 0, 1);
        assert_eq!(take(&mut tq, 0), Some(1));
        assert_eq!(tq.len(0), 1);
    }

    #[test]
    fn equal_weights_go_to_the_newest_and_spent_counters_wait_for_a_recalc() {
        let mut tq = queues(&[5, 5, 0]);
        for i in 0..3 {
            tq.enqueue(i, 0, 1);
        }
        // add_to_runqueue() puts the newest first: task 1 of the two at 5.
        assert_eq!(take(&mut tq, 1), Some(1));
        assert_eq!(take(&mut tq, 1), Some(0));
        // Only the spent task is left: every counter is recalculated
        // (halved plus a slice), then it runs.
        let (p, walked) = tq.pick_for(1, 0, true);
        assert_eq!(p, Some(2));
        assert_eq!(walked, 3, "for_each_task() touches every task");
        let k = tq.counters.as_ref().unwrap();
        assert_eq!(k.recalcs, 1);
        assert_eq!(k.counter, vec![41 + 2, 41 + 2, 41]);
        assert_eq!(tq.len(0), 0);
        assert_eq!(tq.pick_for(1, 0, true), (None, 0));
    }

    #[test]
    fn run_time_comes_off_the_counter_tick_by_tick() {
        let mut k = Counters::new(1, 1, 1, 41, 20);
        k.counter[0] = 10;
        k.ran(0, 2.5, 1.0);
        assert_eq!(k.counter[0], 8);
        k.ran(0, 0.5, 1.0);
        assert_eq!(k.counter[0], 7, "the half ticks add up");
        k.ran(0, 100.0, 1.0);
        assert_eq!(k.counter[0], 0, "never below zero");
    }
}
