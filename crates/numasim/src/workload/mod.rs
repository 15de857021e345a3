//! Programs that simulated tasks run: the `[[run]]` steps of a scenario.
//!
//! Each step is a named workload with its own keys, read once when its case
//! is resolved ([`parse_step`]) into a typed [`Run`]; steps share one
//! simulated machine, booted on first need. Each workload's file defines
//! its [`Workload`] (spec and reader) and [`WORKLOADS`] lists them: a new
//! workload is its file plus one line there.

pub mod aim7;
pub(crate) mod alloc;
pub(crate) mod bcfree;
pub(crate) mod boot;
pub mod boot_balance;
pub(crate) mod bufwrite;
pub mod contention;
pub(crate) mod fsio;
pub mod gettimeofday;
pub(crate) mod hold;
pub mod iosim;
pub(crate) mod keys;
pub mod lock_bench;
pub(crate) mod membench;
pub(crate) mod membw;
pub mod page_cache_size;
pub(crate) mod pci;
pub(crate) mod read;
pub(crate) mod sched;
pub mod sched_ops;
pub(crate) mod sim;
pub mod spec;
pub(crate) mod timer_tick;
pub(crate) mod touch;
pub(crate) mod vmstat;
pub(crate) mod write;
pub(crate) mod zcb;

use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::machine::Machine;
use crate::report::Artifact;
use crate::report::Record;
use serde_json::Value as Json;
use toml::Table;

pub use fsio::{HostFileIo, HostFileRates};
pub(crate) use sim::{family_step, no_keys};
pub use sim::{Parse, ParsedStep, Recorder, ResolvedCase, Run, Sim, Workload};

fn step_name(step: &Table) -> Result<&str, InputError> {
    match step.get("workload") {
        Some(toml::Value::String(s)) => Ok(s),
        Some(_) => Err(InputError::at("workload", "must be a string")),
        None => Err(InputError::at(
            "workload",
            format!("missing: name the workload ({})", names()),
        )
        .allowing(names())),
    }
}

fn names() -> String {
    WORKLOADS
        .iter()
        .map(|s| format!("`{}`", s.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Read a step's `metrics` filter, refusing names the workload cannot report.
fn metric_filter(r: &mut TableReader, allowed: &[&str]) -> Result<Option<Vec<String>>, InputError> {
    let list = r.list("metrics", |v| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| "expected a metric name".to_string())
    })?;
    if let Some(l) = &list {
        for m in l {
            if !allowed.contains(&m.as_str()) {
                let hint = crate::input::table::nearest(m, allowed.iter().copied())
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                return Err(InputError::at(
                    r.key("metrics"),
                    format!(
                        "`{}` is not reported here{hint}; allowed: {}",
                        crate::error::clip(m, 80),
                        allowed.join(", ")
                    ),
                )
                .allowing(allowed.join(", ")));
            }
        }
    }
    Ok(list)
}

/// The registry: every workload, once, in the order `numasim workloads`
/// and `docs/scenario.md` list them. Validation, the readers, the run path,
/// the views' row keys, the CLI's reference and the Python binding all
/// read it.
pub static WORKLOADS: &[Workload] = &[
    boot::BOOT,
    boot::MEMINFO,
    touch::TOUCH,
    read::READ,
    vmstat::VMSTAT,
    hold::HOLD,
    write::WRITE,
    alloc::ALLOC,
    alloc::RUNAWAY,
    bcfree::BCFREE,
    contention::TICK,
    contention::GETTIMEOFDAY,
    contention::FAULT_TOUCH,
    contention::DEVZERO,
    contention::HUGETLB,
    contention::PAGECACHE_COUNT,
    contention::SPINLOCK,
    sched::SCHED_OPS,
    sched::BOOT_BALANCE,
    sched::RQ_PEEK,
    sched::AIM7,
    zcb::ZCB,
    membench::STREAM_COPY,
    membench::RANDOM_READ,
    membench::GETTIMEOFDAY_COST,
    membench::SELFISH,
    membench::RING_COPY,
    membw::MLC_LATENCY_MATRIX,
    membw::MLC_BANDWIDTH_MATRIX,
    membw::MLC_LOADED_LATENCY,
    membw::STREAM,
    membw::C2C_LATENCY,
    pci::PIO_READ,
    pci::PIO_FLUSH,
    pci::DMA_IOPS,
    fsio::DIRECT_IO,
    fsio::BUFFERED_READ,
    fsio::READ_VARIABILITY,
    fsio::BUFFERED_WRITE,
];

/// Every workload as Markdown: the generated part of `docs/scenario.md`.
pub fn reference_markdown() -> String {
    spec::reference_markdown(WORKLOADS.iter().map(|w| &w.spec))
}

/// The workload named `name`.
pub fn find(name: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// Every row key the workloads add to records, each once, in registry
/// order: what views may pivot on beyond the case's and steps' keys.
pub fn row_keys() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = Vec::new();
    for k in WORKLOADS.iter().flat_map(|w| w.row_keys) {
        if !keys.contains(k) {
            keys.push(k);
        }
    }
    keys
}

fn unknown_workload(name: &str) -> InputError {
    let hint = crate::input::table::nearest(name, WORKLOADS.iter().map(|s| s.name))
        .map(|n| format!(" Did you mean `{n}`?"))
        .unwrap_or_default();
    InputError::at(
        "workload",
        format!(
            "no workload `{}`.{hint} Workloads: {}.",
            crate::error::clip(name, 80),
            names()
        ),
    )
    .allowing(names())
}

/// Read a step before anything runs, on the machine of the case it is in:
/// the keys against the workload's spec, the `metrics` filter, then the
/// workload's own reader; every key must be read.
pub fn parse_step(step: &Table, machine: &Machine) -> Result<ParsedStep, InputError> {
    let name = step_name(step)?;
    let workload = find(name).ok_or_else(|| unknown_workload(name))?;
    check_keys(workload, step)?;
    let mut r = TableReader::new("", step);
    r.allow("workload");
    let metrics = metric_filter(&mut r, &workload.metric_names())?;
    let run = (workload.parse)(&mut r, machine)?;
    r.finish()?;
    Ok(ParsedStep {
        workload,
        metrics,
        run: run.into(),
    })
}

/// The step's keys against the registry, before the workload's own reader:
/// unknown keys are named beside missing required ones, so a misspelt
/// required key (`byte = "1 GB"`) reads as what it is.
pub fn check_keys(spec: &spec::Spec, step: &Table) -> Result<(), InputError> {
    let valid: Vec<&str> = spec::COMMON
        .iter()
        .chain(spec.params)
        .map(|p| p.key)
        .collect();
    let unknown: Vec<&str> = step
        .keys()
        .map(String::as_str)
        .filter(|k| !valid.contains(k))
        .collect();
    let missing: Vec<&str> = spec
        .params
        .iter()
        .filter(|p| p.default == spec::Default::Required && !step.contains_key(p.key))
        .map(|p| p.key)
        .collect();
    let given_one = spec
        .one_of
        .iter()
        .filter(|k| step.contains_key(**k))
        .count();
    if unknown.is_empty() && missing.is_empty() && (spec.one_of.is_empty() || given_one == 1) {
        return Ok(());
    }
    let mut parts = Vec::new();
    for k in &unknown {
        let hint = crate::input::table::nearest(k, valid.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        parts.push(format!("unknown key `{}`{hint}", crate::error::clip(k, 80)));
    }
    for k in &missing {
        let about = spec.param(k).map(|p| p.about).unwrap_or_default();
        parts.push(format!("missing `{k}` ({about})"));
    }
    if !spec.one_of.is_empty() && given_one != 1 {
        parts.push(format!(
            "give exactly one of `{}`",
            spec.one_of.join("`, `")
        ));
    }
    let key = unknown
        .first()
        .or(missing.first())
        .or(spec.one_of.first())
        .copied()
        .unwrap_or("workload");
    Err(InputError::at(
        key,
        format!(
            "{} in a `{}` step. Keys of `{}`: {} (`numasim workloads {}`).",
            parts.join("; "),
            spec.name,
            spec.name,
            valid.join(", "),
            spec.name
        ),
    )
    .allowing(valid.join(", ")))
}

/// Parse a step with its workload's own reader and return what it read
/// (as `Debug` text) and the keys it asked for: the registry's tests compare
/// these with each workload's spec.
pub fn parse_for_test(
    step: &Table,
    machine: &Machine,
) -> Result<(String, Vec<&'static str>), InputError> {
    let name = step_name(step)?;
    let workload = find(name).ok_or_else(|| unknown_workload(name))?;
    let mut r = TableReader::new("", step);
    r.allow("workload");
    let parsed = (workload.parse)(&mut r, machine)?;
    Ok((format!("{parsed:?}"), r.known_keys()))
}

/// The case's varied keys with the value each has in this case. A step key
/// another case overrides (`bytes`, `threads`) is not in the file's tables,
/// so the scenario leaves it null where this case does not set it; its value
/// in force is the one in this case's steps.
pub fn record_keys(case: &ResolvedCase) -> Vec<(String, Json)> {
    case.keys
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Json::Null => case
                    .steps
                    .iter()
                    .find_map(|s| s.get(k))
                    .map(crate::machine::slit_text::toml_to_json)
                    .unwrap_or(Json::Null),
                v => v.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// Records that say a run covered only part of its work (cut short by its
/// horizon, `workload/write.rs`; sampled by a window of calls,
/// `workload/gettimeofday.rs`): kept whatever the step's `metrics` asks.
const PARTIAL_RUN_METRICS: [&str; 3] = ["incomplete_at_s", "windowed_calls", "starved_callers"];

/// Run every step of one case, in order.
pub fn run_case(experiment: &str, case: &ResolvedCase) -> Result<Vec<Record>, Error> {
    run_case_with_artifacts(experiment, case, false).map(|(r, _)| r)
}

/// Run every step of one case; also return the files its steps made
/// when `files` (else none are rendered).
pub fn run_case_with_artifacts(
    experiment: &str,
    case: &ResolvedCase,
    files: bool,
) -> Result<(Vec<Record>, Vec<Artifact>), Error> {
    let keys = record_keys(case);
    let mut sim = Sim::new(experiment, case, &keys, files);
    let mut out = Vec::new();
    for (i, step) in case.parsed.iter().enumerate() {
        // Errors found while the step runs name it, as load-time ones do.
        let records = step.run.run(&mut sim).map_err(|e| e.in_step(i))?;
        // A run cut short by its horizon, or sampled by a window, says so
        // even when `metrics` leaves the record out: its other values
        // cover only the part that ran.
        out.extend(records.into_iter().filter(|rec| {
            step.metrics
                .as_ref()
                .is_none_or(|f| f.contains(&rec.metric))
                || (PARTIAL_RUN_METRICS.contains(&rec.metric.as_str()) && rec.value.is_some())
        }));
    }
    Ok((out, sim.artifacts.unwrap_or_default()))
}
