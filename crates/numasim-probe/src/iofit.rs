//! The scratch directory's disk, fitted from the probe's own file I/O and
//! replayed on the fitted machine (issue 36 item 3; docs/probe.md, "I/O").
//!
//! What the probe measures (io.rs): one thread, one file, sequential calls
//! at queue depth 1: `O_DIRECT` writes into a fresh file and reads of it,
//! at 1 MiB and (since issue 36) 128 KiB a call, and a buffered read of
//! 1 MiB calls after `POSIX_FADV_DONTNEED` (the kernel's readahead from
//! the disk). The model is `workload/fsio.rs`'s direct and buffered-read
//! paths on the block layer (`kernel/block`): a call's bios queue on one
//! disk that transfers at its media rate and returns each request's data
//! `disk_latency_us` later (the latency overlaps other commands, as on
//! NVMe and on a hypervisor's virtual disk).
//!
//! Fitted (calibration): the read rate `mibps` and the latency from the
//! two direct read sizes (a call costs latency + size / rate, so two
//! sizes separate them); `write_mibps` from the 1 MiB direct write with
//! that latency. Predicted (validation): the 128 KiB direct write (the
//! same latency for writes: a check of that assumption) and the buffered
//! read (readahead's two windows in flight overlap the latency that a
//! direct call pays alone).

use numasim::kernel::fs::FsKind;
use numasim::kernel::KernelConfig;
use numasim::machine::Machine;
use numasim::report::Record;
use numasim::workload::HostFileIo;
use serde_json::json;

/// The second direct-I/O call size (the first is 1 MiB): the block
/// layer's own request size on many devices, 8 × smaller, so the two
/// per-call times separate latency from rate.
pub const SMALL_REQUEST: u64 = 128 << 10;
pub const LARGE_REQUEST: u64 = 1 << 20;

/// Linux's default `read_ahead_kb` (`VM_READAHEAD_PAGES`, 128 KiB), for
/// runs saved before the probe recorded the device's.
pub const DEFAULT_READ_AHEAD: u64 = 128 << 10;
/// The block layer's default largest request (`BLK_DEF_MAX_SECTORS_CAP`,
/// 2,560 sectors), for runs saved before the probe recorded it.
pub const DEFAULT_MAX_REQUEST: u64 = 1280 << 10;

/// One measured rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub direct: bool,
    pub write: bool,
    /// Bytes per call.
    pub request: u64,
    pub mibps: f64,
    /// (max - min) / median over the repetitions, where recorded.
    pub spread: Option<f64>,
}

/// What the probe measured of its scratch directory's file system.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IoMeas {
    /// The file system's type (`/proc/self/mounts`).
    pub fs: String,
    /// The test file's size.
    pub file_bytes: u64,
    pub rates: Vec<Rate>,
    /// The device's `queue/read_ahead_kb` and `queue/max_sectors_kb`, bytes.
    pub read_ahead: Option<u64>,
    pub max_request: Option<u64>,
}

impl IoMeas {
    pub fn get(&self, direct: bool, write: bool, request: u64) -> Option<Rate> {
        self.rates
            .iter()
            .find(|r| r.direct == direct && r.write == write && r.request == request)
            .copied()
    }

    fn fs_kind(&self) -> FsKind {
        match self.fs.as_str() {
            "ext2" => FsKind::Ext2,
            "ext3" => FsKind::Ext3,
            // ext4, xfs, btrfs and the rest map a call with extents.
            _ => FsKind::Xfs,
        }
    }

    fn host_io(&self, io_size: u64) -> HostFileIo {
        HostFileIo {
            fs: self.fs_kind(),
            file_size: if self.file_bytes > 0 {
                self.file_bytes
            } else {
                256 << 20
            },
            io_size,
            // The current window and the async one ahead of it.
            readahead: 2 * self.read_ahead.unwrap_or(DEFAULT_READ_AHEAD),
        }
    }
}

/// The fitted disk.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskFit {
    pub read_mibps: f64,
    pub write_mibps: f64,
    pub latency_us: f64,
    /// Each fitted value's source, for the machine file's comments.
    pub sources: Vec<(&'static str, String)>,
    pub notes: Vec<String>,
}

/// `m` with one disk of `fit` and the `[block]` table of the `nvme-gen4`
/// storage preset for everything the probe cannot see (the host's I/O
/// path lengths: Linux 6.x on a ~3 GHz x86 core; docs/io.md), except:
/// no positioning cost, the device's largest request, no link limit
/// (a virtual or local disk's link is not seen: the media rate binds), and
/// one CPU's user copy at the probe's own largest copy rate.
pub fn io_machine(m: &Machine, fit: &DiskFit, meas: &IoMeas) -> Result<Machine, String> {
    let mut t: toml::Table =
        toml::from_str(&m.to_toml_string()).map_err(|e| format!("machine TOML: {e}"))?;
    let copy_gbps = m.hierarchy.stream_mbps / 2.0 / 1e3;
    let max_request = meas.max_request.unwrap_or(DEFAULT_MAX_REQUEST);
    let mut block = toml::Table::new();
    block.insert("preset".into(), "nvme-gen4".into());
    block.insert("disk_latency_us".into(), fit.latency_us.into());
    block.insert("max_request".into(), (max_request as i64).into());
    block.insert("controller_mbps".into(), 1e7.into());
    block.insert("io_node_gbps".into(), 1e4.into());
    block.insert("copy_gbps".into(), copy_gbps.max(0.1).into());
    t.insert("block".into(), toml::Value::Table(block));
    let io = t
        .entry("io")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let io = io
        .as_table_mut()
        .ok_or("machine TOML: [io] is not a table")?;
    io.insert("controllers".into(), 1i64.into());
    let mut disk = toml::Table::new();
    disk.insert("count".into(), 1i64.into());
    disk.insert("kind".into(), format!("probed {}", meas.fs).into());
    disk.insert("mibps".into(), fit.read_mibps.into());
    disk.insert("write_mibps".into(), fit.write_mibps.into());
    io.insert(
        "disks".into(),
        toml::Value::Array(vec![toml::Value::Table(disk)]),
    );
    let text = toml::to_string(&t).map_err(|e| format!("machine TOML: {e}"))?;
    Machine::from_toml_str(&text, "fitted machine with its disk").map_err(|e| e.to_string())
}

/// Seconds per call of `bytes` at `mibps`.
fn per_call(bytes: u64, mibps: f64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64 / mibps.max(1e-9)
}

/// Fit the disk to the direct rates (see the module doc). `None` where
/// the run has no direct 1 MiB read and write (no `O_DIRECT`, `--no-io`).
pub fn fit(m: &Machine, meas: &IoMeas) -> Option<DiskFit> {
    let r1 = meas.get(true, false, LARGE_REQUEST)?;
    let w1 = meas.get(true, true, LARGE_REQUEST)?;
    let r2 = meas.get(true, false, SMALL_REQUEST);
    let (s1, s2) = (LARGE_REQUEST as f64, SMALL_REQUEST as f64);
    let mut fit = DiskFit {
        read_mibps: r1.mibps,
        write_mibps: w1.mibps,
        latency_us: 0.0,
        sources: Vec::new(),
        notes: Vec::new(),
    };
    let k_of = |mach: &Machine| KernelConfig::defaults(mach);
    // A call's time is the host's work a(S) + latency + S / rate; a(S) is
    // read off the model at the current guess (the rest is known there),
    // then the two sizes give latency and rate in closed form. The host's
    // work barely moves with the disk's figures, so a few rounds settle.
    let mut clamped = false;
    for _ in 0..4 {
        let mach = io_machine(m, &fit, meas).ok()?;
        let k = k_of(&mach);
        let lat = fit.latency_us * 1e-6;
        let big = meas.host_io(LARGE_REQUEST).direct(&mach, &k, 1)?;
        let t_r1 = per_call(LARGE_REQUEST, r1.mibps);
        let a_r1 = per_call(LARGE_REQUEST, big.direct_read_mibps)
            - lat
            - per_call(LARGE_REQUEST, fit.read_mibps);
        let (inv_rate, l) = match r2 {
            Some(r2) => {
                let small = meas.host_io(SMALL_REQUEST).direct(&mach, &k, 1)?;
                let t_r2 = per_call(SMALL_REQUEST, r2.mibps);
                let a_r2 = per_call(SMALL_REQUEST, small.direct_read_mibps)
                    - lat
                    - per_call(SMALL_REQUEST, fit.read_mibps);
                let inv = ((t_r1 - a_r1) - (t_r2 - a_r2)) / (s1 - s2);
                (inv, t_r1 - a_r1 - s1 * inv)
            }
            None => ((t_r1 - a_r1) / s1, 0.0),
        };
        let (inv_rate, l) = if l < 0.0 || inv_rate <= 0.0 {
            // The small calls ran at least as fast per byte as the large:
            // no latency to separate; the large call sets the rate alone.
            clamped = true;
            ((t_r1 - a_r1).max(1e-9) / s1, 0.0)
        } else {
            clamped = false;
            (inv_rate, l)
        };
        let t_w1 = per_call(LARGE_REQUEST, w1.mibps);
        let a_w1 = per_call(LARGE_REQUEST, big.direct_write_mibps)
            - lat
            - per_call(LARGE_REQUEST, fit.write_mibps);
        let w_media = t_w1 - a_w1 - l;
        fit.read_mibps = 1.0 / inv_rate / (1u64 << 20) as f64;
        fit.latency_us = l * 1e6;
        if w_media <= 0.0 {
            // The write returned sooner than the read's latency allows:
            // the latency is not the same both ways (a write cache); the
            // write keeps its measured rate and the 128 KiB row shows it.
            fit.write_mibps = w1.mibps;
        } else {
            fit.write_mibps = s1 / w_media / (1u64 << 20) as f64;
        }
    }
    let ra = meas.read_ahead.map_or_else(
        || {
            format!(
                "{} KiB (Linux's default; not recorded)",
                DEFAULT_READ_AHEAD >> 10
            )
        },
        |b| format!("{} KiB (the device's read_ahead_kb)", b >> 10),
    );
    match (r2, clamped) {
        (Some(r2), false) => {
            fit.sources.push((
                "mibps",
                format!(
                    "direct seq_read_mibps at 1 MiB ({:.0}{}) and 128 KiB ({:.0}{}) a call, with a latency of {:.1} us a request",
                    r1.mibps,
                    crate::calibrate::spread_tag(r1.spread),
                    r2.mibps,
                    crate::calibrate::spread_tag(r2.spread),
                    fit.latency_us
                ),
            ));
        }
        (Some(_), true) => {
            fit.notes.push("io: the 128 KiB direct reads ran no slower per byte than 1 MiB ones: no per-request latency to fit; the disk's rate is fitted on the 1 MiB read alone".into());
            fit.sources.push((
                "mibps",
                format!(
                    "direct seq_read_mibps at 1 MiB a call{}",
                    crate::calibrate::spread_tag(r1.spread)
                ),
            ));
        }
        (None, _) => {
            fit.notes.push("io: one direct request size in this run (saved before issue 36's 128 KiB pass): the disk's latency cannot be told from its rate and is taken as 0".into());
            fit.sources
                .push(("mibps", "direct seq_read_mibps at 1 MiB a call".into()));
        }
    }
    fit.sources.push((
        "write_mibps",
        format!(
            "direct seq_write_mibps at 1 MiB a call{}, less the read's latency",
            crate::calibrate::spread_tag(w1.spread)
        ),
    ));
    fit.notes.push(format!(
        "io: disk fitted as {:.0} MiB/s read, {:.0} MiB/s write, {:.1} us latency per request; readahead {ra}",
        fit.read_mibps, fit.write_mibps, fit.latency_us
    ));
    Some(fit)
}

/// Measured beside simulated for every I/O rate the probe took.
pub fn validate(m: &Machine, meas: &IoMeas, fit: &DiskFit) -> Vec<Record> {
    let Ok(mach) = io_machine(m, fit, meas) else {
        return Vec::new();
    };
    let k = KernelConfig::defaults(&mach);
    let two_sizes = meas.get(true, false, SMALL_REQUEST).is_some() && fit.latency_us > 0.0;
    let mut out = Vec::new();
    let mut sizes: Vec<u64> = meas.rates.iter().map(|r| r.request).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let io = meas.host_io(size);
        let direct = io.direct(&mach, &k, 1);
        for r in meas.rates.iter().filter(|r| r.request == size) {
            let sim = match (r.direct, r.write) {
                (true, true) => direct.map(|d| d.direct_write_mibps),
                (true, false) => direct.map(|d| d.direct_read_mibps),
                (false, false) => io.buffered_read(&mach, &k, 1),
                // The buffered write is timed through fsync: 256 MiB that
                // stays under the dirty thresholds until then, a regime the
                // model's buffered-write (steady state under the dirty
                // limit) does not replay.
                (false, true) => None,
            };
            let Some(sim) = sim else { continue };
            let calibration = r.direct
                && (size == LARGE_REQUEST || (!r.write && size == SMALL_REQUEST && two_sizes));
            let mut row = crate::validate::row(
                vec![
                    ("io", json!(if r.direct { "direct" } else { "buffered" })),
                    ("fs", json!(meas.fs)),
                    ("request", json!(crate::bench::size_label(size))),
                ],
                if r.write {
                    "seq_write_mibps"
                } else {
                    "seq_read_mibps"
                },
                "MiB/s",
                sim,
                r.mibps,
                calibration,
            );
            row.spread = r.spread;
            out.push(row);
        }
    }
    out
}
