//! Where a file's data lies on the volume: a list of runs, coalesced, and
//! the allocator's free-space frontier. The volume fills from the start;
//! a file asks for space near its own last block (the "goal") and gets it
//! there if nobody has taken it, else at the frontier.

/// A file's data, in file order: (volume byte offset, length) runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileLayout {
    pub runs: Vec<(u64, u64)>,
    pub bytes: u64,
}

impl FileLayout {
    /// Volume byte after the file's last data byte (its allocation goal).
    pub fn goal(&self) -> Option<u64> {
        self.runs.last().map(|&(v, l)| v + l)
    }
    /// Append `len` bytes at volume offset `v`, merging with the last run
    /// when contiguous.
    pub fn push(&mut self, v: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.bytes += len;
        if let Some(last) = self.runs.last_mut() {
            if last.0 + last.1 == v {
                last.1 += len;
                return;
            }
        }
        self.runs.push((v, len));
    }
    /// The runs covering file range `[off, off + len)`: `f(volume offset, len)`.
    pub fn map(&self, off: u64, len: u64, mut f: impl FnMut(u64, u64)) {
        let mut pos = 0u64;
        let end = off + len;
        for &(v, l) in &self.runs {
            if pos >= end {
                break;
            }
            let (a, b) = (pos.max(off), (pos + l).min(end));
            if a < b {
                f(v + (a - pos), b - a);
            }
            pos += l;
        }
    }
}

/// Free space: everything past the frontier (files are laid down into an
/// empty filesystem, as after the harness's mkfs/remount, F10).
#[derive(Debug, Clone)]
pub struct VolumeAlloc {
    pub frontier: u64,
    pub capacity: u64,
}

/// The volume is full: reported as a result, not a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enospc;

impl VolumeAlloc {
    pub fn new(capacity: u64) -> VolumeAlloc {
        VolumeAlloc {
            frontier: 0,
            capacity,
        }
    }
    /// `len` bytes for a file whose goal is `goal`: there if free, else at
    /// the frontier rounded up to `align` (XFS aligns new extents to the
    /// stripe unit; Ext2/3 do not: align 1).
    pub fn alloc(&mut self, goal: Option<u64>, len: u64, align: u64) -> Result<u64, Enospc> {
        let start = match goal {
            Some(g) if g == self.frontier => g,
            _ => self.frontier.div_ceil(align) * align,
        };
        let end = start.checked_add(len).ok_or(Enospc)?;
        if end > self.capacity {
            return Err(Enospc);
        }
        self.frontier = end;
        Ok(start)
    }
}

/// XFS free space: allocation groups of at most `XFS_AG_MAX_BYTES` (mkfs
/// makes as few as fit), each allocating from its own frontier. With the
/// 32-bit inode layout of the period, new files' data go to the AGs in turn
/// (`xfs_rotorstep` = 1), so each file lies in its own part of the volume.
#[derive(Debug, Clone)]
pub struct XfsAlloc {
    pub ags: Vec<VolumeAlloc>,
    pub ag_bytes: u64,
}

/// Largest XFS allocation group (mkfs.xfs: 1 TiB).
pub const XFS_AG_MAX_BYTES: u64 = 1 << 40;

impl XfsAlloc {
    pub fn new(capacity: u64, align: u64) -> XfsAlloc {
        let n = capacity.div_ceil(XFS_AG_MAX_BYTES).max(1);
        let ag_bytes = (capacity / n) / align.max(1) * align.max(1);
        XfsAlloc {
            ags: (0..n).map(|_| VolumeAlloc::new(ag_bytes)).collect(),
            ag_bytes,
        }
    }
    /// `len` bytes for file number `file` (its AG by the rotor).
    pub fn alloc(
        &mut self,
        file: usize,
        f: &FileLayout,
        len: u64,
        align: u64,
    ) -> Result<u64, Enospc> {
        let ag = file % self.ags.len();
        let base = ag as u64 * self.ag_bytes;
        let goal = f.goal().and_then(|g| g.checked_sub(base));
        self.ags[ag].alloc(goal, len, align).map(|v| v + base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_covers_the_range_exactly() {
        let mut f = FileLayout::default();
        f.push(0, 100);
        f.push(500, 50);
        f.push(550, 50);
        assert_eq!(f.runs.len(), 2);
        let mut got = Vec::new();
        f.map(90, 30, |v, l| got.push((v, l)));
        assert_eq!(got, vec![(90, 10), (500, 20)]);
    }

    #[test]
    fn enospc_when_the_volume_is_full() {
        let mut a = VolumeAlloc::new(1000);
        assert!(a.alloc(None, 600, 1).is_ok());
        assert_eq!(a.alloc(None, 600, 1), Err(Enospc));
    }
}
