//! How cost grows with machine size (issue 13): boot + meminfo, the /dev/zero
//! fault storm, concurrent gettimeofday() and toss() at 512 to 16,384 CPUs,
//! and the reclaim-heavy altix-bigio at its published size and at 8,192
//! nodes.
//! Targets: every case under 2 s at 4,096 CPUs and under 10 s at 16,384;
//! boot of 16,384 CPUs / 64 TiB under 0.2 s.
//! `cargo bench -p numasim --bench scale` (add `-- --quick` for one pass).

use criterion::{criterion_group, criterion_main, Criterion};
use numasim::scenario::run::run;
use numasim::scenario::Scenario;
use std::hint::black_box;

/// An Altix of `cpus` CPUs, two per node (the 512's building block).
fn altix(cpus: u64, memory: &str) -> String {
    format!(
        "[machine]\npreset = \"altix-512\"\nnodes = {}\nmemory = \"{memory}\"\n",
        cpus / 2
    )
}

fn scenario(name: &str, body: String) -> Scenario {
    Scenario::from_str(&format!("name = \"{name}\"\nseed = 1\n{body}"), name, None)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn cases() -> Vec<(String, Scenario)> {
    let mut v = Vec::new();
    for (cpus, mem) in [
        (512, "1 TiB"),
        (2048, "4 TiB"),
        (4096, "8 TiB"),
        (16384, "64 TiB"),
    ] {
        let name = format!("boot+meminfo {cpus} CPUs {mem}");
        let body =
            altix(cpus, mem) + "[[run]]\nworkload = \"boot\"\n[[run]]\nworkload = \"meminfo\"\n";
        v.push((name.clone(), scenario(&name, body)));
    }
    for (p, mem) in [
        (512, "1 TiB"),
        (2048, "4 TiB"),
        (4096, "8 TiB"),
        (16384, "32 TiB"),
    ] {
        let name = format!("devzero 2.4 {p} processes");
        let body = altix(p, mem)
            + "[kernel]\ndevzero = \"2.4\"\n[[run]]\nworkload = \"devzero\"\nbytes = \"1 GB\"\n"
            + &format!("processes = [{p}]\n");
        v.push((name.clone(), scenario(&name, body)));
    }
    for t in [512, 2048, 4096] {
        let name = format!("gettimeofday {t} threads 200 calls");
        let body = altix(t, "1 TiB")
            + &format!("[[run]]\nworkload = \"gettimeofday\"\nthreads = [{t}]\ncalls = 200\n");
        v.push((name.clone(), scenario(&name, body)));
    }
    for per_node in [4, 64, 256] {
        let name = format!("altix-toss {per_node} CPUs per node");
        let text = include_str!("../../../experiments/altix-toss.toml").replace(
            "swap_gb = 16\n",
            &format!("swap_gb = 16\ncpus_per_node = {per_node}\n"),
        );
        v.push((
            name.clone(),
            Scenario::from_str(&text, &name, None).unwrap(),
        ));
    }
    // Reclaim at today's size: per-node splits and the allocator's walks
    // run every tick (issue 13, second pass).
    let name = "altix-bigio".to_string();
    let text = include_str!("../../../experiments/altix-bigio.toml");
    v.push((name.clone(), Scenario::from_str(text, &name, None).unwrap()));
    // The same at 16,384 CPUs: a round-robin writer over 8,192 nodes
    // (placement gathered by index, third pass).
    let name = "altix-bigio 8192 nodes".to_string();
    let text = text.replace("swap_gb = 16\n", "swap_gb = 16\nnodes = 8192\n");
    v.push((
        name.clone(),
        Scenario::from_str(&text, &name, None).unwrap(),
    ));
    v
}

fn scale(c: &mut Criterion) {
    let mut g = c.benchmark_group("scale");
    g.sample_size(10);
    for (name, sc) in cases() {
        g.bench_function(&name, |b| b.iter(|| black_box(run(&sc, &[]).unwrap())));
    }
    g.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);
