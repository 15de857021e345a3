//! How far an experiment's simulated values are from the published ones.

use super::Record;
use crate::scenario::PaperRow;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub experiment: String,
    /// Records with a published value.
    pub compared: usize,
    /// Of those, how many have a stated tolerance and lie within it.
    pub within: usize,
    pub with_tolerance: usize,
    pub mean_abs_dev: f64,
    /// The worst deviation and the record it belongs to (metric, case).
    pub worst: Option<(f64, String)>,
}

impl Summary {
    pub fn of(experiment: &str, records: &[Record], papers: &[PaperRow]) -> Summary {
        let mut s = Summary {
            experiment: experiment.into(),
            compared: 0,
            within: 0,
            with_tolerance: 0,
            mean_abs_dev: 0.0,
            worst: None,
        };
        let mut sum = 0.0;
        for r in records {
            let Some(d) = r.deviation() else { continue };
            s.compared += 1;
            sum += d.abs();
            if let Some(tol) = tolerance_of(r, papers) {
                s.with_tolerance += 1;
                if d.abs() <= tol {
                    s.within += 1;
                }
            }
            if s.worst.as_ref().is_none_or(|(w, _)| d.abs() > w.abs()) {
                let case: Vec<String> = r
                    .case
                    .iter()
                    .map(|(k, v)| format!("{k}={}", super::table::fmt_json(v)))
                    .collect();
                s.worst = Some((d, format!("{} [{}]", r.metric, case.join(", "))));
            }
        }
        if s.compared > 0 {
            s.mean_abs_dev = sum / s.compared as f64;
        }
        s
    }

    /// All values with a stated tolerance lie within it.
    pub fn passed(&self) -> bool {
        self.within == self.with_tolerance
    }
}

/// The tolerance of the paper row a record was matched to.
pub fn tolerance_of(r: &Record, papers: &[PaperRow]) -> Option<f64> {
    papers
        .iter()
        .find(|p| {
            p.metric == r.metric
                && Some(p.value) == r.paper
                && p.case.iter().all(|(k, v)| {
                    r.case_value(k).is_some_and(|rv| {
                        rv.as_f64().zip(v.as_f64()).map_or(rv == v, |(a, b)| a == b)
                    })
                })
        })
        .and_then(|p| p.tolerance)
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.compared == 0 {
            return write!(
                f,
                "{:<28} no published values (prediction only)",
                self.experiment
            );
        }
        write!(
            f,
            "{:<28} {:>3} values vs paper, mean |Δ| {:>5.1}%, within tolerance {}/{}",
            self.experiment,
            self.compared,
            self.mean_abs_dev * 100.0,
            self.within,
            self.with_tolerance
        )?;
        if let Some((d, what)) = &self.worst {
            write!(f, "; worst {:+.1}% at {what}", d * 100.0)?;
        }
        Ok(())
    }
}
