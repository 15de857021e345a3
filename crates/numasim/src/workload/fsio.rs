//! The I/O workloads of [XFS06] section F: direct I/O, buffered read,
//! buffered write, and the run-to-run spread of Ext2 reads. Each sweeps
//! `threads` (one file per thread, thread i on CPU i) on a fresh volume.

use super::bufwrite::BufferedWrite;
use super::contention::counts;
use super::iosim::{
    buffered_read, direct_phase, BufferedRead, Direct, DirectMode, IoRun, ZONELIST_WALK,
};
use super::spec as s;
use super::{Recorder, Sim};
use super::{Run, Workload};
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::block::blkdev::Dest;
use crate::kernel::block::layer::check_machine;
use crate::kernel::block::BlockLayer;
use crate::kernel::fs::balloc::ExtAlloc;
use crate::kernel::fs::laydown::LayDown;
use crate::kernel::fs::layout::{FileLayout, XfsAlloc};
use crate::kernel::fs::{BufferPolicy, FsKind, TlbPurge};
use crate::kernel::mm::page_writeback::DirtyLimits;
use crate::kernel::mm::PageAlloc;
use crate::kernel::KernelConfig;
use crate::machine::Machine;
use crate::report::disk_heat;
use crate::report::{Artifact, Record};
use rand::RngExt;
use serde_json::json;

/// Simulated bytes a step may move at most (all threads, all phases), so no
/// step runs for long: 256 GiB.
pub const MAX_STEP_BYTES: u128 = 256 << 30;

/// Direct-I/O calls a step may make at most (all threads, all three
/// passes): each is a syscall, a block map and its requests, about 0.3 µs
/// of simulation, so 2^24 calls are some 5 s. A small `io_size` over large
/// files reaches it before `MAX_STEP_BYTES` does.
pub const MAX_DIRECT_CALLS: u128 = 1 << 24;

/// `O_DIRECT` alignment: 2.6's `__blockdev_direct_IO()` refuses (`EINVAL`)
/// an offset or length not a multiple of the device's sector size.
pub const DIRECT_IO_ALIGN: u64 = 512;

#[derive(Debug, Clone)]
pub struct Step {
    pub name: &'static str,
    pub fs: FsKind,
    pub threads: Vec<u64>,
    pub stripe_unit: u64,
    pub block_size: u64,
    pub file_size: u64,
    pub io_size: u64,
    pub readahead: u64,
    pub seeds: u64,
    /// buffered-write: start from free memory ([XFS06] F10's remount).
    pub remount: bool,
}

impl Step {
    pub fn from_step(
        name: &'static str,
        r: &mut TableReader,
        machine: &Machine,
    ) -> Result<Option<Step>, InputError> {
        let fs = r
            .choice("fs", FsKind::NAMES)?
            .ok_or_else(|| InputError::at(r.key("fs"), "missing: xfs, ext2 or ext3"))?;
        // More threads than CPUs share them (the papers ran 32 on 24).
        let threads = match r.raw("threads") {
            Some(toml::Value::Array(_)) => r.u64_list("threads")?.unwrap_or_default(),
            Some(_) => vec![r.u64("threads")?.unwrap_or(0)],
            None => counts(r, "threads", machine, None)?,
        };
        let max = 4 * machine.cpu_count();
        if threads.is_empty() || threads.iter().any(|&t| t == 0 || t > max) {
            return Err(InputError::at(
                r.key("threads"),
                format!("{threads:?}: each count 1..{max} (four threads per CPU at most)"),
            ));
        }
        let size = |r: &mut TableReader, key: &'static str, d: u64| -> Result<u64, InputError> {
            let v = r.size(key)?.unwrap_or(d);
            if v == 0 {
                return Err(InputError::at(r.key(key), "must be more than zero"));
            }
            Ok(v)
        };
        let stripe_unit = size(r, "stripe_unit", 512 << 10)?;
        let block_size = size(r, "block_size", 4 << 10)?;
        if !block_size.is_power_of_two() || !(512..=65536).contains(&block_size) {
            return Err(InputError::at(
                r.key("block_size"),
                format!("{block_size}: a power of two from 512 bytes to 64 KiB"),
            ));
        }
        if stripe_unit % block_size != 0 {
            return Err(InputError::at(
                r.key("stripe_unit"),
                format!("{stripe_unit} bytes is not a multiple of the block size ({block_size})"),
            ));
        }
        if stripe_unit % machine.page_size != 0 {
            return Err(InputError::at(
                r.key("stripe_unit"),
                format!(
                    "{stripe_unit} bytes is not a multiple of the page size ({})",
                    machine.page_size
                ),
            ));
        }
        let default_file = match name {
            "direct-io" => 1 << 30,
            "buffered-write" => 1 << 30,
            _ => 128 << 20,
        };
        let file_size = size(r, "file_size", default_file)?;
        let io_size = if name == "direct-io" {
            let v = size(r, "io_size", 128 << 20)?;
            if v % DIRECT_IO_ALIGN != 0 {
                return Err(InputError::at(
                    r.key("io_size"),
                    format!(
                        "{}: allowed: a multiple of the disks' {DIRECT_IO_ALIGN}-byte sector (O_DIRECT calls; the kernel returns EINVAL otherwise)",
                        crate::input::size::format_size(v)
                    ),
                ));
            }
            v
        } else {
            0
        };
        let readahead = if name == "buffered-read" || name == "read-variability" {
            size(r, "readahead", 64 << 20)?
        } else {
            0
        };
        let seeds = if name == "read-variability" {
            r.u64_in("seeds", 1, 100)?.unwrap_or(10)
        } else {
            1
        };
        let remount = if name == "buffered-write" {
            r.bool("remount")?.unwrap_or(false)
        } else {
            false
        };
        // Every entry of the `threads` list runs (a sweep), so the bounds
        // below are on their sum.
        let total = threads.iter().map(|&t| t as u128).sum::<u128>();
        let work =
            total * file_size as u128 * seeds as u128 * if name == "direct-io" { 3 } else { 1 };
        let sim = if name == "buffered-write" {
            64 << 20
        } else {
            file_size
        } as u128;
        if work.min(sim * total * seeds as u128) > MAX_STEP_BYTES
            || (name != "buffered-write" && work > MAX_STEP_BYTES)
        {
            // The message says the bound is on the sum, with the sum.
            let passes = if name == "direct-io" {
                " × 3 passes"
            } else {
                ""
            };
            let seeds_text = if seeds > 1 {
                format!(" × {seeds} seeds")
            } else {
                String::new()
            };
            return Err(InputError::at(
                r.key("file_size"),
                format!(
                    "{total} threads in all (the sum of the `threads` list) × file_size {}{seeds_text}{passes} \
                     is {} GiB of simulated I/O, more than 256 GiB: use fewer or smaller files",
                    crate::input::size::format_size(file_size),
                    work.min(if name == "buffered-write" { sim * total * seeds as u128 } else { work }) >> 30
                ),
            ));
        }
        if name == "direct-io" {
            let calls = total * file_size.div_ceil(io_size) as u128 * 3;
            if calls > MAX_DIRECT_CALLS {
                return Err(InputError::at(
                    r.key("io_size"),
                    format!(
                        "{calls} direct-I/O calls (the sum of the `threads` list × file_size / io_size × 3 passes): \
                         allowed at most {MAX_DIRECT_CALLS}, about 5 s of simulation at 0.3 µs a call; use a larger io_size or fewer or smaller files"
                    ),
                ));
            }
        }
        check_machine(machine).map_err(|e| InputError::at("workload", e))?;
        Ok(Some(Step {
            name,
            fs,
            threads,
            stripe_unit,
            block_size,
            file_size,
            io_size,
            readahead,
            seeds,
            remount,
        }))
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let m = sim.case.machine.clone();
        let k = sim.case.kernel.clone();
        let seed = sim.case.seed;
        let rec = sim.recorder();
        let mut out = Vec::new();
        let b = m.block.as_ref().expect("checked");
        let capacity = self.capacity(&BlockLayer::new(&m, self.stripe_unit, seed));
        for &n in &self.threads {
            let row = [("threads", json!(n))];
            // The whole file set must fit on the volume (ENOSPC, a result).
            if (n as u128) * (self.file_size as u128) > capacity as u128 {
                out.push(rec.record(&row, "enospc", "flag", 1.0));
                continue;
            }
            let _ = b;
            match self.name {
                "direct-io" => self.direct(&m, &k, seed, n, &rec, &row, &mut out),
                "buffered-read" => match self.read_once(&m, &k, seed, n) {
                    Some(run) => {
                        // The heat map of the case's largest run.
                        if Some(&n) == self.threads.iter().max() {
                            if let Some(files) = sim.artifacts.as_mut() {
                                let disks = run.per_disk_busy_pct.len();
                                let per_row = if disks <= 16 {
                                    disks
                                } else {
                                    (disks as f64).sqrt().ceil() as usize
                                };
                                let title = format!("{}: {n} readers", sim.experiment);
                                if let Some((svg, at)) =
                                    disk_heat::to_svg(&run.per_disk_busy_pct, per_row, &title)
                                {
                                    let mut case = rec.keys().to_vec();
                                    case.push(("threads".into(), json!(n)));
                                    files.push(Artifact {
                                        case,
                                        kind: "disk-busy.svg".into(),
                                        content: svg,
                                        name_at: Some(at),
                                    });
                                }
                            }
                        }
                        out.push(rec.record(&row, "read_gibps", "GiB/s", run.gibps()));
                        out.push(rec.record(
                            &row,
                            "cpu_pct_per_mibps",
                            "%/(MiB/s)",
                            run.cpu_pct_per_mibps(),
                        ));
                        out.push(rec.record(&row, "disk_iops", "1/s", run.iops()));
                        out.push(rec.record(&row, "avg_io_kib", "KiB", run.avg_io_kib()));
                        out.push(rec.record(
                            &row,
                            "kswapd_cpu_pct_per_node",
                            "%",
                            run.kswapd_cpu_pct_per_node(),
                        ));
                        out.push(rec.record(&row, "disk_busy_pct", "%", run.disk_busy_pct));
                        out.push(rec.record(&row, "enospc", "flag", 0.0));
                    }
                    None => out.push(rec.record(&row, "enospc", "flag", 1.0)),
                },
                "read-variability" => {
                    let rates: Vec<f64> = (0..self.seeds)
                        .filter_map(|s| self.read_once(&m, &k, seed.wrapping_add(s), n))
                        .map(|r| r.mibps())
                        .collect();
                    if rates.len() as u64 != self.seeds {
                        out.push(rec.record(&row, "enospc", "flag", 1.0));
                        continue;
                    }
                    let best = rates.iter().cloned().fold(f64::MIN, f64::max);
                    let worst = rates.iter().cloned().fold(f64::MAX, f64::min);
                    out.push(rec.record(&row, "best_mibps", "MiB/s", best));
                    out.push(rec.record(&row, "worst_mibps", "MiB/s", worst));
                    out.push(rec.record(
                        &row,
                        "mean_mibps",
                        "MiB/s",
                        rates.iter().sum::<f64>() / rates.len() as f64,
                    ));
                }
                _ => {
                    let b = m.block.as_ref().expect("checked");
                    let mut layer = BlockLayer::new(&m, self.stripe_unit, seed);
                    let w = BufferedWrite {
                        m: &m,
                        b,
                        fs: self.fs,
                        knobs: k.io,
                        writers: n as usize,
                        block: self.block_size,
                        file_bytes: self.file_size,
                        // The disk stage writes a sample of each file: one
                        // stripe width (at least 64 MiB), so that, like the
                        // whole file, the sample covers every disk wherever
                        // its AG starts (mkfs.xfs staggers AG starts by a
                        // unit: a shorter sample of 16 files lands on about
                        // half the disks).
                        sim_file_bytes: (layer.stripe.unit * layer.stripe.disks)
                            .max(64 << 20)
                            .min(self.file_size),
                        purge_ns: purge_ns(&k, b),
                        limits: DirtyLimits::from_sysctl(&k.vm),
                        min_free_kbytes: k.min_free_kbytes,
                        remount: self.remount,
                        seed,
                    };
                    match w.run(&mut layer) {
                        Ok(r) => {
                            for (metric, unit, v) in [
                                ("write_mibps", "MiB/s", r.write_mibps),
                                ("cpu_pct_per_mibps", "%/(MiB/s)", r.cpu_pct_per_mibps),
                                ("avg_io_kib", "KiB", r.avg_io_kib),
                                ("kswapd_cpu_pct_per_node", "%", r.kswapd_cpu_pct_per_node),
                                ("pdflush_cpu_pct", "%", r.pdflush_cpu_pct),
                                ("sb_lock_wait_pct", "%", r.sb_lock_wait_pct),
                                ("sb_calls_per_s", "1/s", r.sb_calls_per_s),
                                ("disk_busy_pct", "%", r.disk_busy_pct),
                                ("writeback_age_s", "s", r.writeback_age_s),
                                ("kswapd_cpu_pct_max", "%", r.kswapd_cpu_pct_max),
                                ("reclaim_write_pct", "%", r.reclaim_write_pct),
                            ] {
                                out.push(rec.record(&row, metric, unit, v));
                            }
                            out.push(rec.record(&row, "enospc", "flag", 0.0));
                        }
                        Err(_) => out.push(rec.record(&row, "enospc", "flag", 1.0)),
                    }
                }
            }
        }
        Ok(out)
    }

    fn capacity(&self, layer: &BlockLayer) -> u64 {
        // Ext2/Ext3 used a half-size volume (F8).
        match self.fs {
            FsKind::Xfs => layer.volume_bytes(),
            _ => layer.volume_bytes() / 2,
        }
    }

    fn nodes_of(&self, m: &Machine, n: u64) -> Vec<usize> {
        (0..n)
            .map(|t| m.cpu_node(t % m.cpu_count().max(1)).unwrap_or(0))
            .collect()
    }

    /// One buffered read of a file set laid down by `n` parallel writers.
    pub fn read_once(&self, m: &Machine, k: &KernelConfig, seed: u64, n: u64) -> Option<IoRun> {
        let b = m.block.as_ref().expect("checked");
        let mut layer = BlockLayer::new(m, self.stripe_unit, seed);
        let limits = DirtyLimits::from_sysctl(&k.vm).thresholds(m.mem_bytes() as f64);
        let files = LayDown {
            fs: self.fs,
            writers: n,
            file_bytes: self.file_size,
            block: self.block_size,
            page: m.page_size,
            stripe_unit: self.stripe_unit,
            stripe_width: layer.stripe.unit * layer.stripe.disks,
            copy_bytes_per_ns: b.copy_gbps,
            // The writers' data drains at the drives' write rate.
            drain_bytes_per_ns: m.disk_write_bytes_per_s() / 1e9,
            // From free memory (remounted between tests) the dd writers
            // run free until they fill it to the dirty threshold, then at
            // the disks' pace (balance_dirty_pages()).
            dirty_bytes: limits.1 as u64,
            background_bytes: limits.0 as u64,
            capacity: self.capacity(&layer),
            seed,
        }
        .run()
        .ok()?;
        let node = self.nodes_of(m, n);
        let r = BufferedRead {
            b,
            page: m.page_size,
            nodes: m.node_count(),
            zonelist: zonelists(m, &node),
            node,
            cpus: m.cpu_count() as usize,
            policy: k.io.buffer_policy.alloc_policy(),
            readahead: self.readahead,
            zone_reclaim: k.vm.zone_reclaim_mode & 1 == 1,
            purge_ns: purge_ns(k, b),
        };
        Some(buffered_read(&r, &mut layer, &files))
    }

    #[allow(clippy::too_many_arguments)]
    fn direct(
        &self,
        m: &Machine,
        k: &KernelConfig,
        seed: u64,
        n: u64,
        rec: &Recorder,
        row: &[(&str, serde_json::Value)],
        out: &mut Vec<Record>,
    ) {
        let (runs, enospc) = self.direct_runs(m, k, seed, n);
        for (mode, run) in runs {
            let metric = match mode {
                DirectMode::Write => "write_gibps",
                DirectMode::Overwrite => "overwrite_gibps",
                DirectMode::Read => "read_gibps",
            };
            out.push(rec.record(row, metric, "GiB/s", run.gibps()));
            if mode == DirectMode::Read {
                out.push(rec.record(row, "disk_busy_pct", "%", run.disk_busy_pct));
            }
        }
        out.push(rec.record(row, "enospc", "flag", if enospc { 1.0 } else { 0.0 }));
    }

    /// The direct-I/O phases of `n` threads (allocating write, overwrite,
    /// read back), each on an idle volume with fresh statistics, up to the
    /// first that ran out of space (then `true`).
    fn direct_runs(
        &self,
        m: &Machine,
        k: &KernelConfig,
        seed: u64,
        n: u64,
    ) -> (Vec<(DirectMode, IoRun)>, bool) {
        let b = m.block.as_ref().expect("checked");
        let mut layer = BlockLayer::new(m, self.stripe_unit, seed);
        let mut ext = ExtAlloc::new(
            if self.fs == FsKind::Ext2 {
                FsKind::Ext2
            } else {
                FsKind::Ext3
            },
            self.capacity(&layer),
            self.block_size,
        );
        // One thread's file each, created in thread order by threads of
        // consecutive pids (the seed draws the first).
        let pid0 = crate::engine::stream(seed, "dio-pid", 0).random_range(0..1u64 << 15);
        for t in 0..n {
            ext.create(0, pid0 + t);
        }
        let mut xfs = XfsAlloc::new(
            self.capacity(&layer),
            self.stripe_unit,
            layer.stripe.unit * layer.stripe.disks,
        );
        let mut files = vec![FileLayout::default(); n as usize];
        let dest: Vec<Dest> = self
            .nodes_of(m, n)
            .into_iter()
            .map(|nd| match k.io.buffer_policy {
                BufferPolicy::Local | BufferPolicy::Bind => Dest::Node(nd as u16),
                BufferPolicy::Interleave => Dest::Interleave,
            })
            .collect();
        let mut runs = Vec::with_capacity(3);
        for mode in [DirectMode::Write, DirectMode::Overwrite, DirectMode::Read] {
            let d = Direct {
                b,
                page: m.page_size,
                block: self.block_size,
                io_size: self.io_size,
                file_bytes: self.file_size,
                ext: self.fs != FsKind::Xfs,
                mode,
                dest: dest.clone(),
            };
            // Each phase on an idle volume with fresh statistics.
            let mut fresh = BlockLayer::new(m, self.stripe_unit, seed ^ (mode as u64 + 1));
            std::mem::swap(&mut layer, &mut fresh);
            match direct_phase(&d, &mut layer, &mut files, &mut ext, &mut xfs) {
                Ok(run) => runs.push((mode, run)),
                Err(_) => return (runs, true),
            }
        }
        (runs, false)
    }
}

/// What `numasim probe` measures of its host's scratch file system (one
/// thread, one file, sequential `io_size` calls at queue depth 1), run on
/// a machine with a `[block]` table: the model rows its `--validate`
/// compares with the measured ones (docs/probe.md, "I/O").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostFileIo {
    /// Extent-mapped file systems (ext4, XFS, btrfs) map a call's blocks
    /// as XFS does (one extent lookup, an allocation transaction and the
    /// unwritten conversion per allocating call); `Ext2`/`Ext3` block by
    /// block.
    pub fs: FsKind,
    pub file_size: u64,
    pub io_size: u64,
    /// What readahead keeps in flight for the buffered read: two windows
    /// (the current and the async-ahead one) of `read_ahead_kb` each.
    pub readahead: u64,
}

/// One thread's rates, MiB/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostFileRates {
    /// `O_DIRECT` writes into a fresh file (each call allocates).
    pub direct_write_mibps: f64,
    /// `O_DIRECT` reads of that file.
    pub direct_read_mibps: f64,
}

impl HostFileIo {
    fn step(&self, name: &'static str, m: &Machine) -> Step {
        Step {
            name,
            fs: self.fs,
            threads: vec![1],
            // One disk: a unit no smaller than the queue's largest
            // request, so the stripe cuts nothing the queue would not.
            stripe_unit: m
                .block
                .as_ref()
                .map_or(1 << 20, |b| b.max_request)
                .max(self.io_size)
                .next_multiple_of(m.page_size.max(4096)),
            block_size: 4096,
            file_size: self.file_size,
            io_size: self.io_size,
            readahead: self.readahead,
            seeds: 1,
            // The probe's host file is read and written once, not from a remount.
            remount: false,
        }
    }

    /// The direct write and read of one thread on `m` (which needs a
    /// `[block]` table and a disk); `None` where the file does not fit.
    pub fn direct(&self, m: &Machine, k: &KernelConfig, seed: u64) -> Option<HostFileRates> {
        check_machine(m).ok()?;
        let (runs, _) = self.step("direct-io", m).direct_runs(m, k, seed, 1);
        let rate = |mode| runs.iter().find(|r| r.0 == mode).map(|r| r.1.mibps());
        Some(HostFileRates {
            direct_write_mibps: rate(DirectMode::Write)?,
            direct_read_mibps: rate(DirectMode::Read)?,
        })
    }

    /// `depth` threads' `O_DIRECT` reads at once, each of its own file of
    /// `file_size / depth` (the probe's queue-depth sweep: `depth`
    /// requests in flight, each thread's region its own), MiB/s of all.
    pub fn direct_read_depth(
        &self,
        m: &Machine,
        k: &KernelConfig,
        seed: u64,
        depth: u64,
    ) -> Option<f64> {
        check_machine(m).ok()?;
        let depth = depth.max(1);
        let io = self.io_size.max(1);
        let each = HostFileIo {
            file_size: (self.file_size / depth / io).max(1) * io,
            ..*self
        };
        let (runs, _) = each.step("direct-io", m).direct_runs(m, k, seed, depth);
        runs.iter()
            .find(|r| r.0 == DirectMode::Read)
            .map(|r| r.1.mibps())
    }

    /// One thread's buffered read of a file written before it, through
    /// readahead and the page cache, MiB/s.
    pub fn buffered_read(&self, m: &Machine, k: &KernelConfig, seed: u64) -> Option<f64> {
        self.buffered_read_cost(m, k, seed).map(|x| x.0)
    }

    /// [`Self::buffered_read`] and the reading thread's CPU: (MiB/s,
    /// percent of one CPU per MiB/s; kswapd's work not counted, as a
    /// thread's CPU clock does not).
    pub fn buffered_read_cost(
        &self,
        m: &Machine,
        k: &KernelConfig,
        seed: u64,
    ) -> Option<(f64, f64)> {
        check_machine(m).ok()?;
        self.step("buffered-read", m)
            .read_once(m, k, seed, 1)
            .map(|r| {
                let mib = r.bytes as f64 / (1u64 << 20) as f64;
                (r.mibps(), 100.0 * r.cpu.total() / 1e9 / mib.max(1e-12))
            })
    }
}

/// Each thread's zonelist (nodes with memory, nearest first, at most
/// `ZONELIST_WALK` of them), one list per distinct node.
fn zonelists(m: &Machine, node: &[usize]) -> Vec<std::sync::Arc<[u32]>> {
    let mut alloc = PageAlloc::new(m, 11);
    let mut memo: std::collections::BTreeMap<usize, std::sync::Arc<[u32]>> = Default::default();
    node.iter()
        .map(|&nd| {
            memo.entry(nd)
                .or_insert_with(|| {
                    alloc
                        .zonelist(nd)
                        .filter(|&j| m.nodes[j as usize].mem_bytes > 0)
                        .take(ZONELIST_WALK)
                        .collect()
                })
                .clone()
        })
        .collect()
}

/// One SN2 global TLB purge under this kernel (D19).
pub fn purge_ns(k: &KernelConfig, b: &crate::machine::blockio::BlockParams) -> f64 {
    match k.io.tlb_purge {
        TlbPurge::Slow => b.tlb_purge_slow_us * 1e3,
        TlbPurge::Fast => b.tlb_purge_fast_us * 1e3,
    }
}

/// The reader of each workload of this family.
fn parse(name: &'static str, r: &mut TableReader, m: &Machine) -> Result<Box<dyn Run>, InputError> {
    super::family_step(name, Step::from_step(name, r, m)?)
}

impl Run for Step {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Step::run(self, sim)
    }
}

/// The `direct-io` workload: its keys, metrics and example, and its reader.
pub const DIRECT_IO: Workload = Workload {
    spec: s::Spec {
        name: "direct-io",
        about: "one file per thread with direct I/O: write (allocating), overwrite, read back",
        params: &[
            s::FS,
            s::IO_THREADS,
            s::STRIPE_UNIT,
            s::BLOCK_SIZE,
            s::file_size("\"1 GiB\""),
            s::p(
                "io_size",
                s::Kind::Size,
                "B",
                s::Default::Value("\"128 MiB\""),
                s::Range::Text("a multiple of 512 B (O_DIRECT); threads × file_size / io_size × 3 ≤ 2^24 calls"),
                "bytes per read/write call",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "write_gibps",
                "GiB/s",
                "allocating write (row key `threads`)",
            ),
            s::m("overwrite_gibps", "GiB/s", "overwrite in place"),
            s::m("read_gibps", "GiB/s", "read back"),
            s::m("disk_busy_pct", "%", "mean disk utilisation while reading"),
            s::ENOSPC,
        ],
        example_machine: "altix-a3700",
        example_kernel: "",
        example:
            "workload = \"direct-io\"\nfs = \"xfs\"\nthreads = [1, 4]\nfile_size = \"256 MiB\"\n",
        row_keys: &[],
    },
    parse: |r, m| parse("direct-io", r, m),
};

/// The `buffered-read` workload: its keys, metrics and example, and its reader.
pub const BUFFERED_READ: Workload = Workload {
    spec: s::Spec {
            name: "buffered-read",
            about: "files laid down by parallel dd writers, then read back one per thread through the page cache",
            params: &[s::FS, s::IO_THREADS, s::STRIPE_UNIT, s::BLOCK_SIZE, s::file_size("\"128 MiB\""), s::READAHEAD],
            one_of: &[],
            metrics: &[
                s::m("read_gibps", "GiB/s", "all readers together (row key `threads`)"),
                s::m("cpu_pct_per_mibps", "%/(MiB/s)", "percent of one CPU per MiB/s, every CPU's I/O work counted"),
                s::m("disk_iops", "1/s", "disk requests per second"),
                s::m("avg_io_kib", "KiB", "average disk request"),
                s::m("kswapd_cpu_pct_per_node", "%", "kswapd's CPU on each node (mean)"),
                s::m("disk_busy_pct", "%", "mean disk utilisation"),
                s::ENOSPC,
            ],
            example_machine: "altix-a3700",
            example_kernel: "version = \"2.6.15\"\nbuffer_policy = \"interleave\"\n",
            example: "workload = \"buffered-read\"\nfs = \"xfs\"\nthreads = [1, 8]\n",
            row_keys: &[],
    },
    parse: |r, m| parse("buffered-read", r, m),
};

/// The `read-variability` workload: its keys, metrics and example, and its reader.
pub const READ_VARIABILITY: Workload = Workload {
    spec: s::Spec {
            name: "read-variability",
            about: "buffered reads of file sets laid down by parallel writers, repeated over seeds",
            params: &[
                s::FS,
                s::IO_THREADS,
                s::STRIPE_UNIT,
                s::BLOCK_SIZE,
                s::file_size("\"128 MiB\""),
                s::READAHEAD,
                s::p("seeds", s::Kind::Int, "", s::Default::Value("10"), s::Range::Int(1, 100), "repetitions, seeds seed .. seed + seeds − 1"),
            ],
            one_of: &[],
            metrics: &[
                s::m("best_mibps", "MiB/s", "fastest repetition (row key `threads`)"),
                s::m("worst_mibps", "MiB/s", "slowest repetition"),
                s::m("mean_mibps", "MiB/s", "mean over repetitions"),
                s::ENOSPC,
            ],
            example_machine: "altix-a3700",
            example_kernel: "buffer_policy = \"interleave\"\n",
            example: "workload = \"read-variability\"\nfs = \"ext2\"\nthreads = [2]\nseeds = 3\nfile_size = \"32 MiB\"\n",
            row_keys: &[],
    },
    parse: |r, m| parse("read-variability", r, m),
};

/// The `buffered-write` workload: its keys, metrics and example, and its reader.
pub const BUFFERED_WRITE: Workload = Workload {
    spec: s::Spec {
        name: "buffered-write",
        about: "buffered writes, one file per thread, the previous file truncated in the timed run",
        params: &[
            s::FS,
            s::IO_THREADS,
            s::STRIPE_UNIT,
            s::BLOCK_SIZE,
            s::file_size("\"1 GiB\""),
            s::p(
                "remount",
                s::Kind::Bool,
                "",
                s::Default::Value("false"),
                s::Range::Any,
                "start from memory 99% free, as after XFS06's remount (pdflush and kswapd then work only once the dirty pages pass the background threshold or expire, and once memory is down to the watermarks); false: the steady state with memory full of page cache",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m("write_mibps", "MiB/s", "all writers together (row key `threads`)"),
            s::m("cpu_pct_per_mibps", "%/(MiB/s)", "percent of one CPU per MiB/s"),
            s::m("avg_io_kib", "KiB", "average disk write"),
            s::m("kswapd_cpu_pct_per_node", "%", "kswapd's CPU on each node"),
            s::m("pdflush_cpu_pct", "%", "pdflush's CPU (of one CPU)"),
            s::m("sb_lock_wait_pct", "%", "writers' time waiting for the filesystem's global lock"),
            s::m("sb_calls_per_s", "1/s", "critical sections entered per second"),
            s::m("disk_busy_pct", "%", "mean disk utilisation over the timed run"),
            s::m(
                "writeback_age_s",
                "s",
                "how long after being dirtied a page is written back (pdflush's periodic pass, background writeout, the dirty threshold, or its node's LRU tail)",
            ),
            s::m("kswapd_cpu_pct_max", "%", "the busiest node's kswapd"),
            s::m(
                "reclaim_write_pct",
                "%",
                "share of the written-back bytes reclaim wrote itself from the LRU tails (kswapd's pageout(), or the writers' direct reclaim)",
            ),
            s::ENOSPC,
        ],
        example_machine: "altix-a3700",
        example_kernel: "version = \"2.6.17\"\n",
        example: "workload = \"buffered-write\"\nfs = \"xfs\"\nthreads = [1, 4]\n",
        row_keys: &[],
    },
    parse: |r, m| parse("buffered-write", r, m),
};
