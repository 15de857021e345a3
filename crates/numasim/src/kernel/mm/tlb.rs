//! A per-CPU TLB ([BGP-BIGMEM] D2, D10, D11; modern hardware walks).
//!
//! The entries are split into pinned partitions (kernel, devices, Big
//! Memory) and the paged rest, which is refilled on a miss, in software
//! (PPC440/450: a trap into the kernel's handler) or in hardware (a page
//! walk). The paged partition is simulated entry by entry on a sampled
//! address stream (a real set of entries and a victim policy, random
//! numbers from the scenario's named streams), and the same miss rates
//! have closed forms; `tests/tlb.rs` checks that the two agree and
//! docs/tlb.md gives the numbers.

use crate::engine::rng::SimRng;
use crate::kernel::mm::bigmem::{self, BigMemError, ElfImage, DEFAULT_STACK_BYTES};
use crate::kernel::mm::flavour::{Flavour, Replacement, BIGMEM_ENTRY};
use crate::kernel::KernelConfig;
use crate::machine::Machine;
use rand::RngExt;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hash for page numbers: the default SipHash costs more
/// than the rest of a TLB lookup.
#[derive(Default, Clone, Copy)]
pub struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type PageMap = HashMap<u64, usize, BuildHasherDefault<PageHasher>>;

/// No slot (end of the LRU list).
const NIL: u32 = u32::MAX;

/// The paged partition: `entries` slots holding virtual page numbers.
#[derive(Debug, Clone)]
pub struct Tlb {
    slots: Vec<Option<u64>>,
    /// LRU order as a doubly linked list threaded through the slots:
    /// `lru_head` is the least recently used, `lru_tail` the most. A
    /// touch moves a slot to the tail in O(1); the order is the order of
    /// last use, so the victims are those an ordered map by last-use
    /// time would give.
    lru_prev: Vec<u32>,
    lru_next: Vec<u32>,
    lru_head: u32,
    lru_tail: u32,
    /// Page -> slot, for every page but the hot ones and the dense ones.
    map: PageMap,
    /// Slot of each page below its length, or `NIL` (empty unless built
    /// by [`Tlb::for_pages`]): a sampled stream over a few hundred
    /// thousand pages looks its pages up by index, not by hash.
    dense: Vec<u32>,
    /// The hot pages `0..hot_run` sit in order on the LRU list, each
    /// resident, with nothing after them but the tail (see
    /// [`Tlb::access_hot_run`]); 0 when that is not known.
    hot_run: u32,
    /// Slot of each hot page `HOT_PAGE_BASE + h` (`h < MAX_HOT`), or
    /// `NIL`: the pages touched before every data access are most of the
    /// lookups, and an index costs less than hashing them (issue 31).
    hot: [u32; MAX_HOT],
    policy: Replacement,
    /// Next victim (round robin).
    next: usize,
    /// Slots in use: they fill in order and empty only at a flush.
    filled: usize,
    rng: SimRng,
    pub accesses: u64,
    pub misses: u64,
}

impl Tlb {
    pub fn new(entries: u32, policy: Replacement, rng: SimRng) -> Tlb {
        let n = entries.max(1) as usize;
        Tlb {
            slots: vec![None; n],
            lru_prev: vec![NIL; n],
            lru_next: vec![NIL; n],
            lru_head: NIL,
            lru_tail: NIL,
            map: PageMap::with_capacity_and_hasher(n * 2, Default::default()),
            dense: Vec::new(),
            hot_run: 0,
            hot: [NIL; MAX_HOT],
            policy,
            next: 0,
            filled: 0,
            rng,
            accesses: 0,
            misses: 0,
        }
    }

    /// [`Tlb::new`] for a stream of pages mostly below `pages`: those are
    /// indexed directly when their table is small ([`DENSE_MAX_PAGES`]);
    /// the hits and misses are the same.
    pub fn for_pages(entries: u32, policy: Replacement, rng: SimRng, pages: u64) -> Tlb {
        let mut t = Tlb::new(entries, policy, rng);
        if pages <= DENSE_MAX_PAGES {
            t.dense = vec![NIL; pages as usize];
        }
        t
    }

    pub fn entries(&self) -> usize {
        self.slots.len()
    }

    /// Translate page `vpn`; true on a hit. A miss refills one entry.
    pub fn access(&mut self, vpn: u64) -> bool {
        self.accesses += 1;
        if hot_index(vpn).is_some() {
            // A hot page touched alone may leave the run's order.
            self.hot_run = 0;
        }
        if let Some(s) = self.slot_of(vpn) {
            self.touch(s);
            return true;
        }
        self.misses += 1;
        let victim = if self.filled < self.slots.len() {
            self.filled += 1;
            self.filled - 1
        } else {
            match self.policy {
                Replacement::RoundRobin => {
                    let v = self.next;
                    self.next = (self.next + 1) % self.slots.len();
                    v
                }
                Replacement::Lru => self.lru_head as usize,
                Replacement::Random => self.rng.random_range(0..self.slots.len()),
            }
        };
        // A slot filled for the first time since a flush is not on the
        // LRU list yet.
        let linked = self.slots[victim].is_some();
        if let Some(old) = self.slots[victim].replace(vpn) {
            if hot_index(old).is_some() {
                self.hot_run = 0;
            }
            self.forget(old);
        }
        if self.policy == Replacement::Lru {
            if linked {
                self.lru_unlink(victim);
            }
            self.lru_push_tail(victim);
        }
        self.remember(vpn, victim);
        false
    }

    /// Touch the hot pages `HOT_PAGE_BASE + 0..hot` in order: what
    /// `hot` calls of [`Tlb::access`] do. Under LRU, once they are
    /// resident and in order on the list with at most one page (the last
    /// data page) after them, every touch hits and the touches together
    /// only move that page ahead of them: one move instead of `hot`
    /// lookups and moves (the sampled random reads touch two hot pages
    /// before every data page).
    pub fn access_hot_run(&mut self, hot: u32) {
        let n = hot as usize;
        if n == 0 {
            return;
        }
        if self.hot_run == hot {
            let last = self.hot[n - 1];
            let after = self.lru_next[last as usize];
            if after == NIL || after == self.lru_tail {
                self.accesses += u64::from(hot);
                if after != NIL {
                    let (d, h0) = (after, self.hot[0]);
                    self.lru_unlink(d as usize);
                    let p = self.lru_prev[h0 as usize];
                    self.lru_prev[d as usize] = p;
                    self.lru_next[d as usize] = h0;
                    if p == NIL {
                        self.lru_head = d;
                    } else {
                        self.lru_next[p as usize] = d;
                    }
                    self.lru_prev[h0 as usize] = d;
                }
                return;
            }
        }
        for h in 0..u64::from(hot) {
            self.access(HOT_PAGE_BASE + h);
        }
        // Now each is resident (the last touched at the tail): in order if
        // each follows the one before.
        let chained = self.policy == Replacement::Lru
            && n < self.slots.len()
            && self.hot[..n].iter().all(|&s| s != NIL)
            && self.hot[..n]
                .windows(2)
                .all(|w| self.lru_next[w[0] as usize] == w[1]);
        self.hot_run = if chained { hot } else { 0 };
    }

    /// The slot holding `vpn`, if any.
    #[inline]
    fn slot_of(&self, vpn: u64) -> Option<usize> {
        if let Some(&s) = self.dense.get(vpn as usize) {
            return (s != NIL).then_some(s as usize);
        }
        match hot_index(vpn) {
            Some(h) => (self.hot[h] != NIL).then_some(self.hot[h] as usize),
            None => self.map.get(&vpn).copied(),
        }
    }

    fn forget(&mut self, vpn: u64) {
        if let Some(s) = self.dense.get_mut(vpn as usize) {
            *s = NIL;
            return;
        }
        match hot_index(vpn) {
            Some(h) => self.hot[h] = NIL,
            None => {
                self.map.remove(&vpn);
            }
        }
    }

    fn remember(&mut self, vpn: u64, slot: usize) {
        if let Some(s) = self.dense.get_mut(vpn as usize) {
            *s = slot as u32;
            return;
        }
        match hot_index(vpn) {
            Some(h) => self.hot[h] = slot as u32,
            None => {
                self.map.insert(vpn, slot);
            }
        }
    }

    /// A hit: the slot becomes the most recently used.
    fn touch(&mut self, slot: usize) {
        if self.policy == Replacement::Lru && self.lru_tail != slot as u32 {
            self.lru_unlink(slot);
            self.lru_push_tail(slot);
        }
    }

    fn lru_unlink(&mut self, slot: usize) {
        let (p, n) = (self.lru_prev[slot], self.lru_next[slot]);
        if p == NIL {
            self.lru_head = n;
        } else {
            self.lru_next[p as usize] = n;
        }
        if n == NIL {
            self.lru_tail = p;
        } else {
            self.lru_prev[n as usize] = p;
        }
    }

    fn lru_push_tail(&mut self, slot: usize) {
        self.lru_prev[slot] = self.lru_tail;
        self.lru_next[slot] = NIL;
        if self.lru_tail == NIL {
            self.lru_head = slot as u32;
        } else {
            self.lru_next[self.lru_tail as usize] = slot as u32;
        }
        self.lru_tail = slot as u32;
    }

    /// Drop every paged entry (context switch, `munmap`).
    pub fn flush(&mut self) {
        for s in &mut self.slots {
            if let Some(d) = s.take().and_then(|v| self.dense.get_mut(v as usize)) {
                *d = NIL;
            }
        }
        self.hot_run = 0;
        self.map.clear();
        self.hot = [NIL; MAX_HOT];
        self.lru_head = NIL;
        self.lru_tail = NIL;
        self.next = 0;
        self.filled = 0;
    }

    /// Forget the counts (after warming up).
    pub fn reset_counts(&mut self) {
        self.accesses = 0;
        self.misses = 0;
    }
}

/// Pages the program touches on every iteration besides its data (loop
/// text, stack): they share the paged partition with the data.
pub const HOT_PAGE_BASE: u64 = 1 << 60;

/// Most pages a [`Tlb::for_pages`] indexes directly: a 1 MiB table,
/// which stays in the host's caches (a bigger one would trade hashing
/// for cache misses).
pub const DENSE_MAX_PAGES: u64 = 1 << 18;

/// Hot pages the TLB indexes directly (`hot_pages` allows up to 64).
const MAX_HOT: usize = 64;

/// `vpn`'s place among the directly indexed hot pages, if it is one.
fn hot_index(vpn: u64) -> Option<usize> {
    let h = vpn.wrapping_sub(HOT_PAGE_BASE);
    (h < MAX_HOT as u64).then_some(h as usize)
}

/// Sampled: TLB misses per data access for uniform random accesses over
/// `pages` pages, each access preceded by a touch of each of `hot` other
/// pages. Warmed up with `samples` accesses, then measured over `samples`.
pub fn sample_random(
    entries: u32,
    policy: Replacement,
    pages: u64,
    hot: u32,
    samples: u64,
    rng: SimRng,
) -> f64 {
    let pages = pages.max(1);
    let warm = samples.max(4 * entries as u64);
    if pages + u64::from(hot) <= u64::from(entries.max(1)) {
        // Every page the stream can name fits at once: no slot is ever
        // taken back, under any policy, so an access misses exactly when
        // its page is new, and the hot pages' first misses fall in the
        // warm-up (at least one iteration whenever any is measured). The
        // draws are the same; only which pages were seen is kept.
        let mut draw = rng;
        let mut seen = vec![false; pages as usize];
        let mut run = |n: u64| {
            let mut misses = 0u64;
            for _ in 0..n {
                let p = draw.random_range(0..pages) as usize;
                misses += u64::from(!seen[p]);
                seen[p] = true;
            }
            misses
        };
        run(warm);
        return run(samples) as f64 / samples.max(1) as f64;
    }
    sample_random_entries(entries, policy, pages, hot, samples, warm, rng)
}

/// [`sample_random`] entry by entry, over a warm-up of `warm` accesses.
fn sample_random_entries(
    entries: u32,
    policy: Replacement,
    pages: u64,
    hot: u32,
    samples: u64,
    warm: u64,
    rng: SimRng,
) -> f64 {
    let mut draw = rng.clone();
    let mut tlb = Tlb::for_pages(entries, policy, rng, pages);
    let mut run = |tlb: &mut Tlb, n: u64| {
        for _ in 0..n {
            tlb.access_hot_run(hot);
            tlb.access(draw.random_range(0..pages));
        }
    };
    run(&mut tlb, warm);
    tlb.reset_counts();
    run(&mut tlb, samples);
    tlb.misses as f64 / samples.max(1) as f64
}

/// Sampled: TLB misses per pass of `streams` sequential streams of
/// `pages` pages each, walked together (a copy reads page i of one and
/// writes page i of the other), with `hot` other pages touched per page
/// step. Measured on the pass after `warm_passes`.
pub fn sample_streams(
    entries: u32,
    policy: Replacement,
    pages: u64,
    streams: u32,
    hot: u32,
    rng: SimRng,
) -> f64 {
    let mut tlb = Tlb::new(entries, policy, rng);
    let pages = pages.max(1);
    let pass = |tlb: &mut Tlb| {
        for p in 0..pages {
            for h in 0..hot as u64 {
                tlb.access(HOT_PAGE_BASE + h);
            }
            for s in 0..streams as u64 {
                // Streams far apart in the address space.
                tlb.access(s * (1 << 40) + p);
            }
        }
    };
    for _ in 0..3 {
        pass(&mut tlb);
    }
    tlb.reset_counts();
    pass(&mut tlb);
    tlb.misses as f64
}

/// Misses of LOFAR's ring copy (D14), sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RingMisses {
    /// Misses per block written: per destination page touched.
    pub per_block: f64,
    /// Misses per translation (hot, source and destination pages).
    pub per_access: f64,
}

/// Most periods measured by `sample_ring` (large pages cross rarely).
const RING_MAX_PERIODS: u64 = 1024;

/// Sampled: misses of a ring copy. The ring of `ring` bytes holds `rows`
/// rows end to end (one per subband); each period writes `block`
/// contiguous bytes at the row's current offset into every row in turn,
/// reading them from a receive buffer of `rows` × `block` bytes that is
/// reused every period, with `hot` other pages (loop text, stack) touched
/// before each block. A row's destination page is revisited every period
/// and changes every `page / block` periods, so the misses per block are
/// 1 once the rows' pages do not fit the entries (round robin, LRU) and
/// about 1 / (page / block) while they do. Warmed up over one page's worth
/// of periods, measured over two (at most `RING_MAX_PERIODS`).
#[allow(clippy::too_many_arguments)]
pub fn sample_ring(
    entries: u32,
    policy: Replacement,
    page: u64,
    ring: u64,
    rows: u32,
    block: u64,
    hot: u32,
    rng: SimRng,
) -> RingMisses {
    let mut tlb = Tlb::new(entries, policy, rng);
    let page = page.max(1);
    let rows = rows.max(1) as u64;
    let block = block.max(1);
    let row_bytes = (ring / rows).max(block);
    // Far from the ring in the address space.
    let src_base = 1u64 << 44;
    let mut blocks = 0u64;
    let period = |tlb: &mut Tlb, p: u64| {
        let off = p * block % row_bytes;
        for r in 0..rows {
            for h in 0..hot as u64 {
                tlb.access(HOT_PAGE_BASE + h);
            }
            let src = src_base + r * block;
            for vpn in src / page..=(src + block - 1) / page {
                tlb.access(vpn);
            }
            let dst = r * row_bytes + off.min(row_bytes - block);
            for vpn in dst / page..=(dst + block - 1) / page {
                tlb.access(vpn);
            }
        }
    };
    let per_page = page.div_ceil(block);
    let warm = per_page.min(RING_MAX_PERIODS);
    let measured = (2 * per_page).min(RING_MAX_PERIODS);
    for p in 0..warm {
        period(&mut tlb, p);
    }
    tlb.reset_counts();
    for p in warm..warm + measured {
        period(&mut tlb, p);
        blocks += rows;
    }
    RingMisses {
        per_block: tlb.misses as f64 / blocks.max(1) as f64,
        per_access: tlb.misses as f64 / tlb.accesses.max(1) as f64,
    }
}

/// Closed form: steady misses per access for uniform random access over
/// `pages` pages with `entries` entries, any policy that keeps `entries`
/// distinct pages (random, FIFO, LRU under uniform references):
/// max(0, 1 − E/N), i.e. max(0, 1 − E·P/W).
pub fn closed_random_miss_rate(entries: u32, pages: u64) -> f64 {
    (1.0 - entries as f64 / pages.max(1) as f64).max(0.0)
}

/// Closed form: misses per pass of cyclic sequential streams over
/// `total_pages` pages: none once they fit, one per page once they do
/// not (LRU and FIFO both evict each page before its reuse).
pub fn closed_stream_misses(entries: u32, total_pages: u64) -> f64 {
    if total_pages <= entries as u64 {
        0.0
    } else {
        total_pages as f64
    }
}

/// Page-table levels a walk reads for `page`: the machine's levels for
/// its smallest page, one less for each 512-fold larger page.
pub fn walk_levels(machine: &Machine, page: u64) -> u32 {
    let base = machine
        .tlb
        .page_sizes
        .first()
        .copied()
        .unwrap_or(4096)
        .max(1);
    let shift = (page.max(base) / base).trailing_zeros();
    machine.tlb.walk_levels.saturating_sub(shift / 9).max(1)
}

/// Text and data of the benchmark binaries: small static executables (not
/// stated; they only take room in Big Memory before the buffer).
pub const BENCH_TEXT_BYTES: u64 = 1 << 20;
pub const BENCH_DATA_BYTES: u64 = 1 << 20;

/// How a benchmark gets its buffer (D9, D14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferKind {
    /// Anonymous private memory (a large `malloc`).
    Anon,
    /// A file mapping: always paged.
    File,
    /// LOFAR's receive ring on the I/O node: the kernel reserves the whole
    /// Big Memory area as the ring (D14), no chunk manager in between.
    IoRing,
}

/// Whether a process's buffer of `bytes` lies in Big Memory. For `Anon`
/// and `File`, as the chunk manager (mm/bigmem.rs, D9) places it: the
/// process is exec'd as a ZCB (`zcb`) with the benchmark's text, data and
/// stack in the area, then maps the buffer; anonymous memory goes to Big
/// Memory, file mappings stay paged. Ok(false) on a kernel without Big
/// Memory or for an ordinary binary; Err when the area cannot hold it
/// (ENOMEM: a ZCB has no fallback to paged memory).
pub fn buffer_in_bigmem(
    machine: &Machine,
    kernel: &KernelConfig,
    zcb: bool,
    kind: BufferKind,
    bytes: u64,
) -> Result<bool, BigMemError> {
    if kernel.mm.flavour != Flavour::Bigmem || !zcb {
        return Ok(false);
    }
    let Some(area) = kernel.bigmem.area(machine) else {
        return Ok(false);
    };
    let mut area = area?;
    if kind == BufferKind::IoRing {
        return if bytes <= area.bytes() {
            Ok(true)
        } else {
            Err(BigMemError::NoMemory {
                want: bytes,
                largest_free: area.bytes(),
            })
        };
    }
    area.exec(
        &ElfImage::zcb(BENCH_TEXT_BYTES, BENCH_DATA_BYTES),
        DEFAULT_STACK_BYTES,
    )?;
    let m = match kind {
        BufferKind::File => area.mmap_file(bytes),
        _ => area.mmap_anon(bytes)?,
    };
    Ok(matches!(m, bigmem::Mapping::BigMem { .. }))
}

/// Bytes one Big Memory entry maps.
pub fn bigmem_entry_bytes() -> u64 {
    BIGMEM_ENTRY
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stream;

    const POLICIES: [Replacement; 3] = [
        Replacement::Lru,
        Replacement::RoundRobin,
        Replacement::Random,
    ];

    /// The hot pages' direct index is only a faster lookup: a stream of
    /// accesses that names hot pages hits and misses as the same stream
    /// does with those pages renamed to ordinary (hashed) page numbers,
    /// under each replacement policy, across flushes.
    #[test]
    fn hot_pages_behave_as_any_other_pages() {
        let mut draw = stream(3, "tlb-hot-test", 0);
        for policy in POLICIES {
            for entries in [1u32, 3, 8, 32] {
                let mut a = Tlb::new(entries, policy, stream(5, "tlb", entries as u64));
                let mut b = Tlb::new(entries, policy, stream(5, "tlb", entries as u64));
                for _ in 0..4_000 {
                    if draw.random_range(0..500u32) == 0 {
                        a.flush();
                        b.flush();
                        continue;
                    }
                    let (x, y) = if draw.random_bool(0.5) {
                        let h = draw.random_range(0..MAX_HOT as u64 + 2);
                        (HOT_PAGE_BASE + h, (1 << 50) + h)
                    } else {
                        let p = draw.random_range(0..48u64);
                        (p, p)
                    };
                    assert_eq!(a.access(x), b.access(y));
                }
                assert_eq!((a.accesses, a.misses), (b.accesses, b.misses));
                assert!(a.misses > 0 && a.misses < a.accesses);
            }
        }
    }

    /// A hot run is only a faster way to touch the hot pages in order:
    /// after any mix of runs (of any length), data accesses and flushes,
    /// every data access hits or misses as it does with the hot pages
    /// touched one by one, and the entries, the LRU order and the counts
    /// are the same, under each policy and with fewer entries than hot
    /// pages.
    #[test]
    fn a_hot_run_is_its_touches_one_by_one() {
        let mut draw = stream(3, "tlb-hot-run-test", 0);
        for policy in POLICIES {
            for entries in [1u32, 2, 3, 4, 8, 32] {
                let mut a = Tlb::new(entries, policy, stream(5, "tlb", entries as u64));
                let mut b = Tlb::new(entries, policy, stream(5, "tlb", entries as u64));
                let mut fast = 0;
                for _ in 0..6_000 {
                    match draw.random_range(0..100u32) {
                        0 => {
                            a.flush();
                            b.flush();
                        }
                        1..=60 => {
                            // Mostly one length, sometimes another.
                            let hot = if draw.random_range(0..10u32) == 0 {
                                draw.random_range(0..6u32)
                            } else {
                                2
                            };
                            fast += u32::from(a.hot_run == hot && hot > 0);
                            a.access_hot_run(hot);
                            for h in 0..u64::from(hot) {
                                b.access(HOT_PAGE_BASE + h);
                            }
                        }
                        _ => {
                            let p = draw.random_range(0..40u64);
                            assert_eq!(a.access(p), b.access(p));
                        }
                    }
                    assert_eq!(a.slots, b.slots);
                    assert_eq!((a.lru_head, a.lru_tail), (b.lru_head, b.lru_tail));
                    assert_eq!((&a.lru_prev, &a.lru_next), (&b.lru_prev, &b.lru_next));
                    assert_eq!((a.accesses, a.misses), (b.accesses, b.misses));
                }
                // The shortcut was taken where it can be.
                assert_eq!(
                    fast > 0,
                    policy == Replacement::Lru && entries > 2,
                    "{policy:?} {entries}"
                );
            }
        }
    }

    /// The dense index is only a faster lookup: pages inside and outside
    /// it, and hot pages, hit and miss as with the hash alone.
    #[test]
    fn the_dense_index_behaves_as_the_hash() {
        let mut draw = stream(3, "tlb-dense-test", 0);
        for policy in POLICIES {
            for entries in [1u32, 3, 8, 32] {
                let mut a = Tlb::for_pages(entries, policy, stream(5, "tlb", 0), 48);
                let mut b = Tlb::new(entries, policy, stream(5, "tlb", 0));
                assert_eq!(a.dense.len(), 48);
                for _ in 0..4_000 {
                    if draw.random_range(0..300u32) == 0 {
                        a.flush();
                        b.flush();
                        assert!(a.dense.iter().all(|&s| s == NIL));
                        continue;
                    }
                    let p = match draw.random_range(0..4u32) {
                        0 => HOT_PAGE_BASE + draw.random_range(0..3u64),
                        1 => 40 + draw.random_range(0..16u64),
                        _ => draw.random_range(0..48u64),
                    };
                    assert_eq!(a.access(p), b.access(p));
                }
                assert_eq!(a.slots, b.slots);
                assert_eq!((a.accesses, a.misses), (b.accesses, b.misses));
            }
        }
    }

    /// Where every page fits (pages + hot pages at most the entries), the
    /// sampled rate from first sightings is the rate the entries give,
    /// for every policy, at and around the boundary, short and long runs.
    #[test]
    fn a_stream_that_fits_misses_only_on_new_pages() {
        let mut draw = stream(3, "tlb-fits-test", 0);
        for policy in POLICIES {
            for _ in 0..200 {
                let entries = draw.random_range(1..40u32);
                let hot = draw.random_range(0..4u32).min(entries - 1);
                let pages = u64::from(entries - hot);
                let samples = draw.random_range(0..300u64);
                let seed = draw.random_range(0..1000u64);
                let fast =
                    sample_random(entries, policy, pages, hot, samples, stream(seed, "s", 0));
                let warm = samples.max(4 * entries as u64);
                let slow = sample_random_entries(
                    entries,
                    policy,
                    pages,
                    hot,
                    samples,
                    warm,
                    stream(seed, "s", 0),
                );
                assert_eq!(fast, slow, "{policy:?} {entries} {hot} {pages} {samples}");
                // Fewer pages take the shortcut too.
                let fewer = pages.div_ceil(2);
                assert_eq!(
                    sample_random(entries, policy, fewer, hot, samples, stream(seed, "s", 0)),
                    sample_random_entries(
                        entries,
                        policy,
                        fewer,
                        hot,
                        samples,
                        warm,
                        stream(seed, "s", 0)
                    )
                );
            }
        }
    }
}
