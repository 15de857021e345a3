//! `numasim probe --validate`: simulate the probe's own micro-benchmarks on
//! the machine fitted from them, measured beside simulated. A row the fit
//! used is `calibration` (it checks the fitting arithmetic); every other
//! row is `validation` (the model's answer). Covered: the one-core copy,
//! random-read and pointer-chase curves at every size and page kind,
//! `gettimeofday`, first-touch faults, adds to one shared atomic counter
//! and to per-CPU counters at every thread count.

use crate::calibrate::Measurements;
use crate::hierarchy::{self, kernel_for, Used};
use numasim::kernel::era::Era;
use numasim::kernel::locking::contention::{AnonFault, ContentionKnobs, PagecacheCount};
use numasim::kernel::KernelConfig;
use numasim::machine::Machine;
use numasim::report::{Record, Role};
use numasim::workload::gettimeofday::simulate_calls;
use numasim::workload::page_cache_size;
use serde_json::json;

pub const EXPERIMENT: &str = "probe-validate";

pub(crate) fn row(
    case: Vec<(&str, serde_json::Value)>,
    metric: &str,
    unit: &str,
    sim: f64,
    meas: f64,
    calibration: bool,
) -> Record {
    // `machine = fitted` keeps these rows out of the tables of the probe's
    // own records, whose cases they would otherwise share.
    let mut r = Record::new(
        EXPERIMENT,
        std::iter::once(("machine".to_string(), json!("fitted")))
            .chain(case.into_iter().map(|(k, v)| (k.to_string(), v)))
            .collect(),
        metric,
        unit,
        sim,
    );
    r.paper = Some(meas);
    r.role = Some(if calibration {
        Role::Calibration
    } else {
        Role::Validation
    });
    r
}

/// Measured vs simulated for every figure covered (see the module doc);
/// rows whose measurement is in `used` are calibration.
pub fn validate(meas: &Measurements, m: &Machine, used: &[Used]) -> Vec<Record> {
    let mut out = Vec::new();
    let mut sizes = meas.sizes.clone();
    sizes.sort_by_key(|x| (x.0, x.1.label()));
    for (size, page, r) in &sizes {
        let k = kernel_for(m, *page, meas.page_size);
        let case = || {
            vec![
                ("size", json!(crate::bench::size_label(*size))),
                ("page", json!(page.label())),
            ]
        };
        let is_used = |metric: &str| {
            used.iter()
                .any(|u| u.metric == metric && u.bytes == *size && u.page == *page)
        };
        for (metric, unit) in [
            ("copy_mbps", "MB/s"),
            ("random_mbps", "MB/s"),
            ("mem_latency_ns", "ns"),
        ] {
            let Some((target, spread)) = hierarchy::measured_raw(r, metric) else {
                continue;
            };
            // The benchmark as the probe timed it: its loop's clock reads too.
            let sim = hierarchy::simulate(m, &k, metric, *size, 2)
                + hierarchy::loop_ns(meas, metric, *size);
            // Back from the model's units to the probe's.
            let to_probe = |x: f64| match metric {
                "copy_mbps" => 1e3 / x / 2.0,
                "random_mbps" => 8e3 / x,
                _ => x,
            };
            let mut r = row(
                case(),
                metric,
                unit,
                to_probe(sim),
                to_probe(target),
                is_used(metric),
            );
            r.spread = Some(spread);
            out.push(r);
        }
    }
    let variant = ContentionKnobs::defaults(m).gettimeofday;
    for &(t, g) in &meas.gettimeofday_ns {
        let sim = simulate_calls(m, variant, t as u64, 10_000, 1).time_per_call_ns;
        // One thread: clock_read_ns + syscall_ns were fitted to sum to it.
        let mut r = row(
            vec![("threads", json!(t))],
            "gettimeofday_ns",
            "ns",
            sim,
            g,
            t == 1,
        );
        r.spread = spread_of(meas, "gettimeofday_ns", t);
        out.push(r);
    }
    // One shared counter, every thread adding to it: the page-cache count
    // of 2.4 (`pagecache-count` with a global count and no other work) is
    // that loop, one add per insertion and one per removal. Two threads
    // fixed `line_transfer_ns`; more threads are predictions. One thread's
    // add (a locked instruction on a line it owns) is not a row: the
    // model's lines charge transfers only, so it would read 0.
    for &(t, ns) in &meas.atomic_shared_ns {
        if t < 2 || t as u64 > m.cpu_count() {
            continue;
        }
        let ops = (1u64 << 16) / t as u64;
        let r = page_cache_size::simulate(m, PagecacheCount::Global, t as u64, ops.max(16), 0);
        let sim = t as f64 * 1e9 / (2.0 * r.insertions_per_s);
        let mut r = row(
            vec![("threads", json!(t)), ("kind", json!("shared"))],
            "atomic_add_ns",
            "ns",
            sim,
            ns,
            t == 2,
        );
        r.spread = spread_of(meas, "atomic_add_ns", t);
        out.push(r);
    }
    // Per-CPU counters, each on its own 128-byte line: no line is written
    // by two CPUs, so the model moves none (`engine::CacheLine` charges
    // transfers only) and a thread's add costs what one thread's does at
    // any count. The row checks that mechanism: one thread's measured add
    // beside each count's; a host whose CPUs share a core (SMT siblings,
    // vCPUs on one core) shows here what the model leaves out.
    if let Some(one) = crate::calibrate::one_thread(&meas.atomic_percpu_ns) {
        for &(t, ns) in &meas.atomic_percpu_ns {
            if t < 2 || t as u64 > m.cpu_count() {
                continue;
            }
            let mut r = row(
                vec![("threads", json!(t)), ("kind", json!("percpu"))],
                "atomic_add_ns",
                "ns",
                one,
                ns,
                false,
            );
            r.spread = spread_of(meas, "atomic_add_ns percpu", t);
            out.push(r);
        }
    }
    // Faults on the threads' CPU clocks where the run has them (the fit
    // took one thread's there): on a host with more runnable threads than
    // CPUs, N threads' wall-clock rate holds the scheduler's wait, which
    // the model (each thread on its own CPU) does not (docs/probe.md,
    // "Faults on a busy host").
    for &(t, wall) in &meas.fault_per_s {
        let on_cpu = meas.fault_on_cpu_per_s.iter().find(|x| x.0 == t);
        let (rate, metric, clock) = match on_cpu {
            Some(&(_, r)) => (r, "fault_on_cpu_per_s", "thread-cpu"),
            None => (wall, "fault_per_s", "wall"),
        };
        if let Some(sim) = fault_rate(m, t as u64, meas.fault_bytes) {
            let mut r = row(
                vec![
                    ("mode", json!("threads")),
                    ("threads", json!(t)),
                    ("clock", json!(clock)),
                ],
                "fault_per_s",
                "faults/s",
                sim,
                rate,
                t == 1,
            );
            r.spread = spread_of(meas, metric, t);
            out.push(r);
        }
    }
    out
}

/// The measured spread of a per-thread-count figure, where the run kept it.
fn spread_of(meas: &Measurements, metric: &str, threads: usize) -> Option<f64> {
    let key = format!("{metric} threads={threads}");
    meas.spreads.iter().find(|(k, _)| *k == key).map(|x| x.1)
}

/// First-touch faults per second of `threads` threads of one process
/// touching `bytes` together, simulated on `m` through today's anonymous
/// fault path (`memory::anon_batched`: the VMA's reader count, per-CPU
/// page lists and LRU batches; Linux 6.4 on) with the batch sizes of the
/// newest release modelled (`Era::V6_8`: `pcp->batch` from the zone's
/// size, `PAGEVEC_SIZE`). Until round 14b this was the Altix 2.4 path
/// (a per-page LRU lock, `mmap_sem`), which today's kernels no longer
/// take (docs/probe.md, "Round 14b"). `None` if it does not fit.
pub fn fault_rate(m: &Machine, threads: u64, bytes: u64) -> Option<f64> {
    let booted = numasim::kernel::boot::boot(m, &KernelConfig::defaults(m), 1).ok()?;
    let knobs = ContentionKnobs {
        anon_fault: AnonFault::PerVmaLock,
        ..ContentionKnobs::defaults_for(m, Era::V6_8)
    };
    let (run, faults) = numasim::workload::contention::anon_touch(
        m,
        &knobs,
        &booted,
        threads,
        bytes,
        numasim::kernel::mm::memory::DEFAULT_SAMPLE,
        1,
    )
    .ok()?;
    (run.time_s > 0.0).then(|| faults as f64 / run.time_s)
}

/// The deviation a validation row may have and still count as within
/// where its measurement repeated more tightly than this.
pub const TOLERANCE: f64 = 0.05;

/// The validation rows judged with their noise (issue 36): a row is
/// within when |Δ| ≤ max(its measured spread, [`TOLERANCE`]), so a busy
/// host is not mistaken for a bad model.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseSummary {
    pub rows: usize,
    pub within: usize,
    /// Largest |Δ| / max(spread, tolerance): ≤ 1 within, the issue's
    /// target ≤ 1.5.
    pub worst_excess: f64,
    /// The row with the worst excess: `metric [case]`.
    pub worst_row: String,
    /// Median measured spread of the rows.
    pub median_spread: f64,
}

pub fn noise_summary(rows: &[Record]) -> Option<NoiseSummary> {
    let v: Vec<(&Record, f64, f64)> = rows
        .iter()
        .filter(|r| r.role == Some(Role::Validation))
        .filter_map(|r| Some((r, r.deviation()?.abs(), r.spread.unwrap_or(0.0))))
        .collect();
    if v.is_empty() {
        return None;
    }
    let within = v.iter().filter(|(_, d, s)| *d <= s.max(TOLERANCE)).count();
    let (worst, d, s) = v
        .iter()
        .max_by(|a, b| (a.1 / a.2.max(TOLERANCE)).total_cmp(&(b.1 / b.2.max(TOLERANCE))))
        .copied()
        .expect("not empty");
    let case: Vec<String> = worst
        .case
        .iter()
        .filter(|(k, _)| k != "machine")
        .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), String::from)))
        .collect();
    let mut spreads: Vec<f64> = v.iter().map(|x| x.2).collect();
    spreads.sort_by(|a, b| a.total_cmp(b));
    Some(NoiseSummary {
        rows: v.len(),
        within,
        worst_excess: d / s.max(TOLERANCE),
        worst_row: format!("{} [{}]", worst.metric, case.join(" ")),
        median_spread: spreads[spreads.len() / 2],
    })
}

/// Median and worst |Δ| (fractions) of the validation rows, with their count.
pub fn validation_summary(rows: &[Record]) -> Option<(f64, f64, usize)> {
    let mut d: Vec<f64> = rows
        .iter()
        .filter(|r| r.role == Some(Role::Validation))
        .filter_map(|r| r.deviation())
        .map(f64::abs)
        .collect();
    if d.is_empty() {
        return None;
    }
    d.sort_by(|a, b| a.total_cmp(b));
    let n = d.len();
    let median = if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2.0
    };
    Some((median, d[n - 1], n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(meas: f64, sim: f64, spread: f64) -> Record {
        let mut r = row(
            vec![("size", json!("4 MiB"))],
            "mem_latency_ns",
            "ns",
            sim,
            meas,
            false,
        );
        r.spread = Some(spread);
        r
    }

    /// A 20% deviation is within a row measured with a 30% spread, not
    /// within one measured with 2% (held to the 5% tolerance instead).
    #[test]
    fn a_wide_spread_counts_as_within_where_a_tight_one_does_not() {
        let wide = noise_summary(&[val(100.0, 120.0, 0.30)]).unwrap();
        assert_eq!((wide.rows, wide.within), (1, 1));
        assert!((wide.worst_excess - 0.2 / 0.3).abs() < 1e-9);
        let tight = noise_summary(&[val(100.0, 120.0, 0.02)]).unwrap();
        assert_eq!((tight.rows, tight.within), (1, 0));
        assert!((tight.worst_excess - 0.2 / TOLERANCE).abs() < 1e-9);
        assert!(
            tight.worst_row.contains("size=4 MiB"),
            "{}",
            tight.worst_row
        );
        // A 4% deviation is within the tolerance whatever the spread;
        // calibration rows are not judged.
        let mut cal = val(100.0, 150.0, 0.0);
        cal.role = Some(Role::Calibration);
        let s = noise_summary(&[val(100.0, 104.0, 0.0), cal]).unwrap();
        assert_eq!((s.rows, s.within), (1, 1));
        assert_eq!(s.median_spread, 0.0);
    }
}
