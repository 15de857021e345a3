//! What the report shows of one experiment besides its records, as plain
//! data: the scenario fills it in (`Scenario::describe`), so the report
//! renders runs without knowing how a scenario file is read or resolved.

use super::paper::{FitDecl, PaperRow};
use super::view::View;
use super::ReportHints;

/// One experiment, described for the report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunDesc {
    /// The scenario's `name`: the stem of every file and the page's anchor.
    pub name: String,
    pub description: String,
    /// Where it came from, for error messages (`experiments/x.toml`, a path).
    pub source: String,
    pub papers: Vec<PaperRow>,
    pub fits: Vec<FitDecl>,
    /// `[[view]]` pivots, printed after the per-case tables.
    pub views: Vec<View>,
    /// The `[report]` table.
    pub hints: ReportHints,
    /// The `[machine] preset` every case starts from, or `(inline)`.
    pub machine_name: String,
    /// The first case's machine; None where it does not resolve.
    pub machine: Option<MachineDesc>,
    /// The `[kernel]` knobs, then the inline `[machine]` keys (not
    /// `preset`), every case starts from: (section, key, value as text).
    pub knobs: Vec<(String, String, String)>,
    /// Each case's overrides, values as text, in file order.
    pub cases: Vec<Vec<(String, String)>>,
}

/// The size of a machine, as the report's header line gives it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MachineDesc {
    pub nodes: usize,
    pub cpus: u64,
    pub mem_bytes: u64,
    pub description: String,
}
