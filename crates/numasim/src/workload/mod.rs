//! Programs that simulated tasks run: the `[[run]]` steps of a scenario.
//!
//! Each step is a named workload with its own keys, read once when its case
//! is resolved ([`parse_step`]) into a typed [`Run`]; steps share one
//! simulated machine, booted on first need. Each workload's file defines
//! its [`Workload`] (spec and reader) and [`WORKLOADS`] lists them: a new
//! workload is its file plus one line there.

pub mod aim7;
pub mod alloc;
pub mod bcfree;
pub mod boot;
pub mod boot_balance;
pub mod bufwrite;
pub mod case;
pub mod contention;
pub mod fsio;
pub mod hold;
pub mod lock_bench;
pub mod keys;
pub mod membench;
pub mod page_cache_size;
pub mod pci;
pub mod read;
pub mod sched;
pub mod sched_ops;
pub mod spec;
pub mod touch;
pub mod vmstat;
pub mod write;
pub mod zcb;

use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::boot::{boot, Booted};
use crate::kernel::mm::vm::Vm;
use crate::kernel::KernelConfig;
use crate::machine::Machine;
use crate::report::Artifact;
use crate::report::Record;
use serde_json::Value as Json;
use toml::Table;

pub use case::ResolvedCase;

/// The state steps share within one case.
pub struct Sim<'a> {
    pub experiment: &'a str,
    pub case: &'a ResolvedCase,
    /// The case's varied keys as records carry them ([`record_keys`]).
    keys: &'a [(String, Json)],
    booted: Option<Booted>,
    vm: Option<Vm>,
    /// Files beside the records (timelines), written with `--out DIR`;
    /// None when nobody will write them (rendering an SVG per case costs
    /// more than some cases' simulation).
    pub artifacts: Option<Vec<Artifact>>,
}

impl<'a> Sim<'a> {
    /// The booted kernel, booting it first if no step has.
    pub fn booted(&mut self) -> Result<&mut Booted, Error> {
        if self.booted.is_none() {
            self.booted = Some(boot(&self.case.machine, &self.case.kernel, self.case.seed)?);
        }
        Ok(self.booted.as_mut().expect("just booted"))
    }
    /// The booted kernel and its running VM (reclaim, swap, OOM state),
    /// starting the VM on first need.
    pub fn vm(&mut self) -> Result<(&mut Booted, &mut Vm), Error> {
        self.booted()?;
        let booted = self.booted.as_mut().expect("just booted");
        let keep_timeline = self.artifacts.is_some();
        let vm = self.vm.get_or_insert_with(|| {
            let mut vm = Vm::new(&self.case.machine, &self.case.kernel, &booted.mm);
            vm.keep_timeline = keep_timeline;
            vm
        });
        Ok((booted, vm))
    }
    /// Builds this case's records; holds no borrow of the simulation, so it
    /// can be used while the booted kernel is borrowed.
    pub fn recorder(&self) -> Recorder<'a> {
        Recorder {
            experiment: self.experiment,
            keys: self.keys,
        }
    }
}

/// Makes records of one case.
#[derive(Clone, Copy)]
pub struct Recorder<'a> {
    experiment: &'a str,
    keys: &'a [(String, Json)],
}

impl<'a> Recorder<'a> {
    /// The case's varied keys, as its records carry them.
    pub fn keys(&self) -> &'a [(String, Json)] {
        self.keys
    }

    /// A record of this case with extra per-row keys.
    pub fn record(&self, rows: &[(&str, Json)], metric: &str, unit: &str, value: f64) -> Record {
        let mut case = self.keys.to_vec();
        case.extend(rows.iter().map(|(k, v)| (k.to_string(), v.clone())));
        Record::new(self.experiment, case, metric, unit, value)
    }
}

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

/// A `[[run]]` step read at load time into its workload's typed value:
/// what the run path runs, without reading the step's table again.
pub trait Run: std::fmt::Debug + Send + Sync {
    /// Run the step on the case's simulated machine.
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error>;
    /// Bounds on the step's simulated work that depend on the kernel as
    /// well as the step, checked at load time (`hugetlb` simulates one
    /// fault per huge page, so its cost is the mapping over
    /// `kernel.hugepagesz`).
    fn check_cost(&self, _machine: &Machine, _kernel: &KernelConfig) -> Result<(), InputError> {
        Ok(())
    }
}

/// Reads a step's own keys (after `workload` and `metrics`) on the case's
/// machine.
pub type Parse = fn(&mut TableReader<'_>, &Machine) -> Result<Box<dyn Run>, InputError>;

/// One workload: its spec (keys, units, ranges, row keys, metrics, an
/// example) and its reader. Each workload's file defines its own; adding
/// one to [`WORKLOADS`] is the only other line a new workload needs.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub spec: spec::Spec,
    pub parse: Parse,
}

impl std::ops::Deref for Workload {
    type Target = spec::Spec;
    fn deref(&self) -> &spec::Spec {
        &self.spec
    }
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
    pci::PIO_READ,
    pci::PIO_FLUSH,
    pci::DMA_IOPS,
    fsio::DIRECT_IO,
    fsio::BUFFERED_READ,
    fsio::READ_VARIABILITY,
    fsio::BUFFERED_WRITE,
];

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

/// A step without keys of its own: a function of the simulation.
struct NoKeys(fn(&mut Sim) -> Result<Vec<Record>, Error>);

impl std::fmt::Debug for NoKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NoKeys")
    }
}

impl Run for NoKeys {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        (self.0)(sim)
    }
}

/// The reader of a workload with no keys beyond `workload` and `metrics`.
pub(crate) fn no_keys(
    run: fn(&mut Sim) -> Result<Vec<Record>, Error>,
) -> Result<Box<dyn Run>, InputError> {
    Ok(Box::new(NoKeys(run)))
}

/// The step a family's reader (`pci`, `sched`, …: one reader for several
/// names) made of workload `name`; the reader gives None for a name that
/// is not of its family.
pub(crate) fn family_step<S: Run + 'static>(
    name: &str,
    step: Option<S>,
) -> Result<Box<dyn Run>, InputError> {
    match step {
        Some(step) => Ok(Box::new(step)),
        None => Err(InputError::at("workload", format!("no workload `{name}`"))),
    }
}

/// A step as the case runs it: its workload, its `metrics` filter and its
/// keys read once, at load time, on the case's own machine.
#[derive(Debug, Clone)]
pub struct ParsedStep {
    pub workload: &'static Workload,
    /// The metrics to keep; None keeps every metric of the workload.
    pub metrics: Option<Vec<String>>,
    pub run: std::sync::Arc<dyn Run>,
}

impl ParsedStep {
    /// The metrics this step reports, after its filter.
    pub fn produced_metrics(&self) -> Vec<String> {
        match &self.metrics {
            Some(l) => l.clone(),
            None => self
                .workload
                .metric_names()
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    }
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
    let mut sim = Sim {
        experiment,
        case,
        keys: &keys,
        booted: None,
        vm: None,
        artifacts: files.then(Vec::new),
    };
    let mut out = Vec::new();
    for (i, step) in case.parsed.iter().enumerate() {
        // Errors found while the step runs name it, as load-time ones do.
        let records = step.run.run(&mut sim).map_err(|e| e.in_step(i))?;
        // A run cut short by its horizon says so even when `metrics` leaves
        // the record out: its other values cover only the part that ran.
        out.extend(records.into_iter().filter(|rec| {
            step.metrics
                .as_ref()
                .is_none_or(|f| f.contains(&rec.metric))
                || (rec.metric == "incomplete_at_s" && rec.value.is_some())
        }));
    }
    Ok((out, sim.artifacts.unwrap_or_default()))
}
