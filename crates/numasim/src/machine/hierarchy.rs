//! Machine parameters of the TLB and memory-hierarchy cost model
//! (`[hierarchy]`, `[syscall]`, `[noise]`, and the pinned-entry and walk
//! fields of `[tlb]`). Shared by every experiment on the machine;
//! `docs/tlb.md` says where each bgp-node value comes from. Machines
//! without these tables get defaults derived from `[cpu]` and `[dram]`.

use super::Machine;
use crate::error::InputError;
use crate::input::table::TableReader;
use toml::Table;

/// Cost of moving and reading data through the caches, per core.
#[derive(Debug, Clone, PartialEq)]
pub struct Hierarchy {
    /// Copy rate (buffer bytes per second of one pass) when the buffer fits
    /// in L1, MB/s (10^6 B/s).
    pub l1_copy_mbps: f64,
    /// Copy rate beyond L1 with the stream prefetcher running ahead
    /// (optimistic prefetch on), MB/s.
    pub stream_mbps: f64,
    /// Extra time per cache line streamed beyond L1 when optimistic
    /// prefetch is off (the prefetcher confirms a stream before running
    /// ahead), ns.
    pub prefetch_off_line_ns: f64,
    /// Lines the stream prefetcher keeps in flight ahead of the copy: a
    /// TLB-miss handler runs while they arrive, so up to this many line
    /// times of a streaming miss are hidden.
    pub prefetch_depth_lines: f64,
    /// One random read that hits the caches, with the index arithmetic
    /// around it, ns. L1 and L3 hits cost the same here: the core keeps
    /// computing the next index while an L3 hit is in flight.
    pub read_ns: f64,
    /// How much of the last-level cache one core's random read stream
    /// keeps, bytes (the rest goes to other cores, code, replacement).
    pub llc_reach: u64,
    /// Memory-level parallelism: cache misses of independent reads one
    /// core keeps in flight at once (1: an in-order core that stalls on
    /// each, as BG/P's PPC450; an out-of-order core overlaps as many as
    /// its miss buffers hold). A dependent chain (a pointer chase) gets
    /// none of it.
    pub mlp: f64,
    /// Bytes of one page-table entry.
    pub pte_bytes: u64,
    /// Upper page-table levels whose entries the MMU's page-structure
    /// caches hold (Intel's PML4/PDPTE/PDE caches, Intel SDM Vol. 3A
    /// 4.10.3; AMD's page walk cache), so a hardware walk loads only the
    /// levels below them from the data caches. 0: every level is loaded
    /// (a software refill, or a walker without such caches).
    pub walk_cache_levels: u32,
    /// Peak floating-point operations per cycle of one core.
    pub flops_per_cycle: f64,
}

/// System-call costs in CPU cycles ([BGP-BIGMEM] D1, D2, D15).
#[derive(Debug, Clone, PartialEq)]
pub struct SyscallCosts {
    /// Trap, dispatch and return, without saving registers.
    pub entry_exit_cycles: f64,
    /// Saving and restoring every register (CNK).
    pub full_save_cycles: f64,
    /// Saving and restoring the volatile registers (Linux).
    pub minimal_save_cycles: f64,
    /// L1 data lines a full register save evicts (refetched from L3).
    pub full_save_l1_lines: f64,
    /// Converting the 64-bit timebase with 64-bit arithmetic.
    pub conv64_cycles: f64,
    /// Wall clock at the last tick plus a 32-bit delta.
    pub conv32_cycles: f64,
    /// Reading the time-base register.
    pub timebase_cycles: f64,
}

/// The periodic tick as the compute process feels it (D5).
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// CPU time of one tick interrupt (handler, timers, return), ns.
    pub tick_handler_ns: f64,
    /// L1 data lines a tick evicts (refetched afterwards where reused).
    pub tick_l1_lines: f64,
    /// Involuntary switch-outs of the running program per second under a
    /// multitasking kernel: kernel threads and daemons woken by timers on
    /// its core (CNK has none). docs/tlb.md section 4.
    pub daemon_wakeups_per_s: f64,
    /// CPU time of one switch out and back, the woken task's run included, ns.
    pub switch_ns: f64,
    /// L1 data lines the switch and the woken task displace.
    pub switch_l1_lines: f64,
}

/// Defaults for machines without these tables (docs/tlb.md).
mod default {
    pub const PREFETCH_OFF_LINE_NS: f64 = 0.0;
    pub const PTE_BYTES: u64 = 8;
    pub const FLOPS_PER_CYCLE: f64 = 4.0;
    pub const ENTRY_EXIT_CYCLES: f64 = 150.0;
    pub const FULL_SAVE_CYCLES: f64 = 200.0;
    pub const MINIMAL_SAVE_CYCLES: f64 = 50.0;
    pub const FULL_SAVE_L1_LINES: f64 = 0.0;
    pub const CONV64_CYCLES: f64 = 30.0;
    pub const CONV32_CYCLES: f64 = 20.0;
    pub const TIMEBASE_CYCLES: f64 = 25.0;
    pub const TICK_HANDLER_NS: f64 = 2000.0;
    pub const TICK_L1_LINES: f64 = 0.0;
    pub const DAEMON_WAKEUPS_PER_S: f64 = 0.0;
    pub const SWITCH_NS: f64 = 0.0;
    pub const SWITCH_L1_LINES: f64 = 0.0;
}

const MAX: f64 = 1e9;

fn num(r: &mut TableReader, key: &'static str, d: f64, lo: f64) -> Result<f64, InputError> {
    match r.f64(key)? {
        Some(x) if x.is_nan() || x < lo || x > MAX => Err(InputError::at(
            r.key(key),
            format!("{x}: allowed {lo} .. {MAX}"),
        )),
        v => Ok(v.unwrap_or(d)),
    }
}

/// The derived defaults for `[hierarchy]`: L1 copy at one line per L1
/// latency, streaming at DRAM bandwidth, a read costing two L1 latencies,
/// the whole last-level cache.
fn hierarchy_defaults(cpu: &super::Cpu, mem: &super::Memory) -> Hierarchy {
    let cycle_ns = 1e3 / cpu.clock_mhz;
    let l1_lat = cpu
        .caches
        .iter()
        .find(|c| c.level == 1)
        .map_or(4.0, |c| c.latency_cycles);
    Hierarchy {
        l1_copy_mbps: cpu.cache_line as f64 * 1e3 / (l1_lat * cycle_ns),
        stream_mbps: mem.bandwidth_gbps * 1e3,
        prefetch_off_line_ns: default::PREFETCH_OFF_LINE_NS,
        prefetch_depth_lines: 0.0,
        read_ns: 2.0 * l1_lat * cycle_ns,
        llc_reach: cpu.caches.iter().map(|c| c.size).max().unwrap_or(1 << 20),
        mlp: 1.0,
        pte_bytes: default::PTE_BYTES,
        walk_cache_levels: 0,
        flops_per_cycle: default::FLOPS_PER_CYCLE,
    }
}

/// Read `[hierarchy]`, `[syscall]` and `[noise]` (all optional).
pub(super) fn read(
    r: &mut TableReader,
    cpu: &super::Cpu,
    mem: &super::Memory,
) -> Result<(Hierarchy, SyscallCosts, Noise), InputError> {
    let mut h = hierarchy_defaults(cpu, mem);
    if let Some(mut t) = r.table("hierarchy")? {
        h.l1_copy_mbps = num(&mut t, "l1_copy_mbps", h.l1_copy_mbps, 1e-3)?;
        h.stream_mbps = num(&mut t, "stream_mbps", h.stream_mbps, 1e-3)?;
        h.prefetch_off_line_ns = num(&mut t, "prefetch_off_line_ns", h.prefetch_off_line_ns, 0.0)?;
        h.prefetch_depth_lines = num(&mut t, "prefetch_depth_lines", h.prefetch_depth_lines, 0.0)?;
        h.read_ns = num(&mut t, "read_ns", h.read_ns, 1e-3)?;
        if let Some(sz) = t.size("llc_reach")? {
            if sz == 0 {
                return Err(InputError::at(
                    t.key("llc_reach"),
                    "must be more than 0 bytes",
                ));
            }
            h.llc_reach = sz;
        }
        h.mlp = num(&mut t, "mlp", h.mlp, 1.0)?;
        if let Some(b) = t.u64("pte_bytes")? {
            if !matches!(b, 4 | 8 | 16) {
                return Err(InputError::at(
                    t.key("pte_bytes"),
                    format!("{b}: allowed 4, 8 or 16"),
                ));
            }
            h.pte_bytes = b;
        }
        // One fewer than the most levels a walk has (`[tlb] walk_levels`
        // is at most 6): the leaf entry is always loaded.
        if let Some(l) = t.u32_in("walk_cache_levels", 0, 5)? {
            h.walk_cache_levels = l;
        }
        h.flops_per_cycle = num(&mut t, "flops_per_cycle", h.flops_per_cycle, 1e-3)?;
        t.finish()?;
    }
    let mut s = SyscallCosts {
        entry_exit_cycles: default::ENTRY_EXIT_CYCLES,
        full_save_cycles: default::FULL_SAVE_CYCLES,
        minimal_save_cycles: default::MINIMAL_SAVE_CYCLES,
        full_save_l1_lines: default::FULL_SAVE_L1_LINES,
        conv64_cycles: default::CONV64_CYCLES,
        conv32_cycles: default::CONV32_CYCLES,
        timebase_cycles: default::TIMEBASE_CYCLES,
    };
    if let Some(mut t) = r.table("syscall")? {
        s.entry_exit_cycles = num(&mut t, "entry_exit_cycles", s.entry_exit_cycles, 0.0)?;
        s.full_save_cycles = num(&mut t, "full_save_cycles", s.full_save_cycles, 0.0)?;
        s.minimal_save_cycles = num(&mut t, "minimal_save_cycles", s.minimal_save_cycles, 0.0)?;
        s.full_save_l1_lines = num(&mut t, "full_save_l1_lines", s.full_save_l1_lines, 0.0)?;
        s.conv64_cycles = num(&mut t, "conv64_cycles", s.conv64_cycles, 0.0)?;
        s.conv32_cycles = num(&mut t, "conv32_cycles", s.conv32_cycles, 0.0)?;
        s.timebase_cycles = num(&mut t, "timebase_cycles", s.timebase_cycles, 0.0)?;
        t.finish()?;
    }
    let mut n = Noise {
        tick_handler_ns: default::TICK_HANDLER_NS,
        tick_l1_lines: default::TICK_L1_LINES,
        daemon_wakeups_per_s: default::DAEMON_WAKEUPS_PER_S,
        switch_ns: default::SWITCH_NS,
        switch_l1_lines: default::SWITCH_L1_LINES,
    };
    if let Some(mut t) = r.table("noise")? {
        n.tick_handler_ns = num(&mut t, "tick_handler_ns", n.tick_handler_ns, 0.0)?;
        n.tick_l1_lines = num(&mut t, "tick_l1_lines", n.tick_l1_lines, 0.0)?;
        n.daemon_wakeups_per_s = num(&mut t, "daemon_wakeups_per_s", n.daemon_wakeups_per_s, 0.0)?;
        n.switch_ns = num(&mut t, "switch_ns", n.switch_ns, 0.0)?;
        n.switch_l1_lines = num(&mut t, "switch_l1_lines", n.switch_l1_lines, 0.0)?;
        t.finish()?;
    }
    Ok((h, s, n))
}

/// Write the three tables into a machine document.
pub(super) fn write(m: &Machine, t: &mut Table) {
    let h = &m.hierarchy;
    let mut ht = Table::new();
    ht.insert("l1_copy_mbps".into(), h.l1_copy_mbps.into());
    ht.insert("stream_mbps".into(), h.stream_mbps.into());
    ht.insert("prefetch_off_line_ns".into(), h.prefetch_off_line_ns.into());
    ht.insert("prefetch_depth_lines".into(), h.prefetch_depth_lines.into());
    ht.insert("read_ns".into(), h.read_ns.into());
    ht.insert(
        "llc_reach".into(),
        crate::input::size::format_size(h.llc_reach).into(),
    );
    ht.insert("mlp".into(), h.mlp.into());
    ht.insert("pte_bytes".into(), (h.pte_bytes as i64).into());
    // Written only where set, so machines without page-structure caches
    // print as they did.
    if h.walk_cache_levels > 0 {
        ht.insert(
            "walk_cache_levels".into(),
            (h.walk_cache_levels as i64).into(),
        );
    }
    ht.insert("flops_per_cycle".into(), h.flops_per_cycle.into());
    t.insert("hierarchy".into(), ht.into());
    let s = &m.syscall;
    let mut st = Table::new();
    st.insert("entry_exit_cycles".into(), s.entry_exit_cycles.into());
    st.insert("full_save_cycles".into(), s.full_save_cycles.into());
    st.insert("minimal_save_cycles".into(), s.minimal_save_cycles.into());
    st.insert("full_save_l1_lines".into(), s.full_save_l1_lines.into());
    st.insert("conv64_cycles".into(), s.conv64_cycles.into());
    st.insert("conv32_cycles".into(), s.conv32_cycles.into());
    st.insert("timebase_cycles".into(), s.timebase_cycles.into());
    t.insert("syscall".into(), st.into());
    let mut nt = Table::new();
    nt.insert("tick_handler_ns".into(), m.noise.tick_handler_ns.into());
    nt.insert("tick_l1_lines".into(), m.noise.tick_l1_lines.into());
    nt.insert(
        "daemon_wakeups_per_s".into(),
        m.noise.daemon_wakeups_per_s.into(),
    );
    nt.insert("switch_ns".into(), m.noise.switch_ns.into());
    nt.insert("switch_l1_lines".into(), m.noise.switch_l1_lines.into());
    t.insert("noise".into(), nt.into());
}

impl Machine {
    /// One CPU cycle, ns.
    pub fn cycle_ns(&self) -> f64 {
        1e3 / self.cpu.clock_mhz
    }
    /// Latency of the cache at `level`, ns (None if the machine has none).
    pub fn cache_latency_ns(&self, level: u8) -> Option<f64> {
        self.cpu
            .caches
            .iter()
            .find(|c| c.level == level)
            .map(|c| c.latency_cycles * self.cycle_ns())
    }
    /// The last-level cache's latency, ns (0 without caches).
    pub fn llc_latency_ns(&self) -> f64 {
        self.cpu
            .caches
            .iter()
            .max_by_key(|c| c.level)
            .map_or(0.0, |c| c.latency_cycles * self.cycle_ns())
    }
    /// L1 data cache size, bytes (32 KiB without a description).
    pub fn l1_bytes(&self) -> u64 {
        self.cpu
            .caches
            .iter()
            .find(|c| c.level == 1)
            .map_or(32 << 10, |c| c.size)
    }
}
