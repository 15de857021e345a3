//! A lock (spinlock or mutex) shared by CPUs on different nodes.
//!
//! The lock is modelled by who holds it, who waits, and which CPU's cache
//! holds its line (the last to take it: its store left the line modified
//! there, tracked as a `LineCell` tracks its owner). Re-taking by that CPU
//! is a hit; any other CPU's take moves the line to it, at the cost the
//! caller's [`TransferCost`] gives (on-node or remote); nothing else is charged, so the hold time
//! itself is the caller's business (it calls [`Lock::release`] when done).
//!
//! Two policies, as in the kernel's history:
//!
//! - [`LockPolicy::Fifo`]: ticket or queued (MCS) locks. Waiters are granted
//!   strictly in arrival order; the hand-off costs one line transfer from the
//!   releaser's node to the next waiter's.
//! - [`LockPolicy::Unfair`]: test-and-set spinlocks. Every waiter spins on the
//!   line; the release invalidates it and each waiter sees the release after
//!   the transfer time from the releaser's node to its own. The first to see
//!   it wins, so waiters near the releaser win more often, which is the
//!   unfairness (and starvation) seen on large NUMA machines. Waiters at equal
//!   distance are tied and one is picked with the lock's seeded RNG.
//!
//!   With [`Lock::with_spinning`] the race is probabilistic, as on real
//!   hardware: each waiter notices the release after its transfer time plus
//!   a uniform draw in `[0, jitter_ns)` (where it was in its spin loop, how
//!   the bus arbitrated), so a remote waiter sometimes beats a local one and
//!   the releaser's node wins "more often" rather than always ([WILDFIRE01]
//!   C7). Every spinner re-fetches the line after a release, so the hand-off
//!   also costs `directory_ns` per other spinner (the directory serves them
//!   all, [ALTIX04] C1). A queued (FIFO) lock hands the line to one waiter
//!   only and pays neither.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use rand::RngExt;

use super::cacheline::{forward_ns, Found, Owner};
use super::cost::TransferCost;
use super::rng::SimRng;
use super::time::{ceil_u64, round_u64, Dur, Time};

/// How a released lock picks its next holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockPolicy {
    /// Ticket/queued lock: grants in arrival order.
    Fifo,
    /// Test-and-set lock: the waiter nearest the releaser wins.
    Unfair,
}

/// A lock hand-off: `cpu` (on `node`) holds the lock from `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The CPU that now holds the lock.
    pub cpu: usize,
    /// Its node.
    pub node: usize,
    /// When it holds it (after the line has reached it).
    pub at: Time,
}

/// Per-node lock statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeLockStats {
    /// Grants to CPUs on this node.
    pub acquisitions: u64,
    /// Of those, the ones that had to queue.
    pub contended: u64,
    /// Sum of (grant time − request time): spinning or sleeping time.
    pub total_wait: Dur,
    /// Longest single wait.
    pub max_wait: Dur,
}

/// Lock statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Total grants.
    pub acquisitions: u64,
    /// Grants that had to queue.
    pub contended: u64,
    /// Grants whose line came from another node.
    pub remote_transfers: u64,
    /// Sum of hold times (grant to release).
    pub total_hold: Dur,
    /// Longest hold.
    pub max_hold: Dur,
    /// Most waiters queued at once.
    pub max_waiters: usize,
    /// By node, sorted, only the nodes that took the lock, and only for a
    /// lock asked to keep them ([`Lock::with_node_stats`]): a per-CPU lock
    /// woken from every node would otherwise carry an entry per waker's
    /// node (16,384 run-queue locks × the nodes that woke them, issue 31).
    pub per_node: Vec<(usize, NodeLockStats)>,
    /// Sum of waits over all grants.
    wait_sum: Dur,
    /// Longest wait of any grant.
    wait_max: Dur,
}

impl LockStats {
    /// Statistics for `node` (zero if it never took the lock).
    pub fn node(&self, node: usize) -> NodeLockStats {
        self.per_node
            .binary_search_by_key(&node, |&(n, _)| n)
            .map(|i| self.per_node[i].1)
            .unwrap_or_default()
    }
    /// The entry of `node`, added (in order) on its first grant.
    fn node_mut(&mut self, node: usize) -> &mut NodeLockStats {
        let i = match self.per_node.binary_search_by_key(&node, |&(n, _)| n) {
            Ok(i) => i,
            Err(i) => {
                self.per_node.insert(i, (node, NodeLockStats::default()));
                i
            }
        };
        &mut self.per_node[i].1
    }
    /// Sum of waits over all grants.
    pub fn total_wait(&self) -> Dur {
        self.wait_sum
    }
    /// Longest wait of any grant.
    pub fn max_wait(&self) -> Dur {
        self.wait_max
    }
}

/// A waiting CPU. CPU and node numbers are kept in 32 bits (16 bytes a
/// waiter, not 24): a 16,384-CPU run keeps one lock per CPU (issue 31).
#[derive(Debug, Clone, Copy)]
struct Waiter {
    cpu: u32,
    node: u32,
    since: Time,
}

impl Waiter {
    fn new(cpu: usize, node: usize, since: Time) -> Self {
        Waiter {
            cpu: small(cpu),
            node: small(node),
            since,
        }
    }
    #[inline(always)]
    fn cpu(&self) -> usize {
        self.cpu as usize
    }
    #[inline(always)]
    fn node(&self) -> usize {
        self.node as usize
    }
}

/// The holder: who, on which node, since when (as a [`Waiter`]).
type Holder = Waiter;

/// A CPU or node number in 32 bits. No machine has 2^32 CPUs (machine
/// files are refused far below that), so a larger one is a model bug.
#[inline(always)]
fn small(n: usize) -> u32 {
    u32::try_from(n).expect("CPU and node numbers fit 32 bits")
}

/// Node "none" in the 32-bit node fields.
const NO_NODE: u32 = u32::MAX;

/// The settings few locks use, kept out of line so that a lock of the
/// common kind stays small (issue 31: 16,384 run-queue locks).
#[derive(Debug, Clone, Copy, Default)]
struct Retry {
    /// Waiters are NACKed by the home directory and re-send at once, so a
    /// waiter's retry reaches the home once per round trip to it
    /// ([`Lock::with_nack_retry`]): that round trip as a multiple of the
    /// line's transfer time, or `None` for spinning waiters.
    nack_retry: Option<f64>,
    /// Spinners retry with `cmpxchg` once they read the word free
    /// ([`Lock::with_cmpxchg_stampede`]): a request's round trip to the
    /// home as a multiple of the line's transfer time, or `None`.
    stampede: Option<f64>,
    /// Mean transfer time of the waiters of the last race, and how many
    /// (kept only with `stampede`, its only reader).
    last_race: (u64, u64),
    /// Spinners read-spin on shared copies of the word
    /// ([`Lock::with_read_spin`]): the release store and the winner's
    /// `cmpxchg` are upgrades that invalidate them.
    read_spin: bool,
}

/// A lock resource; see the module documentation for the model.
#[derive(Debug)]
pub struct Lock<C> {
    policy: LockPolicy,
    cost: C,
    rng: SimRng,
    holder: Option<Holder>,
    /// Waiters in arrival order (FIFO).
    waiters: VecDeque<Waiter>,
    /// Waiters grouped by node (test-and-set: order does not matter).
    spinners: Spinners,
    /// The CPU whose cache holds the lock's line (the last to take it),
    /// as a `LineCell` tracks a line's owner: its re-take is a hit, another
    /// CPU's a transfer from its node. Nobody until first taken.
    line: Owner,
    /// Node whose directory tracks the lock word (test-and-set hand-offs
    /// go through it); [`NO_NODE`]: direct transfers.
    home: u32,
    stats: LockStats,
    spin_jitter_ns: u64,
    directory_ns: u64,
    /// NACK retry or cmpxchg stampede, when switched on (out of line).
    retry: Option<Box<Retry>>,
    /// Until when the losers' `cmpxchg`s of the last hand-off hold the line.
    line_busy_until: Time,
    /// Keep [`LockStats::per_node`].
    node_stats: bool,
}

impl<C: TransferCost> Lock<C> {
    /// A free lock. `rng` breaks ties under [`LockPolicy::Unfair`] (take it
    /// from [`Streams`](super::Streams)); a FIFO lock never draws from it.
    pub fn new(policy: LockPolicy, cost: C, rng: SimRng) -> Self {
        Lock {
            policy,
            cost,
            rng,
            holder: None,
            waiters: VecDeque::new(),
            spinners: Spinners::default(),
            line: Owner::NONE,
            home: NO_NODE,
            stats: LockStats::default(),
            spin_jitter_ns: 0,
            directory_ns: 0,
            retry: None,
            line_busy_until: Time::ZERO,
            node_stats: false,
        }
    }

    /// Keep statistics by node ([`LockStats::per_node`], [`LockStats::node`]);
    /// without it only the totals are kept.
    pub fn with_node_stats(mut self) -> Self {
        self.node_stats = true;
        self
    }

    /// Test-and-set behaviour under [`LockPolicy::Unfair`]: the spread of the
    /// moments waiters see a release, and the extra hand-off time per other
    /// spinner (machine `coherence.spin_jitter_ns`, `coherence.directory_ns`).
    /// Ignored by [`LockPolicy::Fifo`].
    pub fn with_spinning(mut self, jitter_ns: u64, directory_ns: u64) -> Self {
        self.spin_jitter_ns = jitter_ns;
        self.directory_ns = directory_ns;
        self
    }

    /// The lock word lives in memory on `home`: a test-and-set hand-off
    /// between nodes is a three-hop miss through its directory (request to
    /// home, forward to the releaser, reply), as in `CacheLine`. A queued
    /// lock hands over by writing the next waiter's own flag and pays the
    /// direct transfer.
    pub fn with_home(mut self, home: usize) -> Self {
        self.home = small(home);
        self
    }

    /// Waiters do not spin on a cached copy: each request for the line is
    /// NACKed by its home's directory while a transfer is in flight and
    /// re-sent as soon as the NACK is back (the DASH/Origin/SHUB protocol,
    /// [ALTIX04] C1), so a waiter on node `n` reaches the home once per
    /// round trip, `rt_per_transfer × transfer_ns(n, home)` (a request and
    /// its NACK carry no data: the caller scales the line's transfer time
    /// to its request/reply time). The next holder is the waiter whose
    /// retry reaches the home first once the line is free: its phase is
    /// uniform in its own round trip, not in one machine-wide jitter, and
    /// far waiters retry less often. Needs [`with_home`](Self::with_home).
    pub fn with_nack_retry(mut self, rt_per_transfer: f64) -> Self {
        let r = self.retry.get_or_insert_with(Box::default);
        r.nack_retry = Some(rt_per_transfer.max(0.0));
        r.stampede = None;
        r.read_spin = false;
        self
    }

    /// Spinners hold shared copies of the lock word (test-and-test-and-set:
    /// ia64's `ia64_spinlock_contention` spins on `ld4`, `arch/ia64/kernel/head.S`;
    /// alpha's `spin_lock` on `ldl` before `ldl_l`/`stl_c`), so a contended
    /// hand-off is three directory transactions in a row, not one:
    /// 1. the release store (`st4.rel`) finds its own copy shared by the
    ///    spinners and upgrades it: request to the home, invalidations to
    ///    every sharer in parallel, acks back to the releaser,
    ///    `(t(r, home) + max_s t(home, s) + max_s t(s, r)) / 2`;
    /// 2. the winner's re-read starts when the invalidation reaches it
    ///    (`(t(r, home) + t(home, w)) / 2` after the release) and misses to
    ///    the releaser through the home (the three-hop miss every hand-off
    ///    already pays), which answers only once its upgrade has all its
    ///    acks;
    /// 3. the winner's `cmpxchg4.acq` upgrades the copy it just read,
    ///    invalidating the releaser's and those of the other spinners, which
    ///    re-read at once: the same form from the winner.
    ///
    /// Each `max_s` is taken over distance classes, so the cost is per class,
    /// not per waiter; taking the two maxima apart is an upper bound of the
    /// maximum of their sum (equal when the farthest sharer is farthest from
    /// both). Needs [`with_home`](Self::with_home); ignored with
    /// [`with_nack_retry`](Self::with_nack_retry) (no copies are cached) and by
    /// [`LockPolicy::Fifo`] (each waiter spins on its own line).
    pub fn with_read_spin(mut self) -> Self {
        if self.nack_retry().is_none() {
            self.retry.get_or_insert_with(Box::default).read_spin = true;
        }
        self
    }

    /// Test-and-test-and-set spinning as ia64's `ia64_spinlock_contention`
    /// does it (`arch/ia64/kernel/head.S`, 2.4 and 2.6): a waiter spins on
    /// `ld4` of its cached copy and, once it reads the word free, goes back
    /// to `cmpxchg4.acq`. After a release every spinner whose re-read came
    /// back before the winner's `cmpxchg` landed tries too; each `cmpxchg`
    /// takes the line exclusively whether or not it succeeds, so the
    /// losers' requests pass the line from cache to cache one after
    /// another, and the winner's release store (and with it the next
    /// hand-off) is one more request among those still pending: served
    /// in no particular order, it waits for half of them on average.
    /// Only re-reads the home serves between the winner's read and the
    /// arrival of its `cmpxchg` see the word free: one request round trip
    /// between the winner and the home (`rt_per_transfer ×` the line's
    /// transfer time: no data, no owner), during which the directory
    /// serves one request per `directory_ns`; so at most that many lose.
    /// Each loser costs the mean transfer time of the spinners of that
    /// race. Ignored with [`with_nack_retry`](Self::with_nack_retry) (a
    /// word that is not a lock).
    ///
    /// Not switched on by any lock yet (docs/sched.md, "Live lock"): kept,
    /// with its test, as the mechanism the next pass has to settle.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn with_cmpxchg_stampede(mut self, rt_per_transfer: f64) -> Self {
        if self.nack_retry().is_none() {
            self.retry.get_or_insert_with(Box::default).stampede = Some(rt_per_transfer.max(0.0));
        }
        self
    }

    fn nack_retry(&self) -> Option<f64> {
        self.retry.as_ref().and_then(|r| r.nack_retry)
    }
    fn stampede(&self) -> Option<f64> {
        self.retry.as_ref().and_then(|r| r.stampede)
    }
    fn home(&self) -> Option<usize> {
        (self.home != NO_NODE).then_some(self.home as usize)
    }
    fn read_spin(&self) -> bool {
        self.retry.as_ref().is_some_and(|r| r.read_spin)
    }

    /// The longest transfer between `from` and any waiting spinner (0 if none
    /// waits): one value per distance class.
    fn farthest_spinner_ns(&self, from: usize) -> u64 {
        self.spinners.farthest(from, &self.cost)
    }

    /// A store by a CPU on `n` to the lock word while the spinners (and
    /// `other`, a node that also holds a copy) share it: the upgrade's
    /// request to the home, the invalidations in parallel, the last ack
    /// back to `n` (`CacheLine`'s write to a shared line). At least the
    /// round trip to the home when no other copy exists.
    fn upgrade_ns(&self, n: usize, home: usize, other: Option<usize>) -> u64 {
        let (far_home, far_n) = (self.farthest_spinner_ns(home), self.farthest_spinner_ns(n));
        self.upgrade_given(n, home, other, far_home, far_n)
    }

    /// [`upgrade_ns`](Self::upgrade_ns) with the farthest spinners from
    /// the home and from `n` already known.
    fn upgrade_given(
        &self,
        n: usize,
        home: usize,
        other: Option<usize>,
        far_home: u64,
        far_n: u64,
    ) -> u64 {
        let to_home = self.cost.transfer_ns(n, home);
        let (far_home, far_n) = match other {
            Some(o) => (
                far_home.max(self.cost.transfer_ns(home, o)),
                far_n.max(self.cost.transfer_ns(o, n)),
            ),
            None => (far_home, far_n),
        };
        if far_home == 0 && far_n == 0 {
            return to_home;
        }
        ((to_home + far_home + far_n) / 2).max(to_home)
    }

    /// A free lock with this one's settings (policy, cost, spinning, retry)
    /// and `rng`, no statistics: a [`LockSet`] lock taken out of its cell.
    fn like(&self, rng: SimRng) -> Self
    where
        C: Clone,
    {
        Lock {
            policy: self.policy,
            cost: self.cost.clone(),
            rng,
            holder: None,
            waiters: VecDeque::new(),
            spinners: Spinners::default(),
            line: Owner::NONE,
            home: self.home,
            stats: LockStats::default(),
            spin_jitter_ns: self.spin_jitter_ns,
            directory_ns: self.directory_ns,
            retry: self.retry.clone(),
            line_busy_until: Time::ZERO,
            node_stats: false,
        }
    }

    /// Time for the lock's line to move from a cache on `from` to `to`.
    fn hop_ns(&self, from: usize, to: usize) -> u64 {
        match self.home() {
            Some(h) if self.policy == LockPolicy::Unfair => forward_ns(&self.cost, h, from, to),
            _ => self.cost.transfer_ns(from, to),
        }
    }

    /// `cpu` on `node` asks for the lock at `now`.
    ///
    /// Returns `Some(granted_at)` if the lock was free (granted once its line
    /// has reached `node`), or `None` if `cpu` now waits; it will be named
    /// by a later [`release`](Self::release).
    ///
    /// The first acquisition fetches the line from memory on its home node
    /// (the taker's own node when no home was given).
    pub fn acquire(&mut self, now: Time, cpu: usize, node: usize) -> Option<Time> {
        debug_assert!(
            !matches!(self.holder, Some(h) if h.cpu() == cpu)
                && self.waiters.iter().all(|w| w.cpu() != cpu)
                && self.spinners.iter().all(|w| w.cpu() != cpu),
            "cpu {cpu} asked for a lock it already holds or waits for"
        );
        if self.holder.is_some() {
            let w = Waiter::new(cpu, node, now);
            match self.policy {
                LockPolicy::Fifo => self.waiters.push_back(w),
                LockPolicy::Unfair => self.spinners.push(w),
            }
            self.stats.max_waiters = self.stats.max_waiters.max(self.waiters());
            return None;
        }
        let (from, ns) = match self.line.find(cpu) {
            // Its own last take left the line modified in its cache.
            Found::Hit => (node, 0),
            Found::Memory => {
                // Never taken: from memory on its home node.
                let h = self.home().unwrap_or(node);
                (h, self.cost.transfer_ns(h, node))
            }
            Found::Cache(o) => (o, self.hop_ns(o, node)),
        };
        let chain = self.line_busy_until.0.saturating_sub(now.0) / 2;
        let at = now + Dur(chain + ns);
        self.grant(cpu, node, now, at, from, false);
        Some(at)
    }

    /// The holder `cpu` releases the lock at `now`. Returns the next holder
    /// and when it gets the lock, or `None` if nobody waits.
    ///
    /// # Panics
    /// If `cpu` does not hold the lock: the calling model has lost track of
    /// its own state, and no result it produced could be trusted.
    pub fn release(&mut self, now: Time, cpu: usize) -> Option<Grant> {
        let h = match self.holder.take() {
            Some(h) if h.cpu() == cpu => h,
            other => panic!(
                "cpu {cpu} released a lock held by {:?}",
                other.map(|h| h.cpu())
            ),
        };
        debug_assert!(
            now >= h.since,
            "release at {now} before grant at {}",
            h.since
        );
        let hold = now - h.since;
        self.stats.total_hold += hold;
        self.stats.max_hold = self.stats.max_hold.max(hold);

        // `extra`: the winner's own retry phase (it asks again only that
        // long after the release reaches it), the directory's NACKs of the
        // others (one per spinner; by load with NACK retry) and, with
        // read-spinning, the two upgrades.
        let n_waiting = self.waiters() as u64;
        // Read-spinning: the release store upgrades the copy the spinners
        // share before anyone can see the word free.
        let tatas_home = self
            .home()
            .filter(|_| self.read_spin() && self.policy == LockPolicy::Unfair && n_waiting > 0);
        // Its farthest spinner from the releaser is the race's farthest
        // class (the race classes the same waiters from the same node,
        // before the winner leaves): one lookup a release saved. The one
        // from the home is taken now, while the winner still waits.
        let far_home = tatas_home.map_or(0, |home| self.farthest_spinner_ns(home));
        let releaser = h.node();
        let (w, extra, far_releaser) = match self.policy {
            _ if n_waiting == 0 => return None,
            LockPolicy::Fifo => (
                self.waiters
                    .pop_front()
                    .expect("index from a non-empty queue"),
                0,
                0,
            ),
            LockPolicy::Unfair => {
                let (w, phase, retry_rate, far) = self.first_to_see(h.node());
                let others = n_waiting - 1;
                let nacks = match retry_rate {
                    // NACK-retry: the other waiters' requests reach the
                    // directory at their own pace, one per round trip each,
                    // so the winner's request finds a queue only as deep as
                    // that load makes it.
                    Some(rate) => nack_queue_wait(self.directory_ns, rate, others),
                    // Spinners all re-fetch at once after the invalidation:
                    // the directory serves them in a burst.
                    None => self.directory_ns * others,
                };
                (w, phase + nacks, far)
            }
        };
        let release_upgrade = tatas_home.map_or(0, |home| {
            self.upgrade_given(releaser, home, None, far_home, far_releaser)
        });
        let hop = self.hop_ns(h.node(), w.node());
        // ... and the winner's cmpxchg upgrades the copy it read, which the
        // releaser and the spinners still waiting share.
        let extra = extra
            + tatas_home.map_or(0, |home| {
                // The winner's re-read starts when the invalidation reaches
                // it, and the releaser answers the forwarded read only once
                // its own upgrade has all its acks; of that, the read's own
                // request and forward are already in `hop`.
                let t = |a: usize, b: usize| self.cost.transfer_ns(a, b);
                let (r, wn) = (releaser, w.node());
                let inval = (t(r, home) + t(home, wn)) / 2;
                let read_legs = (t(wn, home) + t(home, r)) / 2;
                let acked = release_upgrade.saturating_sub(read_legs);
                inval.max(acked) + self.upgrade_ns(wn, home, Some(r))
            });
        // The release store is one more request among the last race's
        // pending cmpxchgs, served in no particular order (NACK and
        // retry): on average it waits for half of those still pending.
        let chain = self.line_busy_until.0.saturating_sub(now.0) / 2;
        let at = now + Dur(chain + hop + extra);
        if let (Some(scale), LockPolicy::Unfair) = (self.stampede(), self.policy) {
            let (mean_ns, k) = self.retry.as_ref().map_or((0, 0), |r| r.last_race);
            let losers = k.saturating_sub(1);
            let losers = if self.directory_ns > 0 {
                let home = self.home().unwrap_or(w.node());
                let window = self.cost.transfer_ns(w.node(), home) as f64 * scale;
                losers.min((window / self.directory_ns as f64) as u64)
            } else {
                losers
            };
            self.line_busy_until = at + Dur(losers * mean_ns);
        }
        self.grant(w.cpu(), w.node(), w.since, at, h.node(), true);
        Some(Grant {
            cpu: w.cpu(),
            node: w.node(),
            at,
        })
    }

    /// The test-and-set race: the waiter whose request reaches the line
    /// first after a release from `from` (transfer time plus its spin-loop
    /// phase, uniform in `[0, jitter)`), removed from the queue, and that
    /// winner's phase (0 without jitter: the nearest waiter wins, ties
    /// uniformly).
    ///
    /// Every waiter at one distance from `from` sees the release after the
    /// same transfer time, so the race is run between distance classes, not
    /// waiters: the earliest of k uniform phases is drawn at once from its
    /// distribution (`P(min >= m) = ((J - m) / J)^k`, by inverse CDF), the
    /// class with the earliest moment wins, and its winner is uniform among
    /// its waiters. That is the same distribution of winners and grant
    /// times as one draw per waiter (the tests below compare the two), at
    /// a cost per distance class (a handful on a nested-group machine), not
    /// per waiter. Exact ties between classes go to the nearer class.
    ///
    /// With NACK retry, also the rate at which the waiters other than the
    /// winner send requests to the home: the sum of their reciprocal round
    /// trips, per class, per ns.
    /// Also, without NACK retry, the largest of the classes' transfer
    /// times: the farthest waiter's from `from`, the winner included (0
    /// with NACK retry).
    fn first_to_see(&mut self, from: usize) -> (Waiter, u64, Option<f64>, u64) {
        let nack_home = self.home().zip(self.nack_retry());
        let stampede = self.retry.as_ref().is_some_and(|r| r.stampede.is_some());
        if nack_home.is_none() && !stampede {
            if let Some(won) = self.first_to_see_by_level(from) {
                return won;
            }
        }
        self.first_to_see_by_class(from)
    }

    /// [`first_to_see`](Self::first_to_see) by distance classes, for every
    /// lock and cost.
    fn first_to_see_by_class(&mut self, from: usize) -> (Waiter, u64, Option<f64>, u64) {
        let nack_home = self.home().zip(self.nack_retry());
        let mut classes = SCRATCH.take();
        // NACKed waiters race to the home, so they are classed by their
        // distance to it (one round trip per class), not to the releaser.
        self.spinners.classes_by(
            nack_home.map_or(from, |(h, _)| h),
            &self.cost,
            &mut classes,
            false,
        );
        let jitter = self.spin_jitter_ns;
        let nested = self.cost.nested_groups().is_some();
        // Only a read-spin release (never with NACK retry) reads it.
        let far = match nack_home {
            Some(_) => 0,
            None => classes.iter().map(|c| c.ns).max().unwrap_or(0),
        };
        debug_assert!(nack_home.is_some() || far == self.farthest_spinner_ns(from));
        {
            let k: u64 = classes.iter().map(|c| c.count).sum();
            let total: u64 = classes.iter().map(|c| c.count * c.ns).sum();
            if let Some(r) = self.retry.as_mut().filter(|r| r.stampede.is_some()) {
                r.last_race = (total / k.max(1), k);
            }
        }
        // Entrants: runs of classes at equal transfer time (they race as
        // one set of waiters).
        let mut best: Option<(u64, usize, usize, u64)> = None;
        let mut a = 0;
        while a < classes.len() {
            let ns = classes[a].ns;
            let b = match nack_home {
                // Each class retries at its own round trip to the home.
                Some(_) => a + 1,
                None => a + classes[a..].iter().take_while(|c| c.ns == ns).count(),
            };
            let k: u64 = classes[a..b].iter().map(|c| c.count).sum();
            let (key, phase) = match nack_home {
                Some((h, scale)) => {
                    // The line is free at the home; the first retry to
                    // arrive there wins, wherever the release came from.
                    // The classes are by transfer time from the home; with
                    // nested groups a cost is the same both ways.
                    let t = if nested {
                        classes[a].ns
                    } else {
                        self.cost.transfer_ns(classes[a].node, h)
                    } as f64;
                    let rt = round_u64(t * scale).max(1);
                    classes[a].rt = rt;
                    let p = min_uniform_phase(&mut self.rng, rt, k);
                    (p, p)
                }
                None => {
                    let p = match best {
                        _ if jitter == 0 => 0,
                        // Its moment is at least `ns`, no earlier than the
                        // best so far, which keeps a tie: it cannot win.
                        // Its random number is drawn all the same (the
                        // stream stays as it was), its `pow` is not.
                        Some((t, ..)) if ns >= t => {
                            skip_uniform_phase(&mut self.rng, jitter, k);
                            0
                        }
                        _ => min_uniform_phase(&mut self.rng, jitter, k),
                    };
                    (ns + p, p)
                }
            };
            if best.is_none_or(|(t, ..)| key < t) {
                best = Some((key, a, b, phase));
            }
            a = b;
        }
        let (_, a, b, phase) = best.expect("a non-empty queue has a class");
        let retry_rate = nack_home.map(|_| {
            let all: f64 = classes.iter().map(|c| c.count as f64 / c.rt as f64).sum();
            (all - 1.0 / classes[a].rt as f64).max(0.0)
        });
        let k: u64 = classes[a..b].iter().map(|c| c.count).sum();
        // Draw only when there is a real choice, so a race without ties
        // and without jitter consumes no random numbers.
        let pick = if k > 1 {
            self.rng.random_range(0..k)
        } else {
            0
        };
        let w = self
            .spinners
            .take(classes[a..b].iter().flat_map(|c| c.ranges), pick);
        SCRATCH.set(classes);
        (w, phase, retry_rate, far)
    }

    /// [`first_to_see`](Self::first_to_see) for the common case, spinners
    /// (no NACK retry, no stampede) on the short list under a cost whose
    /// levels are power-of-two groups with rising times
    /// ([`TransferCost::pow2_levels`]); `None` otherwise. The same race, the
    /// same draws in the same order, the same winner: a class is a level,
    /// its waiters one or two runs of the list in node order, and the
    /// levels are already in the stable time order the general path sorts
    /// its classes into, so nothing is built, sorted or searched twice
    /// (issue 31, session 18; `by_level_races_as_the_classes_do` checks it
    /// against the general path).
    fn first_to_see_by_level(&mut self, from: usize) -> Option<(Waiter, u64, Option<f64>, u64)> {
        let (shifts, ns) = self.cost.pow2_levels()?;
        let sp = &self.spinners;
        if sp.many.is_some() || shifts.len() > MAX_LEVELS || sp.few.is_empty() {
            return None;
        }
        // Per level with waiters: the level, then its waiters' two runs
        // (index ranges of the short list, below FEW: the group's run less
        // the run of the group inside it). Bytes, as the array is zeroed
        // at every release.
        let mut level = [[0u8; 5]; MAX_LEVELS + 2];
        let mut levels = 0;
        let n = sp.few.len();
        let (mut p_lo, mut p_hi) = (sp.below(from), sp.below(from + 1));
        let ix = |i: usize| i as u8;
        if p_hi > p_lo {
            level[0] = [0, ix(p_lo), ix(p_hi), 0, 0];
            levels = 1;
        }
        for (k, &sh) in shifts.iter().enumerate() {
            let glo = from >> sh << sh;
            let ghi = glo + (1 << sh);
            let (p_glo, p_ghi) = (sp.below(glo), sp.below(ghi));
            if (p_lo - p_glo) + (p_ghi - p_hi) > 0 {
                level[levels] = [ix(k + 1), ix(p_glo), ix(p_lo), ix(p_hi), ix(p_ghi)];
                levels += 1;
            }
            (p_lo, p_hi) = (p_glo, p_ghi);
        }
        if p_lo + (n - p_hi) > 0 {
            level[levels] = [ix(shifts.len() + 1), 0, ix(p_lo), ix(p_hi), ix(n)];
            levels += 1;
        }
        let level = &level[..levels];
        let time = |l: &[u8; 5]| ns[usize::from(l[0])];
        let count = |l: &[u8; 5]| u64::from(l[2] - l[1]) + u64::from(l[4] - l[3]);
        let far = level.last().map_or(0, time);
        debug_assert_eq!(far, self.farthest_spinner_ns(from));
        // The race between runs of levels at equal time, as in
        // `first_to_see`.
        let jitter = self.spin_jitter_ns;
        let mut best: Option<(u64, usize, usize, u64)> = None;
        let mut a = 0;
        while a < levels {
            let t = time(&level[a]);
            let b = a + level[a..].iter().take_while(|l| time(l) == t).count();
            let k: u64 = level[a..b].iter().map(count).sum();
            let p = match best {
                _ if jitter == 0 => 0,
                Some((bt, ..)) if t >= bt => {
                    skip_uniform_phase(&mut self.rng, jitter, k);
                    0
                }
                _ => min_uniform_phase(&mut self.rng, jitter, k),
            };
            if best.is_none_or(|(bt, ..)| t + p < bt) {
                best = Some((t + p, a, b, p));
            }
            a = b;
        }
        let (_, a, b, phase) = best.expect("a non-empty list has a level");
        let k: u64 = level[a..b].iter().map(count).sum();
        let mut pick = if k > 1 {
            self.rng.random_range(0..k)
        } else {
            0
        };
        for r in level[a..b].iter().flat_map(|l| [&l[1..3], &l[3..5]]) {
            let (lo, hi) = (usize::from(r[0]), usize::from(r[1]));
            let here = (hi - lo) as u64;
            if pick < here {
                let at = lo + pick as usize;
                let sp = &mut self.spinners;
                let last = sp.below(sp.few[at].node() + 1) - 1;
                let w = sp.remove_few(at, last);
                return Some((w, phase, None, far));
            }
            pick -= here;
        }
        unreachable!("pick below the levels' count")
    }

    fn grant(
        &mut self,
        cpu: usize,
        node: usize,
        asked: Time,
        at: Time,
        from: usize,
        contended: bool,
    ) {
        self.holder = Some(Holder::new(cpu, node, at));
        self.line = Owner::new(cpu, node);
        let wait = at - asked;
        self.stats.wait_sum += wait;
        self.stats.wait_max = self.stats.wait_max.max(wait);
        if self.node_stats {
            let n = self.stats.node_mut(node);
            n.acquisitions += 1;
            n.contended += contended as u64;
            n.total_wait += wait;
            n.max_wait = n.max_wait.max(wait);
        }
        self.stats.acquisitions += 1;
        self.stats.contended += contended as u64;
        self.stats.remote_transfers += (from != node) as u64;
    }

    /// The policy.
    pub fn policy(&self) -> LockPolicy {
        self.policy
    }
    /// The current holder's CPU and the time it got the lock.
    pub fn holder(&self) -> Option<(usize, Time)> {
        self.holder.map(|h| (h.cpu(), h.since))
    }
    /// Number of waiting CPUs.
    pub fn waiters(&self) -> usize {
        self.waiters.len() + self.spinners.len()
    }
    /// True when nobody holds the lock.
    pub fn is_free(&self) -> bool {
        self.holder.is_none()
    }
    /// Statistics so far.
    pub fn stats(&self) -> &LockStats {
        &self.stats
    }
    /// The cost function (e.g. to charge related transfers the same way).
    pub fn cost(&self) -> &C {
        &self.cost
    }
}

/// The state of one lock of a [`LockSet`] that every acquire and release
/// touches (24 bytes): the line's owner (the holder while held), the home, and where the
/// lock's full state is while CPUs wait for it. Kept by the caller, beside
/// whatever else its events touch (sched-ops keeps a CPU's state, its run
/// queue's lock and its queue head's line in one 64-byte line; issue 31).
#[derive(Debug, Clone, Copy)]
pub struct LockCell {
    /// Held, the holder's grant time (below [`CELL_BUSY`]); free,
    /// [`CELL_FREE`]; with waiters, [`CELL_BUSY`] | its slot in
    /// [`LockSet::busy`] (the full lock then has the holder). One word for
    /// what were a flag, a time and a slot: the cell fits beside a CPU's
    /// state and its queue head's line in 64 bytes.
    state: u64,
    /// The CPU whose cache holds the line: the holder while held, the
    /// last holder while free (as [`Lock`]'s).
    line: Owner,
    home: u32,
    /// The lock's number in its set (its random stream).
    id: u32,
}

/// A [`LockCell`]'s state while free.
const CELL_FREE: u64 = u64::MAX;
/// A [`LockCell`]'s state while its lock is in [`LockSet::busy`]: this bit
/// and the slot (a grant time never reaches 2⁶³ ns, 292 years).
const CELL_BUSY: u64 = 1 << 63;

impl LockCell {
    /// The holder: the line's owner while held.
    fn holder(&self) -> Option<Holder> {
        let (cpu, node) = self.line.cpu_node().filter(|_| self.state < CELL_BUSY)?;
        Some(Holder::new(cpu, node, Time(self.state)))
    }
    /// Its slot in [`LockSet::busy`] while CPUs wait for it.
    #[inline]
    fn slot(&self) -> Option<usize> {
        (self.state != CELL_FREE && self.state >= CELL_BUSY)
            .then_some((self.state & !CELL_BUSY) as usize)
    }
    /// Held in the cell since `since`.
    #[inline]
    fn hold(&mut self, since: Time) {
        debug_assert!(since.0 < CELL_BUSY, "grant times stay below 2^63 ns");
        self.state = since.0;
    }
    /// The node the lock's line lives on ([`Lock::with_home`]); `None`:
    /// direct transfers.
    #[inline]
    pub fn home(&self) -> Option<usize> {
        (self.home != NO_NODE).then_some(self.home as usize)
    }
}

/// Many locks of one kind (policy, cost, spinning and retry settings), as
/// many [`Lock`]s would behave: the same grants at the same times from the
/// same random streams. A 16,384-CPU machine has a run-queue lock per CPU,
/// and a [`Lock`] of 256 bytes each (waiter queues, spinners by node,
/// statistics) put every event on a cache miss of the host (issue 31). A
/// set keeps only a [`LockCell`] per lock: a lock without waiters is taken
/// and released through one shared [`Lock`] (`proto`) given the cell's
/// state; the first waiter moves the lock into a full [`Lock`] of its own
/// (from a pool), and it moves back to its cell when the last waiter has
/// been granted, its random stream kept aside. Statistics are the set's
/// totals ([`LockSet::stats`]): per-lock and per-node ones are what cost
/// the memory.
#[derive(Debug)]
pub struct LockSet<C> {
    /// The settings of every lock, taking and releasing the locks that
    /// have no waiters (never held between calls); its statistics are
    /// the set's totals of locks not in `busy`.
    proto: Lock<C>,
    /// Each lock's random stream while it sits in its cell (ties and
    /// jitter of a test-and-set race are drawn only with waiters).
    rngs: Vec<SimRng>,
    /// Locks with waiters, in full.
    busy: Vec<Lock<C>>,
    /// Slots of `busy` free for the next lock to get waiters.
    free: Vec<u32>,
}

impl<C: TransferCost + Clone> LockSet<C> {
    /// An empty set of locks with `proto`'s settings (a free lock, as
    /// [`Lock::new`] and its `with_*` make it; its home and random stream
    /// are replaced by each [`add`](Self::add)'s). Per-node statistics
    /// ([`Lock::with_node_stats`]) are not kept by a set.
    ///
    /// # Panics
    /// If `proto` is held, has waiters or keeps statistics by node (a
    /// model's construction error).
    pub fn new(proto: Lock<C>) -> Self {
        assert!(
            proto.is_free() && proto.waiters() == 0 && !proto.node_stats,
            "a lock set's prototype is a free lock without node statistics"
        );
        LockSet {
            proto,
            rngs: Vec::new(),
            busy: Vec::new(),
            free: Vec::new(),
        }
    }

    /// A new free lock homed on `home` (as [`Lock::with_home`]; `None`:
    /// direct transfers) drawing its races from `rng`: its cell.
    pub fn add(&mut self, home: Option<usize>, rng: SimRng) -> LockCell {
        let id = small(self.rngs.len());
        self.rngs.push(rng);
        LockCell {
            state: CELL_FREE,
            line: Owner::NONE,
            home: home.map_or(NO_NODE, small),
            id,
        }
    }

    /// `cpu` on `node` asks for `cell`'s lock at `now`; as [`Lock::acquire`].
    pub fn acquire(
        &mut self,
        cell: &mut LockCell,
        now: Time,
        cpu: usize,
        node: usize,
    ) -> Option<Time> {
        if let Some(s) = cell.slot() {
            return self.busy[s].acquire(now, cpu, node);
        }
        if cell.state == CELL_FREE {
            // Free and without waiters: the shared lock, given this one's
            // line and home, takes it (and counts it).
            let p = &mut self.proto;
            p.line = cell.line;
            p.home = cell.home;
            let at = p.acquire(now, cpu, node);
            let h = p.holder.take().expect("a free lock is granted");
            cell.hold(h.since);
            cell.line = p.line;
            return at;
        }
        // The first waiter: the lock in full, from the pool.
        let rng = self.rngs[cell.id as usize].clone();
        let holder = cell.holder();
        let l = match self.free.pop() {
            Some(s) => {
                cell.state = CELL_BUSY | u64::from(s);
                let l = &mut self.busy[s as usize];
                l.rng = rng;
                l
            }
            None => {
                cell.state = CELL_BUSY | u64::from(small(self.busy.len()));
                self.busy.push(self.proto.like(rng));
                self.busy.last_mut().expect("just pushed")
            }
        };
        l.home = cell.home;
        l.line = cell.line;
        l.holder = holder;
        l.line_busy_until = Time::ZERO;
        l.acquire(now, cpu, node)
    }

    /// `cell`'s holder `cpu` releases it at `now`; as [`Lock::release`].
    ///
    /// # Panics
    /// If `cpu` does not hold the lock.
    pub fn release(&mut self, cell: &mut LockCell, now: Time, cpu: usize) -> Option<Grant> {
        let Some(s) = cell.slot() else {
            let p = &mut self.proto;
            p.holder = cell.holder();
            let g = p.release(now, cpu);
            debug_assert!(g.is_none(), "a lock in its cell has no waiters");
            cell.state = CELL_FREE;
            return g;
        };
        let l = &mut self.busy[s];
        let g = l.release(now, cpu);
        // Back to its cell once nobody waits, unless a cmpxchg stampede
        // still holds its line (that state is the full lock's alone).
        if l.waiters() == 0 && l.stampede().is_none() {
            let h = l.holder.expect("a lock with waiters is granted on");
            cell.hold(h.since);
            cell.line = l.line;
            self.rngs[cell.id as usize] = l.rng.clone();
            let st = std::mem::take(&mut l.stats);
            add_stats(&mut self.proto.stats, &st);
            l.holder = None;
            self.free.push(small(s));
        }
        g
    }

    /// `cell`'s holder's CPU and when it got the lock (as [`Lock::holder`]).
    pub fn holder(&self, cell: &LockCell) -> Option<(usize, Time)> {
        match cell.slot() {
            None => cell.holder().map(|h| (h.cpu(), h.since)),
            Some(s) => self.busy[s].holder(),
        }
    }

    /// Waiters for `cell`'s lock.
    pub fn waiters(&self, cell: &LockCell) -> usize {
        match cell.slot() {
            None => 0,
            Some(s) => self.busy[s].waiters(),
        }
    }

    /// Totals over every lock of the set (per-node statistics are empty).
    pub fn stats(&self) -> LockStats {
        let mut t = self.proto.stats.clone();
        let free: std::collections::HashSet<u32> = self.free.iter().copied().collect();
        for (s, l) in self.busy.iter().enumerate() {
            if !free.contains(&small(s)) {
                add_stats(&mut t, &l.stats);
            }
        }
        t
    }
}

/// `b`'s counts added into `a` (maxima as maxima).
fn add_stats(a: &mut LockStats, b: &LockStats) {
    a.acquisitions += b.acquisitions;
    a.contended += b.contended;
    a.remote_transfers += b.remote_transfers;
    a.total_hold += b.total_hold;
    a.max_hold = a.max_hold.max(b.max_hold);
    a.max_waiters = a.max_waiters.max(b.max_waiters);
    a.wait_sum += b.wait_sum;
    a.wait_max = a.wait_max.max(b.wait_max);
}

/// How long the winner's request waits at the home's directory behind the
/// other waiters' NACKed retries (issue 34): they arrive at `rate` per ns
/// (one per round trip each) and each occupies the directory
/// `directory_ns`, a utilisation `rho`; the mean queueing delay of a
/// deterministic server under such load, `d·rho / (2(1 − rho))` (M/D/1).
/// The retries are a closed loop, one outstanding request per waiter, so
/// the queue never holds more than the `others` waiting: that bound,
/// `others × directory_ns`, applies at and past saturation.
fn nack_queue_wait(directory_ns: u64, rate: f64, others: u64) -> u64 {
    let d = directory_ns as f64;
    let bound = directory_ns * others;
    let rho = d * rate;
    if rho >= 1.0 {
        return bound;
    }
    round_u64(d * rho / (2.0 * (1.0 - rho))).min(bound)
}

/// The earliest of `k` independent uniform phases in `[0, jitter)`, drawn
/// with one random number: `P(min >= m) = ((jitter - m) / jitter)^k`, so
/// `min = jitter - ceil(jitter * U^(1/k))` for `U` uniform in `(0, 1]`.
fn min_uniform_phase(rng: &mut SimRng, jitter: u64, k: u64) -> u64 {
    debug_assert!(jitter > 0 && k > 0);
    if k == 1 {
        return rng.random_range(0..jitter);
    }
    // (0, 1]: never 0, so the phase stays below jitter.
    let u = ((rng.random::<u64>() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
    let above = ceil_u64(jitter as f64 * u.powf(1.0 / k as f64));
    jitter - above.clamp(1, jitter)
}

/// Draw what [`min_uniform_phase`] draws, for a class whose phase cannot
/// matter (it cannot win the race whatever it is): the same random numbers
/// taken from `rng`, without the `pow`.
fn skip_uniform_phase(rng: &mut SimRng, jitter: u64, k: u64) {
    debug_assert!(jitter > 0 && k > 0);
    if k == 1 {
        rng.random_range(0..jitter);
    } else {
        rng.random::<u64>();
    }
}

/// Waiters at one transfer time from the releaser: a node group minus the
/// smaller group inside it (two node ranges), holding `count` waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Class {
    ns: u64,
    /// One waiter's node, standing for the class.
    node: usize,
    count: u64,
    ranges: [(usize, usize); 2],
    /// With NACK retry: its waiters' request round trip to the home, ns
    /// (set by the race, which needs it twice).
    rt: u64,
}

impl Class {
    /// The class whose waiter on `node` stands for its transfer from `from`.
    fn of<C: TransferCost>(
        cost: &C,
        from: usize,
        node: usize,
        count: u64,
        ranges: [(usize, usize); 2],
    ) -> Class {
        Class {
            ns: cost.transfer_ns(from, node),
            node,
            count,
            ranges,
            rt: 0,
        }
    }
}

/// Node numbers hash by one multiply (Fibonacci hashing): the keys are
/// small integers chosen by the model, not by an adversary, and SipHash
/// cost a seventh of a 16,384-CPU run.
#[derive(Debug, Default, Clone, Copy)]
struct NodeHasher(u64);

impl Hasher for NodeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type NodeHash = BuildHasherDefault<NodeHasher>;

/// Test-and-set waiters kept by node, so the waiters in a node range are
/// counted and the i-th of them (in node order, then in its node's list
/// order) found quickly.
///
/// Most locks have a few waiters (16,384 per-CPU run-queue locks, a wake-up
/// now and then: issue 31): up to [`FEW`] they sit in one short list, kept
/// in node order (each node's waiters in its list's order), at no cost per
/// node: a node range is a run of it, found by binary search. Past it they move to a list per node and a
/// Fenwick tree of the counts over nodes `0..cap` (`O(log nodes)` a count),
/// and back to the short list when at most [`FEW_AGAIN`] are left. A node's
/// waiters keep one order in both forms (the short list holds them in the
/// order the node's list would), so the winner is the same either way. The
/// tree costs 8 bytes per node below the highest waiting node, and only a
/// lock with more than [`FEW_AGAIN`] waiters keeps one: at most
/// CPUs / [`FEW_AGAIN`] trees at once.
#[derive(Debug, Default)]
struct Spinners {
    /// The short list, sorted by node; a node's waiters in the order its
    /// list by node would hold them (so the form never changes a winner).
    /// Sorted, a node range is the run between two binary searches (a
    /// race's take and a class's count without a pass), and with
    /// power-of-two groups the farthest waiter from any node is the first
    /// or the last: every node between two that agree with `from` above
    /// some bit agrees with it there too (issue 31, session 18: it replaced
    /// the OR and AND of the nodes, refolded after every take).
    few: Vec<Waiter>,
    many: Option<Box<ByNode>>,
}

thread_local! {
    /// The distance classes of a release, reused by every release of every
    /// lock on the thread (one per lock cost a heap block per lock).
    static SCRATCH: std::cell::Cell<Vec<Class>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Group levels up to which the short list's lookups keep a level in a
/// fixed array ([`Spinners::farthest`]'s bounds,
/// [`Lock::first_to_see_by_level`]'s levels).
const MAX_LEVELS: usize = 14;

/// `groups` fit the one-pass classing: at most [`MAX_LEVELS`], each a
/// multiple of the one inside it (so each group of a node holds the
/// smaller ones).
fn nests(groups: &[u32]) -> bool {
    groups.len() <= MAX_LEVELS
        && groups.first().is_none_or(|&g| g > 0)
        && groups.windows(2).all(|w| w[1] % w[0] == 0)
}

/// Waiters at which a lock's short list becomes lists by node.
const FEW: usize = 32;
// `first_to_see_by_level` keeps short-list indices in bytes.
const _: () = assert!(FEW < 256);
/// Waiters at which lists by node go back to one short list.
const FEW_AGAIN: usize = 8;

#[derive(Debug, Default)]
struct ByNode {
    /// Nodes with waiters (an emptied list is kept until the lock has few
    /// waiters again, so a node's list is not reallocated every hand-off).
    lists: HashMap<usize, Vec<Waiter>, NodeHash>,
    /// Fenwick tree over nodes `0..cap`, 1-based cells.
    tree: Vec<u64>,
    /// A power of two above every node seen.
    cap: usize,
    /// Waiters in the lists (kept here, not in [`Spinners`], so that the
    /// common lock stays within its four cache lines with the node bits).
    len: usize,
}

impl ByNode {
    fn grow(&mut self, node: usize) {
        if node < self.cap {
            return;
        }
        self.cap = (node + 1).next_power_of_two().max(8);
        // The tree's cells depend on its size: rebuild from the lists.
        self.tree = vec![0; self.cap + 1];
        let counts: Vec<(usize, i64)> = self
            .lists
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(&n, v)| (n, v.len() as i64))
            .collect();
        for (n, c) in counts {
            self.add(n, c);
        }
    }

    fn add(&mut self, node: usize, d: i64) {
        let mut i = node + 1;
        while i <= self.cap {
            self.tree[i] = self.tree[i].wrapping_add_signed(d);
            i += i & i.wrapping_neg();
        }
    }

    fn prefix(&self, node: usize) -> u64 {
        let mut i = node.min(self.cap);
        let mut s = 0;
        while i > 0 {
            s += self.tree[i];
            i &= i - 1;
        }
        s
    }

    fn find(&self, k: u64) -> usize {
        self.find_rank(k).0
    }

    /// The node holding the waiter of rank `k` and that waiter's rank
    /// within the node (what the descent leaves of `k`).
    fn find_rank(&self, mut k: u64) -> (usize, u64) {
        let mut pos = 0;
        let mut step = self.cap;
        while step > 0 {
            if pos + step <= self.cap && self.tree[pos + step] <= k {
                pos += step;
                k -= self.tree[pos];
            }
            step /= 2;
        }
        (pos, k)
    }

    fn push(&mut self, w: Waiter) {
        self.grow(w.node());
        self.lists.entry(w.node()).or_default().push(w);
        self.add(w.node(), 1);
        self.len += 1;
    }
}

impl Spinners {
    /// How many wait.
    #[inline(always)]
    fn len(&self) -> usize {
        match &self.many {
            Some(m) => m.len,
            None => self.few.len(),
        }
    }

    /// Every waiter, in no particular order.
    fn iter(&self) -> impl Iterator<Item = &Waiter> {
        self.few
            .iter()
            .chain(self.many.iter().flat_map(|m| m.lists.values().flatten()))
    }

    /// Waiters on nodes `0..node`.
    fn prefix(&self, node: usize) -> u64 {
        match &self.many {
            Some(m) => m.prefix(node),
            None => self.below(node) as u64,
        }
    }

    /// Short-list waiters on nodes below `node`: where `node`'s run starts.
    #[inline(always)]
    fn below(&self, node: usize) -> usize {
        self.few.partition_point(|w| w.node() < node)
    }

    fn count(&self, (lo, hi): (usize, usize)) -> u64 {
        self.prefix(hi) - self.prefix(lo.min(hi))
    }

    /// Node holding the waiter of rank `k` (0-based, in node order).
    fn find(&self, k: u64) -> usize {
        match &self.many {
            Some(m) => m.find(k),
            None => self.few[k as usize].node(),
        }
    }

    fn push(&mut self, w: Waiter) {
        if let Some(m) = &mut self.many {
            m.push(w);
            return;
        }
        if self.few.len() < FEW {
            // Last of its node's run, as its list would append it.
            let at = self.below(w.node() + 1);
            self.few.insert(at, w);
            return;
        }
        // In the short list's order, so each node's list keeps its order.
        let mut m = Box::<ByNode>::default();
        for w in self.few.drain(..).chain(std::iter::once(w)) {
            m.push(w);
        }
        self.many = Some(m);
    }

    /// Remove and return the `i`-th waiter of `node`'s list; the list's last
    /// waiter takes its place (`Vec::swap_remove`).
    fn remove(&mut self, node: usize, i: usize) -> Waiter {
        let Some(m) = &mut self.many else {
            // The same on the node's run within the short list: the node's
            // last waiter moves into the taken one's slot.
            let start = self.below(node);
            let at = start + i;
            let last = self.below(node + 1) - 1;
            assert!(at <= last && self.few[at].node() == node, "counted waiters");
            return self.remove_few(at, last);
        };
        let w = m
            .lists
            .get_mut(&node)
            .expect("counted waiters")
            .swap_remove(i);
        m.add(node, -1);
        m.len -= 1;
        if m.len <= FEW_AGAIN {
            // Node by node, each list in its order.
            let mut lists: Vec<(usize, Vec<Waiter>)> = m.lists.drain().collect();
            lists.sort_unstable_by_key(|&(n, _)| n);
            self.few = lists.into_iter().flat_map(|(_, l)| l).collect();
            self.many = None;
        }
        w
    }

    /// Take the short list's waiter at `at`; its node's last (at `last`)
    /// takes its place, as `Vec::swap_remove` does in the node's list.
    #[inline(always)]
    fn remove_few(&mut self, at: usize, last: usize) -> Waiter {
        let w = self.few[at];
        self.few[at] = self.few[last];
        self.few.remove(last);
        w
    }

    /// Remove and return the `pick`-th waiter (in node order) of `ranges`.
    fn take(&mut self, ranges: impl Iterator<Item = (usize, usize)>, mut pick: u64) -> Waiter {
        if self.many.is_none() {
            // The short list is in node order, then list order within a
            // node: a range's `pick`-th waiter is its run's.
            for (lo, hi) in ranges {
                let start = self.below(lo);
                let n = if lo < hi { self.below(hi) - start } else { 0 };
                if pick < n as u64 {
                    let at = start + pick as usize;
                    let last = self.below(self.few[at].node() + 1) - 1;
                    return self.remove_few(at, last);
                }
                pick -= n as u64;
            }
            unreachable!("pick below the class's count")
        }
        let m = self
            .many
            .as_ref()
            .expect("the short list is taken from above");
        for (lo, hi) in ranges {
            let before = m.prefix(lo);
            let here = if lo < hi { m.prefix(hi) - before } else { 0 };
            if pick < here {
                let (node, i) = m.find_rank(before + pick);
                return self.remove(node, i as usize);
            }
            pick -= here;
        }
        unreachable!("pick below the class's count")
    }
    /// The longest transfer from `from` to any waiter (0 if none): the
    /// largest time of [`classes_by`](Self::classes_by)'s classes, without
    /// building, pushing and sorting them (a read-spin release asks it four
    /// times: issue 31). A cost with nested groups depends only on the
    /// smallest group two nodes share (`CostTable`'s group form,
    /// `UniformCost`), so every waiter of a class has its class's time and
    /// the short list is one pass over the waiters; an arbitrary cost is a
    /// class per node, which the same pass covers.
    #[inline]
    fn farthest<C: TransferCost>(&self, from: usize, cost: &C) -> u64 {
        if let (None, Some((shifts, ns))) = (&self.many, cost.pow2_levels()) {
            // The time grows with the level (the cost's shape is checked
            // once when it is built): the farthest waiter's level is the
            // answer. With power-of-two groups a node shares `from`'s group
            // of 2^s nodes iff they differ in no bit from s up, and in node
            // order every waiter agrees with `from` above the highest bit
            // where the first or the last differs.
            let (Some(first), Some(last)) = (self.few.first(), self.few.last()) else {
                return 0;
            };
            let differ = (from ^ first.node()) | (from ^ last.node());
            if differ == 0 {
                return ns[0];
            }
            let high = 63 - differ.leading_zeros();
            let inside = shifts.iter().take_while(|&&s| s <= high).count();
            return ns[inside + 1];
        }
        self.farthest_by_pass(from, cost)
    }

    /// [`farthest`](Self::farthest) where the short list's ends do not
    /// tell: the lists by node, or a cost without `pow2_levels` (out of
    /// line, so that the short path inlines into a release).
    #[inline(never)]
    fn farthest_by_pass<C: TransferCost>(&self, from: usize, cost: &C) -> u64 {
        let groups = cost.nested_groups();
        match &self.many {
            None if groups.is_none_or(nests) => {
                let level_ns = groups.zip(cost.level_ns()).filter(|(g, ns)| {
                    ns.len() == g.len() + 2 && ns.windows(2).all(|w| w[0] <= w[1])
                });
                let Some((groups, ns)) = level_ns else {
                    return self
                        .few
                        .iter()
                        .map(|w| cost.transfer_ns(from, w.node()))
                        .max()
                        .unwrap_or(0);
                };
                // Otherwise (groups not all powers of two, or a cost
                // without `pow2_levels`) by a pass, where the first waiter
                // outside every group of `from` ends the scan.
                let mut bound = [(0usize, 0usize); MAX_LEVELS + 1];
                bound[0] = (from, from + 1);
                for (b, &g) in bound[1..].iter_mut().zip(groups) {
                    let g = g as usize;
                    *b = (from / g * g, from / g * g + g);
                }
                let top = groups.len() + 1;
                let bound = &bound[..top];
                let mut far: Option<usize> = None;
                for w in &self.few {
                    let n = w.node();
                    let l = bound
                        .iter()
                        .position(|&(lo, hi)| n >= lo && n < hi)
                        .unwrap_or(top);
                    far = far.max(Some(l));
                    if l == top {
                        break;
                    }
                }
                far.map_or(0, |l| ns[l])
            }
            Some(m) if groups.is_none() => m
                .lists
                .iter()
                .filter(|(_, l)| !l.is_empty())
                .map(|(&n, _)| cost.transfer_ns(from, n))
                .max()
                .unwrap_or(0),
            Some(m) if groups.is_some_and(nests) => {
                let groups = groups.expect("matched above");
                if let Some(ns) = cost.level_ns().filter(|ns| ns.len() == groups.len() + 2) {
                    // From the outermost class in: two prefix sums a level,
                    // stopping once no class inside can be farther (at
                    // once where the cost grows with distance).
                    let bound = |j: usize| match j {
                        0 => (from, from + 1),
                        _ => {
                            let g = groups[j - 1] as usize;
                            (from / g * g, from / g * g + g)
                        }
                    };
                    let (mut j, mut outer, mut far) = (groups.len() + 1, self.len() as u64, 0);
                    loop {
                        let inner = match j {
                            0 => 0,
                            _ => {
                                let (lo, hi) = bound(j - 1);
                                m.prefix(hi) - m.prefix(lo)
                            }
                        };
                        if outer > inner {
                            far = far.max(ns[j]);
                        }
                        if inner == 0 || ns[..j].iter().all(|&x| x <= far) {
                            return far;
                        }
                        (j, outer) = (j - 1, inner);
                    }
                }
                // `classes_by`'s walk over the group levels, keeping the max.
                let mut hi = from + 1;
                let (mut p_lo, mut p_hi) = (m.prefix(from), m.prefix(hi));
                let mut far = if p_hi > p_lo {
                    cost.transfer_ns(from, from)
                } else {
                    0
                };
                for g in groups.iter().map(|&g| g as usize) {
                    let glo = from / g * g;
                    let ghi = glo + g;
                    let (p_glo, p_ghi) = (m.prefix(glo), m.prefix(ghi));
                    if (p_lo - p_glo) + (p_ghi - p_hi) > 0 {
                        let any = if p_lo > p_glo { glo } else { hi };
                        far = far.max(cost.transfer_ns(from, any));
                    }
                    (hi, p_lo, p_hi) = (ghi, p_glo, p_ghi);
                }
                if p_lo + (self.len() as u64 - p_hi) > 0 {
                    let any = if p_lo > 0 { 0 } else { hi };
                    far = far.max(cost.transfer_ns(from, any));
                }
                far
            }
            _ => {
                let mut classes = SCRATCH.take();
                self.classes_by(from, cost, &mut classes, false);
                let far = classes.iter().map(|c| c.ns).max().unwrap_or(0);
                SCRATCH.set(classes);
                far
            }
        }
    }

    /// The non-empty distance classes from `from` into `out`, by transfer
    /// time. With nested groups there is one class per group level (a
    /// handful); with an arbitrary cost every node with waiters is its own.
    // The test comparing the short list with the tree reads the lowest
    // waiters; a release needs only the transfer times.
    #[cfg_attr(not(test), allow(dead_code))]
    fn classes<C: TransferCost>(&self, from: usize, cost: &C, out: &mut Vec<Class>) {
        self.classes_by(from, cost, out, true);
    }

    /// As [`classes`](Self::classes); without `lowest`, a class of the
    /// lists by node with nested groups is stood for by its first node
    /// instead of its lowest waiter's (the same transfer time, one tree
    /// search a class less: what a release needs).
    fn classes_by<C: TransferCost>(
        &self,
        from: usize,
        cost: &C,
        out: &mut Vec<Class>,
        lowest: bool,
    ) {
        out.clear();
        // Waiters in a node range and the lowest node among them (only
        // meaningful when some wait): from the tree, or by one scan of the
        // short list.
        let stat = |(lo, hi): (usize, usize)| -> (u64, usize) {
            match &self.many {
                Some(_) => {
                    let c = self.count((lo, hi));
                    (c, if c > 0 { self.find(self.prefix(lo)) } else { 0 })
                }
                None if lo < hi => {
                    let (a, b) = (self.below(lo), self.below(hi));
                    (b as u64 - a as u64, self.few.get(a).map_or(0, Waiter::node))
                }
                None => (0, 0),
            }
        };
        let push = |ranges: [(usize, usize); 2], out: &mut Vec<Class>| {
            let (c0, min0) = stat(ranges[0]);
            let (c1, min1) = stat(ranges[1]);
            let count = c0 + c1;
            if count == 0 {
                return;
            }
            // Any waiter's node stands for the class's transfer time: the
            // lowest of the first range that has one.
            let node = if c0 > 0 { min0 } else { min1 };
            out.push(Class::of(cost, from, node, count, ranges));
        };
        match cost.nested_groups() {
            Some(groups) if self.many.is_none() && nests(groups) => {
                // The short list in node order: a group of `from` is a run
                // between two binary searches, a class its group's run
                // less the smaller group's inside it (each group size a
                // multiple of the one inside it), and the lowest node of
                // the class the first waiter of the two runs left.
                let few = &self.few;
                let (mut lo, mut hi) = (from, from + 1);
                let (mut p_lo, mut p_hi) = (self.below(lo), self.below(hi));
                if p_hi > p_lo {
                    let count = (p_hi - p_lo) as u64;
                    let node = few[p_lo].node();
                    out.push(Class::of(cost, from, node, count, [(lo, hi), (0, 0)]));
                }
                for g in groups.iter().map(|&g| g as usize) {
                    let glo = from / g * g;
                    let ghi = glo + g;
                    let (p_glo, p_ghi) = (self.below(glo), self.below(ghi));
                    let count = (p_lo - p_glo) + (p_ghi - p_hi);
                    if count > 0 {
                        let first = if p_lo > p_glo { p_glo } else { p_hi };
                        let ranges = [(glo, lo), (hi, ghi)];
                        let node = few[first].node();
                        out.push(Class::of(cost, from, node, count as u64, ranges));
                    }
                    (lo, hi, p_lo, p_hi) = (glo, ghi, p_glo, p_ghi);
                }
                // Nodes in no common group with `from`.
                let count = p_lo + (few.len() - p_hi);
                if count > 0 {
                    let first = if p_lo > 0 { 0 } else { p_hi };
                    let ranges = [(0, lo), (hi, usize::MAX)];
                    let node = few[first].node();
                    out.push(Class::of(cost, from, node, count as u64, ranges));
                }
            }
            Some(groups) if nests(groups) => {
                // Lists by node with nested groups: each level's group
                // bounds summed once (two prefix sums a level, not four
                // per class), a class's count its group's less the
                // smaller group's inside it, and its lowest waiter found
                // from the sums already taken.
                let m = self.many.as_ref().expect("the short list is classed above");
                let (mut lo, mut hi) = (from, from + 1);
                let (mut p_lo, mut p_hi) = (m.prefix(lo), m.prefix(hi));
                // `first`: waiters below the class's lowest; `any`: a node of
                // the class (the first node of its first range with
                // waiters, at or below a waiter, so a node of the machine).
                let class = |count: u64, first: u64, any: usize, ranges, out: &mut Vec<Class>| {
                    if count > 0 {
                        let node = if lowest { m.find(first) } else { any };
                        out.push(Class::of(cost, from, node, count, ranges));
                    }
                };
                class(p_hi - p_lo, p_lo, from, [(lo, hi), (0, 0)], out);
                for g in groups.iter().map(|&g| g as usize) {
                    let glo = from / g * g;
                    let ghi = glo + g;
                    let (p_glo, p_ghi) = (m.prefix(glo), m.prefix(ghi));
                    // The lowest waiter of the first range that has one.
                    let (first, any) = if p_lo > p_glo {
                        (p_glo, glo)
                    } else {
                        (p_hi, hi)
                    };
                    class(
                        (p_lo - p_glo) + (p_ghi - p_hi),
                        first,
                        any,
                        [(glo, lo), (hi, ghi)],
                        out,
                    );
                    (lo, hi, p_lo, p_hi) = (glo, ghi, p_glo, p_ghi);
                }
                // Nodes in no common group with `from`.
                let (first, any) = if p_lo > 0 { (0, 0) } else { (p_hi, hi) };
                class(
                    p_lo + (self.len() as u64 - p_hi),
                    first,
                    any,
                    [(0, lo), (hi, usize::MAX)],
                    out,
                );
            }
            Some(groups) => {
                let (mut lo, mut hi) = (from, from + 1);
                push([(lo, hi), (0, 0)], out);
                for g in groups.iter().map(|&g| g as usize) {
                    let glo = from / g * g;
                    let ghi = glo + g;
                    push([(glo, lo), (hi, ghi)], out);
                    (lo, hi) = (glo, ghi);
                }
                // Nodes in no common group with `from`.
                push([(0, lo), (hi, usize::MAX)], out);
            }
            None => {
                // In node order, as the tree counts them (the map's is arbitrary).
                let mut nodes: Vec<usize> = match &self.many {
                    Some(m) => m
                        .lists
                        .iter()
                        .filter(|(_, l)| !l.is_empty())
                        .map(|(&n, _)| n)
                        .collect(),
                    None => self.few.iter().map(|w| w.node()).collect(),
                };
                nodes.sort_unstable();
                nodes.dedup();
                for node in nodes {
                    push([(node, node + 1), (0, 0)], out);
                }
            }
        }
        // Stable: equal times keep nearest-first order.
        out.sort_by_key(|c| c.ns);
    }
}

#[cfg(test)]
mod tests {
    use super::super::cost::UniformCost;
    use super::super::queue::EventQueue;
    use super::super::rng::stream;
    use super::*;
    use proptest::prelude::*;

    const COST: UniformCost = UniformCost {
        local_ns: 10,
        remote_ns: 100,
    };

    fn lock(policy: LockPolicy, seed: u64) -> Lock<UniformCost> {
        Lock::new(policy, COST, stream(seed, "lock-test", 0))
    }

    /// A 16,384-CPU run keeps a lock per CPU (sched-ops on per-CPU run
    /// queues, issue 31): the common lock stays within four cache lines
    /// (it was 368 bytes) and a waiter within 16 bytes.
    #[test]
    fn lock_and_waiter_stay_small() {
        use super::super::cost::CostTable;
        let lock = std::mem::size_of::<Lock<&CostTable>>();
        assert!(lock <= 256, "Lock is {lock} bytes");
        assert_eq!(std::mem::size_of::<Waiter>(), 16);
    }

    #[test]
    fn far_nodes_cost_entries_only_where_cpus_took_or_wait() {
        // A lock on an 8,192-node machine touched by three nodes keeps three
        // statistics entries and serves every waiter, whatever the node ids.
        let mut l = lock(LockPolicy::Unfair, 7).with_node_stats();
        assert!(l.acquire(Time(0), 0, 8191).is_some());
        for (cpu, node) in [(1, 3), (2, 5000), (3, 8191), (4, 5000)] {
            assert_eq!(l.acquire(Time(1), cpu, node), None);
        }
        assert_eq!(l.waiters(), 4);
        let mut now = Time(100);
        let mut holder = 0;
        let mut served = Vec::new();
        while let Some(g) = l.release(now, holder) {
            served.push(g.cpu);
            holder = g.cpu;
            now = g.at + Dur(10);
        }
        served.sort_unstable();
        assert_eq!(served, vec![1, 2, 3, 4]);
        let s = l.stats();
        let nodes: Vec<usize> = s.per_node.iter().map(|&(n, _)| n).collect();
        assert_eq!(nodes, vec![3, 5000, 8191], "sorted, one entry per node");
        assert_eq!(s.node(5000).acquisitions, 2);
        assert_eq!(s.node(4).acquisitions, 0);
        assert_eq!(s.acquisitions, 5);
        // Without node statistics: no entries, the same totals.
        let mut bare = lock(LockPolicy::Unfair, 7);
        bare.acquire(Time(0), 0, 8191);
        for (cpu, node) in [(1, 3), (2, 5000), (3, 8191), (4, 5000)] {
            bare.acquire(Time(1), cpu, node);
        }
        let (mut now, mut holder) = (Time(100), 0);
        while let Some(g) = bare.release(now, holder) {
            holder = g.cpu;
            now = g.at + Dur(10);
        }
        let b = bare.stats();
        assert!(b.per_node.is_empty());
        assert_eq!(
            b.total_wait(),
            s.per_node.iter().map(|(_, n)| n.total_wait).sum()
        );
        assert_eq!(b.max_wait(), s.max_wait());
        assert_eq!(b.acquisitions, s.acquisitions);
    }

    /// The lock word's line stays modified in the last holder's cache
    /// (issue 34, session 16): a lone CPU re-taking its lock hits after
    /// the first take, another CPU on its node pays the on-node transfer,
    /// one on another node the remote (three-hop, via the home) one. The
    /// same through a [`LockSet`]'s cell. Before, the lock remembered the
    /// node only and charged the on-node transfer to the lone CPU.
    #[test]
    fn the_last_holder_retakes_its_lock_from_its_own_cache() {
        use super::super::cost::CostTable;
        // 4 nodes: 10 ns on a node, 100 in a pair, 300 across.
        let cost = CostTable::from_groups(4, vec![2], vec![10, 100, 300]);
        for policy in [LockPolicy::Fifo, LockPolicy::Unfair] {
            let home = 3;
            let make = || {
                Lock::new(policy, &cost, stream(1, "retake", 0))
                    .with_spinning(40, 5)
                    .with_home(home)
            };
            let remote = match policy {
                LockPolicy::Fifo => cost.transfer_ns(0, 2),
                // Request to the home, forward, reply: three half hops.
                LockPolicy::Unfair => {
                    (cost.transfer_ns(2, home) + cost.transfer_ns(home, 0) + cost.transfer_ns(0, 2))
                        / 2
                }
            };
            let mut l = make();
            let mut set = LockSet::new(make());
            let mut cell = set.add(Some(home), stream(1, "retake", 0));
            let mut both = |now: u64, cpu: usize, node: usize| {
                let a = l.acquire(Time(now), cpu, node).expect("free");
                let b = set.acquire(&mut cell, Time(now), cpu, node).expect("free");
                assert_eq!(a, b, "{policy:?}: the set as the lock");
                let release = a + Dur(50);
                assert_eq!(l.release(release, cpu), None);
                assert_eq!(set.release(&mut cell, release, cpu), None);
                (a - Time(now)).0
            };
            // First take: from memory on the home.
            assert_eq!(both(0, 0, 0), cost.transfer_ns(home, 0));
            for k in 1..100 {
                assert_eq!(both(1000 * k, 0, 0), 0, "{policy:?}: take {k} is a hit");
            }
            // CPU 1 on the same node: the on-node transfer; then its own.
            assert_eq!(both(200_000, 1, 0), cost.transfer_ns(0, 0));
            assert_eq!(both(201_000, 1, 0), 0);
            // CPU 0 again: the line is in CPU 1's cache now.
            assert_eq!(both(202_000, 0, 0), cost.transfer_ns(0, 0));
            // CPU 8 on node 2: remote.
            assert_eq!(both(203_000, 8, 2), remote, "{policy:?}");
            assert_eq!(both(204_000, 8, 2), 0);
            let s = l.stats();
            assert_eq!(s.acquisitions, 105);
            // Only the take that crossed nodes (and the first, from the home).
            assert_eq!(s.remote_transfers, 2);
            assert_eq!(set.stats(), *s);
        }
    }

    #[test]
    fn uncontended_acquire_pays_line_transfer() {
        let mut l = lock(LockPolicy::Fifo, 1).with_node_stats();
        assert_eq!(l.acquire(Time(0), 0, 0), Some(Time(10)));
        assert_eq!(l.release(Time(50), 0), None);
        // Line now on node 0; a CPU on node 1 pays the remote cost.
        assert_eq!(l.acquire(Time(60), 5, 1), Some(Time(160)));
        assert_eq!(l.release(Time(200), 5), None);
        let s = l.stats();
        assert_eq!(s.acquisitions, 2);
        assert_eq!(s.contended, 0);
        assert_eq!(s.remote_transfers, 1);
        assert_eq!(s.total_hold, Dur(40 + 40));
        assert_eq!(s.node(1).total_wait, Dur(100));
        assert_eq!(s.max_wait(), Dur(100));
    }

    #[test]
    fn contended_waiter_gets_lock_after_release_plus_transfer() {
        let mut l = lock(LockPolicy::Fifo, 1).with_node_stats();
        l.acquire(Time(0), 0, 0);
        assert_eq!(l.acquire(Time(5), 1, 1), None);
        assert_eq!(l.waiters(), 1);
        let g = l.release(Time(30), 0).unwrap();
        assert_eq!(
            g,
            Grant {
                cpu: 1,
                node: 1,
                at: Time(130)
            }
        );
        assert_eq!(l.stats().node(1).total_wait, Dur(125));
        assert_eq!(l.stats().contended, 1);
    }

    #[test]
    #[should_panic(expected = "released a lock held by")]
    fn release_by_non_holder_panics() {
        let mut l = lock(LockPolicy::Fifo, 1);
        l.acquire(Time(0), 0, 0);
        l.release(Time(1), 3);
    }

    #[test]
    fn unfair_hands_to_releasers_node_even_if_it_came_last() {
        let mut l = lock(LockPolicy::Unfair, 1);
        l.acquire(Time(0), 0, 0);
        l.acquire(Time(1), 10, 1); // remote, first in line
        l.acquire(Time(2), 1, 0); // local to the holder, last
        let g = l.release(Time(20), 0).unwrap();
        assert_eq!(g.cpu, 1, "the releaser's node wins");
        assert_eq!(g.at, Time(30));
        // FIFO would have picked cpu 10.
        let mut f = lock(LockPolicy::Fifo, 1);
        f.acquire(Time(0), 0, 0);
        f.acquire(Time(1), 10, 1);
        f.acquire(Time(2), 1, 0);
        assert_eq!(f.release(Time(20), 0).unwrap().cpu, 10);
    }

    /// Many CPUs on 4 nodes repeatedly take the lock; count how often the
    /// lock stays on the releaser's node. Unfair must keep it local more
    /// often than FIFO (direction test, not a calibrated value).
    fn same_node_handoff_fraction(policy: LockPolicy, seed: u64) -> f64 {
        #[derive(Clone, Copy)]
        enum Ev {
            Want(usize),
            Release(usize),
        }
        let node_of = |cpu: usize| cpu / 4;
        let mut l = lock(policy, seed);
        let mut rng = stream(seed, "lock-test-workload", 0);
        let mut q = EventQueue::new();
        for cpu in 0..16 {
            q.push(Time(rng.random_range(0..50)), Ev::Want(cpu))
                .unwrap();
        }
        let (mut same, mut handoffs) = (0u64, 0u64);
        while let Some((now, ev)) = q.pop() {
            if handoffs >= 5_000 {
                break;
            }
            match ev {
                Ev::Want(cpu) => {
                    if let Some(at) = l.acquire(now, cpu, node_of(cpu)) {
                        q.push(at + Dur(rng.random_range(20..40)), Ev::Release(cpu))
                            .unwrap();
                    }
                }
                Ev::Release(cpu) => {
                    if let Some(g) = l.release(now, cpu) {
                        handoffs += 1;
                        same += (g.node == node_of(cpu)) as u64;
                        q.push(g.at + Dur(rng.random_range(20..40)), Ev::Release(g.cpu))
                            .unwrap();
                    }
                    // Think a little, then want it again.
                    q.push(now + Dur(rng.random_range(1..30)), Ev::Want(cpu))
                        .unwrap();
                }
            }
        }
        same as f64 / handoffs as f64
    }

    #[test]
    fn unfair_keeps_lock_on_releasing_node_more_than_fifo() {
        for seed in 1..4 {
            let unfair = same_node_handoff_fraction(LockPolicy::Unfair, seed);
            let fifo = same_node_handoff_fraction(LockPolicy::Fifo, seed);
            assert!(
                unfair > fifo + 0.2,
                "seed {seed}: unfair {unfair:.3} vs fifo {fifo:.3}"
            );
        }
    }

    #[test]
    fn unfair_ties_are_random_but_reproducible() {
        let run = |seed| {
            let mut l = lock(LockPolicy::Unfair, seed);
            let mut wins = [0u32; 2];
            for trial in 0..1000u64 {
                let t = trial * 1_000;
                // cpu 0 on node 0 holds; cpus 1 and 2 wait on nodes 1 and 2,
                // which are equally far from node 0.
                l.acquire(Time(t), 0, 0).unwrap();
                assert_eq!(l.acquire(Time(t), 1, 1), None);
                assert_eq!(l.acquire(Time(t), 2, 2), None);
                let w = l.release(Time(t + 100), 0).unwrap();
                wins[w.cpu - 1] += 1;
                let other = l.release(Time(t + 300), w.cpu).unwrap();
                assert_eq!(other.cpu, 3 - w.cpu);
                assert_eq!(l.release(Time(t + 500), other.cpu), None);
            }
            wins
        };
        let a = run(7);
        assert_eq!(a, run(7), "same seed, same choices");
        assert_ne!(a, run(8), "different seed, different choices");
        assert!(a[0] > 400 && a[1] > 400, "ties split roughly evenly: {a:?}");
    }

    /// ia64's test-and-test-and-set ([`Lock::with_cmpxchg_stampede`]): the
    /// losers of a race take the line in turn with their failed
    /// `cmpxchg`s, so the winner's own release hands over later the more
    /// spinners lost, and not at all later with one waiter.
    #[test]
    fn cmpxchg_stampede_delays_the_next_hand_off_by_the_losers() {
        use super::super::cost::CostTable;
        let cost = CostTable::from_groups(4, vec![2], vec![100, 400, 400]);
        // Second grant's time after a race among `k` spinners.
        let second = |stampede: bool, k: usize| {
            let mut l = Lock::new(LockPolicy::Unfair, &cost, stream(3, "ttas", 0))
                .with_spinning(300, 10)
                .with_home(0);
            if stampede {
                l = l.with_cmpxchg_stampede(1.0);
            }
            l.acquire(Time(0), 0, 0).unwrap();
            for c in 1..=k {
                assert_eq!(l.acquire(Time(0), c, c % 4), None);
            }
            let w = l.release(Time(1_000), 0).unwrap();
            // The winner releases at once: one of the others is next.
            let g = l.release(w.at, w.cpu).unwrap();
            (g.at - w.at).as_ns()
        };
        // Two spinners (nodes 1 and 2, 400 ns from the releaser): the one
        // loser holds the line for the race's mean transfer, 400 ns, and
        // the release store waits for half of that.
        assert_eq!(second(true, 2), second(false, 2) + 200);
        let (plain, ttas) = (second(false, 12), second(true, 12));
        // 11 losers, each at least one 100 ns transfer; half of them.
        assert!(
            ttas >= plain + 11 * 100 / 2,
            "plain {plain} ns, stampede {ttas} ns"
        );
    }

    /// NACKed retries queue at the directory only as deep as their load
    /// makes it: nothing when nobody else waits, rising with the retry rate,
    /// never above one request per other waiter, and that bound once the
    /// directory is saturated.
    /// A class skipped in the race takes the same random numbers its
    /// phase would have: the draws after it are the ones they were.
    #[test]
    fn a_skipped_phase_draws_what_the_phase_draws() {
        use crate::engine::stream;
        for (jitter, k) in [
            (1u64, 1u64),
            (7, 1),
            (1000, 1),
            (u64::MAX / 3, 1),
            (50, 2),
            (50, 31),
        ] {
            let mut a = stream(9, "skip-phase", jitter ^ k);
            let mut b = a.clone();
            for _ in 0..200 {
                let p = min_uniform_phase(&mut a, jitter, k);
                assert!(p < jitter);
                skip_uniform_phase(&mut b, jitter, k);
                assert_eq!(a.random::<u64>(), b.random::<u64>());
            }
        }
    }

    #[test]
    fn nack_queue_wait_grows_with_load_up_to_one_request_per_waiter() {
        assert_eq!(nack_queue_wait(10, 0.0, 0), 0);
        // 7 waiters retrying every 300 ns: rho = 0.23, well under 1 ns.
        let light = nack_queue_wait(10, 7.0 / 300.0, 7);
        // 31 waiters every 400 ns: rho = 0.78.
        let heavy = nack_queue_wait(10, 31.0 / 400.0, 31);
        assert!(light < heavy && heavy < 31 * 10, "{light} {heavy}");
        assert_eq!(light, 2);
        assert_eq!(heavy, 17);
        // Saturated (rho >= 1): every other waiter's request is ahead.
        assert_eq!(nack_queue_wait(30, 31.0 / 400.0, 31), 31 * 30);
        // Monotone in the rate.
        let mut last = 0;
        for k in 0..40u64 {
            let w = nack_queue_wait(10, k as f64 / 400.0, 40);
            assert!(w >= last);
            last = w;
        }
    }

    /// Read-spinning ([`Lock::with_read_spin`]): a contended hand-off is
    /// the release store's upgrade, the winner's three-hop read and the
    /// winner's `cmpxchg` upgrade; an uncontended release costs nothing
    /// more, and nearer sharers make the upgrades cheaper.
    #[test]
    fn read_spin_hand_off_waits_for_both_upgrades() {
        use super::super::cost::CostTable;
        // Nodes 0-1 and 2-3 in pairs: 100 ns within a node, 400 across.
        let cost = CostTable::from_groups(4, vec![2], vec![100, 400, 400]);
        let hand_off = |read_spin: bool, holder: usize, waiter: usize| {
            let mut l = Lock::new(LockPolicy::Unfair, &cost, stream(7, "rs", 0))
                .with_spinning(0, 0)
                .with_home(0);
            if read_spin {
                l = l.with_read_spin();
            }
            l.acquire(Time(0), 0, holder).unwrap();
            assert_eq!(l.acquire(Time(0), 1, waiter), None);
            let g = l.release(Time(10_000), 0).unwrap();
            // Nobody waits now: the winner's release is free of upgrades.
            assert_eq!(l.release(g.at + Dur(10), 1), None);
            (g.at - Time(10_000)).as_ns()
        };
        // Holder on node 1, waiter on node 2, home 0: every leg 400 ns, so
        // each of the three transactions is (400 + 400 + 400) / 2.
        assert_eq!(hand_off(false, 1, 2), 600);
        // The read starts when the invalidation reaches the waiter (400)
        // and the releaser's acks are back before the read's forward
        // arrives; then the winner's upgrade (600).
        assert_eq!(hand_off(true, 1, 2), 600 + 400 + 600);
        // All on the home's node: three local transactions.
        assert_eq!(hand_off(false, 0, 0), 100);
        assert_eq!(hand_off(true, 0, 0), 100 + 100 + 150);
        // A NACK-retry word caches no copies: no upgrades.
        let mut l = Lock::new(LockPolicy::Unfair, &cost, stream(7, "rs", 0))
            .with_spinning(0, 0)
            .with_home(0)
            .with_read_spin()
            .with_nack_retry(1.0);
        assert!(!l.read_spin());
        l.acquire(Time(0), 0, 1).unwrap();
        assert_eq!(l.acquire(Time(0), 1, 2), None);
        assert!(l.release(Time(10_000), 0).is_some());
    }

    /// NACK-and-retry arbitration ([`Lock::with_nack_retry`]): the race is
    /// to the home, each waiter retrying once per round trip to it, so a
    /// waiter on the home's node beats one that is far from the home even
    /// when that one sits beside the releaser. With a flat spin jitter the
    /// two are equally far from the releaser and split the wins.
    #[test]
    fn nack_retry_favours_waiters_near_the_home() {
        use super::super::cost::CostTable;
        // Nodes 0-1 and 2-3 in pairs: 100 ns within a node, 400 across.
        let cost = CostTable::from_groups(4, vec![2], vec![100, 400, 400]);
        let share = |nack: bool| {
            let mut l = Lock::new(LockPolicy::Unfair, &cost, stream(5, "nack", 0))
                .with_spinning(300, 0)
                .with_home(0);
            if nack {
                l = l.with_nack_retry(1.0);
            }
            let mut home_wins = 0u32;
            for trial in 0..2_000u64 {
                let t = trial * 10_000;
                // The holder is on node 2; cpu 1 waits on the home node 0,
                // cpu 2 on node 3, beside the holder and far from the home.
                l.acquire(Time(t), 0, 2).unwrap();
                assert_eq!(l.acquire(Time(t), 1, 0), None);
                assert_eq!(l.acquire(Time(t), 2, 3), None);
                let w = l.release(Time(t + 1_000), 0).unwrap();
                home_wins += (w.cpu == 1) as u32;
                let other = l.release(Time(t + 4_000), w.cpu).unwrap();
                assert_eq!(l.release(Time(t + 8_000), other.cpu), None);
            }
            f64::from(home_wins) / 2_000.0
        };
        let (flat, nack) = (share(false), share(true));
        // Phases uniform in [0, 100) against [0, 400): P = 1 - 50/400.
        assert!(
            (0.84..0.91).contains(&nack),
            "nack retry: home waiter won {nack}"
        );
        assert!(
            (0.4..0.6).contains(&flat),
            "flat jitter: home waiter won {flat}"
        );
    }

    /// The race as it was simulated before waiters were grouped: one phase
    /// per waiter, earliest moment wins. Returns (winner's node, its phase).
    fn per_waiter_race(
        nodes: &[usize],
        from: usize,
        cost: &impl TransferCost,
        jitter: u64,
        rng: &mut SimRng,
    ) -> (usize, u64) {
        let mut best = (u64::MAX, 0, 0);
        for &n in nodes {
            let phase = rng.random_range(0..jitter);
            let t = cost.transfer_ns(from, n) + phase;
            if t < best.0 {
                best = (t, n, phase);
            }
        }
        (best.1, best.2)
    }

    /// The grouped race picks winners and grant times with the same
    /// distribution as one draw per waiter: per-node win counts within a
    /// few standard deviations, mean winner phase within 3%, on a
    /// nested-group cost (4 levels) and on an explicit table.
    #[test]
    fn grouped_race_matches_per_waiter_race() {
        use super::super::cost::CostTable;
        let levels = [10u64, 190, 230, 270];
        let grouped = CostTable::from_groups(16, vec![2, 8], levels.to_vec());
        let dense = CostTable::from_fn(16, |a, b| {
            [10, 190, 230, 270][if a == b {
                0
            } else {
                // The innermost group (of 2, then 8) holding both, as
                // `machine::distance::level_of` finds it (engine sits below machine).
                1 + [2, 8].iter().position(|&g| a / g == b / g).unwrap_or(2)
            }]
        });
        // Waiters: several per node, some nodes empty, the releaser's
        // node included.
        let nodes: Vec<usize> = vec![0, 1, 1, 2, 3, 3, 3, 5, 8, 9, 9, 12, 15, 15];
        let jitter = 400;
        let trials = 40_000u64;
        for (name, cost) in [("grouped", &grouped), ("dense", &dense)] {
            let mut ref_rng = stream(9, "ref-race", 0);
            let mut want = [0u64; 16];
            let mut want_phase = 0u64;
            let mut got = [0u64; 16];
            let mut got_phase = 0u64;
            let mut l = Lock::new(LockPolicy::Unfair, cost, stream(9, "grouped-race", 0))
                .with_spinning(jitter, 0);
            for t in 0..trials {
                let (n, p) = per_waiter_race(&nodes, 0, cost, jitter, &mut ref_rng);
                want[n] += 1;
                want_phase += p;
                let base = Time(t * 10_000);
                // The grant comes when the line arrives (the last trial
                // left it on some node): release 100 ns after that, not
                // before it (the checked build's debug_assert caught a
                // release at base + 100 ns preceding a 270 ns grant).
                let granted = l.acquire(base, 1000, 0).unwrap();
                for (i, &n) in nodes.iter().enumerate() {
                    assert_eq!(l.acquire(base, i, n), None);
                }
                let released = granted + Dur(100);
                let g = l.release(released, 1000).unwrap();
                got[g.node] += 1;
                got_phase += (g.at - released).as_ns() - cost.transfer_ns(0, g.node);
                // Drain the rest in any order.
                let mut h = g.cpu;
                let mut now = g.at;
                while let Some(g) = l.release(now, h) {
                    h = g.cpu;
                    now = g.at;
                }
            }
            for n in 0..16 {
                let p = want[n] as f64 / trials as f64;
                let sd = (trials as f64 * p * (1.0 - p)).sqrt().max(1.0);
                assert!(
                    (got[n] as f64 - want[n] as f64).abs() < 5.0 * sd,
                    "{name}: node {n} won {} times, per-waiter {}",
                    got[n],
                    want[n]
                );
            }
            let (a, b) = (got_phase as f64, want_phase as f64);
            assert!((a / b - 1.0).abs() < 0.03, "{name}: phase {a} vs {b}");
            // The releaser's node must win most, but not always.
            assert!(got[0] > got[15] && got[15] > 0, "{name}: {got:?}");
        }
    }

    /// The short list and the lists by node pick the same waiter as plain
    /// per-node lists would, across the switch both ways (pushes and takes
    /// drawn at random, up to well past FEW waiters and back to none).
    #[test]
    fn few_and_many_waiters_take_as_per_node_lists() {
        use std::collections::BTreeMap;
        let mut rng = stream(3, "spinners-test", 0);
        let mut s = Spinners::default();
        let mut reference: BTreeMap<usize, Vec<Waiter>> = BTreeMap::new();
        let mut cpu = 0;
        for round in 0..4000 {
            // Grow for a while, then drain, twice over.
            let grow = (round / 500) % 2 == 0;
            let len = s.len();
            if len == 0 || (grow && rng.random_range(0..4) != 0) {
                let node = if round % 3 == 0 {
                    rng.random_range(0..9000)
                } else {
                    rng.random_range(0..40)
                };
                let w = Waiter::new(cpu, node, Time(0));
                cpu += 1;
                s.push(w);
                reference.entry(node).or_default().push(w);
            } else {
                let lo = rng.random_range(0..50);
                let hi = lo + rng.random_range(0..10_000);
                let ranges = [(lo, hi), (0, lo)];
                let counts: u64 = ranges
                    .iter()
                    .map(|&(a, b)| {
                        reference
                            .range(a..b.max(a))
                            .map(|(_, l)| l.len() as u64)
                            .sum::<u64>()
                    })
                    .sum();
                assert_eq!(counts, s.count(ranges[0]) + s.count(ranges[1]));
                if counts == 0 {
                    continue;
                }
                let pick = rng.random_range(0..counts);
                let got = s.take(ranges.into_iter(), pick);
                // The reference: node order within each range, list order
                // within a node, swap_remove.
                let mut k = pick;
                let mut want = None;
                'outer: for (a, b) in ranges {
                    for (&node, l) in reference.range_mut(a..b.max(a)) {
                        if k < l.len() as u64 {
                            want = Some((node, l.swap_remove(k as usize)));
                            break 'outer;
                        }
                        k -= l.len() as u64;
                    }
                }
                let (node, w) = want.expect("pick below the count");
                if reference[&node].is_empty() {
                    reference.remove(&node);
                }
                assert_eq!(
                    (got.cpu(), got.node()),
                    (w.cpu(), w.node()),
                    "round {round}"
                );
            }
            assert_eq!(s.len(), reference.values().map(Vec::len).sum::<usize>());
        }
    }

    /// The short list's one-pass classing gives the classes the node
    /// tree's range counts give, on random waiters and nested groups.
    #[test]
    fn short_list_classes_match_the_tree() {
        use super::super::cost::CostTable;
        let mut rng = stream(5, "spinners-classes", 0);
        for groups in [vec![], vec![2], vec![2, 8, 32], vec![4, 16, 64, 256]] {
            let ns: Vec<u64> = (0..groups.len() as u64 + 2).map(|k| 100 + 37 * k).collect();
            let cost = CostTable::from_groups(600, groups.clone(), ns);
            for round in 0..300 {
                let n = rng.random_range(1..=FEW);
                let spread = [3, 40, 600][round % 3];
                let mut few = Spinners::default();
                let mut many = Spinners {
                    many: Some(Box::default()),
                    ..Spinners::default()
                };
                for cpu in 0..n {
                    let w = Waiter::new(cpu, rng.random_range(0..spread), Time(0));
                    few.push(w);
                    many.push(w);
                }
                assert!(few.many.is_none());
                let from = rng.random_range(0..spread);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                few.classes(from, &cost, &mut a);
                many.classes(from, &cost, &mut b);
                assert_eq!(a, b, "groups {groups:?} from {from}");
            }
        }
    }

    /// The reference `farthest` is checked against: the largest time of
    /// the waiters' classes, as the race by classes sees them.
    fn largest_class_ns<C: TransferCost>(s: &Spinners, from: usize, cost: &C) -> u64 {
        let mut c = Vec::new();
        s.classes_by(from, cost, &mut c, false);
        c.iter().map(|c| c.ns).max().unwrap_or(0)
    }

    /// `farthest` answers what the classes' largest time was, for the short
    /// list and the lists by node, on nested groups and on a dense table.
    #[test]
    fn farthest_is_the_largest_class_time() {
        use super::super::cost::CostTable;
        let mut rng = stream(6, "spinners-farthest", 0);
        let dense = CostTable::from_fn(600, |a, b| ((a * 7919 + b * 104_729) % 997) as u64);
        let mut costs: Vec<CostTable> = [vec![], vec![2], vec![2, 8, 32], vec![4, 16, 64, 256]]
            .into_iter()
            .map(|groups| {
                // Not monotone in distance: the max must look at every class.
                let ns: Vec<u64> = (0..groups.len() as u64 + 2)
                    .map(|k| 100 + 37 * ((k * 5) % 4))
                    .collect();
                CostTable::from_groups(600, groups, ns)
            })
            .collect();
        costs.push(dense);
        for cost in &costs {
            for round in 0..300 {
                let n = rng.random_range(0..=3 * FEW);
                let spread = [3, 40, 600][round % 3];
                let mut s = Spinners::default();
                for cpu in 0..n {
                    s.push(Waiter::new(cpu, rng.random_range(0..spread), Time(0)));
                }
                assert_eq!(s.many.is_some(), n > FEW);
                let from = rng.random_range(0..spread);
                let want = largest_class_ns(&s, from, cost);
                assert_eq!(s.farthest(from, cost), want, "{n} waiters from {from}");
                // A cost with groups but no per-level table walks every level.
                let want = largest_class_ns(&s, from, &COST);
                assert_eq!(s.farthest(from, &COST), want, "{n} waiters from {from}");
            }
        }
    }

    /// The short list stays in node order through random pushes and takes
    /// (in and out of the lists by node), and `farthest` read from its
    /// first and last waiters answers what the classes' largest time is,
    /// with power-of-two groups and without.
    #[test]
    fn the_short_list_stays_in_node_order() {
        use super::super::cost::CostTable;
        let mut rng = stream(17, "spinners-mask", 0);
        for groups in [vec![], vec![2], vec![4, 8], vec![2, 8, 32], vec![3, 12]] {
            let ns: Vec<u64> = (0..groups.len() as u64 + 2).map(|k| 100 + 37 * k).collect();
            let cost = CostTable::from_groups(300, groups.clone(), ns);
            let mut s = Spinners::default();
            let mut cpu = 0;
            for round in 0..3000 {
                let spread = [8, 63, 70, 300][(round / 250) % 4];
                let grow = (round / 100) % 2 == 0;
                if s.len() == 0 || (grow && rng.random_range(0..3) != 0) {
                    s.push(Waiter::new(cpu, rng.random_range(0..spread), Time(0)));
                    cpu += 1;
                } else {
                    let pick = rng.random_range(0..s.len() as u64);
                    s.take(std::iter::once((0, usize::MAX)), pick);
                }
                assert!(
                    s.few.windows(2).all(|p| p[0].node <= p[1].node),
                    "the short list in node order, round {round}"
                );
                let from = rng.random_range(0..spread);
                let want = largest_class_ns(&s, from, &cost);
                assert_eq!(s.farthest(from, &cost), want, "{groups:?} round {round}");
            }
        }
    }

    /// The race by levels (the short list under power-of-two groups) takes
    /// the winner, phase and farthest time the race by classes takes, and
    /// leaves the random stream where it leaves it: two locks with one
    /// seed and the same waiters, raced from random nodes, one each way,
    /// with jitter and without, on flat and grouped costs.
    #[test]
    fn by_level_races_as_the_classes_do() {
        use super::super::cost::CostTable;
        let mut rng = stream(21, "by-level", 0);
        for (i, groups) in [vec![], vec![2], vec![2, 2, 8], vec![2, 8, 16, 64]]
            .into_iter()
            .enumerate()
        {
            // The last two with levels at equal times (one entrant).
            let ns: Vec<u64> = (0..groups.len() as u64 + 2)
                .map(|k| 300 + 250 * if i < 2 { k } else { k.div_ceil(2) })
                .collect();
            let cost = CostTable::from_groups(256, groups.clone(), ns);
            assert!(cost.pow2_levels().is_some());
            for jitter in [0, 1000] {
                let mk = || {
                    Lock::new(LockPolicy::Unfair, &cost, stream(5, "by-level-lock", 0))
                        .with_spinning(jitter, 10)
                        .with_home(0)
                        .with_read_spin()
                };
                let (mut a, mut b) = (mk(), mk());
                let mut cpu = 0;
                for round in 0..3000 {
                    let spread = [2, 8, 40, 256][(round / 200) % 4];
                    if a.spinners.len() < 2
                        || (a.spinners.len() < FEW && rng.random_range(0..2) == 0)
                    {
                        let w = Waiter::new(cpu, rng.random_range(0..spread), Time(0));
                        cpu += 1;
                        a.spinners.push(w);
                        b.spinners.push(w);
                        continue;
                    }
                    let from = rng.random_range(0..spread);
                    let got = a
                        .first_to_see_by_level(from)
                        .expect("the short list, powers of two");
                    let want = b.first_to_see_by_class(from);
                    assert_eq!(
                        (got.0.cpu(), got.0.node(), got.1, got.2, got.3),
                        (want.0.cpu(), want.0.node(), want.1, want.2, want.3),
                        "{groups:?} jitter {jitter} round {round}"
                    );
                    assert_eq!(a.rng.random::<u64>(), b.rng.random::<u64>());
                }
            }
        }
    }

    /// The earliest of k phases has the distribution of a minimum of k
    /// uniform draws: its mean is about jitter / (k + 1).
    #[test]
    fn min_phase_mean() {
        let mut rng = stream(3, "min-phase", 0);
        for k in [2u64, 5, 50, 1000] {
            let n = 50_000;
            let mean = (0..n)
                .map(|_| min_uniform_phase(&mut rng, 10_000, k) as f64)
                .sum::<f64>()
                / n as f64;
            let want = 10_000.0 / (k as f64 + 1.0);
            assert!(
                (mean - want).abs() < 0.03 * want + 1.0,
                "k {k}: {mean} vs {want}"
            );
        }
    }

    proptest! {
        /// FIFO: every acquire is granted exactly once, in arrival order, and
        /// never before it was asked for.
        #[test]
        fn fifo_grants_each_request_once_in_arrival_order(
            reqs in prop::collection::vec((0u64..200, 0usize..4, 1u64..50), 1..60),
        ) {
            // reqs[i] = (arrival offset, node, hold) for cpu i.
            #[derive(Clone, Copy)]
            enum Ev { Want(usize), Release(usize) }
            let mut l = lock(LockPolicy::Fifo, 3);
            let mut q = EventQueue::new();
            for (cpu, &(t, _, _)) in reqs.iter().enumerate() {
                q.push(Time(t), Ev::Want(cpu)).unwrap();
            }
            let mut asked = vec![None; reqs.len()];
            let mut granted = vec![None; reqs.len()];
            let mut queue_order = Vec::new();
            let mut grant_order = Vec::new();
            while let Some((now, ev)) = q.pop() {
                match ev {
                    Ev::Want(cpu) => {
                        asked[cpu] = Some(now);
                        match l.acquire(now, cpu, reqs[cpu].1) {
                            Some(at) => {
                                prop_assert!(granted[cpu].replace(at).is_none());
                                q.push(at + Dur(reqs[cpu].2), Ev::Release(cpu)).unwrap();
                            }
                            None => queue_order.push(cpu),
                        }
                    }
                    Ev::Release(cpu) => {
                        if let Some(g) = l.release(now, cpu) {
                            prop_assert!(granted[g.cpu].replace(g.at).is_none(),
                                "cpu {} granted twice", g.cpu);
                            prop_assert!(g.at >= asked[g.cpu].unwrap());
                            grant_order.push(g.cpu);
                            q.push(g.at + Dur(reqs[g.cpu].2), Ev::Release(g.cpu)).unwrap();
                        }
                    }
                }
            }
            prop_assert!(granted.iter().all(|g| g.is_some()), "someone never got the lock");
            prop_assert_eq!(grant_order, queue_order);
            prop_assert_eq!(l.stats().acquisitions, reqs.len() as u64);
            prop_assert!(l.is_free());
        }
    }
}

#[cfg(test)]
mod set_tests {
    use super::super::cost::CostTable;
    use super::super::rng::stream;
    use super::*;
    use proptest::prelude::*;

    /// Drives `locks` independent [`Lock`]s and a [`LockSet`] of as many
    /// with the same requests; every grant and time must agree, and the
    /// set's totals must be the locks' sums.
    fn same_as_locks(
        cost: &CostTable,
        kind: u8,
        ops: &[(bool, u8, u8, u16)],
    ) -> Result<(), TestCaseError> {
        const LOCKS: usize = 3;
        const CPUS: usize = 48;
        let nodes = cost.nodes();
        let make = |l: usize| -> Lock<&CostTable> {
            let rng = stream(7 ^ l as u64, "set-test", 0);
            let lock = match kind {
                0 => Lock::new(LockPolicy::Fifo, cost, rng),
                1 => Lock::new(LockPolicy::Unfair, cost, rng),
                2 => Lock::new(LockPolicy::Unfair, cost, rng).with_spinning(40, 5),
                _ => Lock::new(LockPolicy::Unfair, cost, rng)
                    .with_spinning(40, 5)
                    .with_read_spin(),
            };
            lock.with_home(l % nodes)
        };
        let mut locks: Vec<_> = (0..LOCKS).map(make).collect();
        let mut set = LockSet::new(make(0));
        let mut cells: Vec<LockCell> = (0..LOCKS)
            .map(|l| set.add(Some(l % nodes), stream(7 ^ l as u64, "set-test", 0)))
            .collect();
        // What each CPU is doing: (lock, holds) or idle; and since when
        // it holds (a hand-off arrives after the release, and a holder
        // cannot release before its grant).
        let mut doing: Vec<Option<(usize, bool)>> = vec![None; CPUS];
        let mut since = vec![Time(0); CPUS];
        let mut now = Time(0);
        for &(want, cpu, l, dt) in ops {
            now += Dur(dt as u64);
            let cpu = cpu as usize % CPUS;
            let node = cpu % nodes;
            let l = l as usize % LOCKS;
            match doing[cpu] {
                None if want => {
                    let a = locks[l].acquire(now, cpu, node);
                    let b = set.acquire(&mut cells[l], now, cpu, node);
                    prop_assert_eq!(a, b);
                    doing[cpu] = Some((l, a.is_some()));
                    if let Some(at) = a {
                        since[cpu] = at;
                    }
                }
                Some((l, true)) => {
                    now = now.max(since[cpu]);
                    let a = locks[l].release(now, cpu);
                    let b = set.release(&mut cells[l], now, cpu);
                    prop_assert_eq!(a, b);
                    doing[cpu] = None;
                    if let Some(g) = a {
                        doing[g.cpu] = Some((l, true));
                        since[g.cpu] = g.at;
                    }
                }
                _ => {}
            }
            for (lock, cell) in locks.iter().zip(&cells) {
                prop_assert_eq!(lock.holder(), set.holder(cell));
                prop_assert_eq!(lock.waiters(), set.waiters(cell));
            }
        }
        let mut sum = LockStats::default();
        for l in &locks {
            add_stats(&mut sum, l.stats());
        }
        prop_assert_eq!(set.stats(), sum);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// A set of locks grants as separate locks do, whatever the policy,
        /// on a grouped cost (classes by group level) and a dense one (a
        /// class per node), through the short list and the lists by node
        /// (up to 48 waiters for one lock).
        #[test]
        fn a_lock_set_grants_as_separate_locks(
            kind in 0u8..4,
            dense in any::<bool>(),
            ops in prop::collection::vec((any::<bool>(), any::<u8>(), any::<u8>(), 0u16..300), 1..400),
        ) {
            let cost = if dense {
                CostTable::from_fn(6, |a, b| 10 + 37 * a.abs_diff(b) as u64)
            } else {
                CostTable::from_groups(8, vec![2, 4], vec![10, 60, 90, 150])
            };
            same_as_locks(&cost, kind, &ops)?;
        }
    }

    /// The set's cell, with the CPU state and a line's cell beside it, is
    /// what sched-ops keeps per CPU: 24 bytes (issue 31).
    #[test]
    fn a_lock_cell_stays_small() {
        assert_eq!(std::mem::size_of::<LockCell>(), 24);
    }
}
