//! `/sys/devices/system/node`: the kernel's own view of its NUMA nodes.
//!
//! Read: `online` (the node ids; without it, the `nodeN` directories),
//! and for each node `cpulist`, `meminfo` (`Node N MemTotal: … kB`),
//! `distance` (one entry per online node, in id order) and the
//! `hugepages/hugepages-<size>kB` directories. `possible`, `has_cpu` and
//! `has_memory` are checked to be well-formed lists but add nothing the
//! per-node files do not say.
//!
//! Node memory is cross-checked with `/proc/meminfo` (see
//! [`from_sysfs_checked`]): a node's `MemTotal` is the sum of its zones'
//! managed pages, which on kernels that initialise struct pages lazily
//! (`deferred_init=lazy`) or that hot-add memory lags far behind
//! `totalram_pages`, the kernel's own total that sizes its hashes.

use super::cpulist::{parse_cpulist, parse_cpumap};
use super::{build, name_from_source, revalidate, RawNode};
use crate::error::InputError;
use crate::machine::Machine;
use std::path::{Path, PathBuf};

/// Import a machine from a copy of (or the live) `/sys/devices/system/node`,
/// taking node memory from the node `meminfo` files alone.
pub fn from_sysfs(dir: &Path) -> Result<Machine, InputError> {
    from_sysfs_checked(dir, None).map(|(m, _)| m)
}

/// Import like [`from_sysfs`], cross-checking node memory with a
/// `/proc/meminfo` text (`(text, where it came from)`). Returns the machine
/// and notes saying what was compared and which value was used.
///
/// When the nodes' `MemTotal` lines sum to less than `/proc/meminfo`'s
/// `MemTotal` by more than [`MEM_TOLERANCE`], the node files miss memory
/// the kernel counts (pages not yet initialised, or hot-added): the
/// `/proc/meminfo` total is used, split across nodes by their online memory
/// blocks (`nodeN/memoryM` × `../memory/block_size_bytes`, where the memory
/// physically is) or, without blocks, by their `MemTotal`. When the nodes sum
/// to more (a container's virtualised `/proc/meminfo`), the node files are
/// kept: the kernel's per-node counts never exceed what it manages.
pub fn from_sysfs_checked(
    dir: &Path,
    meminfo: Option<(&str, &str)>,
) -> Result<(Machine, Vec<String>), InputError> {
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

    let proc_kb = match meminfo {
        Some((text, from)) => Some(
            parse_proc_memtotal(text).map_err(|m| InputError::new(m).in_file(from.to_string()))?,
        ),
        None => None,
    };
    let block_bytes = read_block_size(dir)?;
    let mut blocks: Vec<Option<u64>> = Vec::with_capacity(ids.len());

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
        // Kernels before 2.6.2x have `cpumap` (a hex mask) but no `cpulist`.
        let p = nd.join("cpulist");
        let cpus = match read_optional(&p)? {
            Some(text) => parse_cpulist(&text).map_err(|m| err(&p, m))?,
            None => {
                let p = nd.join("cpumap");
                parse_cpumap(&read(&p).map_err(|_| {
                    err(
                        &nd,
                        "has neither `cpulist` nor `cpumap`; copy the whole node directory",
                    )
                })?)
                .map_err(|m| err(&p, m))?
            }
        };
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
        blocks.push(match block_bytes {
            Some(b) => Some(online_blocks(&nd)?.saturating_mul(b)),
            None => None,
        });
        nodes.push(RawNode {
            id,
            cpus,
            mem_bytes,
        });
    }

    let mut notes = Vec::new();
    match (proc_kb, meminfo) {
        (Some(total_kb), Some((_, from))) => {
            let node_kb: Vec<u64> = nodes.iter().map(|n| n.mem_bytes / 1024).collect();
            let weights: Option<Vec<u64>> = blocks.iter().copied().collect();
            let (kb, note) = reconcile(&node_kb, weights.as_deref(), total_kb, from);
            for (n, k) in nodes.iter_mut().zip(kb) {
                n.mem_bytes = k * 1024;
            }
            notes.push(note);
        }
        _ => notes
            .push("memory: node MemTotal not cross-checked (no /proc/meminfo given)".to_string()),
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
    Ok((revalidate(m, &source)?, notes))
}

/// How far the nodes' `MemTotal` sum may fall short of `/proc/meminfo`'s
/// before the node files are distrusted: the per-node and global counts
/// are the same managed pages read at slightly different moments, so they
/// agree to well under 1% on a settled host.
pub const MEM_TOLERANCE: f64 = 0.02;

/// Node sizes in kB from the node files (`node_kb`), optional per-node
/// online block bytes, and `/proc/meminfo`'s `MemTotal` (`total_kb`, read
/// from `from`). Returns the sizes used and a note saying which.
fn reconcile(
    node_kb: &[u64],
    block_bytes: Option<&[u64]>,
    total_kb: u64,
    from: &str,
) -> (Vec<u64>, String) {
    let sum: u64 = node_kb.iter().sum();
    let diff = (total_kb as f64 - sum as f64) / (total_kb.max(1) as f64);
    if diff <= MEM_TOLERANCE {
        let which = if diff < -MEM_TOLERANCE {
            format!(
                "exceeds {from} MemTotal {total_kb} kB by {:.1}% (a virtualised /proc/meminfo?); \
                 kept the node values",
                -diff * 100.0
            )
        } else {
            format!("agrees with {from} MemTotal {total_kb} kB")
        };
        return (
            node_kb.to_vec(),
            format!("memory: node MemTotal sum {sum} kB {which}"),
        );
    }
    let (weights, by): (Vec<u64>, &str) = match block_bytes {
        Some(b) if b.iter().sum::<u64>() > 0 => (b.to_vec(), "their online memory blocks"),
        _ => (node_kb.to_vec(), "their node MemTotal"),
    };
    let wsum: u128 = weights.iter().map(|&w| w as u128).sum::<u128>().max(1);
    // Whole 4 kB pages, so the split never invents a partial page.
    let kb: Vec<u64> = weights
        .iter()
        .map(|&w| ((total_kb as u128 * w as u128 / wsum) as u64) / 4 * 4)
        .collect();
    (
        kb,
        format!(
            "memory: node MemTotal sum {sum} kB is {:.1}% short of {from} MemTotal {total_kb} kB \
             (struct pages not yet initialised, or hot-added memory); used {total_kb} kB split across \
             nodes by {by}",
            diff * 100.0
        ),
    )
}

/// `MemTotal:  24684092 kB` from a `/proc/meminfo` text, in kB.
fn parse_proc_memtotal(text: &str) -> Result<u64, String> {
    for (lineno, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"MemTotal:") {
            return f
                .get(1)
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|_| f.get(2) == Some(&"kB"))
                .filter(|kb| kb.checked_mul(1024).is_some())
                .ok_or_else(|| {
                    format!(
                        "line {}: `{}` is not `MemTotal: <number> kB`",
                        lineno + 1,
                        line.trim()
                    )
                });
        }
    }
    Err("has no `MemTotal: … kB` line (not a /proc/meminfo file?)".into())
}

/// `../memory/block_size_bytes` beside the node directory (hex, no `0x`), if present.
fn read_block_size(dir: &Path) -> Result<Option<u64>, InputError> {
    let Some(parent) = dir.parent() else {
        return Ok(None);
    };
    let p = parent.join("memory").join("block_size_bytes");
    match read_optional(&p)? {
        None => Ok(None),
        Some(t) => u64::from_str_radix(t.trim().trim_start_matches("0x"), 16)
            .ok()
            .filter(|&b| b > 0)
            .map(Some)
            .ok_or_else(|| {
                err(
                    &p,
                    format!(
                        "`{}` is not a block size (hex bytes, like `8000000`)",
                        t.trim()
                    ),
                )
            }),
    }
}

/// Memory blocks `nodeN/memoryM` that are online (a block without a
/// readable `state` counts: a copied tree may keep only the names).
fn online_blocks(node_dir: &Path) -> Result<u64, InputError> {
    let entries =
        std::fs::read_dir(node_dir).map_err(|e| err(node_dir, format!("cannot list: {e}")))?;
    let mut n = 0;
    for e in entries {
        let e = e.map_err(|e| err(node_dir, format!("cannot list: {e}")))?;
        let name = e.file_name();
        let Some(num) = name.to_str().and_then(|s| s.strip_prefix("memory")) else {
            continue;
        };
        if num.parse::<u64>().is_err() {
            continue;
        }
        match crate::input::read_bounded_text(
            &e.path().join("state"),
            crate::input::MAX_SYSFS_FILE_BYTES,
            "a sysfs file",
        ) {
            Ok(s) if s.trim() != "online" => {}
            _ => n += 1,
        }
    }
    Ok(n)
}

fn err(path: &Path, message: impl Into<String>) -> InputError {
    InputError::new(message).in_file(path.display().to_string())
}

/// A sysfs file's text, without the NUL some kernels end it with.
/// Read with a bound (`input::MAX_SYSFS_FILE_BYTES`): a file symlinked to
/// `/dev/zero` is refused, not read for ever.
fn read(path: &Path) -> Result<String, InputError> {
    crate::input::read_bounded_text(path, crate::input::MAX_SYSFS_FILE_BYTES, "a sysfs file")
        .map(strip_nul)
}

fn strip_nul(s: String) -> String {
    match s.find('\0') {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, InputError> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => read(path).map(Some),
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
    fn memory_reconciled_with_proc_meminfo() {
        // Agreeing totals keep the node files exactly.
        let (kb, note) = reconcile(&[1000, 2000], None, 3010, "/proc/meminfo");
        assert_eq!(kb, vec![1000, 2000]);
        assert!(note.contains("agrees"), "{note}");
        // The host in issue 20: one node, MemTotal 7694548 kB of 24684092.
        let (kb, note) = reconcile(&[7694548], Some(&[192 << 27]), 24684092, "/proc/meminfo");
        assert_eq!(kb, vec![24684092]);
        assert!(
            note.contains("68.8% short") && note.contains("memory blocks"),
            "{note}"
        );
        // Two nodes split by where the memory is, not by what is initialised yet.
        let (kb, _) = reconcile(&[1000, 7000], Some(&[4 << 27, 4 << 27]), 16000, "m");
        assert_eq!(kb, vec![8000, 8000]);
        // Without blocks, by MemTotal; the split never exceeds the total.
        let (kb, note) = reconcile(&[1000, 3000], None, 8002, "m");
        assert_eq!(kb, vec![2000, 6000]);
        assert!(kb.iter().sum::<u64>() <= 8002 && note.contains("node MemTotal"));
        // A container's smaller /proc/meminfo does not shrink the nodes.
        let (kb, note) = reconcile(&[8000], None, 4000, "m");
        assert_eq!(kb, vec![8000]);
        assert!(note.contains("kept the node values"), "{note}");
    }

    #[test]
    fn proc_memtotal_lines() {
        assert_eq!(
            parse_proc_memtotal("MemTotal:       24684092 kB\nMemFree: 1 kB\n").unwrap(),
            24684092
        );
        assert!(parse_proc_memtotal("MemFree: 1 kB\n")
            .unwrap_err()
            .contains("no `MemTotal"));
        assert!(parse_proc_memtotal("MemTotal: many kB\n")
            .unwrap_err()
            .contains("line 1"));
        assert!(parse_proc_memtotal("MemTotal: 99999999999999999 kB").is_err());
    }

    #[test]
    fn distance_rows() {
        assert_eq!(parse_distance_row("10 21\n").unwrap(), vec![10, 21]);
        assert!(parse_distance_row("10 2x1").is_err());
        assert!(parse_distance_row("\n").is_err());
        assert!(parse_distance_row("10 -21").is_err());
    }
}
