//! The per-node memory timeline of a run (free, anonymous, page cache,
//! slab), as CSV and as an SVG: machine totals stacked over time above a
//! node-by-time heat map of page cache, because a picture of 256 nodes
//! filling up says more than a table.

use crate::kernel::mm::vm::Sample;
use crate::kernel::sched::trace::Trace;

/// A file a run produces beside its records; `--out DIR` writes it, named
/// after the scenario, the keys by which this case differs from the others
/// (known only once every case has run: [`super::case_name::case_names`]) and
/// `kind`.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    /// The case that made it: its varied keys, as its records carry them.
    pub case: Vec<(String, serde_json::Value)>,
    /// What it is, the end of its file name: `write-timeline.svg`.
    pub kind: String,
    pub content: String,
    /// Where in `content` the case's name goes (an SVG's title), if anywhere.
    pub name_at: Option<usize>,
}

const KINDS: [&str; 4] = ["free", "anon", "page_cache", "slab"];
const COLORS: [&str; 4] = ["#d9d9d9", "#f28e2b", "#4e79a7", "#59a14f"];

/// `t_s,node,free_mb,anon_mb,page_cache_mb,slab_mb`, one row per node per sample.
pub fn to_csv(samples: &[Sample], page: u64) -> String {
    let mb = |p: u64| (p * page) as f64 / (1u64 << 20) as f64;
    let mut s = String::from("t_s,node,free_mb,anon_mb,page_cache_mb,slab_mb\n");
    for smp in samples {
        for (n, v) in smp.nodes.iter().enumerate() {
            s += &format!(
                "{:.2},{n},{:.1},{:.1},{:.1},{:.1}\n",
                smp.t_ns as f64 * 1e-9,
                mb(v[0]),
                mb(v[1]),
                mb(v[2]),
                mb(v[3])
            );
        }
    }
    s
}

/// The SVG, titled `title`, and the offset in it where the title ends
/// (where a case's name can be added); None for fewer than two samples.
pub fn to_svg(samples: &[Sample], page: u64, title: &str) -> Option<(String, usize)> {
    if samples.len() < 2 {
        return None;
    }
    let nodes = samples[0].nodes.len();
    let t_max = samples.last()?.t_ns as f64 * 1e-9;
    let (w, left, right) = (900.0, 70.0, 20.0);
    let plot_w = w - left - right;
    let (top1, h1) = (40.0, 200.0);
    let top2 = top1 + h1 + 50.0;
    let h2 = (nodes as f64 * 2.0).clamp(100.0, 512.0);
    let h = top2 + h2 + 70.0;
    let x = |t_ns: u64| left + plot_w * (t_ns as f64 * 1e-9) / t_max.max(1e-9);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"15\">{}",
        escape(title)
    );
    let title_end = s.len();
    s += "</text>\n";
    // Machine totals, stacked: slab, page cache, anon, free from the bottom.
    let totals: Vec<[f64; 4]> = samples
        .iter()
        .map(|smp| {
            let mut t = [0.0; 4];
            for v in &smp.nodes {
                for k in 0..4 {
                    t[k] += v[k] as f64;
                }
            }
            t
        })
        .collect();
    let max = totals
        .iter()
        .map(|t| t.iter().sum::<f64>())
        .fold(1.0, f64::max);
    let order = [3usize, 2, 1, 0];
    let mut base = vec![0.0; samples.len()];
    for &k in &order {
        let mut pts = String::new();
        for (i, smp) in samples.iter().enumerate() {
            let y = top1 + h1 - h1 * (base[i] + totals[i][k]) / max;
            pts += &format!("{:.1},{y:.1} ", x(smp.t_ns));
        }
        for (i, smp) in samples.iter().enumerate().rev() {
            let y = top1 + h1 - h1 * base[i] / max;
            pts += &format!("{:.1},{y:.1} ", x(smp.t_ns));
        }
        s += &format!("<polygon points=\"{pts}\" fill=\"{}\"/>\n", COLORS[k]);
        for (i, t) in totals.iter().enumerate() {
            base[i] += t[k];
        }
    }
    let gib = max * page as f64 / (1u64 << 30) as f64;
    s += &format!(
        "<text x=\"{}\" y=\"{:.0}\" text-anchor=\"end\">{gib:.0} GiB</text>\n<text x=\"{}\" y=\"{:.0}\" text-anchor=\"end\">0</text>\n",
        left - 5.0,
        top1 + 4.0,
        left - 5.0,
        top1 + h1
    );
    for (k, name) in KINDS.iter().enumerate() {
        let lx = left + 10.0 + 110.0 * k as f64;
        s += &format!(
            "<rect x=\"{lx}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{name}</text>\n",
            top1 + h1 + 12.0,
            COLORS[k],
            lx + 14.0,
            top1 + h1 + 21.0
        );
    }
    // Heat map: page cache's share of each node over time (white to blue).
    s += &format!(
        "<text x=\"{left}\" y=\"{:.0}\">page cache share of each node's memory</text>\n",
        top2 - 8.0
    );
    let row_h = h2 / nodes as f64;
    let cols = samples.len().min(300);
    let step = samples.len().div_ceil(cols);
    for (ci, chunk) in samples.chunks(step).enumerate() {
        let smp = &chunk[0];
        let x0 = x(smp.t_ns);
        let x1 = samples
            .get((ci + 1) * step)
            .map_or(left + plot_w, |n| x(n.t_ns));
        for (n, v) in smp.nodes.iter().enumerate() {
            let total: u64 = v.iter().sum();
            let share = if total == 0 {
                0.0
            } else {
                v[2] as f64 / total as f64
            };
            if share < 0.02 {
                continue;
            }
            s += &format!(
                "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.2}\" fill=\"{}\"/>\n",
                top2 + row_h * n as f64,
                (x1 - x0).max(0.5),
                row_h.max(0.5),
                share_color(share)
            );
        }
    }
    let bottom = top2 + h2;
    s += &format!(
        "<rect x=\"{left}\" y=\"{top2}\" width=\"{plot_w}\" height=\"{h2}\" fill=\"none\" stroke=\"#999\"/>\n\
         <text x=\"{lx:.1}\" y=\"{:.0}\" text-anchor=\"end\">node 0</text>\n\
         <text x=\"{lx:.1}\" y=\"{bottom:.0}\" text-anchor=\"end\">node {}</text>\n\
         <text x=\"{left}\" y=\"{:.0}\">0 s</text><text x=\"{:.1}\" y=\"{:.0}\" text-anchor=\"end\">{t_max:.0} s</text>\n",
        top2 + 12.0,
        nodes - 1,
        bottom + 18.0,
        left + plot_w,
        bottom + 18.0,
        lx = left - 5.0,
    );
    // The heat map's colour scale: the same mapping as the cells, 0 to 100%.
    let (sx, sy) = (left + plot_w - 240.0, bottom + 30.0);
    s += &colour_scale(SCALE_ID, sx, sy, Some("page cache share"), "100%");
    s += "</svg>\n";
    Some((s, title_end))
}

/// The id of the heat map's colour-scale gradient.
const SCALE_ID: &str = "page-cache-share";

/// A 160-pixel colour scale of [`share_color`] at (x, y): a gradient
/// `id`, an optional label before it, "0%", "50%" and `end` under it.
pub(crate) fn colour_scale(id: &str, x: f64, y: f64, before: Option<&str>, end: &str) -> String {
    let w = 160.0;
    let mut s = format!(
        "<defs><linearGradient id=\"{id}\"><stop offset=\"0\" stop-color=\"{}\"/><stop offset=\"1\" stop-color=\"{}\"/></linearGradient></defs>\n",
        share_color(0.0),
        share_color(1.0),
    );
    if let Some(label) = before {
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>\n",
            x - 8.0,
            y + 9.0
        );
    }
    s += &format!(
        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w}\" height=\"10\" fill=\"url(#{id})\" stroke=\"#999\"/>\n\
         <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">0%</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">50%</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{end}</text>\n",
        y + 24.0,
        x + w / 2.0,
        y + 24.0,
        x + w,
        y + 24.0,
    );
    s
}

/// Heat-map colour of a page-cache share in 0..=1: white to blue.
pub(crate) fn share_color(share: f64) -> String {
    let c = (255.0 * (1.0 - share.clamp(0.0, 1.0))) as u8;
    format!("rgb({c},{c},255)")
}

/// A scheduler trace's run-queue length per queue over time, one step
/// line per queue.
/// Returns the SVG and where its title text ends.
pub fn runqueue_svg(trace: &Trace, title: &str, queues: usize) -> (String, usize) {
    let (w, h, left, top) = (900.0, 420.0, 70.0, 40.0);
    let (pw, ph) = (w - left - 30.0, h - top - 60.0);
    let t_max = trace
        .samples
        .iter()
        .map(|s| s.0 .0)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let l_max = trace.samples.iter().map(|s| s.2).max().unwrap_or(1).max(1) as f64;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"15\">{}",
        escape(title)
    );
    let title_end = s.len();
    s += "</text>\n";
    let x = |t: u64| left + pw * t as f64 / t_max;
    let y = |l: usize| top + ph - ph * l as f64 / l_max;
    const COLORS: [&str; 8] = [
        "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f",
    ];
    for qi in 0..queues.max(1) {
        let mut pts = format!("{left:.1},{:.1} ", y(0));
        let mut last = 0usize;
        for &(t, _, len) in trace.samples.iter().filter(|s| s.1 == qi) {
            pts += &format!("{:.1},{:.1} {:.1},{:.1} ", x(t.0), y(last), x(t.0), y(len));
            last = len;
        }
        pts += &format!("{:.1},{:.1}", left + pw, y(last));
        s += &format!(
            "<polyline points=\"{pts}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1\"/>\n",
            COLORS[qi % COLORS.len()]
        );
    }
    s += &format!(
        "<rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{l_max:.0}</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0</text>\n\
         <text x=\"{left}\" y=\"{:.1}\">0 s</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.3} s</text>\n\
         <text x=\"{left}\" y=\"{:.1}\">tasks waiting in each run queue ({} queue{}){}</text>\n</svg>\n",
        left - 5.0,
        top + 4.0,
        left - 5.0,
        top + ph,
        top + ph + 18.0,
        left + pw,
        top + ph + 18.0,
        t_max / 1e9,
        top + ph + 40.0,
        queues,
        if queues == 1 { "" } else { "s" },
        if trace.dropped > 0 { "; capped" } else { "" },
    );
    (s, title_end)
}

pub(crate) fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Sample> {
        (0..3u64)
            .map(|t| Sample {
                t_ns: t * 1_000_000_000,
                // Node 0 fills with page cache; node 1 stays free.
                nodes: vec![[100 - 40 * t, 0, 40 * t, 0], [100, 0, 0, 0]],
            })
            .collect()
    }

    #[test]
    fn the_heat_map_has_a_colour_scale_matching_its_cells() {
        let (svg, _) = to_svg(&samples(), 4096, "t").unwrap();
        // The scale runs through the same colours as the cells, 0 to 100%.
        let scale = format!(
            "<stop offset=\"0\" stop-color=\"{}\"/><stop offset=\"1\" stop-color=\"{}\"/>",
            share_color(0.0),
            share_color(1.0)
        );
        assert!(svg.contains(&scale), "{svg}");
        assert!(svg.contains(&format!("fill=\"url(#{SCALE_ID})\"")));
        assert!(svg.contains(">0%<") && svg.contains(">100%<"));
        // A cell at 80% page cache is drawn in the scale's colour for 80%.
        assert!(
            svg.contains(&format!("fill=\"{}\"", share_color(0.8))),
            "{svg}"
        );
    }
}
