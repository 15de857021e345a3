//! Timing and threading helpers shared by the benchmarks.

use crate::sys;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

/// How hard to measure: target duration of one repetition and how many
/// repetitions make a figure.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    pub rep_time: Duration,
    pub reps: usize,
}

/// xorshift64*: a tiny fast generator for addresses and permutations
/// (measurement only; the simulator's seeded RNG lives in `numasim`).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (multiply-high reduction; bias negligible here).
    #[inline(always)]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Run `work` (which returns units done, e.g. bytes) repeatedly until at
/// least `effort.rep_time` has passed; do that `effort.reps` times and
/// return each repetition's rate in units per second. Stops early (with
/// what it has) if a stop was requested.
///
/// The rate is over the thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`),
/// not the wall clock: on a host busier than its CPUs the time a thread
/// waits for a CPU is the scheduler's, not the memory system's, and a
/// one-thread figure must not count it. (What other tenants do to the
/// caches while it waits still shows, as spread.) The repetition still
/// ends by the wall clock; [`on_cpu_share`] says how much of it ran.
pub fn rates(effort: Effort, mut work: impl FnMut() -> u64) -> Vec<f64> {
    let target = effort.rep_time.as_nanos() as u64;
    let mut out = Vec::with_capacity(effort.reps);
    for _ in 0..effort.reps {
        let t0 = sys::monotonic_ns();
        let c0 = sys::thread_cpu_ns();
        let mut units = 0u64;
        let mut now = t0;
        while now - t0 < target {
            units += work();
            now = sys::monotonic_ns();
            if sys::stop_requested() {
                break;
            }
        }
        let cpu = sys::thread_cpu_ns().saturating_sub(c0);
        let wall = (now - t0).max(1);
        WALL_NS.fetch_add(wall, Ordering::Relaxed);
        CPU_NS.fetch_add(cpu.min(wall), Ordering::Relaxed);
        // A clock that did not move (no thread CPU clock) falls back to the wall.
        let t = if cpu > 0 { cpu.min(wall) } else { wall };
        out.push(units as f64 * 1e9 / t as f64);
        if sys::stop_requested() {
            break;
        }
    }
    out
}

static WALL_NS: AtomicU64 = AtomicU64::new(0);
static CPU_NS: AtomicU64 = AtomicU64::new(0);

/// Share of the one-thread repetitions' wall time their thread was on a
/// CPU, over the process so far: 1 on a quiet host; on a busy one the
/// rest was spent waiting for a CPU (not counted in the rates).
pub fn on_cpu_share() -> Option<f64> {
    let w = WALL_NS.load(Ordering::Relaxed);
    (w > 0).then(|| CPU_NS.load(Ordering::Relaxed) as f64 / w as f64)
}

/// The largest relative spread a measurement may have and still be
/// written into the machine unflagged: (max - min) / median over its
/// repetitions. 10%: what a quiet host repeats within (docs/probe.md).
pub const SPREAD_BOUND: f64 = 0.10;

/// (max - min) / median of the repetitions; 0 for fewer than two.
pub fn spread(v: &[f64]) -> f64 {
    let m = median(v);
    if v.len() < 2 || m <= 0.0 {
        return 0.0;
    }
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    (hi - lo) / m
}

/// The `keep` repetitions that agree best: of the values sorted, the
/// `keep` consecutive ones of least (max - min) / median (the lowest of
/// equals); all of them where there are no more than `keep`.
pub fn agreeing(v: &[f64], keep: usize) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if keep == 0 || s.len() <= keep {
        return s;
    }
    let mut best = 0;
    let mut least = f64::INFINITY;
    for i in 0..=s.len() - keep {
        let sp = spread(&s[i..i + keep]);
        if sp < least {
            (best, least) = (i, sp);
        }
    }
    s[best..best + keep].to_vec()
}

/// Most extra rounds one measurement pass is repeated by
/// [`repeat_disagreeing`]: two, so that a pass of five whose median
/// fell in a disturbed stretch of three can still find four (a majority
/// of seven) that agree.
pub const MAX_EXTRA_ROUNDS: usize = 2;

/// The least number of a pass's `n` repetitions that are most of them.
pub fn majority(n: usize) -> usize {
    n / 2 + 1
}

/// Whether no majority of the repetitions agrees within [`SPREAD_BOUND`]:
/// the median itself then lies in a disturbed stretch (or between two).
pub fn no_majority_agrees(v: &[f64]) -> bool {
    v.len() > 2 && spread(&agreeing(v, majority(v.len()))) > SPREAD_BOUND
}

/// Whether one of the first `judged` figures of a pass has no majority of
/// its repetitions agreeing ([`no_majority_agrees`]).
pub fn any_disagreeing(reps: &[Vec<f64>], judged: usize) -> bool {
    reps.iter().take(judged).any(|v| no_majority_agrees(v))
}

/// Repeat a pass whose repetitions disagree: while one of its first
/// `judged` figures (those a fit uses; the rest are measured alongside)
/// has no majority of its repetitions agreeing ([`no_majority_agrees`])
/// and fewer than `max_extra` extra rounds were made, ask `more` for one
/// more round of every figure (`None`: no more, e.g. the time budget is
/// spent) and add it. Returns the extra rounds made; the caller then
/// keeps [`kept`] of each figure, so a disturbed stretch of a few rounds
/// does not become the figure (issue 36, round 20). Deterministic given
/// the rounds `more` returns.
pub fn repeat_disagreeing<const N: usize>(
    reps: &mut [Vec<f64>; N],
    judged: usize,
    max_extra: usize,
    mut more: impl FnMut() -> Option<[Vec<f64>; N]>,
) -> usize {
    let mut extra = 0;
    while extra < max_extra && any_disagreeing(reps, judged) {
        let Some(round) = more() else { break };
        for (all, r) in reps.iter_mut().zip(round) {
            all.extend(r);
        }
        extra += 1;
    }
    extra
}

/// What a repeated pass keeps of a figure: every repetition where they
/// agree within [`SPREAD_BOUND`], else the majority that agrees best.
pub fn kept(v: &[f64]) -> Vec<f64> {
    if spread(v) <= SPREAD_BOUND {
        v.to_vec()
    } else {
        agreeing(v, majority(v.len()))
    }
}

pub fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Thread counts 1, 2, 4, … up to `max`, with `max` itself last.
pub fn thread_counts(max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut t = 1;
    while t < max {
        v.push(t);
        t *= 2;
    }
    v.push(max.max(1));
    v
}

/// Per-thread outcome of a timed, pinned, parallel run.
#[derive(Debug, Clone, Copy)]
pub struct ThreadResult {
    pub ops: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The thread's own CPU time over the body (`CLOCK_THREAD_CPUTIME_ID`).
    pub cpu_ns: u64,
}

impl ThreadResult {
    pub fn ns_per_op(&self) -> f64 {
        (self.end_ns - self.start_ns) as f64 / self.ops.max(1) as f64
    }
}

/// Run `body(thread_index, stop)` on `n` threads pinned to `cpus` (round
/// robin), started together at a barrier. If `duration` is given, `stop`
/// is raised after it; the body polls it. Each body returns its op count.
/// Pinning failure is reported, not fatal (returned flag = all pinned).
pub fn run_pinned<F>(
    n: usize,
    cpus: &[usize],
    duration: Option<Duration>,
    body: F,
) -> (Vec<ThreadResult>, bool)
where
    F: Fn(usize, &AtomicBool) -> u64 + Sync,
{
    let barrier = Barrier::new(n + 1);
    let stop = AtomicBool::new(false);
    let mut pinned_all = true;
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let cpu = cpus[i % cpus.len()];
                let (barrier, stop, body) = (&barrier, &stop, &body);
                s.spawn(move || {
                    let pinned = sys::pin_to_cpu(cpu).is_ok();
                    barrier.wait();
                    let start_ns = sys::monotonic_ns();
                    let c0 = sys::thread_cpu_ns();
                    let ops = body(i, stop);
                    let cpu_ns = sys::thread_cpu_ns().saturating_sub(c0);
                    let end_ns = sys::monotonic_ns();
                    (
                        ThreadResult {
                            ops,
                            start_ns,
                            end_ns,
                            cpu_ns,
                        },
                        pinned,
                    )
                })
            })
            .collect();
        barrier.wait();
        if let Some(d) = duration {
            let end = std::time::Instant::now() + d;
            while std::time::Instant::now() < end && !sys::stop_requested() {
                std::thread::sleep(Duration::from_millis(2).min(d));
            }
            stop.store(true, Ordering::Relaxed);
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect::<Vec<_>>()
    });
    let out = results
        .into_iter()
        .map(|(r, p)| {
            pinned_all &= p;
            r
        })
        .collect();
    (out, pinned_all)
}

/// Span of a parallel run: first start to last end, ns.
pub fn span_ns(r: &[ThreadResult]) -> u64 {
    let s = r.iter().map(|x| x.start_ns).min().unwrap_or(0);
    let e = r.iter().map(|x| x.end_ns).max().unwrap_or(0);
    e.saturating_sub(s).max(1)
}

/// `16 KiB`, `1 GiB`: sizes as case labels.
pub fn size_label(bytes: u64) -> String {
    const U: &[(&str, u64)] = &[("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for &(u, m) in U {
        if bytes >= m && bytes & (m - 1) == 0 {
            return format!("{} {u}", bytes / m);
        }
    }
    format!("{bytes} B")
}

/// The bytes of a [`size_label`] (`"128 KiB"`), for runs read back.
pub fn parse_size_label(label: &str) -> Option<u64> {
    let (n, unit) = label.trim().split_once(' ')?;
    let m: u64 = match unit {
        "GiB" => 1 << 30,
        "MiB" => 1 << 20,
        "KiB" => 1 << 10,
        "B" => 1,
        _ => return None,
    };
    n.parse::<u64>().ok()?.checked_mul(m)
}

#[cfg(test)]
mod tests {
    #[test]
    fn spread_is_range_over_median() {
        assert_eq!(super::spread(&[]), 0.0);
        assert_eq!(super::spread(&[5.0]), 0.0);
        assert!((super::spread(&[9.0, 10.0, 11.0]) - 0.2).abs() < 1e-12);
        // One wild repetition widens the spread but leaves the median.
        let v = [20.0, 20.5, 35.0, 19.9, 20.2];
        assert_eq!(super::median(&v), 20.2);
        assert!(super::spread(&v) > super::SPREAD_BOUND);
    }

    use super::*;

    #[test]
    fn a_disagreeing_pass_is_repeated_a_bounded_number_of_times() {
        // The closest `keep` values, whatever their order.
        assert_eq!(
            agreeing(&[20.0, 8.0, 19.0, 3.0, 18.5], 3),
            vec![18.5, 19.0, 20.0]
        );
        assert_eq!(agreeing(&[2.0, 1.0], 3), vec![1.0, 2.0]);
        // A pass whose majority agrees is not repeated, an outlier or not.
        let mut v = [vec![10.0, 10.2, 9.9, 10.1, 30.0]];
        let mut calls = 0;
        let n = repeat_disagreeing(&mut v, 1, 2, || {
            calls += 1;
            Some([vec![10.0]])
        });
        assert_eq!((n, calls), (0, 0));
        // live19-1's 1 GiB copy: its median (8.2) in a slow stretch of
        // three rounds of five. Two quiet rounds more give four of seven
        // that agree; it stops there and keeps them.
        let disturbed = [vec![18.9, 3.1, 8.2, 19.3, 5.0], vec![18.0; 5]];
        let mut v = disturbed.clone();
        let mut fake = [19.1, 18.7, 19.0].into_iter();
        let n = repeat_disagreeing(&mut v, 2, 3, || fake.next().map(|x| [vec![x], vec![18.1]]));
        assert_eq!(n, 2);
        let k = kept(&v[0]);
        assert_eq!(k, vec![18.7, 18.9, 19.1, 19.3]);
        assert!(spread(&k) <= SPREAD_BOUND);
        // A figure that agreed keeps every round, the extra ones too.
        assert_eq!(kept(&v[1]).len(), 7);
        // Never past its bound, however the rounds go; the same rounds
        // give the same result.
        let run = || {
            let mut v = disturbed.clone();
            let mut k = 0.0;
            let n = repeat_disagreeing(&mut v, 2, MAX_EXTRA_ROUNDS, || {
                k += 7.0;
                Some([vec![k], vec![18.0]])
            });
            (n, v)
        };
        let (n, v) = run();
        assert_eq!(n, MAX_EXTRA_ROUNDS);
        assert_eq!(v[0].len(), 5 + MAX_EXTRA_ROUNDS);
        assert_eq!(run().1, v);
        // No more rounds to be had (the budget): it stops.
        let mut v = disturbed.clone();
        assert_eq!(repeat_disagreeing(&mut v, 2, 2, || None), 0);
        assert_eq!(v, disturbed);
        // A disturbed figure past the judged ones (measured alongside,
        // fitted to nothing) does not make the pass repeat.
        let mut v = [vec![18.0; 5], disturbed[0].clone()];
        assert_eq!(
            repeat_disagreeing(&mut v, 1, 2, || Some([vec![18.0], vec![19.0]])),
            0
        );
        assert_eq!(
            repeat_disagreeing(&mut v, 2, 2, || Some([vec![18.0], vec![19.0]])),
            2
        );
    }

    #[test]
    fn counts_and_stats() {
        assert_eq!(thread_counts(1), vec![1]);
        assert_eq!(thread_counts(2), vec![1, 2]);
        assert_eq!(thread_counts(6), vec![1, 2, 4, 6]);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(best(&[1.0, 5.0, 2.0]), 5.0);
        assert_eq!(size_label(16 << 10), "16 KiB");
        assert_eq!(size_label(1 << 30), "1 GiB");
        assert_eq!(size_label(1000), "1000 B");
    }

    #[test]
    fn rng_below_is_in_range() {
        let mut r = Rng::new(7);
        assert!((0..10_000).all(|_| r.below(37) < 37));
    }
}
