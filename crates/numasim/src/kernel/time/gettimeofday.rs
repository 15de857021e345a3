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
//! here, after those few instructions. A `cmpxchg` that misses is one
//! hand-off of the line to this CPU, exclusively; a call's first load of
//! the word is a plain load (`old = last_nsec_offset`), a *shared* read
//! (issue 34, fourth pass): it joins the line's sharers, and the next
//! `cmpxchg` invalidates them all. The tick's `time_interpolator_update()`
//! (`include/linux/timex.h`) takes the word like a `cmpxchg`, under
//! `xtime_lock`'s write.
//!
//! The shared word is [`LastValue`]; the experiment in which N CPUs call
//! `gettimeofday()` back to back is `workload/gettimeofday.rs`.

use rand::RngExt;

use crate::engine::rng::stream;
use crate::engine::{CostTable, Dur, Grant, Lock, Sharers, SimRng, Time, TransferCost};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::{request_rt_per_transfer, spinlock};
use crate::machine::Machine;

/// What a CPU does with the word: decides whether it needs the line
/// exclusively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A plain load (`old = last_nsec_offset`): a shared copy will do.
    Load,
    /// The `cmpxchg` (and the tick's load-and-`cmpxchg`): exclusive.
    Cmpxchg,
}

/// The interpolator's shared "last value returned" word and the line it
/// lives on, as the SHUB's directory keeps it (home on node 0): dirty in
/// one cache, clean with a set of sharers, or busy while ownership moves.
///
/// **Exclusive requests** (the `cmpxchg`s, the tick's update) go to one
/// requester at a time. Who gets the line next is decided as the
/// directory's NACK-and-retry protocol decides it: a waiter does not spin
/// on a cached copy (its request is NACKed by the home while the line is
/// in transit) but re-sends on each NACK, so it reaches the home once per
/// round trip to it; the first retry to arrive once the line is free wins
/// (`Lock::with_nack_retry`: far callers retry less often and win less),
/// and the winner's request waits at the directory behind the other
/// waiters' retries as deep as their load makes the queue
/// (`coherence.directory_ns` each; issue 34). That is the arbitration of a
/// test-and-set lock held for no time, so the engine's unfair [`Lock`]
/// carries it. A write to a line others share is an upgrade: it waits for
/// every sharer's ack ([`Sharers::invalidation_ns`]).
///
/// **Loads** (fourth pass) are shared reads. At rest a clean line is read
/// from the home's memory, the directory serving readers one after another
/// at its occupancy but their transfers in parallel; a dirty line is an
/// intervention (request to the home, forwarded to the owner, which sends
/// the data to the reader and a sharing write-back to the home), after
/// which the line is clean and shared by both. While ownership moves the
/// entry is busy and a load is NACKed like any request: the readers
/// waiting race the exclusive waiters at each hand-off (each re-sends once
/// per own round trip), and once one of them wins, its intervention cleans
/// the line and every reader then waiting is served from memory at its
/// next retry; the exclusive winner's retry comes after those and
/// invalidates them all. A CPU that holds the line as it needs it (dirty
/// in its cache, or a copy for a load) accesses it as a hit.
pub struct LastValue<'a> {
    line: Lock<&'a CostTable>,
    cost: &'a CostTable,
    home: usize,
    directory_ns: u64,
    /// A request's round trip to the home per unit of transfer time.
    rt_scale: f64,
    /// Loads as shared reads (the default); off, a load takes the line
    /// exclusively like a `cmpxchg` (the model before issue 34's fourth
    /// pass).
    shared_reads: bool,
    /// Bumped by every successful cmpxchg.
    version: u64,
    /// The CPU whose cache holds the word dirty, if no one asked since.
    held_by: Option<usize>,
    /// The last exclusive owner (CPU, node): the owner an intervention
    /// fetches from while `held_by` names it.
    owner: (usize, usize),
    /// Read-only copies (clean line).
    sharers: Sharers,
    /// Until when an intervention keeps the entry busy (its sharing
    /// write-back has not reached the home): requests NACKed till then.
    busy_end: Time,
    /// When the directory is next free to serve a read of the clean line.
    dir_free: Time,
    /// Readers NACKed while ownership moves, by round trip to the home:
    /// `(round trip ns, [(cpu, node)])`.
    parked: Vec<(u64, Vec<(usize, usize)>)>,
    parked_n: usize,
    /// Draws the parked readers' retry phases.
    rng: SimRng,
    /// Scratch: readers served in one batch, by retry time.
    batch: Vec<(Time, usize, usize)>,
    /// The value each CPU last loaded.
    seen: Vec<u64>,
}

impl<'a> LastValue<'a> {
    /// The word on node 0, read by CPUs `0..cpus`; `seed` draws the
    /// directory's retry phases.
    pub fn new(machine: &Machine, cost: &'a CostTable, cpus: usize, seed: u64) -> Self {
        LastValue {
            line: spinlock(machine, cost, Spinlock::Tas, 0, seed, "gettimeofday-word")
                .with_nack_retry(request_rt_per_transfer(machine)),
            cost,
            home: 0,
            directory_ns: machine.coherence.directory_ns.round() as u64,
            rt_scale: request_rt_per_transfer(machine).max(0.0),
            shared_reads: true,
            version: 0,
            held_by: None,
            owner: (0, 0),
            sharers: Sharers::new(),
            busy_end: Time::ZERO,
            dir_free: Time::ZERO,
            parked: Vec::new(),
            parked_n: 0,
            rng: stream(seed, "gettimeofday-readers", 0),
            batch: Vec::new(),
            seen: vec![0; cpus],
        }
    }

    /// Loads take the line exclusively, as a `cmpxchg` does (off: issue
    /// 34's third pass; kept to measure the shared reads against).
    pub fn with_exclusive_loads(mut self) -> Self {
        self.shared_reads = false;
        self
    }

    fn t(&self, a: usize, b: usize) -> u64 {
        self.cost.transfer_ns(a, b)
    }

    /// A request's round trip from `node` to the home and its NACK, ns:
    /// how often a NACKed requester there re-sends (as `Lock`'s race).
    fn rt(&self, node: usize) -> u64 {
        ((self.t(node, self.home) as f64 * self.rt_scale).round() as u64).max(1)
    }

    /// A dirty line from a cache on `owner` to one on `node`: the bus
    /// snoop within a node, else request to the home, forward, reply (as
    /// `Lock`'s hand-off through a home).
    fn forward_ns(&self, owner: usize, node: usize) -> u64 {
        if owner == node {
            self.t(node, node)
        } else {
            (self.t(node, self.home) + self.t(self.home, owner) + self.t(owner, node)) / 2
        }
    }

    /// CPU `cpu` (on `node`) wants the line for `access` at `now`: when it
    /// has it (at once if it holds it as it needs it), or None if it
    /// waits, to be resumed by a grant [`arrived`](Self::arrived) gives.
    pub fn request(&mut self, now: Time, cpu: usize, node: usize, access: Access) -> Option<Time> {
        let exclusive = access == Access::Cmpxchg || !self.shared_reads;
        if self.held_by == Some(cpu) || (!exclusive && self.sharers.contains(cpu)) {
            return Some(now);
        }
        let busy = self.line.holder().is_some();
        if !exclusive {
            if busy {
                // NACKed while ownership moves: races at the next hand-off.
                let rt = self.rt(node);
                match self.parked.iter_mut().find(|(r, _)| *r == rt) {
                    Some((_, v)) => v.push((cpu, node)),
                    None => self.parked.push((rt, vec![(cpu, node)])),
                }
                self.parked_n += 1;
                return None;
            }
            return Some(match self.held_by {
                Some(_) => self.intervene(now, cpu, node),
                None => self.read_from_home(now, cpu, node),
            });
        }
        // At rest: NACKed until an intervention's write-back is home.
        let start = if busy { now } else { now.max(self.busy_end) };
        self.held_by = None;
        let at = self.line.acquire(start, cpu, node)?;
        let at = if self.sharers.is_empty() {
            at
        } else {
            // An upgrade: its request reaches the home, which invalidates
            // every copy; the `Lock`'s hand-off from the last owner (one
            // of the sharers) is the least it costs.
            let up = self.t(node, self.home) / 2;
            let served = (start + Dur(up)).max(self.dir_free) + Dur(self.directory_ns);
            let inval =
                self.sharers
                    .invalidation_ns(self.cost, self.home, self.directory_ns, cpu, node);
            self.sharers.clear();
            at.max(served + Dur(inval))
        };
        self.owner = (cpu, node);
        Some(at)
    }

    /// A load of the clean line sent at `now`: NACKed until an
    /// intervention's write-back is home, then served from memory, the
    /// directory taking readers one at a time; the reader joins the sharers.
    fn read_from_home(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        let up = self.t(node, self.home) / 2;
        let mut arrive = now + Dur(up);
        if arrive < self.busy_end {
            // Re-sent once per round trip until the entry is free.
            let rt = self.rt(node);
            arrive += Dur((self.busy_end - arrive).as_ns().div_ceil(rt) * rt);
        }
        let served = arrive.max(self.dir_free) + Dur(self.directory_ns);
        self.dir_free = served;
        self.sharers.insert(cpu, node);
        served + Dur(self.t(self.home, node).saturating_sub(up))
    }

    /// A load sent at `now` of the line dirty in the owner's cache: the
    /// intervention through the home; both then share the clean line, and
    /// the entry is busy until the owner's write-back reaches the home.
    fn intervene(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        let (o, on) = self.owner;
        let sent = now.max(self.busy_end);
        let served = sent.max(self.dir_free) + Dur(self.directory_ns);
        self.dir_free = served;
        let done = served + Dur(self.forward_ns(on, node));
        self.busy_end = if on == node {
            done
        } else {
            served
                + Dur((self.t(node, self.home) + self.t(self.home, on) + self.t(on, self.home)) / 2)
        };
        self.held_by = None;
        self.sharers.insert(o, on);
        self.sharers.insert(cpu, node);
        done
    }

    /// The earliest retry among the parked readers after the line is free
    /// (each re-sends at a phase uniform in its own round trip; per class
    /// of round trip the earliest of k such phases is one draw, as in
    /// `Lock`'s race): that phase, and the class.
    fn reader_race(&mut self) -> (u64, usize) {
        let mut best = (u64::MAX, 0);
        for (i, (rt, v)) in self.parked.iter().enumerate() {
            if v.is_empty() {
                continue;
            }
            let k = v.len() as f64;
            // (0, 1]: the phase stays below the round trip.
            let u = ((self.rng.random::<u64>() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
            let above = (*rt as f64 * u.powf(1.0 / k)).ceil() as u64;
            let p = rt - above.clamp(1, *rt);
            if p < best.0 {
                best = (p, i);
            }
        }
        best
    }

    /// The parked readers win the line free at `free` (dirty at
    /// `self.owner`), the first of class `class` sending at `first`: its
    /// intervention, then every other parked reader from memory at its
    /// next retry after the write-back; their grants go to `grants`.
    fn serve_parked(&mut self, free: Time, first: Time, class: usize, grants: &mut Vec<Grant>) {
        let v = &mut self.parked[class].1;
        let pick = if v.len() > 1 {
            self.rng.random_range(0..v.len())
        } else {
            0
        };
        let (c0, n0) = v.swap_remove(pick);
        let at = self.intervene(first, c0, n0);
        grants.push(Grant {
            cpu: c0,
            node: n0,
            at,
        });
        let mut batch = std::mem::take(&mut self.batch);
        let (cost, home, busy_end) = (self.cost, self.home, self.busy_end);
        // Drained in place: each class keeps its vector for the next park.
        for (rt, v) in &mut self.parked {
            for (c, n) in v.drain(..) {
                let up = cost.transfer_ns(n, home) / 2;
                let phase = self.rng.random_range(0..*rt);
                let sent = Time(busy_end.0.saturating_sub(up)).max(free) + Dur(phase);
                batch.push((sent, c, n));
            }
        }
        self.parked_n = 0;
        batch.sort_unstable();
        for (sent, c, n) in batch.drain(..) {
            let at = self.read_from_home(sent, c, n);
            grants.push(Grant {
                cpu: c,
                node: n,
                at,
            });
        }
        self.batch = batch;
    }

    /// The line has reached `cpu`: if it came exclusively and someone
    /// waits, it moves on at once (their requests recall it); the grants
    /// this gives (the next exclusive owner, and readers) go to `grants`.
    pub fn arrived(&mut self, now: Time, cpu: usize, grants: &mut Vec<Grant>) {
        if self.line.holder().is_none_or(|(h, _)| h != cpu) {
            return;
        }
        let released = self.line.release(now, cpu);
        // Dirty here, until the next grant takes it.
        self.held_by = Some(cpu);
        let Some(g) = released else {
            if self.parked_n > 0 {
                let (p, class) = self.reader_race();
                self.serve_parked(now, now + Dur(p), class, grants);
            }
            return;
        };
        if self.parked_n > 0 {
            // The exclusive winner's retry reached the home `hop` before
            // its grant (the rest is its phase and the directory's queue).
            let hop = self.forward_ns(self.owner.1, g.node);
            let writer = Time(g.at.0.saturating_sub(hop)).max(now);
            let (p, class) = self.reader_race();
            if now + Dur(p) < writer {
                self.serve_parked(now, now + Dur(p), class, grants);
                // The writer's request, NACKed during the intervention,
                // comes back after it and after the readers the directory
                // served: an upgrade that invalidates them all.
                let up = self.t(g.node, self.home) / 2;
                let rt = self.rt(g.node);
                let sent = Time(self.busy_end.0.saturating_sub(up)).max(now)
                    + Dur(self.rng.random_range(0..rt));
                let served = (sent + Dur(up)).max(self.dir_free) + Dur(self.directory_ns);
                let inval = self.sharers.invalidation_ns(
                    self.cost,
                    self.home,
                    self.directory_ns,
                    g.cpu,
                    g.node,
                );
                self.sharers.clear();
                self.held_by = None;
                self.owner = (g.cpu, g.node);
                grants.push(Grant {
                    at: (served + Dur(inval)).max(g.at),
                    ..g
                });
                return;
            }
        }
        self.held_by = None;
        self.owner = (g.cpu, g.node);
        grants.push(g);
    }

    /// `cpu` loads the word (it has the line or a copy).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets;

    /// Serves `loads` (cpu, node) all sent at `now` to completion (the
    /// grants the line gives in turn); the latest completion.
    fn serve(w: &mut LastValue, now: Time, loads: &[(usize, usize)]) -> Time {
        let mut pending: Vec<Grant> = Vec::new();
        let mut last = now;
        for &(c, n) in loads {
            if let Some(t) = w.request(now, c, n, Access::Load) {
                pending.push(Grant {
                    cpu: c,
                    node: n,
                    at: t,
                });
            }
        }
        let mut out = Vec::new();
        while let Some(i) = (0..pending.len()).min_by_key(|&i| pending[i].at) {
            let g = pending.swap_remove(i);
            last = last.max(g.at);
            w.arrived(g.at, g.cpu, &mut out);
            pending.append(&mut out);
        }
        last
    }

    /// Sixteen CPUs on sixteen nodes load the word at once from its clean
    /// line: as shared reads the home serves them in a pipeline and the
    /// last has its copy after about one round trip; as exclusive grants
    /// the line visits them one after another, each a three-hop transfer.
    #[test]
    fn clean_line_readers_cost_less_than_exclusive_grants() {
        let m = presets::preset("altix-512").unwrap();
        let cost = m.line_cost_table();
        let loads: Vec<(usize, usize)> = (1..=16).map(|i| (2 * i * 8, i * 8)).collect();
        let mut shared = LastValue::new(&m, &cost, 300, 1);
        let mut exclusive = LastValue::new(&m, &cost, 300, 1).with_exclusive_loads();
        let start = Time(10_000);
        let s = serve(&mut shared, start, &loads) - start;
        let e = serve(&mut exclusive, start, &loads) - start;
        let far = cost.transfer_ns(0, 16 * 8);
        assert!(
            s.as_ns() < 2 * far,
            "shared: {s} against a round trip of {far}"
        );
        assert!(
            s.as_ns() * 4 < e.as_ns(),
            "16 shared reads {s}, 16 exclusive grants {e}"
        );
        // All sixteen share it now; a second load by each is a hit.
        for &(c, n) in &loads {
            assert_eq!(
                shared.request(start + s, c, n, Access::Load),
                Some(start + s)
            );
        }
    }

    /// Direction: the `cmpxchg` after k other CPUs loaded the word (an
    /// upgrade that invalidates them) is never done sooner for larger k.
    #[test]
    fn more_readers_never_make_the_cmpxchg_cheaper() {
        let m = presets::preset("altix-512").unwrap();
        let cost = m.line_cost_table();
        let mut last = Time::ZERO;
        for k in 0..40usize {
            let mut w = LastValue::new(&m, &cost, 300, 1);
            let writer = (1usize, 0usize);
            serve(&mut w, Time(0), &[writer]);
            let readers: Vec<(usize, usize)> =
                (0..k).map(|i| (2 + i * 5, (i * 37) % 256)).collect();
            serve(&mut w, Time(100_000), &readers);
            let done = w
                .request(Time(200_000), writer.0, writer.1, Access::Cmpxchg)
                .expect("the line is at rest");
            assert!(
                done >= last,
                "{k} readers: done at {done}, {last} with fewer"
            );
            last = done;
        }
        assert!(last > Time(200_000 + cost.transfer_ns(0, 0)), "{last}");
    }
}
