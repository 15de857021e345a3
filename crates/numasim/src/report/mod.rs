//! Tidy records and their views: tables, CSV, JSONL, SVG plots.

pub mod csv;
pub mod disk_heat;
pub mod hint;
pub mod html;
pub mod out;
pub mod record;
pub mod summary;
pub mod svg;
pub mod table;
pub mod timeline;
pub mod view;

pub use hint::{FigureHint, ReportHints, Shape};
pub use record::{Bound, Record, Role};
pub use summary::{Summary, Totals};
pub use timeline::Artifact;
