//! Bad input is refused with the file, the key and what is allowed; huge
//! machines either run or are refused with a reason. Never a panic.

use numasim::error::InputError;
use numasim::scenario::{parse_set, Scenario};

fn load(body: &str) -> Result<Scenario, InputError> {
    Scenario::from_str(body, "test.toml", None)
}

fn err(body: &str) -> InputError {
    load(body).expect_err("should be refused")
}

const OK: &str =
    "name = \"t\"\n[machine]\npreset = \"altix-hashdist-16\"\n[[run]]\nworkload = \"meminfo\"\n";

#[test]
fn a_good_scenario_loads() {
    load(OK).unwrap();
}

#[test]
fn unknown_keys_name_the_key_and_suggest() {
    let e = err(&OK.replace("[[run]]", "[kernel]\nhashdsit = 1\n[[run]]"));
    assert_eq!(e.file.as_deref(), Some("test.toml"));
    assert_eq!(e.key.as_deref(), Some("kernel.hashdsit"));
    assert!(e.message.contains("Did you mean `hashdist`"), "{e}");
    let e = err(&OK.replace(
        "preset = \"altix-hashdist-16\"",
        "preset = \"altix-hashdist-16\"\nnodez = 3",
    ));
    assert_eq!(e.key.as_deref(), Some("machine.nodez"), "{e}");
    let e = err(&OK.replace("name = \"t\"", "name = \"t\"\nsed = 3"));
    assert!(e.message.contains("Did you mean `seed`"), "{e}");
}

#[test]
fn missing_preset_lists_the_presets() {
    let e = err(&OK.replace("altix-hashdist-16", "altix-9000"));
    assert!(e.message.contains("altix-512"), "{e}");
}

#[test]
fn bad_machines_are_refused() {
    let m = |extra: &str| OK.replace("preset = \"altix-hashdist-16\"", extra);
    let e = err(&m("nodes = 2\ncpus_per_node = 1\nmem_per_node = \"1 GiB\"\n[machine.distance]\nmatrix = [[10, 20], [21, 10]]"));
    assert!(e.message.contains("not symmetric"), "{e}");
    let e = err(&m("nodes = 2\ncpus_per_node = 1\nmem_per_node = \"1 GiB\"\n[machine.distance]\nmatrix = [[10, 20]]"));
    assert!(e.message.contains("2×2"), "{e}");
    let e = err(&m("nodes = 0\ncpus_per_node = 1\nmem_per_node = \"1 GiB\""));
    assert_eq!(e.key.as_deref(), Some("machine.nodes"), "{e}");
    let e = err(&m(
        "nodes = 2\ncpus_per_node = 1\nmem_per_node = \"-4 GiB\"",
    ));
    assert!(e.key.as_deref() == Some("machine.mem_per_node"), "{e}");
    let e = err(&m("nodes = 2\ncpus_per_node = 1\nmem_per_node = \"lots\""));
    assert!(e.message.contains("not a size"), "{e}");
    let e = err(&m("nodes = 2\ncpus_per_node = 1\nmem_per_node = -4"));
    assert!(e.message.contains("negative"), "{e}");
}

#[test]
fn more_memory_than_exists_is_refused() {
    let body = OK.replace(
        "workload = \"meminfo\"",
        "workload = \"touch\"\nthreads = 4\nbytes = \"20 GiB\"",
    );
    let e = err(&body);
    assert!(
        e.message.contains("more memory than the machine has"),
        "{e}"
    );
}

#[test]
fn set_on_unknown_keys_is_refused() {
    let sc = load(OK).unwrap();
    let bad = parse_set("kernel.hashdits=1").unwrap();
    let e = sc.resolve(0, &[bad]).unwrap_err();
    assert!(e.message.contains("Did you mean `hashdist`"), "{e}");
    let bad = parse_set("kernal.hashdist=1").unwrap();
    assert!(sc
        .resolve(0, &[bad])
        .unwrap_err()
        .message
        .contains("Did you mean `kernel`"));
    assert!(parse_set("no-equals").is_err());
}

#[test]
fn absurd_machines_run_or_are_refused_with_a_reason() {
    let m = |extra: &str| OK.replace("preset = \"altix-hashdist-16\"", extra);
    // A million CPUs at two per node is half a million nodes: refused, with why.
    let e = err(&m(
        "nodes = 500000\ncpus_per_node = 2\nmem_per_node = \"1 GiB\"",
    ));
    assert!(e.message.contains("distance matrix"), "{e}");
    // A million CPUs on 4096 nodes and a petabyte: runs.
    let sc = load(&m(
        "nodes = 4096\ncpus_per_node = 244\nmemory = \"1 PiB\"\n[machine.distance]\nremote = 20",
    ))
    .unwrap();
    let recs = numasim::scenario::run::run(&sc, &[]).unwrap();
    assert!(recs.iter().any(|r| r.metric == "mem_total_kb"));
    // 16 EiB and beyond cannot even be written down.
    let e = err(&m("nodes = 2\ncpus_per_node = 1\nmemory = \"99 EiB\""));
    assert!(e.message.contains("16 EiB"), "{e}");
}

const CONTENTION: &str =
    "name = \"t\"\n[machine]\npreset = \"wildfire-gs320\"\n[[run]]\nworkload = \"spinlock\"\ncpus = 32\n";

#[test]
fn contention_knobs_and_counts_are_checked() {
    // A lock kind that does not exist: the key and the allowed kinds.
    let e = err(&CONTENTION.replace("[[run]]", "[kernel]\nspinlock = \"ticket\"\n[[run]]"));
    assert_eq!(e.key.as_deref(), Some("kernel.spinlock"), "{e}");
    assert!(
        e.message.contains("tas") && e.message.contains("fair"),
        "{e}"
    );
    let e = err(&CONTENTION.replace("[[run]]", "[kernel]\nanon_fault = \"cmpxchg\"\n[[run]]"));
    assert!(e.message.contains("cmpxchg-pte"), "{e}");
    // Zero threads, and more threads than the machine has CPUs.
    let g = |t: &str| {
        CONTENTION.replace(
            "workload = \"spinlock\"\ncpus = 32",
            &format!("workload = \"gettimeofday\"\nthreads = {t}"),
        )
    };
    let e = err(&g("0"));
    assert_eq!(e.key.as_deref(), Some("run[0].threads"), "{e}");
    assert!(e.message.contains("allowed 1..32"), "{e}");
    let e = err(&g("[1, 2, 64]"));
    assert!(e.message.contains("64") && e.message.contains("32"), "{e}");
    let e = err(&CONTENTION.replace("cpus = 32", "cpus = 33"));
    assert!(e.message.contains("allowed 1..32"), "{e}");
    // Machine parameters of the new tables.
    let e = err(&CONTENTION.replace(
        "preset = \"wildfire-gs320\"",
        "preset = \"wildfire-gs320\"\ntimer = { hz = 0 }",
    ));
    assert_eq!(e.key.as_deref(), Some("machine.timer.hz"), "{e}");
    let e = err(&CONTENTION.replace(
        "preset = \"wildfire-gs320\"",
        "preset = \"wildfire-gs320\"\ncoherence = { directory_nz = 1.0 }",
    ));
    assert!(e.message.contains("directory_ns"), "{e}");
    let e = err(&CONTENTION.replace(
        "preset = \"wildfire-gs320\"",
        "preset = \"wildfire-gs320\"\ntimer = { tick_phase = \"random\" }",
    ));
    assert_eq!(e.key.as_deref(), Some("machine.timer.tick_phase"), "{e}");
    assert!(e.message.contains("bringup"), "{e}");
}

const VM: &str =
    "name = \"t\"\n[machine]\nnodes = 4\ncpus_per_node = 2\nmem_per_node = \"256 MiB\"\n\
                  swap_gb = 0.25\nio = { disks = [ { count = 1, mibps = 100.0 } ] }\n[kernel]\n\
                  [[run]]\nworkload = \"hold\"\nbytes = \"512 MiB\"\n\
                  [[run]]\nworkload = \"write\"\nbytes = \"256 MiB\"\n";

fn vm_err(kernel: &str) -> InputError {
    err(&VM.replace("[kernel]\n", &format!("[kernel]\n{kernel}\n")))
}

#[test]
fn vm_knobs_are_checked() {
    load(VM).unwrap();
    // A limit above all of memory, a negative threshold: percents 0..100.
    let e = vm_err("reclaim_list = 1\ntoss = 1\ntoss_fast = 1\npage_cache_limit = 150");
    assert_eq!(e.key.as_deref(), Some("kernel.page_cache_limit"), "{e}");
    let e = vm_err(
        "reclaim_list = 1\ntoss = 1\ntoss_fast = 1\npage_cache_limit = 10\n\
         page_cache_limit_threshold = -5",
    );
    assert_eq!(
        e.key.as_deref(),
        Some("kernel.page_cache_limit_threshold"),
        "{e}"
    );
    // The limit works through toss_fast(): without it, say so.
    let e = vm_err("page_cache_limit = 10");
    assert!(e.message.contains("toss_fast"), "{e}");
    let e = vm_err("oom = \"2.6\"");
    assert_eq!(e.key.as_deref(), Some("kernel.oom"), "{e}");
    assert!(e.message.contains("swap-failure"), "{e}");
    let e = vm_err("vm_swappiness = 101");
    assert!(e.message.contains("0..100"), "{e}");
    let e = vm_err("zone_reclaim_mode = 8");
    assert!(e.message.contains("0..7"), "{e}");
    let e = vm_err("page_cache_throttle_ms = 0");
    assert!(e.message.contains("1..60000"), "{e}");
}

#[test]
fn swap_needs_a_disk_and_a_size() {
    let no_disk = VM.replace("io = { disks = [ { count = 1, mibps = 100.0 } ] }\n", "");
    let e = err(&no_disk);
    assert_eq!(e.key.as_deref(), Some("machine.swap_gb"), "{e}");
    assert!(e.message.contains("disk"), "{e}");
    let e = err(&VM.replace("swap_gb = 0.25", "swap_gb = -1"));
    assert_eq!(e.key.as_deref(), Some("machine.swap_gb"), "{e}");
}

#[test]
fn a_job_larger_than_memory_and_swap_is_refused_at_run_time() {
    // 2 GiB held on 1 GiB of memory and 256 MiB of swap cannot be placed:
    // an input error naming the step, not a panic and not a silent clamp.
    let sc = load(&VM.replace("bytes = \"512 MiB\"", "bytes = \"2 GiB\"")).unwrap();
    match numasim::scenario::run::run(&sc, &[]) {
        Err(numasim::error::Error::Input(e)) => {
            assert!(e.to_string().contains("do not fit"), "{e}");
            // A run-time error names the file and the step, as load-time ones do.
            assert_eq!(e.file.as_deref(), Some("test.toml"), "{e}");
            assert!(
                e.key.as_deref().is_some_and(|k| k.starts_with("run[0]")),
                "{e}"
            );
        }
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn bad_report_hints_name_the_key() {
    let fig = |body: &str| format!("{OK}[report]\n{body}");
    let e = err(&fig("qestion = \"x\"\n"));
    assert_eq!(e.key.as_deref(), Some("report.qestion"), "{e}");
    assert!(e.message.contains("Did you mean `question`"), "{e}");
    let e = err(&fig("doc = \"../../etc/passwd\"\n"));
    assert_eq!(e.key.as_deref(), Some("report.doc"), "{e}");
    assert!(e.message.contains("docs/"), "{e}");
    let e = err(&fig(
        "[[report.figure]]\nmetric = \"mem_used_kb\"\nshape = \"pie\"\n",
    ));
    assert_eq!(e.key.as_deref(), Some("report.figure[0].shape"), "{e}");
    assert!(e.message.contains("`nodes`"), "{e}");
    let e = err(&fig("[[report.figure]]\nmetric = \"mem_usd_kb\"\n"));
    assert_eq!(e.key.as_deref(), Some("report.figure[0].metric"), "{e}");
    assert!(e.message.contains("did you mean `mem_used_kb`"), "{e}");
    load(&fig(
        "question = \"q?\"\ndoc = \"docs/placement.md\"\n[[report.figure]]\nmetric = \"mem_used_kb\"\nshape = \"nodes\"\nlogy = false\n",
    ))
    .unwrap();
    // The paper's words as marks: x a number or an increasing pair, text given.
    let mark = |m: &str| {
        fig(&format!(
            "[[report.figure]]\nmetric = \"mem_used_kb\"\n[[report.figure.mark]]\n{m}"
        ))
    };
    for (body, key, says) in [
        ("text = \"t\"\n", "report.figure[0].mark[0].x", "missing"),
        (
            "x = [32, 16]\ntext = \"t\"\n",
            "report.figure[0].mark[0].x",
            "low < high",
        ),
        (
            "x = \"16\"\ntext = \"t\"\n",
            "report.figure[0].mark[0].x",
            "x = 16",
        ),
        ("x = 16\n", "report.figure[0].mark[0].text", "missing"),
        (
            "x = 16\ntext = \"t\"\ny = 2\n",
            "report.figure[0].mark[0].y",
            "",
        ),
    ] {
        let e = err(&mark(body));
        assert_eq!(e.key.as_deref(), Some(key), "{body}: {e}");
        assert!(e.message.contains(says), "{body}: {e}");
    }
    load(&mark("x = [8, 32]\ntext = \"minimum near 16 threads\"\n")).unwrap();
}

#[test]
fn a_disk_write_rate_of_zero_or_below_is_refused_naming_file_and_key() {
    use numasim::machine::{presets, Machine};
    let text = presets::preset_text("nvme-2s").unwrap();
    assert!(text.contains("write_mibps = 3815.0"));
    for bad in ["0.0", "-1.0"] {
        let t = text.replace("write_mibps = 3815.0", &format!("write_mibps = {bad}"));
        let e = Machine::from_toml_str(&t, "nvme.toml").unwrap_err();
        assert_eq!(e.file.as_deref(), Some("nvme.toml"), "{e}");
        assert_eq!(e.key.as_deref(), Some("io.disks"), "{e}");
        assert!(e.message.contains("`write_mibps`"), "{bad}: {e}");
    }
    // A group with no disks in it writes nothing: its rate is not checked.
    let t = text.replace(
        "count = 8, kind = \"nvme\", mibps = 6676.0, write_mibps = 3815.0",
        "count = 8, kind = \"nvme\", mibps = 6676.0 }, { count = 0, mibps = 1.0, write_mibps = 0.0",
    );
    let m = Machine::from_toml_str(&t, "nvme.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.io.disks.len(), 2);
}

/// A step is read on the machine its case resolves to, `--set` included:
/// 40 threads are refused on the file's 24-CPU machine, run with the
/// 64 CPUs `machine.nodes=32` makes (and their records are marked as not
/// comparable with the file's), and 20 threads, fine on the file's
/// machine, are refused on the 12 CPUs `machine.cpus_per_node=1` leaves.
#[test]
fn steps_are_checked_on_the_machine_the_overrides_make() {
    let body = |threads: u32| {
        format!(
            "name = \"t\"\n[machine]\npreset = \"altix-a3700\"\n[[run]]\n\
             workload = \"touch\"\nbytes = \"1 MB\"\nthreads = {threads}\n"
        )
    };
    let e = err(&body(40));
    assert_eq!(e.key.as_deref(), Some("run[0].threads"), "{e}");
    assert!(e.message.contains("24 CPUs"), "{e}");

    let bigger = vec![parse_set("machine.nodes=32").unwrap()];
    let sc = Scenario::from_str_with_sets(&body(40), "test.toml", None, &bigger)
        .expect("40 threads fit the 64 CPUs of 32 nodes");
    let recs = numasim::scenario::run::run(&sc, &bigger).unwrap();
    assert!(!recs.is_empty());
    assert!(recs.iter().all(|r| !r.comparable));

    let smaller = vec![parse_set("machine.cpus_per_node=1").unwrap()];
    load(&body(20)).unwrap();
    let e = Scenario::from_str_with_sets(&body(20), "test.toml", None, &smaller)
        .expect_err("20 threads on 12 CPUs");
    assert_eq!(e.key.as_deref(), Some("run[0].threads"), "{e}");
    assert!(e.message.contains("12 CPUs"), "{e}");
}
