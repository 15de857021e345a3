//! Tidy records and their views: tables, CSV, JSONL, SVG plots.

pub mod csv;
pub mod out;
pub mod record;
pub mod summary;
pub mod svg;
pub mod table;
pub mod timeline;
pub mod view;

pub use record::{Record, Role};
pub use summary::{Summary, Totals};
pub use timeline::Artifact;
