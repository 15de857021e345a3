//! Scheduler workloads ([ALTIX04] E1–E3, [WILDFIRE01] E4): a
//! fork/exit/wake loop, an early boot with idle CPUs balancing, the
//! balance loop's peek at every run queue, and an AIM VII-like
//! multi-user mix. Each sweeps the counts its step lists; the points are
//! independent and seeded, so they run in parallel with the same output
//! as a serial run.

use super::aim7::{self, Mix};
use super::keys::{self, count_list};
use super::spec as s;
use super::Sim;
use super::{boot_balance, sched_ops};
use super::{Run, Workload};
use crate::engine::Dur;
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::sched::fair;
use crate::kernel::sched::trace::Trace;
use crate::machine::Machine;
use crate::report::{Artifact, Record};
use rayon::prelude::*;
use serde_json::json;
use toml::Value;

/// Most CPUs a scheduler sweep simulates (docs/sched.md: bounds).
pub const MAX_SCHED_CPUS: u64 = 16_384;
/// Most tasks of the multi-user mix.
pub const MAX_TASKS: u64 = 20_000;
/// Runs of up to this many tasks write a schedule trace with `--out`
/// (larger ones are unreadable in a trace viewer).
pub const TRACE_MAX_TASKS: u64 = 64;

/// A count or a list of counts under `key`, each in `lo..=hi`.
fn counts(
    r: &mut TableReader,
    key: &'static str,
    default: Option<u64>,
    hi: u64,
    what: &str,
) -> Result<Vec<u64>, InputError> {
    if let Some(Value::Integer(i)) = r.raw(key) {
        if *i <= 0 {
            return Err(InputError::at(r.key(key), format!("{i}: allowed 1..{hi}")));
        }
    }
    let list = match (count_list(r, key)?, default) {
        (Some(l), _) => l,
        (None, Some(d)) => vec![d],
        (None, None) => {
            return Err(InputError::at(
                r.key(key),
                format!("missing: how many {what}, e.g. {key} = [1, 8]"),
            ))
        }
    };
    for &n in &list {
        if n == 0 || n > hi {
            return Err(InputError::at(
                r.key(key),
                format!("{n}: allowed 1..{hi} ({what})"),
            ));
        }
    }
    // Each count is a run of its own; the work bounds below add them up.
    if list.len() > super::contention::MAX_SWEEP_POINTS {
        return Err(InputError::at(
            r.key(key),
            format!(
                "{} counts: allowed at most {} in one sweep (docs/sched.md: bounds)",
                list.len(),
                super::contention::MAX_SWEEP_POINTS
            ),
        ));
    }
    Ok(list)
}

/// [`keys::bounded`], a negative integer named as out of range like any
/// other (`-1: allowed 1..1000`).
fn bounded(
    r: &mut TableReader,
    key: &'static str,
    d: u64,
    lo: u64,
    hi: u64,
) -> Result<u64, InputError> {
    if let Some(Value::Integer(i)) = r.raw(key) {
        if *i < 0 {
            return Err(InputError::at(
                r.key(key),
                format!("{i}: allowed {lo}..{hi}"),
            ));
        }
    }
    keys::bounded(r, key, d, lo, hi)
}

fn ratio(
    r: &mut TableReader,
    key: &'static str,
    d: f64,
    lo: f64,
    hi: f64,
) -> Result<f64, InputError> {
    match r.f64(key)? {
        Some(v) if !(lo..=hi).contains(&v) || !v.is_finite() => Err(InputError::at(
            r.key(key),
            format!("{v}: allowed {lo}..{hi}"),
        )),
        Some(v) => Ok(v),
        None => Ok(d),
    }
}

/// Machine CPUs, capped by the sweep bound.
fn cpu_cap(machine: &Machine) -> u64 {
    machine.cpu_count().min(MAX_SCHED_CPUS)
}

#[derive(Debug, Clone)]
pub enum Step {
    Ops {
        cpus: Vec<u64>,
        tasks_per_cpu: u64,
        work_ns: u64,
        duration_us: u64,
    },
    Boot {
        cpus: Vec<u64>,
        busy_cpus: u64,
        pinned: u64,
        window_ms: u64,
    },
    Peek {
        cpus: Vec<u64>,
        other_pages: u64,
    },
    Aim7 {
        tasks: Vec<u64>,
        mix: Mix,
        warmup_s: f64,
        measure_s: f64,
    },
}

impl Step {
    pub fn from_step(
        name: &str,
        r: &mut TableReader,
        machine: &Machine,
    ) -> Result<Option<Step>, InputError> {
        let cap = cpu_cap(machine);
        Ok(Some(match name {
            "sched-ops" => {
                let cpus = counts(r, "cpus", None, cap, "CPUs: the machine's")?;
                let tasks_per_cpu = bounded(r, "tasks_per_cpu", 2, 1, 1000)?;
                let work_ns = bounded(r, "work_ns", 5000, 0, 1_000_000_000)?;
                let duration_us = bounded(r, "duration_us", 2000, 1, 1_000_000)?;
                // Every count of the sweep runs: the work is their sum.
                let most = cpus.iter().sum::<u64>() as u128;
                if most * duration_us as u128 > 100_000_000 {
                    return Err(InputError::at(
                        r.key("duration_us"),
                        format!(
                            "cpus (summed over the sweep) × duration_us = {}: allowed at most \
                             10⁸ (docs/sched.md: bounds)",
                            most * duration_us as u128
                        ),
                    ));
                }
                Step::Ops {
                    cpus,
                    tasks_per_cpu,
                    work_ns,
                    duration_us,
                }
            }
            "boot-balance" => {
                let cpus = counts(
                    r,
                    "cpus",
                    Some(machine.cpu_count().min(cap)),
                    cap,
                    "CPUs: the machine's",
                )?;
                let busy_cpus = bounded(r, "busy_cpus", 1, 1, cap)?;
                let pinned = bounded(r, "pinned", 2, 0, cap)?;
                let window_ms = bounded(r, "window_ms", 100, 10, 10_000)?;
                let least = *cpus.iter().min().unwrap_or(&1);
                if busy_cpus >= least {
                    return Err(InputError::at(
                        r.key("busy_cpus"),
                        format!("{busy_cpus}: must leave idle CPUs (smallest `cpus` is {least})"),
                    ));
                }
                if pinned > least {
                    return Err(InputError::at(
                        r.key("pinned"),
                        format!("{pinned} pinned tasks: more than the CPUs ({least})"),
                    ));
                }
                let most = cpus.iter().sum::<u64>() as u128;
                if most * window_ms as u128 > 10_000_000 {
                    return Err(InputError::at(
                        r.key("window_ms"),
                        format!(
                            "cpus (summed over the sweep) × window_ms = {}: allowed at most 10⁷ \
                             (docs/sched.md: bounds)",
                            most * window_ms as u128
                        ),
                    ));
                }
                Step::Boot {
                    cpus,
                    busy_cpus,
                    pinned,
                    window_ms,
                }
            }
            "rq-peek" => Step::Peek {
                cpus: counts(r, "cpus", None, cap, "CPUs: the machine's")?,
                other_pages: bounded(r, "other_pages", u64::from(machine.tlb.entries), 0, 1 << 20)?,
            },
            "aim7" => {
                let tasks = counts(r, "tasks", None, MAX_TASKS, "tasks")?;
                let cpu_ms = ratio(r, "cpu_ms", 70.0, 0.001, 1e6)?;
                let io_ms = ratio(r, "io_ms", 140.0, 0.0, 1e6)?;
                let waits = bounded(r, "waits", 12, 1, 10_000)?;
                let mem_stall_pct = ratio(r, "mem_stall_pct", 20.0, 0.0, 100.0)?;
                let task_mb = ratio(r, "task_mb", 0.0, 0.0, 1e6)?;
                let counters = match r.str("goodness")? {
                    None | Some("affinity") => false,
                    Some("counter") => true,
                    Some(other) => {
                        return Err(InputError::at(
                            r.key("goodness"),
                            format!("{other:?}: allowed \"affinity\", \"counter\""),
                        ))
                    }
                };
                let walk_conflicts = match r.str("walk_cache")? {
                    None | Some("hit") => false,
                    Some("direct-mapped") => true,
                    Some(other) => {
                        return Err(InputError::at(
                            r.key("walk_cache"),
                            format!("{other:?}: allowed \"hit\", \"direct-mapped\""),
                        ))
                    }
                };
                let task_bytes = (task_mb * (1u64 << 20) as f64).round() as u64;
                let most = tasks.iter().copied().max().unwrap_or(0);
                if most.saturating_mul(task_bytes) > machine.mem_bytes() {
                    return Err(InputError::at(
                        r.key("task_mb"),
                        format!(
                            "{most} tasks × {task_mb} MiB = {:.1} GiB: allowed at most the machine's {:.1} GiB in all (past it 2.4 swaps, which this workload does not model)",
                            (most as f64) * task_mb / 1024.0,
                            machine.mem_bytes() as f64 / (1u64 << 30) as f64
                        ),
                    ));
                }
                let warmup_s = ratio(r, "warmup_s", 5.0, 0.0, 3600.0)?;
                let measure_s = ratio(r, "measure_s", 10.0, 0.01, 3600.0)?;
                // Events grow with jobs: ~ tasks × window / job time.
                let job_s = (cpu_ms + io_ms) / 1e3;
                let cpus = machine.cpu_count() as f64;
                // Every count of the sweep runs: its bursts add up.
                let bursts: f64 = tasks
                    .iter()
                    .map(|&t| {
                        (warmup_s + measure_s)
                            * (t as f64 / job_s).min(cpus / (cpu_ms / 1e3))
                            * waits as f64
                    })
                    .sum();
                if bursts > 5e7 {
                    return Err(InputError::at(
                        r.key("measure_s"),
                        format!("about {bursts:.0} bursts to simulate: allowed at most 5×10⁷ (docs/sched.md: bounds)"),
                    ));
                }
                Step::Aim7 {
                    tasks,
                    mix: Mix {
                        cpu_ns: cpu_ms * 1e6,
                        io_ns: io_ms * 1e6,
                        waits,
                        mem_stall: mem_stall_pct / 100.0,
                        task_bytes,
                        walk_conflicts,
                        counters,
                    },
                    warmup_s,
                    measure_s,
                }
            }
            _ => return Ok(None),
        }))
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let machine = &sim.case.machine;
        let knobs = &sim.case.kernel.sched;
        let spin = sim.case.kernel.contention.spinlock;
        let seed = sim.case.seed;
        let mut out = Vec::new();
        match self {
            Step::Ops {
                cpus,
                tasks_per_cpu,
                work_ns,
                duration_us,
            } => {
                let res: Vec<_> = cpus
                    .par_iter()
                    .map(|&n| {
                        sched_ops::sched_ops(
                            machine,
                            knobs.runqueue,
                            spin,
                            n,
                            *tasks_per_cpu,
                            *work_ns,
                            Dur(duration_us * 1000),
                            seed,
                        )
                    })
                    .collect();
                for (&n, r) in cpus.iter().zip(res) {
                    let row = [("cpus", json!(n))];
                    out.push(rec.record(&row, "sched_ops_per_s", "1/s", r.sched_ops_per_s));
                    out.push(rec.record(
                        &row,
                        "lock_wait_fraction",
                        "fraction",
                        r.lock_wait_fraction,
                    ));
                }
            }
            Step::Boot {
                cpus,
                busy_cpus,
                pinned,
                window_ms,
            } => {
                let res: Vec<_> = cpus
                    .par_iter()
                    .map(|&n| {
                        boot_balance::boot_balance(
                            machine,
                            knobs,
                            spin,
                            n,
                            *busy_cpus,
                            *pinned,
                            Dur(window_ms * 1_000_000),
                            seed,
                        )
                    })
                    .collect();
                for (&n, r) in cpus.iter().zip(res) {
                    let row = [("cpus", json!(n))];
                    out.push(rec.record(
                        &row,
                        "busy_cpu_lock_share_pct",
                        "%",
                        r.busy_cpu_lock_share_pct,
                    ));
                    out.push(rec.record(&row, "livelock", "flag", f64::from(u8::from(r.livelock))));
                    out.push(rec.record(&row, "boot_progress", "fraction", r.boot_progress));
                    out.push(rec.record(&row, "max_wait_us", "us", r.max_wait_us));
                    out.push(rec.record(
                        &row,
                        "balance_attempts_per_s",
                        "1/s",
                        r.balance_attempts_per_s,
                    ));
                }
            }
            Step::Peek { cpus, other_pages } => {
                for &n in cpus {
                    let r = fair::peek_all(machine, knobs.rq_layout, n, *other_pages, seed);
                    let row = [("cpus", json!(n))];
                    out.push(rec.record(&row, "peek_all_us", "us", r.peek_all_us));
                    out.push(rec.record(&row, "tlb_misses", "count", r.tlb_misses as f64));
                    out.push(rec.record(&row, "cache_misses", "count", r.cache_misses as f64));
                }
            }
            Step::Aim7 {
                tasks,
                mix,
                warmup_s,
                measure_s,
            } => {
                let traced = sim.artifacts.is_some();
                let res: Vec<_> = tasks
                    .par_iter()
                    .map(|&n| {
                        let mut trace = (traced && n <= TRACE_MAX_TASKS).then(Trace::default);
                        let r = aim7::aim7(
                            machine,
                            knobs.sched,
                            spin,
                            mix,
                            n,
                            Dur::from_secs_f64(*warmup_s),
                            Dur::from_secs_f64(*measure_s),
                            seed,
                            trace.as_mut(),
                        );
                        (r, trace)
                    })
                    .collect();
                let queues = match knobs.sched {
                    crate::kernel::sched::Sched::Smp => 1,
                    crate::kernel::sched::Sched::Numa => machine.node_count(),
                };
                for (&n, (r, trace)) in tasks.iter().zip(res) {
                    let row = [("tasks", json!(n))];
                    out.push(rec.record(&row, "jobs_per_min", "1/min", r.jobs_per_min));
                    out.push(rec.record(
                        &row,
                        "jobs_per_min_per_task",
                        "1/min",
                        r.jobs_per_min / n as f64,
                    ));
                    out.push(rec.record(&row, "lock_share_pct", "%", 100.0 * r.lock_fraction));
                    out.push(rec.record(&row, "local_bursts_pct", "%", 100.0 * r.local_fraction));
                    out.push(rec.record(&row, "migrations", "count", r.migrations as f64));
                    out.push(rec.record(&row, "mean_walk", "tasks", r.mean_walk));
                    out.push(rec.record(&row, "spilled_pct", "%", 100.0 * r.spilled_fraction));
                    if let (Some(tr), Some(files)) = (trace, sim.artifacts.as_mut()) {
                        let mut case = rec.keys().to_vec();
                        case.push(("tasks".into(), json!(n)));
                        let title = format!("{}: {} tasks, {} queue(s)", sim.experiment, n, queues);
                        files.push(Artifact {
                            case: case.clone(),
                            kind: "sched-trace.json".into(),
                            content: tr.to_chrome_json(&title),
                            name_at: None,
                        });
                        let (svg, at) = crate::report::timeline::runqueue_svg(&tr, &title, queues);
                        files.push(Artifact {
                            case,
                            kind: "runqueue.svg".into(),
                            content: svg,
                            name_at: Some(at),
                        });
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The reader of each workload of this family.
fn parse(name: &str, r: &mut TableReader, m: &Machine) -> Result<Box<dyn Run>, InputError> {
    super::family_step(name, Step::from_step(name, r, m)?)
}

impl Run for Step {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Step::run(self, sim)
    }
}

/// The `sched-ops` workload: its keys, metrics and example, and its reader.
pub const SCHED_OPS: Workload = Workload {
    spec: s::Spec {
        name: "sched-ops",
        about:
            "every CPU loops: user work, then fork, wake or exit, then schedule() (run-queue locks)",
        params: &[
            s::p(
                "cpus",
                s::Kind::Counts,
                "",
                s::Default::Required,
                s::Range::Text("1 .. min(the machine's CPUs, 16384); at most 64 counts"),
                "CPU counts to sweep",
            ),
            s::p(
                "tasks_per_cpu",
                s::Kind::Int,
                "",
                s::Default::Value("2"),
                s::Range::Int(1, 1000),
                "runnable tasks per CPU (what 2.4's goodness() walks)",
            ),
            s::p(
                "work_ns",
                s::Kind::Int,
                "ns",
                s::Default::Value("5000"),
                s::Range::Int(0, 1_000_000_000),
                "user work between operations",
            ),
            s::p(
                "duration_us",
                s::Kind::Int,
                "us",
                s::Default::Value("2000"),
                s::Range::Int(1, 1_000_000),
                "simulated time; cpus (summed over the sweep) × duration_us ≤ 10⁸",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "sched_ops_per_s",
                "1/s",
                "fork, exit, wake and schedule() calls per second (row key `cpus`)",
            ),
            s::m(
                "lock_wait_fraction",
                "fraction",
                "share of CPU time spent waiting for run-queue locks",
            ),
        ],
        example_machine: "altix-512",
        example_kernel: "runqueue = \"global\"\n",
        example: "workload = \"sched-ops\"\ncpus = [2, 16]\n",
        row_keys: &[],
    },
    parse: |r, m| parse("sched-ops", r, m),
};

/// The `boot-balance` workload: its keys, metrics and example, and its reader.
pub const BOOT_BALANCE: Workload = Workload {
    spec: s::Spec {
            name: "boot-balance",
            about: "early boot: a few busy CPUs with pinned tasks, the rest idle and load-balancing against them",
            params: &[
                s::p("cpus", s::Kind::Counts, "", s::Default::Text("every CPU"), s::Range::Text("2 .. min(the machine's CPUs, 16384); at most 64 counts"), "CPU counts to sweep"),
                s::p("busy_cpus", s::Kind::Int, "", s::Default::Value("1"), s::Range::Text("1 .. the smallest `cpus` − 1"), "CPUs running boot work (the first ones)"),
                s::p("pinned", s::Kind::Int, "", s::Default::Value("2"), s::Range::Text("0 .. the smallest `cpus`"), "pinned tasks queued on the busy CPU besides the boot thread"),
                s::p("window_ms", s::Kind::Int, "ms", s::Default::Value("100"), s::Range::Int(10, 10_000), "simulated boot window (the first quarter is not measured); cpus (summed over the sweep) × window_ms ≤ 10⁷"),
            ],
            one_of: &[],
            metrics: &[
                s::m("busy_cpu_lock_share_pct", "%", "share of time the busy CPU is not waiting for its own run-queue lock (row key `cpus`)"),
                s::m("livelock", s::FLAG, "1 if the busy CPU waits longer than one tick for its own lock"),
                s::m("boot_progress", "fraction", "share of the busy CPU's time left to boot work"),
                s::m("max_wait_us", "us", "longest wait of the busy CPU for its own lock"),
                s::m("balance_attempts_per_s", "1/s", "load_balance() attempts that took the busiest lock"),
            ],
            example_machine: "altix-512",
            example_kernel: "balance_backoff = \"progressive\"\n",
            example: "workload = \"boot-balance\"\ncpus = [64, 128]\n",
            row_keys: &[],
    },
    parse: |r, m| parse("boot-balance", r, m),
};

/// The `rq-peek` workload: its keys, metrics and example, and its reader.
pub const RQ_PEEK: Workload = Workload {
    spec: s::Spec {
            name: "rq-peek",
            about: "one CPU reads every CPU's nr_running and cpu_load, as the balance loop does (TLB and cache)",
            params: &[
                s::p("cpus", s::Kind::Counts, "", s::Default::Required, s::Range::Text("1 .. min(the machine's CPUs, 16384); at most 64 counts"), "CPU counts to sweep"),
                s::p("other_pages", s::Kind::Int, "pages", s::Default::Text("the machine's TLB entries"), s::Range::Int(0, 1 << 20), "pages the rest of a tick's work touches between two loops"),
            ],
            one_of: &[],
            metrics: &[
                s::m("peek_all_us", "us", "one loop over every CPU (row key `cpus`)"),
                s::m("tlb_misses", "count", "TLB misses in the loop"),
                s::m("cache_misses", "count", "cache misses in the loop"),
            ],
            example_machine: "altix-512",
            example_kernel: "rq_layout = \"global-array\"\n",
            example: "workload = \"rq-peek\"\ncpus = [64, 512]\n",
            row_keys: &[],
    },
    parse: |r, m| parse("rq-peek", r, m),
};

/// The `aim7` workload: its keys, metrics and example, and its reader.
pub const AIM7: Workload = Workload {
    spec: s::Spec {
        name: "aim7",
        about:
            "an AIM VII-like multi-user mix: tasks compute, sleep on I/O and wake (docs/sched.md)",
        params: &[
            s::p(
                "tasks",
                s::Kind::Counts,
                "",
                s::Default::Required,
                s::Range::Int(1, 20_000),
                "task counts to sweep",
            ),
            s::p(
                "cpu_ms",
                s::Kind::Float,
                "ms",
                s::Default::Value("70.0"),
                s::Range::Text("0.001 … 10⁶"),
                "CPU time of one job with its memory local",
            ),
            s::p(
                "io_ms",
                s::Kind::Float,
                "ms",
                s::Default::Value("140.0"),
                s::Range::Text("0 … 10⁶"),
                "I/O sleep of one job",
            ),
            s::p(
                "waits",
                s::Kind::Int,
                "",
                s::Default::Value("12"),
                s::Range::Int(1, 10_000),
                "I/O sleeps (and wake-ups) per job",
            ),
            s::p(
                "mem_stall_pct",
                s::Kind::Float,
                "%",
                s::Default::Value("20.0"),
                s::Range::Text("0 … 100"),
                "share of CPU time stalled on memory at local latency",
            ),
            s::p(
                "task_mb",
                s::Kind::Float,
                "MiB",
                s::Default::Value("0"),
                s::Range::Text("0 … 10⁶; tasks × task_mb ≤ the machine's memory"),
                "resident memory of one task, first-touched at each job start; a full node spills it along the zonelist (0: not placed)",
            ),
            s::p(
                "walk_cache",
                s::Kind::Choice(&["hit", "direct-mapped"]),
                "",
                s::Default::Value("\"hit\""),
                s::Range::Text("hit, direct-mapped"),
                "where a goodness() step finds the task's lines: the last-level cache, or a direct-mapped one where queued tasks collide (docs/sched.md)",
            ),
            s::p(
                "goodness",
                s::Kind::Choice(&["affinity", "counter"]),
                "",
                s::Default::Value("\"affinity\""),
                s::Range::Text("affinity, counter"),
                "goodness()'s pick: a task that last ran on the CPU, else the oldest; or 2.4's counter + PROC_CHANGE_PENALTY with counter recalculation (docs/sched.md)",
            ),
            s::p(
                "warmup_s",
                s::Kind::Float,
                "s",
                s::Default::Value("5.0"),
                s::Range::Text("0 … 3600"),
                "simulated time before measuring",
            ),
            s::p(
                "measure_s",
                s::Kind::Float,
                "s",
                s::Default::Value("10.0"),
                s::Range::Text("0.01 … 3600; bursts simulated ≤ 5×10⁷"),
                "simulated time measured",
            ),
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "jobs_per_min",
                "1/min",
                "jobs finished per minute, all tasks (row key `tasks`)",
            ),
            s::m("jobs_per_min_per_task", "1/min", "per task"),
            s::m(
                "lock_share_pct",
                "%",
                "share of CPU time spinning on or holding the run-queue lock, up to the run's end (a wait not granted by then counts too)",
            ),
            s::m(
                "local_bursts_pct",
                "%",
                "CPU bursts run on the node holding the job's memory (weighted by its pages there when they spilled)",
            ),
            s::m(
                "migrations",
                "count",
                "bursts run on another node than the task's previous one",
            ),
            s::m(
                "mean_walk",
                "tasks",
                "mean queue length a schedule() walked with goodness()",
            ),
            s::m(
                "spilled_pct",
                "%",
                "share of the jobs' pages placed off the node that first touched them (node full)",
            ),
        ],
        example_machine: "wildfire-gs320",
        example_kernel: "sched = \"numa\"\n",
        example: "workload = \"aim7\"\ntasks = [1, 64]\nmeasure_s = 2.0\n",
        row_keys: &[],
    },
    parse: |r, m| parse("aim7", r, m),
};
