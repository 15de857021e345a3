//! The `alloc` and `runaway` workloads: threads first-touch anonymous memory
//! while the clock runs, so allocation meets reclaim, swap and the OOM
//! killer ([ALTIX04] B3 `toss()`, B10, B11). `alloc` runs one thread per CPU
//! of the given nodes, each touching `bytes`; `runaway` is one thread that
//! never stops allocating.

use super::keys::{cpu_key, horizon_key, nodes_key, task_key};
use super::spec as s;
use super::write::{delta, incomplete_at, timeline_artifacts};
use super::Sim;
use super::{Run, Workload};
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::mm::vm::{Actor, Job, TICK_NS};
use crate::kernel::mm::vmscan::DEF_PRIORITY;
use crate::machine::Machine;
use crate::report::Record;

#[derive(Debug, Clone)]
pub struct Alloc {
    pub task: String,
    /// Node of each thread.
    pub threads: Vec<usize>,
    /// Per thread; `u64::MAX` for `runaway`.
    pub bytes: u64,
    pub horizon_s: u64,
    pub runaway: bool,
}

impl Alloc {
    pub fn from_step(
        r: &mut TableReader,
        machine: &Machine,
        runaway: bool,
    ) -> Result<Alloc, InputError> {
        let horizon_s = horizon_key(r)?;
        if runaway {
            let task = task_key(r, "runaway")?;
            let cpu = cpu_key(r, machine)?;
            return Ok(Alloc {
                task,
                threads: vec![machine.cpu_node(cpu).unwrap_or(0)],
                bytes: u64::MAX,
                horizon_s,
                runaway,
            });
        }
        let task = task_key(r, "job")?;
        let bytes = r
            .size("bytes")?
            .ok_or_else(|| InputError::at("bytes", "missing: memory per thread, e.g. \"1 GB\""))?;
        let nodes = nodes_key(r, machine)?;
        let threads: Vec<usize> = nodes
            .iter()
            .flat_map(|&n| std::iter::repeat_n(n, machine.nodes[n].cpus as usize))
            .collect();
        if threads.is_empty() {
            return Err(InputError::at(
                r.key("nodes"),
                "these nodes have no CPUs to run threads",
            ));
        }
        Ok(Alloc {
            task,
            threads,
            bytes,
            horizon_s,
            runaway,
        })
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let machine = &sim.case.machine;
        // A thread zeroes its new pages at its share of the node's bandwidth.
        let per_cpu_bps: Vec<f64> = self
            .threads
            .iter()
            .map(|&n| machine.memory.bandwidth_gbps * 1e9 / machine.nodes[n].cpus.max(1) as f64)
            .collect();
        let (booted, vm) = sim.vm()?;
        let page = booted.mm.page_size();
        let task = vm.task_id(&self.task);
        let pages = if self.runaway {
            u64::MAX
        } else {
            booted.mm.pages_for(self.bytes)
        };
        let mut actors: Vec<Actor> = self
            .threads
            .iter()
            .zip(&per_cpu_bps)
            .map(|(&n, &bps)| {
                let rate = (bps * TICK_NS as f64 * 1e-9 / page as f64) as u64;
                Actor::new(task, n, Job::Alloc, pages, rate)
            })
            .collect();
        let before = vm.stats.clone();
        let t0 = vm.now_ns;
        vm.run(&mut booted.mm, &mut actors, self.horizon_s * 1_000_000_000);
        let st = delta(&vm.stats, &before);
        let gib = (1u64 << 30) as f64;
        let to_gb = |p: u64| p as f64 * page as f64 / gib;
        let records = if self.runaway {
            let killed = vm
                .kills
                .iter()
                .find(|&&(t, _)| t >= t0)
                .map(|&(t, _)| (t - t0) as f64 * 1e-9);
            // One full sweep (priorities DEF_PRIORITY..1) over the lists as
            // they stand: measured if one failed, else what one would take.
            let lists: u64 = booted
                .mm
                .nodes()
                .iter()
                .map(|u| {
                    u.used_by[crate::kernel::mm::Use::Anon.index()]
                        + u.used_by[crate::kernel::mm::Use::PageCache.index()]
                })
                .sum();
            let factor: f64 = (1..=DEF_PRIORITY).map(|p| 1.0 / p as f64).sum();
            let pass_ns = st
                .failed_sweep_ns
                .unwrap_or(lists as f64 * factor * vm.scan_ns_global_value());
            let mut t = rec.record(&[], "time_to_oom_kill_s", "s", 0.0);
            t.value = killed;
            vec![
                t,
                rec.record(&[], "shrink_pass_s", "s", pass_ns * 1e-9),
                rec.record(&[], "oom_kills", "count", st.oom_kills as f64),
            ]
        } else {
            let (local, remote) = actors.iter().fold((0u64, 0u64), |(l, r), a| {
                (l + a.local_pages, r + a.remote_pages)
            });
            let done = actors.iter().all(|a| a.left == 0);
            let end = actors
                .iter()
                .map(|a| a.done_at_ns.unwrap_or(vm.now_ns))
                .max()
                .unwrap_or(t0);
            let max_stall = actors.iter().map(|a| a.max_stall_ns).fold(0.0, f64::max);
            vec![
                rec.record(&[], "completed", "flag", f64::from(u8::from(done))),
                incomplete_at(&rec, !done, self.horizon_s),
                rec.record(&[], "max_stall_s", "s", max_stall * 1e-9),
                rec.record(&[], "swap_out_gb", "GiB", to_gb(st.swap_out_pages)),
                rec.record(
                    &[],
                    "remote_alloc_fraction",
                    "fraction",
                    remote as f64 / (local + remote).max(1) as f64,
                ),
                rec.record(&[], "oom_kills", "count", st.oom_kills as f64),
                rec.record(&[], "elapsed_s", "s", (end - t0) as f64 * 1e-9),
            ]
        };
        timeline_artifacts(sim, if self.runaway { "runaway" } else { "alloc" })?;
        Ok(records)
    }
}

impl Run for Alloc {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Alloc::run(self, sim)
    }
}

/// The `alloc` workload: its keys, metrics and example, and its reader.
pub const ALLOC: Workload = Workload {
    spec: s::Spec {
        name: "alloc",
        about: "threads first-touch anonymous memory while the clock runs: stalls, swap, spill",
        params: &[
            s::HORIZON,
            s::TASK_JOB,
            s::p(
                "bytes",
                s::Kind::Size,
                "B",
                s::Default::Required,
                s::Range::Any,
                "memory each thread touches",
            ),
            s::NODES_MEM,
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "completed",
                s::FLAG,
                "1 if every thread finished within horizon_s",
            ),
            s::m(
                "incomplete_at_s",
                "s",
                "the horizon at which a cut-short run stopped (null if it ended on its own)",
            ),
            s::m("max_stall_s", "s", "longest allocation stall"),
            s::m("swap_out_gb", "GiB", "swapped out"),
            s::m(
                "remote_alloc_fraction",
                "fraction",
                "share placed off the thread's node",
            ),
            s::m("oom_kills", "count", "tasks the OOM killer killed"),
            s::m("elapsed_s", "s", "simulated time of the step"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"alloc\"\nbytes = \"1 GB\"\nnodes = [0]\nhorizon_s = 600\n",
        row_keys: &[],
    },
    parse: |r, m| Ok(Box::new(Alloc::from_step(r, m, false)?)),
};

/// The `runaway` workload: its keys, metrics and example, and its reader.
pub const RUNAWAY: Workload = Workload {
    spec: s::Spec {
        name: "runaway",
        about: "a task allocates without end until the OOM killer stops it (or never)",
        params: &[
            s::HORIZON,
            s::p(
                "task",
                s::Kind::Str,
                "",
                s::Default::Value("\"runaway\""),
                s::Range::Any,
                "the task's name",
            ),
            s::CPU0,
        ],
        one_of: &[],
        metrics: &[
            s::m("time_to_oom_kill_s", "s", "from start to the kill"),
            s::m("shrink_pass_s", "s", "one failed reclaim sweep"),
            s::m("oom_kills", "count", "tasks the OOM killer killed"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"runaway\"\nhorizon_s = 600\n",
        row_keys: &[],
    },
    parse: |r, m| Ok(Box::new(Alloc::from_step(r, m, true)?)),
};
