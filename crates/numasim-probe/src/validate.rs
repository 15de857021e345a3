//! `numasim probe --validate`: simulate the probe's own micro-benchmarks on
//! the machine fitted from them, measured beside simulated. A row the fit
//! used is `calibration` (it checks the fitting arithmetic); every other
//! row is `prediction` (the model's answer). Covered so far: the one-core
//! copy and random-read curves at every size and page kind, and
//! `gettimeofday` at every thread count.

use crate::calibrate::Measurements;
use crate::sys::PageKind;
use numasim::engine::rng::stream;
use numasim::kernel::mm::memcost;
use numasim::kernel::time::gettimeofday::simulate_calls;
use numasim::kernel::KernelConfig;
use numasim::machine::Machine;
use numasim::report::{Record, Role};
use serde_json::json;

pub const EXPERIMENT: &str = "probe-validate";

/// Reads simulated per random-read row: enough that the sampled TLB
/// miss rate is steady to well under 1%.
const SAMPLES: u64 = 20_000;

fn row(
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
        Role::Prediction
    });
    r
}

/// Measured vs simulated for every figure covered (see the module doc).
pub fn validate(meas: &Measurements, m: &Machine) -> Vec<Record> {
    let mut out = Vec::new();
    let huge = [PageKind::Thp, PageKind::Hugetlb]
        .into_iter()
        .find(|k| meas.sizes.iter().any(|(_, p, _)| p == k));
    let fit_page = huge.unwrap_or(PageKind::Base);
    let largest = meas
        .sizes
        .iter()
        .filter(|(_, p, _)| *p == fit_page)
        .map(|x| x.0)
        .max();
    let smallest = meas
        .sizes
        .iter()
        .filter(|(_, p, _)| *p == fit_page)
        .map(|x| x.0)
        .min();
    let l1 = meas.caches.iter().find(|c| c.level == 1).map(|c| c.size);
    let l1_fit = meas
        .sizes
        .iter()
        .filter(|(s, p, _)| *p == fit_page && l1.is_some_and(|l| *s <= l))
        .map(|x| x.0)
        .max();
    let mut sizes = meas.sizes.clone();
    sizes.sort_by_key(|x| (x.0, x.1.label()));
    for (i, (size, page, r)) in sizes.iter().enumerate() {
        let mut k = KernelConfig::defaults(m);
        k.mm.page_size = match page {
            PageKind::Base => meas.page_size,
            _ => 2 << 20,
        };
        let case = || {
            vec![
                ("size", json!(crate::bench::size_label(*size))),
                ("page", json!(page.label())),
            ]
        };
        let fitted = *page == fit_page;
        // The model counts both halves of the copy; the probe the bytes copied.
        let sc = memcost::stream_copy(m, &k, *size, false, 0, stream(1, "validate", i as u64));
        out.push(row(
            case(),
            "copy_mbps",
            "MB/s",
            sc.mbps / 2.0,
            r.copy_bps / 1e6,
            fitted && (Some(*size) == largest || Some(*size) == l1_fit),
        ));
        let rr = memcost::random_read(
            m,
            &k,
            *size,
            8,
            false,
            0,
            SAMPLES,
            stream(2, "validate", i as u64),
        );
        out.push(row(
            case(),
            "random_mbps",
            "MB/s",
            rr.mbps,
            r.random_bps / 1e6,
            fitted && Some(*size) == smallest,
        ));
    }
    for &(t, g) in &meas.gettimeofday_ns {
        let sim = simulate_calls(m, t as u64, 10_000, 1).time_per_call_ns;
        // One thread: clock_read_ns + syscall_ns were fitted to sum to it.
        out.push(row(
            vec![("threads", json!(t))],
            "gettimeofday_ns",
            "ns",
            sim,
            g,
            t == 1,
        ));
    }
    out
}

/// Median and worst |Δ| (fractions) of the prediction rows, with their count.
pub fn prediction_summary(rows: &[Record]) -> Option<(f64, f64, usize)> {
    let mut d: Vec<f64> = rows
        .iter()
        .filter(|r| r.role == Some(Role::Prediction))
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
