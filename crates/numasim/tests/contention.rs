//! Contention at hundreds of CPUs (issue 4): the calibration rows replay
//! within tolerance, predictions move the way the papers describe, batching
//! faults does not change the answer, a fair lock is fair, and parallel
//! sweeps give byte-identical output to serial ones.

use numasim::engine::{stream, Dur, EventQueue, Lock, LockPolicy, Time, UniformCost};
use numasim::experiments;
use numasim::kernel::locking::contention::Spinlock;
use numasim::kernel::mm::memory::{self, FaultThread, Scope};
use numasim::machine::{presets, Machine};
use numasim::report::{Record, Summary};
use numasim::scenario::run::run;
use numasim::workload::lock_bench::lock_bench;
use proptest::prelude::*;
use serde_json::json;

fn replay(id: &str) -> Vec<Record> {
    let sc = experiments::load(id).unwrap();
    run(&sc, &[]).unwrap()
}

fn get(recs: &[Record], metric: &str, keys: &[(&str, serde_json::Value)]) -> f64 {
    recs.iter()
        .find(|r| r.metric == metric && keys.iter().all(|(k, v)| r.case_value(k) == Some(v)))
        .and_then(|r| r.value)
        .unwrap_or_else(|| panic!("no {metric} at {keys:?}"))
}

fn machine(name: &str) -> Machine {
    Machine::from_toml_str(presets::preset_text(name).unwrap(), name).unwrap()
}

#[test]
fn calibration_rows_are_within_tolerance() {
    for id in [
        "altix-prof-cpu-mask",
        "altix-gettimeofday",
        "altix-hugetlb-zeroing",
    ] {
        let sc = experiments::load(id).unwrap();
        let recs = run(&sc, &[]).unwrap();
        let s = Summary::of(id, &recs, &sc.papers);
        assert!(s.with_tolerance >= 1, "{id} has a calibration row");
        assert!(s.passed(), "{s}");
    }
}

/// `line_transfer_ns` was fitted on "a 512-CPU Altix with the profiler on
/// every CPU does not boot", an inequality (docs/contention.md): the
/// machine boots with a cheap enough hand-off and stops with the fitted
/// one, and the profiler's line sets every Altix contention result, so the
/// fit is checked from both sides.
#[test]
fn the_profiler_row_bounds_the_line_transfer_from_both_sides() {
    let sc = experiments::load("altix-prof-cpu-mask").unwrap();
    let boots = |ns: f64| {
        let set = [(
            "machine.interconnect.line_transfer_ns".to_string(),
            toml::Value::Float(ns),
        )];
        let recs = run(&sc, &set).unwrap();
        get(
            &recs,
            "boots",
            &[("kernel.prof_cpu_mask", json!("all")), ("cpus", json!(512))],
        )
    };
    assert_eq!(boots(400.0), 0.0, "the fitted value stops the machine");
    assert_eq!(boots(200.0), 1.0, "half of it boots");
}

#[test]
fn every_altix_contention_experiment_runs_on_the_same_machine() {
    // Predictions come from the machine the calibration rows tuned.
    let base = machine("altix-512");
    for id in [
        "altix-prof-cpu-mask",
        "altix-timer-global",
        "altix-gettimeofday",
        "altix-touch-96g",
        "altix-devzero-faults",
        "altix-hugetlb-zeroing",
        "altix-pagecache-counter",
    ] {
        let sc = experiments::load(id).unwrap();
        let m = sc.resolve(0, &[]).unwrap().machine;
        assert_eq!(m.name, "altix-512", "{id}");
        assert_eq!(
            (
                &m.coherence,
                &m.timer,
                &m.fault,
                m.interconnect.line_transfer_ns
            ),
            (
                &base.coherence,
                &base.timer,
                &base.fault,
                base.interconnect.line_transfer_ns
            ),
            "{id} changes a calibrated parameter"
        );
    }
}

/// `tick` records for `adjust` and `phase` at each CPU count.
fn tick_sweep(adjust: &str, phase: &str) -> Vec<Record> {
    let sc = experiments::load("altix-timer-global").unwrap();
    run(
        &sc,
        &[
            ("kernel.timer_adjust".into(), toml::Value::from(adjust)),
            ("machine.timer.tick_phase".into(), toml::Value::from(phase)),
        ],
    )
    .unwrap()
}

#[test]
fn spread_tick_phases_cost_less_than_aligned_ones() {
    // The same global variable, ticks where ia64_cpu_local_tick() puts
    // them vs all at once: spreading the requests removes the queue.
    let spread = tick_sweep("global", "bringup");
    let aligned = tick_sweep("global", "aligned");
    let w = |r: &[Record], n: u64| get(r, "tick_work_fraction", &[("cpus", json!(n))]);
    // (At 512 both stop the machine: the work fraction is 1 either way.)
    for n in [64, 128, 256] {
        assert!(w(&spread, n) * 5.0 < w(&aligned, n), "at {n}");
    }
    // More CPUs, more work per tick, either way.
    assert!(w(&spread, 512) > w(&spread, 64));
    assert!(w(&aligned, 512) > w(&aligned, 64));
}

#[test]
fn aligned_ticks_stop_the_machine_and_more_cpus_never_help() {
    let recs = tick_sweep("global", "aligned");
    let boots = |n: u64| get(&recs, "boots", &[("cpus", json!(n))]);
    assert_eq!(boots(64), 1.0);
    assert_eq!(boots(512), 0.0);
    let mut stopped = false;
    for n in (64..=512).step_by(32) {
        let b = boots(n);
        assert!(!(stopped && b == 1.0), "boots again at {n}");
        stopped |= b == 0.0;
    }
    // Per-CPU variables never share a line: always boots.
    let per_cpu = tick_sweep("per-cpu", "aligned");
    for n in (64..=512).step_by(32) {
        assert_eq!(get(&per_cpu, "boots", &[("cpus", json!(n))]), 1.0);
    }
}

#[test]
fn load_then_store_costs_more_than_one_atomic_per_tick() {
    // The global adjust (a fetch, then an upgrade) against the profiler's
    // single atomic, on the same line model and phases.
    let timer = tick_sweep("global", "bringup");
    let sc = experiments::load("altix-prof-cpu-mask").unwrap();
    let prof = run(&sc, &[]).unwrap();
    for n in [64u64, 128, 256] {
        let t = get(&timer, "tick_work_fraction", &[("cpus", json!(n))]);
        let p = get(
            &prof,
            "tick_work_fraction",
            &[("kernel.prof_cpu_mask", json!("all")), ("cpus", json!(n))],
        );
        assert!(t > p, "at {n}: {t} vs {p}");
        assert!(
            t < 3.0 * p,
            "at {n}: one upgrade, not two misses: {t} vs {p}"
        );
    }
}

#[test]
fn gettimeofday_slows_down_faster_than_linearly() {
    let recs = replay("altix-gettimeofday");
    let s = |n: u64| get(&recs, "slowdown_vs_one", &[("threads", json!(n))]);
    assert!(s(2) > 1.0 && s(8) > s(4) && s(32) > s(8));
    // cmpxchg retries: 4x the threads costs more than 4x the time per call.
    assert!(s(32) > 4.0 * s(8), "{} vs {}", s(32), s(8));
}

#[test]
fn touch_96g_falls_then_the_locks_take_over() {
    let recs = replay("altix-touch-96g");
    let t = |f: &str, n: u64| {
        get(
            &recs,
            "touch_time_s",
            &[("kernel.anon_fault", json!(f)), ("threads", json!(n))],
        )
    };
    // [ALTIX04] Figure 1: both fall until about 16 CPUs. The Altix curve
    // does; the stock curve bottoms at 4 threads, a published-shape miss
    // that docs/contention.md ("Limits") states, so here it is held only
    // to falling at first and to rising at the largest counts. Issue 34
    // derived the hold: the walk is ~41 ns, and what binds is the line
    // transfers of the second section (`mm->rss`, the LRU lock, two LRU
    // misses), about 7 µs a fault at 400 ns a transfer unit: the 45 s
    // floor that 4 threads already reach.
    assert!(
        t("cmpxchg-pte", 1) > t("cmpxchg-pte", 4) && t("cmpxchg-pte", 4) > t("cmpxchg-pte", 16)
    );
    assert!(t("page-table-lock", 1) > t("page-table-lock", 4));
    for f in ["page-table-lock", "cmpxchg-pte"] {
        assert!(t(f, 512) > t(f, 16), "{f} rises at the largest counts");
    }
    for n in [16, 32, 64, 128, 256, 512] {
        assert!(t("cmpxchg-pte", n) <= t("page-table-lock", n), "at {n}");
    }
}

/// One CPU alone re-takes locks whose line its own last release left in
/// its cache (session 16): it neither waits for them nor pays a transfer,
/// so a lone thread's lock wait is (almost) nothing, and the Altix
/// kernel's removal of the superblock lock gains one process nothing.
/// Before, every re-take paid an on-node transfer: a lone toucher "waited"
/// 8.5% of its time and one `/dev/zero` process ran 5.5% faster on Altix.
#[test]
fn a_lone_cpu_retakes_its_locks_from_its_own_cache() {
    let touch = replay("altix-touch-96g");
    for f in ["page-table-lock", "cmpxchg-pte"] {
        let w = get(
            &touch,
            "lock_wait_fraction",
            &[("kernel.anon_fault", json!(f)), ("threads", json!(1))],
        );
        assert!(w < 0.01, "{f}: a lone thread waits {w} of its time");
    }
    let devzero = replay("altix-devzero-faults");
    let imp = get(&devzero, "improvement", &[("processes", json!(1))]);
    assert!((imp - 1.0).abs() < 0.02, "one process: {imp}");
}

#[test]
fn devzero_lock_removal_gains_most_at_large_counts() {
    let recs = replay("altix-devzero-faults");
    let imp = |n: u64| get(&recs, "improvement", &[("processes", json!(n))]);
    assert!(imp(512) > imp(64) && imp(64) > imp(8));
    assert!(imp(512) > 10.0);
}

#[test]
fn hugetlb_fault_zeroes_in_parallel_and_frees_the_locks() {
    let recs = replay("altix-hugetlb-zeroing");
    let v = |m: &str, h: &str, size: &str, n: u64| {
        get(
            &recs,
            m,
            &[
                ("kernel.hugetlb", json!(h)),
                ("size", json!(size)),
                ("cpus", json!(n)),
            ],
        )
    };
    assert!(v("speedup_vs_one", "fault", "100 GB", 16) > 8.0);
    // More CPUs help faulting, up to the pages' memory bandwidth.
    assert!(
        v("speedup_vs_one", "fault", "100 GB", 64) > v("speedup_vs_one", "fault", "100 GB", 16)
    );
    // With the fault path no lock is held while a page is zeroed: the
    // longest hold is far below the time to zero one 256 MB page.
    let one_page = 256e6 / 2.9e9;
    assert!(v("lock_hold_s", "fault", "4 TB", 512) < one_page / 100.0);
    let z = v("zero_time_s", "prefault", "4 TB", 512);
    assert!(v("zero_time_s", "fault", "4 TB", 512) * 100.0 < z);
}

#[test]
fn per_node_page_cache_count_scales() {
    let recs = replay("altix-pagecache-counter");
    let v = |c: &str, n: u64| {
        get(
            &recs,
            "insertions_per_s",
            &[("kernel.pagecache_count", json!(c)), ("cpus", json!(n))],
        )
    };
    assert!(v("per-node", 512) > 10.0 * v("global", 512));
    assert!(
        v("global", 512) < v("global", 8),
        "the global line saturates"
    );
}

#[test]
fn wildfire_tas_lock_waits_longer_than_the_fair_lock() {
    let recs = replay("wildfire-spinlock");
    let max = |k: &str| {
        (0..8)
            .map(|n| {
                get(
                    &recs,
                    "max_wait_us",
                    &[("kernel.spinlock", json!(k)), ("node", json!(n))],
                )
            })
            .fold(0.0, f64::max)
    };
    assert!(max("tas") > 5.0 * max("fair"));
}

#[test]
fn tas_unfairness_is_probabilistic() {
    // With the calibrated spin jitter remote QBBs get the lock sometimes;
    // with none (the nearest waiter always wins) whole QBBs starve.
    let m = machine("wildfire-gs320");
    let b = lock_bench(&m, Spinlock::Tas, 32, 200, 500, Dur(5_000_000), 1);
    assert_eq!(b.starved_nodes, 0, "{b:?}");
    let mut det = m.clone();
    det.coherence.spin_jitter_ns = 0.0;
    let d = lock_bench(&det, Spinlock::Tas, 32, 200, 500, Dur(5_000_000), 1);
    assert!(d.starved_nodes > 0, "{d:?}");
    // The releaser's node still wins more than its share.
    let fair = lock_bench(&m, Spinlock::Fair, 32, 200, 500, Dur(5_000_000), 1);
    let spread = |x: &numasim::workload::lock_bench::LockBench| {
        let a: Vec<f64> = x.per_node.iter().map(|p| p.0 as f64).collect();
        a.iter().cloned().fold(0.0, f64::max) / a.iter().cloned().fold(f64::MAX, f64::min)
    };
    assert!(spread(&b) > spread(&fair), "{b:?} vs {fair:?}");
}

fn threads(m: &Machine, n: u64, faults: u64) -> Vec<FaultThread> {
    (0..n)
        .map(|c| FaultThread {
            cpu: c,
            node: m.cpu_node(c).unwrap(),
            faults,
            work_ns: 7_000,
            setup: &[],
            mm: 0,
        })
        .collect()
}

#[test]
fn batched_faults_agree_with_unbatched_at_small_scale() {
    let m = machine("altix-512");
    for (n, path) in [
        (4, memory::anon_ptl(Scope::Global)),
        (16, memory::anon_ptl(Scope::Global)),
        (16, memory::anon_cmpxchg(Scope::PerNode)),
        (32, memory::devzero_fault(true, Scope::Global)),
    ] {
        let th = threads(&m, n, 4_000);
        let all = memory::simulate(&m, &th, &path, Spinlock::Tas, u64::MAX, 1);
        let batched = memory::simulate(&m, &th, &path, Spinlock::Tas, 64, 1);
        assert_eq!(all.simulated_faults, n * 4_000);
        assert!(batched.simulated_faults < all.simulated_faults / 10);
        // A test-and-set lock that starves some threads leaves them a tail
        // to run alone after the others finish, which window rates miss
        // (docs/contention.md, "Batching"): up to about 6.3% at 32 threads
        // since the read-spinning hand-off (issue 34; 5.3% before).
        let dev = (batched.time_s - all.time_s).abs() / all.time_s;
        assert!(
            dev < 0.07,
            "{n} threads {path:?}: {} vs {} ({dev})",
            batched.time_s,
            all.time_s
        );
    }
}

#[test]
fn a_global_lru_lock_costs_the_stock_kernel_its_scaling() {
    // The stock path with the Altix kernel's per-node LRU lists vs its own
    // global pagemap_lru_lock: the global lock is what tops it out.
    let m = machine("altix-512");
    let th = threads(&m, 64, 2_000);
    let global = memory::simulate(
        &m,
        &th,
        &memory::anon_ptl(Scope::Global),
        Spinlock::Tas,
        64,
        1,
    );
    let per_node = memory::simulate(
        &m,
        &th,
        &memory::anon_ptl(Scope::PerNode),
        Spinlock::Tas,
        64,
        1,
    );
    assert!(
        global.time_s > per_node.time_s,
        "{global:?} vs {per_node:?}"
    );
    assert!(global.lock_wait_fraction > per_node.lock_wait_fraction);
}

#[test]
fn sharing_one_mm_never_makes_a_fault_cheaper() {
    // `mmap_sem`'s count, `page_table_lock`'s word and `mm->rss` belong to
    // the address space: a process alone in its `mm` keeps them in its
    // CPU's cache, threads of one process pass them around (issue 34).
    let m = machine("altix-512");
    let path = memory::devzero_fault(false, Scope::PerNode);
    for n in [2, 8, 32] {
        let shared = threads(&m, n, 2_000);
        let own: Vec<FaultThread> = threads(&m, n, 2_000)
            .into_iter()
            .enumerate()
            .map(|(i, t)| FaultThread { mm: i, ..t })
            .collect();
        let a = memory::simulate(&m, &own, &path, Spinlock::Tas, u64::MAX, 1);
        let b = memory::simulate(&m, &shared, &path, Spinlock::Tas, u64::MAX, 1);
        assert!(b.time_s > a.time_s * 1.01, "{n}: {b:?} vs {a:?}");
        // Every fault writes the count, the lock word twice and rss, shared
        // or not.
        let f = n * 2_000;
        assert_eq!(a.line_writes[memory::idx::RSS], f);
        assert_eq!(a.line_writes[memory::idx::PTL_WORD], 2 * f);
        assert_eq!(b.line_writes[memory::idx::PC_COUNT], f);
    }
}

#[test]
fn overlapped_stores_cost_the_later_miss_not_the_sum() {
    // list_add()'s store into the previous page and the count's miss are
    // in flight together (issue 34): two lines written as a pair cost less
    // than one after the other, and no less than either alone.
    use memory::{Batches, FaultPath, Stage};
    let m = machine("altix-512");
    let th: Vec<FaultThread> = [0u64, 511]
        .iter()
        .map(|&c| FaultThread {
            cpu: c,
            node: m.cpu_node(c).unwrap(),
            faults: 500,
            work_ns: 500,
            setup: &[],
            mm: 0,
        })
        .collect();
    let path = |stages: &'static [Stage]| FaultPath {
        stages,
        teardown: &[],
        locks: &[],
        lines: &[Scope::Global, Scope::Global],
        batch: Batches::NONE,
    };
    let run = |stages: &'static [Stage]| {
        memory::simulate(&m, &th, &path(stages), Spinlock::Tas, u64::MAX, 1)
    };
    let one = run(&[Stage::Work, Stage::Write(0)]).time_s;
    let both = run(&[Stage::Work, Stage::Write(0), Stage::Write(1)]).time_s;
    let p = run(&[Stage::Work, Stage::WritePair(0, 1)]);
    assert!(p.time_s < both, "{} vs {both}", p.time_s);
    // Here both lines travel the same way, so the pair costs one miss; it
    // still writes both.
    assert!(p.time_s >= one, "{} vs {one}", p.time_s);
    assert_eq!(p.line_writes[0], 1_000);
    assert_eq!(p.line_writes[1], 1_000);
}

#[test]
fn the_page_table_walk_follows_the_caches() {
    // `page_table_lock`'s first section is the walk: two cached levels and
    // a PTE line that misses once per line of PTEs (docs/contention.md).
    let m = machine("altix-512");
    let w = memory::walk_ns(&m);
    assert!((30.0..60.0).contains(&w), "{w}");
    let mut slow = m.clone();
    slow.memory.latency_ns *= 2.0;
    assert!(memory::walk_ns(&slow) > w);
    let mut wide = m.clone();
    wide.cpu.cache_line *= 2;
    assert!(memory::walk_ns(&wide) < w, "more PTEs a line, fewer misses");
}

#[test]
fn devzero_altix_curve_is_bound_by_each_nodes_memory() {
    // Without the superblock lock nothing beyond a node is shared: the
    // two CPUs of a node split its memory bandwidth, zeroing with
    // read-for-ownership stores (two bytes moved a byte zeroed), and from
    // one full node on the curve is linear in nodes.
    let recs = replay("altix-devzero-faults");
    let r = |n: u64| {
        get(
            &recs,
            "faults_per_s",
            &[("kernel.devzero", json!("altix")), ("processes", json!(n))],
        ) / n as f64
    };
    assert!(r(2) < 0.8 * r(1), "{} vs {}", r(2), r(1));
    for n in [4, 16, 64, 256, 512] {
        assert!(
            (r(n) / r(2) - 1.0).abs() < 0.01,
            "{n}: {} vs {}",
            r(n),
            r(2)
        );
    }
    assert!(
        memory::zero_traffic(&machine("altix-512")) > memory::zero_traffic(&machine("xeon-4s"))
    );
}

#[test]
fn parallel_sweeps_are_byte_identical_to_serial() {
    for id in [
        "altix-devzero-faults",
        "altix-gettimeofday",
        "wildfire-spinlock",
    ] {
        let sc = experiments::load(id).unwrap();
        let lines = |threads: usize| -> Vec<String> {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| run(&sc, &[]).unwrap())
                .iter()
                .map(Record::to_json_line)
                .collect()
        };
        assert_eq!(lines(1), lines(4), "{id}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// A fair (queued) lock never lets a waiter's node wait more than one
    /// round: between a CPU's request and its grant, no other CPU gets the
    /// lock twice.
    #[test]
    fn fair_lock_waits_at_most_one_round(
        cpus in 2usize..24,
        holds in prop::collection::vec(1u64..500, 24),
        thinks in prop::collection::vec(0u64..800, 24),
        seed in 0u64..1000,
    ) {
        #[derive(Clone, Copy)]
        enum Ev { Want(usize), Release(usize) }
        let cost = UniformCost { local_ns: 10, remote_ns: 100 };
        let mut l = Lock::new(LockPolicy::Fifo, cost, stream(seed, "t", 0));
        let mut q = EventQueue::new();
        for c in 0..cpus {
            q.push(Time(c as u64 * 3), Ev::Want(c)).unwrap();
        }
        // Grants since each CPU asked, per other CPU.
        let mut since: Vec<Option<Vec<u32>>> = vec![None; cpus];
        let mut grants = 0;
        let grant = |c: usize, since: &mut Vec<Option<Vec<u32>>>| -> Result<(), TestCaseError> {
            for (w, s) in since.iter_mut().enumerate() {
                if let Some(s) = s {
                    if w != c {
                        s[c] += 1;
                        prop_assert!(s[c] <= 1, "cpu {} overtook waiting cpu {} twice", c, w);
                    }
                }
            }
            since[c] = None;
            Ok(())
        };
        while let Some((now, ev)) = q.pop() {
            if grants > 2000 { break; }
            match ev {
                Ev::Want(c) => {
                    since[c] = Some(vec![0; cpus]);
                    if let Some(at) = l.acquire(now, c, c / 4) {
                        grant(c, &mut since)?;
                        grants += 1;
                        q.push(at + Dur(holds[c]), Ev::Release(c)).unwrap();
                    }
                }
                Ev::Release(c) => {
                    if let Some(g) = l.release(now, c) {
                        grant(g.cpu, &mut since)?;
                        grants += 1;
                        q.push(g.at + Dur(holds[g.cpu]), Ev::Release(g.cpu)).unwrap();
                    }
                    q.push(now + Dur(thinks[c]), Ev::Want(c)).unwrap();
                }
            }
        }
    }
}

/// The windowed gettimeofday model (a window of each thread's calls, used
/// beyond 2^17 thread-calls) agrees with every call simulated event by
/// event: at 16 and 64 threads a window of 25 calls gives the time per
/// call and the attempts per call of 200 calls within 15%, a window of 8
/// within 25%.
#[test]
fn gettimeofday_window_matches_the_full_run() {
    use numasim::kernel::locking::contention::Gettimeofday;
    use numasim::workload::gettimeofday::{simulate_calls, MIN_WINDOW_CALLS};
    let m = presets::preset("altix-512").unwrap();
    let mut out = Vec::new();
    for threads in [16u64, 64] {
        let full = simulate_calls(&m, Gettimeofday::Cmpxchg, threads, 200, 1);
        for w in [MIN_WINDOW_CALLS, 25] {
            let win = simulate_calls(&m, Gettimeofday::Cmpxchg, threads, w, 1);
            let d = win.time_per_call_ns / full.time_per_call_ns - 1.0;
            let a = win.attempts_per_call / full.attempts_per_call - 1.0;
            out.push((threads, w, d, a));
        }
    }
    for &(threads, w, d, a) in &out {
        // The shortest window keeps more of the start-up (callers enter
        // spread over one uncontended call, 1.25 us since the NACK-retry
        // line and its syscall_ns re-fit, issue 34): 25% there (20% before
        // the retry's reload became a hit, which made a call cheaper and
        // the start-up a larger part of 8 calls).
        let tol = if w == MIN_WINDOW_CALLS { 0.25 } else { 0.15 };
        assert!(
            d.abs() < tol && a.abs() < tol,
            "{threads} threads, window {w}: time {d:+.3}, attempts {a:+.3}; all: {out:?}"
        );
    }
}

/// 2.6.0's `do_gettimeofday()` goes back to the loop's top after a failed
/// `cmpxchg` and reloads the word, a hit: the failed `cmpxchg` brought the
/// line, which leaves only when the next winner's request has been
/// forwarded to it (issue 34). So every retry costs one grant of the line
/// (its `cmpxchg`), a call at most one more (its first load): with the
/// reload as a miss each retry would cost two.
#[test]
fn gettimeofday_retry_reloads_as_a_hit() {
    use numasim::kernel::locking::contention::Gettimeofday;
    use numasim::workload::gettimeofday::simulate_calls;
    let mut m = presets::preset("altix-512").unwrap();
    // One tick a second: no `xtime_lock` write falls in this short run, so
    // no read section is voided (those cost a load each).
    m.timer.hz = 1;
    for threads in [8u64, 32] {
        let r = simulate_calls(&m, Gettimeofday::Cmpxchg, threads, 50, 1);
        assert!(r.attempts_per_call > 2.0, "{threads}: {r:?}");
        // (+0.01: the time keeper's one grant when its tick falls in the run.)
        assert!(
            r.grants_per_call <= r.attempts_per_call + 1.01
                && r.grants_per_call > r.attempts_per_call,
            "{threads} callers: {r:?}"
        );
    }
}

/// The time keeper's tick (CPU 0, `write_seqlock(&xtime_lock)` around
/// `time_interpolator_update()`'s `cmpxchg` on the word) voids every read
/// section it overlaps, and a section spans the wait for the word's line:
/// with hundreds of callers that wait nears the tick period and most
/// sections are retried, while a few callers hardly notice the tick.
#[test]
fn gettimeofday_tick_voids_read_sections_that_wait_long() {
    use numasim::kernel::locking::contention::Gettimeofday;
    use numasim::workload::gettimeofday::simulate_calls;
    let ticking = presets::preset("altix-512").unwrap();
    let mut quiet = ticking.clone();
    quiet.timer.hz = 1;
    let t =
        |m: &Machine, n: u64| simulate_calls(m, Gettimeofday::Cmpxchg, n, 20, 1).time_per_call_ns;
    let (few_q, few_t) = (t(&quiet, 4), t(&ticking, 4));
    assert!(
        (few_t / few_q - 1.0).abs() < 0.05,
        "4 callers: {few_q} without ticks, {few_t} with"
    );
    // (+20% before the word's loads became shared reads, issue 34's fourth
    // pass: a voided section's reload is now a hit while its copy is
    // still shared, so a voided section costs less; +16% with seed 1.)
    let (many_q, many_t) = (t(&quiet, 256), t(&ticking, 256));
    assert!(
        many_t > 1.1 * many_q,
        "256 callers: {many_q} without ticks, {many_t} with"
    );
}

/// Past 2^17 thread-calls a window stops after a budget of line grants and
/// takes the mean from the threads' time in calls over the calls done
/// (issue 31): against every call simulated, at 64 callers a budget of a
/// sixth of the run's grants estimates the time per call within 35%. It
/// reads high (+29% with seed 1): it samples the storm with every caller
/// in it, while the full run's last calls are made by the far callers
/// alone, once the near ones have finished.
#[test]
fn gettimeofday_grant_budget_estimates_the_storm() {
    use numasim::kernel::locking::contention::Gettimeofday;
    use numasim::workload::gettimeofday::{simulate_budget, simulate_calls};
    let m = presets::preset("altix-512").unwrap();
    let full = simulate_calls(&m, Gettimeofday::Cmpxchg, 64, 200, 1);
    let grants = (full.grants_per_call * 64.0 * 200.0) as u64;
    let budget = grants / 6;
    let part = simulate_budget(&m, Gettimeofday::Cmpxchg, 64, 200, 1, budget);
    // It stopped early: the calls it completed are a fraction of the run's.
    let completed = budget as f64 / part.grants_per_call;
    assert!(completed < 0.3 * 64.0 * 200.0, "{part:?}");
    let d = part.time_per_call_ns / full.time_per_call_ns - 1.0;
    assert!(d.abs() < 0.35, "budget {part:?} full {full:?}");
}

/// Direction: the interpolator's shared word makes each call slower as
/// callers are added, while seqcount readers share nothing written, so
/// their time per call stays that of one caller.
#[test]
fn gettimeofday_seqcount_readers_do_not_contend() {
    use numasim::kernel::locking::contention::Gettimeofday;
    use numasim::workload::gettimeofday::simulate_calls;
    let m = presets::preset("altix-512").unwrap();
    let one = |v| simulate_calls(&m, v, 1, 200, 1).time_per_call_ns;
    let many = |v| simulate_calls(&m, v, 16, 200, 1).time_per_call_ns;
    assert!(many(Gettimeofday::Cmpxchg) > 3.0 * one(Gettimeofday::Cmpxchg));
    let (s1, s16) = (one(Gettimeofday::Seqcount), many(Gettimeofday::Seqcount));
    assert!(
        (s16 / s1 - 1.0).abs() < 0.05,
        "seqcount 1 -> 16 callers: {s1} -> {s16}"
    );
    assert!(s1 < one(Gettimeofday::Cmpxchg));
}

/// issue 33: on x86 the default clock read hides the storm; the run says
/// so unless the scenario, a case or --set chose `kernel.gettimeofday`.
#[test]
fn a_gettimeofday_run_on_the_x86_default_says_it_cannot_contend() {
    use numasim::scenario::{run::default_warnings, Scenario};
    let body = |kernel: &str, preset: &str| {
        format!("name = \"t\"\n[machine]\npreset = \"{preset}\"\n{kernel}[[run]]\nworkload = \"gettimeofday\"\nthreads = [1, 8]\n")
    };
    let warns = |text: &str, sets: &[(String, toml::Value)]| -> Vec<String> {
        let sc = Scenario::from_str(text, "t.toml", None).unwrap();
        default_warnings(&sc, sets)
            .into_iter()
            .filter(|w| w.contains("kernel.gettimeofday"))
            .collect()
    };
    let x86 = warns(&body("", "epyc-2s-nps4"), &[]);
    assert_eq!(x86.len(), 1, "{x86:?}");
    assert!(
        x86[0].contains("\"seqcount\"") && x86[0].contains("\"cmpxchg\""),
        "{}",
        x86[0]
    );
    // Chosen in [kernel], by --set, or on ia64 (cmpxchg by default): no note.
    let chosen = body("[kernel]\ngettimeofday = \"seqcount\"\n", "epyc-2s-nps4");
    assert!(warns(&chosen, &[]).is_empty());
    let set = [(
        "kernel.gettimeofday".to_string(),
        toml::Value::String("cmpxchg".into()),
    )];
    assert!(warns(&body("", "epyc-2s-nps4"), &set).is_empty());
    assert!(warns(&body("", "altix-512"), &[]).is_empty());
}

/// Where the arbitration starves far callers, a window is no steady state:
/// at 512 callers on altix-512 the callers near the word's home finish a
/// window of 8 calls before the farthest finish one, so the window's mean
/// is below a longer window's (the mean grows with the window) and the
/// result counts the starved callers. The CLI then warns that
/// time_per_call_ns is a lower bound (`run::windowed_runs`).
#[test]
fn gettimeofday_window_flags_starved_callers_and_underestimates() {
    use numasim::kernel::locking::contention::Gettimeofday;
    use numasim::workload::gettimeofday::simulate_calls;
    let m = presets::preset("altix-512").unwrap();
    let short = simulate_calls(&m, Gettimeofday::Cmpxchg, 512, 8, 1);
    let long = simulate_calls(&m, Gettimeofday::Cmpxchg, 512, 24, 1);
    assert!(short.starved_callers > 0, "{short:?}");
    assert!(
        short.time_per_call_ns < long.time_per_call_ns,
        "short {short:?} long {long:?}"
    );
    // A few callers: at most one is still in its first call when another
    // has made 8 (the NACK race favours the home node's two CPUs; with the
    // retry's reload a hit, issue 34, a winner keeps winning more often).
    let few = simulate_calls(&m, Gettimeofday::Cmpxchg, 4, 8, 1);
    assert!(few.starved_callers <= 1, "{few:?}");
}

#[test]
fn every_24_fault_takes_its_nodes_zone_lock_once() {
    // 2.4.21 has no per-CPU page lists: each fault's alloc_page() runs
    // rmqueue() under zone->lock of the page's node and unlinks one page
    // from the free list (docs/contention.md, session 15), on the stock,
    // Altix and /dev/zero paths alike; the lock is the node's, so a thread
    // alone on its node finds it where it left it and never waits for it.
    let m = machine("altix-512");
    for path in [
        memory::anon_ptl(Scope::Global),
        memory::anon_cmpxchg(Scope::PerNode),
        memory::devzero_fault(true, Scope::Global),
        memory::devzero_fault(false, Scope::PerNode),
    ] {
        let th: Vec<FaultThread> = threads(&m, 8, 500)
            .into_iter()
            .enumerate()
            .map(|(i, t)| FaultThread { mm: i, ..t })
            .collect();
        let r = memory::simulate(&m, &th, &path, Spinlock::Tas, u64::MAX, 1);
        assert_eq!(r.acquisitions[memory::idx::ZONE_LOCK], 8 * 500, "{path:?}");
        assert_eq!(r.line_writes[memory::idx::ZONE_FREE], 8 * 500, "{path:?}");
    }
    // Two CPUs of one node pass its zone lock and free list between them
    // each fault; one CPU on each of two nodes keeps its own: the same
    // faults take longer on the shared node (the Altix path; its LRU lock
    // and page_cache_size are the node's too, so this direction held
    // before the zone lock as well).
    let alone = |cpus: [u64; 2]| -> f64 {
        let th: Vec<FaultThread> = cpus
            .iter()
            .enumerate()
            .map(|(i, &c)| FaultThread {
                cpu: c,
                node: m.cpu_node(c).unwrap(),
                faults: 2_000,
                work_ns: 7_000,
                setup: &[],
                mm: i,
            })
            .collect();
        memory::simulate(
            &m,
            &th,
            &memory::devzero_fault(false, Scope::PerNode),
            Spinlock::Tas,
            u64::MAX,
            1,
        )
        .time_s
    };
    let (same, split) = (alone([0, 1]), alone([0, 2]));
    assert_eq!(m.cpu_node(0), m.cpu_node(1));
    assert_ne!(m.cpu_node(0), m.cpu_node(2));
    assert!(same > split, "{same} vs {split}");
}
