//! What an experiment's `[report]` table asks of the HTML report: its
//! question, the doc of its model, and the shape of its figures. Every key
//! is optional: without a hint the report picks a figure from the records
//! themselves (bars over `node`, lines over a CPU count or a buffer size,
//! else one bar per case), so a new experiment gets a sensible page with no
//! code and no hint.

/// The shape of one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Whatever the records suggest (see [`super::html`]).
    Auto,
    /// Lines over a CPU count (`threads`, `processes`, `cpus`), as ALTIX04's figures.
    Cpus,
    /// Lines over a buffer size on a log axis, as BGP-BIGMEM's tables.
    Size,
    /// Bars per NUMA node, as HASHDIST04's per-node memory.
    Nodes,
    /// One bar per case: a scalar result under each configuration.
    Cases,
}

impl Shape {
    pub const NAMES: &'static [(&'static str, Shape)] = &[
        ("auto", Shape::Auto),
        ("cpus", Shape::Cpus),
        ("size", Shape::Size),
        ("nodes", Shape::Nodes),
        ("cases", Shape::Cases),
    ];
}

/// One `[[report.figure]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureHint {
    pub metric: String,
    pub shape: Shape,
    /// The paper's own caption, e.g. "ALTIX04 Figure 2: page faults per second".
    pub title: Option<String>,
    /// Force a log (true) or linear (false) axis; None: the plot's own rule.
    pub logx: Option<bool>,
    pub logy: Option<bool>,
    /// What the paper's text says of the curve's shape, where it gives no
    /// numbers (ALTIX04 Figure 1: "both fall until about 16 CPUs").
    pub marks: Vec<XMark>,
}

/// One `[[report.figure.mark]]`: a dashed line at `x` (a band to `x_high`)
/// on a line plot's x axis, labelled with the paper's words. Presentation
/// only: nothing is scored against it.
#[derive(Debug, Clone, PartialEq)]
pub struct XMark {
    pub x: f64,
    pub x_high: Option<f64>,
    pub text: String,
}

/// An experiment's `[report]` table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportHints {
    /// The question the experiment answers, in one sentence.
    pub question: Option<String>,
    /// The model's doc, relative to the repository (`docs/placement.md`).
    pub doc: Option<String>,
    /// Figures in order; empty: chosen from the records.
    pub figures: Vec<FigureHint>,
}
