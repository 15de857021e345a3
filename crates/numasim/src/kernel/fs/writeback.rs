//! The writeback walk over a filesystem's dirty files (`fs/fs-writeback.c`,
//! 2.6's `pdflush` and `sync_writeback_pages()`, reclaim's `pageout()`), as
//! state a driver steps: each file is written from the front, in
//! file-offset order, a pass at a time: pdflush's `MAX_WRITEBACK_PAGES`,
//! a throttled writer's `sync_chunk` while the writers owe their share, or
//! a reclaim cluster while reclaim owes its share (file after file, as the
//! LRU tail holds the writers' pages in the order they were dirtied). With
//! nothing left to pdflush, reclaim's clusters are the passes. Each pass
//! goes out in I/Os of at most the write clustering's size. The walk
//! knows the files by size only: where their bytes lie is the
//! filesystem's (XFS allocates them as the walk reaches them,
//! `layout::Delalloc`).

/// Mainline `BIO_MAX_PAGES`.
pub const BIO_MAX_PAGES: u64 = 256;
/// Buffer heads one clustered write carries on the old path (choice, docs/io.md).
pub const BH_MAX_BLOCKS: u64 = 64;

/// Where writeback is in a set of dirty files.
#[derive(Debug, Clone)]
pub struct WritebackWalk {
    /// Bytes written back of each file, from its front.
    done: Vec<u64>,
    /// Each file's dirty bytes.
    sizes: Vec<u64>,
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
        sizes: &[u64],
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
            done: vec![0; sizes.len()],
            sizes: sizes.to_vec(),
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
            total: sizes.iter().sum(),
        }
    }

    /// Whether dirty bytes are left.
    pub fn dirty(&self) -> bool {
        self.written < self.total
    }

    /// The next I/O, (file, offset, bytes); None when no file has dirty data.
    pub fn next_io(&mut self) -> Option<(usize, u64, u64)> {
        let files = &self.sizes;
        if files.is_empty() {
            return None;
        }
        // Find a file with dirty data.
        let mut tries = 0;
        while self.done[self.cur] >= files[self.cur] && tries < files.len() {
            self.cur = (self.cur + 1) % files.len();
            self.pass_left = 0;
            tries += 1;
        }
        if self.done[self.cur] >= files[self.cur] {
            return None;
        }
        if self.pass_left == 0 {
            // A chunk of 0 is a writer (or reclaim) that owes nothing.
            self.pass_left = if self.sync_chunk > 0 && self.writer_debt >= self.sync_chunk as f64 {
                self.writer_debt -= self.sync_chunk as f64;
                self.sync_chunk
            } else if self.reclaim_chunk > 0 && self.reclaim_debt >= self.reclaim_chunk as f64 {
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
        let len = self.cluster.min(self.pass_left).min(files[f] - off);
        self.done[f] += len;
        self.pass_left -= len;
        if self.pass_left == 0 {
            self.cur = (self.cur + 1) % self.sizes.len();
        }
        self.written += len;
        Some((f, off, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a walk to the end: bytes written per file, in the order taken.
    fn drain(w: &mut WritebackWalk, files: usize) -> (Vec<u64>, Vec<(usize, u64, u64)>) {
        let mut done = vec![0u64; files];
        let mut ios = Vec::new();
        while let Some((f, off, len)) = w.next_io() {
            // Each file is written from its front, once.
            assert_eq!(off, done[f], "file {f}");
            assert!(len > 0);
            done[f] += len;
            ios.push((f, off, len));
        }
        (done, ios)
    }

    #[test]
    fn every_dirty_byte_is_written_once_whoever_writes_it() {
        let page = 16384;
        let sizes = [64 << 20, 3 * page + 5, 0, 17 << 20];
        for (writers, reclaim) in [(0.0, 0.0), (0.3, 0.0), (0.0, 0.4), (0.2, 0.5), (0.0, 1.0)] {
            let mut w = WritebackWalk::new(
                &sizes,
                1024 * page,
                256 * page,
                page,
                writers,
                384 * page,
                reclaim,
                32 * page,
            );
            let (done, ios) = drain(&mut w, sizes.len());
            assert_eq!(done, sizes, "{writers} {reclaim}");
            assert!(!w.dirty());
            assert!(ios.iter().all(|&(_, _, l)| l <= 256 * page));
        }
        assert!(WritebackWalk::new(&[], 1, 1, 1, 0.0, 1, 0.0, 1)
            .next_io()
            .is_none());
    }

    #[test]
    fn reclaim_clusters_take_the_files_in_turn_as_the_lru_holds_them() {
        // Everything written from the tails, 32 pages a cluster: file
        // after file, each cluster one I/O.
        let page = 16384;
        let mut w = WritebackWalk::new(
            &[1 << 20; 3],
            1024 * page,
            256 * page,
            page,
            0.0,
            0,
            1.0,
            32 * page,
        );
        let (_, ios) = drain(&mut w, 3);
        let files: Vec<usize> = ios.iter().take(6).map(|&(f, _, _)| f).collect();
        assert_eq!(files, vec![0, 1, 2, 0, 1, 2]);
        assert!(ios.iter().all(|&(_, _, l)| l == 32 * page));
    }
}
