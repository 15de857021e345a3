//! Terminal tables shaped like the papers': one table per case, rows by
//! the per-row keys (node, table…), one column per metric, and beside each
//! metric that has published values, the paper's figure and the deviation.

use super::{Bound, Record, Role};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use serde_json::Value as Json;
use std::collections::HashMap;

/// Render `records`; `case_keys` are the keys that identify a case (the
/// others in a record's case are per-row keys).
pub fn render(records: &[Record], case_keys: &[String]) -> String {
    render_labelled(records, case_keys, "paper")
}

/// As [`render`], naming the compared values `label` ("measured" where
/// they are the probe's measurements of this host, not a paper's).
pub fn render_labelled(records: &[Record], case_keys: &[String], label: &str) -> String {
    let mut out = String::new();
    let mut groups: Vec<(Vec<(String, Json)>, Vec<&Record>)> = Vec::new();
    for r in records {
        let key: Vec<(String, Json)> = r.case_of(case_keys);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    for (key, recs) in groups {
        let title: Vec<String> = key
            .iter()
            .map(|(k, v)| format!("{k} = {}", fmt_json(v)))
            .collect();
        if !title.is_empty() {
            out.push_str(&format!("\n{}\n", title.join(", ")));
        }
        // Records with the same per-row keys share a table; those with none
        // are single figures, printed as lines.
        let mut shapes: Vec<(Vec<String>, Vec<&Record>)> = Vec::new();
        for r in recs {
            let rk: Vec<String> = r
                .case
                .iter()
                .map(|(k, _)| k.clone())
                .filter(|k| !case_keys.contains(k))
                .collect();
            match shapes.iter_mut().find(|(k, _)| *k == rk) {
                Some((_, v)) => v.push(r),
                None => shapes.push((rk, vec![r])),
            }
        }
        for (row_keys, recs) in shapes {
            if row_keys.is_empty() {
                for r in recs {
                    let paper = match (r.paper, r.deviation()) {
                        (Some(p), _) if !r.comparable => format!(
                            "   ({label} {}, not comparable: a --set changed this case)",
                            fmt_value(Some(p))
                        ),
                        (Some(p), Some(d)) => format!(
                            "   ({label} {}, Δ {:+.1}%{}{})",
                            fmt_value(Some(p)),
                            d * 100.0,
                            r.spread
                                .map(|s| format!(", spread {:.1}%", s * 100.0))
                                .unwrap_or_default(),
                            r.role.map(|x| format!(", {x}")).unwrap_or_default()
                        ),
                        _ => String::new(),
                    };
                    // The unit beside the name, as a column header has it,
                    // so the value stands alone ("cpu_frac (fraction) = 0.2569").
                    let name = if r.unit.is_empty() {
                        r.metric.clone()
                    } else {
                        format!("{} ({})", r.metric, r.unit)
                    };
                    out.push_str(&format!("  {name} = {}{paper}\n", fmt_value(r.value)));
                }
            } else {
                // A title on every table: what it holds, by what.
                let mut names: Vec<&str> = Vec::new();
                for r in &recs {
                    if !names.contains(&r.metric.as_str()) {
                        names.push(&r.metric);
                    }
                }
                out.push_str(&format!(
                    "{} by {}\n",
                    names.join(", "),
                    row_keys.join(", ")
                ));
                out.push_str(&shape_table(&recs, &row_keys, label));
                out.push('\n');
            }
        }
    }
    out
}

fn shape_table(recs: &[&Record], row_keys: &[String], label: &str) -> String {
    // Per metric: name, unit, and the roles of its published values.
    let mut metrics: Vec<(String, String, Vec<Role>)> = Vec::new();
    // Metrics whose compared values carry a measured spread (the probe's
    // validation): a column beside Δ, so a deviation reads against it.
    let mut spread_of: Vec<bool> = Vec::new();
    let mut rows: Vec<Vec<Json>> = Vec::new();
    // Row by its keys' JSON text, and (row, metric) → the first record: one
    // pass, where searching every record for every cell made 8,192 nodes ×
    // 7 metrics take seconds.
    let mut row_of: HashMap<String, usize> = HashMap::new();
    let mut cell: HashMap<(usize, usize), &Record> = HashMap::new();
    for r in recs {
        let mi = match metrics.iter().position(|(m, _, _)| *m == r.metric) {
            Some(i) => i,
            None => {
                metrics.push((r.metric.clone(), r.unit.clone(), Vec::new()));
                spread_of.push(false);
                metrics.len() - 1
            }
        };
        if r.paper.is_some() {
            let role = r.role.unwrap_or(Role::Validation);
            if !metrics[mi].2.contains(&role) {
                metrics[mi].2.push(role);
            }
            spread_of[mi] |= r.spread.is_some();
        }
        let rk: Vec<Json> = row_keys
            .iter()
            .map(|k| r.case_value(k).cloned().unwrap_or(Json::Null))
            .collect();
        let text = Json::Array(rk.clone()).to_string();
        let ri = *row_of.entry(text).or_insert_with(|| {
            rows.push(rk);
            rows.len() - 1
        });
        cell.entry((ri, mi)).or_insert(r);
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    let mut header: Vec<String> = row_keys.to_vec();
    for ((m, unit, roles), spread) in metrics.iter().zip(&spread_of) {
        header.push(if unit.is_empty() {
            m.clone()
        } else {
            format!("{m} ({unit})")
        });
        // One role for the column: say it in the header; mixed: a column.
        match roles.as_slice() {
            [] => {}
            [one] => header.extend([format!("{label} ({one})"), "Δ".into()]),
            _ => header.extend([label.to_string(), "Δ".into(), "role".into()]),
        }
        if *spread && !roles.is_empty() {
            header.push("spread".into());
        }
    }
    t.set_header(header);
    // One precision per metric column, its published values included
    // (issue 33: "1", "1.5000" and "119.8" in one column).
    let decimals: Vec<Option<usize>> = (0..metrics.len())
        .map(|mi| {
            column_decimals(
                cell.iter()
                    .filter(|((_, m), _)| *m == mi)
                    .flat_map(|(_, r)| [r.value, r.paper, r.paper_high])
                    .flatten(),
            )
        })
        .collect();
    for (ri, rk) in rows.iter().enumerate() {
        let mut cells: Vec<Cell> = rk.iter().map(|v| Cell::new(fmt_json(v))).collect();
        for (mi, (_, _, roles)) in metrics.iter().enumerate() {
            let rec = cell.get(&(ri, mi));
            let dec = decimals[mi];
            cells.push(
                Cell::new(rec.map(|r| fmt_fixed(r.value, dec)).unwrap_or_default())
                    .set_alignment(CellAlignment::Right),
            );
            if !roles.is_empty() {
                let paper = |r: &&Record| match (r.paper, r.paper_high) {
                    (None, _) => String::new(),
                    (Some(p), Some(h)) => {
                        format!("{}–{}", fmt_fixed(Some(p), dec), fmt_fixed(Some(h), dec))
                    }
                    (Some(p), None) => {
                        format!("{}{}", r.paper_bound.prefix(), fmt_fixed(Some(p), dec))
                    }
                };
                cells.push(
                    Cell::new(rec.map(paper).unwrap_or_default())
                        .set_alignment(CellAlignment::Right),
                );
                let d = match rec {
                    Some(r) if r.paper.is_some() && !r.comparable => "n/c".to_string(),
                    Some(r) => r
                        .deviation()
                        .map(|d| format!("{:+.1}%", d * 100.0))
                        .unwrap_or_default(),
                    None => String::new(),
                };
                cells.push(Cell::new(d).set_alignment(CellAlignment::Right));
            }
            if roles.len() > 1 {
                let role = rec.and_then(|r| r.role).map(Role::as_str);
                cells.push(Cell::new(role.unwrap_or_default()));
            }
            if spread_of[mi] && !roles.is_empty() {
                let sp = rec
                    .and_then(|r| r.spread)
                    .map(|s| format!("{:.1}%", s * 100.0));
                cells.push(Cell::new(sp.unwrap_or_default()).set_alignment(CellAlignment::Right));
            }
        }
        t.add_row(cells);
    }
    t.to_string()
}

/// Decimals for a column holding `values`: none when every one is whole,
/// else enough for four significant digits of the largest (one at 100 and
/// above), so a column reads at one precision. `None`: no finite value.
pub fn column_decimals(values: impl Iterator<Item = f64>) -> Option<usize> {
    let mut max = None::<f64>;
    let mut whole = true;
    for x in values.filter(|x| x.is_finite()) {
        whole &= x.fract() == 0.0 && x.abs() < 1e15;
        max = Some(max.map_or(x.abs(), |m| m.max(x.abs())));
    }
    let m = max?;
    Some(if whole {
        0
    } else if m >= 100.0 {
        1
    } else if m >= 10.0 {
        2
    } else if m >= 1.0 {
        3
    } else {
        4
    })
}

/// `v` with `decimals` places ([`fmt_value`] where the column has none).
pub fn fmt_fixed(v: Option<f64>, decimals: Option<usize>) -> String {
    match (v, decimals) {
        (Some(x), Some(d)) if x.is_finite() => format!("{x:.d$}"),
        _ => fmt_value(v),
    }
}

pub fn fmt_json(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The published value as printed: "100", for a bound "< 100" / "> 100",
/// for a range "10–15"; empty where there is none.
pub fn fmt_paper(r: &Record) -> String {
    r.paper
        .map(|p| fmt_published(p, r.paper_high, r.paper_bound))
        .unwrap_or_default()
}

/// One published value as printed, whatever its shape (see `fmt_paper`).
pub fn fmt_published(value: f64, high: Option<f64>, bound: Bound) -> String {
    match high {
        Some(h) => format!("{}–{}", fmt_value(Some(value)), fmt_value(Some(h))),
        None => format!("{}{}", bound.prefix(), fmt_value(Some(value))),
    }
}

/// Whole numbers without decimals; small fractions with four significant digits.
pub fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.4}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_reads_at_one_precision() {
        let d = column_decimals([1.0, 1.5, 119.8].into_iter());
        assert_eq!(d, Some(1));
        let cells: Vec<String> = [1.0, 1.5, 119.8]
            .iter()
            .map(|&x| fmt_fixed(Some(x), d))
            .collect();
        assert_eq!(cells, ["1.0", "1.5", "119.8"]);
        assert_eq!(column_decimals([4.0, 4096.0].into_iter()), Some(0));
        assert_eq!(column_decimals([0.25, 0.5].into_iter()), Some(4));
        assert_eq!(fmt_fixed(None, Some(2)), "—");
    }

    /// A compared value measured with a spread (the probe's validation
    /// rows) shows it beside Δ; published values, which have none, do not
    /// get the column.
    #[test]
    fn a_measured_spread_sits_beside_the_deviation() {
        let rec = |size: &str, spread: Option<f64>| {
            let mut r = Record::new(
                "probe-validate",
                vec![("size".to_string(), Json::from(size))],
                "mem_latency_ns",
                "ns",
                12.0,
            );
            r.paper = Some(10.0);
            r.role = Some(Role::Validation);
            r.spread = spread;
            r
        };
        let t = render_labelled(
            &[rec("4 MiB", Some(0.25)), rec("16 MiB", None)],
            &[],
            "measured",
        );
        assert!(t.contains("spread"), "{t}");
        assert!(t.contains("25.0%"), "{t}");
        let plain = render(&[rec("4 MiB", None)], &[]);
        assert!(!plain.contains("spread"), "{plain}");
        let line = render(
            &[Record::new("x", vec![], "m", "ns", 12.0)]
                .into_iter()
                .map(|mut r| {
                    r.paper = Some(10.0);
                    r.spread = Some(0.1);
                    r
                })
                .collect::<Vec<_>>(),
            &[],
        );
        assert!(line.contains("spread 10.0%"), "{line}");
    }
}
