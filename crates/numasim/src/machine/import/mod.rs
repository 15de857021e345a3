//! Importers that turn a real machine description (sysfs, numactl, hwloc) into a machine TOML.
//!
//! Each importer reads what the tool or the kernel wrote, keeps the Linux
//! node order (nodes sorted by node id, sparse ids packed to 0..n), and
//! builds the machine with [`Machine::basic`], so every imported machine is
//! validated exactly like a hand-written one and prints back as TOML that
//! reads back unchanged. What is not in the source (latencies, bandwidths,
//! the kernel's boot footprint) keeps the documented defaults; `numasim
//! probe` measures those. `docs/import.md` maps every field.

mod cpulist;
mod hwloc;
mod numactl;
mod sysfs;

pub use cpulist::{format_cpulist, parse_cpulist};
pub use hwloc::from_hwloc_xml;
pub use numactl::from_numactl;
pub use sysfs::{from_sysfs, from_sysfs_checked, MEM_TOLERANCE};

use super::{Machine, Node};
use crate::error::InputError;

/// One NUMA node as a source describes it, before ids are packed.
#[derive(Debug, Clone)]
struct RawNode {
    /// The kernel's node id (may be sparse).
    id: u32,
    cpus: Vec<u32>,
    mem_bytes: u64,
}

/// A machine name from a file or directory name: its stem, lower case,
/// anything but letters and digits turned into `-`.
fn name_from_source(source: &str) -> String {
    let path = std::path::Path::new(source.trim_end_matches('/'));
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut name = String::new();
    for c in stem.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name = name.trim_matches('-').to_string();
    // `/sys/devices/system/node` would give the unhelpful name "node".
    if name.is_empty() || name == "node" {
        "imported".to_string()
    } else {
        name
    }
}

/// Check that no CPU is claimed by two nodes; `what` names where nodes come from.
fn check_disjoint(nodes: &[RawNode]) -> Result<(), String> {
    let mut owner: std::collections::BTreeMap<u32, u32> = Default::default();
    for n in nodes {
        for &c in &n.cpus {
            if let Some(prev) = owner.insert(c, n.id) {
                return Err(format!(
                    "CPU {c} is listed on node {prev} and on node {}; a CPU belongs to one node",
                    n.id
                ));
            }
        }
    }
    Ok(())
}

/// Check a distance table given by node id: square, one row per node, and
/// symmetric, with messages in the source's node ids rather than packed indices.
fn check_matrix(ids: &[u32], matrix: &[Vec<u32>]) -> Result<(), String> {
    let n = ids.len();
    if matrix.len() != n {
        return Err(format!(
            "the distance table has {} rows but there are {n} nodes; it must be {n}×{n}",
            matrix.len()
        ));
    }
    for (i, row) in matrix.iter().enumerate() {
        if row.len() != n {
            return Err(format!(
                "the distance row of node {} has {} entries but there are {n} nodes; \
                 the table must be square ({n}×{n})",
                ids[i],
                row.len()
            ));
        }
    }
    for i in 0..n {
        for j in (i + 1)..n {
            if matrix[i][j] != matrix[j][i] {
                return Err(format!(
                    "the distance table is not symmetric: node {} to node {} is {} but node {} to node {} is {}; \
                     numasim needs symmetric (SLIT-style) distances",
                    ids[i], ids[j], matrix[i][j], ids[j], ids[i], matrix[j][i]
                ));
            }
        }
    }
    Ok(())
}

/// Build the machine from nodes sorted by id and their distance matrix (in
/// the same order), attributing every error to `source`.
fn build(
    name: &str,
    description: String,
    nodes: &[RawNode],
    matrix: Vec<Vec<u32>>,
    source: &str,
) -> Result<Machine, InputError> {
    let ids: Vec<u32> = nodes.iter().map(|n| n.id).collect();
    check_disjoint(nodes).map_err(|m| InputError::new(m).in_file(source))?;
    check_matrix(&ids, &matrix).map_err(|m| InputError::new(m).in_file(source))?;
    let mut packed = Vec::with_capacity(nodes.len());
    for n in nodes {
        let cpus = u32::try_from(n.cpus.len()).map_err(|_| {
            InputError::new(format!("node {} has too many CPUs", n.id)).in_file(source)
        })?;
        packed.push(Node {
            cpus,
            mem_bytes: n.mem_bytes,
        });
    }
    let mut m = Machine::basic(name, packed, matrix).map_err(|e| e.in_file(source))?;
    m.description = description;
    Ok(m)
}

/// Re-read the machine through its own TOML, so that fields set after
/// [`Machine::basic`] are validated like a file's and the result is exactly
/// what `to_toml_string` then `from_toml_str` gives back.
fn revalidate(m: Machine, source: &str) -> Result<Machine, InputError> {
    Machine::from_toml_str(&m.to_toml_string(), source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_sources() {
        assert_eq!(name_from_source("fixtures/two-node.txt"), "two-node");
        assert_eq!(name_from_source("/sys/devices/system/node"), "imported");
        assert_eq!(name_from_source("/sys/devices/system/node/"), "imported");
        assert_eq!(name_from_source("My Box_1.xml"), "my-box-1");
        assert_eq!(name_from_source(""), "imported");
    }

    #[test]
    fn overlapping_cpus_and_asymmetric_tables_are_refused() {
        let a = RawNode {
            id: 0,
            cpus: vec![0, 1],
            mem_bytes: 1 << 30,
        };
        let b = RawNode {
            id: 2,
            cpus: vec![1, 2],
            mem_bytes: 1 << 30,
        };
        assert!(check_disjoint(&[a, b]).unwrap_err().contains("CPU 1"));
        let e = check_matrix(&[0, 2], &[vec![10, 20], vec![21, 10]]).unwrap_err();
        assert!(e.contains("node 0 to node 2 is 20"), "{e}");
        let e = check_matrix(&[0, 2], &[vec![10, 20], vec![20]]).unwrap_err();
        assert!(e.contains("square"), "{e}");
    }
}
