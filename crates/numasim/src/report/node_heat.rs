//! A per-node metric past a few dozen nodes, as a heat map: one strip per
//! case, one cell per node, on one colour scale. Bars of 256 nodes are
//! under a pixel wide and lines over them draw one spiky node as a spike
//! that hides the other cases (issue 33: `large-kernel-tables` showed two
//! of its four cases); a strip per case shows every case and which nodes
//! stand out, and each cell's tooltip carries its value. The colour scale
//! is linear from zero unless the values span more than
//! [`LOG_FROM_SPAN`]×; then it is logarithmic, and the legend says so.

use super::svg::{heat_rgb, si_label, YAxis, PAPER_LEGEND};
use super::table::fmt_json;
use super::Record;
use serde_json::Value as Json;

/// More nodes than this and [`per_node`] draws a heat map.
pub const FROM_NODES: usize = 32;

/// A per-node metric as bars ([`super::svg::node_bars`]) up to
/// [`FROM_NODES`] nodes, as a heat map past them: bars go sub-pixel and
/// lines over them hide each other.
pub fn per_node(
    records: &[Record],
    metric: &str,
    case_keys: &[String],
    title: &str,
) -> Option<String> {
    let nodes = records
        .iter()
        .filter(|r| r.metric == metric)
        .filter_map(|r| r.case_value("node")?.as_u64())
        .max()? as usize
        + 1;
    if nodes > FROM_NODES {
        to_svg(records, metric, case_keys, title)
    } else {
        super::svg::node_bars(records, metric, case_keys, title)
    }
}

/// Past this ratio between the largest and the smallest positive value the
/// colour scale is logarithmic: on a linear one a single large node (node
/// 0's boot-time hash tables in `large-kernel-tables`, 100 times the rest)
/// takes the whole scale and every other node is one flat colour.
pub const LOG_FROM_SPAN: f64 = 10.0;

/// How the legend (and the report's caption) names a log scale.
pub const LOG_WORDS: &str = "log colour scale";

/// Fill of a cell a log scale cannot place (0 or negative).
const NON_POSITIVE: &str = "#c8c8c8";

/// A heat map's colour scale: value to position 0..=1 on [`heat_rgb`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    /// From zero (or the lowest negative value), as the bars were: a
    /// cell's colour reads as an amount.
    Linear { lo: f64, hi: f64 },
    /// From the smallest positive value to the largest, in log10; `zeros`
    /// when some cells are 0 or below (drawn grey).
    Log { lo: f64, hi: f64, zeros: bool },
}

impl Scale {
    fn of(values: impl Iterator<Item = f64> + Clone) -> Scale {
        let lo = values.clone().fold(0.0f64, f64::min);
        let hi = values.clone().fold(f64::MIN, f64::max);
        let min_pos = values.clone().filter(|v| *v > 0.0).fold(f64::MAX, f64::min);
        if lo >= 0.0 && hi > 0.0 && hi / min_pos > LOG_FROM_SPAN {
            let zeros = values.into_iter().any(|v| v <= 0.0);
            Scale::Log {
                lo: min_pos,
                hi,
                zeros,
            }
        } else {
            Scale::Linear { lo, hi }
        }
    }

    /// Position of `v` on the colour bar, 0..=1.
    fn t(&self, v: f64) -> f64 {
        match *self {
            Scale::Linear { lo, hi } => {
                if hi > lo {
                    (v - lo) / (hi - lo)
                } else {
                    0.5
                }
            }
            Scale::Log { lo, hi, .. } => {
                ((v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10())).clamp(0.0, 1.0)
            }
        }
    }

    fn fill(&self, v: f64) -> String {
        match self {
            Scale::Log { .. } if v <= 0.0 => NON_POSITIVE.to_string(),
            _ => hex(heat_rgb(self.t(v))),
        }
    }

    /// Ticks inside the range: 1-2-5 steps on a linear scale; on a log
    /// one 1, 2 and 5 × 10^k, only the powers of ten past three decades.
    fn ticks(&self) -> Vec<(f64, String)> {
        match *self {
            Scale::Linear { lo, hi } => YAxis::linear(lo, hi)
                .ticks
                .into_iter()
                .filter(|(t, _)| *t >= lo && *t <= hi)
                .collect(),
            Scale::Log { lo, hi, .. } => {
                let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
                let ms: &[f64] = if d1 - d0 > 3 {
                    &[1.0]
                } else {
                    &[1.0, 2.0, 5.0]
                };
                (d0..=d1)
                    .flat_map(|d| ms.iter().map(move |m| (m * 10f64.powi(d), 10f64.powi(d))))
                    .filter(|(v, _)| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
                    .map(|(v, p)| (v, si_label(v, p)))
                    .collect()
            }
        }
    }
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The heat map of `metric` by `node`, one strip per value of `case_keys`;
/// None without such records.
pub fn to_svg(
    records: &[Record],
    metric: &str,
    case_keys: &[String],
    title: &str,
) -> Option<String> {
    let recs: Vec<(&Record, usize, f64)> = records
        .iter()
        .filter(|r| r.metric == metric)
        .filter_map(|r| {
            let n = r.case_value("node")?.as_u64()? as usize;
            Some((r, n, r.value.filter(|v| v.is_finite())?))
        })
        .collect();
    if recs.is_empty() {
        return None;
    }
    let mut cases: Vec<Vec<(String, Json)>> = Vec::new();
    for (r, _, _) in &recs {
        let k = r.case_of(case_keys);
        if !cases.contains(&k) {
            cases.push(k);
        }
    }
    let nodes = recs.iter().map(|p| p.1).max()? + 1;
    let scale = Scale::of(recs.iter().map(|p| p.2));
    let (w, left, right) = (900.0, 20.0, 20.0);
    let cw = (w - left - right) / nodes as f64;
    let (label_h, strip_h, gap) = (16.0, 26.0, 8.0);
    let top = 84.0;
    let row_h = label_h + strip_h + gap;
    let published = recs.iter().any(|p| p.0.paper.is_some());
    let axis_y = top + cases.len() as f64 * row_h;
    let h = axis_y + 40.0 + if published { 20.0 } else { 0.0 };
    let unit = &recs[0].0.unit;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"15\">{}</text>\n",
        escape(title)
    );
    // The colour scale: small steps (no gradient id to collide when the
    // page inlines several plots), 1-2-5 ticks inside the data range.
    let (bx, by, bw, bh) = (left, 34.0, 320.0, 14.0);
    const STEPS: usize = 64;
    for i in 0..STEPS {
        s += &format!(
            "<rect x=\"{:.2}\" y=\"{by}\" width=\"{:.2}\" height=\"{bh}\" fill=\"{}\"/>\n",
            bx + bw * i as f64 / STEPS as f64,
            bw / STEPS as f64 + 0.3,
            hex(heat_rgb((i as f64 + 0.5) / STEPS as f64))
        );
    }
    for (t, l) in scale.ticks() {
        let tx = bx + bw * scale.t(t);
        s += &format!(
            "<line x1=\"{tx:.1}\" x2=\"{tx:.1}\" y1=\"{by}\" y2=\"{:.1}\" stroke=\"black\"/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{l}</text>\n",
            by + bh + 3.0,
            by + bh + 15.0
        );
    }
    let unit_text = if unit.is_empty() {
        String::new()
    } else {
        format!(" ({unit})")
    };
    s += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\">{}{}, one cell per node; hover a cell for its value</text>\n",
        bx + bw + 12.0,
        by + bh - 2.0,
        escape(metric),
        escape(&unit_text)
    );
    if let Scale::Log { lo, hi, zeros } = scale {
        // Said in words next to the bar: equal colour steps are equal ratios.
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\">{LOG_WORDS}: the values span {}×, so equal colour steps are equal ratios{}</text>\n",
            bx + bw + 12.0,
            by + bh + 14.0,
            si_label(hi / lo, 1.0),
            if zeros { "; grey: 0 or below" } else { "" }
        );
    }
    let label = |v: f64| si_label(v, 10f64.powf(v.abs().max(1e-300).log10().floor() - 2.0));
    for (ci, c) in cases.iter().enumerate() {
        let y = top + ci as f64 * row_h;
        let mine: Vec<&(&Record, usize, f64)> = recs
            .iter()
            .filter(|p| p.0.case_of(case_keys) == *c)
            .collect();
        let (mut argmax, mut max) = (0, f64::MIN);
        for p in &mine {
            if p.2 > max {
                (argmax, max) = (p.1, p.2);
            }
        }
        let mut sorted: Vec<f64> = mine.iter().map(|p| p.2).collect();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let name: Vec<String> = c
            .iter()
            .map(|(k, v)| format!("{k}={}", fmt_json(v)))
            .collect();
        let name = if name.is_empty() {
            "all".to_string()
        } else {
            name.join(", ")
        };
        // The case and what a reader looks for: the top node against the rest.
        s += &format!(
            "<text x=\"{left}\" y=\"{:.1}\"><tspan font-weight=\"bold\">{}</tspan>: max {} on node {argmax}, median {}</text>\n",
            y + 12.0,
            escape(&name),
            label(max),
            label(median)
        );
        let sy = y + label_h;
        for p in &mine {
            let x = left + p.1 as f64 * cw;
            s += &format!(
                "<rect class=\"cell\" shape-rendering=\"crispEdges\" x=\"{x:.2}\" y=\"{sy:.1}\" width=\"{:.2}\" height=\"{strip_h}\" fill=\"{}\"><title>node {}: {}{}</title></rect>\n",
                // Overlapping a little: sub-pixel seams would stripe the strip.
                cw + 0.4,
                scale.fill(p.2),
                p.1,
                label(p.2),
                escape(&unit_text)
            );
            if let Some(pv) = p.0.paper {
                // A published value: a black tick under its node, its value in the tooltip.
                let xm = x + cw / 2.0;
                s += &format!(
                    "<path d=\"M{xm:.2},{:.1} l-4,7 h8 z\" fill=\"black\"><title>node {}: published {}</title></path>\n",
                    sy + strip_h + 1.0,
                    p.1,
                    label(pv)
                );
            }
        }
        s += &format!(
            "<rect x=\"{left}\" y=\"{sy:.1}\" width=\"{:.1}\" height=\"{strip_h}\" fill=\"none\" stroke=\"#999\" stroke-width=\"0.5\"/>\n",
            cw * nodes as f64
        );
    }
    // Node numbers at a power-of-two step, at most about 16 labels.
    let step = (nodes.div_ceil(16)).next_power_of_two();
    for n in (0..nodes).step_by(step) {
        let x = left + (n as f64 + 0.5) * cw;
        s += &format!(
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#555\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{n}</text>\n",
            axis_y - gap,
            axis_y - gap + 4.0,
            axis_y + 8.0
        );
    }
    s += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">node (0–{})</text>\n",
        left + (w - left - right) / 2.0,
        axis_y + 26.0,
        nodes - 1
    );
    if published {
        s += &format!(
            "<path d=\"M{:.1},{:.1} l-4,7 h8 z\" fill=\"black\"/><text x=\"{:.1}\" y=\"{:.1}\">under a cell: {PAPER_LEGEND} (in its tooltip; the compared-row table has it with its role)</text>\n",
            left + 5.0,
            axis_y + 34.0,
            left + 14.0,
            axis_y + 41.0
        );
    }
    s += "</svg>\n";
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recs(nodes: u64) -> Vec<Record> {
        ["a", "b", "c", "d"]
            .iter()
            .flat_map(|k| {
                (0..nodes).map(move |n| {
                    // One node far above the rest, as a boot-time hash table.
                    let v = if n == 0 {
                        1000.0
                    } else {
                        10.0 + n as f64 / 100.0
                    };
                    Record::new(
                        "t",
                        vec![("kernel".into(), json!(k)), ("node".into(), json!(n))],
                        "mem_used_kb",
                        "kB",
                        v,
                    )
                })
            })
            .collect()
    }

    #[test]
    fn every_case_gets_a_strip_of_one_cell_per_node() {
        let keys = vec!["kernel".to_string()];
        let svg = to_svg(&recs(257), "mem_used_kb", &keys, "t").unwrap();
        assert_eq!(svg.matches("<rect class=\"cell\" shape").count(), 4 * 257);
        for k in ["a", "b", "c", "d"] {
            assert!(
                svg.contains(&format!("kernel={k}</tspan>: max 1k on node 0")),
                "{k}"
            );
        }
        // The spike and the rest differ in colour; the scale's ends are drawn.
        assert!(svg.contains(&hex(heat_rgb(1.0))));
        assert!(svg.contains("node (0–256)"));
        assert!(!svg.contains(PAPER_LEGEND));
        assert!(to_svg(&recs(4), "other", &keys, "t").is_none());
    }

    /// The fill of `node`'s cell in the strip of case `kernel`.
    fn cell_fill(svg: &str, kernel_strip: usize, node: usize) -> String {
        let cells: Vec<&str> = svg.split("<rect class=\"cell\"").skip(1).collect();
        let per = cells.len() / 4;
        let c = cells[kernel_strip * per + node];
        assert!(c.contains(&format!("<title>node {node}:")), "{c}");
        c.split("fill=\"").nth(1).unwrap()[..7].to_string()
    }

    #[test]
    fn one_spike_100_times_the_rest_gets_a_log_scale_that_still_tells_the_rest_apart() {
        let keys = vec!["kernel".to_string()];
        let svg = to_svg(&recs(257), "mem_used_kb", &keys, "t").unwrap();
        // 1000 against 10.01..12.56: a span of about 100×, said in the legend.
        assert!(
            svg.contains(&format!("{LOG_WORDS}: the values span 100×")),
            "{svg}"
        );
        assert!(!svg.contains("grey: 0"));
        // On a linear scale nodes 1 and 256 (10.01 and 12.56) were one
        // colour; on the log scale they differ, and node 0 is the top colour.
        assert_ne!(cell_fill(&svg, 0, 1), cell_fill(&svg, 0, 256));
        assert_eq!(cell_fill(&svg, 0, 0), hex(heat_rgb(1.0)));
        assert_eq!(cell_fill(&svg, 0, 1), hex(heat_rgb(0.0)));
        // Log ticks inside 10.01..1000: 20, 50, 100, 200, 500, 1k (10 is below).
        for l in [">20<", ">50<", ">100<", ">500<", ">1k<"] {
            assert!(svg.contains(&format!("text-anchor=\"middle\"{l}")), "{l}");
        }
        assert!(!svg.contains("text-anchor=\"middle\">10<"));
    }

    #[test]
    fn a_narrow_span_stays_linear_from_zero_and_zeros_on_a_log_scale_are_grey() {
        let keys = vec!["kernel".to_string()];
        let mut r = recs(64);
        for x in r.iter_mut() {
            x.value = x.value.map(|v| v.min(50.0));
        }
        // 10..50 is 5×: linear, from 0, so no log words.
        let lin = to_svg(&r, "mem_used_kb", &keys, "t").unwrap();
        assert!(!lin.contains(LOG_WORDS));
        assert_eq!(cell_fill(&lin, 0, 0), hex(heat_rgb(1.0)));
        assert_eq!(cell_fill(&lin, 0, 1), hex(heat_rgb(10.01 / 50.0)));
        // A zero beside a 100× span: grey, and the legend says what grey is.
        let mut r = recs(64);
        r[5].value = Some(0.0);
        let log = to_svg(&r, "mem_used_kb", &keys, "t").unwrap();
        assert!(log.contains("; grey: 0 or below"));
        assert_eq!(cell_fill(&log, 0, 5), NON_POSITIVE);
        // Negative values have no log: linear from the lowest.
        let mut r = recs(64);
        r[5].value = Some(-1.0);
        assert!(!to_svg(&r, "mem_used_kb", &keys, "t")
            .unwrap()
            .contains(LOG_WORDS));
    }

    #[test]
    fn past_32_nodes_the_bars_become_a_heat_map() {
        let keys = vec!["kernel".to_string()];
        let few = per_node(&recs(32), "mem_used_kb", &keys, "t").unwrap();
        assert!(!few.contains("class=\"cell\"") && few.matches("<rect ").count() > 4 * 32);
        let many = per_node(&recs(33), "mem_used_kb", &keys, "t").unwrap();
        assert!(!many.contains("<polyline"), "no lines to hide each other");
        assert_eq!(many.matches("class=\"cell\"").count(), 4 * 33);
    }

    #[test]
    fn a_published_value_is_marked_under_its_node() {
        let keys = vec!["kernel".to_string()];
        let mut r = recs(64);
        r[3].paper = Some(12.0);
        let svg = to_svg(&r, "mem_used_kb", &keys, "t").unwrap();
        assert!(svg.contains("node 3: published 12<"), "{svg}");
        assert_eq!(svg.matches(PAPER_LEGEND).count(), 1);
    }
}
