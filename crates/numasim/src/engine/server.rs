//! A bandwidth server: a disk, a link, a memory controller.
//!
//! One FIFO queue in front of one unit that moves `rate` bytes per second.
//! Requests are served whole and in arrival order, so the completion time of
//! each is known the moment it is submitted (closed form, no events):
//!
//! ```text
//! start      = max(now, busy_until)
//! busy_until = start + overhead + ceil(bytes / rate)
//! done       = busy_until + latency
//! ```
//!
//! `overhead` occupies the server (a disk's seek and rotation, a
//! controller's per-command cost); `latency` does not (a link's propagation
//! delay: the next request can start while this one is still in flight).

use super::time::{Dur, Time};

/// Server statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Requests submitted.
    pub requests: u64,
    /// Bytes submitted. Every submitted byte is served by its completion
    /// time, so after [`Server::busy_until`] this is also the bytes served.
    pub bytes: u64,
    /// Time the server is busy with the submitted work (overhead + transfer).
    pub busy: Dur,
    /// Sum of queueing delays (start − submit).
    pub total_queue_wait: Dur,
    /// Longest queueing delay.
    pub max_queue_wait: Dur,
}

/// A FIFO bandwidth server; see the module documentation.
#[derive(Debug, Clone)]
pub struct Server {
    rate: f64,
    overhead: Dur,
    latency: Dur,
    busy_until: Time,
    /// Latest submit time, for utilisation (see [`Server::busy_by`]).
    last_submit: Time,
    stats: ServerStats,
}

impl Server {
    /// A server moving `bytes_per_sec`, with no per-request overhead or
    /// latency.
    ///
    /// # Panics
    /// If the rate is not positive and finite; rates come from validated
    /// machine descriptions, so this is a bug in the caller.
    pub fn new(bytes_per_sec: f64) -> Self {
        assert!(
            bytes_per_sec.is_finite() && bytes_per_sec > 0.0,
            "server rate must be positive and finite, got {bytes_per_sec}"
        );
        Server {
            rate: bytes_per_sec,
            overhead: Dur::ZERO,
            latency: Dur::ZERO,
            busy_until: Time::ZERO,
            last_submit: Time::ZERO,
            stats: ServerStats::default(),
        }
    }

    /// Add a fixed per-request cost that occupies the server.
    pub fn with_overhead(mut self, overhead: Dur) -> Self {
        self.overhead = overhead;
        self
    }

    /// Add a fixed per-request delay that does not occupy the server.
    pub fn with_latency(mut self, latency: Dur) -> Self {
        self.latency = latency;
        self
    }

    /// Queue `bytes` at `now`; returns when the request completes.
    ///
    /// Submissions must come in non-decreasing `now` (as they do from an
    /// event loop); an earlier `now` is treated as the latest one seen.
    pub fn submit(&mut self, now: Time, bytes: u64) -> Time {
        debug_assert!(now >= self.last_submit, "submissions went back in time");
        let now = now.max(self.last_submit);
        self.last_submit = now;
        let start = now.max(self.busy_until);
        let service = self.overhead + Dur::for_bytes(bytes, self.rate);
        self.busy_until = start + service;
        let wait = start - now;
        let s = &mut self.stats;
        s.requests += 1;
        s.bytes += bytes;
        s.busy += service;
        s.total_queue_wait += wait;
        s.max_queue_wait = s.max_queue_wait.max(wait);
        self.busy_until + self.latency
    }

    /// Time the server was busy in `[0, at]`, for `at` no earlier than the
    /// last submission.
    ///
    /// Exact because submissions arrive in time order: every idle gap lies
    /// before the last submission, so the work still pending at `at` is one
    /// contiguous stretch ending at `busy_until`.
    pub fn busy_by(&self, at: Time) -> Dur {
        debug_assert!(at >= self.last_submit, "busy_by asked about the past");
        self.stats.busy - (self.busy_until - at)
    }

    /// Fraction of `[0, at]` the server was busy (0 at time zero).
    pub fn utilisation(&self, at: Time) -> f64 {
        if at == Time::ZERO {
            return 0.0;
        }
        self.busy_by(at).as_ns() as f64 / at.as_ns() as f64
    }

    /// Work still queued or in service at `now`.
    pub fn backlog(&self, now: Time) -> Dur {
        self.busy_until - now
    }

    /// When the server next falls idle (it may already be).
    pub fn busy_until(&self) -> Time {
        self.busy_until
    }

    /// Rate in bytes per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Statistics so far.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn single_request_takes_bytes_over_rate() {
        // 1 GB/s = 1 byte/ns.
        let mut s = Server::new(1e9);
        assert_eq!(s.submit(Time(100), 4096), Time(100 + 4096));
        assert_eq!(s.stats().bytes, 4096);
        assert_eq!(s.backlog(Time(100)), Dur(4096));
        assert_eq!(s.backlog(Time(10_000)), Dur::ZERO);
    }

    #[test]
    fn back_to_back_requests_queue() {
        let mut s = Server::new(1e9);
        let a = s.submit(Time(0), 1000);
        let b = s.submit(Time(0), 1000);
        let c = s.submit(Time(500), 1000);
        assert_eq!((a, b, c), (Time(1000), Time(2000), Time(3000)));
        assert_eq!(s.stats().total_queue_wait, Dur(1000 + 1500));
        assert_eq!(s.stats().max_queue_wait, Dur(1500));
        // After an idle gap the next request starts at once.
        assert_eq!(s.submit(Time(5000), 10), Time(5010));
    }

    #[test]
    fn overhead_occupies_latency_does_not() {
        let mut disk = Server::new(1e9).with_overhead(Dur(100));
        assert_eq!(disk.submit(Time(0), 100), Time(200));
        assert_eq!(disk.submit(Time(0), 100), Time(400));
        let mut link = Server::new(1e9).with_latency(Dur(100));
        assert_eq!(link.submit(Time(0), 100), Time(200));
        assert_eq!(link.submit(Time(0), 100), Time(300));
    }

    #[test]
    fn utilisation_counts_only_elapsed_busy_time() {
        let mut s = Server::new(1e9);
        s.submit(Time(0), 100); // busy 0..100
        s.submit(Time(300), 100); // busy 300..400
        assert_eq!(s.busy_by(Time(350)), Dur(150));
        assert_eq!(s.busy_by(Time(1000)), Dur(200));
        assert!((s.utilisation(Time(1000)) - 0.2).abs() < 1e-12);
        assert_eq!(s.utilisation(Time::ZERO), 0.0);
    }

    proptest! {
        /// Conservation and causality for any arrival pattern: bytes served
        /// equal bytes submitted, nothing finishes faster than its bytes
        /// allow, completions are in submission order (FIFO), and busy time
        /// never exceeds elapsed time.
        #[test]
        fn conserves_bytes_and_respects_rate(
            reqs in prop::collection::vec((0u64..2_000, 0u64..1_000_000), 1..100),
            rate in 1e6f64..1e11,
        ) {
            let mut s = Server::new(rate);
            let mut now = Time::ZERO;
            let mut last_done = Time::ZERO;
            let mut total = 0u64;
            for &(gap, bytes) in &reqs {
                now += Dur(gap);
                let done = s.submit(now, bytes);
                let min = (now.as_ns() as f64) + bytes as f64 * 1e9 / rate;
                prop_assert!(done.as_ns() as f64 >= min - 1e-6 * min.max(1.0));
                prop_assert!(done >= last_done, "FIFO order");
                last_done = done;
                total += bytes;
            }
            prop_assert_eq!(s.stats().bytes, total);
            prop_assert_eq!(s.stats().requests, reqs.len() as u64);
            let end = s.busy_until();
            prop_assert!(s.busy_by(end) <= end - Time::ZERO);
            prop_assert_eq!(s.busy_by(end), s.stats().busy);
        }
    }
}
