//! The tidy record: one measured or simulated value, with the case it belongs
//! to. This is the contract of `--format jsonl` (see ARCHITECTURE.md); tables, CSV
//! and plots are views of it.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::fmt;

/// What a published value is to the model. Only calibration and validation
/// rows are scored; an input agrees with the paper by construction. None is
/// blind: every published value was in view while the model was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// A parameter was fitted to this figure, or its value follows from a
    /// fitted parameter alone: agreement checks the arithmetic of the fit,
    /// not the model. A target the model misses stays here, shown as missed.
    Calibration,
    /// The value was copied into the machine or the workload (or follows
    /// from such a value alone), so it cannot disagree.
    Input,
    /// A published figure nothing was fitted to: the model's own answer
    /// (in view while the model was built, so not a blind test).
    Validation,
}

impl Role {
    /// The `role` values a `[[paper]]` row may take, in scoreboard order.
    pub const NAMES: &'static [(&'static str, Role)] = &[
        ("calibration", Role::Calibration),
        ("validation", Role::Validation),
        ("input", Role::Input),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Calibration => "calibration",
            Role::Input => "input",
            Role::Validation => "validation",
        }
    }

    /// Whether rows of this role count against the tolerance.
    pub fn scored(self) -> bool {
        self != Role::Input
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a published value says of the model's: equal to it, a bound on it
/// ("never exceeds 250 MiB/s" is `Below`, "at least 5x" is `Above`), or a
/// range ("10–15%", "10s of seconds"): the record's `paper` is the range's
/// low end and `paper_high` its high end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bound {
    #[default]
    At,
    /// The published value is an upper bound.
    Below,
    /// The published value is a lower bound.
    Above,
    /// The published statement is a range `[paper, paper_high]`.
    Range,
}

impl Bound {
    /// The `bound` values a `[[paper]]` row may take (a range is written
    /// `range = [low, high]` instead of `value`).
    pub const NAMES: &'static [(&'static str, Bound)] = &[
        ("at", Bound::At),
        ("below", Bound::Below),
        ("above", Bound::Above),
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Bound::At => "at",
            Bound::Below => "below",
            Bound::Above => "above",
            Bound::Range => "range",
        }
    }

    /// How a published value prints: "100", "< 100", "> 100" (a range
    /// prints both ends, see `report::table::fmt_paper`).
    pub fn prefix(self) -> &'static str {
        match self {
            Bound::At | Bound::Range => "",
            Bound::Below => "< ",
            Bound::Above => "> ",
        }
    }

    /// The part of a signed deviation that breaks the bound (0 where the
    /// bound holds; the deviation itself for `At`, and for `Range`, whose
    /// deviation is already measured from the nearer end and 0 inside):
    /// a satisfied bound is no miss, so this, not the raw deviation, is
    /// what the scores count.
    pub fn excess(self, deviation: f64) -> f64 {
        match self {
            Bound::At | Bound::Range => deviation,
            Bound::Below => deviation.max(0.0),
            Bound::Above => deviation.min(0.0),
        }
    }

    /// Whether `deviation` lies within `tolerance` of the bound.
    pub fn within(self, deviation: f64, tolerance: f64) -> bool {
        self.excess(deviation).abs() <= tolerance
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub experiment: String,
    /// Varied keys and per-row keys, in the order they were set.
    pub case: Vec<(String, Value)>,
    pub metric: String,
    pub unit: String,
    /// `None` where the quantity does not exist (e.g. never happened); JSON null.
    pub value: Option<f64>,
    /// The published value, where one exists (a range's low end).
    pub paper: Option<f64>,
    /// A published range's high end; `Some` exactly when `paper_bound` is
    /// `Range`.
    pub paper_high: Option<f64>,
    /// The published value's role; `Some` exactly when `paper` is.
    pub role: Option<Role>,
    /// Whether `paper` is the value itself or an upper or lower bound on
    /// it; `At` wherever `paper` is `None`.
    pub paper_bound: Bound,
    /// False when a `--set` changed the machine or kernel this record's case
    /// was measured on: the published value is shown but not compared.
    pub comparable: bool,
    /// A measured value's spread over its repetitions, relative to the
    /// value ((max - min) / median); only measurement tools set it.
    pub spread: Option<f64>,
}

impl Record {
    pub fn new(
        experiment: &str,
        case: Vec<(String, Value)>,
        metric: &str,
        unit: &str,
        value: f64,
    ) -> Self {
        Record {
            experiment: experiment.to_string(),
            case,
            metric: metric.to_string(),
            unit: unit.to_string(),
            value: Some(value),
            paper: None,
            paper_high: None,
            role: None,
            paper_bound: Bound::At,
            comparable: true,
            spread: None,
        }
    }

    pub fn case_value(&self, key: &str) -> Option<&Value> {
        self.case.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The part of the case that identifies a case (not a row within it).
    pub fn case_of(&self, case_keys: &[String]) -> Vec<(String, Value)> {
        self.case
            .iter()
            .filter(|(k, _)| case_keys.contains(k))
            .cloned()
            .collect()
    }

    /// One JSON object on one line, keys in contract order.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).expect("records always serialise")
    }

    /// Deviation of the simulated value from the paper, as a fraction of the paper value
    /// (for a range, from the nearer end, and 0 inside it).
    /// `None` where there is none, or the record is not comparable.
    pub fn deviation(&self) -> Option<f64> {
        if !self.comparable {
            return None;
        }
        let (v, p) = (self.value?, self.paper?);
        let from = |p: f64| {
            if p != 0.0 {
                (v - p) / p.abs()
            } else if v == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        };
        match (self.paper_bound, self.paper_high) {
            (Bound::Range, Some(hi)) if v > hi => Some(from(hi)),
            (Bound::Range, Some(_)) if v < p => Some(from(p)),
            (Bound::Range, Some(_)) => Some(0.0),
            _ => Some(from(p)),
        }
    }
}

struct OrderedCase<'a>(&'a [(String, Value)]);

impl Serialize for OrderedCase<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Serialize for Record {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(
            7 + usize::from(self.paper_bound != Bound::At)
                + usize::from(self.paper_high.is_some())
                + usize::from(!self.comparable)
                + usize::from(self.spread.is_some()),
        ))?;
        m.serialize_entry("experiment", &self.experiment)?;
        m.serialize_entry("case", &OrderedCase(&self.case))?;
        m.serialize_entry("metric", &self.metric)?;
        m.serialize_entry("unit", &self.unit)?;
        m.serialize_entry("value", &self.value)?;
        m.serialize_entry("paper", &self.paper)?;
        m.serialize_entry("role", &self.role.map(Role::as_str))?;
        // Only on records whose published value is a bound: the ordinary
        // record keeps the seven keys of the contract.
        if self.paper_bound != Bound::At {
            m.serialize_entry("paper_bound", self.paper_bound.as_str())?;
        }
        // Only on a range: `paper` is its low end.
        if let Some(hi) = self.paper_high {
            m.serialize_entry("paper_high", &hi)?;
        }
        // Only on records a --set made incomparable, so the ordinary
        // record keeps the seven keys of the contract.
        if !self.comparable {
            m.serialize_entry("comparable", &false)?;
        }
        // Only on measured records (numasim probe): simulated ones keep the seven.
        if let Some(sp) = self.spread {
            m.serialize_entry("spread", &sp)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_line_matches_the_contract() {
        // The model's own hashdist=1 node 3 MemUsed; the "paper" value here
        // is the record's, so no published figure is typed in.
        let mut r = Record::new(
            "hashdist-boot",
            vec![
                ("kernel.hashdist".into(), json!(1)),
                ("node".into(), json!(3)),
            ],
            "mem_used_kb",
            "kB",
            39072.0,
        );
        assert!(r.to_json_line().ends_with(r#""paper":null,"role":null}"#));
        r.paper = r.value;
        r.role = Some(Role::Calibration);
        assert_eq!(
            r.to_json_line(),
            r#"{"experiment":"hashdist-boot","case":{"kernel.hashdist":1,"node":3},"metric":"mem_used_kb","unit":"kB","value":39072.0,"paper":39072.0,"role":"calibration"}"#
        );
        // A measured record carries its spread after the contract's keys.
        r.spread = Some(0.25);
        assert!(r
            .to_json_line()
            .ends_with(r#""role":"calibration","spread":0.25}"#));
        // A bound follows the role it qualifies.
        r.paper_bound = Bound::Below;
        assert!(r
            .to_json_line()
            .ends_with(r#""role":"calibration","paper_bound":"below","spread":0.25}"#));
    }

    #[test]
    fn a_bound_counts_only_what_breaks_it() {
        // 30% under an upper bound is no miss; 30% over one is a 30% miss.
        assert_eq!(Bound::Below.excess(-0.3), 0.0);
        assert_eq!(Bound::Below.excess(0.3), 0.3);
        assert_eq!(Bound::Above.excess(0.3), 0.0);
        assert_eq!(Bound::Above.excess(-0.3), -0.3);
        assert!(Bound::Below.within(-0.9, 0.05));
        assert!(Bound::Below.within(0.04, 0.05));
        assert!(!Bound::Below.within(0.06, 0.05));
        assert!(!Bound::Above.within(-0.06, 0.05));
        assert!(!Bound::At.within(-0.06, 0.05));
    }
}
