//! Regressions from hostile and careless input (each failed before the fix):
//! `--out` escaping its folder, unbounded allocation, silent truncation of
//! numbers, errors naming the wrong file, and a panic on a closed pipe.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn numasim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numasim"))
        .args(args)
        .output()
        .expect("runs")
}

/// A fresh folder per test.
fn folder(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hardening-{test}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Everything under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(base).unwrap().display().to_string());
            if p.is_dir() {
                walk(base, &p, out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

const BODY: &str = "[machine]\npreset = \"altix-hashdist-16\"\n[[run]]\nworkload = \"meminfo\"\n";

#[test]
fn out_never_writes_outside_its_folder() {
    let d = folder("out");
    let abs = d.join("abs").display().to_string();
    for (i, name) in ["", "../escaped", &abs, "a/b", "..", "x\u{1}y"]
        .iter()
        .enumerate()
    {
        let f = d.join(format!("s{i}.toml"));
        let quoted = toml::Value::String(name.to_string()).to_string();
        std::fs::write(&f, format!("name = {quoted}\n{BODY}")).unwrap();
        let before = tree(&d);
        let o = numasim(&[
            "run",
            f.to_str().unwrap(),
            "--out",
            d.join("out").to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "name {name:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("s{i}.toml")) && err.contains("key `name`"),
            "name {name:?}: {err}"
        );
        assert_eq!(tree(&d), before, "name {name:?} wrote files");
    }
    // A safe name writes only direct children of --out, named after it.
    let f = d.join("ok.toml");
    std::fs::write(&f, format!("name = \"a.b\"\n{BODY}")).unwrap();
    let out = d.join("out");
    let o = numasim(&["run", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let files = tree(&out);
    assert!(files.contains(&"a.b.jsonl".to_string()), "{files:?}");
    assert!(files
        .iter()
        .all(|f| f.starts_with("a.b") && !f.contains('/')));
    // A symbolic link planted in --out is not written through.
    #[cfg(unix)]
    {
        let target = d.join("target.txt");
        std::fs::write(&target, "keep").unwrap();
        std::fs::remove_file(out.join("a.b.csv")).unwrap();
        std::os::unix::fs::symlink(&target, out.join("a.b.csv")).unwrap();
        let o = numasim(&["run", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}

#[test]
fn huge_tlb_is_refused_before_allocating() {
    let o = numasim(&[
        "replay",
        "bgp-stream-copy",
        "--set",
        "machine.tlb.entries=2147483648",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("machine.tlb.entries") && err.contains("allowed 1..65536"),
        "{err}"
    );
    let o = numasim(&[
        "replay",
        "bgp-stream-copy",
        "--set",
        "machine.tlb.entries=100000000",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn counts_that_cost_time_are_bounded() {
    let d = folder("counts");
    for (step, key) in [
        (
            "workload = \"touch\"\nthreads = 1000000\nbytes = \"4 KiB\"",
            "threads",
        ),
        ("workload = \"gettimeofday\"\nthreads = [20000]", "threads"),
        (
            "workload = \"gettimeofday\"\nthreads = [512]\ncalls = 100001",
            "calls",
        ),
        (
            "workload = \"devzero\"\nprocesses = [4096]\nbytes = \"4 MiB\"\nsample = 100000",
            "sample",
        ),
        (
            "workload = \"fault-touch\"\nthreads = [512]\nbytes = \"1 GiB\"\nsample = 100000",
            "sample",
        ),
        (
            "workload = \"spinlock\"\ncpus = 4096\nduration_us = 1000000",
            "duration_us",
        ),
    ] {
        let f = d.join("s.toml");
        std::fs::write(
            &f,
            format!(
                "name = \"big\"\n[machine]\nnodes = 1024\ncpus_per_node = 1024\n\
                 mem_per_node = \"64 GiB\"\n[[run]]\n{step}\n"
            ),
        )
        .unwrap();
        let o = numasim(&["run", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{step}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("run[0].{key}")) && err.contains("allowed"),
            "{step}: {err}"
        );
    }
}

#[test]
fn numbers_past_u32_are_refused_not_wrapped() {
    let d = folder("wrap");
    // 2^32 + 64 used to run exactly as 64; each key is reported with its range.
    for (table, key, value) in [
        ("tlb", "entries", "4294967360"),
        ("tlb", "kernel_entries", "4294967296"),
        ("tlb", "device_entries", "4294967297"),
        ("tlb", "walk_levels", "4294967300"),
        ("distance", "local", "4294967306"),
        ("distance", "remote", "4294967316"),
        ("boot", "boot_node", "4294967296"),
        ("cpu", "cache_line", "4294967360"),
        ("io", "io_nodes", "[4294967296]"),
        ("io", "controllers", "4294967296"),
    ] {
        let f = d.join("s.toml");
        std::fs::write(
            &f,
            format!(
                "name = \"w\"\n[machine]\nnodes = 2\ncpus_per_node = 2\nmem_per_node = \"1 GiB\"\n\
                 [machine.{table}]\n{key} = {value}\n[[run]]\nworkload = \"meminfo\"\n"
            ),
        )
        .unwrap();
        let o = numasim(&["run", f.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{table}.{key}: {err}");
        assert!(
            err.contains(&format!("machine.{table}.{key}")) && err.contains("allowed"),
            "{table}.{key}: {err}"
        );
    }
    let o = numasim(&[
        "replay",
        "bgp-stream-copy",
        "--set",
        "machine.tlb.entries=4294967296",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        !err.contains("0 entries") && err.contains("allowed 1..65536"),
        "{err}"
    );
}

#[test]
fn machine_file_errors_name_the_machine_file() {
    let d = folder("machine-file");
    let preset = String::from_utf8(numasim(&["machines", "altix-256g"]).stdout).unwrap();
    let with = |from: &str, to: &str| {
        let mut lines: Vec<String> = preset.lines().map(str::to_string).collect();
        let i = lines.iter().position(|l| l.starts_with(from)).unwrap();
        lines[i] = to.to_string();
        lines.join("\n")
    };
    std::fs::write(d.join("bad-machine.toml"), with("nodes =", "nodes = -1")).unwrap();
    std::fs::write(
        d.join("inf.toml"),
        with("mem_per_node =", "mem_per_node = \"inf GB\""),
    )
    .unwrap();
    for (machine, extra, key) in [
        ("bad-machine.toml", "", "`nodes`"),
        // The scenario's `memory` replaces `mem_per_node` in the merge; the
        // file is still checked whole.
        ("inf.toml", "memory = \"64 GB\"\n", "`mem_per_node`"),
    ] {
        let f = d.join("s.toml");
        std::fs::write(
            &f,
            format!(
                "name = \"m\"\n[machine]\npreset = \"{machine}\"\n{extra}\
                 [[run]]\nworkload = \"meminfo\"\n"
            ),
        )
        .unwrap();
        let o = numasim(&["run", f.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{machine}: {err}");
        assert!(
            err.contains(machine) && err.contains(key) && !err.contains("s.toml"),
            "{machine}: {err}"
        );
    }
}

#[test]
fn a_closed_stdout_ends_quietly() {
    for args in [
        &["replay", "--list"][..],
        &["machines"],
        &["replay", "hashdist-boot", "--format", "jsonl"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_numasim"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the first line, as `head -0` would.
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    }
}

#[test]
fn boot_table_bad_input_exits_2_naming_the_key() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "dmesg",
                "--machine",
                "xeon-4s",
                "--set",
                "kernel.version=5.15",
            ],
            "nearest known: 5.4",
        ),
        (
            &[
                "dmesg",
                "--machine",
                "xeon-4s",
                "--set",
                "kernel.thash_entries=4294967296",
            ],
            "kernel.thash_entries",
        ),
        (
            &[
                "dmesg",
                "--machine",
                "xeon-4s",
                "--set",
                "machine.page_size=\"64 KiB\"",
            ],
            "page_size",
        ),
        (&["dmesg", "hashdist-boot", "--case", "9"], "allowed 1..=3"),
        (
            &["bootlog", "/nonexistent/boot.txt"],
            "/nonexistent/boot.txt",
        ),
        (&["bootlog", "-", "--arch", "sparc"], "ppc64le"),
    ];
    for (args, want) in cases {
        let o = numasim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}
