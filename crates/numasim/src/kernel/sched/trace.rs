//! The schedule as files under `--out`: which task ran on which CPU when,
//! as Chrome trace-event JSON (Perfetto and `chrome://tracing` open it),
//! and the run-queue lengths over time as an SVG.
//!
//! Only small runs are readable, so a trace keeps the first
//! [`MAX_SEGMENTS`] bursts and [`MAX_SAMPLES`] queue-length changes and
//! says in its metadata when it was cut.

use crate::engine::Time;
use crate::report::timeline::escape;
use serde_json::json;

/// Bursts a trace keeps (about 3 MB of JSON).
pub const MAX_SEGMENTS: usize = 20_000;
/// Queue-length changes a trace keeps.
pub const MAX_SAMPLES: usize = 50_000;

/// One task's run on one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub cpu: usize,
    pub task: usize,
    pub start: Time,
    pub end: Time,
}

/// A recorded schedule.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub segments: Vec<Segment>,
    /// (time, queue, length after the change).
    pub samples: Vec<(Time, usize, usize)>,
    /// Bursts and samples left out past the caps.
    pub dropped: u64,
}

impl Trace {
    pub fn segment(&mut self, s: Segment) {
        if self.segments.len() < MAX_SEGMENTS {
            self.segments.push(s);
        } else {
            self.dropped += 1;
        }
    }

    pub fn queue_length(&mut self, at: Time, queue: usize, len: usize) {
        if self.samples.len() < MAX_SAMPLES {
            self.samples.push((at, queue, len));
        } else {
            self.dropped += 1;
        }
    }

    /// Chrome trace-event JSON: one complete ("X") event per burst, CPUs
    /// as threads of one process, times in microseconds; queue lengths as
    /// counter ("C") events.
    pub fn to_chrome_json(&self, title: &str) -> String {
        let mut events = Vec::with_capacity(self.segments.len() + self.samples.len() + 2);
        events.push(
            json!({"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
            "args": {"name": title}}),
        );
        for s in &self.segments {
            events.push(json!({
                "name": format!("task {}", s.task),
                "ph": "X",
                "pid": 0,
                "tid": s.cpu,
                "ts": s.start.0 as f64 / 1e3,
                "dur": (s.end.0.saturating_sub(s.start.0)) as f64 / 1e3,
            }));
        }
        for &(t, q, len) in &self.samples {
            events.push(json!({
                "name": format!("runqueue {q}"),
                "ph": "C",
                "pid": 0,
                "ts": t.0 as f64 / 1e3,
                "args": {"nr_running": len},
            }));
        }
        let doc = json!({
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {
                "title": title,
                "capped": self.dropped > 0,
                "dropped_events": self.dropped,
                "max_segments": MAX_SEGMENTS,
            },
        });
        serde_json::to_string(&doc).expect("JSON of plain values") + "\n"
    }

    /// Run-queue length per queue over time, one step line per queue.
    /// Returns the SVG and where its title text ends.
    pub fn to_svg(&self, title: &str, queues: usize) -> (String, usize) {
        let (w, h, left, top) = (900.0, 420.0, 70.0, 40.0);
        let (pw, ph) = (w - left - 30.0, h - top - 60.0);
        let t_max = self
            .samples
            .iter()
            .map(|s| s.0 .0)
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let l_max = self.samples.iter().map(|s| s.2).max().unwrap_or(1).max(1) as f64;
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
            for &(t, _, len) in self.samples.iter().filter(|s| s.1 == qi) {
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
            if self.dropped > 0 { "; capped" } else { "" },
        );
        (s, title_end)
    }
}
