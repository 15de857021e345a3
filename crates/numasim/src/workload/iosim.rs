//! The direct-I/O and buffered-read experiments over the request-level
//! block layer ([XFS06] F9, with B12, B13 and D19 for reclaim): event loops
//! that drive the kernel's block layer (`kernel/block`), file layouts
//! (`kernel/fs/layout.rs`), reclaim batches (`kernel/mm/vmscan.rs`) and
//! inode locks (`kernel/locking/mutex.rs`).
//!
//! Direct I/O: each thread issues `io_size` syscalls on its own file. A
//! syscall pins its user pages, maps the file range (one extent lookup on
//! XFS; one `get_block` per block on Ext3), allocates first if it extends
//! the file, submits every piece, and waits for the last one: the HBA DMAs
//! straight to or from the user buffer, so the buffer's placement decides
//! which node ports carry the data.
//!
//! Buffered read: each thread reads its file through the page cache with a
//! readahead window. Every page read needs a free page; memory is full of
//! clean cache in steady state, so each one is reclaimed first: by the
//! node's `kswapd` (zone_reclaim_mode 0) or by the reader itself on the
//! page's node (zone_reclaim_mode 1, B13). Where the page lies follows the
//! reader's memory policy (`mm::kswapd`): interleaved over every node, bound
//! to the reader's node, or local first: the reader's node while its
//! kswapd keeps up, else the next node down the zonelist whose kswapd has
//! caught up (a batch of readahead at a time, so the cycling of a stream
//! that one kswapd keeps up with over every node is not drawn here: its
//! pages stay local). Reclaim scans and frees at
//! `reclaim_page_ns` a page and, per `SWAP_CLUSTER_MAX` pages, makes one SN2
//! global TLB purge, which machine-wide is one at a time (the `ptc.g`
//! lock): its length is the slow or fast purge (D19). The reader then
//! copies each page from the page cache into its user buffer, and that copy
//! crosses node ports too.

use crate::engine::{Dur, EventQueue, PastEvent, Time};
use crate::kernel::block::blkdev::{Dest, Part};
use crate::kernel::block::BlockLayer;
use crate::kernel::fs::layout::FileLayout;
use crate::kernel::fs::readahead::Readahead;
use crate::kernel::locking::mutex::Mutex;
use crate::kernel::mm::kswapd::AllocPolicy;
use crate::kernel::mm::swap::SWAP_CLUSTER_MAX;
use crate::machine::blockio::BlockParams;
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectMode {
    Write,
    Overwrite,
    Read,
}

/// CPU work one thread does, ns, by kind: what `cpu_pct_per_mibps` sums.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTime {
    pub copy_ns: f64,
    pub submit_ns: f64,
    pub fs_ns: f64,
    pub reclaim_ns: f64,
    pub lock_wait_ns: f64,
}

impl CpuTime {
    pub fn total(&self) -> f64 {
        self.copy_ns + self.submit_ns + self.fs_ns + self.reclaim_ns + self.lock_wait_ns
    }
    pub fn add(&mut self, o: &CpuTime) {
        self.copy_ns += o.copy_ns;
        self.submit_ns += o.submit_ns;
        self.fs_ns += o.fs_ns;
        self.reclaim_ns += o.reclaim_ns;
        self.lock_wait_ns += o.lock_wait_ns;
    }
}

/// What one run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IoRun {
    pub bytes: u64,
    pub elapsed: Dur,
    pub cpu: CpuTime,
    /// kswapd CPU per node, ns.
    pub kswapd_ns: Vec<f64>,
    pub disk_ios: u64,
    pub disk_bytes: u64,
    pub disk_busy_pct: f64,
    /// Per-disk busy percentage (the heat map).
    pub per_disk_busy_pct: Vec<f64>,
}

impl IoRun {
    pub fn gibps(&self) -> f64 {
        self.bytes as f64 / (1u64 << 30) as f64 / self.elapsed.as_secs_f64().max(1e-12)
    }
    pub fn mibps(&self) -> f64 {
        self.gibps() * 1024.0
    }
    /// Percent of one CPU per MiB/s, every CPU's I/O work counted.
    pub fn cpu_pct_per_mibps(&self) -> f64 {
        let cpu: f64 = self.cpu.total() + self.kswapd_ns.iter().sum::<f64>();
        100.0 * cpu / self.elapsed.as_ns().max(1) as f64 / self.mibps().max(1e-12)
    }
    pub fn kswapd_cpu_pct_per_node(&self) -> f64 {
        if self.kswapd_ns.is_empty() {
            return 0.0;
        }
        100.0 * self.kswapd_ns.iter().sum::<f64>()
            / self.kswapd_ns.len() as f64
            / self.elapsed.as_ns().max(1) as f64
    }
    pub fn iops(&self) -> f64 {
        self.disk_ios as f64 / self.elapsed.as_secs_f64().max(1e-12)
    }
    pub fn avg_io_kib(&self) -> f64 {
        self.disk_bytes as f64 / self.disk_ios.max(1) as f64 / 1024.0
    }
    fn finish(&mut self, layer: &BlockLayer) {
        let (ios, bytes) = layer.totals();
        self.disk_ios = ios;
        self.disk_bytes = bytes;
        self.disk_busy_pct = layer.disk_busy_pct(self.elapsed);
        let e = self.elapsed.as_ns().max(1) as f64;
        self.per_disk_busy_pct = layer
            .disks
            .iter()
            .map(|d| (100.0 * d.stats.busy.as_ns() as f64 / e).min(100.0))
            .collect();
    }
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// A thread's CPU is free to go on.
    Thread(usize),
    /// A thread submits the I/O it prepared (requests enter the queues at
    /// the moment they are submitted, never earlier).
    Submit(usize),
    DiskDone(usize),
    /// Direct I/O: a thread's next bio is built (`dio_bio_submit()`).
    Bio(usize),
    /// Direct I/O: a disk's plug timer fires (`blk_unplug_timeout()`), if
    /// the disk is still plugged under this generation.
    Unplug {
        disk: usize,
        gen: u64,
    },
    /// A finished request's data is in memory: its parts (each a thread's
    /// share, tagged with its chunk sequence), kept in `Events::parts`.
    /// One event for the request, not one per part: the parts were pushed
    /// together at one time and popped one after another, so handling them
    /// in one go, in order, changes nothing. Direct I/O only: a buffered
    /// reader learns its chunks' arrival times at the disk's completion
    /// (`Arrivals`).
    Arrived(usize),
}

/// The event queue as the handlers see it. The event being handled stays
/// on top of the heap and the handler's first new event replaces it (one
/// sift of the heap where a pop and a push take two; each event keeps the
/// order pop then push gives it, `EventQueue::peek_pending`).
struct Events {
    q: EventQueue<Ev>,
    top: bool,
    /// Part lists of the `Arrived` events pending, by slot, and the free slots.
    parts: Vec<Vec<Part>>,
    free: Vec<usize>,
}

impl Events {
    fn with_capacity(n: usize) -> Events {
        Events {
            q: EventQueue::with_capacity(n),
            top: false,
            parts: Vec::new(),
            free: Vec::new(),
        }
    }
    /// The next event (the one handled before is dropped if it was not
    /// replaced).
    fn next(&mut self) -> Option<(Time, Ev)> {
        if std::mem::take(&mut self.top) {
            self.q.discard_top();
        }
        let e = self.q.peek_pending()?;
        self.top = true;
        Some(e)
    }
    fn push(&mut self, at: Time, ev: Ev) -> Result<(), PastEvent> {
        if std::mem::take(&mut self.top) {
            let r = self.q.replace_top(at, ev);
            self.top = r.is_err();
            r
        } else {
            self.q.push(at, ev)
        }
    }
    /// Schedule the arrival of `parts` at `at` (nothing if there are none).
    fn arrive(&mut self, at: Time, parts: Vec<Part>) {
        if parts.is_empty() {
            return;
        }
        let slot = match self.free.pop() {
            Some(i) => {
                self.parts[i] = parts;
                i
            }
            None => {
                self.parts.push(parts);
                self.parts.len() - 1
            }
        };
        self.push(at, Ev::Arrived(slot)).expect("future");
    }
    /// The parts of `Arrived(slot)`, handed over once.
    fn take_parts(&mut self, slot: usize) -> Vec<Part> {
        self.free.push(slot);
        std::mem::take(&mut self.parts[slot])
    }
}

/// `FileLayout::map` from where the thread's last lookup ended: readers
/// and direct-I/O threads go through their files in order, so a lookup
/// starts at the run holding the offset instead of the file's first run
/// (a scan from the start made a file of n runs cost n² to read; Ext2's
/// files of 1 GiB have tens of thousands). Same pieces as `map`.
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    /// A run of the file, and the file offset where it starts.
    run: usize,
    pos: u64,
}

fn map_from(f: &FileLayout, c: &mut Cursor, off: u64, len: u64, mut out: impl FnMut(u64, u64)) {
    if off < c.pos || c.run > f.runs.len() {
        *c = Cursor::default();
    }
    while let Some(&(_, l)) = f.runs.get(c.run) {
        if c.pos + l > off {
            break;
        }
        c.pos += l;
        c.run += 1;
    }
    let end = off + len;
    let mut pos = c.pos;
    for &(v, l) in &f.runs[c.run..] {
        if pos >= end {
            break;
        }
        let (a, b) = (pos.max(off), (pos + l).min(end));
        if a < b {
            out(v + (a - pos), b - a);
        }
        pos += l;
    }
}

/// A disk finished its request: schedule its next one and the arrival in
/// memory of every part the request carried. True if the request freed
/// woke a submitter asleep for one (`layer.requests.woken`).
fn complete_disk(layer: &mut BlockLayer, q: &mut Events, now: Time, disk: usize) -> bool {
    let (done, next) = layer.disk_done(now, disk);
    if let Some(at) = next {
        q.push(at, Ev::DiskDone(disk)).expect("future");
    }
    q.arrive(done.at, done.parts);
    !layer.requests.woken.is_empty()
}

fn dur(ns: f64) -> Dur {
    Dur(crate::engine::round_u64(ns.max(0.0)))
}

/// The direct-I/O setting of one phase.
pub struct Direct<'a> {
    pub b: &'a BlockParams,
    pub page: u64,
    pub block: u64,
    pub io_size: u64,
    pub file_bytes: u64,
    pub ext: bool,
    pub mode: DirectMode,
    /// Per thread: the node its CPU is on, and where its buffer lies.
    pub dest: Vec<Dest>,
}

/// One direct-I/O phase: every thread does `file_bytes` in `io_size`
/// syscalls. Allocating writes (XFS: an extent transaction and the
/// unwritten conversion, each under the allocation lock; Ext3: one
/// allocation per block under the filesystem lock) extend `files`.
pub fn direct_phase(
    d: &Direct,
    layer: &mut BlockLayer,
    files: &mut [FileLayout],
    ext: &mut crate::kernel::fs::balloc::ExtAlloc,
    xfs: &mut crate::kernel::fs::layout::XfsAlloc,
) -> Result<IoRun, crate::kernel::fs::layout::Enospc> {
    let n = d.dest.len();
    let mut q = Events::with_capacity(n + layer.disks.len());
    let mut pos = vec![0u64; n];
    let mut cursor = vec![Cursor::default(); n];
    let mut pending = vec![0u64; n];
    // Each thread's bios of the call in flight, with the moment its CPU
    // has built each one.
    let mut bios: Vec<VecDeque<(Time, u64, u64, Part)>> = vec![VecDeque::new(); n];
    // Per disk: the generation of its plug while plugged.
    let mut plugged: Vec<Option<u64>> = vec![None; layer.disks.len()];
    let mut plug_gen = 0u64;
    let mut touched = Vec::new();
    // Per thread: since when it sleeps for a request (`get_request_wait()`)
    // with its front bio unqueued, and whether it was just woken.
    let mut asleep: Vec<Option<Time>> = vec![None; n];
    let mut woken = vec![false; n];
    // When each reading thread has reaped (dirtied) what has arrived.
    let mut reaped = vec![Time::ZERO; n];
    let mut cpu = CpuTime::default();
    let mut lock = Mutex::default();
    let mut run = IoRun::default();
    let mut started = Vec::new();
    let mut end = Time::ZERO;
    for t in 0..n {
        q.push(Time::ZERO, Ev::Thread(t)).expect("start");
    }
    let write = d.mode != DirectMode::Read;
    while let Some((now, ev)) = q.next() {
        match ev {
            Ev::Thread(t) => {
                if pos[t] >= d.file_bytes {
                    end = end.max(now);
                    continue;
                }
                let len = d.io_size.min(d.file_bytes - pos[t]);
                let pages = len.div_ceil(d.page);
                let blocks = len.div_ceil(d.block);
                let mut ready = now;
                // Allocation first (extending writes).
                if d.mode == DirectMode::Write {
                    let hold = if d.ext {
                        blocks as f64 * d.b.ext_alloc_ns
                    } else {
                        2.0 * d.b.xfs_alloc_us * 1e3
                    };
                    let before = lock.wait;
                    ready = lock.hold(ready, dur(hold));
                    cpu.lock_wait_ns += (lock.wait - before).as_ns() as f64;
                    cpu.fs_ns += hold;
                    let f = &mut files[t];
                    if d.ext {
                        // ext3_get_block() per block (file t is the
                        // allocator's file t), from the thread's
                        // reservation window, a new window when it is
                        // used up: the other threads' windows, reserved
                        // in lock order, decide where the next one goes.
                        let mut left = len;
                        let mut got = 0;
                        while got < blocks {
                            got += ext.step(t, blocks - got, |b, k| {
                                let l = (k * d.block).min(left);
                                f.push(b * d.block, l);
                                left -= l;
                            })?;
                        }
                    } else {
                        let v = xfs.alloc(f, len, layer.stripe.unit)?;
                        f.push(v, len);
                    }
                }
                let mut fs = 0.0;
                if d.ext {
                    fs += blocks as f64 * d.b.ext_map_ns;
                    if write {
                        fs += blocks as f64 * d.b.ext3_journal_ns;
                    }
                }
                // do_direct_IO() pins the user pages, maps the blocks and
                // builds a bio per contiguous run within a stripe unit and
                // the queue's limit, submitting each as it goes: bio j is
                // built once the CPU has done the call's per-byte work up
                // to its end and j + 1 requests. The last is built at
                // `ready + fs + submit`.
                let mut pieces = Vec::new();
                map_from(&files[t], &mut cursor[t], pos[t], len, |v, l| {
                    pieces.push((v, l))
                });
                let max = layer.model.max_request;
                let mut runs = Vec::new();
                for &(v, l) in &pieces {
                    layer.stripe.requests(v, l, max, |at, b| runs.push((at, b)));
                }
                let reqs = runs.len() as u64;
                let per_byte = (fs + pages as f64 * d.b.gup_page_ns) / len as f64;
                let submit = pages as f64 * d.b.gup_page_ns + reqs as f64 * d.b.request_us * 1e3;
                cpu.fs_ns += fs;
                cpu.submit_ns += submit;
                let mut through = 0u64;
                bios[t] =
                    runs.into_iter()
                        .enumerate()
                        .map(|(j, (v, l))| {
                            through += l;
                            let at = ready
                                + dur(per_byte * through as f64
                                    + (j + 1) as f64 * d.b.request_us * 1e3);
                            let part = Part {
                                owner: t as u32,
                                bytes: l,
                                tag: 0,
                                dest: d.dest[t],
                            };
                            (at, v, l, part)
                        })
                        .collect();
                pending[t] = len;
                pos[t] += len;
                run.bytes += len;
                if let Some(&(at, ..)) = bios[t].front() {
                    q.push(at, Ev::Bio(t)).expect("future");
                }
            }
            Ev::Bio(t) => {
                let Some(&(_, v, l, part)) = bios[t].front() else {
                    continue;
                };
                // get_request(): a bio is one request on one disk (cut to
                // the stripe unit and the queue's limit).
                let (disk, off) = layer.stripe.locate(v);
                if !layer.may_queue(disk, off, l, write) {
                    let again = std::mem::take(&mut woken[t]);
                    plugged[disk] = None;
                    layer.sleep_for_request(now, disk, write, t as u32, again, &mut started);
                    asleep[t] = Some(now);
                    for (disk, at) in started.drain(..) {
                        q.push(at, Ev::DiskDone(disk)).expect("future");
                    }
                    continue;
                }
                woken[t] = false;
                bios[t].pop_front();
                layer.queue_plugged(v, l, write, part, &mut touched);
                for (disk, queued) in touched.drain(..) {
                    if layer.disks[disk].serving > 0 {
                        // Its completion runs the queue (blk_run_queue());
                        // a disk with a command free takes the request
                        // now, as a running queue dispatches to a free
                        // hardware tag (`disk_commands`).
                        if layer.disks[disk].has_free_command(&layer.model) {
                            layer.unplug(now, disk, &mut started);
                        }
                        continue;
                    }
                    if queued >= UNPLUG_THRESH {
                        plugged[disk] = None;
                        layer.unplug(now, disk, &mut started);
                    } else if plugged[disk].is_none() {
                        // __make_request() on an empty queue: blk_plug_device().
                        plug_gen += 1;
                        plugged[disk] = Some(plug_gen);
                        q.push(
                            now + Dur(UNPLUG_DELAY_NS),
                            Ev::Unplug {
                                disk,
                                gen: plug_gen,
                            },
                        )
                        .expect("future");
                    }
                }
                if let Some(&(at, ..)) = bios[t].front() {
                    q.push(at, Ev::Bio(t)).expect("future");
                } else {
                    // All built: blk_run_address_space() unplugs the
                    // volume, and md's unplug reaches every member disk
                    // (raid0_unplug()).
                    for disk in 0..plugged.len() {
                        if plugged[disk].take().is_some() {
                            layer.unplug(now, disk, &mut started);
                        }
                    }
                }
                for (disk, at) in started.drain(..) {
                    q.push(at, Ev::DiskDone(disk)).expect("future");
                }
            }
            Ev::Unplug { disk, gen } => {
                if plugged[disk] == Some(gen) {
                    plugged[disk] = None;
                    layer.unplug(now, disk, &mut started);
                    for (disk, at) in started.drain(..) {
                        q.push(at, Ev::DiskDone(disk)).expect("future");
                    }
                }
            }
            Ev::Submit(_) => {}
            Ev::DiskDone(disk) => {
                if !complete_disk(layer, &mut q, now, disk) {
                    continue;
                }
                // A request freed: the thread asleep for it builds its
                // next bio now, and the rest of the call as much later
                // as it slept.
                for (_, t) in layer.requests.woken.drain(..) {
                    let t = t as usize;
                    if let Some(since) = asleep[t].take() {
                        let slept = now - since;
                        for b in bios[t].iter_mut() {
                            b.0 += slept;
                        }
                        woken[t] = true;
                        q.push(now, Ev::Bio(t)).expect("now");
                    }
                }
            }
            Ev::Arrived(slot) => {
                let parts = q.take_parts(slot);
                for p in &parts {
                    let (thread, bytes) = (p.owner as usize, p.bytes);
                    pending[thread] -= bytes;
                    // A synchronous read reaps each bio as it completes
                    // (dio_await_one(), dio_bio_complete()): it re-dirties the
                    // user pages that bio filled while other bios are still on
                    // the disks. The call returns when the last is reaped.
                    let mut at = now;
                    if !write {
                        let work = bytes as f64 / d.page as f64 * d.b.dio_dirty_page_ns;
                        cpu.submit_ns += work;
                        reaped[thread] = reaped[thread].max(now) + dur(work);
                        at = reaped[thread];
                    }
                    if pending[thread] == 0 {
                        q.push(at, Ev::Thread(thread)).expect("now");
                    }
                }
                layer.recycle(parts);
            }
        }
    }
    run.elapsed = end - Time::ZERO;
    run.cpu = cpu;
    run.kswapd_ns = Vec::new();
    run.finish(layer);
    Ok(run)
}

/// The buffered-read setting.
pub struct BufferedRead<'a> {
    pub b: &'a BlockParams,
    pub page: u64,
    pub nodes: usize,
    /// Per thread: its CPU's node (thread t runs on CPU t mod `cpus`).
    pub node: Vec<usize>,
    /// Per thread: its node's zonelist (nodes with memory, nearest first;
    /// at most `ZONELIST_WALK` long).
    pub zonelist: Vec<std::sync::Arc<[u32]>>,
    pub cpus: usize,
    /// Where page cache and user buffer go: interleaving (`numactl -i all`)
    /// spreads both over every node.
    pub policy: AllocPolicy,
    pub readahead: u64,
    pub zone_reclaim: bool,
    pub purge_ns: f64,
}

/// Bytes a buffered reader asks for per `read()` (choice, docs/io.md): it
/// sets only the first readahead window (`get_init_ra_size()`).
pub const READ_CALL_BYTES: u64 = 1 << 20;

/// `q->unplug_delay` (3 ms, drivers/block/ll_rw_blk.c, 2.6.15): how long
/// a plugged queue waits for more requests before its timer runs it.
pub const UNPLUG_DELAY_NS: u64 = 3_000_000;
/// `q->unplug_thresh` (4): queued requests that unplug at once.
pub const UNPLUG_THRESH: usize = 4;

/// How far down its zonelist a local-first reader looks for a kswapd that
/// has caught up before it waits for the soonest one.
pub const ZONELIST_WALK: usize = 256;

/// One request-sized piece a reader waits for. 8 bytes: an Ext2 read
/// keeps tens of thousands in flight (64 MiB of readahead per reader in
/// pieces of a few blocks). Its sequence number is implicit: the reader's
/// chunks are numbered in order, the front one is the `popped`-th.
/// When its data is in is kept apart (`Arrivals`): an arrival touches
/// that time only, not the chunk (which the reader reads in order, when it
/// copies it out); reaching a 12-byte chunk with its byte count still
/// missing was a cache miss per arrival.
struct Chunk {
    /// Bytes (a request is at most a stripe unit, far below 4 GiB).
    len: u32,
    /// The node its page-cache pages are on (`INTERLEAVED`: every node).
    node: u32,
}

/// Per reader, when each chunk in flight is in memory (`NOT_IN` until its
/// request completes), by chunk number from the front (`popped`). Each
/// chunk is exactly one request part (its tag is the chunk's number;
/// merges join parts, never split them), so one arrival completes it. The
/// time is known when the disk finishes the request (`disk_done` books
/// the DMA then): a chunk is in at `now` if its time is `<= now`, and a
/// reader waiting for its front chunk is woken for that time directly, so
/// a buffered read needs no `Arrived` event (one per request, as many as
/// the disks' completions).
type Arrivals = VecDeque<Time>;

const INTERLEAVED: u32 = u32::MAX;
/// A chunk whose request has not completed yet.
const NOT_IN: Time = Time::MAX;

/// One buffered reader's state, together: the event handlers read and
/// write most of it for the one reader an event is about (as separate
/// vectors by reader, a bounds check and a cache line each).
struct Reader {
    /// Bytes whose readahead windows are decided.
    issued: u64,
    cursor: Cursor,
    /// Bytes copied out.
    consumed: u64,
    /// The next chunk's number (its requests' tag).
    seq: u64,
    /// Chunks copied out so far: the front chunk's number.
    popped: u64,
    chunks: VecDeque<Chunk>,
    arrived: Arrivals,
    /// The requests decided and not yet submitted: (disk, disk offset,
    /// part), each within one stripe unit and the queue's limit.
    prepared: Vec<(usize, u64, Part)>,
    /// How many of `prepared` are submitted (the rest wait for a
    /// request), whether it sleeps for one, and whether it was just woken.
    submitted: usize,
    asleep: bool,
    woken: bool,
    waiting: bool,
    /// Its readahead windows (mm/readahead.c, 2.6.15), and the windows
    /// decided but not yet issued (the CPU was busy reclaiming).
    ra: Readahead,
    todo: VecDeque<(u64, u64)>,
    /// The one wake it has pending (`wake`).
    wake_at: Option<Time>,
    /// Its CPU (`t % cpus`).
    cpu: usize,
}

/// Every thread reads its whole file; returns the run.
pub fn buffered_read(r: &BufferedRead, layer: &mut BlockLayer, files: &[FileLayout]) -> IoRun {
    let batch = copy_batch(layer);
    buffered_read_copying(r, layer, files, batch)
}

/// The most a reader copies out in one go: a request's worth at most (a
/// stripe unit and the queue's limit), as a chunk of XFS's stripe-unit
/// pieces already is. Ext2's pieces are a few blocks (tens of KiB); copied
/// one event each, they were most of the model's events (a million for 32
/// readers of 1 GiB), though nearly every chunk behind the front one was
/// already in when the front one was copied.
fn copy_batch(layer: &BlockLayer) -> u64 {
    layer.model.max_request.min(layer.stripe.unit)
}

/// `buffered_read` with copies of at most `copy_cap` bytes (0: one chunk
/// a copy, the model before session 16, kept for the tests).
fn buffered_read_copying(
    r: &BufferedRead,
    layer: &mut BlockLayer,
    files: &[FileLayout],
    copy_cap: u64,
) -> IoRun {
    let n = r.node.len();
    let mut q = Events::with_capacity(n + layer.disks.len());
    let ncpu = r.cpus.max(1);
    let mut cpu_free = vec![Time::ZERO; ncpu];
    let mut kswapd_free = vec![Time::ZERO; r.nodes];
    let mut kswapd_ns = vec![0.0; r.nodes];
    let mut purge_free = Time::ZERO;
    let mut cpu = CpuTime::default();
    let mut started = Vec::new();
    let mut end = Time::ZERO;
    // `readahead` is what readahead keeps in flight, a current and an
    // ahead window: each window at most half of it (`ra_pages`).
    let mut rd: Vec<Reader> = (0..n)
        .map(|t| {
            let mut ra = Readahead::new(r.readahead.div_ceil(2), r.page);
            let todo = ra
                .read(0, READ_CALL_BYTES, files[t].bytes)
                .into_iter()
                .collect();
            Reader {
                issued: 0,
                cursor: Cursor::default(),
                consumed: 0,
                seq: 0,
                popped: 0,
                chunks: VecDeque::new(),
                arrived: VecDeque::new(),
                prepared: Vec::new(),
                submitted: 0,
                asleep: false,
                woken: false,
                waiting: true,
                ra,
                todo,
                wake_at: None,
                cpu: t % ncpu,
            }
        })
        .collect();
    let page_copy_ns = r.page as f64 / (r.b.copy_gbps);
    // The one wake each reader has pending: a reader woken early finds
    // its CPU busy or its chunk missing and re-arms, so a second wake is
    // never needed, and letting them pile up made the queue grow without
    // bound when readers outnumber the disks' requests (NVMe, 128 readers).
    for (t, x) in rd.iter_mut().enumerate() {
        wake(&mut q, &mut x.wake_at, t, Time::ZERO);
    }
    while let Some((now, ev)) = q.next() {
        match ev {
            Ev::Thread(t) => {
                let x = &mut rd[t];
                if x.wake_at != Some(now) {
                    continue; // superseded by an earlier wake
                }
                x.wake_at = None;
                if x.asleep {
                    // Asleep in get_request_wait(): its wake resumes it.
                    continue;
                }
                let c = x.cpu;
                // Work happens when the thread's CPU is free, never ahead.
                if cpu_free[c] > now {
                    wake(&mut q, &mut x.wake_at, t, cpu_free[c]);
                    continue;
                }
                // Readahead: the windows the reader's read() at its
                // position opens (a current and an ahead window).
                let size = files[t].bytes;
                while let Some(&(at, len)) = x.todo.front() {
                    if cpu_free[c] > now {
                        // Busy reclaiming: go on when the CPU is free.
                        wake(&mut q, &mut x.wake_at, t, cpu_free[c]);
                        break;
                    }
                    x.todo.pop_front();
                    debug_assert_eq!(at, x.issued, "windows tile the file");
                    let pages = len.div_ceil(r.page);
                    let node = place(r, now, t, &kswapd_free);
                    // Free pages first: reclaim them where they will be placed.
                    let ready = reclaim(
                        r,
                        now,
                        t,
                        node,
                        pages,
                        &mut kswapd_free,
                        &mut kswapd_ns,
                        &mut purge_free,
                        &mut cpu_free,
                        &mut cpu,
                    );
                    let max = layer.model.max_request;
                    let stripe = layer.stripe;
                    let dest = match node {
                        None => Dest::Interleave,
                        Some(nd) => Dest::Node(nd as u16),
                    };
                    let chunk_node = node.map_or(INTERLEAVED, |nd| nd as u32);
                    // One chunk per request-sized piece (within a stripe
                    // unit and the queue's limit): the reader copies each
                    // page as soon as it is up to date, in file order
                    // (do_generic_mapping_read() waits on one page at a
                    // time, and a request's pages come up to date
                    // together), not once the whole window or a whole
                    // contiguous run is in. The stripe is cut once here:
                    // each piece keeps its disk for the submit.
                    let seq0 = x.seq;
                    let (seq_t, prep, ch, ar) =
                        (&mut x.seq, &mut x.prepared, &mut x.chunks, &mut x.arrived);
                    map_from(&files[t], &mut x.cursor, x.issued, len, |v, l| {
                        stripe.requests_on_disks(v, l, max, |d, off, b| {
                            let part = Part {
                                owner: t as u32,
                                bytes: b,
                                tag: *seq_t,
                                dest,
                            };
                            *seq_t += 1;
                            prep.push((d, off, part));
                            let b32 = u32::try_from(b).expect("a request is under 4 GiB");
                            ch.push_back(Chunk {
                                len: b32,
                                node: chunk_node,
                            });
                            ar.push_back(NOT_IN);
                        })
                    });
                    let reqs = x.seq - seq0;
                    let submit = reqs as f64 * r.b.request_us * 1e3;
                    cpu.submit_ns += submit;
                    let at = ready.max(cpu_free[c]) + dur(submit);
                    cpu_free[c] = at;
                    q.push(at, Ev::Submit(t)).expect("future");
                    x.issued += len;
                }
                // Copy out the oldest chunk if it has arrived.
                let front = x.arrived.front().copied();
                match front.map(|a| a <= now) {
                    // The CPU is still reclaiming or submitting the window
                    // just decided: copy once it is free. The copy's
                    // traffic is booked on the node ports when it happens
                    // (file_read_actor() runs after readahead returns);
                    // booking it ahead moved every port's free time
                    // (interleaved shares touch all of them) past that
                    // moment, and every other reader's copy and DMA
                    // queued behind the idle gap.
                    Some(true) if cpu_free[c] > now => {
                        wake(&mut q, &mut x.wake_at, t, cpu_free[c]);
                    }
                    Some(true) => {
                        // The front chunk and the chunks behind it that are
                        // in, as one copy of up to `copy_cap` bytes
                        // (do_generic_mapping_read() copies up-to-date pages
                        // back to back, without sleeping), stopping where
                        // the cache's node changes or a readahead window
                        // opens (decided after this copy, as chunk by chunk).
                        let node = x.chunks.front().expect("front").node;
                        let mut c_len = 0;
                        while x.arrived.front().is_some_and(|&a| a <= now) {
                            let l = u64::from(x.chunks.front().expect("front").len);
                            if c_len > 0
                                && (c_len + l > copy_cap
                                    || x.chunks.front().expect("front").node != node
                                    || !x.todo.is_empty())
                            {
                                break;
                            }
                            x.arrived.pop_front();
                            x.chunks.pop_front();
                            x.popped += 1;
                            c_len += l;
                            x.consumed += l;
                            x.ra.sequential_to(x.consumed);
                            x.ra.read_into(x.consumed, READ_CALL_BYTES, size, &mut x.todo);
                        }
                        let pages = c_len as f64 / r.page as f64;
                        let work = pages * (page_copy_ns + r.b.page_op_ns);
                        cpu.copy_ns += work;
                        let start = now;
                        let mut done = start + dur(work);
                        // The copy reads from the page cache's nodes and writes
                        // the user buffer's: both cross node ports.
                        let me = r.node[t];
                        match (node != INTERLEAVED).then_some(node as usize) {
                            // Every other node sends a share out and takes
                            // one in; this node's ports carry all the others'.
                            None if r.nodes > 1 => {
                                let share = c_len.div_ceil(r.nodes as u64);
                                let remote = share * (r.nodes as u64 - 1);
                                done = done
                                    .max(layer.node_out.carry_all_but(me, start, share, remote));
                                done =
                                    done.max(layer.node_in.carry_all_but(me, start, share, remote));
                            }
                            // One node: nothing crosses, but its ports may still be busy.
                            None => {
                                done = done.max(layer.node_in.carry(me, start, 0));
                                done = done.max(layer.node_out.carry(me, start, 0));
                            }
                            // Cache fallen back to another node, buffer local.
                            Some(nd) if nd != me => {
                                done = done.max(layer.node_out.carry(nd, start, c_len));
                                done = done.max(layer.node_in.carry(me, start, c_len));
                            }
                            Some(_) => {}
                        }
                        // Its loads read the page-cache pages out of their
                        // node's memory and its stores write the user buffer
                        // into the buffer's node's: the same controllers the
                        // DMA passes (`BlockLayer::dma`), on one budget.
                        done = done.max(copy_through_memory(layer, me, node, c_len, start));
                        cpu_free[c] = done;
                        x.waiting = false;
                        if x.consumed >= size {
                            end = end.max(done);
                        } else {
                            wake(&mut q, &mut x.wake_at, t, done);
                        }
                    }
                    // Its request is done and its data on the way: wake
                    // when it is in (what the arrival woke it for).
                    Some(false) if front != Some(NOT_IN) => {
                        wake(&mut q, &mut x.wake_at, t, front.expect("front"));
                    }
                    // Its request is still queued or on the disk.
                    _ => x.waiting = true,
                }
            }
            Ev::Submit(t) => {
                // Everything prepared up to now (the submits of one refill
                // come due in order; later ones wait for their own event).
                // A reader asleep for a request resumes only when woken.
                let x = &mut rd[t];
                if x.asleep {
                    continue;
                }
                let again = std::mem::take(&mut x.woken);
                let mut i = x.submitted;
                while let Some(&(d, off, part)) = x.prepared.get(i) {
                    if !layer.try_submit_piece(now, d, off, false, part, &mut started) {
                        // No request free on that disk: sleep until it
                        // frees one; the rest of the refill waits.
                        layer.sleep_for_request(now, d, false, t as u32, again, &mut started);
                        x.asleep = true;
                        break;
                    }
                    i += 1;
                }
                if x.asleep {
                    x.submitted = i;
                } else {
                    x.prepared.clear();
                    x.submitted = 0;
                    if again {
                        // Back from the sleep: go on reading.
                        wake(&mut q, &mut x.wake_at, t, now);
                    }
                }
                for (disk, at) in started.drain(..) {
                    q.push(at, Ev::DiskDone(disk)).expect("future");
                }
            }
            // Direct I/O's bio and plug events: never queued here.
            Ev::Bio(_) | Ev::Unplug { .. } => {}
            Ev::DiskDone(disk) => {
                let (done, next) = layer.disk_done(now, disk);
                if let Some(at) = next {
                    q.push(at, Ev::DiskDone(disk)).expect("future");
                }
                // The request's data is in memory at `done.at`: each part's
                // chunk learns when, and a reader waiting on its front chunk
                // is woken for that moment (no event for the arrival itself).
                for p in &done.parts {
                    let (thread, tag, bytes) = (p.owner as usize, p.tag, p.bytes);
                    let x = &mut rd[thread];
                    // Chunks are numbered in order: the tag indexes them.
                    if let Some(i) = tag.checked_sub(x.popped) {
                        if let Some(a) = x.arrived.get_mut(i as usize) {
                            debug_assert_eq!(
                                u64::from(x.chunks[i as usize].len),
                                bytes,
                                "a chunk is one part"
                            );
                            *a = done.at;
                        }
                    }
                    if x.waiting {
                        if let Some(&a) = x.arrived.front().filter(|&&a| a != NOT_IN) {
                            x.waiting = false;
                            wake(&mut q, &mut x.wake_at, thread, a);
                        }
                    }
                }
                layer.recycle(done.parts);
                // A request freed: the reader asleep for it retries now.
                for (_, t) in layer.requests.woken.drain(..) {
                    let t = t as usize;
                    rd[t].asleep = false;
                    rd[t].woken = true;
                    q.push(now, Ev::Submit(t)).expect("now");
                }
            }
            // Buffered arrivals are booked at the disk's completion.
            Ev::Arrived(_) => {}
        }
    }
    let mut run = IoRun {
        bytes: rd.iter().map(|x| x.consumed).sum(),
        elapsed: end - Time::ZERO,
        cpu,
        kswapd_ns,
        ..IoRun::default()
    };
    run.finish(layer);
    run
}

/// A buffered reader's `copy_to_user()` of `bytes` (2.6.15
/// `file_read_actor()`, `__copy_user` on ia64: plain loads and stores)
/// from page-cache pages on `cache` (`INTERLEAVED`: every node in turn)
/// into the reader's buffer, which is interleaved with the cache or on
/// the reader's node `me`: the source's bytes pass its node's memory
/// controllers once and the buffer's once. Returns when the last byte
/// is through them.
fn copy_through_memory(
    layer: &mut BlockLayer,
    me: usize,
    cache: u32,
    bytes: u64,
    start: Time,
) -> Time {
    let mem = &mut layer.node_mem;
    let me = me % mem.len().max(1);
    if cache == INTERLEAVED {
        // A share of the pages and a share of the buffer on every node.
        let share = bytes.div_ceil(mem.len().max(1) as u64);
        mem.carry_all(start, 2 * share)
    } else if cache as usize % mem.len().max(1) == me {
        mem.carry(me, start, 2 * bytes)
    } else {
        let src = mem.carry(cache as usize % mem.len(), start, bytes);
        src.max(mem.carry(me, start, bytes))
    }
}

/// Arm reader `t`'s wake at `at` unless one is pending no later
/// (`wake_at`, the reader's).
fn wake(q: &mut Events, wake_at: &mut Option<Time>, t: usize, at: Time) {
    if wake_at.is_some_and(|w| w <= at) {
        return;
    }
    *wake_at = Some(at);
    q.push(at, Ev::Thread(t)).expect("wake in the future");
}

/// The node thread `t`'s next readahead batch goes to at `now` (None:
/// interleaved). Local first, `__alloc_pages()` takes the first zone of the
/// zonelist above its low watermark, that is whose kswapd has caught up;
/// with none, the batch waits for the kswapd that catches up first.
fn place(r: &BufferedRead, now: Time, t: usize, kswapd_free: &[Time]) -> Option<usize> {
    match r.policy {
        AllocPolicy::Interleave => None,
        AllocPolicy::Bind => Some(r.node[t]),
        // zone_reclaim() keeps the page on the reader's node (B13).
        AllocPolicy::LocalFirst if r.zone_reclaim => Some(r.node[t]),
        AllocPolicy::LocalFirst => {
            let zl = &r.zonelist[t];
            let ready = zl
                .iter()
                .map(|&j| j as usize)
                .find(|&j| kswapd_free[j] <= now);
            ready.or_else(|| {
                zl.iter()
                    .map(|&j| j as usize)
                    .min_by_key(|&j| kswapd_free[j])
            })
        }
    }
}

/// Free `pages` pages for thread `t` at `now` on `node` (None: spread
/// over every node): returns when they are free.
#[allow(clippy::too_many_arguments)]
fn reclaim(
    r: &BufferedRead,
    now: Time,
    t: usize,
    node: Option<usize>,
    pages: u64,
    kswapd_free: &mut [Time],
    kswapd_ns: &mut [f64],
    purge_free: &mut Time,
    cpu_free: &mut [Time],
    cpu: &mut CpuTime,
) -> Time {
    // Interleaved: an equal share on every node, the first `extra` nodes
    // one page more; only nodes that get a page reclaim (a batch smaller
    // than the node count touches that many nodes, not all of them).
    let (share, extra, span) = match node {
        None => {
            let share = pages / r.nodes as u64;
            let extra = pages % r.nodes as u64;
            let span = if share > 0 { r.nodes } else { extra as usize };
            (share, extra, span)
        }
        Some(_) => (pages, 0, 1),
    };
    let mut ready = now;
    for i in 0..span {
        let nd = node.unwrap_or(i);
        let k = share + u64::from((i as u64) < extra);
        // Who reclaims: the node's kswapd, or (zone_reclaim) the reader.
        let start = if r.zone_reclaim {
            now.max(cpu_free[t % r.cpus.max(1)])
        } else {
            now.max(kswapd_free[nd])
        };
        // The purges queue on the machine-wide purge lock from the moment
        // reclaim starts (requests reach it in time order, so it never
        // idles while someone waits); the reclaimer spins until its last.
        let cpu_done = start + dur(k as f64 * r.b.reclaim_page_ns);
        // One purge per SWAP_CLUSTER_MAX pages, back to back: the first
        // starts when the lock is free (or now), each next at once, as a
        // loop of `max(now, free) + purge` gives them (the free time is
        // past `now` after the first).
        let purges = k.div_ceil(SWAP_CLUSTER_MAX);
        let purged = if purges == 0 {
            start
        } else {
            *purge_free = now.max(*purge_free) + Dur(dur(r.purge_ns).0.saturating_mul(purges));
            *purge_free
        };
        let at = cpu_done.max(purged);
        let spin = (at - cpu_done).as_ns() as f64;
        let work = (at - start).as_ns() as f64;
        if r.zone_reclaim {
            cpu.reclaim_ns += work - spin;
            cpu.lock_wait_ns += spin;
            cpu_free[t % r.cpus.max(1)] = at;
        } else {
            kswapd_ns[nd] += work;
            kswapd_free[nd] = at;
        }
        ready = ready.max(at);
    }
    ready
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::fs::balloc::ExtAlloc;
    use crate::kernel::fs::layout::XfsAlloc;
    use crate::kernel::fs::FsKind;
    use crate::machine::{presets, Machine};

    /// A buffered reader's copy reads each byte out of its page-cache
    /// node's memory and writes it into its buffer's node's: twice the
    /// copy on the memory controllers in all, split as the pages lie, and
    /// behind whatever those controllers already carry (the DMA's bytes).
    #[test]
    fn a_buffered_copy_reads_the_cache_and_writes_the_buffer_through_memory() {
        let m = Machine::from_toml_str(presets::preset_text("altix-a3700").unwrap(), "a").unwrap();
        let mem = |l: &BlockLayer| (0..12).map(|n| l.node_mem.bytes(n)).collect::<Vec<u64>>();
        let len = 12u64 << 20;
        // Interleaved cache and buffer: a share of each on every node.
        let mut l = BlockLayer::new(&m, 512 << 10, 1);
        copy_through_memory(&mut l, 3, INTERLEAVED, len, Time::ZERO);
        assert!(mem(&l).iter().all(|&b| b == 2 * len / 12));
        // Cache on node 5, buffer on the reader's node 3; then both on 3.
        let mut l = BlockLayer::new(&m, 512 << 10, 1);
        let apart = copy_through_memory(&mut l, 3, 5, len, Time::ZERO);
        assert_eq!((mem(&l)[3], mem(&l)[5]), (len, len));
        assert_eq!(mem(&l).iter().sum::<u64>(), 2 * len);
        let mut l = BlockLayer::new(&m, 512 << 10, 1);
        let local = copy_through_memory(&mut l, 3, 3, len, Time::ZERO);
        assert_eq!(mem(&l)[3], 2 * len);
        assert_eq!(mem(&l).iter().sum::<u64>(), 2 * len);
        // Both copies on one node's controllers take twice as long as
        // one on each of two nodes.
        assert!(local > apart);
        // Memory still busy with a DMA: the copy waits behind it.
        let mut l = BlockLayer::new(&m, 512 << 10, 1);
        l.node_mem.carry(5, Time::ZERO, 64 << 20);
        assert!(copy_through_memory(&mut l, 3, 5, len, Time::ZERO) > apart);
    }

    /// Every byte a direct-I/O phase moves is DMAed once, into or out of
    /// the memory of the node its buffer page is on, and crosses the
    /// fabric only between a page's node and the hub of the disk's I/O
    /// node (the A3700 has one I/O node beside each node).
    #[test]
    fn direct_io_dmas_every_byte_once_into_its_buffers_memory() {
        let m = Machine::from_toml_str(presets::preset_text("altix-a3700").unwrap(), "a").unwrap();
        let b = m.block.as_ref().unwrap();
        let unit = 512 << 10;
        let layer = BlockLayer::new(&m, unit, 1);
        let cap = layer.volume_bytes();
        let width = layer.stripe.unit * layer.stripe.disks;
        let mut ext = ExtAlloc::new(FsKind::Ext3, cap / 2, 4096);
        let mut xfs = XfsAlloc::new(cap, unit, width);
        let file = 64u64 << 20;
        let dest = vec![Dest::Node(0), Dest::Node(5), Dest::Node(11)];
        let mut files = vec![FileLayout::default(); dest.len()];
        for mode in [DirectMode::Write, DirectMode::Overwrite, DirectMode::Read] {
            let d = Direct {
                b,
                page: m.page_size,
                block: 4096,
                io_size: 16 << 20,
                file_bytes: file,
                ext: false,
                mode,
                dest: dest.clone(),
            };
            let mut layer = BlockLayer::new(&m, unit, 1);
            let run = direct_phase(&d, &mut layer, &mut files, &mut ext, &mut xfs).unwrap();
            assert_eq!(run.bytes, 3 * file);
            let mem: Vec<u64> = (0..12).map(|n| layer.node_mem.bytes(n)).collect();
            assert_eq!(mem.iter().sum::<u64>(), run.bytes, "{mode:?}");
            for n in [0, 5, 11] {
                assert_eq!(mem[n], file, "{mode:?} node {n}");
            }
            // Of each file, the part on disks behind other nodes' hubs
            // (11 of the 12 I/O nodes) crosses the fabric, once out of one
            // port and once into another.
            let (out, inn): (u64, u64) = (0..12)
                .map(|n| (layer.node_out.bytes(n), layer.node_in.bytes(n)))
                .fold((0, 0), |(a, b), (o, i)| (a + o, b + i));
            assert_eq!(out, inn, "{mode:?}");
            assert!(out < run.bytes && out > run.bytes / 2, "{mode:?}: {out}");
            let page_port = |n: usize| {
                if mode == DirectMode::Read {
                    layer.node_in.bytes(n)
                } else {
                    layer.node_out.bytes(n)
                }
            };
            for n in [0, 5, 11] {
                assert!(page_port(n) < file && page_port(n) > file / 2);
            }
        }
    }

    /// The A3700 cut to 8 disks (queues deep enough to bind a small
    /// `queue_depth`) with `queue_depth` = `depth`.
    fn eight_disks(depth: u32) -> Machine {
        let mut m =
            Machine::from_toml_str(presets::preset_text("altix-a3700").unwrap(), "a").unwrap();
        m.io.disks[0].count = 8;
        m.block.as_mut().unwrap().queue_depth = depth;
        m
    }

    /// 8 buffered readers, each of a contiguous 64 MiB file, with 32 MiB
    /// of readahead each: about 64 requests queue per disk.
    fn read_with_depth(depth: u32, seed: u64) -> (IoRun, BlockLayer) {
        let m = eight_disks(depth);
        let mut layer = BlockLayer::new(&m, 512 << 10, seed);
        let file = 64u64 << 20;
        let files: Vec<FileLayout> = (0..8u64)
            .map(|t| {
                let mut f = FileLayout::default();
                f.push(t * file, file);
                f
            })
            .collect();
        let cap = copy_batch(&layer);
        let run = read_files(&m, &mut layer, &files, 32 << 20, cap);
        assert_eq!(run.bytes, 8 * file, "every byte read once");
        (run, layer)
    }

    /// One buffered reader per file, reader `t` on node `t`, page cache
    /// and buffers interleaved, copying at most `copy_cap` bytes at a time.
    fn read_files(
        m: &Machine,
        layer: &mut BlockLayer,
        files: &[FileLayout],
        readahead: u64,
        copy_cap: u64,
    ) -> IoRun {
        let n = files.len();
        let nodes = m.node_count();
        let all: std::sync::Arc<[u32]> = (0..nodes as u32).collect();
        let r = BufferedRead {
            b: m.block.as_ref().unwrap(),
            page: m.page_size,
            nodes,
            node: (0..n).map(|t| t % nodes).collect(),
            zonelist: vec![all; n],
            cpus: m.cpu_count() as usize,
            policy: AllocPolicy::Interleave,
            readahead,
            zone_reclaim: false,
            purge_ns: 0.0,
        };
        buffered_read_copying(&r, layer, files, copy_cap)
    }

    /// `n` readers of 16 MiB files laid down as Ext2's parallel writers lay
    /// them (runs of 9 blocks of 4 KiB, the files taking turns in `turns`
    /// slots, so with `turns > n` some slots stay unread), with 4 MiB of
    /// readahead, copying at most `copy_cap` bytes at a time.
    fn read_interleaved(n: u64, turns: u64, copy_cap: u64, seed: u64) -> (IoRun, BlockLayer) {
        let m = eight_disks(128);
        let mut layer = BlockLayer::new(&m, 512 << 10, seed);
        let (run, file) = (9 * 4096u64, 16u64 << 20);
        let files: Vec<FileLayout> = (0..n)
            .map(|t| {
                let mut f = FileLayout::default();
                for k in 0..file.div_ceil(run) {
                    f.push((k * turns + t) * run, run.min(file - k * run));
                }
                f
            })
            .collect();
        let out = read_files(&m, &mut layer, &files, 4 << 20, copy_cap);
        assert_eq!(out.bytes, n * file, "every byte copied once");
        (out, layer)
    }

    /// Copying the chunks that are in together (up to a request's worth)
    /// instead of one event each copies the same bytes at the same CPU
    /// cost and reads the same bytes off the disks in the same windows.
    /// With one reader (nothing to merge with, the disks serve its windows
    /// in the order it submits them) the rate moves by well under 1%: only
    /// when each copy's traffic meets the DMA's changes. With eight readers
    /// whose pieces merge, the merges and so the seeks depend on when each
    /// window is submitted, and a small run like this one moves by several
    /// percent either way under any change of timing (docs/engine.md,
    /// Session 16); there only the totals are held.
    #[test]
    fn copying_the_chunks_in_together_costs_what_chunk_by_chunk_does() {
        let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * a.abs().max(b.abs());
        let disk_bytes = |l: &BlockLayer| l.disks.iter().map(|d| d.stats.bytes).sum::<u64>();
        let mem = |l: &BlockLayer| {
            (0..l.node_mem.len())
                .map(|n| l.node_mem.bytes(n))
                .sum::<u64>()
        };
        for (n, turns) in [(1, 2), (8, 8)] {
            let (one, l1) = read_interleaved(n, turns, 0, 1);
            let (many, lm) = read_interleaved(n, turns, copy_batch(&l1), 1);
            assert_eq!(copy_batch(&lm), 512 << 10);
            assert!(close(one.cpu.copy_ns, many.cpu.copy_ns, 1e-9), "{n}");
            assert!(close(one.cpu.submit_ns, many.cpu.submit_ns, 1e-9), "{n}");
            assert_eq!(disk_bytes(&l1), n * (16 << 20));
            assert_eq!(disk_bytes(&lm), disk_bytes(&l1));
            // The copies' and the DMA's bytes on the memory controllers:
            // twice and once each byte, plus a share's rounding a booking
            // (fewer copies, less rounding).
            let (m1, mm) = (mem(&l1) as f64, mem(&lm) as f64);
            assert!(mm <= m1 && close(m1, mm, 1e-3), "{n}: {m1} {mm}");
            if n == 1 {
                let (g1, gm) = (one.gibps(), many.gibps());
                assert!(
                    close(g1, gm, 0.01),
                    "{g1} GiB/s chunk by chunk, {gm} batched"
                );
            }
        }
    }

    /// `nr_requests` binds: a queue never holds more requests than it
    /// allows, the readers sleep for them, and the disks move no faster
    /// for it; where the natural backlog is below it, nobody sleeps.
    #[test]
    fn buffered_readers_sleep_for_a_request_when_the_queue_is_full() {
        let (free, lf) = read_with_depth(128, 1);
        let natural = lf.requests.max_allocated;
        assert!(natural > 8 && natural < 128, "backlog {natural}");
        assert_eq!((lf.requests.waits, lf.requests.wait_ns), (0, 0));
        for depth in [1, 4, 8] {
            let (tight, lt) = read_with_depth(depth, 1);
            assert!(lt.requests.max_allocated <= depth, "depth {depth}");
            assert_eq!(lt.requests.max_allocated, depth);
            assert!(
                lt.requests.waits > 0 && lt.requests.wait_ns > 0,
                "depth {depth}"
            );
            assert!(
                tight.gibps() <= free.gibps() * 1.01,
                "depth {depth}: {} GiB/s against {} unlimited",
                tight.gibps(),
                free.gibps()
            );
        }
        // Same seed, same run.
        let (again, la) = read_with_depth(4, 1);
        let (tight, lt) = read_with_depth(4, 1);
        assert_eq!(again.elapsed, tight.elapsed);
        assert_eq!(
            (again.disk_ios, again.disk_bytes),
            (tight.disk_ios, tight.disk_bytes)
        );
        assert_eq!(
            (la.requests.waits, la.requests.wait_ns),
            (lt.requests.waits, lt.requests.wait_ns)
        );
    }

    /// Direct I/O: a thread whose bio finds no request sleeps (its queue
    /// unplugged) and builds the rest of the call later; every byte still
    /// moves once and no queue holds more than `nr_requests`.
    #[test]
    fn direct_io_threads_sleep_for_a_request_when_the_queue_is_full() {
        let run_with = |depth: u32| {
            let m = eight_disks(depth);
            let b = m.block.as_ref().unwrap();
            let unit = 512 << 10;
            let mut layer = BlockLayer::new(&m, unit, 1);
            let cap = layer.volume_bytes();
            let width = layer.stripe.unit * layer.stripe.disks;
            let mut ext = ExtAlloc::new(FsKind::Ext3, cap / 2, 4096);
            let mut xfs = XfsAlloc::new(cap, unit, width);
            let dest = vec![Dest::Node(0), Dest::Node(5), Dest::Node(11)];
            let mut files = vec![FileLayout::default(); dest.len()];
            let mut runs = Vec::new();
            for mode in [DirectMode::Write, DirectMode::Read] {
                let d = Direct {
                    b,
                    page: m.page_size,
                    block: 4096,
                    io_size: 16 << 20,
                    file_bytes: 64 << 20,
                    ext: false,
                    mode,
                    dest: dest.clone(),
                };
                let run = direct_phase(&d, &mut layer, &mut files, &mut ext, &mut xfs).unwrap();
                assert_eq!(run.bytes, 3 * (64 << 20));
                assert_eq!(run.disk_bytes, layer.totals().1);
                runs.push(run);
            }
            let mem: u64 = (0..12).map(|n| layer.node_mem.bytes(n)).sum();
            assert_eq!(mem, 2 * 3 * (64 << 20), "every byte DMAed once");
            (runs, layer)
        };
        let (free, lf) = run_with(128);
        assert!(
            lf.requests.max_allocated > 2,
            "{}",
            lf.requests.max_allocated
        );
        assert_eq!(lf.requests.waits, 0);
        let (tight, lt) = run_with(2);
        assert!(lt.requests.max_allocated <= 2);
        assert!(lt.requests.waits > 0 && lt.requests.wait_ns > 0);
        for (t, f) in tight.iter().zip(&free) {
            assert!(
                t.gibps() <= f.gibps() * 1.01,
                "{} vs {}",
                t.gibps(),
                f.gibps()
            );
        }
    }
}
