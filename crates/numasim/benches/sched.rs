//! Speed of the scheduler models (issue 14), on one core: the experiments
//! run their points in parallel, so every bench here runs inside a
//! one-thread rayon pool.
//! Targets: `wildfire-aim7` (nine task counts, both schedulers) under 2 s;
//! the live-lock experiment at 512 CPUs under 1 s and at 4,096 under 10 s.
//! Per-point benches report engine events per second (criterion's
//! elements/s: events scheduled on the model's event queue).
//! `cargo bench -p numasim --bench sched -- --quick` for one short pass.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use numasim::engine::Dur;
use numasim::kernel::locking::contention::Spinlock;
use numasim::kernel::sched::{BalanceBackoff, Runqueue, Sched, SchedKnobs};
use numasim::machine::Machine;
use numasim::scenario::run::run;
use numasim::scenario::Scenario;
use numasim::workload::aim7::{aim7, Mix};
use numasim::workload::boot_balance::boot_balance;
use numasim::workload::sched_ops::sched_ops;
use std::hint::black_box;

const LIVELOCK: &str = include_str!("../../../experiments/altix-loadbalance-livelock.toml");
const AIM7: &str = include_str!("../../../experiments/wildfire-aim7.toml");
const O1: &str = include_str!("../../../experiments/altix-o1-scheduler.toml");

fn scenario(name: &str, text: &str) -> Scenario {
    Scenario::from_str(text, name, None).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The live-lock experiment on an Altix of 4,096 CPUs (2,048 two-CPU
/// nodes, the 512's building block), all three back-offs at 4,096 only.
fn livelock_4096() -> Scenario {
    let text = LIVELOCK
        .replace(
            "preset = \"altix-512\"\n",
            "preset = \"altix-512\"\nnodes = 2048\n",
        )
        .replace("cpus = [64, 128, 192, 256, 384, 512]", "cpus = [4096]");
    // The [[paper]] rows name 256 and 512 CPUs, which this sweep lacks.
    let text = text.split("[[paper]]").next().unwrap().to_string();
    scenario("altix-loadbalance-livelock-4096", &text)
}

fn machine_of(sc: &Scenario) -> Machine {
    (*sc.resolve(0, &[]).unwrap().machine).clone()
}

fn one_core() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
}

/// Whole experiments as `numasim replay` runs them, on one core.
fn replays(c: &mut Criterion) {
    let pool = one_core();
    let mut g = c.benchmark_group("sched-replay-1core");
    g.sample_size(10);
    for (id, sc) in [
        ("altix-o1-scheduler", scenario("altix-o1-scheduler", O1)),
        (
            "altix-loadbalance-livelock",
            scenario("altix-loadbalance-livelock", LIVELOCK),
        ),
        ("altix-loadbalance-livelock 4096 CPUs", livelock_4096()),
        ("wildfire-aim7", scenario("wildfire-aim7", AIM7)),
    ] {
        g.bench_function(id, |b| {
            b.iter(|| pool.install(|| black_box(run(&sc, &[]).unwrap())))
        });
    }
    g.finish();
}

/// The fork/exit/wake loop: one point, global vs per-CPU queues.
fn ops(c: &mut Criterion) {
    let m = numasim::machine::presets::preset("altix-512").unwrap();
    let mut g = c.benchmark_group("sched-ops");
    g.sample_size(10);
    for (name, kind) in [("global", Runqueue::Global), ("per-cpu", Runqueue::PerCpu)] {
        for cpus in [8u64, 64] {
            let point = || sched_ops(&m, kind, Spinlock::Tas, cpus, 2, 5000, Dur(2_000_000), 1);
            g.throughput(Throughput::Elements(point().events));
            g.bench_function(format!("{name} {cpus} CPUs"), |b| {
                b.iter(|| black_box(point()))
            });
        }
    }
    g.finish();
}

/// Boot-time balancing, one point per back-off, 100 ms window.
fn livelock(c: &mut Criterion) {
    let m512 = numasim::machine::presets::preset("altix-512").unwrap();
    let m4096 = machine_of(&livelock_4096());
    let mut g = c.benchmark_group("boot-balance");
    g.sample_size(10);
    for (m, cpus) in [(&m512, 512u64), (&m4096, 4096)] {
        for (name, backoff) in [
            ("none", BalanceBackoff::None),
            ("progressive", BalanceBackoff::Progressive),
            ("2.6.7", BalanceBackoff::V267),
        ] {
            let mut k = SchedKnobs::defaults(m);
            k.balance_backoff = backoff;
            let point = || boot_balance(m, &k, Spinlock::Tas, cpus, 1, 2, Dur(100_000_000), 1);
            g.throughput(Throughput::Elements(point().events));
            g.bench_function(format!("{name} {cpus} CPUs"), |b| {
                b.iter(|| black_box(point()))
            });
        }
    }
    g.finish();
}

/// The AIM VII-like mix of wildfire-aim7, one point per scheduler at the
/// plateau (1000 tasks) and at the largest count (4000).
fn mix(c: &mut Criterion) {
    let m = numasim::machine::presets::preset("wildfire-gs320").unwrap();
    let mix = Mix {
        cpu_ns: 81e6,
        io_ns: 135e6,
        waits: 12,
        mem_stall: 0.2,
        task_bytes: 0,
        walk_conflicts: false,
        counters: false,
    };
    let mut g = c.benchmark_group("aim7");
    g.sample_size(10);
    for (name, sched) in [("smp", Sched::Smp), ("numa", Sched::Numa)] {
        for tasks in [1000u64, 4000] {
            let point = || {
                aim7(
                    &m,
                    sched,
                    Spinlock::Tas,
                    &mix,
                    tasks,
                    Dur::from_secs_f64(2.0),
                    Dur::from_secs_f64(10.0),
                    1,
                    None,
                )
            };
            g.throughput(Throughput::Elements(point().events));
            g.bench_function(format!("{name} {tasks} tasks"), |b| {
                b.iter(|| black_box(point()))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, replays, ops, livelock, mix);
criterion_main!(benches);
