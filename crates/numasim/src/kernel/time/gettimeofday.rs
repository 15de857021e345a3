//! ia64 `do_gettimeofday()` ([ALTIX04] C5): inside a seqlock read loop on
//! `xtime_lock`, read the shared "last value returned", read the clock,
//! then `cmpxchg` the shared word from the old value to the new one; if
//! another CPU changed it in between, the `cmpxchg` fails and the whole
//! sequence is retried (so time never goes backwards). A failed `cmpxchg`
//! still takes the line exclusively. The loop is mainline 2.6
//! `time_interpolator_get_counter()` (`kernel/timer.c`); its early return
//! when the last value is ahead of the clock never fires with one
//! synchronised clock source, so it is left out.
//!
//! A failed `cmpxchg` leaves the line, with the current value, in the
//! caller's cache, so the retry's load is a hit unless another CPU has taken
//! the line meanwhile. Every other access (a first load, a `cmpxchg` after
//! the line was taken) is one hand-off of the line to this CPU.
//!
//! N CPUs call it back to back; the model reports the mean time per call.
//! They do not start in lock step: each begins at a uniform moment within
//! one uncontended call (process start-up and the loop's own entry spread
//! them that much at least), drawn from the seed.

use rand::RngExt;

use crate::engine::rng::stream;
use crate::engine::{Dur, EventQueue, Time};
use crate::kernel::locking::contention::{Gettimeofday, Spinlock};
use crate::kernel::locking::line;
use crate::kernel::locking::seqlock::SeqLock;
use crate::kernel::locking::spinlock::spinlock;
use crate::machine::Machine;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GtodResult {
    /// Mean wall time of one call, ns.
    pub time_per_call_ns: f64,
    /// `cmpxchg` attempts per completed call.
    pub attempts_per_call: f64,
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

/// `threads` CPUs (0..threads) each make `calls` calls.
///
/// The shared word's line goes to one requester at a time. Who gets it
/// next is decided as the directory's NACK-and-retry protocol decides it:
/// the first waiter whose retry reaches the directory once the line is
/// free, i.e. transfer time plus where it was in its retry interval
/// (`coherence.spin_jitter_ns`), and each hand-off serves one NACK per
/// other waiter (`coherence.directory_ns`). That is the arbitration of a
/// test-and-set lock held for no time, so the engine's unfair
/// [`Lock`](crate::engine::Lock) carries it. A CPU that still holds the
/// line (nobody asked for it since) accesses it as a cache hit.
pub fn simulate(
    machine: &Machine,
    variant: Gettimeofday,
    threads: u64,
    calls: u64,
    seed: u64,
) -> GtodResult {
    simulate_calls(machine, variant, threads, calls.min(window(threads)), seed)
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
    let mut word = spinlock(machine, &cost, Spinlock::Tas, 0, seed, "gettimeofday-word");
    let mut xtime = SeqLock::new(line(machine, &cost, 0));
    // Bumped by every successful cmpxchg.
    let mut version = 0u64;
    // The CPU whose cache holds the word, if no one has asked for it since.
    let mut held_by: Option<usize> = None;
    let n = threads as usize;
    let node: Vec<usize> = (0..threads)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let syscall = Dur::from_ns_f64(machine.timer.syscall_ns);
    let clock = Dur::from_ns_f64(machine.timer.clock_read_ns);
    let mut seen = vec![0u64; n];
    let mut seq = vec![0u64; n];
    let mut done = vec![0u64; n];
    // The access each CPU waits for the line to make.
    let mut pending = vec![Step::Load; n];
    let mut finish = vec![Time::ZERO; n];
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
                // A hit if this CPU still holds the line, else ask for it
                // (a waiter is resumed by `Granted` when it arrives).
                pending[c] = step;
                if held_by == Some(c) {
                    (now, Step::Granted)
                } else {
                    held_by = None;
                    match word.acquire(now, c, node[c]) {
                        Some(t) => (t, Step::Granted),
                        None => continue,
                    }
                }
            }
            Step::Granted => {
                // The line is here: do the access, and let it go at once if
                // someone is waiting (their request recalls it).
                if word.holder().is_some_and(|(h, _)| h == c) {
                    if let Some(g) = word.release(now, c) {
                        q.push(g.at, (g.cpu, Step::Granted)).expect("future");
                    } else {
                        held_by = Some(c);
                    }
                }
                match pending[c] {
                    Step::Load => {
                        seen[c] = version;
                        (now + clock, Step::Cmpxchg)
                    }
                    _ => {
                        attempts += 1;
                        if seen[c] == version {
                            version += 1;
                            (now, Step::Exit)
                        } else {
                            // The failed cmpxchg returned the current value;
                            // the loop reloads it (a hit if still held).
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
    GtodResult {
        time_per_call_ns: mean,
        attempts_per_call: attempts as f64 / (n as f64 * calls as f64),
    }
}
