//! Who writes a buffered writer's dirty pages back, and when, in the steady
//! state of a long run with memory full of page cache (2.6.15
//! `mm/page-writeback.c`, [XFS06] B12).
//!
//! - `get_dirty_limits()`: the background and dirty thresholds, from
//!   `dirty_background_ratio` and `dirty_ratio` of memory; with no mapped
//!   pages `dirty_ratio` is capped at half the unmapped ratio (50%), and a
//!   background ratio not below it is halved.
//! - `pdflush`, one per block device, at `writeback_page_ns` a page: the
//!   periodic pass (`wb_kupdate()`, every `dirty_writeback_centisecs`)
//!   writes what was dirtied more than `dirty_expire_centisecs` ago; once
//!   the dirty pages pass the background threshold, `background_writeout()`
//!   writes until they are under it again.
//! - `balance_dirty_pages()`: when pdflush cannot keep up, the dirty pages
//!   grow to the dirty threshold and the writers themselves write back
//!   (`writeback_inodes()`, `sync_writeback_pages()` at a time) before
//!   they may dirty more. From Linux 3.2 (IO-less dirty throttling, Wu
//!   Fengguang) they only sleep, and the device's flusher thread (pdflush's
//!   successor since 2.6.32) alone sets the rate.
//!
//! kswapd writes a page itself only when it meets it still dirty at the
//! tail of its node's LRU, that is when a node's LRU turns over faster than
//! pdflush gets to the page (`tail_writeback`). Each node's LRU holds the
//! node's memory and takes the pages the allocator places there
//! (`mm::kswapd`): spread over every node, its tail is `memory / rate` old,
//! while a page is written back at most `dirty threshold / rate` after it
//! was dirtied, and the dirty threshold is at most half of memory, so
//! kswapd only reclaims clean pages whatever the tunables. A writer whose
//! pages stay on fewer nodes (bound there, or faster than their kswapds
//! under the default policy) cycles less memory: once that is less than
//! the background threshold, background writeout never starts, pdflush
//! only makes its periodic pass, and kswapd meets every page dirty at the
//! tail and writes it (`pageout()`), in LRU order rather than file order.

use crate::kernel::mm::sysctl_vm::VmSysctl;

/// The B12 tunables, in the units the model uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DirtyLimits {
    pub dirty_ratio: u32,
    pub background_ratio: u32,
    pub expire_ns: f64,
    pub writeback_ns: f64,
}

impl DirtyLimits {
    pub fn from_sysctl(v: &VmSysctl) -> DirtyLimits {
        DirtyLimits {
            dirty_ratio: v.dirty_ratio,
            background_ratio: v.dirty_background_ratio,
            expire_ns: v.dirty_expire_centisecs as f64 * 1e7,
            writeback_ns: v.dirty_writeback_centisecs as f64 * 1e7,
        }
    }

    /// `get_dirty_limits()` with no mapped pages: (background, dirty)
    /// thresholds in bytes of `memory`.
    pub fn thresholds(&self, memory: f64) -> (f64, f64) {
        let dirty = self.dirty_ratio.clamp(5, 50);
        let background = if self.background_ratio >= dirty {
            dirty / 2
        } else {
            self.background_ratio
        };
        (
            memory * background as f64 / 100.0,
            memory * dirty as f64 / 100.0,
        )
    }
}

/// Mainline `set_ratelimit()`: pages a CPU dirties between checks of the
/// limits, `memory / (cpus × 32)` pages, at least 16 and at most 4 MiB.
pub fn ratelimit_pages(memory: u64, page: u64, cpus: u64) -> u64 {
    let pages = memory / page.max(1) / (cpus.max(1) * 32);
    pages.clamp(16, ((4 << 20) / page.max(1)).max(16))
}

/// Mainline `sync_writeback_pages()`: what a throttled writer writes back
/// per call.
pub fn sync_writeback_pages(memory: u64, page: u64, cpus: u64) -> u64 {
    let r = ratelimit_pages(memory, page, cpus);
    r + r / 2
}

/// How pdflush runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdflushMode {
    /// Only the periodic pass: bursts every `dirty_writeback_centisecs`.
    Kupdate,
    /// Background writeout holds the dirty pages at the background threshold.
    Background,
    /// pdflush runs all the time; the rest reaches the LRU tails dirty or
    /// the writers write it back.
    Saturated,
}

/// The rate writers that together dirty `demand` bytes/ns when nothing
/// throttles them, on `writer_cpus` CPUs, keep up when each byte dirtied
/// also costs them `own_ns_per_byte` of their own work (direct reclaim),
/// and pdflush (a page of `page` bytes in `writeback_page_ns`) must write
/// the `1 - tail_share` of their pages the LRU tails do not take. Past
/// pdflush, the writers write back the rest in `balance_dirty_pages()`,
/// their CPU time shared: rate × (n / demand + own + (1 − tail_share) ×
/// per_byte) = n + pdflush_max × per_byte. `io_less` (Linux 3.2 on): they
/// sleep instead, and pdflush alone sets the rate.
pub fn throttled_rate(
    demand: f64,
    writer_cpus: f64,
    page: u64,
    writeback_page_ns: f64,
    tail_share: f64,
    own_ns_per_byte: f64,
    io_less: bool,
) -> f64 {
    let per_byte = writeback_page_ns / page as f64;
    let pdflush_max = 1.0 / per_byte.max(1e-12);
    let left = (1.0 - tail_share).clamp(0.0, 1.0);
    let n = writer_cpus.max(1.0);
    let own = own_ns_per_byte.max(0.0);
    // Dirtying and their own reclaim alone.
    let alone = if own > 0.0 {
        (n / (n / demand + own)).min(demand)
    } else {
        demand
    };
    if alone * left <= pdflush_max {
        return alone;
    }
    if io_less {
        (pdflush_max / left).min(alone)
    } else {
        ((n + pdflush_max * per_byte) / (n / demand + own + left * per_byte)).min(alone)
    }
}

/// What reclaim does with a page it meets dirty at the LRU tail (2.6.15
/// `mm/vmscan.c` `shrink_list()`), in scans of the page that free
/// nothing, besides the scan that frees it. A page a writer dirtied
/// carries `PG_referenced` (`generic_file_buffered_write()` calls
/// `mark_page_accessed()` after each copy), and `page_referenced()` clears
/// it at the first meeting: a dirty page then goes back to the head for
/// another lap (`if (referenced) goto keep_locked`). Met dirty again,
/// `pageout()` sets `PG_reclaim` and calls `->writepage` (kswapd always
/// may write, `may_write_to_queue()`; a writer in direct reclaim may, as
/// the queue is its own `current->backing_dev_info`), and the page stays
/// on the list under writeback; `end_page_writeback()` then moves it to
/// the tail (`rotate_reclaimable_page()`), where the next scan frees it.
/// So each page written from the tail costs two scans that free nothing.
/// The list holds such a page for two laps, each of half the node's
/// turnover, so it is still written at the age of one turnover (the age
/// `tail_writeback` compares with pdflush's). From 3.2 reclaim keeps a
/// dirty file page with `PG_reclaim` for the flusher (one such scan); the
/// model then has no tail met dirty.
pub const KEPT_SCANS_PER_TAIL_WRITE: f64 = 2.0;

/// One node's page-cache LRU in the steady state of a long buffered
/// write: memory full of page cache, the writers' freshly dirtied pages
/// entering at `inflow` bytes/ns and reaching the tail `bytes / inflow`
/// later.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeLru {
    pub bytes: f64,
    pub inflow: f64,
}

impl NodeLru {
    /// How old a page is when it reaches the LRU tail, ns.
    pub fn tail_age(&self) -> f64 {
        if self.inflow > 0.0 {
            self.bytes / self.inflow
        } else {
            f64::INFINITY
        }
    }
}

/// Who writes back which pages when each node's LRU turns over at its own
/// pace.
#[derive(Debug, Clone, PartialEq)]
pub struct TailWriteback {
    /// pdflush (or the throttled writers) write a page back this long
    /// after it was dirtied, ns.
    pub dirty_age_ns: f64,
    pub mode: PdflushMode,
    /// Per node: the fraction of its pages that reach the LRU tail still
    /// dirty (kswapd, or a direct reclaimer, meets them there).
    pub met_dirty: Vec<f64>,
    /// Bytes/ns the writers write back themselves in
    /// `balance_dirty_pages()`, pdflush being flat out.
    pub writers: f64,
}

/// The nodes taking pages, youngest tail first.
fn by_tail_age(lrus: &[NodeLru]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lrus.len()).filter(|&j| lrus[j].inflow > 0.0).collect();
    order.sort_by(|&a, &b| lrus[a].tail_age().total_cmp(&lrus[b].tail_age()));
    order
}

/// How old pages are when written back once `dirty` bytes of them stand
/// dirty: each node holds its pages dirty up to that age or its tail,
/// whichever is first (infinite if the LRUs cannot hold that many).
pub fn age_for_dirty(lrus: &[NodeLru], dirty: f64) -> f64 {
    age_for_dirty_in(lrus, &by_tail_age(lrus), dirty)
}

fn age_for_dirty_in(lrus: &[NodeLru], order: &[usize], dirty: f64) -> f64 {
    let mut full = 0.0;
    let mut rate: f64 = order.iter().map(|&j| lrus[j].inflow).sum();
    for &j in order {
        let d = (dirty - full) / rate.max(1e-300);
        if d <= lrus[j].tail_age() {
            return d.max(0.0);
        }
        full += lrus[j].bytes;
        rate -= lrus[j].inflow;
    }
    f64::INFINITY
}

/// The writeback of `lrus` (2.6.15): pdflush writes the oldest dirty pages
/// first, at up to `pdflush_max` bytes/ns, by its periodic pass (pages
/// `dirty_expire` old, half a period late) or, once the dirty pages pass
/// the background threshold, in the background; a node whose tail is
/// younger than that has its pages met dirty there. With pdflush flat
/// out, the dirty pages grow until either enough nodes' tails are met
/// dirty to leave pdflush what it can write, or they reach the dirty
/// threshold and the writers write the excess.
pub fn tail_writeback(
    lrus: &[NodeLru],
    pdflush_max: f64,
    memory: f64,
    limits: &DirtyLimits,
) -> TailWriteback {
    let (background, threshold) = limits.thresholds(memory);
    let order = by_tail_age(lrus);
    let age_for = |target: f64| age_for_dirty_in(lrus, &order, target);
    // Bytes/ns left to pdflush when pages are written back at `age`.
    let load = |age: f64| -> f64 {
        order
            .iter()
            .filter(|&&j| lrus[j].tail_age() >= age)
            .map(|&j| lrus[j].inflow)
            .sum()
    };
    let met = |age: f64| -> Vec<f64> {
        lrus.iter()
            .map(|l| f64::from(u8::from(l.inflow > 0.0 && l.tail_age() < age)))
            .collect()
    };
    let kupdate = limits.expire_ns + limits.writeback_ns / 2.0;
    let background_age = age_for(background);
    let (age, mode) = if kupdate <= background_age {
        (kupdate, PdflushMode::Kupdate)
    } else {
        (background_age, PdflushMode::Background)
    };
    let mut left = load(age);
    if left <= pdflush_max {
        return TailWriteback {
            dirty_age_ns: age,
            mode,
            met_dirty: met(age),
            writers: 0.0,
        };
    }
    // pdflush is flat out: the pages age until the tails they pass leave
    // it what it can write, or until the dirty threshold.
    let at_threshold = age_for(threshold);
    for &j in order.iter().filter(|&&j| lrus[j].tail_age() >= age) {
        let t = lrus[j].tail_age();
        if t >= at_threshold {
            break;
        }
        if left - lrus[j].inflow <= pdflush_max {
            // This node's tail sits at the dirty age: part of its pages
            // reach it dirty, just enough to leave pdflush its rate.
            let mut m = met(t);
            m[j] = 1.0 - (pdflush_max - (left - lrus[j].inflow)) / lrus[j].inflow;
            return TailWriteback {
                dirty_age_ns: t,
                mode: PdflushMode::Saturated,
                met_dirty: m,
                writers: 0.0,
            };
        }
        left -= lrus[j].inflow;
    }
    TailWriteback {
        dirty_age_ns: at_threshold,
        mode: PdflushMode::Saturated,
        met_dirty: met(at_threshold),
        writers: (load(at_threshold) - pdflush_max).max(0.0),
    }
}

/// Free memory at the start of a run on a filesystem just remounted
/// ([XFS06] F10: "memory about 99% free").
pub const FREE_AT_REMOUNT: f64 = 0.99;

/// A buffered-write run that starts with memory free instead of full of
/// page cache ([XFS06] F10: the filesystems were remounted between tests).
/// 2.6.15 meets it in three phases:
/// 1. Nothing is written back while the dirty pages stay under the
///    background threshold (`balance_dirty_pages()` only kicks
///    `background_writeout()` past it) and none is older than
///    `dirty_expire_centisecs` (`wb_kupdate()` skips younger inodes), and
///    nothing is reclaimed: `__alloc_pages()` takes free pages from the
///    first zone above `pages_low` and calls `wakeup_kswapd()` only when
///    no zone of the zonelist is (2.6.15 has no `zone_reclaim()`).
/// 2. From `writeback_from_ns`, pdflush writes back as in the steady
///    state, while the page cache still grows into free memory.
/// 3. From `reclaim_from_ns`, every zone is down to `pages_low`: the
///    kswapds reclaim as in the steady state. The LRU tails they meet
///    then hold the run's first pages, dirtied `reclaim_from_ns` ago:
///    clean unless memory filled before writeback began, which free
///    memory above the background threshold rules out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColdStart {
    pub writeback_from_ns: f64,
    pub reclaim_from_ns: f64,
}

impl ColdStart {
    /// A writer dirtying `rate` bytes/ns of new page cache into `free`
    /// bytes above the zones' `pages_low`, on `memory` bytes.
    pub fn new(rate: f64, free: f64, memory: f64, limits: &DirtyLimits) -> ColdStart {
        let rate = rate.max(1e-300);
        let (background, _) = limits.thresholds(memory);
        // The periodic pass's timer is not in phase with the run: on
        // average the first pass that finds a page past its expiry comes
        // half a period after it expired (as in `tail_writeback`).
        let kupdate = limits.expire_ns + limits.writeback_ns / 2.0;
        ColdStart {
            writeback_from_ns: (background / rate).min(kupdate),
            reclaim_from_ns: free.max(0.0) / rate,
        }
    }

    /// (written back, still dirty at the end) of `run_ns` of dirtying at
    /// `rate`, when writeback keeps up from `writeback_from_ns`: the
    /// backlog of phase 1 stays dirty (background writeout stops under
    /// the threshold; the periodic pass keeps pages `expire` old).
    pub fn written_back(&self, rate: f64, run_ns: f64) -> (f64, f64) {
        let dirtied = rate * run_ns.max(0.0);
        let back = rate * (run_ns - self.writeback_from_ns).max(0.0);
        (back, dirtied - back)
    }

    /// (reclaimed, taken from free memory) in `run_ns` at `rate`.
    pub fn reclaimed(&self, rate: f64, run_ns: f64) -> (f64, f64) {
        let dirtied = rate * run_ns.max(0.0);
        let reclaimed = rate * (run_ns - self.reclaim_from_ns).max(0.0);
        (reclaimed, dirtied - reclaimed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> DirtyLimits {
        DirtyLimits::from_sysctl(&VmSysctl::default())
    }

    const GIB: f64 = (1u64 << 30) as f64;

    #[test]
    fn dirty_ratio_is_capped_at_half_of_unmapped_memory() {
        let mut l = limits();
        l.dirty_ratio = 90;
        l.background_ratio = 60;
        let (bg, d) = l.thresholds(100.0);
        assert_eq!((bg, d), (25.0, 50.0));
    }

    /// Bytes/ns met dirty at the LRU tails.
    fn met_dirty_rate(t: &TailWriteback, lrus: &[NodeLru]) -> f64 {
        lrus.iter()
            .zip(&t.met_dirty)
            .map(|(l, f)| l.inflow * f)
            .sum()
    }

    /// `nodes` LRUs of `memory / nodes` bytes sharing `rate` evenly.
    fn spread(memory: f64, nodes: usize, rate: f64) -> Vec<NodeLru> {
        vec![
            NodeLru {
                bytes: memory / nodes as f64,
                inflow: rate / nodes as f64,
            };
            nodes
        ]
    }

    #[test]
    fn a_slow_writer_is_left_to_the_periodic_pass_a_fast_one_to_background_writeout() {
        // 24 GiB: background at 2.4 GiB; 30 s + 2.5 s of dirtying must stay
        // under it for kupdate alone to write back.
        let m = 24.0 * GIB;
        let pd = 16384.0 / 10_000.0;
        let slow = tail_writeback(&spread(m, 12, GIB / 1e9 * 0.05), pd, m, &limits());
        let fast = tail_writeback(&spread(m, 12, GIB / 1e9 * 0.5), pd, m, &limits());
        assert_eq!(slow.mode, PdflushMode::Kupdate);
        assert_eq!(fast.mode, PdflushMode::Background);
        assert!(fast.dirty_age_ns < slow.dirty_age_ns);
        assert_eq!(fast.writers, 0.0);
    }

    #[test]
    fn past_pdflush_the_writers_write_back_and_slow_down() {
        let m = 24.0 * GIB;
        let page = 16384;
        let pd = page as f64 / 10_000.0;
        let rate = throttled_rate(2.0 * pd, 4.0, page, 10_000.0, 0.0, 0.0, false);
        assert!(rate < 2.0 * pd && rate > pd);
        let t = tail_writeback(&spread(m, 12, rate), pd, m, &limits());
        assert_eq!(t.mode, PdflushMode::Saturated);
        // Conservation: everything dirtied is written back by someone.
        assert!((pd + t.writers - rate).abs() < 1e-12);
        // Pages the tails take leave pdflush room: the writers go faster.
        let eased = throttled_rate(2.0 * pd, 4.0, page, 10_000.0, 0.25, 0.0, false);
        assert!(eased > rate && eased <= 2.0 * pd);
    }

    #[test]
    fn io_less_throttling_leaves_the_rate_to_the_flusher() {
        let page = 16384;
        let pd = page as f64 / 10_000.0;
        let io_less = throttled_rate(2.0 * pd, 4.0, page, 10_000.0, 0.0, 0.0, true);
        assert_eq!(io_less, pd);
        let old = throttled_rate(2.0 * pd, 4.0, page, 10_000.0, 0.0, 0.0, false);
        assert!(old > io_less);
    }

    #[test]
    fn pages_spread_over_every_node_are_written_back_before_they_reach_the_lru_tail() {
        // The claim of the module docs, over tunables and rates, now as
        // each node's LRU sees it.
        let page = 16384;
        let pd = page as f64 / 10_000.0;
        for (d, bg) in [(40, 10), (100, 100), (5, 1), (50, 49)] {
            let mut l = limits();
            l.dirty_ratio = d;
            l.background_ratio = bg;
            for demand in [0.01, 0.1, 0.5, 1.0, 3.0] {
                let m = 24.0 * GIB;
                let rate = throttled_rate(demand, 4.0, page, 10_000.0, 0.0, 0.0, false);
                let t = tail_writeback(&spread(m, 12, rate), pd, m, &l);
                assert!(t.met_dirty.iter().all(|&f| f == 0.0), "{d} {bg} {demand}");
                assert!(t.dirty_age_ns < m / rate, "{d} {bg} {demand}");
            }
        }
    }

    #[test]
    fn spread_evenly_the_per_node_writeback_is_the_machine_wide_one() {
        // One LRU of the whole memory: kupdate's age while 32.5 s of
        // dirtying stays under the background threshold, else the
        // background threshold's, past pdflush the dirty threshold's.
        let m = 24.0 * GIB;
        let pd = 16384.0 / 10_000.0;
        let (bg, dt) = limits().thresholds(m);
        let kupdate = 32.5e9;
        for rate in [0.01, 0.07, 0.3, 1.2, 2.5, 6.0] {
            let t = tail_writeback(&spread(m, 12, rate), pd, m, &limits());
            let (age, mode) = if rate > pd {
                (dt / rate, PdflushMode::Saturated)
            } else if kupdate * rate <= bg {
                (kupdate, PdflushMode::Kupdate)
            } else {
                (bg / rate, PdflushMode::Background)
            };
            assert_eq!(t.mode, mode, "{rate}");
            assert!((t.dirty_age_ns - age).abs() <= 1e-9 * age, "{rate}");
            assert!((t.writers - (rate - pd).max(0.0)).abs() < 1e-12, "{rate}");
        }
    }

    #[test]
    fn a_writer_cycling_less_memory_than_the_background_threshold_leaves_its_pages_to_kswapd() {
        // One writer bound to one 2 GiB node of a 24 GiB machine: its LRU
        // turns over in 2 GiB, under the 2.4 GiB background threshold, so
        // background writeout never starts, pdflush only makes its periodic
        // pass (whose 30 s pages are long gone), and every page reaches
        // the tail dirty.
        let m = 24.0 * GIB;
        let pd = 16384.0 / 10_000.0;
        let rate = 426.0 * (1u64 << 20) as f64 / 1e9;
        let mut lrus = spread(m, 12, 0.0);
        lrus[0].inflow = rate;
        let t = tail_writeback(&lrus, pd, m, &limits());
        assert_eq!(t.mode, PdflushMode::Kupdate);
        assert_eq!(t.met_dirty[0], 1.0);
        assert!(t.met_dirty[1..].iter().all(|&f| f == 0.0));
        assert!((met_dirty_rate(&t, &lrus) - rate).abs() < 1e-12);
        // Spread over every node instead, nothing reaches a tail dirty.
        let even = tail_writeback(&spread(m, 12, rate), pd, m, &limits());
        assert_eq!(met_dirty_rate(&even, &spread(m, 12, rate)), 0.0);
        assert_eq!(even.mode, PdflushMode::Background);
    }

    #[test]
    fn every_dirtied_byte_is_written_back_by_pdflush_kswapd_or_the_writers() {
        let m = 24.0 * GIB;
        let pd = 16384.0 / 10_000.0;
        // Uneven nodes: a busy local node, a few spill nodes, idle ones.
        for scale in [0.05, 0.4, 1.0, 2.0, 4.0] {
            let mut lrus = spread(m, 12, 0.0);
            for (j, f) in [(0, 1.0), (1, 0.4), (2, 0.2), (3, 0.1)] {
                lrus[j].inflow = scale * f;
            }
            let rate: f64 = lrus.iter().map(|l| l.inflow).sum();
            let t = tail_writeback(&lrus, pd, m, &limits());
            let pdflush: f64 = lrus
                .iter()
                .zip(&t.met_dirty)
                .map(|(l, f)| l.inflow * (1.0 - f))
                .sum::<f64>()
                - t.writers;
            assert!(pdflush <= pd + 1e-9, "{scale}: pdflush {pdflush}");
            assert!(pdflush >= -1e-12 && t.writers >= 0.0, "{scale}");
            let sum = pdflush + t.writers + met_dirty_rate(&t, &lrus);
            assert!((sum - rate).abs() < 1e-9 * rate, "{scale}: {sum} vs {rate}");
        }
    }

    /// From free memory, nothing is written back or reclaimed before its
    /// phase; every dirtied byte is written back or still dirty, every
    /// allocated one reclaimed or taken free; longer runs approach the
    /// steady state, and the fill never meets dirty pages while free
    /// memory exceeds the background threshold.
    #[test]
    fn a_run_into_free_memory_writes_back_and_reclaims_only_in_its_phases() {
        let l = limits();
        let memory = 24.0 * GIB;
        let rate = 0.426 * GIB / 1e9; // one XFS writer, bytes/ns
        let free = FREE_AT_REMOUNT * memory - 0.01 * memory;
        let c = ColdStart::new(rate, free, memory, &l);
        // Background threshold (10% of 24 GiB) at 0.426 GiB/s: ~5.6 s,
        // before the periodic pass's 32.5 s.
        assert!((c.writeback_from_ns - 2.4 * GIB / rate).abs() < 1e-6 * c.writeback_from_ns);
        // Memory fills long after writeback began: kswapd's first tails
        // are clean.
        assert!(c.reclaim_from_ns > 5.0 * c.writeback_from_ns);
        let mut last = (0.0, 0.0);
        for run_s in [1.0, 5.0, 10.0, 60.0, 120.0, 1000.0] {
            let run = run_s * 1e9;
            let (back, dirty) = c.written_back(rate, run);
            let (rec, taken) = c.reclaimed(rate, run);
            assert!((back + dirty - rate * run).abs() < 1e-6 * rate * run);
            assert!((rec + taken - rate * run).abs() < 1e-6 * rate * run);
            assert!(back >= 0.0 && dirty >= 0.0 && rec >= 0.0 && taken <= free + 1.0);
            if run <= c.writeback_from_ns {
                assert_eq!(back, 0.0);
            }
            if run <= c.reclaim_from_ns {
                assert_eq!(rec, 0.0);
            }
            let shares = (back / (rate * run), rec / (rate * run));
            assert!(shares.0 >= last.0 && shares.1 >= last.1, "{run_s}");
            assert!(shares.1 <= shares.0);
            last = shares;
        }
        assert!(last.0 > 0.99 && last.1 > 0.9);
        // A slow writer: the periodic pass starts writeback first.
        let slow = ColdStart::new(0.01 * GIB / 1e9, free, memory, &l);
        assert_eq!(slow.writeback_from_ns, l.expire_ns + l.writeback_ns / 2.0);
        // Memory already nearly full: reclaim starts before writeback.
        let full = ColdStart::new(rate, 0.05 * memory, memory, &l);
        assert!(full.reclaim_from_ns < full.writeback_from_ns);
    }

    #[test]
    fn ratelimit_follows_set_ratelimit() {
        // 24 GiB of 16 KiB pages on 24 CPUs: 2048, clamped to 4 MiB = 256.
        assert_eq!(ratelimit_pages(24 << 30, 16384, 24), 256);
        assert_eq!(sync_writeback_pages(24 << 30, 16384, 24), 384);
        assert_eq!(ratelimit_pages(1 << 20, 4096, 64), 16);
    }
}
