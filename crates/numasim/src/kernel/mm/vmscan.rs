//! Page reclaim (`mm/vmscan.c`) on aggregated LRU lists: `shrink_caches()`
//! as 2.4's `try_to_free_pages()` and kswapd run it, SGI's `toss()` and
//! `toss_fast()` ([ALTIX04] B3, B6), `page_cache_reduce()` (B7) and
//! node-local `zone_reclaim()` ([XFS06] B13).
//!
//! The lists are counts per node: clean page cache, dirty page cache and
//! anonymous (mapped) pages. A scan meets each kind in proportion to its
//! share of the lists scanned ("well mixed": the pages' ages are not
//! tracked). Met clean pages are freed; met anonymous pages are swapped out
//! if swap has room and the disk time, otherwise the attempt fails; met
//! dirty pages are written (in LRU order, not file order) and stay cached.

use super::page_alloc::{PageAlloc, Use};
use super::vm::Vm;

/// `DEF_PRIORITY` in 2.4 `mm/vmscan.c`: `try_to_free_pages_zone()` calls
/// `shrink_caches()` at priorities 6 down to 1, each scanning
/// `nr_inactive_pages / priority`; one full sweep scans
/// (1/6 + 1/5 + … + 1/1) = 2.45 times the lists.
pub const DEF_PRIORITY: u32 = 6;

/// Share of the LRU on the inactive list where `refill_inactive()`'s ratio
/// settles (2.4.21 mm/vmscan.c: inactive = active / 2).
pub const INACTIVE_SHARE: f64 = 1.0 / 3.0;

fn sweep_factor() -> f64 {
    (1..=DEF_PRIORITY).map(|p| 1.0 / p as f64).sum()
}

/// What a reclaim pass may do to the pages it meets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShrinkMode {
    /// Swap out anonymous pages.
    pub swap: bool,
    /// Write dirty page-cache pages it meets.
    pub write_dirty: bool,
    /// Most pages scanned, in multiples of the lists' length.
    pub max_scan: f64,
}

impl ShrinkMode {
    /// `try_to_free_pages()` in an allocating thread.
    pub const DIRECT: ShrinkMode = ShrinkMode {
        swap: true,
        write_dirty: true,
        max_scan: 0.0, // the full priority sweep, see `max_scan()`
    };
    /// kswapd: the same passes, limited by its CPU time per tick.
    pub const KSWAPD: ShrinkMode = ShrinkMode::DIRECT;
    /// `toss()`: inactive then active list once, skipping anything not
    /// easily freeable (dirty, mapped), never swapping (B3).
    pub const TOSS: ShrinkMode = ShrinkMode {
        swap: false,
        write_dirty: false,
        max_scan: 1.0,
    };
    fn max_scan(self) -> f64 {
        if self.max_scan > 0.0 {
            self.max_scan
        } else {
            sweep_factor()
        }
    }
}

/// What one reclaim pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shrunk {
    pub scanned: u64,
    /// Pages freed: clean cache dropped plus anonymous pages swapped out.
    pub freed: u64,
    pub swapped: u64,
    pub swap_attempts: u64,
    pub dirty_written: u64,
    /// Pages of I/O the reclaimer waits for (swap-outs and dirty writes).
    pub io_pages: u64,
    pub cpu_ns: f64,
    /// The pass scanned everything it may and freed nothing.
    pub full_sweep: bool,
}

/// Split `total` over `weights` in proportion, exactly, each part at most
/// its weight (largest remainder).
pub fn split(total: u64, weights: &[u64]) -> Vec<u64> {
    let mut parts = Vec::new();
    split_into(total, weights, &mut parts, &mut SplitScratch::default());
    parts
}

/// Buffers `split_into` reuses between calls.
#[derive(Debug, Clone, Default)]
pub struct SplitScratch {
    /// Per part, its remainder's complement in the high half and its index
    /// in the low: ascending order is largest remainder first, ties by
    /// index, and comparing plain integers beats a keyed closure.
    keys: Vec<u128>,
    /// The same keys in 64 bits (remainder's complement in the high 32),
    /// where remainders and indices fit 32 bits (every preset's page
    /// counts): the selection compares and moves half the bytes, and the
    /// order, hence the parts, is the same.
    keys64: Vec<u64>,
}

impl Scratch {
    /// [`split`] into these buffers: the flusher and the page-cache limit
    /// split over every node each tick, and a fresh vector and key list a
    /// call were a fifth of altix-bigio's instructions in `malloc`.
    pub(super) fn split(&mut self, total: u64, weights: &[u64]) -> &[u64] {
        split_into(total, weights, &mut self.parts, &mut self.split);
        &self.parts
    }
}

/// Buffers a reclaim pass reuses (it runs per thread per tick, and at a
/// thousand threads fresh vectors per pass were a third of the run).
#[derive(Debug, Clone, Default)]
pub struct Scratch {
    nodes: Vec<usize>,
    clean: Vec<u64>,
    dirty: Vec<u64>,
    cached: Vec<u64>,
    anon: Vec<u64>,
    fc: Vec<u64>,
    dc: Vec<u64>,
    sw: Vec<u64>,
    dw: Vec<u64>,
    owned: Vec<u64>,
    parts: Vec<u64>,
    split: SplitScratch,
}

/// [`split`] into `parts` (cleared first), reusing `scratch`.
pub fn split_into(total: u64, weights: &[u64], parts: &mut Vec<u64>, scratch: &mut SplitScratch) {
    parts.clear();
    let sum: u64 = weights.iter().sum();
    if sum == 0 || total == 0 {
        parts.resize(weights.len(), 0);
        return;
    }
    let total = total.min(sum);
    if let [_] = weights {
        // One weight (a pass on one node): all of it is its share.
        parts.push(total);
        return;
    }
    // Runs every tick over every node: 64-bit arithmetic where the product
    // fits (it nearly always does), and the remainders from the quotients
    // rather than a 128-bit modulo each.
    // A remainder is below `sum`, so it fits 64 bits.
    let share = |w: u64| match total.checked_mul(w) {
        Some(x) => (x / sum, x % sum),
        None => {
            let x = total as u128 * w as u128;
            ((x / sum as u128) as u64, (x % sum as u128) as u64)
        }
    };
    // Remainders are below `sum`: 32-bit keys when `sum` and the indices fit.
    let narrow = sum <= 1 << 32 && weights.len() <= 1 << 32;
    let (keys, keys64) = (&mut scratch.keys, &mut scratch.keys64);
    keys.clear();
    keys64.clear();
    // The quotients' sum, kept as they are pushed (not a second pass).
    let mut given = 0u64;
    for (i, &w) in weights.iter().enumerate() {
        if w == 0 {
            // No share and no remainder (most nodes of a starved list):
            // no division, and no key, since a zero remainder never ranks
            // among the `left` largest (see below).
            parts.push(0);
            continue;
        }
        let (q, r) = share(w);
        parts.push(q);
        given += q;
        if r > 0 {
            if narrow {
                keys64.push(u64::from(!(r as u32)) << 32 | i as u64);
            } else {
                keys.push(((!r as u128) << 64) | i as u128);
            }
        }
    }
    let mut left = total - given;
    if left == 0 {
        return;
    }
    // The `left` largest remainders get one page each. Their sum is
    // `left * sum` with each under `sum`, so more than `left` are non-zero
    // and every one of the top `left` can take a page (non-zero remainder:
    // its part is under its weight): only those are keyed. Keys are
    // distinct (index last), so selecting them (linear) picks the same set
    // a full sort would.
    let k = left as usize;
    let mut give = |i: usize| {
        debug_assert!(parts[i] < weights[i]);
        parts[i] += 1;
        left -= 1;
    };
    if narrow {
        keys64.select_nth_unstable(k - 1);
        for &key in &keys64[..k] {
            give((key & u64::from(u32::MAX)) as usize);
        }
    } else {
        keys.select_nth_unstable(k - 1);
        for &key in &keys[..k] {
            give(key as u64 as usize);
        }
    }
    debug_assert_eq!(left, 0);
}

impl Vm {
    fn scan_ns(&self, node: Option<usize>) -> f64 {
        match node {
            Some(n) => self.scan_ns_local[n],
            None => self.scan_ns_global,
        }
    }

    /// Reclaim up to `want` pages from one node's lists or (None) the whole
    /// machine's, spending at most `cpu_budget_ns`.
    pub fn shrink(
        &mut self,
        mm: &mut PageAlloc,
        node: Option<usize>,
        want: u64,
        mode: ShrinkMode,
        cpu_budget_ns: f64,
    ) -> Shrunk {
        // Totals first, from the running sums (no pass over the nodes):
        // most passes on a starved machine free nothing and stop here.
        let (c, d, sc, a) = match node {
            Some(n) => {
                let sc = self.swapcache_node[n];
                (
                    self.clean(mm, n),
                    self.dirty[n],
                    sc,
                    mm.node(n).used_by[Use::Anon.index()] - sc,
                )
            }
            None => (
                mm.total_used(Use::PageCache) - self.dirty_total,
                self.dirty_total,
                self.swapcache_total,
                mm.total_used(Use::Anon) - self.swapcache_total,
            ),
        };
        let (c, d, a, sc) = (c as f64, d as f64, a as f64, sc as f64);
        let t = c + d + a + sc;
        if t == 0.0 || want == 0 {
            return Shrunk::default();
        }
        let scan_ns = self.scan_ns(node);
        // The inactive list: every use-once page (page cache, swap cache)
        // plus the anonymous pages `refill_inactive()` moved there. 2.4 moves
        // `nr_pages * nr_active / (2 * (nr_inactive + 1))` per call, which
        // settles where the inactive list is a third of the LRU.
        let use_once = c + d + sc;
        let lru = use_once + a;
        let a_in = (lru * INACTIVE_SHARE - use_once).clamp(0.0, a);
        let ti = use_once + a_in;
        // 2.6's `vm_swappiness` gate: mapped pages only when
        // mapped_ratio/2 + distress + swappiness >= 100; distress reaches 100
        // when the use-once pages alone cannot give what is wanted.
        let anon_ok = mode.swap
            && match self.sys.vm_swappiness {
                None => true,
                Some(sw) => {
                    let mapped_ratio = 100.0 * (a + sc) / mm.total_present().max(1) as f64;
                    mapped_ratio / 2.0 + sw as f64 >= 100.0 || c + sc < want as f64
                }
            };
        let a_met = if anon_ok { a_in } else { 0.0 };
        let a_eff = if self.swap.free() > 0 { a_met } else { 0.0 };
        let freeable = c + sc + a_eff;
        let sweep = mode.max_scan() * ti;
        let mut s = if freeable > 0.0 {
            (want as f64 * ti / freeable).min(sweep)
        } else {
            sweep
        };
        if cpu_budget_ns.is_finite() {
            s = s.min(cpu_budget_ns / scan_ns);
        }
        let io_per_page = (a_eff + if mode.write_dirty { d } else { 0.0 }) / ti.max(1.0);
        if io_per_page > 0.0 {
            s = s.min(self.disk.pages_left(self.page) as f64 / io_per_page);
        }
        let s = s.max(0.0);
        let per = |x: f64| (s * x / ti.max(1.0)).floor() as u64;
        let freed_clean = per(c).min(want);
        let drop_cached = per(sc).min(want - freed_clean);
        let attempts = per(a_met);
        let to_swap = per(a_eff)
            .min(self.swap.free())
            .min(want - freed_clean - drop_cached);
        let to_write = if mode.write_dirty { per(d) } else { 0 };
        let max_scan = sweep;
        // Apply, node by node, in proportion to what each node holds; the
        // per-node weights are gathered only for what moves.
        let mut k = self.scratch.take().unwrap_or_default();
        k.nodes.clear();
        if freed_clean + drop_cached + to_swap + to_write > 0 {
            match node {
                Some(n) => k.nodes.push(n),
                None => k.nodes.extend(0..mm.node_count()),
            }
        }
        let mut weights =
            |amount: u64, v: &mut Vec<u64>, out: &mut Vec<u64>, f: &dyn Fn(usize) -> u64| {
                v.clear();
                out.clear();
                if amount > 0 {
                    v.extend(k.nodes.iter().map(|&n| f(n)));
                    split_into(amount, v, out, &mut k.split);
                }
            };
        weights(freed_clean, &mut k.clean, &mut k.fc, &|n| self.clean(mm, n));
        weights(drop_cached, &mut k.cached, &mut k.dc, &|n| {
            self.swapcache_node[n]
        });
        weights(to_swap, &mut k.anon, &mut k.sw, &|n| {
            mm.node(n).used_by[Use::Anon.index()] - self.swapcache_node[n]
        });
        weights(to_write, &mut k.dirty, &mut k.dw, &|n| self.dirty[n]);
        let at = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
        for i in 0..k.nodes.len() {
            let n = k.nodes[i];
            let fc = at(&k.fc, i);
            if fc > 0 {
                // Listed pages are clean pages; drop them from the list in
                // proportion (the list is a subset of the clean pages).
                // In 64 bits where the product fits (a 128-bit division
                // was 2% of altix-bigio's time); the same quotient.
                let c = k.clean[i].max(1);
                let l = match self.listed[n].checked_mul(fc) {
                    Some(x) => x / c,
                    None => (self.listed[n] as u128 * fc as u128 / c as u128) as u64,
                };
                self.listed[n] -= l.min(self.listed[n]);
            }
            let dc = at(&k.dc, i);
            if dc > 0 {
                self.drop_swapcache_node(n, dc, &mut k);
            }
            let sw = at(&k.sw, i);
            if sw > 0 {
                self.swap_out_node(n, sw, &mut k);
            }
            // The node's pages go back together: nothing above reads the
            // allocator, and one update of its sums is what three gave
            // (a single use keeps the plain call, which is shorter).
            match (fc, dc + sw) {
                (0, 0) => {}
                (fc, 0) => mm.free_on_node(n, fc, Use::PageCache),
                (0, a) => mm.free_on_node(n, a, Use::Anon),
                (fc, a) => mm.free_uses_on_node(n, &[(Use::PageCache, fc), (Use::Anon, a)]),
            }
            let dw = at(&k.dw, i);
            if dw > 0 {
                self.dirty[n] -= dw;
                self.dirty_total -= dw;
                if self.sys.reclaim_list && self.sys.reclaim_list_rejoin {
                    self.listed[n] += dw;
                }
            }
        }
        let (fc, dc, sw, dw) = (&k.fc, &k.dc, &k.sw, &k.dw);
        let swapped = sw.iter().sum::<u64>();
        let written = dw.iter().sum::<u64>();
        self.disk.transfer(swapped + written, self.page);
        self.stats.swap_out_pages += swapped;
        self.stats.reclaim_written_pages += written;
        if swapped > 0 && self.stats.first_swap_out_ns.is_none() {
            self.stats.first_swap_out_ns = Some(self.now_ns);
            self.stats.file_io_at_first_swap_out =
                Some(self.stats.flushed_pages + self.stats.reclaim_written_pages - written);
        }
        let scanned = s as u64;
        self.stats.scanned_pages += scanned;
        self.swap_oom.count(attempts, swapped);
        let freed = fc.iter().sum::<u64>() + dc.iter().sum::<u64>() + swapped;
        self.scratch = Some(k);
        Shrunk {
            scanned,
            freed,
            swapped,
            swap_attempts: attempts,
            dirty_written: written,
            io_pages: swapped + written,
            cpu_ns: s * scan_ns,
            full_sweep: freed == 0 && s >= max_scan * 0.999,
        }
    }

    /// Free `pages` swap-cache pages of node `n` (their data is on swap
    /// already), in proportion to each task's share.
    /// The caller frees the pages on the node.
    fn drop_swapcache_node(&mut self, n: usize, pages: u64, k: &mut Scratch) {
        if let [t] = &mut self.tasks[..] {
            // One task: a split over one weight is the amount up to it
            // (`one_weight_takes_the_amount_up_to_it`), without the
            // weights' vector and the call (altix-bigio: a million nodes'
            // drops, each over its one task).
            let p = pages.min(t.swapcache[n]);
            t.swapcache[n] -= p;
            t.anon[n] -= p;
            t.swapped += p;
            self.swapcache_node[n] -= pages;
            self.swapcache_total -= pages;
            return;
        }
        k.owned.clear();
        k.owned.extend(self.tasks.iter().map(|t| t.swapcache[n]));
        split_into(pages, &k.owned, &mut k.parts, &mut k.split);
        for (t, &p) in k.parts.iter().enumerate() {
            self.tasks[t].swapcache[n] -= p;
            self.tasks[t].anon[n] -= p;
            self.tasks[t].swapped += p;
        }
        self.swapcache_node[n] -= pages;
        self.swapcache_total -= pages;
    }

    /// Swap out `pages` anonymous pages of node `n`, taken from its tasks in
    /// proportion to what each has there.
    /// The caller frees the pages on the node.
    fn swap_out_node(&mut self, n: usize, pages: u64, k: &mut Scratch) {
        let got = self.swap.take(pages);
        debug_assert_eq!(got, pages);
        let swap_task = |t: &mut super::vm::Task, p: u64| {
            t.anon[n] -= p;
            t.swapped += p;
            // `swap_out()`'s hand takes the unread pages ahead of a writer's
            // cursor first (see `Task::source_ahead`).
            let ahead = p.min(t.source_ahead);
            t.source_ahead -= ahead;
            t.swapped_ahead += ahead;
        };
        if let [t] = &mut self.tasks[..] {
            // One task: its share is the amount up to its weight, as in
            // `drop_swapcache_node` (two million nodes' swap-outs in
            // altix-bigio).
            let p = pages.min(t.anon[n] - t.swapcache[n]);
            swap_task(t, p);
            return;
        }
        k.owned.clear();
        k.owned
            .extend(self.tasks.iter().map(|t| t.anon[n] - t.swapcache[n]));
        split_into(pages, &k.owned, &mut k.parts, &mut k.split);
        for (t, &p) in k.parts.iter().enumerate() {
            swap_task(&mut self.tasks[t], p);
        }
    }

    /// Reclaim on the allocating node before going off-node: SGI's `toss()`
    /// or `toss_fast()` (B3, B6), or 2.6.16's `zone_reclaim()` (B13).
    /// Returns the ns the allocating thread spent.
    pub(super) fn local_reclaim(&mut self, mm: &mut PageAlloc, n: usize, want: u64) -> f64 {
        if self.sys.toss && self.sys.toss_fast {
            return self.toss_fast(mm, n, want);
        }
        let mode = if self.sys.toss {
            ShrinkMode::TOSS
        } else {
            ShrinkMode {
                swap: self.sys.zone_reclaim_mode & 4 != 0,
                write_dirty: self.sys.zone_reclaim_mode & 2 != 0,
                max_scan: 1.0,
            }
        };
        self.shrink(mm, Some(n), want, mode, f64::INFINITY).cpu_ns
    }

    /// `toss_fast()`: free clean pages from node `n`'s `reclaim_list`; every
    /// page examined is freeable, so the scan costs one page per page freed.
    pub fn toss_fast(&mut self, mm: &mut PageAlloc, n: usize, want: u64) -> f64 {
        let f = want.min(self.listed[n]);
        self.listed[n] -= f;
        mm.free_on_node(n, f, Use::PageCache);
        self.stats.scanned_pages += f;
        f as f64 * self.scan_ns_local[n]
    }

    /// `page_cache_alloc_limited()` (B7): when free memory is under the
    /// threshold and the cache over the limit, `page_cache_reduce()` trims
    /// the cache with `toss_fast()` toward the limit. Returns how many pages
    /// the writer may add now (`u64::MAX` when no limit applies).
    pub(super) fn page_cache_alloc_limited(
        &mut self,
        mm: &mut PageAlloc,
        limit_pct: f64,
        want: u64,
    ) -> u64 {
        let total = mm.total_present() as f64;
        let limit = (total * limit_pct / 100.0) as u64;
        let threshold = (total * self.sys.page_cache_limit_threshold_pct / 100.0) as u64;
        if mm.total_free() >= threshold {
            return u64::MAX;
        }
        let cache = Vm::cache_total(mm);
        if cache + want > limit {
            // page_cache_reduce(): toss_fast() on each node, in proportion to
            // the lists, until this tick's pages fit under the limit (the
            // kernel checks page by page; a tick batches those checks).
            let excess = cache + want - limit;
            let mut k = self.scratch.take().unwrap_or_default();
            for (n, &p) in k.split(excess, &self.listed).iter().enumerate() {
                if p > 0 {
                    self.toss_fast(mm, n, p);
                }
            }
            self.scratch = Some(k);
        }
        limit.saturating_sub(Vm::cache_total(mm))
    }
}
