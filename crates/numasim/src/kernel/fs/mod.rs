//! Filesystems and the I/O data paths of [XFS06] section F.
//!
//! - `layout`: where a file's blocks land. XFS reserves space at `write()`
//!   and allocates extents at writeback (delalloc, F1); Ext2/Ext3 allocate
//!   in the write path near the file's previous block from windows (F2), so
//!   parallel writers interleave by their (seeded) timing.
//! - `laydown`: parallel `dd` writers laying a file set down (F10).
//! - the direct-I/O and buffered-read experiments over the block layer
//!   (F9, B12, B13, D19) are `workload/iosim.rs`.
//! - `writeback`: the writeback walk over dirty files and the write
//!   clustering limits; the buffered-write experiment that drives it
//!   (F3–F7, F11) is `workload/bufwrite.rs`.
//!
//! Kernel releases (`kernel::era::Era::IO`) select mechanisms as in the
//! table at the top of F.

pub mod balloc;
pub mod laydown;
pub mod layout;
pub mod readahead;
pub(crate) mod writeback;

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::kernel::era::Era;
use crate::kernel::knobs::{self, choice_knob, Allowed, Knob};
use crate::machine::Machine;

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

/// The I/O knobs of section F. The release (`kernel.version`, through
/// [`Era::io_release`]) sets their defaults (the table at the top of F); a
/// knob given explicitly wins over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoKnobs {
    /// The I/O release whose paths and defaults apply ([`Era::IO`]).
    pub version: Era,
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
    /// The defaults of release `v`'s I/O paths.
    pub fn for_version(v: Era) -> IoKnobs {
        use Era::*;
        let v = v.io_release();
        IoKnobs {
            version: v,
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
            FsKind::Xfs => crate::kernel::mm::swap::SWAP_CLUSTER_MAX,
            FsKind::Ext2 | FsKind::Ext3 => 1,
        })
    }
    /// `vm.zone_reclaim_mode` the version boots with (B13).
    pub fn zone_reclaim_default(&self) -> u32 {
        match self.version {
            Era::V2_6_16 | Era::V2_6_17 => 1,
            _ => 0,
        }
    }

    /// The knobs over release `v`'s defaults (`kernel.version`, read by
    /// `KernelConfig::read`).
    pub fn read(r: &mut TableReader, v: Era, machine: &Machine) -> Result<IoKnobs, InputError> {
        let mut k = IoKnobs::for_version(v);
        knobs::read_all(KNOBS, r, &mut k, machine)?;
        Ok(k)
    }

    pub fn knob_json(&self, knob: &str) -> Option<serde_json::Value> {
        knobs::json_of(KNOBS, self, knob)
    }
}

/// The I/O knobs of [XFS06] F, declared once (kernel/knobs.rs). Defaults
/// follow the I/O release (`Era::io_release`), as in the table at the top
/// of F; docs/io.md.
pub const KNOBS: &[Knob<IoKnobs>] = &[
    choice_knob!(IoKnobs, tlb_purge, TlbPurge,
        default: "`slow` on sles9sp2 and 2.6.15-slowpurge, else `fast`",
        doc: "the ia64 TLB purge when page-cache pages are freed (F)"),
    choice_knob!(IoKnobs, xfs_write_clustering, WriteClustering,
        default: "`buffer-head` on sles9sp2, else `bio`",
        doc: "how XFS clusters writeback: through buffer heads or whole bios (F)"),
    choice_knob!(IoKnobs, xfs_sb_counters, SbCounters,
        default: "`percpu` on 2.6.17 (and 2.6.32 on), else `global-lock`",
        doc: "XFS superblock free-space counters: one locked global or per-CPU (F)"),
    choice_knob!(IoKnobs, buffer_policy, BufferPolicy,
        default: "`local`",
        doc: "memory policy of the I/O threads' page cache and buffers (A6): local first, `numactl -i all`, or `--membind`"),
    choice_knob!(IoKnobs, ext3_data, Ext3Data,
        default: "`writeback`",
        doc: "Ext3's data= journalling mode"),
    choice_knob!(IoKnobs, write_begin, WriteBegin,
        default: "`per-block`",
        doc: "whether the write path maps one block at a time or several"),
    choice_knob!(IoKnobs, dirty_throttle, DirtyThrottle,
        default: "`writeback` before 3.10, `io-less` from 3.10 (Linux 3.2)",
        doc: "how balance_dirty_pages() holds a dirtier back: it writes back itself, or sleeps while the flusher writes"),
    choice_knob!(IoKnobs, reclaim_writeback, ReclaimWriteback,
        default: "`pageout` before 3.10, `flusher` from 3.10 (Linux 3.2)",
        doc: "what reclaim does with a dirty page-cache page at the LRU tail (B12)"),
    Knob {
        name: "reclaim_write_pages",
        allowed: Allowed::Text("1..256 pages, or `\"auto\"` for the filesystem's"),
        default: "`auto`: 32 (SWAP_CLUSTER_MAX, xfs_cluster_write()) on XFS, 1 on Ext2/Ext3",
        doc: "pages one reclaim-initiated write carries (not stated by [XFS06])",
        read: |r, k, _| {
            // "auto", as records show the filesystem's choice, reads back.
            if matches!(r.raw("reclaim_write_pages"), Some(toml::Value::String(s)) if s == "auto") {
                k.reclaim_write_pages = None;
            } else if let Some(p) = r.u64("reclaim_write_pages")? {
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
            Ok(())
        },
        json: |k| {
            k.reclaim_write_pages
                .map_or(serde_json::json!("auto"), |p| serde_json::json!(p))
        },
    },
];
