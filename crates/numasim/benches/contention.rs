//! Speed of the contention experiments (issue 4: each under 2 s at 512
//! simulated CPUs). `cargo bench -p numasim --bench contention`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};

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
    common::replay_group(c, "contention-replay", IDS);
}

criterion_group!(benches, replay);
criterion_main!(benches);
