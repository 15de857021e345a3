//! `numactl --hardware` output, as numactl's `hardware()` prints it:
//!
//! ```text
//! available: 2 nodes (0-1)
//! node 0 cpus: 0 1 2 3
//! node 0 size: 32100 MB
//! node 0 free: 30000 MB
//! …
//! node distances:
//! node   0   1
//!   0:  10  21
//!   1:  21  10
//! ```
//!
//! Sizes are `MemTotal >> 20` (whole MiB, rounded down), so memory imported
//! from here is up to 1 MiB per node below what sysfs or hwloc give.

use super::cpulist::parse_cpulist;
use super::{build, name_from_source, RawNode};
use crate::error::InputError;
use crate::machine::Machine;

/// Import a machine from the text of `numactl --hardware`; `source` names it in errors.
pub fn from_numactl(text: &str, source: &str) -> Result<Machine, InputError> {
    let e = |line: usize, m: String| InputError::new(format!("line {line}: {m}")).in_file(source);
    let whole = |m: &str| InputError::new(m.to_string()).in_file(source);

    let mut ids: Option<Vec<u32>> = None;
    let mut slot: std::collections::HashMap<u32, usize> = Default::default();
    let mut cpus: Vec<Option<Vec<u32>>> = Vec::new();
    let mut size: Vec<Option<u64>> = Vec::new();
    let mut header: Option<Vec<u32>> = None;
    let mut rows: Vec<Vec<u32>> = Vec::new();
    let mut in_distances = false;
    let mut no_distances = false;

    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("available:") {
            if ids.is_some() {
                return Err(e(lineno, "a second `available:` line".into()));
            }
            let list = parse_available(rest).map_err(|m| e(lineno, m))?;
            cpus = vec![None; list.len()];
            size = vec![None; list.len()];
            slot = list.iter().enumerate().map(|(i, &id)| (id, i)).collect();
            ids = Some(list);
            continue;
        }
        let Some(ids) = ids.as_ref() else {
            return Err(e(
                lineno,
                format!(
                    "expected `available: N nodes (…)` first, found `{line}`; \
                     give the output of `numactl --hardware` as printed"
                ),
            ));
        };
        // By lookup, not by a search per line: quadratic in nodes.
        let pos = |id: u32, lineno: usize| {
            slot.get(&id).copied().ok_or_else(|| {
                e(
                    lineno,
                    format!("node {id} is not among the available nodes {ids:?}"),
                )
            })
        };
        if line == "node distances:" {
            in_distances = true;
            continue;
        }
        if line.starts_with("No distance information") {
            no_distances = true;
            continue;
        }
        if in_distances {
            if let Some(rest) = line.strip_prefix("node") {
                if header.is_some() {
                    return Err(e(lineno, "a second distance header row".into()));
                }
                let h: Vec<u32> = numbers(rest).map_err(|m| e(lineno, m))?;
                if h != *ids {
                    return Err(e(
                        lineno,
                        format!("the distance header lists nodes {h:?} but the available nodes are {ids:?}"),
                    ));
                }
                header = Some(h);
                continue;
            }
            let Some((id, vals)) = line.split_once(':') else {
                return Err(e(
                    lineno,
                    format!("expected a distance row like `0:  10  21`, found `{line}`"),
                ));
            };
            let Some(h) = header.as_ref() else {
                return Err(e(
                    lineno,
                    "a distance row before the `node  0  1 …` header".into(),
                ));
            };
            let id: u32 = id
                .trim()
                .parse()
                .map_err(|_| e(lineno, format!("`{}` is not a node id", id.trim())))?;
            let expect = h.get(rows.len()).copied();
            if expect != Some(id) {
                return Err(e(
                    lineno,
                    match expect {
                        Some(x) => {
                            format!("distance row for node {id} where node {x}'s was expected")
                        }
                        None => format!("one distance row too many (node {id})"),
                    },
                ));
            }
            let v = numbers(vals).map_err(|m| e(lineno, m))?;
            if v.len() != h.len() {
                return Err(e(
                    lineno,
                    format!(
                        "the row of node {id} has {} distances but the header has {} nodes; \
                         the table must be square",
                        v.len(),
                        h.len()
                    ),
                ));
            }
            rows.push(v);
            continue;
        }
        // `node N cpus: …`, `node N size: … MB`, `node N free: … MB`
        let f: Vec<&str> = line.splitn(4, ' ').collect();
        if f.len() < 3 || f[0] != "node" {
            return Err(e(lineno, format!("unexpected line `{line}`")));
        }
        let id: u32 = f[1]
            .parse()
            .map_err(|_| e(lineno, format!("`{}` is not a node id", f[1])))?;
        let rest = f.get(3).copied().unwrap_or("");
        match f[2] {
            "cpus:" => {
                let p = pos(id, lineno)?;
                if cpus[p].is_some() {
                    return Err(e(lineno, format!("a second cpus line for node {id}")));
                }
                cpus[p] = Some(parse_cpus(rest).map_err(|m| e(lineno, m))?);
            }
            "size:" => {
                let p = pos(id, lineno)?;
                if size[p].is_some() {
                    return Err(e(lineno, format!("a second size line for node {id}")));
                }
                size[p] = Some(parse_mb(rest).map_err(|m| e(lineno, m))?);
            }
            "free:" => {
                pos(id, lineno)?;
            }
            other => {
                return Err(e(
                    lineno,
                    format!("unexpected `node {id} {other}`: expected cpus:, size: or free:"),
                ))
            }
        }
    }

    let Some(ids) = ids else {
        return Err(whole(
            "has no `available: N nodes (…)` line: is this the output of `numactl --hardware`?",
        ));
    };
    // numactl 1.0.x prints neither `cpus:` lines nor a distance table.
    // With no `cpus:` line at all the CPUs are unknown: one placeholder CPU
    // per node with memory, so the machine boots, and the description says
    // so. Some `cpus:` lines but not all is a truncated file.
    let cpus_unknown = cpus.iter().all(|c| c.is_none());
    let mut next_cpu = 0u32;
    let mut nodes = Vec::with_capacity(ids.len());
    for (p, &id) in ids.iter().enumerate() {
        let c = match cpus[p].take() {
            Some(c) => c,
            None if cpus_unknown => {
                if size[p].unwrap_or(0) > 0 {
                    next_cpu += 1;
                    vec![next_cpu - 1]
                } else {
                    Vec::new()
                }
            }
            None => {
                return Err(whole(&format!(
                    "has no `node {id} cpus:` line (truncated output?)"
                )))
            }
        };
        let s = size[p].ok_or_else(|| {
            whole(&format!(
                "has no `node {id} size:` line (truncated output?)"
            ))
        })?;
        nodes.push(RawNode {
            id,
            cpus: c,
            mem_bytes: s,
        });
    }
    let mut flat = false;
    let matrix = if rows.len() == ids.len() {
        rows
    } else if ids.len() == 1 && rows.is_empty() && (no_distances || header.is_none()) {
        vec![vec![10]]
    } else if rows.is_empty() && (no_distances || (header.is_none() && cpus_unknown)) {
        // No distances at all (numactl 1.0.x, or "No distance information
        // available"): flat SLIT defaults, 10 local and 20 remote, flagged.
        // Newer numactl always prints `cpus:` lines and the table, so with
        // `cpus:` lines a missing table is a truncated file.
        flat = true;
        (0..ids.len())
            .map(|i| {
                (0..ids.len())
                    .map(|j| if i == j { 10 } else { 20 })
                    .collect()
            })
            .collect()
    } else {
        return Err(whole(&format!(
            "has {} distance rows for {} nodes (truncated output?)",
            rows.len(),
            ids.len()
        )));
    };
    let mut description = format!("imported from numactl --hardware output {source}");
    if cpus_unknown {
        description.push_str(
            "; CPUs unknown (no `cpus:` lines, as numactl 1.0.x prints): one placeholder CPU \
             per node with memory, set node_cpus by hand",
        );
    }
    if flat {
        description.push_str(
            "; distances unknown (no distance table): flat 10 local / 20 remote, set [distance] by hand",
        );
    }
    build(
        &name_from_source(source),
        description,
        &nodes,
        matrix,
        source,
    )
}

/// ` 2 nodes (0-1)` → the node ids, checked against the count.
fn parse_available(rest: &str) -> Result<Vec<u32>, String> {
    let rest = rest.trim();
    let bad = || format!("expected `available: N nodes (list)`, found `available: {rest}`");
    let (count, tail) = rest.split_once(' ').ok_or_else(bad)?;
    let count: usize = count.parse().map_err(|_| bad())?;
    // Refused for its count before the list is read: the rest of the file
    // is one line per node, and the machine could not be built anyway.
    if count > crate::machine::MAX_NODES {
        return Err(format!(
            "{count} nodes: numasim models at most {} (docs/machine.md)",
            crate::machine::MAX_NODES
        ));
    }
    let tail = tail.trim();
    let list = tail
        .strip_prefix("nodes")
        .or_else(|| tail.strip_prefix("node"))
        .map(str::trim)
        .and_then(|t| t.strip_prefix('('))
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(bad)?;
    let ids = parse_cpulist(list)?;
    if ids.len() != count {
        return Err(format!(
            "says {count} nodes but lists {} ({list})",
            ids.len()
        ));
    }
    if ids.is_empty() {
        return Err("lists no node".into());
    }
    Ok(ids)
}

/// ` 0 1 2 3`, or with `--cpu-compress` ` 0-3, 8-11 (8)`.
fn parse_cpus(rest: &str) -> Result<Vec<u32>, String> {
    let mut text = rest.trim();
    let mut count = None;
    if let Some(open) = text.rfind('(') {
        let n = text[open..]
            .strip_prefix('(')
            .and_then(|t| t.strip_suffix(')'))
            .and_then(|t| t.trim().parse::<usize>().ok())
            .ok_or_else(|| format!("`{text}` is not a CPU list"))?;
        count = Some(n);
        text = text[..open].trim();
    }
    let mut all = Vec::new();
    for tok in text.split([' ', ',', '\t']).filter(|t| !t.is_empty()) {
        all.extend(parse_cpulist(tok)?);
    }
    all.sort_unstable();
    let before = all.len();
    all.dedup();
    if all.len() != before {
        return Err(format!("`{text}` lists a CPU twice"));
    }
    if let Some(n) = count {
        if n != all.len() {
            return Err(format!("says ({n}) CPUs but lists {}", all.len()));
        }
    }
    Ok(all)
}

/// `32100 MB` → bytes (numactl's MB are MiB).
fn parse_mb(rest: &str) -> Result<u64, String> {
    let t = rest.trim();
    let mb = t
        .strip_suffix("MB")
        .map(str::trim)
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| format!("`{t}` is not a size like `32100 MB`"))?;
    mb.checked_mul(1 << 20)
        .ok_or_else(|| format!("{mb} MB is too large"))
}

fn numbers(text: &str) -> Result<Vec<u32>, String> {
    text.split_whitespace()
        .map(|t| {
            t.parse::<u32>()
                .map_err(|_| format!("`{t}` is not a whole number"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "available: 2 nodes (0-1)
node 0 cpus: 0 1 2 3
node 0 size: 32100 MB
node 0 free: 30000 MB
node 1 cpus: 4 5 6 7
node 1 size: 32253 MB
node 1 free: 31000 MB
node distances:
node   0   1 
  0:  10  21 
  1:  21  10 
";

    #[test]
    fn reads_two_nodes() {
        let m = from_numactl(TWO, "t.txt").unwrap();
        assert_eq!(m.node_count(), 2);
        assert_eq!(m.nodes[1].cpus, 4);
        assert_eq!(m.nodes[0].mem_bytes, 32100 << 20);
        assert_eq!(m.distances.get(0, 1), 21);
        assert_eq!(m.name, "t");
    }

    #[test]
    fn compressed_cpus_and_sparse_available() {
        assert_eq!(parse_cpus(" 0-3, 8-11 (8)").unwrap().len(), 8);
        assert!(parse_cpus(" 0-3 (5)").is_err());
        assert!(parse_cpus(" 0 0").is_err());
        assert_eq!(parse_available(" 3 nodes (0-1,4)").unwrap(), vec![0, 1, 4]);
        assert!(parse_available(" 3 nodes (0-1)").is_err());
        assert!(parse_mb("<not available>").is_err());
    }

    #[test]
    fn errors_name_the_line() {
        let bad = TWO.replace("node 1 size: 32253 MB", "node 1 size: 32x53 MB");
        let e = from_numactl(&bad, "t.txt").unwrap_err();
        assert_eq!(e.file.as_deref(), Some("t.txt"));
        assert!(e.message.starts_with("line 6:"), "{e}");
    }
}
