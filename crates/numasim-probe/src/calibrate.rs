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
    /// (threads, ns) for the shared atomic counter.
    pub atomic_shared_ns: Vec<(usize, f64)>,
    /// (cpu node, memory node, latency ns, copy bytes/s).
    pub pairs: Vec<(usize, usize, f64, f64)>,
    /// Streaming rate of the scratch directory's device (kind, MiB/s).
    pub disk: Option<(String, f64)>,
    pub caches: Vec<CacheInfo>,
    pub cpu_model: String,
    pub clock_mhz: Option<f64>,
}

impl Measurements {
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

/// Build and validate the machine. Returns it with notes on every
/// parameter that had to fall back to a default.
pub fn build_machine(m: &Measurements) -> Result<(Machine, Vec<String>), String> {
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

    // Round-trip through the loader: what we write must read back.
    let text = mach.to_toml_string();
    let back = Machine::from_toml_str(&text, "probe output").map_err(|e| e.to_string())?;
    Ok((back, notes))
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
