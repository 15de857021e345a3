//! The `boot` and `meminfo` workloads: boot to a shell and read what the
//! boot left in each node ([HASHDIST04], [ALTIX04] A10–A14).

use super::Sim;
use crate::error::Error;
use crate::kernel::mm::Use;
use crate::report::Record;
use serde_json::json;

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
        out.push(rec.record(&row, "hash_entries", "entries", h.entries as f64));
        let order = h.order(booted.mm.page_size());
        out.push(rec.record(&row, "hash_order", "order", order as f64));
        out.push(rec.record(&row, "hash_vmalloc", "flag", u8::from(h.vmalloc()) as f64));
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

/// Per-use meminfo columns: (metric, what the pages hold).
const USE_COLUMNS: &[(&str, Use)] = &[
    ("hash_kb", Use::Hash),
    ("page_cache_kb", Use::PageCache),
    ("slab_kb", Use::Slab),
    ("anon_kb", Use::Anon),
];

pub fn meminfo_records(sim: &mut Sim) -> Result<Vec<Record>, Error> {
    let rec = sim.recorder();
    let booted = sim.booted()?;
    let kb = booted.mm.page_size() / 1024;
    let mut out = Vec::new();
    let mut total = (0u64, 0u64, [0u64; 8]);
    let mut emit =
        |row: &[(&str, serde_json::Value)], present: u64, free: u64, used_by: &[u64; 8]| {
            out.push(rec.record(row, "mem_total_kb", "kB", (present * kb) as f64));
            out.push(rec.record(row, "mem_free_kb", "kB", (free * kb) as f64));
            out.push(rec.record(row, "mem_used_kb", "kB", ((present - free) * kb) as f64));
            for &(metric, u) in USE_COLUMNS {
                out.push(rec.record(row, metric, "kB", (used_by[u.index()] * kb) as f64));
            }
        };
    for (i, n) in booted.mm.nodes().iter().enumerate() {
        emit(&[("node", json!(i))], n.present, n.free, &n.used_by);
        total.0 += n.present;
        total.1 += n.free;
        for (t, u) in total.2.iter_mut().zip(n.used_by) {
            *t += u;
        }
    }
    emit(&[("node", json!("total"))], total.0, total.1, &total.2);
    Ok(out)
}
