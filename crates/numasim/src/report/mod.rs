//! Tidy records and their views: tables, CSV, JSONL, plots.

pub mod record;

pub use record::Record;
