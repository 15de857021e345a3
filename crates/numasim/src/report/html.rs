//! One self-contained HTML page of experiments beside their papers: a
//! summary table on top, then per experiment its question, machine and
//! knobs, the figures in the papers' shapes with the published points
//! marked by role, the compared rows and a link to the model's doc.
//!
//! The page is plain HTML with inline CSS and inline SVG: no script, no
//! font, no request, so it opens from `file://` and prints. Its bytes
//! depend only on the inputs; the one exception is the run-time column,
//! which the caller leaves out (`run_ms = None`) for a byte-stable page.

use super::case_name::case_names;
use super::hint::{FigureHint, Shape, XMark};
use super::summary::{Summary, Totals};
use super::svg::{self, PlotOpts, SWEEP_KEYS};
use super::table::{fmt_json, fmt_paper, fmt_value};
use super::view::Plot;
use super::RunDesc;
use super::{Artifact, Bound, Record, Role};
use serde_json::Value as Json;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// Figures chosen from the records when an experiment gives no hint.
const AUTO_FIGURES: usize = 3;
/// Figures for a scenario without published values: each of its metrics,
/// up to this many (a workload reports at most about a dozen).
const AUTO_FIGURES_OWN: usize = 16;
/// Rows of the full record table shown per experiment (the rest are in
/// `--format jsonl`); large-kernel-tables has a thousand.
const MAX_RECORD_ROWS: usize = 300;
/// Compared rows shown open; more fold under a summary line.
const MAX_OPEN_ROWS: usize = 24;

/// One experiment's run, as the page shows it.
pub struct Entry<'a> {
    pub run: &'a RunDesc,
    pub records: &'a [Record],
    /// The run's files; the SVG ones (memory timelines) are drawn inline.
    pub artifacts: &'a [Artifact],
    /// Wall-clock milliseconds of the simulation; None leaves the column out.
    pub run_ms: Option<f64>,
    /// Where the model's doc is from the page, if it was found.
    pub doc_href: Option<String>,
}

/// The whole page.
pub fn page(title: &str, entries: &[Entry]) -> String {
    let summaries: Vec<Summary> = entries
        .iter()
        .map(|e| Summary::of(&e.run.name, e.records, &e.run.papers).with_fits(&e.run.fits))
        .collect();
    let timing = entries.iter().any(|e| e.run_ms.is_some());
    let mut h = String::with_capacity(1 << 20);
    h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    h += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    // No favicon request from file://.
    h += "<link rel=\"icon\" href=\"data:,\">\n";
    let _ = writeln!(h, "<title>{}</title>", esc(title));
    h += "<style>\n";
    h += CSS;
    h += "</style>\n</head>\n<body>\n<main>\n";
    let _ = writeln!(h, "<h1>{}</h1>", esc(title));
    h += "<p class=\"lede\">Each experiment's simulated result beside the published one. \
          A published value is marked by its role: ";
    h += &role_key();
    h += " Only calibration and validation rows are scored; an input agrees by construction. \
          Every published value was in view while the model was built, so none is a blind test; \
          the <em>fitted</em> column counts the parameters fitted to each experiment's calibration rows. \
          Δ is (simulated − published) / |published| (for a range, from its nearer end).</p>\n";
    h += &summary_table(entries, &summaries, timing);
    for (i, (e, s)) in entries.iter().zip(&summaries).enumerate() {
        h += &section(i, e, s);
    }
    h += "<footer>Made by <code>numasim report</code> ";
    h += env!("CARGO_PKG_VERSION");
    if timing {
        h += ". Run times are wall-clock on the machine that made the page; \
              <code>--no-timing</code> leaves them out and makes the page byte-identical run to run";
    }
    h += ".</footer>\n</main>\n</body>\n</html>\n";
    h
}

const CSS: &str = "\
:root{--fg:#1d1d1f;--mute:#666;--line:#d8d8d8;--bad:#b3261e;--good:#1e6b34}
body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:#fafafa}
main{max-width:1180px;margin:0 auto;padding:1.2em 1.5em 3em;background:#fff}
h1{font-size:1.6em;margin:.3em 0}
h2{font-size:1.3em;margin:0 0 .2em;border-bottom:2px solid var(--line);padding-bottom:.15em}
h2 a{color:inherit;text-decoration:none}
.lede{color:var(--mute);max-width:60em}
.key svg{vertical-align:-2px}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border-bottom:1px solid var(--line);padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f1f1f3;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.total td{font-weight:600;border-top:2px solid #aaa}
.ok{color:var(--good)}.bad{color:var(--bad);font-weight:600}.mute{color:var(--mute)}
section.experiment{margin:2.2em 0 0;padding-top:.4em}
.question{font-size:1.08em;font-style:italic;margin:.2em 0 .5em}
dl.meta{display:grid;grid-template-columns:7.5em 1fr;gap:.15em .8em;margin:.4em 0 .8em;font-size:.92em}
dl.meta dt{color:var(--mute)}dl.meta dd{margin:0}
figure.plot{margin:.8em 0;padding:0}
figure.plot svg{display:block;width:100%;max-width:900px;height:auto;border:1px solid #eee}
figcaption{font-size:.88em;color:var(--mute);margin-top:.2em}
details{margin:.5em 0;font-size:.9em}
code{font-size:.92em}
footer{margin-top:3em;color:var(--mute);font-size:.85em}
@media print{body{background:#fff}main{max-width:none;padding:0}section.experiment{break-before:page}
figure.plot{break-inside:avoid}details{display:none}a{color:inherit}}
";

/// Inline marks for the three roles, as the plots draw them.
fn role_key() -> String {
    let mut s = String::new();
    for (i, role) in [Role::Calibration, Role::Input, Role::Validation]
        .into_iter()
        .enumerate()
    {
        let what = match role {
            Role::Calibration => {
                "calibration (a parameter was fitted to it, or it follows from one alone)"
            }
            Role::Input => "input (copied into the machine or workload)",
            Role::Validation => "validation (nothing fitted to it)",
        };
        let _ = write!(
            s,
            "<span class=\"key\"><svg width=\"14\" height=\"14\" viewBox=\"0 0 14 14\">{}</svg> {what}</span>{}",
            svg::paper_mark(7.0, 7.0, Some(role)).trim_end(),
            if i < 2 { ", " } else { "." }
        );
    }
    s
}

/// Milliseconds with a decimal where they are few.
fn ms_text(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

fn pct(d: f64) -> String {
    format!("{:+.1}%", d * 100.0)
}

fn summary_table(entries: &[Entry], summaries: &[Summary], timing: bool) -> String {
    let mut h = String::from(
        "<table class=\"summary\">\n<thead><tr><th>experiment</th><th>machine</th>\
         <th class=\"n\">calibration</th><th class=\"n\">input</th><th class=\"n\">validation</th><th class=\"n\">fitted</th>\
         <th class=\"n\">median |Δ|</th><th class=\"n\">worst Δ</th><th class=\"n\">within tolerance</th>",
    );
    if timing {
        h += "<th class=\"n\">run time</th>";
    }
    h += "</tr></thead>\n<tbody>\n";
    let mut total_ms = 0.0;
    for (e, s) in entries.iter().zip(summaries) {
        let id = &e.run.name;
        let _ = write!(
            h,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td>",
            anchor(id),
            esc(id),
            esc(&e.run.machine_name)
        );
        for n in [Role::Calibration, Role::Input, Role::Validation]
            .map(|role| s.role(role).rows)
            .into_iter()
            .chain([s.fits.len()])
        {
            let _ = write!(
                h,
                "<td class=\"n{}\">{n}</td>",
                if n == 0 { " mute" } else { "" }
            );
        }
        h += &score_cells(
            s.rows
                .iter()
                .filter(|c| c.role.scored())
                .map(|c| (c.excess(), c.tolerance, c.within())),
        );
        if timing {
            let ms = e.run_ms.unwrap_or(0.0);
            total_ms += ms;
            let _ = write!(h, "<td class=\"n time\">{}</td>", ms_text(ms));
        }
        h += "</tr>\n";
    }
    let t = Totals::of(summaries);
    let _ = write!(
        h,
        "<tr class=\"total\"><td>{} experiments</td><td></td>",
        t.experiments
    );
    for role in [Role::Calibration, Role::Input, Role::Validation] {
        let n = t
            .by_role
            .iter()
            .find(|(r, _)| r.role == role)
            .map_or(0, |(r, _)| r.rows);
        let _ = write!(h, "<td class=\"n\">{n}</td>");
    }
    let _ = write!(h, "<td class=\"n\">{}</td>", t.fitted.0);
    h += &score_cells(summaries.iter().flat_map(|s| {
        s.rows
            .iter()
            .filter(|c| c.role.scored())
            .map(|c| (c.excess(), c.tolerance, c.within()))
    }));
    if timing {
        let _ = write!(h, "<td class=\"n time\">{total_ms:.0} ms</td>");
    }
    h += "</tr>\n</tbody>\n</table>\n";
    h
}

/// Median |Δ|, worst Δ and within-tolerance cells over scored rows.
fn score_cells(rows: impl Iterator<Item = (f64, Option<f64>, bool)>) -> String {
    let rows: Vec<(f64, Option<f64>, bool)> = rows.collect();
    if rows.is_empty() {
        return "<td class=\"n mute\">—</td><td class=\"n mute\">—</td><td class=\"n mute\">—</td>"
            .into();
    }
    let mut abs: Vec<f64> = rows.iter().map(|r| r.0.abs()).collect();
    let median = super::summary::median(&mut abs);
    let worst = rows
        .iter()
        .map(|r| r.0)
        .fold(0.0f64, |w, d| if d.abs() > w.abs() { d } else { w });
    let with_tol = rows.iter().filter(|r| r.1.is_some()).count();
    let within = rows.iter().filter(|r| r.2).count();
    format!(
        "<td class=\"n\">{:.1}%</td><td class=\"n\">{}</td><td class=\"n {}\">{within}/{with_tol}</td>",
        median * 100.0,
        pct(worst),
        if within == with_tol { "ok" } else { "bad" }
    )
}

fn anchor(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn section(i: usize, e: &Entry, s: &Summary) -> String {
    let sc = e.run;
    let mut h = String::new();
    let _ = writeln!(
        h,
        "<section class=\"experiment\" id=\"{}\">\n<h2><a href=\"#{0}\">{}</a></h2>",
        anchor(&sc.name),
        esc(&sc.name)
    );
    let question = sc.hints.question.as_deref().unwrap_or(&sc.description);
    if !question.is_empty() {
        let _ = writeln!(h, "<p class=\"question\">{}</p>", esc(question));
    }
    h += "<dl class=\"meta\">\n";
    if sc.hints.question.is_some() && !sc.description.is_empty() {
        let _ = writeln!(h, "<dt>Setup</dt><dd>{}</dd>", esc(&sc.description));
    }
    let _ = writeln!(h, "<dt>Machine</dt><dd>{}</dd>", machine_line(sc));
    let knobs = knob_line(sc);
    if !knobs.is_empty() {
        let _ = writeln!(h, "<dt>Knobs</dt><dd>{knobs}</dd>");
    }
    let cases = case_line(sc);
    if !cases.is_empty() {
        let _ = writeln!(h, "<dt>Cases</dt><dd>{cases}</dd>");
    }
    let _ = writeln!(h, "<dt>Deviation</dt><dd>{}</dd>", deviation_line(s));
    if let Some(doc) = &sc.hints.doc {
        match &e.doc_href {
            Some(href) => {
                let _ = writeln!(
                    h,
                    "<dt>Model</dt><dd><a href=\"{}\">{}</a></dd>",
                    esc(href),
                    esc(doc)
                );
            }
            None => {
                let _ = writeln!(h, "<dt>Model</dt><dd><code>{}</code></dd>", esc(doc));
            }
        }
    }
    if let Some(ms) = e.run_ms {
        let _ = writeln!(
            h,
            "<dt>Run time</dt><dd class=\"time\">{}</dd>",
            ms_text(ms)
        );
    }
    h += "</dl>\n";
    let figs = figures(e.run, e.records);
    for (f, (fig, caption)) in figs.iter().enumerate() {
        let _ = writeln!(
            h,
            "<figure class=\"plot\" id=\"{}-fig{}\">\n{}<figcaption>{}</figcaption>\n</figure>",
            anchor(&sc.name),
            f + 1,
            unique_ids(fig, &format!("e{i}f{f}")),
            esc(caption)
        );
    }
    let svgs: Vec<&Artifact> = e
        .artifacts
        .iter()
        .filter(|a| a.kind.ends_with(".svg"))
        .collect();
    let all_cases: Vec<&[(String, Json)]> = e.artifacts.iter().map(|a| a.case.as_slice()).collect();
    let names = case_names(&all_cases);
    for (a, n) in e.artifacts.iter().zip(&names) {
        if !a.kind.ends_with(".svg") {
            continue;
        }
        let t = svgs.iter().position(|x| std::ptr::eq(*x, a)).unwrap_or(0);
        // What the timeline shows, by the artifact that drew it.
        let what = match a.kind.as_str() {
            "runqueue.svg" => "Tasks waiting in each run queue over time",
            "disk-busy.svg" => "Busy time of each disk while reading (heat map, one cell a disk)",
            k if k.ends_with("-timeline.svg") => "Memory per node over time",
            _ => "Simulated output",
        };
        let caption = if n.title.is_empty() {
            format!("{what} ({})", a.kind)
        } else {
            format!("{what}, {} ({})", n.title, a.kind)
        };
        let _ = writeln!(
            h,
            "<figure class=\"plot timeline\" id=\"{}-tl{}\">\n{}<figcaption>{}</figcaption>\n</figure>",
            anchor(&sc.name),
            t + 1,
            unique_ids(&a.content, &format!("e{i}t{t}")),
            esc(&caption)
        );
    }
    h += &compared_table(e.records, sc);
    h += &records_table(e.records);
    h += "</section>\n";
    h
}

fn machine_line(sc: &RunDesc) -> String {
    let name = esc(&sc.machine_name);
    match &sc.machine {
        Some(m) => format!(
            "<code>{name}</code>: {} nodes, {} CPUs, {}{}",
            m.nodes,
            m.cpus,
            crate::input::size::mem_label(m.mem_bytes),
            if m.description.is_empty() {
                String::new()
            } else {
                format!(" — {}", esc(&m.description))
            }
        ),
        None => format!("<code>{name}</code>"),
    }
}

/// The `[kernel]` knobs every case starts from, and the machine's inline overrides.
fn knob_line(sc: &RunDesc) -> String {
    sc.knobs
        .iter()
        .map(|(section, k, v)| {
            format!(
                "<code>{}.{}&#8239;=&#8239;{}</code>",
                section,
                esc(k),
                esc(v)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn case_line(sc: &RunDesc) -> String {
    if sc.cases.len() < 2 {
        return String::new();
    }
    sc.cases
        .iter()
        .map(|c| {
            let kv: Vec<String> = c
                .iter()
                .map(|(k, v)| format!("{}&#8239;=&#8239;{}", esc(k), esc(v)))
                .collect();
            format!("<code>{}</code>", kv.join(", "))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

fn deviation_line(s: &Summary) -> String {
    if s.rows.is_empty() && s.not_comparable == 0 {
        return "<span class=\"mute\">no published values: every figure here is unchecked</span>"
            .into();
    }
    let mut parts = Vec::new();
    for role in [Role::Calibration, Role::Validation, Role::Input] {
        let r = s.role(role);
        if r.rows == 0 {
            continue;
        }
        let worst = r.worst.as_ref().map_or(0.0, |(d, _)| *d);
        if role.scored() {
            parts.push(format!(
                "{role} {} row{}: median |Δ| {:.1}%, worst {}, <span class=\"{}\">within tolerance {}/{}</span>",
                r.rows,
                if r.rows == 1 { "" } else { "s" },
                r.median_abs_dev * 100.0,
                pct(worst),
                if r.within == r.with_tolerance { "ok" } else { "bad" },
                r.within,
                r.with_tolerance
            ));
        } else {
            parts.push(format!(
                "input {} row{} (copied, not scored; largest |Δ| {:.1}%)",
                r.rows,
                if r.rows == 1 { "" } else { "s" },
                worst.abs() * 100.0
            ));
        }
    }
    if s.not_comparable > 0 {
        parts.push(format!(
            "{} rows not comparable (a --set changed their machine or kernel)",
            s.not_comparable
        ));
    }
    let mut line = parts.join("; ");
    if let Some(f) = s.fit_line() {
        let _ = write!(line, "<br>{}", esc(&f));
    }
    line
}

/// The figures of an experiment: its hints, else chosen from the records.
fn figures(sc: &RunDesc, records: &[Record]) -> Vec<(String, String)> {
    let hints: Vec<FigureHint> = if sc.hints.figures.is_empty() {
        // A metric a view already plots is not drawn twice (a per-case bar
        // chart of a 64-cell matrix reads worse than its heat map).
        let viewed = |m: &String| {
            sc.views
                .iter()
                .any(|v| v.plot != Plot::Table && v.metric == *m)
        };
        auto_metrics(records)
            .into_iter()
            .filter(|m| !viewed(m))
            .map(|m| FigureHint {
                metric: m,
                shape: Shape::Auto,
                title: None,
                logx: None,
                logy: None,
                marks: vec![],
            })
            .collect()
    } else {
        sc.hints.figures.clone()
    };
    let hinted = !sc.hints.figures.is_empty();
    let mut figs: Vec<(String, String)> = hints
        .iter()
        .filter_map(|f| {
            figure(sc, records, f).or_else(|| {
                // A hinted figure the records cannot fill says so where it
                // would stand, rather than vanish.
                hinted.then(|| {
                    (
                        String::new(),
                        format!(
                            "{}: no records fit this figure's shape; the table below has the values.",
                            f.metric
                        ),
                    )
                })
            })
        })
        .collect();
    // Views that ask for a plot, after the hinted figures.
    for v in sc.views.iter().filter(|v| v.plot != Plot::Table) {
        let what = match (v.plot, &v.x) {
            (Plot::Heatmap, _) => format!("heat map, {} × {}", v.rows, v.columns),
            (_, Some(x)) => format!("curves against {x}, one point per {}", v.rows),
            _ => format!("curves over {}", v.rows),
        };
        figs.push(match svg::view_plot(v, records) {
            Some(svg) => (svg, format!("{} — {what}.", v.metric)),
            None => (
                String::new(),
                format!(
                    "{}: no records fit this view's plot; the table below has the values.",
                    v.metric
                ),
            ),
        });
    }
    figs
}

/// Metrics with published values first (record order), else the first
/// metric with a value; at most [`AUTO_FIGURES`].
fn auto_metrics(records: &[Record]) -> Vec<String> {
    let mut ms: Vec<String> = Vec::new();
    for r in records.iter().filter(|r| r.paper.is_some()) {
        if !ms.contains(&r.metric) {
            ms.push(r.metric.clone());
        }
    }
    // No published values (a user's own scenario): every metric that has
    // a value, not just the first (issue 33: 1 of 7 was plotted).
    if !ms.is_empty() {
        ms.truncate(AUTO_FIGURES);
        return ms;
    }
    for r in records
        .iter()
        .filter(|r| r.value.is_some_and(f64::is_finite))
    {
        if !ms.contains(&r.metric) {
            ms.push(r.metric.clone());
        }
    }
    ms.truncate(AUTO_FIGURES_OWN);
    ms
}

/// Every case key of `metric`'s records, in first-seen order.
fn keys_of(records: &[&Record]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for r in records {
        for (k, _) in &r.case {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys
}

/// One figure and its caption, in the hinted shape (or the first shape
/// the records fit, for `auto`); None if they fit none.
fn figure(sc: &RunDesc, records: &[Record], f: &FigureHint) -> Option<(String, String)> {
    let recs: Vec<&Record> = records.iter().filter(|r| r.metric == f.metric).collect();
    let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
    let keys = keys_of(&recs);
    let without = |x: &str| -> Vec<String> { keys.iter().filter(|k| *k != x).cloned().collect() };
    let opts = PlotOpts {
        logx: f.logx,
        logy: f.logy,
        marks: f.marks.iter().cloned().chain(prose_marks(sc, f)).collect(),
    };
    let title = f
        .title
        .clone()
        .unwrap_or_else(|| format!("{}: {}", sc.name, f.metric));
    let has = |k: &str| recs.iter().any(|r| r.case_value(k).is_some());
    let nodes = || {
        has("node")
            .then(|| super::node_heat::per_node(&owned, &f.metric, &without("node"), &title))
            .flatten()
            .map(|s| {
                let heat = s.contains("one cell per node");
                let what = if heat && s.contains(super::node_heat::LOG_WORDS) {
                    // The caption says it too: a reader comparing two
                    // colours must know they are a ratio apart, not a difference.
                    "heat map on a log colour scale (the values span over 10×), one strip per case, one cell per node"
                } else if heat {
                    "heat map, one strip per case, one cell per node"
                } else {
                    "per node"
                };
                (s, what.to_string())
            })
    };
    let cpus = || {
        let x = SWEEP_KEYS.iter().copied().find(|k| {
            recs.iter()
                .any(|r| r.case_value(k).is_some_and(Json::is_u64))
        })?;
        svg::sweep_lines_with(&owned, &f.metric, &without(x), &title, opts.clone())
            .map(|s| (s, format!("curves over {x}")))
    };
    let size = || {
        has("size")
            .then(|| {
                svg::size_lines_with(&owned, &f.metric, &without("size"), &title, opts.clone())
            })
            .flatten()
            .map(|s| (s, "curves over buffer size".to_string()))
    };
    let cases = || {
        svg::case_bars(&owned, &f.metric, &title, &bar_notes(sc, f))
            .map(|s| (s, "one bar per case".into()))
    };
    let (plot, shape) = match f.shape {
        Shape::Nodes => nodes(),
        Shape::Cpus => cpus(),
        Shape::Size => size(),
        Shape::Cases => cases(),
        Shape::Auto => nodes().or_else(cpus).or_else(size).or_else(cases),
    }?;
    let published = recs.iter().filter(|r| r.paper.is_some()).count();
    let caption = format!(
        "{} — {shape}; {} simulated value{}, {} published{}.",
        f.metric,
        recs.len(),
        if recs.len() == 1 { "" } else { "s" },
        published,
        if published == 0 {
            " (nothing to compare in this figure)"
        } else {
            ", black marks shaped by role"
        }
    );
    Some((plot, caption))
}

/// The words of `[[paper]]` bounds and ranges on `f`'s metric (a paper
/// that says "almost an order of magnitude", not a curve), as marks at the
/// row's CPU count or size, so the capped bar or arrow carries them. Rows
/// without a `note` or without such a case key add nothing.
fn prose_marks(sc: &RunDesc, f: &FigureHint) -> Vec<XMark> {
    sc.papers
        .iter()
        .filter(|p| p.metric == f.metric && p.bound != Bound::At)
        .filter_map(|p| {
            let text = p.note.clone()?;
            let x = p
                .case
                .iter()
                .find(|(k, _)| SWEEP_KEYS.contains(&k.as_str()) || k == "size")
                .and_then(|(_, v)| match v {
                    Json::String(s) => crate::input::size::parse_size(s).ok().map(|b| b as f64),
                    v => v.as_f64(),
                })?;
            Some(XMark {
                x,
                x_high: None,
                text,
            })
        })
        .collect()
}

/// The words of `[[paper]]` bounds and ranges on `f`'s metric for a bar
/// plot, which has no x to put them at: each tags the bars of its case,
/// as [`prose_marks`] does on a line plot.
fn bar_notes(sc: &RunDesc, f: &FigureHint) -> Vec<svg::BarNote> {
    sc.papers
        .iter()
        .filter(|p| p.metric == f.metric && p.bound != Bound::At)
        .filter_map(|p| {
            Some(svg::BarNote {
                case: p.case.clone(),
                text: p.note.clone()?,
            })
        })
        .collect()
}

/// Rows with a published value: simulated, published, role, Δ, tolerance.
fn compared_table(records: &[Record], sc: &RunDesc) -> String {
    let rows: Vec<&Record> = records.iter().filter(|r| r.paper.is_some()).collect();
    if rows.is_empty() {
        return String::new();
    }
    // A long list (hashdist-boot compares 51 rows) folds away under its count.
    let mut h = if rows.len() > MAX_OPEN_ROWS {
        format!(
            "<details><summary>{} published values compared</summary>\n",
            rows.len()
        )
    } else {
        String::new()
    };
    h += &String::from(
        "<table class=\"compared\">\n<thead><tr><th>metric</th><th>case</th><th class=\"n\">simulated</th>\
         <th class=\"n\">published</th><th>role</th><th class=\"n\">Δ</th><th class=\"n\">tolerance</th></tr></thead>\n<tbody>\n",
    );
    let rows_len = rows.len();
    for r in rows {
        let tol = super::summary::tolerance_of(r, &sc.papers);
        let dev = r.deviation();
        let role = r.role.unwrap_or(Role::Validation);
        let verdict = match (dev, tol) {
            (Some(d), Some(t)) if role.scored() => {
                if r.paper_bound.within(d, t) {
                    "ok"
                } else {
                    "bad"
                }
            }
            _ => "mute",
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{role}</td>\
             <td class=\"n {verdict}\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&r.metric),
            esc(&case_text(&r.case)),
            esc(&fmt_value(r.value)),
            esc(&fmt_paper(r)),
            dev.map_or("not comparable".into(), pct),
            tol.map_or("—".into(), |t| {
                // A ceiling allows only overshoot, a floor only undershoot.
                let sign = match r.paper_bound {
                    Bound::At | Bound::Range => "±",
                    Bound::Below => "+",
                    Bound::Above => "−",
                };
                format!("{sign}{:.0}%", t * 100.0)
            }),
        );
    }
    h += "</tbody>\n</table>\n";
    if rows_len > MAX_OPEN_ROWS {
        h += "</details>\n";
    }
    h
}

fn case_text(case: &[(String, Json)]) -> String {
    case.iter()
        .map(|(k, v)| format!("{k}={}", fmt_json(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every record, folded away under a summary line.
fn records_table(records: &[Record]) -> String {
    let mut h = format!(
        "<details><summary>All {} records</summary>\n<table>\n<thead><tr><th>case</th><th>metric</th>\
         <th class=\"n\">value</th><th>unit</th><th class=\"n\">published</th></tr></thead>\n<tbody>\n",
        records.len()
    );
    for r in records.iter().take(MAX_RECORD_ROWS) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            esc(&case_text(&r.case)),
            esc(&r.metric),
            esc(&fmt_value(r.value)),
            esc(&r.unit),
            esc(&fmt_paper(r))
        );
    }
    h += "</tbody>\n</table>\n";
    if records.len() > MAX_RECORD_ROWS {
        let _ = writeln!(
            h,
            "<p class=\"mute\">… and {} more: <code>--format jsonl</code> has them all.</p>",
            records.len() - MAX_RECORD_ROWS
        );
    }
    h += "</details>\n";
    h
}

/// An SVG whose `id`s (and the `url(#…)` and `href="#…"` that use them)
/// get `prefix`, so several plots inlined in one page cannot collide.
fn unique_ids(svg: &str, prefix: &str) -> String {
    let mut ids: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find(" id=\"") {
        rest = &rest[i + 5..];
        if let Some(j) = rest.find('"') {
            ids.push(rest[..j].to_string());
            rest = &rest[j..];
        }
    }
    let mut out = svg.to_string();
    for id in ids {
        for (a, b) in [("id=\"", "\""), ("url(#", ")"), ("href=\"#", "\"")] {
            out = out.replace(&format!("{a}{id}{b}"), &format!("{a}{prefix}-{id}{b}"));
        }
    }
    out
}

pub fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `to` relative to the directory `from` (both absolute): how the page in
/// `from` links a doc (the command line finds both on disk).
pub fn relative(from: &Path, to: &Path) -> Option<PathBuf> {
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return None;
    }
    let mut p = PathBuf::new();
    for _ in common..f.len() {
        p.push("..");
    }
    for c in &t[common..] {
        p.push(c.as_os_str());
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prose_range_lends_its_words_to_a_mark_at_its_cpu_count() {
        let row = |case: Vec<(String, Json)>, bound: Bound, note: Option<&str>| {
            crate::report::paper::PaperRow {
                case,
                metric: "slowdown_vs_one".into(),
                value: 3.16,
                high: Some(10.0),
                tolerance: Some(0.0),
                role: Role::Calibration,
                at: crate::report::paper::PaperAt::Each,
                bound,
                note: note.map(str::to_string),
            }
        };
        let threads = vec![("threads".to_string(), Json::from(4))];
        let sc = RunDesc {
            papers: vec![
                row(
                    threads.clone(),
                    Bound::Range,
                    Some("almost an order of magnitude"),
                ),
                // A value is scored and drawn as itself; no note, no case key: no words.
                row(threads.clone(), Bound::At, Some("a point")),
                row(threads.clone(), Bound::Range, None),
                row(vec![], Bound::Range, Some("no x")),
            ],
            ..RunDesc::default()
        };
        let f = FigureHint {
            metric: "slowdown_vs_one".into(),
            shape: Shape::Cpus,
            title: None,
            logx: None,
            logy: None,
            marks: vec![],
        };
        let m = prose_marks(&sc, &f);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(
            (m[0].x, m[0].text.as_str()),
            (4.0, "almost an order of magnitude")
        );
        let other = FigureHint {
            metric: "time_per_call_ns".into(),
            ..f
        };
        assert!(prose_marks(&sc, &other).is_empty());
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative(Path::new("/a/b/out"), Path::new("/a/b/docs/x.md")),
            Some(PathBuf::from("../docs/x.md"))
        );
        assert_eq!(
            relative(Path::new("/a"), Path::new("/a/docs/x.md")),
            Some(PathBuf::from("docs/x.md"))
        );
    }

    #[test]
    fn inlined_ids_are_made_unique() {
        let s = "<svg><defs><linearGradient id=\"g\"></linearGradient></defs><rect fill=\"url(#g)\"/></svg>";
        let a = unique_ids(s, "p1");
        assert!(a.contains("id=\"p1-g\"") && a.contains("url(#p1-g)"), "{a}");
        assert!(!a.contains("\"g\"") && !a.contains("#g)"), "{a}");
    }
}
