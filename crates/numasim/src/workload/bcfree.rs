//! The `bcfree` workload: SGI's command that frees every idle (clean,
//! unmapped) page-cache page in the system ([ALTIX04] B4).

use super::Sim;
use crate::error::Error;
use crate::report::Record;

pub fn bcfree_records(sim: &mut Sim) -> Result<Vec<Record>, Error> {
    let rec = sim.recorder();
    let (booted, vm) = sim.vm()?;
    let freed = vm.bcfree(&mut booted.mm);
    let gb = freed as f64 * booted.mm.page_size() as f64 / (1u64 << 30) as f64;
    Ok(vec![rec.record(&[], "bcfree_freed_gb", "GiB", gb)])
}
