//! Sequential readahead as 2.6.15's `page_cache_readahead()`
//! (`mm/readahead.c`) sizes it, kept with the filesystems' I/O paths that
//! use it: a *current* window and an *ahead* window. The first read of a
//! file opens a current window of `get_init_ra_size()` (the request
//! rounded up to a power of two, ×4 if at most 1/32 of the maximum, ×2 if
//! at most 1/4, else the maximum) and an ahead window after it; each time
//! the reader crosses into the ahead window it becomes current and a new
//! ahead window of `get_next_ra_size()` (×4 below 1/16 of the maximum, else
//! ×2, never above it) is issued after it. A non-sequential read turns
//! readahead off for that read (`ra_off()`) and starts the ramp again.
//! So no window is larger than the maximum (`ra_pages`), and at most two
//! are outstanding. The on-disk layout does not reset the window: a
//! discontiguity splits the window's I/O into requests (`mpage_readpages()`
//! ends a bio there), it does not shrink the window.

/// One open file's readahead state, in bytes (page multiples).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readahead {
    pub max: u64,
    pub page: u64,
    /// Current window `[start, start + size)`; size 0 before the first read.
    pub start: u64,
    pub size: u64,
    pub ahead_start: u64,
    pub ahead_size: u64,
    /// File offset after the last page read (`prev_page + 1`).
    next: u64,
}

impl Readahead {
    pub fn new(max: u64, page: u64) -> Readahead {
        let page = page.max(1);
        Readahead {
            max: max.max(page) / page * page,
            page,
            start: 0,
            size: 0,
            ahead_start: 0,
            ahead_size: 0,
            next: 0,
        }
    }

    /// The reader has read every byte before `to` in order (it consumes
    /// what arrived window by window, its read() calls in between).
    pub fn sequential_to(&mut self, to: u64) {
        self.next = to;
    }

    /// `get_init_ra_size()`.
    pub fn init_size(&self, req: u64) -> u64 {
        let pages = req.div_ceil(self.page).max(1).next_power_of_two();
        let max = self.max / self.page;
        let n = if pages <= max / 32 {
            pages * 4
        } else if pages <= max / 4 {
            pages * 2
        } else {
            max
        };
        n.min(max) * self.page
    }

    /// `get_next_ra_size()`.
    pub fn next_size(&self, cur: u64) -> u64 {
        let n = if cur < self.max / 16 {
            4 * cur
        } else {
            2 * cur
        };
        n.min(self.max)
    }

    /// A `read()` of `[off, off + req)` on a file of `size` bytes: the file
    /// ranges to read ahead now, in order (empty where the windows already
    /// cover it), each clipped at end of file.
    pub fn read(&mut self, off: u64, req: u64, size: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        self.read_into(off, req, size, &mut out);
        out
    }

    /// `read`, the ranges appended to `out` (a reader calls it after every
    /// copy, and nearly every call opens nothing: no list to build).
    #[inline]
    pub fn read_into(&mut self, off: u64, req: u64, size: u64, out: &mut impl Extend<(u64, u64)>) {
        // Nearly every call: a sequential read() short of the ahead window
        // opens nothing (the general path below would only move `next`);
        // inline, it spares the buffered reader a call per chunk copied.
        let next = off + req.max(1);
        if off == self.next && self.size != 0 && next <= self.ahead_start {
            self.next = next;
            return;
        }
        self.read_into_slow(off, req, size, out);
    }

    /// `read_into` where the read may open a window.
    #[inline(never)]
    fn read_into_slow(&mut self, off: u64, req: u64, size: u64, out: &mut impl Extend<(u64, u64)>) {
        // A window clipped at end of file; none past it.
        let clip = |s: u64, l: u64| (s < size).then(|| (s, l.min(size - s)));
        let sequential = off == self.next;
        self.next = off + req.max(1);
        if !sequential {
            // ra_off(): read just what was asked, start the ramp again.
            *self = Readahead {
                next: self.next,
                ..Readahead::new(self.max, self.page)
            };
            out.extend(clip(off, req));
            return;
        }
        if self.size == 0 {
            self.start = off;
            self.size = self.init_size(req);
            out.extend(clip(self.start, self.size));
            // The reader's next read() follows at once: the ahead window.
            self.ahead_start = self.start + self.size;
            self.ahead_size = self.next_size(self.size);
            out.extend(clip(self.ahead_start, self.ahead_size));
            return;
        }
        // Crossed into the ahead window: shift and issue the next one.
        while self.next > self.ahead_start && self.ahead_start < size {
            self.start = self.ahead_start;
            self.size = self.ahead_size;
            self.ahead_start = self.start + self.size;
            self.ahead_size = self.next_size(self.size);
            out.extend(clip(self.ahead_start, self.ahead_size));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn windows_ramp_up_to_the_maximum_and_never_past_it() {
        let mut ra = Readahead::new(64 * MIB, 16384);
        let mut issued = Vec::new();
        let mut off = 0;
        while off < 512 * MIB {
            let w = ra.read(off, MIB, 512 * MIB);
            for &(s, l) in &w {
                assert!(l <= 64 * MIB, "window {l} above the maximum");
                // Never more than two windows ahead of the reader.
                assert!(s + l <= off + MIB + 2 * 64 * MIB);
            }
            issued.extend(w);
            off += MIB;
        }
        let sizes: Vec<u64> = issued.iter().map(|w| w.1 / MIB).collect();
        assert_eq!(&sizes[..6], &[4, 8, 16, 32, 64, 64]);
        // Windows tile the file exactly, in order.
        let mut at = 0;
        for (s, l) in issued {
            assert_eq!(s, at);
            at += l;
        }
        assert_eq!(at, 512 * MIB);
    }

    #[test]
    fn a_random_read_resets_the_ramp() {
        let mut ra = Readahead::new(64 * MIB, 16384);
        ra.read(0, MIB, 1 << 40);
        ra.read(MIB, MIB, 1 << 40);
        let w = ra.read(900 * MIB, MIB, 1 << 40);
        assert_eq!(w, vec![(900 * MIB, MIB)]);
        let w = ra.read(901 * MIB, MIB, 1 << 40);
        assert_eq!(w[0], (901 * MIB, 4 * MIB));
    }
}
