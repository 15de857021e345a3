//! Parallel `dd` writers laying a file set down into an empty filesystem
//! (F10), and where that puts each file's blocks (F1, F2).
//!
//! Writer timing, all from the seed: each `dd` starts a little after the
//! previous one (fork and exec from a shell loop) and copies at the CPU's
//! copy rate. Nothing throttles it while the dirty and under-writeback
//! pages stay under the dirty threshold (`balance_dirty_pages()` breaks
//! out at once): the writers fill memory at their copy rate, pdflush
//! draining at the disks' from the background threshold on. Once the
//! threshold is reached (`dirty_exceeded`), a writer checks every 8
//! pages (`balance_dirty_pages_ratelimited()`) and each check sleeps it
//! for a draw whose mean lets the writers together go no faster than the
//! disks. No random factor touches a result: the seed only moves these
//! moments.
//!
//! - Ext2/Ext3 allocate in the write path, a block at a time, as
//!   `balloc.rs` describes: each file aims at its pid's colour of the
//!   directory's block group, then just past its last block; Ext2 takes 8
//!   blocks of preallocation with each `ext2_new_block()`, Ext3 a
//!   reservation window that doubles while filled. A writer's next shared
//!   allocation happens when its copy reaches the block its preallocation
//!   or window no longer covers: which file asks next depends on the
//!   writers' timing, so files interleave differently seed by seed.
//!   Indirect blocks are allocated inline (`ext2_alloc_branch()`).
//! - XFS allocates at writeback (`layout::Delalloc`): `pdflush` walks the
//!   dirty inodes in the order they were first dirtied and writes up to
//!   `MAX_WRITEBACK_PAGES` pages of each per pass (`WritebackWalk`); where
//!   a pass reaches unallocated data it allocates the whole delalloc
//!   extent, from the file's allocated end through what the writer has
//!   dirtied by then: the writers, throttled at the dirty threshold, hold
//!   `dirty_bytes` between them. An extent extends the file's last when
//!   it can, else goes to the nearest stripe-aligned free space; a file's
//!   first extent takes the next AG of the rotor (`layout::XfsAlloc`), so
//!   files take the AGs in the order pdflush first writes them.

use super::balloc::ExtAlloc;
use super::layout::{Delalloc, Enospc, FileLayout, XfsAlloc};
use super::writeback::WritebackWalk;
use super::FsKind;
use crate::engine::{stream, EventQueue, Time};
use rand::RngExt;

/// Mainline reference values (2.6.15), kept as parameters of the lay-down.
pub const MAX_WRITEBACK_PAGES: u64 = 1024;
/// Pages a writer dirties between two checks once the dirty threshold
/// is exceeded (`balance_dirty_pages_ratelimited()`: `if
/// (dirty_exceeded) ratelimit = 8`, mm/page-writeback.c); under it the
/// checks come every `ratelimit_pages` and never sleep.
pub const DIRTY_EXCEEDED_RATELIMIT_PAGES: u64 = 8;
/// Mean gap between two `dd` starts from a shell loop (choice, docs/io.md).
pub const SPAWN_GAP_NS: u64 = 2_000_000;

#[derive(Debug, Clone, Copy)]
pub struct LayDown {
    pub fs: FsKind,
    pub writers: u64,
    pub file_bytes: u64,
    pub block: u64,
    pub page: u64,
    pub stripe_unit: u64,
    /// Stripe unit × disks: mkfs.xfs keeps AG sizes off multiples of it.
    pub stripe_width: u64,
    /// One writer's copy rate, bytes/ns.
    pub copy_bytes_per_ns: f64,
    /// What the disks take, bytes/ns: the throttled writers' total rate.
    pub drain_bytes_per_ns: f64,
    /// Dirty bytes the throttled writers hold between them when writeback
    /// reaches their pages (the dirty threshold): XFS's delalloc extents
    /// run that far ahead of pdflush. Ext2/Ext3: the writers are throttled
    /// once the dirty and under-writeback bytes reach it (0: from the
    /// start, as in a steady state at the threshold; `u64::MAX`: never,
    /// as where the disks keep up with the writers).
    pub dirty_bytes: u64,
    /// The background threshold: pdflush starts draining at the disks'
    /// rate once the dirty bytes pass it.
    pub background_bytes: u64,
    pub capacity: u64,
    pub seed: u64,
}

impl LayDown {
    pub fn run(&self) -> Result<Vec<FileLayout>, Enospc> {
        match self.fs {
            FsKind::Xfs => self.xfs(XfsAlloc::new(
                self.capacity,
                self.stripe_unit,
                self.stripe_width,
            )),
            FsKind::Ext2 | FsKind::Ext3 => {
                self.ext(&mut ExtAlloc::new(self.fs, self.capacity, self.block))
            }
        }
    }

    /// When each writer first dirties its file: the order of `dd` starts.
    fn start_times(&self) -> Vec<u64> {
        let mut rng = stream(self.seed, "dd-spawn", 0);
        let mut t = 0;
        (0..self.writers)
            .map(|_| {
                t += rng.random_range(0..2 * SPAWN_GAP_NS);
                t
            })
            .collect()
    }

    fn xfs(&self, vol: XfsAlloc) -> Result<Vec<FileLayout>, Enospc> {
        let n = self.writers as usize;
        let mut order: Vec<usize> = (0..n).collect();
        let starts = self.start_times();
        order.sort_by_key(|&w| (starts[w], w));
        let sizes = vec![self.file_bytes; n];
        let mut d = Delalloc::new(vol, sizes.clone(), self.stripe_unit);
        // pdflush's passes over the inodes in dirtied order (the walk's
        // file i is the i-th writer to start).
        let chunk = MAX_WRITEBACK_PAGES * self.page;
        let mut walk = WritebackWalk::new(&sizes, chunk, chunk, self.page, 0.0, 0, 0.0, 0);
        // The dirty pages writeback finds ahead of it: the dirty threshold
        // where the writers reach it (throttled, they hold it), else the
        // background threshold that pdflush's background writeout holds
        // them near (it writes until they are under it).
        let held = if self.throttled_from_ns().is_finite() {
            self.dirty_bytes
        } else {
            self.background_bytes.min(self.dirty_bytes)
        };
        let backlog = held / self.writers.max(1);
        while let Some((i, off, len)) = walk.next_io() {
            d.writeback(order[i], off, len, off.saturating_add(backlog))?;
        }
        Ok(d.files)
    }

    /// When the writers, all copying from the start, bring the dirty and
    /// under-writeback bytes to the dirty threshold, ns (infinite where
    /// they never do: the disks keep up, or the files end first). Up to
    /// the background threshold nothing drains; past it pdflush writes at
    /// the disks' rate.
    pub fn throttled_from_ns(&self) -> f64 {
        let fill = self.writers as f64 * self.copy_bytes_per_ns;
        if self.dirty_bytes == 0 || fill <= 0.0 {
            return 0.0;
        }
        let bg = self.background_bytes.min(self.dirty_bytes) as f64;
        let net = fill - self.drain_bytes_per_ns;
        if net <= 0.0 {
            return f64::INFINITY;
        }
        let t = bg / fill + (self.dirty_bytes as f64 - bg) / net;
        // Every file written before then: nobody is ever throttled.
        if t * self.copy_bytes_per_ns >= self.file_bytes as f64 {
            f64::INFINITY
        } else {
            t
        }
    }

    fn ext(&self, vol: &mut ExtAlloc) -> Result<Vec<FileLayout>, Enospc> {
        let n = self.writers as usize;
        let starts = self.start_times();
        let throttled_from = self.throttled_from_ns();
        let burst = (DIRTY_EXCEEDED_RATELIMIT_PAGES * self.page)
            .min(self.file_bytes)
            .max(1);
        let burst_ns = burst as f64 / self.copy_bytes_per_ns;
        // Writers together go at the disks' rate: each sleeps, on average,
        // the time the others' bursts take to drain beyond its own.
        let cycle_ns = (n as f64 * burst as f64 / self.drain_bytes_per_ns).max(burst_ns);
        let mean_sleep = (cycle_ns - burst_ns).max(0.0);
        let mut rng = stream(self.seed, "balance-dirty-pages", 0);
        // The dd processes' pids: consecutive from a shell loop, after
        // whatever the machine forked before (the seed's draw).
        let pid0 = stream(self.seed, "dd-pid", 0).random_range(0..1u64 << 15);
        let blocks = self.file_bytes.div_ceil(self.block);

        struct W {
            id: usize,
            file: FileLayout,
            blocks: u64,
            written: u64,
            start: f64,
            /// Burst boundaries passed so far, and the sleeps they cost.
            slept: u64,
            sleep_ns: f64,
        }
        let mut ws: Vec<W> = (0..n)
            .map(|i| W {
                // Every file in the test's directory (group 0).
                id: vol.create(0, pid0 + i as u64),
                file: FileLayout::default(),
                blocks: 0,
                written: 0,
                start: starts[i] as f64,
                slept: 0,
                sleep_ns: 0.0,
            })
            .collect();
        // One event per shared allocation a writer makes: the moment its
        // copy reaches the first block its preallocation or reservation
        // window no longer covers (ext2_get_block() -> ext2_new_block(),
        // or ext3's alloc_new_reservation()).
        let mut q: EventQueue<usize> = EventQueue::with_capacity(n);
        for (i, w) in ws.iter().enumerate() {
            q.push(Time(w.start as u64), i)
                .expect("queue starts at zero");
        }
        let (block, file_bytes) = (self.block, self.file_bytes);
        // The writer handled stays on top of the heap and its next
        // allocation replaces it (one sift, where pop then push took two;
        // same order, `EventQueue::peek_pending`).
        while let Some((_, i)) = q.peek_pending() {
            let w = &mut ws[i];
            let (file, written) = (&mut w.file, &mut w.written);
            let got = vol.step(w.id, blocks - w.blocks, |b, k| {
                let len = (k * block).min(file_bytes - *written);
                file.push(b * block, len);
                *written += len;
            })?;
            w.blocks += got;
            if w.blocks >= blocks {
                q.discard_top();
                continue;
            }
            // The writer reaches byte `written` after copying it and after
            // one balance_dirty_pages() sleep per burst boundary it passed
            // over the dirty threshold; under it the check sleeps nothing.
            let boundaries = w.written / burst;
            while w.slept < boundaries {
                w.slept += 1;
                let at = w.start + (w.slept * burst) as f64 / self.copy_bytes_per_ns + w.sleep_ns;
                if at >= throttled_from {
                    w.sleep_ns += rng.random_range(0.0..=2.0 * mean_sleep);
                }
            }
            let t = w.start + w.written as f64 / self.copy_bytes_per_ns + w.sleep_ns;
            q.replace_top(Time(t as u64), i)
                .expect("a writer's clock only moves forward");
        }
        vol.close_all();
        Ok(ws.into_iter().map(|w| w.file).collect())
    }
}
