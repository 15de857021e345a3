//! A device driving I/Os against command and status rings that
//! `pci_alloc_consistent()` placed on the device's node or a remote one
//! ([ALTIX04] G4; docs/pci.md).
//!
//! The device is a storage host adapter with one command engine (the
//! adapter's firmware processor): for each I/O it fetches the command the
//! driver wrote (a DMA read of a line the CPU holds dirty: to the line's
//! home, forwarded to the CPU's node, back to the device), spends
//! `device_ns` on it, moves the data into a buffer on the CPU's node as DMA
//! writes over the bus, and writes a status entry into the status ring (a
//! consistent allocation, so the write carries the barrier attribute and
//! waits for the data's acknowledgements), then an interrupt. The CPU's
//! handler spends `host_ns`, reads the status (its copy was invalidated:
//! a miss to the ring's node), writes the next command (a write miss to
//! the ring's node) and rings the doorbell (a posted PIO write).

use super::{DmaEv, IoPath, Landed};
use crate::engine::{Dur, EventQueue, Time};
use crate::machine::Machine;

knob_enum! {
    /// Where `pci_alloc_consistent()` puts command and status buffers (G4).
    DmaAlloc {
        /// `alloc_pages_node()` on the node nearest the device.
        Local = "local",
        /// Another node (the allocating CPU's, or wherever memory was free).
        Remote = "remote",
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    pub device_node: usize,
    pub cpu_node: usize,
    /// Node of the command and status rings.
    pub ring_node: usize,
    /// Bytes each I/O moves into memory.
    pub io_size: u64,
    /// I/Os outstanding at the device.
    pub queue_depth: u32,
    /// I/Os completed in the run.
    pub ios: u32,
    /// The adapter's processing per command, ns.
    pub device_ns: f64,
    /// CPU time per completion (interrupt, SCSI midlayer, next submission), ns.
    pub host_ns: f64,
    /// Relaxed PIO reads of adapter registers the interrupt handler makes
    /// before it looks at the status ring (each waits for the bus).
    pub isr_reads: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IopsResult {
    /// I/Os per second in steady state (after the first `queue_depth`).
    pub iops: f64,
    /// Mean time from writing a command to handling its completion, µs.
    pub latency_us: f64,
}

/// A command-ring entry and a status-ring entry: one cache line each.
const ENTRY_BYTES: u64 = 64;

/// The handler's read of a status entry leaves the line shared in its
/// cache (a ring of a few hundred 64-byte entries stays in a multi-MB L3
/// for a lap), so the device's next write to that entry is a DMA write to
/// a line with a sharer: the ring's home directory must invalidate the
/// CPU's copy and collect the ack before the write completes. Within one
/// node that is the bus snoop the memory write already pays; across nodes
/// it is a fabric round trip between the ring's node and the CPU's.
const STATUS_LINE_SHARED: bool = true;

#[derive(Debug, Clone, Copy)]
enum Ev {
    Dma(DmaEv),
    /// The doorbell's posted write reached the device node's hub.
    DoorbellAtHub {
        issued: Time,
    },
    Doorbell {
        issued: Time,
    },
    /// The command fetch's read request left the chipset.
    FetchRequest {
        issued: Time,
    },
    /// The command line is back at the device node's hub.
    FetchAtHub {
        issued: Time,
    },
    Fetched {
        issued: Time,
    },
    DataStart {
        issued: Time,
    },
    BurstDone {
        bytes: u32,
    },
    StatusDone {
        issued: Time,
    },
    EngineFree,
    Interrupt {
        issued: Time,
    },
    /// The CPU takes the next pending interrupt.
    HandlerStart,
    /// A handler's register read reached the device node's hub; `left`
    /// reads remain, this one included.
    IsrReadAtHub {
        left: u32,
    },
    IsrReadAtChipset {
        left: u32,
    },
    IsrReadResponse {
        left: u32,
    },
    /// The handler's register reads are done.
    HandlerBody,
}

struct State<'m> {
    m: &'m Machine,
    s: &'m Setup,
    path: IoPath<'m>,
    q: EventQueue<Ev>,
    /// Commands rung in and not yet fetched, with their issue times.
    pending: std::collections::VecDeque<Time>,
    engine_busy: bool,
    cpu_free: Time,
    issued: u32,
    completed: u32,
    warm_at: Time,
    last_at: Time,
    latency_sum: u64,
    /// Interrupts raised and not yet handled, by their I/O's issue time.
    irqs: std::collections::VecDeque<Time>,
    /// The completions the running handler takes.
    batch: Vec<Time>,
    /// [`IoPath::handle`]'s outputs, reused by every DMA stage.
    scratch: (Vec<(Time, DmaEv)>, Vec<Landed>),
    in_handler: bool,
    /// Issue times of I/Os whose status is in flight, by tag.
    tags: std::collections::BTreeMap<u64, Time>,
    next_tag: u64,
}

impl State<'_> {
    fn push(&mut self, at: Time, ev: Ev) {
        self.q
            .push(at, ev)
            .expect("stages are scheduled at or after now");
    }
    fn ns(x: f64) -> Dur {
        Dur::from_ns_f64(x)
    }
    /// The CPU writes one command (a write miss to the ring's home) and
    /// rings the doorbell; returns when the CPU is done.
    fn submit(&mut self, from: Time) -> Time {
        let (c, d) = (self.s.cpu_node, self.s.device_node);
        let issued = from;
        let done = from
            + Self::ns(self.m.mem_latency_ns(c, self.s.ring_node))
            + Self::ns(self.m.pci.uc_store_ns);
        let at = done + Self::ns(self.m.chipset_read_ns() / 2.0) + self.path.fabric(c, d);
        self.issued += 1;
        self.push(at, Ev::DoorbellAtHub { issued });
        done
    }
    fn start_engine(&mut self, now: Time) {
        let Some(issued) = self.pending.pop_front() else {
            return;
        };
        self.engine_busy = true;
        // Read request and the line's return on the bus.
        let bus = self
            .path
            .bus
            .submit(now, self.m.pci.pio_bytes() + ENTRY_BYTES);
        self.push(bus, Ev::FetchRequest { issued });
    }
    fn step(&mut self, now: Time, ev: Ev) {
        match ev {
            Ev::Dma(e) => {
                // The stage's outputs go to buffers kept across events (a
                // fresh pair a stage was a fifth of the run: issue 31).
                let (mut next, mut landed) = std::mem::take(&mut self.scratch);
                self.path.handle(now, e, &mut next, &mut landed);
                for (t, e) in next.drain(..) {
                    self.push(t, Ev::Dma(e));
                }
                for l in landed.drain(..) {
                    let issued = self.tags.remove(&l.tag).expect("tagged status write");
                    // The interrupt follows the status write (barrier
                    // attribute) from the device's hub to the CPU.
                    let at = l.acked
                        + self.path.fabric(self.s.device_node, self.s.cpu_node)
                        + Self::ns(self.m.chipset_read_ns() / 2.0);
                    self.push(at, Ev::Interrupt { issued });
                }
                self.scratch = (next, landed);
            }
            Ev::DoorbellAtHub { issued } => {
                let at = self.path.hub_to_chipset(now, 8);
                self.push(at, Ev::Doorbell { issued });
            }
            Ev::FetchRequest { issued } => {
                // Up the link to the hub, to the ring's home, forwarded to
                // the CPU that holds the line dirty, back to the device's hub.
                let (c, d, b) = (self.s.cpu_node, self.s.device_node, self.s.ring_node);
                let at = self.path.chipset_to_hub(now, 0)
                    + Self::ns(self.m.memory.latency_ns)
                    + self.path.fabric(d, b)
                    + self.path.fabric(b, c)
                    + self.path.fabric(c, d);
                self.push(at, Ev::FetchAtHub { issued });
            }
            Ev::FetchAtHub { issued } => {
                let at = self.path.hub_to_chipset(now, ENTRY_BYTES);
                self.push(at, Ev::Fetched { issued });
            }
            Ev::Doorbell { issued } => {
                // A posted write on the bus: the device sees it after it.
                let seen = self.path.bus.submit(now, self.m.pci.pio_bytes());
                self.pending.push_back(issued);
                if !self.engine_busy {
                    self.engine_busy = true;
                    self.push(seen, Ev::EngineFree);
                }
            }
            Ev::Fetched { issued } => {
                let at = now + Self::ns(self.s.device_ns);
                self.push(at, Ev::DataStart { issued });
            }
            Ev::DataStart { issued } => {
                let burst = self.m.pci.burst_bytes().max(1);
                let mut left = self.s.io_size;
                while left > 0 {
                    let b = left.min(burst);
                    left -= b;
                    let done = self.path.bus.submit(now, b);
                    self.push(done, Ev::BurstDone { bytes: b as u32 });
                }
                let done = self.path.bus.submit(now, ENTRY_BYTES);
                self.push(done, Ev::StatusDone { issued });
                self.push(done, Ev::EngineFree);
            }
            Ev::BurstDone { bytes } => {
                let (t, e) = self.path.accept(now, self.s.cpu_node, bytes, false, None);
                self.push(t, Ev::Dma(e));
            }
            Ev::StatusDone { issued } => {
                let tag = self.next_tag;
                self.next_tag += 1;
                self.tags.insert(tag, issued);
                // The status line is shared in the CPU's cache (the handler
                // read it one lap of the ring ago): the ring's home
                // invalidates that copy and waits for the ack before the
                // write is complete (`STATUS_LINE_SHARED`), so its
                // acknowledgement, which later barrier writes and the
                // interrupt wait for, comes after that round trip.
                let snoop = if STATUS_LINE_SHARED {
                    self.path.fabric(self.s.ring_node, self.s.cpu_node)
                        + self.path.fabric(self.s.cpu_node, self.s.ring_node)
                } else {
                    Dur::ZERO
                };
                let (t, e) = self.path.accept_snooped(
                    now,
                    self.s.ring_node,
                    ENTRY_BYTES as u32,
                    true,
                    Some(tag),
                    snoop,
                );
                self.push(t, Ev::Dma(e));
            }
            Ev::EngineFree => {
                self.engine_busy = false;
                self.start_engine(now);
            }
            Ev::Interrupt { issued } => {
                self.irqs.push_back(issued);
                if !self.in_handler {
                    self.in_handler = true;
                    let at = now.max(self.cpu_free);
                    self.push(at, Ev::HandlerStart);
                }
            }
            Ev::HandlerStart => {
                // One handler takes every completion posted so far: the
                // ring's in-pointer register names them all.
                self.batch.extend(self.irqs.drain(..));
                if self.s.isr_reads > 0 {
                    self.isr_read(now, self.s.isr_reads);
                } else {
                    self.handler_body(now);
                }
            }
            Ev::IsrReadAtHub { left } => {
                let at = self.path.hub_to_chipset(now, 0);
                self.push(at, Ev::IsrReadAtChipset { left });
            }
            Ev::IsrReadAtChipset { left } => {
                // Behind the data bursts and status writes queued on the bus.
                let done = self.path.bus.submit(now, self.m.pci.pio_bytes());
                let at = done + Self::ns(self.m.pci.pio_read_ns);
                self.push(at, Ev::IsrReadResponse { left });
            }
            Ev::IsrReadResponse { left } => {
                // Up the link behind the DMA queued there, back to the CPU.
                let at = self.path.chipset_to_hub(now, 8)
                    + self.path.fabric(self.s.device_node, self.s.cpu_node)
                    + Self::ns(self.m.chipset_read_ns() / 2.0);
                if left > 1 {
                    self.isr_read(at, left - 1);
                } else {
                    self.push(at, Ev::HandlerBody);
                }
            }
            Ev::HandlerBody => self.handler_body(now),
        }
    }

    /// One relaxed PIO read of an adapter register from the handler
    /// (`readw_relaxed`: no DMA flush), issued at `at`.
    fn isr_read(&mut self, at: Time, left: u32) {
        let to_hub = Self::ns(self.m.chipset_read_ns() / 2.0)
            + self.path.fabric(self.s.cpu_node, self.s.device_node);
        self.push(at + to_hub, Ev::IsrReadAtHub { left });
    }

    /// The rest of the handler at `now`, for each completion of the batch:
    /// `host_ns`, the status read (its copy was invalidated: a miss to the
    /// ring's node), the next command.
    fn handler_body(&mut self, now: Time) {
        let mut done = now;
        let mut batch = std::mem::take(&mut self.batch);
        for issued in batch.drain(..) {
            done = done
                + Self::ns(self.s.host_ns)
                + Self::ns(self.m.mem_latency_ns(self.s.cpu_node, self.s.ring_node));
            self.completed += 1;
            self.latency_sum += (done - issued).as_ns();
            if self.completed == self.s.queue_depth {
                self.warm_at = done;
            }
            self.last_at = done;
            if self.issued < self.s.ios {
                done = self.submit(done);
            }
        }
        self.batch = batch;
        self.cpu_free = done;
        if self.irqs.is_empty() {
            self.in_handler = false;
        } else {
            self.push(done, Ev::HandlerStart);
        }
    }
}

/// Run `setup.ios` I/Os; deterministic (no random draws).
pub fn simulate(machine: &Machine, setup: &Setup) -> IopsResult {
    let mut st = State {
        m: machine,
        s: setup,
        path: IoPath::new(machine, setup.device_node),
        q: EventQueue::with_capacity(64),
        pending: Default::default(),
        engine_busy: false,
        cpu_free: Time::ZERO,
        issued: 0,
        completed: 0,
        warm_at: Time::ZERO,
        last_at: Time::ZERO,
        latency_sum: 0,
        irqs: Default::default(),
        batch: Vec::new(),
        scratch: Default::default(),
        in_handler: false,
        tags: Default::default(),
        next_tag: 0,
    };
    let mut t = Time::ZERO;
    for _ in 0..setup.queue_depth.min(setup.ios) {
        t = st.submit(t);
    }
    st.cpu_free = t;
    while let Some((now, ev)) = st.q.pop() {
        st.step(now, ev);
    }
    let measured = st.completed.saturating_sub(setup.queue_depth) as f64;
    let span = (st.last_at - st.warm_at).as_ns() as f64;
    IopsResult {
        iops: if span > 0.0 {
            measured / span * 1e9
        } else {
            0.0
        },
        latency_us: st.latency_sum as f64 / st.completed.max(1) as f64 / 1e3,
    }
}
