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
//! the ring's node) and rings the doorbell (a posted PIO write), which the
//! driver may follow with a register read to flush it (`submit_reads`).
//! The handler's register reads before it walks the ring are relaxed
//! (`isr_reads`) or flushing (`isr_flush_reads`: `readw` on sn2, the
//! relaxed read and then `sn_dma_flush()`, as in `drivers/pci/pio.rs`).

use super::{DmaEv, IoPath, Landed, REG_BYTES};
use crate::engine::{Dur, Time, TopQueue};
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
    /// Flushing PIO reads the handler makes after those (`readw` on sn2:
    /// the read, then `sn_dma_flush()`, which waits for every DMA write
    /// the chipset accepted before it).
    pub isr_flush_reads: u32,
    /// Relaxed PIO reads the CPU makes after each doorbell write, waiting
    /// for each (a driver's "PCI posted write flush").
    pub submit_reads: u32,
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

/// The tag on a flushing read's interrupt write (status writes count up
/// from 0).
const FLAG_TAG: u64 = u64::MAX;

/// What a register read is for, and so what follows it; `left` reads of
/// the kind remain, this one included.
#[derive(Debug, Clone, Copy)]
enum Read {
    /// The handler's relaxed reads.
    Relaxed { left: u32 },
    /// The handler's flushing reads (the read, then `sn_dma_flush()`).
    Flushing { left: u32 },
    /// The reads after a doorbell write.
    Submit { left: u32 },
}

/// The CPU's work in one handler run, in order.
#[derive(Debug, Clone, Copy)]
enum Work {
    /// A completion (by its I/O's issue time), then the next submission.
    Complete(Time),
    /// A submission only (the first `queue_depth` I/Os).
    Submit,
}

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
    /// A register read reached the device node's hub.
    RegReadAtHub(Read),
    RegReadAtChipset(Read),
    /// The device answered: the response leaves the chipset.
    RegReadResponse(Read),
    /// `sn_dma_flush()`'s force-interrupt write reached the device
    /// node's hub, then the chipset.
    ForceIntAtHub,
    ForceIntAtChipset,
    /// The chipset sends the interrupt write (barrier attribute).
    FlushInterruptOut,
    /// The CPU's spin sees the flag written: the flushing read is done.
    FlagSeen,
    /// The CPU goes on with the handler's work.
    HandlerNext,
}

struct State<'m> {
    m: &'m Machine,
    s: &'m Setup,
    path: IoPath<'m>,
    /// The handled event stays on top of the heap until the step's first
    /// new event replaces it (one sift where pop then push take two).
    q: TopQueue<Ev>,
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
    /// The running handler's work: the completions it takes (and the
    /// first submissions before any completion).
    batch: std::collections::VecDeque<Work>,
    /// Flushing reads left in the handler, the current one included.
    flushing_left: u32,
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
                    if l.tag == FLAG_TAG {
                        let seen = self.path.flag_seen(l.in_memory, self.s.cpu_node);
                        self.push(seen, Ev::FlagSeen);
                        continue;
                    }
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
                self.batch.extend(self.irqs.drain(..).map(Work::Complete));
                if self.s.isr_reads > 0 {
                    self.reg_read(
                        now,
                        Read::Relaxed {
                            left: self.s.isr_reads,
                        },
                    );
                } else if self.s.isr_flush_reads > 0 {
                    self.flushing_reads(now);
                } else {
                    self.handler_next(now);
                }
            }
            Ev::RegReadAtHub(why) => {
                let at = self.path.hub_to_chipset(now, 0);
                self.push(at, Ev::RegReadAtChipset(why));
            }
            Ev::RegReadAtChipset(why) => {
                // Behind the data bursts, status writes and posted writes
                // queued on the bus (a read does not pass posted writes).
                let done = self.path.bus.submit(now, self.m.pci.pio_bytes());
                let at = done + Self::ns(self.m.pci.pio_read_ns);
                self.push(at, Ev::RegReadResponse(why));
            }
            Ev::RegReadResponse(why) => {
                // Up the link behind the DMA queued there, back to the CPU.
                let at = self.path.chipset_to_hub(now, REG_BYTES)
                    + self.path.fabric(self.s.device_node, self.s.cpu_node)
                    + Self::ns(self.m.chipset_read_ns() / 2.0);
                match why {
                    Read::Relaxed { left } if left > 1 => {
                        self.reg_read(at, Read::Relaxed { left: left - 1 })
                    }
                    Read::Relaxed { .. } => self.flushing_reads(at),
                    Read::Flushing { left } => {
                        self.flushing_left = left;
                        let at = self.path.flush_store_at_hub(at, self.s.cpu_node);
                        self.push(at, Ev::ForceIntAtHub);
                    }
                    Read::Submit { left } if left > 1 => {
                        self.reg_read(at, Read::Submit { left: left - 1 })
                    }
                    Read::Submit { .. } => self.push(at, Ev::HandlerNext),
                }
            }
            Ev::ForceIntAtHub => {
                let at = self.path.force_int_at_chipset(now);
                self.push(at, Ev::ForceIntAtChipset);
            }
            Ev::ForceIntAtChipset => {
                let at = self.path.flush_interrupt_due(now);
                self.push(at, Ev::FlushInterruptOut);
            }
            Ev::FlushInterruptOut => {
                // Other I/Os' data and status writes the chipset accepted
                // until now are ahead of it.
                let (t, e) = self.path.flush_interrupt(now, FLAG_TAG);
                self.push(t, Ev::Dma(e));
            }
            Ev::FlagSeen => {
                let left = self.flushing_left;
                if left > 1 {
                    self.reg_read(now, Read::Flushing { left: left - 1 });
                } else {
                    self.flushing_left = 0;
                    self.handler_next(now);
                }
            }
            Ev::HandlerNext => self.handler_next(now),
        }
    }

    /// One PIO read of an adapter register, issued by the CPU at `at`: out
    /// through its hub, across the fabric, down the link and onto the bus.
    fn reg_read(&mut self, at: Time, why: Read) {
        let to_hub = Self::ns(self.m.chipset_read_ns() / 2.0)
            + self.path.fabric(self.s.cpu_node, self.s.device_node);
        self.push(at + to_hub, Ev::RegReadAtHub(why));
    }

    /// The handler's flushing reads from `at`, then the rest of it.
    fn flushing_reads(&mut self, at: Time) {
        if self.s.isr_flush_reads > 0 {
            self.reg_read(
                at,
                Read::Flushing {
                    left: self.s.isr_flush_reads,
                },
            );
        } else {
            self.push(at, Ev::HandlerNext);
        }
    }

    /// The handler's work from `now`: for each completion `host_ns`, the
    /// status read (its copy was invalidated: a miss to the ring's node),
    /// then the next command; after each doorbell the CPU waits for its
    /// `submit_reads` and comes back here.
    fn handler_next(&mut self, now: Time) {
        let mut done = now;
        while let Some(work) = self.batch.pop_front() {
            if let Work::Complete(issued) = work {
                done = done
                    + Self::ns(self.s.host_ns)
                    + Self::ns(self.m.mem_latency_ns(self.s.cpu_node, self.s.ring_node));
                self.completed += 1;
                self.latency_sum += (done - issued).as_ns();
                if self.completed == self.s.queue_depth {
                    self.warm_at = done;
                }
                self.last_at = done;
                if self.issued >= self.s.ios {
                    continue;
                }
            }
            done = self.submit(done);
            if self.s.submit_reads > 0 {
                self.reg_read(
                    done,
                    Read::Submit {
                        left: self.s.submit_reads,
                    },
                );
                return;
            }
        }
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
        q: TopQueue::with_capacity(64),
        pending: Default::default(),
        engine_busy: false,
        cpu_free: Time::ZERO,
        issued: 0,
        completed: 0,
        warm_at: Time::ZERO,
        last_at: Time::ZERO,
        latency_sum: 0,
        irqs: Default::default(),
        batch: Default::default(),
        flushing_left: 0,
        scratch: Default::default(),
        in_handler: false,
        tags: Default::default(),
        next_tag: 0,
    };
    // The first `queue_depth` submissions, as one run of CPU work.
    st.batch
        .extend((0..setup.queue_depth.min(setup.ios)).map(|_| Work::Submit));
    st.in_handler = true;
    st.handler_next(Time::ZERO);
    while let Some((now, ev)) = st.q.take_next() {
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
