//! The `bcfree` workload: SGI's command that frees every idle (clean,
//! unmapped) page-cache page in the system ([ALTIX04] B4).

use super::spec as s;
use super::Sim;
use super::Workload;
use crate::error::Error;
use crate::report::Record;

pub fn bcfree_records(sim: &mut Sim) -> Result<Vec<Record>, Error> {
    let rec = sim.recorder();
    let (booted, vm) = sim.vm()?;
    let freed = vm.bcfree(&mut booted.mm);
    let gb = freed as f64 * booted.mm.page_size() as f64 / (1u64 << 30) as f64;
    Ok(vec![rec.record(&[], "bcfree_freed_gb", "GiB", gb)])
}

/// The `bcfree` workload: its keys, metrics and example, and its reader.
pub const BCFREE: Workload = Workload {
    spec: s::Spec {
        name: "bcfree",
        about: "SGI's bcfree command: drop every clean, unmapped page-cache page",
        params: &[],
        one_of: &[],
        metrics: &[s::m("bcfree_freed_gb", "GiB", "page cache freed")],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"bcfree\"\n",
        row_keys: &[],
    },
    parse: |_, _| super::no_keys(bcfree_records),
};
