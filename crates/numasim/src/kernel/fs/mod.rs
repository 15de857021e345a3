//! Filesystems and the I/O data paths of [XFS06] section F.
//!
//! - `layout`: where a file's blocks land. XFS reserves space at `write()`
//!   and allocates extents at writeback (delalloc, F1); Ext2/Ext3 allocate
//!   in the write path near the file's previous block from windows (F2), so
//!   parallel writers interleave by their (seeded) timing.
//! - `laydown`: parallel `dd` writers laying a file set down (F10).
//! - `iosim`: direct I/O and buffered reads over the block layer (F9, B12,
//!   B13, D19).
//! - `writeback`: the writeback walk over dirty files and the write
//!   clustering limits; the buffered-write experiment that drives it
//!   (F3–F7, F11) is `workload/bufwrite.rs`.
//!
//! Kernel versions select mechanisms as in the table at the top of F.

pub mod iosim;
pub mod laydown;
pub mod layout;
pub mod writeback;

use crate::error::InputError;
use crate::input::table::TableReader;

knob_enum!(FsKind {
    Xfs = "xfs",
    Ext2 = "ext2",
    Ext3 = "ext3",
});

impl FsKind {
    /// Block-mapped filesystems allocate in the write path (F2).
    pub fn allocates_in_write_path(self) -> bool {
        self != FsKind::Xfs
    }
}

knob_enum!(KernelVersion {
    Sles9Sp2 = "sles9sp2",
    V2_6_15 = "2.6.15",
    V2_6_15SlowPurge = "2.6.15-slowpurge",
    V2_6_16 = "2.6.16",
    V2_6_17 = "2.6.17",
});
knob_enum!(TlbPurge { Slow = "slow", Fast = "fast" });
knob_enum!(WriteClustering {
    BufferHead = "buffer-head",
    Bio = "bio",
});
knob_enum!(SbCounters {
    GlobalLock = "global-lock",
    PerCpu = "percpu",
});
// The memory policy of the I/O threads (A6): their page cache and user
// buffers local first (the default), interleaved over every node
// (`numactl -i all`), or bound to the thread's node (`numactl --membind`).
knob_enum!(BufferPolicy {
    Local = "local",
    Interleave = "interleave",
    Bind = "bind",
});

impl BufferPolicy {
    /// The page allocator's view of it (`mm::kswapd`).
    pub fn alloc_policy(self) -> crate::kernel::mm::kswapd::AllocPolicy {
        use crate::kernel::mm::kswapd::AllocPolicy;
        match self {
            BufferPolicy::Local => AllocPolicy::LocalFirst,
            BufferPolicy::Interleave => AllocPolicy::Interleave,
            BufferPolicy::Bind => AllocPolicy::Bind,
        }
    }
}
knob_enum!(Ext3Data {
    Writeback = "writeback",
    Ordered = "ordered",
});
// How balance_dirty_pages() holds a dirtier back when writeback falls
// behind: it writes back itself (2.6 to 3.1), or it sleeps while the
// flusher writes (IO-less dirty throttling, Linux 3.2).
knob_enum!(DirtyThrottle {
    Writeback = "writeback",
    IoLess = "io-less",
});
// What reclaim does with a dirty page-cache page it meets at the LRU tail:
// write it itself (`pageout()`, 2.6), or leave it to the flusher threads
// and move on (from Linux 3.2, Mel Gorman's "reduce filesystem writeback
// from page reclaim" series; modelled from the 3.10 era on).
knob_enum!(ReclaimWriteback {
    Pageout = "pageout",
    Flusher = "flusher",
});
knob_enum!(WriteBegin {
    PerBlock = "per-block",
    MultiBlock = "multi-block",
});

/// The I/O knobs of section F. `version` sets the others' defaults (the
/// table at the top of F); a knob given explicitly wins over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoKnobs {
    pub version: KernelVersion,
    /// `kernel.version` named this I/O release (else it follows the era).
    pub version_named: bool,
    pub tlb_purge: TlbPurge,
    pub xfs_write_clustering: WriteClustering,
    pub xfs_sb_counters: SbCounters,
    pub buffer_policy: BufferPolicy,
    pub ext3_data: Ext3Data,
    pub write_begin: WriteBegin,
    pub dirty_throttle: DirtyThrottle,
    pub reclaim_writeback: ReclaimWriteback,
    /// Pages one reclaim-initiated write carries; None: the filesystem's
    /// (`reclaim_write_pages()`).
    pub reclaim_write_pages: Option<u64>,
}

impl IoKnobs {
    pub fn for_version(v: KernelVersion) -> IoKnobs {
        use KernelVersion::*;
        IoKnobs {
            version: v,
            version_named: false,
            tlb_purge: match v {
                Sles9Sp2 | V2_6_15SlowPurge => TlbPurge::Slow,
                _ => TlbPurge::Fast,
            },
            xfs_write_clustering: match v {
                Sles9Sp2 => WriteClustering::BufferHead,
                _ => WriteClustering::Bio,
            },
            xfs_sb_counters: match v {
                V2_6_17 => SbCounters::PerCpu,
                _ => SbCounters::GlobalLock,
            },
            buffer_policy: BufferPolicy::Local,
            ext3_data: Ext3Data::Writeback,
            write_begin: WriteBegin::PerBlock,
            dirty_throttle: DirtyThrottle::Writeback,
            reclaim_writeback: ReclaimWriteback::Pageout,
            reclaim_write_pages: None,
        }
    }

    /// Pages a reclaim-initiated write carries on `fs` (not stated by
    /// [XFS06]; a knob): `pageout()` asks `->writepage` for one page with
    /// `nr_to_write = SWAP_CLUSTER_MAX`, and XFS's `xfs_cluster_write()`
    /// adds the dirty pages after it in the file up to that; Ext2/Ext3's
    /// `block_write_full_page()` writes the one page.
    pub fn reclaim_write_pages(&self, fs: FsKind) -> u64 {
        self.reclaim_write_pages.unwrap_or(match fs {
            FsKind::Xfs => crate::kernel::fs::iosim::SWAP_CLUSTER_MAX,
            FsKind::Ext2 | FsKind::Ext3 => 1,
        })
    }
    /// `vm.zone_reclaim_mode` the version boots with (B13).
    pub fn zone_reclaim_default(&self) -> u32 {
        match self.version {
            KernelVersion::V2_6_16 | KernelVersion::V2_6_17 => 1,
            _ => 0,
        }
    }

    /// The knobs over release `v`'s defaults (`kernel.version`, read by
    /// `KernelConfig::read`; `named`: it named `v` itself).
    pub fn read(r: &mut TableReader, v: KernelVersion, named: bool) -> Result<IoKnobs, InputError> {
        let mut k = IoKnobs::for_version(v);
        k.version_named = named;
        k.tlb_purge = r
            .choice("tlb_purge", TlbPurge::NAMES)?
            .unwrap_or(k.tlb_purge);
        k.xfs_write_clustering = r
            .choice("xfs_write_clustering", WriteClustering::NAMES)?
            .unwrap_or(k.xfs_write_clustering);
        k.xfs_sb_counters = r
            .choice("xfs_sb_counters", SbCounters::NAMES)?
            .unwrap_or(k.xfs_sb_counters);
        k.buffer_policy = r
            .choice("buffer_policy", BufferPolicy::NAMES)?
            .unwrap_or(k.buffer_policy);
        k.ext3_data = r
            .choice("ext3_data", Ext3Data::NAMES)?
            .unwrap_or(k.ext3_data);
        k.write_begin = r
            .choice("write_begin", WriteBegin::NAMES)?
            .unwrap_or(k.write_begin);
        k.dirty_throttle = r
            .choice("dirty_throttle", DirtyThrottle::NAMES)?
            .unwrap_or(k.dirty_throttle);
        k.reclaim_writeback = r
            .choice("reclaim_writeback", ReclaimWriteback::NAMES)?
            .unwrap_or(k.reclaim_writeback);
        if let Some(p) = r.u64("reclaim_write_pages")? {
            if !(1..=writeback::BIO_MAX_PAGES).contains(&p) {
                return Err(InputError::at(
                    r.key("reclaim_write_pages"),
                    format!(
                        "{p}: allowed 1..{} pages (one page up to a full bio)",
                        writeback::BIO_MAX_PAGES
                    ),
                ));
            }
            k.reclaim_write_pages = Some(p);
        }
        Ok(k)
    }

    pub fn knob_json(&self, knob: &str) -> Option<serde_json::Value> {
        use serde_json::json;
        Some(match knob {
            "tlb_purge" => json!(self.tlb_purge.name()),
            "xfs_write_clustering" => json!(self.xfs_write_clustering.name()),
            "xfs_sb_counters" => json!(self.xfs_sb_counters.name()),
            "buffer_policy" => json!(self.buffer_policy.name()),
            "ext3_data" => json!(self.ext3_data.name()),
            "write_begin" => json!(self.write_begin.name()),
            "dirty_throttle" => json!(self.dirty_throttle.name()),
            "reclaim_writeback" => json!(self.reclaim_writeback.name()),
            "reclaim_write_pages" => self.reclaim_write_pages.map_or(json!("auto"), |p| json!(p)),
            _ => return None,
        })
    }
}
