//! The `boot` and `meminfo` workloads: boot to a shell and read what the
//! boot left in each node ([HASHDIST04], [ALTIX04] A10–A14).

use super::Sim;
use crate::error::Error;
use crate::kernel::mm::Use;
use crate::report::Record;
use serde_json::json;

pub const BOOT_METRICS: &[&str] = &[
    "hash_bytes",
    "hash_requested_bytes",
    "tcp_ehash_bytes",
    "tcp_ehash_requested_bytes",
    "max_node_hash_fraction",
    "hash_nodes",
    "initcall_node",
];

pub const MEMINFO_METRICS: &[&str] = &["mem_total_kb", "mem_free_kb", "mem_used_kb", "hash_kb"];

pub fn boot_records(sim: &mut Sim) -> Result<Vec<Record>, Error> {
    let rec = sim.recorder();
    let booted = sim.booted()?;
    let mut out = Vec::new();
    for h in &booted.hashes {
        let row = [("table", json!(h.name))];
        out.push(rec.record(&row, "hash_bytes", "B", h.bytes() as f64));
        out.push(rec.record(
            &row,
            "hash_requested_bytes",
            "B",
            h.requested_bytes() as f64,
        ));
        out.push(rec.record(&row, "hash_nodes", "nodes", h.placement.parts.len() as f64));
    }
    if let Some(e) = booted.hash("tcp_ehash") {
        out.push(rec.record(&[], "tcp_ehash_bytes", "B", e.bytes() as f64));
        out.push(rec.record(
            &[],
            "tcp_ehash_requested_bytes",
            "B",
            e.requested_bytes() as f64,
        ));
    }
    // Largest share of all hash memory that sits on one node.
    let total: u64 = booted
        .mm
        .nodes()
        .iter()
        .map(|n| n.used_by[Use::Hash.index()])
        .sum();
    let max = booted
        .mm
        .nodes()
        .iter()
        .map(|n| n.used_by[Use::Hash.index()])
        .max()
        .unwrap_or(0);
    let frac = if total == 0 {
        0.0
    } else {
        max as f64 / total as f64
    };
    out.push(rec.record(&[], "max_node_hash_fraction", "fraction", frac));
    out.push(rec.record(&[], "initcall_node", "node", booted.initcall_node as f64));
    Ok(out)
}

pub fn meminfo_records(sim: &mut Sim) -> Result<Vec<Record>, Error> {
    let rec = sim.recorder();
    let booted = sim.booted()?;
    let kb = booted.mm.page_size() / 1024;
    let mut out = Vec::new();
    let (mut t_total, mut t_free, mut t_hash) = (0u64, 0u64, 0u64);
    for (i, n) in booted.mm.nodes().iter().enumerate() {
        let row = [("node", json!(i))];
        let hash = n.used_by[Use::Hash.index()];
        out.push(rec.record(&row, "mem_total_kb", "kB", (n.present * kb) as f64));
        out.push(rec.record(&row, "mem_free_kb", "kB", (n.free * kb) as f64));
        out.push(rec.record(
            &row,
            "mem_used_kb",
            "kB",
            ((n.present - n.free) * kb) as f64,
        ));
        out.push(rec.record(&row, "hash_kb", "kB", (hash * kb) as f64));
        t_total += n.present;
        t_free += n.free;
        t_hash += hash;
    }
    let row = [("node", json!("total"))];
    out.push(rec.record(&row, "mem_total_kb", "kB", (t_total * kb) as f64));
    out.push(rec.record(&row, "mem_free_kb", "kB", (t_free * kb) as f64));
    out.push(rec.record(&row, "mem_used_kb", "kB", ((t_total - t_free) * kb) as f64));
    out.push(rec.record(&row, "hash_kb", "kB", (t_hash * kb) as f64));
    Ok(out)
}
