//! The `boot` and `meminfo` workloads: boot to a shell and read what the
//! boot left in each node ([HASHDIST04], [ALTIX04] A10–A14).

use super::spec as s;
use super::Sim;
use super::Workload;
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

/// The `boot` workload: its keys, metrics and example, and its reader.
pub const BOOT: Workload = Workload {
    spec: s::Spec {
        name: "boot",
        about: "boot to a shell; report the boot-time hash tables",
        params: &[],
        one_of: &[],
        metrics: &[
            s::m(
                "hash_bytes",
                "B",
                "size of each boot-time hash table (row key `table`)",
            ),
            s::m("hash_requested_bytes", "B", "size asked for before caps"),
            s::m("tcp_ehash_bytes", "B", "TCP established hash"),
            s::m(
                "tcp_ehash_requested_bytes",
                "B",
                "TCP established hash asked for",
            ),
            s::m(
                "max_node_hash_fraction",
                "fraction",
                "largest share of the tables on one node",
            ),
            s::m(
                "hash_nodes",
                "nodes",
                "nodes a table spans (row key `table`)",
            ),
            s::m(
                "hash_entries",
                "entries",
                "buckets of each table, as dmesg prints them (row key `table`)",
            ),
            s::m(
                "hash_order",
                "order",
                "ilog2(bytes) - PAGE_SHIFT, as dmesg prints it (row key `table`)",
            ),
            s::m(
                "hash_vmalloc",
                s::FLAG,
                "1 if the table was vmalloc'ed, 0 if linear (row key `table`)",
            ),
            s::m(
                "initcall_node",
                "node",
                "node the boot CPU ran initcalls on",
            ),
        ],
        example_machine: "altix-hashdist-16",
        example_kernel: "",
        example: "workload = \"boot\"\n",
        row_keys: &["table"],
    },
    parse: |_, _| super::no_keys(boot_records),
};

/// The `meminfo` workload: its keys, metrics and example, and its reader.
pub const MEMINFO: Workload = Workload {
    spec: s::Spec {
        name: "meminfo",
        about: "per-node MemTotal/MemFree/MemUsed, as /sys/devices/system/node/node*/meminfo",
        params: &[],
        one_of: &[],
        metrics: &[
            s::m("mem_total_kb", "kB", "MemTotal (row key `node`)"),
            s::m("mem_free_kb", "kB", "MemFree"),
            s::m("mem_used_kb", "kB", "MemUsed"),
            s::m("hash_kb", "kB", "boot-time hash tables"),
            s::m("page_cache_kb", "kB", "page cache"),
            s::m("slab_kb", "kB", "slab"),
            s::m("anon_kb", "kB", "anonymous memory"),
        ],
        example_machine: "altix-hashdist-16",
        example_kernel: "",
        example: "workload = \"meminfo\"\nmetrics = [\"mem_used_kb\"]\n",
        row_keys: &["node"],
    },
    parse: |_, _| super::no_keys(meminfo_records),
};
