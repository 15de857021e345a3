//! ia64 `do_gettimeofday()` ([ALTIX04] C5) as 2.6.0–2.6.9 have it
//! (`arch/ia64/kernel/time.c`): inside a seqlock read section on
//! `xtime_lock`, load the shared `last_nsec_offset` and read the clock;
//! after `read_seqretry()`, `cmpxchg` the shared word from the old value to
//! the new one; if another CPU changed it in between, the `cmpxchg` fails
//! and the loop starts again (so time never goes backwards). A failed
//! `cmpxchg` still takes the line exclusively. Its early exit when the
//! stored offset is ahead of the clock never fires with one synchronised
//! clock source, so it is left out. (2.6.10's `time_interpolator_get_counter()`
//! in `kernel/timer.c` kept the `cmpxchg` only for sources with jitter,
//! which SN2's RTC is not.)
//!
//! A failed `cmpxchg` leaves the line, with the current value, in the
//! caller's cache, so the loop's reload is a hit: the line leaves only
//! when the next winner's request has reached the home and been forwarded
//! here, after those few instructions. Every other access (a first load, a
//! `cmpxchg` after the line was taken) is one hand-off of the line to this
//! CPU. The tick's `time_interpolator_update()` (`include/linux/timex.h`)
//! takes the word the same way, under `xtime_lock`'s write.
//!
//! The shared word is [`LastValue`]; the experiment in which N CPUs call
//! `gettimeofday()` back to back is `workload/gettimeofday.rs`.

use crate::engine::{CostTable, Grant, Lock, Time};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::{request_rt_per_transfer, spinlock};
use crate::machine::Machine;

/// The interpolator's shared "last value returned" word and the line it
/// lives on.
///
/// The line goes to one requester at a time. Who gets it next is decided
/// as the directory's NACK-and-retry protocol decides it: a waiter does not
/// spin on a cached copy (its load or `cmpxchg` is a request the home
/// NACKs while the line is in transit) but re-sends on each NACK, so it
/// reaches the home once per round trip to it; the first retry to arrive
/// once the line is free wins (`Lock::with_nack_retry`: far callers retry
/// less often and win less), and the winner's request waits at the
/// directory behind the other waiters' retries as deep as their load makes
/// the queue (`coherence.directory_ns` each; issue 34). That is the arbitration of a test-and-set
/// lock held for no time, so the engine's unfair [`Lock`] carries it. A CPU
/// that still holds the line (nobody asked for it since) accesses it as a
/// cache hit.
pub struct LastValue<'a> {
    line: Lock<&'a CostTable>,
    /// Bumped by every successful cmpxchg.
    version: u64,
    /// The CPU whose cache holds the word, if no one has asked for it since.
    held_by: Option<usize>,
    /// The value each CPU last loaded.
    seen: Vec<u64>,
}

impl<'a> LastValue<'a> {
    /// The word on node 0, read by CPUs `0..cpus`; `seed` draws the
    /// directory's retry jitter.
    pub fn new(machine: &Machine, cost: &'a CostTable, cpus: usize, seed: u64) -> Self {
        LastValue {
            line: spinlock(machine, cost, Spinlock::Tas, 0, seed, "gettimeofday-word")
                .with_nack_retry(request_rt_per_transfer(machine)),
            version: 0,
            held_by: None,
            seen: vec![0; cpus],
        }
    }

    /// CPU `cpu` (on `node`) wants the line for an access at `now`: when it
    /// has it (at once if it still holds it), or None if it waits, to be
    /// resumed by the grant [`arrived`](Self::arrived) returns to another.
    pub fn request(&mut self, now: Time, cpu: usize, node: usize) -> Option<Time> {
        if self.held_by == Some(cpu) {
            Some(now)
        } else {
            self.held_by = None;
            self.line.acquire(now, cpu, node)
        }
    }

    /// The line has reached `cpu`: it lets it go at once if someone is
    /// waiting (their request recalls it), whose grant this returns.
    pub fn arrived(&mut self, now: Time, cpu: usize) -> Option<Grant> {
        if self.line.holder().is_some_and(|(h, _)| h == cpu) {
            if let Some(g) = self.line.release(now, cpu) {
                return Some(g);
            }
            self.held_by = Some(cpu);
        }
        None
    }

    /// `cpu` loads the word (its line is here).
    pub fn load(&mut self, cpu: usize) {
        self.seen[cpu] = self.version;
    }

    /// `cpu`'s `cmpxchg` from the value it loaded: whether it succeeded.
    /// A failed one returns the current value, which the loop reloads.
    pub fn cmpxchg(&mut self, cpu: usize) -> bool {
        if self.seen[cpu] == self.version {
            self.version += 1;
            true
        } else {
            false
        }
    }
}
