//! Shared by the replay benches: one criterion group timing whole replays.

use criterion::Criterion;
use numasim::experiments;
use numasim::scenario::run::run;
use std::hint::black_box;

/// Time each experiment of `ids` replayed whole, in group `group`.
pub fn replay_group(c: &mut Criterion, group: &str, ids: &[&str]) {
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    for id in ids {
        let sc = experiments::load(id).unwrap();
        g.bench_function(*id, |b| b.iter(|| black_box(run(&sc, &[]).unwrap())));
    }
    g.finish();
}
