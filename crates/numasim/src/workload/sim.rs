//! What a workload is and what it runs on: the [`Workload`] each
//! workload's file declares (its spec and reader), the typed step it reads
//! ([`Run`]), and the case's simulation the step runs on ([`Sim`], with its
//! [`Recorder`]) on one case made concrete ([`ResolvedCase`], which the
//! scenario resolves and the workloads take). The registry that lists the workloads is in `mod.rs`;
//! this file is below it, so a workload's file imports only from here.

use super::spec;
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::boot::{boot, Booted};
use crate::kernel::mm::vm::Vm;
use crate::kernel::KernelConfig;
use crate::machine::Machine;
use crate::report::Artifact;
use crate::report::Record;
use serde_json::Value as Json;
use std::sync::Arc;
use toml::Table;

/// The state steps share within one case.
pub struct Sim<'a> {
    pub experiment: &'a str,
    pub case: &'a ResolvedCase,
    /// The case's varied keys as records carry them ([`record_keys`](super::record_keys)).
    keys: &'a [(String, Json)],
    booted: Option<Booted>,
    vm: Option<Vm>,
    /// Files beside the records (timelines), written with `--out DIR`;
    /// None when nobody will write them (rendering an SVG per case costs
    /// more than some cases' simulation).
    pub artifacts: Option<Vec<Artifact>>,
}

impl<'a> Sim<'a> {
    /// A case's simulation, nothing booted yet; `files`: render the files
    /// `--out` writes (timelines).
    pub fn new(
        experiment: &'a str,
        case: &'a ResolvedCase,
        keys: &'a [(String, Json)],
        files: bool,
    ) -> Self {
        Sim {
            experiment,
            case,
            keys,
            booted: None,
            vm: None,
            artifacts: files.then(Vec::new),
        }
    }

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
/// one to [`WORKLOADS`](super::WORKLOADS) is the only other line a new workload needs.
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

/// One case made concrete: the machine, the kernel and the steps to run.
#[derive(Debug, Clone)]
pub struct ResolvedCase {
    /// The case's varied keys, as they appear in records.
    pub keys: Vec<(String, Json)>,
    /// Shared with the scenario's other cases on the same machine.
    pub machine: Arc<Machine>,
    pub kernel: KernelConfig,
    pub seed: u64,
    /// The `[[run]]` tables as resolved (case keys applied): records read
    /// the values of step keys a case varies from them.
    pub steps: Vec<Table>,
    /// The same steps read once, on this case's machine: what runs.
    pub parsed: Vec<ParsedStep>,
}
