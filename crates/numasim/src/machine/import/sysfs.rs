//! `/sys/devices/system/node`: the kernel's own view of its NUMA nodes.
//!
//! Read: `online` (the node ids; without it, the `nodeN` directories),
//! and for each node `cpulist`, `meminfo` (`Node N MemTotal: … kB`),
//! `distance` (one entry per online node, in id order) and the
//! `hugepages/hugepages-<size>kB` directories. `possible`, `has_cpu` and
//! `has_memory` are checked to be well-formed lists but add nothing the
//! per-node files do not say.

use super::cpulist::parse_cpulist;
use super::{build, name_from_source, revalidate, RawNode};
use crate::error::InputError;
use crate::machine::Machine;
use std::path::{Path, PathBuf};

/// Import a machine from a copy of (or the live) `/sys/devices/system/node`.
pub fn from_sysfs(dir: &Path) -> Result<Machine, InputError> {
    let source = dir.display().to_string();
    if !dir.is_dir() {
        return Err(InputError::new(
            "is not a directory: give a /sys/devices/system/node tree (with node0/, node1/, … inside)",
        )
        .in_file(source));
    }
    let ids = match read_optional(&dir.join("online"))? {
        Some(text) => parse_cpulist(&text).map_err(|m| err(&dir.join("online"), m))?,
        None => scan_node_dirs(dir)?,
    };
    if ids.is_empty() {
        return Err(InputError::new(
            "lists no NUMA node (`online` is empty and there is no nodeN directory)",
        )
        .in_file(source));
    }
    for extra in ["possible", "has_cpu", "has_memory", "has_normal_memory"] {
        let p = dir.join(extra);
        if let Some(text) = read_optional(&p)? {
            parse_cpulist(&text).map_err(|m| err(&p, m))?;
        }
    }

    let mut nodes = Vec::with_capacity(ids.len());
    let mut matrix = Vec::with_capacity(ids.len());
    let mut huge: Vec<u64> = Vec::new();
    for &id in &ids {
        let nd = dir.join(format!("node{id}"));
        if !nd.is_dir() {
            return Err(err(
                &nd,
                format!(
                    "node {id} is listed in `online` but its directory is missing; \
                     copy the whole /sys/devices/system/node tree"
                ),
            ));
        }
        let p = nd.join("cpulist");
        let cpus = parse_cpulist(&read(&p)?).map_err(|m| err(&p, m))?;
        let p = nd.join("meminfo");
        let mem_bytes = parse_meminfo(&read(&p)?, id).map_err(|m| err(&p, m))?;
        let p = nd.join("distance");
        let row = parse_distance_row(&read(&p)?).map_err(|m| err(&p, m))?;
        if row.len() != ids.len() {
            return Err(err(
                &p,
                format!(
                    "has {} entries but {} nodes are online; the kernel writes one distance per online node \
                     (the table must be {n}×{n})",
                    row.len(),
                    ids.len(),
                    n = ids.len()
                ),
            ));
        }
        matrix.push(row);
        huge.extend(hugepage_sizes(&nd.join("hugepages"))?);
        nodes.push(RawNode {
            id,
            cpus,
            mem_bytes,
        });
    }

    let mut m = build(
        &name_from_source(&source),
        format!("imported from sysfs {source}"),
        &nodes,
        matrix,
        &source,
    )?;
    huge.push(m.page_size);
    huge.sort_unstable();
    huge.dedup();
    m.tlb.page_sizes = huge;
    revalidate(m, &source)
}

fn err(path: &Path, message: impl Into<String>) -> InputError {
    InputError::new(message).in_file(path.display().to_string())
}

fn read(path: &Path) -> Result<String, InputError> {
    std::fs::read_to_string(path).map_err(|e| err(path, format!("cannot read: {e}")))
}

fn read_optional(path: &Path) -> Result<Option<String>, InputError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(err(path, format!("cannot read: {e}"))),
    }
}

/// Node ids from the `nodeN` directory names, for trees copied without `online`.
fn scan_node_dirs(dir: &Path) -> Result<Vec<u32>, InputError> {
    let entries = std::fs::read_dir(dir).map_err(|e| err(dir, format!("cannot list: {e}")))?;
    let mut ids = Vec::new();
    for e in entries {
        let e = e.map_err(|e| err(dir, format!("cannot list: {e}")))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(num) = name.strip_prefix("node") {
            if let Ok(id) = num.parse::<u32>() {
                if e.path().is_dir() {
                    ids.push(id);
                }
            }
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// `MemTotal` of `Node <id> MemTotal:   32768000 kB`, in bytes.
fn parse_meminfo(text: &str, id: u32) -> Result<u64, String> {
    for (lineno, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 3 && f[0] == "Node" && f[2] == "MemTotal:" {
            if f[1] != id.to_string() {
                return Err(format!(
                    "line {}: describes node {} but this is node{id}/meminfo",
                    lineno + 1,
                    f[1]
                ));
            }
            let kb = f
                .get(3)
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|_| f.get(4) == Some(&"kB"))
                .ok_or_else(|| {
                    format!(
                        "line {}: `{}` is not `Node {id} MemTotal: <number> kB`",
                        lineno + 1,
                        line.trim()
                    )
                })?;
            return kb
                .checked_mul(1024)
                .ok_or_else(|| format!("line {}: {kb} kB is too large", lineno + 1));
        }
    }
    Err(format!(
        "has no `Node {id} MemTotal: … kB` line (truncated or not a node meminfo file)"
    ))
}

fn parse_distance_row(text: &str) -> Result<Vec<u32>, String> {
    let row: Result<Vec<u32>, String> = text
        .split_whitespace()
        .map(|t| {
            t.parse::<u32>().map_err(|_| {
                format!("`{t}` is not a distance (expected whole numbers like `10 21`)")
            })
        })
        .collect();
    let row = row?;
    if row.is_empty() {
        return Err("is empty: expected one distance per online node, like `10 21`".into());
    }
    Ok(row)
}

/// Sizes, in bytes, of the `hugepages-<N>kB` directories under `dir` (none if absent).
fn hugepage_sizes(dir: &PathBuf) -> Result<Vec<u64>, InputError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(err(dir, format!("cannot list: {e}"))),
    };
    let mut sizes = Vec::new();
    for e in entries {
        let e = e.map_err(|e| err(dir, format!("cannot list: {e}")))?;
        let name = e.file_name().to_string_lossy().to_string();
        let Some(kb) = name
            .strip_prefix("hugepages-")
            .and_then(|s| s.strip_suffix("kB"))
        else {
            continue;
        };
        let bytes = kb
            .parse::<u64>()
            .ok()
            .and_then(|k| k.checked_mul(1024))
            .filter(|b| b.is_power_of_two())
            .ok_or_else(|| {
                err(
                    &e.path(),
                    format!("`{name}` is not `hugepages-<size>kB` with a power-of-two size"),
                )
            })?;
        sizes.push(bytes);
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_lines() {
        let t = "Node 1 MemTotal:       32768000 kB\nNode 1 MemFree:        1000 kB\n";
        assert_eq!(parse_meminfo(t, 1).unwrap(), 32768000 * 1024);
        assert!(parse_meminfo(t, 0).unwrap_err().contains("node 1"));
        assert!(parse_meminfo("Node 0 MemTotal: lots kB\n", 0)
            .unwrap_err()
            .contains("line 1"));
        assert!(parse_meminfo("Node 0 MemFree: 5 kB\n", 0)
            .unwrap_err()
            .contains("no `Node 0 MemTotal"));
        assert!(parse_meminfo("Node 0 MemTotal: 99999999999999999 kB", 0).is_err());
    }

    #[test]
    fn distance_rows() {
        assert_eq!(parse_distance_row("10 21\n").unwrap(), vec![10, 21]);
        assert!(parse_distance_row("10 2x1").is_err());
        assert!(parse_distance_row("\n").is_err());
        assert!(parse_distance_row("10 -21").is_err());
    }
}
