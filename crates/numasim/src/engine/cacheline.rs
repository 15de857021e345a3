//! One contended cache line (a counter, a lock word, a list head).
//!
//! A directory protocol at CPU granularity with node-level costs, shaped
//! like the DASH-derived protocols of the SGI SHUB and the GS320
//! Hierarchical Switch ([ALTIX04] C1, [WILDFIRE01]). Three things take time
//! and they are kept apart, because they overlap differently:
//!
//! - **Directory occupancy** (`directory_ns`): the home node's directory
//!   controller looks up and updates the entry for every request it serves,
//!   one request at a time. Requests queue here only for that occupancy,
//!   not for each other's transfers, so readers of a clean line are served
//!   in a pipeline.
//! - **Transfer latency**: moving the line (or an invalidation and its ack)
//!   between nodes, the machine's line-transfer time for the distance. It
//!   overlaps freely with other requests' transfers, except that:
//! - **Ownership is a chain**: a dirty line exists in one cache; the next
//!   owner (or a reader of dirty data) gets it only after the previous owner
//!   has received it. N writers of one line therefore wait for N transfers
//!   in turn, which no protocol avoids.
//!
//! Every miss goes to the home directory first. With `t(a, b)` the machine's
//! line-transfer time between nodes (a round trip: request out, line back)
//! and half of it one way:
//!
//! | request | line state            | latency                                   | new state      |
//! |---------|-----------------------|-------------------------------------------|----------------|
//! | either  | already in this cache | hit: no directory, no queue               | unchanged (a write by the sole owner) |
//! | read    | in memory / shared    | `t(home, n)` from home memory, pipelined  | shared + cpu   |
//! | either  | dirty on `o`, same node | `t(n, n)`: the bus snoop answers        | shared / excl. |
//! | either  | dirty on `o`, other node | `(t(n,home) + t(home,o) + t(o,n)) / 2`: three hops, after `o` has it | shared {o, cpu} / exclusive |
//! | write   | in memory             | `t(home, n)`                              | exclusive      |
//! | write   | shared                | `(t(n,home) + max over other sharers s of t(home,s) + t(s,n)) / 2`, at least `t(home, n)`: invalidations in parallel, acks to the writer | exclusive |
//!
//! **Conflicts.** While ownership transfers are in flight the entry is in a
//! transient ("busy") state and the directory NACKs every further request
//! for it; each NACKed requester retries, and every retry occupies the
//! directory again. A hand-off that starts while `w` requests wait therefore
//! also pays `w × directory_ns`: "the time to resolve a conflict is
//! typically proportional to the number of processors involved in the
//! conflict" [ALTIX04]. Only requests still in flight count, so CPUs that
//! arrive spread out in time do not pay for each other.
//!
//! A `cmpxchg` is a write here: it takes the line exclusively whether or not
//! the compare succeeds, and a failed one leaves the current value (and the
//! line) in the requester's cache, so a retry that finds the line still
//! there is a hit. Whether it succeeds is the caller's business.

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
    /// Sum of transfer latencies (without waiting), over all misses.
    pub busy: Dur,
    /// Sum of the time misses waited: for the directory, for the previous
    /// owner's copy, and for NACKed retries.
    pub total_queue_wait: Dur,
    /// NACKs the directory served (one per waiting requester per hand-off).
    pub nacks: u64,
}

/// A cache line whose ownership moves between CPUs; see the module docs.
#[derive(Debug, Clone)]
pub struct CacheLine<C> {
    cost: C,
    home: usize,
    state: LineState,
    directory_ns: u64,
    /// When the home directory is next free to serve a request.
    directory_free: Time,
    /// When the latest copy of the data has reached the cache(s) the state
    /// names: a forward from them starts no earlier.
    ready: Time,
    /// Completion times of ownership transfers still in flight, oldest
    /// first: the requests the directory is NACKing.
    in_flight: VecDeque<Time>,
    stats: LineStats,
    /// While more than [`FEW_SHARERS`] CPUs share the line, a bit per CPU
    /// marks them, so a reader's hit test is one bit instead of a scan of
    /// the list (16,384 `gettimeofday` callers share `xtime_lock`'s line;
    /// issue 31). Empty otherwise.
    sharer_bits: Vec<u64>,
}

/// Sharers up to which a read's hit test scans the list.
const FEW_SHARERS: usize = 16;

impl<C: TransferCost> CacheLine<C> {
    /// A line whose memory is on node `home`, not yet in any cache, with a
    /// directory that takes no time (a plain latency model).
    pub fn new(home: usize, cost: C) -> Self {
        CacheLine {
            cost,
            home,
            state: LineState::Memory,
            directory_ns: 0,
            directory_free: Time::ZERO,
            ready: Time::ZERO,
            in_flight: VecDeque::new(),
            stats: LineStats::default(),
            sharer_bits: Vec::new(),
        }
    }

    /// The home directory's occupancy per request served, real or NACKed
    /// (the machine's `coherence.directory_ns`); see the module docs.
    pub fn with_directory(mut self, ns: u64) -> Self {
        self.directory_ns = ns;
        self
    }

    /// `cpu` on `node` writes the line at `now` (a store, an atomic, a
    /// `cmpxchg`); returns when the line is exclusive in its cache.
    pub fn write(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        self.stats.writes += 1;
        let (latency, invalidated) = match &self.state {
            LineState::Exclusive { cpu: c, .. } if *c == cpu => return self.hit(now),
            LineState::Exclusive { node: o, .. } => (self.forward_ns(*o, node), 1),
            LineState::Memory => (self.ns(self.home, node), 0),
            LineState::Shared(s) => {
                let others = s.iter().filter(|&&(c, _)| c != cpu);
                let n_others = others.clone().count() as u64;
                // Invalidations leave the directory together; the writer
                // waits for the last ack, and for a directory round trip
                // (with the data, if it held no copy) in any case.
                let acks = others
                    .map(|&(_, o)| {
                        (self.ns(node, self.home) + self.ns(self.home, o) + self.ns(o, node)) / 2
                    })
                    .max()
                    .unwrap_or(0);
                (acks.max(self.ns(self.home, node)), n_others)
            }
        };
        self.stats.invalidations += invalidated;
        self.state = LineState::Exclusive { cpu, node };
        // Keeps its block for the next time many CPUs share the line.
        self.sharer_bits.clear();
        self.miss(now, latency, true)
    }

    /// `cpu` on `node` writes the line `n` times in a row from `now`, each
    /// write starting when the one before completes (a batch's list
    /// operations on one head); returns when the last completes. The same
    /// as `n` calls of [`write`](Self::write): after the first the line is
    /// this CPU's, whose copy is ready by then, so the rest are hits at
    /// that time, counted without being run one by one.
    pub fn write_times(&mut self, now: Time, cpu: usize, node: usize, n: u64) -> Time {
        if n == 0 {
            return now;
        }
        let t = self.write(now, cpu, node);
        debug_assert!(
            self.ready <= t,
            "the writer's copy is ready when its write completes"
        );
        self.stats.writes += n - 1;
        self.stats.hits += n - 1;
        t
    }

    /// `cpu` on `node` reads the line at `now`; returns when the data is in
    /// its cache.
    pub fn read(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        self.stats.reads += 1;
        let shares = |s: &[(usize, usize)], bits: &[u64]| match bits {
            [] => s.iter().any(|&(c, _)| c == cpu),
            b => b.get(cpu / 64).is_some_and(|w| w >> (cpu % 64) & 1 == 1),
        };
        match &mut self.state {
            LineState::Exclusive { cpu: c, .. } if *c == cpu => self.hit(now),
            LineState::Shared(s) if shares(s, &self.sharer_bits) => self.hit(now),
            LineState::Exclusive { cpu: c, node: o } => {
                let (c, o) = (*c, *o);
                self.state = LineState::Shared(vec![(c, o), (cpu, node)]);
                let latency = self.forward_ns(o, node);
                // The owner's copy moves (and is written back): a transient
                // state like an ownership transfer.
                self.miss(now, latency, true)
            }
            LineState::Memory => {
                self.state = LineState::Shared(vec![(cpu, node)]);
                let latency = self.ns(self.home, node);
                self.miss(now, latency, false)
            }
            LineState::Shared(s) => {
                s.push((cpu, node));
                if s.len() > FEW_SHARERS {
                    if self.sharer_bits.is_empty() {
                        for &(c, _) in &s[..s.len() - 1] {
                            set_bit(&mut self.sharer_bits, c);
                        }
                    }
                    set_bit(&mut self.sharer_bits, cpu);
                }
                let latency = self.ns(self.home, node);
                self.miss(now, latency, false)
            }
        }
    }

    #[inline]
    fn ns(&self, from: usize, to: usize) -> u64 {
        self.cost.transfer_ns(from, to)
    }

    /// A dirty line from the cache of a CPU on `owner` to one on `node`.
    fn forward_ns(&self, owner: usize, node: usize) -> u64 {
        forward_ns(&self.cost, self.home, owner, node)
    }

    /// The requester already holds the line as it needs it. It waits only
    /// if its own copy is still on the way.
    fn hit(&mut self, now: Time) -> Time {
        self.stats.hits += 1;
        now.max(self.ready)
    }

    /// Serve a miss: directory occupancy, NACKs of the requests in flight,
    /// the previous holder's copy, the transfer. `transient` misses move
    /// ownership (or a dirty copy): they wait for the line's latest copy to
    /// have arrived, and later requests wait for them. A read of a clean
    /// line comes from memory at once.
    fn miss(&mut self, now: Time, latency: u64, transient: bool) -> Time {
        if self.ready <= now {
            // `ready` is at or after every transfer in flight (each push
            // raises it to its completion), so all have completed: what
            // the loop below would pop one by one (a lock-protected line
            // such as aim7's run-queue head, written once the last
            // holder's copy has landed).
            self.in_flight.clear();
        }
        while self.in_flight.front().is_some_and(|&t| t <= now) {
            self.in_flight.pop_front();
        }
        let waiting = self.in_flight.len() as u64;
        let served = now.max(self.directory_free) + Dur(self.directory_ns);
        self.directory_free = served;
        let start = if transient {
            served.max(self.ready)
        } else {
            served
        } + Dur(waiting * self.directory_ns);
        let done = start + Dur(latency);
        self.stats.transfers += 1;
        self.stats.nacks += waiting;
        self.stats.busy += Dur(latency);
        self.stats.total_queue_wait += start - now;
        if transient {
            self.ready = self.ready.max(done);
            self.in_flight.push_back(done);
        }
        done
    }

    /// Who holds the line now.
    pub fn state(&self) -> &LineState {
        &self.state
    }
    /// The home (memory) node.
    pub fn home(&self) -> usize {
        self.home
    }
    /// When the latest ownership transfer completes.
    pub fn ready(&self) -> Time {
        self.ready
    }
    /// Statistics so far.
    pub fn stats(&self) -> &LineStats {
        &self.stats
    }
}

/// A dirty line from the cache of a CPU on `owner` to one on `node`, for a
/// line whose memory is on `home`: the bus snoop within a node, else
/// request to home, forward, reply (three hops, each half a round trip).
pub(crate) fn forward_ns<C: TransferCost>(cost: &C, home: usize, owner: usize, node: usize) -> u64 {
    if owner == node {
        cost.transfer_ns(node, node)
    } else {
        (cost.transfer_ns(node, home)
            + cost.transfer_ns(home, owner)
            + cost.transfer_ns(owner, node))
            / 2
    }
}

/// The CPU whose cache holds a line modified or exclusive, in two 32-bit
/// fields (a cell's size matters, issue 31), or nobody: the line is only in
/// memory. A [`LineCell`]'s owner, and a lock word's (the engine's `Lock`
/// and `LockCell`): a request by the owning CPU itself is a hit, by another
/// CPU a transfer from the owner's node ([`Owner::find`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    cpu: u32,
    node: u32,
}

/// Where a request finds a line ([`Owner::find`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// In the requester's own cache, modified or exclusive: no transfer.
    Hit,
    /// Only in memory on its home node.
    Memory,
    /// In the cache of another CPU, on this node.
    Cache(usize),
}

impl Owner {
    /// Only in memory.
    pub(crate) const NONE: Owner = Owner {
        cpu: NONE,
        node: NONE,
    };

    /// In the cache of `cpu` on `node`.
    pub(crate) fn new(cpu: usize, node: usize) -> Self {
        Owner {
            cpu: u32::try_from(cpu).expect("CPU numbers fit 32 bits"),
            node: u32::try_from(node).expect("node numbers fit 32 bits"),
        }
    }

    /// The owning CPU and its node, if the line is in a cache.
    #[inline]
    pub(crate) fn cpu_node(&self) -> Option<(usize, usize)> {
        (self.cpu != NONE).then_some((self.cpu as usize, self.node as usize))
    }

    /// What a request by `cpu` finds.
    #[inline]
    pub(crate) fn find(&self, cpu: usize) -> Found {
        match self.cpu {
            NONE => Found::Memory,
            c if c as usize == cpu => Found::Hit,
            _ => Found::Cache(self.node as usize),
        }
    }
}

/// Marks `cpu` in a sharer bit set.
fn set_bit(bits: &mut Vec<u64>, cpu: usize) {
    if bits.len() <= cpu / 64 {
        bits.resize(cpu / 64 + 1, 0);
    }
    bits[cpu / 64] |= 1 << (cpu % 64);
}

/// The CPUs holding read-only copies of one line, as its home directory
/// records them (the SHUB keeps a sharer vector per line): a bit per CPU
/// for the membership test and a list in the order they joined, so that a
/// write's invalidations cost a pass over the sharers it invalidates, each
/// of which joined with one miss of its own (amortised O(1) a read).
#[derive(Debug, Clone, Default)]
pub struct Sharers {
    bits: Vec<u64>,
    list: Vec<(usize, usize)>,
}

impl Sharers {
    /// No sharers.
    pub fn new() -> Self {
        Self::default()
    }
    /// `cpu` on `node` holds a copy (once).
    pub fn insert(&mut self, cpu: usize, node: usize) {
        if !self.contains(cpu) {
            set_bit(&mut self.bits, cpu);
            self.list.push((cpu, node));
        }
    }
    /// Whether `cpu` holds a copy.
    pub fn contains(&self, cpu: usize) -> bool {
        self.bits
            .get(cpu / 64)
            .is_some_and(|w| w >> (cpu % 64) & 1 == 1)
    }
    /// How many CPUs hold a copy.
    pub fn len(&self) -> usize {
        self.list.len()
    }
    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    /// Every copy is gone (a write took the line).
    pub fn clear(&mut self) {
        for &(c, _) in &self.list {
            self.bits[c / 64] = 0;
        }
        self.list.clear();
    }

    /// A write by `cpu` on `node` whose request has reached the home
    /// (`home`): the time until the writer has every ack and the line,
    /// ns. As SGI's node controller does it (US patent 6,339,812: the
    /// memory/directory unit hands the sharers' identities to the local
    /// block, which generates one invalidation message per sharing
    /// processor; each processor acknowledges straight to the requester's
    /// processor interface), the home sends one invalidation per sharing
    /// CPU, one after another at its occupancy `directory_ns` each, and
    /// they travel and are acknowledged in parallel: the writer waits for
    /// the latest of `k × directory_ns + (t(home, s) + t(s, node)) / 2`
    /// over the k-th CPU sent to, and at least for the home's own reply,
    /// `t(home, node) / 2`. The writer's own copy needs none. More sharers
    /// never make it cheaper (`more_sharers_never_make_a_write_cheaper`).
    pub fn invalidation_ns<C: TransferCost>(
        &self,
        cost: &C,
        home: usize,
        directory_ns: u64,
        cpu: usize,
        node: usize,
    ) -> u64 {
        let mut latest = cost.transfer_ns(home, node) / 2;
        let others = self.list.iter().filter(|&&(c, _)| c != cpu);
        for (k, &(_, s)) in (1u64..).zip(others) {
            let ack =
                k * directory_ns + (cost.transfer_ns(home, s) + cost.transfer_ns(s, node)) / 2;
            latest = latest.max(ack);
        }
        latest
    }
}

/// The state of one line of a [`LineSet`] (24 bytes; its home is the
/// caller's, as a run queue's lock cell keeps it): who owns it, when the
/// directory is next free and when the data is ready. A write's transfer
/// starts no earlier than `ready` and `ready` becomes its end, so the
/// latest transfer in flight always ends at `ready`: a lone one needs no
/// field of its own. Two or more go to a queue of the set, whose slot then
/// takes `ready`'s place (the queue's last is `ready`).
#[derive(Debug, Clone, Copy)]
pub struct LineCell {
    /// The owning CPU and its node, or nobody: only in memory.
    owner: Owner,
    directory_free: Time,
    /// `ready` in ns (at most one transfer in flight, ending then); or
    /// [`SPILLED`] | the index of the queue in [`LineSet::spilled`].
    ready: u64,
}

/// A [`LineCell`]'s `ready` while its transfers in flight are queued in
/// the set: this bit and the queue's slot (a time never reaches 2⁶³ ns).
const SPILLED: u64 = 1 << 63;
/// "None" in an [`Owner`]'s 32-bit fields.
const NONE: u32 = u32::MAX;

impl LineCell {
    /// The slot of its queue of transfers in flight, if it has one.
    #[inline]
    fn spilled(&self) -> Option<usize> {
        (self.ready & SPILLED != 0).then_some((self.ready & !SPILLED) as usize)
    }
}

/// Many lines that are only written (a run queue's head, a counter), as
/// many [`CacheLine`]s would serve the writes: the same times, the same
/// totals of [`LineStats`]. A [`CacheLine`] is 160 bytes and a heap block
/// for its transfers in flight; 16,384 run-queue heads put each event on a
/// cache miss of the host (issue 31). A set keeps a [`LineCell`] per line
/// (kept by the caller, beside what else its events touch) and the
/// settings (cost, directory occupancy) and statistics once. A written
/// line is never shared, so reads are [`CacheLine`]'s alone.
#[derive(Debug)]
pub struct LineSet<C> {
    cost: C,
    directory_ns: u64,
    /// Queues of transfers in flight of lines with two or more.
    spilled: Vec<VecDeque<Time>>,
    /// Slots of `spilled` free again.
    free: Vec<u32>,
    stats: LineStats,
}

impl<C: TransferCost> LineSet<C> {
    /// Lines with `cost` and a directory occupancy of `directory_ns` per
    /// request (as [`CacheLine::with_directory`]).
    pub fn new(cost: C, directory_ns: u64) -> Self {
        LineSet {
            cost,
            directory_ns,
            spilled: Vec::new(),
            free: Vec::new(),
            stats: LineStats::default(),
        }
    }

    /// A line in no cache yet (its home is given with each write).
    pub fn add(&self) -> LineCell {
        LineCell {
            owner: Owner::NONE,
            directory_free: Time::ZERO,
            // No transfer yet: one that ended at 0 is the same (dropped
            // as done by the first write).
            ready: 0,
        }
    }

    /// `cpu` on `node` writes `line`, whose memory is on `home`, at `now`;
    /// as [`CacheLine::write`].
    pub fn write(
        &mut self,
        line: &mut LineCell,
        home: usize,
        now: Time,
        cpu: usize,
        node: usize,
    ) -> Time {
        self.stats.writes += 1;
        let latency = match line.owner.find(cpu) {
            Found::Hit => {
                self.stats.hits += 1;
                return now.max(self.ready(line));
            }
            Found::Memory => self.cost.transfer_ns(home, node),
            Found::Cache(o) => {
                self.stats.invalidations += 1;
                forward_ns(&self.cost, home, o, node)
            }
        };
        line.owner = Owner::new(cpu, node);
        // `CacheLine::miss` of an ownership transfer.
        let waiting = self.settle(line, now);
        let served = now.max(line.directory_free) + Dur(self.directory_ns);
        line.directory_free = served;
        let ready = self.ready(line);
        let start = served.max(ready) + Dur(waiting * self.directory_ns);
        let done = start + Dur(latency);
        let s = &mut self.stats;
        s.transfers += 1;
        s.nacks += waiting;
        s.busy += Dur(latency);
        s.total_queue_wait += start - now;
        // `done` is the latest (it starts at or after `ready`): it
        // becomes `ready`.
        debug_assert!(done >= ready);
        self.push(line, waiting, done);
        done
    }

    /// When `line`'s data is ready: its latest transfer's end.
    #[inline]
    fn ready(&self, line: &LineCell) -> Time {
        match line.spilled() {
            None => Time(line.ready),
            Some(s) => *self.spilled[s].back().expect("a queue holds two or more"),
        }
    }

    /// Drops the transfers done by `now`; how many are still in flight.
    fn settle(&mut self, line: &mut LineCell, now: Time) -> u64 {
        let Some(slot) = line.spilled() else {
            // The lone transfer, ending at `ready`.
            return u64::from(Time(line.ready) > now);
        };
        let q = &mut self.spilled[slot];
        let ready = *q.back().expect("a queue holds two or more");
        // Oldest first: drop from the front while done.
        while q.front().is_some_and(|&t| t <= now) {
            q.pop_front();
        }
        let left = q.len();
        if left <= 1 {
            // Back to the cell: the one left (if any) ends at `ready`.
            q.clear();
            line.ready = ready.0;
            self.free.push(slot as u32);
        }
        left as u64
    }

    /// Adds a transfer in flight, done at `done` (the latest), to the
    /// `waiting` still in flight.
    fn push(&mut self, line: &mut LineCell, waiting: u64, done: Time) {
        if let Some(s) = line.spilled() {
            self.spilled[s].push_back(done);
        } else if waiting == 0 {
            debug_assert!(done.0 < SPILLED, "times stay below 2^63 ns");
            line.ready = done.0;
        } else {
            let slot = match self.free.pop() {
                Some(s) => s as usize,
                None => {
                    self.spilled.push(VecDeque::new());
                    self.spilled.len() - 1
                }
            };
            let q = &mut self.spilled[slot];
            q.push_back(Time(line.ready));
            q.push_back(done);
            line.ready = SPILLED | slot as u64;
        }
    }

    /// Totals over every line of the set.
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
        assert_eq!(local, Dur(20), "the bus snoop answers within a node");
        // Request to home 0 (100 one way), home is the owner's node (10),
        // reply from node 0 to node 1 (100).
        assert_eq!(remote, Dur(210));
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
    fn hits_do_not_queue_behind_other_cpus_misses() {
        // cpu 0 holds a shared copy; a burst of remote readers queues at the
        // directory; cpu 0's own re-read is still a hit, now.
        let mut l = CacheLine::new(0, COST).with_directory(10);
        l.read(Time(0), 0, 0);
        for c in 1..5 {
            l.read(Time(100), c, 1);
        }
        assert_eq!(l.read(Time(100), 0, 0), Time(100));
    }

    #[test]
    fn clean_readers_are_pipelined_at_the_directory() {
        // Four remote readers of a clean line at once: each waits only for
        // the directory's occupancy of the ones ahead, not their transfers.
        let mut l = CacheLine::new(0, COST).with_directory(10);
        let done: Vec<Time> = (0..4).map(|c| l.read(Time(0), c, 1)).collect();
        assert_eq!(done, vec![Time(210), Time(220), Time(230), Time(240)]);
    }

    #[test]
    fn writers_form_an_ownership_chain_with_nacks() {
        // Three simultaneous remote writers: the line visits each in turn
        // (three hops of 100 each between remote owners); the 2nd hand-off
        // also serves 1 NACK, the 3rd 2.
        let mut l = CacheLine::new(0, COST).with_directory(10);
        let a = l.write(Time(0), 0, 1);
        let b = l.write(Time(0), 1, 2);
        let c = l.write(Time(0), 2, 3);
        assert_eq!(a, Time(10 + 200));
        assert_eq!(b, a + Dur(10 + 300));
        assert_eq!(c, b + Dur(20 + 300));
        assert_eq!(l.stats().nacks, 3);
        // Once the chain has drained, a lone write pays directory + hops.
        assert_eq!(l.write(Time(5000), 3, 1), Time(5310));
    }

    #[test]
    fn upgrade_waits_for_the_farthest_sharer() {
        let cost = CostTable::from_fn(3, |a, b| 10 + 100 * a.abs_diff(b) as u64);
        let mut l = CacheLine::new(0, &cost);
        l.read(Time(0), 0, 0);
        // Sole sharer upgrading: a directory round trip from home 0.
        assert_eq!(l.write(Time(100), 0, 0), Time(110));
        // Forwarded from cpu 0's dirty copy: (110 + 10 + 110) / 2.
        assert_eq!(l.read(Time(200), 1, 1), Time(315));
        // Clean now: from home 0 to node 2.
        assert_eq!(l.read(Time(400), 2, 2), Time(610));
        // Writer on node 0 must invalidate nodes 1 and 2; the farthest ack
        // is (10 + 210 + 210) / 2.
        assert_eq!(l.write(Time(1000), 0, 0), Time(1215));
        assert_eq!(l.stats().invalidations, 2);
    }

    #[test]
    fn spread_out_requests_pay_no_conflict() {
        // The same 8 writes, once all at t=0 and once 1 us apart: spread
        // out, each costs one transfer; at once, NACKs add up.
        let mut together = CacheLine::new(0, COST).with_directory(10);
        let mut apart = CacheLine::new(0, COST).with_directory(10);
        let mut last = Time::ZERO;
        let mut spread = Dur(0);
        for c in 0..8 {
            last = together.write(Time(0), c, 1 + c % 3);
            let t = Time(1000 * c as u64);
            spread += apart.write(t, c, 1 + c % 3) - t;
        }
        assert_eq!(apart.stats().nacks, 0);
        // The first from memory, the rest three hops from the last writer.
        assert_eq!(spread, Dur(210 + 7 * 310));
        assert!(last - Time::ZERO > spread, "{last} vs {spread}");
        assert_eq!(together.stats().nacks, (0..8).sum::<u64>());
    }

    proptest! {
        /// Any access pattern: completions never precede requests, every
        /// request is a hit or a transfer, ownership completions are in
        /// order (the chain), and a write by the same CPU right after its
        /// own completed write is a hit.
        #[test]
        fn accounting_is_consistent(
            ops in prop::collection::vec((0u64..300, 0usize..8, any::<bool>()), 1..200),
            dir in 0u64..50,
        ) {
            let mut l = CacheLine::new(0, COST).with_directory(dir);
            let mut now = Time::ZERO;
            let mut last_owner_done = Time::ZERO;
            for &(gap, cpu, write) in &ops {
                now += Dur(gap);
                let node = cpu / 2;
                let done = if write { l.write(now, cpu, node) } else { l.read(now, cpu, node) };
                prop_assert!(done >= now);
                if write {
                    prop_assert!(done >= last_owner_done);
                    last_owner_done = done;
                    let hits = l.stats().hits;
                    prop_assert_eq!(l.write(done, cpu, node), done);
                    prop_assert_eq!(l.stats().hits, hits + 1);
                }
            }
            let s = l.stats();
            prop_assert_eq!(s.hits + s.transfers, s.reads + s.writes);
        }

        /// `write_times(n)` leaves the line as `n` chained writes would: the
        /// same completion, state, readiness and statistics, amid random
        /// reads and writes by other CPUs (including ones still in flight).
        #[test]
        fn write_times_is_n_chained_writes(
            ops in prop::collection::vec((0u64..300, 0usize..8, 0u8..3, 0u64..20), 1..200),
            dir in 0u64..50,
        ) {
            let mut batched = CacheLine::new(0, COST).with_directory(dir);
            let mut each = CacheLine::new(0, COST).with_directory(dir);
            let mut now = Time::ZERO;
            for &(gap, cpu, op, n) in &ops {
                now += Dur(gap);
                let node = cpu / 2;
                let (a, b) = match op {
                    0 => (batched.read(now, cpu, node), each.read(now, cpu, node)),
                    1 => (batched.write(now, cpu, node), each.write(now, cpu, node)),
                    _ => (
                        batched.write_times(now, cpu, node, n),
                        (0..n).fold(now, |t, _| each.write(t, cpu, node)),
                    ),
                };
                prop_assert_eq!(a, b);
                prop_assert_eq!(batched.stats(), each.stats());
                prop_assert_eq!(batched.state(), each.state());
                prop_assert_eq!(batched.ready(), each.ready());
            }
        }

        /// `miss` drops every transfer in flight at once when `ready` has
        /// passed: that needs every one to complete by `ready`. After
        /// random reads and writes the list is in completion order and
        /// ends at or before `ready`, and each miss NACKs exactly the
        /// transfers the list held still in flight (what popping the
        /// completed ones one by one left).
        #[test]
        fn transfers_in_flight_complete_by_ready(
            ops in prop::collection::vec((0u64..300, 0usize..8, any::<bool>()), 1..200),
            dir in 0u64..50,
        ) {
            let mut l = CacheLine::new(0, COST).with_directory(dir);
            let mut now = Time::ZERO;
            for &(gap, cpu, write) in &ops {
                now += Dur(gap);
                let before: Vec<Time> = l.in_flight.iter().copied().collect();
                let (transfers, nacks) = (l.stats().transfers, l.stats().nacks);
                if write {
                    l.write(now, cpu, cpu / 2);
                } else {
                    l.read(now, cpu, cpu / 2);
                }
                if l.stats().transfers > transfers {
                    let still = before.iter().filter(|&&t| t > now).count() as u64;
                    prop_assert_eq!(l.stats().nacks - nacks, still);
                }
                prop_assert!(l.in_flight.iter().is_sorted());
                prop_assert!(l.in_flight.iter().all(|&t| t <= l.ready()));
            }
        }
    }
}

#[cfg(test)]
mod set_tests {
    use super::super::cost::CostTable;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Lines of a set serve writes as separate lines do: the same
        /// completion times and the same totals, including bursts whose
        /// transfers in flight outgrow the cell (small gaps, many writers).
        #[test]
        fn a_line_set_writes_as_separate_lines(
            ops in prop::collection::vec((0u64..120, 0usize..12, 0usize..3), 1..300),
            dir in 0u64..50,
        ) {
            let cost = CostTable::from_groups(6, vec![2], vec![10, 60, 150]);
            let mut lines: Vec<_> = (0..3).map(|h| CacheLine::new(h, &cost).with_directory(dir)).collect();
            let mut set = LineSet::new(&cost, dir);
            let mut cells: Vec<_> = (0..3).map(|_| set.add()).collect();
            let mut now = Time::ZERO;
            for &(gap, cpu, l) in &ops {
                now += Dur(gap);
                let node = cpu / 2;
                prop_assert_eq!(lines[l].write(now, cpu, node), set.write(&mut cells[l], l, now, cpu, node));
            }
            let mut sum = LineStats::default();
            for l in &lines {
                let s = l.stats();
                sum.writes += s.writes;
                sum.hits += s.hits;
                sum.transfers += s.transfers;
                sum.invalidations += s.invalidations;
                sum.busy += s.busy;
                sum.total_queue_wait += s.total_queue_wait;
                sum.nacks += s.nacks;
            }
            prop_assert_eq!(*set.stats(), sum);
        }
    }

    /// Past 16 sharers a reader's hit test reads the bit set: every sharer
    /// hits, a new reader misses, and after a write none hits.
    #[test]
    fn many_sharers_hit_by_their_bits() {
        let cost = CostTable::from_groups(8, vec![2], vec![10, 60, 150]);
        let mut l = CacheLine::new(0, &cost);
        let mut now = Time::ZERO;
        for cpu in 0..40 {
            now += Dur(1000);
            l.read(now, cpu * 3, cpu % 8);
        }
        let misses = l.stats().transfers;
        for cpu in 0..40 {
            now += Dur(1000);
            prop_assert_ok(l.read(now, cpu * 3, cpu % 8) == now);
        }
        assert_eq!(l.stats().transfers, misses, "every sharer hits");
        l.read(now, 1, 0);
        assert_eq!(l.stats().transfers, misses + 1, "a new reader misses");
        now += Dur(1000);
        l.write(now, 2, 1);
        for cpu in [0, 3, 117] {
            now += Dur(1000);
            assert!(l.read(now, cpu, 0) > now, "cpu {cpu} lost its copy");
        }
    }

    proptest! {
        /// Direction: a write to a line more CPUs share never gets its
        /// acks sooner: each sharer that joins adds an invalidation (sent
        /// after the others, at the directory's occupancy) and removes none.
        #[test]
        fn more_sharers_never_make_a_write_cheaper(
            joins in prop::collection::vec((0usize..64, 0usize..8), 1..60),
            writer in (0usize..64, 0usize..8),
            dir in 0u64..50,
        ) {
            let cost = CostTable::from_groups(8, vec![2], vec![10, 60, 150]);
            let mut s = Sharers::new();
            let mut last = s.invalidation_ns(&cost, 0, dir, writer.0, writer.1);
            // With no other copy: the home's reply alone.
            prop_assert_eq!(last, cost.transfer_ns(0, writer.1) / 2);
            for &(cpu, node) in &joins {
                s.insert(cpu, node);
                let t = s.invalidation_ns(&cost, 0, dir, writer.0, writer.1);
                prop_assert!(t >= last, "{} sharers: {} < {}", s.len(), t, last);
                last = t;
            }
            // The writer's own copy costs nothing to invalidate.
            let mut own = Sharers::new();
            own.insert(writer.0, writer.1);
            prop_assert_eq!(
                own.invalidation_ns(&cost, 0, dir, writer.0, writer.1),
                cost.transfer_ns(0, writer.1) / 2
            );
            s.clear();
            prop_assert!(s.is_empty() && !s.contains(joins[0].0));
        }
    }

    fn prop_assert_ok(hit: bool) {
        assert!(hit, "a sharer's read is a hit at once");
    }

    /// A line's cell: 24 bytes (a `CacheLine` is 160 and a heap block).
    #[test]
    fn a_line_cell_stays_small() {
        assert_eq!(std::mem::size_of::<LineCell>(), 24);
    }
}
