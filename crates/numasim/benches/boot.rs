//! How long booting takes: the hashdist experiment, the 4 TB Altix, and a
//! 4,096-CPU, 16 TiB machine (issue targets: 0.5 s, 1 s, 2 s).

use criterion::{criterion_group, criterion_main, Criterion};
use numasim::experiments;
use numasim::kernel::boot::boot;
use numasim::kernel::KernelConfig;
use numasim::machine::presets::preset_text;
use numasim::machine::Machine;
use numasim::scenario::run::run;
use std::hint::black_box;

fn altix(nodes: u64, memory: &str) -> Machine {
    let mut t: toml::Table = preset_text("altix-512").unwrap().parse().unwrap();
    t.insert("nodes".into(), (nodes as i64).into());
    t.remove("mem_per_node");
    t.insert("memory".into(), memory.into());
    Machine::from_table(&t).unwrap()
}

fn benches(c: &mut Criterion) {
    let sc = experiments::load("hashdist-boot").unwrap();
    c.bench_function("replay hashdist-boot (3 cases)", |b| {
        b.iter(|| black_box(run(&sc, &[]).unwrap()))
    });
    for (name, m) in [
        ("boot altix-512 4 TB", altix(256, "4 TB")),
        ("boot 4096 CPUs 16 TiB", altix(2048, "16 TiB")),
    ] {
        for hashdist in [false, true] {
            let mut k = KernelConfig::defaults(&m);
            k.hashdist = hashdist;
            c.bench_function(&format!("{name} hashdist={}", u8::from(hashdist)), |b| {
                b.iter(|| black_box(boot(&m, &k, 1).unwrap()))
            });
        }
    }
}

criterion_group! {
    name = boot_benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(3));
    targets = benches
}
criterion_main!(boot_benches);
