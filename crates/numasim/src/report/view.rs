//! Paper-shaped pivot tables: a scenario's `[[view]]` sections.
//!
//! The papers print one metric as a grid, e.g. "size | CNK | Linux 4 kB |
//! Linux 64 kB | Big Memory", often with a "loss vs CNK, %" column. A view
//! says which metric, which key gives the rows and which the columns, and
//! optionally a baseline column; the grid is then built from the tidy
//! records. Views are presentation only: records (and JSONL) do not change.
//!
//! ```toml
//! [[view]]
//! title = "Concurrent gettimeofday()"
//! metric = "slowdown_vs_one"
//! rows = "threads"
//! columns = "kernel.spinlock"
//! baseline = "ticket"        # optional: a loss column for every other column
//! better = "lower"           # "higher" (default) or "lower"
//! plot = "heatmap"           # optional: "table" (default), "heatmap", "lines"
//! x = "bandwidth_mbps"       # optional, lines only: the x axis is this metric
//! ```
//!
//! `plot` draws the grid as a figure too (`svg::view_plot`) (the HTML page, `run --out`):
//! `heatmap` a matrix (`from_node` × `to_node`, MLC's latency matrix), one
//! panel per group on one colour scale; `lines` the metric against the
//! numeric `rows` key, one line per column (STREAM by threads), or against
//! metric `x` of the same case (MLC's latency against bandwidth).

use super::table::{fmt_json, fmt_published, fmt_value};
use super::{Bound, Record, Role};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use serde_json::Value as Json;

/// Which direction of a metric is good: it decides the sign of the loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    pub const NAMES: &'static [(&'static str, Better)] =
        &[("higher", Better::Higher), ("lower", Better::Lower)];
}

/// How a view is drawn besides its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plot {
    /// The table only.
    Table,
    /// A matrix heat map: `rows` down, `columns` across.
    Heatmap,
    /// Lines over the numeric `rows` key (or metric `x`), one per column.
    Lines,
}

impl Plot {
    pub const NAMES: &'static [(&'static str, Plot)] = &[
        ("table", Plot::Table),
        ("heatmap", Plot::Heatmap),
        ("lines", Plot::Lines),
    ];
}

/// One `[[view]]` of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub title: String,
    pub metric: String,
    pub rows: String,
    pub columns: String,
    /// The column the others are compared with (its value as printed).
    pub baseline: Option<String>,
    pub better: Better,
    /// The figure drawn from the grid, if any.
    pub plot: Plot,
    /// With `Plot::Lines`: the metric whose value (same case) is x.
    pub x: Option<String>,
}

/// One cell of the grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PivotCell {
    pub value: Option<f64>,
    pub paper: Option<f64>,
    /// Whether `paper` is the value, a bound on it, or a range's low end.
    pub bound: Bound,
    /// A range's high end.
    pub paper_high: Option<f64>,
    pub deviation: Option<f64>,
    /// The published value's role (its mark's shape in a heat map).
    pub role: Option<Role>,
}

/// The grid of one group of records (one value of every other case key).
#[derive(Debug, Clone, PartialEq)]
pub struct Pivot {
    /// The other case keys that are the same throughout this grid.
    pub group: Vec<(String, Json)>,
    pub unit: String,
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
    /// `cells[row][col]`.
    pub cells: Vec<Vec<Option<PivotCell>>>,
}

impl View {
    /// Loss of `v` against the baseline `b`, in percent: how much worse `v`
    /// is (negative when better). None when the baseline is 0 or missing.
    pub fn loss_pct(&self, b: Option<f64>, v: Option<f64>) -> Option<f64> {
        let (b, v) = (b?, v?);
        if b == 0.0 || !b.is_finite() || !v.is_finite() {
            return None;
        }
        Some(match self.better {
            Better::Higher => (b - v) / b * 100.0,
            Better::Lower => (v - b) / b * 100.0,
        })
    }

    /// Index of the baseline among `cols`, if it is one of them.
    fn baseline_col(&self, cols: &[String]) -> Option<usize> {
        let b = self.baseline.as_ref()?;
        cols.iter().position(|c| c == b)
    }

    /// Build the grids: records of `metric`, grouped by the case keys other
    /// than `rows` and `columns`, rows and columns in first-seen order.
    pub fn pivot(&self, records: &[Record]) -> Vec<Pivot> {
        let mut out: Vec<Pivot> = Vec::new();
        // A record without the rows key belongs to another step that
        // reports the same metric (MLC's loaded bandwidth beside its matrix).
        for r in records
            .iter()
            .filter(|r| r.metric == self.metric && r.case_value(&self.rows).is_some())
        {
            let group: Vec<(String, Json)> = r
                .case
                .iter()
                .filter(|(k, _)| *k != self.rows && *k != self.columns)
                .cloned()
                .collect();
            let label = |k: &str| r.case_value(k).map(fmt_json).unwrap_or_else(|| "—".into());
            let (row, col) = (label(&self.rows), label(&self.columns));
            let i = match out.iter().position(|p| p.group == group) {
                Some(i) => i,
                None => {
                    out.push(Pivot {
                        group,
                        unit: r.unit.clone(),
                        row_labels: vec![],
                        col_labels: vec![],
                        cells: vec![],
                    });
                    out.len() - 1
                }
            };
            let p = &mut out[i];
            let ri = match p.row_labels.iter().position(|x| *x == row) {
                Some(ri) => ri,
                None => {
                    p.row_labels.push(row);
                    p.cells.push(vec![None; p.col_labels.len()]);
                    p.row_labels.len() - 1
                }
            };
            let ci = match p.col_labels.iter().position(|x| *x == col) {
                Some(ci) => ci,
                None => {
                    p.col_labels.push(col);
                    for c in &mut p.cells {
                        c.push(None);
                    }
                    p.col_labels.len() - 1
                }
            };
            // The first record for a cell wins (later ones would be duplicates).
            p.cells[ri][ci].get_or_insert(PivotCell {
                value: r.value,
                paper: r.paper,
                bound: r.paper_bound,
                paper_high: r.paper_high,
                deviation: r.deviation(),
                role: r.role,
            });
        }
        out
    }

    /// The terminal table(s) of this view.
    pub fn render(&self, records: &[Record]) -> String {
        let mut s = String::new();
        let pivots = self.pivot(records);
        if pivots.is_empty() {
            return format!("\n{}\n  (no `{}` records)\n", self.title, self.metric);
        }
        for p in pivots {
            let unit = if p.unit.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.unit)
            };
            s.push_str(&format!("\n{}{unit}\n", self.title));
            if !p.group.is_empty() {
                let g: Vec<String> = p
                    .group
                    .iter()
                    .map(|(k, v)| format!("{k} = {}", fmt_json(v)))
                    .collect();
                s.push_str(&format!("{}\n", g.join(", ")));
            }
            let base = self.baseline_col(&p.col_labels);
            if let (Some(b), None) = (&self.baseline, base) {
                s.push_str(&format!(
                    "  (baseline `{b}` is not a `{}` value here)\n",
                    self.columns
                ));
            }
            let mut t = Table::new();
            t.load_style(UTF8_FULL_CONDENSED);
            let mut header = vec![self.rows.clone()];
            for (ci, c) in p.col_labels.iter().enumerate() {
                header.push(c.clone());
                if base.is_some_and(|b| b != ci) {
                    header.push(format!("loss vs {}, %", p.col_labels[base.unwrap_or(0)]));
                }
            }
            t.set_header(header);
            for (ri, row) in p.row_labels.iter().enumerate() {
                let mut cells = vec![Cell::new(row)];
                let b = base.and_then(|b| p.cells[ri][b]).and_then(|c| c.value);
                for (ci, cell) in p.cells[ri].iter().enumerate() {
                    let text = match cell {
                        None => String::new(),
                        Some(c) => match (c.paper, c.deviation) {
                            (Some(pv), Some(d)) => format!(
                                "{} (paper {}, Δ {:+.1}%)",
                                fmt_value(c.value),
                                fmt_published(pv, c.paper_high, c.bound),
                                d * 100.0
                            ),
                            _ => fmt_value(c.value),
                        },
                    };
                    cells.push(Cell::new(text).set_alignment(CellAlignment::Right));
                    if base.is_some_and(|bi| bi != ci) {
                        let l = self.loss_pct(b, cell.and_then(|c| c.value));
                        cells.push(
                            Cell::new(l.map(|l| format!("{l:.1}")).unwrap_or_default())
                                .set_alignment(CellAlignment::Right),
                        );
                    }
                }
                t.add_row(cells);
            }
            s.push_str(&t.to_string());
            s.push('\n');
        }
        s
    }

    /// The same grid as CSV: the group keys, the row key, then per column
    /// (`KEY=VALUE`) its value, its paper value and (for non-baseline
    /// columns) the loss.
    pub fn to_csv(&self, records: &[Record]) -> String {
        let quote = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        let mut out = String::new();
        let mut last_header = String::new();
        for p in self.pivot(records).iter() {
            let base = self.baseline_col(&p.col_labels);
            {
                let mut h: Vec<String> = p.group.iter().map(|(k, _)| quote(k)).collect();
                h.push(quote(&self.rows));
                // Each column named by its key, not just the value (`0`, `1`).
                for (ci, c) in p.col_labels.iter().enumerate() {
                    let c = format!("{}={c}", self.columns);
                    h.push(quote(&c));
                    h.push(quote(&format!("{c} paper")));
                    if let Some(b) = base.filter(|&b| b != ci) {
                        h.push(quote(&format!("{c} loss vs {} %", p.col_labels[b])));
                    }
                }
                // A new header only where a group's columns differ.
                let h = h.join(",");
                if h != last_header {
                    out.push_str(&h);
                    out.push('\n');
                    last_header = h;
                }
            }
            for (ri, row) in p.row_labels.iter().enumerate() {
                let mut line: Vec<String> =
                    p.group.iter().map(|(_, v)| quote(&fmt_json(v))).collect();
                line.push(quote(row));
                let b = base.and_then(|b| p.cells[ri][b]).and_then(|c| c.value);
                for (ci, cell) in p.cells[ri].iter().enumerate() {
                    line.push(num(cell.and_then(|c| c.value)));
                    line.push(num(cell.and_then(|c| c.paper)));
                    if base.is_some_and(|bi| bi != ci) {
                        line.push(num(self.loss_pct(b, cell.and_then(|c| c.value))));
                    }
                }
                out.push_str(&line.join(","));
                out.push('\n');
            }
        }
        out
    }
}

/// Every view, one after the other.
pub fn render_all(views: &[View], records: &[Record]) -> String {
    views.iter().map(|v| v.render(records)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(size: u64, kernel: &str, v: f64, paper: Option<f64>) -> Record {
        let mut r = Record::new(
            "t",
            vec![
                ("kernel".into(), json!(kernel)),
                ("size".into(), json!(size)),
            ],
            "copy_mbps",
            "MB/s",
            v,
        );
        r.paper = paper;
        r
    }

    fn view(better: Better) -> View {
        View {
            title: "Table 2".into(),
            metric: "copy_mbps".into(),
            rows: "size".into(),
            columns: "kernel".into(),
            baseline: Some("cnk".into()),
            better,
            plot: Plot::Table,
            x: None,
        }
    }

    fn records() -> Vec<Record> {
        vec![
            rec(1, "cnk", 1000.0, Some(1000.0)),
            rec(1, "linux-4k", 800.0, None),
            rec(2, "linux-4k", 600.0, Some(500.0)),
            rec(2, "cnk", 900.0, None),
            rec(2, "bigmem", 950.0, None),
        ]
    }

    #[test]
    fn values_land_in_their_cells() {
        let p = &view(Better::Higher).pivot(&records())[0];
        assert_eq!(p.row_labels, vec!["1", "2"]);
        assert_eq!(p.col_labels, vec!["cnk", "linux-4k", "bigmem"]);
        let v = |r: usize, c: usize| p.cells[r][c].and_then(|x| x.value);
        assert_eq!(v(0, 0), Some(1000.0));
        assert_eq!(v(0, 1), Some(800.0));
        assert_eq!(v(0, 2), None);
        assert_eq!(v(1, 0), Some(900.0));
        assert_eq!(v(1, 1), Some(600.0));
        assert_eq!(v(1, 2), Some(950.0));
        assert_eq!(p.cells[1][1].unwrap().paper, Some(500.0));
    }

    #[test]
    fn loss_follows_the_direction() {
        let hi = view(Better::Higher);
        assert_eq!(hi.loss_pct(Some(1000.0), Some(800.0)), Some(20.0));
        assert_eq!(hi.loss_pct(Some(1000.0), Some(1100.0)), Some(-10.0));
        assert_eq!(hi.loss_pct(Some(0.0), Some(1.0)), None);
        let lo = view(Better::Lower);
        assert_eq!(lo.loss_pct(Some(2.0), Some(3.0)), Some(50.0));
        let text = hi.render(&records());
        assert!(text.contains("loss vs cnk, %"), "{text}");
        assert!(text.contains("20.0") && text.contains("33.3"), "{text}");
        assert!(text.contains("(paper 500, Δ +20.0%)"), "{text}");
    }

    #[test]
    fn csv_has_value_paper_and_loss_columns() {
        let csv = view(Better::Higher).to_csv(&records());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "size,kernel=cnk,kernel=cnk paper,kernel=linux-4k,kernel=linux-4k paper,kernel=linux-4k loss vs cnk %,\
             kernel=bigmem,kernel=bigmem paper,kernel=bigmem loss vs cnk %"
        );
        assert_eq!(lines[1], "1,1000,1000,800,,20,,,");
        assert!(lines[2].starts_with("2,900,,600,500,33.33"), "{}", lines[2]);
    }

    #[test]
    fn csv_headers_name_the_column_key() {
        // Numeric column values (`0`, `1`) say nothing without their key.
        let recs: Vec<Record> = [(0, 1.0), (1, 2.0)]
            .iter()
            .flat_map(|&(h, v)| {
                [1u64, 2].map(|n| {
                    Record::new(
                        "t",
                        vec![
                            ("kernel.hashdist".into(), json!(h)),
                            ("node".into(), json!(n)),
                        ],
                        "mem_used_kb",
                        "kB",
                        v * n as f64,
                    )
                })
            })
            .collect();
        let v = View {
            title: "t".into(),
            metric: "mem_used_kb".into(),
            rows: "node".into(),
            columns: "kernel.hashdist".into(),
            baseline: None,
            better: Better::Lower,
            plot: Plot::Table,
            x: None,
        };
        let csv = v.to_csv(&recs);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        assert_eq!(header[0], "node");
        for h in &header[1..] {
            assert!(h.starts_with("kernel.hashdist="), "{h} in {header:?}");
        }
        assert_eq!(header.len(), 5);
    }

    #[test]
    fn records_without_the_rows_key_are_not_a_grid() {
        // MLC's loaded bandwidth (keyed by inject_delay) beside the
        // bandwidth matrix (keyed by to_node), one metric.
        let mut rs = records();
        rs.push(Record::new(
            "t",
            vec![("kernel".into(), json!("cnk")), ("delay".into(), json!(0))],
            "copy_mbps",
            "MB/s",
            1.0,
        ));
        let ps = view(Better::Higher).pivot(&rs);
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].row_labels, vec!["1", "2"]);
    }

    #[test]
    fn other_case_keys_make_separate_grids() {
        let mut rs = records();
        for r in &mut rs {
            r.case.push(("seed".into(), json!(1)));
        }
        let mut more = records();
        for r in &mut more {
            r.case.push(("seed".into(), json!(2)));
        }
        rs.extend(more);
        let ps = view(Better::Higher).pivot(&rs);
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[1].group, vec![("seed".to_string(), json!(2))]);
    }
}
