//! What a new user meets in the first hour (issue 21): the workload
//! reference, errors that name what is wrong, --set against published
//! values, machine files checked on their own, progress, output polish.

use std::path::PathBuf;
use std::process::Command;

fn numasim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_numasim"))
        .args(args)
        .output()
        .expect("runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numasim-newcomer-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn workloads_lists_every_workload_and_describes_one() {
    let o = numasim(&["workloads"]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    for w in ["touch", "write", "spinlock", "zcb", "ring-copy"] {
        assert!(out.lines().any(|l| l.starts_with(w)), "{w}: {out}");
    }
    let o = numasim(&["workloads", "touch"]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    for want in [
        "bytes",
        "size (B)",
        "required",
        "policy",
        "\"local\"",
        "touched_kb",
        "kB",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    let o = numasim(&["workloads", "tuoch"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("Did you mean `touch`?"));
}

#[test]
fn knobs_lists_every_knob_and_describes_one() {
    let o = numasim(&["knobs"]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    for k in [
        "hashdist",
        "dirty_ratio",
        "spinlock",
        "runqueue",
        "tlb_purge",
        "flavour",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(k)),
            "{k}: {out}"
        );
    }
    let o = numasim(&["knobs", "dirty_ratio"]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    for want in ["kernel.dirty_ratio", "allowed: 1..100", "default: 40"] {
        assert!(out.contains(want), "{want}: {out}");
    }
    let o = numasim(&["knobs", "dirty_ratoi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("Did you mean `dirty_ratio`?"));
}

#[test]
fn every_workloads_example_scenario_runs() {
    // The example `numasim workloads NAME` prints is a whole scenario.
    let d = tmp("examples");
    let list = text(&numasim(&["workloads"]).stdout);
    let names: Vec<&str> = list
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 20, "{list}");
    for n in ["touch", "zcb", "spinlock"] {
        let out = text(&numasim(&["workloads", n]).stdout);
        let ex = out.split("example scenario:\n").nth(1).expect(n);
        let f = d.join(format!("{n}.toml"));
        std::fs::write(&f, ex).unwrap();
        let o = numasim(&["run", f.to_str().unwrap(), "--format", "jsonl"]);
        assert_eq!(o.status.code(), Some(0), "{n}: {}", text(&o.stderr));
    }
}

fn run_scenario(name: &str, body: &str) -> std::process::Output {
    let d = tmp(name);
    let f = d.join("s.toml");
    std::fs::write(&f, body).unwrap();
    numasim(&["run", f.to_str().unwrap()])
}

#[test]
fn a_misspelt_required_key_is_named_beside_the_missing_one() {
    let o = run_scenario(
        "byte",
        "name = \"t\"\n[machine]\npreset = \"altix-256g\"\n[[run]]\nworkload = \"touch\"\nbyte = \"1 GB\"\nthreads = 4\n",
    );
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("unknown key `byte` (did you mean `bytes`?)"),
        "{e}"
    );
    assert!(e.contains("missing `bytes`"), "{e}");
    assert!(e.contains("numasim workloads touch"), "{e}");
}

#[test]
fn a_step_key_under_kernel_says_where_it_belongs() {
    let o = run_scenario(
        "policy",
        "name = \"t\"\n[machine]\npreset = \"altix-256g\"\n[kernel]\npolicy = \"local\"\n[[run]]\nworkload = \"meminfo\"\n",
    );
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("kernel.policy"), "{e}");
    assert!(
        e.contains("a key of a [[run]] step, not of [kernel]: workload touch"),
        "{e}"
    );
}

#[test]
fn a_misspelt_paper_metric_is_refused_at_load_time() {
    let o = run_scenario(
        "paper",
        "name = \"t\"\n[machine]\npreset = \"altix-256g\"\n[[run]]\nworkload = \"meminfo\"\n\
         [[paper]]\ncase = { node = 0 }\nmetric = \"mem_usd_kb\"\nvalue = 1\nrole = \"validation\"\n",
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains("paper[0].metric"), "{e}");
    assert!(e.contains("did you mean `mem_used_kb`?"), "{e}");
}

#[test]
fn a_set_that_changes_the_machine_makes_paper_rows_not_comparable() {
    let o = numasim(&["replay", "altix-bigio", "--set", "machine.swap_gb=32"]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    assert!(!out.contains("inf%"), "{out}");
    assert!(
        out.contains("not comparable: a --set changed this case"),
        "{out}"
    );
    let summary = out.split("\naltix-bigio\n").nth(1).expect("summary");
    assert!(summary.contains("not comparable   5 rows"), "{summary}");
    assert!(!summary.contains("within tolerance"), "{summary}");
    // JSONL keeps the published value and says it is not comparable.
    let o = numasim(&[
        "replay",
        "altix-bigio",
        "--set",
        "machine.swap_gb=32",
        "--format",
        "jsonl",
    ]);
    let j = text(&o.stdout);
    let marked = j
        .lines()
        .filter(|l| l.ends_with(r#","comparable":false}"#))
        .count();
    assert!(marked > 0, "{j}");
    assert!(j.lines().all(|l| !l.contains("\"paper\":")
        || l.contains("\"paper\":null")
        || l.contains("comparable")));
}

#[test]
fn a_set_to_the_same_value_or_a_seed_keeps_rows_comparable() {
    let out = text(&numasim(&["replay", "hashdist-boot", "--set", "seed=2"]).stdout);
    assert!(!out.contains("not comparable"), "{out}");
    // --set wins over [[case]]: kernel.hashdist=0 leaves the hashdist=0 case
    // as it was (still scored) and changes the hashdist=1 case (set apart).
    let out = text(&numasim(&["replay", "hashdist-boot", "--set", "kernel.hashdist=0"]).stdout);
    let summary = out.split("\nhashdist-boot\n").nth(1).expect("summary");
    assert!(summary.contains("calibration"), "{summary}");
    assert!(summary.contains("not comparable"), "{summary}");
}

#[test]
fn replay_all_with_a_set_counts_not_comparable_rows_apart() {
    let o = numasim(&["replay", "--all", "--set", "kernel.hashdist=1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let totals = out.split("== Totals by role").nth(1).expect("totals");
    assert!(totals.contains("  not comparable "), "{totals}");
    assert!(totals.contains("rows not comparable (--set)"), "{totals}");
    // The rows set apart are in no role's count: fewer than without the --set.
    assert!(!totals.contains("calibration 39/39"), "{totals}");
}

#[test]
fn readme_says_how_to_get_numasim_on_path() {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    // It starts with exactly the two set-up commands.
    let first = readme
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    assert_eq!(first.lines().count(), 2, "{first}");
    // The PATH line links the binary the first command built (issue 33:
    // `cargo install --path` built it all again).
    let install = readme
        .find("ln -sf \"$PWD/target/release/numasim\"")
        .expect("README says how to put the built numasim on PATH");
    let first_bare = readme.find("$ numasim ").expect("a bare numasim example");
    assert!(
        install < first_bare,
        "the install line comes before the first bare `numasim`"
    );
}

#[test]
fn docs_cite_no_private_spec_files() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["docs", "machines", "experiments", "examples"] {
        for e in std::fs::read_dir(repo(dir)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    files.push(repo("README.md").into());
    for f in files {
        let t = std::fs::read_to_string(&f).unwrap_or_default();
        for (i, line) in t.lines().enumerate() {
            assert!(
                !line.contains("spec/"),
                "{}:{}: cites a file users do not have: {line}",
                f.display(),
                i + 1
            );
        }
    }
}

#[test]
fn every_member_inherits_the_declared_minimum_toolchain() {
    let root = std::fs::read_to_string(repo("Cargo.toml")).unwrap();
    let v = root
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .expect("workspace rust-version")
        .trim_end_matches('"');
    for m in ["numasim", "numasim-probe", "numasim-cli", "numasim-py"] {
        let t = std::fs::read_to_string(repo(&format!("crates/{m}/Cargo.toml"))).unwrap();
        assert!(
            t.contains("rust-version.workspace = true"),
            "{m} does not inherit"
        );
    }
    // No locked dependency needs a newer toolchain than the one declared.
    let o = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(repo(""))
        .output()
        .expect("cargo metadata");
    if !o.status.success() {
        return; // no registry cache here: the inheritance check above still ran
    }
    let meta: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let parse = |s: &str| -> Vec<u32> { s.split('.').map(|x| x.parse().unwrap_or(0)).collect() };
    let declared = parse(v);
    let mut max = (vec![0], String::new());
    for p in meta["packages"].as_array().unwrap() {
        if let Some(rv) = p["rust_version"].as_str() {
            let x = parse(rv);
            if x > max.0 {
                max = (x, p["name"].as_str().unwrap_or("").to_string());
            }
        }
    }
    assert!(
        max.0 <= declared,
        "{} needs {:?}, rust-version says {v}",
        max.1,
        max.0
    );
}

#[test]
fn an_interrupted_probe_exits_130_with_a_plain_message() {
    let d = tmp("probe");
    let child = Command::new(env!("CARGO_BIN_EXE_numasim"))
        .args(["probe", "--quick", "--format", "jsonl"])
        .current_dir(&d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawns");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let o = child.wait_with_output().unwrap();
    if !killed.is_ok_and(|s| s.success()) || o.status.code() == Some(0) {
        return; // no `kill` here, or the probe finished first: nothing to check
    }
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(e.contains("numasim: probe interrupted"), "{e}");
    assert!(!e.contains("internal error"), "{e}");
}

#[test]
fn replay_all_on_a_non_terminal_stderr_prints_one_line_per_experiment() {
    // Test harness stderr is a pipe, never a terminal.
    let o = numasim(&["replay", "--all", "--format", "jsonl"]);
    assert_eq!(o.status.code(), Some(0));
    let e = text(&o.stderr);
    let lines: Vec<&str> = e
        .lines()
        .filter(|l| l.contains("] ") && l.contains(" done; "))
        .collect();
    let n = numasim::experiments::EXPERIMENTS.len();
    assert_eq!(lines.len(), n, "{e}");
    assert!(
        lines[0].starts_with(&format!("numasim: [1/{n}] hashdist-boot done;")),
        "{e}"
    );
    assert!(lines.iter().all(|l| l.ends_with(" s left")), "{e}");
    // What a built-in machine leaves to defaults is said once per machine
    // and cause, however many experiments run on it.
    let warned: Vec<&str> = e
        .lines()
        .filter(|l| l.starts_with("numasim: warning:"))
        .filter_map(|l| l.find("on machine ").map(|i| &l[i..]))
        .collect();
    let mut once = warned.clone();
    once.sort_unstable();
    once.dedup();
    assert_eq!(once.len(), warned.len(), "{e}");
}

#[test]
fn machines_checks_a_machine_file_and_names_it_in_errors() {
    let d = tmp("machine");
    let f = d.join("my-machine.toml");
    let preset = numasim(&["machines", "altix-512"]);
    std::fs::write(&f, &preset.stdout).unwrap();
    let o = numasim(&["machines", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("name = \"altix-512\""));
    assert!(text(&o.stderr).contains("a valid machine `altix-512`: 256 nodes, 512 CPUs"));
    let bad = text(&preset.stdout).replace("cpus_per_node = 2", "cpus_per_node = \"two\"");
    std::fs::write(&f, bad).unwrap();
    let o = numasim(&["machines", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("my-machine.toml") && e.contains("cpus_per_node"),
        "{e}"
    );
    assert!(!e.contains("no preset named"), "{e}");
}

#[test]
fn machines_list_fits_its_columns() {
    let out = text(&numasim(&["machines"]).stdout);
    let header = out.lines().next().unwrap();
    let desc_col = header.find("description").unwrap();
    for l in out.lines().skip(1) {
        // Every row's description starts in the header's column: no field overflowed.
        let chars: Vec<char> = l.chars().collect();
        assert!(
            chars[desc_col - 2] == ' ' && chars[desc_col - 1] == ' ',
            "{l}"
        );
        assert!(!l.contains("KiB "), "{l}");
    }
}

#[test]
fn out_says_what_it_wrote_and_a_title_without_description_has_no_dash() {
    let d = tmp("out");
    let f = d.join("s.toml");
    std::fs::write(
        &f,
        "name = \"t\"\n[machine]\npreset = \"altix-hashdist-16\"\n[[run]]\nworkload = \"meminfo\"\n",
    )
    .unwrap();
    let out = d.join("res");
    let o = numasim(&["run", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let e = text(&o.stderr);
    assert!(
        e.contains("wrote ") && e.contains("t.jsonl") && e.contains("t.csv"),
        "{e}"
    );
    // Each file once: the count said is the count in the folder.
    let n = std::fs::read_dir(&out).unwrap().count();
    assert!(e.contains(&format!("wrote {n} files to")), "{e}");
    let title = text(&o.stdout).lines().next().unwrap().to_string();
    assert_eq!(title, "== t");
}
