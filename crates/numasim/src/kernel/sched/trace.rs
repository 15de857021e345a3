//! The schedule as files under `--out`: which task ran on which CPU when,
//! as Chrome trace-event JSON (Perfetto and `chrome://tracing` open it),
//! and the run-queue lengths over time as an SVG.
//!
//! Only small runs are readable, so a trace keeps the first
//! [`MAX_SEGMENTS`] bursts and [`MAX_SAMPLES`] queue-length changes and
//! says in its metadata when it was cut.

use crate::engine::Time;
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
}
