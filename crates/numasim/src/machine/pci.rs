//! `[pci]`: the PCI(-X) bus behind each I/O node's chipset and the path
//! between that chipset and the node's hub (SHUB on Altix). Shared by
//! every experiment that drives a device (drivers/pci); `docs/pci.md`
//! gives each preset value's source.
//!
//! The local hub register read that `sn_mmiob()` polls is not here: it is
//! the same uncached load of a local SHUB register as the SN2 clock read,
//! so it is [`Machine::chipset_read_ns`] = `[timer] clock_read_ns`, one
//! parameter for both ([ALTIX04] Table 3 times it at 399 ns).

use super::Machine;
use crate::error::InputError;
use crate::input::table::TableReader;
use toml::Table;

#[derive(Debug, Clone, PartialEq)]
pub struct PciBus {
    /// Bus clock, MHz (PCI-X 133).
    pub bus_mhz: f64,
    /// Bytes moved per bus clock (64-bit bus: 8).
    pub bus_bytes: u32,
    /// Bus clocks a master keeps the bus once granted (the PCI latency
    /// timer; `pci_set_master()` raises anything under 16 to 64): sets
    /// the largest DMA burst between two arbitrations.
    pub latency_timer: u32,
    /// Bus clocks one PIO transaction (a posted write, a read request)
    /// holds the bus: address, attribute, response and data phases.
    pub pio_clocks: u32,
    /// A PIO read at the chipset: from its request arriving there to its
    /// response leaving it, beyond the request's own bus transaction (the
    /// device's register and the PCI-X completion back to the chipset), ns.
    pub pio_read_ns: f64,
    /// One crossing between a node's hub and its I/O chipset (a posted
    /// write reaching the chipset, a DMA write reaching the hub), ns.
    pub bridge_ns: f64,
    /// The chipset's turnaround from a write to its force-interrupt
    /// register to the interrupt DMA write leaving it: the fixed part of
    /// `sn_dma_flush()`, ns.
    pub flush_ns: f64,
    /// CPU time to issue one uncached (posted) store, ns.
    pub uc_store_ns: f64,
    /// The link between the hub and the I/O chipset, each direction, GB/s
    /// (an Xtown2 XIO port: 1.2 GB/s): every PIO request, response and
    /// acknowledgement and every DMA write is a packet of 16-byte
    /// micropackets on it, served in order.
    pub io_link_gbps: f64,
}

/// Defaults for a machine without `[pci]` (docs/pci.md): a PCI-X 133
/// bus, and no explicit DMA flush (a chipset that keeps PCI ordering).
mod default {
    pub const BUS_MHZ: f64 = 133.0;
    pub const BUS_BYTES: u64 = 8;
    pub const LATENCY_TIMER: u64 = 64;
    pub const PIO_CLOCKS: u64 = 6;
    pub const PIO_READ_NS: f64 = 672.0;
    pub const BRIDGE_NS: f64 = 70.0;
    pub const FLUSH_NS: f64 = 0.0;
    pub const UC_STORE_NS: f64 = 20.0;
    pub const IO_LINK_GBPS: f64 = 1.2;
}

impl PciBus {
    /// Bytes per second the bus moves.
    pub fn bytes_per_s(&self) -> f64 {
        self.bus_mhz * 1e6 * self.bus_bytes as f64
    }
    /// Largest DMA burst per bus tenure, bytes.
    pub fn burst_bytes(&self) -> u64 {
        self.latency_timer as u64 * self.bus_bytes as u64
    }
    /// What one PIO transaction occupies on the bus, as bytes at the bus rate.
    pub fn pio_bytes(&self) -> u64 {
        self.pio_clocks as u64 * self.bus_bytes as u64
    }
}

impl Default for PciBus {
    fn default() -> Self {
        PciBus {
            bus_mhz: default::BUS_MHZ,
            bus_bytes: default::BUS_BYTES as u32,
            latency_timer: default::LATENCY_TIMER as u32,
            pio_clocks: default::PIO_CLOCKS as u32,
            pio_read_ns: default::PIO_READ_NS,
            bridge_ns: default::BRIDGE_NS,
            flush_ns: default::FLUSH_NS,
            uc_store_ns: default::UC_STORE_NS,
            io_link_gbps: default::IO_LINK_GBPS,
        }
    }
}

/// Largest time accepted (1 ms): far above any bus transaction, small
/// enough that simulated clocks stay short.
const MAX_NS: f64 = 1e6;

fn ns(r: &mut TableReader, key: &'static str, d: f64) -> Result<f64, InputError> {
    match r.nonneg_f64(key)? {
        Some(x) if x.is_nan() || x > MAX_NS => Err(InputError::at(
            r.key(key),
            format!("{x} ns: allowed 0 .. {MAX_NS} (1 ms)"),
        )),
        v => Ok(v.unwrap_or(d)),
    }
}

/// Read `[pci]` (optional).
pub(super) fn read(r: &mut TableReader) -> Result<PciBus, InputError> {
    let mut p = PciBus::default();
    let Some(mut t) = r.table("pci")? else {
        return Ok(p);
    };
    if let Some(mhz) = t.f64("bus_mhz")? {
        if !(1.0..=10_000.0).contains(&mhz) {
            return Err(InputError::at(
                t.key("bus_mhz"),
                format!("{mhz}: allowed 1 .. 10000 MHz (PCI 33, PCI-X 133)"),
            ));
        }
        p.bus_mhz = mhz;
    }
    p.bus_bytes = t.u32_in("bus_bytes", 1, 64)?.unwrap_or(p.bus_bytes);
    p.latency_timer = t
        .u32_in("latency_timer", 1, 255)?
        .unwrap_or(p.latency_timer);
    p.pio_clocks = t.u32_in("pio_clocks", 1, 255)?.unwrap_or(p.pio_clocks);
    p.pio_read_ns = ns(&mut t, "pio_read_ns", p.pio_read_ns)?;
    p.bridge_ns = ns(&mut t, "bridge_ns", p.bridge_ns)?;
    p.flush_ns = ns(&mut t, "flush_ns", p.flush_ns)?;
    p.uc_store_ns = ns(&mut t, "uc_store_ns", p.uc_store_ns)?;
    if let Some(g) = t.f64("io_link_gbps")? {
        if !(0.001..=10_000.0).contains(&g) {
            return Err(InputError::at(
                t.key("io_link_gbps"),
                format!("{g}: allowed 0.001 .. 10000 GB/s (an XIO port: 0.8 or 1.2)"),
            ));
        }
        p.io_link_gbps = g;
    }
    t.finish()?;
    Ok(p)
}

/// Write `[pci]` into a machine document.
pub(super) fn write(m: &Machine, t: &mut Table) {
    let p = &m.pci;
    let mut s = Table::new();
    s.insert("bus_mhz".into(), p.bus_mhz.into());
    s.insert("bus_bytes".into(), (p.bus_bytes as i64).into());
    s.insert("latency_timer".into(), (p.latency_timer as i64).into());
    s.insert("pio_clocks".into(), (p.pio_clocks as i64).into());
    s.insert("pio_read_ns".into(), p.pio_read_ns.into());
    s.insert("bridge_ns".into(), p.bridge_ns.into());
    s.insert("flush_ns".into(), p.flush_ns.into());
    s.insert("uc_store_ns".into(), p.uc_store_ns.into());
    s.insert("io_link_gbps".into(), p.io_link_gbps.into());
    t.insert("pci".into(), s.into());
}

impl Machine {
    /// An uncached load of a register in the local hub, ns: the SN2 clock
    /// read and `sn_mmiob()`'s poll of the PIO write status register are
    /// both this load, so both read `[timer] clock_read_ns`.
    pub fn chipset_read_ns(&self) -> f64 {
        self.timer.clock_read_ns
    }
    /// One-way time a request adds crossing the fabric from `a` to `b`
    /// beyond staying on `a`'s hub, ns: half the extra round trip of a
    /// remote load (`mem_latency_ns`), so the I/O path sees the same
    /// distances as memory.
    pub fn fabric_one_way_ns(&self, a: usize, b: usize) -> f64 {
        (self.mem_latency_ns(a, b) - self.mem_latency_ns(a, a)) / 2.0
    }
}
