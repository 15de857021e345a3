//! What memory access costs one core: the cache hierarchy (L1, the L2
//! stream prefetcher, the last-level cache, DRAM), address translation
//! (kernel/mm/tlb.rs) and the tick's noise ([BGP-BIGMEM] D1–D5, D10, D14).
//! Every figure comes from the machine's `[hierarchy]`, `[tlb]`,
//! `[syscall]` and `[noise]` tables and the kernel's knobs; docs/tlb.md
//! gives the formulas and the calibration.

use crate::engine::rng::SimRng;
use crate::kernel::mm::bigmem::TlbPartition;
use crate::kernel::mm::flavour::{Flavour, L2Prefetch, SyscallModel};
use crate::kernel::mm::tlb::{self, BufferKind};
use crate::kernel::KernelConfig;
use crate::machine::{Access, Machine};

/// How a buffer is translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// CNK's static offset mapping: no TLB misses (D1).
    Static,
    /// Big Memory's pinned 256 MB entries (D10).
    Bigmem,
    /// Paged memory with this page size.
    Paged(u64),
}

impl Mapping {
    /// A buffer Big Memory cannot hold is refused before the cost model
    /// runs (`membench` checks `tlb::buffer_in_bigmem`), so here it is paged.
    pub fn of(
        m: &Machine,
        kernel: &KernelConfig,
        zcb: bool,
        kind: BufferKind,
        bytes: u64,
    ) -> Mapping {
        if kernel.mm.flavour == Flavour::Cnk {
            Mapping::Static
        } else if tlb::buffer_in_bigmem(m, kernel, zcb, kind, bytes).unwrap_or(false) {
            Mapping::Bigmem
        } else {
            Mapping::Paged(kernel.mm.page_size)
        }
    }
}

/// What an interruption (a tick, a switch to another task) disturbs in
/// the program it interrupts (D2, D3, D5, D10).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Disturbance {
    /// Probability that an L1 line displaced now would have been hit later.
    pub l1_reuse: f64,
    /// Prefetch streams running; each restarts empty afterwards.
    pub streams: f64,
    /// Paged TLB entries that were hitting and must be refilled after a
    /// switch flushes the paged partition (D2).
    pub paged_refills: f64,
    /// Cost of one such refill, ns.
    pub refill_ns: f64,
}

/// Text and stack pages of a benchmark's loop (the workloads' default
/// `hot_pages`): what a flush costs a loop whose data need no paged entry.
pub const LOOP_PAGES: f64 = 2.0;

/// Time one prefetch stream loses when it restarts empty: its next line
/// costs a memory round trip instead of one line time at the streaming
/// rate (the lines in flight are what hid the latency).
pub fn prefetch_restart_ns(m: &Machine) -> f64 {
    let line_ns = m.cpu.cache_line as f64 / m.hierarchy.stream_mbps * 1e3;
    (memory_ns(m) - line_ns).max(0.0)
}

/// One tick's cost to the interrupted program, ns (D5): the handler, the
/// L1 lines it evicted that the program reuses, its prefetch streams.
pub fn tick_cost_ns(m: &Machine, d: &Disturbance) -> f64 {
    m.noise.tick_handler_ns
        + m.noise.tick_l1_lines * d.l1_reuse * m.llc_latency_ns()
        + d.streams * prefetch_restart_ns(m)
}

/// Involuntary switch-outs of the running program per second (D5, D10):
/// kernel threads and daemons woken by timers on its core preempt it. CNK
/// runs one thread per core and nothing else; `bigmem_quiet_irqs` keeps
/// the nonessential interrupts that deliver those wakeups off while the
/// compute process runs (D13).
pub fn switches_per_s(m: &Machine, k: &KernelConfig) -> f64 {
    if k.mm.flavour == Flavour::Cnk || k.mm.bigmem_quiet_irqs {
        0.0
    } else {
        m.noise.daemon_wakeups_per_s
    }
}

/// One involuntary switch out and back, ns: the other task's time, the
/// L1 lines it displaced that the program reuses, the prefetch streams
/// restarted, and the TLB. Paged Linux flushes the paged partition at the
/// switch (D2), so the entries that were hitting are refilled; Big Memory
/// removes its pinned entries (about one miss, D10) and reinstalls them
/// with one miss at the first access after the schedule-in.
pub fn switch_cost_ns(m: &Machine, map: Mapping, d: &Disturbance) -> f64 {
    let tlb = match map {
        Mapping::Static => 0.0,
        Mapping::Bigmem => 2.0 * m.tlb.miss_ns,
        Mapping::Paged(_) => d.paged_refills * d.refill_ns,
    };
    m.noise.switch_ns
        + m.noise.switch_l1_lines * d.l1_reuse * m.llc_latency_ns()
        + d.streams * prefetch_restart_ns(m)
        + tlb
}

/// Fraction of time interruptions take from a program: ticks and
/// involuntary switches, both priced from the machine's `[noise]` table.
pub fn interruption_fraction(m: &Machine, k: &KernelConfig, map: Mapping, d: &Disturbance) -> f64 {
    (k.mm.hz as f64 * tick_cost_ns(m, d) + switches_per_s(m, k) * switch_cost_ns(m, map, d)) / 1e9
}

/// Memory behind the last-level cache: its lookup plus DRAM, ns.
pub fn memory_ns(m: &Machine) -> f64 {
    m.llc_latency_ns() + m.memory.latency_ns
}

/// Where the lines of a buffer of `bytes`, used uniformly over and over,
/// are found: for each cache, smallest first, the share of the buffer it
/// holds beyond the smaller ones, with the cache; the rest is in memory.
/// A cache keeps `capacity / bytes` of a larger buffer (the last level
/// only its `llc_reach`): the linear hit model random reads already use
/// (docs/tlb.md), applied to every level.
pub fn residency(m: &Machine, bytes: u64) -> (Vec<(f64, &crate::machine::Cache)>, f64) {
    residency_of(m, Access::Random, bytes, m.page_size)
}

/// [`residency`] for a buffer walked as `access` with pages of `page`
/// bytes: where the machine gives each cache's reach (`[hierarchy]
/// reach`), the share follows the pattern (machine/hierarchy.rs
/// `reach_hits`: a cyclic walk past an LRU-like cache misses it); else
/// the capacity rule, for every pattern.
pub fn residency_of(
    m: &Machine,
    access: Access,
    bytes: u64,
    page: u64,
) -> (Vec<(f64, &crate::machine::Cache)>, f64) {
    let mut held = 0.0;
    let caches = cache_capacities(m);
    let hits = m.reach_hits(access, bytes, page);
    let mut out = Vec::with_capacity(caches.len());
    for (i, (cap, c)) in caches.into_iter().enumerate() {
        let h = match &hits {
            Some(v) => v[i],
            None => (cap as f64 / bytes.max(1) as f64).min(1.0),
        }
        .max(held);
        out.push((h - held, c));
        held = h;
    }
    (out, 1.0 - held)
}

/// A load's mean latency over a [`residency_of`]: each cache's share at
/// its latency, the rest at memory's.
fn served_ns(m: &Machine, shares: &[(f64, &crate::machine::Cache)], mem: f64) -> f64 {
    let cycle = m.cycle_ns();
    let hit: f64 = shares
        .iter()
        .map(|(share, c)| share * c.latency_cycles * cycle)
        .sum();
    hit + mem * memory_ns(m)
}

/// The caches smallest first (by level, then size), each with the bytes
/// of one core's buffer it can hold: its size, the last level only its
/// `llc_reach`.
pub fn cache_capacities(m: &Machine) -> Vec<(u64, &crate::machine::Cache)> {
    let mut caches: Vec<&crate::machine::Cache> = m.cpu.caches.iter().collect();
    caches.sort_by_key(|c| (c.level, c.size));
    let last = caches.len().saturating_sub(1);
    caches
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let cap = if i == last {
                c.size.min(m.hierarchy.llc_reach)
            } else {
                c.size
            };
            (cap, c)
        })
        .collect()
}

/// Expected latency of loading one page-table line that is referenced
/// `pte_rate` times per access, spread over `pte_lines` lines, while the
/// program reads `data_lines` lines uniformly at random: each cache keeps
/// lines by reference rate (Che's characteristic-time approximation of
/// LRU), so hot page-table lines stay cached and cold ones do not.
fn table_line_ns(m: &Machine, data_lines: f64, pte_lines: f64, pte_rate: f64) -> f64 {
    let mut caches: Vec<(f64, f64)> = m
        .cpu
        .caches
        .iter()
        .map(|c| (c.size as f64, c.latency_cycles * m.cycle_ns()))
        .collect();
    caches.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let Some(last) = caches.last_mut() {
        last.0 = last.0.min(m.hierarchy.llc_reach as f64);
    }
    let line = m.cpu.cache_line as f64;
    let rd = 1.0 / data_lines.max(1.0);
    let rp = pte_rate / pte_lines.max(1.0);
    let mut ns = 0.0;
    let mut covered = 0.0;
    for &(size, lat) in &caches {
        let cap = size / line;
        let hit = if data_lines + pte_lines <= cap {
            1.0
        } else {
            // Solve N_d(1-e^{-rd T}) + N_p(1-e^{-rp T}) = C for T.
            let occ =
                |t: f64| data_lines * (1.0 - (-rd * t).exp()) + pte_lines * (1.0 - (-rp * t).exp());
            let (mut lo, mut hi) = (0.0f64, 1.0f64);
            while occ(hi) < cap && hi < 1e30 {
                hi *= 2.0;
            }
            for _ in 0..100 {
                let mid = 0.5 * (lo + hi);
                if occ(mid) < cap {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            1.0 - (-rp * lo).exp()
        };
        let hit = hit.max(covered);
        ns += (hit - covered) * lat;
        covered = hit;
    }
    ns + (1.0 - covered) * memory_ns(m)
}

/// How the leaf page-table entries of the missing pages are found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leaf {
    /// Misses on random pages: `pte_lines` page-table lines, referenced
    /// `miss_rate` times per access, compete with `data_lines` data lines.
    Random {
        data_lines: f64,
        pte_lines: f64,
        miss_rate: f64,
    },
    /// Misses on successive pages of a stream.
    Sequential,
    /// Misses on successive pages of a stream whose page-table lines are
    /// found `line_ns` away: a leaf line is reused once a pass, as the
    /// stream's own lines are, so it lives where they do, and no
    /// prefetcher fetches it ahead (the walker loads it on demand).
    StreamLeaf { line_ns: f64 },
}

impl Leaf {
    /// Random access over `bytes` with pages of `page`.
    pub fn random(m: &Machine, bytes: u64, page: u64, miss_rate: f64) -> Leaf {
        let line = m.cpu.cache_line as f64;
        Leaf::Random {
            data_lines: bytes as f64 / line,
            pte_lines: (bytes as f64 / page as f64 * m.hierarchy.pte_bytes as f64 / line).max(1.0),
            miss_rate,
        }
    }
}

/// Cost of one miss of the paged partition, ns: the refill (trap and
/// handler, or the walker's fixed cost), the leaf page-table load, the
/// upper levels (cached: L1) except those the page-structure caches hold
/// (`hierarchy.walk_cache_levels`: their entries come with the walk's
/// start, in `miss_ns`), and refetching the L1 lines the miss evicted
/// when they are reused (`l1_reuse`).
pub fn miss_cost_ns(m: &Machine, page: u64, leaf: Leaf, l1_reuse: f64) -> f64 {
    let levels = tlb::walk_levels(m, page);
    let upper = levels
        .saturating_sub(1)
        .saturating_sub(m.hierarchy.walk_cache_levels);
    let l1 = m.cache_latency_ns(1).unwrap_or(0.0);
    let line = m.cpu.cache_line as f64;
    let pte = m.hierarchy.pte_bytes as f64;
    let leaf = match leaf {
        Leaf::Random {
            data_lines,
            pte_lines,
            miss_rate,
        } => table_line_ns(m, data_lines, pte_lines, miss_rate),
        Leaf::Sequential => {
            // Sequential pages: a new page-table line every line/pte pages.
            let f = (pte / line).min(1.0);
            f * m.llc_latency_ns() + (1.0 - f) * l1
        }
        Leaf::StreamLeaf { line_ns } => {
            let f = (pte / line).min(1.0);
            f * line_ns + (1.0 - f) * l1
        }
    };
    m.tlb.miss_ns + leaf + upper as f64 * l1 + m.tlb.miss_l1_lines * l1_reuse * m.llc_latency_ns()
}

/// What the first-level data TLB adds to a load at random over `bytes`,
/// ns (`[hierarchy] l1_tlb_entries`, `stlb_hit_ns`): the share of loads
/// whose page the first level lacks (its entries over the buffer's
/// pages, the closed random rate) but the second level holds (less the
/// `walk_rate` that miss both: their lookup is inside the walk's price)
/// pays the second level's lookup. The first level's pages are the
/// page or, where smaller, the host's frame: a guest's huge page on
/// 4 KiB host frames takes a 4 KiB entry (a nested walk's combined
/// entry is the smaller of the two pages: AMD64 APM Vol. 2, "Nested
/// Paging").
/// 0 without a first level (every preset), and for a mapping that
/// takes no TLB misses (CNK's static map, Big Memory's pinned entries).
pub fn stlb_hit_ns(m: &Machine, map: Mapping, bytes: u64, walk_rate: f64) -> f64 {
    let h = &m.hierarchy;
    let page = match map {
        Mapping::Paged(page) if h.l1_tlb_entries > 0 => page,
        _ => return 0.0,
    };
    let unit = match h.host_frame {
        0 => page,
        f => page.min(f),
    }
    .max(1);
    let pages = bytes.div_ceil(unit).max(1) as f64;
    let l1_miss = (1.0 - h.l1_tlb_entries as f64 / pages).max(0.0);
    (l1_miss - walk_rate).max(0.0) * h.stlb_hit_ns
}

/// Issue time the loop of uniformly random reads over `bytes` loses a
/// read to the loads L1 misses (`[hierarchy] l1_miss_issue_ns` on the
/// share L1 lacks, as the random reads' residency gives it), ns: a
/// missing load's dependents are replayed whatever level then serves
/// it, so it is one price for the L2 and the L3. 0 where the key is
/// not set (every preset).
pub fn random_l1_miss_issue_ns(m: &Machine, bytes: u64, page: u64) -> f64 {
    let per = m.hierarchy.l1_miss_issue_ns;
    if per <= 0.0 {
        return 0.0;
    }
    let (shares, _) = residency_of(m, Access::Random, bytes, page);
    let l1: f64 = shares
        .iter()
        .filter(|(_, c)| c.level <= 1)
        .map(|(x, _)| x)
        .sum();
    (1.0 - l1).clamp(0.0, 1.0) * per
}

/// Probability that an L1 line evicted now would have been hit later, for
/// uniform random reads over `bytes`.
pub fn random_l1_reuse(m: &Machine, bytes: u64) -> f64 {
    (m.l1_bytes() as f64 / bytes.max(1) as f64).min(1.0)
}

/// One random-read run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomRead {
    pub ns_per_read: f64,
    pub mbps: f64,
    /// Paged-TLB misses per read (sampled).
    pub tlb_miss_rate: f64,
    /// The closed form of the same rate, without the hot pages.
    pub closed_miss_rate: f64,
    pub miss_cost_ns: f64,
}

/// Random reads of `read_bytes` within `bytes` (D2, D4, D10).
#[allow(clippy::too_many_arguments)]
pub fn random_read(
    m: &Machine,
    k: &KernelConfig,
    bytes: u64,
    read_bytes: u64,
    zcb: bool,
    hot: u32,
    samples: u64,
    rng: SimRng,
) -> RandomRead {
    let map = Mapping::of(m, k, zcb, BufferKind::Anon, bytes);
    let h = &m.hierarchy;
    let p_mem = (1.0 - h.llc_reach as f64 / bytes.max(1) as f64).max(0.0);
    // With each cache's reach given, the reads past L1 are priced where
    // they hit (machine/hierarchy.rs `reach_hits`).
    let levels = m
        .reach_hits(Access::Random, bytes, k.mm.page_size)
        .map(|_| {
            let (shares, mem) = residency_of(m, Access::Random, bytes, k.mm.page_size);
            let hit: f64 = shares
                .iter()
                .filter(|(_, c)| c.level > 1)
                .map(|(x, c)| x * c.latency_cycles * m.cycle_ns())
                .sum();
            hit + mem * memory_ns(m)
        });
    let reuse = random_l1_reuse(m, bytes);
    let mut refills = 0.0;
    let (rate, closed, cost) = match map {
        Mapping::Paged(page) => {
            let e = TlbPartition::of(m, &k.mm).paged;
            let pages = bytes.div_ceil(page);
            let rate = tlb::sample_random(e, k.mm.tlb_replacement, pages, hot, samples, rng);
            let closed = tlb::closed_random_miss_rate(e, pages);
            // After a flush the entries that were hitting miss once more.
            let live = (e as f64).min((pages + hot as u64) as f64);
            refills = live * (1.0 - rate).max(0.0);
            (
                rate,
                closed,
                miss_cost_ns(m, page, Leaf::random(m, bytes, page, rate), reuse),
            )
        }
        _ => (0.0, 0.0, 0.0),
    };
    let d = Disturbance {
        l1_reuse: reuse,
        streams: 0.0,
        paged_refills: refills,
        refill_ns: cost,
    };
    let stlb = stlb_hit_ns(m, map, bytes, rate);
    let issue = h.read_ns + random_l1_miss_issue_ns(m, bytes, k.mm.page_size);
    // Independent reads overlap their misses, page walks included (a
    // hardware walker runs beside the loads); `mlp` is 1 in order.
    let ns = match levels {
        // The index arithmetic and the loads' misses overlap (the loads
        // are off its dependency chain): the slower of the two.
        Some(miss) => issue.max((miss + rate * cost + stlb) / h.mlp),
        None => issue + (p_mem * memory_ns(m) + rate * cost) / h.mlp,
    } * (1.0 + interruption_fraction(m, k, map, &d));
    RandomRead {
        ns_per_read: ns,
        mbps: read_bytes as f64 / ns * 1e3,
        tlb_miss_rate: rate,
        closed_miss_rate: closed,
        miss_cost_ns: cost,
    }
}

/// One pointer-chase run: every load's address comes from the load
/// before it, so nothing overlaps and each load pays its full latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointerChase {
    pub ns_per_load: f64,
    /// Paged-TLB misses per load (sampled).
    pub tlb_miss_rate: f64,
    pub miss_cost_ns: f64,
}

/// Dependent loads at random over `bytes`: each load costs the latency of
/// where its line lives ([`residency`]), plus a TLB miss at the sampled
/// rate. The probe's `mem_latency_ns`.
pub fn pointer_chase(
    m: &Machine,
    k: &KernelConfig,
    bytes: u64,
    samples: u64,
    rng: SimRng,
) -> PointerChase {
    let map = Mapping::of(m, k, false, BufferKind::Anon, bytes);
    // The chase walks one random cycle: the same order every pass.
    let (shares, mem) = residency_of(m, Access::Cyclic, bytes, k.mm.page_size);
    let served = served_ns(m, &shares, mem);
    let (rate, cost, refills) = match map {
        Mapping::Paged(page) => {
            let e = TlbPartition::of(m, &k.mm).paged;
            let pages = bytes.div_ceil(page);
            let rate = tlb::sample_random(e, k.mm.tlb_replacement, pages, 0, samples, rng);
            let live = (e as f64).min(pages as f64);
            let reuse = random_l1_reuse(m, bytes);
            (
                rate,
                miss_cost_ns(m, page, Leaf::random(m, bytes, page, rate), reuse),
                live * (1.0 - rate).max(0.0),
            )
        }
        _ => (0.0, 0.0, 0.0),
    };
    let d = Disturbance {
        l1_reuse: random_l1_reuse(m, bytes),
        streams: 0.0,
        paged_refills: refills,
        refill_ns: cost,
    };
    let stlb = stlb_hit_ns(m, map, bytes, rate);
    let ns = (served + rate * cost + stlb) * (1.0 + interruption_fraction(m, k, map, &d));
    PointerChase {
        ns_per_load: ns,
        tlb_miss_rate: rate,
        miss_cost_ns: cost,
    }
}

/// One stream-copy run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamCopy {
    /// Buffer bytes per second of one pass, MB/s.
    pub mbps: f64,
    /// Paged-TLB misses per pass (sampled).
    pub misses_per_pass: f64,
    pub closed_misses_per_pass: f64,
}

/// Copy one half of a `bytes` buffer to the other, pass after pass (D2–D5).
pub fn stream_copy(
    m: &Machine,
    k: &KernelConfig,
    bytes: u64,
    zcb: bool,
    hot: u32,
    rng: SimRng,
) -> StreamCopy {
    let map = Mapping::of(m, k, zcb, BufferKind::Anon, bytes);
    let h = &m.hierarchy;
    let in_l1 = bytes <= m.l1_bytes();
    let line = m.cpu.cache_line as f64;
    // Where the machine gives each cache's reach (a fitted host), a TLB
    // miss's leaf page-table line is found where the stream's lines are
    // (`Leaf::StreamLeaf`); else in the LLC, as before (every preset).
    let mut leaf = Leaf::Sequential;
    let mut ns = if in_l1 {
        bytes as f64 / h.l1_copy_mbps * 1e3
    } else {
        // Beyond L1, each share of the buffer copies at the rate of the
        // cache holding it and the rest streams from memory. L1's share
        // goes at `l1_copy_mbps` where the machine says what each cache
        // keeps of a cycle (`reach`: a write-back L1 that keeps part of a
        // cycle past it serves that part as it serves a copy within it;
        // the probe's EPYC guest copied 64 KiB faster than 256 KiB);
        // else it is a capacity share, counted with the next level, whose
        // rate was measured with it.
        // Past `nt_store_threshold` (glibc's memcpy) the stores bypass the
        // caches: nothing of the buffer stays, memory moves 2 bytes per
        // byte copied (`stream_mbps`). Below it the destination is read
        // for ownership and written back: 3 bytes, 3/2 the time where
        // that read costs as any other (`rfo_cost`).
        let nt_at = h.nt_store_threshold;
        let nt = nt_at > 0 && bytes / 2 > nt_at;
        let rfo = if nt_at > 0 && !nt { h.rfo_cost } else { 1.0 };
        let (shares, mem) = if nt {
            (Vec::new(), 1.0)
        } else {
            residency_of(m, Access::Stream, bytes, k.mm.page_size)
        };
        let l1_own = !h.reach.is_empty() && h.reach.len() == m.cpu.caches.len();
        if l1_own {
            leaf = Leaf::StreamLeaf {
                line_ns: served_ns(m, &shares, mem),
            };
        }
        let mut per_byte = 0.0;
        let mut streamed = mem;
        let mut carry = 0.0;
        for (share, c) in shares {
            if c.level <= 1 {
                if l1_own {
                    per_byte += share / h.l1_copy_mbps;
                } else {
                    carry += share;
                }
                continue;
            }
            let share = share + std::mem::take(&mut carry);
            match c.copy_mbps {
                Some(r) => per_byte += share / r,
                None => streamed += share,
            }
        }
        streamed += carry;
        if !m
            .cpu
            .caches
            .iter()
            .any(|c| c.level > 1 && c.copy_mbps.is_some())
        {
            streamed = 1.0;
            per_byte = 0.0;
        }
        let mut t = bytes as f64 * (per_byte + rfo * streamed / h.stream_mbps) * 1e3;
        if k.mm.l2_prefetch == L2Prefetch::Off {
            t += streamed * bytes as f64 / line * h.prefetch_off_line_ns;
        }
        t
    };
    let reuse = if in_l1 { 1.0 } else { 0.0 };
    // Beyond L1 the prefetcher runs one stream per half (source, destination).
    let streams = if in_l1 { 0.0 } else { 2.0 };
    let (misses, closed, miss_ns, refills) = match map {
        Mapping::Paged(page) => {
            let e = TlbPartition::of(m, &k.mm).paged;
            let per = (bytes / 2).div_ceil(page);
            let misses = tlb::sample_streams(e, k.mm.tlb_replacement, per, 2, hot, rng);
            let closed = tlb::closed_stream_misses(e, 2 * per);
            let cost = miss_cost_ns(m, page, leaf, reuse);
            // Beyond L1 the lines already in flight keep arriving while
            // the miss is served.
            let line_ns = line / h.stream_mbps * 1e3;
            let hidden = if in_l1 {
                0.0
            } else {
                (h.prefetch_depth_lines * line_ns).min(cost)
            };
            // Entries live at a switch: every page while they all fit,
            // else the two current pages; and the loop's own.
            let data = if 2 * per + hot as u64 <= e as u64 {
                2 * per
            } else {
                2
            };
            (misses, closed, cost - hidden, (data + hot as u64) as f64)
        }
        _ => (0.0, 0.0, 0.0, 0.0),
    };
    let d = Disturbance {
        l1_reuse: reuse,
        streams,
        paged_refills: refills,
        refill_ns: miss_ns,
    };
    ns *= 1.0 + interruption_fraction(m, k, map, &d);
    ns += misses * miss_ns;
    StreamCopy {
        mbps: bytes as f64 / ns * 1e3,
        misses_per_pass: misses,
        closed_misses_per_pass: closed,
    }
}

/// Time of one `gettimeofday()`, ns (D1, D2, D15): as a system call, or
/// in user space (the timebase read and the conversion only).
pub fn gettimeofday_ns(m: &Machine, k: &KernelConfig, syscall: bool) -> f64 {
    let s = &m.syscall;
    let model = k.mm.syscall_model();
    let conv = match model {
        SyscallModel::FullSave64 => s.conv64_cycles,
        SyscallModel::MinimalSave32 => s.conv32_cycles,
    };
    let mut cycles = s.timebase_cycles + conv;
    let mut ns = 0.0;
    if syscall {
        cycles += s.entry_exit_cycles;
        match model {
            SyscallModel::FullSave64 => {
                cycles += s.full_save_cycles;
                ns += s.full_save_l1_lines * m.llc_latency_ns();
            }
            SyscallModel::MinimalSave32 => cycles += s.minimal_save_cycles,
        }
    }
    let map = Mapping::of(m, k, true, BufferKind::Anon, 1);
    let d = loop_disturbance(m, map);
    (cycles * m.cycle_ns() + ns) * (1.0 + interruption_fraction(m, k, map, &d))
}

/// A tight loop whose data live in L1 (the FMA loop, a system call in a
/// loop): every displaced line is reused, no prefetch stream runs, and a
/// flush costs it its text and stack entries.
fn loop_disturbance(m: &Machine, map: Mapping) -> Disturbance {
    let refill_ns = match map {
        Mapping::Paged(page) => miss_cost_ns(m, page, Leaf::Sequential, 1.0),
        _ => 0.0,
    };
    Disturbance {
        l1_reuse: 1.0,
        streams: 0.0,
        paged_refills: LOOP_PAGES,
        refill_ns,
    }
}

/// The Selfish benchmark and an L1-resident FMA loop (D5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Selfish {
    /// Share of CPU time in interruptions of at least the threshold, %.
    pub noise_cpu_pct: f64,
    /// Interruptions of at least the threshold per second.
    pub detours_per_s: f64,
    pub fpu_gflops: f64,
}

/// Run Selfish for `duration_s`: each tick is one detour of the handler's
/// length, each involuntary switch one detour of the other task's run
/// (plus Big Memory's entry removal, D10); detours shorter than
/// `threshold_ns` are not recorded.
pub fn selfish(
    m: &Machine,
    k: &KernelConfig,
    zcb: bool,
    threshold_ns: f64,
    duration_s: f64,
) -> Selfish {
    let map = Mapping::of(m, k, zcb, BufferKind::Anon, 1);
    let ticks = (k.mm.hz as f64 * duration_s).floor();
    let switches = switches_per_s(m, k) * duration_s;
    let mut switch_detour = m.noise.switch_ns;
    if map == Mapping::Bigmem {
        switch_detour += m.tlb.miss_ns;
    }
    let mut recorded = 0.0;
    let mut stolen = 0.0;
    for (n, detour) in [(ticks, m.noise.tick_handler_ns), (switches, switch_detour)] {
        if detour >= threshold_ns && n > 0.0 {
            recorded += n;
            stolen += n * detour;
        }
    }
    let peak = m.hierarchy.flops_per_cycle * m.cpu.clock_mhz / 1e3;
    let fpu = peak / (1.0 + interruption_fraction(m, k, map, &loop_disturbance(m, map)));
    Selfish {
        noise_cpu_pct: 100.0 * stolen / (duration_s * 1e9),
        detours_per_s: recorded / duration_s,
        fpu_gflops: fpu,
    }
}

/// LOFAR's copy into a ring buffer (D14): each period (one packet per
/// station lane) writes `block` contiguous bytes into each of `rows` rows
/// of the ring in turn, `unit` bytes per copy, reading them from the
/// receive buffer. docs/tlb.md section 7 derives rows and block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RingCopy {
    pub mbps: f64,
    /// Paged-TLB misses per copy of `unit` bytes.
    pub tlb_miss_rate: f64,
    /// Paged-TLB misses per block written (per destination page touched).
    pub misses_per_block: f64,
    /// Price of one miss, ns.
    pub miss_cost_ns: f64,
}

#[allow(clippy::too_many_arguments)]
pub fn ring_copy(
    m: &Machine,
    k: &KernelConfig,
    ring: u64,
    rows: u32,
    block: u64,
    unit: u64,
    zcb: bool,
    hot: u32,
    rng: SimRng,
) -> RingCopy {
    let map = Mapping::of(m, k, zcb, BufferKind::IoRing, ring);
    let h = &m.hierarchy;
    let line = m.cpu.cache_line as f64;
    let block = block.max(1);
    let unit = unit.clamp(1, block);
    let copies_per_block = block.div_ceil(unit) as f64;
    let base = h.read_ns + unit as f64 / h.stream_mbps * 1e3;
    let (per_block, per_access, cost) = match map {
        Mapping::Paged(page) => {
            let e = TlbPartition::of(m, &k.mm).paged;
            let r = tlb::sample_ring(e, k.mm.tlb_replacement, page, ring, rows, block, hot, rng);
            // Between two visits of a row every row's source and
            // destination lines stream through once: the rows' page-table
            // lines compete with them in each cache.
            let lines_per_block = 2.0 * (block as f64 / line).max(1.0);
            let leaf = Leaf::Random {
                data_lines: rows as f64 * lines_per_block,
                pte_lines: rows as f64,
                miss_rate: r.per_block / lines_per_block,
            };
            // Every line the copy touches is used once, so the L1 lines a
            // miss displaces are not reused: no refetch (as for streams).
            (r.per_block, r.per_access, miss_cost_ns(m, page, leaf, 0.0))
        }
        _ => (0.0, 0.0, 0.0),
    };
    let rate = per_block / copies_per_block;
    let d = Disturbance {
        l1_reuse: 0.0,
        // The receive buffer is the one stream; each row takes one block
        // per period, too little for the prefetcher to follow.
        streams: 1.0,
        paged_refills: match map {
            Mapping::Paged(page) => {
                let e = TlbPartition::of(m, &k.mm).paged as f64;
                let src_pages = (rows as u64 * block).div_ceil(page) as f64;
                e.min(rows as f64 + src_pages + hot as f64) * (1.0 - per_access).max(0.0)
            }
            _ => 0.0,
        },
        refill_ns: cost,
    };
    let ns = (base + rate * cost) * (1.0 + interruption_fraction(m, k, map, &d));
    RingCopy {
        mbps: unit as f64 / ns * 1e3,
        tlb_miss_rate: rate,
        misses_per_block: per_block,
        miss_cost_ns: cost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One stream copy's rate, MB/s, on the machine's default kernel.
    /// One thread's cached copy of `bytes`, seeded by its size.
    fn copy(m: &Machine, k: &KernelConfig, bytes: u64) -> StreamCopy {
        stream_copy(
            m,
            k,
            bytes,
            false,
            0,
            crate::engine::rng::stream(1, "c", bytes),
        )
    }

    fn copy_rate(m: &Machine, k: &KernelConfig, bytes: u64) -> f64 {
        copy(m, k, bytes).mbps
    }

    /// Each cache's reach its size, its sets within a page (no spread of
    /// set loads), as a fitted machine gives them.
    fn give_reaches(m: &mut Machine) {
        m.hierarchy.reach = m.cpu.caches.iter().map(|c| c.size).collect();
        m.hierarchy.ways = m
            .cpu
            .caches
            .iter()
            .map(|c| (c.size / 4096) as u32)
            .collect();
        m.hierarchy.stream_reach = m.hierarchy.reach.clone();
    }

    #[test]
    fn a_copy_past_the_non_temporal_threshold_skips_the_read_for_ownership() {
        let mut m = crate::machine::presets::preset("epyc-9004-nps1").expect("preset");
        let k = KernelConfig::defaults(&m);
        let rate = |m: &Machine, bytes: u64| copy_rate(m, &k, bytes);
        // Far past the caches: memory's rate, whatever the threshold.
        let big = 4u64 << 30;
        let one = rate(&m, big);
        m.hierarchy.nt_store_threshold = 1 << 30;
        let nt = rate(&m, big);
        assert!((nt / one - 1.0).abs() < 0.02, "{one} {nt}");
        // The same copy with ordinary stores (threshold above it) moves
        // 3 bytes per byte copied instead of 2: half a buffer byte more
        // at memory's rate, per buffer byte.
        m.hierarchy.nt_store_threshold = 8 << 30;
        let rfo = rate(&m, big);
        let extra = (1e3 / rfo - 1e3 / nt) / (0.5e3 / m.hierarchy.stream_mbps);
        assert!((extra - 1.0).abs() < 0.05, "{nt} {rfo} {extra}");
        // An ownership read the core overlaps (`rfo_cost` 1) costs the
        // ordinary-store copy nothing beyond the non-temporal one; half
        // way, half the extra byte.
        m.hierarchy.rfo_cost = 1.0;
        let free = rate(&m, big);
        assert!((free / nt - 1.0).abs() < 0.02, "{nt} {free}");
        m.hierarchy.rfo_cost = 1.25;
        let half = rate(&m, big);
        let extra = (1e3 / half - 1e3 / nt) / (0.5e3 / m.hierarchy.stream_mbps);
        assert!((extra - 0.5).abs() < 0.05, "{nt} {half} {extra}");
    }

    #[test]
    fn what_l1_keeps_of_a_copy_past_it_goes_at_l1s_rate() {
        let mut m = crate::machine::presets::preset("epyc-9004-nps1").expect("preset");
        let k = KernelConfig::defaults(&m);
        let n = m.cpu.caches.len();
        for c in m.cpu.caches.iter_mut().filter(|c| c.level > 1) {
            c.copy_mbps.get_or_insert(100_000.0);
        }
        give_reaches(&mut m);
        let bytes = m.l1_bytes() * 2;
        let rate = |m: &Machine| copy_rate(m, &k, bytes);
        // LRU-like L1: nothing of a cycle twice its size stays, its rate
        // does not matter.
        m.hierarchy.stream_retain = vec![0.0; n];
        let lru = rate(&m);
        m.hierarchy.l1_copy_mbps *= 2.0;
        assert_eq!(rate(&m), lru);
        // A retaining L1 keeps half of it: a faster L1 copies it faster.
        m.hierarchy.stream_retain[0] = 1.0;
        let slow_l1 = {
            let mut s = m.clone();
            s.hierarchy.l1_copy_mbps /= 2.0;
            rate(&s)
        };
        let fast_l1 = rate(&m);
        assert!(fast_l1 > slow_l1 * 1.05, "{slow_l1} {fast_l1}");
    }

    #[test]
    fn a_streams_page_table_line_is_found_where_its_lines_are() {
        let mut m = crate::machine::presets::preset("epyc-9004-nps1").expect("preset");
        m.hierarchy.prefetch_depth_lines = 0.0;
        for c in m.cpu.caches.iter_mut().filter(|c| c.level > 1) {
            c.copy_mbps.get_or_insert(100_000.0);
        }
        let mut k = KernelConfig::defaults(&m);
        k.mm.page_size = 4096;
        // ns a TLB miss adds to a 4 KiB-page copy: a TLB that misses
        // every page against one that holds them all (the same pages, so
        // the same residency).
        let per_miss = |m: &Machine, bytes: u64| {
            let run = |entries: u32| {
                let mut t = m.clone();
                t.tlb.entries = entries;
                copy(&t, &k, bytes)
            };
            let (a, b) = (run(16), run(1 << 19));
            let ns = |c: &StreamCopy| bytes as f64 / c.mbps * 1e3;
            assert!(a.misses_per_pass > 0.0 && b.misses_per_pass == 0.0);
            (ns(&a) - ns(&b)) / a.misses_per_pass
        };
        let (in_llc, past) = (8u64 << 20, 1u64 << 30);
        // No reaches (every preset): the leaf line is the LLC's wherever
        // the stream is served.
        let (a, b) = (per_miss(&m, in_llc), per_miss(&m, past));
        assert!((a / b - 1.0).abs() < 0.05, "{a} {b}");
        // With each cache's reach (a fitted host), a copy the LLC holds
        // finds its page-table lines there; one far past it, in memory:
        // an eighth of memory's latency more a miss (8 PTEs a line).
        give_reaches(&mut m);
        m.hierarchy.stream_retain = vec![0.0; m.cpu.caches.len()];
        let (a, b) = (per_miss(&m, in_llc), per_miss(&m, past));
        let eighth = m.memory.latency_ns / 8.0;
        assert!(b - a > 0.5 * eighth, "{a} {b} {eighth}");
    }

    #[test]
    fn page_structure_caches_spare_the_upper_levels_loads() {
        let mut m = crate::machine::presets::preset("epyc-9004-nps1").expect("preset");
        let l1 = m.cache_latency_ns(1).expect("an L1");
        assert!(l1 > 0.0);
        let leaf = Leaf::random(&m, 4 << 20, 4096, 0.8);
        let without = miss_cost_ns(&m, 4096, leaf, 0.0);
        m.hierarchy.walk_cache_levels = 3;
        let with = miss_cost_ns(&m, 4096, leaf, 0.0);
        // A 4-level walk whose three upper levels hit the walk caches
        // loads only its leaf: three L1 loads fewer.
        assert!(
            (without - with - 3.0 * l1).abs() < 1e-9,
            "{without} {with} {l1}"
        );
        // More cached levels than the walk has spare nothing more.
        m.hierarchy.walk_cache_levels = 5;
        assert_eq!(miss_cost_ns(&m, 4096, leaf, 0.0), with);
    }

    /// Round 18b: a first-level TLB adds its lookup only where the
    /// buffer has more pages than it holds and the second level holds
    /// them; more first-level entries are never slower; without one
    /// (every preset) nothing changes.
    #[test]
    fn a_first_level_tlb_costs_only_past_its_entries() {
        let mut m = crate::machine::presets::preset("epyc-9004-nps1").expect("preset");
        let mut k = KernelConfig::defaults(&m);
        k.mm.page_size = 4096;
        let chase = |m: &Machine, bytes: u64| {
            pointer_chase(
                m,
                &k,
                bytes,
                20_000,
                crate::engine::rng::stream(1, "p", bytes),
            )
            .ns_per_load
        };
        let sizes = [64u64 << 10, 256 << 10, 1 << 20, 4 << 20, 64 << 20];
        let off: Vec<f64> = sizes.iter().map(|&s| chase(&m, s)).collect();
        m.hierarchy.l1_tlb_entries = 64;
        m.hierarchy.stlb_hit_ns = 1.0;
        // 64 KiB (16 pages) and 256 KiB (64 pages) fit the first level.
        assert_eq!(chase(&m, sizes[0]), off[0]);
        assert_eq!(chase(&m, sizes[1]), off[1]);
        // 1 MiB: 256 pages, 3/4 of the loads miss the first level, and
        // the second (`tlb.entries`) holds them all.
        assert!(m.tlb.entries >= 256);
        let extra = chase(&m, sizes[2]) - off[2];
        assert!((extra - 0.75).abs() < 0.05, "{extra}");
        // More entries never slower, and a larger buffer never cheaper
        // in first-level misses alone.
        for &s in &sizes {
            let mut last = f64::INFINITY;
            for e in [8, 32, 64, 128, 1024] {
                m.hierarchy.l1_tlb_entries = e;
                let ns = chase(&m, s);
                assert!(ns <= last + 1e-12, "{s} {e}: {ns} > {last}");
                last = ns;
            }
        }
        m.hierarchy.l1_tlb_entries = 64;
        let at = |b: u64| stlb_hit_ns(&m, Mapping::Paged(4096), b, 0.0);
        assert!(at(1 << 20) <= at(4 << 20) && at(4 << 20) <= at(64 << 20));
        // A load that also misses the second level pays the walk, whose
        // price holds the lookup: every load walking adds nothing here.
        assert_eq!(stlb_hit_ns(&m, Mapping::Paged(4096), 64 << 20, 1.0), 0.0);
        // A huge page takes one entry, unless the host splits it.
        assert_eq!(stlb_hit_ns(&m, Mapping::Paged(2 << 20), 64 << 20, 0.0), 0.0);
        m.hierarchy.host_frame = 4096;
        assert!(stlb_hit_ns(&m, Mapping::Paged(2 << 20), 64 << 20, 0.0) > 0.99);
    }

    /// Round 19: a load L1 misses costs the random reads' loop issue
    /// time (`l1_miss_issue_ns`) on the share L1 lacks, one price for
    /// the L2 and the L3; nothing within L1 or where the misses bind.
    #[test]
    fn a_load_l1_misses_costs_the_random_reads_loop_the_same_at_every_level() {
        let mut m = crate::machine::presets::preset("epyc-9004-nps1").expect("preset");
        give_reaches(&mut m);
        m.hierarchy.cyclic_retain = vec![0.0; m.cpu.caches.len()];
        m.hierarchy.read_ns = 2.0;
        m.hierarchy.mlp = 16.0;
        let mut k = KernelConfig::defaults(&m);
        k.mm.page_size = 2 << 20;
        let read = |m: &Machine, bytes: u64| {
            random_read(
                m,
                &k,
                bytes,
                8,
                false,
                0,
                20_000,
                crate::engine::rng::stream(1, "r", bytes),
            )
            .ns_per_read
        };
        let l1 = m.l1_bytes();
        let sizes: Vec<u64> = (0..17).map(|i| (l1 / 2) << i).collect();
        let off: Vec<f64> = sizes.iter().map(|&s| read(&m, s)).collect();
        let per = 0.1;
        m.hierarchy.l1_miss_issue_ns = per;
        let on: Vec<f64> = sizes.iter().map(|&s| read(&m, s)).collect();
        // Within L1 nothing changes; a read never gets cheaper; a larger
        // buffer (a deeper level) never reads faster.
        assert_eq!(on[0], off[0]);
        for i in 0..sizes.len() {
            assert!(on[i] >= off[i], "{}: {} < {}", sizes[i], on[i], off[i]);
            if i > 0 {
                assert!(on[i] >= on[i - 1] - 1e-12, "{}", sizes[i]);
            }
        }
        // Where the loop binds, the extra is the share L1 lacks times the
        // price, whether the L2 or the L3 serves the miss.
        let l2 = m.cpu.caches.iter().find(|c| c.level == 2).expect("L2").size;
        for s in [l2 / 4, l2 * 4] {
            let i = sizes.iter().position(|&x| x == s).expect("a size");
            let lacks = 1.0 - l1 as f64 / s as f64;
            let extra = on[i] - off[i];
            assert!((extra / (lacks * per) - 1.0).abs() < 0.01, "{s}: {extra}");
        }
        // Far past the caches the misses set the rate: unchanged.
        let last = sizes.len() - 1;
        assert!(sizes[last] >= 1 << 30);
        assert_eq!(on[last], off[last]);
    }
}
