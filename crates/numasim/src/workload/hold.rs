//! The `hold` workload: a task first-touches anonymous memory spread evenly
//! over nodes and keeps it (a big job's arrays). What memory cannot hold is
//! placed in swap, as if the task had been swapped out before; more than
//! memory and swap together is refused.

use super::keys::{nodes_key, task_key};
use super::spec as s;
use super::Sim;
use super::{Run, Workload};
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::machine::Machine;
use crate::report::Record;

#[derive(Debug, Clone)]
pub struct Hold {
    pub task: String,
    pub bytes: u64,
    pub nodes: Vec<usize>,
}

impl Hold {
    pub fn from_step(r: &mut TableReader, machine: &Machine) -> Result<Hold, InputError> {
        let task = task_key(r, "job")?;
        let bytes = r
            .size("bytes")?
            .ok_or_else(|| InputError::at("bytes", "missing: how much memory, e.g. \"200 GB\""))?;
        let nodes = nodes_key(r, machine)?;
        Ok(Hold { task, bytes, nodes })
    }
}

impl Run for Hold {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let (booted, vm) = sim.vm()?;
        let pages = booted.mm.pages_for(self.bytes);
        let t = vm.task_id(&self.task);
        let before = vm.swap.used;
        vm.hold(&mut booted.mm, t, &self.nodes, pages)
            .map_err(|m| {
                InputError::at(
                    "bytes",
                    format!(
                        "`hold` of {} for task `{}`: {m}",
                        crate::input::size::format_size(self.bytes),
                        self.task
                    ),
                )
            })?;
        let gib = (1u64 << 30) as f64;
        let page = booted.mm.page_size() as f64;
        Ok(vec![
            rec.record(&[], "held_gb", "GiB", self.bytes as f64 / gib),
            rec.record(
                &[],
                "held_in_swap_gb",
                "GiB",
                (vm.swap.used - before) as f64 * page / gib,
            ),
        ])
    }
}

/// The `hold` workload: its keys, metrics and example, and its reader.
pub const HOLD: Workload = Workload {
    spec: s::Spec {
        name: "hold",
        about: "a task takes anonymous memory and keeps it (memory + swap)",
        params: &[
            s::TASK_JOB,
            s::p(
                "bytes",
                s::Kind::Size,
                "B",
                s::Default::Required,
                s::Range::Text("≤ memory + swap"),
                "memory held",
            ),
            s::NODES_MEM,
        ],
        one_of: &[],
        metrics: &[
            s::m("held_gb", "GiB", "memory held"),
            s::m("held_in_swap_gb", "GiB", "of it, in swap"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"hold\"\nbytes = \"100 GB\"\n",
        row_keys: &[],
    },
    parse: |r, m| Ok(Box::new(Hold::from_step(r, m)?)),
};
