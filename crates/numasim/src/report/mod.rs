//! Tidy records and their views: tables, CSV, JSONL, SVG plots.

pub(crate) mod case_name;
pub mod csv;
pub(crate) mod desc;
pub(crate) mod disk_heat;
pub(crate) mod hint;
pub mod html;
pub(crate) mod node_heat;
pub mod out;
pub(crate) mod paper;
pub(crate) mod record;
pub mod summary;
pub(crate) mod svg;
pub mod table;
pub(crate) mod timeline;
pub mod view;

pub use desc::{MachineDesc, RunDesc};
pub use hint::{FigureHint, ReportHints, Shape, XMark};
pub use record::{Bound, Record, Role};
pub use summary::{Summary, Totals};
pub use timeline::Artifact;

/// Case keys that name a case and change nothing else.
/// `kernel` is one too in that it names no `[[run]]` key: it sets
/// `kernel.flavour` (kernel/mm/flavour.rs), which sets the kernel's knobs.
pub const CASE_LABEL_KEYS: &[&str] = &["config", "label", "kernel"];
