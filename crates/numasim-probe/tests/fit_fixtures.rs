//! The fitting on a recorded probe run (`tests/fixtures/runs/*.jsonl`, a
//! `--quick --format jsonl` run on a 2-CPU Firecracker guest): the fitted
//! machine reproduces the measurements it was fitted on when simulated,
//! its annotated TOML reads back as the same machine, and a broken record
//! is refused with its line.

use numasim::engine::rng::stream;
use numasim::kernel::mm::memcost;
use numasim::kernel::time::gettimeofday::simulate_calls;
use numasim::kernel::KernelConfig;
use numasim::machine::Machine;
use numasim_probe::calibrate::{fit, measurements_from_jsonl, Fit, Measurements};
use numasim_probe::topology::{CacheInfo, Topology};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// What the records do not carry: this guest's topology and caches.
fn base() -> Measurements {
    let cache = |level, size, shared_by| CacheInfo {
        level,
        kind: if level == 1 { "Data" } else { "Unified" }.into(),
        size,
        line: 64,
        shared_by,
    };
    Measurements {
        name: "vm".into(),
        description: "recorded run".into(),
        topo: Topology::single(vec![0, 1], 24684092, 24000000),
        proc_mem_total_kb: 24684092,
        page_size: 4096,
        huge_page_sizes: vec![2 << 20, 1 << 30],
        sizes: vec![],
        node_copy_bps: None,
        node_copy_spread: None,
        atomic_shared_ns: vec![],
        pairs: vec![],
        disk: None,
        caches: vec![
            cache(1, 48 << 10, 1),
            cache(2, 1 << 20, 1),
            cache(3, 32 << 20, 2),
        ],
        cpu_model: "AMD EPYC".into(),
        clock_mhz: Some(2596.096),
        fault_per_s: vec![],
        clock_gettime_ns: vec![],
        gettimeofday_ns: vec![],
        spreads: vec![],
    }
}

fn recorded() -> (String, Fit) {
    let text = std::fs::read_to_string(fixtures().join("runs/vm-2cpu-quick.jsonl")).unwrap();
    let m = measurements_from_jsonl(&text, base()).unwrap();
    (text, fit(&m).unwrap())
}

/// The value of the record with `metric` whose case has every (key, value) of `want`.
fn measured(text: &str, metric: &str, want: &[(&str, &str)]) -> f64 {
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| {
            v["metric"] == metric
                && want.iter().all(|(k, x)| {
                    let c = &v["case"][*k];
                    c.as_str() == Some(*x) || c.as_u64().is_some_and(|n| x.parse() == Ok(n))
                })
        })
        .and_then(|v| v["value"].as_f64())
        .unwrap_or_else(|| panic!("no {metric} {want:?} in the fixture"))
}

fn within(sim: f64, meas: f64, tol: f64) -> bool {
    ((sim - meas) / meas).abs() <= tol
}

#[test]
fn fitted_stream_copy_reproduces_the_measured_pass() {
    let (text, f) = recorded();
    let m = &f.machine;
    // The model reports buffer bytes per pass time; the probe bytes copied
    // (half the buffer): the same pass is twice the probe's figure.
    // Calibration: 2 MiB pages at the size fitted (5%); prediction: the
    // same copy on 4 KiB pages, the TLB misses modelled on top (15%).
    for (page, kb, size, tol) in [
        ("thp", 2048, "1 GiB", 0.05),
        ("4k", 4, "1 GiB", 0.15),
        ("4k", 4, "256 MiB", 0.15),
    ] {
        let mut k = KernelConfig::defaults(m);
        k.mm.page_size = kb << 10;
        let meas = 2.0 * measured(&text, "copy_mbps", &[("size", size), ("page", page)]);
        let bytes = numasim::scenario::size::parse_size(size).unwrap();
        let sim = memcost::stream_copy(m, &k, bytes, false, 0, stream(1, "t", 0)).mbps;
        assert!(
            within(sim, meas, tol),
            "{size} {page}: simulated {sim:.0} vs measured {meas:.0}"
        );
    }
}

#[test]
fn fitted_clock_reproduces_gettimeofday() {
    let (text, f) = recorded();
    let meas = measured(&text, "gettimeofday_ns", &[("threads", "1")]);
    let sim = simulate_calls(&f.machine, 1, 10_000, 1).time_per_call_ns;
    assert!(
        within(sim, meas, 0.05),
        "simulated {sim:.1} vs measured {meas:.1} ns"
    );
    assert!(
        f.machine.timer.clock_read_ns > 10.0,
        "no longer the 10 ns default"
    );
}

#[test]
fn fault_cost_splits_the_measured_fault() {
    let (text, f) = recorded();
    let per = 1e9
        / measured(
            &text,
            "fault_per_s",
            &[("mode", "threads"), ("threads", "1")],
        );
    let fl = &f.machine.fault;
    let parts = fl.fault_ns + 4096.0 / fl.zero_gbps + fl.ptl_hold_ns;
    assert!(within(parts, per, 1e-9), "{parts} vs {per}");
    assert!(fl.fault_ns > 0.0 && fl.fault_ns < per);
}

#[test]
fn llc_reach_sits_where_random_reads_leave_the_caches() {
    let (text, f) = recorded();
    let reach = f.machine.hierarchy.llc_reach;
    // 4 MiB still reads at cache speed in the fixture, 16 MiB does not.
    let r = |s| measured(&text, "random_mbps", &[("size", s), ("page", "thp")]);
    assert!(r("4 MiB") > 0.85 * r("16 KiB") && r("16 MiB") < 0.85 * r("16 KiB"));
    assert!(reach > 4 << 20 && reach < 16 << 20, "{reach}");
}

#[test]
fn annotated_machine_reads_back_and_names_its_sources() {
    let (_, f) = recorded();
    let (text, unseen) = f.annotated_toml();
    let back = Machine::from_toml_str(&text, "annotated").unwrap();
    assert_eq!(back, f.machine);
    for key in [
        "stream_mbps",
        "clock_read_ns",
        "fault_ns",
        "read_ns",
        "llc_reach",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key} is not written as fitted:\n{text}"));
        assert!(line.contains("  # "), "{line}");
    }
    assert!(unseen.contains(&"timer.hz".to_string()), "{unseen:?}");
    assert!(!unseen.iter().any(|u| u == "hierarchy.stream_mbps"));
    assert!(
        text.contains("# hz = 1000  # default: not seen by the probe"),
        "{text}"
    );
}

#[test]
fn broken_records_are_refused_with_their_line() {
    let good = r#"{"experiment":"probe","case":{"threads":1},"metric":"clock_gettime_ns","unit":"ns","value":24.0}"#;
    let cases = [
        ("{not json", "line 2: not JSON"),
        (r#"{"case":{},"value":1}"#, "line 2: no `metric`"),
        (
            r#"{"case":{"threads":1},"metric":"gettimeofday_ns","value":"x"}"#,
            "no finite",
        ),
        (
            r#"{"case":{"bytes":4096,"page":"64k"},"metric":"copy_mbps","value":1}"#,
            "page `64k`",
        ),
        (
            r#"{"case":{"page":"4k"},"metric":"copy_mbps","value":1}"#,
            "case.bytes",
        ),
    ];
    for (line, needle) in cases {
        let e = measurements_from_jsonl(&format!("{good}\n{line}\n"), base()).unwrap_err();
        assert!(e.contains(needle), "{line}: {e}");
    }
}

#[test]
fn a_noisy_bandwidth_is_flagged_not_silently_written() {
    let text = std::fs::read_to_string(fixtures().join("runs/vm-2cpu-quick.jsonl")).unwrap();
    let mut m = measurements_from_jsonl(&text, base()).unwrap();
    let line = |f: &Fit| {
        let (t, _) = f.annotated_toml();
        t.lines()
            .find(|l| l.starts_with("bandwidth_gbps = "))
            .unwrap()
            .to_string()
    };
    m.node_copy_spread = Some(0.02);
    let quiet = line(&fit(&m).unwrap());
    assert!(
        quiet.contains("spread 2.0%") && !quiet.contains("FLAGGED"),
        "{quiet}"
    );
    m.node_copy_spread = Some(0.30);
    let noisy = line(&fit(&m).unwrap());
    assert!(noisy.contains("spread 30.0%; FLAGGED: over 10%"), "{noisy}");
}

/// A later run that records spreads: its one-thread fault rate varied 17%
/// over the repetitions, so `fault_ns` is flagged; the quiet figures are not.
#[test]
fn recorded_spreads_reach_the_machine_comments() {
    let text = std::fs::read_to_string(fixtures().join("runs/vm-2cpu-quick-spread.jsonl")).unwrap();
    let f = fit(&measurements_from_jsonl(&text, base()).unwrap()).unwrap();
    let (toml, _) = f.annotated_toml();
    let line = |key: &str| {
        toml.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key}"))
            .to_string()
    };
    assert!(line("fault_ns").contains("FLAGGED"), "{}", line("fault_ns"));
    for key in ["stream_mbps", "clock_read_ns", "read_ns", "bandwidth_gbps"] {
        let l = line(key);
        assert!(l.contains("(spread ") && !l.contains("FLAGGED"), "{l}");
    }
    assert_eq!(Machine::from_toml_str(&toml, "s").unwrap(), f.machine);
}

/// `--validate` on the recorded run: the rows the fit used reproduce their
/// measurement within 5%; the rest are predictions, summarised by |Δ|.
#[test]
fn validate_rows_on_the_recorded_run() {
    use numasim::report::Role;
    use numasim_probe::validate::{prediction_summary, validate, EXPERIMENT};
    let text = std::fs::read_to_string(fixtures().join("runs/vm-2cpu-quick.jsonl")).unwrap();
    let meas = measurements_from_jsonl(&text, base()).unwrap();
    let f = fit(&meas).unwrap();
    let rows = validate(&meas, &f.machine);
    let cal: Vec<_> = rows
        .iter()
        .filter(|r| r.role == Some(Role::Calibration))
        .collect();
    // copy at 16 KiB (L1) and 1 GiB, random read at 16 KiB, gettimeofday at 1 thread.
    assert_eq!(cal.len(), 4, "{cal:?}");
    for r in &cal {
        let d = r.deviation().unwrap();
        assert!(d.abs() <= 0.05, "{} {:?}: {d:+.3}", r.metric, r.case);
    }
    assert!(rows
        .iter()
        .all(|r| r.experiment == EXPERIMENT && r.paper.is_some()));
    let (median, worst, n) = prediction_summary(&rows).unwrap();
    assert_eq!(n, rows.len() - 4);
    assert!(median <= worst);
    // The summary is over predictions only: a calibration row that is far
    // off does not move it.
    let mut skewed = rows.clone();
    let i = skewed
        .iter()
        .position(|r| r.role == Some(Role::Calibration))
        .unwrap();
    skewed[i].value = Some(1e12);
    assert_eq!(prediction_summary(&skewed), Some((median, worst, n)));
}
