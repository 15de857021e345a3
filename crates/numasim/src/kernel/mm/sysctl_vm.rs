//! Reclaim, swap, writeback and OOM knobs (`/proc/sys/vm` and the SGI 2.4
//! Altix additions), read and validated in one place ([ALTIX04] B2–B11,
//! [XFS06] B13). Values the papers do not state are chosen here and argued in
//! docs/pagecache.md; each stays a knob.

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::kernel::knobs::{self, bool_knob, Allowed, Knob};
use crate::machine::Machine;
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
        knobs::json_of(KNOBS, self, knob)
    }

    /// Read these knobs from the `[kernel]` table.
    pub fn read(r: &mut TableReader, machine: &Machine) -> Result<VmSysctl, InputError> {
        let mut v = VmSysctl::default();
        knobs::read_all(KNOBS, r, &mut v, machine)?;
        Ok(v)
    }
}

/// A whole-number knob of `VmSysctl` in `$lo..=$hi`, refused outside with
/// "N: allowed LO..HI" and the unit `$unit`.
macro_rules! ranged {
    ($field:ident: $ty:ty, $lo:literal..=$hi:literal, $unit:literal, default: $default:literal, doc: $doc:literal) => {
        Knob::<VmSysctl> {
            name: stringify!($field),
            allowed: Allowed::Text(concat!(stringify!($lo), "..", stringify!($hi), $unit)),
            default: $default,
            doc: $doc,
            read: |r, v, _| {
                let key = stringify!($field);
                if let Some(x) = r.u64(key)? {
                    if !($lo..=$hi).contains(&x) {
                        return Err(InputError::at(
                            r.key(key),
                            format!(
                                concat!(
                                    "{}: allowed ",
                                    stringify!($lo),
                                    "..",
                                    stringify!($hi),
                                    $unit
                                ),
                                x
                            ),
                        ));
                    }
                    v.$field = x as $ty;
                }
                Ok(())
            },
            json: |v| json!(v.$field),
        }
    };
}

/// The reclaim, swap, writeback and OOM knobs, declared once
/// (kernel/knobs.rs); read in this order, each checked against those
/// before it. docs/pagecache.md argues the values the papers do not state.
pub const KNOBS: &[Knob<VmSysctl>] = &[
    bool_knob!(VmSysctl, toss,
        default: "0",
        doc: "SGI's toss(): free the node's clean page cache on the allocation path before spilling off-node (B3)"),
    Knob {
        name: "lru",
        allowed: Allowed::Names(|| LRU.iter().map(|(n, _)| *n).collect()),
        default: "`global`; `per-node` with `toss = 1`",
        doc: "one machine-wide set of LRU lists (stock 2.4) or one per node (B2)",
        read: |r, v, _| {
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
            Ok(())
        },
        json: |v| json!(name_of(LRU, v.lru)),
    },
    bool_knob!(VmSysctl, reclaim_list,
        default: "0",
        doc: "the per-node reclaim_list of easily freeable page-cache pages (B5)"),
    bool_knob!(VmSysctl, reclaim_list_rejoin,
        default: "1",
        doc: "a page writeback cleaned rejoins the reclaim_list (B5: not stated; else written pages could never be tossed)"),
    Knob {
        name: "toss_fast",
        allowed: Allowed::Bool,
        default: "0",
        doc: "toss_fast(): scan the reclaim_list instead of the LRU lists (B6); needs `reclaim_list = 1`",
        read: |r, v, _| {
            if let Some(b) = r.bool("toss_fast")? {
                v.toss_fast = b;
            }
            if v.toss_fast && !v.reclaim_list {
                return Err(InputError::at(
                    r.key("toss_fast"),
                    "`toss_fast = 1` scans the reclaim_list: set reclaim_list = 1 too",
                ));
            }
            Ok(())
        },
        json: |v| json!(u8::from(v.toss_fast)),
    },
    Knob {
        name: "page_cache_limit",
        allowed: Allowed::Text("0..100 (percent of memory) or `\"none\"`"),
        default: "`none`",
        doc: "page_cache_limit (B7): trim the page cache above this share of memory with toss_fast()",
        read: |r, v, _| {
            match r.raw("page_cache_limit") {
                None => {}
                Some(toml::Value::String(s)) if s == "none" => v.page_cache_limit_pct = None,
                Some(_) => v.page_cache_limit_pct = Some(percent(r, "page_cache_limit")?),
            }
            Ok(())
        },
        json: |v| v.page_cache_limit_pct.map_or(json!("none"), |x| json!(x)),
    },
    Knob {
        name: "page_cache_limit_threshold",
        allowed: Allowed::Text("0..100 (percent of memory)"),
        default: "10",
        doc: "trimming starts only when free memory is below this share (B7)",
        read: |r, v, _| {
            if r.raw("page_cache_limit_threshold").is_some() {
                v.page_cache_limit_threshold_pct = percent(r, "page_cache_limit_threshold")?;
            }
            if v.page_cache_limit_pct.is_some() && !v.toss_fast {
                return Err(InputError::at(
                    r.key("page_cache_limit"),
                    "page_cache_reduce() trims the cache with toss_fast(): set toss_fast = 1 \
                     and reclaim_list = 1",
                ));
            }
            Ok(())
        },
        json: |v| json!(v.page_cache_limit_threshold_pct),
    },
    ranged!(page_cache_throttle_ms: u64, 1..=60000, " ms",
        default: "30",
        doc: "the writer's sleep when page_cache_reduce() fails (B7)"),
    Knob {
        name: "vm_swappiness",
        allowed: Allowed::Text("0..100, or `\"none\"` for a 2.4 kernel"),
        default: "`none` (2.4 has no such knob)",
        doc: "vm_swappiness (B9): how readily reclaim swaps anonymous memory instead of dropping cache",
        read: |r, v, _| {
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
            Ok(())
        },
        json: |v| v.vm_swappiness.map_or(json!("none"), |x| json!(x)),
    },
    Knob {
        name: "zone_reclaim_mode",
        allowed: Allowed::Text("0..7 (bit mask: 1 reclaim, 2 write dirty, 4 swap)"),
        default: "0; 1 on 2.6.16 and 2.6.17 (B13)",
        doc: "vm.zone_reclaim_mode: reclaim on the local node before going off node (B13)",
        read: |r, v, _| {
            if let Some(m) = r.u64("zone_reclaim_mode")? {
                if m > 7 {
                    return Err(InputError::at(
                        r.key("zone_reclaim_mode"),
                        format!("{m}: a bit mask of 1 (reclaim), 2 (write dirty), 4 (swap): 0..7"),
                    ));
                }
                v.zone_reclaim_mode = m as u32;
            }
            Ok(())
        },
        json: |v| json!(v.zone_reclaim_mode),
    },
    ranged!(dirty_ratio: u32, 1..=100, " (percent of memory)",
        default: "40 (mm/page-writeback.c, 2.6.15)",
        doc: "a writer that would push dirty page cache above this share waits for writeback (balance_dirty_pages())"),
    ranged!(dirty_background_ratio: u32, 1..=100, " (percent of memory)",
        default: "10 (2.6.15)",
        doc: "above this share dirty, pdflush writes back in the background (B12)"),
    // 0 disables the periodic pass in the kernel; here it must run.
    ranged!(dirty_expire_centisecs: u64, 1..=360000, " centiseconds (up to an hour)",
        default: "3000 (2.6.15)",
        doc: "the periodic (kupdate) pass writes pages dirtied longer ago than this (B12)"),
    ranged!(dirty_writeback_centisecs: u64, 1..=360000, " centiseconds (up to an hour)",
        default: "500 (2.6.15)",
        doc: "the period of that pass (B12)"),
    Knob {
        name: "oom",
        allowed: Allowed::Names(|| OOM.iter().map(|(n, _)| *n).collect()),
        default: "`2.4`",
        doc: "the OOM path: stock 2.4.21's out_of_memory() or SGI's thread woken by failing swap-outs (B10, B11)",
        read: |r, v, _| {
            v.oom = r.choice("oom", OOM)?.unwrap_or(v.oom);
            Ok(())
        },
        json: |v| json!(name_of(OOM, v.oom)),
    },
    Knob {
        name: "oom_victim",
        allowed: Allowed::Names(|| VICTIM.iter().map(|(n, _)| *n).collect()),
        default: "`largest`",
        doc: "whom the OOM killer kills: badness()'s largest task or the allocating one (not stated by [ALTIX04])",
        read: |r, v, _| {
            v.oom_victim = r.choice("oom_victim", VICTIM)?.unwrap_or(v.oom_victim);
            Ok(())
        },
        json: |v| json!(name_of(VICTIM, v.oom_victim)),
    },
    ranged!(oom_swap_window_s: u64, 1..=3600, " s",
        default: "10",
        doc: "B11: window over which swap-out successes and attempts are counted"),
    ranged!(oom_wait_s: u64, 1..=3600, " s",
        default: "10",
        doc: "B11: the OOM thread's wait before it kills"),
    Knob {
        name: "oom_swap_success_pct",
        allowed: Allowed::Text("0..100 (percent)"),
        default: "1",
        doc: "B11: successes below this share of attempts mean swap looks full",
        read: |r, v, _| {
            if r.raw("oom_swap_success_pct").is_some() {
                v.oom_swap_success_pct = percent(r, "oom_swap_success_pct")?;
            }
            Ok(())
        },
        json: |v| json!(v.oom_swap_success_pct),
    },
    Knob {
        name: "oom_swap_attempts_min",
        allowed: Allowed::Text("a whole number"),
        default: "32000",
        doc: "B11: attempts in a window must exceed this (not stated; a full window of SWAP_CLUSTER_MAX-page calls, docs/pagecache.md)",
        read: |r, v, _| {
            v.oom_swap_attempts_min = r
                .u64("oom_swap_attempts_min")?
                .unwrap_or(v.oom_swap_attempts_min);
            Ok(())
        },
        json: |v| json!(v.oom_swap_attempts_min),
    },
];

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
