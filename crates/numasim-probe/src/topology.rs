//! The host's NUMA topology as sysfs shows it (the `numastat -m` view):
//! `<root>/nodeN/{cpulist,meminfo,distance}` with `<root>` normally
//! `/sys/devices/system/node`. Parameterised by the root so fixtures can
//! test it. Also the CPU cache description and `/proc/meminfo`.

use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    pub id: usize,
    pub cpus: Vec<usize>,
    pub mem_total_kb: u64,
    pub mem_free_kb: u64,
    /// This node's row of the SLIT distance matrix, in node order.
    pub distance: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub nodes: Vec<NodeInfo>,
}

impl Topology {
    /// Read every `nodeN` directory under `root`. Node ids need not be
    /// contiguous; nodes are returned sorted by id. Errors name the file.
    pub fn read(root: &Path) -> Result<Topology, String> {
        let entries = std::fs::read_dir(root)
            .map_err(|e| format!("{}: cannot list NUMA nodes: {e}", root.display()))?;
        let mut ids: Vec<usize> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix("node"))
                    .and_then(|n| n.parse().ok())
            })
            .collect();
        ids.sort_unstable();
        if ids.is_empty() {
            return Err(format!("{}: no nodeN directories", root.display()));
        }
        let mut nodes = Vec::new();
        for id in ids {
            let dir = root.join(format!("node{id}"));
            let read = |f: &str| {
                std::fs::read_to_string(dir.join(f))
                    .map_err(|e| format!("{}: {e}", dir.join(f).display()))
            };
            let cpus = parse_cpulist(read("cpulist")?.trim())
                .map_err(|e| format!("{}: {e}", dir.join("cpulist").display()))?;
            let mi = parse_node_meminfo(&read("meminfo")?);
            let mem_total_kb = *mi
                .get("MemTotal")
                .ok_or_else(|| format!("{}: no MemTotal line", dir.join("meminfo").display()))?;
            let mem_free_kb = mi.get("MemFree").copied().unwrap_or(0);
            let distance = parse_distance(&read("distance")?)
                .map_err(|e| format!("{}: {e}", dir.join("distance").display()))?;
            nodes.push(NodeInfo {
                id,
                cpus,
                mem_total_kb,
                mem_free_kb,
                distance,
            });
        }
        let n = nodes.len();
        if let Some(bad) = nodes.iter().find(|x| x.distance.len() != n) {
            return Err(format!(
                "{}: node{} has {} distances but there are {n} nodes",
                root.display(),
                bad.id,
                bad.distance.len()
            ));
        }
        Ok(Topology { nodes })
    }

    /// A one-node stand-in where sysfs has no node directory (kernels
    /// without CONFIG_NUMA): all allowed CPUs and `/proc/meminfo`.
    pub fn single(cpus: Vec<usize>, mem_total_kb: u64, mem_free_kb: u64) -> Topology {
        Topology {
            nodes: vec![NodeInfo {
                id: 0,
                cpus,
                mem_total_kb,
                mem_free_kb,
                distance: vec![10],
            }],
        }
    }

    /// The distance matrix, rows and columns in node order.
    pub fn matrix(&self) -> Vec<Vec<u32>> {
        self.nodes.iter().map(|n| n.distance.clone()).collect()
    }

    pub fn node_of_cpu(&self, cpu: usize) -> Option<usize> {
        self.nodes.iter().position(|n| n.cpus.contains(&cpu))
    }
}

/// `0-3,8,10-11` → [0,1,2,3,8,10,11]. An empty list (memory-only node) is allowed.
pub fn parse_cpulist(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let bad = || format!("`{part}` is not a CPU number or range");
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().map_err(|_| bad())?;
                let b: usize = b.trim().parse().map_err(|_| bad())?;
                if b < a {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(out)
}

/// Per-node meminfo (`Node 0 MemTotal:  4810968 kB`) or `/proc/meminfo`
/// (`MemTotal:  24684096 kB`): key → value in kB (or a bare count).
pub fn parse_node_meminfo(s: &str) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for line in s.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        // "Node 0 MemTotal" → "MemTotal"
        let key = key.split_whitespace().last().unwrap_or("").to_string();
        let num = rest.split_whitespace().next().and_then(|v| v.parse().ok());
        if let Some(v) = num {
            m.insert(key, v);
        }
    }
    m
}

/// `/proc/meminfo` parsed like node meminfo.
pub fn parse_meminfo(s: &str) -> std::collections::BTreeMap<String, u64> {
    parse_node_meminfo(s)
}

pub fn parse_distance(s: &str) -> Result<Vec<u32>, String> {
    s.split_whitespace()
        .map(|x| {
            x.parse::<u32>()
                .map_err(|_| format!("`{x}` is not a distance"))
        })
        .collect()
}

/// One CPU cache as `/sys/devices/system/cpu/cpuN/cache/indexM` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheInfo {
    pub level: u8,
    pub kind: String,
    pub size: u64,
    pub line: u32,
    pub shared_by: u32,
    /// `ways_of_associativity` (None where sysfs lacks it): the width of
    /// the step at the cache's reach (machine/hierarchy.rs `level_hit`).
    pub ways: Option<u32>,
}

/// Data and unified caches of one CPU, from `<cpu_dir>/cache/index*`.
pub fn read_caches(cpu_dir: &Path) -> Vec<CacheInfo> {
    let Ok(entries) = std::fs::read_dir(cpu_dir.join("cache")) else {
        return vec![];
    };
    let mut out: Vec<CacheInfo> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let d = e.path();
            let r = |f: &str| std::fs::read_to_string(d.join(f)).ok();
            let kind = r("type")?.trim().to_string();
            if kind == "Instruction" {
                return None;
            }
            let level = r("level")?.trim().parse().ok()?;
            let size = parse_cache_size(r("size")?.trim())?;
            let line = r("coherency_line_size")
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(64);
            let shared_by = r("shared_cpu_list")
                .and_then(|s| parse_cpulist(s.trim()).ok())
                .map(|l| l.len().max(1) as u32)
                .unwrap_or(1);
            let ways = r("ways_of_associativity")
                .and_then(|s| s.trim().parse().ok())
                .filter(|w| (1..=1024).contains(w));
            Some(CacheInfo {
                level,
                kind,
                size,
                line,
                shared_by,
                ways,
            })
        })
        .collect();
    out.sort_by_key(|c| c.level);
    out
}

/// `48K`, `2048K`, `16M` → bytes.
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// How much memory this process may use: `MemAvailable`, capped by the
/// cgroup (v2 `memory.max` or v1 `memory.limit_in_bytes`) where one is set.
pub fn available_bytes(meminfo: &std::collections::BTreeMap<String, u64>) -> u64 {
    let avail = meminfo
        .get("MemAvailable")
        .or_else(|| meminfo.get("MemFree"))
        .copied()
        .unwrap_or(0)
        * 1024;
    match cgroup_headroom() {
        Some(h) => avail.min(h),
        None => avail,
    }
}

fn cgroup_headroom() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read_u64 =
        |p: &Path| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    for line in cg.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if ctrl.is_empty() {
            let d = Path::new("/sys/fs/cgroup").join(path);
            if let Some(max) = read_u64(&d.join("memory.max")) {
                let cur = read_u64(&d.join("memory.current")).unwrap_or(0);
                return Some(max.saturating_sub(cur));
            }
        } else if ctrl.split(',').any(|c| c == "memory") {
            for d in [
                Path::new("/sys/fs/cgroup/memory").join(path),
                Path::new("/sys/fs/cgroup/memory").to_path_buf(),
            ] {
                if let Some(max) = read_u64(&d.join("memory.limit_in_bytes")) {
                    let cur = read_u64(&d.join("memory.usage_in_bytes")).unwrap_or(0);
                    return Some(max.saturating_sub(cur));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpulist("5\n").unwrap(), vec![5]);
        assert!(parse_cpulist("3-1").is_err());
        assert!(parse_cpulist("x").is_err());
    }

    #[test]
    fn meminfo_both_forms() {
        let node = "Node 0 MemTotal:        4810968 kB\nNode 0 MemFree:         4650260 kB\nNode 0 HugePages_Total:     0\n";
        let m = parse_node_meminfo(node);
        assert_eq!(m["MemTotal"], 4810968);
        assert_eq!(m["MemFree"], 4650260);
        assert_eq!(m["HugePages_Total"], 0);
        let proc = "MemTotal:       24684096 kB\nMemAvailable:   24430600 kB\nHugepagesize:       2048 kB\n";
        let m = parse_meminfo(proc);
        assert_eq!(m["MemAvailable"], 24430600);
        assert_eq!(m["Hugepagesize"], 2048);
    }

    #[test]
    fn cache_sizes() {
        assert_eq!(parse_cache_size("48K"), Some(48 << 10));
        assert_eq!(parse_cache_size("266240K"), Some(266240 << 10));
        assert_eq!(parse_cache_size("16M"), Some(16 << 20));
        assert_eq!(parse_cache_size("junk"), None);
    }
}
