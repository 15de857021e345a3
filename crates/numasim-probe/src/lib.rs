//! numasim-probe: measures the real host with the micro-benchmarks of the
//! papers numasim replays, reports tidy records (`experiment = "probe"`) and
//! calibrates a machine description from them. The only crate of numasim
//! with `unsafe` code and raw system calls (all in [`sys`]).
//!
//! See `docs/probe.md` for how each figure is measured and what machine
//! parameter it sets.

pub mod bench;
pub mod calibrate;
pub mod contention;
pub mod hierarchy;
pub mod io;
pub mod iofit;
pub mod mem;
pub mod memsys;
pub mod scratch;
pub mod sys;
pub mod topology;
pub mod validate;

// Progress lines never panic: a stderr that is a closed pipe loses them
// (std's `eprintln!` would panic). Shadows std's `eprintln!` in this crate's
// root module.
macro_rules! eprintln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

use bench::{size_label, Effort};
use calibrate::Measurements;
use numasim::machine::Machine;
use numasim::report::Record;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use sys::PageKind;
use topology::Topology;

pub const EXPERIMENT: &str = "probe";

/// Every metric name a probe run reports (section G of the experiments spec).
pub const SPEC_METRICS: &[&str] = &[
    "copy_mbps",
    "random_mbps",
    "mem_latency_ns",
    "fault_per_s",
    "gettimeofday_ns",
    "atomic_add_ns",
    "seq_write_mibps",
    "seq_read_mibps",
    "cpu_pct_per_mibps",
    "mem_total_kb",
    "mem_free_kb",
];

/// `numasim probe` options.
#[derive(clap::Args, Debug, Clone)]
pub struct ProbeArgs {
    /// Short run: fewer sizes and repetitions (about a minute on a 2-CPU host)
    #[arg(long)]
    pub quick: bool,
    /// Write a machine TOML calibrated from the measurements (use it as
    /// `[machine] preset = "FILE"`)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Directory for the temporary files of the I/O tests; a fresh
    /// subdirectory is made there and removed afterwards [default: system temp dir]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Most memory to use, as a percentage of the memory available now
    #[arg(long, value_name = "PCT", default_value_t = 25)]
    pub mem_share_pct: u32,
    /// Most threads (and processes) to run at once [default: every CPU this process may use]
    #[arg(long, value_name = "N")]
    pub max_threads: Option<usize>,
    /// Skip the file I/O tests
    #[arg(long)]
    pub no_io: bool,
    /// No progress lines on stderr
    #[arg(long)]
    pub quiet: bool,
    /// After fitting, simulate the probe's micro-benchmarks on the fitted
    /// machine and print measured beside simulated (`probe-validate` records)
    #[arg(long)]
    pub validate: bool,
    /// Measure nothing: fit (and with --validate, check) the machine from a
    /// probe run saved with `--format jsonl`
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Where the NUMA nodes are listed (sysfs)
    #[arg(
        long,
        value_name = "DIR",
        default_value = "/sys/devices/system/node",
        hide = true
    )]
    pub node_root: PathBuf,
}

impl Default for ProbeArgs {
    fn default() -> Self {
        ProbeArgs {
            quick: false,
            out: None,
            dir: None,
            mem_share_pct: 25,
            max_threads: None,
            no_io: false,
            quiet: false,
            validate: false,
            from: None,
            node_root: PathBuf::from("/sys/devices/system/node"),
        }
    }
}

/// What a probe run found.
#[derive(Debug, Clone)]
pub struct ProbeReport {
    pub records: Vec<Record>,
    /// Statistics used, missing features, fallbacks, agreement checks.
    pub notes: Vec<String>,
    /// The calibrated machine (already validated by a TOML round trip).
    pub machine: Machine,
    /// `machine.to_toml_string()`, as written to `--out`.
    pub machine_toml: String,
    /// The scratch directory used (removed before `run` returns).
    pub scratch_dir: Option<PathBuf>,
    pub elapsed: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProbeError {
    /// Bad options or paths: the user's to fix (exit status 2).
    Input(String),
    /// A measurement or the host failed us (exit status 1).
    Internal(String),
    /// SIGINT/SIGTERM arrived; temporary files were removed (the command
    /// exits 130 with a plain message: an interrupt is not a bug).
    Interrupted,
}

impl ProbeError {
    pub fn is_bad_input(&self) -> bool {
        matches!(self, ProbeError::Input(_))
    }
    /// 2 for bad input, 1 otherwise (ARCHITECTURE.md's convention).
    pub fn exit_code(&self) -> i32 {
        if self.is_bad_input() {
            2
        } else {
            1
        }
    }
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeError::Input(m) => write!(f, "{m}"),
            ProbeError::Internal(m) => write!(f, "probe failed: {m}"),
            ProbeError::Interrupted => write!(f, "probe interrupted; temporary files removed"),
        }
    }
}

impl std::error::Error for ProbeError {}

fn internal(what: &str) -> impl Fn(std::io::Error) -> ProbeError + '_ {
    move |e| {
        if sys::stop_requested() || e.kind() == std::io::ErrorKind::Interrupted {
            ProbeError::Interrupted
        } else {
            ProbeError::Internal(format!("{what}: {e}"))
        }
    }
}

fn check_stop() -> Result<(), ProbeError> {
    if sys::stop_requested() {
        Err(ProbeError::Interrupted)
    } else {
        Ok(())
    }
}

/// Sizes measured beside the 4x sweep, near where a private L2 (1-2
/// MiB) and a shared L3 (16-32 MiB per guest) end: the chase at 512
/// KiB, 2, 8 and 32 MiB pins an L2's and an L3's reach, and the copy at
/// 6, 8 and 12 MiB spans the L3's reach to memory's (docs/probe.md,
/// rounds 17b and 17c). Every figure is measured at each: a size costs
/// a round of its four figures per page kind, about 1.3 s of `--quick`.
const BOUNDARY_SIZES: [u64; 6] = [512 << 10, 2 << 20, 6 << 20, 8 << 20, 12 << 20, 32 << 20];

/// Sizes (4 KiB pages) where the read-only and write-only streams are
/// timed too: from a 1 MiB L2 past a 32 MiB L3, where a copy's rate
/// turns with the caches (issue 36, round 22; docs/probe.md). About
/// 2.7 s of `--quick`.
const STREAM_SIZES: [u64; 9] = [
    1 << 20,
    2 << 20,
    4 << 20,
    6 << 20,
    8 << 20,
    12 << 20,
    16 << 20,
    32 << 20,
    64 << 20,
];

/// The figures of a buffer's pass the fit uses (copy, copy loop, random
/// reads, chase), first in `mem::BufferRates`: only they make a pass be
/// measured again. The read and write streams after them are measured
/// alongside and fitted to nothing yet.
const FITTED_FIGURES: usize = 4;

/// How much to measure in each mode.
#[derive(Debug, Clone)]
struct Plan {
    effort: Effort,
    sizes: Vec<u64>,
    latency_max: u64,
    fault_bytes: u64,
    io_bytes: u64,
    io_reps: usize,
    all_pairs: bool,
}

impl Plan {
    fn new(quick: bool, budget: u64) -> Plan {
        let (effort, top, latency_max, fault, io, io_reps) = if quick {
            (
                Effort {
                    rep_time: Duration::from_millis(30),
                    reps: 5,
                },
                1u64 << 30,
                256u64 << 20,
                512u64 << 20,
                256u64 << 20,
                2,
            )
        } else {
            (
                Effort {
                    rep_time: Duration::from_millis(200),
                    reps: 5,
                },
                4 << 30,
                1 << 30,
                4 << 30,
                2 << 30,
                3,
            )
        };
        let mut sizes = Vec::new();
        let mut s = 16u64 << 10;
        while s <= top && s <= budget {
            sizes.push(s);
            s *= 4;
        }
        // Sizes between the 4x steps where caches end (issue 36, round
        // 17c): with one size each side of a step, every reach between
        // them scored alike.
        sizes.extend(BOUNDARY_SIZES.iter().filter(|&&b| b <= top && b <= budget));
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.is_empty() {
            sizes.push(16 << 10);
        }
        Plan {
            effort,
            sizes,
            latency_max,
            fault_bytes: fault.min(budget).max(16 << 20),
            io_bytes: io.min(budget).max(16 << 20),
            io_reps,
            all_pairs: !quick,
        }
    }
}

impl Plan {
    /// Rough running time, from the work planned and this kind of host's
    /// speeds (about 1 GB/s to fill fresh memory, 400k faults/s,
    /// 500 MB/s of file I/O); printed up front.
    fn estimate_s(&self, kinds: usize, counts: usize, io: bool, pairs: usize) -> f64 {
        let figure = self.effort.reps as f64 * self.effort.rep_time.as_secs_f64();
        let n = self.sizes.len() as f64;
        let fill: f64 = self.sizes.iter().map(|&s| s as f64 / 1e9).sum();
        let streams = self
            .sizes
            .iter()
            .filter(|s| STREAM_SIZES.contains(s))
            .count() as f64;
        let memory = n * (kinds as f64 * 4.0 + 1.0) * figure
            + 2.0 * streams * figure
            + (kinds as f64 + 1.0) * 1.5 * fill;
        let faults_one = self.fault_bytes as f64 / 4096.0 / 400e3;
        let faults = 2.0 * counts as f64 * self.effort.reps as f64 * faults_one * 1.3;
        let scaling = counts as f64 * 4.0 * figure;
        let io_s = if io {
            // The passes at queue depth 1, then the queue-depth sweep
            // (at most two call sizes, each depth reading the file once).
            let sweep = (self.io_reps.max(3) * 2 * SWEEP_DEPTHS.len()) as f64;
            (2.0 * self.io_reps as f64 * 2.0 + sweep) * self.io_bytes as f64 / 500e6
        } else {
            0.0
        };
        let remote = pairs as f64 * (2.0 * figure + 0.5);
        1.0 + memory + figure + faults + scaling + io_s + remote
    }
}

struct Progress {
    quiet: bool,
    start: Instant,
    step: usize,
    total: usize,
}

impl Progress {
    fn stage(&mut self, what: &str) {
        self.step += 1;
        if !self.quiet {
            eprintln!(
                "probe [{}/{} +{:.1}s] {what}",
                self.step,
                self.total,
                self.start.elapsed().as_secs_f64()
            );
        }
    }
}

fn rec(case: Vec<(&str, Value)>, metric: &str, unit: &str, value: f64) -> Record {
    Record::new(
        EXPERIMENT,
        case.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        metric,
        unit,
        value,
    )
}

/// A measured record with its spread over the repetitions.
fn rec_s(case: Vec<(&str, Value)>, metric: &str, unit: &str, value: f64, spread: f64) -> Record {
    let mut r = rec(case, metric, unit, value);
    r.spread = Some(spread);
    r
}

/// Share of the memory rounds' own time that extra rounds of disturbed
/// passes may take: on a quiet host a few passes, a second or two of
/// `--quick`'s minute.
const REPEAT_SHARE: f64 = 0.1;

/// Passes of the memory sweep with no agreeing majority among their
/// rounds (a disturbed stretch holding the median: live19-1's 1 GiB
/// huge-page copy read 8.2 GB/s over five rounds, spread 199%, where
/// the copy loop of the same buffers read 18.1 at 3%) are measured up to
/// `bench::MAX_EXTRA_ROUNDS` more rounds each, and each of their figures
/// keeps `bench::kept` for its value (issue 36, round 20). Its spread
/// stays the one over every round measured, the extra ones included
/// (returned per pass, `None` where not repeated): the kept majority
/// says where the figure is, all the rounds say how much the host moved
/// it, and a validation row is judged against the latter. From the
/// largest buffer down: there one pass calibrates memory
/// (`stream_mbps`, `mlp`, the DRAM latency); at the shared L3's edge the
/// spread is the other tenants' share of it, which a repeat does not
/// remove. Within [`REPEAT_SHARE`] of the rounds' time; a note names
/// what was repeated.
fn repeat_disturbed_passes(
    plans: &[(usize, mem::SizePlan)],
    rates: &mut [Option<mem::BufferRates>],
    one: Effort,
    reps: usize,
    rounds_took: Duration,
    seed: impl Fn(usize, usize) -> u64,
    notes: &mut Vec<String>,
) -> Vec<Option<[f64; 6]>> {
    let mut every_round = vec![None; plans.len()];
    const NAMES: [&str; 6] = [
        "copy_mbps",
        "copy_loop_mbps",
        "random_mbps",
        "mem_latency_ns",
        "read_mbps",
        "write_mbps",
    ];
    let budget = rounds_took.mul_f64(REPEAT_SHARE);
    let start = Instant::now();
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&j| std::cmp::Reverse(plans[j].1.size));
    let (mut said, mut left) = (Vec::new(), 0);
    for j in order {
        let (i, p) = plans[j];
        let Some(acc) = rates[j].as_mut() else {
            continue;
        };
        let before: Vec<f64> = acc.0.iter().map(|v| bench::spread(v)).collect();
        let mut k = 0;
        let n =
            bench::repeat_disagreeing(&mut acc.0, FITTED_FIGURES, bench::MAX_EXTRA_ROUNDS, || {
                if start.elapsed() >= budget || sys::stop_requested() {
                    return None;
                }
                k += 1;
                mem::measure_buffer(p, one, seed(i, reps + k - 1))
                    .ok()
                    .map(|x| x.0)
            });
        if n == 0 && bench::any_disagreeing(&acc.0, FITTED_FIGURES) {
            left += 1;
        }
        if n == 0 {
            continue;
        }
        let all_spread: [f64; 6] = std::array::from_fn(|f| bench::spread(&acc.0[f]));
        every_round[j] = Some(all_spread);
        for (f, v) in acc.0.iter_mut().enumerate() {
            let all = v.len();
            *v = bench::kept(v);
            if before[f] > bench::SPREAD_BOUND {
                said.push(format!(
                    "{} [size={} page={}] {:.0}% -> {:.0}% over all {all} rounds, {:.0}% over the {} kept",
                    NAMES[f],
                    size_label(p.size as u64),
                    p.page.label(),
                    before[f] * 100.0,
                    all_spread[f] * 100.0,
                    bench::spread(v) * 100.0,
                    v.len()
                ));
            }
        }
    }
    if !said.is_empty() || left > 0 {
        notes.push(format!(
            "spread: passes with no agreeing majority of their rounds measured again (at most {} more rounds each, the largest buffer first, within {:.0}% of the rounds' time; {:.1} s used): {}{}",
            bench::MAX_EXTRA_ROUNDS,
            REPEAT_SHARE * 100.0,
            start.elapsed().as_secs_f64(),
            if said.is_empty() { "none".to_string() } else { said.join("; ") },
            if left > 0 {
                format!("; {left} more such pass(es) left as measured (time budget spent)")
            } else {
                String::new()
            }
        ));
    }
    every_round
}

fn size_case(size: u64, page: PageKind) -> Vec<(&'static str, Value)> {
    vec![
        ("size", json!(size_label(size))),
        ("bytes", json!(size)),
        ("page", json!(page.label())),
    ]
}

fn read_text(p: &str) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn thp_mode() -> Option<String> {
    let s = read_text("/sys/kernel/mm/transparent_hugepage/enabled")?;
    let start = s.find('[')?;
    let end = s[start..].find(']')? + start;
    Some(s[start + 1..end].to_string())
}

fn huge_page_sizes() -> Vec<u64> {
    let Ok(rd) = std::fs::read_dir("/sys/kernel/mm/hugepages") else {
        return vec![];
    };
    let mut v: Vec<u64> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse::<u64>()
                .ok()
                .map(|kb| kb * 1024)
        })
        .collect();
    v.sort_unstable();
    v
}

/// The size above which the C library's `memcpy` (which the copy test
/// calls) uses non-temporal stores: glibc on x86 sets
/// `x86_non_temporal_threshold` from the caches at start-up
/// (sysdeps/x86/dl-cacheinfo.h `dl_init_cacheinfo`: a quarter of the
/// shared cache, at least 3/4 of one thread's share since glibc 2.38 and
/// its backports), and the dynamic loader prints it with
/// `--list-tunables` (glibc 2.33 and later) as this process would get it
/// (GLIBC_TUNABLES included). None elsewhere: one store strategy.
fn glibc_nt_store_threshold() -> Option<u64> {
    if !cfg!(all(
        target_arch = "x86_64",
        target_os = "linux",
        target_env = "gnu"
    )) {
        return None;
    }
    let out = std::process::Command::new("/lib64/ld-linux-x86-64.so.2")
        .arg("--list-tunables")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_nt_threshold(&String::from_utf8_lossy(&out.stdout))
}

/// `glibc.cpu.x86_non_temporal_threshold: 0x7200000 (min: ..., max: ...)`.
fn parse_nt_threshold(text: &str) -> Option<u64> {
    let v = text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("glibc.cpu.x86_non_temporal_threshold:")
    })?;
    let v = v.split_whitespace().next()?;
    let b = match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => v.parse().ok()?,
    };
    (b > 0).then_some(b)
}

/// Model name, clock (MHz) and base-page TLB entries from /proc/cpuinfo.
fn cpu_model_and_clock() -> (String, Option<f64>, Option<u64>) {
    let text = read_text("/proc/cpuinfo").unwrap_or_default();
    let field = |k: &str| {
        text.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(k))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let model = field("model name")
        .or_else(|| field("Model"))
        .unwrap_or_else(|| "unknown".into());
    let mhz = field("cpu MHz").and_then(|v| v.parse::<f64>().ok());
    // x86's "TLB size : 3072 4K pages" (arch/x86/kernel/cpu/proc.c).
    let tlb = field("TLB size").and_then(|v| {
        v.strip_suffix("4K pages")
            .and_then(|n| n.trim().parse::<u64>().ok())
            .filter(|n| *n > 0)
    });
    (model, mhz, tlb)
}

/// Depths of the queue-depth sweep: threads reading at once.
const SWEEP_DEPTHS: [u32; 4] = [1, 2, 4, 8];

/// The queue-depth sweep (round 16; docs/probe.md): `O_DIRECT` reads of
/// one file by 1, 2, 4 and 8 threads at once, each its own region, at
/// 1 MiB a call and at the readahead's request size (`read_ahead_kb`
/// capped by `max_sectors_kb`) where that differs. Round by round, each
/// round every point once, at least three rounds: a point's speed-up is
/// the median over the rounds of its rate over the same round's depth 1.
fn depth_sweep(
    dir: &std::path::Path,
    bytes: u64,
    reps: usize,
    fs: &str,
    io_meas: &mut iofit::IoMeas,
    records: &mut Vec<Record>,
    notes: &mut Vec<String>,
) -> Result<(), ProbeError> {
    let Some(path) = io::depth_file(dir, bytes).map_err(internal("file I/O"))? else {
        return Ok(());
    };
    let ra = io_meas
        .read_ahead
        .unwrap_or(iofit::DEFAULT_READ_AHEAD)
        .min(io_meas.max_request.unwrap_or(iofit::DEFAULT_MAX_REQUEST));
    let mut sizes = vec![iofit::LARGE_REQUEST];
    // The readahead's request, where it is another size and the file
    // holds a call for each of the deepest depth's threads.
    if ra != iofit::LARGE_REQUEST && ra >= 64 << 10 && ra * 8 <= bytes {
        sizes.push(ra);
    }
    let rounds = reps.max(3);
    let dev = block_stat(dir);
    // [size][depth][round]
    let mut got = vec![vec![Vec::with_capacity(rounds); SWEEP_DEPTHS.len()]; sizes.len()];
    let mut counted = vec![vec![Vec::with_capacity(rounds); SWEEP_DEPTHS.len()]; sizes.len()];
    let mut runs = vec![vec![Vec::with_capacity(rounds); SWEEP_DEPTHS.len()]; sizes.len()];
    let mut cpu = vec![vec![Vec::with_capacity(rounds); SWEEP_DEPTHS.len()]; sizes.len()];
    let mut run = |got: &mut Vec<Vec<Vec<f64>>>| -> Result<bool, ProbeError> {
        for _ in 0..rounds {
            for (i, &size) in sizes.iter().enumerate() {
                for (j, &d) in SWEEP_DEPTHS.iter().enumerate() {
                    let r = io::direct_depth(&path, bytes, size as usize, d as usize, dev.as_ref())
                        .map_err(internal("file I/O"))?;
                    check_stop()?;
                    match r {
                        Some(p) => {
                            got[i][j].push(p.mibps);
                            counted[i][j].push(p.device);
                            runs[i][j].push(p.runs);
                            cpu[i][j].push(p.cpu_pct_per_mibps);
                        }
                        None => return Ok(false),
                    }
                }
            }
        }
        Ok(true)
    };
    let ok = run(&mut got);
    let _ = std::fs::remove_file(&path);
    if !ok? {
        notes.push("io: queue-depth sweep skipped: O_DIRECT refused".into());
        return Ok(());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[(v.len() - 1) / 2]
    };
    for (i, &size) in sizes.iter().enumerate() {
        for (j, &d) in SWEEP_DEPTHS.iter().enumerate() {
            let mut rates = got[i][j].clone();
            let mut ups: Vec<f64> = got[i][j]
                .iter()
                .zip(&got[i][0])
                .map(|(r, one)| r / one.max(1e-9))
                .collect();
            let mibps = median(&mut rates);
            let speedup = median(&mut ups);
            let rate_spread = (rates[rates.len() - 1] - rates[0]) / mibps.max(1e-9);
            let up_spread = (ups[ups.len() - 1] - ups[0]) / speedup.max(1e-9);
            let case = || {
                vec![
                    ("io", json!("direct")),
                    ("fs", json!(fs)),
                    ("request", json!(bench::size_label(size))),
                    ("depth", json!(d)),
                ]
            };
            records.push(rec_s(case(), "qd_read_mibps", "MiB/s", mibps, rate_spread));
            if d > 1 {
                records.push(rec_s(case(), "qd_speedup", "x", speedup, up_spread));
            }
            records.extend(device_records(
                case(),
                io::mean_delta(counted[i][j].iter().copied()),
            ));
            // The readers' CPU beside the device's busy share (round 19,
            // not fitted): where the model's deep points run faster than
            // measured, a busy device puts the cost in the device, an idle
            // one with busy readers in the guest.
            let c = &cpu[i][j];
            let mut op = case();
            op.push(("op", json!("read")));
            records.push(rec(
                op,
                "cpu_pct_per_mibps",
                "%CPU/(MiB/s)",
                c.iter().sum::<f64>() / c.len().max(1) as f64,
            ));
            // Each thread's call buffer in physical runs, the mean over
            // threads in the round whose rate is the recorded median (where
            // pagemap shows frame numbers; round 20c: before, the mean over
            // rounds too, which mixed a round past max_segments with
            // rounds under it beside one round's rate).
            if let Some(v) = runs[i][j].iter().copied().collect::<Option<Vec<f64>>>() {
                let n = v[io::median_index(&got[i][j])];
                records.push(rec(case(), "io_buffer_runs", "segments", n));
                io_meas.sweep_runs.push((size, d, n));
            }
            io_meas.depths.push(iofit::DepthRate {
                request: size,
                depth: d,
                mibps,
                speedup,
                spread: (d > 1).then_some(up_spread),
                rate_spread: Some(rate_spread),
            });
        }
    }
    notes.push(format!(
        "io: queue-depth sweep: O_DIRECT reads by {:?} threads at once, each its own region of a {} file, at {} a call; {rounds} rounds, speed-ups over each round's depth 1",
        SWEEP_DEPTHS,
        size_label(bytes),
        sizes.iter().map(|&s| bench::size_label(s)).collect::<Vec<_>>().join(" and ")
    ));
    Ok(())
}

/// The scratch directory's block device's `queue/read_ahead_kb` and
/// `queue/max_sectors_kb`, bytes, and `queue/max_segments` (a partition's
/// queue is its disk's); `None` where sysfs does not say (a network or
/// overlay file system).
fn block_queue_limits(dir: &Path) -> (Option<u64>, Option<u64>, Option<u64>) {
    let Some(base) = block_sysfs(dir) else {
        return (None, None, None);
    };
    let read = |name: &str| {
        [base.join("queue"), base.join("../queue")]
            .iter()
            .find_map(|q| {
                std::fs::read_to_string(q.join(name))
                    .ok()?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .filter(|k| *k > 0)
    };
    let kb = |name: &str| read(name).map(|k| k << 10);
    (
        kb("read_ahead_kb"),
        kb("max_sectors_kb"),
        read("max_segments"),
    )
}

/// `/sys/dev/block/MAJOR:MINOR` of the device holding `dir`.
fn block_sysfs(dir: &Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    // Linux's dev_t encoding (glibc's gnu_dev_major/minor).
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    Some(std::path::PathBuf::from(format!(
        "/sys/dev/block/{major}:{minor}"
    )))
}

/// The `stat` file of the device holding `dir` (a partition has its own),
/// where sysfs has one: the requests each I/O pass made.
fn block_stat(dir: &Path) -> Option<io::DevStat> {
    let p = block_sysfs(dir)?.join("stat");
    p.is_file().then_some(io::DevStat(p))
}

/// The device's requests over a pass, as two records: `io_requests` (per
/// pass, the mean over its repetitions) and `io_request_bytes` (their mean
/// size). Nothing where the device was not counted.
fn device_records(case: Vec<(&'static str, Value)>, d: Option<io::DevDelta>) -> Vec<Record> {
    let Some(d) = d else {
        return Vec::new();
    };
    let mut v = vec![
        rec(case.clone(), "io_requests", "requests", d.requests),
        rec(case.clone(), "io_request_bytes", "B", d.avg_bytes()),
    ];
    // The share of the pass the device had a request in flight: a disk
    // left idle between a buffered read's requests reads low here, one
    // slower at them does not (round 17; not fitted).
    if let Some(p) = d.busy_pct() {
        v.push(rec(case, "io_busy_pct", "%", p));
    }
    v
}

fn fs_type(dir: &Path) -> String {
    // The longest mount point that is a prefix of `dir`.
    let mounts = read_text("/proc/self/mounts").unwrap_or_default();
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, mp, ty) = (f.next()?, f.next()?, f.next()?);
            dir.starts_with(mp).then(|| (mp.len(), ty.to_string()))
        })
        .max_by_key(|x| x.0)
        .map(|x| x.1)
        .unwrap_or_else(|| "unknown".into())
}

/// Fit the machine, validate it if asked, write `--out`: the end of a
/// probe run, measured now or read back with `--from`.
fn fit_and_write(
    meas: &Measurements,
    args: &ProbeArgs,
    records: &mut Vec<Record>,
    notes: &mut Vec<String>,
) -> Result<(Machine, String), ProbeError> {
    let fit =
        calibrate::fit(meas).map_err(|e| ProbeError::Internal(format!("calibration: {e}")))?;
    let (machine_toml, unseen) = fit.annotated_toml();
    notes.extend(fit.notes);
    notes.push(format!(
        "machine: not seen by the probe, written as defaults: {}",
        unseen.join(", ")
    ));
    let machine = fit.machine;
    let used = fit.used;
    let node_gbps_from = fit.node_gbps_from;
    if args.validate {
        let mut rows = validate::validate(meas, &machine, &used);
        rows.extend(memsys::validate(meas, &machine, node_gbps_from));
        if let Some(d) = &fit.disk {
            rows.extend(iofit::validate(&machine, &meas.io, d));
        }
        let cal: Vec<f64> = rows
            .iter()
            .filter(|r| r.role == Some(numasim::report::Role::Calibration))
            .filter_map(|r| r.deviation())
            .map(f64::abs)
            .collect();
        notes.push(format!(
            "validate: {} calibration rows, worst |Δ| {:.1}% (the fit's arithmetic; bound 5%)",
            cal.len(),
            cal.iter().copied().fold(0.0, f64::max) * 100.0
        ));
        if let Some((med, worst, n)) = validate::validation_summary(&rows) {
            notes.push(format!(
                "validate: {n} validation rows, median |Δ| {:.1}%, worst {:.1}%",
                med * 100.0,
                worst * 100.0
            ));
        }
        if let Some(n) = validate::noise_summary(&rows) {
            notes.push(format!(
                "validate: with their noise: {} of {} validation rows within max(measured spread, {:.0}%); worst |Δ| = {:.2}x that bound ({}; target <= 1.5x); median measured spread {:.1}%",
                n.within,
                n.rows,
                validate::TOLERANCE * 100.0,
                n.worst_excess,
                n.worst_row,
                n.median_spread * 100.0
            ));
        }
        records.extend(rows);
    }
    if let Some(out) = &args.out {
        std::fs::write(out, &machine_toml).map_err(|e| {
            ProbeError::Input(format!("--out {}: cannot write: {e}", out.display()))
        })?;
        notes.push(format!(
            "machine: written to {} (use it as [machine] preset = \"{}\")",
            out.display(),
            out.display()
        ));
    }
    Ok((machine, machine_toml))
}

/// What the fit reads besides the measurements, as records, so that a
/// saved `--format jsonl` run can be fitted again (`--from`).
fn host_records(m: &Measurements) -> Vec<Record> {
    let mut v = vec![
        rec(
            vec![
                ("host", json!(m.name)),
                ("model", json!(m.cpu_model)),
                ("description", json!(m.description)),
            ],
            "clock_mhz",
            "MHz",
            m.clock_mhz.unwrap_or(0.0),
        ),
        rec(
            vec![],
            "proc_mem_total_kb",
            "kB",
            m.proc_mem_total_kb as f64,
        ),
        rec(
            vec![("of", json!("base"))],
            "page_bytes",
            "B",
            m.page_size as f64,
        ),
    ];
    for &h in &m.huge_page_sizes {
        v.push(rec(
            vec![("of", json!("huge"))],
            "page_bytes",
            "B",
            h as f64,
        ));
    }
    if let Some(e) = m.tlb_entries {
        v.push(rec(
            vec![("of", json!("base"))],
            "tlb_entries",
            "entries",
            e as f64,
        ));
    }
    if let Some(b) = m.nt_store_threshold {
        v.push(rec(
            vec![("of", json!("memcpy"))],
            "nt_store_threshold_bytes",
            "B",
            b as f64,
        ));
    }
    if !m.io.rates.is_empty() {
        let fs = || vec![("fs", json!(m.io.fs))];
        v.push(rec(fs(), "io_file_bytes", "B", m.io.file_bytes as f64));
        if let Some(b) = m.io.read_ahead {
            v.push(rec(fs(), "read_ahead_bytes", "B", b as f64));
        }
        if let Some(b) = m.io.max_request {
            v.push(rec(fs(), "max_request_bytes", "B", b as f64));
        }
        if let Some(n) = m.io.max_segments {
            v.push(rec(fs(), "max_segments", "", n as f64));
        }
    }
    for c in &m.caches {
        let mut case = vec![
            ("level", json!(c.level)),
            ("kind", json!(c.kind)),
            ("line", json!(c.line)),
            ("shared_by", json!(c.shared_by)),
        ];
        if let Some(w) = c.ways {
            case.push(("ways", json!(w)));
        }
        v.push(rec(case, "cache_bytes", "B", c.size as f64));
    }
    v
}

/// `--from FILE`: fit a saved run again; a file that is not a whole probe
/// run is the user's to fix (exit 2, naming the file and the line).
fn refit(path: &Path, args: &ProbeArgs) -> Result<ProbeReport, ProbeError> {
    let start = Instant::now();
    let text = numasim::input::read_bounded_text(
        path,
        numasim::input::MAX_PROBE_RUN_BYTES,
        "a probe run saved with --format jsonl",
    )
    .map_err(|e| ProbeError::Input(format!("--from {e}")))?;
    let meas = calibrate::measurements_from_records(&text)
        .map_err(|e| ProbeError::Input(format!("--from {}: {e}", path.display())))?;
    let mut records = Vec::new();
    let mut notes = vec![format!(
        "from: fitted from {}, nothing measured",
        path.display()
    )];
    let (machine, machine_toml) = fit_and_write(&meas, args, &mut records, &mut notes)?;
    Ok(ProbeReport {
        records,
        notes,
        machine,
        machine_toml,
        scratch_dir: None,
        elapsed: start.elapsed(),
    })
}

/// Measure this host. Progress goes to stderr unless `quiet`; records and
/// notes come back; `--out` receives the machine TOML.
pub fn run(args: &ProbeArgs) -> Result<ProbeReport, ProbeError> {
    if let Some(path) = &args.from {
        return refit(path, args);
    }
    // --- validate input
    if !(1..=90).contains(&args.mem_share_pct) {
        return Err(ProbeError::Input(format!(
            "--mem-share-pct {}: must be between 1 and 90 (percent of available memory)",
            args.mem_share_pct
        )));
    }
    if args.max_threads == Some(0) {
        return Err(ProbeError::Input(
            "--max-threads 0: at least one thread is needed".into(),
        ));
    }
    if let Some(d) = &args.dir {
        if !d.is_dir() {
            return Err(ProbeError::Input(format!(
                "--dir {}: not an existing directory",
                d.display()
            )));
        }
    }
    if let Some(out) = &args.out {
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(ProbeError::Input(format!(
                "--out {}: directory {} does not exist",
                out.display(),
                parent.display()
            )));
        }
    }

    let _signals = sys::SignalGuard::install();
    let start = Instant::now();
    let mut records = Vec::new();
    let mut notes = Vec::new();

    // --- topology and memory
    let allowed = sys::allowed_cpus();
    let max_threads = args.max_threads.unwrap_or(allowed.len()).max(1);
    let meminfo = topology::parse_meminfo(&read_text("/proc/meminfo").unwrap_or_default());
    let topo = match Topology::read(&args.node_root) {
        Ok(t) => t,
        Err(e) => {
            notes.push(format!(
                "topology: {e}; treating the host as one node with every CPU"
            ));
            let ncpu = allowed.iter().max().map(|&c| c + 1).unwrap_or(1);
            Topology::single(
                (0..ncpu).collect(),
                meminfo.get("MemTotal").copied().unwrap_or(0),
                meminfo.get("MemFree").copied().unwrap_or(0),
            )
        }
    };
    let available = topology::available_bytes(&meminfo);
    let budget = available / 100 * args.mem_share_pct as u64;
    let plan = Plan::new(args.quick, budget);
    let page_size = sys::page_size();

    let thp = thp_mode();
    let thp_ok = matches!(thp.as_deref(), Some("always") | Some("madvise"));
    let huge_sizes = huge_page_sizes();
    let hp_size = meminfo.get("Hugepagesize").copied().unwrap_or(0) * 1024;
    let hp_free = meminfo.get("HugePages_Free").copied().unwrap_or(0) * hp_size;
    let hugetlb_ok = hp_size == sys::HUGE_2M as u64 && hp_free >= 16 << 20;
    let mut kinds = vec![PageKind::Base];
    if thp_ok {
        kinds.push(PageKind::Thp);
    }
    if hugetlb_ok {
        kinds.push(PageKind::Hugetlb);
    }
    let multi_node = topo.nodes.len() > 1;
    // topology, memory by size, node copy, faults (2), clocks, atomics, calibration
    let total_stages = 8 + usize::from(!args.no_io) + usize::from(multi_node);
    let mut progress = Progress {
        quiet: args.quiet,
        start,
        step: 0,
        total: total_stages,
    };
    if !args.quiet {
        let pairs = if !multi_node {
            0
        } else if plan.all_pairs {
            topo.nodes.len() * topo.nodes.len()
        } else {
            topo.nodes.len()
        };
        let secs = plan.estimate_s(
            kinds.len(),
            bench::thread_counts(max_threads).len(),
            !args.no_io,
            pairs,
        );
        let est = if secs < 120.0 {
            format!("about {:.0} s", (secs / 5.0).ceil() * 5.0)
        } else {
            format!("about {:.0} minutes", (secs / 60.0).round())
        };
        eprintln!(
            "numasim probe{}: {} stages, {est}; using at most {} of memory ({}% of {} available), {} thread(s). Ctrl-C stops and cleans up.",
            if args.quick { " --quick" } else { "" },
            total_stages,
            size_label(budget & !((1 << 20) - 1)),
            args.mem_share_pct,
            size_label(available & !((1 << 20) - 1)),
            max_threads
        );
    }
    progress.stage("topology and per-node memory");
    for n in &topo.nodes {
        let c = || vec![("node", json!(n.id))];
        records.push(rec(c(), "mem_total_kb", "kB", n.mem_total_kb as f64));
        records.push(rec(c(), "mem_free_kb", "kB", n.mem_free_kb as f64));
        records.push(rec(c(), "node_cpus", "CPUs", n.cpus.len() as f64));
        for (j, d) in n.distance.iter().enumerate() {
            records.push(rec(
                vec![("node", json!(n.id)), ("to", json!(topo.nodes[j].id))],
                "distance",
                "SLIT",
                *d as f64,
            ));
        }
    }
    if let Some(load) = read_text("/proc/loadavg") {
        let l1: f64 = load
            .split_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(0.0);
        if l1 > 0.5 {
            notes.push(format!(
                "noise: load average {l1:.2} when the probe started: other processes compete for {} CPU(s), so figures may be low and noisy",
                allowed.len()
            ));
        }
    }
    if !multi_node {
        notes.push("topology: one NUMA node; local vs remote figures are not measured".into());
    }
    notes.push(format!(
        "memory: at most {} used ({}% of {} available{})",
        size_label(budget & !((1 << 20) - 1)),
        args.mem_share_pct,
        size_label(available & !((1 << 20) - 1)),
        if plan.sizes.last() < Some(&(1 << 30)) {
            "; larger buffers skipped"
        } else {
            ""
        }
    ));
    notes.push(format!(
        "statistics: copy, copy loop, random, chase, fault rates and per-call costs (clocks, atomics) are medians of {} repetitions (>= {} ms each; node copy >= 300 ms) with spread = (max-min)/median, flagged above {:.0}%; memcpy reference and I/O the best of {} and {}",
        plan.effort.reps,
        plan.effort.rep_time.as_millis(),
        bench::SPREAD_BOUND * 100.0,
        plan.effort.reps,
        plan.io_reps
    ));
    notes.push(format!(
        "threads: pinned with sched_setaffinity to CPUs {:?} (round robin)",
        &allowed[..allowed.len().min(64)]
    ));
    match &thp {
        Some(m) if thp_ok => notes.push(format!(
            "pages: transparent huge pages available (enabled = {m}); requested with madvise(MADV_HUGEPAGE)"
        )),
        Some(m) => notes.push(format!(
            "pages: transparent huge pages not available (enabled = {m}); no \"thp\" rows"
        )),
        None => notes.push("pages: kernel without transparent huge pages; no \"thp\" rows".into()),
    }
    if hugetlb_ok {
        notes.push(format!(
            "pages: hugetlb pool has {} free in 2 MiB pages; used as reserved (no reservation changed)",
            size_label(hp_free)
        ));
    } else {
        notes.push(format!(
            "pages: no hugetlb pages reserved ({} free, page size {}); no \"hugetlb\" rows (the probe never changes the reservation)",
            hp_free / hp_size.max(1),
            size_label(hp_size)
        ));
    }

    // --- memory: copy, random access, latency. Page kinds alternate at each
    // size so that load from other processes hits them alike.
    let mut sizes_out: Vec<(u64, PageKind, mem::SizeResult)> = Vec::new();
    let mut memcpy_ref: Vec<(u64, f64)> = Vec::new();
    progress.stage(&format!(
        "copy, random access and latency by size ({} .. {}), pages: {}; node copy bandwidth each round",
        size_label(plan.sizes[0]),
        size_label(*plan.sizes.last().expect("one size")),
        kinds
            .iter()
            .map(|k| k.label())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    // Repetitions go round by round over every size, each round on a
    // fresh mapping: a figure's spread then covers where its pages landed
    // and the host's drift over the whole run, not one burst of it.
    let mut plans: Vec<(usize, mem::SizePlan)> = Vec::new();
    for (i, &size) in plan.sizes.iter().enumerate() {
        for &page in &kinds {
            if page == PageKind::Hugetlb && size > hp_free {
                notes.push(format!(
                    "pages: hugetlb skipped at {} (only {} free)",
                    size_label(size),
                    size_label(hp_free)
                ));
                continue;
            }
            plans.push((
                i,
                mem::SizePlan {
                    size: size as usize,
                    page,
                    latency: size <= plan.latency_max,
                    streams: page == PageKind::Base && STREAM_SIZES.contains(&size),
                },
            ));
        }
    }
    // The node copy's setup: every CPU of one node copying at once.
    let home = topo
        .nodes
        .iter()
        .position(|n| n.mem_total_kb > 0 && n.cpus.iter().any(|c| allowed.contains(c)))
        .unwrap_or(0);
    let home_cpus: Vec<usize> = topo.nodes[home]
        .cpus
        .iter()
        .copied()
        .filter(|c| allowed.contains(c))
        .collect();
    let home_cpus = if home_cpus.is_empty() {
        allowed.clone()
    } else {
        home_cpus
    };
    let nthreads = home_cpus.len().min(max_threads);
    let big = (*plan.sizes.last().expect("one size")).min(1 << 30);
    let bw_page = if thp_ok {
        PageKind::Thp
    } else {
        PageKind::Base
    };
    // Each thread copies its share in whole calls (hundreds of MiB, tens of
    // ms each): a repetition must hold many of them, or whether the last
    // call finished before the stop decides the figure.
    let copy_effort = Effort {
        rep_time: plan.effort.rep_time.max(Duration::from_millis(300)),
        ..plan.effort
    };
    let mut copy_reps: Vec<f64> = Vec::new();
    let one = Effort {
        reps: 1,
        ..plan.effort
    };
    let mut rates: Vec<Option<mem::BufferRates>> = vec![Some(Default::default()); plans.len()];
    let seed = |i: usize, round: usize| 0x5eed + (i as u64) * 64 + round as u64;
    let rounds_start = Instant::now();
    for round in 0..plan.effort.reps {
        if !args.quiet {
            eprintln!("    round {}/{}", round + 1, plan.effort.reps);
        }
        for (j, (i, p)) in plans.iter().enumerate() {
            check_stop()?;
            let Some(acc) = rates[j].as_mut() else {
                continue;
            };
            match mem::measure_buffer(*p, one, seed(*i, round)) {
                Ok((v, thp)) => {
                    for (all, r) in acc.0.iter_mut().zip(v) {
                        all.extend(r);
                    }
                    acc.1 = acc.1.or(thp);
                }
                Err(e) if p.page != PageKind::Base => {
                    notes.push(format!(
                        "pages: {} mapping of {} failed ({e}); skipped",
                        p.page.label(),
                        size_label(p.size as u64)
                    ));
                    rates[j] = None;
                }
                Err(e) => return Err(internal("mapping a buffer")(e)),
            }
        }
        copy_reps.extend(
            mem::parallel_copy(
                big as usize,
                bw_page,
                nthreads,
                &home_cpus,
                multi_node.then_some(topo.nodes[home].id),
                Effort {
                    reps: 1,
                    ..copy_effort
                },
            )
            .map_err(internal("parallel copy"))?,
        );
    }
    let every_round = repeat_disturbed_passes(
        &plans,
        &mut rates,
        one,
        plan.effort.reps,
        rounds_start.elapsed(),
        seed,
        &mut notes,
    );
    for (((_, p), acc), all_rounds) in plans.iter().zip(rates).zip(every_round) {
        let Some((v, thp)) = acc else { continue };
        let (size, page) = (p.size as u64, p.page);
        let mut r = mem::summarize(&v, thp, p.latency);
        if let Some(s) = all_rounds {
            r.spread = s;
        }
        let c = || size_case(size, page);
        let sp = r.spread;
        records.push(rec_s(c(), "copy_mbps", "MB/s", r.copy_bps / 1e6, sp[0]));
        records.push(rec_s(
            c(),
            "copy_loop_mbps",
            "MB/s",
            r.copy_loop_bps / 1e6,
            sp[1],
        ));
        records.push(rec_s(c(), "random_mbps", "MB/s", r.random_bps / 1e6, sp[2]));
        if let Some(l) = r.latency_ns {
            records.push(rec_s(c(), "mem_latency_ns", "ns", l, sp[3]));
        }
        if r.read_bps > 0.0 {
            records.push(rec_s(c(), "read_mbps", "MB/s", r.read_bps / 1e6, sp[4]));
            records.push(rec_s(c(), "write_mbps", "MB/s", r.write_bps / 1e6, sp[5]));
        }
        if let (Some(b), true) = (r.thp_bytes, size >= sys::HUGE_2M as u64) {
            records.push(rec(
                c(),
                "thp_coverage_pct",
                "%",
                100.0 * b as f64 / size as f64,
            ));
        }
        sizes_out.push((size, page, r));
    }
    for &size in &plan.sizes {
        let m = mem::memcpy_reference(size as usize, plan.effort);
        check_stop()?;
        records.push(rec(
            vec![("size", json!(size_label(size))), ("bytes", json!(size))],
            "memcpy_mbps",
            "MB/s",
            m / 1e6,
        ));
        memcpy_ref.push((size, m));
    }
    // The harness check: the copy benchmark against a plain memcpy loop at
    // the largest size (4 KiB pages).
    if let Some((size, _, r)) = sizes_out
        .iter()
        .filter(|(_, p, _)| *p == PageKind::Base)
        .max_by_key(|x| x.0)
    {
        if let Some(&(_, m)) = memcpy_ref.iter().find(|(s, _)| s == size) {
            let ratio = r.copy_bps / m;
            records.push(rec(
                size_case(*size, PageKind::Base),
                "copy_vs_memcpy",
                "ratio",
                ratio,
            ));
            notes.push(format!(
                "check: copy benchmark {:.0} MB/s vs plain memcpy loop {:.0} MB/s at {} ({:+.1}%): {}",
                r.copy_bps / 1e6,
                m / 1e6,
                size_label(*size),
                (ratio - 1.0) * 100.0,
                if (ratio - 1.0).abs() <= 0.15 {
                    "agree within 15%"
                } else {
                    "DIFFER by more than 15%"
                }
            ));
            notes.push(format!(
                "copy: the same copy as a STREAM-style loop (copy_loop_mbps) gives {:.0} MB/s at {} (ordinary stores read each destination line first; glibc memcpy may avoid that)",
                r.copy_loop_bps / 1e6,
                size_label(*size)
            ));
        }
    }
    // The TLB effect: 4 KiB vs huge pages, random access at the largest size.
    for huge in [PageKind::Thp, PageKind::Hugetlb] {
        let big = |k: PageKind| {
            sizes_out
                .iter()
                .filter(|(_, p, _)| *p == k)
                .max_by_key(|x| x.0)
                .map(|(s, _, r)| (*s, r.random_bps))
        };
        if let (Some((s4, b4)), Some((sh, bh))) = (big(PageKind::Base), big(huge)) {
            if s4 == sh {
                notes.push(format!(
                    "tlb: random access at {}: {} pages {:.0} MB/s vs 4k {:.0} MB/s ({:.2}x)",
                    size_label(s4),
                    huge.label(),
                    bh / 1e6,
                    b4 / 1e6,
                    bh / b4.max(1.0)
                ));
            }
        }
    }
    if let Some((s, _, r)) = sizes_out
        .iter()
        .filter(|(_, p, _)| *p == PageKind::Thp)
        .max_by_key(|x| x.0)
    {
        if let Some(b) = r.thp_bytes {
            let pct = 100.0 * b as f64 / *s as f64;
            if pct < 90.0 {
                notes.push(format!(
                    "pages: only {pct:.0}% of the {} THP buffer was backed by huge pages (fragmentation or defrag setting)",
                    size_label(*s)
                ));
            }
        }
    }

    // --- all CPUs of one node copying at once: the node's bandwidth, one
    // repetition per round of the memory curves (above).
    check_stop()?;
    let node_copy = bench::median(&copy_reps);
    let node_copy_spread = bench::spread(&copy_reps);
    let mut r = rec(
        vec![
            ("node", json!(topo.nodes[home].id)),
            ("threads", json!(nthreads)),
            ("size", json!(size_label(big))),
            ("page", json!(bw_page.label())),
        ],
        "node_copy_mbps",
        "MB/s",
        node_copy / 1e6,
    );
    r.spread = Some(node_copy_spread);
    records.push(r);
    if node_copy_spread > bench::SPREAD_BOUND {
        notes.push(format!(
            "spread: node_copy_mbps varied {:.0}% over {} repetitions (bound {:.0}%): the host is not quiet; \
             dram.bandwidth_gbps is written from the median but flagged",
            node_copy_spread * 100.0,
            copy_reps.len(),
            bench::SPREAD_BOUND * 100.0
        ));
    }

    // --- first-touch faults
    let counts = bench::thread_counts(max_threads);
    let fault_reps = plan.effort.reps;
    let mut fault_per_s = Vec::new();
    let mut fault_on_cpu_per_s = Vec::new();
    progress.stage(&format!(
        "first-touch faults, {} in 1..{max_threads} threads",
        size_label(plan.fault_bytes)
    ));
    for &t in &counts {
        let f = contention::fault_threads(plan.fault_bytes as usize, t, &allowed, fault_reps)
            .map_err(internal("fault test (threads)"))?;
        check_stop()?;
        fault_per_s.push((t, f.per_s));
        fault_on_cpu_per_s.push((t, f.on_cpu_per_s));
        let case = || {
            vec![
                ("mode", json!("threads")),
                ("threads", json!(t)),
                ("bytes", json!(plan.fault_bytes)),
            ]
        };
        records.push(rec_s(case(), "fault_per_s", "faults/s", f.per_s, f.spread));
        // The same faults on the threads' own CPU clocks: on a host with
        // more runnable threads than CPUs the wall-clock rate holds the
        // scheduler's wait (docs/probe.md, "Faults on a busy host").
        records.push(rec_s(
            case(),
            "fault_on_cpu_per_s",
            "faults/s",
            f.on_cpu_per_s,
            f.on_cpu_spread,
        ));
        records.push(rec(case(), "fault_cpu_share", "fraction", f.on_cpu_share));
        // The first repetition apart: the later ones reuse the frames it
        // freed (a guest's host already backs them).
        records.push(rec(
            case(),
            "fault_first_on_cpu_per_s",
            "faults/s",
            f.first_on_cpu_per_s,
        ));
    }
    // One faulting thread beside 0, half and all the other CPUs reading
    // their own buffers (no faults): whether a fault slows with the
    // node's load alone (docs/probe.md, "Round 17").
    let others = allowed.len().saturating_sub(1);
    let mut reader_counts = vec![0, others / 2, others];
    reader_counts.dedup();
    // The readers' buffers together at most the fault test's own size.
    let beside_bytes = plan.fault_bytes / 4;
    let read_bytes = plan.fault_bytes / (others.max(8) as u64);
    progress.stage("first-touch faults beside reading CPUs");
    for &k in &reader_counts {
        let r = contention::fault_beside_readers(
            beside_bytes as usize,
            k,
            read_bytes as usize,
            &allowed,
            fault_reps,
        )
        .map_err(internal("fault test (beside readers)"))?;
        check_stop()?;
        if let Some((rate, sp)) = r {
            records.push(rec_s(
                vec![
                    ("threads", json!(1)),
                    ("readers", json!(k)),
                    ("bytes", json!(beside_bytes)),
                    ("read_bytes", json!(read_bytes)),
                ],
                "fault_beside_readers_per_s",
                "faults/s",
                rate,
                sp,
            ));
        }
    }
    progress.stage(&format!(
        "first-touch faults, {} in 1..{max_threads} processes",
        size_label(plan.fault_bytes)
    ));
    for &t in &counts {
        let (r, sp) =
            contention::fault_processes(plan.fault_bytes as usize, t, &allowed, fault_reps)
                .map_err(internal("fault test (processes)"))?;
        check_stop()?;
        records.push(rec_s(
            vec![("mode", json!("processes")), ("threads", json!(t))],
            "fault_per_s",
            "faults/s",
            r,
            sp,
        ));
    }
    notes.push(format!(
        "faults: {} of anonymous memory with 4 KiB pages (MADV_NOHUGEPAGE), one store per page, split over the threads or processes; rate = pages / (first start to last end)",
        size_label(plan.fault_bytes)
    ));

    // --- clocks and atomics
    progress.stage("gettimeofday and clock_gettime, 1..N threads at once");
    let (mut gtod_ns, mut cgt_ns) = (Vec::new(), Vec::new());
    for &t in &counts {
        let (g, gsp) = contention::clock_cost(
            contention::ClockCall::Gettimeofday,
            t,
            &allowed,
            plan.effort,
        );
        gtod_ns.push((t, g));
        records.push(rec_s(
            vec![("threads", json!(t))],
            "gettimeofday_ns",
            "ns",
            g,
            gsp,
        ));
        let (c, csp) = contention::clock_cost(
            contention::ClockCall::ClockGettime,
            t,
            &allowed,
            plan.effort,
        );
        cgt_ns.push((t, c));
        records.push(rec_s(
            vec![("threads", json!(t))],
            "clock_gettime_ns",
            "ns",
            c,
            csp,
        ));
        check_stop()?;
    }
    progress.stage("atomic add: one shared counter vs per-CPU counters");
    let mut atomic_shared = Vec::new();
    let mut atomic_percpu = Vec::new();
    for &t in &counts {
        for (kind, shared) in [("shared", true), ("percpu", false)] {
            let (ns, sp, each) = contention::atomic_add_each(shared, t, &allowed, plan.effort);
            if shared {
                atomic_shared.push((t, ns));
            } else {
                atomic_percpu.push((t, ns));
            }
            records.push(rec_s(
                vec![("threads", json!(t)), ("kind", json!(kind))],
                "atomic_add_ns",
                "ns",
                ns,
                sp,
            ));
            // Each CPU's own per-CPU add at the most threads: which CPU a
            // mean's difference from one thread's comes from.
            if !shared && t == max_threads {
                for (i, ns) in each.iter().enumerate() {
                    records.push(rec(
                        vec![
                            ("threads", json!(t)),
                            ("kind", json!(kind)),
                            ("cpu", json!(allowed[i % allowed.len()])),
                        ],
                        "atomic_add_cpu_ns",
                        "ns",
                        *ns,
                    ));
                }
            }
        }
        check_stop()?;
    }
    // One thread's per-CPU add on the last CPU (the 1-thread row ran on
    // the first): the CPU, or one busy CPU among idle ones.
    if let Some(&last) = allowed.last().filter(|_| allowed.len() > 1) {
        let (ns, sp) = contention::atomic_add(false, 1, &[last], plan.effort);
        records.push(rec_s(
            vec![
                ("threads", json!(1)),
                ("kind", json!("percpu")),
                ("cpu", json!(last)),
            ],
            "atomic_add_cpu_ns",
            "ns",
            ns,
            sp,
        ));
        check_stop()?;
    }
    if max_threads > allowed.len() {
        notes.push(format!(
            "threads: {max_threads} threads on {} CPUs: contention figures above {} threads include time-sharing",
            allowed.len(),
            allowed.len()
        ));
    }

    // --- file I/O
    let mut disk = None;
    let mut io_meas = iofit::IoMeas::default();
    let mut scratch_dir = None;
    if !args.no_io {
        let scratch = scratch::Scratch::create(args.dir.as_deref()).map_err(|e| {
            ProbeError::Input(format!(
                "cannot create a scratch directory in {}: {e}",
                args.dir
                    .clone()
                    .unwrap_or_else(std::env::temp_dir)
                    .display()
            ))
        })?;
        scratch_dir = Some(scratch.path().to_path_buf());
        let fs = fs_type(scratch.path());
        let free = sys::fs_free_bytes(scratch.path()).unwrap_or(u64::MAX);
        let bytes = plan.io_bytes.min(free / 4);
        progress.stage(&format!(
            "sequential write and read, {} file in {} ({fs}), buffered and O_DIRECT; O_DIRECT reads at queue depths 1..8",
            size_label(bytes & !((1 << 20) - 1)),
            scratch.path().display()
        ));
        if bytes < 16 << 20 {
            notes.push(format!(
                "io: skipped: only {} free in {}",
                size_label(free),
                scratch.path().display()
            ));
        } else {
            io_meas.fs = fs.clone();
            io_meas.file_bytes = bytes & !((1 << 20) - 1);
            (
                io_meas.read_ahead,
                io_meas.max_request,
                io_meas.max_segments,
            ) = block_queue_limits(scratch.path());
            // 1 MiB calls buffered and direct, then direct 128 KiB calls:
            // two call sizes at queue depth 1 tell the disk's per-request
            // latency from its rate (iofit.rs).
            // Direct calls also into a buffer of transparent huge pages
            // (round 16b): a direct request's scatter-gather segments are
            // its buffer's physically contiguous runs (block/blk-merge.c),
            // so 4 KiB pages make up to one segment a page and huge pages
            // a few, and the pair tells the per-segment cost.
            let passes = [
                ("buffered", false, iofit::LARGE_REQUEST, sys::PageKind::Base),
                ("direct", true, iofit::LARGE_REQUEST, sys::PageKind::Base),
                ("direct", true, iofit::SMALL_REQUEST, sys::PageKind::Base),
                ("direct", true, iofit::LARGE_REQUEST, sys::PageKind::Thp),
                ("direct", true, iofit::SMALL_REQUEST, sys::PageKind::Thp),
            ];
            // Round by round, as the memory figures: each repetition runs
            // every pass once, so the host's drift over the I/O tests falls
            // on both call sizes alike (run back to back, one run's 128 KiB
            // reads went 26% faster per byte than the 1 MiB reads before
            // them, more than either's spread, and the latency fit saw none).
            let dev = block_stat(scratch.path());
            let mut runs: Vec<Option<Vec<io::SeqResult>>> = vec![Some(Vec::new()); passes.len()];
            for _ in 0..plan.io_reps {
                for (i, &(_, direct, request, pages)) in passes.iter().enumerate() {
                    if runs[i].is_none() {
                        continue;
                    }
                    let r = io::once(
                        scratch.path(),
                        bytes,
                        request as usize,
                        direct,
                        pages,
                        dev.as_ref(),
                    )
                    .map_err(internal("file I/O"))?;
                    check_stop()?;
                    match (r, &mut runs[i]) {
                        (Some(r), Some(v)) => v.push(r),
                        // No O_DIRECT: no direct pass at any size.
                        _ => {
                            for (j, p) in passes.iter().enumerate() {
                                if p.1 == direct {
                                    runs[j] = None;
                                }
                            }
                        }
                    }
                }
            }
            for ((label, direct, request, pages), pass) in passes.into_iter().zip(runs) {
                let huge = pages == sys::PageKind::Thp;
                match pass.and_then(|v| io::median(&v)) {
                    Some(r) => {
                        let c = |op: Option<&str>| {
                            let mut v = vec![("io", json!(label)), ("fs", json!(fs))];
                            // The 1 MiB records keep their case as runs
                            // before issue 36 wrote it.
                            if request != iofit::LARGE_REQUEST {
                                v.push(("request", json!(bench::size_label(request))));
                            }
                            if huge {
                                v.push(("buffer", json!(pages.label())));
                            }
                            if let Some(op) = op {
                                v.push(("op", json!(op)));
                            }
                            v
                        };
                        for (metric, t) in
                            [("seq_write_mibps", r.write), ("seq_read_mibps", r.read)]
                        {
                            records.push(rec_s(c(None), metric, "MiB/s", t.mibps, t.spread));
                            let rates = if huge {
                                &mut io_meas.huge_rates
                            } else {
                                &mut io_meas.rates
                            };
                            rates.push(iofit::Rate {
                                direct,
                                write: metric == "seq_write_mibps",
                                request,
                                mibps: t.mibps,
                                spread: Some(t.spread),
                            });
                        }
                        for (write, t) in [(true, r.write), (false, r.read)] {
                            if huge {
                                continue;
                            }
                            io_meas.cpu.push(iofit::CpuCost {
                                direct,
                                write,
                                request,
                                pct_per_mibps: t.cpu_pct_per_mibps,
                            });
                        }
                        records.push(rec(
                            c(Some("write")),
                            "cpu_pct_per_mibps",
                            "%CPU/(MiB/s)",
                            r.write.cpu_pct_per_mibps,
                        ));
                        records.push(rec(
                            c(Some("read")),
                            "cpu_pct_per_mibps",
                            "%CPU/(MiB/s)",
                            r.read.cpu_pct_per_mibps,
                        ));
                        records.extend(device_records(c(Some("write")), r.write.device));
                        records.extend(device_records(c(Some("read")), r.read.device));
                        if !direct {
                            io_meas.buffered_request =
                                r.read.device.map(|d| d.avg_bytes()).filter(|b| *b > 0.0);
                            if let Some(b) = r.cache_run {
                                records.push(rec(
                                    c(Some("read")),
                                    "io_cache_run_bytes",
                                    "bytes",
                                    b,
                                ));
                                io_meas.cache_run = Some(b);
                            }
                        }
                        if let Some(p) = r.huge_pct {
                            records.push(rec(c(None), "io_buffer_huge_pct", "%", p));
                        }
                        if let (true, Some(n)) = (direct, r.phys_runs) {
                            records.push(rec(c(None), "io_buffer_runs", "segments", n));
                            io_meas.buffer_runs.push((huge, request, n));
                        }
                        if request == iofit::LARGE_REQUEST && !huge && (direct || disk.is_none()) {
                            disk = Some((format!("probed {fs}"), r.read.mibps.min(r.write.mibps)));
                        }
                    }
                    None if huge => {}
                    None => {
                        if request == iofit::LARGE_REQUEST {
                            notes.push(format!(
                                "io: the {fs} filesystem at {} refuses O_DIRECT; no \"direct\" rows",
                                scratch.path().display()
                            ));
                        }
                        break;
                    }
                }
            }
            if io_meas.get(true, false, iofit::LARGE_REQUEST).is_some() {
                depth_sweep(
                    scratch.path(),
                    bytes & !((1 << 20) - 1),
                    plan.io_reps,
                    &fs,
                    &mut io_meas,
                    &mut records,
                    &mut notes,
                )?;
            }
            notes.push(format!(
                "io: {} file, 1 MiB requests (direct also 128 KiB), one thread; buffered writes timed through fsync, buffered reads after POSIX_FADV_DONTNEED; CPU is the calling thread's (kernel writeback threads not counted)",
                size_label(bytes & !((1 << 20) - 1))
            ));
        }
        drop(scratch);
    } else {
        notes.push("io: skipped (--no-io)".into());
    }

    // --- local vs remote
    let mut pairs = Vec::new();
    if multi_node {
        progress.stage("local vs remote latency and bandwidth per node pair");
        let size = (256u64 << 20).min(budget / 2).max(16 << 20);
        let cpu_nodes: Vec<usize> = topo
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.cpus.iter().any(|c| allowed.contains(c)))
            .map(|(i, _)| i)
            .collect();
        let mem_nodes: Vec<usize> = topo
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.mem_free_kb * 1024 > size * 2)
            .map(|(i, _)| i)
            .collect();
        let from: Vec<usize> = if plan.all_pairs {
            cpu_nodes.clone()
        } else {
            cpu_nodes.iter().take(1).copied().collect()
        };
        for &i in &from {
            let cpu = *topo.nodes[i]
                .cpus
                .iter()
                .find(|c| allowed.contains(c))
                .expect("cpu node has an allowed CPU");
            for &j in &mem_nodes {
                check_stop()?;
                match mem::node_pair(cpu, topo.nodes[j].id, size as usize, bw_page, plan.effort) {
                    Ok((lat, bw)) => {
                        let c = || {
                            vec![
                                ("cpu_node", json!(topo.nodes[i].id)),
                                ("mem_node", json!(topo.nodes[j].id)),
                                ("size", json!(size_label(size))),
                            ]
                        };
                        records.push(rec(c(), "remote_latency_ns", "ns", lat));
                        records.push(rec(c(), "remote_copy_mbps", "MB/s", bw / 1e6));
                        pairs.push((i, j, lat, bw));
                    }
                    Err(e) => notes.push(format!(
                        "numa: node {} -> node {} not measured: {e}",
                        topo.nodes[i].id, topo.nodes[j].id
                    )),
                }
            }
        }
        // Measured vs SLIT ratios.
        for &(i, j, lat, _) in pairs.iter().filter(|p| p.0 != p.1) {
            if let Some(&(_, _, local, _)) = pairs.iter().find(|p| p.0 == i && p.1 == i) {
                notes.push(format!(
                    "numa: node {} -> {}: latency ratio {:.2} measured, SLIT says {:.2}",
                    topo.nodes[i].id,
                    topo.nodes[j].id,
                    lat / local,
                    topo.nodes[i].distance[j] as f64 / topo.nodes[i].distance[i].max(1) as f64
                ));
            }
        }
    }

    // --- the memory system as MLC, STREAM and core-to-core tools see it
    progress.stage("memory system: idle latency per node pair, read bandwidth per node and per core, core to core");
    let curve_latency = [PageKind::Thp, PageKind::Hugetlb, PageKind::Base]
        .into_iter()
        .find_map(|k| {
            sizes_out
                .iter()
                .filter(|(_, p, r)| *p == k && r.latency_ns.is_some())
                .max_by_key(|x| x.0)
                .map(|(_, _, r)| (r.latency_ns.unwrap_or(0.0), r.spread[3]))
        });
    let memsys_big = (plan.latency_max.min(big)).max(16 << 20) as usize;
    // The node read's buffer past READ_PAST_LLC times the last-level
    // cache (each thread re-reads its share: within the cache it
    // measures the cache), within half the memory share.
    let llc_total = topology::read_caches(Path::new("/sys/devices/system/cpu/cpu0"))
        .iter()
        .max_by_key(|c| (c.level, c.size))
        .map_or(0, |c| {
            c.size * (allowed.len() as u64).div_ceil(u64::from(c.shared_by.max(1)))
        });
    let read_big = (memsys_big as u64)
        .max((memsys::READ_PAST_LLC * llc_total).next_power_of_two())
        .min((budget / 2).max(memsys_big as u64)) as usize;
    let memsys_meas = memsys::measure(
        &topo,
        &allowed,
        max_threads,
        memsys_big,
        read_big,
        bw_page,
        plan.effort,
        curve_latency,
        &mut notes,
    )
    .map_err(internal("memory-system figures"))?;
    check_stop()?;
    records.extend(memsys::records(&memsys_meas, &topo));

    // Every figure over the bound, named, so none is trusted silently.
    let noisy: Vec<String> = records
        .iter()
        .filter(|r| r.spread.is_some_and(|s| s > bench::SPREAD_BOUND))
        .map(|r| {
            let case: Vec<String> = r
                .case
                .iter()
                .filter(|(k, _)| k != "bytes")
                .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), String::from)))
                .collect();
            format!(
                "{} [{}] {:.0}%",
                r.metric,
                case.join(" "),
                r.spread.unwrap_or(0.0) * 100.0
            )
        })
        .collect();
    if !noisy.is_empty() {
        notes.push(format!(
            "spread: {} of {} repeated figures varied more than {:.0}% over their repetitions: {}",
            noisy.len(),
            records.iter().filter(|r| r.spread.is_some()).count(),
            bench::SPREAD_BOUND * 100.0,
            noisy.join("; ")
        ));
    }

    if let Some(share) = bench::on_cpu_share().filter(|s| *s < 0.95) {
        notes.push(format!(
            "noise: the one-thread figures' threads were on a CPU {:.0}% of their wall time; the rest (waiting for a CPU) is not counted in them (timed on CLOCK_THREAD_CPUTIME_ID)",
            share * 100.0
        ));
    }

    // The one-thread figures' spreads, for the machine file's comments.
    // (Every thread count's, for the validation rows' noise.)
    let one_thread_spreads: Vec<(String, f64)> = records
        .iter()
        .filter(|r| r.case_value("mode").is_none_or(|m| m == "threads"))
        // Atomic counters: the shared one under the metric, per-CPU ones
        // apart (both are validated).
        .filter_map(|r| {
            let t = r.case_value("threads")?.as_u64()?;
            let kind = match r.case_value("kind").and_then(|k| k.as_str()) {
                Some("percpu") => " percpu",
                _ => "",
            };
            Some((format!("{}{kind} threads={t}", r.metric), r.spread?))
        })
        .collect();

    // --- calibration
    progress.stage("calibrating the machine description");
    let (cpu_model, clock_mhz, tlb_entries) = cpu_model_and_clock();
    let caches = topology::read_caches(Path::new("/sys/devices/system/cpu/cpu0"));
    let hostname = sys::hostname();
    let release = read_text("/proc/sys/kernel/osrelease").unwrap_or_default();
    let meas = Measurements {
        name: format!("host-{hostname}"),
        description: format!(
            "Measured by numasim probe{} on {hostname} (Linux {}); see docs/probe.md",
            if args.quick { " --quick" } else { "" },
            release.trim()
        ),
        topo: topo.clone(),
        proc_mem_total_kb: meminfo.get("MemTotal").copied().unwrap_or(0),
        page_size,
        huge_page_sizes: huge_sizes,
        sizes: sizes_out,
        node_copy_bps: Some(node_copy),
        node_copy_spread: Some(node_copy_spread),
        node_copy_bytes: Some(big),
        atomic_shared_ns: atomic_shared,
        atomic_percpu_ns: atomic_percpu,
        pairs,
        disk,
        io: io_meas,
        caches,
        cpu_model,
        clock_mhz,
        tlb_entries,
        nt_store_threshold: glibc_nt_store_threshold(),
        fault_bytes: plan.fault_bytes,
        fault_per_s,
        fault_on_cpu_per_s,
        clock_gettime_ns: cgt_ns,
        gettimeofday_ns: gtod_ns,
        spreads: one_thread_spreads,
        memsys: memsys_meas,
    };
    records.extend(host_records(&meas));
    let (machine, machine_toml) = fit_and_write(&meas, args, &mut records, &mut notes)?;
    let elapsed = start.elapsed();
    notes.push(format!(
        "time: the probe took {:.1} s",
        elapsed.as_secs_f64()
    ));
    if !args.quiet {
        eprintln!("probe done in {:.1} s", elapsed.as_secs_f64());
    }
    Ok(ProbeReport {
        records,
        notes,
        machine,
        machine_toml,
        scratch_dir,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_loaders_non_temporal_threshold_is_read_in_hex_or_not_at_all() {
        let text = "glibc.cpu.x86_rep_movsb_threshold: 0x840 (min: 0x200, max: 0xffffffffffffffff)\n\
                    glibc.cpu.x86_non_temporal_threshold: 0x7200000 (min: 0x4040, max: 0xfffffffffffffff)\n";
        assert_eq!(super::parse_nt_threshold(text), Some(114 << 20));
        assert_eq!(
            super::parse_nt_threshold("glibc.cpu.x86_non_temporal_threshold: 0x0"),
            None
        );
        assert_eq!(
            super::parse_nt_threshold("glibc.malloc.arena_max: 0x0"),
            None
        );
    }

    /// The quick sweep has the 4x steps and the boundary sizes between
    /// them, ascending, each once; a memory budget drops the sizes past it.
    #[test]
    fn the_quick_sweep_adds_the_boundary_sizes_within_the_budget() {
        let p = super::Plan::new(true, u64::MAX);
        assert!(p.sizes.windows(2).all(|w| w[0] < w[1]), "{:?}", p.sizes);
        for s in super::BOUNDARY_SIZES
            .iter()
            .chain(&[16 << 10, 1 << 20, 4 << 20, 1 << 30])
        {
            assert!(p.sizes.contains(s), "{s} missing from {:?}", p.sizes);
        }
        let small = super::Plan::new(true, 8 << 20);
        assert_eq!(
            small.sizes,
            [
                16 << 10,
                64 << 10,
                256 << 10,
                512 << 10,
                1 << 20,
                2 << 20,
                4 << 20,
                6 << 20,
                8 << 20
            ]
        );
    }
}
