//! The CI check of issue 6: a `--quick` probe of the machine running the
//! tests reports every metric of experiments.md section G, a positive copy
//! bandwidth, cleans up its temporary files, and writes a machine TOML that
//! the loader accepts. Takes up to about a minute.

use numasim::machine::Machine;
use numasim_probe::{run, ProbeArgs};

/// Section G of spec/experiments.md, spelled out here rather than taken
/// from the crate so that a renamed metric fails the test.
const SECTION_G: &[&str] = &[
    "copy_mbps",
    "random_mbps",
    "mem_latency_ns",
    "fault_per_s",
    "gettimeofday_ns",
    "atomic_add_ns",
    "seq_write_mibps",
    "seq_read_mibps",
    "cpu_pct_per_mibps",
    "mem_total_kb",
    "mem_free_kb",
];

#[test]
fn quick_probe_reports_everything_and_cleans_up() {
    let parent = std::env::temp_dir().join(format!("numasim-probe-test-{}", std::process::id()));
    std::fs::create_dir_all(&parent).unwrap();
    let out = parent.join("host.toml");
    let args = ProbeArgs {
        quick: true,
        dir: Some(parent.clone()),
        out: Some(out.clone()),
        ..ProbeArgs::default()
    };
    let report = run(&args).expect("quick probe runs");
    for n in &report.notes {
        eprintln!("note: {n}");
    }

    for m in SECTION_G {
        assert!(
            report.records.iter().any(|r| r.metric == *m),
            "metric {m} missing from the probe's records"
        );
    }
    for r in &report.records {
        assert_eq!(r.experiment, "probe");
        let v = r.value.expect("every probe record has a value");
        assert!(v.is_finite() && v >= 0.0, "{} = {v}", r.metric);
    }
    let copy: Vec<f64> = report
        .records
        .iter()
        .filter(|r| r.metric == "copy_mbps")
        .map(|r| r.value.unwrap())
        .collect();
    assert!(
        !copy.is_empty() && copy.iter().all(|&c| c > 0.0),
        "copy bandwidth {copy:?}"
    );
    // The read-only and write-only streams at the cache boundaries (round
    // 22): both, 4 KiB pages, at every size from 1 to 64 MiB the run has.
    for m in ["read_mbps", "write_mbps"] {
        let sizes: Vec<&str> = report
            .records
            .iter()
            .filter(|r| r.metric == m)
            .inspect(|r| assert_eq!(r.case_value("page").and_then(|v| v.as_str()), Some("4k")))
            .filter_map(|r| r.case_value("size").and_then(|v| v.as_str()))
            .collect();
        assert_eq!(sizes.len(), 9, "{m}: {sizes:?}");
    }
    // Faults on the threads' CPU clocks: one figure per thread count, at
    // least the wall-clock rate (a thread is on a CPU at most all of its
    // wall time; 1% for the clocks' granularity).
    let by_threads = |metric: &str| -> Vec<(u64, f64)> {
        report
            .records
            .iter()
            .filter(|r| r.metric == metric && r.case_value("mode").is_some_and(|m| m == "threads"))
            .map(|r| {
                (
                    r.case_value("threads").unwrap().as_u64().unwrap(),
                    r.value.unwrap(),
                )
            })
            .collect()
    };
    let (wall, cpu) = (by_threads("fault_per_s"), by_threads("fault_on_cpu_per_s"));
    assert_eq!(wall.len(), cpu.len(), "{wall:?} {cpu:?}");
    for (w, c) in wall.iter().zip(&cpu) {
        assert!(w.0 == c.0 && c.1 >= 0.99 * w.1, "wall {w:?} on a CPU {c:?}");
    }
    // Round 17's checks: one faulter beside no readers at least, and each
    // thread's own per-CPU add at the most threads, one per thread.
    let beside: Vec<_> = report
        .records
        .iter()
        .filter(|r| r.metric == "fault_beside_readers_per_s")
        .collect();
    assert!(
        beside
            .iter()
            .any(|r| r.case_value("readers").and_then(|v| v.as_u64()) == Some(0)),
        "{beside:?}"
    );
    let most = wall.iter().map(|w| w.0).max().unwrap();
    let each = report
        .records
        .iter()
        .filter(|r| {
            r.metric == "atomic_add_cpu_ns"
                && r.case_value("threads").and_then(|v| v.as_u64()) == Some(most)
        })
        .count();
    assert_eq!(each as u64, most);
    // Every case of the spec's keys is there: size and page on memory rows,
    // threads on scaling rows, io on I/O rows.
    for r in &report.records {
        let need: &[&str] = match r.metric.as_str() {
            "copy_mbps" | "random_mbps" | "mem_latency_ns" | "read_mbps" | "write_mbps" => {
                &["size", "page"]
            }
            "fault_per_s" | "fault_on_cpu_per_s" | "fault_cpu_share" => &["threads", "mode"],
            "gettimeofday_ns" => &["threads"],
            "atomic_add_ns" => &["threads", "kind"],
            "seq_write_mibps" | "seq_read_mibps" | "cpu_pct_per_mibps" => &["io"],
            "mem_total_kb" | "mem_free_kb" => &["node"],
            _ => &[],
        };
        for k in need {
            assert!(r.case_value(k).is_some(), "{} lacks case key {k}", r.metric);
        }
    }

    // Temporary files are gone; only the TOML we asked for is left.
    let scratch = report.scratch_dir.clone().expect("the I/O tests ran");
    assert!(scratch.starts_with(&parent));
    assert!(!scratch.exists(), "{} was not removed", scratch.display());
    let left: Vec<_> = std::fs::read_dir(&parent)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("host.toml")]);

    // The written machine loads and is the machine reported.
    let text = std::fs::read_to_string(&out).unwrap();
    let m = Machine::from_toml_str(&text, "host.toml").expect("probe TOML loads");
    assert_eq!(m, report.machine);
    assert_eq!(text, report.machine_toml);
    assert!(m.memory.bandwidth_gbps > 0.0 && m.memory.latency_ns > 0.0);

    // And it drives a simulation: a scenario naming it as its preset boots
    // and places memory.
    let scenario = format!(
        "name = \"host\"\n[machine]\npreset = \"{}\"\n[[run]]\nworkload = \"meminfo\"\n\
         [[run]]\nworkload = \"touch\"\nthreads = 1\nbytes = \"64 MiB\"\n",
        out.display()
    );
    let sc = numasim::scenario::Scenario::from_str(&scenario, "host-scenario.toml", None)
        .expect("scenario loads");
    let recs = numasim::scenario::run::run(&sc, &[]).expect("simulation runs");
    let touched: f64 = recs
        .iter()
        .filter(|r| r.metric == "touched_kb")
        .filter_map(|r| r.value)
        .sum();
    assert_eq!(
        touched,
        64.0 * 1024.0,
        "64 MiB placed on the probed machine"
    );
    std::fs::remove_dir_all(&parent).unwrap();
    assert!(
        report.elapsed.as_secs() < 120,
        "quick probe took {:?}",
        report.elapsed
    );
}

#[test]
fn bad_options_are_input_errors() {
    let e = run(&ProbeArgs {
        mem_share_pct: 0,
        ..ProbeArgs::default()
    })
    .unwrap_err();
    assert!(e.is_bad_input());
    assert_eq!(e.exit_code(), 2);
    let e = run(&ProbeArgs {
        dir: Some("/nonexistent/numasim".into()),
        ..ProbeArgs::default()
    })
    .unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    let e = run(&ProbeArgs {
        out: Some("/nonexistent/numasim/host.toml".into()),
        ..ProbeArgs::default()
    })
    .unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
}
