//! SVG plots written directly: a bar chart of a per-node metric, one bar
//! group per case, the published value as a tick where one exists.

use super::table::fmt_json;
use super::Record;
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
        .filter_map(|r| match (r.value, r.paper) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        })
        .fold(0.0f64, f64::max)
        .max(1.0);
    // One legend line per case under the axis.
    let legend = 18.0 * cases.len() as f64;
    let (w, h, left, top, bottom) = (900.0, 400.0 + legend, 70.0, 40.0, 50.0 + legend);
    let plot_w = w - left - 20.0;
    let plot_h = h - top - bottom;
    let group_w = plot_w / nodes as f64;
    let bar_w = (group_w * 0.8 / cases.len() as f64).max(0.5);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"15\">{title}</text>\n"
    );
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let y = top + plot_h - plot_h * i as f64 / 4.0;
        s += &format!(
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\n",
            w - 20.0
        );
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left - 6.0,
            y + 4.0,
            super::table::fmt_value(Some(v.round()))
        );
    }
    for r in &recs {
        let node = r.case_value("node").and_then(Json::as_u64).unwrap_or(0) as f64;
        let k: Vec<(String, Json)> = r.case_of(case_keys);
        let ci = cases.iter().position(|c| *c == k).unwrap_or(0);
        let x = left + node * group_w + group_w * 0.1 + ci as f64 * bar_w;
        if let Some(v) = r.value {
            let bh = plot_h * v / max;
            s += &format!(
                "<rect x=\"{x:.2}\" y=\"{:.2}\" width=\"{bar_w:.2}\" height=\"{bh:.2}\" fill=\"{}\"/>\n",
                top + plot_h - bh,
                COLORS[ci % COLORS.len()]
            );
        }
        if let Some(p) = r.paper {
            let y = top + plot_h - plot_h * p / max;
            s += &format!("<line x1=\"{x:.2}\" x2=\"{:.2}\" y1=\"{y:.2}\" y2=\"{y:.2}\" stroke=\"black\" stroke-width=\"2\"/>\n", x + bar_w);
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
            label.join(", ")
        );
    }
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
        logx: xmin > 0.0 && xmax / xmin >= 8.0,
        logy_span: 100.0,
        min_y_span: 0.0,
    };
    line_plot(&pts, axes, x_key, metric, case_keys, title)
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
    if case_keys.iter().any(|c| c == "size") {
        return None;
    }
    let size_of = |r: &Record| -> Option<(f64, String)> {
        let v = r.case_value("size")?;
        let bytes = match v {
            Json::String(s) => crate::scenario::size::parse_size(s).ok()?,
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
        logx: true,
        logy_span: 10.0,
        min_y_span: 1.0,
    };
    line_plot(&pts, axes, "size", metric, case_keys, title)
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
        .flat_map(|(r, _, _)| [r.value, r.paper])
        .flatten()
        .filter(|v| v.is_finite());
    let (ymin, ymax) = ys.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let (xmin, xmax) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), (_, x, _)| {
        (a.min(*x), b.max(*x))
    });
    let logx = axes.logx;
    let logy = ymin > 0.0 && ymax / ymin >= axes.logy_span;
    let (y0, y1) = if logy {
        (ymin.log10().floor(), ymax.log10().ceil())
    } else {
        let lo = ymin.min(0.0);
        let hi = if ymax > lo && ymax - lo >= axes.min_y_span {
            ymax
        } else {
            lo + 1.0
        };
        (lo, hi)
    };
    let fx = |x: f64| if logx { x.log2() } else { x };
    let (x0, x1) = (fx(xmin), fx(xmax).max(fx(xmin) + 1e-9));
    let legend = 18.0 * cases.len() as f64;
    let (w, h, left, top, bottom) = (900.0, 420.0 + legend, 80.0, 40.0, 60.0 + legend);
    let (pw, ph) = (w - left - 30.0, h - top - bottom);
    let px = |x: f64| left + pw * (fx(x) - x0) / (x1 - x0).max(1e-9);
    let py = |y: f64| {
        let v = if logy { y.max(1e-300).log10() } else { y };
        top + ph - ph * (v - y0) / (y1 - y0).max(1e-12)
    };
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"15\">{title}</text>\n"
    );
    for i in 0..=4 {
        let v = y0 + (y1 - y0) * i as f64 / 4.0;
        let label = if logy { 10f64.powf(v) } else { v };
        let y = top + ph - ph * i as f64 / 4.0;
        s += &format!(
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left + pw,
            left - 6.0,
            y + 4.0,
            super::table::fmt_value(Some(label))
        );
    }
    let mut xs: Vec<(f64, &str)> = pts.iter().map(|(_, x, l)| (*x, l.as_str())).collect();
    xs.sort_by(|a, b| a.0.total_cmp(&b.0));
    xs.dedup_by(|a, b| a.0 == b.0);
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
    );
    s += "</svg>\n";
    Some(s)
}

/// One polyline per case through its (x, value) points, published values
/// ringed in black, and a legend below the plot. `px`/`py` map data to
/// pixels.
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
) -> String {
    let mut s = String::new();
    for (ci, c) in cases.iter().enumerate() {
        let color = COLORS[ci % COLORS.len()];
        let mut line: Vec<(f64, f64, Option<f64>)> = points
            .iter()
            .filter(|(r, _)| r.case_of(case_keys) == *c)
            .map(|&(r, x)| (x, r.value.unwrap_or(0.0), r.paper))
            .collect();
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        let path: Vec<String> = line
            .iter()
            .map(|&(x, y, _)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        s += &format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\n",
            path.join(" ")
        );
        for &(x, y, p) in &line {
            s += &format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"/>\n",
                px(x),
                py(y)
            );
            if let Some(p) = p {
                s += &format!(
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n",
                    px(x),
                    py(p)
                );
            }
        }
        let label: Vec<String> = c
            .iter()
            .map(|(k, v)| format!("{k}={}", fmt_json(v)))
            .collect();
        let y = legend_top + 18.0 * ci as f64;
        s += &format!(
            "<rect x=\"{left}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{y:.1}\">{}</text>\n",
            y - 9.0,
            left + 14.0,
            if label.is_empty() { metric.to_string() } else { label.join(", ") }
        );
    }
    s
}
