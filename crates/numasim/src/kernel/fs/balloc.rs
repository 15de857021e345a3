//! Ext2/Ext3 block allocation as 2.6.15 does it, one `get_block()` at a
//! time in the write path (`fs/ext2/balloc.c`, `fs/ext2/inode.c`,
//! `fs/ext3/balloc.c`, `fs/ext3/inode.c`):
//!
//! - **Block groups** of `8 × block size` blocks (one bitmap block's bits),
//!   each starting with its block and inode bitmaps and its inode table.
//!   A file's inode sits in its directory's group (`find_group_other()`),
//!   and its first block's goal is that group's start plus a "colour" of
//!   `(pid % 16) × blocks per group / 16` (`ext2_find_near()`), so parallel
//!   `dd`s start 1/16 of a group apart. Later blocks aim just past the
//!   file's last block (`ext2_find_goal()`, `i_next_alloc_goal`).
//! - **Indirect blocks** are allocated inline, just before the data block
//!   that needs them (`ext2_alloc_branch()`): at file block 12, two at
//!   `12 + P` (double indirect), one every `P` blocks after (P = block / 4).
//! - **Ext2** (`ext2_new_block()`, `grab_block()`): the goal if free, else
//!   the next free block up to the goal's 64-block boundary, else the first
//!   wholly free byte of the bitmap (8 blocks) after the goal, backed up
//!   over the free blocks before it, else any free block of the group, else
//!   the next groups in turn. It then **preallocates** the up to 8 free
//!   blocks that follow (`EXT2_DEFAULT_PREALLOC_BLOCKS`), which the file's
//!   next `ext2_alloc_block()` calls take while their goal matches; what is
//!   left is freed at close (`ext2_discard_prealloc()`).
//! - **Ext3** (`ext3_new_block()`, `ext3_try_to_allocate_with_rsv()`): each
//!   file owns a **reservation window** that no other file's window
//!   overlaps, of `rsv_goal_size` blocks (8, `EXT3_DEFAULT_RESERVE_BLOCKS`),
//!   and allocates inside it. When the goal leaves the window,
//!   `alloc_new_reservation()` doubles the size if more than half the old
//!   window was used (up to `EXT3_MAX_RESERVE_BLOCKS`), and
//!   `find_next_reservable_window()` places the new one at the first gap
//!   between the other windows at or after the goal whose first block is
//!   free on the bitmap.
//!
//! The bitmap is kept as merged runs of used blocks (a `BTreeMap`), so each
//! bitmap operation is a lookup; blocks a file takes from its own
//! preallocation or window go in runs, without touching shared state. A
//! writer's `step()` makes exactly one shared allocation (an
//! `ext2_new_block()` or a new reservation window) and then takes what its
//! private preallocation or window gives: that is where other writers'
//! allocations can interleave, so a driver calls `step()` at the moment the
//! writer's copy reaches that block.

use super::layout::Enospc;
use super::FsKind;
use std::collections::BTreeMap;

/// `EXT2_DEFAULT_PREALLOC_BLOCKS` (include/linux/ext2_fs.h, 2.6.15).
pub const EXT2_PREALLOC_BLOCKS: u64 = 8;
/// `EXT3_DEFAULT_RESERVE_BLOCKS` (include/linux/ext3_fs.h, 2.6.15).
pub const EXT3_DEFAULT_RESERVE_BLOCKS: u64 = 8;
/// `EXT3_MAX_RESERVE_BLOCKS` (include/linux/ext3_fs.h, 2.6.15).
pub const EXT3_MAX_RESERVE_BLOCKS: u64 = 1027;
/// Bytes of disk per inode mke2fs makes (its default `-i`, a choice).
pub const BYTES_PER_INODE: u64 = 8192;
/// On-disk inode (`EXT2_GOOD_OLD_INODE_SIZE`).
pub const INODE_SIZE: u64 = 128;

/// The block bitmaps of every group, one bit a block as on disk: a group's
/// bitmap block (`8 × block size` bits) is made when something first
/// touches the group, so a volume of terabytes costs only the groups its
/// files reach. A search scans 64 blocks a word, and a group with no free
/// block is passed over by its count (`bg_free_blocks_count`): the run
/// lists this replaced cost a tree walk per block laid down.
#[derive(Debug, Clone)]
pub struct Bitmap {
    /// Group -> its bitmap (bit set: used; metadata and blocks past the
    /// volume's end set too) and free count. Absent: as mkfs left it.
    groups: Groups,
    /// Data blocks in use.
    used: u64,
    pub blocks: u64,
    pub per_group: u64,
    /// Blocks at each group's start that hold its bitmaps and inode table.
    pub meta: u64,
    /// `log2(per_group)` (`u32::MAX` if it is not a power of two): blocks
    /// are powers of two (fsio's `block_size` range), so a block's group
    /// and its place in it are a shift and a mask, not a 64-bit division
    /// each (several per allocation in an Ext2 lay-down).
    shift: u32,
}

#[derive(Debug, Clone)]
struct Group {
    words: Box<[u64]>,
    free: u64,
    /// Every block of the group before this one is used (a lower bound
    /// on its first free block, kept by `mark`): parallel Ext2 writers
    /// allocate at one frontier, and `grab_block()`'s searches from a
    /// goal a few hundred blocks behind it start here instead.
    low: u64,
}

/// The bitmaps made so far, found by group number through a table of
/// 4 bytes a group (grown to the highest group touched), not a hash map:
/// `is_free` runs for every block an Ext2 lay-down places, and hashing
/// the group was most of it.
#[derive(Debug, Clone, Default)]
struct Groups {
    /// Group -> its index in `made`; `u32::MAX` (past `made`): untouched.
    slot: Vec<u32>,
    made: Vec<Group>,
}

impl Groups {
    fn get(&self, g: u64) -> Option<&Group> {
        self.made.get(self.index(g)?)
    }
    /// Group `g`'s place in `made`, if it is made.
    #[inline]
    fn index(&self, g: u64) -> Option<usize> {
        let i = *self.slot.get(usize::try_from(g).ok()?)? as usize;
        (i < self.made.len()).then_some(i)
    }
    fn get_mut(&mut self, g: u64) -> Option<&mut Group> {
        let i = *self.slot.get(usize::try_from(g).ok()?)?;
        self.made.get_mut(i as usize)
    }
    fn insert(&mut self, g: u64, x: Group) {
        let gi = usize::try_from(g).expect("group number fits the host's memory");
        if gi >= self.slot.len() {
            self.slot.resize(gi + 1, u32::MAX);
        }
        debug_assert_eq!(self.slot[gi], u32::MAX, "a group's bitmap is made once");
        self.slot[gi] = u32::try_from(self.made.len()).expect("fewer than 2^32 groups touched");
        self.made.push(x);
    }
}

/// First wholly free octet (8 blocks, aligned in the group) of the group
/// starting at block `gs` (`pg` blocks), from `from` up to `to`, reading
/// the group's bitmap a 64-bit word at a time through `word`: the lowest
/// zero byte of each word, with the bytes before the start filled first so
/// that no borrow reaches past them (`memscan()` in `grab_block()`).
/// `None` if no word in range has a zero byte; else the search's answer,
/// `Some(None)` where that byte lies past the group or `to`.
fn free_octet_in(
    gs: u64,
    pg: u64,
    from: u64,
    to: u64,
    word: impl Fn(u64) -> u64,
) -> Option<Option<u64>> {
    const LO: u64 = 0x0101_0101_0101_0101;
    let mut i = (from - gs).div_ceil(8) * 8;
    while i + 8 <= pg && gs + i + 8 <= to {
        let w = i / 64;
        let x = word(w) | bits(0, i % 64);
        let zero = x.wrapping_sub(LO) & !x & (LO << 7);
        if zero != 0 {
            let at = w * 64 + zero.trailing_zeros() as u64 / 8 * 8;
            return Some((at + 8 <= pg && gs + at + 8 <= to).then_some(gs + at));
        }
        i = (w + 1) * 64;
    }
    None
}

/// Bits `[lo, hi)` of a word (`lo <= hi <= 64`).
fn bits(lo: u64, hi: u64) -> u64 {
    if lo >= hi {
        0
    } else if hi - lo == 64 {
        u64::MAX
    } else {
        ((1u64 << (hi - lo)) - 1) << lo
    }
}

impl Bitmap {
    /// A freshly made filesystem of `blocks` blocks of `block` bytes.
    pub fn new(blocks: u64, block: u64) -> Bitmap {
        let per_group = 8 * block;
        let inodes = per_group * block / BYTES_PER_INODE;
        let meta = 2 + (inodes * INODE_SIZE).div_ceil(block);
        Bitmap {
            groups: Groups::default(),
            used: 0,
            blocks,
            per_group,
            meta: meta.min(per_group - 1),
            shift: if per_group.is_power_of_two() {
                per_group.trailing_zeros()
            } else {
                u32::MAX
            },
        }
    }
    pub fn groups(&self) -> u64 {
        self.blocks.div_ceil(self.per_group)
    }
    #[inline]
    pub fn group_of(&self, b: u64) -> u64 {
        if self.shift == u32::MAX {
            b / self.per_group
        } else {
            b >> self.shift
        }
    }
    /// Block `b`'s index within its group.
    #[inline]
    fn in_group(&self, b: u64) -> u64 {
        if self.shift == u32::MAX {
            b % self.per_group
        } else {
            b & (self.per_group - 1)
        }
    }
    /// First data block of group `g`, and the block after its last.
    pub fn group_range(&self, g: u64) -> (u64, u64) {
        let s = g * self.per_group;
        (
            (s + self.meta).min(self.blocks),
            (s + self.per_group).min(self.blocks),
        )
    }
    fn words_per_group(&self) -> u64 {
        self.per_group.div_ceil(64)
    }
    /// Word `w` of group `g` as mkfs leaves it: the metadata blocks, and
    /// bits past the group's or the volume's last block, set.
    fn fresh_word(&self, g: u64, w: u64) -> u64 {
        let gs = g * self.per_group;
        let len = self.per_group.min(self.blocks.saturating_sub(gs));
        let lo = w * 64;
        let meta = bits(0, self.meta.clamp(lo, lo + 64) - lo);
        let past = bits(len.clamp(lo, lo + 64) - lo, 64);
        meta | past
    }
    /// Word `w` of group `g`, whose bitmap is `words` (None: untouched).
    fn word_of(&self, words: Option<&[u64]>, g: u64, w: u64) -> u64 {
        match words {
            Some(x) => x[w as usize],
            None => self.fresh_word(g, w),
        }
    }
    /// Word `w` of group `g`.
    fn word(&self, g: u64, w: u64) -> u64 {
        self.word_of(self.groups.get(g).map(|x| &x.words[..]), g, w)
    }
    /// Group `g`'s place in `Groups::made`, made on first touch.
    fn made_at(&mut self, g: u64) -> usize {
        if let Some(i) = self.groups.index(g) {
            return i;
        }
        self.group_mut(g);
        self.groups.index(g).expect("made above")
    }
    /// Group `g`'s bitmap, made on first touch.
    fn group_mut(&mut self, g: u64) -> &mut Group {
        // One lookup of the slot where the group is made already (nearly
        // every call: `take` and `free` once per allocation).
        let i = self.groups.slot.get(g as usize).map_or(u32::MAX, |&i| i) as usize;
        if i < self.groups.made.len() {
            return &mut self.groups.made[i];
        }
        {
            let words: Box<[u64]> = (0..self.words_per_group())
                .map(|w| self.fresh_word(g, w))
                .collect();
            let (gs, ge) = self.group_range(g);
            let free = ge.saturating_sub(gs);
            self.groups.insert(
                g,
                Group {
                    words,
                    free,
                    low: gs,
                },
            );
        }
        self.groups.get_mut(g).expect("made above")
    }
    /// True when group `g` has no free block (an untouched group has some
    /// unless it is all metadata).
    fn full(&self, g: u64) -> bool {
        match self.groups.get(g) {
            Some(x) => x.free == 0,
            None => {
                let (gs, ge) = self.group_range(g);
                gs >= ge
            }
        }
    }
    // Inlined where it is called (grab_block, free_run): out of line its
    // call cost more instructions than the division it saved.
    #[inline(always)]
    pub fn is_free(&self, b: u64) -> bool {
        if b >= self.blocks {
            return false;
        }
        let (g, i) = (self.group_of(b), self.in_group(b));
        self.word(g, i / 64) & (1 << (i % 64)) == 0
    }
    /// First block in `[from, to)` whose bit is clear (`want_free`) or set.
    fn scan(&self, from: u64, to: u64, want_free: bool) -> Option<u64> {
        let pg = self.per_group;
        let mut b = from;
        while b < to {
            let g = self.group_of(b);
            let gs = g * pg;
            let stop = to.min(gs + pg);
            if want_free && self.full(g) {
                b = gs + pg;
                continue;
            }
            let words = self.groups.get(g).map(|x| &x.words[..]);
            let mut i = b - gs;
            while gs + i < stop {
                let w = i / 64;
                let mut x = self.word_of(words, g, w);
                if want_free {
                    x = !x;
                }
                x &= !bits(0, i % 64);
                if x != 0 {
                    let at = gs + w * 64 + x.trailing_zeros() as u64;
                    return (at < stop).then_some(at);
                }
                i = (w + 1) * 64;
            }
            b = gs + pg;
        }
        None
    }
    /// First free block in `[from, to)`.
    pub fn next_free(&self, from: u64, to: u64) -> Option<u64> {
        self.scan(from, to.min(self.blocks), true)
    }
    /// Free blocks from `b` on, up to `to` and the group's end (none if `b`
    /// itself is used: the block after a new one may belong to another file).
    pub fn free_run(&self, b: u64, to: u64) -> u64 {
        if !self.is_free(b) {
            return 0;
        }
        let end = to.min(self.group_range(self.group_of(b)).1);
        let used = self.scan(b + 1, end, false).unwrap_or(end);
        used.min(end).saturating_sub(b)
    }
    /// First wholly free bitmap byte (8 blocks, aligned in the group) in
    /// `[from, to)`: `grab_block()`'s `memscan()` (which now searches
    /// through `GroupView::free_octet`; this one is the tests' check).
    #[cfg(test)]
    fn free_octet(&self, from: u64, to: u64) -> Option<u64> {
        let pg = self.per_group;
        let to = to.min(self.blocks);
        let mut b = from;
        while b < to {
            let g = self.group_of(b);
            let gs = g * pg;
            if self.full(g) {
                b = gs + pg;
                continue;
            }
            let words = self.groups.get(g).map(|x| &x.words[..]);
            if let Some(found) = free_octet_in(gs, pg, b, to, |w| self.word_of(words, g, w)) {
                return found;
            }
            b = gs + pg;
        }
        None
    }
    /// Set or clear `[b, b + n)`, group by group.
    fn mark(&mut self, b: u64, n: u64, used: bool) {
        let pg = self.per_group;
        let end = b + n;
        let mut at = b;
        while at < end {
            let g = self.group_of(at);
            let gs = g * pg;
            let stop = end.min(gs + pg);
            let x = self.group_mut(g);
            let mut i = at - gs;
            while gs + i < stop {
                let w = i / 64;
                let hi = (stop - gs - w * 64).min(64);
                let m = bits(i % 64, hi);
                if used {
                    debug_assert_eq!(x.words[w as usize] & m, 0, "block allocated twice");
                    x.words[w as usize] |= m;
                } else {
                    debug_assert_eq!(x.words[w as usize] & m, m, "freeing a free block");
                    x.words[w as usize] &= !m;
                }
                i = (w + 1) * 64;
            }
            let k = stop - at;
            if used {
                x.free -= k;
                // Blocks before `at` were used already: the run extends them.
                if at <= x.low && x.low < stop {
                    x.low = stop;
                }
            } else {
                x.free += k;
                x.low = x.low.min(at);
            }
            at = stop;
        }
    }
    /// Mark `[b, b + n)` used (every block free).
    pub fn take(&mut self, b: u64, n: u64) {
        self.mark(b, n, true);
        self.used += n;
    }
    /// `take` for `[b, b + n)` inside group `g`, made at `made[at]`
    /// (`GroupView::made`: the search found it, so the take need not look
    /// it up again), `n` at most 64 (a new Ext2 block and its
    /// preallocation): at most two words' bits, where `mark`'s walk over
    /// groups and words was an eighth of a step.
    fn take_in_made(&mut self, at: usize, g: u64, b: u64, n: u64) {
        let gs = g * self.per_group;
        debug_assert!(n <= 64 && gs <= b && b + n <= gs + self.per_group);
        debug_assert_eq!(self.groups.index(g), Some(at));
        let x = &mut self.groups.made[at];
        let i = b - gs;
        let (w, lo) = ((i / 64) as usize, i % 64);
        let m = bits(lo, (lo + n).min(64));
        debug_assert_eq!(x.words[w] & m, 0, "block allocated twice");
        x.words[w] |= m;
        if lo + n > 64 {
            let m = bits(0, lo + n - 64);
            debug_assert_eq!(x.words[w + 1] & m, 0, "block allocated twice");
            x.words[w + 1] |= m;
        }
        x.free -= n;
        // As `mark`: a run from the frontier moves it.
        if b <= x.low && x.low < b + n {
            x.low = b + n;
        }
        self.used += n;
    }
    /// Mark `[b, b + n)` free again (all used).
    pub fn free(&mut self, b: u64, n: u64) {
        self.mark(b, n, false);
        self.used -= n;
    }
    /// Blocks in use (group metadata not counted).
    pub fn used_blocks(&self) -> u64 {
        self.used
    }
}

/// One group's bitmap as `grab_block()` reads it: the words (None: as
/// made first, as `take` would make it) and whether the group is full,
/// found once. Blocks passed in lie in the group and on the volume.
struct GroupView<'a> {
    map: &'a Bitmap,
    /// The group's first block (its metadata's).
    base: u64,
    words: &'a [u64],
    full: bool,
    /// Every block before it is used (`Group::low`).
    low: u64,
    /// Its place in `Groups::made`.
    made: usize,
}

impl<'a> GroupView<'a> {
    /// Group `g`, made already (`Bitmap::made_at`): the tests' view.
    #[cfg(test)]
    fn new(map: &'a Bitmap, g: u64) -> GroupView<'a> {
        let made = map
            .groups
            .index(g)
            .expect("a group is made before it is viewed");
        GroupView::at(map, g, made)
    }
    /// Group `g`, made at `made[at]`.
    #[inline]
    fn at(map: &'a Bitmap, g: u64, at: usize) -> GroupView<'a> {
        let x = &map.groups.made[at];
        GroupView {
            map,
            made: at,
            base: g * map.per_group,
            words: &x.words[..],
            full: x.free == 0,
            low: x.low,
        }
    }
    /// Its bitmap made, a word is read without asking whether the group
    /// is made (an Ext2 search reads several a call).
    #[inline(always)]
    fn word(&self, w: u64) -> u64 {
        self.words[w as usize]
    }
    #[inline(always)]
    fn is_free(&self, b: u64) -> bool {
        let i = b - self.base;
        self.word(i / 64) & (1 << (i % 64)) == 0
    }
    /// The first of the free blocks that run up to `q` (not below `gs`):
    /// `while q > gs && is_free(q - 1) { q -= 1 }`, a word at a time.
    fn back_over_free(&self, mut q: u64, gs: u64) -> u64 {
        while q > gs {
            let i = q - 1 - self.base;
            let b = i % 64;
            // Bit b of the word at the top: its leading zeros are the free
            // blocks from q - 1 down, past b + 1 only the shift's own.
            let free = ((self.word(i / 64) << (63 - b)).leading_zeros() as u64).min(b + 1);
            q = q.saturating_sub(free).max(gs);
            if free <= b {
                break;
            }
        }
        q
    }
    /// `Bitmap::free_run` for `b` in the group and `to` at most its end:
    /// the free blocks from `b` on, before `to` (none if `b` is used).
    fn free_run(&self, b: u64, to: u64) -> u64 {
        if b >= to || !self.is_free(b) {
            return 0;
        }
        let mut i = b + 1 - self.base;
        while self.base + i < to {
            let w = i / 64;
            let x = self.word(w) & !bits(0, i % 64);
            if x != 0 {
                let at = self.base + w * 64 + x.trailing_zeros() as u64;
                return at.min(to) - b;
            }
            i = (w + 1) * 64;
        }
        to - b
    }
    /// `Bitmap::next_free` for `[from, to)` inside the group.
    fn next_free(&self, from: u64, to: u64) -> Option<u64> {
        let from = from.max(self.low);
        if self.full || from >= to {
            return None;
        }
        let mut i = from - self.base;
        while self.base + i < to {
            let w = i / 64;
            let x = !self.word(w) & !bits(0, i % 64);
            if x != 0 {
                let at = self.base + w * 64 + x.trailing_zeros() as u64;
                return (at < to).then_some(at);
            }
            i = (w + 1) * 64;
        }
        None
    }
    /// `Bitmap::free_octet` for `[from, to)` inside the group (an octet
    /// that starts before `low` holds a used block).
    fn free_octet(&self, from: u64, to: u64) -> Option<u64> {
        let from = from.max(self.low);
        let pg = self.map.per_group;
        if self.full || from >= to {
            return None;
        }
        free_octet_in(self.base, pg, from, to, |w| self.word(w)).flatten()
    }
}

/// One file's allocation state (`ext2_inode_info` / `ext3_block_alloc_info`).
#[derive(Debug, Clone, Default)]
struct ExtFile {
    /// `ext2_find_near()`'s goal for the first block.
    home: u64,
    /// Block after the last allocated (`i_next_alloc_goal` + 1).
    next_goal: Option<u64>,
    /// Data blocks allocated, and metadata blocks still owed before the next.
    data: u64,
    meta_owed: u64,
    /// The data block whose indirect blocks `meta_owed` counts.
    meta_for: Option<u64>,
    /// `[a, c)` with `c = next_meta(a)`: no block in `(a, c)` needs an
    /// indirect block and `next_meta` is `c` for all of `[a, c)`, so
    /// `place()` asks `meta_before` and `next_meta` once per indirect
    /// block (every 1,024 blocks at 4 KiB), not once per run.
    plain: (u64, u64),
    meta: u64,
    /// Ext2: `i_prealloc_block`, `i_prealloc_count`.
    pre: (u64, u64),
    /// Ext3: the reservation window `[start, end)`, its goal size, hits.
    rsv: Option<(u64, u64)>,
    rsv_goal: u64,
    rsv_hit: u64,
}

/// Metadata blocks `ext2_alloc_branch()` allocates before data block `i`.
fn meta_before(i: u64, p: u64) -> u64 {
    const DIRECT: u64 = 12;
    if i < DIRECT {
        0
    } else if i == DIRECT {
        1
    } else if i < DIRECT + p {
        0
    } else if i == DIRECT + p {
        2
    } else if i < DIRECT + p + p * p {
        u64::from(multiple_of(i - DIRECT - p, p))
    } else if i == DIRECT + p + p * p {
        3
    } else {
        let j = i - DIRECT - p - p * p;
        u64::from(multiple_of(j, p)) + u64::from(multiple_of(j, p * p))
    }
}

/// `x.is_multiple_of(p)`, a mask where `p` is a power of two (pointers
/// per indirect block are, for every block size fsio takes): `place()`
/// asks once per run an Ext2 lay-down places, and a 64-bit division was
/// most of that.
#[inline]
fn multiple_of(x: u64, p: u64) -> bool {
    if p.is_power_of_two() {
        x & (p - 1) == 0
    } else {
        x.is_multiple_of(p)
    }
}

/// Ext2 or Ext3 free space and its files.
#[derive(Debug, Clone)]
pub struct ExtAlloc {
    pub fs: FsKind,
    pub map: Bitmap,
    files: Vec<ExtFile>,
    /// Ext3's reservation windows: start -> (end, file).
    rsv: BTreeMap<u64, (u64, usize)>,
    /// Pointers per indirect block.
    per_ind: u64,
}

impl ExtAlloc {
    /// An empty filesystem of `bytes` in blocks of `block` bytes.
    pub fn new(fs: FsKind, bytes: u64, block: u64) -> ExtAlloc {
        ExtAlloc {
            fs,
            map: Bitmap::new(bytes / block, block),
            files: Vec::new(),
            rsv: BTreeMap::new(),
            per_ind: block / 4,
        }
    }

    /// A new file created by process `pid` in a directory of group
    /// `dir_group`: its inode goes there (`find_group_other()`), its
    /// first block aims at the pid's colour of that group.
    pub fn create(&mut self, dir_group: u64, pid: u64) -> usize {
        let g = dir_group % self.map.groups().max(1);
        let home = (g * self.map.per_group + (pid % 16) * (self.map.per_group / 16))
            .min(self.map.blocks.saturating_sub(1));
        self.files.push(ExtFile {
            home,
            rsv_goal: EXT3_DEFAULT_RESERVE_BLOCKS,
            ..ExtFile::default()
        });
        self.files.len() - 1
    }

    /// Metadata blocks file `f` holds (indirect blocks).
    pub fn meta_blocks(&self, f: usize) -> u64 {
        self.files[f].meta
    }

    /// File `f`'s next blocks, up to `want` data blocks: first what its own
    /// preallocation or window still gives, then (if that falls short)
    /// one shared allocation (an `ext2_new_block()` or a new reservation
    /// window) and what it gives. `out(block, n)` for each run of data
    /// blocks. Returns the data blocks allocated.
    pub fn step(
        &mut self,
        f: usize,
        want: u64,
        mut out: impl FnMut(u64, u64),
    ) -> Result<u64, Enospc> {
        // An Ext2 file with nothing preallocated (every call from a
        // lay-down: it steps when its preallocation runs out) has nothing
        // private to give; the call was a tenth of a step.
        let empty = self.fs != FsKind::Ext3 && self.files[f].pre.1 == 0;
        let done = if empty {
            0
        } else {
            self.private(f, want, &mut out)
        };
        if done >= want {
            return Ok(done);
        }
        let goal = self.files[f].next_goal.unwrap_or(self.files[f].home);
        if self.fs == FsKind::Ext3 {
            self.new_window(f, goal)?;
            return Ok(done + self.private(f, want - done, &mut out));
        }
        self.discard(f);
        // The new block and the free blocks after it that it preallocates,
        // taken on the bitmap in one go (its own bit does not change what
        // follows it).
        let (b, n, made) = self.ext2_new_block(goal)?;
        // Inside b's group: the preallocation stops at its end.
        self.map.take_in_made(made, self.map.group_of(b), b, 1 + n);
        // The block, then its preallocation: the next ext2_alloc_block()
        // calls hit while the goal is the block after the last (the
        // block's own `place` leaves the goal at `b + 1`, the preallocation's
        // first), so both are laid in one `place` (`step_reference` in the
        // tests: the block and its preallocation placed apart, through
        // `private`).
        let placed = self.place(f, b, 1 + n, want - done, &mut out);
        let used = self.files[f].next_goal.map_or(0, |g| g - (b + 1));
        self.files[f].pre = (b + 1 + used, n - used);
        Ok(done + placed)
    }

    /// What file `f`'s own preallocation or window gives, run by run.
    fn private(&mut self, f: usize, want: u64, out: &mut impl FnMut(u64, u64)) -> u64 {
        let mut done = 0;
        while done < want {
            let x = &self.files[f];
            let goal = x.next_goal.unwrap_or(x.home);
            let (b, n) = match self.fs {
                FsKind::Ext3 => {
                    let Some((s, e)) = x.rsv else { break };
                    if goal >= e {
                        break;
                    }
                    let Some(b) = self.map.next_free(goal.max(s), e) else {
                        break;
                    };
                    (b, self.map.free_run(b, e))
                }
                _ => {
                    let (pb, pc) = x.pre;
                    // ext2_alloc_block(): a hit while the goal matches.
                    if pc == 0 || (goal != pb && goal + 1 != pb) {
                        break;
                    }
                    (pb, pc)
                }
            };
            done += self.place(f, b, n, want - done, out);
            let used = self.files[f].next_goal.map_or(0, |g| g - b);
            match self.fs {
                FsKind::Ext3 => {
                    self.map.take(b, used);
                    self.files[f].rsv_hit += used;
                }
                _ => {
                    let x = &mut self.files[f];
                    x.pre = (x.pre.0 + used, x.pre.1 - used);
                }
            }
            if used < n || used == 0 {
                break;
            }
        }
        done
    }

    /// Lay blocks `[b, b + n)` in file `f`'s next slots (its owed indirect
    /// blocks first), at most `want` data blocks; returns data blocks
    /// placed. Sets the file's next goal past the last block used.
    fn place(
        &mut self,
        f: usize,
        b: u64,
        n: u64,
        want: u64,
        out: &mut impl FnMut(u64, u64),
    ) -> u64 {
        let p = self.per_ind;
        let x = &mut self.files[f];
        let mut at = b;
        let end = b + n;
        let mut data = 0;
        while at < end && data < want {
            if x.meta_for != Some(x.data) {
                let (a, c) = x.plain;
                x.meta_owed = if a < x.data && x.data < c {
                    0
                } else {
                    meta_before(x.data, p)
                };
                x.meta_for = Some(x.data);
            }
            if x.meta_owed > 0 {
                let k = x.meta_owed.min(end - at);
                x.meta_owed -= k;
                x.meta += k;
                at += k;
                continue;
            }
            // Data up to the next block that needs an indirect block.
            if !(x.plain.0 <= x.data && x.data < x.plain.1) {
                x.plain = (x.data, next_meta(x.data, p));
            }
            let k = (end - at).min(want - data).min(x.plain.1 - x.data);
            out(at, k);
            x.data += k;
            data += k;
            at += k;
        }
        x.next_goal = Some(at);
        data
    }

    /// `ext2_discard_prealloc()`: give back what file `f` preallocated.
    pub fn discard(&mut self, f: usize) {
        let (pb, pc) = std::mem::take(&mut self.files[f].pre);
        // Nearly always empty: the file used its preallocation up.
        if pc > 0 {
            self.map.free(pb, pc);
        }
    }

    /// Close every file: preallocations freed, windows dropped.
    pub fn close_all(&mut self) {
        for f in 0..self.files.len() {
            self.discard(f);
            self.files[f].rsv = None;
        }
        self.rsv.clear();
    }

    /// `ext2_new_block()`: a free block near `goal` (the caller takes it).
    /// Also the free blocks after it it preallocates (up to
    /// `EXT2_PREALLOC_BLOCKS`, inside its group), read from the same view.
    /// The group's place in `Groups::made` comes back too.
    fn ext2_new_block(&mut self, goal: u64) -> Result<(u64, u64, usize), Enospc> {
        let g0 = self.map.group_of(goal.min(self.map.blocks - 1));
        // Taken on the bitmap by the caller, with its preallocation. The
        // goal's group first (nearly always the answer), then the others
        // in turn from the next, with no goal.
        if let Some(v) = self.grab_block(g0, Some(goal)) {
            return Ok(v);
        }
        let groups = self.map.groups();
        for i in 1..groups {
            if let Some(v) = self.grab_block((g0 + i) % groups, None) {
                return Ok(v);
            }
        }
        Err(Enospc)
    }

    /// `grab_block()` in group `g`. Every search it makes stays inside the
    /// group, so the group's bitmap is looked up once here and its words
    /// read directly (`GroupView`): through `Bitmap`'s searches each test
    /// found the group again, and an Ext2 lay-down makes one
    /// `grab_block()` per `ext2_new_block()`, about a million for 32 files
    /// of 1 GiB. Same answers as the searches it replaces (the view's
    /// checks in `the_bitmap_answers_as_the_run_list_did`).
    /// A group with data blocks is made before it is searched: a search
    /// there never fails (a group not yet touched is all free), so the
    /// take that follows would make it anyway, with the same bits.
    fn grab_block(&mut self, g: u64, goal: Option<u64>) -> Option<(u64, u64, usize)> {
        let (gs, ge) = self.map.group_range(g);
        if gs >= ge {
            return None;
        }
        let at = self.map.made_at(g);
        let v = GroupView::at(&self.map, g, at);
        let b = Self::grab_in(&v, gs, ge, goal)?;
        let n = v.free_run(b + 1, (b + 1 + EXT2_PREALLOC_BLOCKS).min(ge));
        Some((b, n, v.made))
    }

    /// `grab_block()`'s search in the group `v` views, `[gs, ge)` its data.
    #[inline(always)]
    fn grab_in(v: &GroupView, gs: u64, ge: u64, goal: Option<u64>) -> Option<u64> {
        let goal = goal.map(|x| x.clamp(gs, ge - 1));
        if let Some(x) = goal {
            if v.is_free(x) {
                return Some(x);
            }
            // The next free block up to the goal's 64-block boundary.
            let k = v.base + (x - v.base).div_ceil(64) * 64;
            if let Some(b) = v.next_free(x, k.min(ge)) {
                return Some(b);
            }
        }
        let from = goal.unwrap_or(gs);
        let from = v.base + (from - v.base) / 8 * 8;
        if let Some(q) = v.free_octet(from.max(gs), ge) {
            // Back up over the free blocks before it (at most 7).
            return Some(v.back_over_free(q, gs));
        }
        v.next_free(goal.unwrap_or(gs), ge)
    }

    /// `alloc_new_reservation()` for file `f` at `goal` (then groups after).
    fn new_window(&mut self, f: usize, goal: u64) -> Result<(), Enospc> {
        let x = &mut self.files[f];
        if let Some((s, e)) = x.rsv.take() {
            // More than half of the old window used: double the next one.
            if x.rsv_hit > (e - s) / 2 {
                x.rsv_goal = (x.rsv_goal * 2).min(EXT3_MAX_RESERVE_BLOCKS);
            }
            self.rsv.remove(&s);
        }
        let size = self.files[f].rsv_goal;
        let groups = self.map.groups();
        let g0 = self.map.group_of(goal.min(self.map.blocks - 1));
        for i in 0..groups {
            let g = (g0 + i) % groups;
            let (gs, ge) = self.map.group_range(g);
            let mut cur = if i == 0 { goal.max(gs) } else { gs };
            // find_next_reservable_window(), then the bitmap's first free
            // block must lie inside it, else search again from there.
            loop {
                cur = self.reservable(cur, size);
                if cur >= ge {
                    break;
                }
                let Some(free) = self.map.next_free(cur, ge) else {
                    break;
                };
                if free < cur + size {
                    self.rsv.insert(cur, (cur + size, f));
                    let x = &mut self.files[f];
                    x.rsv = Some((cur, cur + size));
                    x.rsv_hit = 0;
                    return Ok(());
                }
                cur = free;
            }
        }
        Err(Enospc)
    }

    /// First `s >= cur` with `[s, s + size)` clear of every window.
    fn reservable(&self, mut cur: u64, size: u64) -> u64 {
        if let Some((_, &(e, _))) = self.rsv.range(..=cur).next_back() {
            cur = cur.max(e);
        }
        for (&s, &(e, _)) in self.rsv.range(cur..) {
            if cur + size <= s {
                break;
            }
            cur = cur.max(e);
        }
        cur
    }
}

/// The first data-block index after `i` that needs indirect blocks.
fn next_meta(i: u64, p: u64) -> u64 {
    const DIRECT: u64 = 12;
    let j = i + 1;
    if j <= DIRECT {
        return DIRECT;
    }
    if j <= DIRECT + p {
        return DIRECT + p;
    }
    let k = j - DIRECT - p;
    // Rounded up to a multiple of p (a mask for a power of two, as above).
    let up = if p.is_power_of_two() {
        (k + p - 1) & !(p - 1)
    } else {
        k.div_ceil(p) * p
    };
    DIRECT + p + up
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_take_free_and_search() {
        let mut m = Bitmap::new(1 << 20, 4096);
        assert_eq!(m.per_group, 32768);
        let gs = m.meta;
        assert!(!m.is_free(0));
        assert_eq!(m.next_free(0, 1 << 20), Some(gs));
        m.take(gs, 10);
        m.take(gs + 10, 5);
        assert_eq!(m.used_blocks(), 15);
        assert_eq!(m.next_free(gs, 1 << 20), Some(gs + 15));
        m.free(gs + 3, 2);
        assert_eq!(m.next_free(gs, 1 << 20), Some(gs + 3));
        assert_eq!(m.free_run(gs + 3, 1 << 20), 2);
        assert_eq!(m.used_blocks(), 13);
        // Inside a used run (or the group's metadata) there is no free run:
        // preallocating after a block whose neighbour another file holds
        // once took that neighbour twice.
        assert_eq!(m.free_run(gs + 6, 1 << 20), 0);
        assert_eq!(m.free_run(0, 1 << 20), 0);
    }

    /// The bitmap as it was, merged runs of used blocks in a tree: the
    /// bit-per-block bitmap must answer every query as it does.
    struct Runs {
        used: BTreeMap<u64, u64>,
        m: Bitmap,
    }

    impl Runs {
        fn covering(&self, b: u64) -> Option<(u64, u64)> {
            self.used
                .range(..=b)
                .next_back()
                .filter(|&(_, &e)| e > b)
                .map(|(&s, &e)| (s, e))
        }
        fn in_meta(&self, b: u64) -> bool {
            b % self.m.per_group < self.m.meta
        }
        fn is_free(&self, b: u64) -> bool {
            b < self.m.blocks && !self.in_meta(b) && self.covering(b).is_none()
        }
        fn next_free(&self, mut from: u64, to: u64) -> Option<u64> {
            let to = to.min(self.m.blocks);
            loop {
                if self.in_meta(from) {
                    from = from / self.m.per_group * self.m.per_group + self.m.meta;
                }
                if from >= to {
                    return None;
                }
                match self.covering(from) {
                    Some((_, e)) => from = e,
                    None => return Some(from),
                }
            }
        }
        fn free_run(&self, b: u64, to: u64) -> u64 {
            if !self.is_free(b) {
                return 0;
            }
            let end = to.min(self.m.group_range(self.m.group_of(b)).1).min(
                self.used
                    .range(b + 1..)
                    .next()
                    .map_or(u64::MAX, |(&s, _)| s),
            );
            end.saturating_sub(b)
        }
        fn free_octet(&self, from: u64, to: u64) -> Option<u64> {
            let gs = self.m.group_of(from) * self.m.per_group;
            let mut p = from;
            loop {
                let a = self.next_free(p, to)?;
                let run = self.free_run(a, to);
                let q = gs + (a - gs).div_ceil(8) * 8;
                if q + 8 <= a + run {
                    return Some(q);
                }
                p = a + run.max(1);
            }
        }
        fn take(&mut self, b: u64, n: u64) {
            let mut s = b;
            let mut e = b + n;
            if let Some((ps, pe)) = self.used.range(..b).next_back().map(|(&s, &e)| (s, e)) {
                if pe == b {
                    s = ps;
                    self.used.remove(&ps);
                }
            }
            if let Some(ne) = self.used.get(&e).copied() {
                self.used.remove(&e);
                e = ne;
            }
            self.used.insert(s, e);
        }
        fn free(&mut self, b: u64, n: u64) {
            let (s, e) = self.covering(b).expect("used");
            self.used.remove(&s);
            if s < b {
                self.used.insert(s, b);
            }
            if b + n < e {
                self.used.insert(b + n, e);
            }
        }
    }

    /// The tests' random draws: xorshift64 from `x`, below `n`.
    fn xorshift(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    #[test]
    fn the_bitmap_answers_as_the_run_list_did() {
        // 512-byte blocks: groups of 4,096 with 34 metadata blocks; a
        // volume that ends inside a word of its last group.
        let blocks = 3 * 4096 + 1000 + 37;
        let mut m = Bitmap::new(blocks, 512);
        let mut r = Runs {
            used: BTreeMap::new(),
            m: m.clone(),
        };
        let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut taken: Vec<(u64, u64)> = Vec::new();
        for step in 0..40_000 {
            let a = rnd(blocks + 100);
            let span = if rnd(4) == 0 { 9000 } else { 300 };
            let to = a + rnd(span);
            assert_eq!(m.is_free(a), r.is_free(a), "step {step}: is_free({a})");
            assert_eq!(
                m.next_free(a, to),
                r.next_free(a, to),
                "step {step}: next_free({a}, {to})"
            );
            assert_eq!(
                m.free_run(a, to),
                r.free_run(a, to),
                "step {step}: free_run({a}, {to})"
            );
            if a < blocks {
                let g = m.group_of(a);
                let ge = m.group_range(g).1;
                assert_eq!(
                    m.free_octet(a, ge),
                    r.free_octet(a, ge),
                    "step {step}: octet({a})"
                );
                // grab_block()'s view of the group (made first, as
                // grab_block() makes it) answers as the bitmap.
                let mut made = m.clone();
                made.made_at(g);
                let v = GroupView::new(&made, g);
                assert_eq!(v.is_free(a), m.is_free(a), "step {step}: view is_free({a})");
                assert_eq!(
                    v.next_free(a, to.min(ge)),
                    m.next_free(a, to.min(ge)),
                    "step {step}: view next_free({a}, {to})"
                );
                assert_eq!(
                    v.free_octet(a, ge),
                    m.free_octet(a, ge),
                    "step {step}: view octet({a})"
                );
                assert_eq!(
                    v.free_run(a, to.min(ge)),
                    m.free_run(a, to.min(ge)),
                    "step {step}: view free_run({a}, {to})"
                );
                let gs = m.group_range(g).0;
                if a >= gs {
                    let mut q = a;
                    while q > gs && m.is_free(q - 1) {
                        q -= 1;
                    }
                    assert_eq!(v.back_over_free(a, gs), q, "step {step}: back({a})");
                }
            }
            if rnd(3) > 0 || taken.is_empty() {
                // Take a free run's head, as the allocator does.
                if let Some(b) = m.next_free(a, blocks) {
                    let want = 1 + rnd(80);
                    let n = m.free_run(b, b + want).max(1);
                    m.take(b, n);
                    r.take(b, n);
                    taken.push((b, n));
                }
            } else {
                // Free the middle of a run taken before; its ends stay.
                let (b0, n0) = taken.swap_remove(rnd(taken.len() as u64) as usize);
                let (b, n) = (b0 + n0 / 3, n0 - n0 / 3 - n0 / 4);
                if n > 0 {
                    m.free(b, n);
                    r.free(b, n);
                    for (s, k) in [(b0, b - b0), (b + n, b0 + n0 - b - n)] {
                        if k > 0 {
                            taken.push((s, k));
                        }
                    }
                } else {
                    taken.push((b0, n0));
                }
            }
            let want: u64 = r.used.iter().map(|(s, e)| e - s).sum();
            assert_eq!(m.used_blocks(), want, "step {step}");
        }
    }

    /// The masks for a power of two give the divisions' answers.
    #[test]
    fn indirect_block_positions_by_mask_and_by_division_agree() {
        for p in [256u64, 1000, 1024, 4096] {
            for i in (0..3 * p * p).step_by(7).chain(p * p..p * p + 3 * p) {
                assert_eq!(multiple_of(i, p), i % p == 0, "{i} {p}");
                let j = i + 1;
                if j > 12 + p {
                    let k = j - 12 - p;
                    assert_eq!(next_meta(i, p), 12 + p + k.div_ceil(p) * p, "{i} {p}");
                }
            }
        }
    }

    #[test]
    fn metadata_comes_where_the_block_map_needs_it() {
        let p = 1024;
        assert_eq!(meta_before(11, p), 0);
        assert_eq!(meta_before(12, p), 1);
        assert_eq!(meta_before(12 + p, p), 2);
        assert_eq!(meta_before(12 + 2 * p, p), 1);
        assert_eq!(next_meta(0, p), 12);
        assert_eq!(next_meta(12, p), 12 + p);
        assert_eq!(next_meta(12 + p, p), 12 + 2 * p);
    }

    #[test]
    fn ext2_takes_its_preallocation_then_the_goal() {
        let mut a = ExtAlloc::new(FsKind::Ext2, 1 << 32, 4096);
        let f = a.create(0, 0);
        let mut runs = Vec::new();
        let got = a.step(f, 100, |b, n| runs.push((b, n))).unwrap();
        // One block plus its 8 preallocated.
        assert_eq!(got, 9);
        let got2 = a.step(f, 100, |b, n| runs.push((b, n))).unwrap();
        assert_eq!(got2, 8, "the indirect block took the 12th slot");
        assert_eq!(a.meta_blocks(f), 1);
        assert_eq!(runs[0].0, a.map.meta);
    }

    #[test]
    fn every_block_is_allocated_once_and_files_cover_their_size() {
        for fs in [FsKind::Ext2, FsKind::Ext3] {
            let mut a = ExtAlloc::new(fs, 1 << 33, 4096);
            let files: Vec<usize> = (0..5).map(|i| a.create(0, 7 + i)).collect();
            let want = 3000u64;
            let mut got = vec![0u64; 5];
            let mut runs: Vec<(u64, u64)> = Vec::new();
            // Writers take turns in an irregular order.
            let mut turn = 0usize;
            while got.iter().any(|&g| g < want) {
                turn = (turn + 3) % 5;
                let f = files[turn];
                if got[turn] >= want {
                    continue;
                }
                got[turn] += a
                    .step(f, want - got[turn], |b, n| runs.push((b, n)))
                    .unwrap();
            }
            a.close_all();
            assert!(got.iter().all(|&g| g == want), "{fs:?}: {got:?}");
            let data: u64 = runs.iter().map(|r| r.1).sum();
            let meta: u64 = files.iter().map(|&f| a.meta_blocks(f)).sum();
            assert_eq!(data, 5 * want);
            // What the bitmap holds is exactly the files' data and indirect blocks.
            assert_eq!(a.map.used_blocks(), data + meta, "{fs:?}");
            runs.sort();
            for w in runs.windows(2) {
                assert!(w[0].0 + w[0].1 <= w[1].0, "{fs:?}: {w:?} overlap");
            }
        }
    }

    /// `ExtAlloc::step` as it was: the new block placed alone, its
    /// preallocation found again and placed through `private`.
    fn step_reference(
        a: &mut ExtAlloc,
        f: usize,
        want: u64,
        out: &mut impl FnMut(u64, u64),
    ) -> Result<u64, Enospc> {
        let mut done = a.private(f, want, out);
        if done >= want {
            return Ok(done);
        }
        let goal = a.files[f].next_goal.unwrap_or(a.files[f].home);
        match a.fs {
            FsKind::Ext3 => a.new_window(f, goal)?,
            _ => {
                a.discard(f);
                let (b, _, _) = a.ext2_new_block(goal)?;
                done += a.place(f, b, 1, want - done, out);
                let g = a.map.group_of(b);
                let (_, ge) = a.map.group_range(g);
                let n = GroupView::new(&a.map, g)
                    .free_run(b + 1, (b + 1 + EXT2_PREALLOC_BLOCKS).min(ge));
                a.map.take(b, 1 + n);
                a.files[f].pre = (b + 1, n);
            }
        }
        Ok(done + a.private(f, want - done, out))
    }

    /// Runs appended as `FileLayout::push` does: contiguous ones merge.
    fn push_run(runs: &mut Vec<(u64, u64)>, b: u64, n: u64) {
        match runs.last_mut() {
            Some(last) if last.0 + last.1 == b => last.1 += n,
            _ => runs.push((b, n)),
        }
    }

    /// A file's state as the allocator's next decisions read it:
    /// `meta_for` only names the data block whose `meta_owed` is known,
    /// and with nothing owed for another block than the next, `place`
    /// works it out again whatever the memo says.
    fn state(x: &ExtFile) -> String {
        let mut x = x.clone();
        if x.meta_owed == 0 && x.meta_for != Some(x.data) {
            x.meta_for = None;
        }
        format!("{x:?}")
    }

    #[test]
    fn one_step_lays_the_files_down_as_the_reference_does() {
        let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
        for round in 0..60 {
            let fs = if round % 4 == 3 {
                FsKind::Ext3
            } else {
                FsKind::Ext2
            };
            // 1 KiB blocks: an indirect block every 256 (one inside most
            // preallocations); a volume of a few groups, some rounds full.
            let block = if round % 2 == 0 { 1024 } else { 4096 };
            let groups = 2 + rnd(3);
            let mut a = ExtAlloc::new(fs, groups * 8 * block * block, block);
            let mut r = a.clone();
            let nf = 1 + rnd(8) as usize;
            for i in 0..nf {
                let (dir, pid) = (rnd(groups), rnd(1 << 15));
                assert_eq!(a.create(dir, pid), i);
                r.create(dir, pid);
            }
            let mut runs_a = vec![Vec::new(); nf];
            let mut runs_r = vec![Vec::new(); nf];
            let mut live: Vec<usize> = (0..nf).collect();
            let mut step = 0;
            while !live.is_empty() && step < 6000 {
                step += 1;
                let f = live[rnd(live.len() as u64) as usize];
                // Mostly what a lay-down asks (the rest of the file), at
                // times a few blocks, so a preallocation is left over.
                let want = if rnd(3) == 0 {
                    1 + rnd(12)
                } else {
                    1 + rnd(20_000)
                };
                let (ra, rr) = (&mut runs_a[f], &mut runs_r[f]);
                let got_a = a.step(f, want, |b, n| push_run(ra, b, n));
                let got_r = step_reference(&mut r, f, want, &mut |b, n| push_run(rr, b, n));
                assert_eq!(got_a, got_r, "round {round} step {step} file {f}");
                assert_eq!(runs_a[f], runs_r[f], "round {round} step {step} file {f}");
                assert_eq!(
                    state(&a.files[f]),
                    state(&r.files[f]),
                    "round {round} step {step} file {f}"
                );
                assert_eq!(a.map.used_blocks(), r.map.used_blocks());
                if got_a.is_err() {
                    live.retain(|&g| g != f);
                }
                if rnd(50) == 0 {
                    a.discard(f);
                    r.discard(f);
                }
            }
            // Every group's bits, free count and frontier as the reference's
            // (`take_in_made` against `take`).
            assert_eq!(
                format!("{:?}", a.map),
                format!("{:?}", r.map),
                "round {round}"
            );
            a.close_all();
            r.close_all();
            assert_eq!(a.map.used_blocks(), r.map.used_blocks(), "round {round}");
        }
    }

    #[test]
    fn ext3_windows_double_while_filled() {
        let mut a = ExtAlloc::new(FsKind::Ext3, 1 << 34, 4096);
        let f = a.create(0, 0);
        let mut sizes = Vec::new();
        for _ in 0..10 {
            sizes.push(a.step(f, 1 << 20, |_, _| {}).unwrap());
        }
        assert_eq!(sizes[0], 8);
        assert!(sizes.windows(2).skip(2).all(|w| w[1] >= w[0]));
        assert!(sizes[9] >= 1000, "{sizes:?}");
    }
}
