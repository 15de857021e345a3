//! Tidy records and their views: tables, CSV, JSONL, SVG plots.

pub mod case_name;
pub mod csv;
pub mod desc;
pub mod disk_heat;
pub mod hint;
pub mod html;
pub mod out;
pub mod paper;
pub mod record;
pub mod summary;
pub mod svg;
pub mod table;
pub mod timeline;
pub mod view;

pub use desc::{MachineDesc, RunDesc};
pub use hint::{FigureHint, ReportHints, Shape};
pub use record::{Bound, Record, Role};
pub use summary::{Summary, Totals};
pub use timeline::Artifact;

/// Case keys that name a case and change nothing else.
/// `kernel` is one too in that it names no `[[run]]` key: it sets
/// `kernel.flavour` (kernel/mm/flavour.rs), which sets the kernel's knobs.
pub const CASE_LABEL_KEYS: &[&str] = &["config", "label", "kernel"];
