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
//! The work one tick does is [`TickWork`] (its two lines and the knobs
//! that say which it touches); the experiment that raises ticks on every
//! CPU and measures how much of each tick the work takes is
//! `workload/timer_tick.rs`.

use rand::RngExt;

use crate::engine::rng::stream;
use crate::engine::{CostTable, Dur, Time};
use crate::kernel::locking::contention::{ContentionKnobs, ProfCpuMask, TimerAdjust};
use crate::kernel::locking::{line, Line};
use crate::machine::coherence::TickPhase;
use crate::machine::Machine;

/// One piece of a tick's work on the shared lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Work {
    /// Read then write the global adjustment variable.
    AdjustRead,
    AdjustWrite,
    /// Bump the idle routine's profile bin.
    Profile,
    /// The tick's work is done.
    Done,
}

/// The timer interrupt's work on lines every CPU shares: the global
/// HZ-vs-microseconds adjustment and the idle routine's profile bin.
pub struct TickWork<'a> {
    adjust: Line<'a>,
    profile: Line<'a>,
    timer_adjust: TimerAdjust,
    prof_cpu_mask: ProfCpuMask,
}

impl<'a> TickWork<'a> {
    pub fn new(machine: &Machine, cost: &'a CostTable, knobs: &ContentionKnobs) -> Self {
        TickWork {
            adjust: line(machine, cost, 0),
            profile: line(machine, cost, 0),
            timer_adjust: knobs.timer_adjust,
            prof_cpu_mask: knobs.prof_cpu_mask,
        }
    }

    /// The first piece of a tick's work.
    pub fn first(&self) -> Work {
        match self.timer_adjust {
            TimerAdjust::Global => Work::AdjustRead,
            TimerAdjust::PerCpu => self.after_adjust(),
        }
    }

    fn after_adjust(&self) -> Work {
        match self.prof_cpu_mask {
            ProfCpuMask::All => Work::Profile,
            ProfCpuMask::None => Work::Done,
        }
    }

    /// Does `work` on CPU `cpu` (on `node`) at `now`: when it ends and what
    /// comes next. `Done` has nothing to do.
    pub fn step(&mut self, now: Time, cpu: usize, node: usize, work: Work) -> (Time, Work) {
        match work {
            Work::AdjustRead => (self.adjust.read(now, cpu, node), Work::AdjustWrite),
            Work::AdjustWrite => (self.adjust.write(now, cpu, node), self.after_adjust()),
            Work::Profile => (self.profile.write(now, cpu, node), Work::Done),
            Work::Done => (now, Work::Done),
        }
    }
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
