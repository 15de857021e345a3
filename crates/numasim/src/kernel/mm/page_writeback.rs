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
//! tail of the LRU, that is when pages are written back later than they
//! reach the tail. One writer's pages spread over every node (A3), so the
//! LRU tail is `memory / rate` old, while a page is written back at most
//! `dirty threshold / rate` after it was dirtied, and the dirty threshold
//! is at most half of memory: in this steady state kswapd only reclaims
//! clean pages, whatever the tunables.

use crate::kernel::sysctl_vm::VmSysctl;

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
    /// pdflush runs all the time and the writers write back the rest.
    Saturated,
}

/// Who writes back what, per ns, in the steady state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WritebackSplit {
    /// Bytes/ns the writers dirty, after their own writeback.
    pub rate: f64,
    /// Bytes/ns pdflush writes back.
    pub pdflush: f64,
    /// Bytes/ns the writers write back in `balance_dirty_pages()`.
    pub writers: f64,
    /// How long after being dirtied a page is written back, ns.
    pub dirty_age_ns: f64,
    pub mode: PdflushMode,
}

/// The steady state of writers that together dirty `demand` bytes/ns when
/// nothing throttles them, on `writer_cpus` CPUs, with pdflush writing a
/// page of `page` bytes in `writeback_page_ns`; `io_less`: throttled
/// writers sleep instead of writing back (3.2 on).
pub fn steady_state(
    demand: f64,
    writer_cpus: f64,
    memory: f64,
    page: u64,
    writeback_page_ns: f64,
    limits: &DirtyLimits,
    io_less: bool,
) -> WritebackSplit {
    let per_byte = writeback_page_ns / page as f64;
    let pdflush_max = 1.0 / per_byte.max(1e-12);
    if demand <= pdflush_max {
        let (dirty_age_ns, mode) = dirty_age(demand, pdflush_max, memory, limits);
        return WritebackSplit {
            rate: demand,
            pdflush: demand,
            writers: 0.0,
            dirty_age_ns,
            mode,
        };
    }
    // The writers' CPU time is shared between dirtying (all of it at
    // `demand`) and writing back what pdflush cannot:
    // rate × (n / demand + per_byte) = n + pdflush_max × per_byte.
    // IO-less, they wait for the flusher instead.
    let n = writer_cpus.max(1.0);
    let rate = if io_less {
        pdflush_max
    } else {
        ((n + 1.0) / (n / demand + per_byte)).min(demand)
    };
    let (dirty_age_ns, mode) = dirty_age(rate, pdflush_max, memory, limits);
    WritebackSplit {
        rate,
        pdflush: pdflush_max,
        writers: rate - pdflush_max,
        dirty_age_ns,
        mode,
    }
}

/// How old a page is when written back, and how pdflush runs, when pages
/// are dirtied at `rate` bytes/ns and pdflush can write `pdflush_max`.
pub fn dirty_age(
    rate: f64,
    pdflush_max: f64,
    memory: f64,
    limits: &DirtyLimits,
) -> (f64, PdflushMode) {
    let (background, dirty) = limits.thresholds(memory);
    let rate = rate.max(1e-12);
    if rate > pdflush_max {
        // The dirty pages stand at the dirty threshold.
        return (dirty / rate, PdflushMode::Saturated);
    }
    // The periodic pass writes a page on average half a period after it
    // expires; if the dirty pages would pass the background threshold
    // before that, background writeout takes them younger.
    let kupdate_age = limits.expire_ns + limits.writeback_ns / 2.0;
    let background_age = background / rate;
    if kupdate_age <= background_age {
        (kupdate_age, PdflushMode::Kupdate)
    } else {
        (background_age, PdflushMode::Background)
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

    #[test]
    fn a_slow_writer_is_left_to_the_periodic_pass_a_fast_one_to_background_writeout() {
        // 24 GiB: background at 2.4 GiB; 30 s + 2.5 s of dirtying must stay
        // under it for kupdate alone to write back.
        let m = 24.0 * GIB;
        let slow = steady_state(GIB / 1e9 * 0.05, 1.0, m, 16384, 10_000.0, &limits(), false);
        let fast = steady_state(GIB / 1e9 * 0.5, 1.0, m, 16384, 10_000.0, &limits(), false);
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
        let s = steady_state(2.0 * pd, 4.0, m, page, 10_000.0, &limits(), false);
        assert_eq!(s.mode, PdflushMode::Saturated);
        assert!(s.rate < 2.0 * pd && s.rate > pd);
        // Conservation: everything dirtied is written back by someone.
        assert!((s.pdflush + s.writers - s.rate).abs() < 1e-12);
    }

    #[test]
    fn io_less_throttling_leaves_the_rate_to_the_flusher() {
        let m = 24.0 * GIB;
        let page = 16384;
        let pd = page as f64 / 10_000.0;
        let s = steady_state(2.0 * pd, 4.0, m, page, 10_000.0, &limits(), true);
        assert_eq!((s.rate, s.writers), (pd, 0.0));
        let old = steady_state(2.0 * pd, 4.0, m, page, 10_000.0, &limits(), false);
        assert!(old.rate > s.rate);
    }

    #[test]
    fn pages_are_written_back_before_they_reach_the_lru_tail() {
        // The claim of the module docs, over tunables and rates.
        for (d, bg) in [(40, 10), (100, 100), (5, 1), (50, 49)] {
            let mut l = limits();
            l.dirty_ratio = d;
            l.background_ratio = bg;
            for rate in [0.01, 0.1, 0.5, 1.0, 3.0] {
                let m = 24.0 * GIB;
                let s = steady_state(rate, 4.0, m, 16384, 10_000.0, &l, false);
                let lru_age = m / s.rate;
                assert!(s.dirty_age_ns < lru_age, "{d} {bg} {rate}");
            }
        }
    }

    #[test]
    fn ratelimit_follows_set_ratelimit() {
        // 24 GiB of 16 KiB pages on 24 CPUs: 2048, clamped to 4 MiB = 256.
        assert_eq!(ratelimit_pages(24 << 30, 16384, 24), 256);
        assert_eq!(sync_writeback_pages(24 << 30, 16384, 24), 384);
        assert_eq!(ratelimit_pages(1 << 20, 4096, 64), 16);
    }
}
