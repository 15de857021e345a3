//! A run's files for `--out DIR`, as names and contents: the command line
//! writes them (the library writes nothing). Every file name is built from
//! the scenario's `name`, checked by
//! [`check_stem`](crate::input::stem::check_stem) when the scenario loads
//! and again here, and from the cases' names
//! ([`case_names`](super::case_name::case_names)).

use super::case_name::case_names;
use crate::error::{Error, InputError};
use crate::input::stem::check_stem;
#[cfg(test)]
use crate::input::stem::MAX_STEM;
use crate::report::timeline::escape;
use crate::report::{csv, svg, table, view, Artifact, Record, RunDesc};
use serde_json::Value as Json;

/// NAME.jsonl, NAME.csv, NAME.txt, one CSV per view, the SVG plots and
/// the run's artifacts, as (file name, content) in the order to write them.
pub fn run_files(
    run: &RunDesc,
    records: &[Record],
    keys: &[String],
    artifacts: &[Artifact],
) -> Result<Vec<(String, String)>, Error> {
    // The scenario checked its name on load; check again here because a
    // description's fields are public.
    check_stem(&run.name)
        .map_err(|m| Error::Input(InputError::at("name", m).in_file(&run.source)))?;
    let name = &run.name;
    let mut files = Vec::new();
    let jsonl: String = records.iter().map(|r| r.to_json_line() + "\n").collect();
    files.push((format!("{name}.jsonl"), jsonl));
    files.push((format!("{name}.csv"), csv::to_csv(records)));
    let txt = table::render(records, keys) + &view::render_all(&run.views, records);
    files.push((format!("{name}.txt"), txt));
    for (i, v) in run.views.iter().enumerate() {
        files.push((format!("{name}-view-{}.csv", i + 1), v.to_csv(records)));
        if let Some(plot) = svg::view_plot(v, records) {
            files.push((format!("{name}-view-{}.svg", i + 1), plot));
        }
    }
    // Each metric once, in first-seen order (records interleave metrics
    // row by row, so `dedup()` alone drew every plot once per row).
    let mut metrics: Vec<&str> = Vec::new();
    for r in records {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
    }
    for m in metrics {
        let plot = super::node_heat::per_node(records, m, keys, &format!("{name} — {m} by node"))
            .or_else(|| svg::sweep_lines(records, m, keys, &format!("{name} — {m}")))
            .or_else(|| svg::size_lines(records, m, keys, &format!("{name} — {m} by size")));
        if let Some(plot) = plot {
            files.push((format!("{name}-{m}.svg"), plot));
        }
    }
    let cases: Vec<&[(String, Json)]> = artifacts.iter().map(|a| a.case.as_slice()).collect();
    let names = case_names(&cases);
    for (a, n) in artifacts.iter().zip(&names) {
        let file = if n.file.is_empty() {
            format!("{name}-{}", a.kind)
        } else {
            format!("{name}-{}-{}", n.file, a.kind)
        };
        let mut content = a.content.clone();
        if let (Some(at), false) = (a.name_at, n.title.is_empty()) {
            if content.is_char_boundary(at) {
                content.insert_str(at, &format!(" ({})", escape(&n.title)));
            }
        }
        files.push((file, content));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_stems_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            "../escaped",
            "/abs/path",
            "a/b",
            "a\\b",
            "tab\there",
            ".hidden",
            &"x".repeat(MAX_STEM + 1),
        ] {
            assert!(check_stem(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["hashdist-boot", "a.b", "run 1", "ünïcode"] {
            assert!(check_stem(good).is_ok(), "{good:?} refused");
        }
    }
}
