//! Scenario files: TOML schema, presets, `--set` overrides and validation.

pub mod size;
pub mod table;
