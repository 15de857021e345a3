//! Issue 33 from the shell: `numasim sweep` (its records carry the grid),
//! `--set` recorded in the records and refused outside the case keys,
//! `replay --summary`, `machines FILE` with its distance matrix and
//! topology SVG, and a user's scenario with every metric plotted.

use std::path::PathBuf;
use std::process::{Command, Output};

fn numasim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numasim"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numasim-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn records(out: &Output) -> Vec<serde_json::Value> {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_sweep_runs_every_combination_and_each_record_carries_its_grid_values() {
    let recs = records(&numasim(&[
        "sweep",
        "examples/epyc-touch.toml",
        "--grid",
        "bytes=1 GiB,2 GiB",
        "--grid",
        "seed=1,2,3",
        "--format",
        "jsonl",
    ]));
    let point = |r: &serde_json::Value| {
        (
            r["case"]["bytes"].as_str().unwrap().to_string(),
            r["case"]["seed"].as_i64().unwrap(),
        )
    };
    let mut seen: Vec<(String, i64)> = Vec::new();
    for r in &recs {
        let p = point(r);
        if seen.last() != Some(&p) {
            seen.push(p);
        }
    }
    // Python's itertools.product order: the last grid key varies fastest.
    let want: Vec<(String, i64)> = ["1 GiB", "2 GiB"]
        .iter()
        .flat_map(|b| (1..=3).map(move |s| (b.to_string(), s)))
        .collect();
    assert_eq!(seen, want);
    // Each combination ran with its own value: twice the bytes touched.
    let touched = |b: &str| -> f64 {
        recs.iter()
            .filter(|r| {
                r["case"]["bytes"] == b && r["metric"] == "touched_kb" && r["case"]["seed"] == 1
            })
            .map(|r| r["value"].as_f64().unwrap())
            .sum()
    };
    assert_eq!(touched("2 GiB"), 2.0 * touched("1 GiB"));
    assert!(touched("1 GiB") > 0.0);
}

#[test]
fn a_sweep_gives_the_records_of_the_runs_it_stands_for() {
    let swept = numasim(&[
        "sweep",
        "examples/epyc-touch.toml",
        "--grid",
        "bytes=2 GiB",
        "--format",
        "jsonl",
    ]);
    let run = numasim(&[
        "run",
        "examples/epyc-touch.toml",
        "--set",
        "bytes=2 GiB",
        "--format",
        "jsonl",
    ]);
    assert_eq!(text(&swept.stdout), text(&run.stdout));
    assert!(!swept.stdout.is_empty());
}

#[test]
fn every_set_is_recorded_and_a_key_outside_the_case_keys_is_refused() {
    let recs = records(&numasim(&[
        "run",
        "examples/epyc-touch.toml",
        "--set",
        "kernel.hashdist=0",
        "--format",
        "jsonl",
    ]));
    assert!(!recs.is_empty());
    assert!(
        recs.iter().all(|r| r["case"]["kernel.hashdist"] == 0),
        "{:?}",
        recs[0]
    );
    for bad in ["report.title=x", "foo.bar=1"] {
        let o = numasim(&["run", "examples/epyc-touch.toml", "--set", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let e = text(&o.stderr);
        assert!(e.contains("machine.*") && e.contains("--set"), "{e}");
    }
    let o = numasim(&["sweep", "examples/epyc-touch.toml", "--grid", "a.b=1,2"]);
    assert_eq!(o.status.code(), Some(2));
    let o = numasim(&[
        "sweep",
        "examples/epyc-touch.toml",
        "--grid",
        "bytes=1 GiB,,2 GiB",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn replay_summary_prints_the_scores_without_the_records() {
    let full = numasim(&["replay", "hashdist-boot"]);
    let short = numasim(&["replay", "hashdist-boot", "--summary"]);
    assert_eq!(short.status.code(), Some(0));
    let (f, s) = (text(&full.stdout), text(&short.stdout));
    assert!(s.contains("calibration") && s.len() * 4 < f.len(), "{s}");
    assert!(f.ends_with(&s), "the summary is the full run's last lines");
}

#[test]
fn machines_file_prints_the_distance_matrix_and_writes_a_topology_svg() {
    let d = tmp("machines");
    let m = d.join("box.toml");
    std::fs::write(&m, text(&numasim(&["machines", "epyc-2s-nps4"]).stdout)).unwrap();
    let svg = d.join("box.svg");
    let o = numasim(&[
        "machines",
        m.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains("node distances:"), "{e}");
    let row0 = e
        .lines()
        .find(|l| l.trim_start().starts_with("0:"))
        .expect("row 0");
    assert!(row0.split_whitespace().nth(1) == Some("10"), "{row0}");
    let pic = std::fs::read_to_string(&svg).unwrap();
    assert!(pic.starts_with("<svg") && pic.contains("NUMANode #7") && pic.contains("PU 0"));
    // Eight nodes drawn, grouped into packages by the nearest remote
    // distance (fewer packages than nodes).
    assert_eq!(pic.matches("NUMANode #").count(), 8);
    let packages = pic.matches("Package #").count();
    assert!((2..8).contains(&packages), "{packages} packages");
}

#[test]
fn a_scenario_without_published_values_gets_every_metric_plotted() {
    let d = tmp("report");
    let sc = d.join("mine.toml");
    std::fs::write(
        &sc,
        "name = \"mine\"\n[machine]\npreset = \"altix-hashdist-16\"\n[[run]]\nworkload = \"meminfo\"\n",
    )
    .unwrap();
    let o = numasim(&[
        "run",
        sc.to_str().unwrap(),
        "--format",
        "jsonl",
        "--report",
        d.join("r").to_str().unwrap(),
    ]);
    let metrics: std::collections::BTreeSet<String> = records(&o)
        .iter()
        .map(|r| r["metric"].as_str().unwrap().to_string())
        .collect();
    assert!(metrics.len() >= 3, "{metrics:?}");
    let page = std::fs::read_to_string(d.join("r/index.html")).unwrap();
    assert_eq!(
        page.matches("<figure class=\"plot\" ").count(),
        metrics.len(),
        "{metrics:?}"
    );
}
