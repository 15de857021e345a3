//! The `gettimeofday()` storm ([ALTIX04] C5; the `gettimeofday` workload
//! in `contention.rs`): N CPUs call it back to back, each call 2.6.0's
//! loop of an `xtime_lock` seqlock read section (the load of the shared
//! last-value word and the clock read) and a `cmpxchg` on that word
//! ([`LastValue`], `kernel/time/gettimeofday.rs`), while CPU 0's tick
//! writes `xtime_lock` and takes the word at `timer.hz`; the experiment
//! reports the mean time per call.
//!
//! The CPUs do not start in lock step: each begins at a uniform moment
//! within one uncontended call (process start-up and the loop's own entry
//! spread them that much at least), drawn from the seed.

use rand::RngExt;

use crate::engine::rng::stream;
use crate::engine::{Dur, Time, TopQueue};
use crate::kernel::locking::contention::Gettimeofday;
use crate::kernel::locking::line;
use crate::kernel::locking::seqlock::SeqLock;
use crate::kernel::time::gettimeofday::{Access, LastValue};
use crate::machine::Machine;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GtodResult {
    /// Mean wall time of one call, ns.
    pub time_per_call_ns: f64,
    /// `cmpxchg` attempts per completed call.
    pub attempts_per_call: f64,
    /// Grants of the shared word's line per completed call: every access
    /// a caller waits on the word for (its loads, hits on a copy it still
    /// holds included, and its `cmpxchg`s that missed), and the time
    /// keeper's.
    pub grants_per_call: f64,
    /// Calls each thread made, when fewer than asked (a [`window`]).
    pub windowed_calls: Option<u64>,
    /// Callers that had not finished one call when the first caller
    /// finished all of its own: the arbitration starves the callers far
    /// from the word's home, so a window's mean is below the full run's.
    pub starved_callers: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Enter the system call.
    Enter,
    /// `read_seqbegin(&xtime_lock)`, then load the shared word.
    Begin,
    /// Load the shared last-value word (`old = last_nsec_offset`).
    Load,
    /// The clock has been read: `read_seqretry()`.
    Check,
    /// Try the `cmpxchg`.
    Cmpxchg,
    /// Leave the system call.
    Exit,
    /// The shared word's line has reached this CPU for its pending access.
    Granted,
    /// The time keeper's tick interrupt: its work starts now, or when the
    /// previous tick's work ends.
    Tick,
    /// The time keeper's `write_seqlock(&xtime_lock)` and its request
    /// for the shared word, for one tick.
    TickWork,
    /// The time keeper's `write_sequnlock(&xtime_lock)`.
    TickEnd,
}

/// `threads` CPUs (0..threads) each make `calls` calls, or a window of
/// them (see [`window`]).
pub fn simulate(
    machine: &Machine,
    variant: Gettimeofday,
    threads: u64,
    calls: u64,
    seed: u64,
) -> GtodResult {
    let w = calls.min(window(threads));
    let budget = (w < calls).then_some(WINDOW_GRANTS);
    GtodResult {
        windowed_calls: (w < calls).then_some(w),
        ..run(machine, variant, threads, w, seed, budget, true)
    }
}

/// Thread-calls simulated event by event at most: beyond it each thread
/// makes only a window of its calls and the mean is taken over that window.
/// Every call of the loop is alike once the threads are in step (the storm
/// is a steady state, not a trend), so a window of calls samples it the way
/// the fault simulations sample pages; 2^17 keeps every case of today's
/// experiments (up to 64 threads x 200 calls, and 512 x 200) whole.
pub const WINDOW_THREAD_CALLS: u64 = 1 << 17;
/// Fewest calls per thread in a window, so the start-up stagger stays a
/// small part of the mean.
pub const MIN_WINDOW_CALLS: u64 = 8;

/// Grants of the shared word's line a window simulates at most (issue 31).
/// A call needs more grants as callers grow (attempts per call rise, and
/// past a few hundred callers the tick's `xtime_lock` write voids most
/// read sections, each of which took a grant), so a window of calls alone
/// would cost more than n log n; once this many grants are served the
/// window stops and the mean comes from the time the threads spent in
/// calls over the calls they completed (Little's law: every thread is
/// always inside a call), which counts a starving caller's time too.
pub const WINDOW_GRANTS: u64 = 8 * WINDOW_THREAD_CALLS;

/// Calls per thread simulated for `threads` threads.
pub fn window(threads: u64) -> u64 {
    (WINDOW_THREAD_CALLS / threads.max(1)).max(MIN_WINDOW_CALLS)
}

/// As [`simulate`], every one of the `calls` calls event by event. With
/// [`Gettimeofday::Seqcount`] a call is the seqlock read section around
/// the clock read, and the shared word is never touched.
pub fn simulate_calls(
    machine: &Machine,
    variant: Gettimeofday,
    threads: u64,
    calls: u64,
    seed: u64,
) -> GtodResult {
    run(machine, variant, threads, calls, seed, None, true)
}

/// As [`simulate_calls`], with every load of the shared word taking its
/// line exclusively, as a `cmpxchg` does (issue 34's model before loads
/// became shared reads): what the shared reads change, measured.
pub fn simulate_exclusive_loads(
    machine: &Machine,
    variant: Gettimeofday,
    threads: u64,
    calls: u64,
    seed: u64,
) -> GtodResult {
    run(machine, variant, threads, calls, seed, None, false)
}

/// As [`simulate_calls`], stopping once the line has made `budget` grants
/// (see [`WINDOW_GRANTS`]); public for the tests that check the estimate.
pub fn simulate_budget(
    machine: &Machine,
    variant: Gettimeofday,
    threads: u64,
    calls: u64,
    seed: u64,
    budget: u64,
) -> GtodResult {
    run(machine, variant, threads, calls, seed, Some(budget), true)
}

fn run(
    machine: &Machine,
    variant: Gettimeofday,
    threads: u64,
    calls: u64,
    seed: u64,
    budget: Option<u64>,
    shared_reads: bool,
) -> GtodResult {
    let cost = machine.line_cost_table();
    let n = threads as usize;
    // The time keeper (CPU 0's timer interrupt) takes the shared word as
    // requester `n`, on CPU 0's node: its handler and CPU 0's own call are
    // two actors here (the handler's few µs inside CPU 0's call are left out).
    let keeper = n;
    let mut word = LastValue::new(machine, &cost, n + 1, seed);
    if !shared_reads {
        word = word.with_exclusive_loads();
    }
    let mut xtime = SeqLock::new(line(machine, &cost, 0));
    let mut node: Vec<usize> = (0..threads)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    node.push(node.first().copied().unwrap_or(0));
    let syscall = Dur::from_ns_f64(machine.timer.syscall_ns);
    let clock = Dur::from_ns_f64(machine.timer.clock_read_ns);
    let mut seq = vec![0u64; n];
    let mut done = vec![0u64; n];
    // The access each CPU waits for the line to make.
    let mut pending = vec![Step::Load; n + 1];
    let mut finish = vec![Time::ZERO; n];
    // When each caller finished its first call (the starvation check).
    let mut first_done = vec![None; n];
    let mut attempts = 0u64;
    let mut q = TopQueue::with_capacity(n + 1);
    let mut rng = stream(seed, "gettimeofday-start", threads);
    let one_call = (syscall + clock).as_ns().max(1);
    let mut start = vec![Time::ZERO; n];
    for (c, s) in start.iter_mut().enumerate() {
        *s = Time(rng.random_range(0..one_call));
        q.push(*s, (c, Step::Enter)).expect("empty queue");
    }
    // The tick writes only where the shared word is the interpolator's.
    let period = machine.tick_ns().round() as u64;
    let ticks = variant == Gettimeofday::Cmpxchg && period > 0;
    if ticks {
        // CPU 0's tick phase against the callers' start: unrelated instants.
        let phase = stream(seed, "gettimeofday-tick", threads).random_range(0..period);
        q.push(Time(phase), (keeper, Step::Tick))
            .expect("empty queue");
    }
    let mut running = n;
    let (mut keeper_busy, mut ticks_owed) = (false, 0u64);
    let mut grants = 0u64;
    // The grants one arrival of the line gives (the next owner, readers).
    let mut granted = Vec::new();
    let mut stopped = None;
    // The handled event stays on top of the heap until the handler's
    // first new event replaces it (`TopQueue`: one sift, mostly stopping
    // at once since a caller's next step is near, where pop then push took
    // two; the same order).
    while let Some((now, (c, step))) = q.take_next() {
        let (at, next) = match step {
            Step::Enter => (now + syscall, Step::Begin),
            Step::Begin => {
                let (t, s) = xtime.read_begin(now, c, node[c]);
                seq[c] = s;
                match variant {
                    Gettimeofday::Cmpxchg => (t, Step::Load),
                    Gettimeofday::Seqcount => (t + clock, Step::Check),
                }
            }
            Step::Load | Step::Cmpxchg => {
                // A waiter is resumed by `Granted` when the line arrives.
                pending[c] = step;
                let access = match step {
                    Step::Load => Access::Load,
                    _ => Access::Cmpxchg,
                };
                match word.request(now, c, node[c], access) {
                    Some(t) => (t, Step::Granted),
                    None => continue,
                }
            }
            Step::Check => {
                let (t, retry) = xtime.read_retry(now, c, node[c], seq[c]);
                match (retry, variant) {
                    (true, _) => (t, Step::Begin),
                    (false, Gettimeofday::Cmpxchg) => (t, Step::Cmpxchg),
                    (false, Gettimeofday::Seqcount) => (t, Step::Exit),
                }
            }
            Step::Granted => {
                grants += 1;
                if budget.is_some_and(|b| grants > b) {
                    stopped = Some(now);
                    break;
                }
                word.arrived(now, c, &mut granted);
                for g in granted.drain(..) {
                    q.push(g.at, (g.cpu, Step::Granted)).expect("future");
                }
                if c == keeper {
                    // `time_interpolator_update()`: the load and its
                    // `cmpxchg` back to back while the line is here, then
                    // the SN2 interpolator's `update()` reads the RTC.
                    word.load(c);
                    word.cmpxchg(c);
                    q.push(now + clock, (c, Step::TickEnd)).expect("future");
                    continue;
                }
                match pending[c] {
                    Step::Load => {
                        word.load(c);
                        (now + clock, Step::Check)
                    }
                    _ => {
                        attempts += 1;
                        if word.cmpxchg(c) {
                            (now, Step::Exit)
                        } else {
                            // Back to the loop's top: `read_seqbegin()` and
                            // the reload, a hit: the failed `cmpxchg` brought
                            // the line, which leaves only when the next
                            // winner's request has reached the home and been
                            // forwarded here, after these few instructions.
                            let (t, s) = xtime.read_begin(now, c, node[c]);
                            seq[c] = s;
                            word.load(c);
                            (t + clock, Step::Check)
                        }
                    }
                }
            }
            Step::Tick => {
                if running > 0 {
                    q.push(now + Dur(period), (keeper, Step::Tick))
                        .expect("future");
                }
                // A tick that comes while the handler still runs is taken
                // when it returns: ia64's `timer_interrupt()` loops, one
                // `do_timer()` under `xtime_lock` per tick it is behind.
                if keeper_busy {
                    ticks_owed += 1;
                    continue;
                }
                keeper_busy = true;
                (now, Step::TickWork)
            }
            Step::TickWork => {
                let t = xtime.write_lock(now, 0, node[keeper]);
                pending[keeper] = Step::Cmpxchg;
                match word.request(t, keeper, node[keeper], Access::Cmpxchg) {
                    Some(t) => (t, Step::Granted),
                    None => continue,
                }
            }
            Step::TickEnd => {
                xtime.write_unlock(now, 0, node[keeper]);
                if ticks_owed == 0 {
                    keeper_busy = false;
                    continue;
                }
                ticks_owed -= 1;
                (now, Step::TickWork)
            }
            Step::Exit => {
                done[c] += 1;
                first_done[c].get_or_insert(now);
                if done[c] == calls {
                    finish[c] = now;
                    running -= 1;
                    continue;
                }
                (now, Step::Enter)
            }
        };
        q.push(at, (c, next))
            .expect("completion is not in the past");
    }
    let first_finish = finish
        .iter()
        .zip(&done)
        .filter(|&(_, &d)| d == calls)
        .map(|(&t, _)| t)
        .min()
        .or(stopped)
        .unwrap_or(Time::ZERO);
    let starved_callers = first_done
        .iter()
        .filter(|t| t.is_none_or(|t| t > first_finish))
        .count() as u64;
    // A thread still in a call when the window stopped was in calls until then.
    let end = |c: usize| match stopped {
        Some(t) if done[c] < calls => t,
        _ => finish[c],
    };
    let thread_ns: f64 = (0..n).map(|c| (end(c) - start[c]).as_ns() as f64).sum();
    let completed = match stopped {
        Some(_) => (done.iter().sum::<u64>() as f64).max(1.0),
        None => n as f64 * calls as f64,
    };
    GtodResult {
        time_per_call_ns: thread_ns / completed,
        attempts_per_call: attempts as f64 / completed,
        grants_per_call: grants.min(budget.unwrap_or(u64::MAX)) as f64 / completed,
        windowed_calls: None,
        starved_callers,
    }
}

/// The run note for a `gettimeofday` step whose kernel reads the clock
/// through a seqcount because no one chose otherwise: on x86 (and any
/// non-ia64 machine) that is the default, a call writes nothing shared, so
/// the time per call stays flat with callers and the storm ALTIX04 C5
/// describes cannot show. `explicit`: the scenario, a case or `--set` names
/// `kernel.gettimeofday`, so the choice was the user's and needs no note.
pub fn seqcount_default_note(
    case: &crate::workload::sim::ResolvedCase,
    explicit: bool,
) -> Option<String> {
    let gtod = case
        .steps
        .iter()
        .any(|s| s.get("workload").and_then(toml::Value::as_str) == Some("gettimeofday"));
    (gtod && !explicit && case.kernel.contention.gettimeofday == Gettimeofday::Seqcount).then(
        || {
            format!(
                "`gettimeofday` on machine `{}`: its default kernel.gettimeofday = \"seqcount\" \
             (the vDSO/clocksource read, nothing shared written per call) shows no contention: \
             the time per call stays flat with callers; set kernel.gettimeofday = \"cmpxchg\" \
             for ia64's shared last-value word, the storm of ALTIX04 (docs/contention.md)",
                case.machine.name
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets;

    /// The same seed gives the same storm, shared readers' retry phases
    /// included; another seed another one.
    #[test]
    fn the_same_seed_gives_the_same_storm() {
        let m = presets::preset("altix-512").unwrap();
        let a = simulate(&m, Gettimeofday::Cmpxchg, 16, 40, 7);
        assert_eq!(a, simulate(&m, Gettimeofday::Cmpxchg, 16, 40, 7));
        assert_ne!(a, simulate(&m, Gettimeofday::Cmpxchg, 16, 40, 8));
    }

    /// Two callers: a load that finds the word dirty in the other's cache
    /// takes a shared copy (an intervention), so the `cmpxchg` after it
    /// must upgrade it, invalidating the other's copy: two transactions a
    /// call where an exclusive load left the `cmpxchg` a hit. Shared reads
    /// cost more where contention is light.
    #[test]
    fn a_shared_load_makes_the_cmpxchg_an_upgrade() {
        let m = presets::preset("altix-512").unwrap();
        let shared = simulate_calls(&m, Gettimeofday::Cmpxchg, 2, 200, 1);
        let excl = simulate_exclusive_loads(&m, Gettimeofday::Cmpxchg, 2, 200, 1);
        assert!(
            shared.time_per_call_ns > 1.2 * excl.time_per_call_ns,
            "shared {shared:?} exclusive {excl:?}"
        );
        let one = simulate_calls(&m, Gettimeofday::Cmpxchg, 1, 200, 1);
        let one_excl = simulate_exclusive_loads(&m, Gettimeofday::Cmpxchg, 1, 200, 1);
        // One caller: all hits but after the tick's update took the word.
        let d = one.time_per_call_ns / one_excl.time_per_call_ns - 1.0;
        assert!(d.abs() < 0.01, "one caller: {one:?} {one_excl:?}");
    }
}
