//! What memory access costs one core: the cache hierarchy (L1, the L2
//! stream prefetcher, the last-level cache, DRAM), address translation
//! (kernel/mm/tlb.rs) and the tick's noise ([BGP-BIGMEM] D1–D5, D10, D14).
//! Every figure comes from the machine's `[hierarchy]`, `[tlb]`,
//! `[syscall]` and `[noise]` tables and the kernel's knobs; docs/tlb.md
//! gives the formulas and the calibration.

use crate::engine::rng::SimRng;
use crate::kernel::flavour::{Flavour, L2Prefetch, SyscallModel};
use crate::kernel::mm::bigmem::TlbPartition;
use crate::kernel::mm::tlb::{self, BufferKind};
use crate::kernel::KernelConfig;
use crate::machine::Machine;

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

/// Fraction of time the tick takes from a loop whose L1 lines are reused
/// with probability `l1_reuse` (D5): handler time plus refetching the
/// lines it evicted.
pub fn tick_fraction(m: &Machine, k: &KernelConfig, l1_reuse: f64) -> f64 {
    k.mm.hz as f64
        * (m.noise.tick_handler_ns + m.noise.tick_l1_lines * l1_reuse * m.llc_latency_ns())
        / 1e9
}

/// Switch-outs of the compute process per second: each tick runs the
/// timer softirq's kernel work, which schedules the process out, unless
/// `bigmem_quiet_irqs` keeps it in (D10, D13).
pub fn switch_outs_per_s(k: &KernelConfig) -> f64 {
    if k.mm.bigmem_quiet_irqs {
        0.0
    } else {
        k.mm.hz as f64
    }
}

/// Fraction of time Big Memory's entries cost: removing them at each
/// switch-out (about one miss, as the paper estimates) and the one miss
/// that reinstalls them after the next schedule-in (D10).
pub fn bigmem_fraction(m: &Machine, k: &KernelConfig, map: Mapping) -> f64 {
    if map != Mapping::Bigmem {
        return 0.0;
    }
    switch_outs_per_s(k) * 2.0 * m.tlb.miss_ns / 1e9
}

/// Memory behind the last-level cache: its lookup plus DRAM, ns.
pub fn memory_ns(m: &Machine) -> f64 {
    m.llc_latency_ns() + m.memory.latency_ns
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
/// upper levels (cached: L1), and refetching the L1 lines the miss
/// evicted when they are reused (`l1_reuse`).
pub fn miss_cost_ns(m: &Machine, page: u64, leaf: Leaf, l1_reuse: f64) -> f64 {
    let levels = tlb::walk_levels(m, page);
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
    };
    m.tlb.miss_ns
        + leaf
        + (levels.saturating_sub(1)) as f64 * l1
        + m.tlb.miss_l1_lines * l1_reuse * m.llc_latency_ns()
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
    let reuse = random_l1_reuse(m, bytes);
    let (rate, closed, cost) = match map {
        Mapping::Paged(page) => {
            let e = TlbPartition::of(m, &k.mm).paged;
            let pages = bytes.div_ceil(page);
            let rate = tlb::sample_random(e, k.mm.tlb_replacement, pages, hot, samples, rng);
            let closed = tlb::closed_random_miss_rate(e, pages);
            (
                rate,
                closed,
                miss_cost_ns(m, page, Leaf::random(m, bytes, page, rate), reuse),
            )
        }
        _ => (0.0, 0.0, 0.0),
    };
    let ns = (h.read_ns + p_mem * memory_ns(m) + rate * cost)
        * (1.0 + tick_fraction(m, k, reuse) + bigmem_fraction(m, k, map));
    RandomRead {
        ns_per_read: ns,
        mbps: read_bytes as f64 / ns * 1e3,
        tlb_miss_rate: rate,
        closed_miss_rate: closed,
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
    let mut ns = if in_l1 {
        bytes as f64 / h.l1_copy_mbps * 1e3
    } else {
        let mut t = bytes as f64 / h.stream_mbps * 1e3;
        if k.mm.l2_prefetch == L2Prefetch::Off {
            t += bytes as f64 / line * h.prefetch_off_line_ns;
        }
        t
    };
    let reuse = if in_l1 { 1.0 } else { 0.0 };
    ns *= 1.0 + tick_fraction(m, k, reuse) + bigmem_fraction(m, k, map);
    let (misses, closed) = match map {
        Mapping::Paged(page) => {
            let e = TlbPartition::of(m, &k.mm).paged;
            let per = (bytes / 2).div_ceil(page);
            let misses = tlb::sample_streams(e, k.mm.tlb_replacement, per, 2, hot, rng);
            let closed = tlb::closed_stream_misses(e, 2 * per);
            let cost = miss_cost_ns(m, page, Leaf::Sequential, reuse);
            // Beyond L1 the lines already in flight keep arriving while
            // the miss is served.
            let line_ns = line / h.stream_mbps * 1e3;
            let hidden = if in_l1 {
                0.0
            } else {
                (h.prefetch_depth_lines * line_ns).min(cost)
            };
            ns += misses * (cost - hidden);
            (misses, closed)
        }
        _ => (0.0, 0.0),
    };
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
    (cycles * m.cycle_ns() + ns) * (1.0 + tick_fraction(m, k, 1.0))
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
/// length (plus Big Memory's entry removal where the process is
/// switched out); detours shorter than `threshold_ns` are not recorded.
pub fn selfish(
    m: &Machine,
    k: &KernelConfig,
    zcb: bool,
    threshold_ns: f64,
    duration_s: f64,
) -> Selfish {
    let map = Mapping::of(m, k, zcb, BufferKind::Anon, 1);
    let mut detour = m.noise.tick_handler_ns;
    if map == Mapping::Bigmem && switch_outs_per_s(k) > 0.0 {
        detour += m.tlb.miss_ns;
    }
    let ticks = (k.mm.hz as f64 * duration_s).floor();
    let recorded = if detour >= threshold_ns && ticks > 0.0 {
        ticks
    } else {
        0.0
    };
    let noise = recorded * detour / (duration_s * 1e9);
    let peak = m.hierarchy.flops_per_cycle * m.cpu.clock_mhz / 1e3;
    let fpu = peak / (1.0 + tick_fraction(m, k, 1.0) + bigmem_fraction(m, k, map));
    Selfish {
        noise_cpu_pct: 100.0 * noise,
        detours_per_s: recorded / duration_s,
        fpu_gflops: fpu,
    }
}

/// LOFAR's copy into a ring buffer (D14): `streams` destinations written
/// in turn, `unit` bytes each, far apart in the ring.
pub struct RingCopy {
    pub mbps: f64,
    pub tlb_miss_rate: f64,
}

#[allow(clippy::too_many_arguments)]
pub fn ring_copy(
    m: &Machine,
    k: &KernelConfig,
    ring: u64,
    streams: u32,
    unit: u64,
    zcb: bool,
    hot: u32,
    rng: SimRng,
) -> RingCopy {
    let map = Mapping::of(m, k, zcb, BufferKind::IoRing, ring);
    let h = &m.hierarchy;
    let line = m.cpu.cache_line as f64;
    // Destination lines in use at once fit in L1 when streams x line does.
    let dst = streams as f64 * line;
    let reuse = (m.l1_bytes() as f64 / dst).min(1.0);
    let mut ns = h.read_ns + unit as f64 / h.stream_mbps * 1e3;
    ns *= 1.0 + tick_fraction(m, k, reuse) + bigmem_fraction(m, k, map);
    let rate = match map {
        Mapping::Paged(page) => {
            let e = TlbPartition::of(m, &k.mm).paged;
            // A stream stays in one page for page/unit copies, so it takes
            // at least one miss per page; between two of its copies every
            // other stream is written, which evicts its entry once the
            // streams do not fit in the paged partition.
            let per_page = (page / unit.max(1)).max(1);
            let cycling =
                tlb::sample_streams(e, k.mm.tlb_replacement, 1, streams, hot, rng) / streams as f64;
            let rate = cycling.max(1.0 / per_page as f64).min(1.0);
            // Each stream's page-table entry sits in its own line; the
            // data in flight are the streams' current lines.
            let leaf = Leaf::Random {
                data_lines: streams as f64,
                pte_lines: streams as f64,
                miss_rate: rate,
            };
            ns += rate * miss_cost_ns(m, page, leaf, reuse);
            rate
        }
        _ => 0.0,
    };
    RingCopy {
        mbps: unit as f64 / ns * 1e3,
        tlb_miss_rate: rate,
    }
}
