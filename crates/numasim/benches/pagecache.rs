//! Speed of the page-cache, reclaim, swap and OOM experiments (issue 3).
//! The timed VM steps 10 ms ticks over minutes of simulated time, so these
//! are the slowest replays. `cargo bench -p numasim --bench pagecache`.

use criterion::{criterion_group, criterion_main, Criterion};
use numasim::experiments;
use numasim::scenario::run::run;
use std::hint::black_box;

const IDS: &[&str] = &[
    "altix-pagecache-spill",
    "altix-buffer-head-imbalance",
    "altix-bigio",
    "altix-toss",
    "oom-never-triggers",
];

fn replay(c: &mut Criterion) {
    let mut g = c.benchmark_group("pagecache-replay");
    g.sample_size(10);
    for id in IDS {
        let sc = experiments::load(id).unwrap();
        g.bench_function(*id, |b| b.iter(|| black_box(run(&sc, &[]).unwrap())));
    }
    g.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
