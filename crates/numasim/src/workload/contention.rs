//! Workloads of contention at hundreds of CPUs ([ALTIX04] C2–C12,
//! [WILDFIRE01] C7). Each sweeps a list of CPU (thread, process) counts
//! given in its step, runs the points in parallel (each point is
//! independent and seeded, so the output is the same as a serial run) and
//! reports one row per count.

use super::gettimeofday;
use super::keys::{bounded, count_list};
use super::lock_bench::lock_bench;
use super::page_cache_size;
use super::spec as s;
use super::timer_tick;
use super::Sim;
use super::{Run, Workload};
use crate::engine::Dur;
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::locking::contention::{AnonFault, ContentionKnobs, Devzero, Hugetlb};
use crate::kernel::mm::hugetlb;
use crate::kernel::mm::memory::{self, FaultThread, Scope};
use crate::machine::Machine;
use crate::report::Record;
use rayon::prelude::*;
use serde_json::json;

/// A count or a list of counts under `key`, each 1..=the machine's CPUs.
pub(crate) fn counts(
    r: &mut TableReader,
    key: &'static str,
    machine: &Machine,
    default: Option<u64>,
) -> Result<Vec<u64>, InputError> {
    let total = machine.cpu_count();
    let list = match (count_list(r, key)?, default) {
        (Some(l), _) => l,
        (None, Some(d)) => vec![d],
        (None, None) => {
            return Err(InputError::at(
                r.key(key),
                format!("missing: how many, e.g. {key} = [1, 2, 4] (the machine has {total} CPUs)"),
            ))
        }
    };
    for &n in &list {
        if n == 0 || n > total {
            return Err(InputError::at(
                r.key(key),
                format!("{n}: allowed 1..{total} (the machine's CPUs)"),
            ));
        }
        if n > MAX_SWEEP_CPUS {
            return Err(InputError::at(
                r.key(key),
                format!("{n}: allowed 1..{MAX_SWEEP_CPUS} (docs/contention.md: bounds)"),
            ));
        }
    }
    // Each count is a simulation of its own: the list is bounded as a
    // whole too (a list of 1000 × 512 ran for minutes).
    if list.len() > MAX_SWEEP_POINTS {
        return Err(InputError::at(
            r.key(key),
            format!(
                "{} counts: allowed at most {MAX_SWEEP_POINTS} in one sweep (docs/contention.md: \
                 bounds)",
                list.len()
            ),
        ));
    }
    let sum: u64 = list.iter().sum(); // <= 64 counts of <= 16384 each
    if sum > MAX_SWEEP_CPUS {
        return Err(InputError::at(
            r.key(key),
            format!(
                "the counts add up to {sum} simulated CPUs: allowed at most {MAX_SWEEP_CPUS} in \
                 one sweep (docs/contention.md: bounds)"
            ),
        ));
    }
    Ok(list)
}

/// The most counts one sweep list holds (the experiments hold at most 10).
pub const MAX_SWEEP_POINTS: usize = 64;

/// Bounds on simulated work, checked at load time so no step runs for
/// minutes (docs/contention.md: bounds).
pub const MAX_SWEEP_CPUS: u64 = 16384;

/// The most lock hand-offs one `spinlock` step simulates: 2²⁴ take about
/// two seconds (docs/contention.md: bounds).
pub const MAX_SPINLOCK_HANDOFFS: u128 = 1 << 24;

/// The most huge-page faults one `hugetlb` step simulates (pages of the
/// mapping × its CPU counts): 2²² take about two seconds (docs/contention.md:
/// bounds).
pub const MAX_HUGETLB_FAULTS: u128 = 1 << 22;

/// Refuse a `hugetlb` step whose mapping is too many huge pages to
/// simulate: named under `kernel.hugepagesz` where the page size was
/// changed from the architecture's default, else under the step's `size`.
pub fn check_hugetlb_cost(
    cpus: &[u64],
    size: u64,
    machine: &Machine,
    knobs: &crate::kernel::locking::contention::ContentionKnobs,
) -> Result<(), InputError> {
    let hpage = knobs.hugepagesz.max(1);
    let pages = size.div_ceil(hpage) as u128;
    let faults = pages * cpus.len().max(1) as u128;
    if faults <= MAX_HUGETLB_FAULTS {
        return Ok(());
    }
    let default = crate::kernel::locking::contention::ContentionKnobs::defaults(machine).hugepagesz;
    let key = if hpage != default {
        "kernel.hugepagesz"
    } else {
        "size"
    };
    let fmt = crate::input::size::format_size;
    Err(InputError::at(
        key,
        format!(
            "a {} mapping in {} huge pages is {pages} pages, × {} CPU count(s) = {faults} \
             huge-page faults to simulate: allowed at most {MAX_HUGETLB_FAULTS} (docs/contention.md: \
             bounds); raise kernel.hugepagesz or lower the step's size",
            fmt(size),
            fmt(hpage),
            cpus.len()
        ),
    ))
}

/// Refuse a step whose simulated work, `work` in the units of `what`,
/// exceeds `max`.
fn work_bound(
    r: &TableReader,
    key: &str,
    work: u128,
    max: u128,
    what: &str,
) -> Result<(), InputError> {
    if work > max {
        return Err(InputError::at(
            r.key(key),
            format!("{what} = {work}: allowed at most {max} (docs/contention.md: bounds)"),
        ));
    }
    Ok(())
}

fn positive_u64(r: &mut TableReader, key: &'static str, d: u64) -> Result<u64, InputError> {
    bounded(r, key, d, 1, 1_000_000)
}

/// Read a contention step's keys (validation and running share this).
#[derive(Debug, Clone)]
pub enum Step {
    Tick {
        cpus: Vec<u64>,
    },
    Gtod {
        threads: Vec<u64>,
        calls: u64,
    },
    Fault {
        threads: Vec<u64>,
        bytes: u64,
        sample: u64,
    },
    Devzero {
        processes: Vec<u64>,
        bytes: u64,
        sample: u64,
        munmap: bool,
    },
    Hugetlb {
        cpus: Vec<u64>,
        size: u64,
    },
    Pagecache {
        cpus: Vec<u64>,
        ops: u64,
        work_ns: u64,
    },
    Spinlock {
        cpus: u64,
        hold_ns: u64,
        think_ns: u64,
        duration_us: u64,
    },
}

impl Step {
    /// The step of workload `name`, or None if `name` is not one of these.
    pub fn from_step(
        name: &str,
        r: &mut TableReader,
        machine: &Machine,
    ) -> Result<Option<Step>, InputError> {
        let all = machine.cpu_count();
        Ok(Some(match name {
            "tick" => Step::Tick {
                cpus: counts(r, "cpus", machine, Some(all))?,
            },
            "gettimeofday" => {
                let threads = counts(r, "threads", machine, None)?;
                let calls = bounded(r, "calls", 200, 1, 100_000)?;
                // No work bound on `calls`: beyond a window of thread-calls
                // the model samples (workload/gettimeofday.rs).
                Step::Gtod { threads, calls }
            }
            "fault-touch" | "devzero" => {
                let key = if name == "devzero" {
                    "processes"
                } else {
                    "threads"
                };
                let list = counts(r, key, machine, None)?;
                let bytes = r.size("bytes")?.ok_or_else(|| {
                    InputError::at(r.key("bytes"), "missing: how much memory, e.g. \"96 GB\"")
                })?;
                let per = if name == "devzero" {
                    bytes as u128 * *list.iter().max().unwrap_or(&1) as u128
                } else {
                    bytes as u128
                };
                if per > machine.mem_bytes() as u128 {
                    return Err(InputError::at(
                        r.key("bytes"),
                        format!(
                            "more memory than the machine has ({})",
                            crate::input::size::format_size(machine.mem_bytes())
                        ),
                    ));
                }
                if bytes < machine.page_size {
                    return Err(InputError::at(r.key("bytes"), "less than one page"));
                }
                let sample = positive_u64(r, "sample", memory::DEFAULT_SAMPLE)?;
                // Every count of the sweep is simulated: the work is their sum.
                let n = list.iter().sum::<u64>() as u128;
                match name {
                    // A lock hand-off costs per distance class, not per
                    // waiter (engine/lock.rs), so the work is linear.
                    "devzero" => work_bound(
                        r,
                        "sample",
                        n * sample as u128,
                        1 << 22,
                        "processes (summed over the sweep) × sample",
                    )?,
                    _ => work_bound(
                        r,
                        "sample",
                        n * sample as u128,
                        1 << 20,
                        "threads (summed over the sweep) × sample",
                    )?,
                }
                if name == "devzero" {
                    Step::Devzero {
                        processes: list,
                        bytes,
                        sample,
                        munmap: r.bool("munmap")?.unwrap_or(false),
                    }
                } else {
                    Step::Fault {
                        threads: list,
                        bytes,
                        sample,
                    }
                }
            }
            "hugetlb" => {
                let size = r.size("size")?.ok_or_else(|| {
                    InputError::at(
                        r.key("size"),
                        "missing: the mapping's size, e.g. \"100 GB\"",
                    )
                })?;
                if size > machine.mem_bytes() || size == 0 {
                    return Err(InputError::at(
                        r.key("size"),
                        format!(
                            "allowed 1 byte .. the machine's memory ({})",
                            crate::input::size::format_size(machine.mem_bytes())
                        ),
                    ));
                }
                Step::Hugetlb {
                    cpus: counts(r, "cpus", machine, None)?,
                    size,
                }
            }
            "pagecache-count" => {
                let cpus = counts(r, "cpus", machine, None)?;
                let ops = bounded(r, "ops", 100, 1, 100_000)?;
                // Each CPU's every operation is simulated: 4096 × 1000 took 1.8 s.
                let work = cpus.iter().sum::<u64>() as u128 * ops as u128;
                work_bound(r, "ops", work, 1 << 22, "the counts of cpus (summed) × ops")?;
                Step::Pagecache {
                    cpus,
                    ops,
                    work_ns: bounded(r, "work_ns", 2000, 0, 1_000_000_000)?,
                }
            }
            "spinlock" => {
                let step = Step::Spinlock {
                    cpus: counts(r, "cpus", machine, Some(all))?
                        .into_iter()
                        .max()
                        .unwrap_or(all),
                    hold_ns: bounded(r, "hold_ns", 200, 0, 1_000_000_000)?,
                    think_ns: bounded(r, "think_ns", 0, 0, 1_000_000_000)?,
                    duration_us: bounded(r, "duration_us", 10_000, 1, 1_000_000)?,
                };
                if let Step::Spinlock {
                    cpus,
                    duration_us,
                    hold_ns,
                    ..
                } = step
                {
                    // Each grant holds the lock `hold_ns` after its line
                    // moved at least one local transfer, so the hand-offs
                    // (the work, about 0.13 µs each) are at most the CPUs'
                    // first ones plus the window over that; waiters cost
                    // per distance class, not per waiter (engine/lock.rs).
                    let local = machine.line_transfer_ns(0, 0).max(1.0) as u128;
                    let handoffs =
                        cpus as u128 + duration_us as u128 * 1000 / (hold_ns as u128 + local);
                    work_bound(
                        r,
                        "duration_us",
                        handoffs,
                        MAX_SPINLOCK_HANDOFFS,
                        &format!(
                            "lock hand-offs, at most cpus + duration_us × 1000 / (hold_ns + \
                             a local line transfer of {local} ns)"
                        ),
                    )?;
                }
                step
            }
            _ => return Ok(None),
        }))
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let machine = &sim.case.machine;
        let knobs = &sim.case.kernel.contention;
        let seed = sim.case.seed;
        Ok(match self {
            Step::Tick { cpus } => {
                let res: Vec<_> = cpus
                    .par_iter()
                    .map(|&n| timer_tick::simulate(machine, knobs, n, seed))
                    .collect();
                let mut out = Vec::new();
                for (&n, r) in cpus.iter().zip(res) {
                    let row = [("cpus", json!(n))];
                    out.push(rec.record(
                        &row,
                        "tick_work_fraction",
                        "fraction",
                        r.tick_work_fraction,
                    ));
                    out.push(rec.record(
                        &row,
                        "forward_progress",
                        "fraction",
                        1.0 - r.tick_work_fraction,
                    ));
                    out.push(rec.record(&row, "boots", "flag", f64::from(u8::from(r.boots))));
                }
                out
            }
            Step::Gtod { threads, calls } => {
                let mut pts = threads.clone();
                pts.push(1);
                let res: Vec<_> = pts
                    .par_iter()
                    .map(|&n| gettimeofday::simulate(machine, knobs.gettimeofday, n, *calls, seed))
                    .collect();
                let one = res.last().expect("pushed").time_per_call_ns;
                let mut out = Vec::new();
                for (&n, r) in threads.iter().zip(&res) {
                    let row = [("threads", json!(n))];
                    out.push(rec.record(&row, "time_per_call_ns", "ns", r.time_per_call_ns));
                    out.push(rec.record(&row, "slowdown_vs_one", "x", r.time_per_call_ns / one));
                    out.push(rec.record(
                        &row,
                        "cmpxchg_attempts_per_call",
                        "count",
                        r.attempts_per_call,
                    ));
                    // Only a sampled run says so (run::windowed_runs warns).
                    if let Some(w) = r.windowed_calls {
                        out.push(rec.record(&row, "windowed_calls", "count", w as f64));
                        out.push(rec.record(
                            &row,
                            "starved_callers",
                            "count",
                            r.starved_callers as f64,
                        ));
                    }
                }
                out
            }
            Step::Fault {
                threads,
                bytes,
                sample,
            } => {
                let booted = sim.booted()?.clone();
                let res: Vec<_> = threads
                    .par_iter()
                    .map(|&n| anon_touch(machine, knobs, &booted, n, *bytes, *sample, seed))
                    .collect();
                let mut out = Vec::new();
                for (&n, r) in threads.iter().zip(res) {
                    let (run, faults) = r?;
                    let row = [("threads", json!(n))];
                    out.push(rec.record(&row, "touch_time_s", "s", run.time_s));
                    out.push(rec.record(
                        &row,
                        "lock_wait_fraction",
                        "fraction",
                        run.lock_wait_fraction,
                    ));
                    out.push(rec.record(&row, "faults_per_s", "1/s", faults as f64 / run.time_s));
                }
                out
            }
            Step::Devzero {
                processes,
                bytes,
                sample,
                munmap,
            } => {
                let booted = sim.booted()?.clone();
                let res: Vec<_> = processes
                    .par_iter()
                    .map(|&n| {
                        let mine = devzero(
                            machine,
                            knobs.devzero,
                            knobs,
                            &booted,
                            n,
                            (*bytes, *munmap),
                            *sample,
                            seed,
                        )?;
                        let base = if knobs.devzero == Devzero::Altix {
                            Some(devzero(
                                machine,
                                Devzero::V24,
                                knobs,
                                &booted,
                                n,
                                (*bytes, false),
                                *sample,
                                seed,
                            )?)
                        } else {
                            None
                        };
                        Ok::<_, Error>((mine, base))
                    })
                    .collect();
                let mut out = Vec::new();
                for (&n, r) in processes.iter().zip(res) {
                    let (mine, base) = r?;
                    let row = [("processes", json!(n))];
                    out.push(rec.record(&row, "faults_per_s", "1/s", mine));
                    if let Some(b) = base {
                        out.push(rec.record(&row, "improvement", "x", mine / b));
                    }
                }
                out
            }
            Step::Hugetlb { cpus, size } => {
                let booted = sim.booted()?.clone();
                let mut pts = cpus.clone();
                pts.push(1);
                let res: Vec<_> = pts
                    .par_iter()
                    .map(|&n| {
                        hugetlb::simulate(machine, &mut booted.clone(), knobs, n, *size, seed)
                    })
                    .collect();
                let one = res.last().expect("pushed").zero_time_s;
                let mut out = Vec::new();
                for (&n, r) in cpus.iter().zip(&res) {
                    let row = [("cpus", json!(n))];
                    out.push(rec.record(&row, "zero_time_s", "s", r.zero_time_s));
                    out.push(rec.record(&row, "speedup_vs_one", "x", one / r.zero_time_s));
                    out.push(rec.record(&row, "lock_hold_s", "s", r.lock_hold_s));
                    out.push(rec.record(
                        &row,
                        "hugetlb_gb",
                        "GiB",
                        r.bytes as f64 / (1u64 << 30) as f64,
                    ));
                }
                let _ = Hugetlb::Fault;
                out
            }
            Step::Pagecache { cpus, ops, work_ns } => {
                let res: Vec<_> = cpus
                    .par_iter()
                    .map(|&n| {
                        page_cache_size::simulate(machine, knobs.pagecache_count, n, *ops, *work_ns)
                    })
                    .collect();
                let mut out = Vec::new();
                for (&n, r) in cpus.iter().zip(res) {
                    let row = [("cpus", json!(n))];
                    out.push(rec.record(&row, "insertions_per_s", "1/s", r.insertions_per_s));
                    out.push(rec.record(
                        &row,
                        "counter_share_of_time_pct",
                        "%",
                        r.counter_share_of_time_pct,
                    ));
                }
                out
            }
            Step::Spinlock {
                cpus,
                hold_ns,
                think_ns,
                duration_us,
            } => {
                let b = lock_bench(
                    machine,
                    knobs.spinlock,
                    *cpus,
                    *hold_ns,
                    *think_ns,
                    Dur(duration_us * 1000),
                    seed,
                );
                let mut out =
                    vec![rec.record(&[], "acquisitions_per_s", "1/s", b.acquisitions_per_s)];
                let used = machine.cpu_node(cpus - 1).unwrap_or(0) + 1;
                for (n, &(_, w)) in b.per_node.iter().enumerate().take(used) {
                    out.push(rec.record(
                        &[("node", json!(n))],
                        "max_wait_us",
                        "us",
                        w as f64 / 1e3,
                    ));
                }
                out.push(rec.record(&[], "starved_nodes", "count", b.starved_nodes as f64));
                out
            }
        })
    }
}

/// `threads` threads of one process first-touch `bytes` in all, through
/// the path `knobs.anon_fault` names (today's, `per-vma-lock`, with the
/// batches of `knobs`). The run, and the faults.
pub fn anon_touch(
    machine: &Machine,
    knobs: &ContentionKnobs,
    booted: &crate::kernel::boot::Booted,
    threads: u64,
    bytes: u64,
    sample: u64,
    seed: u64,
) -> Result<(memory::FaultRun, u64), Error> {
    let threads = threads.max(1);
    let cpus: Vec<u64> = (0..threads).collect();
    let per = bytes / threads;
    let th = fault_threads(machine, booted, &cpus, per, &[])?;
    let faults = th.iter().map(|t| t.faults).sum();
    // Each variant names a kernel, and its LRU lock comes with it: stock
    // 2.4.21 has one `pagemap_lru_lock`, the Altix kernel per-node lists
    // ([ALTIX04] B2).
    let path = match knobs.anon_fault {
        AnonFault::PageTableLock => memory::anon_ptl(Scope::Global),
        AnonFault::CmpxchgPte => memory::anon_cmpxchg(Scope::PerNode),
        AnonFault::PerVmaLock => memory::anon_batched(memory::Batches::from_knobs(knobs)),
    };
    Ok((
        memory::simulate(machine, &th, &path, knobs.spinlock, sample, seed),
        faults,
    ))
}

/// `processes` processes each fault in a private `bytes` `/dev/zero`
/// mapping under `variant` (and with `munmap`, unmap it in the timed
/// loop); faults per second, all processes together.
#[allow(clippy::too_many_arguments)]
pub fn devzero(
    machine: &Machine,
    variant: Devzero,
    knobs: &ContentionKnobs,
    booted: &crate::kernel::boot::Booted,
    processes: u64,
    (bytes, munmap): (u64, bool),
    sample: u64,
    seed: u64,
) -> Result<f64, Error> {
    let cpus: Vec<u64> = (0..processes).collect();
    // The LRU lock of each kernel: 2.4's global `pagemap_lru_lock`, 2.6's
    // per-zone `lru_lock` (a zone per node here), the Altix kernel's
    // per-node lists ([ALTIX04] B2). The 2.4 kernels (stock and Altix) add
    // and allocate a page at a time; 2.6 and later through per-CPU batches
    // (mm/memory.rs, "Per-CPU batches").
    let (path, setup) = match variant {
        Devzero::V24 | Devzero::Altix if munmap => {
            return Err(InputError::new(format!(
                "munmap = true: the 2.4 fault paths (kernel.devzero = \"{}\") model no unmap; \
                 allowed with kernel.devzero = \"2.6\" or \"anon\"",
                variant.name()
            ))
            .into())
        }
        Devzero::V24 => (
            memory::devzero_fault(true, Scope::Global),
            memory::DEVZERO_SETUP,
        ),
        Devzero::V26 => (
            memory::devzero_batched(true, munmap, memory::Batches::from_knobs(knobs)),
            memory::DEVZERO_SETUP,
        ),
        Devzero::Altix => (memory::devzero_fault(false, Scope::PerNode), &[][..]),
        Devzero::Anon => (
            memory::devzero_batched(false, munmap, memory::Batches::from_knobs(knobs)),
            &[][..],
        ),
    };
    let mut th = fault_threads(machine, booted, &cpus, bytes, setup)?;
    // One process per CPU: each its own `mm` (`mmap_sem`, `page_table_lock`).
    for (i, t) in th.iter_mut().enumerate() {
        t.mm = i;
    }
    let faults: u64 = th.iter().map(|t| t.faults).sum();
    let run = memory::simulate(machine, &th, &path, knobs.spinlock, sample, seed);
    Ok(faults as f64 / run.time_s)
}

fn fault_threads(
    machine: &Machine,
    booted: &crate::kernel::boot::Booted,
    cpus: &[u64],
    bytes_per_thread: u64,
    setup: &'static [memory::Stage],
) -> Result<Vec<FaultThread>, Error> {
    let mut b = booted.clone();
    let page = b.mm.page_size();
    let placed = memory::first_touch(&mut b, machine, cpus, bytes_per_thread, page, 64)
        .ok_or_else(|| InputError::new("the threads' memory does not fit in the machine"))?;
    Ok(FaultThread::on_placements(
        machine, cpus, &placed, page, setup,
    ))
}

/// The reader of each workload of this family.
fn parse(name: &str, r: &mut TableReader, m: &Machine) -> Result<Box<dyn Run>, InputError> {
    super::family_step(name, Step::from_step(name, r, m)?)
}

impl Run for Step {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Step::run(self, sim)
    }
    fn check_cost(
        &self,
        machine: &Machine,
        kernel: &crate::kernel::KernelConfig,
    ) -> Result<(), InputError> {
        match self {
            Step::Hugetlb { cpus, size } => {
                check_hugetlb_cost(cpus, *size, machine, &kernel.contention)
            }
            _ => Ok(()),
        }
    }
}

/// The `tick` workload: its keys, metrics and example, and its reader.
pub const TICK: Workload = Workload {
    spec: s::Spec {
        name: "tick",
        about: "every CPU's timer tick and its shared-line work (profiler, timer adjust)",
        params: &[s::counts(
            "cpus",
            s::Default::Text("every CPU"),
            "CPU counts to sweep",
        )],
        one_of: &[],
        metrics: &[
            s::m(
                "tick_work_fraction",
                "fraction",
                "share of each CPU's time in the tick (row key `cpus`)",
            ),
            s::m("forward_progress", "fraction", "share left to user work"),
            s::m("boots", s::FLAG, "1 if the machine gets through boot"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"tick\"\ncpus = [64, 512]\n",
        row_keys: &[],
    },
    parse: |r, m| parse("tick", r, m),
};

/// The `gettimeofday` workload: its keys, metrics and example, and its reader.
pub const GETTIMEOFDAY: Workload = Workload {
    spec: s::Spec {
        name: "gettimeofday",
        about: "threads call gettimeofday() back to back; contended only with kernel.gettimeofday = \"cmpxchg\" (ia64's default: a shared word), x86's default \"seqcount\" stays flat (the run warns)",
        params: &[
            s::counts("threads", s::Default::Required, "thread counts to sweep"),
            s::p(
                "calls",
                s::Kind::Int,
                "",
                s::Default::Value("200"),
                s::Range::Int(1, 100_000),
                "calls per thread; past 2¹⁷ calls in all, each thread simulates max(2¹⁷ / threads, 8) of them, stopping after 2²⁰ grants of the word's line (a window; `windowed_calls` and `starved_callers` then say so)",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "time_per_call_ns",
                "ns",
                "mean time of one call (row key `threads`)",
            ),
            s::m("slowdown_vs_one", "x", "against one thread"),
            s::m(
                "cmpxchg_attempts_per_call",
                "count",
                "cmpxchg tries per call",
            ),
            s::m(
                "windowed_calls",
                "count",
                "calls each thread simulated, only when fewer than `calls` (a window)",
            ),
            s::m(
                "starved_callers",
                "count",
                "in a window: callers with no call done when the first caller finished its window or the grant budget stopped it (then time_per_call_ns is the window's estimate, time in calls over calls completed)",
            ),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"gettimeofday\"\nthreads = [1, 64]\n",
        row_keys: &[],
    },
    parse: |r, m| parse("gettimeofday", r, m),
};

/// The `fault-touch` workload: its keys, metrics and example, and its reader.
pub const FAULT_TOUCH: Workload = Workload {
    spec: s::Spec {
        name: "fault-touch",
        about: "threads of one process first-touch anonymous memory (mmap_sem, page_table_lock)",
        params: &[
            s::counts("threads", s::Default::Required, "thread counts to sweep"),
            s::p(
                "bytes",
                s::Kind::Size,
                "B",
                s::Default::Required,
                s::Range::Text("one page .. the machine's memory"),
                "memory the process touches, split over its threads",
            ),
            s::p(
                "sample",
                s::Kind::Int,
                "faults",
                s::Default::Value("64"),
                s::Range::Int(1, 1_000_000),
                "faults simulated per thread; threads (summed over the sweep) × sample ≤ 2²⁰",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "touch_time_s",
                "s",
                "time to touch it all (row key `threads`)",
            ),
            s::m(
                "lock_wait_fraction",
                "fraction",
                "share of time waiting for locks",
            ),
            s::m("faults_per_s", "1/s", "page faults per second"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"fault-touch\"\nthreads = [1, 32]\nbytes = \"16 GB\"\n",
        row_keys: &[],
    },
    parse: |r, m| parse("fault-touch", r, m),
};

/// The `devzero` workload: its keys, metrics and example, and its reader.
pub const DEVZERO: Workload = Workload {
    spec: s::Spec {
        name: "devzero",
        about: "one process per CPU faults in a private /dev/zero mapping (superblock lock)",
        params: &[
            s::counts("processes", s::Default::Required, "process counts to sweep"),
            s::p(
                "bytes",
                s::Kind::Size,
                "B",
                s::Default::Required,
                s::Range::Text("one page .. memory / processes"),
                "each process's mapping",
            ),
            s::p(
                "sample",
                s::Kind::Int,
                "faults",
                s::Default::Value("64"),
                s::Range::Int(1, 1_000_000),
                "faults simulated per process; processes (summed over the sweep) × sample ≤ 2²²",
            ),
            s::p(
                "munmap",
                s::Kind::Bool,
                "",
                s::Default::Value("false"),
                s::Range::Any,
                "each process also unmaps its mapping in the timed loop (will-it-scale page_fault2); `kernel.devzero` 2.6 or anon",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "faults_per_s",
                "1/s",
                "page faults per second (row key `processes`)",
            ),
            s::m(
                "improvement",
                "x",
                "against the 2.4 kernel on the same count",
            ),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"devzero\"\nprocesses = [1, 16]\nbytes = \"1 GB\"\n",
        row_keys: &[],
    },
    parse: |r, m| parse("devzero", r, m),
};

/// The `hugetlb` workload: its keys, metrics and example, and its reader.
pub const HUGETLB: Workload = Workload {
    spec: s::Spec {
        name: "hugetlb",
        about: "map huge pages and zero them: prefault in one thread or on fault in parallel",
        params: &[
            s::p(
                "size",
                s::Kind::Size,
                "B",
                s::Default::Required,
                s::Range::Text("1 byte .. the machine's memory"),
                "the mapping",
            ),
            s::counts("cpus", s::Default::Required, "CPU counts to sweep"),
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "zero_time_s",
                "s",
                "time to zero the mapping (row key `cpus`)",
            ),
            s::m("speedup_vs_one", "x", "against one CPU"),
            s::m("lock_hold_s", "s", "time the hugetlb lock is held"),
            s::m("hugetlb_gb", "GiB", "huge pages mapped"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"hugetlb\"\nsize = \"10 GB\"\ncpus = [1, 8]\n",
        row_keys: &[],
    },
    parse: |r, m| parse("hugetlb", r, m),
};

/// The `pagecache-count` workload: its keys, metrics and example, and its reader.
pub const PAGECACHE_COUNT: Workload = Workload {
    spec: s::Spec {
        name: "pagecache-count",
        about: "CPUs insert and remove page-cache pages, updating the page count",
        params: &[
            s::counts("cpus", s::Default::Required, "CPU counts to sweep"),
            s::p(
                "ops",
                s::Kind::Int,
                "",
                s::Default::Value("100"),
                s::Range::Int(1, 100_000),
                "insertions per CPU; cpus (summed over the sweep) × ops ≤ 2²²",
            ),
            s::p(
                "work_ns",
                s::Kind::Int,
                "ns",
                s::Default::Value("2000"),
                s::Range::Int(0, 1_000_000_000),
                "other work per insertion",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m("insertions_per_s", "1/s", "machine-wide (row key `cpus`)"),
            s::m(
                "counter_share_of_time_pct",
                "%",
                "time spent on the counter's line",
            ),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"pagecache-count\"\ncpus = [1, 64]\n",
        row_keys: &[],
    },
    parse: |r, m| parse("pagecache-count", r, m),
};

/// The `spinlock` workload: its keys, metrics and example, and its reader.
pub const SPINLOCK: Workload = Workload {
    spec: s::Spec {
        name: "spinlock",
        about: "every CPU loops on one spinlock with a short critical section",
        params: &[
            s::counts(
                "cpus",
                s::Default::Text("every CPU"),
                "contending CPUs (the largest count given)",
            ),
            s::p(
                "hold_ns",
                s::Kind::Int,
                "ns",
                s::Default::Value("200"),
                s::Range::Int(0, 1_000_000_000),
                "critical section",
            ),
            s::p(
                "think_ns",
                s::Kind::Int,
                "ns",
                s::Default::Value("0"),
                s::Range::Int(0, 1_000_000_000),
                "time between acquisitions",
            ),
            s::p(
                "duration_us",
                s::Kind::Int,
                "us",
                s::Default::Value("10000"),
                s::Range::Int(1, 1_000_000),
                "simulated time; cpus + duration_us × 1000 / (hold_ns + a local line transfer) ≤ 2²⁴ lock hand-offs",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m("acquisitions_per_s", "1/s", "machine-wide"),
            s::m("max_wait_us", "us", "longest wait (row key `node`)"),
            s::m("starved_nodes", "count", "nodes that never got the lock"),
        ],
        example_machine: "wildfire-gs320",
        example_kernel: "",
        example: "workload = \"spinlock\"\nduration_us = 1000\n",
        row_keys: &["node"],
    },
    parse: |r, m| parse("spinlock", r, m),
};
