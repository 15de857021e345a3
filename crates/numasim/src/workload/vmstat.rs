//! The `vmstat` workload: machine-wide memory-management counters at this
//! point of the run (`/proc/vmstat`, plus what a person reads off a per-node
//! `numastat`).

use super::spec as s;
use super::Sim;
use super::Workload;
use crate::error::Error;
use crate::kernel::mm::Use;
use crate::report::Record;

pub fn vmstat_records(sim: &mut Sim) -> Result<Vec<Record>, Error> {
    let rec = sim.recorder();
    let booted = sim.booted()?;
    let mm = &booted.mm;
    // A node is full of page cache when it is down to its high watermark and
    // page cache is what fills it.
    let full = mm
        .nodes()
        .iter()
        .filter(|n| {
            let pc = n.used_by[Use::PageCache.index()];
            n.free <= n.watermark[2] && pc > 0 && n.used_by.iter().all(|&u| u <= pc)
        })
        .count();
    let wakeups = mm.kswapd_wakeups();
    Ok(vec![
        rec.record(
            &[],
            "kswapd_woken",
            "flag",
            f64::from(u8::from(wakeups > 0)),
        ),
        rec.record(&[], "kswapd_wakeups", "count", wakeups as f64),
        rec.record(&[], "nodes_full_of_page_cache", "nodes", full as f64),
    ])
}

/// The `vmstat` workload: its keys, metrics and example, and its reader.
pub const VMSTAT: Workload = Workload {
    spec: s::Spec {
        name: "vmstat",
        about: "machine-wide counters: kswapd wake-ups, nodes full of page cache",
        params: &[],
        one_of: &[],
        metrics: &[
            s::m("kswapd_woken", s::FLAG, "1 if kswapd woke at all"),
            s::m("kswapd_wakeups", "count", "kswapd wake-ups"),
            s::m(
                "nodes_full_of_page_cache",
                "nodes",
                "nodes whose free memory is page cache",
            ),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"vmstat\"\n",
        row_keys: &[],
    },
    parse: |_, _| super::no_keys(vmstat_records),
};
