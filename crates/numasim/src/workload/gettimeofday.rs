//! The `gettimeofday()` storm ([ALTIX04] C5; the `gettimeofday` workload
//! in `contention.rs`): N CPUs call it back to back, each call the
//! `xtime_lock` seqlock read section around the interpolator's `cmpxchg`
//! on the shared last-value word ([`LastValue`], `kernel/time/gettimeofday.rs`);
//! the experiment reports the mean time per call.
//!
//! The CPUs do not start in lock step: each begins at a uniform moment
//! within one uncontended call (process start-up and the loop's own entry
//! spread them that much at least), drawn from the seed.

use rand::RngExt;

use crate::engine::rng::stream;
use crate::engine::{Dur, EventQueue, Time};
use crate::kernel::locking::contention::Gettimeofday;
use crate::kernel::locking::line;
use crate::kernel::locking::seqlock::SeqLock;
use crate::kernel::time::gettimeofday::LastValue;
use crate::machine::Machine;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GtodResult {
    /// Mean wall time of one call, ns.
    pub time_per_call_ns: f64,
    /// `cmpxchg` attempts per completed call.
    pub attempts_per_call: f64,
    /// Calls each thread made, when fewer than asked (a [`window`]).
    pub windowed_calls: Option<u64>,
    /// Callers that had not finished one call when the first caller
    /// finished all of its own: the arbitration starves the callers far
    /// from the word's home, so a window's mean is below the full run's.
    pub starved_callers: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Enter the system call and open the seqlock read section.
    Enter,
    /// Load the shared last-value word.
    Load,
    /// Read the clock, then try the `cmpxchg`.
    Cmpxchg,
    /// Close the seqlock read section and leave.
    Exit,
    /// The shared word's line has reached this CPU for its pending access.
    Granted,
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
    GtodResult {
        windowed_calls: (w < calls).then_some(w),
        ..simulate_calls(machine, variant, threads, w, seed)
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
    let cost = machine.line_cost_table();
    let n = threads as usize;
    let mut word = LastValue::new(machine, &cost, n, seed);
    let mut xtime = SeqLock::new(line(machine, &cost, 0));
    let node: Vec<usize> = (0..threads)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let syscall = Dur::from_ns_f64(machine.timer.syscall_ns);
    let clock = Dur::from_ns_f64(machine.timer.clock_read_ns);
    let mut seq = vec![0u64; n];
    let mut done = vec![0u64; n];
    // The access each CPU waits for the line to make.
    let mut pending = vec![Step::Load; n];
    let mut finish = vec![Time::ZERO; n];
    // When each caller finished its first call (the starvation check).
    let mut first_done = vec![None; n];
    let mut attempts = 0u64;
    let mut q = EventQueue::with_capacity(n);
    let mut rng = stream(seed, "gettimeofday-start", threads);
    let one_call = (syscall + clock).as_ns().max(1);
    let mut start = vec![Time::ZERO; n];
    for (c, s) in start.iter_mut().enumerate() {
        *s = Time(rng.random_range(0..one_call));
        q.push(*s, (c, Step::Enter)).expect("empty queue");
    }
    while let Some((now, (c, step))) = q.pop() {
        let (at, next) = match step {
            Step::Enter => {
                let (t, s) = xtime.read_begin(now + syscall, c, node[c]);
                seq[c] = s;
                match variant {
                    Gettimeofday::Cmpxchg => (t, Step::Load),
                    Gettimeofday::Seqcount => (t + clock, Step::Exit),
                }
            }
            Step::Load | Step::Cmpxchg => {
                // A waiter is resumed by `Granted` when the line arrives.
                pending[c] = step;
                match word.request(now, c, node[c]) {
                    Some(t) => (t, Step::Granted),
                    None => continue,
                }
            }
            Step::Granted => {
                if let Some(g) = word.arrived(now, c) {
                    q.push(g.at, (g.cpu, Step::Granted)).expect("future");
                }
                match pending[c] {
                    Step::Load => {
                        word.load(c);
                        (now + clock, Step::Cmpxchg)
                    }
                    _ => {
                        attempts += 1;
                        if word.cmpxchg(c) {
                            (now, Step::Exit)
                        } else {
                            // The loop reloads (a hit if still held).
                            (now, Step::Load)
                        }
                    }
                }
            }
            Step::Exit => {
                let (t, retry) = xtime.read_retry(now, c, node[c], seq[c]);
                if retry {
                    match variant {
                        Gettimeofday::Cmpxchg => (t, Step::Load),
                        Gettimeofday::Seqcount => (t + clock, Step::Exit),
                    }
                } else {
                    done[c] += 1;
                    first_done[c].get_or_insert(t);
                    if done[c] == calls {
                        finish[c] = t;
                        continue;
                    }
                    (t, Step::Enter)
                }
            }
        };
        q.push(at, (c, next))
            .expect("completion is not in the past");
    }
    let mean = finish
        .iter()
        .zip(&start)
        .map(|(&t, &s)| (t - s).as_ns() as f64)
        .sum::<f64>()
        / (n as f64 * calls as f64);
    let first_finish = finish.iter().copied().min().unwrap_or(Time::ZERO);
    GtodResult {
        time_per_call_ns: mean,
        attempts_per_call: attempts as f64 / (n as f64 * calls as f64),
        windowed_calls: None,
        starved_callers: first_done
            .iter()
            .filter(|t| t.is_none_or(|t| t > first_finish))
            .count() as u64,
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
