//! Early boot on a machine with a few busy CPUs and many idle ones, whose
//! `load_balance()` keeps failing on the busy CPU's queue ([ALTIX04] E2,
//! altix-loadbalance-livelock): the set-up, the live-lock test and the
//! balance intervals with their back-off variants are described in
//! `kernel/sched/fair.rs`, which holds the mechanism's constants; the
//! busiest run queue's lock is the kernel's [`RqLock`]. This driver owns
//! the events and the busy CPU's accounting.

use crate::engine::{Dur, EventQueue, Time};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::{line, Line};
use crate::kernel::sched::core::SchedCosts;
use crate::kernel::sched::fair::{RQ_LINES, TASK_LINES};
use crate::kernel::sched::rq::RqLock;
use crate::kernel::sched::{BalanceBackoff, SchedKnobs};
use crate::kernel::time::tick;
use crate::machine::Machine;

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

/// Simulate `window` of early boot on CPUs `0..cpus`; see `kernel/sched/fair.rs`.
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
    let mut rq: RqLock<Why> = RqLock::new(
        spinlock(machine, &cost, spin, node[0], seed, "rq-lock-0"),
        n,
    );
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

    let want = |q: &mut EventQueue<Ev>, rq: &mut RqLock<Why>, now: Time, cpu: usize, w: Why| {
        if let Some(at) = rq.want(now, cpu, node[cpu], w) {
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
                want(&mut q, &mut rq, now, 0, Why::Tick);
            }
            Ev::Migration => {
                in_tick = true;
                want(&mut q, &mut rq, now, 0, Why::Migration);
            }
            Ev::Balance(cpu) => {
                // find_busiest_queue(): read the busiest's nr_running.
                let t = rq_lines[0].read(now, cpu, node[cpu]);
                attempts += u64::from(now >= measure_from);
                want(&mut q, &mut rq, t, cpu, Why::Balance);
            }
            Ev::Granted(cpu) => {
                let (w, asked) = rq.wanting(cpu).expect("a CPU holds the lock for a reason");
                let mut t = now;
                match w {
                    Why::Tick | Why::Migration => {
                        // Only the busy CPU 0 ticks and runs the migration thread.
                        let wait = now - asked;
                        if asked >= measure_from {
                            max_wait = max_wait.max(wait);
                        }
                        busy_wait += clip(asked, now);
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
                let (w, asked) = rq.wanting(cpu).expect("a CPU holds the lock for a reason");
                if let Some(g) = rq.release(now, cpu) {
                    q.push(g.at, Ev::Granted(g.cpu)).expect("future");
                }
                match w {
                    Why::Tick | Why::Migration => {
                        if w == Why::Migration {
                            migration_time += clip(asked, now);
                            migration_queued = false;
                        }
                        if tick_pending > 0 {
                            tick_pending -= 1;
                            want(&mut q, &mut rq, now, 0, Why::Tick);
                        } else if migration_queued && w == Why::Tick {
                            want(&mut q, &mut rq, now, 0, Why::Migration);
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
                            want(&mut q, &mut rq, now, cpu, Why::WakeMigration);
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
                                    want(&mut q, &mut rq, now, cpu, Why::Active);
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
    // (CPU 0 only ever asks for its tick or its migration thread.)
    if let Some((_, asked)) = rq.wanting(0).filter(|_| in_tick) {
        if rq.lock.holder().map(|h| h.0) != Some(0) {
            let wait = end - asked.min(end);
            if asked >= measure_from || wait > Dur(period) {
                max_wait = max_wait.max(wait);
            }
            busy_wait += clip(asked, end);
        }
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
