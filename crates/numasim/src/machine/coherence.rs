//! Machine parameters of contention: how a contended cache line behaves
//! (`[coherence]`), the timer tick and the clock (`[timer]`), and the CPU
//! cost of a page fault and of zeroing a page (`[fault]`). Shared by every
//! experiment on the machine; `docs/contention.md` says where each preset
//! value comes from.

use super::Machine;
use crate::engine::CostTable;
use crate::error::InputError;
use crate::input::table::TableReader;
use toml::Table;

/// A contended line beyond its plain transfer time ([ALTIX04] C1, [WILDFIRE01] C7).
#[derive(Debug, Clone, PartialEq)]
pub struct Coherence {
    /// Occupancy of a line's home directory per request it serves, real or
    /// NACKed: requests queue at the directory only for this, and a
    /// hand-off pays it once more for every requester still waiting.
    pub directory_ns: f64,
    /// Spread of the moments spinning waiters see a lock release (spin-loop
    /// phase, bus arbitration): sets how often the releaser's node wins a
    /// test-and-set lock. 0 = the nearest waiter always wins.
    pub spin_jitter_ns: f64,
}

/// The periodic tick and the time-of-day path.
#[derive(Debug, Clone, PartialEq)]
pub struct Timer {
    /// Timer interrupts per second per CPU (`HZ`).
    pub hz: u32,
    /// Reading the clock source once (an MMIO register on SN2), ns.
    pub clock_read_ns: f64,
    /// A `gettimeofday()` system call without the clock read and the shared
    /// word: entry, exit, the conversion arithmetic, ns.
    pub syscall_ns: f64,
    /// Where in the tick period each CPU's tick falls.
    pub tick_phase: TickPhase,
}

knob_enum! {
    /// Where each CPU's timer tick falls within the period, as the kernel
    /// programs it at CPU bring-up (docs/contention.md, "Tick phases").
    TickPhase {
        /// ia64 `ia64_cpu_local_tick()`: the first tick one period plus a
        /// per-CPU stagger after the CPU's own bring-up, an instant unrelated
        /// to the period; so phases are uniform, drawn per CPU from the seed.
        Bringup = "bringup",
        /// The stagger shift alone (every CPU as if brought up at one
        /// instant): evenly spread.
        Stagger = "stagger",
        /// Every CPU at the same instant: no kernel programs this; kept to
        /// show how much the answer depends on phases.
        Aligned = "aligned",
    }
}

/// Page-fault costs.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultCosts {
    /// CPU time of a minor fault other than locks, shared lines and
    /// zeroing (trap, `find_vma`, page allocation, return), ns.
    pub fault_ns: f64,
    /// CPU work inside a `page_table_lock` section of the fault path
    /// beyond the page-table walk's loads (derived from the caches and
    /// memory latency, `kernel::mm::memory::walk_ns`) and the shared lines
    /// (`mm->rss`, the LRU), ns: the instructions, if they are not hidden.
    pub ptl_hold_ns: f64,
    /// CPU time of one page's share of `munmap()` other than locks and
    /// shared lines (`zap_pte_range()`, the rmap, the TLB batch), ns; run
    /// after a mapping's last fault, where a workload unmaps it.
    pub unmap_ns: f64,
    /// One CPU zeroing (clearing) memory on its own node, GB/s; remote
    /// memory is slower by the distance ratio.
    pub zero_gbps: f64,
}

/// Defaults for a machine file without these tables (docs/contention.md).
mod default {
    pub const DIRECTORY_NS: f64 = 0.0;
    pub const SPIN_JITTER_NS: f64 = 0.0;
    /// Most Linux ports of the period (i386 2.4: 100; ia64, alpha: 1024).
    pub const HZ: u64 = 1000;
    pub const CLOCK_READ_NS: f64 = 10.0;
    pub const SYSCALL_NS: f64 = 100.0;
    pub const FAULT_NS: f64 = 1000.0;
    pub const PTL_HOLD_NS: f64 = 100.0;
    /// No unmap cost of its own: the 2004 paths model no `munmap()`.
    pub const UNMAP_NS: f64 = 0.0;
    pub const ZERO_GBPS: f64 = 2.0;
}

/// Largest time parameter accepted (1 s): far above any real cost, small
/// enough that simulated clocks never overflow.
const MAX_NS: f64 = 1e9;

fn nonneg(r: &mut TableReader, key: &'static str, d: f64) -> Result<f64, InputError> {
    match r.nonneg_f64(key)? {
        Some(x) if x.is_nan() || x > MAX_NS => Err(InputError::at(
            r.key(key),
            format!("{x} ns: allowed 0 .. {MAX_NS} (1 s)"),
        )),
        v => Ok(v.unwrap_or(d)),
    }
}

fn positive(r: &mut TableReader, key: &'static str, d: f64) -> Result<f64, InputError> {
    match r.f64(key)? {
        Some(x) if !(1e-3..=1e6).contains(&x) => Err(InputError::at(
            r.key(key),
            format!("{x}: allowed 0.001 .. 1000000 GB/s"),
        )),
        v => Ok(v.unwrap_or(d)),
    }
}

/// Read `[coherence]`, `[timer]` and `[fault]` (all optional).
pub(super) fn read(r: &mut TableReader) -> Result<(Coherence, Timer, FaultCosts), InputError> {
    let mut coherence = Coherence {
        directory_ns: default::DIRECTORY_NS,
        spin_jitter_ns: default::SPIN_JITTER_NS,
    };
    if let Some(mut t) = r.table("coherence")? {
        coherence.directory_ns = nonneg(&mut t, "directory_ns", coherence.directory_ns)?;
        coherence.spin_jitter_ns = nonneg(&mut t, "spin_jitter_ns", coherence.spin_jitter_ns)?;
        t.finish()?;
    }
    let mut timer = Timer {
        hz: default::HZ as u32,
        clock_read_ns: default::CLOCK_READ_NS,
        syscall_ns: default::SYSCALL_NS,
        tick_phase: TickPhase::Bringup,
    };
    if let Some(mut t) = r.table("timer")? {
        if let Some(hz) = t.u64("hz")? {
            if !(1..=100_000).contains(&hz) {
                return Err(InputError::at(
                    t.key("hz"),
                    format!("{hz}: allowed 1..100000 (Linux used 100 to 1024)"),
                ));
            }
            timer.hz = hz as u32;
        }
        timer.clock_read_ns = nonneg(&mut t, "clock_read_ns", timer.clock_read_ns)?;
        timer.syscall_ns = nonneg(&mut t, "syscall_ns", timer.syscall_ns)?;
        timer.tick_phase = t
            .choice("tick_phase", TickPhase::NAMES)?
            .unwrap_or(timer.tick_phase);
        t.finish()?;
    }
    let mut fault = FaultCosts {
        fault_ns: default::FAULT_NS,
        ptl_hold_ns: default::PTL_HOLD_NS,
        unmap_ns: default::UNMAP_NS,
        zero_gbps: default::ZERO_GBPS,
    };
    if let Some(mut t) = r.table("fault")? {
        fault.fault_ns = nonneg(&mut t, "fault_ns", fault.fault_ns)?;
        fault.ptl_hold_ns = nonneg(&mut t, "ptl_hold_ns", fault.ptl_hold_ns)?;
        fault.unmap_ns = nonneg(&mut t, "unmap_ns", fault.unmap_ns)?;
        fault.zero_gbps = positive(&mut t, "zero_gbps", fault.zero_gbps)?;
        t.finish()?;
    }
    Ok((coherence, timer, fault))
}

/// Write the three tables into a machine document.
pub(super) fn write(m: &Machine, t: &mut Table) {
    let mut c = Table::new();
    c.insert("directory_ns".into(), m.coherence.directory_ns.into());
    c.insert("spin_jitter_ns".into(), m.coherence.spin_jitter_ns.into());
    t.insert("coherence".into(), c.into());
    let mut tm = Table::new();
    tm.insert("hz".into(), (m.timer.hz as i64).into());
    tm.insert("clock_read_ns".into(), m.timer.clock_read_ns.into());
    tm.insert("syscall_ns".into(), m.timer.syscall_ns.into());
    tm.insert("tick_phase".into(), m.timer.tick_phase.name().into());
    t.insert("timer".into(), tm.into());
    let mut f = Table::new();
    f.insert("fault_ns".into(), m.fault.fault_ns.into());
    f.insert("ptl_hold_ns".into(), m.fault.ptl_hold_ns.into());
    f.insert("unmap_ns".into(), m.fault.unmap_ns.into());
    f.insert("zero_gbps".into(), m.fault.zero_gbps.into());
    t.insert("fault".into(), f.into());
}

impl Machine {
    /// Line-transfer costs between every pair of nodes, precomputed for
    /// [`CacheLine`](crate::engine::CacheLine) and [`Lock`](crate::engine::Lock).
    ///
    /// A machine whose distances follow nested groups gets one entry per
    /// level (same rounding as `line_transfer_ns`), not a nodes² table.
    pub fn line_cost_table(&self) -> CostTable {
        let n = self.node_count();
        match (
            self.distances.nested_groups(),
            self.distances.group_levels(),
        ) {
            (Some(groups), Some(levels)) => {
                let local = self.distances.local() as f64;
                let ns = std::iter::once(self.distances.local())
                    .chain(levels.iter().copied())
                    .map(|d| {
                        crate::engine::Dur::from_ns_f64(
                            self.interconnect.line_transfer_ns * (d as f64 / local),
                        )
                        .as_ns()
                    })
                    .collect();
                CostTable::from_groups(n, groups.to_vec(), ns)
            }
            _ => CostTable::from_fn_f64(n, |a, b| self.line_transfer_ns(a, b)),
        }
    }
    /// Nanoseconds to zero `bytes` from a CPU on `cpu_node` into memory on
    /// `mem_node`, alone on its node's memory.
    pub fn zero_ns(&self, bytes: u64, cpu_node: usize, mem_node: usize) -> f64 {
        bytes as f64 * self.distances.ratio(cpu_node, mem_node) / self.fault.zero_gbps
    }
    /// The tick period, ns.
    pub fn tick_ns(&self) -> f64 {
        1e9 / self.timer.hz as f64
    }
}
