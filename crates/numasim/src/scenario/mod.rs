//! Scenario files: TOML schema, presets, `--set` overrides and validation.
//!
//! A scenario names a machine (a preset, a file, plus inline overrides),
//! kernel knobs, an optional matrix of `[[case]]` overrides, the workload
//! steps to run and the published `[[paper]]` values to print beside the
//! result. Everything is checked here, before anything runs: the model
//! never sees an unknown key or an impossible value.

pub mod run;

use crate::error::InputError;
use crate::input::merge::{apply_dotted, deep_merge, flatten};
use crate::input::table::{self, TableReader};
use crate::kernel::KernelConfig;
use crate::machine::{presets, Machine};
pub use crate::report::paper::{FitDecl, PaperAt, PaperRow};
use crate::report::view::{Better, Plot, View};
pub use crate::report::CASE_LABEL_KEYS;
use crate::report::{Bound, FigureHint, MachineDesc, ReportHints, Role, RunDesc, Shape, XMark};
pub use crate::workload::ResolvedCase;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use toml::{Table, Value};

/// A loaded, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    /// Where it came from, for error messages (`experiments/x.toml`, a path).
    pub source: String,
    dir: Option<PathBuf>,
    base: Table,
    /// Each case's overrides as dotted keys, in file order. One empty case if none.
    pub cases: Vec<Vec<(String, Value)>>,
    pub papers: Vec<PaperRow>,
    /// The parameters fitted to this scenario's calibration rows.
    pub fits: Vec<FitDecl>,
    /// Pivot tables to print with the table format (presentation only).
    pub views: Vec<View>,
    /// How the HTML report shows it (presentation only; never read by the model).
    pub report: ReportHints,
    machines: MachineCache,
}

/// The machines this scenario's cases resolved to, by the `[machine]`
/// table (preset name or path and inline keys, after the case's and
/// `--set` overrides) that made each: cases on the same machine share one
/// (built once, not once per case and again at load), and an identical
/// table can only give an identical machine, the preset files being read
/// only here. Shared by clones of the scenario.
#[derive(Debug, Clone, Default)]
struct MachineCache(Arc<Mutex<Vec<(Table, Arc<Machine>)>>>);

impl MachineCache {
    fn get(&self, key: &Table) -> Option<Arc<Machine>> {
        let v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        v.iter().find(|(k, _)| k == key).map(|(_, m)| m.clone())
    }

    /// Keep `m` for `key` unless another thread got there first; the one
    /// kept either way.
    fn insert(&self, key: Table, m: Arc<Machine>) -> Arc<Machine> {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, old)) = v.iter().find(|(k, _)| *k == key) {
            return old.clone();
        }
        v.push((key, m.clone()));
        m
    }
}

/// The most `[[run]]` steps in one scenario (the experiments have at most 3).
pub const MAX_STEPS: usize = 1024;
/// The most `[[case]]` tables in one scenario (the experiments have at most 32).
pub const MAX_CASES: usize = 4096;
/// The most cases × steps: each case resolves its own copy of the steps.
pub const MAX_CASE_STEPS: usize = 1 << 16;

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "machine",
    "kernel",
    "case",
    "run",
    "paper",
    "fit",
    "view",
    "report",
];

impl Scenario {
    pub fn from_file(path: &Path) -> Result<Scenario, InputError> {
        Scenario::from_file_with_sets(path, &[])
    }

    /// As [`Scenario::from_file`], checking every case as it will run
    /// under the `--set` overrides `sets`: a step is read on the machine
    /// the overrides produce (`threads = 40` on a 32-CPU preset loads with
    /// `--set machine.nodes=32`), not on the file's own.
    pub fn from_file_with_sets(
        path: &Path,
        sets: &[(String, Value)],
    ) -> Result<Scenario, InputError> {
        let text =
            crate::input::read_bounded_text(path, crate::input::MAX_INPUT_BYTES, "a scenario")?;
        Scenario::from_str_with_sets(
            &text,
            &path.display().to_string(),
            path.parent().map(Path::to_path_buf),
            sets,
        )
    }

    /// Parse a scenario; `dir` resolves relative machine paths.
    pub fn from_str(
        text: &str,
        source: &str,
        dir: Option<PathBuf>,
    ) -> Result<Scenario, InputError> {
        Scenario::from_str_with_sets(text, source, dir, &[])
    }

    /// As [`Scenario::from_str`], checking every case under `sets` (see
    /// [`Scenario::from_file_with_sets`]).
    pub fn from_str_with_sets(
        text: &str,
        source: &str,
        dir: Option<PathBuf>,
        sets: &[(String, Value)],
    ) -> Result<Scenario, InputError> {
        let doc: Table = crate::machine::slit_text::parse_toml(text)
            .map_err(|e| InputError::new(format!("not valid TOML: {e}")).in_file(source))?;
        Scenario::from_table(doc, source, dir, sets).map_err(|e| e.in_file(source))
    }

    fn from_table(
        mut doc: Table,
        source: &str,
        dir: Option<PathBuf>,
        sets: &[(String, Value)],
    ) -> Result<Scenario, InputError> {
        let mut r = TableReader::new("", &doc);
        for k in TOP_KEYS {
            r.allow(k);
        }
        r.finish()?;
        let mut r = TableReader::new("", &doc);
        let name = r.str("name")?.unwrap_or("scenario").to_string();
        // The name is the stem of every file --out writes (report/out.rs).
        crate::input::stem::check_stem(&name).map_err(|m| InputError::at("name", m))?;
        let description = r.str("description")?.unwrap_or("").to_string();
        let seed = r.u64("seed")?.unwrap_or(1);
        // Every case holds its own copy of the steps once resolved: the
        // counts are bounded before anything is copied.
        let count = |key: &str| match doc.get(key) {
            Some(Value::Array(a)) => a.len(),
            _ => 1,
        };
        let (n_steps, n_cases) = (count("run"), count("case"));
        for (key, n, max, what) in [
            ("run", n_steps, MAX_STEPS, "[[run]] steps"),
            ("case", n_cases, MAX_CASES, "[[case]] tables"),
        ] {
            if n > max {
                return Err(InputError::at(
                    key,
                    format!("{n} {what}: allowed at most {max} (docs/scenario.md: limits)"),
                ));
            }
        }
        if n_steps * n_cases > MAX_CASE_STEPS {
            return Err(InputError::at(
                "case",
                format!(
                    "{n_cases} cases × {n_steps} steps = {} steps to resolve: allowed at most \
                     {MAX_CASE_STEPS} (docs/scenario.md: limits); split the scenario",
                    n_steps * n_cases
                ),
            ));
        }
        let cases = match doc.remove("case") {
            None => vec![vec![]],
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::Table(t) => {
                        let flat = flatten(&t);
                        for (k, _) in &flat {
                            check_case_key(k).map_err(|e| e.under(&format!("case[{i}]")))?;
                        }
                        Ok(flat)
                    }
                    _ => Err(InputError::at(
                        format!("case[{i}]"),
                        "each [[case]] must be a table of overrides",
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(InputError::at("case", "write cases as [[case]] tables")),
        };
        let papers = match doc.remove("paper") {
            None => vec![],
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| read_paper(v).map_err(|e| e.under(&format!("paper[{i}]"))))
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(InputError::at(
                    "paper",
                    "write published values as [[paper]] tables",
                ))
            }
        };
        let fits = match doc.remove("fit") {
            None => vec![],
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| read_fit(v, &papers).map_err(|e| e.under(&format!("fit[{i}]"))))
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(InputError::at(
                    "fit",
                    "write fitted parameters as [[fit]] tables",
                ))
            }
        };
        let views = match doc.remove("view") {
            None => vec![],
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| read_view(v).map_err(|e| e.under(&format!("view[{i}]"))))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(InputError::at("view", "write views as [[view]] tables")),
        };
        let report = match doc.remove("report") {
            None => ReportHints::default(),
            Some(Value::Table(t)) => read_report(&t).map_err(|e| e.under("report"))?,
            Some(_) => return Err(InputError::at("report", "must be a table ([report])")),
        };
        if !matches!(doc.get("run"), None | Some(Value::Array(_))) {
            return Err(InputError::at(
                "run",
                "write workload steps as [[run]] tables",
            ));
        }
        for key in ["machine", "kernel"] {
            if !matches!(doc.get(key), None | Some(Value::Table(_))) {
                return Err(InputError::at(
                    key,
                    format!("`{key}` must be a table ([{key}])"),
                ));
            }
        }
        let sc = Scenario {
            name,
            description,
            seed,
            source: source.to_string(),
            dir,
            base: doc,
            cases,
            papers,
            fits,
            views,
            report,
            machines: MachineCache::default(),
        };
        // Resolve every case now, as it will run (with the run's `--set`
        // overrides): bad input is refused before anything runs.
        let mut resolved = Vec::new();
        for i in 0..sc.cases.len() {
            resolved.push(sc.resolve(i, sets)?);
        }
        for (i, v) in sc.views.iter().enumerate() {
            check_view(v, &sc, &resolved).map_err(|e| e.under(&format!("view[{i}]")))?;
        }
        // A [[paper]] metric no step reports is a typo, refused like a
        // view's (it would otherwise match nothing and score nothing).
        let metrics = produced_metrics(&resolved);
        for (i, f) in sc.report.figures.iter().enumerate() {
            if !metrics.contains(&f.metric) {
                let hint = table::nearest(&f.metric, metrics.iter().map(String::as_str))
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                return Err(InputError::at(
                    format!("report.figure[{i}].metric"),
                    format!(
                        "`{}` is not a metric of this scenario's steps{hint}; allowed: {}",
                        crate::error::clip(&f.metric, 80),
                        metrics.join(", ")
                    ),
                )
                .allowing(metrics.join(", ")));
            }
        }
        for (i, p) in sc.papers.iter().enumerate() {
            if !metrics.contains(&p.metric) {
                let hint = table::nearest(&p.metric, metrics.iter().map(String::as_str))
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                return Err(InputError::at(
                    format!("paper[{i}].metric"),
                    format!(
                        "`{}` is not a metric of this scenario's steps{hint}; allowed: {}",
                        crate::error::clip(&p.metric, 80),
                        metrics.join(", ")
                    ),
                )
                .allowing(metrics.join(", ")));
            }
        }
        Ok(sc)
    }

    /// The scenario's own tables (`[machine]`, `[kernel]`, `[[run]]`) as
    /// written, before any case or `--set`: what the report shows as knobs.
    pub fn base(&self) -> &Table {
        &self.base
    }

    /// The scenario as the report shows it: plain data, with the first
    /// case's machine resolved (None where it does not resolve).
    pub fn describe(&self) -> RunDesc {
        fn text(v: &Value) -> String {
            match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }
        }
        let mut knobs = Vec::new();
        for section in ["kernel", "machine"] {
            if let Some(Value::Table(t)) = self.base.get(section) {
                for (k, v) in t {
                    if section == "machine" && k == "preset" {
                        continue;
                    }
                    knobs.push((section.to_string(), k.clone(), text(v)));
                }
            }
        }
        RunDesc {
            name: self.name.clone(),
            description: self.description.clone(),
            source: self.source.clone(),
            papers: self.papers.clone(),
            fits: self.fits.clone(),
            views: self.views.clone(),
            hints: self.report.clone(),
            machine_name: self
                .base
                .get("machine")
                .and_then(|m| m.get("preset"))
                .and_then(Value::as_str)
                .unwrap_or("(inline)")
                .to_string(),
            machine: self.resolve(0, &[]).ok().map(|c| MachineDesc {
                nodes: c.machine.node_count(),
                cpus: c.machine.cpu_count(),
                mem_bytes: c.machine.mem_bytes(),
                description: c.machine.description.clone(),
            }),
            knobs,
            cases: self
                .cases
                .iter()
                .map(|c| c.iter().map(|(k, v)| (k.clone(), text(v))).collect())
                .collect(),
        }
    }

    /// The dotted keys any case varies, in first-seen order.
    pub fn varied_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for c in &self.cases {
            for (k, _) in c {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        keys
    }

    /// Apply `--set KEY=VALUE` overrides to the scenario's base (they win over cases).
    pub fn resolve(
        &self,
        case: usize,
        sets: &[(String, Value)],
    ) -> Result<ResolvedCase, InputError> {
        let mut doc = self.base.clone();
        let overrides = self.cases[case].iter().chain(sets.iter());
        for (k, v) in overrides.clone() {
            // The case key `kernel` names the kernel flavour (flavour.rs).
            if k == "kernel" && !v.is_table() {
                apply_dotted(&mut doc, "kernel.flavour", v.clone())?;
                continue;
            }
            apply_dotted(&mut doc, k, v.clone())?;
        }
        let mut top = TableReader::new("", &doc);
        let seed = top.u64("seed")?.unwrap_or(self.seed);
        let empty = Table::new();
        let mtable = match doc.get("machine") {
            Some(Value::Table(t)) => t,
            _ => {
                return Err(InputError::at(
                    "machine",
                    "missing: say which machine, e.g. [machine] preset = \"altix-512\"",
                ))
            }
        };
        let machine = self.resolve_machine(mtable)?;
        let ktable = match doc.get("kernel") {
            Some(Value::Table(t)) => t,
            _ => &empty,
        };
        let mut kr = TableReader::new("kernel", ktable);
        let kernel = KernelConfig::read(&mut kr, &machine)?;
        kr.finish().map_err(step_key_hint)?;
        let steps: Vec<Table> = match doc.get("run") {
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::Table(t) => Ok(t.clone()),
                    _ => Err(InputError::at(
                        format!("run[{i}]"),
                        "each [[run]] must be a table",
                    )),
                })
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(InputError::at(
                    "run",
                    "missing: add at least one [[run]] step, e.g. workload = \"boot\"",
                ))
            }
        };
        // Unprefixed case keys override the same key in every step that has
        // it; label keys only name the case (the spec's `config = "default"`).
        let mut steps = steps;
        for (k, v) in overrides {
            if !k.contains('.') && k != "seed" && !CASE_LABEL_KEYS.contains(&k.as_str()) {
                let mut used = false;
                for s in &mut steps {
                    if s.contains_key(k) {
                        s.insert(k.clone(), v.clone());
                        used = true;
                    }
                }
                if !used {
                    return Err(InputError::at(
                        k.clone(),
                        "no [[run]] step has this key, so the override would do nothing",
                    ));
                }
            }
        }
        // Each step is read once, here, on this case's own machine (after
        // its and `--set`'s overrides): the run path runs what was read.
        let mut parsed = Vec::with_capacity(steps.len());
        for (i, s) in steps.iter().enumerate() {
            let p = crate::workload::parse_step(s, &machine)
                .map_err(|e| e.under(&format!("run[{i}]")))?;
            p.run
                .check_cost(&machine, &kernel)
                .map_err(|e| e.in_step(i))?;
            parsed.push(p);
        }
        // Every record carries every varied key: this case's value, or the
        // value in force (from the file, a preset, or the kernel's default).
        let keys = self
            .varied_keys()
            .into_iter()
            .map(|k| {
                let v = self.cases[case]
                    .iter()
                    .chain(sets.iter())
                    .rev()
                    .find(|(ck, _)| *ck == k)
                    .map(|(_, v)| toml_to_json(v))
                    .or_else(|| lookup(&doc, &k).map(toml_to_json))
                    .or_else(|| {
                        k.strip_prefix("kernel.")
                            .and_then(|knob| kernel.knob_json(knob))
                    })
                    .unwrap_or(Json::Null);
                (k, v)
            })
            .collect();
        Ok(ResolvedCase {
            keys,
            machine,
            kernel,
            seed,
            steps,
            parsed,
        })
    }

    fn resolve_machine(&self, inline: &Table) -> Result<Arc<Machine>, InputError> {
        if let Some(m) = self.machines.get(inline) {
            return Ok(m);
        }
        let m = Arc::new(self.build_machine(inline)?);
        Ok(self.machines.insert(inline.clone(), m))
    }

    fn build_machine(&self, inline: &Table) -> Result<Machine, InputError> {
        let mut inline = inline.clone();
        let preset = inline.remove("preset");
        let mut base = match preset {
            None => Table::new(),
            Some(Value::String(p)) if p.ends_with(".toml") || p.contains('/') => {
                self.machine_file(&p)?
            }
            Some(Value::String(p)) => {
                let file = format!("machines/{p}.toml");
                crate::machine::slit_text::parse_toml(presets::preset_text(&p)?).map_err(|e| {
                    InputError::new(format!("not valid TOML: {e}")).in_file(file.clone())
                })?
            }
            Some(other) => {
                return Err(InputError::at(
                    "machine.preset",
                    format!(
                        "expected a preset name or a path, found {}",
                        table::describe(&other)
                    ),
                ));
            }
        };
        deep_merge(&mut base, inline);
        Machine::from_table(&base).map_err(|e| e.under("machine"))
    }
}

impl Scenario {
    /// Read a machine file named by `preset` and validate it on its own, so
    /// that a bad value in it is reported against that file (not the
    /// scenario), even where the scenario overrides it or a neighbouring key
    /// (`memory` drops the file's `mem_per_node` in the merge). Only keys the
    /// file leaves out ("missing") are left for the scenario to supply.
    fn machine_file(&self, p: &str) -> Result<Table, InputError> {
        let path = match &self.dir {
            Some(d) if Path::new(p).is_relative() => d.join(p),
            _ => PathBuf::from(p),
        };
        let file = path.display().to_string();
        let text =
            crate::input::read_bounded_text(&path, crate::input::MAX_INPUT_BYTES, "a machine file")
                .map_err(
                    |e| match e.message.strip_prefix("cannot read a machine file: ") {
                        // Where the file cannot be opened, the scenario's key is the one
                        // to fix; a file too large is the file's.
                        Some(why) => InputError::at(
                            "machine.preset",
                            format!("cannot read machine file {file}: {why}"),
                        ),
                        None => e,
                    },
                )?;
        let table = crate::machine::slit_text::parse_toml(&text)
            .map_err(|e| InputError::new(format!("not valid TOML: {e}")).in_file(file.clone()))?;
        match Machine::from_table(&table) {
            Err(e) if !e.message.starts_with("missing") => Err(e.in_file(file)),
            _ => Ok(table),
        }
    }
}

/// The value of a dotted key in a document, if set.
fn lookup<'a>(doc: &'a Table, key: &str) -> Option<&'a Value> {
    let mut parts = key.split('.');
    let mut v = doc.get(parts.next()?)?;
    for p in parts {
        v = v.as_table()?.get(p)?;
    }
    Some(v)
}

fn check_case_key(key: &str) -> Result<(), InputError> {
    if key == "machine.preset"
        || key.starts_with("machine.")
        || key.starts_with("kernel.")
        || !key.contains('.')
    {
        return Ok(());
    }
    Err(InputError::at(
        key,
        "case keys are `machine.*`, `kernel.*`, `seed`, or a key of the [[run]] steps",
    ))
}

fn read_paper(v: &Value) -> Result<PaperRow, InputError> {
    let Value::Table(t) = v else {
        return Err(InputError::new("must be a table"));
    };
    let mut r = TableReader::new("", t);
    let case = match r.raw("case") {
        None => vec![],
        Some(Value::Table(c)) => c
            .iter()
            .map(|(k, v)| (k.clone(), toml_to_json(v)))
            .collect(),
        Some(_) => {
            return Err(InputError::at(
                "case",
                "must be an inline table, e.g. { \"kernel.hashdist\" = 0, node = 3 }",
            ))
        }
    };
    let metric = r
        .str("metric")?
        .ok_or_else(|| InputError::at("metric", "missing"))?
        .to_string();
    let range = match r.raw("range") {
        None => None,
        Some(Value::Array(a)) => match a.as_slice() {
            [lo, hi] => {
                let num = |v: &Value| match v {
                    Value::Integer(i) => Some(*i as f64),
                    Value::Float(f) if f.is_finite() => Some(*f),
                    _ => None,
                };
                match (num(lo), num(hi)) {
                    (Some(lo), Some(hi)) if lo <= hi => Some((lo, hi)),
                    _ => None,
                }
            }
            _ => None,
        }
        .map(Some)
        .ok_or_else(|| {
            InputError::at(
                "range",
                "must be two finite numbers, low then high, e.g. range = [10, 15] \
                 for a published \"10–15%\"",
            )
        })?,
        Some(_) => {
            return Err(InputError::at(
                "range",
                "must be an array of two numbers, e.g. range = [10, 15]",
            ))
        }
    };
    let value = match (range, r.f64("value")?) {
        (Some(_), Some(_)) => {
            return Err(InputError::at(
                "value",
                "give either `value` (a point or, with `bound`, a ceiling or floor) \
                 or `range = [low, high]`, not both",
            ))
        }
        (Some((lo, _)), None) => lo,
        (None, Some(v)) => v,
        (None, None) => {
            return Err(InputError::at(
                "value",
                "missing: give `value`, or `range = [low, high]` for a published range",
            ))
        }
    };
    let tolerance = r.nonneg_f64("tolerance")?;
    // Required: a default would silently score a fitted or copied value as
    // a validation (or hide a validation among calibrations).
    if let Some(Value::String(old)) = r.raw("role") {
        if old == "prediction" {
            return Err(InputError::at(
                "role",
                "`prediction` is now `validation` (a published figure nothing was fitted \
                 to; every published value was in view while the model was built, so none \
                 is blind); allowed: calibration, validation, input",
            ));
        }
    }
    let role = r.choice("role", Role::NAMES)?.ok_or_else(|| {
        InputError::at(
            "role",
            "missing: say what the published value is to the model: `calibration` \
             (a parameter was fitted to it, or it follows from a fitted parameter \
             alone), `input` (copied into the machine or workload) or `validation` \
             (nothing was fitted to it)",
        )
    })?;
    let at = r.choice("at", PaperAt::NAMES)?.unwrap_or_default();
    let bound = match (range, r.choice("bound", Bound::NAMES)?) {
        (Some(_), Some(_)) => {
            return Err(InputError::at(
                "bound",
                "a range is its own bound: drop `bound` or `range`",
            ))
        }
        (Some(_), None) => Bound::Range,
        (None, Some(Bound::Range)) => {
            return Err(InputError::at(
                "bound",
                "write a range as `range = [low, high]` instead of `value` and `bound`",
            ))
        }
        (None, b) => b.unwrap_or_default(),
    };
    r.allow("source");
    let note = r.str("note")?.map(str::to_string);
    r.finish()?;
    Ok(PaperRow {
        case,
        metric,
        value,
        high: range.map(|(_, hi)| hi),
        tolerance,
        role,
        at,
        bound,
        note,
    })
}

/// A `[[fit]]` table: `parameter`, `doc`, and `rows`, each row a
/// `{ metric, case }` that must name a calibration row of this file.
fn read_fit(v: &Value, papers: &[PaperRow]) -> Result<FitDecl, InputError> {
    let Value::Table(t) = v else {
        return Err(InputError::new("must be a table"));
    };
    let mut r = TableReader::new("", t);
    let parameter = r
        .str("parameter")?
        .ok_or_else(|| InputError::at("parameter", "missing: the key that was fitted"))?
        .to_string();
    let doc = r
        .str("doc")?
        .ok_or_else(|| InputError::at("doc", "missing: the docs/ page with the arithmetic"))?
        .to_string();
    if !doc.starts_with("docs/") || doc.contains("..") || !doc.ends_with(".md") {
        return Err(InputError::at(
            "doc",
            format!("{doc:?}: allowed: a page under docs/, e.g. \"docs/tlb.md\""),
        ));
    }
    let Some(Value::Array(items)) = r.raw("rows") else {
        return Err(InputError::at(
            "rows",
            "missing: the calibration rows it was fitted on, e.g. \
             rows = [{ metric = \"copy_mbps\", case = { size = \"16 MB\" } }]",
        ));
    };
    let mut rows = Vec::new();
    let mut published = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("rows[{i}]");
        let Value::Table(row) = item else {
            return Err(InputError::at(
                at,
                "must be an inline table { metric, case }",
            ));
        };
        let metric = match row.get("metric") {
            Some(Value::String(m)) => m.clone(),
            _ => return Err(InputError::at(at, "needs `metric`, a string")),
        };
        let case: Vec<(String, Json)> = match row.get("case") {
            None => vec![],
            Some(Value::Table(c)) => c
                .iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
            Some(_) => return Err(InputError::at(at, "`case` must be an inline table")),
        };
        if let Some(k) = row.keys().find(|k| *k != "metric" && *k != "case") {
            return Err(InputError::at(
                at,
                format!("unknown key `{k}`; allowed: metric, case"),
            ));
        }
        let hit = papers.iter().find(|p| {
            p.metric == metric
                && p.case.len() == case.len()
                && p.case.iter().all(|(k, v)| {
                    case.iter()
                        .any(|(k2, v2)| k == k2 && crate::report::paper::same(v, v2))
                })
        });
        match hit {
            Some(p) if p.role == Role::Calibration => {
                rows.push((metric, case));
                published.push((p.value, p.bound));
            }
            Some(p) => {
                return Err(InputError::at(
                    at,
                    format!(
                        "names a `{}` row; a parameter is fitted only to calibration rows",
                        p.role
                    ),
                ))
            }
            None => {
                return Err(InputError::at(
                    at,
                    format!("no [[paper]] row of this file has metric `{metric}` and this case"),
                ))
            }
        }
    }
    r.finish()?;
    Ok(FitDecl {
        parameter,
        rows,
        doc,
        published,
    })
}

/// The `[report]` table: question, doc and `[[report.figure]]` hints.
fn read_report(t: &Table) -> Result<ReportHints, InputError> {
    let mut r = TableReader::new("", t);
    let question = r.str("question")?.map(str::to_string);
    let doc = r.str("doc")?.map(str::to_string);
    if let Some(d) = &doc {
        // A path inside the repository's docs, so the link cannot point elsewhere.
        if !d.starts_with("docs/") || d.contains("..") || !d.ends_with(".md") {
            return Err(InputError::at(
                "doc",
                format!("{d:?}: allowed: a page under docs/, e.g. \"docs/placement.md\""),
            ));
        }
    }
    let figures = match r.raw("figure") {
        None => vec![],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| read_figure(v).map_err(|e| e.under(&format!("figure[{i}]"))))
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(InputError::at(
                "figure",
                "write figures as [[report.figure]] tables",
            ))
        }
    };
    r.finish()?;
    Ok(ReportHints {
        question,
        doc,
        figures,
    })
}

fn read_figure(v: &Value) -> Result<FigureHint, InputError> {
    let Value::Table(t) = v else {
        return Err(InputError::new("must be a table"));
    };
    let mut r = TableReader::new("", t);
    let metric = r
        .str("metric")?
        .ok_or_else(|| InputError::at("metric", "missing: the metric to plot"))?
        .to_string();
    let shape = r.choice("shape", Shape::NAMES)?.unwrap_or(Shape::Auto);
    let title = r.str("title")?.map(str::to_string);
    let logx = r.bool("logx")?;
    let logy = r.bool("logy")?;
    let marks = match r.raw("mark") {
        None => vec![],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| read_mark(v).map_err(|e| e.under(&format!("mark[{i}]"))))
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(InputError::at(
                "mark",
                "write marks as [[report.figure.mark]] tables with `x` and `text`",
            ))
        }
    };
    r.finish()?;
    Ok(FigureHint {
        metric,
        shape,
        title,
        logx,
        logy,
        marks,
    })
}

/// A `[[report.figure.mark]]`: `x` (a number, or `[low, high]` for a band)
/// and `text`, the paper's words on the curve's shape.
fn read_mark(v: &Value) -> Result<XMark, InputError> {
    let Value::Table(t) = v else {
        return Err(InputError::new("must be a table"));
    };
    let mut r = TableReader::new("", t);
    const ALLOWED: &str = "a number of the figure's x axis (x = 16), or a band x = [8, 32]";
    let num = |v: &Value| match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    };
    let (x, x_high) = match r.raw("x") {
        None => return Err(InputError::at("x", format!("missing: allowed: {ALLOWED}"))),
        Some(Value::Array(a)) => match a.as_slice() {
            [lo, hi] => match (num(lo), num(hi)) {
                (Some(lo), Some(hi)) if lo < hi => (lo, Some(hi)),
                _ => {
                    return Err(InputError::at(
                        "x",
                        format!("allowed: {ALLOWED}, low < high"),
                    ))
                }
            },
            _ => return Err(InputError::at("x", format!("allowed: {ALLOWED}"))),
        },
        Some(v) => match num(v) {
            Some(x) => (x, None),
            None => return Err(InputError::at("x", format!("allowed: {ALLOWED}"))),
        },
    };
    let text = r
        .str("text")?
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| InputError::at("text", "missing: the paper's words this mark shows"))?
        .to_string();
    r.finish()?;
    Ok(XMark { x, x_high, text })
}

fn read_view(v: &Value) -> Result<View, InputError> {
    let Value::Table(t) = v else {
        return Err(InputError::new("must be a table"));
    };
    let mut r = TableReader::new("", t);
    let need = |r: &mut TableReader, key: &'static str| -> Result<String, InputError> {
        Ok(r.str(key)?
            .ok_or_else(|| InputError::at(key, "missing"))?
            .to_string())
    };
    let metric = need(&mut r, "metric")?;
    let rows = need(&mut r, "rows")?;
    let columns = need(&mut r, "columns")?;
    let title = r.str("title")?.unwrap_or(&metric).to_string();
    let baseline = match r.raw("baseline") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Integer(i)) => Some(i.to_string()),
        Some(other) => {
            return Err(InputError::at(
                "baseline",
                format!(
                    "expected a value of the `columns` key, found {}",
                    table::describe(other)
                ),
            ))
        }
    };
    let better = r.choice("better", Better::NAMES)?.unwrap_or(Better::Higher);
    let plot = r.choice("plot", Plot::NAMES)?.unwrap_or(Plot::Table);
    let x = r.str("x")?.map(str::to_string);
    r.finish()?;
    if x.is_some() && plot != Plot::Lines {
        return Err(InputError::at(
            "x",
            "an x metric needs plot = \"lines\" (a heat map or table has no x axis)",
        ));
    }
    if rows == columns {
        return Err(InputError::at(
            "columns",
            format!("`{columns}` is also the rows key; pick two different keys"),
        ));
    }
    Ok(View {
        title,
        metric,
        rows,
        columns,
        baseline,
        better,
        plot,
        x,
    })
}

/// An unknown `[kernel]` key that is a workload step's key (`policy`,
/// `bytes`) is said to belong in a `[[run]]` step.
fn step_key_hint(mut e: InputError) -> InputError {
    let Some(key) = e.key.as_deref().and_then(|k| k.strip_prefix("kernel.")) else {
        return e;
    };
    let owners: Vec<&str> = crate::workload::WORKLOADS
        .iter()
        .filter(|s| s.param(key).is_some())
        .map(|s| s.name)
        .collect();
    if !owners.is_empty() {
        e.message.push_str(&format!(
            " `{key}` is a key of a [[run]] step, not of [kernel]: workload {} \
             (`numasim workloads {}`).",
            owners.join(", "),
            owners[0]
        ));
    }
    e
}

/// A view may only name what the scenario produces: a metric of one of its
/// steps, and keys that its records carry.
/// The metrics the scenario's steps report (after their `metrics` filters).
fn produced_metrics(cases: &[ResolvedCase]) -> Vec<String> {
    let mut metrics: Vec<String> = Vec::new();
    for c in cases {
        for step in &c.parsed {
            for m in step.produced_metrics() {
                if !metrics.contains(&m) {
                    metrics.push(m);
                }
            }
        }
    }
    metrics
}

fn check_view(v: &View, sc: &Scenario, cases: &[ResolvedCase]) -> Result<(), InputError> {
    let mut metrics: Vec<String> = Vec::new();
    let mut keys: Vec<String> = sc.varied_keys();
    // Per-row keys workloads add to records beyond the case and step keys
    // (`node` from touch/meminfo, `table` from boot): each workload's spec
    // names its own.
    keys.extend(crate::workload::row_keys().iter().map(|k| k.to_string()));
    for c in cases {
        for (step, parsed) in c.steps.iter().zip(&c.parsed) {
            for m in parsed.produced_metrics() {
                if !metrics.contains(&m) {
                    metrics.push(m);
                }
            }
            for k in step.keys() {
                if k != "workload" && k != "metrics" && !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
    }
    let refuse = |key: &str, what: &str, val: &str, allowed: &[String]| {
        let hint = table::nearest(val, allowed.iter().map(String::as_str))
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        InputError::at(
            key,
            format!(
                "`{}` is not {what} of this scenario{hint}; allowed: {}",
                crate::error::clip(val, 80),
                allowed.join(", ")
            ),
        )
        .allowing(allowed.join(", "))
    };
    if !metrics.contains(&v.metric) {
        return Err(refuse("metric", "a metric", &v.metric, &metrics));
    }
    if let Some(x) = v.x.as_ref().filter(|x| !metrics.contains(x)) {
        return Err(refuse("x", "a metric", x, &metrics));
    }
    for (key, val) in [("rows", &v.rows), ("columns", &v.columns)] {
        if !keys.contains(val) {
            return Err(refuse(key, "a key", val, &keys));
        }
    }
    // Where the column values are known before running (a case key, or a
    // step key's value or list), the baseline must be one of them.
    if let Some(b) = &v.baseline {
        let mut values: Vec<String> = Vec::new();
        let mut known = false;
        for c in cases {
            if let Some((_, j)) = c.keys.iter().find(|(k, _)| *k == v.columns) {
                known = true;
                values.push(crate::report::table::fmt_json(j));
            } else if let Some(t) = c.steps.iter().find_map(|s| s.get(&v.columns)) {
                known = true;
                match t {
                    Value::Array(items) => values.extend(
                        items
                            .iter()
                            .map(|x| crate::report::table::fmt_json(&toml_to_json(x))),
                    ),
                    x => values.push(crate::report::table::fmt_json(&toml_to_json(x))),
                }
            }
        }
        if known && !values.contains(b) {
            let mut seen = Vec::new();
            values.retain(|x| {
                let new = !seen.contains(x);
                seen.push(x.clone());
                new
            });
            return Err(refuse("baseline", "a value of `columns`", b, &values));
        }
    }
    Ok(())
}

pub use crate::machine::slit_text::toml_to_json;

/// Parse `KEY=VALUE` from the command line: the value as TOML if it parses
/// (`1`, `true`, `"x"`, `[1,2]`), else as a bare string (`local`, `4 TB`).
pub fn parse_set(arg: &str) -> Result<(String, Value), InputError> {
    let (k, v) = arg.split_once('=').ok_or_else(|| {
        InputError::new(format!(
            "--set `{arg}`: write KEY=VALUE, e.g. --set kernel.hashdist=0"
        ))
    })?;
    let key = k.trim().to_string();
    if key.is_empty() {
        return Err(InputError::new(format!("--set `{arg}`: the key is empty")));
    }
    let text = v.trim();
    // A release is text: "3.10" read as a number would become 3.1.
    if key == "kernel.version" {
        return Ok((key, Value::String(text.trim_matches('"').to_string())));
    }
    let value = format!("v = {text}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(text.to_string()));
    Ok((key, value))
}
