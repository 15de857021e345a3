//! How far an experiment's simulated values are from the published ones,
//! kept apart by role: a calibration row agrees because a parameter was
//! fitted to it, an input row because it was copied in; only validation
//! rows test the model. Inputs are listed, never counted as matches. Each
//! summary also names the parameters fitted to its calibration rows, so the
//! degrees of freedom stand beside the rows they were spent on.

use super::paper::{FitDecl, PaperRow};
use super::{Bound, Record, Role};
use serde_json::{json, Value as Json};
use std::fmt;

/// One record that has a published value.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    pub role: Role,
    /// (simulated − paper) / |paper|.
    pub deviation: f64,
    pub tolerance: Option<f64>,
    /// Whether the published value is the value or a bound on it.
    pub bound: Bound,
    /// The metric and case, for the worst-row pointer.
    pub what: String,
}

impl Compared {
    pub fn within(&self) -> bool {
        self.tolerance
            .is_some_and(|t| self.bound.within(self.deviation, t))
    }

    /// What the scores count: the deviation, or for a bound only the part
    /// beyond it (a throughput well under a published ceiling is no miss).
    pub fn excess(&self) -> f64 {
        self.bound.excess(self.deviation)
    }
}

/// The figures of one role, over one experiment or many.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleStats {
    pub role: Role,
    pub rows: usize,
    pub with_tolerance: usize,
    pub within: usize,
    pub median_abs_dev: f64,
    /// The largest |deviation| (for a bound, |excess beyond it|), signed, and where (`experiment: metric [case]`
    /// in totals, `metric [case]` per experiment).
    pub worst: Option<(f64, String)>,
}

impl RoleStats {
    fn of<'a>(role: Role, rows: impl Iterator<Item = (&'a str, &'a Compared)>) -> RoleStats {
        let mut s = RoleStats {
            role,
            rows: 0,
            with_tolerance: 0,
            within: 0,
            median_abs_dev: 0.0,
            worst: None,
        };
        let mut devs = Vec::new();
        for (prefix, c) in rows.filter(|(_, c)| c.role == role) {
            s.rows += 1;
            s.with_tolerance += usize::from(c.tolerance.is_some());
            s.within += usize::from(c.within());
            let d = c.excess();
            devs.push(d.abs());
            if s.worst.as_ref().is_none_or(|(w, _)| d.abs() > w.abs()) {
                s.worst = Some((d, format!("{prefix}{}", c.what)));
            }
        }
        s.median_abs_dev = median(&mut devs);
        s
    }

    /// "calibration  16 rows, median |Δ| 0.2%, within tolerance 16/16; worst
    /// +1.6% at …"; in totals, with "in N experiments" after the count.
    fn line(&self, experiments: Option<usize>) -> String {
        let mut rows = format!("{:<11} {:>3} row", self.role.as_str(), self.rows);
        if self.rows != 1 {
            rows.push('s');
        }
        if let Some(n) = experiments {
            rows += &format!(" in {n} experiment{}", if n == 1 { "" } else { "s" });
        }
        let worst = self
            .worst
            .as_ref()
            .map(|(d, w)| format!("worst {:+.1}% at {w}", d * 100.0))
            .unwrap_or_default();
        if !self.role.scored() {
            let max = self.worst.as_ref().map_or(0.0, |(d, _)| d.abs());
            return format!(
                "{rows} (copied, not scored; largest |Δ| {:.1}%)",
                max * 100.0
            );
        }
        format!(
            "{rows}, median |Δ| {:.1}%, within tolerance {}/{}; {worst}",
            self.median_abs_dev * 100.0,
            self.within,
            self.with_tolerance
        )
    }
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub experiment: String,
    /// Scored records (calibration and prediction) with a published value.
    pub compared: usize,
    /// Of those, how many have a stated tolerance and lie within it.
    pub within: usize,
    pub with_tolerance: usize,
    /// Records whose published value is an input (listed, not scored).
    pub inputs: usize,
    /// Every record with a published value, in record order.
    pub rows: Vec<Compared>,
    /// Records with a published value that a `--set` made incomparable:
    /// in no role's score, counted here.
    pub not_comparable: usize,
    /// The parameters fitted to this experiment's calibration rows.
    pub fits: Vec<FitDecl>,
}

impl Summary {
    pub fn of(experiment: &str, records: &[Record], papers: &[PaperRow]) -> Summary {
        let mut rows = Vec::new();
        let mut not_comparable = 0;
        for r in records {
            if r.paper.is_some() && !r.comparable {
                not_comparable += 1;
                continue;
            }
            let Some(d) = r.deviation() else { continue };
            let case: Vec<String> = r
                .case
                .iter()
                .map(|(k, v)| format!("{k}={}", super::table::fmt_json(v)))
                .collect();
            let role = match (r.role, paper_of(r, papers)) {
                (Some(role), _) => role,
                (None, Some(p)) => p.role,
                // Built without `attach_paper`: nothing says it was fitted.
                (None, None) => Role::Validation,
            };
            rows.push(Compared {
                role,
                deviation: d,
                tolerance: paper_of(r, papers).and_then(|p| p.tolerance),
                bound: r.paper_bound,
                what: format!("{} [{}]", r.metric, case.join(", ")),
            });
        }
        let scored = || rows.iter().filter(|c| c.role.scored());
        Summary {
            experiment: experiment.into(),
            compared: scored().count(),
            within: scored().filter(|c| c.within()).count(),
            with_tolerance: scored().filter(|c| c.tolerance.is_some()).count(),
            inputs: rows.len() - scored().count(),
            rows,
            not_comparable,
            fits: Vec::new(),
        }
    }

    /// The same summary, naming the parameters fitted to its calibration
    /// rows (a scenario's `[[fit]]` tables).
    pub fn with_fits(mut self, fits: &[FitDecl]) -> Summary {
        self.fits = fits.to_vec();
        self
    }

    /// "fitted  2 parameters on 3 calibration rows: a, b", or that none was
    /// fitted here; `None` where the experiment has no published value.
    pub fn fit_line(&self) -> Option<String> {
        if self.rows.is_empty() && self.fits.is_empty() {
            return None;
        }
        Some(fit_words(
            self.fits.len(),
            fitted_rows(&self.fits),
            None,
            &self.fits,
        ))
    }

    /// The summary as one JSON object (`replay --format jsonl` writes it
    /// after the experiment's records): per role its counts, median and
    /// worst, and the parameters fitted with the rows they were fitted on.
    pub fn to_json_line(&self) -> String {
        let roles: serde_json::Map<String, Json> = Role::NAMES
            .iter()
            .map(|(name, role)| {
                let st = self.role(*role);
                let mut o = json!({ "rows": st.rows });
                if role.scored() {
                    o["with_tolerance"] = json!(st.with_tolerance);
                    o["within"] = json!(st.within);
                    o["median_abs_dev"] = json!(st.median_abs_dev);
                }
                if let Some((d, w)) = &st.worst {
                    o["worst"] = json!({ "deviation": d, "at": w });
                }
                ((*name).to_string(), o)
            })
            .collect();
        let fits: Vec<Json> = self
            .fits
            .iter()
            .map(|f| {
                let rows: Vec<Json> = f
                    .rows
                    .iter()
                    .map(|(m, c)| {
                        let case: serde_json::Map<String, Json> = c.iter().cloned().collect();
                        json!({ "metric": m, "case": case })
                    })
                    .collect();
                json!({ "parameter": f.parameter, "rows": rows, "doc": f.doc })
            })
            .collect();
        let mut o = json!({
            "experiment": self.experiment,
            "summary": {
                "roles": roles,
                "fitted_parameters": self.fits.len(),
                "fitted_rows": fitted_rows(&self.fits),
                "fits": fits,
            }
        });
        if self.not_comparable > 0 {
            o["summary"]["not_comparable"] = json!(self.not_comparable);
        }
        o.to_string()
    }

    /// The figures of one role (zero rows if the experiment has none).
    pub fn role(&self, role: Role) -> RoleStats {
        RoleStats::of(role, self.rows.iter().map(|c| ("", c)))
    }

    /// Every scored value with a stated tolerance lies within it.
    pub fn passed(&self) -> bool {
        self.within == self.with_tolerance
    }

    /// Whether the scored rows of `role` all lie within their tolerance.
    pub fn passed_role(&self, role: Role) -> bool {
        let s = self.role(role);
        s.within == s.with_tolerance
    }
}

/// The paper row a record was matched to.
fn paper_of<'a>(r: &Record, papers: &'a [PaperRow]) -> Option<&'a PaperRow> {
    papers.iter().find(|p| {
        p.metric == r.metric
            && Some(p.value) == r.paper
            && p.bound == r.paper_bound
            && p.case.iter().all(|(k, v)| {
                r.case_value(k)
                    .is_some_and(|rv| rv.as_f64().zip(v.as_f64()).map_or(rv == v, |(a, b)| a == b))
            })
    })
}

/// The tolerance of the paper row a record was matched to.
pub fn tolerance_of(r: &Record, papers: &[PaperRow]) -> Option<f64> {
    paper_of(r, papers).and_then(|p| p.tolerance)
}

impl fmt::Display for Summary {
    /// One line per role present, under the experiment's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rows.is_empty() && self.not_comparable == 0 {
            return write!(f, "{:<28} no published values", self.experiment);
        }
        write!(f, "{}", self.experiment)?;
        for (_, role) in Role::NAMES {
            let s = self.role(*role);
            if s.rows > 0 {
                write!(f, "\n  {}", s.line(None))?;
            }
        }
        if self.not_comparable > 0 {
            write!(f, "\n  {}", not_comparable_line(self.not_comparable, None))?;
        }
        if let Some(l) = self.fit_line() {
            write!(f, "\n  {l}")?;
        }
        Ok(())
    }
}

/// Distinct calibration rows the fits were spent on.
fn fitted_rows(fits: &[FitDecl]) -> usize {
    let mut rows: Vec<String> = fits
        .iter()
        .flat_map(|f| f.rows.iter().map(|(m, c)| format!("{m} {c:?}")))
        .collect();
    rows.sort();
    rows.dedup();
    rows.len()
}

/// "fitted        2 parameters on 3 calibration rows: a, b" (in totals,
/// with "in N experiments"); the names only where `fits` is given.
fn fit_words(n: usize, rows: usize, experiments: Option<usize>, fits: &[FitDecl]) -> String {
    if n == 0 {
        return format!(
            "{:<11} none here (its machine parameters were fitted elsewhere or copied in)",
            "fitted"
        );
    }
    let mut s = format!(
        "{:<11} {n:>3} parameter{} on {rows} calibration row{}",
        "fitted",
        if n == 1 { "" } else { "s" },
        if rows == 1 { "" } else { "s" }
    );
    if let Some(e) = experiments {
        s += &format!(" in {e} experiment{}", if e == 1 { "" } else { "s" });
    }
    if !fits.is_empty() {
        let names: Vec<&str> = fits.iter().map(|f| f.parameter.as_str()).collect();
        s += &format!(": {}", names.join(", "));
    }
    s
}

/// "not comparable  3 rows (…)": rows a --set took out of every score.
fn not_comparable_line(rows: usize, experiments: Option<usize>) -> String {
    let mut s = format!(
        "not comparable {rows:>3} row{}",
        if rows == 1 { "" } else { "s" }
    );
    if let Some(n) = experiments {
        s += &format!(" in {n} experiment{}", if n == 1 { "" } else { "s" });
    }
    s + " (a --set changed the machine or kernel they were measured on; in no role's score)"
}

/// The scoreboard over many experiments: one line per role, then the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Totals {
    pub experiments: usize,
    pub by_role: Vec<(RoleStats, usize)>,
    /// Experiments with a calibration or prediction row outside tolerance.
    pub failed: Vec<(String, Role)>,
    /// Rows a `--set` made incomparable, and in how many experiments.
    pub not_comparable: (usize, usize),
    /// Parameters fitted, the calibration rows they were fitted on, and
    /// in how many experiments.
    pub fitted: (usize, usize, usize),
}

impl Totals {
    pub fn of(summaries: &[Summary]) -> Totals {
        let by_role = Role::NAMES
            .iter()
            .map(|(_, role)| {
                // Each worst-row pointer starts with its experiment.
                let labelled: Vec<(String, &Compared)> = summaries
                    .iter()
                    .flat_map(|s| s.rows.iter().map(|c| (format!("{}: ", s.experiment), c)))
                    .collect();
                let stats = RoleStats::of(*role, labelled.iter().map(|(e, c)| (e.as_str(), *c)));
                let in_exps = summaries
                    .iter()
                    .filter(|s| s.rows.iter().any(|c| c.role == *role))
                    .count();
                (stats, in_exps)
            })
            .collect();
        let mut failed = Vec::new();
        for s in summaries {
            for (_, role) in Role::NAMES.iter().filter(|(_, r)| r.scored()) {
                if !s.passed_role(*role) {
                    failed.push((s.experiment.clone(), *role));
                }
            }
        }
        Totals {
            experiments: summaries.len(),
            by_role,
            failed,
            not_comparable: (
                summaries.iter().map(|s| s.not_comparable).sum(),
                summaries.iter().filter(|s| s.not_comparable > 0).count(),
            ),
            fitted: (
                summaries.iter().map(|s| s.fits.len()).sum(),
                summaries.iter().map(|s| fitted_rows(&s.fits)).sum(),
                summaries.iter().filter(|s| !s.fits.is_empty()).count(),
            ),
        }
    }

    pub fn passed(&self) -> bool {
        self.failed.is_empty()
    }
}

impl fmt::Display for Totals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "== Totals by role")?;
        for (s, exps) in &self.by_role {
            writeln!(f, "  {}", s.line(Some(*exps)))?;
        }
        let (nc, nc_exps) = self.not_comparable;
        if nc > 0 {
            writeln!(f, "  {}", not_comparable_line(nc, Some(nc_exps)))?;
        }
        let (fp, fr, fe) = self.fitted;
        writeln!(f, "  {}", fit_words(fp, fr, Some(fe), &[]))?;
        let scored: Vec<String> = self
            .by_role
            .iter()
            .filter(|(s, _)| s.role.scored())
            .map(|(s, _)| format!("{} {}/{}", s.role, s.within, s.with_tolerance))
            .collect();
        let inputs = self
            .by_role
            .iter()
            .find(|(s, _)| !s.role.scored())
            .map_or(0, |(s, _)| s.rows);
        write!(
            f,
            "{} experiments: {} within their stated tolerances; {inputs} input rows not scored",
            self.experiments,
            scored.join(" and ")
        )?;
        if nc > 0 {
            write!(f, "; {nc} rows not comparable (--set)")?;
        }
        if !self.failed.is_empty() {
            let list: Vec<String> = self
                .failed
                .iter()
                .map(|(e, r)| format!("{e} ({r})"))
                .collect();
            write!(f, "; outside tolerance: {}", list.join(", "))?;
        }
        Ok(())
    }
}
