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

/// XFS free space as `mkfs.xfs` lays it out and 2.6.15 allocates it.
///
/// Geometry (xfsprogs of the period, `mkfs/xfs_mkfs.c`):
/// `calc_default_ag_geometry()` makes `dblocks >> 5` AGs' worth of blocks
/// per AG above 512 GiB (`>> 4` above 8 GiB, `>> 3` from 128 MiB; the
/// 1 TiB maximum from 32 TiB), `main()` rounds the AG size up to the stripe
/// unit and, when it is then a multiple of the stripe width, takes one
/// stripe unit off ("all AGs start on the same disk in the stripe.
/// Changing the AG size by one sunit will guarantee that this does not
/// happen"), so AG `k` starts `k` units before disk 0 of its stripe row.
/// Each AG opens with its headers and free-space btree roots; AG 0 holds
/// the root directory's inode chunk and AG `agcount / 2` the internal log,
/// each aligned to the stripe unit (`xfs_ialloc_ag_alloc()` with
/// `m_sinoalign`, mkfs's `fixup_internal_log_stripe()`).
///
/// Allocation (2.6.15 `fs/xfs/xfs_bmap.c` `xfs_bmap_alloc()`,
/// `fs/xfs/xfs_alloc.c` `xfs_alloc_vextent()`): a file's first extent
/// (file offset 0, `XFS_ALLOC_INITIAL_USER_DATA`) on a filesystem mounted
/// with 32-bit inodes (the default; on this volume inode numbers would
/// pass 32 bits) goes to AG `m_agfrotor % agcount`, and the rotor steps by
/// one (`xfs_rotorstep` = 1) per such extent, so files take the AGs in the
/// order their first extents are allocated; it is aligned to the stripe
/// unit (`args.alignment = m_dalign` at offset 0 with `aeof`). Later
/// extents try the block after the file's last (`xfs_bmap_adjacent()`,
/// `XFS_ALLOCTYPE_THIS_BNO`), else the nearest free space in that AG,
/// stripe-aligned, else the next AGs in turn.
#[derive(Debug, Clone)]
pub struct XfsAlloc {
    pub ags: Vec<VolumeAlloc>,
    pub ag_bytes: u64,
    /// `m_agfrotor`: the AG of the next file's first extent.
    pub rotor: usize,
}

/// Largest XFS allocation group (mkfs.xfs: 1 TiB).
pub const XFS_AG_MAX_BYTES: u64 = 1 << 40;
/// Smallest XFS allocation group (`XFS_AG_MIN_BYTES`, 16 MiB).
pub const XFS_AG_MIN_BYTES: u64 = 1 << 24;
/// The block size the geometry is computed in (mkfs works in filesystem
/// blocks; 4 KiB, the experiments' default).
pub const XFS_GEOMETRY_BLOCK: u64 = 4096;
/// What opens every AG: superblock, AGF, AGI and AGFL in block 0, the
/// free-space and inode btree roots in blocks 1-3
/// (`XFS_PREALLOC_BLOCKS`), and the AGFL's initial free blocks (choice:
/// 4, `xfs_alloc_fix_freelist()` for one-level btrees).
pub const XFS_AG_HEADER_BYTES: u64 = 8 * XFS_GEOMETRY_BLOCK;
/// The root directory's inode chunk that mkfs allocates in AG 0: 64
/// inodes (`XFS_INODES_PER_CHUNK`) of 256 bytes.
pub const XFS_ROOT_CHUNK_BYTES: u64 = 64 * 256;
/// The internal log in AG `agcount / 2` (choice: 128 MiB, the period's
/// largest default log; any multiple of the stripe width leaves every
/// file's starting disk where it is).
pub const XFS_LOG_BYTES: u64 = 128 << 20;

impl XfsAlloc {
    /// The AGs `mkfs.xfs` makes on a volume of `capacity` bytes striped in
    /// units of `sunit` over a width of `swidth` bytes (0: no stripe).
    pub fn new(capacity: u64, sunit: u64, swidth: u64) -> XfsAlloc {
        let blk = XFS_GEOMETRY_BLOCK;
        let (agsize, agcount) = mkfs_ag_geometry(capacity / blk, sunit / blk, swidth / blk);
        let ag_bytes = agsize * blk;
        let dbytes = (capacity / blk).min(agsize * agcount) * blk;
        let mut ags: Vec<VolumeAlloc> = (0..agcount)
            .map(|k| {
                let mut a = VolumeAlloc::new(ag_bytes.min(dbytes - k * ag_bytes));
                a.frontier = XFS_AG_HEADER_BYTES.min(a.capacity);
                a
            })
            .collect();
        let align = sunit.max(1);
        // mkfs's own allocations; a volume too small for them simply has
        // less free space.
        if let Some(ag0) = ags.first_mut() {
            let _ = ag0.alloc(None, XFS_ROOT_CHUNK_BYTES, align);
        }
        if agcount > 1 {
            let _ = ags[(agcount / 2) as usize].alloc(None, XFS_LOG_BYTES, align);
        }
        XfsAlloc {
            ags,
            ag_bytes,
            rotor: 0,
        }
    }

    /// `len` bytes at the end of file `f`, aligned to `align` when they
    /// cannot follow its last extent.
    pub fn alloc(&mut self, f: &FileLayout, len: u64, align: u64) -> Result<u64, Enospc> {
        let n = self.ags.len();
        if n == 0 || self.ag_bytes == 0 {
            return Err(Enospc);
        }
        let (ag, goal) = match f.runs.last() {
            None => {
                // XFS_ALLOC_INITIAL_USER_DATA under 32-bit inodes.
                let ag = self.rotor % n;
                self.rotor = (self.rotor + 1) % n;
                (ag, None)
            }
            Some(&(v, l)) => {
                let ag = (((v + l - 1) / self.ag_bytes) as usize).min(n - 1);
                (ag, Some(v + l - ag as u64 * self.ag_bytes))
            }
        };
        // XFS_ALLOCTYPE_START_BNO: this AG first, then the others in turn.
        for i in 0..n {
            let a = (ag + i) % n;
            let g = if i == 0 { goal } else { None };
            if let Ok(v) = self.ags[a].alloc(g, len, align) {
                return Ok(v + a as u64 * self.ag_bytes);
            }
        }
        Err(Enospc)
    }
}

/// XFS delayed allocation at writeback (F1), as 2.6.15 does it: `write()`
/// only reserves space (`xfs_iomap_write_delay()`), and the blocks are
/// allocated when writeback first reaches a page of a delalloc extent,
/// whoever writes it: pdflush in inode order, a throttled writer in
/// `balance_dirty_pages()`, or reclaim in LRU order (`pageout()` ->
/// `xfs_vm_writepage()`; 2.6.15 refuses only a caller already inside a
/// transaction, `PFLAGS_TEST_FSTRANS()`, not kswapd). There
/// `xfs_page_state_convert()` maps the page with `BMAPI_ALLOCATE`;
/// `xfs_iomap()` looks the delalloc extent up whole (`XFS_BMAPI_ENTIRE`)
/// and `xfs_iomap_write_allocate()` allocates it from its start, the
/// file's allocated end, through what the writer has dirtied so far, in
/// one transaction, looping until the page is covered. So an extent is the
/// file's dirty backlog at the moment writeback reaches it, placed by
/// `XfsAlloc` (first extent by the AG rotor, later ones after the file's
/// last), and the order in which writeback reaches the files decides
/// which AG each takes.
#[derive(Debug, Clone)]
pub struct Delalloc {
    pub vol: XfsAlloc,
    /// The allocated part of each file, from its front.
    pub files: Vec<FileLayout>,
    /// Each file's size: what its writer dirties in all.
    pub sizes: Vec<u64>,
    /// Stripe unit: a new extent's alignment.
    pub align: u64,
    /// Allocation transactions made (extents allocated).
    pub allocations: u64,
}

impl Delalloc {
    pub fn new(vol: XfsAlloc, sizes: Vec<u64>, align: u64) -> Delalloc {
        Delalloc {
            vol,
            files: vec![FileLayout::default(); sizes.len()],
            sizes,
            align,
            allocations: 0,
        }
    }

    /// Writeback reaches file `f`'s bytes `[off, off + len)` while its
    /// writer has dirtied it up to `dirty_end`: allocate the delalloc
    /// extent those bytes sit on, if they are not yet allocated.
    pub fn writeback(
        &mut self,
        f: usize,
        off: u64,
        len: u64,
        dirty_end: u64,
    ) -> Result<(), Enospc> {
        let have = self.files[f].bytes;
        let need = (off + len).min(self.sizes[f]);
        if need <= have {
            return Ok(());
        }
        let end = dirty_end.clamp(need, self.sizes[f]);
        let v = self.vol.alloc(&self.files[f], end - have, self.align)?;
        self.files[f].push(v, end - have);
        self.allocations += 1;
        Ok(())
    }
}

/// (agsize, agcount) in blocks for `dblocks` data blocks, a stripe unit of
/// `su` and a width of `sw` blocks, as xfsprogs' `mkfs.xfs` of the period
/// computes them with no `-d agcount/agsize` given.
pub fn mkfs_ag_geometry(dblocks: u64, su: u64, sw: u64) -> (u64, u64) {
    let blk = XFS_GEOMETRY_BLOCK;
    let (mib, gib, tib) = ((1u64 << 20) / blk, (1u64 << 30) / blk, (1u64 << 40) / blk);
    let (max_ag, min_ag) = (XFS_AG_MAX_BYTES / blk, XFS_AG_MIN_BYTES / blk);
    if dblocks == 0 {
        return (0, 0);
    }
    // calc_default_ag_geometry()
    let mut agsize = if dblocks >= 32 * tib {
        max_ag
    } else if dblocks < 16 * mib {
        dblocks
    } else if dblocks < 128 * mib {
        16 * mib
    } else {
        let shift = if dblocks > 512 * gib {
            5
        } else if dblocks > 8 * gib {
            4
        } else {
            3
        };
        dblocks >> shift
    };
    let count = |a: u64| dblocks.div_ceil(a);
    // main(): the AG size on a stripe-unit boundary...
    if su > 0 && !agsize.is_multiple_of(su) {
        let up = agsize.div_ceil(su) * su;
        let a = if up > max_ag { agsize / su * su } else { up };
        if (min_ag..=max_ag).contains(&a) {
            agsize = a;
        }
    }
    // ...and not a multiple of the stripe width.
    if su > 0 && sw > 0 && agsize.is_multiple_of(sw) && count(agsize) > 1 {
        let mut a = agsize - su;
        if a < min_ag {
            a = agsize + su;
        }
        agsize = a;
    }
    let mut agcount = count(agsize);
    // A last AG under the minimum is dropped with its blocks.
    if agcount > 1 && !dblocks.is_multiple_of(agsize) && dblocks % agsize < min_ag {
        agcount -= 1;
    }
    (agsize, agcount)
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
    fn mkfs_geometry_keeps_ags_off_the_same_disk() {
        // 256 disks of 36 GiB in 512 KiB units: 9 TiB, so 32 AGs of
        // 288 GiB, a multiple of the 128 MiB width, less one unit.
        let (unit, disks) = (512u64 << 10, 256u64);
        let cap = 9u64 << 40;
        let x = XfsAlloc::new(cap, unit, unit * disks);
        assert_eq!(x.ag_bytes, (288u64 << 30) - unit);
        assert_eq!(x.ags.len(), 33, "a 16 MiB last AG is kept");
        let start_disk = |k: u64| (k * x.ag_bytes / unit) % disks;
        let mut seen: Vec<u64> = (0..32).map(start_disk).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 32, "no two AGs start on the same disk");
        // Without a stripe the AG size is left alone.
        assert_eq!(XfsAlloc::new(cap, 0, 0).ag_bytes, 288u64 << 30);
    }

    #[test]
    fn files_take_the_ags_in_turn_and_extend_in_place() {
        let unit = 512u64 << 10;
        let mut x = XfsAlloc::new(9u64 << 40, unit, unit * 256);
        let mut f = vec![FileLayout::default(); 3];
        for (i, file) in f.iter_mut().enumerate() {
            let v = x.alloc(file, 16 << 20, unit).unwrap();
            assert_eq!(v / x.ag_bytes, i as u64, "the rotor's AG");
            assert_eq!(v % unit, 0, "the first extent on a stripe unit");
            file.push(v, 16 << 20);
        }
        // AG 0's first unit holds the root inode chunk.
        assert_eq!(f[0].runs[0].0, 2 * unit);
        assert_eq!(f[1].runs[0].0, x.ag_bytes + unit);
        let v = x.alloc(&f[1], 1 << 20, unit).unwrap();
        f[1].push(v, 1 << 20);
        assert_eq!(f[1].runs.len(), 1, "the next extent follows on");
    }

    #[test]
    fn delalloc_allocates_the_dirty_backlog_from_the_files_allocated_end() {
        let unit = 512u64 << 10;
        let sizes = vec![64 << 20, 64 << 20];
        let mut d = Delalloc::new(XfsAlloc::new(9u64 << 40, unit, unit * 256), sizes, unit);
        // Writeback reaches file 1 first: it takes the rotor's first AG.
        d.writeback(1, 0, 1 << 20, 40 << 20).unwrap();
        assert_eq!(
            d.files[1].bytes,
            40 << 20,
            "the whole backlog in one extent"
        );
        assert_eq!(d.files[1].runs[0].0 / d.vol.ag_bytes, 0);
        // Pages inside the allocated extent allocate nothing more.
        d.writeback(1, 20 << 20, 1 << 20, 60 << 20).unwrap();
        assert_eq!((d.files[1].bytes, d.allocations), (40 << 20, 1));
        // Reclaim meeting a page past it allocates from the allocated end,
        // not from the page, and never past the file.
        d.writeback(1, 50 << 20, 1 << 20, 100 << 20).unwrap();
        assert_eq!(d.files[1].bytes, 64 << 20);
        assert_eq!(d.files[1].runs.len(), 1, "its own AG: still contiguous");
        d.writeback(0, 0, 1 << 20, 0).unwrap();
        assert_eq!(d.files[0].bytes, 1 << 20, "at least the page written");
        assert_eq!(d.files[0].runs[0].0 / d.vol.ag_bytes, 1);
    }

    #[test]
    fn enospc_when_the_volume_is_full() {
        let mut a = VolumeAlloc::new(1000);
        assert!(a.alloc(None, 600, 1).is_ok());
        assert_eq!(a.alloc(None, 600, 1), Err(Enospc));
    }
}
