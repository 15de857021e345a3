//! `[block]`: the physics of a machine's disks, HBAs and I/O nodes, and the
//! CPU path lengths of its kernel's I/O code. Shared by every I/O experiment
//! on the machine; docs/io.md says where each value comes from (datasheet,
//! mainline reference, or the one published figure it is calibrated on).

use crate::error::InputError;
use crate::input::size::format_size;
use crate::input::table::TableReader;
use toml::{Table, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct BlockParams {
    /// Spindle speed: one revolution is the worst rotational wait. Zero for
    /// a solid-state drive: no platter, no rotational wait.
    pub disk_rpm: f64,
    /// Average seek (one third of the stroke), ms. Zero for a solid-state
    /// drive: a non-sequential request costs no positioning.
    pub disk_seek_ms: f64,
    /// Track-to-track seek, ms: the cost of the shortest non-sequential move.
    pub disk_track_seek_ms: f64,
    /// Bytes per disk.
    pub disk_capacity: u64,
    /// Per-command overhead in the drive and HBA firmware, µs: time the
    /// drive is occupied by a command besides its transfer.
    pub disk_command_us: f64,
    /// Media latency that overlaps with the drive's other commands, µs
    /// (NAND read time on an NVMe drive, whose dies work in parallel): a
    /// request's data leaves the drive this long after its service slot.
    /// Optional, 0 by default (a disk's positioning is in its service time).
    pub disk_latency_us: f64,
    /// The same for a write, µs, where it differs: a drive or a
    /// hypervisor's virtual disk that acknowledges a write from its cache
    /// before the media has it returns writes sooner than reads. Absent:
    /// `disk_latency_us` both ways.
    pub disk_write_latency_us: Option<f64>,
    /// Commands the device services at once, each at the media rate
    /// (`disk_commands`, default 1): an NVMe drive or a virtio-blk disk
    /// takes many commands from its queue and works on them side by side
    /// (a hypervisor's backend serves a virtual disk's requests from
    /// several I/O threads), where a SCSI disk's head serves one. Requests
    /// beyond it wait in the queue (`queue_depth` still bounds that).
    pub disk_commands: u32,
    /// The device's cost per scatter-gather segment of a request, ns
    /// (`segment_ns`, default 0): each segment is a descriptor the device
    /// walks (a host-side mapping on a virtual disk, an SG entry on an
    /// HBA). A request's segments are its physically contiguous runs of
    /// memory (`bio_iov_iter_get_pages`, block/bio.c; docs/io.md
    /// "Segments").
    pub segment_ns: f64,
    /// The same for a write's segments, ns, where it differs
    /// (`segment_write_ns`): a virtual disk whose host takes a write into
    /// its cache maps a written segment at another cost than a read one.
    /// Absent: `segment_ns` both ways.
    pub segment_write_ns: Option<f64>,
    /// The physically contiguous run a request's memory comes in, bytes
    /// (`segment_run`): a request has `ceil(len / segment_run)` segments.
    /// `None`: each request one segment.
    pub segment_run: Option<u64>,
    /// `queue/max_segments`: with `segment_run`, a request holds at most
    /// this many runs (`bio_split_io_at`, block/blk-merge.c). `None`: no
    /// limit beyond `max_request`.
    pub max_segments: Option<u32>,
    /// The drive acknowledges writes from its cache (WCE): a sequential
    /// write never waits for the platter to come round.
    pub disk_write_cache: bool,
    /// The I/O scheduler: `noop` (arrival order, merging only) or
    /// `deadline` (served as C-LOOK sweeps while nothing expires).
    pub elevator_noop: bool,
    /// The device queue's largest request (`max_sectors`), bytes.
    pub max_request: u64,
    /// Requests a disk queue holds before the submitter sleeps (`nr_requests`).
    pub queue_depth: u32,
    /// Bandwidth of one HBA (its SCSI bus), MB/s.
    pub controller_mbps: f64,
    /// Bandwidth of one I/O node's link into the fabric, GB/s each way.
    pub io_node_gbps: f64,
    /// One CPU copying between user and page-cache pages, GB/s.
    pub copy_gbps: f64,
    /// Page-cache work per page besides the copy (lookup, LRU, flags), ns.
    pub page_op_ns: f64,
    /// Direct I/O: pinning one user page (`get_user_pages`), ns.
    pub gup_page_ns: f64,
    /// Direct-I/O read completion: re-dirtying one user page the DMA
    /// filled (`bio_check_pages_dirty()`), ns.
    pub dio_dirty_page_ns: f64,
    /// Building, submitting and completing one request (bio, SCSI, irq), µs.
    pub request_us: f64,
    /// kswapd/zone reclaim work per page freed, without the TLB purge, ns.
    pub reclaim_page_ns: f64,
    /// One SN2 global TLB purge (`ptc.g`) before / after Dean Roe's change, µs.
    pub tlb_purge_slow_us: f64,
    pub tlb_purge_fast_us: f64,
    /// Writeback (`pdflush`) CPU per page written, ns.
    pub writeback_page_ns: f64,
    /// XFS in-core superblock critical section (F3/F4), ns.
    pub xfs_sb_hold_ns: f64,
    /// XFS extent allocation transaction (direct write, and again for the
    /// unwritten-extent conversion), µs.
    pub xfs_alloc_us: f64,
    /// Ext2/Ext3 block lookup in a cached block map (`ext*_get_block`), ns.
    pub ext_map_ns: f64,
    /// Ext2/Ext3 allocation of one block under the filesystem lock, ns.
    pub ext_alloc_ns: f64,
    /// Ext3 journal handle (`journal_start`/`stop`) per block written, ns.
    pub ext3_journal_ns: f64,
    /// Ext3 buffered write: one journal handle per page (start, inode
    /// size logged, stop), ns.
    pub ext3_page_handle_ns: f64,
    /// Truncate: XFS per extent freed, Ext2/3 per block-map entry, ns.
    pub xfs_truncate_extent_ns: f64,
    pub ext_truncate_block_ns: f64,
}

fn pos(t: &mut TableReader, key: &'static str) -> Result<f64, InputError> {
    let v = t.nonneg_f64(key)?.ok_or_else(|| {
        InputError::at(t.key(key), "missing (docs/io.md lists every [block] key)")
    })?;
    if v <= 0.0 || !v.is_finite() {
        return Err(InputError::at(t.key(key), format!("{v}: must be positive")));
    }
    Ok(v)
}

fn nonneg(t: &mut TableReader, key: &'static str) -> Result<f64, InputError> {
    t.nonneg_f64(key)?
        .ok_or_else(|| InputError::at(t.key(key), "missing (docs/io.md lists every [block] key)"))
}

/// The `[block]` keys without a default, in the order docs/machine.md
/// lists them.
pub const REQUIRED: &[&str] = &[
    "disk_rpm",
    "disk_seek_ms",
    "disk_track_seek_ms",
    "disk_capacity",
    "disk_command_us",
    "elevator",
    "max_request",
    "controller_mbps",
    "io_node_gbps",
    "copy_gbps",
    "page_op_ns",
    "gup_page_ns",
    "dio_dirty_page_ns",
    "request_us",
    "reclaim_page_ns",
    "tlb_purge_slow_us",
    "tlb_purge_fast_us",
    "writeback_page_ns",
    "xfs_sb_hold_ns",
    "xfs_alloc_us",
    "ext_map_ns",
    "ext_alloc_ns",
    "ext3_journal_ns",
    "ext3_page_handle_ns",
    "xfs_truncate_extent_ns",
    "ext_truncate_block_ns",
];

pub fn read(r: &mut TableReader) -> Result<Option<BlockParams>, InputError> {
    let Some(mut t) = r.table("block")? else {
        return Ok(None);
    };
    // Every missing key in one error (issue 33: one per run took three
    // rounds for one scenario), with the storage presets that supply them.
    let missing: Vec<&str> = REQUIRED.iter().copied().filter(|k| !t.has(k)).collect();
    if !missing.is_empty() {
        return Err(InputError::at(
            t.key(missing[0]),
            format!(
                "{} of the [block] keys missing: {} (docs/machine.md, \"[block]\", lists \
                 every key; `preset = \"nvme-gen4\"`, `\"sas-10k\"` or `\"sas-raid0\"` in \
                 [block] supplies them all)",
                missing.len(),
                missing.join(", ")
            ),
        ));
    }
    let size = |t: &mut TableReader, key: &'static str| -> Result<u64, InputError> {
        match t.size(key)? {
            Some(0) | None => Err(InputError::at(t.key(key), "missing or zero: give a size")),
            Some(v) => Ok(v),
        }
    };
    let p = BlockParams {
        disk_rpm: nonneg(&mut t, "disk_rpm")?,
        disk_seek_ms: nonneg(&mut t, "disk_seek_ms")?,
        disk_track_seek_ms: nonneg(&mut t, "disk_track_seek_ms")?,
        disk_capacity: size(&mut t, "disk_capacity")?,
        disk_command_us: nonneg(&mut t, "disk_command_us")?,
        disk_latency_us: t.nonneg_f64("disk_latency_us")?.unwrap_or(0.0),
        disk_write_latency_us: t.nonneg_f64("disk_write_latency_us")?,
        disk_commands: t.u32_in("disk_commands", 1, 1 << 16)?.unwrap_or(1),
        segment_ns: t.nonneg_f64("segment_ns")?.unwrap_or(0.0),
        segment_write_ns: t.nonneg_f64("segment_write_ns")?,
        segment_run: match t.size("segment_run")? {
            Some(0) => {
                return Err(InputError::at(
                    t.key("segment_run"),
                    "zero: give the contiguous run a request's memory comes in (a size ≥ 1 byte, e.g. \"4 KiB\"), or leave it out for one segment a request",
                ))
            }
            v => v,
        },
        max_segments: t.u32_in("max_segments", 1, 65535)?,
        disk_write_cache: t.bool("disk_write_cache")?.unwrap_or(false),
        elevator_noop: match t.choice("elevator", &[("noop", true), ("deadline", false)])? {
            Some(v) => v,
            None => {
                return Err(InputError::at(
                    t.key("elevator"),
                    "missing: noop or deadline",
                ))
            }
        },
        max_request: size(&mut t, "max_request")?,
        queue_depth: t.u32_in("queue_depth", 1, 1 << 16)?.unwrap_or(128),
        controller_mbps: pos(&mut t, "controller_mbps")?,
        io_node_gbps: pos(&mut t, "io_node_gbps")?,
        copy_gbps: pos(&mut t, "copy_gbps")?,
        page_op_ns: nonneg(&mut t, "page_op_ns")?,
        gup_page_ns: nonneg(&mut t, "gup_page_ns")?,
        dio_dirty_page_ns: nonneg(&mut t, "dio_dirty_page_ns")?,
        request_us: nonneg(&mut t, "request_us")?,
        reclaim_page_ns: nonneg(&mut t, "reclaim_page_ns")?,
        tlb_purge_slow_us: nonneg(&mut t, "tlb_purge_slow_us")?,
        tlb_purge_fast_us: nonneg(&mut t, "tlb_purge_fast_us")?,
        writeback_page_ns: nonneg(&mut t, "writeback_page_ns")?,
        xfs_sb_hold_ns: nonneg(&mut t, "xfs_sb_hold_ns")?,
        xfs_alloc_us: nonneg(&mut t, "xfs_alloc_us")?,
        ext_map_ns: nonneg(&mut t, "ext_map_ns")?,
        ext_alloc_ns: nonneg(&mut t, "ext_alloc_ns")?,
        ext3_journal_ns: nonneg(&mut t, "ext3_journal_ns")?,
        ext3_page_handle_ns: nonneg(&mut t, "ext3_page_handle_ns")?,
        xfs_truncate_extent_ns: nonneg(&mut t, "xfs_truncate_extent_ns")?,
        ext_truncate_block_ns: nonneg(&mut t, "ext_truncate_block_ns")?,
    };
    if p.disk_track_seek_ms > p.disk_seek_ms {
        return Err(InputError::at(
            t.key("disk_track_seek_ms"),
            "longer than the average seek (disk_seek_ms)",
        ));
    }
    t.finish()?;
    Ok(Some(p))
}

pub fn write(p: &BlockParams) -> Table {
    let mut t = Table::new();
    let mut f = |k: &str, v: f64| {
        t.insert(k.into(), Value::Float(v));
    };
    f("disk_rpm", p.disk_rpm);
    f("disk_seek_ms", p.disk_seek_ms);
    f("disk_track_seek_ms", p.disk_track_seek_ms);
    f("disk_command_us", p.disk_command_us);
    if p.disk_latency_us > 0.0 {
        f("disk_latency_us", p.disk_latency_us);
    }
    if let Some(w) = p.disk_write_latency_us {
        f("disk_write_latency_us", w);
    }
    f("controller_mbps", p.controller_mbps);
    f("io_node_gbps", p.io_node_gbps);
    f("copy_gbps", p.copy_gbps);
    f("page_op_ns", p.page_op_ns);
    f("gup_page_ns", p.gup_page_ns);
    f("dio_dirty_page_ns", p.dio_dirty_page_ns);
    f("request_us", p.request_us);
    f("reclaim_page_ns", p.reclaim_page_ns);
    f("tlb_purge_slow_us", p.tlb_purge_slow_us);
    f("tlb_purge_fast_us", p.tlb_purge_fast_us);
    f("writeback_page_ns", p.writeback_page_ns);
    f("xfs_sb_hold_ns", p.xfs_sb_hold_ns);
    f("xfs_alloc_us", p.xfs_alloc_us);
    f("ext_map_ns", p.ext_map_ns);
    f("ext_alloc_ns", p.ext_alloc_ns);
    f("ext3_journal_ns", p.ext3_journal_ns);
    f("ext3_page_handle_ns", p.ext3_page_handle_ns);
    f("xfs_truncate_extent_ns", p.xfs_truncate_extent_ns);
    f("ext_truncate_block_ns", p.ext_truncate_block_ns);
    t.insert("disk_capacity".into(), format_size(p.disk_capacity).into());
    t.insert("max_request".into(), format_size(p.max_request).into());
    t.insert("disk_write_cache".into(), p.disk_write_cache.into());
    t.insert(
        "elevator".into(),
        if p.elevator_noop { "noop" } else { "deadline" }.into(),
    );
    t.insert("queue_depth".into(), (p.queue_depth as i64).into());
    if p.disk_commands > 1 {
        t.insert("disk_commands".into(), (p.disk_commands as i64).into());
    }
    // Written only where set: a machine without them reads back the same.
    if p.segment_ns > 0.0 {
        t.insert("segment_ns".into(), Value::Float(p.segment_ns));
    }
    if let Some(w) = p.segment_write_ns {
        t.insert("segment_write_ns".into(), Value::Float(w));
    }
    if let Some(r) = p.segment_run {
        t.insert("segment_run".into(), format_size(r).into());
    }
    if let Some(n) = p.max_segments {
        t.insert("max_segments".into(), (n as i64).into());
    }
    t
}

#[cfg(test)]
mod tests {
    use crate::machine::{presets::preset_text, Machine};

    /// The segment keys (round 17): a value the disk cannot use (a
    /// negative or non-numeric cost, a zero or negative run, a
    /// `max_segments` outside 1..=65,535) is refused naming the key; good
    /// ones read back from the machine file they are written to, and a
    /// machine without them writes none (machine files of before stay).
    #[test]
    fn segment_keys_out_of_range_name_the_key_and_read_back() {
        let text = preset_text("altix-a3700").unwrap();
        assert!(text.contains("queue_depth = 128"));
        let with =
            |kv: &str| text.replace("queue_depth = 128", &format!("queue_depth = 128\n{kv}"));
        for (key, bad) in [
            ("segment_ns", "-1"),
            ("segment_ns", "\"slow\""),
            ("segment_ns", "nan"),
            ("segment_write_ns", "-0.5"),
            ("segment_run", "0"),
            ("segment_run", "-4096"),
            ("segment_run", "\"four\""),
            ("max_segments", "0"),
            ("max_segments", "70000"),
            ("max_segments", "2.5"),
        ] {
            let e = Machine::from_toml_str(&with(&format!("{key} = {bad}")), "m.toml")
                .expect_err(bad)
                .to_string();
            assert!(e.contains(key), "{key} = {bad}: {e}");
        }
        let m = Machine::from_toml_str(
            &with("segment_ns = 1900.0\nsegment_write_ns = 250.0\nsegment_run = \"12 KiB\"\nmax_segments = 254"),
            "m.toml",
        )
        .unwrap();
        let b = m.block.as_ref().unwrap();
        assert_eq!(
            (
                b.segment_ns,
                b.segment_write_ns,
                b.segment_run,
                b.max_segments
            ),
            (1900.0, Some(250.0), Some(12 << 10), Some(254))
        );
        let back = Machine::from_toml_str(&m.to_toml_string(), "m.toml").unwrap();
        assert_eq!(back.block, m.block);
        let plain = Machine::from_toml_str(text, "m.toml")
            .unwrap()
            .to_toml_string();
        for key in [
            "segment_ns",
            "segment_write_ns",
            "segment_run",
            "max_segments",
        ] {
            assert!(!plain.contains(key), "{key}");
        }
    }
}
