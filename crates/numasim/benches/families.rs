//! Every workload family at 1,024, 4,096 and 16,384 CPUs with its default
//! work (issue 31): an Altix of 64 CPUs per node (16 to 256 nodes), the
//! file-system families on the A3700's disks and block layer, each thread
//! or CPU count set to the machine's. Targets: under 2 s at 4,096 CPUs and
//! 10 s at 16,384. docs/engine.md has the growth table these measure;
//! `scripts/growth.py` reads `FAMILIES` and `FS` below and runs the same
//! scenarios with `numasim run` for CPU-s and peak RSS (keep their form).
//! `cargo bench -p numasim --bench families` (add `-- FAMILY` for one).

use criterion::{criterion_group, criterion_main, Criterion};
use numasim::scenario::run::run;
use numasim::scenario::Scenario;
use std::hint::black_box;
use std::time::Duration;

/// (family, extra [kernel] lines, the step with `{n}` for the CPU count).
const FAMILIES: &[(&str, &str, &str)] = &[
    ("boot", "", "workload = \"boot\""),
    ("meminfo", "", "workload = \"meminfo\""),
    (
        "touch-local",
        "",
        "workload = \"touch\"\nthreads = {n}\nbytes = \"16 MiB\"",
    ),
    (
        "touch-interleave",
        "",
        "workload = \"touch\"\nthreads = {n}\nbytes = \"16 MiB\"\npolicy = \"interleave\"",
    ),
    ("hold", "", "workload = \"hold\"\nbytes = \"100 GB\""),
    ("runaway", "", "workload = \"runaway\"\nhorizon_s = 600"),
    ("tick", "", "workload = \"tick\"\ncpus = {n}"),
    (
        "gettimeofday",
        "",
        "workload = \"gettimeofday\"\nthreads = {n}",
    ),
    (
        "fault-touch",
        "",
        "workload = \"fault-touch\"\nthreads = {n}\nbytes = \"16 GB\"",
    ),
    (
        "devzero",
        "",
        "workload = \"devzero\"\nprocesses = {n}\nbytes = \"1 GB\"",
    ),
    (
        "hugetlb",
        "",
        "workload = \"hugetlb\"\ncpus = {n}\nsize = \"10 GB\"",
    ),
    (
        "pagecache-count",
        "",
        "workload = \"pagecache-count\"\ncpus = {n}",
    ),
    ("spinlock", "", "workload = \"spinlock\"\ncpus = {n}"),
    (
        "sched-ops-global",
        "runqueue = \"global\"",
        "workload = \"sched-ops\"\ncpus = {n}",
    ),
    (
        "sched-ops-percpu",
        "runqueue = \"per-cpu\"",
        "workload = \"sched-ops\"\ncpus = {n}",
    ),
    (
        "boot-balance",
        "",
        "workload = \"boot-balance\"\ncpus = {n}",
    ),
    ("rq-peek", "", "workload = \"rq-peek\"\ncpus = {n}"),
    (
        "aim7",
        "sched = \"numa\"",
        "workload = \"aim7\"\ntasks = {n}",
    ),
    (
        "mlc-latency-matrix",
        "",
        "workload = \"mlc-latency-matrix\"",
    ),
    (
        "stream",
        "",
        "workload = \"stream\"\nthreads = {n}\nop = [\"triad\"]",
    ),
    (
        "pio-read",
        "",
        "workload = \"pio-read\"\nload = [\"idle\", \"busy\"]",
    ),
    ("dma-iops", "", "workload = \"dma-iops\""),
    (
        "direct-io",
        "",
        "workload = \"direct-io\"\nfs = \"xfs\"\nthreads = {n}\nfile_size = \"16 MiB\"",
    ),
    (
        "buffered-read",
        "buffer_policy = \"interleave\"",
        "workload = \"buffered-read\"\nfs = \"xfs\"\nthreads = {n}\nfile_size = \"16 MiB\"",
    ),
    (
        "buffered-write",
        "",
        "workload = \"buffered-write\"\nfs = \"xfs\"\nthreads = {n}\nfile_size = \"16 MiB\"",
    ),
];

const FS: &[&str] = &["direct-io", "buffered-read", "buffered-write"];

/// The scenario of `family` on a machine of `cpus` CPUs, or None where the
/// step is refused (its reason is printed: a bound that names the cost).
fn scenario(family: &str, kernel: &str, step: &str, cpus: u64) -> Option<Scenario> {
    let preset = if FS.contains(&family) {
        "altix-a3700"
    } else {
        "altix-512"
    };
    let kernel = if kernel.is_empty() {
        String::new()
    } else {
        format!("[kernel]\n{kernel}\n")
    };
    let text = format!(
        "name = \"{family}\"\nseed = 1\n[machine]\npreset = \"{preset}\"\nnodes = {}\n\
         cpus_per_node = 64\nmem_per_node = \"1024 GiB\"\n{kernel}[[run]]\n{}\n",
        cpus / 64,
        step.replace("{n}", &cpus.to_string())
    );
    match Scenario::from_str(&text, family, None) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("{family} at {cpus} CPUs: refused: {e}");
            None
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("families");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(1));
    for &(family, kernel, step) in FAMILIES {
        for cpus in [1024, 4096, 16384] {
            let Some(sc) = scenario(family, kernel, step, cpus) else {
                continue;
            };
            g.bench_function(format!("{family} {cpus} CPUs"), |b| {
                b.iter(|| black_box(run(&sc, &[]).expect("runs")))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
