//! Speed of the page-cache, reclaim, swap and OOM experiments (issue 3).
//! The timed VM steps 10 ms ticks over minutes of simulated time, so these
//! are the slowest replays. `cargo bench -p numasim --bench pagecache`.

mod common;

use criterion::{criterion_group, criterion_main, Criterion};

const IDS: &[&str] = &[
    "altix-pagecache-spill",
    "altix-buffer-head-imbalance",
    "altix-bigio",
    "altix-toss",
    "oom-never-triggers",
];

fn replay(c: &mut Criterion) {
    common::replay_group(c, "pagecache-replay", IDS);
}

criterion_group!(benches, replay);
criterion_main!(benches);
