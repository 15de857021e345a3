//! The timer-tick experiment ([ALTIX04] C2, C3; the `tick` workload in
//! `contention.rs`): every CPU takes `TICKS` ticks at its own phase
//! (`kernel/time/tick.rs`'s `phases`) and does the tick's work on the
//! shared lines ([`TickWork`]).
//!
//! A CPU's tick work starts at its tick (or when the previous tick's work
//! finishes, if that is later: the interrupt stays pending) and ends when
//! its writes are done. **Forward progress** is the share of the tick left
//! over; a machine whose tick work does not finish before the next tick
//! falls further behind at every tick and does not boot.

use crate::engine::{Dur, Time, TopQueue};
use crate::kernel::locking::contention::ContentionKnobs;
use crate::kernel::time::tick::{phases, TickWork, Work};
use crate::machine::Machine;

/// Ticks simulated: enough for a backlog to show (each saturated tick adds
/// to it) while a stable machine settles after the first.
pub const TICKS: u64 = 8;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickResult {
    /// Mean share of each tick a CPU spends on the shared-line work.
    pub tick_work_fraction: f64,
    /// Whether every CPU finished its tick work before its next tick.
    pub boots: bool,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    /// The timer interrupt of tick `k` is raised.
    Tick(u64),
    /// A piece of the tick's work.
    Work(Work),
}

/// Simulate `TICKS` ticks on CPUs `0..cpus` of `machine`.
pub fn simulate(machine: &Machine, knobs: &ContentionKnobs, cpus: u64, seed: u64) -> TickResult {
    let cost = machine.line_cost_table();
    let period = Dur::from_ns_f64(machine.tick_ns());
    let mut work = TickWork::new(machine, &cost, knobs);
    let n = cpus as usize;
    let node: Vec<usize> = (0..cpus)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let phase = phases(machine.timer.tick_phase, cpus, period.as_ns(), seed);
    // When CPU c's tick k is raised.
    let tick_at = |c: usize, k: u64| Time::ZERO + phase[c] + Dur(period.as_ns() * k);
    let mut q = TopQueue::with_capacity(n);
    for c in 0..n {
        q.push(tick_at(c, 0), (c, Step::Tick(0)))
            .expect("empty queue");
    }
    let mut started = vec![Time::ZERO; n];
    let mut busy = vec![Dur(0); n];
    let mut late = false;
    let mut last_done = vec![Time::ZERO; n];
    let first = Step::Work(work.first());
    // Ticks are raised at fixed times; work for tick k starts at the later
    // of its tick and the end of tick k-1's work.
    let mut pending: Vec<u64> = vec![0; n];
    let mut working = vec![false; n];
    // The handled event stays on top of the heap until the handler's
    // first new event replaces it (`TopQueue`: one sift where pop then
    // push take two; the same order).
    macro_rules! emit {
        ($at:expr, $ev:expr) => {
            q.push($at, $ev).expect("not before now")
        };
    }
    while let Some((now, (c, step))) = q.take_next() {
        match step {
            Step::Tick(k) => {
                let next = (k + 1 < TICKS).then(|| tick_at(c, k + 1));
                if working[c] {
                    pending[c] += 1;
                    if let Some(t) = next {
                        emit!(t, (c, Step::Tick(k + 1)));
                    }
                    continue;
                }
                working[c] = true;
                started[c] = now;
                // The work (now) takes the top and the next tick (a period
                // on) is pushed: the two take this handler's consecutive
                // sequence numbers and their times differ, so swapping
                // them from tick-first changes no comparison (aim7's
                // `near_first`); a sift down the heap is saved.
                match next {
                    Some(t) if now < t => {
                        emit!(now, (c, first));
                        emit!(t, (c, Step::Tick(k + 1)));
                    }
                    Some(t) => {
                        emit!(t, (c, Step::Tick(k + 1)));
                        emit!(now, (c, first));
                    }
                    None => emit!(now, (c, first)),
                }
            }
            Step::Work(Work::Done) => {
                busy[c] += now - started[c];
                last_done[c] = now;
                if pending[c] > 0 {
                    pending[c] -= 1;
                    started[c] = now;
                    emit!(now, (c, first));
                } else {
                    working[c] = false;
                }
            }
            Step::Work(w) => {
                let (at, next) = work.step(now, c, node[c], w);
                emit!(at, (c, Step::Work(next)));
            }
        }
    }
    // The last tick's work must end before the tick after it is raised.
    for c in 0..n {
        let deadline = tick_at(c, TICKS);
        if last_done[c] > deadline || pending[c] > 0 || working[c] {
            late = true;
        }
    }
    let total: f64 = busy.iter().map(|d| d.as_ns() as f64).sum();
    let frac = total / (n.max(1) as f64 * period.as_ns() as f64 * TICKS as f64);
    TickResult {
        tick_work_fraction: frac.min(1.0),
        boots: !late,
    }
}
