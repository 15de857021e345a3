//! The classic "hold" benchmark for the event queue: pop the earliest
//! event, push one at a random future time, with a fixed number pending.
//! Reported as events (pop + push pairs) per second.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use numasim::engine::{stream, Dur, EventQueue, Time};
use rand::RngExt;

/// A payload the size of a typical model event (a tag and a CPU number).
// The fields only give the payload a realistic size; nothing reads them.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug)]
enum Ev {
    Cpu(u32),
    Disk(u32),
}

/// Events per measured iteration, so timer overhead is amortised.
const BATCH: u64 = 1_000;

fn hold(c: &mut Criterion) {
    let mut g = c.benchmark_group("hold");
    g.throughput(Throughput::Elements(BATCH));
    for pending in [1_000usize, 100_000] {
        g.bench_with_input(BenchmarkId::from_parameter(pending), &pending, |b, &n| {
            let mut rng = stream(1, "bench-hold", n as u64);
            let mut q = EventQueue::with_capacity(n + 1);
            for i in 0..n as u32 {
                let ev = if i % 8 == 0 { Ev::Disk(i) } else { Ev::Cpu(i) };
                q.push(Time(rng.random_range(0..1_000_000)), ev).unwrap();
            }
            b.iter(|| {
                for _ in 0..BATCH {
                    let (_, ev) = q.pop().expect("hold keeps the queue full");
                    // Mean increment 500 µs: the queue's time span stays
                    // steady as in a long-running model.
                    q.push_after(Dur(rng.random_range(0..1_000_000)), black_box(ev));
                }
            });
            black_box(q.now());
        });
        // The same hold model with the one-sift `pop_push_after`.
        g.bench_with_input(
            BenchmarkId::new("pop_push_after", pending),
            &pending,
            |b, &n| {
                let mut rng = stream(1, "bench-hold", n as u64);
                let mut q = EventQueue::with_capacity(n + 1);
                for i in 0..n as u32 {
                    let ev = if i % 8 == 0 { Ev::Disk(i) } else { Ev::Cpu(i) };
                    q.push(Time(rng.random_range(0..1_000_000)), ev).unwrap();
                }
                let mut next = Ev::Cpu(0);
                b.iter(|| {
                    for _ in 0..BATCH {
                        let d = Dur(rng.random_range(0..1_000_000));
                        let (_, ev) = q
                            .pop_push_after(d, next)
                            .expect("hold keeps the queue full");
                        next = black_box(ev);
                    }
                });
                black_box(q.now());
            },
        );
    }
    g.finish();
}

criterion_group!(benches, hold);
criterion_main!(benches);
