//! Parallel `dd` writers laying a file set down into an empty filesystem
//! (F10), and where that puts each file's blocks (F1, F2).
//!
//! Writer timing, all from the seed: each `dd` starts a little after the
//! previous one (fork and exec from a shell loop); it copies
//! `ratelimit_pages` pages at the CPU's copy rate and then, the dirty
//! limit being reached, sleeps in `balance_dirty_pages()` for a draw whose
//! mean lets the writers together go no faster than the disks. No random
//! factor touches a result: the seed only moves these moments.
//!
//! - Ext2/Ext3 allocate in the write path: a file takes a window of blocks
//!   (Ext2's preallocation, 8 blocks; Ext3's reservation window, from 8
//!   blocks doubling while the file fills it, up to
//!   `EXT3_MAX_RESERVE_BLOCKS`) when it has used the last, at its goal if
//!   free, else at the frontier. Which file asks next depends on the
//!   writers' timing, so files interleave differently seed by seed. An
//!   indirect block is allocated inline every `block / 4` data blocks.
//! - XFS allocates at writeback: `pdflush` walks the dirty inodes in the
//!   order they were first dirtied and writes up to `MAX_WRITEBACK_PAGES`
//!   pages of each per pass, allocating one extent for them, aligned to
//!   the stripe unit when it cannot extend the file's last.

use super::layout::{Enospc, FileLayout, VolumeAlloc, XfsAlloc};
use super::FsKind;
use crate::engine::{stream, EventQueue, Time};
use rand::RngExt;

/// Mainline reference values (2.6.15), kept as parameters of the lay-down.
pub const EXT2_PREALLOC_BLOCKS: u64 = 8;
pub const EXT3_DEFAULT_RESERVE_BLOCKS: u64 = 8;
pub const EXT3_MAX_RESERVE_BLOCKS: u64 = 1027;
pub const MAX_WRITEBACK_PAGES: u64 = 1024;
pub const RATELIMIT_PAGES: u64 = 32;
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
    /// One writer's copy rate, bytes/ns.
    pub copy_bytes_per_ns: f64,
    /// What the disks take, bytes/ns: the throttled writers' total rate.
    pub drain_bytes_per_ns: f64,
    pub capacity: u64,
    pub seed: u64,
}

impl LayDown {
    pub fn run(&self) -> Result<Vec<FileLayout>, Enospc> {
        match self.fs {
            FsKind::Xfs => self.xfs(&mut XfsAlloc::new(self.capacity, self.stripe_unit)),
            FsKind::Ext2 | FsKind::Ext3 => self.ext(&mut VolumeAlloc::new(self.capacity)),
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

    fn xfs(&self, vol: &mut XfsAlloc) -> Result<Vec<FileLayout>, Enospc> {
        let n = self.writers as usize;
        let mut order: Vec<usize> = (0..n).collect();
        let starts = self.start_times();
        order.sort_by_key(|&w| (starts[w], w));
        let mut files = vec![FileLayout::default(); n];
        let chunk = MAX_WRITEBACK_PAGES * self.page;
        let mut left = true;
        while left {
            left = false;
            for &w in &order {
                let f = &files[w];
                let k = chunk.min(self.file_bytes - f.bytes);
                if k == 0 {
                    continue;
                }
                left = true;
                let v = vol.alloc(w, f, k, self.stripe_unit)?;
                files[w].push(v, k);
            }
        }
        Ok(files)
    }

    fn ext(&self, vol: &mut VolumeAlloc) -> Result<Vec<FileLayout>, Enospc> {
        let n = self.writers as usize;
        let starts = self.start_times();
        let burst = (RATELIMIT_PAGES * self.page).min(self.file_bytes).max(1);
        let burst_ns = burst as f64 / self.copy_bytes_per_ns;
        // Writers together go at the disks' rate: each sleeps, on average,
        // the time the others' bursts take to drain beyond its own.
        let cycle_ns = (n as f64 * burst as f64 / self.drain_bytes_per_ns).max(burst_ns);
        let mean_sleep = (cycle_ns - burst_ns).max(0.0);
        let mut rng = stream(self.seed, "balance-dirty-pages", 0);
        let per_meta = self.block / 4;
        let first_window = match self.fs {
            FsKind::Ext3 => EXT3_DEFAULT_RESERVE_BLOCKS,
            _ => EXT2_PREALLOC_BLOCKS,
        };

        struct W {
            file: FileLayout,
            /// Next free byte of the current window and bytes left in it.
            win_at: u64,
            win_left: u64,
            win_blocks: u64,
            data_blocks: u64,
            next_meta_at: u64,
            written: u64,
            start: f64,
            /// Burst boundaries passed so far, and the sleeps they cost.
            slept: u64,
            sleep_ns: f64,
        }
        let mut ws: Vec<W> = (0..n)
            .map(|i| W {
                file: FileLayout::default(),
                win_at: 0,
                win_left: 0,
                win_blocks: first_window,
                data_blocks: 0,
                next_meta_at: 12,
                written: 0,
                start: starts[i] as f64,
                slept: 0,
                sleep_ns: 0.0,
            })
            .collect();
        // One event per window a writer needs: the moment its copy reaches
        // the first block past its last window.
        let mut q: EventQueue<usize> = EventQueue::with_capacity(n);
        for (i, w) in ws.iter().enumerate() {
            q.push(Time(w.start as u64), i)
                .expect("queue starts at zero");
        }
        while let Some((_, i)) = q.pop() {
            let w = &mut ws[i];
            let window = w.win_blocks * self.block;
            // At the goal (just past the last window) if no one took it,
            // else at the frontier.
            let goal = (w.written > 0).then_some(w.win_at);
            w.win_at = vol.alloc(goal, window, 1)?;
            w.win_left = window;
            while w.win_left > 0 && w.written < self.file_bytes {
                if w.data_blocks == w.next_meta_at {
                    // An indirect block takes this slot (ext2_alloc_branch).
                    w.next_meta_at += per_meta;
                } else {
                    let k = self.block.min(self.file_bytes - w.written);
                    w.file.push(w.win_at, k);
                    w.written += k;
                    w.data_blocks += 1;
                }
                w.win_at += self.block;
                w.win_left -= self.block;
            }
            if w.written >= self.file_bytes {
                continue;
            }
            if self.fs == FsKind::Ext3 {
                // The file used its whole window sequentially: it grows.
                w.win_blocks = (w.win_blocks * 2).min(EXT3_MAX_RESERVE_BLOCKS);
            }
            // The writer reaches byte `written` after copying it and after
            // one balance_dirty_pages() sleep per burst boundary passed.
            let boundaries = w.written / burst;
            while w.slept < boundaries {
                w.sleep_ns += rng.random_range(0.0..=2.0 * mean_sleep);
                w.slept += 1;
            }
            let t = w.start + w.written as f64 / self.copy_bytes_per_ns + w.sleep_ns;
            q.push(Time(t as u64), i)
                .expect("a writer's clock only moves forward");
        }
        Ok(ws.into_iter().map(|w| w.file).collect())
    }
}
