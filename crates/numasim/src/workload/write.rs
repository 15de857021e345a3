//! The `write` workload: a task writes a file with buffered I/O while the
//! clock runs. Every page goes through `page_cache_alloc()` (or SGI's
//! `page_cache_alloc_limited()`), is dirtied, written back by the flusher,
//! and reclaimed under pressure: the BIGIO scenario of [ALTIX04] (B1–B11).

use super::keys::{cpu_key, horizon_key, task_key};
use super::spec as s;
use super::Sim;
use super::{Run, Workload};
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::mm::vm::{Actor, Job, VmStats, TICK_NS};
use crate::machine::Machine;
use crate::report::{timeline, Artifact, Record};

#[derive(Debug, Clone)]
pub struct Write {
    pub task: String,
    pub bytes: u64,
    pub cpu: u64,
    pub from_anon: bool,
    pub horizon_s: u64,
}

/// The timeline of the VM so far, as CSV and SVG files for `--out`.
pub fn timeline_artifacts(sim: &mut Sim, step: &str) -> Result<(), Error> {
    if sim.artifacts.is_none() {
        return Ok(());
    }
    let experiment = sim.experiment;
    let case = sim.recorder().keys().to_vec();
    let (booted, vm) = sim.vm()?;
    let page = booted.mm.page_size();
    let csv = timeline::to_csv(&vm.timeline, page);
    let svg = timeline::to_svg(
        &vm.timeline,
        page,
        &format!("{experiment}: memory per node over time"),
    );
    let files = sim.artifacts.get_or_insert_with(Vec::new);
    files.push(Artifact {
        case: case.clone(),
        kind: format!("{step}-timeline.csv"),
        content: csv,
        name_at: None,
    });
    if let Some((svg, title_end)) = svg {
        files.push(Artifact {
            case,
            kind: format!("{step}-timeline.svg"),
            content: svg,
            name_at: Some(title_end),
        });
    }
    Ok(())
}

/// Difference of the run's counters, for one step's report.
pub fn delta(after: &VmStats, before: &VmStats) -> VmStats {
    VmStats {
        swap_out_pages: after.swap_out_pages - before.swap_out_pages,
        swap_in_pages: after.swap_in_pages - before.swap_in_pages,
        flushed_pages: after.flushed_pages - before.flushed_pages,
        reclaim_written_pages: after.reclaim_written_pages - before.reclaim_written_pages,
        scanned_pages: after.scanned_pages - before.scanned_pages,
        kswapd_wakeups: after.kswapd_wakeups - before.kswapd_wakeups,
        direct_reclaim_ns: after.direct_reclaim_ns - before.direct_reclaim_ns,
        kswapd_ns: after.kswapd_ns - before.kswapd_ns,
        oom_kills: after.oom_kills - before.oom_kills,
        first_swap_out_ns: after
            .first_swap_out_ns
            .filter(|_| before.first_swap_out_ns.is_none()),
        file_io_at_first_swap_out: after
            .file_io_at_first_swap_out
            .filter(|_| before.first_swap_out_ns.is_none())
            .map(|p| p.saturating_sub(before.flushed_pages + before.reclaim_written_pages)),
        failed_sweep_ns: after.failed_sweep_ns,
    }
}

impl Write {
    pub fn from_step(r: &mut TableReader, machine: &Machine) -> Result<Write, InputError> {
        let task = task_key(r, "job")?;
        let bytes = r
            .size("bytes")?
            .ok_or_else(|| InputError::at("bytes", "missing: the file size, e.g. \"100 GB\""))?;
        let cpu = cpu_key(r, machine)?;
        let from_anon = r.bool("from_anon")?.unwrap_or(true);
        let horizon_s = horizon_key(r)?;
        if machine.disk_bytes_per_s() <= 0.0 {
            return Err(InputError::at(
                "workload",
                format!(
                    "`write` needs disks to write to; machine `{}` has none: add [io] disks",
                    machine.name
                ),
            ));
        }
        Ok(Write {
            task,
            bytes,
            cpu,
            from_anon,
            horizon_s,
        })
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let machine = &sim.case.machine;
        let node = machine.cpu_node(self.cpu).unwrap_or(0);
        // write() copies user data into the cache: read plus write of memory.
        let copy_bps = machine.memory.bandwidth_gbps * 1e9 / 2.0;
        let spread = sim.case.kernel.page_cache_alloc;
        let (booted, vm) = sim.vm()?;
        let page = booted.mm.page_size();
        let pages = booted.mm.pages_for(self.bytes);
        let rate = (copy_bps * TICK_NS as f64 * 1e-9 / page as f64) as u64;
        let task = vm.task_id(&self.task);
        if self.from_anon {
            vm.start_source(task, pages);
        }
        let before = vm.stats.clone();
        let t0 = vm.now_ns;
        let mut actors = [Actor::new(
            task,
            node,
            Job::Write {
                from_anon: self.from_anon,
                spread,
            },
            pages,
            rate,
        )];
        vm.run(&mut booted.mm, &mut actors, self.horizon_s * 1_000_000_000);
        let a = &actors[0];
        let st = delta(&vm.stats, &before);
        let gib = (1u64 << 30) as f64;
        let to_gb = |p: u64| p as f64 * page as f64 / gib;
        let completed = a.left == 0 && vm.tasks[task].killed_at_ns.is_none();
        // Neither done nor killed: the simulated clock ran out first, and
        // every rate below covers only the part that ran.
        let cut_short = a.left > 0 && vm.tasks[task].killed_at_ns.is_none();
        let end = a.done_at_ns.unwrap_or(vm.now_ns);
        // Both rates are taken over the swapping phase if there is one
        // ([ALTIX04] speaks of I/O "during this phase"), else the whole run,
        // and end when the writer finishes or is killed.
        let start = st.first_swap_out_ns.unwrap_or(t0).max(t0);
        let secs = (end.saturating_sub(start)) as f64 * 1e-9;
        let per_s = |pages: u64| if secs > 0.0 { to_gb(pages) / secs } else { 0.0 };
        // The writer's delivered rate: pages its write() calls put into the
        // page cache. This is what the application sees, and what the paper's
        // "one-half of what the hardware could deliver" measures; the cache
        // may absorb a burst, so it can exceed the disk's rate.
        let delivered = a.pages_done
            - st.first_swap_out_ns
                .and(a.pages_at_first_swap_out)
                .unwrap_or(0)
                .min(a.pages_done);
        let write_gibps = per_s(delivered);
        // File data reaching the disk (flusher and reclaim): how busy the disk
        // was with the file, not how fast the writer went.
        let file_io = st.flushed_pages + st.reclaim_written_pages;
        let file_io_gibps = per_s(file_io - st.file_io_at_first_swap_out.unwrap_or(0).min(file_io));
        let hw = vm.disk.bytes_per_s() / gib;
        let records = vec![
            rec.record(&[], "completed", "flag", f64::from(u8::from(completed))),
            incomplete_at(&rec, cut_short, self.horizon_s),
            rec.record(&[], "oom_kills", "count", st.oom_kills as f64),
            rec.record(&[], "swap_out_gb", "GiB", to_gb(st.swap_out_pages)),
            rec.record(&[], "swap_in_gb", "GiB", to_gb(st.swap_in_pages)),
            rec.record(&[], "write_gibps", "GiB/s", write_gibps),
            rec.record(&[], "file_io_gibps", "GiB/s", file_io_gibps),
            rec.record(&[], "hardware_gibps", "GiB/s", hw),
            rec.record(
                &[],
                "write_fraction_of_hardware",
                "fraction",
                write_gibps / hw,
            ),
            rec.record(&[], "max_stall_s", "s", a.max_stall_ns * 1e-9),
            rec.record(&[], "throttled_s", "s", a.throttled_ns * 1e-9),
            rec.record(&[], "elapsed_s", "s", (end - t0) as f64 * 1e-9),
            rec.record(&[], "kswapd_cpu_s", "s", st.kswapd_ns * 1e-9),
            rec.record(
                &[],
                "direct_reclaim_cpu_s",
                "s",
                st.direct_reclaim_ns * 1e-9,
            ),
            rec.record(
                &[],
                "reclaim_written_gb",
                "GiB",
                to_gb(st.reclaim_written_pages),
            ),
        ];
        timeline_artifacts(sim, "write")?;
        Ok(records)
    }
}

/// `incomplete_at_s`: the simulated second at which a run that still had
/// work was stopped by `horizon_s` (its other records describe only the part
/// that ran), null when it ended on its own. The CLI warns on stderr.
pub fn incomplete_at(rec: &super::Recorder<'_>, cut_short: bool, horizon_s: u64) -> Record {
    let mut r = rec.record(&[], "incomplete_at_s", "s", 0.0);
    r.value = cut_short.then_some(horizon_s as f64);
    r
}

impl Run for Write {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Write::run(self, sim)
    }
}

/// The `write` workload: its keys, metrics and example, and its reader.
pub const WRITE: Workload = Workload {
    spec: s::Spec {
        name: "write",
        about: "a task writes a file with buffered I/O while the clock runs: reclaim, swap, OOM",
        params: &[
            s::TASK_JOB,
            s::p(
                "bytes",
                s::Kind::Size,
                "B",
                s::Default::Required,
                s::Range::Any,
                "the file's size",
            ),
            s::CPU0,
            s::p(
                "from_anon",
                s::Kind::Bool,
                "",
                s::Default::Value("true"),
                s::Range::Any,
                "the data comes from the task's own anonymous memory",
            ),
            s::HORIZON,
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "completed",
                s::FLAG,
                "1 if the write finished within horizon_s",
            ),
            s::m(
                "incomplete_at_s",
                "s",
                "the horizon at which a cut-short run stopped (null if it ended on its own)",
            ),
            s::m("oom_kills", "count", "tasks the OOM killer killed"),
            s::m("swap_out_gb", "GiB", "swapped out"),
            s::m("swap_in_gb", "GiB", "swapped in"),
            s::m("write_gibps", "GiB/s", "the writer's rate"),
            s::m("file_io_gibps", "GiB/s", "file data reaching the disks"),
            s::m("hardware_gibps", "GiB/s", "what the disks can take"),
            s::m(
                "write_fraction_of_hardware",
                "fraction",
                "write_gibps / hardware_gibps",
            ),
            s::m("max_stall_s", "s", "longest allocation stall"),
            s::m("throttled_s", "s", "time throttled by the page-cache limit"),
            s::m("elapsed_s", "s", "simulated time of the step"),
            s::m("kswapd_cpu_s", "s", "CPU time of kswapd"),
            s::m("direct_reclaim_cpu_s", "s", "CPU time in direct reclaim"),
            s::m(
                "reclaim_written_gb",
                "GiB",
                "dirty pages written by reclaim",
            ),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"write\"\nbytes = \"20 GB\"\nhorizon_s = 600\n",
        row_keys: &[],
    },
    parse: |r, m| Ok(Box::new(Write::from_step(r, m)?)),
};
