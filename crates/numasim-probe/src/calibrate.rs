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
    /// (threads, ns) for the shared atomic counter.
    pub atomic_shared_ns: Vec<(usize, f64)>,
    /// (cpu node, memory node, latency ns, copy bytes/s).
    pub pairs: Vec<(usize, usize, f64, f64)>,
    /// Streaming rate of the scratch directory's device (kind, MiB/s).
    pub disk: Option<(String, f64)>,
    pub caches: Vec<CacheInfo>,
    pub cpu_model: String,
    pub clock_mhz: Option<f64>,
    /// (threads, first-touch faults per second) with threads of one process.
    pub fault_per_s: Vec<(usize, f64)>,
    /// (threads, ns per `clock_gettime`).
    pub clock_gettime_ns: Vec<(usize, f64)>,
    /// (threads, ns per `gettimeofday`).
    pub gettimeofday_ns: Vec<(usize, f64)>,
    /// Spreads of the one-thread figures above, by `"<metric> threads=1"`.
    pub spreads: Vec<(String, f64)>,
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
    /// (table, key, the measurement the value came from); table "" is the top level.
    pub sources: Vec<(String, String, String)>,
}

impl Fit {
    fn source(&mut self, table: &str, key: &str, from: impl Into<String>) {
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
fn spread_tag(sp: Option<f64>) -> String {
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
    let mut unseen: Vec<String> = Vec::new();
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            table = t.trim_matches(|c| c == '[' || c == ']').to_string();
            out.push_str(line);
        } else if let Some((key, _)) = t.split_once(" = ").filter(|_| !t.starts_with('#')) {
            match sources.iter().find(|(tb, k, _)| *tb == table && k == key) {
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

/// Relative spread of the 4 KiB random-read rate allowed before a size is
/// past the caches' reach: beyond it reads start going to memory.
const CACHE_SPEED_TOLERANCE: f64 = 0.15;

/// Build and validate the machine. Returns it with notes on every
/// parameter that had to fall back to a default.
pub fn build_machine(m: &Measurements) -> Result<(Machine, Vec<String>), String> {
    fit(m).map(|f| (f.machine, f.notes))
}

/// Build and validate the machine, recording where each value came from.
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

    // Memory latency: the largest buffer, with huge pages where measured so
    // that TLB misses (modelled separately) are not counted twice.
    let base = m.latencies(PageKind::Base);
    let thp = m.latencies(PageKind::Thp);
    let huge = if !thp.is_empty() {
        thp.clone()
    } else {
        m.latencies(PageKind::Hugetlb)
    };
    let lat_curve = if huge.is_empty() { &base } else { &huge };
    if let Some(&(size, l)) = lat_curve.iter().max_by_key(|x| x.0) {
        mach.memory.latency_ns = l;
        if huge.is_empty() {
            notes.push(format!(
                "machine: dram.latency_ns = {l:.1} from 4 KiB pages at {} (no huge pages: includes TLB misses)",
                crate::bench::size_label(size)
            ));
        }
    }
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
    match estimate_tlb(&base, &huge) {
        Some(t) => {
            mach.tlb.miss_ns = t.miss_ns;
            match t.reach_bytes {
                Some(r) => mach.tlb.entries = (r / m.page_size).max(1) as u32,
                None => notes.push(format!(
                    "machine: tlb.entries left at {} (4 KiB and huge-page latency never parted by 15% in the sizes measured)",
                    mach.tlb.entries
                )),
            }
        }
        None => notes.push(
            "machine: tlb.miss_ns and tlb.entries left at defaults (no huge pages to compare with)"
                .into(),
        ),
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
    let ghz = mach.cpu.clock_mhz / 1000.0;
    mach.cpu.caches = m
        .caches
        .iter()
        .map(|c| {
            // The latency just inside the cache: the largest measured size at most half of it.
            let lat = lat_curve
                .iter()
                .filter(|(s, _)| *s <= c.size / 2)
                .max_by_key(|x| x.0)
                .map(|&(_, l)| l * ghz)
                .unwrap_or(0.0);
            Cache {
                level: c.level,
                size: c.size,
                latency_cycles: (lat * 10.0).round() / 10.0,
                shared_by: c.shared_by,
            }
        })
        .collect();

    // Interconnect: a shared counter bouncing between two CPUs costs about one
    // line transfer per add; remote copy bandwidth bounds the link.
    if let Some(&(_, ns)) = m.atomic_shared_ns.iter().find(|(t, _)| *t == 2) {
        mach.interconnect.line_transfer_ns = ns;
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

    // The scratch directory's device.
    if let Some((kind, mibps)) = &m.disk {
        mach.io.disks = vec![DiskGroup {
            count: 1,
            kind: kind.clone(),
            mibps: *mibps,
        }];
    }

    let mut f = Fit {
        machine: mach,
        notes,
        sources: Vec::new(),
    };
    fit_costs(m, &mut f);
    record_sources(m, &mut f);

    // Round-trip through the loader: what we write must read back.
    let text = f.machine.to_toml_string();
    f.machine = Machine::from_toml_str(&text, "probe output").map_err(|e| e.to_string())?;
    Ok(f)
}

/// `[hierarchy]`, `[timer]` and `[fault]` from the curves and the
/// clock and fault runs (docs/probe.md, "Fitting").
fn fit_costs(m: &Measurements, f: &mut Fit) {
    // Curves with huge pages where measured: TLB misses are modelled on top.
    let huge = [PageKind::Thp, PageKind::Hugetlb]
        .into_iter()
        .find(|&k| !m.curve(k).is_empty())
        .unwrap_or(PageKind::Base);
    let curve = m.curve(huge);
    let hl = huge.label();
    let mach = &mut f.machine;
    let mut src: Vec<(&str, &str, String)> = Vec::new();
    // The probe's copy_mbps counts bytes copied (half the buffer); the
    // model's rates are buffer bytes per pass (both halves): twice as many.
    if let Some(&(size, r)) = curve.last() {
        if r.copy_bps > 0.0 {
            mach.hierarchy.stream_mbps = 2.0 * r.copy_bps / 1e6;
            src.push((
                "hierarchy",
                "stream_mbps",
                format!(
                    "2 x copy_mbps at {} ({hl}){}: the model counts both halves",
                    crate::bench::size_label(size),
                    spread_tag(Some(r.spread[0]))
                ),
            ));
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
    let l1 = m.caches.iter().find(|c| c.level == 1).map(|c| c.size);
    if let Some(&(size, r)) = curve
        .iter()
        .filter(|(s, _)| l1.is_some_and(|l1| *s <= l1))
        .max_by_key(|x| x.0)
    {
        mach.hierarchy.l1_copy_mbps = 2.0 * r.copy_bps / 1e6;
        src.push((
            "hierarchy",
            "l1_copy_mbps",
            format!(
                "2 x copy_mbps at {} ({hl}, within L1){}",
                crate::bench::size_label(size),
                spread_tag(Some(r.spread[0]))
            ),
        ));
    }
    if let Some(&(size, r)) = curve.first() {
        if r.random_bps > 0.0 {
            mach.hierarchy.read_ns = 8e9 / r.random_bps;
            src.push((
                "hierarchy",
                "read_ns",
                format!(
                    "8 B / random_mbps at {} ({hl}){}",
                    crate::bench::size_label(size),
                    spread_tag(Some(r.spread[2]))
                ),
            ));
        }
    }
    if let Some(reach) = random_reach(&curve) {
        mach.hierarchy.llc_reach = reach;
        src.push((
            "hierarchy",
            "llc_reach",
            "random_mbps: geometric mean of the last size at cache speed and the next".into(),
        ));
    }
    // The clock: clock_gettime is the clock read and its conversion in user
    // space (vDSO); what gettimeofday costs beyond it is the call itself.
    let one = |v: &[(usize, f64)]| v.iter().find(|(t, _)| *t == 1).map(|x| x.1);
    let sp = |metric: &str| {
        let key = format!("{metric} threads=1");
        spread_tag(m.spreads.iter().find(|(k, _)| *k == key).map(|x| x.1))
    };
    if let Some(c) = one(&m.clock_gettime_ns) {
        mach.timer.clock_read_ns = c;
        src.push((
            "timer",
            "clock_read_ns",
            format!("clock_gettime_ns, 1 thread{}", sp("clock_gettime_ns")),
        ));
        if let Some(g) = one(&m.gettimeofday_ns) {
            mach.timer.syscall_ns = (g - c).max(0.0);
            src.push((
                "timer",
                "syscall_ns",
                format!(
                    "gettimeofday_ns{} - clock_gettime_ns, 1 thread (0: a vDSO call)",
                    sp("gettimeofday_ns")
                ),
            ));
        }
    }
    // A fault: what one thread pays per page, less the zeroing and the
    // page-table-lock hold the model charges separately.
    if let Some(rate) = one(&m.fault_per_s).filter(|r| *r > 0.0) {
        let per = 1e9 / rate;
        let zero = m.page_size as f64 / mach.fault.zero_gbps;
        let rest = per - zero - mach.fault.ptl_hold_ns;
        if rest > 0.0 {
            mach.fault.fault_ns = rest;
            src.push((
                "fault",
                "fault_ns",
                format!(
                    "1e9 / fault_per_s (1 thread{}) = {per:.0} ns, less zeroing {zero:.0} ns and ptl_hold_ns",
                    sp("fault_per_s")
                ),
            ));
        } else {
            f.notes.push(format!(
                "machine: fault.fault_ns left at its default: a fault took {per:.0} ns, less than zeroing ({zero:.0} ns) and the lock hold"
            ));
        }
    }
    for (t, k, from) in src {
        f.source(t, k, from);
    }
}

/// How much of the caches a random read stream keeps: the geometric mean
/// of the last size read at cache speed (within [`CACHE_SPEED_TOLERANCE`]
/// of the smallest size's rate) and the next size measured.
pub fn random_reach(curve: &[(u64, &SizeResult)]) -> Option<u64> {
    let &(_, first) = curve.first()?;
    let fast = first.random_bps * (1.0 - CACHE_SPEED_TOLERANCE);
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
        (
            "cpu.cache",
            "latency_cycles",
            "mem_latency_ns at the largest size at most half the cache x clock".into(),
        ),
    ];
    if m.clock_mhz.is_some() {
        v.push(("cpu", "clock_mhz", "/proc/cpuinfo".into()));
    }
    if m.latencies(PageKind::Base).len() + m.sizes.len() > 0 {
        v.push((
            "dram",
            "latency_ns",
            "mem_latency_ns at the largest size (huge pages where measured)".into(),
        ));
    }
    if m.node_copy_bps.is_some() {
        v.push((
            "dram",
            "bandwidth_gbps",
            format!(
                "2 x median node_copy_mbps{}: a copy reads and writes each byte",
                spread_tag(m.node_copy_spread)
            ),
        ));
    }
    if m.atomic_shared_ns.iter().any(|(t, _)| *t == 2) {
        v.push((
            "interconnect",
            "line_transfer_ns",
            "atomic_add_ns shared, 2 threads".into(),
        ));
    }
    if m.pairs.iter().any(|p| p.0 != p.1) {
        v.push((
            "interconnect",
            "link_gbps",
            "2 x mean remote_copy_mbps".into(),
        ));
    }
    let base = m.latencies(PageKind::Base);
    let huge = [PageKind::Thp, PageKind::Hugetlb]
        .into_iter()
        .map(|k| m.latencies(k))
        .find(|c| !c.is_empty())
        .unwrap_or_default();
    if let Some(t) = estimate_tlb(&base, &huge) {
        v.push((
            "tlb",
            "miss_ns",
            "mem_latency_ns 4k - huge pages, largest size".into(),
        ));
        if t.reach_bytes.is_some() {
            v.push((
                "tlb",
                "entries",
                "mem_latency_ns: where 4k parts from huge pages by 15%".into(),
            ));
        }
    }
    if m.disk.is_some() {
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
        let metric = v["metric"].as_str().ok_or_else(|| bad("no `metric`"))?;
        let value = v["value"]
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| bad(&format!("`{metric}` has no finite `value`")))?;
        let case = &v["case"];
        let threads = case["threads"].as_u64().map(|t| t as usize);
        if let (Some(sp), Some(1)) = (v["spread"].as_f64(), threads) {
            if case["mode"].as_str().is_none_or(|m| m == "threads") {
                base.spreads.push((format!("{metric} threads=1"), sp));
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
            "copy_mbps" => {
                let i = at()?;
                sizes[i].2.copy_bps = value * 1e6;
                sizes[i].2.spread[0] = sp;
            }
            "copy_loop_mbps" => {
                let i = at()?;
                sizes[i].2.copy_loop_bps = value * 1e6;
                sizes[i].2.spread[1] = sp;
            }
            "random_mbps" => {
                let i = at()?;
                sizes[i].2.random_bps = value * 1e6;
                sizes[i].2.spread[2] = sp;
            }
            "mem_latency_ns" => {
                let i = at()?;
                sizes[i].2.latency_ns = Some(value);
                sizes[i].2.spread[3] = sp;
            }
            "node_copy_mbps" => {
                base.node_copy_bps = Some(value * 1e6);
                base.node_copy_spread = v["spread"].as_f64();
            }
            "fault_per_s" if case["mode"].as_str() == Some("threads") => base
                .fault_per_s
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            "gettimeofday_ns" => base
                .gettimeofday_ns
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            "clock_gettime_ns" => base
                .clock_gettime_ns
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            "atomic_add_ns" if case["kind"].as_str() == Some("shared") => base
                .atomic_shared_ns
                .push((threads.ok_or_else(|| bad("no `case.threads`"))?, value)),
            _ => {}
        }
    }
    if !sizes.is_empty() {
        base.sizes = sizes;
    }
    Ok(base)
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
