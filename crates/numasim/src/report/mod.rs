//! Tidy records and their views: tables, CSV, JSONL, plots.
