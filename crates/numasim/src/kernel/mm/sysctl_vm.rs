//! Reclaim, swap, writeback and OOM knobs (`/proc/sys/vm` and the SGI 2.4
//! Altix additions), read and validated in one place ([ALTIX04] B2–B11,
//! [XFS06] B13). Values the papers do not state are chosen here and argued in
//! docs/pagecache.md; each stays a knob.

use crate::error::InputError;
use crate::input::table::TableReader;
use serde_json::json;

/// Which OOM path the kernel has ([ALTIX04] B10, B11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OomKind {
    /// Stock 2.4.21: `out_of_memory()` after `shrink_caches()` failed at every
    /// priority, with its 5-second rule.
    Linux24,
    /// SGI's thread woken by failing swap-outs.
    SwapFailure,
}

/// Whom the OOM killer kills (not stated by ALTIX04; a knob).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OomVictim {
    /// Mainline `badness()`: the task with the most memory (resident + swap).
    Largest,
    /// The task whose allocation is failing (later kernels'
    /// `oom_kill_allocating_task`).
    Allocating,
}

/// LRU lists: one machine-wide set (stock 2.4) or one per node (B2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lru {
    Global,
    PerNode,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VmSysctl {
    /// `toss()` on the allocation path before spilling off-node (B3).
    pub toss: bool,
    /// Global or per-node LRU lists (B2); `toss` implies per-node.
    pub lru: Lru,
    /// The per-node `reclaim_list` of easily freeable page-cache pages (B5).
    pub reclaim_list: bool,
    /// Whether a page that writeback cleaned rejoins the `reclaim_list` (B5:
    /// not stated; default yes, else written pages could never be tossed).
    pub reclaim_list_rejoin: bool,
    /// `toss_fast()`: scan the `reclaim_list` instead of the LRU lists (B6).
    pub toss_fast: bool,
    /// `page_cache_limit`, percent of memory; None = no limit (B7).
    pub page_cache_limit_pct: Option<f64>,
    /// `page_cache_limit_threshold`: trimming starts only when free memory is
    /// below this, percent of memory (B7).
    pub page_cache_limit_threshold_pct: f64,
    /// The writer's sleep when `page_cache_reduce()` fails, ms (B7: 30).
    pub page_cache_throttle_ms: u64,
    /// `vm_swappiness`; None = a 2.4 kernel, which has no such knob (B9).
    pub vm_swappiness: Option<u32>,
    /// `vm.zone_reclaim_mode` bit mask: 1 reclaim locally before going off
    /// node, 2 also write dirty pages, 4 also swap (B13).
    pub zone_reclaim_mode: u32,
    /// `dirty_ratio`: a writer that would push dirty page cache above this
    /// percent of memory waits for writeback (`balance_dirty_pages()`).
    pub dirty_ratio: u32,
    /// `dirty_background_ratio`: above this percent of memory dirty,
    /// `pdflush` writes back in the background (B12).
    pub dirty_background_ratio: u32,
    /// `dirty_expire_centisecs`: the periodic (kupdate) pass writes pages
    /// dirtied longer ago than this (B12).
    pub dirty_expire_centisecs: u64,
    /// `dirty_writeback_centisecs`: the period of that pass (B12).
    pub dirty_writeback_centisecs: u64,
    pub oom: OomKind,
    pub oom_victim: OomVictim,
    /// B11: window over which swap-out successes and attempts are counted, s.
    pub oom_swap_window_s: u64,
    /// B11: successes below this percent of attempts mean swap looks full.
    pub oom_swap_success_pct: f64,
    /// B11: the OOM thread's wait before it kills, s.
    pub oom_wait_s: u64,
    /// B11: attempts in a window must exceed this (not stated; a knob).
    pub oom_swap_attempts_min: u64,
}

impl Default for VmSysctl {
    fn default() -> Self {
        VmSysctl {
            toss: false,
            lru: Lru::Global,
            reclaim_list: false,
            reclaim_list_rejoin: true,
            toss_fast: false,
            page_cache_limit_pct: None,
            page_cache_limit_threshold_pct: 10.0,
            page_cache_throttle_ms: 30,
            vm_swappiness: None,
            zone_reclaim_mode: 0,
            // mm/page-writeback.c (2.6.15): vm_dirty_ratio = 40.
            dirty_ratio: 40,
            // mm/page-writeback.c (2.6.15): dirty_background_ratio = 10,
            // dirty_expire_centisecs = 30 s, dirty_writeback_centisecs = 5 s.
            dirty_background_ratio: 10,
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
            oom: OomKind::Linux24,
            oom_victim: OomVictim::Largest,
            oom_swap_window_s: 10,
            oom_swap_success_pct: 1.0,
            oom_wait_s: 10,
            // A full window at SWAP_CLUSTER_MAX (32) pages per failed reclaim
            // call, one call per 10 ms tick: 1,000 calls; docs/pagecache.md.
            oom_swap_attempts_min: 32_000,
        }
    }
}

const OOM: &[(&str, OomKind)] = &[
    ("2.4", OomKind::Linux24),
    ("swap-failure", OomKind::SwapFailure),
];
const VICTIM: &[(&str, OomVictim)] = &[
    ("largest", OomVictim::Largest),
    ("allocating", OomVictim::Allocating),
];
const LRU: &[(&str, Lru)] = &[("global", Lru::Global), ("per-node", Lru::PerNode)];

fn name_of<T: PartialEq + Copy>(table: &[(&'static str, T)], v: T) -> &'static str {
    table
        .iter()
        .find(|(_, t)| *t == v)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

impl VmSysctl {
    /// The knob's value as a record's case key shows it.
    pub fn knob_json(&self, knob: &str) -> Option<serde_json::Value> {
        Some(match knob {
            "toss" => json!(u8::from(self.toss)),
            "lru" => json!(name_of(LRU, self.lru)),
            "reclaim_list" => json!(u8::from(self.reclaim_list)),
            "reclaim_list_rejoin" => json!(u8::from(self.reclaim_list_rejoin)),
            "toss_fast" => json!(u8::from(self.toss_fast)),
            "page_cache_limit" => self
                .page_cache_limit_pct
                .map_or(json!("none"), |v| json!(v)),
            "page_cache_limit_threshold" => json!(self.page_cache_limit_threshold_pct),
            "page_cache_throttle_ms" => json!(self.page_cache_throttle_ms),
            "vm_swappiness" => self.vm_swappiness.map_or(json!("none"), |v| json!(v)),
            "zone_reclaim_mode" => json!(self.zone_reclaim_mode),
            "dirty_ratio" => json!(self.dirty_ratio),
            "dirty_background_ratio" => json!(self.dirty_background_ratio),
            "dirty_expire_centisecs" => json!(self.dirty_expire_centisecs),
            "dirty_writeback_centisecs" => json!(self.dirty_writeback_centisecs),
            "oom" => json!(name_of(OOM, self.oom)),
            "oom_victim" => json!(name_of(VICTIM, self.oom_victim)),
            "oom_swap_window_s" => json!(self.oom_swap_window_s),
            "oom_swap_success_pct" => json!(self.oom_swap_success_pct),
            "oom_wait_s" => json!(self.oom_wait_s),
            "oom_swap_attempts_min" => json!(self.oom_swap_attempts_min),
            _ => return None,
        })
    }

    /// Read these knobs from the `[kernel]` table.
    pub fn read(r: &mut TableReader) -> Result<VmSysctl, InputError> {
        let mut v = VmSysctl::default();
        if let Some(b) = r.bool("toss")? {
            v.toss = b;
        }
        v.lru = r
            .choice("lru", LRU)?
            .unwrap_or(if v.toss { Lru::PerNode } else { v.lru });
        if v.toss && v.lru == Lru::Global {
            return Err(InputError::at(
                r.key("lru"),
                "`toss = 1` needs per-node LRU lists (toss scans one node's lists); \
                 set lru = \"per-node\" or leave it out",
            ));
        }
        if let Some(b) = r.bool("reclaim_list")? {
            v.reclaim_list = b;
        }
        if let Some(b) = r.bool("reclaim_list_rejoin")? {
            v.reclaim_list_rejoin = b;
        }
        if let Some(b) = r.bool("toss_fast")? {
            v.toss_fast = b;
        }
        if v.toss_fast && !v.reclaim_list {
            return Err(InputError::at(
                r.key("toss_fast"),
                "`toss_fast = 1` scans the reclaim_list: set reclaim_list = 1 too",
            ));
        }
        match r.raw("page_cache_limit") {
            None => {}
            Some(toml::Value::String(s)) if s == "none" => v.page_cache_limit_pct = None,
            Some(_) => v.page_cache_limit_pct = Some(percent(r, "page_cache_limit")?),
        }
        if r.has("page_cache_limit_threshold") {
            v.page_cache_limit_threshold_pct = percent(r, "page_cache_limit_threshold")?;
        }
        if v.page_cache_limit_pct.is_some() && !v.toss_fast {
            return Err(InputError::at(
                r.key("page_cache_limit"),
                "page_cache_reduce() trims the cache with toss_fast(): set toss_fast = 1 \
                 and reclaim_list = 1",
            ));
        }
        if let Some(ms) = r.u64("page_cache_throttle_ms")? {
            if !(1..=60_000).contains(&ms) {
                return Err(InputError::at(
                    r.key("page_cache_throttle_ms"),
                    format!("{ms}: allowed 1..60000 ms"),
                ));
            }
            v.page_cache_throttle_ms = ms;
        }
        match r.raw("vm_swappiness") {
            None => {}
            Some(toml::Value::String(s)) if s == "none" => v.vm_swappiness = None,
            Some(_) => {
                let s = r.u64("vm_swappiness")?.unwrap_or(60);
                if s > 100 {
                    return Err(InputError::at(
                        r.key("vm_swappiness"),
                        format!("{s}: allowed 0..100, or \"none\" for a 2.4 kernel"),
                    ));
                }
                v.vm_swappiness = Some(s as u32);
            }
        }
        if let Some(m) = r.u64("zone_reclaim_mode")? {
            if m > 7 {
                return Err(InputError::at(
                    r.key("zone_reclaim_mode"),
                    format!("{m}: a bit mask of 1 (reclaim), 2 (write dirty), 4 (swap): 0..7"),
                ));
            }
            v.zone_reclaim_mode = m as u32;
        }
        if let Some(d) = r.u64("dirty_ratio")? {
            if !(1..=100).contains(&d) {
                return Err(InputError::at(
                    r.key("dirty_ratio"),
                    format!("{d}: allowed 1..100 (percent of memory)"),
                ));
            }
            v.dirty_ratio = d as u32;
        }
        if let Some(d) = r.u64("dirty_background_ratio")? {
            if !(1..=100).contains(&d) {
                return Err(InputError::at(
                    r.key("dirty_background_ratio"),
                    format!("{d}: allowed 1..100 (percent of memory)"),
                ));
            }
            v.dirty_background_ratio = d as u32;
        }
        // 0 disables the periodic pass in the kernel; here it must run.
        for (key, slot) in [
            ("dirty_expire_centisecs", &mut v.dirty_expire_centisecs),
            (
                "dirty_writeback_centisecs",
                &mut v.dirty_writeback_centisecs,
            ),
        ] {
            if let Some(c) = r.u64(key)? {
                if !(1..=360_000).contains(&c) {
                    return Err(InputError::at(
                        r.key(key),
                        format!("{c}: allowed 1..360000 centiseconds (up to an hour)"),
                    ));
                }
                *slot = c;
            }
        }
        v.oom = r.choice("oom", OOM)?.unwrap_or(v.oom);
        v.oom_victim = r.choice("oom_victim", VICTIM)?.unwrap_or(v.oom_victim);
        for (key, slot) in [
            ("oom_swap_window_s", &mut v.oom_swap_window_s),
            ("oom_wait_s", &mut v.oom_wait_s),
        ] {
            if let Some(s) = r.u64(key)? {
                if !(1..=3600).contains(&s) {
                    return Err(InputError::at(
                        r.key(key),
                        format!("{s}: allowed 1..3600 s"),
                    ));
                }
                *slot = s;
            }
        }
        if r.has("oom_swap_success_pct") {
            v.oom_swap_success_pct = percent(r, "oom_swap_success_pct")?;
        }
        v.oom_swap_attempts_min = r
            .u64("oom_swap_attempts_min")?
            .unwrap_or(v.oom_swap_attempts_min);
        Ok(v)
    }
}

/// A percentage 0..=100 (negative and above-100 values are refused, not clamped).
fn percent(r: &mut TableReader, key: &'static str) -> Result<f64, InputError> {
    let x = r.f64(key)?.unwrap_or(0.0);
    if !(0.0..=100.0).contains(&x) || x.is_nan() {
        return Err(InputError::at(
            r.key(key),
            format!("{x}: a percentage of memory, allowed 0..100"),
        ));
    }
    Ok(x)
}
