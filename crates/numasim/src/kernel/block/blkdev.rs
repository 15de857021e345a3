//! One disk and its request queue.
//!
//! Service time of a request = command overhead + positioning + transfer:
//! - continuing where the head stopped (sequential) costs no seek; a read
//!   that arrives after the disk went idle has missed its sector and waits
//!   for the platter to come round (`rev - gap mod rev`); a write with the
//!   drive's write cache on is taken from the cache and never waits;
//! - anywhere else: a seek that grows with the square root of the distance
//!   (track-to-track for the shortest, the average at a third of the
//!   stroke) plus a rotational wait drawn from the disk's seeded stream;
//! - transfer at the media rate: the read rate for a read, the write rate
//!   for a write (NAND programs slower than it reads; a platter does not).
//!
//! The queue merges a request into a queued one it directly follows or
//! precedes (same direction, up to `max_request`): any such one under a
//! sorting elevator (its hash of request ends), the last merged one only
//! under noop (2.6.15 `q->last_merge`). The disk takes the next request in
//! C-LOOK order (the nearest at or after the head, else the lowest), or
//! in arrival order under noop.

use crate::engine::{Dur, SimRng, Time};
use rand::RngExt;
use std::collections::{BTreeSet, VecDeque};

/// Where a request's data lands in (or comes from) memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// All of it on one node (first touch by a thread on that node).
    Node(u16),
    /// Spread evenly over every node (`numactl -i all`, round-robin cache).
    Interleave,
}

/// One client's share of a (possibly merged) request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub owner: u32,
    pub bytes: u64,
    /// The client's own tag (a file offset, a sequence number).
    pub tag: u64,
    pub dest: Dest,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Req {
    pub off: u64,
    pub len: u64,
    pub write: bool,
    /// In offset order.
    pub parts: Parts,
}

/// Parts a request holds in itself; more go to a list.
pub const INLINE_PARTS: usize = 3;

/// A part held inline, without its destination (kept beside it).
#[derive(Debug, Clone, Copy)]
struct Packed {
    tag: u64,
    owner: u32,
    bytes: u32,
}

const NO_PACKED: Packed = Packed {
    tag: 0,
    owner: 0,
    bytes: 0,
};

/// `Dest::Interleave` held inline (`Dest::Node` of this number is held
/// in the list).
const INLINE_INTERLEAVE: u16 = u16::MAX;

/// A request's parts in offset order: up to `INLINE_PARTS` inside the
/// request, so that the queue slot a dispatch reads brings them along. A
/// separate list per request (as they were) was a cache miss at each
/// request's queueing and another at its completion: an Ext2 read keeps
/// tens of thousands queued over 256 drives, nearly all of one to three
/// parts (readers' runs of a few blocks that abut on the disk; at 32
/// readers 24% of requests held one part, 29% two, 25% three). Past
/// `INLINE_PARTS` they move to a ring (a front merge puts the new parts
/// first without moving the others: moving them was a tenth of an Ext2
/// read). Inline parts are 16 bytes (a byte count and an owner of 32
/// bits; a part that does not fit goes to the ring) and their
/// destinations two each, so the whole is one aligned 64-byte line: the
/// parts' slots of the queue's ring are touched when a request is queued,
/// merged into and dispatched, far apart in time, and as 112 bytes they
/// were two or three lines missed each time (`perf annotate`: most of
/// `Queue::push`'s samples on the store to its second line).
#[derive(Debug, Clone)]
#[repr(align(64))]
pub struct Parts {
    /// Parts inline (while `more` is `None`).
    len: u16,
    dest: [u16; INLINE_PARTS],
    inline: [Packed; INLINE_PARTS],
    /// Every part once there are more than `INLINE_PARTS`, or one that
    /// does not fit inline. Boxed: one word here where the list itself is
    /// four, which would push the parts past one line.
    #[allow(clippy::box_collection)]
    more: Option<Box<VecDeque<Part>>>,
}

impl PartialEq for Parts {
    fn eq(&self, o: &Parts) -> bool {
        self.iter().eq(o.iter())
    }
}

/// `p` as held inline, if it fits.
#[inline]
fn pack(p: &Part) -> Option<(Packed, u16)> {
    let d = match p.dest {
        Dest::Interleave => INLINE_INTERLEAVE,
        Dest::Node(n) if n != INLINE_INTERLEAVE => n,
        Dest::Node(_) => return None,
    };
    let bytes = u32::try_from(p.bytes).ok()?;
    Some((
        Packed {
            tag: p.tag,
            owner: p.owner,
            bytes,
        },
        d,
    ))
}

#[inline]
fn unpack(x: &Packed, d: u16) -> Part {
    Part {
        owner: x.owner,
        bytes: u64::from(x.bytes),
        tag: x.tag,
        dest: if d == INLINE_INTERLEAVE {
            Dest::Interleave
        } else {
            Dest::Node(d)
        },
    }
}

impl Parts {
    /// No parts (a hole's place in the queue's ring).
    const EMPTY: Parts = Parts {
        len: 0,
        dest: [0; INLINE_PARTS],
        inline: [NO_PACKED; INLINE_PARTS],
        more: None,
    };
    #[inline]
    pub fn one(p: Part) -> Parts {
        let mut ps = Parts::EMPTY;
        match pack(&p) {
            Some((x, d)) => {
                ps.inline[0] = x;
                ps.dest[0] = d;
                ps.len = 1;
            }
            None => ps.more = Some(Box::new(VecDeque::from([p]))),
        }
        ps
    }
    pub fn len(&self) -> usize {
        match &self.more {
            Some(m) => m.len(),
            None => self.len as usize,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn spilled(&self) -> bool {
        self.more.is_some()
    }
    /// In offset order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Part> + '_ {
        let more = self.more.as_deref().into_iter().flatten().copied();
        self.inline_iter().chain(more)
    }
    /// The parts held inline (none once spilled).
    #[inline]
    fn inline_iter(&self) -> impl DoubleEndedIterator<Item = Part> + '_ {
        let n = if self.spilled() { 0 } else { self.len as usize };
        self.inline[..n]
            .iter()
            .zip(&self.dest[..n])
            .map(|(x, &d)| unpack(x, d))
    }
    /// Move the inline parts to the ring (a list from `pool` if any).
    fn spill(&mut self, pool: &mut PartPool) -> &mut VecDeque<Part> {
        if self.more.is_none() {
            let mut v = pool.boxed();
            v.extend(self.inline_iter());
            self.len = 0;
            self.more = Some(v);
        }
        self.more.as_deref_mut().expect("spilled")
    }
    /// `o`'s list, if it had one, back to `pool`.
    fn give_back(o: Parts, pool: &mut PartPool) {
        if let Some(mut m) = o.more {
            m.clear();
            pool.boxes.push(m);
        }
    }
    /// `p` after these (a back merge of one part: `append` of it).
    #[inline]
    pub fn push_back(&mut self, p: Part, pool: &mut PartPool) {
        let n = self.len as usize;
        if !self.spilled() && n < INLINE_PARTS {
            if let Some((x, d)) = pack(&p) {
                self.inline[n] = x;
                self.dest[n] = d;
                self.len += 1;
                return;
            }
        }
        self.spill(pool).push_back(p);
    }
    /// `p` before these (a front merge of one part: `prepend` of it).
    #[inline]
    pub fn push_front(&mut self, p: Part, pool: &mut PartPool) {
        let n = self.len as usize;
        if !self.spilled() && n < INLINE_PARTS {
            if let Some((x, d)) = pack(&p) {
                self.inline.copy_within(0..n, 1);
                self.dest.copy_within(0..n, 1);
                self.inline[0] = x;
                self.dest[0] = d;
                self.len += 1;
                return;
            }
        }
        self.spill(pool).push_front(p);
    }
    /// `o`'s parts after these (a back merge).
    pub fn append(&mut self, o: Parts, pool: &mut PartPool) {
        let (n, k) = (self.len as usize, o.len as usize);
        if !self.spilled() && !o.spilled() && n + k <= INLINE_PARTS {
            self.inline[n..n + k].copy_from_slice(&o.inline[..k]);
            self.dest[n..n + k].copy_from_slice(&o.dest[..k]);
            self.len += o.len;
        } else {
            self.spill(pool).extend(o.iter());
        }
        Self::give_back(o, pool);
    }
    /// `o`'s parts before these (a front merge).
    pub fn prepend(&mut self, o: Parts, pool: &mut PartPool) {
        let (n, k) = (self.len as usize, o.len as usize);
        if !self.spilled() && !o.spilled() && n + k <= INLINE_PARTS {
            self.inline.copy_within(0..n, k);
            self.dest.copy_within(0..n, k);
            self.inline[..k].copy_from_slice(&o.inline[..k]);
            self.dest[..k].copy_from_slice(&o.dest[..k]);
            self.len += o.len;
        } else {
            let more = self.spill(pool);
            for p in o.iter().rev() {
                more.push_front(p);
            }
        }
        Self::give_back(o, pool);
    }
    /// The parts as a list (the ring itself once spilled, else one from
    /// `pool`).
    pub fn into_vec(self, pool: &mut PartPool) -> Vec<Part> {
        match self.more {
            Some(mut m) => {
                let v = Vec::from(std::mem::take(&mut *m));
                pool.boxes.push(m);
                v
            }
            None => {
                let mut v = pool.lists.pop().unwrap_or_default();
                v.extend(self.inline_iter());
                v
            }
        }
    }
}

/// Emptied part lists, reused so that a request allocates nothing
/// (malloc and realloc were a tenth of a buffered read's time): the
/// lists of finished requests (`Parts::into_vec`, given back by the
/// caller) and the boxes spilled parts lived in.
#[derive(Debug, Default)]
pub struct PartPool {
    lists: Vec<Vec<Part>>,
    /// `Parts::more`'s boxes, kept so a spill allocates nothing.
    #[allow(clippy::vec_box)]
    boxes: Vec<Box<VecDeque<Part>>>,
}

impl PartPool {
    /// `parts`, emptied, for a later request.
    pub fn give(&mut self, mut parts: Vec<Part>) {
        parts.clear();
        self.lists.push(parts);
    }
    /// An empty boxed list, with room where a list was given back.
    #[allow(clippy::box_collection)]
    fn boxed(&mut self) -> Box<VecDeque<Part>> {
        let mut b = self.boxes.pop().unwrap_or_default();
        if b.capacity() == 0 {
            if let Some(v) = self.lists.pop() {
                *b = VecDeque::from(v);
            }
        }
        b
    }
}

/// Physical constants of one drive, from `[block]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskModel {
    /// Media rate of a read.
    pub bytes_per_ns: f64,
    /// Media rate of a write (`[io] disks` `write_mibps`, default `mibps`).
    pub write_bytes_per_ns: f64,
    /// One revolution; 0 for a solid-state drive (no rotational wait).
    pub rev_ns: u64,
    pub seek_avg_ns: f64,
    pub seek_track_ns: f64,
    pub capacity: u64,
    pub command_ns: u64,
    /// Media latency overlapped with other commands (NVMe NAND read).
    pub latency_ns: u64,
    /// The same for a write (`disk_write_latency_us`, default the read's).
    pub write_latency_ns: u64,
    pub write_cache: bool,
    /// Requests in service at once (`disk_commands`), each at the media rate.
    pub commands: u32,
    /// Service time per scatter-gather segment (`segment_ns`).
    pub segment_ns: f64,
    /// The same for a write (`segment_write_ns`, default `segment_ns`).
    pub segment_write_ns: f64,
    /// Bytes of a request's memory one segment covers (`segment_run`);
    /// 0: the whole request is one segment.
    pub segment_run: u64,
    /// The largest request: `max_request`, and no more than
    /// `max_segments` runs of `segment_run` (the bio split).
    pub max_request: u64,
    /// `noop`: serve in arrival order (merging only); else C-LOOK.
    pub noop: bool,
}

impl DiskModel {
    pub fn from_machine(
        b: &crate::machine::blockio::BlockParams,
        mibps: f64,
        write_mibps: f64,
    ) -> DiskModel {
        DiskModel {
            bytes_per_ns: mibps * (1u64 << 20) as f64 / 1e9,
            write_bytes_per_ns: write_mibps * (1u64 << 20) as f64 / 1e9,
            rev_ns: if b.disk_rpm > 0.0 {
                (60e9 / b.disk_rpm).round() as u64
            } else {
                0
            },
            seek_avg_ns: b.disk_seek_ms * 1e6,
            seek_track_ns: b.disk_track_seek_ms * 1e6,
            capacity: b.disk_capacity,
            command_ns: (b.disk_command_us * 1e3).round() as u64,
            latency_ns: (b.disk_latency_us * 1e3).round() as u64,
            write_latency_ns: (b.disk_write_latency_us.unwrap_or(b.disk_latency_us) * 1e3).round()
                as u64,
            write_cache: b.disk_write_cache,
            commands: b.disk_commands.max(1),
            segment_ns: b.segment_ns,
            segment_write_ns: b.segment_write_ns.unwrap_or(b.segment_ns),
            segment_run: b.segment_run.unwrap_or(0),
            max_request: max_request(b),
            noop: b.elevator_noop,
        }
    }
    /// A request's scatter-gather segments: one per `segment_run` of its
    /// bytes (the model knows a request's memory only by its run, so
    /// its length decides the count; merged pieces of one buffer share
    /// its runs), or one.
    #[inline]
    pub fn segments(&self, len: u64) -> u64 {
        if self.segment_run == 0 {
            1
        } else {
            len.div_ceil(self.segment_run).max(1)
        }
    }
    /// Seek over `dist` bytes of the disk.
    pub fn seek_ns(&self, dist: u64) -> f64 {
        let third = (self.capacity / 3).max(1) as f64;
        let x = (dist as f64 / third).sqrt();
        self.seek_track_ns + (self.seek_avg_ns - self.seek_track_ns) * x
    }
    /// Media time of `bytes` in the given direction.
    pub fn transfer_ns(&self, bytes: u64, write: bool) -> u64 {
        let rate = if write {
            self.write_bytes_per_ns
        } else {
            self.bytes_per_ns
        };
        crate::engine::ceil_u64(bytes as f64 / rate)
    }
}

/// The device's largest request: `max_request`, cut to `max_segments`
/// whole runs of `segment_run` where both are set (`bio_split_io_at`
/// closes a request at whichever limit comes first; docs/io.md
/// "Segments"), never below one run.
fn max_request(b: &crate::machine::blockio::BlockParams) -> u64 {
    match (b.segment_run, b.max_segments) {
        (Some(run), Some(n)) => b
            .max_request
            .min(run.max(1).saturating_mul(n as u64))
            .max(run.min(b.max_request))
            .max(1),
        _ => b.max_request,
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskStats {
    pub ios: u64,
    pub bytes: u64,
    pub busy: Dur,
    /// Requests that paid a seek.
    pub seeks: u64,
    /// Requests merged into a queued one (not counted in `ios`).
    pub merges: u64,
}

#[derive(Debug)]
pub struct DiskState {
    head: u64,
    last_write: bool,
    idle_since: Time,
    /// Requests in service (at most `DiskModel::commands`).
    pub serving: u32,
    queue: Queue,
    rng: SimRng,
    pub stats: DiskStats,
    /// Emptied part lists `enqueue` spills merged parts into.
    spare: PartPool,
    /// Merge into the last merged request only (noop), not into any
    /// queued request the new one abuts.
    pub last_merge_only: bool,
}

/// The request queue, in arrival order (a request keeps its place when
/// another merges into it), indexed so that finding a request to merge
/// with and the next one in C-LOOK order cost a lookup each, not a pass
/// over the queue: thousands of requests queue on a drive when many
/// threads issue 256 MiB calls, and a pass per request made such a run
/// quadratic (minutes).
#[derive(Debug, Default)]
struct Queue {
    /// By arrival number.
    reqs: Slab,
    /// Arrival numbers of the requests shorter than `merge_below` by
    /// their edges, (direction, end offset) and (direction, offset): only
    /// those can take a merge (a request of `max_request` bytes can
    /// neither grow nor be added to). Keys are `edge(write, offset, side)`;
    /// one table holds both sides, and a boundary's two sides share a home
    /// slot (`Index::fingerprint`), so that a piece's two lookups (a
    /// request ending where it starts, one starting where it ends) read
    /// the two lines its merge or its own entries then write: with a table
    /// for each side a merge moved an entry into a third line and a new
    /// request put its two into two more (session 20).
    by_edge: Index,
    merge_below: u64,
    /// (offset, arrival number): C-LOOK order, the earliest first on ties.
    /// Built at the first C-LOOK dispatch and kept from then on: noop
    /// never reads it, and its upkeep was a tenth of a noop read's time.
    by_off: BTreeSet<(u64, u64)>,
    sorted: bool,
    /// The request the last merge went into, or the first queued since
    /// none was (`q->last_merge`); cleared when it is dispatched.
    last_merge: Option<u64>,
}

/// Queued requests by arrival number: a ring from the oldest still queued
/// to the newest, a hole where one left out of order (C-LOOK). Arrival
/// numbers come in order and noop serves the oldest, so each lookup is an
/// index, not a tree walk (the tree was a fifth of a buffered read's time).
/// A request's span and direction (`Head`, 16 bytes) and its parts (a
/// cache line or two) are in two rings by the same index: a merge lookup,
/// the index's upkeep and the dispatch's choice read the span only, and
/// with thousands of requests queued over hundreds of drives each such
/// read misses the host's caches (`perf annotate` put half of
/// `merge_target`'s and of `dispatch`'s samples on the load of `len`, 120
/// bytes into a 136-byte request, a second line beside the one holding
/// its discriminant).
#[derive(Debug, Default)]
struct Slab {
    heads: VecDeque<Head>,
    parts: VecDeque<Parts>,
    /// Arrival number of `heads[0]`.
    base: u64,
    len: usize,
}

/// A queued request's span: `key(write, off)` and its length (`HOLE`: the
/// request left the queue out of order).
#[derive(Debug, Clone, Copy)]
struct Head {
    key: u64,
    len: u64,
}

const HOLE: u64 = u64::MAX;

impl Head {
    #[inline]
    fn off(&self) -> u64 {
        self.key >> 1
    }
    #[inline]
    fn write(&self) -> bool {
        self.key & 1 != 0
    }
    #[inline]
    fn end(&self) -> u64 {
        self.off() + self.len
    }
}

impl Slab {
    #[inline]
    fn head(&self, seq: u64) -> Head {
        let h = self.heads[(seq - self.base) as usize];
        assert!(h.len != HOLE, "queued");
        h
    }
    /// Queue `req`; returns its arrival number.
    fn push(&mut self, req: Req) -> u64 {
        let seq = self.base + self.heads.len() as u64;
        assert!(
            (self.heads.len() as u64) < SEQ_BITS,
            "the merge index tells arrival numbers apart by their low 31 bits"
        );
        self.heads.push_back(Head {
            key: key(req.write, req.off),
            len: req.len,
        });
        self.parts.push_back(req.parts);
        self.len += 1;
        seq
    }
    fn remove(&mut self, seq: u64) -> Req {
        let i = (seq - self.base) as usize;
        let h = self.head(seq);
        let parts = if i == 0 {
            self.heads.pop_front();
            self.base += 1;
            self.parts.pop_front().expect("queued")
        } else {
            self.heads[i].len = HOLE;
            std::mem::replace(&mut self.parts[i], Parts::EMPTY)
        };
        self.len -= 1;
        while self.heads.front().is_some_and(|h| h.len == HOLE) {
            self.heads.pop_front();
            self.parts.pop_front();
            self.base += 1;
        }
        Req {
            off: h.off(),
            len: h.len,
            write: h.write(),
            parts,
        }
    }
    /// The oldest queued request's arrival number.
    fn first(&self) -> Option<u64> {
        // The ring never starts with a hole.
        (!self.heads.is_empty()).then_some(self.base)
    }
    /// (arrival number, span), oldest first.
    fn iter(&self) -> impl Iterator<Item = (u64, Head)> + '_ {
        let base = self.base;
        self.heads
            .iter()
            .enumerate()
            .filter(|(_, h)| h.len != HOLE)
            .map(move |(i, &h)| (base + i as u64, h))
    }
}

/// One hash key for a direction and an offset (disk offsets are below
/// 2^63): one hashing round instead of two for a tuple.
fn key(write: bool, off: u64) -> u64 {
    off << 1 | u64::from(write)
}

/// A request's end edge in the merge index (`Queue::by_edge`).
const END: bool = false;
/// A request's start edge.
const START: bool = true;

/// The merge index's key for a request edge at `off`: `key(write, off)`
/// above the side (disk offsets are below 2^62).
#[inline]
fn edge(write: bool, off: u64, side: bool) -> u64 {
    debug_assert!(off < 1 << 62, "disk offsets are below 2^62");
    key(write, off) << 1 | u64::from(side)
}

/// Arrival numbers by key, several under one key where requests share
/// an offset (rare): an open-addressed table, linear probing, at most
/// half full, deletion by shifting the run back. A slot is one word: the
/// top 31 bits of the hash of the key's upper bits (which also give its
/// home slot) and the key's low bit (an edge's side) above a mark and
/// the low 31 bits of the arrival number (the queue's ring
/// never spans 2^31 arrivals, so the ring's base recovers the rest); the
/// caller checks a candidate's key on its span, which it reads anyway
/// for the room a merge needs. With thousands of requests queued on
/// each of hundreds of drives the tables do not fit the host's caches
/// and a lookup costs the lines it misses: hashbrown's read a control
/// group and then a 16-byte bucket (`perf annotate`: two thirds of
/// `Index::remove`'s samples on the bucket's load after the control
/// group's), in tables of 4 KiB a drive for the two indexes at 7/8 full;
/// these are 2 KiB at most half full, and a probe reads one line (since
/// session 20 one table of 4 KiB holds both sides, `Queue::by_edge`).
/// Session 17 measured an open-addressed table of 16-byte slots by
/// instructions (more than hashbrown's); session 19 measured this one by
/// simulated cache misses and time.
#[derive(Debug, Default)]
struct Index {
    /// A power of two long (or empty); `FREE` slots are free.
    slots: Vec<u64>,
    len: usize,
    /// `64 - log2(slots.len())`: a slot's home is its word's (or its
    /// key's hash's) top bits.
    shift: u32,
}

const FREE: u64 = 0;
/// Set in every used slot's word.
const USED: u64 = 1 << 31;
const SEQ_BITS: u64 = USED - 1;
/// The smallest table.
const INDEX_MIN_SLOTS: usize = 16;

impl Index {
    /// A key's hash, its top half kept (offsets are the simulator's own,
    /// not an adversary's: the golden ratio's multiple).
    /// The key's low bit (an edge's side) is bit 32 of the fingerprint,
    /// below the hash of the rest, so that both sides of one boundary
    /// have one home and probe one run (the table is at most 2^31 slots,
    /// so a home never reaches bit 32).
    #[inline]
    fn fingerprint(k: u64) -> u64 {
        ((k >> 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) & !0x1_ffff_ffff) | (k & 1) << 32
    }
    /// The slot word of `seq` under `k`.
    #[inline]
    fn word(k: u64, seq: u64) -> u64 {
        Self::fingerprint(k) | USED | (seq & SEQ_BITS)
    }
    /// The arrival number of a slot's word, given the oldest queued
    /// (`base`: every number in the table is at most `SEQ_BITS` past it).
    #[inline]
    fn seq(w: u64, base: u64) -> u64 {
        base + ((w.wrapping_sub(base)) & SEQ_BITS)
    }
    /// The earliest arrival number under `k` (a number at or after
    /// `base`) for which `is` holds; `is` checks the key as well, since
    /// keys of one fingerprint share the slots' words. Several under one
    /// key are in no order in the table.
    #[inline]
    fn earliest(&self, k: u64, base: u64, is: impl Fn(u64) -> bool) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let fp = Self::fingerprint(k);
        let mut i = (fp >> self.shift) as usize;
        let mut best: Option<u64> = None;
        loop {
            let w = self.slots[i];
            if w == FREE {
                return best;
            }
            if w & !0xffff_ffff == fp {
                let seq = Self::seq(w, base);
                if best.is_none_or(|b| seq < b) && is(seq) {
                    best = Some(seq);
                }
            }
            i = (i + 1) & mask;
        }
    }
    /// Add `seq` under `k`.
    fn insert(&mut self, k: u64, seq: u64) {
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        self.put(Self::word(k, seq));
        self.len += 1;
    }
    fn put(&mut self, w: u64) {
        let mask = self.slots.len() - 1;
        let mut i = (w >> self.shift) as usize;
        while self.slots[i] != FREE {
            i = (i + 1) & mask;
        }
        self.slots[i] = w;
    }
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(INDEX_MIN_SLOTS);
        assert!(n <= 1 << 31, "a home is above an edge's side");
        let old = std::mem::replace(&mut self.slots, vec![FREE; n]);
        self.shift = 64 - n.trailing_zeros();
        for w in old {
            if w != FREE {
                self.put(w);
            }
        }
    }
    /// Drop `seq` from under `k`, if there.
    fn remove(&mut self, k: u64, seq: u64) {
        if self.len == 0 {
            return;
        }
        let mask = self.slots.len() - 1;
        let w = Self::word(k, seq);
        let mut i = (w >> self.shift) as usize;
        loop {
            let s = self.slots[i];
            if s == FREE {
                return;
            }
            if s == w {
                break;
            }
            i = (i + 1) & mask;
        }
        // Shift back each later entry of the run that may sit in the hole
        // (its home is not cyclically after the hole).
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s == FREE {
                break;
            }
            let h = (s >> self.shift) as usize;
            if (j.wrapping_sub(h) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = FREE;
        self.len -= 1;
    }
    fn clear(&mut self) {
        self.slots.fill(FREE);
        self.len = 0;
    }
    /// The arrival numbers (at most `SEQ_BITS` past `base`) under
    /// fingerprints of `k`, ascending (the tests' view).
    #[cfg(test)]
    fn get(&self, k: u64, base: u64) -> Vec<u64> {
        let fp = Self::fingerprint(k);
        let mut v: Vec<u64> = self
            .slots
            .iter()
            .filter(|&&w| w != FREE && w & !0xffff_ffff == fp)
            .map(|&w| Self::seq(w, base))
            .collect();
        v.sort_unstable();
        v
    }
}

impl Queue {
    fn index(&mut self, seq: u64) {
        let r = self.reqs.head(seq);
        let (w, off, end, len) = (r.write(), r.off(), r.end(), r.len);
        if self.sorted {
            self.by_off.insert((off, seq));
        }
        if len < self.merge_below {
            self.by_edge.insert(edge(w, end, END), seq);
            self.by_edge.insert(edge(w, off, START), seq);
        }
    }

    fn unindex(&mut self, seq: u64) {
        let r = self.reqs.head(seq);
        let (w, off, end, len) = (r.write(), r.off(), r.end(), r.len);
        if self.sorted {
            self.by_off.remove(&(off, seq));
        }
        if len < self.merge_below {
            self.by_edge.remove(edge(w, end, END), seq);
            self.by_edge.remove(edge(w, off, START), seq);
        }
    }

    /// Request `seq` (direction `w`) spanned `[off0, off0 + len0)` and
    /// now spans `[off, off + len)` (it took a merge; the caller set its
    /// new span): move only the index entries whose key changed, as
    /// `unindex` then `index` would leave them (a back merge keeps its
    /// start, a front merge its end).
    fn reindex(&mut self, seq: u64, w: bool, (off0, len0): (u64, u64), off: u64, len: u64) {
        let mb = self.merge_below;
        let (end0, end) = (off0 + len0, off + len);
        let (was, is) = (len0 < mb, len < mb);
        if was && (!is || end0 != end) {
            self.by_edge.remove(edge(w, end0, END), seq);
        }
        if was && (!is || off0 != off) {
            self.by_edge.remove(edge(w, off0, START), seq);
        }
        if is && (!was || end0 != end) {
            self.by_edge.insert(edge(w, end, END), seq);
        }
        if is && (!was || off0 != off) {
            self.by_edge.insert(edge(w, off, START), seq);
        }
        if self.sorted && off0 != off {
            self.by_off.remove(&(off0, seq));
            self.by_off.insert((off, seq));
        }
    }

    /// Merges are looked up among requests shorter than `max_request`;
    /// a larger bound than before (never, in the model: it is the drive's)
    /// indexes the queue again.
    fn merging_below(&mut self, max_request: u64) {
        if max_request > self.merge_below {
            self.by_edge.clear();
            self.by_off.clear();
            self.merge_below = max_request;
            let seqs: Vec<u64> = self.reqs.iter().map(|(s, _)| s).collect();
            for s in seqs {
                self.index(s);
            }
        }
    }

    /// The queued request that `len` bytes at `off` would merge into
    /// (`elv_merge()`: one ending where it starts, or starting where it
    /// ends, with room under `max_request`), the earliest of the two.
    /// Through the merge index where it covers `max_request`; an empty
    /// request (full-sized ones are not in the index), or a bound the index
    /// was not built for, looks at each.
    fn merge_target(&self, off: u64, len: u64, write: bool, max_request: u64) -> Option<u64> {
        if len == 0 || max_request > self.merge_below {
            return self
                .reqs
                .iter()
                .find(|(_, x)| {
                    x.write() == write
                        && x.len + len <= max_request
                        && (x.end() == off || off + len == x.off())
                })
                .map(|(s, _)| s);
        }
        // A candidate's span is read for its room; it also confirms the key
        // the index keeps only a fingerprint of.
        let base = self.reqs.base;
        let back = self.by_edge.earliest(edge(write, off, END), base, |s| {
            let h = self.reqs.head(s);
            h.write() == write && h.end() == off && h.len + len <= max_request
        });
        let front = self
            .by_edge
            .earliest(edge(write, off + len, START), base, |s| {
                let h = self.reqs.head(s);
                h.key == key(write, off + len) && h.len + len <= max_request
            });
        back.into_iter().chain(front).min()
    }

    /// The C-LOOK index, built from the queue the first time it is asked.
    fn by_off(&mut self) -> &BTreeSet<(u64, u64)> {
        if !self.sorted {
            self.sorted = true;
            self.by_off = self.reqs.iter().map(|(s, r)| (r.off(), s)).collect();
        }
        &self.by_off
    }

    fn push(&mut self, req: Req) {
        let seq = self.reqs.push(req);
        self.index(seq);
        if self.last_merge.is_none() {
            self.last_merge = Some(seq);
        }
    }

    fn take(&mut self, seq: u64) -> Req {
        if self.last_merge == Some(seq) {
            self.last_merge = None;
        }
        self.unindex(seq);
        self.reqs.remove(seq)
    }

    /// 2.6.15's noop: a bio merges into `q->last_merge` only (the generic
    /// `elv_merge()` tries it, and noop has no merge function of its own;
    /// block/elevator.c, block/noop-iosched.c), at its back or its front.
    fn last_merge_target(&self, off: u64, len: u64, write: bool, max_request: u64) -> Option<u64> {
        let s = self.last_merge?;
        let h = self.reqs.head(s);
        (h.write() == write
            && h.len + len <= max_request
            && (h.end() == off || off + len == h.off()))
        .then_some(s)
    }
}

impl DiskState {
    pub fn new(rng: SimRng) -> DiskState {
        DiskState {
            last_merge_only: false,
            head: 0,
            last_write: false,
            idle_since: Time::ZERO,
            serving: 0,
            queue: Queue::default(),
            rng,
            stats: DiskStats::default(),
            spare: PartPool::default(),
        }
    }
    pub fn queued(&self) -> usize {
        self.queue.reqs.len
    }
    /// Queue `req`, merging it into the earliest queued request it abuts
    /// (same direction, the two together within `max_request`): appended
    /// to one that ends where it starts, prepended to one that starts where
    /// it ends.
    pub fn enqueue(&mut self, req: Req, max_request: u64) {
        let mut pool = std::mem::take(&mut self.spare);
        self.enqueue_in(req, max_request, &mut pool);
        self.spare = pool;
    }
    /// `enqueue`, with part lists taken from and given back to `pool`;
    /// true if `req` took a new place in the queue (it did not merge).
    pub fn enqueue_in(&mut self, req: Req, max_request: u64, pool: &mut PartPool) -> bool {
        let Some(seq) = self.merge_slot(req.off, req.len, req.write, max_request) else {
            self.queue.push(req);
            return true;
        };
        let (off, len) = (req.off, req.len);
        self.merge_into(seq, off, len, |q, back| {
            if back {
                q.append(req.parts, pool);
            } else {
                q.prepend(req.parts, pool);
            }
        });
        false
    }
    /// `enqueue_in` of a request of the one part `part` (`part.bytes` at
    /// `off`), which is built only if it takes a new place: most of a
    /// buffered read's pieces merge, and a request is 136 bytes to fill
    /// and move for the one part it would hand over.
    pub fn enqueue_part(
        &mut self,
        off: u64,
        write: bool,
        part: Part,
        max_request: u64,
        pool: &mut PartPool,
    ) -> bool {
        let len = part.bytes;
        let Some(seq) = self.merge_slot(off, len, write, max_request) else {
            self.queue.push(Req {
                off,
                len,
                write,
                parts: Parts::one(part),
            });
            return true;
        };
        self.merge_into(seq, off, len, |q, back| {
            if back {
                q.push_back(part, pool);
            } else {
                q.push_front(part, pool);
            }
        });
        false
    }
    /// The queued request `len` bytes at `off` merge into (`merge_target`).
    fn merge_slot(&mut self, off: u64, len: u64, write: bool, max: u64) -> Option<u64> {
        if self.last_merge_only {
            return self.queue.last_merge_target(off, len, write, max);
        }
        self.queue.merging_below(max);
        // Nothing in the model queues an empty request; should one come,
        // `merge_target` looks at each queued request for it.
        self.queue.merge_target(off, len, write, max)
    }
    /// Request `seq` takes `len` bytes at `off`, at its back (it ends at
    /// `off`) or its front: `add` puts the parts there, the new span is
    /// indexed and the merge counted. The request is looked up once (a
    /// lookup each to find the side, add the parts, read and set the span
    /// was a tenth of a merge).
    #[inline]
    fn merge_into(&mut self, seq: u64, off: u64, len: u64, add: impl FnOnce(&mut Parts, bool)) {
        let slab = &mut self.queue.reqs;
        let i = (seq - slab.base) as usize;
        let h = slab.heads[i];
        debug_assert!(h.len != HOLE, "queued");
        let (w, off0, len0) = (h.write(), h.off(), h.len);
        let back = h.end() == off;
        add(&mut slab.parts[i], back);
        let start = if back { off0 } else { off };
        slab.heads[i] = Head {
            key: key(w, start),
            len: len0 + len,
        };
        self.queue.reindex(seq, w, (off0, len0), start, len0 + len);
        self.queue.last_merge = Some(seq);
        self.stats.merges += 1;
    }
    /// Whether `enqueue` would merge a request of `len` at `off` into a
    /// queued one (then it needs no new request: `__make_request()` tries
    /// `elv_merge()` before `get_request()`). Read only; asked only when
    /// the queue has no request free.
    pub fn would_merge(&self, off: u64, len: u64, write: bool, max_request: u64) -> bool {
        if self.last_merge_only {
            return self
                .queue
                .last_merge_target(off, len, write, max_request)
                .is_some();
        }
        self.queue
            .merge_target(off, len, write, max_request)
            .is_some()
    }
    /// Take the next request (C-LOOK) and start it at `now`: returns it and
    /// when the disk finishes it; None when the queue is empty.
    pub fn dispatch(&mut self, now: Time, m: &DiskModel) -> Option<(Req, Time)> {
        let head = self.head;
        let pick = if m.noop {
            self.queue.reqs.first()?
        } else {
            let by_off = self.queue.by_off();
            by_off
                .range((head, 0)..)
                .next()
                .or_else(|| by_off.iter().next())?
                .1
        };
        let req = self.queue.take(pick);
        let mut t = m.command_ns as f64;
        // A short skip forward (less than a track: one revolution of media)
        // is no seek: the head stays on the track and the platter carries
        // the gap under it, as it carries a sequential read's lost sector.
        let skip = req
            .off
            .checked_sub(self.head)
            .filter(|&d| d > 0 && m.rev_ns > 0 && (d as f64) < m.rev_ns as f64 * m.bytes_per_ns);
        if let Some(d) = skip {
            let cache_hides = m.write_cache && (req.write || self.last_write);
            if !cache_hides {
                let idle = if self.serving > 0 {
                    0
                } else {
                    now.as_ns().saturating_sub(self.idle_since.as_ns())
                };
                let rot = (d as f64 / m.bytes_per_ns).round() as u64;
                let rev = m.rev_ns;
                t += ((rot % rev + rev - idle % rev) % rev) as f64;
            }
        } else if req.off == self.head {
            let gap = now.as_ns().saturating_sub(self.idle_since.as_ns());
            // The write cache hides the platter for a write, and for
            // whatever follows one (the drive destages while it waits).
            let cache_hides = m.write_cache && (req.write || self.last_write);
            if self.serving == 0 && gap > 0 && !cache_hides && m.rev_ns > 0 {
                t += (m.rev_ns - gap % m.rev_ns) as f64;
            }
        } else {
            self.stats.seeks += 1;
            t += m.seek_ns(req.off.abs_diff(self.head));
            if m.rev_ns > 0 {
                t += self.rng.random_range(0..m.rev_ns) as f64;
            }
        }
        t += m.transfer_ns(req.len, req.write) as f64;
        let per_segment = if req.write {
            m.segment_write_ns
        } else {
            m.segment_ns
        };
        if per_segment > 0.0 {
            t += per_segment * m.segments(req.len) as f64;
        }
        let d = Dur(crate::engine::round_u64(t));
        self.serving += 1;
        self.head = req.off + req.len;
        self.last_write = req.write;
        self.stats.ios += 1;
        self.stats.bytes += req.len;
        self.stats.busy += d;
        Some((req, now + d))
    }
    /// The request in service is done at `now`.
    pub fn finish(&mut self, now: Time) {
        self.serving -= 1;
        if self.serving == 0 {
            self.idle_since = now;
        }
    }
    /// Whether the disk may start another request (`DiskModel::commands`).
    #[inline]
    pub fn has_free_command(&self, m: &DiskModel) -> bool {
        self.serving < m.commands
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stream;

    fn model() -> DiskModel {
        DiskModel {
            bytes_per_ns: 46.0 * 1048576.0 / 1e9,
            write_bytes_per_ns: 46.0 * 1048576.0 / 1e9,
            rev_ns: 6_000_000,
            seek_avg_ns: 4.7e6,
            seek_track_ns: 0.3e6,
            capacity: 36_000_000_000,
            command_ns: 50_000,
            latency_ns: 0,
            write_latency_ns: 0,
            write_cache: false,
            commands: 1,
            segment_ns: 0.0,
            segment_write_ns: 0.0,
            segment_run: 0,
            max_request: 512 << 10,
            noop: false,
        }
    }
    fn req(off: u64, len: u64) -> Req {
        Req {
            off,
            len,
            write: false,
            parts: Parts::one(Part {
                owner: 0,
                bytes: len,
                tag: off,
                dest: Dest::Node(0),
            }),
        }
    }

    /// Parts kept in the request and spilled to a list read back in the
    /// order a plain list gets them, through random back and front merges
    /// of lists of either kind; lists handed back are empty and reused.
    #[test]
    fn parts_keep_their_order_inline_and_spilled() {
        let mut rng = stream(4, "parts-test", 0);
        let mut pool = PartPool::default();
        let mut tag = 0u64;
        let one = |tag: &mut u64| {
            *tag += 1;
            Part {
                owner: (*tag % 5) as u32,
                // Now and then a part too large to hold inline (and a
                // node number of 2^16 - 1, as `tag` passes it): to the list.
                bytes: if tag.is_multiple_of(11) {
                    (1 << 32) + *tag
                } else {
                    *tag * 7
                },
                tag: *tag,
                dest: Dest::Node(*tag as u16),
            }
        };
        for _ in 0..2_000 {
            let (mut got, mut want) = {
                let p = one(&mut tag);
                (Parts::one(p), vec![p])
            };
            for _ in 0..rng.random_range(0..8u32) {
                let (mut o, mut ow) = {
                    let p = one(&mut tag);
                    (Parts::one(p), vec![p])
                };
                for _ in 0..rng.random_range(0..5u32) {
                    let p = one(&mut tag);
                    o.append(Parts::one(p), &mut pool);
                    ow.push(p);
                }
                if rng.random_range(0..2u32) == 0 {
                    got.append(o, &mut pool);
                    want.extend(ow);
                } else {
                    got.prepend(o, &mut pool);
                    ow.extend(want);
                    want = ow;
                }
                assert_eq!(got.len(), want.len());
                assert!(got.iter().eq(want.iter().copied()));
                assert!(pool.lists.iter().all(|v| v.is_empty()));
                assert!(pool.boxes.iter().all(|v| v.is_empty()));
            }
            let v = got.into_vec(&mut pool);
            assert_eq!(v, want);
            pool.give(v);
        }
        assert!(
            pool.lists.iter().any(|v| v.capacity() > 0),
            "lists were reused"
        );
        assert!(!pool.boxes.is_empty(), "boxes were reused");
    }

    /// 2.6.15's noop merges a bio into `q->last_merge` only: the request
    /// the last merge went into, or the first queued since there was none.
    /// A piece that abuts another queued request goes in as its own, where
    /// the sorting elevators' hash finds that request and merges.
    #[test]
    fn noop_merges_into_the_last_merged_request_only() {
        let k = 4 << 10;
        let run = |last_only: bool| {
            let mut d = DiskState::new(stream(1, "d", 0));
            d.last_merge_only = last_only;
            d.enqueue(req(0, k), 512 << 10); // A: the last merge target
            d.enqueue(req(100 * k, k), 512 << 10); // B
            d.enqueue(req(k, k), 512 << 10); // after A: merges either way
            d.enqueue(req(101 * k, k), 512 << 10); // after B
            (d.queued(), d.stats.merges)
        };
        assert_eq!(run(true), (3, 1));
        assert_eq!(run(false), (2, 2));
        // Once A is dispatched nothing is the last merge; the next request
        // queued becomes it, and the next piece after it merges.
        let mut d = DiskState::new(stream(1, "d", 0));
        d.last_merge_only = true;
        d.enqueue(req(0, k), 512 << 10);
        d.enqueue(req(100 * k, k), 512 << 10);
        let m = DiskModel {
            noop: true,
            ..model()
        };
        let (first, _) = d.dispatch(Time::ZERO, &m).expect("queued");
        assert_eq!(first.off, 0);
        d.enqueue(req(200 * k, k), 512 << 10);
        d.enqueue(req(201 * k, k), 512 << 10);
        assert_eq!((d.queued(), d.stats.merges), (2, 1));
    }

    #[test]
    fn adjacent_requests_merge_up_to_the_limit() {
        let mut d = DiskState::new(stream(1, "d", 0));
        d.enqueue(req(0, 256 << 10), 512 << 10);
        d.enqueue(req(256 << 10, 256 << 10), 512 << 10);
        d.enqueue(req(512 << 10, 256 << 10), 512 << 10);
        assert_eq!(d.queued(), 2);
        assert_eq!(d.stats.merges, 1);
    }

    /// The queue as it was, one pass per request: the indexed queue must
    /// merge and dispatch exactly as it does.
    /// A part list built one part at a time from the front, never merged.
    fn plain(parts: &[Part]) -> Parts {
        let mut p = Parts::one(parts[0]);
        for &x in &parts[1..] {
            p.append(Parts::one(x), &mut PartPool::default());
        }
        p
    }

    #[derive(Default)]
    struct Reference {
        queue: Vec<Req>,
        merges: u64,
    }

    impl Reference {
        fn enqueue(&mut self, req: Req, max_request: u64) {
            for q in self.queue.iter_mut() {
                if q.write != req.write || q.len + req.len > max_request {
                    continue;
                }
                if q.off + q.len == req.off {
                    q.len += req.len;
                    let mut parts: Vec<Part> = q.parts.iter().collect();
                    parts.extend(req.parts.iter());
                    q.parts = plain(&parts);
                    self.merges += 1;
                    return;
                }
                if req.off + req.len == q.off {
                    q.off = req.off;
                    q.len += req.len;
                    let mut parts: Vec<Part> = req.parts.iter().collect();
                    parts.extend(q.parts.iter());
                    q.parts = plain(&parts);
                    self.merges += 1;
                    return;
                }
            }
            self.queue.push(req);
        }
        fn pick(&mut self, head: u64, noop: bool) -> Option<Req> {
            if self.queue.is_empty() {
                return None;
            }
            let i = if noop {
                0
            } else {
                self.queue
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.off >= head)
                    .min_by_key(|(_, r)| r.off)
                    .or_else(|| self.queue.iter().enumerate().min_by_key(|(_, r)| r.off))
                    .map(|(i, _)| i)?
            };
            Some(self.queue.remove(i))
        }
    }

    #[test]
    fn the_indexed_queue_merges_and_dispatches_as_a_scan_does() {
        for noop in [false, true] {
            let m = DiskModel { noop, ..model() };
            let mut d = DiskState::new(stream(3, "d", 0));
            let mut r = Reference::default();
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            let mut rnd = |n: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % n
            };
            let unit = 64 << 10;
            let mut pool = PartPool::default();
            for step in 0..20_000u64 {
                if rnd(3) > 0 {
                    // Small offsets and lengths: many abut, many tie.
                    let mut q = req(rnd(64) * unit, (1 + rnd(8)) * unit);
                    q.write = rnd(2) == 0;
                    let first = q.parts.iter().next().unwrap();
                    q.parts = Parts::one(Part { tag: step, ..first });
                    if rnd(2) == 0 {
                        d.enqueue(q.clone(), m.max_request);
                    } else {
                        // The one-part form: the same queue.
                        let part = q.parts.iter().next().unwrap();
                        d.enqueue_part(q.off, q.write, part, m.max_request, &mut pool);
                    }
                    r.enqueue(q, m.max_request);
                } else {
                    let head = d.head;
                    let got = d.dispatch(Time::ZERO, &m).map(|(q, _)| q);
                    if got.is_some() {
                        d.finish(Time::ZERO);
                    }
                    assert_eq!(got, r.pick(head, noop), "step {step}");
                }
                assert_eq!(d.queued(), r.queue.len());
                assert_eq!(d.stats.merges, r.merges);
            }
        }
    }

    /// A request's service time gains `segment_ns` for each run of
    /// `segment_run` it holds (round 17): none where the cost is 0 (every
    /// preset), one segment where no run is given, and 128 for 512 KiB of
    /// 4 KiB runs; a write's segments at `segment_write_ns`.
    #[test]
    fn segments_add_their_cost_to_the_service_time_only_where_set() {
        let ssd = DiskModel {
            rev_ns: 0,
            seek_avg_ns: 0.0,
            seek_track_ns: 0.0,
            ..model()
        };
        let serve = |m: &DiskModel, write: bool| {
            let mut d = DiskState::new(stream(1, "seg", 0));
            let mut q = req(0, 512 << 10);
            q.write = write;
            d.enqueue(q, m.max_request);
            d.dispatch(Time::ZERO, m).unwrap().1.as_ns()
        };
        let base = serve(&ssd, false);
        assert_eq!(base, ssd.command_ns + ssd.transfer_ns(512 << 10, false));
        // A run but no cost: the time of before.
        let run_only = DiskModel {
            segment_run: 4096,
            ..ssd
        };
        assert_eq!(serve(&run_only, false), base);
        // A cost, no run: one segment a request.
        let one = DiskModel {
            segment_ns: 2000.0,
            segment_write_ns: 2000.0,
            ..ssd
        };
        assert_eq!(one.segments(512 << 10), 1);
        assert_eq!(serve(&one, false), base + 2000);
        let scattered = DiskModel {
            segment_run: 4096,
            ..one
        };
        assert_eq!(scattered.segments(512 << 10), 128);
        assert_eq!(scattered.segments(4097), 2);
        assert_eq!(serve(&scattered, false), base + 128 * 2000);
        assert_eq!(serve(&scattered, true) - serve(&run_only, true), 128 * 2000);
        // A write's own cost: reads keep theirs.
        let cached = DiskModel {
            segment_write_ns: 250.0,
            ..scattered
        };
        assert_eq!(serve(&cached, true) - serve(&run_only, true), 128 * 250);
        assert_eq!(serve(&cached, false), base + 128 * 2000);
    }

    /// `max_segments` runs of `segment_run` bound a request as
    /// `max_request` does (the bio split): 254 runs of 4 KiB are 1,016 KiB;
    /// huge runs leave `max_request`; without both keys nothing changes.
    #[test]
    fn max_segments_cuts_the_largest_request_at_whole_runs() {
        let text = crate::machine::presets::preset_text("nvme-2s").unwrap();
        let m = crate::machine::Machine::from_toml_str(text, "t.toml").unwrap();
        let mut b = m.block.clone().unwrap();
        b.max_request = 4 << 20;
        let at = |b: &crate::machine::blockio::BlockParams| {
            DiskModel::from_machine(b, 1000.0, 1000.0).max_request
        };
        assert_eq!(at(&b), 4 << 20);
        b.max_segments = Some(254);
        assert_eq!(at(&b), 4 << 20, "no run: no cut");
        b.segment_run = Some(4096);
        assert_eq!(at(&b), 254 * 4096);
        b.segment_run = Some(2 << 20);
        assert_eq!(at(&b), 4 << 20);
        b.max_segments = Some(1);
        assert_eq!(at(&b), 2 << 20);
    }

    #[test]
    fn a_seek_costs_more_than_continuing() {
        let m = model();
        let mut d = DiskState::new(stream(1, "d", 0));
        d.enqueue(req(0, 512 << 10), m.max_request);
        let (_, t1) = d.dispatch(Time::ZERO, &m).unwrap();
        d.enqueue(req(512 << 10, 512 << 10), m.max_request);
        let (_, t2) = d.dispatch(t1, &m).unwrap();
        d.finish(t2);
        d.enqueue(req(10_000_000_000, 512 << 10), m.max_request);
        let (_, t3) = d.dispatch(t2, &m).unwrap();
        assert!(
            t3 - t2 > t2 - t1,
            "seek {} vs sequential {}",
            (t3 - t2).as_ns(),
            (t2 - t1).as_ns()
        );
        assert_eq!(d.stats.seeks, 1);
    }

    #[test]
    fn a_solid_state_drive_serves_any_offset_at_command_plus_transfer() {
        let m = DiskModel {
            rev_ns: 0,
            seek_avg_ns: 0.0,
            seek_track_ns: 0.0,
            ..model()
        };
        let mut d = DiskState::new(stream(1, "d", 0));
        let mut now = Time::ZERO;
        for off in [0u64, 30_000_000_000, 512 << 10, 7 << 30] {
            d.enqueue(req(off, 512 << 10), m.max_request);
            let (_, t) = d.dispatch(now, &m).unwrap();
            assert_eq!(
                (t - now).as_ns(),
                m.command_ns + m.transfer_ns(512 << 10, false),
                "offset {off}"
            );
            d.finish(t);
            // Idle gap: a disk would wait for the platter; a drive does not.
            now = t + crate::engine::Dur(1_000_000);
        }
    }

    /// The open-addressed index keeps, under each key, the arrival
    /// numbers a map of sorted lists keeps, and its probe finds each
    /// list's first fit, through random inserts and removes (several
    /// numbers under a key, runs that wrap and shift back on removal:
    /// 40 keys in tables of 16 to 64 slots).
    #[test]
    fn the_index_keeps_each_keys_numbers_as_a_map_of_lists() {
        let mut rng = stream(9, "index-test", 0);
        let mut idx = Index::default();
        let mut want: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        // Numbers from just below 2^32: the low bits the slots keep wrap.
        let base = (1u64 << 32) - 10_000;
        let mut next = base;
        for _ in 0..20_000 {
            let k = rng.random_range(0..40u64);
            if rng.random_range(0..2u32) == 0 {
                // Numbers come in order, or again (a re-indexed request).
                let seq = if rng.random_range(0..4u32) == 0 && next > base {
                    rng.random_range(base..next)
                } else {
                    next += 1;
                    next - 1
                };
                let l = want.entry(k).or_default();
                if l.contains(&seq) {
                    continue;
                }
                idx.insert(k, seq);
                let at = l.partition_point(|&x| x < seq);
                l.insert(at, seq);
            } else if let Some(l) = want.get_mut(&k) {
                let seq = l[rng.random_range(0..l.len())];
                idx.remove(k, seq);
                l.retain(|&x| x != seq);
                if l.is_empty() {
                    want.remove(&k);
                }
            }
            for k in 0..40u64 {
                let l = want.get(&k).cloned().unwrap_or_default();
                assert_eq!(idx.get(k, base), l);
                // The probe finds what a first fit over the ascending list
                // finds, whatever the test.
                for m in 1..4u64 {
                    let fits = |s: u64| s % m != 1;
                    assert_eq!(
                        idx.earliest(k, base, |s| l.contains(&s) && fits(s)),
                        l.iter().copied().find(|&s| fits(s))
                    );
                }
            }
            // Both sides of one boundary (keys 2j and 2j + 1) have one home.
            for k in (0..40u64).step_by(2) {
                let (a, b) = (Index::fingerprint(k), Index::fingerprint(k + 1));
                assert_eq!(a ^ b, 1 << 32, "only the side differs");
            }
            // Absent keys and numbers: nothing found, nothing removed.
            idx.remove(41, 0);
            assert_eq!(idx.earliest(41, base, |_| true), None);
            assert_eq!(idx.len, want.values().map(Vec::len).sum::<usize>());
        }
        assert!(idx.slots.len() >= 64, "the table grew");
    }
}
