//! `load_balance()` at boot and its back-off ([ALTIX04] E2), and the peek
//! at every CPU's `nr_running`/`cpu_load` (E3).
//!
//! **Boot balance.** The first `busy_cpus` CPUs run the boot thread and
//! `pinned` pinned kernel threads; every other CPU is idle. An idle CPU's
//! rebalance tick finds the busiest queue (CPU 0: ties go to the first
//! found), takes its lock (`double_rq_lock()`), walks its tasks in
//! `move_tasks()`, finds every one pinned (or running) and fails. The busy
//! CPU needs its own lock at every tick (`scheduler_tick()`). Nothing here
//! counts CPUs: the idle CPUs' attempts queue on the busy CPU's lock (an
//! engine [`Lock`]: test-and-set spinners near the releaser win, and every
//! hand-off serves a NACK per spinner) and the busy CPU waits behind them.
//! **Live lock** is declared when, after the first quarter of the window,
//! the busy CPU waits longer than one tick for its own lock: its next
//! timer interrupt is then due before it has finished the last, so it falls
//! behind at every tick and boot cannot proceed (the bound of
//! `kernel/time/tick.rs`).
//!
//! When an idle CPU balances:
//! - `none`, `progressive`: on the jiffy, as mainline O(1) `rebalance_tick()`
//!   did (`!(jiffies % IDLE_NODE_REBALANCE_TICK)`), so every idle CPU tries in
//!   the same jiffy, spread only by where each CPU's tick falls
//!   (`timer.tick_phase`). `progressive` adds `balance_backoff_step_ticks`
//!   per failure to the CPU's next interval (capped), counted from when the
//!   attempt finished.
//! - `2.6.7`: sched domains. A CPU balances when `jiffies + CPU_OFFSET(cpu)`
//!   reaches `last_balance + interval`; an imbalance resets the interval to
//!   the minimum even when nothing moved, and after `cache_nice_tries + 2`
//!   failures it takes the busiest lock again to set `active_balance` and
//!   wakes the busiest CPU's migration thread (a wake-up: the lock again),
//!   which runs on the busy CPU, takes the lock and fails in turn.

use crate::engine::rng::stream;
use crate::engine::{CostTable, Dur, EventQueue, Lock, Time};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::{line, Line};
use crate::kernel::mm::tlb::Tlb;
use crate::kernel::sched::core::SchedCosts;
use crate::kernel::sched::{BalanceBackoff, RqLayout, SchedKnobs};
use crate::kernel::time::tick;
use crate::machine::Machine;

/// Run-queue lines a failed `load_balance()` reads under the busiest
/// lock (2.6.0 `find_busiest_queue()`/`load_balance()`): the lock and
/// `nr_running`, the array pointers, the array's `nr_active` and bitmap,
/// the first non-empty priority list head.
pub const RQ_LINES: usize = 4;
/// Lines of each queued task `can_migrate_task()` reads: the `run_list`
/// link, and `last_run`/`cpus_allowed`/`array`.
pub const TASK_LINES: usize = 2;

/// Outcome of [`boot_balance`].
#[derive(Debug, Clone, PartialEq)]
pub struct BalanceResult {
    /// Share of the measured window the busy CPU was not waiting for its own lock, %.
    pub busy_cpu_lock_share_pct: f64,
    /// 1 when the busy CPU waited more than one tick for its own lock.
    pub livelock: bool,
    /// Share of the busy CPU's time left to boot work (not waiting for or
    /// holding its lock, not running its migration thread).
    pub boot_progress: f64,
    /// Longest wait of the busy CPU for its own lock, us.
    pub max_wait_us: f64,
    /// Balance attempts that took the busiest lock, per second.
    pub balance_attempts_per_s: f64,
    /// Engine events scheduled (a work counter for the benches).
    pub events: u64,
}

/// What a CPU wants the busiest lock for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// The busy CPU's `scheduler_tick()`.
    Tick,
    /// An idle CPU's `load_balance()`.
    Balance,
    /// 2.6.7: set `active_balance` (and wake the migration thread).
    Active,
    /// 2.6.7: `wake_up_process(migration_thread)`.
    WakeMigration,
    /// The migration thread on the busy CPU.
    Migration,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// The busy CPU's timer tick `k`.
    Tick(u64),
    /// Idle CPU `c`'s balance is due.
    Balance(usize),
    /// CPU `c` got the lock.
    Granted(usize),
    /// CPU `c` releases it.
    Unlock(usize),
    /// The migration thread runs on the busy CPU.
    Migration,
}

/// Simulate `window` of early boot on CPUs `0..cpus`; see the module docs.
#[allow(clippy::too_many_arguments)]
pub fn boot_balance(
    machine: &Machine,
    knobs: &SchedKnobs,
    spin: Spinlock,
    cpus: u64,
    busy_cpus: u64,
    pinned: u64,
    window: Dur,
    seed: u64,
) -> BalanceResult {
    let n = cpus as usize;
    let busy = busy_cpus.clamp(1, cpus) as usize;
    let cost = machine.line_cost_table();
    let c = SchedCosts::of(machine);
    let node: Vec<usize> = (0..cpus)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let period = Dur::from_ns_f64(machine.tick_ns()).as_ns().max(1);
    let phase = tick::phases(machine.timer.tick_phase, cpus, period, seed);
    let tick_at = |cpu: usize, k: u64| Time::ZERO + phase[cpu] + Dur(period * k);
    // The busiest run queue: its lock, the line find_busiest_queue() reads
    // and scheduler_tick() writes, and one line per queued task.
    let mut lock: Lock<&CostTable> = spinlock(machine, &cost, spin, node[0], seed, "rq-lock-0");
    let mut rq_lines: Vec<Line> = (0..RQ_LINES)
        .map(|_| line(machine, &cost, node[0]))
        .collect();
    let queued = 1 + pinned as usize;
    let mut task_lines: Vec<Line> = (0..queued * TASK_LINES)
        .map(|_| line(machine, &cost, node[0]))
        .collect();

    let hz = u64::from(machine.timer.hz.max(1));
    let interval_of = |cpu: usize| {
        if node[cpu] == node[0] {
            knobs.idle_rebalance_ticks
        } else {
            knobs.idle_node_interval()
        }
    };
    // Per idle CPU: failures in a row, current interval (ticks), jiffy of
    // the last balance (2.6.7).
    let mut fails = vec![0u64; n];
    let mut interval: Vec<u64> = (0..n).map(interval_of).collect();
    let mut last_balance = vec![0u64; n];
    let mut why = vec![Why::Balance; n];
    let mut asked = vec![Time::ZERO; n];
    let mut q: EventQueue<Ev> = EventQueue::with_capacity(n + 4);
    let end = Time::ZERO + window;
    let measure_from = Time::ZERO + Dur(window.as_ns() / 4);
    // The jiffy of CPU c's local tick at or after `t`.
    let jiffy_at = |cpu: usize, t: Time| -> u64 {
        let base = (Time::ZERO + phase[cpu]).0;
        t.0.saturating_sub(base).div_ceil(period)
    };
    // The next jiffy >= from at which CPU `cpu` balances.
    let next_jiffy = |cpu: usize, from: u64, interval: u64, last: u64| -> u64 {
        match knobs.balance_backoff {
            BalanceBackoff::None => from.div_ceil(interval) * interval,
            BalanceBackoff::Progressive => from.max(last + interval),
            BalanceBackoff::V267 => {
                // jiffies + CPU_OFFSET(cpu) >= last_balance + interval.
                let offset = hz * cpu as u64 / cpus.max(1);
                (last + interval).saturating_sub(offset).max(from)
            }
        }
    };
    for cpu in busy..n {
        let first = next_jiffy(cpu, 1, interval[cpu], 0);
        // Progressive: the first attempt is on the jiffy, as none.
        let first = if knobs.balance_backoff == BalanceBackoff::Progressive {
            1u64.div_ceil(interval[cpu]) * interval[cpu]
        } else {
            first
        };
        if knobs.balance_backoff == BalanceBackoff::V267 {
            let offset = hz * cpu as u64 / cpus.max(1);
            last_balance[cpu] = offset;
        }
        q.push(tick_at(cpu, first), Ev::Balance(cpu))
            .expect("empty queue");
    }
    q.push(tick_at(0, 0), Ev::Tick(0)).expect("empty queue");

    // Busy CPU accounting (measured window only).
    let mut busy_wait = Dur(0);
    let mut migration_time = Dur(0);
    let mut max_wait = Dur(0);
    let mut tick_pending = 0u64;
    let mut in_tick = false;
    let mut active_balance = false;
    let mut migration_queued = false;
    let mut attempts = 0u64;
    let clip = |a: Time, b: Time| -> Dur {
        let a = a.max(measure_from);
        let b = b.min(end);
        if b > a {
            b - a
        } else {
            Dur(0)
        }
    };

    let want = |q: &mut EventQueue<Ev>,
                lock: &mut Lock<&CostTable>,
                now: Time,
                cpu: usize,
                w: Why,
                why: &mut [Why],
                asked: &mut [Time]| {
        why[cpu] = w;
        asked[cpu] = now;
        if let Some(at) = lock.acquire(now, cpu, node[cpu]) {
            q.push(at, Ev::Granted(cpu)).expect("future");
        }
    };

    while let Some((now, ev)) = q.pop_until(end) {
        match ev {
            Ev::Tick(k) => {
                q.push(tick_at(0, k + 1), Ev::Tick(k + 1)).expect("future");
                if in_tick {
                    tick_pending += 1;
                    continue;
                }
                in_tick = true;
                want(&mut q, &mut lock, now, 0, Why::Tick, &mut why, &mut asked);
            }
            Ev::Migration => {
                in_tick = true;
                want(
                    &mut q,
                    &mut lock,
                    now,
                    0,
                    Why::Migration,
                    &mut why,
                    &mut asked,
                );
            }
            Ev::Balance(cpu) => {
                // find_busiest_queue(): read the busiest's nr_running.
                let t = rq_lines[0].read(now, cpu, node[cpu]);
                attempts += u64::from(now >= measure_from);
                want(
                    &mut q,
                    &mut lock,
                    t,
                    cpu,
                    Why::Balance,
                    &mut why,
                    &mut asked,
                );
            }
            Ev::Granted(cpu) => {
                let w = why[cpu];
                let mut t = now;
                match w {
                    Why::Tick | Why::Migration => {
                        let wait = now - asked[0];
                        if asked[0] >= measure_from {
                            max_wait = max_wait.max(wait);
                        }
                        busy_wait += clip(asked[0], now);
                        // scheduler_tick(): the queue's counts and the
                        // running task's time slice.
                        t = rq_lines[0].write(t, 0, node[0]);
                        t = task_lines[0].write(t, 0, node[0]);
                        if w == Why::Migration {
                            // active_load_balance(): walk the queue, fail.
                            for l in task_lines.iter_mut() {
                                t = l.read(t, 0, node[0]);
                            }
                            active_balance = false;
                        }
                        t += Dur::from_ns_f64(c.path_ns);
                    }
                    Why::Balance | Why::Active | Why::WakeMigration => {
                        t += Dur::from_ns_f64(c.path_ns);
                        if w == Why::Balance {
                            // Re-read the counts, find the array and the
                            // first priority list, then walk every queued
                            // task: each is running, pinned or cache-hot.
                            // Dependent loads, one after the other.
                            for l in rq_lines.iter_mut().chain(task_lines.iter_mut()) {
                                t = l.read(t, cpu, node[cpu]);
                            }
                        }
                    }
                }
                q.push(t, Ev::Unlock(cpu)).expect("future");
            }
            Ev::Unlock(cpu) => {
                let w = why[cpu];
                if let Some(g) = lock.release(now, cpu) {
                    q.push(g.at, Ev::Granted(g.cpu)).expect("future");
                }
                match w {
                    Why::Tick | Why::Migration => {
                        if w == Why::Migration {
                            migration_time += clip(asked[0], now);
                            migration_queued = false;
                        }
                        if tick_pending > 0 {
                            tick_pending -= 1;
                            want(&mut q, &mut lock, now, 0, Why::Tick, &mut why, &mut asked);
                        } else if migration_queued && w == Why::Tick {
                            want(
                                &mut q,
                                &mut lock,
                                now,
                                0,
                                Why::Migration,
                                &mut why,
                                &mut asked,
                            );
                        } else {
                            in_tick = false;
                        }
                    }
                    Why::Active => {
                        // Set active_balance; wake the migration thread
                        // unless it is already on its way.
                        if active_balance {
                            schedule_next(
                                cpu,
                                now,
                                &mut q,
                                &mut interval,
                                &mut last_balance,
                                &fails,
                                knobs,
                                &jiffy_at,
                                &next_jiffy,
                                &tick_at,
                            );
                        } else {
                            active_balance = true;
                            want(
                                &mut q,
                                &mut lock,
                                now,
                                cpu,
                                Why::WakeMigration,
                                &mut why,
                                &mut asked,
                            );
                        }
                    }
                    Why::WakeMigration => {
                        if !migration_queued {
                            migration_queued = true;
                            if !in_tick {
                                q.push(now, Ev::Migration).expect("now");
                            }
                        }
                        schedule_next(
                            cpu,
                            now,
                            &mut q,
                            &mut interval,
                            &mut last_balance,
                            &fails,
                            knobs,
                            &jiffy_at,
                            &next_jiffy,
                            &tick_at,
                        );
                    }
                    Why::Balance => {
                        // Imbalance found, nothing movable: a failure.
                        fails[cpu] += 1;
                        match knobs.balance_backoff {
                            BalanceBackoff::None => {}
                            BalanceBackoff::Progressive => {
                                interval[cpu] = (interval_of(cpu)
                                    + fails[cpu] * knobs.balance_backoff_step_ticks)
                                    .min(knobs.balance_backoff_max_ticks.max(interval_of(cpu)));
                            }
                            BalanceBackoff::V267 => {
                                interval[cpu] = interval_of(cpu);
                                if fails[cpu] > knobs.cache_nice_tries + 2 {
                                    fails[cpu] = knobs.cache_nice_tries;
                                    want(
                                        &mut q,
                                        &mut lock,
                                        now,
                                        cpu,
                                        Why::Active,
                                        &mut why,
                                        &mut asked,
                                    );
                                    continue;
                                }
                            }
                        }
                        schedule_next(
                            cpu,
                            now,
                            &mut q,
                            &mut interval,
                            &mut last_balance,
                            &fails,
                            knobs,
                            &jiffy_at,
                            &next_jiffy,
                            &tick_at,
                        );
                    }
                }
            }
        }
    }
    // A request still waiting at the end counts as a wait up to the end.
    if why[0] != Why::Balance && in_tick && lock.holder().map(|h| h.0) != Some(0) {
        let wait = end - asked[0].min(end);
        if asked[0] >= measure_from || wait > Dur(period) {
            max_wait = max_wait.max(wait);
        }
        busy_wait += clip(asked[0], end);
    }
    let span = (end - measure_from).as_ns().max(1) as f64;
    let share = 1.0 - busy_wait.as_ns() as f64 / span;
    let progress = 1.0
        - (busy_wait.as_ns() + migration_time.as_ns()) as f64 / span
        - ticks_hold_share(machine, &c);
    BalanceResult {
        busy_cpu_lock_share_pct: 100.0 * share.clamp(0.0, 1.0),
        livelock: max_wait > Dur(period),
        boot_progress: progress.clamp(0.0, 1.0),
        max_wait_us: max_wait.as_ns() as f64 / 1e3,
        balance_attempts_per_s: attempts as f64 / (span / 1e9),
        events: q.pushed(),
    }
}

/// Share of the busy CPU's time its own `scheduler_tick()` path takes.
fn ticks_hold_share(machine: &Machine, c: &SchedCosts) -> f64 {
    c.path_ns / machine.tick_ns()
}

#[allow(clippy::too_many_arguments)]
fn schedule_next(
    cpu: usize,
    now: Time,
    q: &mut EventQueue<Ev>,
    interval: &mut [u64],
    last_balance: &mut [u64],
    _fails: &[u64],
    knobs: &SchedKnobs,
    jiffy_at: &impl Fn(usize, Time) -> u64,
    next_jiffy: &impl Fn(usize, u64, u64, u64) -> u64,
    tick_at: &impl Fn(usize, u64) -> Time,
) {
    let j = jiffy_at(cpu, now).max(1);
    let done_j = j;
    let from = j + 1;
    let last = match knobs.balance_backoff {
        BalanceBackoff::V267 => {
            // sd->last_balance += interval (2.6.7), in offset jiffies.
            let l = last_balance[cpu] + interval[cpu];
            last_balance[cpu] = l;
            l - interval[cpu]
        }
        _ => {
            last_balance[cpu] = done_j;
            done_j
        }
    };
    let next = next_jiffy(cpu, from, interval[cpu], last);
    let _ = interval;
    q.push(tick_at(cpu, next), Ev::Balance(cpu))
        .expect("future");
}

// ---------------------------------------------------------------------
// E3: peeking at every CPU's run-queue fields.

/// Ways of the set-associative cache the peek loop's lines sit in: not in
/// the machine description; Itanium 2's L3 is 12-way, its L2 8-way
/// (docs/sched.md: sensitivity).
pub const PEEK_CACHE_WAYS: usize = 8;
/// Bytes one CPU's entry takes in the global array (`nr_running`, `cpu_load`).
pub const ARRAY_ENTRY_BYTES: u64 = 16;
/// Cycles of the loop body per CPU (compare, add, branch).
pub const PEEK_LOOP_CYCLES: f64 = 10.0;

/// Outcome of [`peek_all`].
#[derive(Debug, Clone, PartialEq)]
pub struct PeekResult {
    /// One loop over every CPU, us.
    pub peek_all_us: f64,
    pub tlb_misses: u64,
    pub cache_misses: u64,
}

/// A set-associative, virtually indexed cache of line addresses with LRU
/// replacement in each set.
struct ViCache {
    sets: Vec<Vec<u64>>,
    ways: usize,
    line: u64,
}

impl ViCache {
    fn new(size: u64, line: u64, ways: usize) -> Self {
        let sets = (size / (line * ways as u64)).max(1) as usize;
        ViCache {
            sets: vec![Vec::with_capacity(ways); sets],
            ways,
            line,
        }
    }
    /// True on a hit; a miss fills the line, evicting the set's LRU line.
    fn access(&mut self, vaddr: u64) -> bool {
        let l = vaddr / self.line;
        let nsets = self.sets.len();
        let set = &mut self.sets[(l % nsets as u64) as usize];
        if let Some(i) = set.iter().position(|&x| x == l) {
            let v = set.remove(i);
            set.push(v);
            return true;
        }
        if set.len() == self.ways {
            set.remove(0);
        }
        set.push(l);
        false
    }
}

/// CPU 0 reads `nr_running` and `cpu_load` of CPUs `0..cpus`, as the
/// balance loop does, in the machine's TLB and last-level cache; between
/// two loops the rest of a tick's work touches `other_pages` pages. The
/// second loop is timed. Per-CPU areas: each CPU's run queue at the same
/// offset of its own area (`boot.percpu_area` apart), the two fields on
/// two lines. Global array: the fields of all CPUs packed in one array.
pub fn peek_all(
    machine: &Machine,
    layout: RqLayout,
    cpus: u64,
    other_pages: u64,
    seed: u64,
) -> PeekResult {
    let page = machine.page_size.max(1);
    let line_b = u64::from(machine.cpu.cache_line.max(1));
    let llc = machine.cpu.caches.iter().max_by_key(|c| c.level);
    let (llc_size, llc_cycles) = llc.map_or((1 << 20, 10.0), |c| (c.size, c.latency_cycles));
    let cycle = 1e3 / machine.cpu.clock_mhz.max(1.0);
    let repl = match machine.tlb.refill {
        crate::machine::TlbRefill::Software => crate::kernel::mm::flavour::Replacement::RoundRobin,
        crate::machine::TlbRefill::Hardware => crate::kernel::mm::flavour::Replacement::Lru,
    };
    let entries = machine
        .tlb
        .entries
        .saturating_sub(machine.tlb.kernel_entries)
        .max(1);
    let mut tlb = Tlb::new(entries, repl, stream(seed, "peek-tlb", cpus));
    let mut cache = ViCache::new(llc_size, line_b, PEEK_CACHE_WAYS);
    let area = machine.boot.percpu_area.max(page);
    // Kernel virtual addresses: per-CPU areas from one base, the array in
    // the kernel's static data (both page aligned).
    const PERCPU_BASE: u64 = 1 << 40;
    const ARRAY_BASE: u64 = 1 << 41;
    const OTHER_BASE: u64 = 1 << 42;
    let fields = |c: u64| -> [(u64, usize); 2] {
        let owner = machine.cpu_node(c).unwrap_or(0);
        match layout {
            RqLayout::PercpuAreas => {
                let rq = PERCPU_BASE + c * area;
                [(rq, owner), (rq + line_b, owner)]
            }
            // Static kernel data: on the boot node.
            RqLayout::GlobalArray => {
                let e = ARRAY_BASE + c * ARRAY_ENTRY_BYTES;
                [(e, 0), (e + 8, 0)]
            }
        }
    };
    let run = |tlb: &mut Tlb, cache: &mut ViCache| -> (f64, u64, u64) {
        let (mut ns, mut tm, mut cm) = (0.0, 0u64, 0u64);
        for c in 0..cpus {
            for (va, owner) in fields(c) {
                if !tlb.access(va / page) {
                    tm += 1;
                    ns += machine.tlb.miss_ns;
                }
                if cache.access(va) {
                    ns += llc_cycles * cycle;
                } else {
                    cm += 1;
                    ns += machine.mem_latency_ns(0, owner);
                }
            }
            ns += PEEK_LOOP_CYCLES * cycle;
        }
        (ns, tm, cm)
    };
    run(&mut tlb, &mut cache);
    for p in 0..other_pages {
        tlb.access((OTHER_BASE + p * page) / page);
    }
    let (ns, tlb_misses, cache_misses) = run(&mut tlb, &mut cache);
    PeekResult {
        peek_all_us: ns / 1e3,
        tlb_misses,
        cache_misses,
    }
}
