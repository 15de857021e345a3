//! One contended cache line (a counter, a lock word, a list head).
//!
//! A small directory-protocol model at CPU granularity with node-level
//! costs. The line is in memory on its `home` node, held exclusively by one
//! CPU, or shared by several readers:
//!
//! | request            | line state            | cost                                   | new state        |
//! |--------------------|-----------------------|----------------------------------------|------------------|
//! | read or write      | held by the same CPU  | 0 (cache hit)                          | unchanged / excl.|
//! | read               | in memory             | `home → node`                          | shared {cpu}     |
//! | read               | exclusive on `o`      | `o → node`                             | shared {o, cpu}  |
//! | read               | shared by others      | nearest sharer `→ node`                | shared + cpu     |
//! | write              | in memory             | `home → node`                          | exclusive        |
//! | write              | exclusive on `o`      | `o → node`                             | exclusive        |
//! | write              | shared (writer only)  | `home → node` (upgrade at directory)   | exclusive        |
//! | write              | shared by others      | farthest other sharer `→ node` (invalidations in parallel, wait for the last ack) | exclusive |
//!
//! Requests are serialised in arrival order, as a home directory serialises
//! them: a request starts when the previous one has finished
//! (`start = max(now, busy_until)`), and the line is "busy" while in transit.
//!
//! Conflicts cost more than their transfers ([ALTIX04] C1: the time to
//! resolve a conflict "is typically proportional to the number of
//! processors involved"): with [`CacheLine::with_conflict`], a transfer
//! that starts while `k` earlier requests are still outstanding takes
//! `k × conflict_ns` longer — the home directory NACKs and re-serves each
//! queued requester's retry in between. Zero (the default) is the plain
//! protocol above.

use std::collections::VecDeque;

use super::cost::TransferCost;
use super::time::{Dur, Time};

/// Who holds the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineState {
    /// Only in memory on the home node.
    Memory,
    /// Modified/exclusive in one CPU's cache.
    Exclusive {
        /// The owning CPU.
        cpu: usize,
        /// Its node.
        node: usize,
    },
    /// Read-only copies; `(cpu, node)` pairs in the order they were fetched.
    Shared(Vec<(usize, usize)>),
}

/// Cache-line statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Requests satisfied from the requester's own cache.
    pub hits: u64,
    /// Requests that moved the line or its ownership (misses).
    pub transfers: u64,
    /// Copies invalidated by writes.
    pub invalidations: u64,
    /// Time the line spent in transit (sum of transfer costs).
    pub busy: Dur,
    /// Sum of the time requests waited behind earlier ones.
    pub total_queue_wait: Dur,
}

/// A cache line whose ownership moves between CPUs; see the module docs.
#[derive(Debug, Clone)]
pub struct CacheLine<C> {
    cost: C,
    home: usize,
    state: LineState,
    busy_until: Time,
    stats: LineStats,
    conflict_ns: u64,
    /// Completion times of requests not yet finished (only kept when
    /// `conflict_ns > 0`), oldest first.
    outstanding: VecDeque<Time>,
}

impl<C: TransferCost> CacheLine<C> {
    /// A line whose memory is on node `home`, not yet in any cache.
    pub fn new(home: usize, cost: C) -> Self {
        CacheLine {
            cost,
            home,
            state: LineState::Memory,
            busy_until: Time::ZERO,
            stats: LineStats::default(),
            conflict_ns: 0,
            outstanding: VecDeque::new(),
        }
    }

    /// Charge `ns` per request already queued when a transfer starts (the
    /// machine's `coherence.conflict_ns`); see the module docs.
    pub fn with_conflict(mut self, ns: u64) -> Self {
        self.conflict_ns = ns;
        self
    }

    /// `cpu` on `node` writes the line at `now`; returns when the write is
    /// done (the line is exclusive in its cache).
    pub fn write(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        self.stats.writes += 1;
        let (cost, invalidated) = match &self.state {
            LineState::Exclusive { cpu: c, .. } if *c == cpu => (None, 0),
            LineState::Exclusive { node: o, .. } => (Some(self.ns(*o, node)), 1),
            LineState::Memory => (Some(self.ns(self.home, node)), 0),
            LineState::Shared(s) => {
                let others = s.iter().filter(|(c, _)| *c != cpu);
                let n_others = others.clone().count() as u64;
                if n_others == 0 {
                    (Some(self.ns(self.home, node)), 0)
                } else {
                    let far = others.map(|&(_, o)| self.ns(o, node)).max();
                    (far, n_others)
                }
            }
        };
        self.stats.invalidations += invalidated;
        self.state = LineState::Exclusive { cpu, node };
        self.finish(now, cost)
    }

    /// `cpu` on `node` reads the line at `now`; returns when the data is in
    /// its cache.
    pub fn read(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        self.stats.reads += 1;
        let cost = match &mut self.state {
            LineState::Exclusive { cpu: c, .. } if *c == cpu => None,
            LineState::Exclusive { cpu: c, node: o } => {
                let (c, o) = (*c, *o);
                self.state = LineState::Shared(vec![(c, o), (cpu, node)]);
                Some(self.ns(o, node))
            }
            LineState::Memory => {
                self.state = LineState::Shared(vec![(cpu, node)]);
                Some(self.ns(self.home, node))
            }
            LineState::Shared(s) if s.iter().any(|&(c, _)| c == cpu) => None,
            LineState::Shared(s) => {
                let nearest = s.iter().map(|&(_, o)| self.cost.transfer_ns(o, node)).min();
                s.push((cpu, node));
                nearest
            }
        };
        self.finish(now, cost)
    }

    #[inline]
    fn ns(&self, from: usize, to: usize) -> u64 {
        self.cost.transfer_ns(from, to)
    }

    /// Serialise behind earlier requests and account; `cost` None is a hit.
    fn finish(&mut self, now: Time, cost: Option<u64>) -> Time {
        let start = now.max(self.busy_until);
        self.stats.total_queue_wait += start - now;
        let ahead = if self.conflict_ns > 0 {
            while self.outstanding.front().is_some_and(|&t| t <= now) {
                self.outstanding.pop_front();
            }
            self.outstanding.len() as u64
        } else {
            0
        };
        match cost {
            None => {
                self.stats.hits += 1;
                start
            }
            Some(ns) => {
                let ns = ns + ahead * self.conflict_ns;
                self.stats.transfers += 1;
                self.stats.busy += Dur(ns);
                self.busy_until = start + Dur(ns);
                if self.conflict_ns > 0 {
                    self.outstanding.push_back(self.busy_until);
                }
                self.busy_until
            }
        }
    }

    /// Who holds the line now.
    pub fn state(&self) -> &LineState {
        &self.state
    }
    /// The home (memory) node.
    pub fn home(&self) -> usize {
        self.home
    }
    /// When the last queued request completes.
    pub fn busy_until(&self) -> Time {
        self.busy_until
    }
    /// Statistics so far.
    pub fn stats(&self) -> &LineStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::super::cost::{CostTable, UniformCost};
    use super::*;
    use proptest::prelude::*;

    const COST: UniformCost = UniformCost {
        local_ns: 20,
        remote_ns: 200,
    };

    #[test]
    fn remote_write_costs_more_than_local() {
        let mut l = CacheLine::new(0, COST);
        l.write(Time(0), 0, 0);
        let t = Time(1000);
        let local = l.write(t, 1, 0) - t; // cpu 1, same node as owner cpu 0
        let t = Time(2000);
        let remote = l.write(t, 5, 1) - t; // cpu 5 on node 1
        assert_eq!(local, Dur(20));
        assert_eq!(remote, Dur(200));
        assert!(remote > local);
        assert_eq!(l.stats().invalidations, 2);
    }

    #[test]
    fn owner_rewrites_and_rereads_hit() {
        let mut l = CacheLine::new(0, COST);
        assert_eq!(l.write(Time(0), 3, 1), Time(200)); // from home node 0
        assert_eq!(l.write(Time(500), 3, 1), Time(500));
        assert_eq!(l.read(Time(600), 3, 1), Time(600));
        assert_eq!(l.stats().hits, 2);
        assert_eq!(l.stats().transfers, 1);
    }

    #[test]
    fn readers_after_a_write_pay_a_transfer_then_hit() {
        let mut l = CacheLine::new(0, COST);
        l.write(Time(0), 0, 0);
        let t = Time(1000);
        assert_eq!(l.read(t, 4, 1), t + Dur(200), "remote reader fetches");
        assert_eq!(l.read(Time(2000), 4, 1), Time(2000), "then hits");
        assert_eq!(l.state(), &LineState::Shared(vec![(0, 0), (4, 1)]));
        // A new reader on node 1 gets it from the nearest sharer (cpu 4).
        assert_eq!(l.read(Time(3000), 5, 1), Time(3020));
        // A write by cpu 0 invalidates cpus 4 and 5 (remote): pays remote.
        assert_eq!(l.write(Time(4000), 0, 0), Time(4200));
        assert_eq!(l.stats().invalidations, 2);
        // And the old readers miss again.
        assert_eq!(l.read(Time(5000), 4, 1), Time(5200));
    }

    #[test]
    fn write_waits_for_farthest_sharer_and_upgrade_pays_directory() {
        let cost = CostTable::from_fn(3, |a, b| 10 + 100 * a.abs_diff(b) as u64);
        let mut l = CacheLine::new(0, &cost);
        l.read(Time(0), 0, 0);
        // Sole sharer upgrading: a directory round trip from home 0.
        assert_eq!(l.write(Time(100), 0, 0), Time(110));
        l.read(Time(200), 1, 1); // 0→1: 110 → done 310
        l.read(Time(400), 2, 2); // nearest sharer is node 1: 110 → 510
        assert_eq!(l.busy_until(), Time(510));
        // Writer on node 0 must invalidate nodes 1 and 2; farthest is 2.
        assert_eq!(l.write(Time(600), 0, 0), Time(810));
    }

    #[test]
    fn requests_serialise_in_arrival_order() {
        let mut l = CacheLine::new(0, COST);
        let a = l.write(Time(0), 0, 1);
        let b = l.write(Time(0), 1, 2);
        let c = l.write(Time(0), 2, 3);
        assert_eq!((a, b, c), (Time(200), Time(400), Time(600)));
        assert_eq!(l.stats().total_queue_wait, Dur(200 + 400));
        assert_eq!(l.stats().busy, Dur(600));
    }

    #[test]
    fn conflicts_cost_more_with_more_cpus_queued() {
        // Three simultaneous writers: the 2nd finds 1 ahead, the 3rd 2.
        let mut l = CacheLine::new(0, COST).with_conflict(10);
        let a = l.write(Time(0), 0, 1);
        let b = l.write(Time(0), 1, 2);
        let c = l.write(Time(0), 2, 3);
        assert_eq!((a, b, c), (Time(200), Time(410), Time(630)));
        // Once the queue has drained, a lone write pays the plain cost.
        assert_eq!(l.write(Time(1000), 3, 1), Time(1200));
    }

    proptest! {
        /// Any access pattern: completions never precede requests or earlier
        /// completions, busy time is the sum of transfers and never exceeds
        /// the elapsed time, and every request is a hit or a transfer.
        #[test]
        fn accounting_is_consistent(
            ops in prop::collection::vec((0u64..300, 0usize..8, any::<bool>()), 1..200),
        ) {
            let mut l = CacheLine::new(0, COST);
            let mut now = Time::ZERO;
            let mut last = Time::ZERO;
            for &(gap, cpu, write) in &ops {
                now += Dur(gap);
                let node = cpu / 2;
                let done = if write { l.write(now, cpu, node) } else { l.read(now, cpu, node) };
                prop_assert!(done >= now && done >= last);
                last = done;
            }
            let s = l.stats();
            prop_assert_eq!(s.reads + s.writes, ops.len() as u64);
            prop_assert_eq!(s.hits + s.transfers, ops.len() as u64);
            prop_assert!(s.busy <= l.busy_until() - Time::ZERO);
        }
    }
}
