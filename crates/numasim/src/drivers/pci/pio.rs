//! PIO reads and the ordering of posted PIO writes on SN2 ([ALTIX04] G1–G3).
//!
//! A CPU on `cpu_node` times operations on a device behind `device_node`'s
//! chipset, one after another with a random gap (so they meet a busy bus
//! at every phase), while `load = busy` runs a second bus master that
//! streams DMA writes into memory as fast as the bus lets it.
//!
//! - PIO read (`read_relaxed`): the request leaves the CPU through its hub
//!   (half a local hub register read), crosses the fabric and the
//!   chipset link, waits its turn on the bus, and returns; idle it costs
//!   `chipset_read + 2 fabric + pci.pio_read_ns`.
//! - Normal read (`readX` on Altix): the same, then `sn_dma_flush()`: a
//!   posted write to the chipset's force-interrupt register; after
//!   `pci.flush_ns` the chipset sends an interrupt write with the barrier
//!   attribute, which leaves the hub only when every DMA write the chipset
//!   accepted before it is acknowledged by its memory, and lands on a flag
//!   in the device node's memory that the CPU spins on (its copy is
//!   invalidated; the next read misses to the flag's node).
//! - Posted writes: each costs the CPU `pci.uc_store_ns`, reaches the
//!   chipset, which acknowledges it to the issuing hub at once and puts it
//!   on the bus in order. `sn_mmiob()` polls the local hub's PIO write
//!   status until the acknowledgements are in: each poll is one local hub
//!   register read and sees the register about half-way through.

use super::{DmaEv, IoPath, Landed};
use crate::engine::{Dur, EventQueue, SimRng, Time};
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
    WriteAtChipset {
        last: bool,
    },
    ReadAtChipset,
    ReadDone,
    ForceIntAtChipset,
    InterruptOut,
    FlagSeen,
}

/// The tag on the flush's interrupt write.
const FLAG: u64 = 1;
/// The background master starts this long before the first operation.
const WARMUP: Dur = Dur::from_us(20);
/// Gaps between operations are uniform in `0..GAP`: several bursts long,
/// so operations fall at every phase of the master's bursts.
const GAP_NS: u64 = 2_000;

struct State<'m> {
    m: &'m Machine,
    s: &'m Setup,
    op: Op,
    path: IoPath<'m>,
    q: EventQueue<Ev>,
    rng: SimRng,
    t0: Time,
    /// Issue time of the operation's read request.
    read_issued: Time,
    /// When the last posted write's acknowledgement reaches the CPU's hub.
    last_ack: Time,
    /// When `sn_mmiob()` started polling.
    poll_from: Time,
    next_dma_node: usize,
    times: Vec<u64>,
    ops_started: u32,
    busy_until_end: bool,
}

impl State<'_> {
    /// CPU to its hub (half a local hub register read), the fabric to the
    /// I/O node, the chipset link: when a request from the CPU reaches the
    /// chipset.
    fn to_chipset(&self) -> Dur {
        Dur::from_ns_f64(self.m.chipset_read_ns() / 2.0)
            + self.path.fabric(self.s.cpu_node, self.s.device_node)
            + self.path.bridge()
    }
    fn uc_store(&self) -> Dur {
        Dur::from_ns_f64(self.m.pci.uc_store_ns)
    }
    fn push(&mut self, at: Time, ev: Ev) {
        self.q
            .push(at, ev)
            .expect("stages are scheduled at or after now");
    }
    fn dma(&mut self, stages: Vec<(Time, DmaEv)>) {
        for (t, e) in stages {
            self.push(t, Ev::Dma(e));
        }
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
        self.read_issued = now;
        let at = now + self.to_chipset();
        self.push(at, Ev::ReadAtChipset);
    }
    fn step(&mut self, now: Time, ev: Ev) {
        let cr = Dur::from_ns_f64(self.m.chipset_read_ns());
        match ev {
            Ev::Dma(e) => {
                let (mut next, mut landed) = (Vec::new(), Vec::<Landed>::new());
                self.path.handle(now, e, &mut next, &mut landed);
                self.dma(next);
                for l in landed {
                    debug_assert_eq!(l.tag, FLAG);
                    // The CPU's copy of the flag was invalidated: its next
                    // spin read misses to the flag's node.
                    let miss = Dur::from_ns_f64(
                        self.m.mem_latency_ns(self.s.cpu_node, self.s.device_node),
                    );
                    self.push(l.in_memory + miss, Ev::FlagSeen);
                }
            }
            Ev::MasterRequest => {
                if self.busy_until_end {
                    let done = self.path.bus.submit(now, self.m.pci.burst_bytes());
                    self.push(done, Ev::BurstDone);
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
                self.ops_started += 1;
                match self.op {
                    Op::Read(_) => self.start_read(now),
                    Op::Flush { method, writes } => {
                        let mut t = now;
                        for k in 0..writes {
                            t += self.uc_store();
                            let at = t + self.to_chipset();
                            self.push(
                                at,
                                Ev::WriteAtChipset {
                                    last: k + 1 == writes,
                                },
                            );
                        }
                        match method {
                            PioFlush::PioRead | PioFlush::RelaxedRead => self.start_read(t),
                            PioFlush::Mmiob => {
                                self.poll_from = t;
                                if writes == 0 {
                                    // Nothing pending: the first poll says so.
                                    let done = t + cr;
                                    self.push(done, Ev::FlagSeen);
                                }
                            }
                        }
                    }
                }
            }
            Ev::WriteAtChipset { last } => {
                // Posted: the chipset acknowledges it to the issuing hub on
                // arrival and puts it on the bus behind what is queued.
                self.path.bus.submit(now, self.m.pci.pio_bytes());
                if last {
                    self.last_ack = now
                        + self.path.bridge()
                        + self.path.fabric(self.s.device_node, self.s.cpu_node);
                    if let Op::Flush {
                        method: PioFlush::Mmiob,
                        ..
                    } = self.op
                    {
                        // Poll k samples the register at (k − ½) reads.
                        let from = self.poll_from.as_ns() as f64;
                        let need = self.last_ack.as_ns() as f64 - from;
                        let crn = self.m.chipset_read_ns();
                        let done = if crn > 0.0 {
                            let polls = ((need / crn + 0.5).ceil()).max(1.0);
                            Time::from_ns((from + polls * crn).round() as u64)
                        } else {
                            // Free polls see the last acknowledgement arrive.
                            self.last_ack
                        };
                        self.push(done.max(now), Ev::FlagSeen);
                    }
                }
            }
            Ev::ReadAtChipset => {
                let hold = self.m.pci.pio_bytes();
                let done = self.path.bus.submit(now, hold);
                let occupancy = Dur::for_bytes(hold, self.path.bus.rate());
                let wait = (done - now).as_ns().saturating_sub(occupancy.as_ns());
                let idle = self.m.chipset_read_ns()
                    + 2.0
                        * self
                            .m
                            .fabric_one_way_ns(self.s.cpu_node, self.s.device_node)
                    + self.m.pci.pio_read_ns;
                let back = self.read_issued + Dur::from_ns_f64(idle) + Dur::from_ns(wait);
                self.push(back.max(now), Ev::ReadDone);
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
                    // sn_dma_flush(): clear the flag (a cached store), then
                    // a posted write to the force-interrupt register.
                    let at = now + self.uc_store() + self.to_chipset();
                    self.push(at, Ev::ForceIntAtChipset);
                } else {
                    self.finish_op(now);
                }
            }
            Ev::ForceIntAtChipset => {
                let at = now + Dur::from_ns_f64(self.m.pci.flush_ns);
                self.push(at, Ev::InterruptOut);
            }
            Ev::InterruptOut => {
                // Everything the chipset accepted until now is ahead of it.
                let (t, e) = self
                    .path
                    .accept(now, self.s.device_node, 8, true, Some(FLAG));
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
        q: EventQueue::with_capacity(64),
        rng: crate::engine::stream(setup.seed, "pci-pio", 0),
        t0: Time::ZERO,
        read_issued: Time::ZERO,
        last_ack: Time::ZERO,
        poll_from: Time::ZERO,
        next_dma_node: 0,
        times: Vec::with_capacity(setup.ops as usize),
        ops_started: 0,
        busy_until_end: setup.load == Load::Busy && !setup.dma_nodes.is_empty(),
    };
    let busy = st.busy_until_end;
    if busy {
        st.push(Time::ZERO, Ev::MasterRequest);
    }
    st.push(Time::ZERO + WARMUP, Ev::OpStart);
    let mut first_op = None;
    while let Some((now, ev)) = st.q.pop() {
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
