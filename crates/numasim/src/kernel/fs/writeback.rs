//! The writeback walk over a filesystem's dirty files (`fs/fs-writeback.c`,
//! 2.6's `pdflush` and `sync_writeback_pages()`, reclaim's `pageout()`), as
//! state a driver steps: each file is written from the front, in
//! file-offset order, a pass at a time: pdflush's `MAX_WRITEBACK_PAGES`,
//! a throttled writer's `sync_chunk` while the writers owe their share, or
//! a reclaim cluster while reclaim owes its share (file after file, as the
//! LRU tail holds the writers' pages in the order they were dirtied). With
//! nothing left to pdflush, reclaim's clusters are the passes. Each pass
//! goes out in I/Os of at most the write clustering's size.

use super::layout::FileLayout;

/// Mainline `BIO_MAX_PAGES`.
pub const BIO_MAX_PAGES: u64 = 256;
/// Buffer heads one clustered write carries on the old path (choice, docs/io.md).
pub const BH_MAX_BLOCKS: u64 = 64;

/// Where writeback is in a set of dirty files.
#[derive(Debug, Clone)]
pub struct WritebackWalk {
    /// Bytes written back of each file, from its front.
    done: Vec<u64>,
    cur: usize,
    /// Bytes left of the current pass.
    pass_left: u64,
    writer_debt: f64,
    reclaim_debt: f64,
    /// The ordinary pass and what each owes the writers and reclaim.
    base: u64,
    writer_owed: f64,
    reclaim_owed: f64,
    sync_chunk: u64,
    reclaim_chunk: u64,
    /// Largest I/O.
    cluster: u64,
    written: u64,
    total: u64,
}

impl WritebackWalk {
    /// `writer_share` of the bytes go by throttled writers `sync_chunk` a
    /// pass, `reclaim_share` by reclaim `reclaim_chunk` a pass, the rest
    /// by pdflush `chunk` a pass; I/Os of at most `cluster` bytes.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        files: &[FileLayout],
        chunk: u64,
        cluster: u64,
        page: u64,
        writer_share: f64,
        sync_chunk: u64,
        reclaim_share: f64,
        reclaim_chunk: u64,
    ) -> Self {
        let pdflush_share = 1.0 - writer_share - reclaim_share;
        let (base, base_share) = if pdflush_share > 1e-9 || reclaim_share <= 0.0 {
            (chunk, pdflush_share)
        } else {
            (reclaim_chunk.max(page), reclaim_share)
        };
        let owed = |share: f64| {
            if base_share > 1e-9 {
                base as f64 * share / base_share
            } else {
                0.0
            }
        };
        let reclaim_owed = if base == chunk { reclaim_share } else { 0.0 };
        WritebackWalk {
            done: vec![0; files.len()],
            cur: 0,
            pass_left: 0,
            writer_debt: 0.0,
            reclaim_debt: 0.0,
            base,
            writer_owed: owed(writer_share),
            reclaim_owed: owed(reclaim_owed),
            sync_chunk,
            reclaim_chunk,
            cluster,
            written: 0,
            total: files.iter().map(|f| f.bytes).sum(),
        }
    }

    /// Whether dirty bytes are left.
    pub fn dirty(&self) -> bool {
        self.written < self.total
    }

    /// The next I/O, (file, offset, bytes); None when no file has dirty data.
    pub fn next_io(&mut self, files: &[FileLayout]) -> Option<(usize, u64, u64)> {
        // Find a file with dirty data.
        let mut tries = 0;
        while self.done[self.cur] >= files[self.cur].bytes && tries < files.len() {
            self.cur = (self.cur + 1) % files.len();
            self.pass_left = 0;
            tries += 1;
        }
        if self.done[self.cur] >= files[self.cur].bytes {
            return None;
        }
        if self.pass_left == 0 {
            self.pass_left = if self.writer_debt >= self.sync_chunk as f64 {
                self.writer_debt -= self.sync_chunk as f64;
                self.sync_chunk
            } else if self.reclaim_debt >= self.reclaim_chunk as f64 {
                self.reclaim_debt -= self.reclaim_chunk as f64;
                self.reclaim_chunk
            } else {
                self.writer_debt += self.writer_owed;
                self.reclaim_debt += self.reclaim_owed;
                self.base
            };
        }
        let f = self.cur;
        let off = self.done[f];
        let len = self.cluster.min(self.pass_left).min(files[f].bytes - off);
        self.done[f] += len;
        self.pass_left -= len;
        if self.pass_left == 0 {
            self.cur = (self.cur + 1) % files.len();
        }
        self.written += len;
        Some((f, off, len))
    }
}
