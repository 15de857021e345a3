//! Speed of the contention experiments (issue 4: each under 2 s at 512
//! simulated CPUs). `cargo bench -p numasim --bench contention`.

use criterion::{criterion_group, criterion_main, Criterion};
use numasim::experiments;
use numasim::scenario::run::run;
use std::hint::black_box;

const IDS: &[&str] = &[
    "altix-prof-cpu-mask",
    "altix-timer-global",
    "altix-gettimeofday",
    "altix-touch-96g",
    "altix-devzero-faults",
    "altix-hugetlb-zeroing",
    "altix-pagecache-counter",
    "wildfire-spinlock",
];

fn replay(c: &mut Criterion) {
    let mut g = c.benchmark_group("contention-replay");
    g.sample_size(10);
    for id in IDS {
        let sc = experiments::load(id).unwrap();
        g.bench_function(*id, |b| b.iter(|| black_box(run(&sc, &[]).unwrap())));
    }
    g.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
