//! A PCI bus behind one node's I/O chipset, and the DMA writes its devices
//! send into memory ([ALTIX04] G1–G4; docs/pci.md).
//!
//! [`IoPath`] is the shared part a driver model builds on: the bus (one
//! FIFO [`Server`]: every master's burst and every PIO transaction holds
//! it in turn), the I/O node's link into the fabric, and each target
//! node's memory (servers too), and the hub–chipset link (an XIO port, one
//! server each way: every packet is a header micropacket plus 16-byte data
//! micropackets). A DMA write is accepted by the chipset when its bus
//! transfer ends, crosses the link to the node's hub, travels the
//! fabric to its target node (`Machine::fabric_one_way_ns`, the same
//! distances as memory latency), is written by that node's memory and is
//! acknowledged back to the hub. A write with the barrier attribute (SGI's
//! chipsets set it on writes to consistent memory and on interrupts) waits
//! at the hub until every write accepted before it is acknowledged.
//!
//! The path has no clock of its own: the driver model owns the event
//! queue, wraps [`DmaEv`] in its own event enum and hands each back to
//! [`IoPath::handle`] when it is due, so resource submissions stay in time
//! order.

pub(crate) mod dma;
pub(crate) mod pio;

use crate::engine::{Dur, Server, Time};
use crate::error::InputError;
use crate::machine::Machine;
use std::collections::{BTreeMap, BTreeSet};

/// A stage of one DMA write, due at the time it was scheduled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaEv {
    /// The write reached the I/O node's hub.
    AtHub(Write),
    /// The write reached its target node's memory controller.
    AtMemory(Write),
    /// Its acknowledgement reached the I/O node's hub.
    Acked { seq: u64 },
}

/// One DMA write in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// Acceptance order at the chipset.
    pub seq: u64,
    pub target: u32,
    pub bytes: u32,
    /// Ordered after every earlier write (consistent memory, interrupts).
    pub barrier: bool,
    /// The model's token, returned in a [`Landed`] notice; `None`: no notice.
    pub tag: Option<u64>,
    /// Coherence work at the target before the write is complete (the
    /// home invalidating or recalling a cached copy of the line): delays
    /// its arrival in memory and so its acknowledgement.
    pub snoop: Dur,
}

/// A tagged write's arrival: in memory at `in_memory`, its
/// acknowledgement back at the I/O node's hub at `acked`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Landed {
    pub tag: u64,
    pub in_memory: Time,
    pub acked: Time,
}

/// The bus and DMA path of one I/O node; see the module documentation.
#[derive(Debug)]
pub struct IoPath<'m> {
    machine: &'m Machine,
    /// The node whose chipset the bus hangs off.
    pub node: usize,
    pub bus: Server,
    /// The I/O node's link into the fabric (writes to other nodes).
    link: Server,
    /// The hub–chipset link, chipset to hub (DMA writes, PIO read
    /// responses, PIO write acknowledgements, DMA read requests).
    xio_in: Server,
    /// The same link, hub to chipset (PIO writes and read requests, DMA
    /// read responses).
    xio_out: Server,
    /// Memory of each node written so far.
    mem: BTreeMap<u32, Server>,
    next_seq: u64,
    unacked: BTreeSet<u64>,
    /// Barrier writes at the hub waiting for earlier acknowledgements.
    parked: Vec<Write>,
    /// Bytes of DMA written to memory (conservation checks, rates).
    pub bytes_written: u64,
}

impl<'m> IoPath<'m> {
    pub fn new(machine: &'m Machine, node: usize) -> Self {
        IoPath {
            machine,
            node,
            bus: Server::new(machine.pci.bytes_per_s()),
            link: Server::new(rate(machine.interconnect.link_gbps)),
            xio_in: Server::new(rate(machine.pci.io_link_gbps)),
            xio_out: Server::new(rate(machine.pci.io_link_gbps)),
            mem: BTreeMap::new(),
            next_seq: 0,
            unacked: BTreeSet::new(),
            parked: Vec::new(),
            bytes_written: 0,
        }
    }

    /// One-way crossing between the chipset and its hub.
    pub fn bridge(&self) -> Dur {
        Dur::from_ns_f64(self.machine.pci.bridge_ns)
    }

    /// A packet leaves the chipset for the hub at `now` carrying `payload`
    /// bytes: when it reaches the hub (after the packets queued before it).
    /// Call in time order.
    pub fn chipset_to_hub(&mut self, now: Time, payload: u64) -> Time {
        self.xio_in.submit(now, xio_packet_bytes(payload)) + self.bridge()
    }

    /// A packet leaves the hub for the chipset at `now`: when it arrives.
    /// Call in time order.
    pub fn hub_to_chipset(&mut self, now: Time, payload: u64) -> Time {
        self.xio_out.submit(now, xio_packet_bytes(payload)) + self.bridge()
    }

    /// Work queued on the chipset-to-hub link at `now`: what the chipset's
    /// DMA write buffer holds.
    pub fn inbound_backlog(&self, now: Time) -> Dur {
        self.xio_in.backlog(now)
    }

    /// Link time of one packet carrying `payload` bytes.
    pub fn xio_time(&self, payload: u64) -> Dur {
        Dur::for_bytes(xio_packet_bytes(payload), self.xio_in.rate())
    }

    /// Fabric one-way time between two nodes.
    pub fn fabric(&self, a: usize, b: usize) -> Dur {
        Dur::from_ns_f64(self.machine.fabric_one_way_ns(a, b))
    }

    /// `sn_dma_flush()` after a read returned to a CPU on `cpu` at `now`
    /// (`pcibr_dma.c`, its PIC branch): `*flush_addr = 0` is a store to the
    /// flag line, which the CPU holds only shared since its last spin (an
    /// ownership miss to the flag's node), and the volatile force-interrupt
    /// store after it is a release store (`st.rel` on ia64), so it waits for
    /// that; then the store leaves through the CPU's hub: when it reaches
    /// this node's hub.
    pub fn flush_store_at_hub(&self, now: Time, cpu: usize) -> Time {
        now + self.flag_miss(cpu)
            + Dur::from_ns_f64(self.machine.pci.uc_store_ns)
            + (Dur::from_ns_f64(self.machine.chipset_read_ns() / 2.0) + self.fabric(cpu, self.node))
    }

    /// The force-interrupt store leaves the hub for the chipset at `now`:
    /// when the chipset has it. Call in time order.
    pub fn force_int_at_chipset(&mut self, now: Time) -> Time {
        self.hub_to_chipset(now, REG_BYTES)
    }

    /// The chipset has the force-interrupt store at `now`: when its
    /// interrupt write leaves (`pci.flush_ns`, the PIC's turnaround).
    pub fn flush_interrupt_due(&self, now: Time) -> Time {
        now + Dur::from_ns_f64(self.machine.pci.flush_ns)
    }

    /// The chipset sends the flush's interrupt write at `now`: a write of
    /// the flag word in this node's memory (where the PROM sets up the
    /// flush list) with the barrier attribute, so every DMA write accepted
    /// before it is ahead of it. Its [`Landed`] notice carries `tag`.
    pub fn flush_interrupt(&mut self, now: Time, tag: u64) -> (Time, DmaEv) {
        self.accept(now, self.node, REG_BYTES as u32, true, Some(tag))
    }

    /// The flag word reached memory at `in_memory`: the write first
    /// recalled the flag line the spinning CPU on `cpu` held dirty, and the
    /// CPU's next spin read misses to it. When the CPU sees the flag.
    pub fn flag_seen(&self, in_memory: Time, cpu: usize) -> Time {
        in_memory + self.flag_miss(cpu) + self.flag_miss(cpu)
    }

    /// A load or ownership miss from a CPU on `cpu` to the flush flag's
    /// node (this one).
    pub fn flag_miss(&self, cpu: usize) -> Dur {
        Dur::from_ns_f64(self.machine.mem_latency_ns(cpu, self.node))
    }

    /// The chipset accepts a DMA write at `now` (its bus transfer ended,
    /// or the chipset made it: an interrupt). Returns its first stage.
    pub fn accept(
        &mut self,
        now: Time,
        target: usize,
        bytes: u32,
        barrier: bool,
        tag: Option<u64>,
    ) -> (Time, DmaEv) {
        self.accept_snooped(now, target, bytes, barrier, tag, Dur::ZERO)
    }

    /// [`IoPath::accept`] for a write whose line is cached elsewhere: the
    /// target's home spends `snoop` on it before the write completes.
    pub fn accept_snooped(
        &mut self,
        now: Time,
        target: usize,
        bytes: u32,
        barrier: bool,
        tag: Option<u64>,
        snoop: Dur,
    ) -> (Time, DmaEv) {
        let w = Write {
            seq: self.next_seq,
            target: target as u32,
            bytes,
            barrier,
            tag,
            snoop,
        };
        self.next_seq += 1;
        self.unacked.insert(w.seq);
        let at_hub = self.chipset_to_hub(now, bytes as u64);
        (at_hub, DmaEv::AtHub(w))
    }

    /// True when every write accepted before `seq` is acknowledged.
    pub fn acked_below(&self, seq: u64) -> bool {
        self.unacked.first().is_none_or(|&s| s >= seq)
    }

    /// Handle one due stage at `now`: push later stages to `next`, and a
    /// notice for each tagged write that reached memory to `landed`.
    pub fn handle(
        &mut self,
        now: Time,
        ev: DmaEv,
        next: &mut Vec<(Time, DmaEv)>,
        landed: &mut Vec<Landed>,
    ) {
        match ev {
            DmaEv::AtHub(w) => {
                if w.barrier && !self.acked_below(w.seq) {
                    self.parked.push(w);
                } else {
                    self.leave_hub(now, w, next, landed);
                }
            }
            DmaEv::AtMemory(w) => self.write_memory(now, w, next, landed),
            DmaEv::Acked { seq } => {
                self.unacked.remove(&seq);
                // Release parked barriers in acceptance order, each once
                // everything before it is acknowledged.
                self.parked.sort_by_key(|w| w.seq);
                while let Some(&w) = self.parked.first() {
                    if !self.acked_below(w.seq) {
                        break;
                    }
                    self.parked.remove(0);
                    self.leave_hub(now, w, next, landed);
                }
            }
        }
    }

    fn leave_hub(
        &mut self,
        now: Time,
        w: Write,
        next: &mut Vec<(Time, DmaEv)>,
        landed: &mut Vec<Landed>,
    ) {
        let target = w.target as usize;
        if target == self.node {
            self.write_memory(now, w, next, landed);
        } else {
            let sent = self.link.submit(now, w.bytes as u64);
            next.push((sent + self.fabric(self.node, target), DmaEv::AtMemory(w)));
        }
    }

    fn write_memory(
        &mut self,
        now: Time,
        w: Write,
        next: &mut Vec<(Time, DmaEv)>,
        landed: &mut Vec<Landed>,
    ) {
        let rate = rate(self.machine.memory.bandwidth_gbps);
        let done = self
            .mem
            .entry(w.target)
            .or_insert_with(|| Server::new(rate))
            .submit(now, w.bytes as u64)
            + w.snoop;
        self.bytes_written += w.bytes as u64;
        let acked = done + self.fabric(w.target as usize, self.node);
        next.push((acked, DmaEv::Acked { seq: w.seq }));
        if let Some(tag) = w.tag {
            landed.push(Landed {
                tag,
                in_memory: done,
                acked,
            });
        }
    }
}

/// Bytes of data a register read returns and a PIO write or the flush's
/// interrupt write carries (one 64-bit register).
pub const REG_BYTES: u64 = 8;

/// Payload bytes of one XIO micropacket (128 bits of data beside 32 of
/// control, which the port's quoted rate does not count).
pub const MICROPACKET_BYTES: u64 = 16;

/// Bytes a packet carrying `payload` bytes occupies on the hub–chipset
/// link: one header micropacket (command, address) and the data's.
pub fn xio_packet_bytes(payload: u64) -> u64 {
    MICROPACKET_BYTES * (1 + payload.div_ceil(MICROPACKET_BYTES))
}

/// Bytes per second of a GB/s figure. The machine accepts any positive
/// finite GB/s; beyond 10⁹ GB/s (1e300 would overflow to infinity) a
/// byte takes no time anyway, so the rate is capped there.
fn rate(gbps: f64) -> f64 {
    (gbps * 1e9).min(1e18)
}

/// Check a node id given under `key` against the machine.
pub fn node_in(machine: &Machine, key: &str, node: u64) -> Result<usize, InputError> {
    let n = machine.node_count() as u64;
    if node >= n {
        return Err(InputError::at(
            key,
            format!(
                "node {node} does not exist: machine `{}` has nodes 0..{}",
                machine.name,
                n - 1
            ),
        ));
    }
    Ok(node as usize)
}
