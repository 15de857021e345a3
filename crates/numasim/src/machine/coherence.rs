//! Machine parameters of contention: how a contended cache line behaves
//! (`[coherence]`), the timer tick and the clock (`[timer]`), and the CPU
//! cost of a page fault and of zeroing a page (`[fault]`). Shared by every
//! experiment on the machine; `docs/contention.md` says where each preset
//! value comes from.

use super::Machine;
use crate::engine::CostTable;
use crate::error::InputError;
use crate::scenario::table::TableReader;
use toml::Table;

/// A contended line beyond its plain transfer time ([ALTIX04] C1, [WILDFIRE01] C7).
#[derive(Debug, Clone, PartialEq)]
pub struct Coherence {
    /// Extra time a transfer takes per request already queued on the line:
    /// the directory serves (NACKs) each retrying requester in between.
    pub conflict_ns: f64,
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
    /// CPUs' ticks spread evenly over the tick period (as later
    /// `ia64_cpu_local_tick()` does) instead of firing together.
    pub stagger: bool,
}

/// Page-fault costs.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultCosts {
    /// CPU time of a minor fault other than locks, shared lines and
    /// zeroing (trap, `find_vma`, page allocation, return), ns.
    pub fault_ns: f64,
    /// Work done inside each `page_table_lock` critical section of the
    /// anonymous fault path (page-table walk, `set_pte`, rss), ns.
    pub ptl_hold_ns: f64,
    /// One CPU zeroing (clearing) memory on its own node, GB/s; remote
    /// memory is slower by the distance ratio.
    pub zero_gbps: f64,
}

/// Defaults for a machine file without these tables (docs/contention.md).
mod default {
    pub const CONFLICT_NS: f64 = 0.0;
    pub const SPIN_JITTER_NS: f64 = 0.0;
    /// Most Linux ports of the period (i386 2.4: 100; ia64, alpha: 1024).
    pub const HZ: u64 = 1000;
    pub const CLOCK_READ_NS: f64 = 10.0;
    pub const SYSCALL_NS: f64 = 100.0;
    pub const FAULT_NS: f64 = 1000.0;
    pub const PTL_HOLD_NS: f64 = 100.0;
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
        conflict_ns: default::CONFLICT_NS,
        spin_jitter_ns: default::SPIN_JITTER_NS,
    };
    if let Some(mut t) = r.table("coherence")? {
        coherence.conflict_ns = nonneg(&mut t, "conflict_ns", coherence.conflict_ns)?;
        coherence.spin_jitter_ns = nonneg(&mut t, "spin_jitter_ns", coherence.spin_jitter_ns)?;
        t.finish()?;
    }
    let mut timer = Timer {
        hz: default::HZ as u32,
        clock_read_ns: default::CLOCK_READ_NS,
        syscall_ns: default::SYSCALL_NS,
        stagger: false,
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
        timer.stagger = t.bool("stagger")?.unwrap_or(false);
        t.finish()?;
    }
    let mut fault = FaultCosts {
        fault_ns: default::FAULT_NS,
        ptl_hold_ns: default::PTL_HOLD_NS,
        zero_gbps: default::ZERO_GBPS,
    };
    if let Some(mut t) = r.table("fault")? {
        fault.fault_ns = nonneg(&mut t, "fault_ns", fault.fault_ns)?;
        fault.ptl_hold_ns = nonneg(&mut t, "ptl_hold_ns", fault.ptl_hold_ns)?;
        fault.zero_gbps = positive(&mut t, "zero_gbps", fault.zero_gbps)?;
        t.finish()?;
    }
    Ok((coherence, timer, fault))
}

/// Write the three tables into a machine document.
pub(super) fn write(m: &Machine, t: &mut Table) {
    let mut c = Table::new();
    c.insert("conflict_ns".into(), m.coherence.conflict_ns.into());
    c.insert("spin_jitter_ns".into(), m.coherence.spin_jitter_ns.into());
    t.insert("coherence".into(), c.into());
    let mut tm = Table::new();
    tm.insert("hz".into(), (m.timer.hz as i64).into());
    tm.insert("clock_read_ns".into(), m.timer.clock_read_ns.into());
    tm.insert("syscall_ns".into(), m.timer.syscall_ns.into());
    tm.insert("stagger".into(), m.timer.stagger.into());
    t.insert("timer".into(), tm.into());
    let mut f = Table::new();
    f.insert("fault_ns".into(), m.fault.fault_ns.into());
    f.insert("ptl_hold_ns".into(), m.fault.ptl_hold_ns.into());
    f.insert("zero_gbps".into(), m.fault.zero_gbps.into());
    t.insert("fault".into(), f.into());
}

impl Machine {
    /// Line-transfer costs between every pair of nodes, precomputed for
    /// [`CacheLine`](crate::engine::CacheLine) and [`Lock`](crate::engine::Lock).
    pub fn line_cost_table(&self) -> CostTable {
        CostTable::from_fn_f64(self.node_count(), |a, b| self.line_transfer_ns(a, b))
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
