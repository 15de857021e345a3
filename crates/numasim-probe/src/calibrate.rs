//! From measurements to a machine description that `numasim run` accepts.
//! Each parameter's source is documented in `docs/probe.md`.

use crate::mem::SizeResult;
use crate::sys::PageKind;
use crate::topology::{CacheInfo, Topology};
use numasim::machine::{Arch, Cache, DiskGroup, Machine, Node, TlbRefill};

/// Everything the calibration reads.
#[derive(Debug, Clone)]
pub struct Measurements {
    pub name: String,
    pub description: String,
    pub topo: Topology,
    /// `/proc/meminfo` MemTotal, kB (to detect node meminfo that misses memory).
    pub proc_mem_total_kb: u64,
    pub page_size: u64,
    /// Huge page sizes the kernel offers (`/sys/kernel/mm/hugepages`), bytes.
    pub huge_page_sizes: Vec<u64>,
    pub sizes: Vec<(u64, PageKind, SizeResult)>,
    /// Bytes copied per second by every CPU of one node together.
    pub node_copy_bps: Option<f64>,
    /// Its spread over the repetitions ((max - min) / median).
    pub node_copy_spread: Option<f64>,
    /// The node copy's buffer (the threads split it; each copies half of
    /// its share onto the other half), where recorded.
    pub node_copy_bytes: Option<u64>,
    /// (threads, ns) for the shared atomic counter.
    pub atomic_shared_ns: Vec<(usize, f64)>,
    /// (threads, ns) for per-CPU counters, each on its own line.
    pub atomic_percpu_ns: Vec<(usize, f64)>,
    /// (cpu node, memory node, latency ns, copy bytes/s).
    pub pairs: Vec<(usize, usize, f64, f64)>,
    /// Streaming rate of the scratch directory's device (kind, MiB/s):
    /// the lower of the two direct rates, where the I/O fit has too little.
    pub disk: Option<(String, f64)>,
    /// The file I/O the probe measured (iofit.rs).
    pub io: crate::iofit::IoMeas,
    pub caches: Vec<CacheInfo>,
    pub cpu_model: String,
    pub clock_mhz: Option<f64>,
    /// Entries of the TLB for base pages, where the CPU says (`TLB size`
    /// in /proc/cpuinfo on x86).
    pub tlb_entries: Option<u64>,
    /// Bytes one `memcpy` moves above which it uses non-temporal stores
    /// (glibc x86's `x86_non_temporal_threshold`), where the C library
    /// says.
    pub nt_store_threshold: Option<u64>,
    /// Bytes the fault test touches, all threads together.
    pub fault_bytes: u64,
    /// (threads, first-touch faults per second) with threads of one process.
    pub fault_per_s: Vec<(usize, f64)>,
    /// The same on the threads' own CPU clocks, scaled to the thread
    /// count (empty in runs saved before issue 36 round 12).
    pub fault_on_cpu_per_s: Vec<(usize, f64)>,
    /// (threads, ns per `clock_gettime`).
    pub clock_gettime_ns: Vec<(usize, f64)>,
    /// (threads, ns per `gettimeofday`).
    pub gettimeofday_ns: Vec<(usize, f64)>,
    /// Spreads of the one-thread figures above, by `"<metric> threads=1"`.
    pub spreads: Vec<(String, f64)>,
    /// Latency and bandwidth per node pair, per core, core to core (issue 29).
    pub memsys: crate::memsys::MemSysMeas,
}

impl Measurements {
    /// (size, result) for one page kind, by size.
    fn curve(&self, page: PageKind) -> Vec<(u64, &SizeResult)> {
        let mut v: Vec<(u64, &SizeResult)> = self
            .sizes
            .iter()
            .filter(|(_, p, _)| *p == page)
            .map(|(s, _, r)| (*s, r))
            .collect();
        v.sort_by_key(|x| x.0);
        v
    }

    fn latencies(&self, page: PageKind) -> Vec<(u64, f64)> {
        self.sizes
            .iter()
            .filter(|(_, p, _)| *p == page)
            .filter_map(|(s, _, r)| r.latency_ns.map(|l| (*s, l)))
            .collect()
    }
}

/// Inferred TLB figures from the 4 KiB vs THP latency curves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TlbEstimate {
    /// Extra ns per access at the largest size measured with both page kinds.
    pub miss_ns: f64,
    /// Geometric mean of the last size where 4 KiB pages cost at most 15% more
    /// than huge pages and the next (larger) size measured.
    pub reach_bytes: Option<u64>,
}

/// Compare latency curves by size: `base` with small pages, `huge` with huge pages.
pub fn estimate_tlb(base: &[(u64, f64)], huge: &[(u64, f64)]) -> Option<TlbEstimate> {
    let mut both: Vec<(u64, f64, f64)> = base
        .iter()
        .filter_map(|&(s, b)| huge.iter().find(|(h, _)| *h == s).map(|&(_, h)| (s, b, h)))
        .collect();
    both.sort_by_key(|x| x.0);
    let &(_, b, h) = both.last()?;
    let miss_ns = (b - h).max(0.0);
    // The last size where 4 KiB pages still keep up: a stray difference at a
    // cache-resident size (a few ns, easily noise) must not end the search.
    let last_good = both.iter().rposition(|&(_, b, h)| b <= h * 1.15);
    let reach_bytes = match last_good {
        Some(i) if i + 1 < both.len() => {
            Some(((both[i].0 as f64) * (both[i + 1].0 as f64)).sqrt() as u64)
        }
        _ => None,
    };
    Some(TlbEstimate {
        miss_ns,
        reach_bytes,
    })
}

pub fn arch_of_host() -> Option<Arch> {
    match std::env::consts::ARCH {
        "x86_64" => Some(Arch::X86_64),
        "aarch64" => Some(Arch::Aarch64),
        _ => None,
    }
}

/// A calibrated machine and where each of its values came from.
#[derive(Debug, Clone)]
pub struct Fit {
    pub machine: Machine,
    pub notes: Vec<String>,
    /// (table, key, the measurement the value came from); table "" is the
    /// top level, `cpu.cache#1` the second `[[cpu.cache]]`.
    pub sources: Vec<(String, String, String)>,
    /// The measurements the hierarchy was fitted to reproduce.
    pub used: Vec<crate::hierarchy::Used>,
    /// (`table.key`, relative spread) of every fitted value that has one.
    pub spreads: Vec<(String, f64)>,
    /// The scratch directory's disk, fitted from the direct I/O.
    pub disk: Option<crate::iofit::DiskFit>,
    /// Which node-wide figure `[memsys] node_gbps` reproduces.
    pub node_gbps_from: crate::memsys::NodeGbpsFrom,
}

impl Fit {
    pub(crate) fn source(&mut self, table: &str, key: &str, from: impl Into<String>) {
        // Measured, so given: a run on the fitted machine does not warn
        // that it is a default (numasim::machine::defaults::era_warnings).
        self.machine.given.insert(&if table.is_empty() {
            key.to_string()
        } else {
            format!("{table}.{key}")
        });
        self.sources.retain(|(t, k, _)| !(t == table && k == key));
        self.sources.push((table.into(), key.into(), from.into()));
    }

    /// The machine TOML with each fitted value followed by a comment naming
    /// its measurement, and each value the probe could not see commented
    /// out as the default it is (the loader supplies the same default).
    /// Returns the text and the `table.key` names of the unseen values.
    pub fn annotated_toml(&self) -> (String, Vec<String>) {
        let plain = self.machine.to_toml_string();
        for comment_out in [true, false] {
            let (text, unseen) = annotate(&plain, &self.sources, comment_out);
            // Commenting a line out is only right where the loader's default
            // is the value written; otherwise keep it, marked as a default.
            if !comment_out
                || Machine::from_toml_str(&text, "probe output").as_ref() == Ok(&self.machine)
            {
                return (text, unseen);
            }
        }
        unreachable!("the second pass always returns")
    }
}

const UNSEEN: &str = "default: not seen by the probe";

/// ` (spread 4.1%)`, with `; FLAGGED` past [`crate::bench::SPREAD_BOUND`]:
/// a noisy figure is written, but never silently.
pub(crate) fn spread_tag(sp: Option<f64>) -> String {
    match sp {
        None => String::new(),
        Some(x) if x > crate::bench::SPREAD_BOUND => format!(
            " (spread {:.1}%; FLAGGED: over {:.0}%)",
            x * 100.0,
            crate::bench::SPREAD_BOUND * 100.0
        ),
        Some(x) => format!(" (spread {:.1}%)", x * 100.0),
    }
}

/// Annotate `key = value` lines of `toml` by `sources`; see [`Fit::annotated_toml`].
pub fn annotate(
    toml: &str,
    sources: &[(String, String, String)],
    comment_out: bool,
) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut table = String::new();
    // `cpu.cache#N` for the N-th `[[cpu.cache]]` (0-based).
    let mut indexed = String::new();
    let mut seen_arrays: Vec<String> = Vec::new();
    let mut unseen: Vec<String> = Vec::new();
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            table = t.trim_matches(|c| c == '[' || c == ']').to_string();
            indexed = if t.starts_with("[[") {
                let n = seen_arrays.iter().filter(|x| **x == table).count();
                seen_arrays.push(table.clone());
                format!("{table}#{n}")
            } else {
                table.clone()
            };
            out.push_str(line);
        } else if let Some((key, _)) = t.split_once(" = ").filter(|_| !t.starts_with('#')) {
            let found = sources
                .iter()
                .find(|(tb, k, _)| *tb == indexed && k == key)
                .or_else(|| sources.iter().find(|(tb, k, _)| *tb == table && k == key));
            match found {
                Some((_, _, from)) => out.push_str(&format!("{line}  # {from}")),
                None => {
                    let name = if table.is_empty() {
                        key.to_string()
                    } else {
                        format!("{table}.{key}")
                    };
                    if !unseen.contains(&name) {
                        unseen.push(name);
                    }
                    if comment_out {
                        out.push_str(&format!("# {line}  # {UNSEEN}"));
                    } else {
                        out.push_str(&format!("{line}  # {UNSEEN}"));
                    }
                }
            }
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    (out, unseen)
}

/// Build and validate the machine. Returns it with notes on every
/// parameter that had to fall back to a default.
pub fn build_machine(m: &Measurements) -> Result<(Machine, Vec<String>), String> {
    fit(m).map(|f| (f.machine, f.notes))
}

/// Build and validate the machine, recording where each value came from.
/// What a noisy node bandwidth is written as ([`noisy_bandwidth_floor`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandwidthFloor {
    pub gbps: f64,
    /// Whether one core's stream rate (else the slowest repetition's bound).
    pub one_core: bool,
}

impl BandwidthFloor {
    /// What was written, for the fit's note (`stream rate`) or the machine
    /// file's comment (`stream_mbps`, the record it came from).
    fn source(&self, core: &'static str) -> &'static str {
        if self.one_core {
            core
        } else {
            "the slowest repetition's bound, 2 x median x (1 - spread),"
        }
    }
}

/// Where the node copy's spread is over the bound, the bandwidth a fit
/// can still stand behind: spread = (max - min) / median and max >= median,
/// so every repetition copied at least median x (1 - spread); one core's
/// stream rate (GB/s from `stream_mbps`) is a lower bound too, and the
/// larger of the two is written. On the 2-vCPU EPYC guest, whose node copy
/// is bimodal (spreads 12-66%), that is one core's rate as before; on the
/// 16-vCPU Xeon guest's run at 10.9% it is 81 GB/s where one core's 19.1
/// GB/s made 16 threads' page zeroing share a fifth of the node (docs/probe.md,
/// "Round 17"). `None` where the copy is quiet or missing, or no stream
/// rate (`stream_mbps`, `None`) was fitted.
pub fn noisy_bandwidth_floor(m: &Measurements, stream_mbps: Option<f64>) -> Option<BandwidthFloor> {
    let sp = m.node_copy_spread?;
    let bps = m.node_copy_bps?;
    let stream_mbps = stream_mbps?;
    if sp <= crate::bench::SPREAD_BOUND {
        return None;
    }
    let slowest = 2.0 * bps * (1.0 - sp).max(0.0) / 1e9;
    let core = stream_mbps / 1e3;
    Some(BandwidthFloor {
        gbps: slowest.max(core),
        one_core: core >= slowest,
    })
}

pub fn fit(m: &Measurements) -> Result<Fit, String> {
    let mut notes = Vec::new();
    let node_sum_kb: u64 = m.topo.nodes.iter().map(|n| n.mem_total_kb).sum();
    // Some hosts (hot-added or virtio-mem memory) show less in the node
    // meminfo than in /proc/meminfo; scale the nodes to the real total.
    let scale = if node_sum_kb > 0
        && m.proc_mem_total_kb > 0
        && (node_sum_kb as f64 - m.proc_mem_total_kb as f64).abs()
            > 0.1 * m.proc_mem_total_kb as f64
    {
        let s = m.proc_mem_total_kb as f64 / node_sum_kb as f64;
        notes.push(format!(
            "machine: the nodes' MemTotal sum to {} kB but /proc/meminfo says {} kB; node sizes scaled by {:.3}",
            node_sum_kb, m.proc_mem_total_kb, s
        ));
        s
    } else {
        1.0
    };
    let nodes: Vec<Node> = m
        .topo
        .nodes
        .iter()
        .map(|n| Node {
            cpus: n.cpus.len() as u32,
            mem_bytes: ((n.mem_total_kb as f64 * scale) as u64 * 1024) / m.page_size * m.page_size,
        })
        .collect();
    let mut mach = Machine::basic(&m.name, nodes, m.topo.matrix()).map_err(|e| e.to_string())?;
    mach.description = m.description.clone();
    if let Some(a) = arch_of_host() {
        mach.arch = a;
    }
    mach.page_size = m.page_size;

    // Bandwidth: a copy moves each byte twice (read and write), as STREAM counts it.
    match m.node_copy_bps {
        Some(bps) => mach.memory.bandwidth_gbps = 2.0 * bps / 1e9,
        None => {
            notes.push("machine: dram.bandwidth_gbps left at its default (no copy figure)".into())
        }
    }

    // TLB.
    let mut sizes = vec![m.page_size];
    sizes.extend(m.huge_page_sizes.iter().copied());
    sizes.sort_unstable();
    sizes.dedup();
    mach.tlb.page_sizes = sizes;
    mach.tlb.refill = TlbRefill::Hardware;
    // x86's and Arm's walkers cache the upper levels' entries (Intel's
    // PML4/PDPTE/PDE caches, Intel SDM Vol. 3A 4.10.3; AMD's page walk
    // cache; Arm's intermediate table walk caches): a TLB miss loads the
    // leaf PTE from the data caches, the rest is the walker's `miss_ns`.
    mach.hierarchy.walk_cache_levels = mach.tlb.walk_levels.saturating_sub(1);
    let base = m.latencies(PageKind::Base);
    let huge = [PageKind::Thp, PageKind::Hugetlb]
        .into_iter()
        .map(|k| m.latencies(k))
        .find(|c| !c.is_empty())
        .unwrap_or_default();
    match (m.tlb_entries, estimate_tlb(&base, &huge).and_then(|t| t.reach_bytes)) {
        (Some(e), _) => mach.tlb.entries = e.clamp(1, u32::MAX as u64) as u32,
        (None, Some(r)) => mach.tlb.entries = (r / m.page_size).max(1) as u32,
        (None, None) => notes.push(format!(
            "machine: tlb.entries left at {} (no `TLB size` in /proc/cpuinfo, and 4 KiB and huge-page latency never parted by 15% in the sizes measured)",
            mach.tlb.entries
        )),
    }

    // CPU and caches.
    mach.cpu.model = m.cpu_model.clone();
    if let Some(mhz) = m.clock_mhz {
        mach.cpu.clock_mhz = mhz;
    }
    if let Some(c) = m.caches.first() {
        if c.line.is_power_of_two() {
            mach.cpu.cache_line = c.line;
        }
    }
    mach.cpu.caches = m
        .caches
        .iter()
        .map(|c| Cache {
            level: c.level,
            size: c.size,
            latency_cycles: 0.0,
            shared_by: c.shared_by,
            copy_mbps: None,
        })
        .collect();
    let (fitted, hier_notes) = crate::hierarchy::fit(m, &mut mach);
    notes.extend(hier_notes);
    // A node's bandwidth too noisy to write as its median (the host's
    // other tenants, or vCPUs that share a core some of the time): the
    // slowest repetition's figure, which the spread bounds, or one core's
    // stream rate where that is higher: a lower bound that repeats.
    if let Some(floor) = noisy_bandwidth_floor(
        m,
        fitted
            .iter()
            .any(|x| x.key == "stream_mbps")
            .then_some(mach.hierarchy.stream_mbps),
    ) {
        let was = mach.memory.bandwidth_gbps;
        mach.memory.bandwidth_gbps = floor.gbps;
        notes.push(format!(
            "machine: dram.bandwidth_gbps: node_copy_mbps varied {:.0}% (over {:.0}%), so {:.1} GB/s is not written; \
             {} {:.1} GB/s is, a lower bound",
            m.node_copy_spread.unwrap_or(0.0) * 100.0,
            crate::bench::SPREAD_BOUND * 100.0,
            was,
            floor.source("one core's stream rate"),
            floor.gbps
        ));
    }

    // Interconnect: two CPUs adding to one shared counter take turns, one
    // line transfer per add, so each thread's add costs two transfers (its
    // own and the other's, as the simulated counter charges them); remote
    // copy bandwidth bounds the link.
    if let Some(&(_, ns)) = m.atomic_shared_ns.iter().find(|(t, _)| *t == 2) {
        mach.interconnect.line_transfer_ns = ns / 2.0;
    } else {
        notes.push("machine: interconnect.line_transfer_ns left at its default (one CPU)".into());
    }
    let remote: Vec<f64> = m.pairs.iter().filter(|p| p.0 != p.1).map(|p| p.3).collect();
    if remote.is_empty() {
        notes.push("machine: interconnect.link_gbps left at its default (one node: no remote memory to measure)".into());
    } else {
        let mean = remote.iter().sum::<f64>() / remote.len() as f64;
        mach.interconnect.link_gbps = 2.0 * mean / 1e9;
    }

    // The scratch directory's device: fitted from the direct I/O through
    // the block layer where the run has it (iofit.rs), else the lower of
    // the two direct rates.
    let disk = crate::iofit::fit(&mach, &m.io);
    if let Some(d) = &disk {
        mach.io.disks = vec![DiskGroup {
            count: 1,
            kind: format!("probed {}", m.io.fs),
            mibps: d.read_mibps,
            write_mibps: Some(d.write_mibps),
        }];
        // The block layer the fit and the validation run the disk through,
        // fitted latency included, goes into the machine file too, so a
        // scenario on the fitted host replays its I/O as `--validate` does.
        match crate::iofit::io_machine(&mach, d, &m.io) {
            Ok(with_disk) => {
                mach.block = with_disk.block;
                mach.io.controllers = with_disk.io.controllers;
            }
            Err(e) => notes.push(format!("io: no [block] table written: {e}")),
        }
        notes.extend(d.notes.iter().cloned());
    } else if let Some((kind, mibps)) = &m.disk {
        mach.io.disks = vec![DiskGroup {
            count: 1,
            kind: kind.clone(),
            mibps: *mibps,
            write_mibps: None,
        }];
    }

    let mut f = Fit {
        machine: mach,
        notes,
        sources: Vec::new(),
        used: fitted.iter().map(|x| x.used.clone()).collect(),
        spreads: Vec::new(),
        disk,
        node_gbps_from: Default::default(),
    };
    for x in &fitted {
        let table = match x.cache {
            Some(i) => format!("{}#{i}", x.table),
            None => x.table.to_string(),
        };
        f.spreads.push((format!("{table}.{}", x.key), x.spread));
        f.source(
            &table,
            x.key,
            format!("{}{}", x.from, spread_tag(Some(x.spread))),
        );
    }
    // The copy `stream_mbps` was solved on (the largest, or a quieter
    // size where the largest's repetitions disagreed: hierarchy::stream_pass).
    let stream_at = fitted
        .iter()
        .find(|x| x.key == "stream_mbps")
        .map(|x| (x.used.bytes, x.used.page));
    fit_costs(m, &mut f, stream_at);
    record_sources(m, &mut f);
    // After the caches: the memory-side latency is what the LLC lookup leaves.
    crate::memsys::fit(m, &mut f);

    // Round-trip through the loader: what we write must read back.
    let text = f.machine.to_toml_string();
    f.machine = Machine::from_toml_str(&text, "probe output").map_err(|e| e.to_string())?;
    Ok(f)
}

/// `[hierarchy]`, `[timer]` and `[fault]` from the curves and the
/// clock and fault runs (docs/probe.md, "Fitting").
fn fit_costs(m: &Measurements, f: &mut Fit, stream_at: Option<(u64, PageKind)>) {
    // Curves with huge pages where measured: TLB misses are modelled on top.
    let huge = [PageKind::Thp, PageKind::Hugetlb]
        .into_iter()
        .find(|&k| !m.curve(k).is_empty())
        .unwrap_or(PageKind::Base);
    // The copy stream_mbps was solved on, else the largest.
    let (curve, hl) = match stream_at {
        Some((_, p)) => (m.curve(p), p.label()),
        None => (m.curve(huge), huge.label()),
    };
    let mach = &mut f.machine;
    let mut src: Vec<(&str, &str, String)> = Vec::new();
    let at = stream_at
        .and_then(|(b, _)| curve.iter().find(|x| x.0 == b))
        .or(curve.last());
    if let Some(&(size, r)) = at {
        if r.copy_bps > 0.0 {
            // Clearing a page is the write half of a copy: one core writes
            // at least as fast as it copies.
            mach.fault.zero_gbps = r.copy_bps / 1e9;
            src.push((
                "fault",
                "zero_gbps",
                format!(
                    "copy_mbps at {} ({hl}){}: one core's write stream",
                    crate::bench::size_label(size),
                    spread_tag(Some(r.spread[0]))
                ),
            ));
        }
    }
    // The clock: clock_gettime is the clock read and its conversion in user
    // space (vDSO); what gettimeofday costs beyond it is the call itself.
    let sp = |metric: &str| {
        let key = format!("{metric} threads=1");
        spread_tag(m.spreads.iter().find(|(k, _)| *k == key).map(|x| x.1))
    };
    if let Some(c) = one_thread(&m.clock_gettime_ns) {
        mach.timer.clock_read_ns = c;
        src.push((
            "timer",
            "clock_read_ns",
            format!("clock_gettime_ns, 1 thread{}", sp("clock_gettime_ns")),
        ));
        if let Some(g) = one_thread(&m.gettimeofday_ns).filter(|&g| g < c) {
            // Both through the vDSO, and gettimeofday the cheaper (it
            // reads CLOCK_REALTIME directly, clock_gettime dispatches on
            // the clock id first: lib/vdso/gettimeofday.c,
            // __cvdso_gettimeofday vs __cvdso_clock_gettime_common): the model
            // prices gettimeofday as clock_read_ns + syscall_ns, so the
            // read it pays is its own, and no call is left over.
            mach.timer.clock_read_ns = g;
            mach.timer.syscall_ns = 0.0;
            src.retain(|x| x.1 != "clock_read_ns");
            src.push((
                "timer",
                "clock_read_ns",
                format!(
                    "gettimeofday_ns, 1 thread{}: through the vDSO, below clock_gettime_ns ({c:.1} ns)",
                    sp("gettimeofday_ns")
                ),
            ));
            src.push((
                "timer",
                "syscall_ns",
                "0: gettimeofday is a vDSO call, no cheaper than clock_gettime by a syscall"
                    .to_string(),
            ));
        } else if let Some(g) = one_thread(&m.gettimeofday_ns) {
            mach.timer.syscall_ns = (g - c).max(0.0);
            // A difference of two close figures: its uncertainty is the
            // sum of theirs, in ns.
            let abs = |metric: &str, x: f64| {
                let key = format!("{metric} threads=1");
                m.spreads
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or(0.0, |s| s.1)
                    * x
            };
            src.push((
                "timer",
                "syscall_ns",
                format!(
                    "gettimeofday_ns - clock_gettime_ns, 1 thread, ± {:.1} ns from their spreads (0: a vDSO call)",
                    abs("gettimeofday_ns", g) + abs("clock_gettime_ns", c)
                ),
            ));
        }
    }
    // A fault: solved so that one simulated thread faults at the measured
    // rate; the zeroing (at `zero_gbps`) and the shared lines are the
    // model's, the rest is `fault_ns`.
    // On the thread's CPU clock where the run has it, as every other
    // one-thread figure (a busy host's wait for a CPU is not a fault's).
    let (faults, metric) = match one_thread(&m.fault_on_cpu_per_s).filter(|r| *r > 0.0) {
        Some(r) => (Some(r), "fault_on_cpu_per_s"),
        None => (one_thread(&m.fault_per_s), "fault_per_s"),
    };
    if let Some(rate) = faults.filter(|r| *r > 0.0) {
        let base = mach.clone();
        let at = |x: f64| {
            let mut t = base.clone();
            t.fault.fault_ns = x;
            crate::validate::fault_rate(&t, 1, m.fault_bytes).map_or(f64::NAN, |r| 1e9 / r)
        };
        match crate::hierarchy::solve_within(at, 1e9 / rate, base.fault.fault_ns.max(1.0), 1e-3) {
            Some(x) if x > 0.0 => {
                mach.fault.fault_ns = x;
                src.push((
                    "fault",
                    "fault_ns",
                    format!(
                        "{metric}, 1 thread{} = {:.0} ns a fault, less the simulated zeroing and shared lines",
                        sp(metric),
                        1e9 / rate
                    ),
                ));
            }
            _ => f.notes.push(format!(
                "machine: fault.fault_ns left at its default: {:.0} ns a fault is less than the zeroing and lines alone",
                1e9 / rate
            )),
        }
    }
    for (t, k, from) in src {
        f.source(t, k, from);
    }
}

/// How much of the caches a random read stream keeps: the geometric mean
/// of the last size read faster than half-way (geometrically) from the
/// smallest size's rate to the largest's, and the next size measured.
/// Half-way: past it memory's share of the reads dominates their cost
/// (with the model's `read_ns + p_mem × memory / mlp`, about a quarter of
/// the reads miss there). The first version took the first 15% drop,
/// which on a host with a small L2 and a large L3 (Xeon, 2 MiB and 300
/// MiB) is the L2 → L3 step: the reach came out at the L2's size, the L3
/// held nothing beyond it in the model and its latency was never fitted.
/// On the EPYC guest both rules give 8 MiB (the fixture runs).
pub fn random_reach(curve: &[(u64, &SizeResult)]) -> Option<u64> {
    let &(_, first) = curve.first()?;
    let &(_, last) = curve.last()?;
    let fast = (first.random_bps * last.random_bps).sqrt();
    // The first size that falls off: a later size back at cache speed is noise.
    let slow = curve.iter().position(|(_, r)| r.random_bps < fast)?;
    let last = curve.get(slow.checked_sub(1)?)?;
    Some(((last.0 as f64) * (curve[slow].0 as f64)).sqrt() as u64)
}

/// Sources of the values fitted in [`fit`] before the costs.
fn record_sources(m: &Measurements, f: &mut Fit) {
    let mut v: Vec<(&str, &str, String)> = vec![
        ("", "name", "the host name".into()),
        ("", "description", "the probe run".into()),
        ("", "arch", "the probe binary's target".into()),
        ("", "page_size", "sysconf(_SC_PAGESIZE)".into()),
        ("", "nodes", "/sys/devices/system/node".into()),
        ("", "cpus_per_node", "nodeN/cpulist".into()),
        ("", "node_cpus", "nodeN/cpulist".into()),
        (
            "",
            "mem_per_node",
            "nodeN/meminfo MemTotal, checked against /proc/meminfo".into(),
        ),
        (
            "",
            "node_mem",
            "nodeN/meminfo MemTotal, checked against /proc/meminfo".into(),
        ),
        ("distance", "local", "nodeN/distance".into()),
        ("distance", "matrix", "nodeN/distance".into()),
        (
            "tlb",
            "page_sizes",
            "page size and /sys/kernel/mm/hugepages".into(),
        ),
        (
            "tlb",
            "refill",
            "a hardware page walker on x86_64 and aarch64".into(),
        ),
        (
            "hierarchy",
            "walk_cache_levels",
            "the walk's upper levels, held by the page-structure caches (Intel SDM Vol. 3A 4.10.3; AMD's page walk cache): a miss loads the leaf PTE".into(),
        ),
        (
            "hierarchy",
            "ways",
            "ways_of_associativity in /sys/devices/system/cpu/cpu0/cache (16 where absent)".into(),
        ),
        ("cpu", "model", "/proc/cpuinfo".into()),
        (
            "cpu",
            "cache_line",
            "/sys/devices/system/cpu/cpu0/cache".into(),
        ),
        (
            "cpu.cache",
            "level",
            "/sys/devices/system/cpu/cpu0/cache".into(),
        ),
        (
            "cpu.cache",
            "size",
            "/sys/devices/system/cpu/cpu0/cache".into(),
        ),
        (
            "cpu.cache",
            "shared_by",
            "/sys/devices/system/cpu/cpu0/cache".into(),
        ),
    ];
    if m.clock_mhz.is_some() {
        v.push(("cpu", "clock_mhz", "/proc/cpuinfo".into()));
    }
    if let Some(bps) = m.node_copy_bps {
        let stream = f
            .sources
            .iter()
            .any(|(_, k, _)| k == "stream_mbps")
            .then_some(f.machine.hierarchy.stream_mbps);
        v.push((
            "dram",
            "bandwidth_gbps",
            if let Some(floor) = noisy_bandwidth_floor(m, stream) {
                format!(
                    "FLAGGED node_copy_mbps{} would give {:.1}: {} instead, a lower bound",
                    spread_tag(m.node_copy_spread),
                    2.0 * bps / 1e9,
                    floor.source("one core's stream_mbps")
                )
            } else {
                format!(
                    "2 x median node_copy_mbps{}: a copy reads and writes each byte",
                    spread_tag(m.node_copy_spread)
                )
            },
        ));
    }
    if m.atomic_shared_ns.iter().any(|(t, _)| *t == 2) {
        v.push((
            "interconnect",
            "line_transfer_ns",
            "half of atomic_add_ns shared, 2 threads (the two threads' adds alternate)".into(),
        ));
    }
    if m.pairs.iter().any(|p| p.0 != p.1) {
        v.push((
            "interconnect",
            "link_gbps",
            "2 x mean remote_copy_mbps".into(),
        ));
    }
    if m.nt_store_threshold.is_some() {
        v.push((
            "hierarchy",
            "nt_store_threshold",
            "glibc.cpu.x86_non_temporal_threshold as `ld.so --list-tunables` gives it: memcpy's non-temporal stores past it (glibc sysdeps/x86/dl-cacheinfo.h)".into(),
        ));
    }
    if m.tlb_entries.is_some() {
        v.push(("tlb", "entries", "/proc/cpuinfo `TLB size`".into()));
    } else {
        let base = m.latencies(PageKind::Base);
        let huge = [PageKind::Thp, PageKind::Hugetlb]
            .into_iter()
            .map(|k| m.latencies(k))
            .find(|c| !c.is_empty())
            .unwrap_or_default();
        if estimate_tlb(&base, &huge).is_some_and(|t| t.reach_bytes.is_some()) {
            v.push((
                "tlb",
                "entries",
                "mem_latency_ns: where 4k parts from huge pages by 15%".into(),
            ));
        }
    }
    if let Some(d) = &f.disk {
        v.push((
            "io",
            "disks",
            "the scratch directory's direct I/O, through the block layer".into(),
        ));
        for k in ["count", "kind"] {
            v.push(("io.disks", k, "the scratch directory's device".into()));
        }
        for (k, from) in &d.sources {
            // The sweep's command count is the `[block]` table's.
            let table = if matches!(
                *k,
                "disk_commands"
                    | "disk_command_us"
                    | "segment_ns"
                    | "segment_write_ns"
                    | "segment_run"
            ) {
                "block"
            } else {
                "io.disks"
            };
            v.push((table, k, from.clone()));
        }
        v.push((
            "io",
            "controllers",
            "one: the scratch directory's device".into(),
        ));
        // `[block]`: what the fit saw, and the rest from the storage preset
        // it starts from (iofit::io_machine).
        let latency_from: String = if d.segment_us.is_some() {
            "direct seq_read_mibps of 4 KiB-page and huge-page buffers at 1 MiB and 128 KiB a call, with segment_ns, through the block layer".into()
        } else if d.latency_us > 0.0 {
            "direct seq_read_mibps at 1 MiB and 128 KiB a call, through the block layer".into()
        } else {
            "no second direct request size: latency not told from rate, 0".into()
        };
        v.push((
            "block",
            "disk_latency_us",
            if d.command_share > 0.0 {
                format!(
                    "{latency_from}; less the {:.0}% of it the queue-depth sweep puts in disk_command_us",
                    d.command_share * 100.0
                )
            } else {
                latency_from
            },
        ));
        if let Some(w) = d.write_latency_us {
            let from: String = if d.segment_write_us.is_some_and(|s| s > 0.0) {
                "direct seq_write_mibps of 4 KiB-page and huge-page buffers at 1 MiB and 128 KiB a call, with segment_write_ns, through the block layer".into()
            } else if w > 0.0 {
                "direct seq_write_mibps at 1 MiB and 128 KiB a call, through the block layer".into()
            } else {
                "direct seq_write_mibps at 1 MiB and 128 KiB a call: no per-call time beyond the host's work, 0".into()
            };
            v.push((
                "block",
                "disk_write_latency_us",
                if d.command_share > 0.0 {
                    format!(
                        "{from}; less the {:.1} us the queue-depth sweep puts in disk_command_us",
                        d.occupied_us()
                    )
                } else {
                    from
                },
            ));
        }
        if d.alloc_us.is_some() {
            v.push((
                "block",
                "xfs_alloc_us",
                "half the CPU time a direct write call takes beyond a read of its size (cpu_pct_per_mibps): the extent transaction and the unwritten conversion".into(),
            ));
        }
        v.push((
            "block",
            "max_request",
            "queue/max_sectors_kb of the scratch directory's device (1.25 MiB where not read)"
                .into(),
        ));
        if d.segment_us.is_some() {
            v.push((
                "block",
                "max_segments",
                "queue/max_segments of the scratch directory's device".into(),
            ));
        }
        if d.page_op_ns.is_some() {
            v.push((
                "block",
                "page_op_ns",
                "the buffered read's CPU time a page (cpu_pct_per_mibps), less the copy and the requests the model prices".into(),
            ));
        }
        v.push((
            "block",
            "copy_gbps",
            "half the last-level cache's fitted copy_mbps (a copy reads and writes; the page just came in through the LLC), else the stream's".into(),
        ));
        if let Some(c) = d.ceiling_mibps {
            v.push((
                "block",
                "controller_mbps",
                format!("the queue-depth sweep levels off: all the disk's commands together at most {c:.0} MiB/s"),
            ));
        }
        for k in ["controller_mbps", "io_node_gbps"] {
            v.push((
                "block",
                k,
                "no link limit: a local or virtual disk's link is not seen, its media rate binds"
                    .into(),
            ));
        }
    } else if m.disk.is_some() {
        v.push((
            "io",
            "disks",
            "seq_read_mibps of the scratch directory".into(),
        ));
        for k in ["count", "kind", "mibps"] {
            v.push((
                "io.disks",
                k,
                "seq_read_mibps of the scratch directory".into(),
            ));
        }
    }
    for (t, k, from) in v {
        if !f.sources.iter().any(|(a, b, _)| a == t && b == k) {
            f.sources.push((t.into(), k.into(), from));
        }
    }
    // Every other key of the written `[block]` table is the storage
    // preset's (iofit::io_machine), whatever keys the table has.
    if f.disk.is_some() {
        let written: toml::Table = toml::from_str(&f.machine.to_toml_string()).unwrap_or_default();
        for k in written
            .get("block")
            .and_then(|b| b.as_table())
            .into_iter()
            .flat_map(|b| b.keys())
        {
            if !f.sources.iter().any(|(a, b, _)| a == "block" && b == k) {
                f.sources.push((
                    "block".into(),
                    k.clone(),
                    "not seen: the nvme-gen4 storage preset (Linux 6.x host path lengths, docs/io.md)".into(),
                ));
            }
        }
    }
}

/// A whole probe run read back from its `--format jsonl` output: the host
/// records (`clock_mhz`, `cache_bytes`, `page_bytes`, the nodes) give what
/// [`measurements_from_jsonl`] cannot, so `probe --from FILE` fits it
/// again without measuring. Errors name the line or what is missing.
pub fn measurements_from_records(text: &str) -> Result<Measurements, String> {
    use crate::topology::NodeInfo;
    use serde_json::Value;
    let mut base = Measurements {
        name: String::new(),
        description: String::new(),
        topo: Topology { nodes: Vec::new() },
        proc_mem_total_kb: 0,
        page_size: 0,
        huge_page_sizes: Vec::new(),
        sizes: Vec::new(),
        node_copy_bps: None,
        node_copy_spread: None,
        node_copy_bytes: None,
        atomic_shared_ns: Vec::new(),
        atomic_percpu_ns: Vec::new(),
        pairs: Vec::new(),
        disk: None,
        io: Default::default(),
        caches: Vec::new(),
        cpu_model: String::new(),
        clock_mhz: None,
        tlb_entries: None,
        nt_store_threshold: None,
        fault_bytes: 0,
        fault_per_s: Vec::new(),
        fault_on_cpu_per_s: Vec::new(),
        clock_gettime_ns: Vec::new(),
        gettimeofday_ns: Vec::new(),
        spreads: Vec::new(),
        memsys: Default::default(),
    };
    let mut distance: Vec<(u64, u64, u32)> = Vec::new();
    let mut direct: Vec<(String, f64)> = Vec::new();
    let mut fs = String::new();
    let mut seen_host = false;
    let mut next_cpu = 0usize;
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |m: &str| format!("line {}: {m}", i + 1);
        let v: Value = serde_json::from_str(line).map_err(|e| bad(&format!("not JSON: {e}")))?;
        if v["experiment"] != crate::EXPERIMENT {
            continue;
        }
        let metric = v["metric"].as_str().ok_or_else(|| bad("no `metric`"))?;
        let value = v["value"].as_f64().filter(|x| x.is_finite() && *x >= 0.0);
        let case = &v["case"];
        let num = |what: &str| {
            value.ok_or_else(|| bad(&format!("`{what}` needs a finite value of 0 or more")))
        };
        let node = || case["node"].as_u64().ok_or_else(|| bad("no `case.node`"));
        // An I/O pass's call size: 1 MiB where the case names none.
        let pass_request = || match case["request"].as_str() {
            None => Ok(crate::iofit::LARGE_REQUEST),
            Some(l) => crate::bench::parse_size_label(l)
                .ok_or_else(|| bad(&format!("`case.request` {l:?} is not a size"))),
        };
        // A sweep point's call size and depth.
        let sweep_point = || -> Result<(u64, u32), String> {
            let request = case["request"]
                .as_str()
                .and_then(crate::bench::parse_size_label)
                .ok_or_else(|| bad("no `case.request` size"))?;
            let depth = case["depth"]
                .as_u64()
                .filter(|d| (1..=1024).contains(d))
                .ok_or_else(|| bad("`case.depth` is not a depth of 1 to 1024"))?;
            Ok((request, depth as u32))
        };
        let node_mut = |nodes: &mut Vec<NodeInfo>, id: u64| -> usize {
            match nodes.iter().position(|n| n.id == id as usize) {
                Some(i) => i,
                None => {
                    nodes.push(NodeInfo {
                        id: id as usize,
                        cpus: Vec::new(),
                        mem_total_kb: 0,
                        mem_free_kb: 0,
                        distance: Vec::new(),
                    });
                    nodes.len() - 1
                }
            }
        };
        match metric {
            "clock_mhz" => {
                seen_host = true;
                base.name = case["host"].as_str().unwrap_or("host").to_string();
                base.cpu_model = case["model"].as_str().unwrap_or("unknown").to_string();
                base.description = case["description"].as_str().unwrap_or("").to_string();
                base.clock_mhz = Some(num(metric)?).filter(|x| *x > 0.0);
            }
            "proc_mem_total_kb" => base.proc_mem_total_kb = num(metric)? as u64,
            "page_bytes" => {
                let b = num(metric)? as u64;
                if !b.is_power_of_two() {
                    return Err(bad(&format!("page_bytes {b} is not a power of two")));
                }
                match case["of"].as_str() {
                    Some("base") => base.page_size = b,
                    Some("huge") => base.huge_page_sizes.push(b),
                    _ => return Err(bad("page_bytes needs `case.of` = base or huge")),
                }
            }
            "tlb_entries" => base.tlb_entries = Some(num(metric)? as u64).filter(|e| *e > 0),
            "nt_store_threshold_bytes" => {
                base.nt_store_threshold = Some(num(metric)? as u64).filter(|b| *b > 0)
            }
            "cache_bytes" => base.caches.push(CacheInfo {
                level: case["level"]
                    .as_u64()
                    .filter(|l| (1..=4).contains(l))
                    .ok_or_else(|| bad("cache_bytes needs `case.level` 1 to 4"))?
                    as u8,
                kind: case["kind"].as_str().unwrap_or("Unified").to_string(),
                size: num(metric)? as u64,
                line: case["line"].as_u64().unwrap_or(64) as u32,
                shared_by: case["shared_by"].as_u64().unwrap_or(1).max(1) as u32,
                ways: case["ways"]
                    .as_u64()
                    .filter(|w| (1..=1024).contains(w))
                    .map(|w| w as u32),
            }),
            "mem_total_kb" => {
                let i = node_mut(&mut base.topo.nodes, node()?);
                base.topo.nodes[i].mem_total_kb = num(metric)? as u64;
            }
            "mem_free_kb" => {
                let i = node_mut(&mut base.topo.nodes, node()?);
                base.topo.nodes[i].mem_free_kb = num(metric)? as u64;
            }
            "node_cpus" => {
                let i = node_mut(&mut base.topo.nodes, node()?);
                let n = num(metric)? as usize;
                base.topo.nodes[i].cpus = (next_cpu..next_cpu + n).collect();
                next_cpu += n;
            }
            "distance" => {
                let to = case["to"].as_u64().ok_or_else(|| bad("no `case.to`"))?;
                distance.push((node()?, to, num(metric)? as u32));
            }
            "seq_read_mibps" | "seq_write_mibps" => {
                let request = pass_request()?;
                let direct_io = case["io"] == "direct";
                let rate = crate::iofit::Rate {
                    direct: direct_io,
                    write: metric == "seq_write_mibps",
                    request,
                    mibps: num(metric)?,
                    spread: v["spread"].as_f64(),
                };
                // A huge-page buffer's direct rates (round 16b) are kept
                // apart: the 4 KiB-page rates are the ones fitted before.
                if case["buffer"] == "thp" {
                    base.io.huge_rates.push(rate);
                    continue;
                }
                base.io.fs = case["fs"].as_str().unwrap_or("unknown").to_string();
                base.io.rates.push(rate);
                if direct_io && request == crate::iofit::LARGE_REQUEST {
                    fs = base.io.fs.clone();
                    direct.push((metric.to_string(), num(metric)?));
                }
            }
            // The huge-page buffer's, and the queue-depth sweep's readers'
            // (round 19), are not a pass's CPU cost.
            "cpu_pct_per_mibps" if case["buffer"] == "thp" || !case["depth"].is_null() => {}
            "io_buffer_runs" if !case["depth"].is_null() => {
                let (request, depth) = sweep_point()?;
                base.io.sweep_runs.push((request, depth, num(metric)?));
            }
            "io_buffer_runs" => {
                let request = pass_request()?;
                base.io
                    .buffer_runs
                    .push((case["buffer"] == "thp", request, num(metric)?));
            }
            "io_request_bytes"
                if case["io"] == "buffered" && case["op"] == "read" && case["depth"].is_null() =>
            {
                base.io.buffered_request = Some(num(metric)?).filter(|b| *b > 0.0);
            }
            "cpu_pct_per_mibps" => {
                let request = pass_request()?;
                base.io.cpu.push(crate::iofit::CpuCost {
                    direct: case["io"] == "direct",
                    write: case["op"] == "write",
                    request,
                    pct_per_mibps: num(metric)?,
                });
            }
            "qd_read_mibps" | "qd_speedup" => {
                let (request, depth) = sweep_point()?;
                let i = match base
                    .io
                    .depths
                    .iter()
                    .position(|d| d.request == request && d.depth == depth)
                {
                    Some(i) => i,
                    None => {
                        base.io.depths.push(crate::iofit::DepthRate {
                            request,
                            depth,
                            mibps: 0.0,
                            speedup: 1.0,
                            spread: None,
                            rate_spread: None,
                        });
                        base.io.depths.len() - 1
                    }
                };
                let d = &mut base.io.depths[i];
                if metric == "qd_speedup" {
                    d.speedup = num(metric)?;
                    d.spread = v["spread"].as_f64();
                } else {
                    d.mibps = num(metric)?;
                    d.rate_spread = v["spread"].as_f64();
                }
            }
            "io_file_bytes" => base.io.file_bytes = num(metric)? as u64,
            "read_ahead_bytes" => base.io.read_ahead = Some(num(metric)? as u64).filter(|b| *b > 0),
            "max_request_bytes" => {
                base.io.max_request = Some(num(metric)? as u64).filter(|b| *b > 0)
            }
            "io_cache_run_bytes" => base.io.cache_run = Some(num(metric)?).filter(|b| *b > 0.0),
            "max_segments" => base.io.max_segments = Some(num(metric)? as u64).filter(|n| *n > 0),
            _ => {}
        }
    }
    if !seen_host {
        return Err("no `clock_mhz` record: not the output of `numasim probe --format jsonl` (0.4 or later)".into());
    }
    if base.page_size == 0 {
        return Err("no `page_bytes` record for the base page".into());
    }
    if base.topo.nodes.is_empty() {
        return Err("no node records (`mem_total_kb`, `node_cpus`)".into());
    }
    base.topo.nodes.sort_by_key(|n| n.id);
    let ids: Vec<u64> = base.topo.nodes.iter().map(|n| n.id as u64).collect();
    for n in &mut base.topo.nodes {
        n.distance = ids
            .iter()
            .map(|to| {
                distance
                    .iter()
                    .find(|d| d.0 == n.id as u64 && d.1 == *to)
                    .map(|d| d.2)
                    .ok_or_else(|| format!("no `distance` record from node {} to node {to}", n.id))
            })
            .collect::<Result<_, _>>()?;
    }
    if !direct.is_empty() {
        let mibps = direct.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        base.disk = Some((format!("probed {fs}"), mibps));
    }
    let mut m = measurements_from_jsonl(text, base)?;
    if m.fault_bytes == 0 {
        // Runs before the fault records carried their size: --quick's.
        m.fault_bytes = 512 << 20;
    }
    if m.sizes.is_empty() {
        return Err(
            "no memory-curve records (`copy_mbps`, `random_mbps`, `mem_latency_ns`)".into(),
        );
    }
    Ok(m)
}

/// Fill the measured fields of `base` (sizes, node copy, atomics, faults,
/// clocks) from a probe's `--format jsonl` output, so that a recorded run
/// can be fitted again. Topology, caches and the CPU stay as in `base`:
/// the records do not carry them. Errors name the line.
pub fn measurements_from_jsonl(text: &str, mut base: Measurements) -> Result<Measurements, String> {
    use serde_json::Value;
    let mut sizes: Vec<(u64, PageKind, SizeResult)> = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |m: &str| format!("line {}: {m}", i + 1);
        let v: Value = serde_json::from_str(line).map_err(|e| bad(&format!("not JSON: {e}")))?;
        // `probe-validate` rows share metric names with the measurements.
        if v["experiment"]
            .as_str()
            .is_some_and(|e| e != crate::EXPERIMENT)
        {
            continue;
        }
        let metric = v["metric"].as_str().ok_or_else(|| bad("no `metric`"))?;
        let value = v["value"]
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| bad(&format!("`{metric}` has no finite `value`")))?;
        let case = &v["case"];
        let threads = case["threads"].as_u64().map(|t| t as usize);
        if let (Some(sp), Some(t)) = (v["spread"].as_f64(), threads) {
            if case["mode"].as_str().is_none_or(|m| m == "threads")
                && case["kind"].as_str().is_none_or(|k| k == "shared")
            {
                base.spreads.push((format!("{metric} threads={t}"), sp));
            }
            if case["kind"].as_str() == Some("percpu") {
                base.spreads
                    .push((format!("{metric} percpu threads={t}"), sp));
            }
        }
        let sp = v["spread"].as_f64().unwrap_or(0.0);
        let page = match case["page"].as_str() {
            Some("4k") => Some(PageKind::Base),
            Some("thp") => Some(PageKind::Thp),
            Some("hugetlb") => Some(PageKind::Hugetlb),
            Some(p) => return Err(bad(&format!("page `{p}`: allowed 4k, thp, hugetlb"))),
            None => None,
        };
        // The entry of this record's (size, page), made on first sight.
        let mut at = || -> Result<usize, String> {
            let bytes = case["bytes"]
                .as_u64()
                .ok_or_else(|| bad("no `case.bytes`"))?;
            let page = page.ok_or_else(|| bad("no `case.page`"))?;
            Ok(
                match sizes.iter().position(|(s, p, _)| *s == bytes && *p == page) {
                    Some(i) => i,
                    None => {
                        sizes.push((bytes, page, SizeResult::default()));
                        sizes.len() - 1
                    }
                },
            )
        };
        match metric {
            // A figure of one buffer: its rate (bytes/s; the chase's ns)
            // and its spread, in `SizeResult::spread`'s order.
            "copy_mbps" | "copy_loop_mbps" | "random_mbps" | "mem_latency_ns" | "read_mbps"
            | "write_mbps" => {
                let i = at()?;
                let r = &mut sizes[i].2;
                let f = match metric {
                    "copy_mbps" => {
                        r.copy_bps = value * 1e6;
                        0
                    }
                    "copy_loop_mbps" => {
                        r.copy_loop_bps = value * 1e6;
                        1
                    }
                    "random_mbps" => {
                        r.random_bps = value * 1e6;
                        2
                    }
                    "mem_latency_ns" => {
                        r.latency_ns = Some(value);
                        3
                    }
                    "read_mbps" => {
                        r.read_bps = value * 1e6;
                        4
                    }
                    _ => {
                        r.write_bps = value * 1e6;
                        5
                    }
                };
                r.spread[f] = sp;
            }
            "node_copy_mbps" => {
                base.node_copy_bps = Some(value * 1e6);
                base.node_copy_spread = v["spread"].as_f64();
                base.node_copy_bytes = case["size"]
                    .as_str()
                    .and_then(crate::bench::parse_size_label);
            }
            "fault_per_s" if case["mode"].as_str() == Some("threads") => {
                if let Some(b) = case["bytes"].as_u64() {
                    base.fault_bytes = b;
                }
                base.fault_per_s
                    .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value))
            }
            "fault_on_cpu_per_s" if case["mode"].as_str() == Some("threads") => base
                .fault_on_cpu_per_s
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            "gettimeofday_ns" => base
                .gettimeofday_ns
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            "clock_gettime_ns" => base
                .clock_gettime_ns
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            "idle_latency_ns" | "bandwidth_mbps" | "core_read_mbps" | "node_read_bytes"
            | "c2c_latency_ns" | "memsys_host" => {
                let topo = base.topo.clone();
                crate::memsys::from_record(&mut base.memsys, &topo, &v)
            }
            "atomic_add_ns" if case["kind"].as_str() == Some("shared") => base
                .atomic_shared_ns
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            "atomic_add_ns" if case["kind"].as_str() == Some("percpu") => base
                .atomic_percpu_ns
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            _ => {}
        }
    }
    if !sizes.is_empty() {
        base.sizes = sizes;
    }
    Ok(base)
}

/// A by-thread-count measurement's one-thread figure.
pub fn one_thread(v: &[(usize, f64)]) -> Option<f64> {
    v.iter().find(|(t, _)| *t == 1).map(|x| x.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlb_estimate_from_curves() {
        let base = [
            (1 << 20, 5.0),
            (4 << 20, 10.0),
            (16 << 20, 30.0),
            (256 << 20, 120.0),
        ];
        let huge = [
            (1 << 20, 5.0),
            (4 << 20, 9.5),
            (16 << 20, 20.0),
            (256 << 20, 90.0),
        ];
        let t = estimate_tlb(&base, &huge).unwrap();
        assert!((t.miss_ns - 30.0).abs() < 1e-9);
        assert_eq!(t.reach_bytes, Some(8 << 20));
        assert!(estimate_tlb(&base, &[]).is_none());
        // Noise at an L1-resident size does not hide the real transition.
        let base = [
            (16 << 10, 2.5),
            (1 << 20, 7.3),
            (16 << 20, 129.0),
            (64 << 20, 148.0),
            (1 << 30, 369.0),
        ];
        let huge = [
            (16 << 10, 1.7),
            (1 << 20, 8.0),
            (16 << 20, 117.0),
            (64 << 20, 128.0),
            (1 << 30, 223.0),
        ];
        let t = estimate_tlb(&base, &huge).unwrap();
        assert_eq!(t.reach_bytes, Some(32 << 20));
        assert!((t.miss_ns - 146.0).abs() < 1e-9);
    }
}
