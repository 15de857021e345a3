//! The classic "hold" benchmark for the event queue: pop the earliest
//! event, push one at a random future time, with a fixed number pending.
//! Reported as events (pop + push pairs) per second.
//!
//! `locks`: the two lock patterns of issue 31 at 1,024 / 4,096 / 16,384
//! CPUs (64 a node, the Altix fat tree's groups): a lock per CPU taken
//! and released at random (sched-ops on per-CPU queues), as a `Lock` each
//! and as a `LockSet`; and one NACK-retry word whose every CPU waits (the
//! gettimeofday storm), a release and a re-request per step.
//!
//! `read-spin hand-off`: a test-and-set lock whose spinners read the word
//! (aim7, the fault path), 16 and 256 waiters, a release and a re-request
//! per step.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use numasim::engine::{stream, CostTable, Dur, EventQueue, Lock, LockPolicy, LockSet, Time};
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

/// The Altix fat tree's groups over `cpus / 64` nodes (ns by level).
fn fat_tree(cpus: usize) -> CostTable {
    CostTable::from_groups(
        cpus / 64,
        vec![2, 8, 16, 64],
        vec![120, 400, 450, 500, 550, 600],
    )
}

fn tas(cost: &CostTable, home: usize, l: u64) -> Lock<&CostTable> {
    Lock::new(LockPolicy::Unfair, cost, stream(1, "bench-lock", l))
        .with_spinning(40, 20)
        .with_read_spin()
        .with_home(home)
}

fn locks(c: &mut Criterion) {
    let mut g = c.benchmark_group("locks");
    g.throughput(Throughput::Elements(BATCH));
    for cpus in [1_024usize, 4_096, 16_384] {
        let cost = fat_tree(cpus);
        let node = |cpu: usize| cpu / 64;
        // A random CPU takes a random CPU's lock and lets it go.
        g.bench_with_input(BenchmarkId::new("per-cpu Lock", cpus), &cpus, |b, &n| {
            let mut rng = stream(2, "bench-locks", n as u64);
            let mut ls: Vec<_> = (0..n).map(|l| tas(&cost, node(l), l as u64)).collect();
            let mut now = Time(0);
            b.iter(|| {
                for _ in 0..BATCH {
                    let (cpu, l) = (rng.random_range(0..n), rng.random_range(0..n));
                    now += Dur(100);
                    let at = ls[l].acquire(now, cpu, node(cpu)).expect("free");
                    black_box(ls[l].release(at + Dur(50), cpu));
                }
            });
        });
        g.bench_with_input(BenchmarkId::new("per-cpu LockSet", cpus), &cpus, |b, &n| {
            let mut rng = stream(2, "bench-locks", n as u64);
            let mut set = LockSet::new(tas(&cost, 0, 0));
            let mut cells: Vec<_> = (0..n)
                .map(|l| set.add(Some(node(l)), stream(1, "bench-lock", l as u64)))
                .collect();
            let mut now = Time(0);
            b.iter(|| {
                for _ in 0..BATCH {
                    let (cpu, l) = (rng.random_range(0..n), rng.random_range(0..n));
                    now += Dur(100);
                    let at = set
                        .acquire(&mut cells[l], now, cpu, node(cpu))
                        .expect("free");
                    black_box(set.release(&mut cells[l], at + Dur(50), cpu));
                }
            });
        });
        // Every CPU waits for one NACK-retry word; the holder lets go and
        // asks again at once.
        g.bench_with_input(BenchmarkId::new("nack storm", cpus), &cpus, |b, &n| {
            hand_off_storm(b, tas(&cost, 0, 0).with_nack_retry(0.375), n, node);
        });
    }
    g.finish();
}

/// CPU 0 takes `l`, CPUs 1..n (on `node(cpu)`) wait for it; each step
/// the holder lets go and asks again at once, BATCH hand-offs an iteration.
fn hand_off_storm(
    b: &mut criterion::Bencher,
    mut l: Lock<&CostTable>,
    n: usize,
    node: impl Fn(usize) -> usize,
) {
    let mut holder = 0;
    let mut now = l.acquire(Time(0), 0, 0).expect("free");
    for cpu in 1..n {
        l.acquire(now, cpu, node(cpu));
    }
    b.iter(|| {
        for _ in 0..BATCH {
            let g = l.release(now, holder).expect("all wait");
            l.acquire(now, holder, node(holder));
            (holder, now) = (g.cpu, g.at);
        }
    });
}

/// A read-spin test-and-set lock (spinlock.rs's `Tas`, as aim7's
/// runqueue_lock and the fault path's locks) with `waiters` CPUs spread
/// over a 4,096-CPU fat tree: each release upgrades the shared word and
/// races the spinners (the farthest spinner asked four times a release,
/// issue 31 round 6); the holder asks again at once. 16 waiters sit in
/// the short list, 256 in the lists by node.
fn handoffs(c: &mut Criterion) {
    let mut g = c.benchmark_group("read-spin hand-off");
    g.throughput(Throughput::Elements(BATCH));
    let cost = fat_tree(4_096);
    for waiters in [16usize, 256] {
        g.bench_with_input(BenchmarkId::from_parameter(waiters), &waiters, |b, &n| {
            let stride = 4_096 / n;
            let node = |cpu: usize| cpu * stride / 64;
            hand_off_storm(b, tas(&cost, 0, 0), n, node);
        });
    }
    g.finish();
}

criterion_group!(benches, hold, locks, handoffs);
criterion_main!(benches);
