//! The timer tick and its per-tick work on shared lines.
//!
//! At every tick (`HZ` per second on every CPU) each CPU runs the timer
//! interrupt. Two pieces of that work can write a line shared by all CPUs:
//!
//! - the profiler (C2): each CPU in `prof_cpu_mask` increments the profile
//!   bin of the routine it interrupted — on an idle or booting machine the
//!   idle routine's, so one line. ia64 `ia64_do_profile()` does it with an
//!   atomic increment: one exclusive access.
//! - the HZ-vs-microseconds adjustment (C3): with `timer_adjust = global`
//!   every CPU reads and then writes one global variable: a load that
//!   fetches the line from its last writer, then a store that upgrades it
//!   (invalidating that writer's copy). Per-CPU, each CPU keeps its own
//!   copy and never misses.
//!
//! **Phases.** ia64 `ia64_cpu_local_tick()` programs a CPU's first tick one
//! period plus a stagger shift (`(2(cpu − hi) + 1)·period/(2·hi)`, `hi` the
//! highest power of two ≤ cpu) after the moment that CPU runs it during its
//! own bring-up; APs come up one after another, milliseconds apart, and SN2
//! does not synchronise their ITCs, so the moment is unrelated to the
//! period. `timer.tick_phase = "bringup"` therefore draws each CPU's phase
//! uniformly from the seed; "stagger" is the shift alone; "aligned" puts
//! every tick at one instant (no kernel does; kept for sensitivity).
//!
//! A CPU's tick work starts at its tick (or when the previous tick's work
//! finishes, if that is later: the interrupt stays pending) and ends when
//! its writes are done. **Forward progress** is the share of the tick left
//! over; a machine whose tick work does not finish before the next tick
//! falls further behind at every tick and does not boot.

use rand::RngExt;

use crate::engine::rng::stream;
use crate::engine::{Dur, EventQueue, Time};
use crate::kernel::locking::contention::{ContentionKnobs, ProfCpuMask, TimerAdjust};
use crate::kernel::locking::line;
use crate::machine::coherence::TickPhase;
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
    /// Read then write the global adjustment variable.
    AdjustRead,
    AdjustWrite,
    /// Bump the idle routine's profile bin.
    Profile,
    Done,
}

/// Phase of each CPU's tick within `period` ns; see the module docs.
pub fn phases(rule: TickPhase, cpus: u64, period: u64, seed: u64) -> Vec<Dur> {
    let mut rng = stream(seed, "tick-phase", cpus);
    (0..cpus)
        .map(|c| match rule {
            TickPhase::Aligned => Dur(0),
            TickPhase::Stagger => Dur(stagger_shift(c, period)),
            TickPhase::Bringup => Dur(rng.random_range(0..period.max(1))),
        })
        .collect()
}

/// The shift `ia64_cpu_local_tick()` adds for `cpu`: CPUs 1, 2–3, 4–7, …
/// fill the gaps of the ones before, halving the spacing each time.
pub fn stagger_shift(cpu: u64, period: u64) -> u64 {
    if cpu == 0 {
        return 0;
    }
    let hi = 1u64 << (63 - cpu.leading_zeros());
    (2 * (cpu - hi) + 1) * period / hi / 2
}

/// Simulate `TICKS` ticks on CPUs `0..cpus` of `machine`.
pub fn simulate(machine: &Machine, knobs: &ContentionKnobs, cpus: u64, seed: u64) -> TickResult {
    let cost = machine.line_cost_table();
    let period = Dur::from_ns_f64(machine.tick_ns());
    let mut adjust = line(machine, &cost, 0);
    let mut profile = line(machine, &cost, 0);
    let n = cpus as usize;
    let node: Vec<usize> = (0..cpus)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let phase = phases(machine.timer.tick_phase, cpus, period.as_ns(), seed);
    // When CPU c's tick k is raised.
    let tick_at = |c: usize, k: u64| Time::ZERO + phase[c] + Dur(period.as_ns() * k);
    let mut q = EventQueue::with_capacity(n);
    for c in 0..n {
        q.push(tick_at(c, 0), (c, Step::Tick(0)))
            .expect("empty queue");
    }
    let mut started = vec![Time::ZERO; n];
    let mut busy = vec![Dur(0); n];
    let mut late = false;
    let mut last_done = vec![Time::ZERO; n];
    let first = |_c: usize| match knobs.timer_adjust {
        TimerAdjust::Global => Step::AdjustRead,
        TimerAdjust::PerCpu => after_adjust(knobs),
    };
    // Ticks are raised at fixed times; work for tick k starts at the later
    // of its tick and the end of tick k-1's work.
    let mut pending: Vec<u64> = vec![0; n];
    let mut working = vec![false; n];
    while let Some((now, (c, step))) = q.pop() {
        let next = match step {
            Step::Tick(k) => {
                if k + 1 < TICKS {
                    q.push(tick_at(c, k + 1), (c, Step::Tick(k + 1)))
                        .expect("future");
                }
                if working[c] {
                    pending[c] += 1;
                    continue;
                }
                working[c] = true;
                started[c] = now;
                q.push(now, (c, first(c))).expect("now");
                continue;
            }
            Step::AdjustRead => (adjust.read(now, c, node[c]), Step::AdjustWrite),
            Step::AdjustWrite => (adjust.write(now, c, node[c]), after_adjust(knobs)),
            Step::Profile => (profile.write(now, c, node[c]), Step::Done),
            Step::Done => {
                busy[c] += now - started[c];
                last_done[c] = now;
                if pending[c] > 0 {
                    pending[c] -= 1;
                    started[c] = now;
                    q.push(now, (c, first(c))).expect("now");
                } else {
                    working[c] = false;
                }
                continue;
            }
        };
        q.push(next.0, (c, next.1))
            .expect("completion is not in the past");
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

fn after_adjust(knobs: &ContentionKnobs) -> Step {
    match knobs.prof_cpu_mask {
        ProfCpuMask::All => Step::Profile,
        ProfCpuMask::None => Step::Done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stagger_fills_the_period_evenly_for_a_power_of_two() {
        // ia64_cpu_local_tick(): CPUs 0..2^k land on the 2^k slots of the
        // period, each once.
        let period = 1 << 20;
        for k in 0..10u32 {
            let n = 1u64 << k;
            let mut shifts: Vec<u64> = (0..n).map(|c| stagger_shift(c, period)).collect();
            shifts.sort_unstable();
            let want: Vec<u64> = (0..n).map(|i| i * period / n).collect();
            assert_eq!(shifts, want, "{n} CPUs");
        }
    }

    #[test]
    fn bringup_phases_are_seeded_and_inside_the_period() {
        let a = phases(TickPhase::Bringup, 64, 1000, 7);
        assert_eq!(a, phases(TickPhase::Bringup, 64, 1000, 7));
        assert_ne!(a, phases(TickPhase::Bringup, 64, 1000, 8));
        assert!(a.iter().all(|d| d.as_ns() < 1000));
        assert!(phases(TickPhase::Aligned, 64, 1000, 7)
            .iter()
            .all(|d| d.as_ns() == 0));
    }
}
