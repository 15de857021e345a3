//! Programs that simulated tasks run: the `[[run]]` steps of a scenario.
//!
//! Each step is a named workload with its own keys, validated before
//! anything runs; steps share one simulated machine, booted on first need.

pub mod alloc;
pub mod bcfree;
pub mod boot;
pub mod contention;
pub mod fsio;
pub mod hold;
pub mod membench;
pub mod membw;
pub mod pci;
pub mod read;
pub mod sched;
pub mod spec;
pub mod touch;
pub mod vmstat;
pub mod write;
pub mod zcb;

use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::boot::{boot, Booted};
use crate::kernel::mm::vm::Vm;
use crate::machine::Machine;
use crate::report::Artifact;
use crate::report::Record;
use crate::scenario::ResolvedCase;
use serde_json::Value as Json;
use toml::Table;

pub use spec::WORKLOADS;

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
        )),
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
                ));
            }
        }
    }
    Ok(list)
}

/// Check a step before anything runs.
pub fn validate_step(step: &Table, machine: &Machine) -> Result<(), InputError> {
    let name = step_name(step)?;
    let Some(spec) = spec::find(name) else {
        let hint = crate::input::table::nearest(name, WORKLOADS.iter().map(|s| s.name))
            .map(|n| format!(" Did you mean `{n}`?"))
            .unwrap_or_default();
        return Err(InputError::at(
            "workload",
            format!(
                "no workload `{}`.{hint} Workloads: {}.",
                crate::error::clip(name, 80),
                names()
            ),
        ));
    };
    check_keys(spec, step)?;
    let metrics = &spec.metric_names();
    let mut r = TableReader::new("", step);
    r.allow("workload");
    metric_filter(&mut r, metrics)?;
    match name {
        "touch" => {
            touch::Touch::from_step(&mut r, machine)?;
        }
        "read" => {
            read::Read::from_step(&mut r, machine)?;
        }
        "hold" => {
            hold::Hold::from_step(&mut r, machine)?;
        }
        "write" => {
            write::Write::from_step(&mut r, machine)?;
        }
        "alloc" => {
            alloc::Alloc::from_step(&mut r, machine, false)?;
        }
        "runaway" => {
            alloc::Alloc::from_step(&mut r, machine, true)?;
        }
        "zcb" => {
            zcb::Zcb::from_step(&mut r)?;
        }
        other if membench::WORKLOAD_NAMES.contains(&other) => {
            membench::Step::from_step(other, &mut r, machine)?;
        }
        other if membw::WORKLOAD_NAMES.contains(&other) => {
            membw::Step::from_step(other, &mut r, machine)?;
        }
        other if pci::WORKLOAD_NAMES.contains(&other) => {
            pci::Step::from_step(other, &mut r, machine)?;
        }
        other if sched::WORKLOAD_NAMES.contains(&other) => {
            sched::Step::from_step(other, &mut r, machine)?;
        }
        other if fsio::WORKLOAD_NAMES.contains(&other) => {
            fsio::Step::from_step(other, &mut r, machine)?;
        }
        other => {
            contention::Step::from_step(other, &mut r, machine)?;
        }
    }
    r.finish()
}

/// Bounds on a step's simulated work that depend on the kernel as well as
/// the step (checked at load time, after [`validate_step`]): `hugetlb`
/// simulates one fault per huge page, so its cost is the mapping's size
/// over `kernel.hugepagesz`.
pub fn check_cost(
    step: &Table,
    machine: &Machine,
    kernel: &crate::kernel::KernelConfig,
) -> Result<(), InputError> {
    if step_name(step)? != "hugetlb" {
        return Ok(());
    }
    let mut r = TableReader::new("", step);
    match contention::Step::from_step("hugetlb", &mut r, machine)? {
        Some(contention::Step::Hugetlb { cpus, size }) => {
            contention::check_hugetlb_cost(&cpus, size, machine, &kernel.contention)
        }
        _ => Ok(()),
    }
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
    ))
}

/// Parse a step with its workload's own reader and return what it read
/// (as `Debug` text) and the keys it asked for: the registry's tests compare
/// these with `spec::WORKLOADS`.
pub fn parse_for_test(
    step: &Table,
    machine: &Machine,
) -> Result<(String, Vec<&'static str>), InputError> {
    let name = step_name(step)?;
    let mut r = TableReader::new("", step);
    r.allow("workload");
    let parsed = match name {
        "touch" => format!("{:?}", touch::Touch::from_step(&mut r, machine)?),
        "read" => format!("{:?}", read::Read::from_step(&mut r, machine)?),
        "hold" => format!("{:?}", hold::Hold::from_step(&mut r, machine)?),
        "write" => format!("{:?}", write::Write::from_step(&mut r, machine)?),
        "alloc" => format!("{:?}", alloc::Alloc::from_step(&mut r, machine, false)?),
        "runaway" => format!("{:?}", alloc::Alloc::from_step(&mut r, machine, true)?),
        "zcb" => format!("{:?}", zcb::Zcb::from_step(&mut r)?),
        other if membench::WORKLOAD_NAMES.contains(&other) => {
            format!("{:?}", membench::Step::from_step(other, &mut r, machine)?)
        }
        other if membw::WORKLOAD_NAMES.contains(&other) => {
            format!("{:?}", membw::Step::from_step(other, &mut r, machine)?)
        }
        other if pci::WORKLOAD_NAMES.contains(&other) => {
            format!("{:?}", pci::Step::from_step(other, &mut r, machine)?)
        }
        other if sched::WORKLOAD_NAMES.contains(&other) => {
            format!("{:?}", sched::Step::from_step(other, &mut r, machine)?)
        }
        other if fsio::WORKLOAD_NAMES.contains(&other) => {
            format!("{:?}", fsio::Step::from_step(other, &mut r, machine)?)
        }
        other => format!("{:?}", contention::Step::from_step(other, &mut r, machine)?),
    };
    Ok((parsed, r.known_keys()))
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
                    .map(crate::scenario::toml_to_json)
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
    for (i, step) in case.steps.iter().enumerate() {
        // Errors found while the step runs name it, as load-time ones do.
        out.extend(run_step(&mut sim, case, step).map_err(|e| e.in_step(i))?);
    }
    Ok((out, sim.artifacts.unwrap_or_default()))
}

/// Run one `[[run]]` step on the case's simulated machine, keeping the
/// metrics its `metrics` filter names.
fn run_step(sim: &mut Sim, case: &ResolvedCase, step: &Table) -> Result<Vec<Record>, Error> {
    let mut r = TableReader::new("", step);
    r.allow("workload");
    let name = step_name(step)?;
    let allowed = spec::find(name)
        .map(|s| s.metric_names())
        .unwrap_or_default();
    let filter = metric_filter(&mut r, &allowed)?;
    let records = match name {
        "boot" => boot::boot_records(sim)?,
        "meminfo" => boot::meminfo_records(sim)?,
        "touch" => {
            let t = touch::Touch::from_step(&mut r, &case.machine)?;
            t.run(sim)?
        }
        "read" => read::Read::from_step(&mut r, &case.machine)?.run(sim)?,
        "vmstat" => vmstat::vmstat_records(sim)?,
        "hold" => hold::Hold::from_step(&mut r, &case.machine)?.run(sim)?,
        "write" => write::Write::from_step(&mut r, &case.machine)?.run(sim)?,
        "alloc" => alloc::Alloc::from_step(&mut r, &case.machine, false)?.run(sim)?,
        "runaway" => alloc::Alloc::from_step(&mut r, &case.machine, true)?.run(sim)?,
        "bcfree" => bcfree::bcfree_records(sim)?,
        "zcb" => zcb::Zcb::from_step(&mut r)?.run(sim)?,
        other if membench::WORKLOAD_NAMES.contains(&other) => {
            membench::Step::from_step(other, &mut r, &case.machine)?
                .ok_or_else(|| InputError::at("workload", format!("no workload `{other}`")))?
                .run(sim)?
        }
        other if membw::WORKLOAD_NAMES.contains(&other) => {
            membw::Step::from_step(other, &mut r, &case.machine)?
                .ok_or_else(|| InputError::at("workload", format!("no workload `{other}`")))?
                .run(sim)?
        }
        other if pci::WORKLOAD_NAMES.contains(&other) => {
            pci::Step::from_step(other, &mut r, &case.machine)?
                .ok_or_else(|| InputError::at("workload", format!("no workload `{other}`")))?
                .run(sim)?
        }
        other if sched::WORKLOAD_NAMES.contains(&other) => {
            sched::Step::from_step(other, &mut r, &case.machine)?
                .ok_or_else(|| InputError::at("workload", format!("no workload `{other}`")))?
                .run(sim)?
        }
        other if fsio::WORKLOAD_NAMES.contains(&other) => {
            fsio::Step::from_step(other, &mut r, &case.machine)?
                .ok_or_else(|| InputError::at("workload", format!("no workload `{other}`")))?
                .run(sim)?
        }
        other if contention::WORKLOAD_NAMES.contains(&other) => {
            contention::Step::from_step(other, &mut r, &case.machine)?
                .ok_or_else(|| InputError::at("workload", format!("no workload `{other}`")))?
                .run(sim)?
        }
        other => return Err(InputError::at("workload", format!("no workload `{other}`")).into()),
    };
    // A run cut short by its horizon says so even when `metrics` leaves
    // the record out: its other values cover only the part that ran.
    Ok(records
        .into_iter()
        .filter(|rec| {
            filter.as_ref().is_none_or(|f| f.contains(&rec.metric))
                || (rec.metric == "incomplete_at_s" && rec.value.is_some())
        })
        .collect())
}
