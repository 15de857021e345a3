//! The command line keeps its contract: exit statuses, formats, errors.

use std::process::Command;

fn numasim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_numasim"))
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn replay_prints_the_table_and_exits_0() {
    let o = numasim(&["replay", "hashdist-boot"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("mem_used_kb"), "{out}");
    // One summary line per role: MemUsed scored, MemTotal and MemFree listed.
    assert!(
        out.contains("calibration  16 rows, median |Δ|") && out.contains("within tolerance 16/16"),
        "{out}"
    );
    assert!(out.contains("validation    1 row, "), "{out}");
    // The parameters fitted to the experiment's rows, beside the row counts.
    assert!(
        out.contains(
            "fitted        3 parameters on 15 calibration rows: machine.boot.node_reserved"
        ),
        "{out}"
    );
    assert!(
        out.contains("input        34 rows (copied, not scored"),
        "{out}"
    );
}

#[test]
fn jsonl_is_one_record_per_line_and_deterministic() {
    let a = numasim(&["replay", "hashdist-boot", "--format", "jsonl"]);
    let b = numasim(&["replay", "hashdist-boot", "--format", "jsonl"]);
    assert_eq!(a.stdout, b.stdout);
    let text = String::from_utf8_lossy(&a.stdout);
    // The experiment's summary follows its records, as one object.
    let last = text.lines().last().unwrap_or_default();
    let s: serde_json::Value = serde_json::from_str(last).expect("JSON");
    assert_eq!(s["experiment"], "hashdist-boot", "{last}");
    assert_eq!(s["summary"]["fitted_parameters"], 3, "{last}");
    assert_eq!(s["summary"]["roles"]["calibration"]["rows"], 16, "{last}");
    assert_eq!(s["summary"]["roles"]["input"]["rows"], 34, "{last}");
    for line in text.lines().filter(|l| !l.contains(r#""summary":"#)) {
        let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        for key in [
            "experiment",
            "case",
            "metric",
            "unit",
            "value",
            "paper",
            "role",
        ] {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
        // A role exactly where there is a published value.
        assert_eq!(v["paper"].is_null(), v["role"].is_null(), "{line}");
    }
    assert!(text.contains(
        r#""case":{"kernel.hashdist":0,"kernel.thash_entries":0,"node":6},"metric":"mem_used_kb""#
    ));
    assert!(text.contains(r#""metric":"mem_total_kb","unit":"kB","value":3870656.0,"paper":3870656.0,"role":"input"}"#), "{text}");
}

#[test]
fn replay_all_stdout_is_byte_identical_run_to_run() {
    // Wall-clock time goes to stderr; stdout (records, summary, totals) is
    // a function of the inputs alone.
    let a = numasim(&["replay", "--all"]);
    let b = numasim(&["replay", "--all"]);
    assert_eq!(a.status.code(), Some(0));
    let text = String::from_utf8_lossy(&a.stdout);
    assert!(a.stdout == b.stdout, "stdout differs between two runs");
    assert!(text.contains("== Totals by role"), "{text}");
    // The verdict counts calibration and validation rows, and states inputs apart.
    let verdict = text.lines().last().unwrap_or_default();
    assert!(
        verdict.contains("calibration")
            && verdict.contains("validation")
            && verdict.contains("input rows not scored"),
        "{verdict}"
    );
    assert!(text.contains("  fitted       "), "{text}");
    assert!(String::from_utf8_lossy(&a.stderr).contains("experiments in"));
}

#[test]
fn a_paper_row_without_a_role_is_bad_input() {
    let body = "name = \"r\"\n[machine]\npreset = \"altix-hashdist-16\"\n\
                [[run]]\nworkload = \"boot\"\nmetrics = [\"tcp_ehash_bytes\"]\n\
                [[paper]]\nmetric = \"tcp_ehash_bytes\"\nvalue = 1\n";
    let f = write_scenario("norole", body);
    let o = numasim(&["run", f.to_str().unwrap()]);
    std::fs::remove_dir_all(f.parent().unwrap()).ok();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("norole.toml")
            && err.contains("paper[0].role")
            && err.contains("`calibration`")
            && err.contains("`input`")
            && err.contains("`validation`"),
        "{err}"
    );
    let f = write_scenario(
        "badrole",
        &body.replace("value = 1", "value = 1\nrole = \"fit\""),
    );
    let o = numasim(&["run", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("paper[0].role") && err.contains("validation"),
        "{err}"
    );
    std::fs::remove_dir_all(f.parent().unwrap()).ok();
}

#[test]
fn bad_input_exits_2_with_the_file_named() {
    let dir = std::env::temp_dir().join(format!("numasim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(
        &f,
        "[machine]\npreset = \"altix-512\"\nnodez = 4\n[[run]]\nworkload = \"boot\"\n",
    )
    .unwrap();
    let o = numasim(&["run", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("machine.nodez"),
        "{err}"
    );
    let o = numasim(&["replay", "hashdist-boot", "--set", "kernel.nope=1"]);
    assert_eq!(o.status.code(), Some(2));
    let o = numasim(&["replay", "no-such-experiment"]);
    assert_eq!(o.status.code(), Some(2));
    let o = numasim(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn machines_lists_and_prints_presets() {
    let o = numasim(&["machines"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("wildfire-gs320"));
    let o = numasim(&["machines", "bgp-node"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("PowerPC 450"));
}

#[test]
fn the_readme_example_runs() {
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/epyc-touch.toml"
    );
    let o = numasim(&["run", root]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("remote_fraction"));
}

#[test]
fn an_imported_machine_drives_a_scenario() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../numasim/tests/fixtures/import/numactl/eight-node.txt"
    );
    let o = numasim(&["machines", "import", "--numactl", fixture, "--name", "box8"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dir = std::env::temp_dir().join(format!("numasim-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("box8.toml"), &o.stdout).unwrap();
    std::fs::write(
        dir.join("s.toml"),
        "name = \"s\"\n[machine]\npreset = \"box8.toml\"\n[kernel]\nhashdist = 1\n[[run]]\nworkload = \"boot\"\nmetrics = [\"max_node_hash_fraction\"]\n",
    )
    .unwrap();
    let o = numasim(&[
        "run",
        dir.join("s.toml").to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    // Eight nodes, tables interleaved: at most a little over 1/8 on one node.
    assert!(v["value"].as_f64().unwrap() < 0.14, "{line}");
}

#[test]
fn paper_at_and_bound_take_only_their_names() {
    let body = "name = \"r\"\n[machine]\npreset = \"altix-hashdist-16\"\n\
                [[run]]\nworkload = \"boot\"\nmetrics = [\"tcp_ehash_bytes\"]\n\
                [[paper]]\nmetric = \"tcp_ehash_bytes\"\nvalue = 1\nrole = \"validation\"\n";
    for (key, bad, allowed) in [
        ("at", "peak", ["`each`", "`max`", "`min`"]),
        ("bound", "under", ["`at`", "`below`", "`above`"]),
    ] {
        let f = write_scenario(&format!("bad{key}"), &format!("{body}{key} = \"{bad}\"\n"));
        let o = numasim(&["run", f.to_str().unwrap()]);
        std::fs::remove_dir_all(f.parent().unwrap()).ok();
        assert_eq!(o.status.code(), Some(2), "{key}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("bad{key}.toml"))
                && err.contains(&format!("paper[0].{key}"))
                && err.contains(bad)
                && allowed.iter().all(|a| err.contains(a)),
            "{err}"
        );
    }
}

#[test]
fn a_bound_at_the_peak_shows_as_a_bound_on_one_record() {
    // Two process counts; the published ceiling belongs to the faster one.
    let body = format!(
        "{VIEW_SCENARIO}[[paper]]\ncase = {{ \"kernel.devzero\" = \"altix\" }}\n\
         metric = \"faults_per_s\"\nvalue = 1e7\nrole = \"validation\"\n\
         tolerance = 0.1\nat = \"max\"\nbound = \"below\"\n"
    );
    let f = write_scenario("peakbound", &body);
    let jsonl = numasim(&["run", f.to_str().unwrap(), "--format", "jsonl"]);
    let table = numasim(&["run", f.to_str().unwrap()]);
    std::fs::remove_dir_all(f.parent().unwrap()).ok();
    assert_eq!(jsonl.status.code(), Some(0), "{jsonl:?}");
    let text = String::from_utf8_lossy(&jsonl.stdout);
    let bound: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""paper_bound":"below""#))
        .collect();
    assert_eq!(bound.len(), 1, "{text}");
    assert!(bound[0].contains(r#""processes":4"#), "{}", bound[0]);
    // The other altix record keeps the contract's seven keys, unpublished.
    assert_eq!(text.matches(r#""paper":10000000.0"#).count(), 1, "{text}");
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("< 10000000"), "{table}");
}

const VIEW_SCENARIO: &str = "name = \"v\"\n[machine]\npreset = \"altix-512\"\n\
    [[case]]\nkernel.devzero = \"2.4\"\n[[case]]\nkernel.devzero = \"altix\"\n\
    [[run]]\nworkload = \"devzero\"\nbytes = \"4 MB\"\nprocesses = [1, 4]\n";

fn write_scenario(name: &str, body: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("numasim-view-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join(format!("{name}.toml"));
    std::fs::write(&f, body).unwrap();
    f
}

#[test]
fn a_view_prints_a_grid_and_writes_csv_without_changing_jsonl() {
    let view = "[[view]]\ntitle = \"Faults\"\nmetric = \"faults_per_s\"\nrows = \"processes\"\n\
                columns = \"kernel.devzero\"\nbaseline = \"altix\"\n";
    let f = write_scenario("ok", &format!("{VIEW_SCENARIO}{view}"));
    let plain = write_scenario("plain", VIEW_SCENARIO);
    let o = numasim(&["run", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("Faults (1/s)") && out.contains("loss vs altix, %"),
        "{out}"
    );
    // Deterministic, and JSONL is the same with or without the view.
    assert_eq!(o.stdout, numasim(&["run", f.to_str().unwrap()]).stdout);
    let a = numasim(&["run", f.to_str().unwrap(), "--format", "jsonl"]);
    let b = numasim(&["run", plain.to_str().unwrap(), "--format", "jsonl"]);
    let (a, b) = (
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout),
    );
    assert_eq!(a.replace("\"v\"", ""), b.replace("\"v\"", ""));
    let dir = f.parent().unwrap().join("out");
    let o = numasim(&["run", f.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let csv = std::fs::read_to_string(dir.join("v-view-1.csv")).unwrap();
    assert!(
        csv.starts_with(
            "processes,kernel.devzero=2.4,kernel.devzero=2.4 paper,\
             kernel.devzero=2.4 loss vs altix %,kernel.devzero=altix,kernel.devzero=altix paper\n"
        ),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(
        !dir.join("v-view-1.svg").exists(),
        "a table view draws no plot"
    );
    std::fs::remove_dir_all(f.parent().unwrap()).ok();
    std::fs::remove_dir_all(plain.parent().unwrap()).ok();
}

#[test]
fn a_plotted_view_writes_its_svg_without_changing_jsonl() {
    for plot in ["heatmap", "lines"] {
        let view = format!(
            "[[view]]\nmetric = \"faults_per_s\"\nrows = \"processes\"\n\
             columns = \"kernel.devzero\"\nplot = \"{plot}\"\n"
        );
        let f = write_scenario(plot, &format!("{VIEW_SCENARIO}{view}"));
        let plain = write_scenario(&format!("{plot}-plain"), VIEW_SCENARIO);
        let dir = f.parent().unwrap().join("out");
        let o = numasim(&["run", f.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let svg = std::fs::read_to_string(dir.join("v-view-1.svg")).expect("the view's plot");
        assert!(
            svg.starts_with("<svg ") && svg.ends_with("</svg>\n"),
            "{svg}"
        );
        let a = numasim(&["run", f.to_str().unwrap(), "--format", "jsonl"]);
        let b = numasim(&["run", plain.to_str().unwrap(), "--format", "jsonl"]);
        assert_eq!(a.stdout, b.stdout, "a plot changes no record");
        std::fs::remove_dir_all(f.parent().unwrap()).ok();
        std::fs::remove_dir_all(plain.parent().unwrap()).ok();
    }
}

#[test]
fn bad_views_exit_2_naming_the_key() {
    for (view, key, says) in [
        (
            "metric = \"faults_per_sec\"\nrows = \"processes\"\ncolumns = \"kernel.devzero\"\n",
            "view[0].metric",
            "did you mean `faults_per_s`",
        ),
        (
            "metric = \"faults_per_s\"\nrows = \"cpus\"\ncolumns = \"kernel.devzero\"\n",
            "view[0].rows",
            "allowed:",
        ),
        (
            "metric = \"faults_per_s\"\nrows = \"processes\"\ncolumns = \"kernel.devzero\"\nbaseline = \"2.6\"\n",
            "view[0].baseline",
            "2.4, altix",
        ),
        (
            "metric = \"faults_per_s\"\nrows = \"processes\"\ncolumns = \"kernel.devzero\"\nbetter = \"up\"\n",
            "view[0].better",
            "`higher`, `lower`",
        ),
        (
            "metric = \"faults_per_s\"\nrows = \"processes\"\ncolumns = \"kernel.devzero\"\ncolour = 1\n",
            "view[0].colour",
            "unknown key",
        ),
        (
            "metric = \"faults_per_s\"\nrows = \"processes\"\ncolumns = \"kernel.devzero\"\nplot = \"pie\"\n",
            "view[0].plot",
            "`table`, `heatmap`, `lines`",
        ),
        (
            "metric = \"faults_per_s\"\nrows = \"processes\"\ncolumns = \"kernel.devzero\"\nplot = \"heatmap\"\nx = \"faults_per_s\"\n",
            "view[0].x",
            "needs plot = \"lines\"",
        ),
        (
            "metric = \"faults_per_s\"\nrows = \"processes\"\ncolumns = \"kernel.devzero\"\nplot = \"lines\"\nx = \"fault_per_s\"\n",
            "view[0].x",
            "did you mean `faults_per_s`",
        ),
    ] {
        let f = write_scenario("bad", &format!("{VIEW_SCENARIO}[[view]]\n{view}"));
        let o = numasim(&["run", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{view}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("bad.toml") && err.contains(key) && err.contains(says),
            "{view}: {err}"
        );
        std::fs::remove_dir_all(f.parent().unwrap()).ok();
    }
}

#[test]
fn tlb_bad_input_exits_2_naming_file_and_key() {
    let dir = std::env::temp_dir().join(format!("numasim-cli-tlb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bigmem.toml");
    std::fs::write(
        &f,
        "[machine]\npreset = \"bgp-node\"\n[kernel]\nflavour = \"bigmem\"\nbigmem_mb = 300\n\
         [[run]]\nworkload = \"random-read\"\nsize = \"4 MB\"\n",
    )
    .unwrap();
    let o = numasim(&["run", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bigmem.toml") && err.contains("kernel.bigmem_mb"),
        "{err}"
    );
    assert!(err.contains("multiple of 256"), "{err}");
    for set in [
        "kernel.page_size=8 KiB",
        "kernel=linux-8k",
        "kernel.tlb_device_entries=70",
    ] {
        let o = numasim(&["replay", "bgp-random-access", "--set", set]);
        assert_eq!(o.status.code(), Some(2), "{set}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("kernel."), "{set}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bgp_replay_writes_a_bandwidth_by_size_plot() {
    let dir = std::env::temp_dir().join(format!("numasim-cli-svg-{}", std::process::id()));
    let o = numasim(&[
        "replay",
        "bgp-random-access",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let svg = std::fs::read_to_string(dir.join("bgp-random-access-random_mbps.svg")).unwrap();
    assert!(svg.contains("size (log scale)") && svg.contains("kernel=linux-4k"));
    assert!(svg.contains(">16 MB<"), "sizes labelled as written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cases_name_step_keys_they_do_not_set_by_their_value_not_null() {
    // Each case overrides a different step key; the other keeps the step's.
    let f = write_scenario(
        "nulls",
        "name = \"overrides\"\n[machine]\npreset = \"epyc-2s-nps4\"\n\
         [[case]]\nbytes = \"1 GiB\"\n[[case]]\npolicy = \"interleave\"\n\
         [[run]]\nworkload = \"touch\"\nnodes = [0, 1]\nbytes = \"3 GiB\"\npolicy = \"local\"\n",
    );
    let o = numasim(&["run", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("null"), "{out}");
    assert!(out.contains("bytes = 1 GiB, policy = local"), "{out}");
    assert!(out.contains("bytes = 3 GiB, policy = interleave"), "{out}");
    std::fs::remove_dir_all(f.parent().unwrap()).ok();
}

#[test]
fn timeline_files_are_named_by_what_tells_cases_apart() {
    let dir = std::env::temp_dir().join(format!("numasim-cli-names-{}", std::process::id()));
    let o = numasim(&["replay", "altix-bigio", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("timeline"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "altix-bigio-default-write-timeline.csv",
            "altix-bigio-default-write-timeline.svg",
            "altix-bigio-page-cache-limit-write-timeline.csv",
            "altix-bigio-page-cache-limit-write-timeline.svg",
            "altix-bigio-swap-quarter-write-timeline.csv",
            "altix-bigio-swap-quarter-write-timeline.svg",
        ]
    );
    let svg = std::fs::read_to_string(dir.join("altix-bigio-default-write-timeline.svg")).unwrap();
    assert!(svg.contains("memory per node over time (config = default)</text>"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pci_bad_input_exits_2_naming_file_and_key() {
    let dir = std::env::temp_dir().join(format!("numasim-cli-pci-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, step, key) in [
        (
            "method.toml",
            "workload = \"pio-flush\"\npio_flush = \"fence\"\n",
            "pio_flush",
        ),
        (
            "size.toml",
            "workload = \"dma-iops\"\nio_size = -512\n",
            "io_size",
        ),
        (
            "node.toml",
            "workload = \"dma-iops\"\ndevice_node = 4096\n",
            "device_node",
        ),
    ] {
        let f = dir.join(name);
        std::fs::write(
            &f,
            format!("[machine]\npreset = \"altix-512\"\n[[run]]\n{step}"),
        )
        .unwrap();
        let o = numasim(&["run", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(name) && err.contains(key), "{name}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn run_report_writes_one_page_for_a_users_scenario() {
    // No [report] hints: the figures are chosen from the records.
    let f = write_scenario(
        "report-mine",
        "name = \"mine\"\n[machine]\npreset = \"altix-hashdist-16\"\n[[case]]\nkernel.hashdist = 0\n[[case]]\nkernel.hashdist = 1\n[[run]]\nworkload = \"meminfo\"\n",
    );
    let dir = std::env::temp_dir().join(format!("numasim-run-report-{}", std::process::id()));
    let out = numasim(&[
        "run",
        f.to_str().unwrap(),
        "--report",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert_eq!(html.matches("<section class=\"experiment\"").count(), 1);
    // meminfo reports per node: the default figure is per-node bars.
    assert!(html.contains("— per node;"), "no per-node figure");
    assert!(html.contains("kernel.hashdist=0") && html.contains("kernel.hashdist=1"));
    let _ = std::fs::remove_dir_all(&dir);
    // Neither ids nor --all: bad input.
    let out = numasim(&["report", "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = numasim(&[
        "report",
        "no-such-experiment",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no experiment"));
    assert!(!dir.exists(), "a refused report wrote its folder");
}

/// `probe --from` refits a saved run; a run cut short or hand-edited into
/// nonsense exits 2 naming the file and the line, and a whole run fits.
#[test]
fn probe_from_a_broken_run_exits_2_naming_file_and_line() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../numasim-probe/tests/fixtures/runs/vm-2cpu-quick-1.jsonl");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let dir = std::env::temp_dir().join(format!("numasim-cli-from-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, &text[..text.len() / 3]).unwrap();
    let edited = dir.join("edited.jsonl");
    std::fs::write(
        &edited,
        text.replacen("\"metric\":\"copy_mbps\"", "\"metric\":7", 1),
    )
    .unwrap();
    for f in [&cut, &edited] {
        let o = numasim(&["probe", "--from", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", f.display());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(f.to_str().unwrap()) && err.contains("line "),
            "{err}"
        );
    }
    let out = dir.join("host.toml");
    let o = numasim(&[
        "probe",
        "--from",
        fixture.to_str().unwrap(),
        "--validate",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&out).unwrap().contains("mlp = "));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn strict_replay_exits_1_on_a_row_outside_tolerance_and_0_otherwise() {
    // bgp-noise: every scored row holds.
    let o = numasim(&["replay", "bgp-noise", "--strict"]);
    assert_eq!(o.status.code(), Some(0));
    // AIM7's stock scheduler at 4,000 tasks is a missed calibration target
    // (the live lock at 256 CPUs, the former example, holds since issue 34).
    let o = numasim(&["replay", "wildfire-aim7", "--strict"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--strict") && err.contains("wildfire-aim7 (calibration)"),
        "{err}"
    );
    // The table is printed in full before the verdict.
    assert!(String::from_utf8_lossy(&o.stdout).contains("jobs_per_min"));
}
