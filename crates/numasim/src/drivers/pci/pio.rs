//! PIO reads and the ordering of posted PIO writes on SN2 ([ALTIX04] G1–G3).
//!
//! A CPU on `cpu_node` times operations on a device behind `device_node`'s
//! chipset, one after another with a random gap (so they meet a busy bus
//! at every phase), while `load = busy` runs a second bus master that
//! streams DMA writes into memory as fast as the bus lets it.
//!
//! Every stage is an event, so each packet meets the traffic ahead of it:
//!
//! - PIO read (`readX_relaxed`): the request leaves the CPU through its hub
//!   (half a local hub register read), crosses the fabric to the I/O node's
//!   hub, goes out on the hub–chipset link (one micropacket, behind the
//!   posted writes before it), waits its turn on the bus (PCI ordering: a
//!   read does not pass posted writes), spends `pci.pio_read_ns` at the
//!   device, and its response (two micropackets) comes back on the link
//!   behind whatever DMA the chipset queued there.
//! - Normal read (`readX` on sn2): the same, then `sn_dma_flush()`:
//!   `*flush_addr = 0` (a store to the flag line, which the CPU holds
//!   shared since its last spin: an ownership miss to the flag's node; the
//!   volatile store after it is a release store on ia64, so it waits for
//!   that), then the posted write to the chipset's force-interrupt
//!   register; `pci.flush_ns` later the chipset sends an interrupt write
//!   with the barrier attribute, which leaves the hub only when every DMA
//!   write accepted before it is acknowledged; at the flag's home the write
//!   must first recall the line the CPU holds dirty, and the CPU's next
//!   spin read misses to it.
//! - Posted writes: each costs the CPU `pci.uc_store_ns`, reaches the I/O
//!   node's hub, goes out on the link (two micropackets), and the chipset
//!   puts it on the bus in order and answers with a write response (one
//!   micropacket on the link back, behind queued DMA) that decrements the
//!   issuing hub's pending-write count.
//! - `sn_mmiob()` loops on the local hub's `PIO_WRITE_STATUS` register
//!   (each poll one local hub register read, seeing the register about
//!   half-way through) until the count shows nothing pending; between
//!   polls it waits `udelay(1)` (arch/ia64/sn/io/machvec/iomv.c
//!   up to 2.6.7-rc2) or only `cpu_relax()` (from 2.6.7-rc3), per [`MmiobWait`].

use super::{DmaEv, IoPath, Landed, REG_BYTES};
use crate::engine::{Dur, SimRng, Time, TopQueue};
use crate::machine::Machine;
use rand::RngExt;

knob_enum! {
    /// How a driver reads a device register (G1, G2).
    PioRead {
        /// `readX()`: DMA write data flushed after the read (sn2).
        Normal = "normal",
        /// `readX_relaxed()`: no flush.
        Relaxed = "relaxed",
    }
}

knob_enum! {
    /// How posted PIO writes are ordered before a lock is released (G3).
    PioFlush {
        /// Read a device register (`Documentation/io_ordering.txt`), with the flush.
        PioRead = "pio-read",
        /// The same read, relaxed.
        RelaxedRead = "relaxed-read",
        /// `sn_mmiob()`: poll the local hub until the writes reached the chipset.
        Mmiob = "mmiob",
    }
}

/// What `sn_mmiob()` does between two polls of the hub's register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmiobWait {
    /// `udelay(1)`: 2.6.0 to 2.6.7-rc2 (and the early 2.6 kernels of
    /// [ALTIX04], which added `readX_relaxed`).
    Udelay,
    /// `cpu_relax()` (ia64 `hint @pause`): 2.6.7-rc3 on, "ia64: don't
    /// udelay() in sn_mmiob".
    CpuRelax,
}

impl MmiobWait {
    /// The values of the `mmiob_wait` key.
    pub const NAMES: &'static [(&'static str, MmiobWait)] = &[
        ("udelay", MmiobWait::Udelay),
        ("cpu-relax", MmiobWait::CpuRelax),
    ];
}

knob_enum! {
    /// DMA traffic on the device's bus while operations are timed.
    Load {
        Idle = "idle",
        /// Another master streams DMA writes as fast as the bus allows.
        Busy = "busy",
    }
}

/// One timed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read(PioRead),
    /// `writes` posted writes, then `method` to order them.
    Flush {
        method: PioFlush,
        writes: u32,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub device_node: usize,
    pub cpu_node: usize,
    pub load: Load,
    /// Nodes the background DMA writes go to, in turn.
    pub dma_nodes: Vec<usize>,
    /// Operations timed.
    pub ops: u32,
    /// `sn_mmiob()`'s wait between polls.
    pub mmiob_wait: MmiobWait,
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PioResult {
    /// Mean time of one operation, ns.
    pub mean_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    /// Background DMA delivered to memory while the operations ran, MB/s.
    pub dma_mbps: f64,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Dma(DmaEv),
    /// The background master's burst ended on the bus: the chipset accepts it.
    BurstDone,
    /// The background master asks for the bus again.
    MasterRequest,
    OpStart,
    /// A posted write reached the I/O node's hub.
    WriteAtHub,
    WriteAtChipset,
    /// A write response reached the issuing CPU's hub.
    WriteAcked,
    ReadAtHub,
    ReadAtChipset,
    /// The device answered: the response leaves the chipset.
    ReadResponse,
    ReadDone,
    ForceIntAtHub,
    ForceIntAtChipset,
    InterruptOut,
    /// One `sn_mmiob()` poll samples the hub's register.
    PollSample,
    FlagSeen,
}

/// The tag on the flush's interrupt write.
const FLAG: u64 = 1;
/// The background master starts this long before the first operation.
const WARMUP: Dur = Dur::from_us(20);
/// Gaps between operations are uniform in `0..GAP`: several bursts long,
/// so operations fall at every phase of the master's bursts.
const GAP_NS: u64 = 2_000;
/// Bursts the chipset's DMA write buffer holds waiting for the link (not
/// stated; enough to keep a link faster than the bus busy).
const CHIPSET_BUFFER_BURSTS: u64 = 2;
/// `udelay(1)`: ia64 spins on the ITC for one microsecond.
const UDELAY_1: Dur = Dur::from_us(1);

struct State<'m> {
    m: &'m Machine,
    s: &'m Setup,
    op: Op,
    path: IoPath<'m>,
    /// The handled event stays on top of the heap until the step's first
    /// new event replaces it (one sift where pop then push take two).
    q: TopQueue<Ev>,
    rng: SimRng,
    t0: Time,
    /// Write responses the CPU's hub has seen in this operation.
    acks: u32,
    /// When the current `sn_mmiob()` poll was issued.
    poll_issued: Time,
    /// The latest write response scheduled so far.
    last_ack_at: Time,
    next_dma_node: usize,
    times: Vec<u64>,
    ops_started: u32,
    busy_until_end: bool,
    /// A DMA stage's next stages and landed writes, reused across events
    /// (two fresh vectors an event were the busy bus's malloc traffic).
    dma_next: Vec<(Time, DmaEv)>,
    dma_landed: Vec<Landed>,
}

impl State<'_> {
    /// CPU to its hub (half a local hub register read), then the fabric to
    /// the I/O node's hub: when a request from the CPU reaches that hub.
    fn to_io_hub(&self) -> Dur {
        Dur::from_ns_f64(self.m.chipset_read_ns() / 2.0)
            + self.path.fabric(self.s.cpu_node, self.s.device_node)
    }
    fn uc_store(&self) -> Dur {
        Dur::from_ns_f64(self.m.pci.uc_store_ns)
    }
    fn push(&mut self, at: Time, ev: Ev) {
        self.q
            .push(at, ev)
            .expect("stages are scheduled at or after now");
    }
    fn finish_op(&mut self, now: Time) {
        self.times.push((now - self.t0).as_ns());
        if self.ops_started < self.s.ops {
            let gap = Dur::from_ns(self.rng.random_range(0..GAP_NS));
            self.push(now + gap, Ev::OpStart);
        } else {
            self.busy_until_end = false;
        }
    }
    fn start_read(&mut self, now: Time) {
        let at = now + self.to_io_hub();
        self.push(at, Ev::ReadAtHub);
    }
    /// Issue an `sn_mmiob()` poll at `at`: it samples the register half-way.
    fn poll(&mut self, at: Time) {
        self.poll_issued = at;
        let sample = at + Dur::from_ns_f64(self.m.chipset_read_ns() / 2.0);
        self.push(sample, Ev::PollSample);
    }
    fn writes(&self) -> u32 {
        match self.op {
            Op::Flush { writes, .. } => writes,
            Op::Read(_) => 0,
        }
    }
    fn step(&mut self, now: Time, ev: Ev) {
        let (c, d) = (self.s.cpu_node, self.s.device_node);
        match ev {
            Ev::Dma(e) => {
                let mut next = std::mem::take(&mut self.dma_next);
                let mut landed = std::mem::take(&mut self.dma_landed);
                self.path.handle(now, e, &mut next, &mut landed);
                for (t, e) in next.drain(..) {
                    self.push(t, Ev::Dma(e));
                }
                for l in landed.drain(..) {
                    debug_assert_eq!(l.tag, FLAG);
                    let seen = self.path.flag_seen(l.in_memory, c);
                    self.push(seen, Ev::FlagSeen);
                }
                (self.dma_next, self.dma_landed) = (next, landed);
            }
            Ev::MasterRequest => {
                if self.busy_until_end {
                    // The chipset takes a burst only while its DMA write
                    // buffer has room: a link slower than the bus throttles
                    // the master instead of queueing without bound.
                    let room = Dur::from_ns(
                        self.path.xio_time(self.m.pci.burst_bytes()).as_ns()
                            * CHIPSET_BUFFER_BURSTS,
                    );
                    let backlog = self.path.inbound_backlog(now);
                    if backlog > room {
                        self.push(now + (backlog - room), Ev::MasterRequest);
                    } else {
                        let done = self.path.bus.submit(now, self.m.pci.burst_bytes());
                        self.push(done, Ev::BurstDone);
                    }
                }
            }
            Ev::BurstDone => {
                let target = self.s.dma_nodes[self.next_dma_node % self.s.dma_nodes.len()];
                self.next_dma_node += 1;
                let burst = self.m.pci.burst_bytes() as u32;
                let (t, e) = self.path.accept(now, target, burst, false, None);
                self.push(t, Ev::Dma(e));
                self.push(now, Ev::MasterRequest);
            }
            Ev::OpStart => {
                self.t0 = now;
                self.acks = 0;
                self.ops_started += 1;
                match self.op {
                    Op::Read(_) => self.start_read(now),
                    Op::Flush { method, writes } => {
                        let mut t = now;
                        for _ in 0..writes {
                            t += self.uc_store();
                            let at = t + self.to_io_hub();
                            self.push(at, Ev::WriteAtHub);
                        }
                        match method {
                            PioFlush::PioRead | PioFlush::RelaxedRead => self.start_read(t),
                            // The register load is ordered after the
                            // uncached stores before it.
                            PioFlush::Mmiob => self.poll(t),
                        }
                    }
                }
            }
            Ev::WriteAtHub => {
                let at = self.path.hub_to_chipset(now, REG_BYTES);
                self.push(at, Ev::WriteAtChipset);
            }
            Ev::WriteAtChipset => {
                // Posted: queued for the bus in order, answered at once.
                self.path.bus.submit(now, self.m.pci.pio_bytes());
                let back = self.path.chipset_to_hub(now, 0) + self.path.fabric(d, c);
                self.last_ack_at = self.last_ack_at.max(back);
                self.push(back, Ev::WriteAcked);
            }
            Ev::WriteAcked => self.acks += 1,
            Ev::PollSample => {
                let done = self.poll_issued + Dur::from_ns_f64(self.m.chipset_read_ns());
                if self.acks >= self.writes() {
                    self.push(done, Ev::FlagSeen);
                } else {
                    let wait = match self.s.mmiob_wait {
                        MmiobWait::Udelay => UDELAY_1,
                        MmiobWait::CpuRelax => Dur::ZERO,
                    };
                    let mut next = done + wait;
                    if next <= now {
                        // Free polls (a zero register read, no wait) see
                        // the next response arrive rather than spinning in
                        // place.
                        next = self.last_ack_at.max(now + Dur::from_ns(1));
                    }
                    self.poll(next);
                }
            }
            Ev::ReadAtHub => {
                let at = self.path.hub_to_chipset(now, 0);
                self.push(at, Ev::ReadAtChipset);
            }
            Ev::ReadAtChipset => {
                // Behind every posted write queued before it (PCI ordering).
                let done = self.path.bus.submit(now, self.m.pci.pio_bytes());
                let at = done + Dur::from_ns_f64(self.m.pci.pio_read_ns);
                self.push(at, Ev::ReadResponse);
            }
            Ev::ReadResponse => {
                let at = self.path.chipset_to_hub(now, REG_BYTES)
                    + self.path.fabric(d, c)
                    + Dur::from_ns_f64(self.m.chipset_read_ns() / 2.0);
                self.push(at, Ev::ReadDone);
            }
            Ev::ReadDone => {
                let flush = match self.op {
                    Op::Read(PioRead::Normal)
                    | Op::Flush {
                        method: PioFlush::PioRead,
                        ..
                    } => true,
                    Op::Read(PioRead::Relaxed) | Op::Flush { .. } => false,
                };
                if flush {
                    let at = self.path.flush_store_at_hub(now, c);
                    self.push(at, Ev::ForceIntAtHub);
                } else {
                    self.finish_op(now);
                }
            }
            Ev::ForceIntAtHub => {
                let at = self.path.force_int_at_chipset(now);
                self.push(at, Ev::ForceIntAtChipset);
            }
            Ev::ForceIntAtChipset => {
                let at = self.path.flush_interrupt_due(now);
                self.push(at, Ev::InterruptOut);
            }
            Ev::InterruptOut => {
                let (t, e) = self.path.flush_interrupt(now, FLAG);
                self.push(t, Ev::Dma(e));
            }
            Ev::FlagSeen => self.finish_op(now),
        }
    }
}

/// Time `setup.ops` operations `op`; deterministic for a seed.
pub fn simulate(machine: &Machine, setup: &Setup, op: Op) -> PioResult {
    let mut st = State {
        m: machine,
        s: setup,
        op,
        path: IoPath::new(machine, setup.device_node),
        q: TopQueue::with_capacity(64),
        rng: crate::engine::stream(setup.seed, "pci-pio", 0),
        t0: Time::ZERO,
        acks: 0,
        poll_issued: Time::ZERO,
        last_ack_at: Time::ZERO,
        next_dma_node: 0,
        times: Vec::with_capacity(setup.ops as usize),
        ops_started: 0,
        busy_until_end: setup.load == Load::Busy && !setup.dma_nodes.is_empty(),
        dma_next: Vec::new(),
        dma_landed: Vec::new(),
    };
    let busy = st.busy_until_end;
    if busy {
        st.push(Time::ZERO, Ev::MasterRequest);
    }
    st.push(Time::ZERO + WARMUP, Ev::OpStart);
    let mut first_op = None;
    while let Some((now, ev)) = st.q.take_next() {
        if first_op.is_none() && matches!(ev, Ev::OpStart) {
            first_op = Some((now, st.path.bytes_written));
        }
        st.step(now, ev);
        if st.times.len() as u32 >= setup.ops && !st.busy_until_end {
            break;
        }
    }
    let end = st.q.now();
    let n = st.times.len().max(1) as f64;
    let (t_first, b_first) = first_op.unwrap_or((Time::ZERO, 0));
    let span = (end - t_first).as_ns().max(1) as f64;
    PioResult {
        mean_ns: st.times.iter().sum::<u64>() as f64 / n,
        min_ns: st.times.iter().copied().min().unwrap_or(0) as f64,
        max_ns: st.times.iter().copied().max().unwrap_or(0) as f64,
        dma_mbps: if busy {
            (st.path.bytes_written - b_first) as f64 / span * 1e3
        } else {
            0.0
        },
    }
}
