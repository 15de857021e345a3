//! The request-level block layer of one machine: a volume striped over its
//! disks, a queue per disk, and the links (HBA bus, I/O node port, node
//! ports) each request's DMA crosses. Clients submit pieces of volume I/O
//! and get back, for each finished request, its parts and the time the data
//! is in memory (or out of it). The caller owns the event queue: `submit`
//! and `disk_done` return the disk finish times to schedule.

use super::blkdev::{Dest, DiskModel, DiskState, Part, PartPool, Parts, Req};
use super::path::{Link, LinkSet};
use super::stripe::Stripe;
use crate::engine::{stream, Dur, Time};
use crate::machine::Machine;
use std::collections::VecDeque;

/// A finished request: its parts and when its data has crossed every link.
#[derive(Debug, Clone)]
pub struct Done {
    pub parts: Vec<Part>,
    pub at: Time,
}

/// Interleaved parts' DMA summed for one booking (`dma_parts`): bytes of
/// each node's share, of the host port's, and their times.
#[derive(Debug, Clone, Copy, Default)]
struct SharesRun {
    parts: u32,
    share: u64,
    mem_d: Dur,
    host_bytes: u64,
    host_d: Dur,
    page_d: Dur,
}

impl SharesRun {
    fn add(&mut self, o: &SharesRun) {
        self.parts += o.parts;
        self.share += o.share;
        self.mem_d += o.mem_d;
        self.host_bytes += o.host_bytes;
        self.host_d += o.host_d;
        self.page_d += o.page_d;
    }
}

#[derive(Debug)]
pub struct BlockLayer {
    pub model: DiskModel,
    pub stripe: Stripe,
    pub disks: Vec<DiskState>,
    disk_ctrl: Vec<usize>,
    ctrl_ionode: Vec<usize>,
    /// Per I/O node: the compute node whose hub it hangs off (`[io]
    /// io_nodes`), where its DMA enters or leaves the fabric.
    io_host: Vec<usize>,
    pub controllers: Vec<Link>,
    pub io_nodes: Vec<Link>,
    /// Per compute node: its port's bytes in from the fabric and out to it
    /// (DMA between another node's I/O and its memory, and the CPUs'
    /// copies between nodes).
    pub node_in: LinkSet,
    pub node_out: LinkSet,
    /// Per compute node: its memory controllers, which every DMA to or
    /// from a page of the node passes, both directions on one budget.
    pub node_mem: LinkSet,
    /// The requests each disk is serving and when each finishes:
    /// `model.commands` slots per disk, disk `d`'s from `d * commands`.
    in_service: Vec<Option<(Req, Time)>>,
    /// Emptied part lists, reused so that a request allocates nothing
    /// (malloc and realloc were a tenth of a buffered read's time).
    spare: PartPool,
    /// Scratch of `enqueue_split`: the pieces of one range.
    pieces: Vec<(usize, u64, u64)>,
    /// The request slots of every disk's queue (`struct request_list`).
    pub requests: Requests,
}

/// `nr_requests` and what hangs off it (drivers/block/ll_rw_blk.c, 2.6.15):
/// per disk and direction, the requests allocated (queued or in service,
/// `rl->count[rw]`), the submitters asleep for one (`rl->wait[rw]`), and
/// the congestion mark. A request is allocated when a piece does not merge
/// into a queued one (`get_request()`) and freed when the disk completes
/// it (`freed_request()`); a submitter that finds none free sleeps
/// (`get_request_wait()`) and one is woken per request freed (an exclusive
/// wait). Not modelled: the batching of 2.6.15 (`ioc_batching()`: a woken
/// process may take up to `BLK_BATCH_REQ` = 32 more, to 3/2 of
/// `nr_requests`, within `BLK_BATCH_TIME`); here a queue never holds more
/// than `nr_requests` of a direction, and a woken submitter that loses its
/// request to another goes back to the head of the wait.
#[derive(Debug, Default)]
pub struct Requests {
    /// `q->nr_requests` (`[block] queue_depth`).
    pub nr_requests: u32,
    /// `congestion_on_threshold(nr_requests)` and `..._off_...`.
    on: u32,
    off: u32,
    /// Per disk, [read, write]: its count and marks, together so that a
    /// request's allocation and freeing touch one word.
    slots: Vec<[Slot; 2]>,
    /// Per disk, [read, write]: (submitter, asleep since), first woken
    /// first; read only where `Slot::sleepers` says someone is there.
    wait: Vec<[VecDeque<(u32, Time)>; 2]>,
    /// Submitters woken since last taken, with their disk: the caller
    /// schedules each one's retry (one pending wake-up, not a poll).
    pub woken: Vec<(usize, u32)>,
    /// Most requests any disk held in one direction.
    pub max_allocated: u32,
    /// Times a submitter slept for a request, and the time they slept.
    pub waits: u64,
    pub wait_ns: u64,
    /// Times a queue turned congested.
    pub congestion_on: u64,
}

/// `queue_congestion_on_threshold()`: a queue is congested from this many
/// requests allocated (`blk_queue_congestion_threshold()`, 2.6.15:
/// `nr - nr/8 + 1`, at most `nr`).
pub fn congestion_on_threshold(nr: u32) -> u32 {
    (nr - nr / 8 + 1).min(nr)
}

/// `queue_congestion_off_threshold()`: and clears below this many
/// (`nr - nr/8 - nr/16 - 1`, at least 1).
pub fn congestion_off_threshold(nr: u32) -> u32 {
    nr.saturating_sub(nr / 8 + nr / 16 + 1).max(1)
}

#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    /// Requests allocated (`rl->count[rw]`).
    allocated: u32,
    /// Submitters asleep in `wait`.
    sleepers: u32,
    /// The congestion mark (`QUEUE_FLAG_READ_CONGESTED` / `WRITE_`,
    /// `set_queue_congested()`).
    congested: bool,
}

impl Requests {
    fn new(disks: usize, nr_requests: u32) -> Requests {
        let nr = nr_requests.max(1);
        Requests {
            nr_requests: nr,
            on: congestion_on_threshold(nr),
            off: congestion_off_threshold(nr),
            slots: vec![[Slot::default(); 2]; disks],
            wait: (0..disks).map(|_| Default::default()).collect(),
            ..Requests::default()
        }
    }
    /// Requests disk `d` holds in the direction `write`.
    pub fn allocated(&self, d: usize, write: bool) -> u32 {
        self.slots[d][write as usize].allocated
    }
    /// Whether disk `d`'s queue is congested in that direction (what
    /// `bdi_write_congested()` / `bdi_read_congested()` read).
    pub fn congested(&self, d: usize, write: bool) -> bool {
        self.slots[d][write as usize].congested
    }
    /// Whether a request is free on disk `d` (`get_request()` succeeds).
    #[inline]
    pub fn free(&self, d: usize, write: bool) -> bool {
        self.slots[d][write as usize].allocated < self.nr_requests
    }
    /// `get_request()`: one more request allocated.
    #[inline]
    fn get(&mut self, d: usize, write: bool) {
        let s = &mut self.slots[d][write as usize];
        s.allocated += 1;
        self.max_allocated = self.max_allocated.max(s.allocated);
        if s.allocated >= self.on && !s.congested {
            s.congested = true;
            self.congestion_on += 1;
        }
    }
    /// `freed_request()` at `now`: clear congestion below its threshold
    /// and wake the first submitter asleep, if any.
    #[inline]
    fn freed(&mut self, now: Time, d: usize, write: bool) {
        let w = write as usize;
        let s = &mut self.slots[d][w];
        s.allocated = s.allocated.saturating_sub(1);
        if s.allocated < self.off {
            s.congested = false;
        }
        if s.sleepers > 0 && s.allocated < self.nr_requests {
            s.sleepers -= 1;
            if let Some((who, since)) = self.wait[d][w].pop_front() {
                self.wait_ns += now.as_ns().saturating_sub(since.as_ns());
                self.woken.push((d, who));
            }
        }
    }
}

/// Why a machine cannot run the request-level I/O stack.
pub fn check_machine(m: &Machine) -> Result<(), String> {
    if m.block.is_none() {
        return Err(format!(
            "machine `{}` has no [block] table (disk geometry, HBAs, I/O path costs); see docs/io.md",
            m.name
        ));
    }
    let disks: u64 = m.io.disks.iter().map(|g| g.count as u64).sum();
    if disks == 0 {
        return Err(format!("machine `{}` has no disks ([io] disks)", m.name));
    }
    if m.io.disks.iter().any(|g| g.count > 0 && g.mibps <= 0.0) {
        return Err(format!("machine `{}`: a disk group has mibps = 0", m.name));
    }
    if m.io
        .disks
        .iter()
        .any(|g| g.count > 0 && g.write_rate() <= 0.0)
    {
        return Err(format!(
            "machine `{}`: a disk group has write_mibps = 0",
            m.name
        ));
    }
    Ok(())
}

impl BlockLayer {
    /// The machine's disks as one stripe of `unit` bytes. Disks are spread
    /// evenly over the controllers, and controllers over the I/O nodes.
    /// Call [`check_machine`] first.
    pub fn new(m: &Machine, unit: u64, seed: u64) -> BlockLayer {
        let b = m.block.as_ref().expect("check_machine first");
        let (mibps, write_mibps) =
            m.io.disks
                .iter()
                .find(|g| g.count > 0)
                .map(|g| (g.mibps, g.write_rate()))
                .unwrap_or((1.0, 1.0));
        let ndisks: usize = m.io.disks.iter().map(|g| g.count as usize).sum();
        let nctrl = (m.io.controllers as usize).max(1);
        let nio = m.io.io_nodes.len().max(1);
        BlockLayer {
            model: DiskModel::from_machine(b, mibps, write_mibps),
            stripe: Stripe::new(ndisks as u64, unit),
            disks: (0..ndisks)
                .map(|d| {
                    let mut disk = DiskState::new(stream(seed, "disk-rotation", d as u64));
                    disk.last_merge_only = b.elevator_noop;
                    disk
                })
                .collect(),
            disk_ctrl: (0..ndisks).map(|d| d * nctrl / ndisks).collect(),
            ctrl_ionode: (0..nctrl).map(|c| c * nio / nctrl).collect(),
            io_host: (0..nio)
                .map(|k| m.io.io_nodes.get(k).map_or(0, |&n| n as usize))
                .collect(),
            controllers: (0..nctrl)
                .map(|_| Link::new(b.controller_mbps * 1e6))
                .collect(),
            io_nodes: (0..nio).map(|_| Link::new(b.io_node_gbps * 1e9)).collect(),
            node_in: LinkSet::new(m.node_count(), m.interconnect.link_gbps * 1e9),
            node_out: LinkSet::new(m.node_count(), m.interconnect.link_gbps * 1e9),
            node_mem: LinkSet::new(m.node_count(), m.memsys.node_gbps * 1e9),
            in_service: (0..ndisks * b.disk_commands.max(1) as usize)
                .map(|_| None)
                .collect(),
            spare: PartPool::default(),
            pieces: Vec::new(),
            requests: Requests::new(ndisks, b.queue_depth),
        }
    }

    /// Usable bytes of the volume (every disk's full capacity).
    pub fn volume_bytes(&self) -> u64 {
        self.model.capacity / self.stripe.unit * self.stripe.unit * self.stripe.disks
    }

    /// Submit volume range `[v, v + len)` for `part` (its bytes are set per
    /// piece): split at stripe units and at the request size limit, queued
    /// on each disk. Returns (disk, finish time) for each disk that was idle
    /// and has started; the caller schedules `disk_done` then.
    pub fn submit(
        &mut self,
        now: Time,
        v: u64,
        len: u64,
        write: bool,
        part: Part,
        started: &mut Vec<(usize, Time)>,
    ) {
        // An idle disk starts on each piece as it arrives, before the next.
        self.enqueue_split(v, len, write, part, |layer, d| {
            layer.unplug(now, d, started)
        });
    }

    /// Split volume range `[v, v + len)` over the stripe into requests of
    /// at most `max_request`, queue each on its disk, and call `after` with
    /// the disk once each request is queued (so a caller may dispatch it
    /// before the next piece arrives, as `submit` does).
    fn enqueue_split(
        &mut self,
        v: u64,
        len: u64,
        write: bool,
        part: Part,
        mut after: impl FnMut(&mut Self, usize),
    ) {
        let max = self.model.max_request;
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        self.stripe.split(v, len, |d, off, n| {
            let mut o = 0;
            while o < n {
                let k = (n - o).min(max);
                pieces.push((d, off + o, k));
                o += k;
            }
        });
        for &(d, off, n) in &pieces {
            self.enqueue_piece(d, off, write, Part { bytes: n, ..part });
            after(self, d);
        }
        self.pieces = pieces;
    }

    /// Queue one request of `part.bytes` at `off` on disk `d` (within a
    /// stripe unit and the queue's limit).
    #[inline]
    fn enqueue_piece(&mut self, d: usize, off: u64, write: bool, part: Part) {
        let max = self.model.max_request;
        debug_assert!(part.bytes <= max);
        let new = self.disks[d].enqueue_part(off, write, part, max, &mut self.spare);
        if new {
            self.requests.get(d, write);
        }
    }

    /// Whether a request of `len` at `off` may enter disk `d`'s queue now:
    /// it merges into a queued one, or a request is free.
    #[inline]
    pub fn may_queue(&self, d: usize, off: u64, len: u64, write: bool) -> bool {
        self.requests.free(d, write) || self.merges_when_full(d, off, len, write)
    }

    /// The rare half of `may_queue`, kept out of the submit path's code.
    #[cold]
    #[inline(never)]
    fn merges_when_full(&self, d: usize, off: u64, len: u64, write: bool) -> bool {
        self.disks[d].would_merge(off, len, write, self.model.max_request)
    }

    /// `submit_piece` if the request may enter (`may_queue`); false, and
    /// nothing queued, if the submitter must sleep for a request.
    #[inline]
    pub fn try_submit_piece(
        &mut self,
        now: Time,
        d: usize,
        off: u64,
        write: bool,
        part: Part,
        started: &mut Vec<(usize, Time)>,
    ) -> bool {
        if !self.may_queue(d, off, part.bytes, write) {
            return false;
        }
        self.submit_piece(now, d, off, write, part, started);
        true
    }

    /// `get_request_wait()`: submitter `who` sleeps at `now` until disk
    /// `d` frees a request of its direction; the queue is unplugged first
    /// (an idle disk started is pushed on `started`). `again`: it was just
    /// woken and lost the request, so it keeps its place at the head.
    pub fn sleep_for_request(
        &mut self,
        now: Time,
        d: usize,
        write: bool,
        who: u32,
        again: bool,
        started: &mut Vec<(usize, Time)>,
    ) {
        self.unplug(now, d, started);
        self.requests.slots[d][write as usize].sleepers += 1;
        let w = &mut self.requests.wait[d][write as usize];
        if again {
            w.push_front((who, now));
        } else {
            w.push_back((who, now));
        }
        self.requests.waits += 1;
    }

    /// Submit one request already cut to the stripe and the queue's limit
    /// (`Stripe::requests_on_disks`): what `submit` does with each piece of
    /// a range, without cutting it again.
    pub fn submit_piece(
        &mut self,
        now: Time,
        d: usize,
        off: u64,
        write: bool,
        part: Part,
        started: &mut Vec<(usize, Time)>,
    ) {
        self.enqueue_piece(d, off, write, part);
        self.unplug(now, d, started);
    }

    /// Give back the part list of a finished request (`Done::parts`) once
    /// read, for a later request to reuse.
    pub fn recycle(&mut self, parts: Vec<Part>) {
        self.spare.give(parts);
    }

    /// Queue volume range `[v, v + len)` like `submit`, but on plugged
    /// queues (`blk_plug_device()`): nothing is dispatched; each disk the
    /// range touched is pushed on `touched` with its queue length after.
    pub fn queue_plugged(
        &mut self,
        v: u64,
        len: u64,
        write: bool,
        part: Part,
        touched: &mut Vec<(usize, usize)>,
    ) {
        self.enqueue_split(v, len, write, part, |layer, d| {
            touched.push((d, layer.disks[d].queued()));
        });
    }

    /// Unplug disk `d` (`generic_unplug_device()`): an idle disk starts on
    /// its queue; (disk, finish time) pushed on `started` if it did.
    #[inline]
    pub fn unplug(&mut self, now: Time, d: usize, started: &mut Vec<(usize, Time)>) {
        // Inline: nearly every piece a reader submits finds its disk busy.
        if self.disks[d].has_free_command(&self.model) {
            self.start_idle(now, d, started);
        }
    }

    /// `unplug` of a disk with a free command: it starts on its queue's
    /// next requests, as many as it has free commands for.
    fn start_idle(&mut self, now: Time, d: usize, started: &mut Vec<(usize, Time)>) {
        while self.disks[d].has_free_command(&self.model) {
            let Some((req, t)) = self.disks[d].dispatch(now, &self.model) else {
                break;
            };
            self.in_service_push(d, req, t);
            started.push((d, t));
        }
    }

    /// Disk `d`'s command slots in `in_service`.
    #[inline]
    fn slots(&self, d: usize) -> std::ops::Range<usize> {
        let c = self.model.commands as usize;
        d * c..d * c + c
    }

    fn in_service_push(&mut self, d: usize, req: Req, finish: Time) {
        // One command (every preset): the disk's one slot, no scan.
        let at = if self.model.commands == 1 {
            d
        } else {
            let slots = self.slots(d);
            slots.start
                + self.in_service[slots]
                    .iter()
                    .position(|s| s.is_none())
                    .expect("a free command (has_free_command)")
        };
        self.in_service[at] = Some((req, finish));
    }

    /// Disk `d` finished its request at `now`: carry its data over the
    /// links and start the next queued request (its finish time returned).
    pub fn disk_done(&mut self, now: Time, d: usize) -> (Done, Option<Time>) {
        // The request that finishes now: the one of the disk's commands
        // that finishes first (one slot, where the disk serves one).
        let first = if self.model.commands == 1 {
            d
        } else {
            let slots = self.slots(d);
            slots.start
                + self.in_service[slots]
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| s.as_ref().map(|(_, t)| (*t, i)))
                    .min()
                    .expect("disk had a request")
                    .1
        };
        let (req, _finish) = self.in_service[first].take().expect("disk had a request");
        self.disks[d].finish(now);
        self.requests.freed(now, d, req.write);
        // The data streams off the platter during the transfer, so the links
        // may start on it that long before the disk finishes.
        // A solid-state drive's media latency delays the data, not the
        // drive's next command (its dies work in parallel). A write has its
        // own where the drive acknowledges it from a cache.
        let lat = Dur(if req.write {
            self.model.write_latency_ns
        } else {
            self.model.latency_ns
        });
        let ready = Time(
            now.as_ns()
                .saturating_sub(self.model.transfer_ns(req.len, req.write)),
        ) + lat;
        let c = self.disk_ctrl[d];
        let mut at = (now + lat).max(self.controllers[c].carry(ready, req.len));
        at = at.max(self.io_nodes[self.ctrl_ionode[c]].carry(ready, req.len));
        let host = self.io_host[self.ctrl_ionode[c]];
        at = at.max(self.dma_parts(host, &req.parts, req.write, ready));
        let next = self.disks[d].dispatch(now, &self.model).map(|(r, t)| {
            self.in_service[first] = Some((r, t));
            t
        });
        (
            Done {
                parts: req.parts.into_vec(&mut self.spare),
                at,
            },
            next,
        )
    }

    /// The DMA of a finished request's parts, all ready at `ready`, as
    /// `dma` part by part; returns when the last byte is through. A run of
    /// interleaved parts (every part, under `numactl -i all`) is booked
    /// once per link set with the parts' bytes and times summed, each
    /// part's time still its own ceiling: bookings ready at one moment
    /// follow one another, so the sum leaves every port where the parts
    /// one by one left it, and the last booking is the latest
    /// (`LinkSet::carry_dur`, `carry_all_dur`). A part on one node books
    /// alone, after the run before it.
    fn dma_parts(&mut self, host: usize, parts: &Parts, write: bool, ready: Time) -> Time {
        // One part (direct I/O's bios, most XFS requests): as it books.
        if parts.len() == 1 {
            let p = parts.iter().next().expect("one part");
            return self.dma(host, p.dest, write, ready, p.bytes);
        }
        let nodes = self.node_mem.len();
        let host = host % nodes;
        let mut at = Time::ZERO;
        let mut run = SharesRun::default();
        let mut last = (u64::MAX, SharesRun::default());
        for p in parts.iter() {
            match p.dest {
                Dest::Interleave => {
                    // Parts of one size (most: a few blocks each) share
                    // their times.
                    if last.0 != p.bytes {
                        last = (p.bytes, self.interleave_durs(write, p.bytes));
                    }
                    run.add(&last.1);
                }
                Dest::Node(_) => {
                    at = at.max(self.book_interleaved(host, write, ready, &mut run));
                    at = at.max(self.dma(host, p.dest, write, ready, p.bytes));
                }
            }
        }
        at.max(self.book_interleaved(host, write, ready, &mut run))
    }

    /// An interleaved part of `bytes`: what `dma` books for it, with times.
    fn interleave_durs(&self, write: bool, bytes: u64) -> SharesRun {
        let nodes = self.node_mem.len() as u64;
        let share = bytes.div_ceil(nodes);
        let (host_port, page_port) = if write {
            (&self.node_in, &self.node_out)
        } else {
            (&self.node_out, &self.node_in)
        };
        let host_bytes = share * (nodes - 1);
        SharesRun {
            parts: 1,
            share,
            mem_d: self.node_mem.dur(share),
            host_bytes,
            host_d: if nodes > 1 {
                host_port.dur(host_bytes)
            } else {
                Dur::ZERO
            },
            page_d: if nodes > 1 {
                page_port.dur(share)
            } else {
                Dur::ZERO
            },
        }
    }

    /// Book a run of interleaved parts (`dma_parts`) and empty it.
    fn book_interleaved(
        &mut self,
        host: usize,
        write: bool,
        ready: Time,
        run: &mut SharesRun,
    ) -> Time {
        if run.parts == 0 {
            return Time::ZERO;
        }
        let r = std::mem::take(run);
        let mut at = self.node_mem.carry_all_dur(ready, r.share, r.mem_d);
        if self.node_mem.len() > 1 {
            let (host_port, page_port) = if write {
                (&mut self.node_in, &mut self.node_out)
            } else {
                (&mut self.node_out, &mut self.node_in)
            };
            at = at.max(host_port.carry_dur(host, ready, r.host_bytes, r.host_d));
            at = at.max(page_port.carry_all_dur(ready, r.share, r.page_d));
        }
        at
    }

    /// The DMA of `bytes` between the hub of node `host` (where the I/O
    /// node hangs off) and the pages of `dest`, ready from `ready`; returns
    /// when the last byte is through. A page on `host` itself is written
    /// (read) by the hub straight into (out of) its memory; a page on
    /// another node crosses the fabric: out of `host`'s port and into the
    /// page node's for a read, the other way for a write, on the same
    /// ports the CPUs' remote traffic uses. Either way it passes the page
    /// node's memory controllers. Interleaved pages put an equal share on
    /// every node; the host's own share is booked on its port too (the
    /// O(1) shared booking cannot leave one port out: one share of a
    /// part too many on that port).
    fn dma(&mut self, host: usize, dest: Dest, write: bool, ready: Time, bytes: u64) -> Time {
        let nodes = self.node_mem.len();
        let host = host % nodes;
        // A read enters memory: the host sends, the page's node takes in.
        let (host_port, page_port) = if write {
            (&mut self.node_in, &mut self.node_out)
        } else {
            (&mut self.node_out, &mut self.node_in)
        };
        match dest {
            Dest::Node(n) => {
                let n = n as usize % nodes;
                let mut at = self.node_mem.carry(n, ready, bytes);
                if n != host {
                    at = at.max(host_port.carry(host, ready, bytes));
                    at = at.max(page_port.carry(n, ready, bytes));
                }
                at
            }
            // An equal share on every node's controllers and port, in O(1).
            Dest::Interleave => {
                let share = bytes.div_ceil(nodes as u64);
                let mut at = self.node_mem.carry_all(ready, share);
                if nodes > 1 {
                    at = at.max(host_port.carry(host, ready, share * (nodes as u64 - 1)));
                    at = at.max(page_port.carry_all(ready, share));
                }
                at
            }
        }
    }

    /// Disk utilisation over `elapsed`, percent, averaged over the disks.
    pub fn disk_busy_pct(&self, elapsed: Dur) -> f64 {
        let e = elapsed.as_ns().max(1) as f64;
        let busy: f64 = self
            .disks
            .iter()
            .map(|d| (d.stats.busy.as_ns() as f64 / e).min(1.0))
            .sum();
        100.0 * busy / self.disks.len() as f64
    }
    /// (requests, bytes) the disks served.
    pub fn totals(&self) -> (u64, u64) {
        self.disks
            .iter()
            .fold((0, 0), |(i, b), d| (i + d.stats.ios, b + d.stats.bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::presets::preset_text;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// The A3700 with its I/O nodes on the hubs `io_nodes` names.
    fn altix(io_nodes: &str) -> Machine {
        let text = preset_text("altix-a3700").unwrap().replace(
            "io_nodes = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]",
            &format!("io_nodes = {io_nodes}"),
        );
        assert!(text.contains(&format!("io_nodes = {io_nodes}")));
        Machine::from_toml_str(&text, "t.toml").unwrap()
    }

    /// Move `len` bytes between volume offset 0 and the pages of `dest`
    /// and serve every request; returns when the last byte has landed.
    fn io(layer: &mut BlockLayer, dest: Dest, len: u64, write: bool) -> Time {
        let mut started = Vec::new();
        let part = Part {
            owner: 0,
            bytes: len,
            tag: 0,
            dest,
        };
        layer.submit(Time::ZERO, 0, len, write, part, &mut started);
        let mut q: BinaryHeap<Reverse<(Time, usize)>> =
            started.drain(..).map(|(d, t)| Reverse((t, d))).collect();
        let mut last = Time::ZERO;
        while let Some(Reverse((now, d))) = q.pop() {
            let (done, next) = layer.disk_done(now, d);
            last = last.max(done.at);
            if let Some(t) = next {
                q.push(Reverse((t, d)));
            }
        }
        last
    }

    /// 2.6.15's thresholds for the mainline 128: congested from 113
    /// requests, clear below 103; and for the smallest queues.
    #[test]
    fn congestion_marks_at_seven_eighths_and_clears_at_thirteen_sixteenths() {
        assert_eq!(
            (congestion_on_threshold(128), congestion_off_threshold(128)),
            (113, 103)
        );
        assert_eq!(
            (congestion_on_threshold(1), congestion_off_threshold(1)),
            (1, 1)
        );
        assert_eq!(
            (congestion_on_threshold(4), congestion_off_threshold(4)),
            (4, 3)
        );
    }

    /// One disk with `nr_requests` = 2: a third request waits (a merge
    /// into a queued one does not), each request freed wakes one sleeper,
    /// first come first woken, and the congestion mark follows the count.
    #[test]
    fn a_full_queue_takes_merges_and_wakes_one_sleeper_per_request_freed() {
        let mut m = altix("[0]");
        m.io.disks[0].count = 1;
        m.block.as_mut().unwrap().queue_depth = 2;
        let mut l = BlockLayer::new(&m, 512 << 10, 1);
        let part = |bytes| Part {
            owner: 0,
            bytes,
            tag: 0,
            dest: Dest::Node(0),
        };
        let mut started = Vec::new();
        let k = 64u64 << 10;
        // One in service, one queued: full.
        assert!(l.try_submit_piece(Time::ZERO, 0, 0, false, part(k), &mut started));
        assert!(l.try_submit_piece(Time::ZERO, 0, 1 << 30, false, part(k), &mut started));
        assert_eq!(l.requests.allocated(0, false), 2);
        assert!(l.requests.congested(0, false));
        // A write has its own count.
        assert!(l.requests.free(0, true));
        // Another far away needs a request: refused, nothing queued.
        assert!(!l.try_submit_piece(Time::ZERO, 0, 2 << 30, false, part(k), &mut started));
        assert_eq!(l.disks[0].queued(), 1);
        // One that follows the queued request merges into it.
        assert!(l.try_submit_piece(Time::ZERO, 0, (1 << 30) + k, false, part(k), &mut started));
        assert_eq!(l.requests.allocated(0, false), 2);
        assert_eq!(started.len(), 1);
        l.sleep_for_request(Time::ZERO, 0, false, 7, false, &mut started);
        l.sleep_for_request(Time::ZERO, 0, false, 9, false, &mut started);
        let (d, t) = started[0];
        let _ = l.disk_done(t, d);
        assert_eq!(l.requests.woken, vec![(0, 7)]);
        assert_eq!(l.requests.allocated(0, false), 1);
        // With 2 requests the mark clears only below 1 (`nr - 0 - 0 - 1`).
        assert!(l.requests.congested(0, false));
        assert_eq!((l.requests.waits, l.requests.wait_ns), (2, t.as_ns()));
        assert!(l.requests.max_allocated <= 2);
    }

    /// A write's own latency (`disk_write_latency_us`) delays a write's
    /// completion by that, not the read's; absent, the read's both ways.
    #[test]
    fn a_write_completes_after_its_own_latency_where_one_is_given() {
        let text = preset_text("nvme-2s").unwrap();
        let m = Machine::from_toml_str(text, "t.toml").unwrap();
        let lat = m.block.as_ref().unwrap().disk_latency_us;
        assert!(lat > 10.0, "{lat}");
        let len = 128u64 << 10;
        let done = |m: &Machine, write| {
            io(
                &mut BlockLayer::new(m, 1 << 20, 1),
                Dest::Node(0),
                len,
                write,
            )
            .as_ns()
        };
        let (read, write) = (done(&m, false), done(&m, true));
        let mut early = m.clone();
        early.block.as_mut().unwrap().disk_write_latency_us = Some(0.0);
        assert_eq!(done(&early, false), read);
        let gain = write - done(&early, true);
        assert_eq!(gain, (lat * 1e3).round() as u64, "{write} ns before");
        // The key reads back from the machine file.
        let back = Machine::from_toml_str(&early.to_toml_string(), "t.toml").unwrap();
        assert_eq!(back.block, early.block);
    }

    /// `disk_commands`: 64 scattered 1 MiB reads queued at once on one
    /// NVMe drive. Every request is served once and every byte comes
    /// back to its part (conservation); more commands never finish later;
    /// with one command the disk serves one request at a time (each
    /// starts when the one before it finishes: the disk of before the
    /// knob), and with k each of the k serves at the media rate, so the
    /// last finishes k times sooner where the media binds.
    #[test]
    fn more_disk_commands_never_finish_later_and_lose_no_request() {
        let text = preset_text("nvme-2s").unwrap();
        let mut m = Machine::from_toml_str(text, "t.toml").unwrap();
        m.io.disks.truncate(1);
        m.io.disks[0].count = 1;
        // One request a piece: no larger than the queue's limit (nvme-2s
        // caps a request below 1 MiB; submit_piece asserts it in checked
        // builds).
        let n = 64u64;
        let len = BlockLayer::new(&m, 1 << 30, 1)
            .model
            .max_request
            .min(1 << 20);
        let run = |commands: u32| {
            let mut m = m.clone();
            m.block.as_mut().unwrap().disk_commands = commands;
            let mut l = BlockLayer::new(&m, 1 << 30, 1);
            let mut started = Vec::new();
            for i in 0..n {
                let part = Part {
                    owner: i as u32,
                    bytes: len,
                    tag: i,
                    dest: Dest::Node(0),
                };
                // Two lengths apart: nothing merges.
                l.submit_piece(Time::ZERO, 0, 2 * i * len, false, part, &mut started);
            }
            assert_eq!(started.len(), commands.min(n as u32) as usize);
            let mut q: BinaryHeap<Reverse<(Time, usize)>> =
                started.drain(..).map(|(d, t)| Reverse((t, d))).collect();
            let (mut served, mut bytes, mut finishes) = (vec![0u32; n as usize], 0u64, Vec::new());
            while let Some(Reverse((now, d))) = q.pop() {
                assert!(l.disks[d].serving <= commands);
                let (done, next) = l.disk_done(now, d);
                finishes.push(now);
                for p in &done.parts {
                    served[p.owner as usize] += 1;
                    bytes += p.bytes;
                }
                if let Some(t) = next {
                    q.push(Reverse((t, d)));
                }
            }
            assert!(served.iter().all(|&k| k == 1), "{served:?}");
            assert_eq!(bytes, n * len);
            assert_eq!(l.totals(), (n, n * len));
            assert_eq!(l.requests.allocated(0, false), 0);
            finishes
        };
        let one = run(1);
        // One command: back to back, one service time apart.
        let gap = one[0].as_ns();
        assert!(gap > 0);
        for (i, t) in one.iter().enumerate() {
            assert_eq!(t.as_ns(), gap * (i as u64 + 1));
        }
        let mut last = *one.last().unwrap();
        for k in [2u32, 3, 4, 8, 16, 64, 100] {
            let f = run(k);
            let end = *f.last().unwrap();
            assert!(end <= last, "{k} commands: {end:?} after {last:?}");
            assert_eq!(end.as_ns(), gap * n.div_ceil(k as u64));
            last = end;
        }
    }

    fn sum(set: &LinkSet) -> u64 {
        (0..set.len()).map(|i| set.bytes(i)).sum()
    }

    #[test]
    fn dma_lands_every_byte_in_its_pages_memory_and_crosses_the_fabric_only_off_the_hbas_node() {
        let m = altix("[0]");
        let len = 64u64 << 20;
        for write in [false, true] {
            // Pages on the HBAs' own node: its hub moves them, no port.
            let mut l = BlockLayer::new(&m, 512 << 10, 1);
            io(&mut l, Dest::Node(0), len, write);
            assert_eq!(l.node_mem.bytes(0), len);
            assert_eq!(sum(&l.node_mem), len);
            assert_eq!(sum(&l.node_in) + sum(&l.node_out), 0);
            // Pages on node 5: every byte leaves one port and enters the
            // other, in the direction of the transfer.
            let mut l = BlockLayer::new(&m, 512 << 10, 1);
            io(&mut l, Dest::Node(5), len, write);
            assert_eq!(l.node_mem.bytes(5), len);
            assert_eq!(sum(&l.node_mem), len);
            let (from, to) = if write { (5, 0) } else { (0, 5) };
            assert_eq!(l.node_out.bytes(from), len);
            assert_eq!(l.node_in.bytes(to), len);
            assert_eq!(sum(&l.node_out), len);
            assert_eq!(sum(&l.node_in), len);
        }
    }

    #[test]
    fn interleaved_dma_puts_a_share_in_every_nodes_memory_and_conserves_bytes() {
        // Every I/O node on its own hub, as the A3700 has them.
        let m = altix("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]");
        let len = 96u64 << 20;
        let mut l = BlockLayer::new(&m, 512 << 10, 1);
        io(&mut l, Dest::Interleave, len, false);
        let (ios, bytes) = l.totals();
        assert_eq!(bytes, len);
        // A part's share is rounded up to whole bytes on each node.
        let dma = sum(&l.node_mem);
        assert!(
            dma >= len && dma <= len + ios * 12,
            "{dma} bytes DMAed for {len} read in {ios} requests"
        );
        for i in 1..12 {
            assert_eq!(l.node_mem.bytes(i), l.node_mem.bytes(0));
        }
        // Each hub sends out all but its own node's share of what its
        // disks read.
        let out = sum(&l.node_out);
        assert!(out >= len / 12 * 11 && out <= dma / 12 * 11, "{out}");
    }

    /// A request's parts booked together (`dma_parts`, interleaved runs
    /// summed) leave every port and controller where booking them one by
    /// one (`dma`) does, and finish at the same moment: random requests of
    /// one to six parts, interleaved and on one node mixed, reads and
    /// writes, one node and twelve.
    #[test]
    fn a_requests_parts_booked_together_book_as_one_by_one() {
        use crate::engine::rng::stream;
        use rand::RngExt;
        for io_nodes in ["[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]", "[3]"] {
            let m = altix(io_nodes);
            for nodes in [12usize, 1] {
                let mut a = BlockLayer::new(&m, 512 << 10, 1);
                if nodes == 1 {
                    a.node_mem = LinkSet::new(1, 3.2e9);
                    a.node_in = LinkSet::new(1, 1.6e9);
                    a.node_out = LinkSet::new(1, 1.6e9);
                }
                let mut b = BlockLayer::new(&m, 512 << 10, 1);
                (b.node_mem, b.node_in, b.node_out) =
                    (a.node_mem.clone(), a.node_in.clone(), a.node_out.clone());
                let mut rng = stream(9, "dma-parts-test", nodes as u64);
                let mut now = 0u64;
                let part = |bytes, dest| Part {
                    owner: 0,
                    bytes,
                    tag: 0,
                    dest,
                };
                for _ in 0..3000 {
                    now += rng.random_range(0..200_000u64);
                    let ready = Time(now);
                    let write = rng.random_range(0..4u32) == 0;
                    let host = rng.random_range(0..14usize);
                    let k = rng.random_range(1..7usize);
                    let mut pool = PartPool::default();
                    let mut parts: Option<Parts> = None;
                    for _ in 0..k {
                        // Sizes repeat often, as a reader's blocks do.
                        let bytes = [4096u64, 12_288, 36_864][rng.random_range(0..3usize)]
                            + rng.random_range(0..2u64) * rng.random_range(0..100_000u64);
                        let dest = if rng.random_range(0..3u32) == 0 {
                            Dest::Node(rng.random_range(0..14u16))
                        } else {
                            Dest::Interleave
                        };
                        match parts.as_mut() {
                            None => parts = Some(Parts::one(part(bytes, dest))),
                            Some(ps) => ps.push_back(part(bytes, dest), &mut pool),
                        }
                    }
                    let parts = parts.expect("at least one part");
                    let got = a.dma_parts(host, &parts, write, ready);
                    let want = parts
                        .iter()
                        .map(|p| b.dma(host, p.dest, write, ready, p.bytes))
                        .max()
                        .expect("parts");
                    assert_eq!(got, want);
                    for (x, y) in [
                        (&a.node_mem, &b.node_mem),
                        (&a.node_in, &b.node_in),
                        (&a.node_out, &b.node_out),
                    ] {
                        for i in 0..x.len() {
                            assert_eq!(x.busy_until(i), y.busy_until(i));
                            assert_eq!(x.busy(i), y.busy(i));
                            assert_eq!(x.bytes(i), y.bytes(i));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_buffer_off_the_hbas_node_waits_for_the_fabric_only_when_the_ports_bind() {
        // One I/O node, on node 0's hub; 128 MiB over 256 disks at 46 MiB/s
        // is 12 GB/s, twice a NUMALink port or a node's memory.
        let m = altix("[0]");
        let len = 128u64 << 20;
        let mut near = BlockLayer::new(&m, 512 << 10, 1);
        let t_near = io(&mut near, Dest::Node(0), len, false);
        let mut far = BlockLayer::new(&m, 512 << 10, 1);
        let t_far = io(&mut far, Dest::Node(7), len, false);
        // The far buffer's bytes hold both ports for as long as its node's
        // memory; the near one holds none.
        assert_eq!(near.node_in.busy(7) + near.node_out.busy(0), Dur::ZERO);
        assert!(far.node_in.busy(7) >= far.node_mem.busy(7));
        assert!(t_far >= t_near);
        // With ports slower than memory, the far buffer is slower.
        let mut slow = m.clone();
        slow.interconnect.link_gbps = 1.6;
        let mut near = BlockLayer::new(&slow, 512 << 10, 1);
        let t_near = io(&mut near, Dest::Node(0), len, false);
        let mut far = BlockLayer::new(&slow, 512 << 10, 1);
        let t_far = io(&mut far, Dest::Node(7), len, false);
        assert!(
            t_far.as_ns() as f64 > 2.0 * t_near.as_ns() as f64,
            "far {t_far:?} near {t_near:?}"
        );
        // With disks that bind (a tenth of the rate), no difference.
        let mut disks = m.clone();
        disks.io.disks[0].mibps /= 10.0;
        let mut near = BlockLayer::new(&disks, 512 << 10, 1);
        let t_near = io(&mut near, Dest::Node(0), len, false);
        let mut far = BlockLayer::new(&disks, 512 << 10, 1);
        let t_far = io(&mut far, Dest::Node(7), len, false);
        assert_eq!(t_far, t_near);
    }
}
