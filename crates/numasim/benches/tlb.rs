//! Speed of the group-D experiments (issue 5: the seven bgp experiments
//! together under 1 s) and of the sampled TLB itself.
//! `cargo bench -p numasim --bench tlb`.

use criterion::{criterion_group, criterion_main, Criterion};
use numasim::engine::stream;
use numasim::experiments;
use numasim::kernel::mm::flavour::Replacement;
use numasim::kernel::mm::tlb;
use numasim::scenario::run::run;
use std::hint::black_box;

const IDS: &[&str] = &[
    "bgp-stream-copy",
    "bgp-random-access",
    "bgp-bigmem-stream",
    "bgp-bigmem-random",
    "bgp-gettimeofday",
    "bgp-noise",
    "bgp-lofar-memcpy",
    "modern-hugepage-random",
];

fn replay(c: &mut Criterion) {
    let mut g = c.benchmark_group("tlb-replay");
    g.sample_size(10);
    for id in IDS {
        let sc = experiments::load(id).unwrap();
        g.bench_function(*id, |b| b.iter(|| black_box(run(&sc, &[]).unwrap())));
    }
    g.finish();
}

fn sampled(c: &mut Criterion) {
    let mut g = c.benchmark_group("tlb-sample");
    g.sample_size(10);
    for (name, e, policy) in [
        ("bgp-45-round-robin", 45, Replacement::RoundRobin),
        ("epyc-3072-lru", 3072, Replacement::Lru),
    ] {
        g.bench_function(format!("random-100k-{name}"), |b| {
            b.iter(|| {
                black_box(tlb::sample_random(
                    e,
                    policy,
                    1 << 20,
                    2,
                    100_000,
                    stream(1, "bench", 0),
                ))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, replay, sampled);
criterion_main!(benches);
