//! Scheduler workloads ([ALTIX04] E1–E3, [WILDFIRE01] E4): a
//! fork/exit/wake loop, an early boot with idle CPUs balancing, the
//! balance loop's peek at every run queue, and an AIM VII-like
//! multi-user mix. Each sweeps the counts its step lists; the points are
//! independent and seeded, so they run in parallel with the same output
//! as a serial run.

use super::aim7::{self, Mix};
use super::Sim;
use super::{boot_balance, sched_ops};
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

pub const WORKLOAD_NAMES: &[&str] = &["sched-ops", "boot-balance", "rq-peek", "aim7"];

/// A count or a list of counts under `key`, each in `lo..=hi`.
fn counts(
    r: &mut TableReader,
    key: &'static str,
    default: Option<u64>,
    hi: u64,
    what: &str,
) -> Result<Vec<u64>, InputError> {
    let list = match r.raw(key) {
        None => match default {
            Some(d) => vec![d],
            None => {
                return Err(InputError::at(
                    r.key(key),
                    format!("missing: how many {what}, e.g. {key} = [1, 8]"),
                ))
            }
        },
        Some(Value::Array(_)) => r.u64_list(key)?.unwrap_or_default(),
        Some(Value::Integer(i)) if *i <= 0 => {
            return Err(InputError::at(r.key(key), format!("{i}: allowed 1..{hi}")))
        }
        Some(_) => vec![r.u64(key)?.unwrap_or(0)],
    };
    if list.is_empty() {
        return Err(InputError::at(r.key(key), "give at least one count"));
    }
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

fn bounded(
    r: &mut TableReader,
    key: &'static str,
    d: u64,
    lo: u64,
    hi: u64,
) -> Result<u64, InputError> {
    if let Some(Value::Integer(i)) = r.raw(key) {
        if *i < lo as i64 || *i > hi as i64 {
            return Err(InputError::at(
                r.key(key),
                format!("{i}: allowed {lo}..{hi}"),
            ));
        }
    }
    Ok(r.u64(key)?.unwrap_or(d))
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
