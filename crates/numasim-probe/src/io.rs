//! Sequential file throughput in the scratch directory, buffered and direct,
//! with the CPU time it costs: the [XFS06] efficiency metric
//! `cpu_pct_per_mibps` (percent of one CPU per MiB/s; lower is better).

use crate::sys::{self, Mapping, PageKind};
use std::io::{self, Read, Write};
use std::path::Path;

#[derive(Debug, Clone, Copy)]
pub struct Throughput {
    pub mibps: f64,
    /// CPU time of the calling thread during the transfer, as a percentage
    /// of one CPU, divided by the MiB/s achieved.
    pub cpu_pct_per_mibps: f64,
    /// (max - min) / median of the repetitions' MiB/s (0 for one).
    pub spread: f64,
    /// The device's requests over the transfer, where its
    /// `/sys/block/<dev>/stat` was read (the mean over repetitions after
    /// [`median`]).
    pub device: Option<DevDelta>,
}

/// Requests the scratch directory's device completed over a transfer,
/// their 512-byte sectors, and the milliseconds it had one in flight
/// (`/sys/block/<dev>/stat`'s "read I/Os" and "read sectors", or the
/// write pair, and "io_ticks"; Documentation/block/stat.rst). The counters
/// are the whole device's: another program's I/O in the same seconds counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DevDelta {
    pub requests: f64,
    pub sectors: f64,
    /// Milliseconds the device had a request in flight ("io_ticks").
    pub busy_ms: f64,
    /// The transfer's wall time, ms, where the pass knows it (0: not).
    pub wall_ms: f64,
}

impl DevDelta {
    /// The share of the transfer's wall time the device was busy,
    /// percent; `None` where the wall time is not known.
    pub fn busy_pct(&self) -> Option<f64> {
        (self.wall_ms > 0.0).then(|| 100.0 * self.busy_ms / self.wall_ms)
    }
    /// Mean bytes per request (0 for none).
    pub fn avg_bytes(&self) -> f64 {
        if self.requests > 0.0 {
            self.sectors * 512.0 / self.requests
        } else {
            0.0
        }
    }
}

/// A device's `stat` file: read before and after a transfer.
#[derive(Debug, Clone)]
pub struct DevStat(pub std::path::PathBuf);

impl DevStat {
    /// (read I/Os, read sectors, write I/Os, write sectors, io_ticks ms).
    fn sample(&self) -> Option<[u64; 5]> {
        let text = std::fs::read_to_string(&self.0).ok()?;
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        (f.len() >= 10).then(|| [f[0], f[2], f[4], f[6], f[9]])
    }

    /// The change between two samples, reads or writes.
    fn delta(a: Option<[u64; 5]>, b: Option<[u64; 5]>, write: bool) -> Option<DevDelta> {
        let (a, b) = (a?, b?);
        let i = if write { 2 } else { 0 };
        Some(DevDelta {
            requests: b[i].saturating_sub(a[i]) as f64,
            sectors: b[i + 1].saturating_sub(a[i + 1]) as f64,
            busy_ms: b[4].saturating_sub(a[4]) as f64,
            wall_ms: 0.0,
        })
    }
}

/// The error a pass returns when the user stopped the probe (`lib.rs`
/// turns it into `ProbeError::Interrupted`).
fn interrupted() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "interrupted")
}

/// `dev`'s sample, where there is a device.
fn sample(dev: Option<&DevStat>) -> Option<[u64; 5]> {
    dev.and_then(DevStat::sample)
}

#[derive(Debug, Clone, Copy)]
pub struct SeqResult {
    pub write: Throughput,
    pub read: Throughput,
    /// For a buffer of transparent huge pages: the share of the call
    /// buffer that `/proc/self/smaps` shows in huge pages (`AnonHugePages`),
    /// percent (the mean over repetitions); `None` for base pages.
    pub huge_pct: Option<f64>,
    /// The call buffer's physically contiguous runs (after [`median`]:
    /// the repetition whose read rate is recorded), where
    /// `/proc/self/pagemap` shows frame numbers.
    pub phys_runs: Option<f64>,
    /// A buffered read's file in the page cache after it, its mean
    /// physically contiguous run in bytes (the mean over repetitions),
    /// where pagemap shows frame numbers: the segments its requests were
    /// built of (round 17).
    pub cache_run: Option<f64>,
}

/// Write then read back a `bytes`-long file in `block`-sized requests,
/// `reps` times; the median throughput of each (with its CPU cost), as
/// fio reports a mean rather than a best run. `Ok(None)`: the filesystem
/// refuses `O_DIRECT`.
pub fn sequential(
    dir: &Path,
    bytes: u64,
    block: usize,
    direct: bool,
    reps: usize,
) -> io::Result<Option<SeqResult>> {
    let mut runs = Vec::new();
    for _ in 0..reps {
        match once(dir, bytes, block, direct, PageKind::Base, None)? {
            Some(r) => runs.push(r),
            None => return Ok(None),
        }
    }
    Ok(median(&runs))
}

/// One repetition of [`sequential`]: buffered writes are timed through
/// `fsync`; buffered reads start with the file's pages dropped from the
/// page cache (`POSIX_FADV_DONTNEED`). `Ok(None)`: the filesystem refuses
/// `O_DIRECT`. The call buffer has `pages` (a direct request's segments
/// are its pages, merged where physically adjacent); `dev`, where given,
/// counts the device's requests over each transfer.
pub fn once(
    dir: &Path,
    bytes: u64,
    block: usize,
    direct: bool,
    pages: PageKind,
    dev: Option<&DevStat>,
) -> io::Result<Option<SeqResult>> {
    let path = dir.join(if direct {
        "seq-direct.dat"
    } else {
        "seq-buffered.dat"
    });
    let mut buf = Mapping::new(block, pages)?;
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i * 7 + 1) as u8;
    }
    // MADV_HUGEPAGE is advice: whether the faults got huge pages is
    // read back, since a direct request's segments depend on it.
    let phys_runs = buf.phys_runs().map(|n| n as f64);
    let huge_pct = (pages == PageKind::Thp).then(|| {
        buf.thp_bytes()
            .map_or(0.0, |b| (b as f64 / block as f64).min(1.0) * 100.0)
    });
    let blocks = (bytes / block as u64).max(1);
    let mib = (blocks * block as u64) as f64 / (1 << 20) as f64;
    // write
    let f = if direct {
        match sys::open_direct(&path, true)? {
            Some(f) => f,
            None => return Ok(None),
        }
    } else {
        std::fs::File::create(&path)?
    };
    let mut f = f;
    let s0 = sample(dev);
    let (t0, c0) = (sys::monotonic_ns(), sys::thread_cpu_ns());
    if !write_blocks(&mut f, buf.as_slice(), blocks, &path, direct)? {
        return Ok(None);
    }
    let mut w = throughput(mib, t0, c0);
    w.device = timed(DevStat::delta(s0, sample(dev), true), mib, &w);
    drop(f);
    // read
    let mut f = if direct {
        match sys::open_direct(&path, false)? {
            Some(f) => f,
            None => return Ok(None),
        }
    } else {
        let f = std::fs::File::open(&path)?;
        sys::drop_file_cache(&f)?;
        f
    };
    let s0 = sample(dev);
    let (t0, c0) = (sys::monotonic_ns(), sys::thread_cpu_ns());
    let mut got = 0u64;
    loop {
        let n = f.read(buf.as_mut_slice())?;
        if n == 0 {
            break;
        }
        got += n as u64;
        if sys::stop_requested() {
            let _ = std::fs::remove_file(&path);
            return Err(interrupted());
        }
    }
    let mut r = throughput(got as f64 / (1 << 20) as f64, t0, c0);
    r.device = timed(
        DevStat::delta(s0, sample(dev), false),
        got as f64 / (1 << 20) as f64,
        &r,
    );
    // After the timed read: the folios it read into, as they lie.
    let cache_run = if direct {
        None
    } else {
        let page = sys::page_size();
        sys::file_cache_runs(&f, got).map(|n| (got / page * page) as f64 / n.max(1) as f64)
    };
    drop(f);
    let _ = std::fs::remove_file(&path);
    Ok(Some(SeqResult {
        write: w,
        read: r,
        huge_pct,
        phys_runs,
        cache_run,
    }))
}

/// The median of repetitions, write and read each, with its spread
/// (max − min) / median; `None` for none.
pub fn median(runs: &[SeqResult]) -> Option<SeqResult> {
    if runs.is_empty() {
        return None;
    }
    let median = |pick: fn(&SeqResult) -> Throughput| {
        let mut v: Vec<Throughput> = runs.iter().map(pick).collect();
        v.sort_by(|a, b| a.mibps.total_cmp(&b.mibps));
        let mut m = v[(v.len() - 1) / 2];
        m.spread = (v[v.len() - 1].mibps - v[0].mibps) / m.mibps.max(1e-9);
        m.device = mean_delta(v.iter().map(|t| t.device));
        m
    };
    let huge: Option<Vec<f64>> = runs.iter().map(|r| r.huge_pct).collect();
    let reads: Vec<f64> = runs.iter().map(|r| r.read.mibps).collect();
    Some(SeqResult {
        write: median(|r| r.write),
        read: median(|r| r.read),
        huge_pct: huge.map(|h| h.iter().sum::<f64>() / h.len() as f64),
        // The buffer of the repetition whose read is the recorded one
        // (round 20c): a mean over repetitions whose buffers differed
        // (one past max_segments, one not) describes neither call.
        phys_runs: runs[median_index(&reads)].phys_runs,
        cache_run: runs
            .iter()
            .map(|r| r.cache_run)
            .collect::<Option<Vec<f64>>>()
            .map(|v| v.iter().sum::<f64>() / v.len() as f64),
    })
}

/// The index of the value [`median`] records: the lower middle of the
/// sorted values (`--quick`'s two repetitions: the lower one).
pub fn median_index(v: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    idx.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// The mean of the repetitions' device counts; `None` unless every one
/// has them.
pub fn mean_delta(d: impl Iterator<Item = Option<DevDelta>>) -> Option<DevDelta> {
    let mut n = 0.0;
    let mut sum = DevDelta {
        requests: 0.0,
        sectors: 0.0,
        busy_ms: 0.0,
        wall_ms: 0.0,
    };
    for x in d {
        let x = x?;
        sum.requests += x.requests;
        sum.sectors += x.sectors;
        sum.busy_ms += x.busy_ms;
        sum.wall_ms += x.wall_ms;
        n += 1.0;
    }
    (n > 0.0).then(|| DevDelta {
        requests: sum.requests / n,
        sectors: sum.sectors / n,
        busy_ms: sum.busy_ms / n,
        wall_ms: sum.wall_ms / n,
    })
}

/// `d` with the wall time of the transfer it counted: `mib` at `t`'s rate.
fn timed(d: Option<DevDelta>, mib: f64, t: &Throughput) -> Option<DevDelta> {
    d.map(|d| DevDelta {
        wall_ms: mib / t.mibps.max(1e-9) * 1e3,
        ..d
    })
}

fn throughput(mib: f64, t0: u64, c0: u64) -> Throughput {
    let wall = (sys::monotonic_ns() - t0).max(1) as f64 / 1e9;
    let cpu = (sys::thread_cpu_ns() - c0) as f64 / 1e9;
    let mibps = mib / wall;
    Throughput {
        mibps,
        cpu_pct_per_mibps: (cpu / wall * 100.0) / mibps.max(1e-9),
        spread: 0.0,
        device: None,
    }
}

/// The queue-depth sweep's file: `bytes` written with `O_DIRECT` in 1 MiB
/// calls and synced. `Ok(None)`: the filesystem refuses `O_DIRECT`.
pub fn depth_file(dir: &Path, bytes: u64) -> io::Result<Option<std::path::PathBuf>> {
    let path = dir.join("depth-direct.dat");
    let block = 1usize << 20;
    let Some(mut f) = sys::open_direct(&path, true)? else {
        return Ok(None);
    };
    let mut buf = Mapping::new(block, PageKind::Base)?;
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i * 13 + 5) as u8;
    }
    if !write_blocks(
        &mut f,
        buf.as_slice(),
        (bytes / block as u64).max(1),
        &path,
        true,
    )? {
        return Ok(None);
    }
    Ok(Some(path))
}

/// Write `buf` `blocks` times to `f` (the file at `path`) and sync it.
/// `Ok(false)`: a direct write refused (`EINVAL`: the filesystem takes no
/// `O_DIRECT`); on that, an error or a stop the file is removed.
fn write_blocks(
    f: &mut std::fs::File,
    buf: &[u8],
    blocks: u64,
    path: &Path,
    direct: bool,
) -> io::Result<bool> {
    for _ in 0..blocks {
        if let Err(e) = f.write_all(buf) {
            let _ = std::fs::remove_file(path);
            if direct && e.raw_os_error() == Some(libc::EINVAL) {
                return Ok(false);
            }
            return Err(e);
        }
        if sys::stop_requested() {
            let _ = std::fs::remove_file(path);
            return Err(interrupted());
        }
    }
    f.sync_all()?;
    Ok(true)
}

/// One thread's bytes read, its call buffer's physical runs and the CPU
/// time its reads took.
type ThreadGot = io::Result<Option<(u64, Option<u64>, u64)>>;

/// One point of the queue-depth sweep.
#[derive(Debug, Clone, Copy)]
pub struct DepthPass {
    /// All threads together.
    pub mibps: f64,
    /// The device's requests over the point, with the point's wall time
    /// (so its busy share: a device that never idles at depth 8 is the
    /// bottleneck; one that idles is waiting on the readers).
    pub device: Option<DevDelta>,
    /// A thread's call buffer in physical runs, the mean over threads.
    pub runs: Option<f64>,
    /// The reading threads' CPU time over the point, percent of one CPU
    /// per MiB/s (as `Throughput::cpu_pct_per_mibps`, summed over them).
    pub cpu_pct_per_mibps: f64,
}

/// `depth` threads reading `path` with `O_DIRECT` at once, each its own
/// `bytes / depth` of it front to back in `block` calls: `depth` requests
/// in flight, as fio's `--numjobs=depth --offset_increment` with
/// `--ioengine=psync` keeps them. MiB/s of all the threads together,
/// from the first call to the last thread's end: each thread opens the
/// file and faults its buffer in first, and the clock starts once all
/// have (round 19: 8 threads faulting 4 MiB buffers on 2 vCPUs took
/// milliseconds of the point's time, as fio leaves a job's setup out).
/// `Ok(None)`: the filesystem refuses `O_DIRECT` at this size.
pub fn direct_depth(
    path: &Path,
    bytes: u64,
    block: usize,
    depth: usize,
    dev: Option<&DevStat>,
) -> io::Result<Option<DepthPass>> {
    let depth = depth.max(1);
    let per = (bytes / depth as u64 / block as u64).max(1);
    // Every thread waits here once, set up or not, so none is left
    // waiting on one that failed; the last to arrive starts the clock.
    let ready = std::sync::Barrier::new(depth);
    let start = std::sync::OnceLock::new();
    let got: Vec<ThreadGot> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..depth)
            .map(|t| {
                let (ready, start) = (&ready, &start);
                s.spawn(move || -> ThreadGot {
                    use std::os::unix::fs::FileExt;
                    type Ready = (std::fs::File, Mapping, Option<u64>);
                    let setup = (|| -> io::Result<Option<Ready>> {
                        let Some(f) = sys::open_direct(path, false)? else {
                            return Ok(None);
                        };
                        let mut buf = Mapping::new(block, PageKind::Base)?;
                        buf.as_mut_slice().fill(0);
                        let runs = buf.phys_runs();
                        Ok(Some((f, buf, runs)))
                    })();
                    if ready.wait().is_leader() {
                        let _ = start.set((sample(dev), sys::monotonic_ns()));
                    }
                    let Some((f, mut buf, runs)) = setup? else {
                        return Ok(None);
                    };
                    let first = t as u64 * per * block as u64;
                    let c0 = sys::thread_cpu_ns();
                    let mut n = 0u64;
                    for i in 0..per {
                        match f.read_at(buf.as_mut_slice(), first + i * block as u64) {
                            Ok(k) => n += k as u64,
                            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(None),
                            Err(e) => return Err(e),
                        }
                        if sys::stop_requested() {
                            return Err(interrupted());
                        }
                    }
                    Ok(Some((n, runs, sys::thread_cpu_ns() - c0)))
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("reader panicked")))
            })
            .collect()
    });
    let (s0, t0) = start.get().copied().unwrap_or((None, sys::monotonic_ns()));
    let wall = (sys::monotonic_ns() - t0).max(1) as f64 / 1e9;
    let counted = DevStat::delta(s0, sample(dev), false);
    let mut total = 0u64;
    let mut cpu = 0u64;
    let mut runs = Some(0u64);
    for g in got {
        match g? {
            Some((n, r, c)) => {
                total += n;
                cpu += c;
                runs = runs.zip(r).map(|(a, b)| a + b);
            }
            None => return Ok(None),
        }
    }
    let mibps = total as f64 / (1 << 20) as f64 / wall;
    Ok(Some(DepthPass {
        mibps,
        device: counted.map(|d| DevDelta {
            wall_ms: wall * 1e3,
            ..d
        }),
        runs: runs.map(|r| r as f64 / depth as f64),
        cpu_pct_per_mibps: (cpu as f64 / 1e9 / wall * 100.0) / mibps.max(1e-9),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round 20c: the recorded buffer is the recorded read's. Two
    /// repetitions (`--quick`), the slower of 256 runs (past
    /// `max_segments`: two requests a call) and the faster of 200: the
    /// record is the slower read with its 256 runs, where the mean (228)
    /// would describe neither call.
    #[test]
    fn the_recorded_buffer_is_the_recorded_reads() {
        let rep = |mibps: f64, runs: f64| {
            let t = Throughput {
                mibps,
                cpu_pct_per_mibps: 0.0,
                spread: 0.0,
                device: None,
            };
            SeqResult {
                write: t,
                read: t,
                huge_pct: None,
                phys_runs: Some(runs),
                cache_run: None,
            }
        };
        let m = median(&[rep(2000.0, 200.0), rep(1200.0, 256.0)]).unwrap();
        assert_eq!((m.read.mibps, m.phys_runs), (1200.0, Some(256.0)));
        let m = median(&[rep(900.0, 10.0), rep(1500.0, 30.0), rep(1100.0, 20.0)]).unwrap();
        assert_eq!((m.read.mibps, m.phys_runs), (1100.0, Some(20.0)));
        assert_eq!(median_index(&[3.0, 1.0, 2.0, 4.0]), 2);
        assert_eq!(median_index(&[]), 0);
    }

    /// The device counters are read from the fields Documentation/block/
    /// stat.rst gives them (read I/Os 1, read sectors 3, write I/Os 5,
    /// write sectors 7, io_ticks 10), and the busy share is io_ticks over
    /// the pass's wall time: a wrong field index reads another counter.
    #[test]
    fn the_device_counters_come_from_their_stat_fields() {
        let dir = std::env::temp_dir().join(format!("numasim-devstat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stat");
        let stat = DevStat(path.clone());
        let line = |f: [u64; 11]| {
            let v: Vec<String> = f.iter().map(|x| x.to_string()).collect();
            std::fs::write(&path, v.join(" ") + "\n").unwrap();
        };
        line([10, 1, 800, 7, 20, 2, 1600, 9, 0, 100, 300]);
        let a = stat.sample();
        line([74, 3, 8992, 99, 21, 2, 1608, 19, 1, 350, 900]);
        let b = stat.sample();
        let r = DevStat::delta(a, b, false).unwrap();
        assert_eq!((r.requests, r.sectors, r.busy_ms), (64.0, 8192.0, 250.0));
        assert_eq!(r.avg_bytes(), 65536.0);
        assert_eq!(r.busy_pct(), None);
        let w = DevStat::delta(a, b, true).unwrap();
        assert_eq!((w.requests, w.sectors), (1.0, 8.0));
        let t = Throughput {
            mibps: 1000.0,
            cpu_pct_per_mibps: 0.0,
            spread: 0.0,
            device: None,
        };
        // 500 MiB at 1,000 MiB/s: 500 ms, 250 of them busy.
        let timed = timed(Some(r), 500.0, &t).unwrap();
        assert!((timed.busy_pct().unwrap() - 50.0).abs() < 1e-9);
        // An old kernel's short line (no io_ticks) gives no sample.
        std::fs::write(&path, "1 2 3 4 5 6 7\n").unwrap();
        assert!(stat.sample().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The sweep's threads wait for each other once before the clock
    /// starts (round 19), so a thread whose setup fails must still reach
    /// that barrier: four readers of a file that is not there return the
    /// error instead of leaving three waiting forever. Where the test's
    /// directory takes `O_DIRECT`, four readers of a small file read all
    /// of it, and the point carries its wall time (so a busy share) and
    /// the readers' CPU.
    #[test]
    fn the_sweeps_readers_start_together_and_a_failed_one_releases_the_rest() {
        let dir = std::env::temp_dir().join(format!("numasim-depth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("absent.dat");
        assert!(direct_depth(&missing, 4 << 20, 1 << 20, 4, None).is_err());
        let stat_path = dir.join("stat");
        std::fs::write(&stat_path, "1 0 8 0 0 0 0 0 0 10 0\n").unwrap();
        let stat = DevStat(stat_path);
        if let Some(path) = depth_file(&dir, 4 << 20).unwrap() {
            if let Some(p) = direct_depth(&path, 4 << 20, 1 << 20, 4, Some(&stat)).unwrap() {
                assert!(p.mibps > 0.0 && p.cpu_pct_per_mibps >= 0.0);
                let d = p.device.unwrap();
                assert!(d.wall_ms > 0.0 && d.busy_pct().is_some());
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
