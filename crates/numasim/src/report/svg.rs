//! SVG plots written directly: a bar chart of a per-node metric, one bar
//! group per case, the published value as a tick where one exists.

use super::table::fmt_json;
use super::{Bound, Record, Role};
use serde_json::Value as Json;

/// Series colours (Tableau 10), in case order.
const COLORS: [&str; 6] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1",
];

/// Bars of `metric` by `node` for each case; None if no such records.
pub fn node_bars(
    records: &[Record],
    metric: &str,
    case_keys: &[String],
    title: &str,
) -> Option<String> {
    let recs: Vec<&Record> = records
        .iter()
        .filter(|r| r.metric == metric && r.case_value("node").is_some_and(|v| v.is_u64()))
        .collect();
    if recs.is_empty() {
        return None;
    }
    let mut cases: Vec<Vec<(String, Json)>> = Vec::new();
    for r in &recs {
        let k: Vec<(String, Json)> = r.case_of(case_keys);
        if !cases.contains(&k) {
            cases.push(k);
        }
    }
    let nodes = recs
        .iter()
        .filter_map(|r| r.case_value("node").and_then(Json::as_u64))
        .max()? as usize
        + 1;
    let max = recs
        .iter()
        .filter_map(|r| match (r.value, r.paper_high.or(r.paper)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        })
        .fold(0.0f64, f64::max)
        .max(1.0);
    // One legend line per case under the axis.
    let legend = 18.0 * legend_lines(cases.len(), recs.iter().copied()) as f64;
    let (w, h, left, top, bottom) = (900.0, 400.0 + legend, 70.0, 40.0, 50.0 + legend);
    let plot_w = w - left - 20.0;
    let plot_h = h - top - bottom;
    let group_w = plot_w / nodes as f64;
    let bar_w = (group_w * 0.8 / cases.len() as f64).max(0.5);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"15\">{}</text>\n",
        escape(title)
    );
    let ax = YAxis::linear(0.0, max);
    s += &ax.draw(left, w - 20.0 - left, top, plot_h);
    s += &y_title(recs[0], top, plot_h, false);
    // Bars under two pixels wide (hundreds of nodes times several cases)
    // vanish: draw each case as a line over the nodes instead.
    let thin = bar_w < 2.0;
    if thin {
        for (ci, c) in cases.iter().enumerate() {
            let mut pts: Vec<(u64, f64)> = recs
                .iter()
                .filter(|r| r.case_of(case_keys) == *c)
                .filter_map(|r| Some((r.case_value("node")?.as_u64()?, r.value?)))
                .collect();
            pts.sort_by_key(|p| p.0);
            let path: Vec<String> = pts
                .iter()
                .map(|&(n, v)| {
                    format!(
                        "{:.1},{:.1}",
                        left + (n as f64 + 0.5) * group_w,
                        ax.y(v, top, plot_h)
                    )
                })
                .collect();
            s += &format!(
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                COLORS[ci % COLORS.len()],
                path.join(" ")
            );
        }
    }
    for r in recs.iter().filter(|_| !thin) {
        let node = r.case_value("node").and_then(Json::as_u64).unwrap_or(0) as f64;
        let k: Vec<(String, Json)> = r.case_of(case_keys);
        let ci = cases.iter().position(|c| *c == k).unwrap_or(0);
        let x = left + node * group_w + group_w * 0.1 + ci as f64 * bar_w;
        if let Some(v) = r.value {
            let bh = top + plot_h - ax.y(v, top, plot_h);
            s += &format!(
                "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bar_w:.2}\" height=\"{bh:.2}\" fill=\"{}\"/>\n",
                top + plot_h - bh,
                COLORS[ci % COLORS.len()]
            );
        }
        if let Some(p) = r.paper {
            let y = ax.y(p, top, plot_h);
            s += &format!("<line x1=\"{x:.2}\" x2=\"{:.2}\" y1=\"{y:.2}\" y2=\"{y:.2}\" stroke=\"black\" stroke-width=\"2\"/>\n", x + bar_w);
            // Wide enough bars also carry the role's marker on the tick.
            if bar_w >= 8.0 {
                s += &paper_mark(x + bar_w / 2.0, y, r.role);
                s += &bound_arrow(x + bar_w / 2.0, y, r.paper_bound);
                if let Some(h) = r.paper_high {
                    let xm = x + bar_w / 2.0;
                    s += &range_span((xm, y), (xm, ax.y(h, top, plot_h)));
                }
            }
        }
    }
    for r in recs.iter().filter(|r| thin && r.paper.is_some()) {
        let node = r.case_value("node").and_then(Json::as_u64).unwrap_or(0) as f64;
        let p = r.paper.unwrap_or(0.0);
        let (x, y) = (left + (node + 0.5) * group_w, ax.y(p, top, plot_h));
        s += &paper_mark(x, y, r.role);
        s += &bound_arrow(x, y, r.paper_bound);
        if let Some(h) = r.paper_high {
            s += &range_span((x, y), (x, ax.y(h, top, plot_h)));
        }
    }
    let step = (nodes / 32).max(1);
    for n in (0..nodes).step_by(step) {
        let x = left + (n as f64 + 0.5) * group_w;
        s += &format!(
            "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{n}</text>\n",
            top + plot_h + 16.0
        );
    }
    s += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">node</text>\n",
        left + plot_w / 2.0,
        top + plot_h + 34.0
    );
    for (ci, c) in cases.iter().enumerate() {
        let label: Vec<String> = c
            .iter()
            .map(|(k, v)| format!("{k}={}", fmt_json(v)))
            .collect();
        let y = top + plot_h + 54.0 + 18.0 * ci as f64;
        let x = left;
        s += &format!(
            "<rect x=\"{x}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/>",
            y - 9.0,
            COLORS[ci % COLORS.len()]
        );
        s += &format!(
            "<text x=\"{:.1}\" y=\"{y:.1}\">{}</text>\n",
            x + 14.0,
            escape(&label.join(", "))
        );
    }
    s += &role_legend(
        recs.iter().copied(),
        left,
        top + plot_h + 54.0 + 18.0 * cases.len() as f64,
        true,
    );
    s += "</svg>\n";
    Some(s)
}

/// Per-row keys a sweep over CPU counts is recorded under, in the order
/// [`sweep_lines`] looks for them.
pub const SWEEP_KEYS: &[&str] = &["threads", "processes", "cpus"];

/// Lines of `metric` against a CPU-count per-row key (`threads`,
/// `processes` or `cpus`), one line per case, published values as black
/// dots; None if the records hold no such sweep. The x axis is log2 when
/// the counts span a factor of 8 or more; the y axis is log10 when the
/// values are positive and span a factor of 100 or more.
pub fn sweep_lines(
    records: &[Record],
    metric: &str,
    case_keys: &[String],
    title: &str,
) -> Option<String> {
    sweep_lines_with(records, metric, case_keys, title, PlotOpts::default())
}

/// Axis choices a figure hint can force over a plot's own rule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlotOpts {
    pub logx: Option<bool>,
    pub logy: Option<bool>,
    /// The paper's words on the curve's shape, at x positions.
    pub marks: Vec<super::XMark>,
}

/// [`sweep_lines`] with the axes `opts` forces.
pub fn sweep_lines_with(
    records: &[Record],
    metric: &str,
    case_keys: &[String],
    title: &str,
    opts: PlotOpts,
) -> Option<String> {
    let x_key = SWEEP_KEYS.iter().copied().find(|k| {
        !case_keys.iter().any(|c| c == k)
            && records
                .iter()
                .filter(|r| r.metric == metric)
                .any(|r| r.case_value(k).is_some_and(Json::is_u64))
    })?;
    let pts: Vec<(&Record, f64, String)> = records
        .iter()
        .filter(|r| r.metric == metric && r.value.is_some_and(f64::is_finite))
        .filter_map(|r| {
            let x = r.case_value(x_key)?.as_u64()?;
            Some((r, x as f64, x.to_string()))
        })
        .collect();
    let (xmin, xmax) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), (_, x, _)| {
        (a.min(*x), b.max(*x))
    });
    let axes = Axes {
        logx: opts.logx.unwrap_or(xmin > 0.0 && xmax / xmin >= 8.0) && xmin > 0.0,
        logy_span: 100.0,
        min_y_span: 0.0,
        logy: opts.logy,
        xticks: false,
    };
    line_plot(&pts, axes, x_key, metric, case_keys, title, &opts.marks)
}

/// Lines of `metric` against the per-row key `size` (a buffer size as
/// written, `"16 kB"`, `"4 MB"`), one line per case (e.g. per kernel),
/// published values as black circles; None if the records hold no such
/// sweep. The x axis is log2 of the size in bytes, labelled as written;
/// the y axis is log10 when the values span a factor of 10 or more.
pub fn size_lines(
    records: &[Record],
    metric: &str,
    case_keys: &[String],
    title: &str,
) -> Option<String> {
    size_lines_with(records, metric, case_keys, title, PlotOpts::default())
}

/// [`size_lines`] with the axes `opts` forces.
pub fn size_lines_with(
    records: &[Record],
    metric: &str,
    case_keys: &[String],
    title: &str,
    opts: PlotOpts,
) -> Option<String> {
    if case_keys.iter().any(|c| c == "size") {
        return None;
    }
    let size_of = |r: &Record| -> Option<(f64, String)> {
        let v = r.case_value("size")?;
        let bytes = match v {
            Json::String(s) => crate::input::size::parse_size(s).ok()?,
            Json::Number(n) => n.as_u64()?,
            _ => return None,
        };
        (bytes > 0).then(|| (bytes as f64, fmt_json(v)))
    };
    let pts: Vec<(&Record, f64, String)> = records
        .iter()
        .filter(|r| r.metric == metric && r.value.is_some_and(f64::is_finite))
        .filter_map(|r| size_of(r).map(|(x, l)| (r, x, l)))
        .collect();
    let axes = Axes {
        logx: opts.logx.unwrap_or(true),
        logy_span: 10.0,
        min_y_span: 1.0,
        logy: opts.logy,
        xticks: false,
    };
    line_plot(&pts, axes, "size", metric, case_keys, title, &opts.marks)
}

/// How [`line_plot`] scales its axes.
#[derive(Debug, Clone, Copy)]
struct Axes {
    /// log2 x axis.
    logx: bool,
    /// The y axis is log10 when the values are positive and max/min reaches this.
    logy_span: f64,
    /// A linear y axis from min(0, ymin) reaches ymax if it is at least this
    /// far above (and above at all), else spans exactly 1.
    min_y_span: f64,
    /// Forced log (true) or linear (false) y axis; a log axis still needs
    /// positive values.
    logy: Option<bool>,
    /// x is a measured value (a metric), not a swept key: a linear axis
    /// from 0 with 1-2-5 ticks, and each line joins its points in record
    /// order (a loaded-latency curve may bend back), not sorted by x.
    xticks: bool,
}

/// Lines of (record, x, x label) points, one line per case, x labels
/// under the axis, `x_name` below them; None with fewer than two points.
fn line_plot(
    pts: &[(&Record, f64, String)],
    axes: Axes,
    x_name: &str,
    metric: &str,
    case_keys: &[String],
    title: &str,
    marks: &[super::XMark],
) -> Option<String> {
    if pts.len() < 2 {
        return None;
    }
    let mut cases: Vec<Vec<(String, Json)>> = Vec::new();
    for (r, _, _) in pts {
        let k = r.case_of(case_keys);
        if !cases.contains(&k) {
            cases.push(k);
        }
    }
    let ys = pts
        .iter()
        .flat_map(|(r, _, _)| [r.value, r.paper, r.paper_high])
        .flatten()
        .filter(|v| v.is_finite());
    let (ymin, ymax) = ys.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let (xmin, xmax) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), (_, x, _)| {
        (a.min(*x), b.max(*x))
    });
    let logx = axes.logx && !axes.xticks;
    let xa = axes.xticks.then(|| YAxis::linear(xmin.min(0.0), xmax));
    let want_log = axes.logy.unwrap_or(ymax / ymin >= axes.logy_span);
    let ax = if ymin > 0.0 && want_log {
        YAxis::log(ymin, ymax)
    } else {
        let lo = ymin.min(0.0);
        let hi = if ymax > lo && ymax - lo >= axes.min_y_span {
            ymax
        } else {
            lo + 1.0
        };
        YAxis::linear(lo, hi)
    };
    let fx = |x: f64| if logx { x.log2() } else { x };
    let (x0, x1) = match &xa {
        Some(a) => (a.lo, a.hi),
        None => (fx(xmin), fx(xmax).max(fx(xmin) + 1e-9)),
    };
    let legend_n = legend_lines(cases.len(), pts.iter().map(|(r, _, _)| *r));
    // The paper's words get a legend line each, under the curves' lines.
    let marks: Vec<&super::XMark> = marks
        .iter()
        .filter(|m| {
            let inside = |x: f64| x >= xmin && x <= xmax;
            inside(m.x) && m.x_high.is_none_or(inside)
        })
        .collect();
    let legend = 18.0 * (legend_n + marks.len()) as f64;
    let (w, h, left, top, bottom) = (900.0, 420.0 + legend, 80.0, 40.0, 60.0 + legend);
    let (pw, ph) = (w - left - 30.0, h - top - bottom);
    let px = |x: f64| left + pw * (fx(x) - x0) / (x1 - x0).max(1e-9);
    let py = |y: f64| ax.y(y, top, ph);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"15\">{}</text>\n",
        escape(title)
    );
    s += &ax.draw(left, pw, top, ph);
    s += &y_title(pts[0].0, top, ph, ax.log);
    let mut xs: Vec<(f64, &str)> = match &xa {
        Some(a) => a.ticks.iter().map(|(v, l)| (*v, l.as_str())).collect(),
        None => pts.iter().map(|(_, x, l)| (*x, l.as_str())).collect(),
    };
    xs.sort_by(|a, b| a.0.total_cmp(&b.0));
    xs.dedup_by(|a, b| a.0 == b.0);
    if xa.is_some() {
        for (x, _) in &xs {
            s += &format!(
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{top}\" y2=\"{1:.1}\" stroke=\"#ddd\"/>\n",
                px(*x),
                top + ph
            );
        }
    }
    for (x, l) in &xs {
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{l}</text>\n",
            px(*x),
            top + ph + 16.0
        );
    }
    s += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{x_name}{}</text>\n",
        left + pw / 2.0,
        top + ph + 34.0,
        if logx { " (log scale)" } else { "" }
    );
    s += &x_marks(
        &marks,
        &px,
        left,
        top,
        ph,
        top + ph + 54.0 + 18.0 * legend_n as f64,
    );
    let xy: Vec<(&Record, f64)> = pts.iter().map(|(r, x, _)| (*r, *x)).collect();
    s += &case_lines(
        &xy,
        &cases,
        case_keys,
        metric,
        &px,
        &py,
        left,
        top + ph + 54.0,
        !axes.xticks,
    );
    s += "</svg>\n";
    Some(s)
}

/// The colour of the paper's words and their tags, on lines and bars.
const NOTE_INK: &str = "#8a6d1f";

/// The paper's words on a curve's shape (`[[report.figure.mark]]`): a
/// dashed line at each mark's x, or a shaded band to its `x_high`, behind
/// the curves, tagged A, B, … at the plot's top; the words themselves stand
/// in the legend from `legend_y` down (a sentence over the curves would
/// cross them). The caller leaves out marks outside the data's x range.
fn x_marks(
    marks: &[&super::XMark],
    px: &dyn Fn(f64) -> f64,
    left: f64,
    top: f64,
    ph: f64,
    legend_y: f64,
) -> String {
    const INK: &str = NOTE_INK;
    let mut s = String::new();
    for (i, m) in marks.iter().enumerate() {
        let tag = char::from(b'A' + (i % 26) as u8);
        let x0 = px(m.x);
        let (xa, xb) = match m.x_high {
            Some(h) => (x0.min(px(h)), x0.max(px(h))),
            None => (x0, x0),
        };
        s += &if xb > xa {
            format!(
                "<rect class=\"paper-shape\" x=\"{xa:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{ph:.1}\" fill=\"#f2e6c9\" fill-opacity=\"0.6\"/>\n",
                xb - xa
            )
        } else {
            format!(
                "<line class=\"paper-shape\" x1=\"{xa:.1}\" x2=\"{xa:.1}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"{INK}\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
                top + ph
            )
        };
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-weight=\"bold\" fill=\"{INK}\">{tag}</text>\n",
            (xa + xb) / 2.0,
            top - 4.0
        );
        let ly = legend_y + 18.0 * i as f64;
        let key = if xb > xa {
            format!(
                "<rect x=\"{left}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"#f2e6c9\" stroke=\"{INK}\" stroke-width=\"0.5\"/>",
                ly - 9.0
            )
        } else {
            format!(
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"{INK}\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/>",
                left + 5.0,
                ly - 10.0,
                ly + 2.0
            )
        };
        s += &format!(
            "{key}<text x=\"{:.1}\" y=\"{ly:.1}\" font-style=\"italic\" fill=\"#5c4812\"><tspan font-weight=\"bold\" font-style=\"normal\">{tag}</tspan> {} (the text's words; nothing scored)</text>\n",
            left + 14.0,
            escape(&m.text)
        );
    }
    s
}

/// One polyline per case through its (x, value) points, published values
/// ringed in black, and a legend below the plot: a line per case, one for
/// the paper's rings if any are drawn. A case whose line lies within a
/// pixel of an earlier one's is drawn dashed and says so in the legend, so
/// it cannot hide the other unnoticed. `px`/`py` map data to pixels.
#[allow(clippy::too_many_arguments)]
fn case_lines(
    points: &[(&Record, f64)],
    cases: &[Vec<(String, Json)>],
    case_keys: &[String],
    metric: &str,
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
    left: f64,
    legend_top: f64,
    sort_x: bool,
) -> String {
    // Lines closer than their own width hide each other.
    const LINE_W: f64 = 2.0;
    // Per case, its points in pixels (x, y, paper y), left to right.
    type Pt = (f64, f64, Option<(f64, Option<Role>, Bound, Option<f64>)>);
    let lines: Vec<Vec<Pt>> = cases
        .iter()
        .map(|c| {
            let mut line: Vec<Pt> = points
                .iter()
                .filter(|(r, _)| r.case_of(case_keys) == *c)
                .map(|&(r, x)| {
                    (
                        px(x),
                        py(r.value.unwrap_or(0.0)),
                        r.paper
                            .map(|p| (py(p), r.role, r.paper_bound, r.paper_high.map(&py))),
                    )
                })
                .collect();
            if sort_x {
                line.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            line
        })
        .collect();
    let same = |a: &[Pt], b: &[Pt]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(p, q)| (p.0 - q.0).abs() < LINE_W && (p.1 - q.1).abs() < LINE_W)
    };
    let labels: Vec<String> = cases
        .iter()
        .map(|c| {
            let l: Vec<String> = c
                .iter()
                .map(|(k, v)| format!("{k}={}", fmt_json(v)))
                .collect();
            escape(&if l.is_empty() {
                metric.to_string()
            } else {
                l.join(", ")
            })
        })
        .collect();
    let mut s = String::new();
    for (ci, line) in lines.iter().enumerate() {
        let color = COLORS[ci % COLORS.len()];
        let under = (0..ci).find(|&cj| same(&lines[cj], line));
        let path: Vec<String> = line
            .iter()
            .map(|&(x, y, _)| format!("{x:.1},{y:.1}"))
            .collect();
        s += &format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{} points=\"{}\"/>\n",
            if under.is_some() {
                " stroke-dasharray=\"6 6\""
            } else {
                ""
            },
            path.join(" ")
        );
        for &(x, y, p) in line {
            s += &format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{color}\"/>\n");
            if let Some((p, role, bound, high)) = p {
                s += &paper_mark(x, p, role);
                s += &bound_arrow(x, p, bound);
                if let Some(h) = high {
                    s += &range_span((x, p), (x, h));
                }
            }
        }
        let note = under
            .map(|cj| format!(" (coincides with {}: drawn dashed over it)", labels[cj]))
            .unwrap_or_default();
        let y = legend_top + 18.0 * ci as f64;
        s += &format!(
            "<rect x=\"{left}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{y:.1}\">{}{note}</text>\n",
            y - 9.0,
            left + 14.0,
            labels[ci]
        );
    }
    s += &role_legend(
        points.iter().map(|(r, _)| *r),
        left,
        legend_top + 18.0 * cases.len() as f64,
        false,
    );
    s
}

/// How each legend line for the black marks of published values begins.
pub const PAPER_LEGEND: &str = "published value (paper)";

/// Legend lines under a plot: one per case, one more for the paper's
/// marks when any record has a published value.
fn legend_lines<'a>(cases: usize, recs: impl IntoIterator<Item = &'a Record>) -> usize {
    cases + paper_legend_lines(recs)
}

/// Legend lines for the paper's marks: one per role, one more if any
/// published value is a bound, one more if any is a range.
fn paper_legend_lines<'a>(recs: impl IntoIterator<Item = &'a Record>) -> usize {
    let recs: Vec<&Record> = recs.into_iter().collect();
    roles_present(recs.iter().copied()).len()
        + usize::from(
            recs.iter()
                .any(|r| r.paper.is_some() && !matches!(r.paper_bound, Bound::At | Bound::Range)),
        )
        + usize::from(recs.iter().any(|r| r.paper_high.is_some()))
}

/// A ceiling's mark points down, a floor's up: the side the value must be on.
pub fn bound_arrow(x: f64, y: f64, bound: Bound) -> String {
    let (dir, class) = match bound {
        // A range draws its span instead (`range_span`).
        Bound::At | Bound::Range => return String::new(),
        Bound::Below => (1.0, "below"),
        Bound::Above => (-1.0, "above"),
    };
    let (y0, y1) = (y + dir * 6.0, y + dir * 18.0);
    format!(
        "<path class=\"paper bound {class}\" d=\"M{x:.1},{y0:.1} L{x:.1},{y1:.1} M{:.1},{:.1} L{x:.1},{y1:.1} L{:.1},{:.1}\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n",
        x - 4.0,
        y1 - dir * 5.0,
        x + 4.0,
        y1 - dir * 5.0
    )
}

/// A published range: a bar from its low end to its high end, capped at
/// both, so "10–15%" reads as a span the model must fall in.
pub fn range_span(lo: (f64, f64), hi: (f64, f64)) -> String {
    let (dx, dy) = if (lo.0 - hi.0).abs() < 0.5 {
        (4.0, 0.0)
    } else {
        (0.0, 4.0)
    };
    format!(
        "<path class=\"paper range\" d=\"M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n",
        lo.0, lo.1, hi.0, hi.1,
        lo.0 - dx, lo.1 - dy, lo.0 + dx, lo.1 + dy,
        hi.0 - dx, hi.1 - dy, hi.0 + dx, hi.1 + dy,
    )
}

/// The roles of the published values among `recs`, in legend order; a
/// published value with no role (records built without a scenario) counts
/// as a validation, as the summary scores it.
fn roles_present<'a>(recs: impl IntoIterator<Item = &'a Record>) -> Vec<Role> {
    let mut roles: Vec<Role> = recs
        .into_iter()
        .filter(|r| r.paper.is_some())
        .map(|r| r.role.unwrap_or(Role::Validation))
        .collect();
    roles.sort();
    roles.dedup();
    roles
}

/// The black mark of a published value at (x, y), shaped by its role so a
/// reader tells a fitted point from a predicted one: a square for
/// calibration, a diamond for an input, a ring for a validation.
pub fn paper_mark(x: f64, y: f64, role: Option<Role>) -> String {
    match role.unwrap_or(Role::Validation) {
        Role::Calibration => format!(
            "<rect class=\"paper calibration\" x=\"{:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n",
            x - 4.5,
            y - 4.5
        ),
        Role::Input => format!(
            "<path class=\"paper input\" d=\"M{x:.1},{:.1} l5.5,5.5 l-5.5,5.5 l-5.5,-5.5 z\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n",
            y - 5.5
        ),
        Role::Validation => format!(
            "<circle class=\"paper validation\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n"
        ),
    }
}

/// What each role's mark means, in the legend.
fn role_words(role: Role) -> &'static str {
    match role {
        Role::Calibration => "calibration: a parameter was fitted to it",
        Role::Input => "input: copied into the machine or workload",
        Role::Validation => "validation: nothing fitted to it",
    }
}

/// One legend line per role among `recs`' published values, from
/// `legend_top` down; `tick`: the marks sit on a bar's black tick.
fn role_legend<'a>(
    recs: impl IntoIterator<Item = &'a Record>,
    left: f64,
    legend_top: f64,
    tick: bool,
) -> String {
    let recs: Vec<&Record> = recs.into_iter().collect();
    let bounded = recs
        .iter()
        .any(|r| r.paper.is_some() && !matches!(r.paper_bound, Bound::At | Bound::Range));
    let ranged = recs.iter().any(|r| r.paper_high.is_some());
    let roles = roles_present(recs.iter().copied()).len();
    let mut s = String::new();
    for (i, role) in roles_present(recs.iter().copied()).into_iter().enumerate() {
        let y = legend_top + 18.0 * i as f64;
        if tick {
            s += &format!(
                "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"black\" stroke-width=\"2\"/>",
                left + 10.0,
                y - 4.0,
                y - 4.0
            );
        }
        s += &paper_mark(left + 5.0, y - 4.0, Some(role));
        s += &format!(
            "<text x=\"{:.1}\" y=\"{y:.1}\">{PAPER_LEGEND}, {}</text>\n",
            left + 14.0,
            role_words(role)
        );
    }
    if bounded {
        let y = legend_top + 18.0 * roles as f64;
        s += &bound_arrow(left + 5.0, y - 16.0, Bound::Below);
        s += &format!(
            "<text x=\"{:.1}\" y=\"{y:.1}\">an arrow: the published value is a bound (down: the model must stay under it; up: over it)</text>\n",
            left + 14.0
        );
    }
    if ranged {
        let y = legend_top + 18.0 * (roles + usize::from(bounded)) as f64;
        s += &range_span((left + 5.0, y - 12.0), (left + 5.0, y + 2.0));
        s += &format!(
            "<text x=\"{:.1}\" y=\"{y:.1}\">a capped bar: the published statement is a range the model must fall in</text>\n",
            left + 14.0
        );
    }
    s
}

/// The y axis's name, `metric (unit)`, turned up the left edge.
fn y_title(r: &Record, top: f64, h: f64, log: bool) -> String {
    let unit = if r.unit.is_empty() {
        String::new()
    } else {
        format!(" ({})", r.unit)
    };
    let x = 14.0;
    let y = top + h / 2.0;
    format!(
        "<text x=\"{x}\" y=\"{y:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {x} {y:.1})\">{}{}{}</text>\n",
        escape(&r.metric),
        escape(&unit),
        if log { ", log scale" } else { "" }
    )
}

/// The words of a `[[paper]]` bound or range (its `note`) for the bars
/// whose case includes `case`: a paper that says "10s of seconds" has no
/// curve, and its capped bar alone does not say where the range came from.
#[derive(Debug, Clone, PartialEq)]
pub struct BarNote {
    pub case: Vec<(String, Json)>,
    pub text: String,
}

/// One horizontal bar per case (every case key of `metric`'s records, so
/// per-row keys too) for a scalar result under each configuration, the
/// published value as a role-shaped mark, and each of `notes` as a tag
/// (A, B, …) right of the published marks of the bars it belongs to, its
/// words in the legend; None if there are no values.
pub fn case_bars(
    records: &[Record],
    metric: &str,
    title: &str,
    notes: &[BarNote],
) -> Option<String> {
    let recs: Vec<&Record> = records
        .iter()
        .filter(|r| {
            r.metric == metric && (r.value.is_some_and(f64::is_finite) || r.paper.is_some())
        })
        .collect();
    if recs.is_empty() {
        return None;
    }
    // Label each bar by the keys whose values differ among the bars.
    let cases: Vec<&[(String, Json)]> = recs.iter().map(|r| r.case.as_slice()).collect();
    let names = super::case_name::case_names(&cases);
    let labels: Vec<String> = names
        .iter()
        .map(|n| {
            if n.title.is_empty() {
                metric.to_string()
            } else {
                n.title.clone()
            }
        })
        .collect();
    let label_w = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 48) as f64
        * 6.6
        + 12.0;
    let vals = recs
        .iter()
        .flat_map(|r| [r.value, r.paper, r.paper_high])
        .flatten()
        .filter(|v| v.is_finite());
    let (lo, hi) = vals.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let ax = YAxis::linear(lo, hi);
    let bar_h = 22.0;
    // A note names published values: only bars that carry one get its tag.
    let note_of = |r: &Record| {
        notes.iter().position(|n| {
            r.paper.is_some()
                && n.case
                    .iter()
                    .all(|(k, v)| r.case_value(k).is_some_and(|rv| super::paper::same(rv, v)))
        })
    };
    let mut shown: Vec<usize> = recs.iter().filter_map(|r| note_of(r)).collect();
    shown.sort_unstable();
    shown.dedup();
    let role_lines = paper_legend_lines(recs.iter().copied());
    let legend = 18.0 * (role_lines + shown.len()) as f64;
    let (w, top, left) = (900.0, 40.0, label_w);
    let ph = bar_h * recs.len() as f64;
    let h = top + ph + 50.0 + legend;
    let pw = w - left - 30.0;
    // The value axis runs left to right.
    let px = |v: f64| left + pw * (v - ax.lo) / (ax.hi - ax.lo).max(1e-12);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-size=\"15\">{}</text>\n",
        escape(title)
    );
    for (v, label) in &ax.ticks {
        let x = px(*v);
        s += &format!(
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\n<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>\n",
            top + ph,
            top + ph + 16.0
        );
    }
    let unit = if recs[0].unit.is_empty() {
        String::new()
    } else {
        format!(" ({})", recs[0].unit)
    };
    s += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}{}</text>\n",
        left + pw / 2.0,
        top + ph + 34.0,
        escape(metric),
        escape(&unit)
    );
    for (i, r) in recs.iter().enumerate() {
        let y = top + bar_h * i as f64;
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left - 8.0,
            y + bar_h / 2.0 + 4.0,
            escape(&labels[i])
        );
        if let Some(v) = r.value.filter(|v| v.is_finite()) {
            let (a, b) = (px(0.0f64.max(ax.lo)), px(v));
            s += &format!(
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"/>\n",
                a.min(b),
                y + 3.0,
                (b - a).abs().max(0.5),
                bar_h - 6.0,
                COLORS[0]
            );
        }
        if let Some(p) = r.paper {
            let x = px(p);
            s += &format!(
                "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"black\" stroke-width=\"2\"/>\n",
                y + 1.0,
                y + bar_h - 1.0
            );
            s += &paper_mark(x, y + bar_h / 2.0, r.role);
            if let Some(h) = r.paper_high {
                s += &range_span((x, y + bar_h / 2.0), (px(h), y + bar_h / 2.0));
            }
            if let Some(tag) = note_of(r).and_then(|n| shown.iter().position(|&m| m == n)) {
                // Right of whatever ends furthest right on the row, inside the frame.
                let end = [r.value, Some(p), r.paper_high]
                    .into_iter()
                    .flatten()
                    .filter(|v| v.is_finite())
                    .map(px)
                    .fold(x, f64::max);
                s += &format!(
                    "<text class=\"paper-note\" x=\"{:.1}\" y=\"{:.1}\" font-weight=\"bold\" fill=\"{NOTE_INK}\">{}</text>\n",
                    (end + 8.0).min(w - 12.0),
                    y + bar_h / 2.0 + 4.0,
                    char::from(b'A' + (tag % 26) as u8)
                );
            }
        }
    }
    s += &role_legend(recs.iter().copied(), 10.0, top + ph + 54.0, false);
    for (i, &n) in shown.iter().enumerate() {
        let ly = top + ph + 54.0 + 18.0 * (role_lines + i) as f64;
        s += &format!(
            "<text x=\"10\" y=\"{ly:.1}\" font-style=\"italic\" fill=\"#5c4812\"><tspan font-weight=\"bold\" font-style=\"normal\" fill=\"{NOTE_INK}\">{}</tspan> {}</text>\n",
            char::from(b'A' + (i % 26) as u8),
            escape(&notes[n].text)
        );
    }
    s += "</svg>\n";
    Some(s)
}

/// A `[[view]]`'s figure (its `plot`); None for a table or no records.
/// Here rather than on `View`, so the view (the grid) does not import the
/// plots that draw it.
pub fn view_plot(v: &super::view::View, records: &[Record]) -> Option<String> {
    use super::view::Plot;
    match v.plot {
        Plot::Table => None,
        Plot::Heatmap => heat_map(&v.pivot(records), v),
        Plot::Lines => view_lines(records, v),
    }
}

/// Lines of a `[[view]]` with `plot = "lines"`: its metric against the
/// numeric `rows` key (log2 when it spans a factor of 8, as CPU sweeps),
/// or against the metric `x` of the same case (MLC's loaded latency
/// against its bandwidth, one point per `inject_delay`); one line per
/// value of the other keys. None with fewer than two points.
pub fn view_lines(records: &[Record], v: &super::view::View) -> Option<String> {
    let ys: Vec<&Record> = records
        .iter()
        .filter(|r| {
            r.metric == v.metric
                && r.value.is_some_and(f64::is_finite)
                && r.case_value(&v.rows).is_some()
        })
        .collect();
    let mut case_keys: Vec<String> = Vec::new();
    for r in &ys {
        for (k, _) in &r.case {
            if *k != v.rows && !case_keys.contains(k) {
                case_keys.push(k.clone());
            }
        }
    }
    let mut x_unit = String::new();
    let pts: Vec<(&Record, f64, String)> = ys
        .iter()
        .filter_map(|&r| match &v.x {
            Some(xm) => {
                let xr = records
                    .iter()
                    .find(|o| o.metric == *xm && o.case == r.case)?;
                x_unit.clone_from(&xr.unit);
                Some((r, xr.value.filter(|x| x.is_finite())?, String::new()))
            }
            None => {
                let k = r.case_value(&v.rows)?;
                Some((r, k.as_f64().filter(|x| x.is_finite())?, fmt_json(k)))
            }
        })
        .collect();
    let (xmin, xmax) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), (_, x, _)| {
        (a.min(*x), b.max(*x))
    });
    // More distinct row values than fit as labels read as ticks instead.
    let mut distinct: Vec<f64> = pts.iter().map(|p| p.1).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let measured = v.x.is_some() || distinct.len() > 12;
    let axes = Axes {
        logx: !measured && xmin > 0.0 && xmax / xmin >= 8.0,
        logy_span: 100.0,
        min_y_span: 0.0,
        logy: None,
        xticks: measured,
    };
    let x_name = match &v.x {
        Some(xm) if x_unit.is_empty() => xm.clone(),
        Some(xm) => format!("{xm} ({x_unit})"),
        None => v.rows.clone(),
    };
    line_plot(
        &pts,
        axes,
        &escape(&x_name),
        &v.metric,
        &case_keys,
        &v.title,
        &[],
    )
}

/// Viridis at nine stops: lightness rises with the value, so the order
/// still reads in grey print and for colour-blind readers.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (0x44, 0x01, 0x54),
    (0x47, 0x2d, 0x7b),
    (0x3b, 0x52, 0x8b),
    (0x2c, 0x72, 0x8e),
    (0x21, 0x91, 0x8c),
    (0x28, 0xae, 0x80),
    (0x5e, 0xc9, 0x62),
    (0xad, 0xdc, 0x30),
    (0xfd, 0xe7, 0x25),
];

/// The colour of `t` in 0..=1 on the heat-map scale (clamped).
pub fn heat_rgb(t: f64) -> (u8, u8, u8) {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let f = t * (VIRIDIS.len() - 1) as f64;
    let i = (f.floor() as usize).min(VIRIDIS.len() - 2);
    let u = f - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * u).round() as u8;
    (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Relative luminance (Rec. 709 weights, 0..255) of a colour.
pub fn luminance((r, g, b): (u8, u8, u8)) -> f64 {
    0.2126 * r as f64 + 0.7152 * g as f64 + 0.0722 * b as f64
}

/// Indices of `labels` in numeric order when every label is a number,
/// else as they are.
fn numeric_order(labels: &[String]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..labels.len()).collect();
    let nums: Option<Vec<f64>> = labels.iter().map(|l| l.parse::<f64>().ok()).collect();
    if let Some(n) = nums {
        idx.sort_by(|&a, &b| n[a].total_cmp(&n[b]));
    }
    idx
}

/// A value in at most four characters' worth of digits, for a cell.
fn cell_text(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        // Three significant digits with an SI prefix: 356499 → "356k".
        let e = a.log10().floor();
        si_label(v, 10f64.powf(e - 2.0))
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The heat map of a `[[view]]` with `plot = "heatmap"`: `rows` down,
/// `columns` across, one panel per group (e.g. per machine preset) on one
/// colour scale so panels compare; values printed in the cells when the
/// matrix is small enough to read them; a published value's cell carries
/// its role's black mark. None if no cell has a value.
pub fn heat_map(pivots: &[super::view::Pivot], v: &super::view::View) -> Option<String> {
    let vals = pivots
        .iter()
        .flat_map(|p| p.cells.iter().flatten().flatten())
        .filter_map(|c| c.value)
        .filter(|x| x.is_finite());
    let (lo, hi) = vals.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    if lo > hi {
        return None;
    }
    let t_of = |x: f64| if hi > lo { (x - lo) / (hi - lo) } else { 0.5 };
    let maxdim = pivots
        .iter()
        .map(|p| p.row_labels.len().max(p.col_labels.len()))
        .max()
        .unwrap_or(1)
        .max(1);
    // Cells share one size so panels of different machines compare.
    let cs = (352.0 / maxdim as f64).floor().clamp(12.0, 48.0);
    let show = cs >= 26.0;
    let fs = (cs / 3.4).clamp(8.0, 12.0).floor();
    const CH: f64 = 7.0; // width of a 12px sans-serif character, about
    let chars = |ls: &[String]| ls.iter().map(|l| l.chars().count()).max().unwrap_or(1) as f64;
    let mut panels = String::new();
    let (w_max, mut x, mut y, mut row_h, mut used_w) = (940.0, 10.0, 84.0, 0.0f64, 0.0f64);
    let mut roles: Vec<Role> = Vec::new();
    for p in pivots {
        let group: Vec<String> = p
            .group
            .iter()
            .map(|(k, val)| format!("{k} = {}", fmt_json(val)))
            .collect();
        let group = group.join(", ");
        let label_w = chars(&p.row_labels) * CH + 8.0;
        let rotate = chars(&p.col_labels) * CH > cs - 4.0;
        let col_h = if rotate {
            chars(&p.col_labels) * CH * 0.72 + 8.0
        } else {
            16.0
        };
        let (nr, nc) = (p.row_labels.len() as f64, p.col_labels.len() as f64);
        let gx = 18.0 + label_w; // left edge of the grid within the panel
        let pw = (gx + nc * cs).max(group.chars().count() as f64 * CH) + 30.0;
        let ph = 20.0 + 16.0 + col_h + nr * cs + 24.0;
        if x > 10.0 && x + pw > w_max {
            x = 10.0;
            y += row_h;
            row_h = 0.0;
        }
        let (ox, oy) = (x + gx, y + 36.0 + col_h);
        panels += &format!(
            "<text x=\"{x:.1}\" y=\"{:.1}\" font-weight=\"bold\">{}</text>\n",
            y + 12.0,
            escape(&group)
        );
        panels += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{} →</text>\n",
            ox + nc * cs / 2.0,
            y + 30.0,
            escape(&v.columns)
        );
        panels += &format!(
            "<text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"middle\" fill=\"#555\" transform=\"rotate(-90 {0:.1} {1:.1})\">{2} →</text>\n",
            x + 10.0,
            oy + nr * cs / 2.0,
            escape(&v.rows)
        );
        // Node and CPU numbers in numeric order whatever order the rows
        // were recorded in (c2c's first pair is 0-1, so `0` came last).
        let (ro, co) = (numeric_order(&p.row_labels), numeric_order(&p.col_labels));
        for (cpos, &ci) in co.iter().enumerate() {
            let c = &p.col_labels[ci];
            let cx = ox + cs * (cpos as f64 + 0.5);
            panels += &if rotate {
                format!(
                    "<text x=\"{cx:.1}\" y=\"{0:.1}\" transform=\"rotate(-45 {cx:.1} {0:.1})\">{1}</text>\n",
                    oy - 6.0,
                    escape(c)
                )
            } else {
                format!(
                    "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                    oy - 5.0,
                    escape(c)
                )
            };
        }
        for (rpos, &ri) in ro.iter().enumerate() {
            let rl = &p.row_labels[ri];
            let ry = oy + cs * rpos as f64;
            panels += &format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
                ox - 6.0,
                ry + cs / 2.0 + 4.0,
                escape(rl)
            );
            for (cpos, &ci) in co.iter().enumerate() {
                let cell = &p.cells[ri][ci];
                let cx = ox + cs * cpos as f64;
                let val = cell.and_then(|c| c.value).filter(|x| x.is_finite());
                let Some(val) = val else {
                    panels += &format!(
                        "<rect class=\"cell empty\" x=\"{cx:.1}\" y=\"{ry:.1}\" width=\"{cs}\" height=\"{cs}\" fill=\"#eee\" stroke=\"white\"/>\n"
                    );
                    continue;
                };
                let rgb = heat_rgb(t_of(val));
                panels += &format!(
                    "<rect class=\"cell\" x=\"{cx:.1}\" y=\"{ry:.1}\" width=\"{cs}\" height=\"{cs}\" fill=\"#{:02x}{:02x}{:02x}\" stroke=\"white\"><title>{} = {}, {} = {}: {}</title></rect>\n",
                    rgb.0,
                    rgb.1,
                    rgb.2,
                    escape(&v.rows),
                    escape(rl),
                    escape(&v.columns),
                    escape(&p.col_labels[ci]),
                    cell_text(val)
                );
                if show {
                    let ink = if luminance(rgb) > 140.0 {
                        "black"
                    } else {
                        "white"
                    };
                    panels += &format!(
                        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"{fs}\" fill=\"{ink}\">{}</text>\n",
                        cx + cs / 2.0,
                        ry + cs / 2.0 + fs / 3.0,
                        cell_text(val)
                    );
                }
                if let Some(c) = cell.filter(|c| c.paper.is_some()) {
                    let role = c.role.unwrap_or(Role::Validation);
                    if !roles.contains(&role) {
                        roles.push(role);
                    }
                    panels += &format!(
                        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n",
                        cx + 1.0,
                        ry + 1.0,
                        cs - 2.0,
                        cs - 2.0
                    );
                }
            }
        }
        used_w = used_w.max(x + pw);
        row_h = row_h.max(ph);
        x += pw;
    }
    roles.sort();
    // One legend line per role of the framed cells.
    let role_lines: Vec<String> = roles
        .iter()
        .map(|r| format!("black frame: {PAPER_LEGEND}, {}", role_words(*r)))
        .collect();
    let legend_h = 18.0 * role_lines.len() as f64;
    let legend_w = role_lines
        .iter()
        .map(|l| 40.0 + l.chars().count() as f64 * 6.4)
        .fold(0.0, f64::max);
    // As wide as the other plots, so the page scales its text alike.
    let (w, h) = (
        used_w.max(900.0).max(legend_w).ceil(),
        (y + row_h + legend_h + 8.0).ceil(),
    );
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" font-size=\"15\">{}</text>\n",
        escape(&v.title)
    );
    // The colour scale: a bar of small steps (no gradient id to collide
    // when pages inline several plots), 1-2-5 ticks inside the data range.
    let (bx, by, bw, bh) = (10.0, 34.0, 320.0, 14.0);
    const STEPS: usize = 64;
    for i in 0..STEPS {
        let rgb = heat_rgb((i as f64 + 0.5) / STEPS as f64);
        s += &format!(
            "<rect x=\"{:.2}\" y=\"{by}\" width=\"{:.2}\" height=\"{bh}\" fill=\"#{:02x}{:02x}{:02x}\"/>\n",
            bx + bw * i as f64 / STEPS as f64,
            bw / STEPS as f64 + 0.3,
            rgb.0,
            rgb.1,
            rgb.2
        );
    }
    let ax = YAxis::linear(lo, hi);
    let mut ticks: Vec<(f64, String)> = ax
        .ticks
        .into_iter()
        .filter(|(t, _)| *t >= lo - 1e-9 * lo.abs() && *t <= hi + 1e-9 * hi.abs())
        .collect();
    if ticks.is_empty() || hi == lo {
        ticks = vec![(lo, cell_text(lo))];
    }
    for (t, l) in &ticks {
        let tx = bx + bw * t_of(*t);
        s += &format!(
            "<line x1=\"{tx:.1}\" x2=\"{tx:.1}\" y1=\"{by}\" y2=\"{:.1}\" stroke=\"black\"/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{l}</text>\n",
            by + bh + 3.0,
            by + bh + 15.0
        );
    }
    let unit = pivots
        .first()
        .map(|p| p.unit.as_str())
        .filter(|u| !u.is_empty())
        .map(|u| format!(" ({u})"))
        .unwrap_or_default();
    s += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\">{}{}: {} … {}{}</text>\n",
        bx + bw + 12.0,
        by + bh - 2.0,
        escape(&v.metric),
        escape(&unit),
        cell_text(lo),
        cell_text(hi),
        if v.better == super::view::Better::Lower {
            ", lower is better"
        } else {
            ""
        }
    );
    s += &panels;
    for (i, role_line) in role_lines.iter().enumerate() {
        let ly = y + row_h + 4.0 + 18.0 * i as f64;
        s += &format!(
            "<rect x=\"10\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/><text x=\"26\" y=\"{ly:.1}\">{}</text>\n",
            ly - 9.0,
            escape(role_line)
        );
    }
    s += "</svg>\n";
    Some(s)
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A y axis: its ends in axis units (log10 of the value on a log axis) and
/// its tick values, each with its label.
#[derive(Debug, Clone, PartialEq)]
pub struct YAxis {
    pub log: bool,
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<(f64, String)>,
}

impl YAxis {
    /// A linear axis covering `lo..=hi` in whole steps of 1, 2 or 5 × 10^k,
    /// four to nine of them.
    pub fn linear(lo: f64, hi: f64) -> YAxis {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        // The largest 1-2-5 step that still gives four intervals; the next
        // larger one is at most 2.5 times as big, so there are under ten.
        let e = (hi - lo).log10().floor() as i32;
        let intervals = |step: f64| ((hi / step - 1e-9).ceil() - (lo / step + 1e-9).floor()) as i64;
        let step = (e - 2..=e)
            .rev()
            .flat_map(|e| [5.0, 2.0, 1.0].map(|m| m * 10f64.powi(e)))
            .find(|&step| intervals(step) >= 4)
            .unwrap_or(10f64.powi(e - 2));
        // Whole multiples of the step, so labels carry no rounding noise.
        let (k0, k1) = (
            (lo / step + 1e-9).floor() as i64,
            (hi / step - 1e-9).ceil() as i64,
        );
        let ticks = (k0..=k1)
            .map(|k| {
                let v = k as f64 * step;
                (v, si_label(v, step))
            })
            .collect();
        YAxis {
            log: false,
            lo: k0 as f64 * step,
            hi: k1 as f64 * step,
            ticks,
        }
    }

    /// A log10 axis from the decade at or below `lo` to the one at or above
    /// `hi` (both > 0), a tick at each power of ten (every other one past
    /// ten decades), and at 2 and 5 × too when it spans a single decade.
    pub fn log(lo: f64, hi: f64) -> YAxis {
        let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let d1 = d1.max(d0 + 1);
        let every = if d1 - d0 > 10 { 2 } else { 1 };
        let mut ticks = Vec::new();
        for d in (d0..=d1).filter(|d| (d - d0) % every == 0) {
            let p = 10f64.powi(d);
            ticks.push((d as f64, si_label(p, p)));
            if d1 - d0 == 1 && d < d1 {
                for m in [2.0, 5.0] {
                    ticks.push(((m * p).log10(), si_label(m * p, p)));
                }
            }
        }
        ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
        YAxis {
            log: true,
            lo: d0 as f64,
            hi: d1 as f64,
            ticks,
        }
    }

    /// Pixel row of value `v` on a plot `top..top + h` high.
    pub fn y(&self, v: f64, top: f64, h: f64) -> f64 {
        let a = if self.log { v.max(1e-300).log10() } else { v };
        top + h - h * (a - self.lo) / (self.hi - self.lo).max(1e-12)
    }

    /// Grid lines and labels left of `left`, across `width`.
    fn draw(&self, left: f64, width: f64, top: f64, h: f64) -> String {
        let mut s = String::new();
        for (a, label) in &self.ticks {
            let y = top + h - h * (a - self.lo) / (self.hi - self.lo).max(1e-12);
            s += &format!(
                "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>\n",
                left + width,
                left - 6.0,
                y + 4.0,
            );
        }
        s
    }
}

/// `v` with an SI prefix (k, M, G, T, P) and just the decimals that `step`
/// (the spacing of neighbouring labels) needs: 200000 → "200k", 0.25 → "0.25".
pub fn si_label(v: f64, step: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let (div, prefix) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| v.abs() >= *d * (1.0 - 1e-9))
        .unwrap_or((1.0, ""));
    let decimals = (-(step / div).log10() - 1e-9).ceil().clamp(0.0, 12.0) as usize;
    let mut s = format!("{:.*}", decimals, v / div);
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s + prefix
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A label read back: "200k" → 200000.
    fn parse_label(l: &str) -> f64 {
        let (num, mult) = match l.chars().last() {
            Some('k') => (&l[..l.len() - 1], 1e3),
            Some('M') => (&l[..l.len() - 1], 1e6),
            Some('G') => (&l[..l.len() - 1], 1e9),
            Some('T') => (&l[..l.len() - 1], 1e12),
            Some('P') => (&l[..l.len() - 1], 1e15),
            _ => (l, 1.0),
        };
        num.parse::<f64>().unwrap_or_else(|_| panic!("label {l:?}")) * mult
    }

    /// 1, 2 or 5 times a power of ten.
    fn is_125(x: f64) -> bool {
        let m = x / 10f64.powf(x.log10().floor());
        [1.0, 2.0, 5.0, 10.0].iter().any(|c| (m - c).abs() < 1e-6)
    }

    #[test]
    fn linear_ticks_step_by_1_2_5_and_read_back() {
        for (lo, hi) in [
            (0.0, 541_000.0),
            (0.0, 2160.0),
            (0.0, 1.0),
            (0.0, 0.37),
            (-3.0, 17.0),
            (0.0, 17_782_794.1),
            (1000.0, 1010.0),
            (0.0, 3.1),
            (5.0, 5.0),
        ] {
            let ax = YAxis::linear(lo, hi);
            assert!(ax.lo <= lo && ax.hi >= hi, "{lo}..{hi}: {ax:?}");
            let n = ax.ticks.len() - 1;
            assert!((4..=9).contains(&n), "{lo}..{hi}: {n} intervals");
            let step = ax.ticks[1].0 - ax.ticks[0].0;
            assert!(is_125(step), "{lo}..{hi}: step {step}");
            for (v, l) in &ax.ticks {
                let back = parse_label(l);
                assert!(
                    (back - v).abs() <= 1e-9 * step.max(v.abs()),
                    "{l} is not {v}"
                );
                assert!(!l.contains('e'), "{l}");
            }
        }
    }

    #[test]
    fn log_ticks_are_powers_of_ten_with_si_prefixes() {
        let ax = YAxis::log(133_656.3, 61_000_000.0);
        let labels: Vec<&str> = ax.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["100k", "1M", "10M", "100M"]);
        // One decade: 1-2-5 within it.
        let ax = YAxis::log(12.0, 80.0);
        let labels: Vec<&str> = ax.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["10", "20", "50", "100"]);
        let ax = YAxis::log(0.003, 0.4);
        for (a, l) in &ax.ticks {
            assert_eq!(parse_label(l), 10f64.powf(*a), "{l}");
        }
    }

    /// Every y-axis label of a drawn plot (right-aligned text).
    fn y_labels(svg: &str) -> Vec<String> {
        svg.lines()
            .filter(|l| l.contains("text-anchor=\"end\""))
            .filter_map(|l| l.split('>').nth(1)?.split('<').next().map(String::from))
            .collect()
    }

    fn sweep(case: &str, v: impl Fn(f64) -> f64) -> Vec<Record> {
        [1u64, 2, 4, 8, 16, 32, 64, 128, 256, 512]
            .iter()
            .map(|&n| {
                Record::new(
                    "t",
                    vec![
                        ("kernel".into(), json!(case)),
                        ("processes".into(), json!(n)),
                    ],
                    "faults_per_s",
                    "1/s",
                    v(n as f64),
                )
            })
            .collect()
    }

    #[test]
    fn coinciding_series_are_noted() {
        let keys = vec!["kernel".to_string()];
        let mut recs = sweep("2.4", |n| 1000.0 * n);
        recs.extend(sweep("2.6", |n| 1000.0 * n));
        recs.extend(sweep("altix", |n| 3000.0 * n));
        let svg = sweep_lines(&recs, "faults_per_s", &keys, "t").unwrap();
        let notes: Vec<&str> = svg.lines().filter(|l| l.contains("coincides")).collect();
        assert_eq!(notes.len(), 1, "{svg}");
        assert!(
            notes[0].contains("kernel=2.6 (coincides with kernel=2.4"),
            "{}",
            notes[0]
        );
        assert_eq!(svg.matches("stroke-dasharray").count(), 1);
        // Apart, no note.
        let mut recs = sweep("2.4", |n| 1000.0 * n);
        recs.extend(sweep("2.6", |n| 1000.0 * n * n));
        let svg = sweep_lines(&recs, "faults_per_s", &keys, "t").unwrap();
        assert!(
            !svg.contains("coincides") && !svg.contains("dasharray"),
            "{svg}"
        );
    }

    #[test]
    fn the_papers_words_stand_at_their_x_and_only_inside_the_data() {
        let keys = vec!["kernel".to_string()];
        let recs = sweep("2.4", |n| 1000.0 * n);
        let mark = |x: f64, x_high: Option<f64>, text: &str| crate::report::XMark {
            x,
            x_high,
            text: text.into(),
        };
        let opts = PlotOpts {
            marks: vec![
                mark(16.0, None, "minimum near 16 <CPUs>"),
                mark(256.0, Some(512.0), "rises again"),
                mark(4096.0, None, "beyond the data"),
            ],
            ..PlotOpts::default()
        };
        let svg = sweep_lines_with(&recs, "faults_per_s", &keys, "t", opts).unwrap();
        assert_eq!(svg.matches("class=\"paper-shape\"").count(), 2, "{svg}");
        // The words stand in the legend, tagged as their marks are.
        assert!(svg.contains("<tspan font-weight=\"bold\" font-style=\"normal\">A</tspan> minimum near 16 &lt;CPUs&gt; (the text"));
        assert!(
            svg.contains("<rect class=\"paper-shape\"") && svg.contains("B</tspan> rises again")
        );
        assert!(!svg.contains("beyond the data"));
        // The 16 line sits where the curve's 16 point is (log2 x: 4 of 9 steps).
        let line = svg
            .lines()
            .find(|l| l.starts_with("<line class=\"paper-shape\""))
            .unwrap();
        let x1: f64 = line
            .split("x1=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((x1 - (80.0 + 790.0 * 4.0 / 9.0)).abs() < 0.2, "{line}");
        // Without marks, nothing of the kind.
        let plain = sweep_lines(&recs, "faults_per_s", &keys, "t").unwrap();
        assert!(!plain.contains("paper-shape"));
    }

    #[test]
    fn a_bound_points_to_the_side_the_value_must_be_on() {
        assert!(bound_arrow(10.0, 50.0, Bound::At).is_empty());
        // The shaft runs from just past the mark to its tip.
        assert!(bound_arrow(10.0, 50.0, Bound::Below).contains("M10.0,56.0 L10.0,68.0"));
        assert!(bound_arrow(10.0, 50.0, Bound::Above).contains("M10.0,44.0 L10.0,32.0"));
    }

    #[test]
    fn a_range_note_tags_its_bar_and_stands_in_the_legend() {
        // altix-toss: toss=0 carries the published range 10-100 s and its words.
        let mut recs: Vec<Record> = [0, 1]
            .iter()
            .map(|t| {
                Record::new(
                    "t",
                    vec![("kernel.toss".into(), json!(t))],
                    "max_stall_s",
                    "s",
                    35.0 - 12.0 * *t as f64,
                )
            })
            .collect();
        recs[0].paper = Some(10.0);
        recs[0].paper_high = Some(100.0);
        recs[0].paper_bound = Bound::Range;
        let note = |case: serde_json::Value, text: &str| BarNote {
            case: vec![("kernel.toss".into(), case)],
            text: text.into(),
        };
        let notes = [
            note(json!(0), "\"10s of seconds\": 10-100 s"),
            // A note whose case has no published value on any bar: not drawn.
            note(json!(1), "unused"),
        ];
        let svg = case_bars(&recs, "max_stall_s", "t", &notes).unwrap();
        assert_eq!(svg.matches("class=\"paper-note\"").count(), 1, "{svg}");
        assert!(svg.contains("fill=\"#8a6d1f\">A</text>"));
        assert!(svg.contains("</tspan> \"10s of seconds\": 10-100 s</text>"));
        assert!(!svg.contains("unused"));
        // Inside the frame although the range ends at the axis's right end.
        let x: f64 = svg.split("class=\"paper-note\" x=\"").nth(1).unwrap()[..5]
            .trim_end_matches('"')
            .parse()
            .unwrap();
        assert!(x <= 900.0 - 12.0, "{x}");
        // Without notes, no tags and the same legend as before.
        let bare = case_bars(&recs, "max_stall_s", "t", &[]).unwrap();
        assert!(!bare.contains("paper-note") && !bare.contains("10s of seconds"));
    }

    #[test]
    fn paper_marks_have_a_legend_entry() {
        let keys = vec!["kernel".to_string()];
        let mut recs = sweep("2.4", |n| 1000.0 * n);
        let svg = sweep_lines(&recs, "faults_per_s", &keys, "t").unwrap();
        assert!(!svg.contains(PAPER_LEGEND));
        recs[3].paper = Some(9000.0);
        let svg = sweep_lines(&recs, "faults_per_s", &keys, "t").unwrap();
        assert_eq!(svg.matches(PAPER_LEGEND).count(), 1, "{svg}");
        // Bars: the paper's value is a black tick.
        let mut bars: Vec<Record> = (0..4u64)
            .map(|n| {
                Record::new(
                    "t",
                    vec![("kernel".into(), json!("a")), ("node".into(), json!(n))],
                    "mem_used_kb",
                    "kB",
                    100.0 * n as f64,
                )
            })
            .collect();
        let svg = node_bars(&bars, "mem_used_kb", &keys, "t").unwrap();
        assert!(!svg.contains(PAPER_LEGEND));
        bars[1].paper = Some(120.0);
        let svg = node_bars(&bars, "mem_used_kb", &keys, "t").unwrap();
        assert_eq!(svg.matches(PAPER_LEGEND).count(), 1, "{svg}");
    }

    #[test]
    fn few_nodes_are_bars() {
        let bars = |nodes: u64| -> Vec<Record> {
            ["a", "b", "c", "d"]
                .iter()
                .flat_map(|k| {
                    (0..nodes).map(move |n| {
                        Record::new(
                            "t",
                            vec![("kernel".into(), json!(k)), ("node".into(), json!(n))],
                            "mem_used_kb",
                            "kB",
                            1.0 + n as f64,
                        )
                    })
                })
                .collect()
        };
        let keys = vec!["kernel".to_string()];
        let few = node_bars(&bars(8), "mem_used_kb", &keys, "t").unwrap();
        assert!(few.matches("<rect ").count() > 32 && !few.contains("<polyline"));
    }

    #[test]
    fn drawn_axes_carry_only_1_2_5_labels() {
        let mut recs = sweep("2.4", |n| 133_656.3 * n.sqrt());
        recs.extend(sweep("altix", |n| 133_656.3 * n * 0.9));
        let keys = vec!["kernel".to_string()];
        let svg = sweep_lines(&recs, "faults_per_s", &keys, "t").unwrap();
        let labels = y_labels(&svg);
        assert!(labels.len() >= 3, "{labels:?}");
        for l in &labels {
            assert!(is_125(parse_label(l)), "{l} in {labels:?}");
        }
    }

    use crate::report::view::{Better, Plot, View};

    fn matrix_view(plot: Plot, x: Option<&str>) -> View {
        View {
            title: "latency matrix".into(),
            metric: "idle_latency_ns".into(),
            rows: "from_node".into(),
            columns: "to_node".into(),
            baseline: None,
            better: Better::Lower,
            plot,
            x: x.map(String::from),
        }
    }

    /// An n × n matrix on two machines, value 10 + from * n + to (machine
    /// b: + 1000), recorded in a scrambled order (the last node first).
    fn matrix(n: u64) -> Vec<Record> {
        let mut out = Vec::new();
        for (m, add) in [("a", 0.0), ("b", 1000.0)] {
            for i in (0..n).rev() {
                for j in 0..n {
                    out.push(Record::new(
                        "t",
                        vec![
                            ("machine.preset".into(), json!(m)),
                            ("from_node".into(), json!(i)),
                            ("to_node".into(), json!(j)),
                        ],
                        "idle_latency_ns",
                        "ns",
                        10.0 + (i * n + j) as f64 + add,
                    ));
                }
            }
        }
        out
    }

    fn hex_rgb(fill: &str) -> (u8, u8, u8) {
        let h = |i: usize| u8::from_str_radix(&fill[i..i + 2], 16).unwrap();
        (h(1), h(3), h(5))
    }

    /// (row, col, value) from each cell's tooltip, with the cell's fill.
    fn cells(svg: &str) -> Vec<(String, String, f64, (u8, u8, u8), f64, f64)> {
        let doc = roxmltree::Document::parse(svg).expect("well-formed XML");
        doc.descendants()
            .filter(|n| n.attribute("class") == Some("cell"))
            .map(|n| {
                let t = n.first_element_child().unwrap().text().unwrap().to_string();
                // "from_node = 3, to_node = 0: 22.0"
                let (keys, v) = t.rsplit_once(": ").unwrap();
                let (r, c) = keys.split_once(", ").unwrap();
                let num = |s: &str| s.rsplit_once(" = ").unwrap().1.to_string();
                let at = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
                (
                    num(r),
                    num(c),
                    parse_label(v),
                    hex_rgb(n.attribute("fill").unwrap()),
                    at("x"),
                    at("y"),
                )
            })
            .collect()
    }

    #[test]
    fn heat_map_is_well_formed_deterministic_and_monotone() {
        let recs = matrix(4);
        let v = matrix_view(Plot::Heatmap, None);
        let svg = view_plot(&v, &recs).expect("a heat map");
        assert_eq!(
            view_plot(&v, &recs).unwrap(),
            svg,
            "same records, same bytes"
        );
        let cs = cells(&svg);
        assert_eq!(cs.len(), 32, "4 × 4 cells on each of two machines");
        // One colour scale over both panels: a larger value is never darker.
        let mut by_value: Vec<(f64, f64)> = cs.iter().map(|c| (c.2, luminance(c.3))).collect();
        by_value.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in by_value.windows(2) {
            assert!(w[1].1 >= w[0].1, "{:?} darker than {:?}", w[1], w[0]);
        }
        assert!(
            by_value[31].1 - by_value[0].1 > 150.0,
            "the scale spans dark to light"
        );
        // Small matrix: every value printed in its cell.
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        for c in &cs {
            assert!(
                texts.iter().any(|t| parse_label_opt(t) == Some(c.2)),
                "{} not printed",
                c.2
            );
        }
        // Nodes drawn in numeric order although recorded last node first.
        let a: Vec<_> = cs.iter().filter(|c| c.2 < 1000.0).collect();
        let y_of = |r: &str| a.iter().find(|c| c.0 == r).unwrap().5;
        assert!(y_of("0") < y_of("1") && y_of("1") < y_of("3"));
        // Axis names from the row keys.
        assert!(texts.iter().any(|t| t.starts_with("from_node")));
        assert!(texts.iter().any(|t| t.starts_with("to_node")));
    }

    fn parse_label_opt(t: &str) -> Option<f64> {
        let t = t.trim();
        (!t.is_empty()
            && t.chars()
                .all(|c| c.is_ascii_digit() || ".kMGTP-".contains(c)))
        .then(|| parse_label(t))
    }

    #[test]
    fn a_large_heat_map_leaves_values_to_the_colours() {
        let recs = matrix(30);
        let svg = view_plot(&matrix_view(Plot::Heatmap, None), &recs).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
        assert_eq!(cells(&svg).len(), 2 * 900);
        let printed = doc
            .descendants()
            .filter(|n| {
                n.attribute("font-size")
                    .is_some_and(|f| f != "12" && f != "15")
            })
            .count();
        assert_eq!(printed, 0, "no cell text in 12-pixel cells");
    }

    #[test]
    fn lines_against_another_metric_keep_the_row_order() {
        // A loaded-latency curve: bandwidth rises then falls back as the
        // delay shrinks (rows 100, 10, 0); latency rises throughout.
        let mut recs = Vec::new();
        for (d, bw, lat) in [(100u64, 50.0, 100.0), (10, 90.0, 200.0), (0, 80.0, 400.0)] {
            let case = vec![("inject_delay".to_string(), json!(d))];
            recs.push(Record::new(
                "t",
                case.clone(),
                "loaded_latency_ns",
                "ns",
                lat,
            ));
            recs.push(Record::new("t", case, "bandwidth_mbps", "MB/s", bw));
        }
        let v = View {
            metric: "loaded_latency_ns".into(),
            rows: "inject_delay".into(),
            columns: "machine.preset".into(),
            ..matrix_view(Plot::Lines, Some("bandwidth_mbps"))
        };
        let svg = view_plot(&v, &recs).expect("a line plot");
        let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
        let line = doc
            .descendants()
            .find(|n| n.has_tag_name("polyline"))
            .unwrap();
        let pts: Vec<(f64, f64)> = line
            .attribute("points")
            .unwrap()
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        assert_eq!(pts.len(), 3);
        // Record order: x goes right then back left; y (pixels) only up.
        assert!(pts[1].0 > pts[0].0 && pts[2].0 < pts[1].0, "{pts:?}");
        assert!(pts[1].1 < pts[0].1 && pts[2].1 < pts[1].1, "{pts:?}");
        assert!(
            svg.contains("bandwidth_mbps (MB/s)"),
            "x axis named by its metric"
        );
        assert_eq!(view_plot(&v, &recs).unwrap(), svg);
    }

    #[test]
    fn lines_over_a_numeric_row_key() {
        let recs: Vec<Record> = [1u64, 8, 48]
            .iter()
            .flat_map(|&t| {
                ["local", "interleave"].map(|p| {
                    Record::new(
                        "t",
                        vec![("policy".into(), json!(p)), ("threads".into(), json!(t))],
                        "stream_mbps",
                        "MB/s",
                        t as f64 * 1000.0,
                    )
                })
            })
            .collect();
        let v = View {
            metric: "stream_mbps".into(),
            rows: "threads".into(),
            columns: "policy".into(),
            ..matrix_view(Plot::Lines, None)
        };
        let svg = view_plot(&v, &recs).unwrap();
        roxmltree::Document::parse(&svg).expect("well-formed XML");
        assert_eq!(svg.matches("<polyline").count(), 2, "one line per policy");
        assert!(svg.contains("threads (log scale)"));
        assert!(view_plot(&matrix_view(Plot::Table, None), &recs).is_none());
    }
}
