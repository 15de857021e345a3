//! Running a scenario: every case (in parallel: they share nothing), then
//! the published values attached to the records they describe.

use super::{PaperAt, PaperRow, Scenario};
use crate::error::Error;
use crate::report::Artifact;
use crate::report::Record;
use crate::workload::run_case_with_artifacts;
use rayon::prelude::*;
use toml::Value;

/// Run all cases with `--set` overrides; records come back in case order,
/// so the output is the same whatever the thread count.
pub fn run(sc: &Scenario, sets: &[(String, Value)]) -> Result<Vec<Record>, Error> {
    run_with_artifacts(sc, sets, false, &|| {}).map(|(r, _)| r)
}

/// As [`run`], also returning the files the cases made (timelines) when
/// `files`; `case_done` is called as each case finishes (for a progress
/// bar).
pub fn run_with_artifacts(
    sc: &Scenario,
    sets: &[(String, Value)],
    files: bool,
    case_done: &(dyn Fn() + Sync),
) -> Result<(Vec<Record>, Vec<Artifact>), Error> {
    let per_case: Vec<Result<(Vec<Record>, Vec<Artifact>), Error>> = (0..sc.cases.len())
        .into_par_iter()
        .map(|i| {
            let case = sc
                .resolve(i, sets)
                .map_err(|e| e.in_file(sc.source.clone()))?;
            let mut r =
                run_case_with_artifacts(&sc.name, &case, files).map_err(|e| e.in_file(&sc.source));
            // A --set that changes the machine or kernel of this case makes
            // its published values incomparable (a seed is only a draw).
            // A case the file alone cannot run (its steps need the machine
            // the overrides make) has nothing to compare with either.
            if sets.iter().any(|(k, _)| k != "seed") {
                let comparable = sc.resolve(i, &[]).is_ok_and(|plain| {
                    let same_machine = std::sync::Arc::ptr_eq(&plain.machine, &case.machine)
                        || plain.machine == case.machine;
                    same_machine && plain.kernel == case.kernel
                });
                if !comparable {
                    if let Ok((recs, _)) = &mut r {
                        recs.iter_mut().for_each(|rec| rec.comparable = false);
                    }
                }
            }
            case_done();
            r
        })
        .collect();
    let mut out = Vec::new();
    let mut files = Vec::new();
    for r in per_case {
        let (recs, arts) = r?;
        out.extend(recs);
        files.extend(arts);
    }
    attach_paper(&mut out, &sc.papers);
    Ok((out, files))
}

/// One line per case step whose result a machine default decided (the
/// memory-system workloads, workload/membw.rs; a 2004 default on a
/// machine of today, machine/defaults.rs; the seqcount clock read that
/// hides a `gettimeofday` storm, workload/gettimeofday.rs), each line once.
pub fn default_warnings(sc: &Scenario, sets: &[(String, Value)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in 0..sc.cases.len() {
        let Ok(case) = sc.resolve(i, sets) else {
            continue;
        };
        let workloads: Vec<&str> = case
            .steps
            .iter()
            .filter_map(|s| s.get("workload").and_then(Value::as_str))
            .collect();
        // Whether anyone chose the clock read: the [kernel] table, this
        // case or a --set.
        let gtod_set = sc
            .base
            .get("kernel")
            .and_then(Value::as_table)
            .is_some_and(|k| k.contains_key("gettimeofday"))
            || sc.cases[i].iter().any(|(k, _)| k == "kernel.gettimeofday")
            || sets.iter().any(|(k, _)| k == "kernel.gettimeofday");
        for w in crate::workload::membw::default_warnings(&case)
            .into_iter()
            .chain(crate::workload::gettimeofday::seqcount_default_note(
                &case, gtod_set,
            ))
            .chain(crate::machine::defaults::era_warnings(
                &case.machine,
                &workloads,
            ))
        {
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

/// One line per `gettimeofday` point simulated as a window of its calls
/// whose callers starved: the window (or its budget of line grants) ended
/// before the farthest callers finished a call, so `time_per_call_ns` is an
/// estimate from that window, the threads' time in calls over the calls
/// they completed, not a full run's mean (workload/gettimeofday.rs,
/// `WINDOW_GRANTS`).
pub fn windowed_runs(records: &[Record]) -> Vec<String> {
    let of = |r: &Record, metric: &str| {
        records
            .iter()
            .find(|x| x.metric == metric && x.case == r.case && x.experiment == r.experiment)
            .and_then(|x| x.value)
    };
    records
        .iter()
        .filter(|r| r.metric == "starved_callers" && r.value.is_some_and(|v| v > 0.0))
        .filter_map(|r| {
            let starved = r.value?;
            let w = of(r, "windowed_calls")?;
            let case: Vec<String> = r.case.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            Some(format!(
                "{}: {{ {} }} simulated a window of {w} calls per thread; {starved} callers \
                 had none done when the first caller finished it or its grant budget ran out, so time_per_call_ns is the window's estimate \
                 (time in calls over calls completed), not a full run's mean",
                r.experiment,
                case.join(", "),
            ))
        })
        .collect()
}

/// One line per case that stopped at its simulated-time horizon with work
/// left (`incomplete_at_s` set): its other records describe only the part
/// that ran, and `completed = 0` must not be read as a result.
pub fn incomplete_runs(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r.metric == "incomplete_at_s")
        .filter_map(|r| {
            let at = r.value?;
            let case: Vec<String> = r.case.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            let case = if case.is_empty() {
                String::new()
            } else {
                format!(" {{ {} }}", case.join(", "))
            };
            Some(format!(
                "{}:{case} stopped at the {at} s simulated-time horizon with work left \
                 (incomplete; raise horizon_s)",
                r.experiment,
            ))
        })
        .collect()
}

fn matches(p: &PaperRow, r: &Record) -> bool {
    p.metric == r.metric
        && p.case.iter().all(|(k, v)| {
            r.case_value(k)
                .is_some_and(|rv| crate::report::paper::same(rv, v))
        })
}

/// The one record an `at = "max"`/`"min"` row describes: the matching
/// record with the largest (smallest) value, the first of equals; `None`
/// for `at = "each"` or where no matching record has a value.
fn extreme_of(records: &[Record], p: &PaperRow) -> Option<usize> {
    let better = |v: f64, best: f64| match p.at {
        PaperAt::Each => false,
        PaperAt::Max => v > best,
        PaperAt::Min => v < best,
    };
    if p.at == PaperAt::Each {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for (i, r) in records.iter().enumerate() {
        let Some(v) = r.value.filter(|v| !v.is_nan()) else {
            continue;
        };
        if matches(p, r) && best.is_none_or(|(_, b)| better(v, b)) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// Give each record the published value whose case keys it matches (the
/// first such row; an `at = "max"`/`"min"` row only on its extreme record).
pub fn attach_paper(records: &mut [Record], papers: &[PaperRow]) {
    let extremes: Vec<Option<usize>> = papers.iter().map(|p| extreme_of(records, p)).collect();
    for (i, r) in records.iter_mut().enumerate() {
        if let Some(p) = papers.iter().zip(&extremes).find_map(|(p, ext)| {
            let here = match p.at {
                PaperAt::Each => true,
                PaperAt::Max | PaperAt::Min => *ext == Some(i),
            };
            (here && matches(p, r)).then_some(p)
        }) {
            r.paper = Some(p.value);
            r.paper_high = p.high;
            r.role = Some(p.role);
            r.paper_bound = p.bound;
        }
    }
}

/// Paper rows no record matched: a typo in an experiment file shows up here.
pub fn unmatched_papers<'a>(records: &[Record], papers: &'a [PaperRow]) -> Vec<&'a PaperRow> {
    papers
        .iter()
        .filter(|p| !records.iter().any(|r| matches(p, r)))
        .collect()
}
