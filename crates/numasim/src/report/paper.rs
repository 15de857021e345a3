//! The published values an experiment states (`[[paper]]`) and the
//! parameters fitted to them (`[[fit]]`), as plain data: the scenario
//! reads them, the report scores records against them.

use super::{Bound, Record, Role};
use serde_json::Value as Json;

/// A published value to print beside the simulated one. Never read by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct PaperRow {
    pub case: Vec<(String, Json)>,
    pub metric: String,
    /// The published value (a range's low end).
    pub value: f64,
    /// A published range's high end (`range = [low, high]`).
    pub high: Option<f64>,
    /// Allowed relative deviation (0.10 = 10%), where the experiment states one.
    pub tolerance: Option<f64>,
    /// Fitted to, copied in, or predicted: decides whether and how it is scored.
    pub role: Role,
    /// Which of the matching records the value belongs to: each, or only
    /// the one where the model peaks (a paper's "peak of ~700 MiB/s").
    pub at: PaperAt,
    /// The value itself, an upper or lower bound on it, or a range.
    pub bound: Bound,
    /// The row's `note`: the paper's words, shown beside a bound or a
    /// range on the plot (a statement in prose has no curve of its own).
    pub note: Option<String>,
}

/// One `[[fit]]` table: a parameter fitted to this experiment's
/// calibration rows, so a reader sees the degrees of freedom beside the
/// rows they were spent on.
#[derive(Debug, Clone, PartialEq)]
pub struct FitDecl {
    /// What was fitted, as a key a reader can find: `machine.tlb.miss_ns`,
    /// `run.cpu_ms`, or a choice such as `machine.preset` carried across.
    pub parameter: String,
    /// The calibration rows it was fitted on, as (metric, case) selectors
    /// of this file's `[[paper]]` rows.
    pub rows: Vec<(String, Vec<(String, Json)>)>,
    /// The page of `docs/` that gives the arithmetic and the sensitivity.
    pub doc: String,
    /// The published value and bound of each row, in `rows` order: with
    /// the case they tell a peak row from a bound row on the same records.
    pub(crate) published: Vec<(f64, Bound)>,
}

impl FitDecl {
    /// Whether `r` is one of the calibration records this fit was fitted on.
    pub fn covers(&self, r: &Record) -> bool {
        r.role == Some(Role::Calibration)
            && self
                .rows
                .iter()
                .zip(&self.published)
                .any(|((m, case), (v, b))| {
                    *m == r.metric
                        && r.paper == Some(*v)
                        && r.paper_bound == *b
                        && case
                            .iter()
                            .all(|(k, cv)| r.case_value(k).is_some_and(|rv| same(rv, cv)))
                })
    }
}
/// The `at` key of a `[[paper]]` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PaperAt {
    /// Every record matching `metric` and `case`.
    #[default]
    Each,
    /// Only the matching record with the largest value (first on ties).
    Max,
    /// Only the matching record with the smallest value (first on ties).
    Min,
}

impl PaperAt {
    pub const NAMES: &'static [(&'static str, PaperAt)] = &[
        ("each", PaperAt::Each),
        ("max", PaperAt::Max),
        ("min", PaperAt::Min),
    ];
}

/// Two case values are the same number, or else equal JSON.
pub fn same(a: &Json, b: &Json) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}
