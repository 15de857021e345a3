//! Buffered writes, one file per thread, the previous file truncated inside
//! the timed run ([XFS06] F3–F7, F11, B12): the experiment's driver. The
//! mechanisms it drives are the kernel's: the filesystem lock and
//! `XfsCounter`, `mm::kswapd` and `mm::page_writeback`, the writeback walk
//! ([`WritebackWalk`]) and the block layer.
//!
//! Three stages, each a mechanism, joined in steady state by the dirty
//! limit (writers sleep in `balance_dirty_pages()` when writeback falls
//! behind, so the rate is the slowest stage's):
//! 1. The writers: per page a copy from user space and, per filesystem
//!    block (per page with `write_begin = multi-block`), one
//!    `->prepare_write()` call. On XFS each call takes the in-core
//!    superblock lock (a spinlock, `engine::Lock`) or, with per-CPU
//!    counters, updates the CPU's own counter (`XfsCounter`); on Ext2/Ext3
//!    each block is allocated under the filesystem's lock, and Ext3 adds a
//!    journal handle (and, with `data=ordered`, one more per page). An
//!    event simulation of the writers over a short window gives their rate
//!    and the lock wait.
//! 2. Writeback and reclaim (`mm::page_writeback`, `mm::kswapd`, B12): the
//!    allocator places the writers' pages by their memory policy, each
//!    node's kswapd frees what its node gives (the writers themselves what
//!    no kswapd keeps up with), and each node's LRU turns over at its own
//!    pace. One `pdflush` per filesystem writes at `writeback_page_ns` a
//!    page, by its periodic pass or in the background; a node whose LRU
//!    turns over before pdflush gets to its pages has them met dirty at
//!    the tail, and kswapd writes them (`pageout()`, in clusters of
//!    `reclaim_write_pages`, LRU order) or, from 3.2, leaves them to the
//!    flusher; what pdflush cannot write, the writers write themselves in
//!    `balance_dirty_pages()`, which slows them.
//! 3. The disks: `pdflush` walks the dirty inodes writing up to
//!    `MAX_WRITEBACK_PAGES` pages of each in file-offset order, the
//!    throttled writers `sync_writeback_pages()` at a time, kswapd its
//!    reclaim clusters file after file as the LRU holds them, in I/Os as
//!    large as the write clustering allows (buffer heads: `BH_MAX_BLOCKS`
//!    blocks; bio: `BIO_MAX_PAGES` pages), split at stripe units and at
//!    runs of the on-disk layout.

use crate::engine::{CacheLine, Dur, EventQueue, Time};
use crate::kernel::block::blkdev::{Dest, Part};
use crate::kernel::block::BlockLayer;
use crate::kernel::fs::laydown::{LayDown, MAX_WRITEBACK_PAGES};
use crate::kernel::fs::layout::{Delalloc, Enospc, FileLayout, XfsAlloc};
use crate::kernel::fs::writeback::{WritebackWalk, BH_MAX_BLOCKS, BIO_MAX_PAGES};
use crate::kernel::fs::{
    DirtyThrottle, Ext3Data, FsKind, IoKnobs, ReclaimWriteback, SbCounters, WriteBegin,
    WriteClustering,
};
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::mutex::Mutex;
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::xfs_counter::XfsCounter;
use crate::kernel::mm::kswapd::{self, NodeReclaim, Stream, Supply};
use crate::kernel::mm::page_writeback::{
    age_for_dirty, sync_writeback_pages, tail_writeback, throttled_rate, ColdStart, DirtyLimits,
    NodeLru, TailWriteback, FREE_AT_REMOUNT, KEPT_SCANS_PER_TAIL_WRITE,
};
use crate::kernel::mm::swap::SWAP_CLUSTER_MAX;
use crate::kernel::mm::PageAlloc;
use crate::machine::blockio::BlockParams;
use crate::machine::Machine;
use std::collections::VecDeque;

/// Simulated writer time per case: long against a lock hand-off (µs) and
/// short enough to keep a case fast.
pub const WRITER_WINDOW_NS: u64 = 4_000_000;

pub struct BufferedWrite<'a> {
    pub m: &'a Machine,
    pub b: &'a BlockParams,
    pub fs: FsKind,
    pub knobs: IoKnobs,
    pub writers: usize,
    pub block: u64,
    pub file_bytes: u64,
    /// Bytes per file the disk stage lays down and writes back.
    pub sim_file_bytes: u64,
    pub purge_ns: f64,
    /// The B12 writeback tunables.
    pub limits: DirtyLimits,
    /// `min_free_kbytes` (None: the 2.6 formula): the watermark gap a
    /// kswapd wake-up refills.
    pub min_free_kbytes: Option<u64>,
    /// The run starts on a filesystem just remounted, memory free
    /// ([XFS06] F10), instead of in the steady state with memory full of
    /// page cache (`ColdStart`).
    pub remount: bool,
    pub seed: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteRun {
    pub write_mibps: f64,
    pub cpu_pct_per_mibps: f64,
    pub avg_io_kib: f64,
    pub kswapd_cpu_pct_per_node: f64,
    pub pdflush_cpu_pct: f64,
    pub sb_lock_wait_pct: f64,
    pub sb_calls_per_s: f64,
    pub disk_busy_pct: f64,
    /// How long after being dirtied a page is written back, s.
    pub writeback_age_s: f64,
    /// The busiest node's kswapd, % of a CPU.
    pub kswapd_cpu_pct_max: f64,
    /// Share of the written-back bytes that reclaim wrote from the LRU
    /// tails (kswapd's `pageout()`, or the writers' direct reclaim), %.
    pub reclaim_write_pct: f64,
    /// Each stage's rate alone, MiB/s (writers, pdflush+kswapd, disks).
    pub writers_mibps: f64,
    pub disks_mibps: f64,
}

/// Where the disk stage's files lie.
enum Files {
    /// Laid down in the write path (Ext2/Ext3 allocate as the writers copy).
    Laid(Vec<FileLayout>),
    /// XFS: allocated as writeback reaches each delalloc extent, which
    /// runs `backlog` bytes ahead of the page written (what the writer
    /// has dirtied since).
    Delalloc { d: Delalloc, backlog: u64 },
}

impl Files {
    fn layout(&self, f: usize) -> &FileLayout {
        match self {
            Files::Laid(v) => &v[f],
            Files::Delalloc { d, .. } => &d.files[f],
        }
    }
}

/// The machine's nodes as the writers' page cache meets them.
struct NodeMap {
    /// Page-cache bytes each node holds (its memory, full of cache).
    bytes: Vec<f64>,
    /// Bytes between each node's low and high watermarks.
    gap: Vec<f64>,
    /// Each node's `pages_low`, bytes.
    low: Vec<f64>,
    /// Writers per node (where their CPUs are).
    writers_on: Vec<usize>,
    /// Each writer node's zonelist.
    zonelists: std::collections::BTreeMap<usize, Vec<usize>>,
}

/// The steady state at one dirtying rate: where the pages go, who frees
/// and who writes them back, bytes/ns.
struct Steady {
    supply: Supply,
    lrus: Vec<NodeLru>,
    tw: TailWriteback,
    /// Per node: the fraction of its pages kswapd writes itself.
    pageout: Vec<f64>,
    /// Written by kswapd (`pageout()`) and by the writers' direct reclaim
    /// at the LRU tails.
    kswapd_writes: f64,
    direct_writes: f64,
    /// Written by pdflush (or the flusher).
    pdflush: f64,
}

impl Steady {
    /// Mean of `age(lru, pageout share)` over the nodes, weighted by the
    /// pages each takes; nodes taking none are left out (their tails are
    /// never met, and their infinite ages would poison the mean).
    fn mean_by_inflow(&self, age: impl Fn(&NodeLru, f64) -> f64) -> f64 {
        self.lrus
            .iter()
            .zip(&self.pageout)
            .filter(|(l, _)| l.inflow > 0.0)
            .map(|(l, &f)| l.inflow * age(l, f))
            .sum::<f64>()
            / self.lrus.iter().map(|l| l.inflow).sum::<f64>().max(1e-300)
    }
}

struct Writers {
    bytes_per_ns: f64,
    lock_wait_frac: f64,
    calls_per_ns: f64,
}

impl BufferedWrite<'_> {
    fn cpu(&self, w: usize) -> usize {
        w % self.m.cpu_count().max(1) as usize
    }

    /// Stage 1: the writers alone, over a short window.
    fn writers(&self) -> Writers {
        let page = self.m.page_size;
        let calls_per_page = match self.knobs.write_begin {
            WriteBegin::PerBlock => page.div_ceil(self.block),
            WriteBegin::MultiBlock => 1,
        };
        let copy_ns = page as f64 / self.b.copy_gbps + self.b.page_op_ns;
        // Per page: `calls_per_page` block calls of `hold_ns` under the
        // filesystem's lock, and on Ext3 a journal handle per page
        // (ext3_prepare_write()/commit_write(): journal_start, the inode's
        // new size logged, journal_stop), twice with data=ordered (the
        // page's buffers filed on the transaction), under the same lock.
        let (block_hold, page_hold) = match self.fs {
            FsKind::Xfs => (self.b.xfs_sb_hold_ns, 0.0),
            FsKind::Ext2 => (self.b.ext_alloc_ns, 0.0),
            FsKind::Ext3 => (
                self.b.ext_alloc_ns + self.b.ext3_journal_ns,
                match self.knobs.ext3_data {
                    Ext3Data::Ordered => 2.0 * self.b.ext3_page_handle_ns,
                    Ext3Data::Writeback => self.b.ext3_page_handle_ns,
                },
            ),
        };
        let hold_ns = block_hold + page_hold / calls_per_page as f64;
        let percpu = self.fs == FsKind::Xfs && self.knobs.xfs_sb_counters == SbCounters::PerCpu;
        // Writers sharing a CPU take turns on it: only one per CPU contends.
        let n = self.writers.min(self.m.cpu_count().max(1) as usize);
        let cost = self.m.line_cost_table();
        let mut lock = spinlock(self.m, &cost, Spinlock::Tas, 0, self.seed, "fs-global-lock");
        // The lock word shares its cache line with the fields it protects
        // (jbd's `j_state_lock` beside `j_running_transaction`, XFS's
        // `m_sb_lock` beside the in-core superblock). ia64 spinlocks spin
        // test-and-test-and-set: at a release every spinner sees the line go
        // and tries its `cmpxchg`; the losers' attempts still take the line
        // exclusively, one after another, each loser then spins on loads
        // again (`ia64_spinlock_contention`), pulling a shared copy out of
        // the next `cmpxchg`-er's cache, and the new holder's first touch of
        // the protected fields waits behind them all (the ownership chain of
        // `engine::CacheLine`). So the hand-off grows with the spinners.
        let mut line =
            CacheLine::new(0, &cost).with_directory(self.m.coherence.directory_ns.round() as u64);
        let mut spinning = vec![false; n];
        // Time from asking for the lock to the first instruction of the
        // critical section (the line's storm included), per writer; the
        // writers still spinning at the window's end count up to it.
        let mut asked = vec![Time::ZERO; n];
        let mut waited = Dur::ZERO;
        let blocks_per_call = (page / self.block / calls_per_page).max(1) as i64;
        let mut counter = XfsCounter::new(self.m.cpu_count().max(1) as usize, 1 << 40, 512 + 64);
        #[derive(Clone, Copy)]
        enum Ev {
            Want(usize),
            Release(usize),
        }
        let mut q: EventQueue<Ev> = EventQueue::with_capacity(n);
        let mut calls_left = vec![calls_per_page; n];
        let mut pages = vec![0u64; n];
        let mut calls = 0u64;
        for w in 0..n {
            q.push(Time(w as u64 * 7), Ev::Want(w)).expect("start");
        }
        let end = Time(WRITER_WINDOW_NS);
        let node = |w: usize| self.m.cpu_node(self.cpu(w) as u64).unwrap_or(0);
        while let Some((now, ev)) = q.pop_until(end) {
            match ev {
                Ev::Want(w) => {
                    asked[w] = now;
                    if percpu {
                        // Own counter: the same few instructions, no lock; a
                        // rebalance touches every CPU's line.
                        let before = counter.stats().rebalances;
                        let _ = counter.modify(self.cpu(w), -blocks_per_call);
                        let mut ns = hold_ns;
                        if counter.stats().rebalances > before {
                            ns += self.m.cpu_count() as f64 * self.m.line_transfer_ns(0, 1);
                        }
                        calls += 1;
                        q.push(now + Dur(ns.round() as u64), Ev::Release(w))
                            .expect("future");
                    } else if let Some(at) = lock.acquire(now, w, node(w)) {
                        calls += 1;
                        // The winning cmpxchg, then the protected fields.
                        line.write(now, w, node(w));
                        let start = line.write(at, w, node(w));
                        waited += start.min(end) - now;
                        q.push(start + Dur(hold_ns.round() as u64), Ev::Release(w))
                            .expect("future");
                    } else {
                        spinning[w] = true;
                    }
                }
                Ev::Release(w) => {
                    if !percpu {
                        if let Some(g) = lock.release(now, w) {
                            calls += 1;
                            spinning[g.cpu] = false;
                            // Every spinner saw the release: the winner's
                            // cmpxchg first, then the losers'.
                            line.write(now, g.cpu, g.node);
                            let mut prev: Option<usize> = None;
                            for s in (0..n).filter(|&s| spinning[s]) {
                                line.write(now, s, node(s));
                                if let Some(p) = prev {
                                    line.read(now, p, node(p));
                                }
                                prev = Some(s);
                            }
                            if let Some(p) = prev {
                                line.read(now, p, node(p));
                            }
                            let start = line.write(g.at, g.cpu, g.node);
                            waited += start.min(end) - asked[g.cpu].min(end);
                            q.push(start + Dur(hold_ns.round() as u64), Ev::Release(g.cpu))
                                .expect("future");
                        }
                    }
                    calls_left[w] -= 1;
                    let mut next = now;
                    if calls_left[w] == 0 {
                        calls_left[w] = calls_per_page;
                        pages[w] += 1;
                        next = now + Dur(copy_ns.round() as u64);
                    }
                    q.push(next, Ev::Want(w)).expect("future");
                }
            }
        }
        for w in (0..n).filter(|&w| spinning[w]) {
            waited += end - asked[w].min(end);
        }
        let window = WRITER_WINDOW_NS as f64;
        let mut bytes = (pages.iter().sum::<u64>() * page) as f64;
        if bytes == 0.0 {
            // So many spinners that no page was finished in the window:
            // count the critical sections entered instead, each its share
            // of a page.
            bytes = calls as f64 * page as f64 / calls_per_page as f64;
        }
        Writers {
            bytes_per_ns: bytes / window,
            lock_wait_frac: waited.as_ns() as f64 / (n as f64 * window),
            calls_per_ns: calls as f64 / window,
        }
    }

    /// Stage 3: the disks writing back `files`, `writer_share` of the bytes
    /// by throttled writers `sync_chunk` bytes a pass, `reclaim_share` by
    /// reclaim at the LRU tails `reclaim_chunk` bytes a pass, the rest by
    /// pdflush; XFS allocates each delalloc extent as the walk reaches it.
    /// Returns (bytes/ns, ios, bytes, busy %).
    #[allow(clippy::too_many_arguments)]
    fn disks(
        &self,
        layer: &mut BlockLayer,
        files: &mut Files,
        sizes: &[u64],
        writer_share: f64,
        sync_chunk: u64,
        reclaim_share: f64,
        reclaim_chunk: u64,
    ) -> Result<(f64, u64, u64, f64), Enospc> {
        let page = self.m.page_size;
        let cluster = match (self.fs, self.knobs.xfs_write_clustering) {
            (FsKind::Xfs, WriteClustering::BufferHead) => BH_MAX_BLOCKS * self.block,
            (FsKind::Xfs, WriteClustering::Bio) => BIO_MAX_PAGES * page,
            // Ext2/Ext3 write through buffer heads (mpage where contiguous).
            _ => BIO_MAX_PAGES * page,
        };
        let chunk = MAX_WRITEBACK_PAGES * page;
        let cap = layer.disks.len() * 2;
        #[derive(Clone, Copy)]
        enum Ev {
            Issue,
            DiskDone(usize),
            Done(usize),
        }
        let mut q: EventQueue<Ev> = EventQueue::with_capacity(layer.disks.len() + 2);
        let mut wb = WritebackWalk::new(
            sizes,
            chunk,
            cluster,
            page,
            writer_share,
            sync_chunk,
            reclaim_share,
            reclaim_chunk,
        );
        let mut in_flight = 0usize;
        let mut started = Vec::new();
        let mut end = Time::ZERO;
        q.push(Time::ZERO, Ev::Issue).expect("start");
        let mut issuing = false;
        let max = layer.model.max_request;
        // The requests of the I/O in hand not yet queued: the writeback
        // sleeps in get_request_wait() for the first while its disk has
        // no request free, and goes on when one is freed.
        let mut unqueued: VecDeque<(usize, u64, u64)> = VecDeque::new();
        let (mut asleep, mut woken) = (false, false);
        while let Some((now, ev)) = q.pop() {
            match ev {
                Ev::Issue => {
                    issuing = false;
                    if asleep {
                        continue;
                    }
                    let again = std::mem::take(&mut woken);
                    loop {
                        while let Some(&(d, o, b)) = unqueued.front() {
                            let part = Part {
                                owner: 0,
                                bytes: b,
                                tag: 0,
                                dest: Dest::Interleave,
                            };
                            if !layer.try_submit_piece(now, d, o, true, part, &mut started) {
                                layer.sleep_for_request(now, d, true, 0, again, &mut started);
                                asleep = true;
                                break;
                            }
                            unqueued.pop_front();
                        }
                        for (d, at) in started.drain(..) {
                            q.push(at, Ev::DiskDone(d)).expect("future");
                        }
                        if asleep || !(in_flight < cap && wb.dirty()) {
                            break;
                        }
                        let Some((f, off, len)) = wb.next_io() else {
                            break;
                        };
                        if let Files::Delalloc { d, backlog } = files {
                            d.writeback(f, off, len, off.saturating_add(*backlog))?;
                        }
                        let mut pieces = Vec::new();
                        files.layout(f).map(off, len, |v, l| pieces.push((v, l)));
                        for (v, l) in pieces {
                            in_flight += 1;
                            layer.stripe.requests_on_disks(v, l, max, |d, o, b| {
                                unqueued.push_back((d, o, b))
                            });
                        }
                    }
                }
                Ev::DiskDone(d) => {
                    let (done, next) = layer.disk_done(now, d);
                    if let Some(at) = next {
                        q.push(at, Ev::DiskDone(d)).expect("future");
                    }
                    // A request freed: the sleeping writeback retries now.
                    if !layer.requests.woken.is_empty() {
                        layer.requests.woken.clear();
                        asleep = false;
                        woken = true;
                        if !issuing {
                            issuing = true;
                            q.push(now, Ev::Issue).expect("now");
                        }
                    }
                    q.push(done.at, Ev::Done(done.parts.len())).expect("future");
                }
                Ev::Done(k) => {
                    in_flight = in_flight.saturating_sub(k);
                    end = end.max(now);
                    if !issuing {
                        issuing = true;
                        q.push(now, Ev::Issue).expect("now");
                    }
                }
            }
        }
        let (ios, bytes) = layer.totals();
        let elapsed = (end - Time::ZERO).as_ns().max(1) as f64;
        Ok((
            bytes as f64 / elapsed,
            ios,
            bytes,
            layer.disk_busy_pct(end - Time::ZERO),
        ))
    }

    /// The nodes as the writers' page cache meets them.
    fn node_map(&self) -> NodeMap {
        let page = self.m.page_size;
        let mut alloc = PageAlloc::new(self.m, 11);
        alloc.set_watermarks(self.min_free_kbytes);
        let nodes = self.m.node_count().max(1);
        let mut writers_on = vec![0usize; nodes];
        for w in 0..self.writers {
            writers_on[self.m.cpu_node(self.cpu(w) as u64).unwrap_or(0)] += 1;
        }
        let mut zonelists = std::collections::BTreeMap::new();
        for (nd, &k) in writers_on.iter().enumerate() {
            if k > 0 {
                zonelists.insert(nd, alloc.zonelist(nd).map(|j| j as usize).collect());
            }
        }
        NodeMap {
            bytes: self.m.nodes.iter().map(|n| n.mem_bytes as f64).collect(),
            gap: alloc
                .nodes()
                .iter()
                .map(|n| (n.watermark[2] - n.watermark[1]) as f64 * page as f64)
                .collect(),
            low: alloc
                .nodes()
                .iter()
                .map(|n| n.watermark[1] as f64 * page as f64)
                .collect(),
            writers_on,
            zonelists,
        }
    }

    /// The steady state at dirtying rate `rate`: the allocator places the
    /// pages, each node's LRU turns over, pdflush or the LRU tails take
    /// them (`mm::kswapd`, `mm::page_writeback`). A kswapd that writes
    /// what it meets dirty frees less a second, which moves pages to other
    /// nodes and slows its LRU; where that tips a node's tail back past
    /// pdflush, the node settles with part of its pages met dirty (a
    /// decreasing-step iteration finds the fraction). From 3.2 reclaim
    /// leaves what it meets dirty to the flusher, which then writes every
    /// page (the reclaim stalls behind that are not drawn).
    fn steady(&self, map: &NodeMap, rate: f64) -> Steady {
        let page = self.m.page_size as f64;
        let reclaim_ns = self.b.reclaim_page_ns + self.purge_ns / SWAP_CLUSTER_MAX as f64;
        let pdflush_max = page / self.b.writeback_page_ns.max(1e-12);
        // kswapd's time per page it writes from the tail (`run`).
        let tail_ns = self.b.writeback_page_ns + KEPT_SCANS_PER_TAIL_WRITE * self.b.page_op_ns;
        let memory = self.m.mem_bytes() as f64;
        let n = self.writers.max(1) as f64;
        let streams: Vec<Stream> = map
            .writers_on
            .iter()
            .enumerate()
            .filter(|&(_, &k)| k > 0)
            .map(|(node, &k)| Stream {
                node,
                rate: rate * k as f64 / n,
            })
            .collect();
        let pageout = self.knobs.reclaim_writeback == ReclaimWriteback::Pageout;
        let policy = self.knobs.buffer_policy.alloc_policy();
        let nodes = map.bytes.len();
        let mut met = vec![0.0; nodes];
        const ROUNDS: usize = 48;
        for round in 0..ROUNDS {
            let reclaim: Vec<NodeReclaim> = (0..nodes)
                .map(|j| NodeReclaim {
                    capacity: if map.bytes[j] > 0.0 {
                        page / (reclaim_ns + met[j] * tail_ns)
                    } else {
                        0.0
                    },
                    gap: map.gap[j],
                })
                .collect();
            let supply = kswapd::supply(policy, &streams, &reclaim, &mut |nd| {
                map.zonelists.get(&nd).cloned().unwrap_or_else(|| vec![nd])
            });
            // Direct reclaim frees (and places) on the writers' own nodes.
            let lrus: Vec<NodeLru> = (0..nodes)
                .map(|j| NodeLru {
                    bytes: if pageout { map.bytes[j] } else { f64::INFINITY },
                    inflow: supply.from[j] + supply.direct * map.writers_on[j] as f64 / n,
                })
                .collect();
            let tw = tail_writeback(&lrus, pdflush_max, memory, &self.limits);
            let off = met
                .iter()
                .zip(&tw.met_dirty)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            if off < 1e-9 || round == ROUNDS - 1 {
                let kswapd_writes: f64 = (0..nodes).map(|j| supply.from[j] * met[j]).sum();
                let direct_writes: f64 = (0..nodes)
                    .map(|j| (lrus[j].inflow - supply.from[j]) * met[j])
                    .sum();
                let pdflush = (rate - kswapd_writes - direct_writes - tw.writers).max(0.0);
                return Steady {
                    pageout: met,
                    supply,
                    lrus,
                    tw,
                    kswapd_writes,
                    direct_writes,
                    pdflush,
                };
            }
            let step = 1.0 / (round + 1) as f64;
            for (m, t) in met.iter_mut().zip(&tw.met_dirty) {
                *m += step * (t - *m);
            }
        }
        unreachable!("the last round returns")
    }

    pub fn run(&self, layer: &mut BlockLayer) -> Result<WriteRun, Enospc> {
        let page = self.m.page_size;
        let n = self.writers;
        let nodes = self.m.node_count().max(1);
        let w = self.writers();
        let demand = w.bytes_per_ns;
        let cpus = self.m.cpu_count().max(1);
        let writer_cpus = (n as u64).min(cpus) as f64;
        let memory = self.m.mem_bytes();
        let io_less = self.knobs.dirty_throttle == DirtyThrottle::IoLess;
        let map = self.node_map();
        // The writers' own limit: dirtying, and past pdflush writing back
        // what neither pdflush nor the LRU tails take.
        let per_byte = self.b.writeback_page_ns / page as f64;
        let reclaim_per_byte =
            (self.b.reclaim_page_ns + self.purge_ns / SWAP_CLUSTER_MAX as f64) / page as f64;
        // A page written from the tail: `->writepage` at pdflush's cost per
        // page, and the two scans of it that free nothing (the referenced
        // lap, and the pageout() visit before rotate_reclaimable_page()
        // brings it back), each a page of page-cache work
        // (`KEPT_SCANS_PER_TAIL_WRITE`); its freeing scan, TLB purge
        // included, is reclaim's own.
        let tail_per_byte = per_byte + KEPT_SCANS_PER_TAIL_WRITE * self.b.page_op_ns / page as f64;
        let mut wb_rate = demand;
        for round in 0..64 {
            let st = self.steady(&map, wb_rate);
            let r = wb_rate.max(1e-300);
            let tails = (st.kswapd_writes + st.direct_writes) / r;
            // What the writers reclaim (and write) themselves per byte.
            let own = (st.supply.direct * reclaim_per_byte + st.direct_writes * tail_per_byte) / r;
            let next = throttled_rate(
                demand,
                writer_cpus,
                page,
                self.b.writeback_page_ns,
                tails,
                own,
                io_less,
            );
            if (next - wb_rate).abs() <= 1e-12 * wb_rate {
                break;
            }
            // Direct reclaim grows as the rate passes the kswapds: halve
            // the steps once a few have not settled it.
            wb_rate = if round < 4 {
                next
            } else {
                0.5 * (wb_rate + next)
            };
        }
        let st = self.steady(&map, wb_rate);
        let share = |x: f64| x / wb_rate.max(1e-12);
        let sync_chunk = sync_writeback_pages(memory, page, cpus) * page;
        let reclaim_chunk = self.knobs.reclaim_write_pages(self.fs) * page;
        let sizes = vec![self.sim_file_bytes; n];
        let mut files = match self.fs {
            FsKind::Xfs => {
                // A page is written back `age` after it was dirtied (at
                // pdflush's age, or at its node's LRU tail where reclaim
                // meets it dirty), and its writer has dirtied `age` × its
                // rate more of the file since: the delalloc extent the
                // page sits on reaches that far.
                // (Nodes taking no pages, or tails never met dirty, have
                // infinite tail ages: they are left out, not multiplied.)
                let at = |l: &NodeLru, f: f64| {
                    if f > 0.0 {
                        f * l.tail_age() + (1.0 - f) * st.tw.dirty_age_ns
                    } else {
                        st.tw.dirty_age_ns
                    }
                };
                let age = st.mean_by_inflow(at);
                let backlog = (age * wb_rate / n.max(1) as f64).min(self.sim_file_bytes as f64);
                let vol = XfsAlloc::new(
                    layer.volume_bytes(),
                    layer.stripe.unit,
                    layer.stripe.unit * layer.stripe.disks,
                );
                Files::Delalloc {
                    d: Delalloc::new(vol, sizes.clone(), layer.stripe.unit),
                    backlog: if backlog.is_finite() {
                        backlog.max(0.0) as u64
                    } else {
                        self.sim_file_bytes
                    },
                }
            }
            FsKind::Ext2 | FsKind::Ext3 => {
                // Where pdflush is flat out the writers sit at the dirty
                // threshold and write back themselves: throttled
                // throughout, they copy in bursts between sleeps. Else
                // balance_dirty_pages() never stops them and each goes at
                // its own write path's pace.
                let throttled = st.tw.writers > 0.0;
                Files::Laid(
                    LayDown {
                        fs: self.fs,
                        writers: n as u64,
                        file_bytes: self.sim_file_bytes,
                        block: self.block,
                        page,
                        stripe_unit: layer.stripe.unit,
                        stripe_width: layer.stripe.unit * layer.stripe.disks,
                        copy_bytes_per_ns: if throttled {
                            self.b.copy_gbps
                        } else {
                            demand.max(1e-9) / n.max(1) as f64
                        },
                        drain_bytes_per_ns: demand.max(1e-9),
                        dirty_bytes: if throttled { 0 } else { u64::MAX },
                        background_bytes: 0,
                        capacity: layer.volume_bytes() / 2,
                        seed: self.seed,
                    }
                    .run()?,
                )
            }
        };
        let (disk_rate, ios, bytes, busy) = self.disks(
            layer,
            &mut files,
            &sizes,
            share(st.tw.writers),
            sync_chunk,
            share(st.kswapd_writes + st.direct_writes),
            reclaim_chunk,
        )?;
        // The global TLB purge lock bounds reclaim machine-wide (D19).
        let purge_rate = (SWAP_CLUSTER_MAX * page) as f64 / self.purge_ns.max(1e-9);
        // CPUs busy at a dirtying rate (bytes/ns): the writers dirty (their
        // spinning included), write back what pdflush and the tails cannot,
        // and reclaim what no kswapd keeps up with; pdflush writes its
        // part; each kswapd reclaims what its node gives and writes what it
        // meets dirty. A slower downstream stage throttles the writers, not
        // pdflush.
        // The writers' time splits into work and spinning on the lock.
        let working = 1.0 - w.lock_wait_frac;
        let cpus_busy = |rate: f64| {
            let st = self.steady(&map, rate);
            let kswapd: Vec<f64> = (0..st.lrus.len())
                .map(|j| st.supply.from[j] * (reclaim_per_byte + st.pageout[j] * tail_per_byte))
                .collect();
            let dirtying = writer_cpus * (rate / demand.max(1e-12)).min(1.0);
            (
                dirtying * working
                    + st.tw.writers * per_byte
                    + st.direct_writes * tail_per_byte
                    + st.supply.direct * reclaim_per_byte,
                dirtying * (1.0 - working),
                st.pdflush * per_byte,
                kswapd,
                st,
            )
        };
        let mut rate = wb_rate.min(disk_rate).min(purge_rate);
        // Writers, pdflush and the kswapds share the machine's CPUs: where
        // their work needs more, the writers get less time and dirty less
        // (spinning on a lock gives way first: it moves nothing).
        for _ in 0..8 {
            let (w_cpu, _, p_cpu, k_cpu, _) = cpus_busy(rate);
            let busy = w_cpu + p_cpu + k_cpu.iter().sum::<f64>();
            if busy <= cpus as f64 * (1.0 + 1e-9) {
                break;
            }
            rate *= cpus as f64 / busy;
        }
        // The timed run: truncate the previous file, then write this one.
        let trunc_ns = match self.fs {
            FsKind::Xfs => {
                (self.file_bytes / (MAX_WRITEBACK_PAGES * page)).max(1) as f64
                    * self.b.xfs_truncate_extent_ns
            }
            _ => {
                // Block-map walks under the filesystem lock: one after another.
                let mut m = Mutex::default();
                let per = (self.file_bytes / self.block) as f64 * self.b.ext_truncate_block_ns;
                let mut end = Time::ZERO;
                for _ in 0..n {
                    end = m.hold(Time::ZERO, Dur(per.round() as u64));
                }
                end.as_ns() as f64
            }
        };
        let total = (n as u64 * self.file_bytes) as f64;
        let write_ns = total / rate.max(1e-12);
        let elapsed_ns = trunc_ns + write_ns;
        let mibps = total / elapsed_ns * 1e9 / (1u64 << 20) as f64;
        let write_share = write_ns / elapsed_ns;
        let (w_cpu, spin_cpu, p_cpu, k_cpu, st) = cpus_busy(rate);
        let k_total: f64 = k_cpu.iter().sum();
        let spin_cpu = spin_cpu.min((cpus as f64 - w_cpu - p_cpu - k_total).max(0.0));
        let writers_cpu = (w_cpu + spin_cpu) * write_share;
        // From free memory (remounted), pdflush and the kswapds work only
        // in their phases of the timed write (`ColdStart`); the writers'
        // rate and the disk stage stay the steady state's.
        let (wb_phase, reclaim_phase) = if self.remount {
            let free = FREE_AT_REMOUNT * memory as f64 - map.low.iter().sum::<f64>();
            let c = ColdStart::new(rate, free, memory as f64, &self.limits);
            let dirtied = (rate * write_ns).max(1e-300);
            (
                c.written_back(rate, write_ns).0 / dirtied,
                c.reclaimed(rate, write_ns).0 / dirtied,
            )
        } else {
            (1.0, 1.0)
        };
        let pdflush_cpu = p_cpu.min(1.0) * write_share * wb_phase;
        let kswapd_per_node = (k_total * write_share * reclaim_phase / nodes as f64).min(1.0);
        let kswapd_max =
            k_cpu.iter().cloned().fold(0.0, f64::max).min(1.0) * write_share * reclaim_phase;
        // Held back by the disks or the purge lock, the writers wait at the
        // dirty threshold in balance_dirty_pages(); held back by the CPUs
        // they just dirty more slowly. Pages met dirty at a tail are
        // written there.
        let pdflush_age = if disk_rate.min(purge_rate) < wb_rate {
            age_for_dirty(&st.lrus, self.limits.thresholds(memory as f64).1)
        } else {
            st.tw.dirty_age_ns
        };
        let writeback_age_ns =
            st.mean_by_inflow(|l, f| f * l.tail_age().min(pdflush_age) + (1.0 - f) * pdflush_age);
        Ok(WriteRun {
            write_mibps: mibps,
            cpu_pct_per_mibps: 100.0 * (writers_cpu + pdflush_cpu + kswapd_per_node * nodes as f64)
                / mibps.max(1e-12),
            avg_io_kib: bytes as f64 / ios.max(1) as f64 / 1024.0,
            kswapd_cpu_pct_per_node: 100.0 * kswapd_per_node,
            pdflush_cpu_pct: 100.0 * pdflush_cpu,
            sb_lock_wait_pct: 100.0 * w.lock_wait_frac,
            sb_calls_per_s: w.calls_per_ns * 1e9 * (rate / demand.max(1e-12)).min(1.0),
            // The disk stage ran flat out; the timed run gives the disks the
            // same busy time over its own, longer, elapsed time.
            disk_busy_pct: busy * (rate / disk_rate.max(1e-12)).min(1.0) * write_share,
            writeback_age_s: writeback_age_ns / 1e9,
            kswapd_cpu_pct_max: 100.0 * kswapd_max,
            reclaim_write_pct: 100.0 * (st.kswapd_writes + st.direct_writes) / rate.max(1e-300),
            writers_mibps: demand * 1e9 / (1u64 << 20) as f64,
            disks_mibps: disk_rate * 1e9 / (1u64 << 20) as f64,
        })
    }
}
