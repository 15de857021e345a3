//! The running VM: the page allocator's per-node counts plus what reclaim
//! needs to know about them (dirty and listed page cache, anonymous pages
//! per task, swap), advanced in fixed ticks while tasks write and allocate
//! ([ALTIX04] B1–B11, [XFS06] B13).
//!
//! State is aggregated per node; one tick moves whole batches of pages.
//! Reclaim is in `vmscan.rs`, the OOM paths in `oom_kill.rs`, writeback in
//! `writeback.rs`. docs/pagecache.md explains the model.

use super::oom_kill::{Oom24, SwapFailureOom};
use super::page_alloc::{Gfp, KswapdTrigger, PageAlloc, Placement, Use};
use super::swap::SwapSpace;
use crate::kernel::block::Disk;
use crate::kernel::config::{KernelConfig, Spread};
use crate::kernel::mm::sysctl_vm::{Lru, VmSysctl};
use crate::machine::Machine;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One tick of simulated time. Short against every delay modelled (the 30 ms
/// throttle, the 5 s and 10 s OOM rules), long enough to batch pages.
pub const TICK_NS: u64 = 10_000_000;
/// Timeline resolution, while a run's nodes × seconds stay within
/// [`MAX_TIMELINE_NODE_SAMPLES`].
pub const SAMPLE_NS: u64 = 1_000_000_000;
/// Node-samples one run may add to the timeline (32 bytes each: 64 MiB).
/// A longer run on more nodes samples every whole number of seconds that
/// keeps it within this (3,600 s on 8,192 nodes: every 15 s); no run of
/// the published experiments comes near it.
pub const MAX_TIMELINE_NODE_SAMPLES: u64 = 1 << 21;

/// The timeline period of a run of `horizon_ns` on `nodes` nodes.
pub fn sample_period_ns(nodes: usize, horizon_ns: u64) -> u64 {
    let node_seconds = (nodes as u64).saturating_mul(horizon_ns.div_ceil(SAMPLE_NS));
    SAMPLE_NS * node_seconds.div_ceil(MAX_TIMELINE_NODE_SAMPLES).max(1)
}

/// A process whose memory the VM tracks (anonymous pages per node, swap).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub name: String,
    /// Resident anonymous pages per node.
    pub anon: Vec<u64>,
    /// Of those, pages read back from swap that keep their slot (2.4's swap
    /// cache: a page only read after swap-in stays in the swap cache, so
    /// reclaiming it again needs no I/O and no new slot).
    pub swapcache: Vec<u64>,
    /// Pages out on swap.
    pub swapped: u64,
    /// 2.4's `swap_out()` walks a task's page tables in address order from
    /// `mm->swap_address` and unmaps pages whose young bit is clear; pages
    /// it passes with the bit set only lose the bit. A writer that reads the
    /// task's memory in address order (BIGIO) leaves the pages behind its
    /// cursor young, so the hand's first victims are the unread pages just
    /// ahead of it, lowest address first. These two counts are that
    /// region: resident unread source pages, and source pages already
    /// swapped out between the cursor and the hand (read back in order).
    pub source_ahead: u64,
    pub swapped_ahead: u64,
    pub killed_at_ns: Option<u64>,
}

impl Task {
    pub fn resident(&self) -> u64 {
        self.anon.iter().sum()
    }
}

/// What a simulated thread does while the clock runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// Buffered `write()` of a file; with `from_anon`, the data comes from
    /// the task's anonymous memory, so swapped-out source pages fault back.
    Write { from_anon: bool, spread: Spread },
    /// First-touch anonymous memory on the thread's node.
    Alloc,
}

/// One simulated thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Actor {
    pub task: usize,
    pub node: usize,
    pub job: Job,
    /// Pages still to write or allocate; `u64::MAX` runs until killed.
    pub left: u64,
    /// Pages it could handle per tick with memory free (copy or zeroing speed).
    pub rate: u64,
    pub busy_until_ns: u64,
    /// Memory stall: the current episode and the longest.
    pub stall_ns: f64,
    pub max_stall_ns: f64,
    /// Time asleep in `page_cache_alloc_limited()`.
    pub throttled_ns: f64,
    pub done_at_ns: Option<u64>,
    pub local_pages: u64,
    pub remote_pages: u64,
    pub pages_done: u64,
    /// `pages_done` when the machine first swapped during this run.
    pub pages_at_first_swap_out: Option<u64>,
}

impl Actor {
    pub fn new(task: usize, node: usize, job: Job, pages: u64, rate: u64) -> Actor {
        Actor {
            task,
            node,
            job,
            left: pages,
            rate: rate.max(1),
            busy_until_ns: 0,
            stall_ns: 0.0,
            max_stall_ns: 0.0,
            throttled_ns: 0.0,
            done_at_ns: None,
            local_pages: 0,
            remote_pages: 0,
            pages_done: 0,
            pages_at_first_swap_out: None,
        }
    }
    fn end_stall(&mut self) {
        self.max_stall_ns = self.max_stall_ns.max(self.stall_ns);
        self.stall_ns = 0.0;
    }
}

/// Counters over a run, for reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VmStats {
    pub swap_out_pages: u64,
    pub swap_in_pages: u64,
    /// Dirty page-cache pages written by the flusher (file order).
    pub flushed_pages: u64,
    /// Dirty pages written by reclaim when it met them on the LRU (LRU order).
    pub reclaim_written_pages: u64,
    pub scanned_pages: u64,
    pub kswapd_wakeups: u64,
    pub direct_reclaim_ns: f64,
    pub kswapd_ns: f64,
    pub oom_kills: u64,
    /// Time of the first swap-out: the start of the "swap phase".
    pub first_swap_out_ns: Option<u64>,
    /// File pages written to disk (flusher + reclaim) before it.
    pub file_io_at_first_swap_out: Option<u64>,
    /// Length of one full `shrink_caches()` sweep when one last failed.
    pub failed_sweep_ns: Option<f64>,
}

/// No entry yet (`Gather`).
const NO_SLOT: u32 = u32::MAX;

/// A placement gathered over many nodes, as `Placement::add` builds it
/// (entries in first-placed order, pages summed per node), but a node's
/// entry is found by index: a search per add was nodes² per tick when a
/// round-robin writer touches thousands of nodes.
struct Gather {
    got: Placement,
    pos: Vec<u32>,
}

impl Gather {
    fn add(&mut self, node: usize, pages: u64) {
        if pages == 0 {
            return;
        }
        match self.pos[node] {
            NO_SLOT => {
                self.pos[node] = self.got.parts.len() as u32;
                self.got.parts.push((node as u32, pages));
            }
            i => self.got.parts[i as usize].1 += pages,
        }
    }
    fn merge(&mut self, p: &Placement) {
        for &(n, k) in &p.parts {
            self.add(n as usize, k);
        }
    }
}

/// One point of the per-node memory timeline: pages free, anonymous, page
/// cache and slab on each node.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub t_ns: u64,
    pub nodes: Vec<[u64; 4]>,
}

#[derive(Debug, Clone)]
pub struct Vm {
    pub sys: VmSysctl,
    kswapd_trigger: KswapdTrigger,
    pub page: u64,
    pub now_ns: u64,
    /// Dirty page-cache pages per node (never more than the node's cache).
    pub dirty: Vec<u64>,
    /// Sum of `dirty`, and the tasks' swap-cache pages per node and in
    /// all: kept as they change, so that machine-wide reclaim and the
    /// dirty limit cost nothing per node when nothing moves.
    pub(super) dirty_total: u64,
    pub(super) swapcache_node: Vec<u64>,
    pub(super) swapcache_total: u64,
    /// Buffers reused by every reclaim pass (per-node weights and shares).
    pub(super) scratch: Option<Box<super::vmscan::Scratch>>,
    /// A spill's placement, reused by every allocation that spills (a
    /// fresh vector each was a `malloc` per spill, every tick).
    spill: Placement,
    /// The placement `alloc` gathers into, lent to its caller and given
    /// back after use; the request's per-node shares; the nodes left
    /// short: reused, as a fresh vector each was a `malloc` (and a
    /// `realloc` a push) on every allocation, every tick.
    gathered: Placement,
    shares: Vec<(usize, u64)>,
    short: Vec<(usize, u64)>,
    /// Clean page-cache pages on the node's `reclaim_list` (B5).
    pub listed: Vec<u64>,
    pub tasks: Vec<Task>,
    pub swap: SwapSpace,
    pub disk: Disk,
    /// Cost of scanning one LRU page, ns: on the node itself / machine mean.
    pub(super) scan_ns_local: Vec<f64>,
    pub(super) scan_ns_global: f64,
    rr_next: usize,
    /// Nodes with memory, in order (round-robin spreading).
    rr_set: Option<Vec<usize>>,
    /// Per node, its entry in the placement `alloc` is gathering
    /// ([`NO_SLOT`] between calls).
    place_pos: Vec<u32>,
    kswapd_awake: Vec<bool>,
    pub stats: VmStats,
    pub(super) oom24: Oom24,
    pub(super) swap_oom: SwapFailureOom,
    /// (time, task) of each OOM kill.
    pub kills: Vec<(u64, usize)>,
    pub timeline: Vec<Sample>,
    /// Whether to keep `timeline` (only files are made from it; a run
    /// whose files nobody writes skips the samples).
    pub keep_timeline: bool,
}

/// Cache lines missed per LRU page scanned: the `struct page` and its list
/// neighbour (`mm/vmscan.c` `shrink_cache()` reads `page->flags` and follows
/// `page->lru`). Not stated by ALTIX04; docs/pagecache.md.
pub const VMSCAN_LINE_MISSES_PER_PAGE: f64 = 2.0;

impl Vm {
    /// Start tracking a booted machine; anonymous memory already there (from
    /// earlier steps) belongs to a task named "other", page cache is clean.
    pub fn new(machine: &Machine, kernel: &KernelConfig, mm: &PageAlloc) -> Vm {
        let n = mm.node_count();
        let page = mm.page_size();
        let cache: Vec<u64> = (0..n)
            .map(|i| mm.node(i).used_by[Use::PageCache.index()])
            .collect();
        let mut tasks = Vec::new();
        let anon: Vec<u64> = (0..n)
            .map(|i| mm.node(i).used_by[Use::Anon.index()])
            .collect();
        if anon.iter().any(|&a| a > 0) {
            tasks.push(Task {
                name: "other".into(),
                swapcache: vec![0; anon.len()],
                anon,
                swapped: 0,
                source_ahead: 0,
                swapped_ahead: 0,
                killed_at_ns: None,
            });
        }
        let scan_ns_local: Vec<f64> = (0..n)
            .map(|i| VMSCAN_LINE_MISSES_PER_PAGE * machine.mem_latency_ns(i, i))
            .collect();
        // The mean over all node pairs, from the pairs at each distance
        // (nodes² distance look-ups at 8,192 nodes were a quarter of a run).
        let local = machine.distances.local() as f64;
        let sum: f64 = machine
            .distances
            .pair_counts()
            .iter()
            .map(|&(d, count)| count as f64 * (machine.memory.latency_ns * (d as f64 / local)))
            .sum();
        let scan_ns_global = VMSCAN_LINE_MISSES_PER_PAGE * sum / (n * n).max(1) as f64;
        Vm {
            sys: kernel.vm.clone(),
            kswapd_trigger: kernel.kswapd_trigger,
            page,
            now_ns: 0,
            dirty: vec![0; n],
            dirty_total: 0,
            swapcache_node: vec![0; n],
            swapcache_total: 0,
            scratch: None,
            spill: Placement::default(),
            gathered: Placement::default(),
            shares: Vec::new(),
            short: Vec::new(),
            listed: if kernel.vm.reclaim_list {
                cache
            } else {
                vec![0; n]
            },
            tasks,
            swap: SwapSpace::new(machine.swap_bytes / page),
            disk: Disk::new(machine.disk_bytes_per_s()),
            scan_ns_local,
            scan_ns_global,
            rr_next: 0,
            rr_set: None,
            place_pos: Vec::new(),
            kswapd_awake: vec![false; n],
            stats: VmStats::default(),
            oom24: Oom24::default(),
            swap_oom: SwapFailureOom::default(),
            kills: Vec::new(),
            timeline: Vec::new(),
            keep_timeline: true,
        }
    }

    pub fn task_id(&mut self, name: &str) -> usize {
        if let Some(i) = self.tasks.iter().position(|t| t.name == name) {
            return i;
        }
        let n = self.dirty.len();
        self.tasks.push(Task {
            name: name.to_string(),
            anon: vec![0; n],
            swapcache: vec![0; n],
            swapped: 0,
            source_ahead: 0,
            swapped_ahead: 0,
            killed_at_ns: None,
        });
        self.tasks.len() - 1
    }

    /// A writer starts reading `pages` of `task`'s memory in address order
    /// (from its start). The pages `hold()` sent straight to swap are the
    /// highest addresses, so the source is resident up to what memory holds.
    pub fn start_source(&mut self, task: usize, pages: u64) {
        let t = &mut self.tasks[task];
        let resident = t.resident() - t.swapcache.iter().sum::<u64>();
        t.source_ahead = pages.min(resident);
        t.swapped_ahead = (pages - t.source_ahead).min(t.swapped);
    }

    pub fn cache(mm: &PageAlloc, n: usize) -> u64 {
        mm.node(n).used_by[Use::PageCache.index()]
    }
    pub fn clean(&self, mm: &PageAlloc, n: usize) -> u64 {
        Vm::cache(mm, n) - self.dirty[n]
    }
    pub fn cache_total(mm: &PageAlloc) -> u64 {
        (0..mm.node_count()).map(|n| Vm::cache(mm, n)).sum()
    }

    /// A task takes `pages` anonymous pages, spread evenly over `nodes` by
    /// first touch; what memory cannot hold goes straight to swap (the task
    /// was partly swapped out before this run). Errors if memory and swap
    /// together cannot hold it.
    pub fn hold(
        &mut self,
        mm: &mut PageAlloc,
        task: usize,
        nodes: &[usize],
        pages: u64,
    ) -> Result<(), String> {
        let room: u64 = (0..mm.node_count())
            .map(|n| mm.available_on(n, Gfp::Normal))
            .sum();
        if pages > room.saturating_add(self.swap.free()) {
            return Err(format!(
                "{} pages do not fit: {room} pages free above the watermarks and {} swap slots free",
                pages,
                self.swap.free()
            ));
        }
        let k = nodes.len().max(1) as u64;
        let mut left = pages;
        for (i, &n) in nodes.iter().enumerate() {
            let share = pages / k + u64::from((i as u64) < pages % k);
            let p = mm.alloc_upto(n, share.min(left), Gfp::Normal, Use::Anon);
            for &(m, c) in &p.parts {
                self.tasks[task].anon[m as usize] += c;
            }
            left -= p.pages();
        }
        // Nearest-first spill may have left room elsewhere for the rest.
        if left > 0 {
            let p = mm.alloc_upto(
                nodes.first().copied().unwrap_or(0),
                left,
                Gfp::Normal,
                Use::Anon,
            );
            for &(m, c) in &p.parts {
                self.tasks[task].anon[m as usize] += c;
            }
            left -= p.pages();
        }
        let s = self.swap.take(left);
        debug_assert_eq!(s, left);
        self.tasks[task].swapped += s;
        Ok(())
    }

    /// `bcfree` (B4): drop every clean, unmapped page-cache page. Returns pages freed.
    pub fn bcfree(&mut self, mm: &mut PageAlloc) -> u64 {
        let mut freed = 0;
        for n in 0..mm.node_count() {
            let c = self.clean(mm, n);
            mm.free_on_node(n, c, Use::PageCache);
            self.listed[n] = 0;
            freed += c;
        }
        freed
    }

    /// Free a task's memory (it exited or was killed).
    pub(super) fn release_task(&mut self, mm: &mut PageAlloc, task: usize) {
        let t = &mut self.tasks[task];
        for (n, a) in t.anon.iter_mut().enumerate() {
            mm.free_on_node(n, *a, Use::Anon);
            *a = 0;
        }
        let cached: u64 = t.swapcache.iter().sum();
        for (n, c) in t.swapcache.iter_mut().enumerate() {
            self.swapcache_node[n] -= *c;
            *c = 0;
        }
        self.swapcache_total -= cached;
        self.swap.release(t.swapped + cached);
        t.swapped = 0;
        t.source_ahead = 0;
        t.swapped_ahead = 0;
    }

    /// Run the actors until all are done or killed, or `horizon_ns` passes.
    pub fn run(&mut self, mm: &mut PageAlloc, actors: &mut [Actor], horizon_ns: u64) {
        let end = self.now_ns.saturating_add(horizon_ns);
        let period = sample_period_ns(self.dirty.len(), horizon_ns);
        let swapped_before = self.stats.first_swap_out_ns.is_some();
        self.sample(mm);
        let mut first_tick = true;
        // Threads that act this tick, in index order, and those asleep in a
        // reclaim sweep or a throttle until a time: a sleeping thread costs
        // nothing per tick (thousands sleep for seconds at a time).
        let mut ready: Vec<usize> = Vec::with_capacity(actors.len());
        let mut next: Vec<usize> = Vec::with_capacity(actors.len());
        let mut asleep: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
        for (i, a) in actors.iter().enumerate() {
            if a.done_at_ns.is_none() {
                if a.busy_until_ns > self.now_ns {
                    asleep.push(Reverse((a.busy_until_ns, i)));
                } else {
                    ready.push(i);
                }
            }
        }
        while self.now_ns < end && actors.iter().any(|a| a.done_at_ns.is_none()) {
            let kills_before = self.kills.len();
            let swapped_at_start = self.stats.first_swap_out_ns.is_some();
            self.disk.start_step(TICK_NS as f64 * 1e-9);
            self.kswapd(mm);
            let woke = ready.len();
            while let Some(&Reverse((t, i))) = asleep.peek() {
                if t > self.now_ns {
                    break;
                }
                asleep.pop();
                ready.push(i);
            }
            if ready.len() > woke {
                ready.sort_unstable();
            }
            next.clear();
            for &i in &ready {
                let a = &mut actors[i];
                self.act(mm, a);
                if a.done_at_ns.is_some() {
                    continue;
                }
                if a.busy_until_ns > self.now_ns {
                    asleep.push(Reverse((a.busy_until_ns, i)));
                } else {
                    next.push(i);
                }
            }
            std::mem::swap(&mut ready, &mut next);
            self.flush(mm);
            self.swap_oom_tick(mm);
            self.now_ns += TICK_NS;
            if self.now_ns.is_multiple_of(period) {
                self.sample(mm);
            }
            // Only a first swap-out or a kill (or a task killed before the
            // run) changes an actor here: skip the pass over every thread
            // on the other ticks.
            let first_swap = !swapped_at_start && self.stats.first_swap_out_ns.is_some();
            if !(first_tick || first_swap || self.kills.len() != kills_before) {
                continue;
            }
            first_tick = false;
            for a in actors.iter_mut() {
                if !swapped_before
                    && self.stats.first_swap_out_ns.is_some()
                    && a.pages_at_first_swap_out.is_none()
                {
                    a.pages_at_first_swap_out = Some(a.pages_done);
                }
                if a.done_at_ns.is_none() && self.tasks[a.task].killed_at_ns.is_some() {
                    a.done_at_ns = Some(self.now_ns);
                    a.end_stall();
                }
            }
        }
        for a in actors.iter_mut() {
            a.end_stall();
        }
        self.sample(mm);
    }

    fn sample(&mut self, mm: &PageAlloc) {
        if !self.keep_timeline {
            return;
        }
        if self.timeline.last().is_some_and(|s| s.t_ns == self.now_ns) {
            return;
        }
        let nodes = mm
            .nodes()
            .iter()
            .map(|u| {
                [
                    u.free,
                    u.used_by[Use::Anon.index()],
                    u.used_by[Use::PageCache.index()],
                    u.used_by[Use::Slab.index()],
                ]
            })
            .collect();
        self.timeline.push(Sample {
            t_ns: self.now_ns,
            nodes,
        });
    }

    /// One tick of one thread.
    fn act(&mut self, mm: &mut PageAlloc, a: &mut Actor) {
        if a.done_at_ns.is_some() {
            return;
        }
        let dt = TICK_NS as f64;
        if self.now_ns < a.busy_until_ns {
            // Still inside a reclaim sweep or a throttle sleep started earlier.
            return;
        }
        let mut want = a.rate.min(a.left);
        let mut blocked = 0.0;
        let mut short = 0u64;
        let mut asked = want;
        if let Job::Write { from_anon, spread } = a.job {
            // balance_dirty_pages(): wait for writeback, not for memory.
            let limit = mm.total_present() * self.sys.dirty_ratio as u64 / 100;
            want = want.min(limit.saturating_sub(self.dirty_total));
            if from_anon && want > 0 {
                want = self.read_source(mm, a, want, &mut blocked);
            }
            if let Some(limit_pct) = self.sys.page_cache_limit_pct {
                let allow = self.page_cache_alloc_limited(mm, limit_pct, want);
                if allow < want {
                    // B7 step 3: wake bdflush (it runs every tick) and sleep.
                    let sleep = self.sys.page_cache_throttle_ms as f64 * 1e6;
                    a.throttled_ns += sleep;
                    a.busy_until_ns = self.now_ns + sleep as u64;
                    want = allow;
                }
            }
            asked = want;
            let (p, b) = self.alloc(mm, a, want, Use::PageCache, spread);
            blocked += b;
            short += want - p.pages();
            a.left -= p.pages();
            a.pages_done += p.pages();
            self.gathered = p;
        } else {
            let (p, b) = self.alloc(mm, a, want, Use::Anon, Spread::Local);
            blocked += b;
            short += want - p.pages();
            for &(n, c) in &p.parts {
                if n as usize == a.node {
                    a.local_pages += c;
                } else {
                    a.remote_pages += c;
                }
            }
            if a.left != u64::MAX {
                a.left -= p.pages();
            }
            a.pages_done += p.pages();
            self.gathered = p;
        }
        if asked > 0 {
            blocked += dt * short as f64 / asked as f64;
        }
        if blocked > 0.0 {
            a.stall_ns += blocked.min(dt);
        } else {
            a.end_stall();
        }
        if a.left == 0 {
            a.done_at_ns = Some(self.now_ns + TICK_NS);
            a.end_stall();
        }
    }

    /// The writer reads its next `want` source pages in address order: the
    /// swapped-out ones just ahead of its cursor fault back in first (one
    /// disk read and one free page each), then resident ones. Returns how
    /// many pages the write can take this tick.
    fn read_source(
        &mut self,
        mm: &mut PageAlloc,
        a: &mut Actor,
        want: u64,
        blocked: &mut f64,
    ) -> u64 {
        let need = want.min(self.tasks[a.task].swapped_ahead);
        let mut got = 0;
        if need > 0 {
            let can = need.min(self.disk.pages_left(self.page));
            let (p, b) = self.alloc(mm, a, can, Use::Anon, Spread::Local);
            *blocked += b;
            got = p.pages();
            self.disk.transfer(got, self.page);
            let t = &mut self.tasks[a.task];
            for &(n, c) in &p.parts {
                // Read-only source pages stay in the swap cache, keeping their slot.
                let n = n as usize;
                let k = c.min(t.anon[n] - t.swapcache[n]);
                t.swapcache[n] += k;
                self.swapcache_node[n] += k;
                self.swapcache_total += k;
            }
            t.swapped -= got;
            t.swapped_ahead -= got;
            self.stats.swap_in_pages += got;
            self.gathered = p;
        }
        let t = &mut self.tasks[a.task];
        if got < need {
            // The rest of this tick waits for the reads that did not fit.
            *blocked += TICK_NS as f64 * (want - got) as f64 / want as f64;
            return got;
        }
        let resident = (want - got).min(t.source_ahead);
        t.source_ahead -= resident;
        want
    }

    /// `__alloc_pages()` for `pages` pages wanted by `a`: local (or
    /// round-robin) first above `pages_low`, node-local reclaim where the
    /// kernel has it, remote spill (A3), kswapd, the `pages_min` pass, then
    /// direct reclaim. Returns what it got and the ns the thread was blocked;
    /// the caller gives the placement back to `gathered` when done with it.
    fn alloc(
        &mut self,
        mm: &mut PageAlloc,
        a: &mut Actor,
        pages: u64,
        what: Use,
        spread: Spread,
    ) -> (Placement, f64) {
        let mut gathered = std::mem::take(&mut self.gathered);
        gathered.parts.clear();
        if pages == 0 {
            return (gathered, 0.0);
        }
        let mut pos = std::mem::take(&mut self.place_pos);
        pos.resize(mm.node_count(), NO_SLOT);
        let mut got = Gather { got: gathered, pos };
        let blocked = self.alloc_into(mm, a, pages, what, spread, &mut got);
        for &(n, _) in &got.got.parts {
            got.pos[n as usize] = NO_SLOT;
        }
        self.place_pos = got.pos;
        (got.got, blocked)
    }

    fn alloc_into(
        &mut self,
        mm: &mut PageAlloc,
        a: &mut Actor,
        pages: u64,
        what: Use,
        spread: Spread,
        got: &mut Gather,
    ) -> f64 {
        let mut blocked = 0.0;
        let mut shares = std::mem::take(&mut self.shares);
        self.shares_into(mm, a.node, pages, spread, &mut shares);
        let mut short = std::mem::take(&mut self.short);
        short.clear();
        for &(n, p) in &shares {
            let mut rem = p;
            let local = mm.alloc_upto_node(n, rem, Gfp::Normal, what);
            rem -= local;
            got.add(n, local);
            self.placed(a.task, n, local, what);
            if rem > 0 && (self.sys.toss || self.sys.zone_reclaim_mode & 1 != 0) {
                blocked += self.local_reclaim(mm, n, rem);
                let more = mm.alloc_upto_node(n, rem, Gfp::Normal, what);
                rem -= more;
                got.add(n, more);
                self.placed(a.task, n, more, what);
            }
            if rem > 0 {
                let mut spill = std::mem::take(&mut self.spill);
                mm.alloc_upto_into(n, rem, Gfp::Normal, what, &mut spill);
                rem -= spill.pages();
                self.placed_all(a.task, &spill, what);
                got.merge(&spill);
                self.spill = spill;
            }
            if rem > 0 {
                short.push((n, rem));
            }
        }
        self.shares = shares;
        if short.is_empty() {
            self.short = short;
            return blocked;
        }
        self.wake_kswapd(mm, &short);
        self.alloc_min(mm, a.task, &mut short, what, got);
        let need: u64 = short.iter().map(|s| s.1).sum();
        if need == 0 {
            self.short = short;
            return blocked;
        }
        // try_to_free_pages(): synchronous, in the allocating thread.
        let r = self.shrink(
            mm,
            None,
            need,
            super::vmscan::ShrinkMode::DIRECT,
            f64::INFINITY,
        );
        self.stats.direct_reclaim_ns += r.cpu_ns;
        blocked += r.cpu_ns
            + r.io_pages as f64 * self.page as f64 / self.disk.bytes_per_s().max(1.0) * 1e9;
        self.alloc_min(mm, a.task, &mut short, what, got);
        self.short = short;
        if r.freed == 0 && r.full_sweep {
            // Every priority failed: the thread spent the whole sweep.
            self.stats.failed_sweep_ns = Some(r.cpu_ns);
            a.busy_until_ns = self.now_ns + r.cpu_ns as u64;
            let at = self.now_ns + r.cpu_ns as u64;
            if self.out_of_memory_24(at) {
                let victim = self.pick_victim(a.task);
                self.oom_kill(mm, victim, at);
            }
        }
        blocked
    }

    /// The `pages_min` pass for each node left `short`, spilling along its
    /// zonelist; what each gets comes off its shortfall.
    fn alloc_min(
        &mut self,
        mm: &mut PageAlloc,
        task: usize,
        short: &mut [(usize, u64)],
        what: Use,
        got: &mut Gather,
    ) {
        let mut p = std::mem::take(&mut self.spill);
        for (n, rem) in short.iter_mut() {
            mm.alloc_upto_into(*n, *rem, Gfp::Min, what, &mut p);
            *rem -= p.pages();
            self.placed_all(task, &p, what);
            got.merge(&p);
        }
        self.spill = p;
    }

    /// New pages become visible to reclaim at once: page cache as dirty,
    /// anonymous pages as the task's.
    fn placed(&mut self, task: usize, n: usize, pages: u64, what: Use) {
        match what {
            Use::PageCache => {
                self.dirty[n] += pages;
                self.dirty_total += pages;
            }
            Use::Anon => self.tasks[task].anon[n] += pages,
            _ => {}
        }
    }
    fn placed_all(&mut self, task: usize, p: &Placement, what: Use) {
        for &(n, c) in &p.parts {
            self.placed(task, n as usize, c, what);
        }
    }

    /// How a request is split over nodes: all on `node`, or SGI's
    /// round-robin over the nodes with memory.
    fn shares_into(
        &mut self,
        mm: &PageAlloc,
        node: usize,
        pages: u64,
        spread: Spread,
        out: &mut Vec<(usize, u64)>,
    ) {
        out.clear();
        match spread {
            Spread::Local => out.push((node, pages)),
            Spread::RoundRobin => {
                // The nodes with memory never change after boot: listed once.
                let set = self.rr_set.get_or_insert_with(|| {
                    (0..mm.node_count())
                        .filter(|&n| mm.node(n).present > 0)
                        .collect()
                });
                if set.is_empty() {
                    out.push((node, pages));
                    return;
                }
                let len = set.len();
                let k = len as u64;
                let start = self.rr_next % len;
                let extra = (pages % k) as usize;
                self.rr_next = (start + extra) % len;
                if pages < k {
                    // One page each to the `extra` nodes from `start`,
                    // wrapping, listed in node order as below: no pass over
                    // the nodes that get none (most, on a big machine).
                    let wrapped = (start + extra).saturating_sub(len);
                    out.extend(
                        (0..wrapped)
                            .chain(start..(start + extra).min(len))
                            .map(|i| (set[i], 1)),
                    );
                    return;
                }
                // Node i's place counted from `start`, wrapping: one
                // compare, not a division a node ((i + len - start) % len).
                let base = pages / k;
                out.extend((0..len).map(|i| {
                    let from_start = if i >= start {
                        i - start
                    } else {
                        i + len - start
                    };
                    (set[i], base + u64::from(from_start < extra))
                }));
            }
        }
    }

    /// B1 / B12: which kswapd threads a short allocation wakes.
    fn wake_kswapd(&mut self, mm: &PageAlloc, short: &[(usize, u64)]) {
        match self.kswapd_trigger {
            KswapdTrigger::Global => {
                let low: u64 = mm.nodes().iter().map(|u| u.watermark[1]).sum();
                if mm.total_free() < low && !self.kswapd_awake[0] {
                    self.kswapd_awake[0] = true;
                    self.stats.kswapd_wakeups += 1;
                }
            }
            KswapdTrigger::PerNode => {
                for &(n, _) in short {
                    if !self.kswapd_awake[n] {
                        self.kswapd_awake[n] = true;
                        self.stats.kswapd_wakeups += 1;
                    }
                }
            }
        }
    }

    /// kswapd's tick: reclaim toward `pages_high` with one CPU each, then
    /// sleep. 2.4 has one kswapd working on the whole machine (global LRU);
    /// 2.6 one per node.
    fn kswapd(&mut self, mm: &mut PageAlloc) {
        let mode = super::vmscan::ShrinkMode::KSWAPD;
        let budget = TICK_NS as f64;
        match self.kswapd_trigger {
            KswapdTrigger::Global => {
                if !self.kswapd_awake[0] {
                    return;
                }
                let high: u64 = mm.nodes().iter().map(|u| u.watermark[2]).sum();
                let want = high.saturating_sub(mm.total_free());
                if want == 0 {
                    self.kswapd_awake[0] = false;
                    return;
                }
                let r = self.shrink(mm, None, want, mode, budget);
                self.stats.kswapd_ns += r.cpu_ns;
            }
            KswapdTrigger::PerNode => {
                for n in 0..mm.node_count() {
                    if !self.kswapd_awake[n] {
                        continue;
                    }
                    let want = mm.node(n).watermark[2].saturating_sub(mm.node(n).free);
                    if want == 0 {
                        self.kswapd_awake[n] = false;
                        continue;
                    }
                    let r = self.shrink(mm, Some(n), want, mode, budget);
                    self.stats.kswapd_ns += r.cpu_ns;
                }
            }
        }
    }

    /// Check the invariants reclaim must keep: pages conserved on every node,
    /// dirty and listed within the cache, anonymous pages owned by tasks,
    /// swap slots owned by tasks.
    pub fn check(&self, mm: &PageAlloc) -> Result<(), String> {
        mm.check_conservation()?;
        for n in 0..mm.node_count() {
            let cache = Vm::cache(mm, n);
            if self.dirty[n] > cache {
                return Err(format!(
                    "node {n}: {} dirty > {cache} cached",
                    self.dirty[n]
                ));
            }
            if self.listed[n] > cache - self.dirty[n] {
                return Err(format!("node {n}: {} listed > clean cache", self.listed[n]));
            }
            let owned: u64 = self.tasks.iter().map(|t| t.anon[n]).sum();
            if owned != mm.node(n).used_by[Use::Anon.index()] {
                return Err(format!(
                    "node {n}: tasks own {owned} anon pages, the node holds {}",
                    mm.node(n).used_by[Use::Anon.index()]
                ));
            }
        }
        for (i, t) in self.tasks.iter().enumerate() {
            if t.swapcache.iter().zip(&t.anon).any(|(c, a)| c > a) {
                return Err(format!(
                    "task {i}: more swap-cache pages than resident ones"
                ));
            }
            let plain = t.resident() - t.swapcache.iter().sum::<u64>();
            if t.source_ahead > plain || t.swapped_ahead > t.swapped {
                return Err(format!(
                    "task {i}: source ahead {} of {plain} resident, {} of {} swapped",
                    t.source_ahead, t.swapped_ahead, t.swapped
                ));
            }
        }
        if self.dirty_total != self.dirty.iter().sum::<u64>() {
            return Err("dirty pages: the running sum differs from the nodes'".into());
        }
        for n in 0..mm.node_count() {
            let c: u64 = self.tasks.iter().map(|t| t.swapcache[n]).sum();
            if c != self.swapcache_node[n] {
                return Err(format!(
                    "node {n}: swap-cache running sum {} != {c}",
                    self.swapcache_node[n]
                ));
            }
        }
        if self.swapcache_total != self.swapcache_node.iter().sum::<u64>() {
            return Err("swap cache: the running total differs from the nodes'".into());
        }
        let sw: u64 = self
            .tasks
            .iter()
            .map(|t| t.swapped + t.swapcache.iter().sum::<u64>())
            .sum();
        if sw != self.swap.used || self.swap.used > self.swap.size {
            return Err(format!(
                "swap: tasks own {sw} slots, {} used of {}",
                self.swap.used, self.swap.size
            ));
        }
        Ok(())
    }

    /// Cost of scanning one page of the machine-wide lists, ns.
    pub fn scan_ns_global_value(&self) -> f64 {
        self.scan_ns_global
    }

    pub fn lru(&self) -> Lru {
        self.sys.lru
    }
}
