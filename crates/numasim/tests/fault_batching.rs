//! The fault path's per-CPU batches (issue 29): pagevec LRU adds, pcp
//! refills and bulk frees, `release_pages()` chunks at munmap. Batching
//! never makes the faulting processes slower, each lock is taken once per
//! batch (counted), every faulted page is accounted for on the lists, and
//! the batch sizes follow the release.

use numasim::kernel::era::Era;
use numasim::kernel::locking::contention::{ContentionKnobs, Spinlock};
use numasim::kernel::mm::memory::{self, idx, Batches, FaultThread};
use numasim::machine::{presets, Machine};
use proptest::prelude::*;

fn machine(name: &str) -> Machine {
    Machine::from_toml_str(presets::preset_text(name).unwrap(), name).unwrap()
}

/// `n` processes on CPUs 0.., `faults` each, ~3.2 µs of their own a fault
/// (today-page-fault's order).
fn procs(m: &Machine, n: u64, faults: u64) -> Vec<FaultThread> {
    (0..n)
        .map(|c| FaultThread {
            cpu: c,
            node: m.cpu_node(c).unwrap(),
            faults,
            work_ns: 3_200,
            setup: &[],
            mm: 0,
        })
        .collect()
}

fn run(m: &Machine, th: &[FaultThread], unmap: bool, b: Batches) -> memory::FaultRun {
    let path = memory::devzero_batched(false, unmap, b);
    memory::simulate(m, th, &path, Spinlock::Tas, u64::MAX, 1)
}

#[test]
fn batching_never_makes_sixteen_processes_slower() {
    let m = machine("xeon-4s");
    let th = procs(&m, 16, 600);
    let today = Batches::from_knobs(&ContentionKnobs::defaults_for(&m, Era::V5_4));
    for unmap in [false, true] {
        let none = run(&m, &th, unmap, Batches::NONE);
        let batched = run(&m, &th, unmap, today);
        assert!(
            batched.time_s < none.time_s,
            "unmap {unmap}: {batched:?} vs {none:?}"
        );
        // Fewer acquisitions, less waiting.
        assert!(batched.lock_wait_fraction < none.lock_wait_fraction);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// Doubling any batch never slows 16 processes on one node (beyond the
    /// jitter of a test-and-set lock's hand-offs: 1%).
    #[test]
    fn a_larger_batch_is_never_slower(lru in 1u64..40, pcp in 1u64..80, which in 0usize..2) {
        let m = machine("xeon-4s");
        let th = procs(&m, 16, 320);
        let small = Batches { lru_add: lru, pcp, lru_free: lru };
        let large = match which {
            0 => Batches { lru_add: 2 * lru, lru_free: 2 * lru, ..small },
            _ => Batches { pcp: 2 * pcp, ..small },
        };
        let a = run(&m, &th, true, small);
        let b = run(&m, &th, true, large);
        prop_assert!(b.time_s <= a.time_s * 1.01, "{:?} -> {:?}: {} vs {}", small, large, b.time_s, a.time_s);
    }
}

/// Pages per lock hold: the LRU lock once per pagevec drained and once
/// per `release_pages()` chunk, `zone->lock` once per pcp refill and once
/// per bulk free; with no batching, once per page each.
#[test]
fn each_lock_is_taken_once_per_batch() {
    let m = machine("xeon-4s");
    let f = 1_000u64;
    for (n, b) in [
        (
            1,
            Batches {
                lru_add: 15,
                pcp: 63,
                lru_free: 15,
            },
        ),
        (
            16,
            Batches {
                lru_add: 15,
                pcp: 63,
                lru_free: 15,
            },
        ),
        (
            16,
            Batches {
                lru_add: 16,
                pcp: 4,
                lru_free: 16,
            },
        ),
        (4, Batches::NONE),
    ] {
        let th = procs(&m, n, f);
        let r = run(&m, &th, true, b);
        assert_eq!(r.simulated_faults, n * f);
        let lru = n * (f / b.lru_add + f / b.lru_free);
        let zone = n * (f.div_ceil(b.pcp) + f / b.pcp);
        assert_eq!(r.acquisitions[idx::LRU_LOCK], lru, "{n} {b:?}");
        assert_eq!(r.acquisitions[idx::ZONE_LOCK], zone, "{n} {b:?}");
        // Faults only: the add side alone.
        let r = run(&m, &th, false, b);
        assert_eq!(r.acquisitions[idx::LRU_LOCK], n * (f / b.lru_add));
        assert_eq!(r.acquisitions[idx::ZONE_LOCK], n * f.div_ceil(b.pcp));
    }
}

/// Every faulted page is on the LRU or still in its CPU's pagevec (fewer
/// than a batch), came from a pcp refill (at most one batch left over a
/// CPU), and is freed to the buddy lists or still on its CPU's pcp list:
/// the lists' writes count exactly the pages moved.
#[test]
fn pages_are_conserved_across_the_batches() {
    let m = machine("xeon-4s");
    for (n, f, b) in [
        (
            1u64,
            997u64,
            Batches {
                lru_add: 15,
                pcp: 63,
                lru_free: 15,
            },
        ),
        (
            8,
            500,
            Batches {
                lru_add: 14,
                pcp: 31,
                lru_free: 14,
            },
        ),
        (
            16,
            256,
            Batches {
                lru_add: 16,
                pcp: 16,
                lru_free: 16,
            },
        ),
    ] {
        let th = procs(&m, n, f);
        let r = run(&m, &th, true, b);
        let added = n * b.lru_add * (f / b.lru_add);
        let removed = n * b.lru_free * (f / b.lru_free);
        let pending = n * (f % b.lru_add);
        assert_eq!(added + pending, n * f, "{b:?}");
        assert!(f % b.lru_add < b.lru_add);
        // list_add() writes the head once per page added, list_del() once
        // per page removed.
        assert_eq!(r.line_writes[idx::LRU_HEAD], added + removed, "{b:?}");
        let taken = n * b.pcp * f.div_ceil(b.pcp);
        let given = n * b.pcp * (f / b.pcp);
        assert!(taken >= n * f && taken < n * (f + b.pcp), "{b:?}");
        assert!(given <= n * f && given + n * b.pcp > n * f, "{b:?}");
        assert_eq!(r.line_writes[idx::ZONE_FREE], taken + given, "{b:?}");
    }
}

/// The batch sizes of each release, on a 4 KiB-page machine with big
/// nodes (xeon-4s: 384 GiB a node) and on the Altix (16 KiB pages).
#[test]
fn batch_sizes_follow_the_release() {
    let x = machine("xeon-4s");
    let k = |m: &Machine, e: Era| {
        let c = ContentionKnobs::defaults_for(m, e);
        (c.lru_add_batch, c.pcp_batch)
    };
    assert_eq!(k(&x, Era::V2_6_9), (16, 16));
    assert_eq!(k(&x, Era::V2_6_32), (14, 31));
    assert_eq!(k(&x, Era::V4_15), (14, 31));
    assert_eq!(k(&x, Era::V5_4), (15, 63));
    assert_eq!(k(&x, Era::V6_8), (15, 63));
    // 2.6.9 on ia64's 16 KiB pages: 256 KB / 16 KiB / 4.
    let a = machine("altix-512");
    assert_eq!(k(&a, Era::V2_6_9), (16, 4));
    // numasim's default release is 2.6.9.
    assert_eq!(
        Batches::from_knobs(&ContentionKnobs::defaults(&a)),
        Batches {
            lru_add: 16,
            pcp: 4,
            lru_free: 16
        }
    );
    // A small zone: a thousandth of 64 MiB of 4 KiB pages is 16, ÷ 4 = 4;
    // 2.6.9 keeps 4, later releases clamp to 2^n - 1 = 3.
    let small = Machine::from_toml_str(
        "name = \"s\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = \"64 MiB\"\narch = \"x86_64\"\n",
        "s",
    )
    .unwrap();
    assert_eq!(k(&small, Era::V2_6_9).1, 4);
    assert_eq!(k(&small, Era::V6_8).1, 3);
}

/// Zeroing load by duty: threads that zero for a small share of each fault
/// load their node's memory by that share, not by one each. On xeon-4s,
/// 16 processes of 4 KiB faults on socket 0 zero at the CPU's own rate
/// (their duty makes ~1.5 zeroing at once), while counted as always zeroing
/// they would split the socket's bandwidth 16 ways; and as `fault_ns`
/// shrinks toward 0 (every thread always zeroing) the two agree.
#[test]
fn zeroing_load_counts_each_thread_by_its_zeroing_share() {
    use numasim::kernel::mm::Placement;
    let mut m = machine("xeon-4s");
    let placed: Vec<Placement> = (0..16)
        .map(|_| Placement {
            parts: vec![(0, 1000)],
        })
        .collect();
    let nodes = vec![0usize; 16];
    let unit = 4096;
    let by_duty = memory::zeroing_ns(&m, &nodes, &placed, unit);
    let always = memory::sharers(&m, &placed);
    let all_zeroing: Vec<f64> = placed
        .iter()
        .map(|p| memory::mean_zero_ns(&m, 0, p, unit, &always))
        .collect();
    let own_rate = unit as f64 / m.fault.zero_gbps;
    assert!(
        (by_duty[0] - own_rate).abs() < 1e-6,
        "{by_duty:?} vs {own_rate}"
    );
    assert!(all_zeroing[0] > 1.2 * by_duty[0], "{all_zeroing:?}");
    m.fault.fault_ns = 0.0;
    let no_rest = memory::zeroing_ns(&m, &nodes, &placed, unit);
    assert!(
        (no_rest[0] / all_zeroing[0] - 1.0).abs() < 1e-9,
        "{no_rest:?} vs {all_zeroing:?}"
    );
}

/// page_fault2's unmaps come after the mapping's last fault: moving a
/// page's munmap CPU time from the fault's work into `unmap_ns` leaves one
/// process's time unchanged (the same work in another order), while 16
/// processes, whose unmap phase is otherwise lock holds back to back, get
/// faster; and the whole run is simulated whatever the sample (a window
/// of faults alone would never reach the unmaps).
#[test]
fn the_unmaps_are_a_phase_after_the_faults() {
    let mut m = machine("xeon-4s");
    let b = Batches::from_knobs(&ContentionKnobs::defaults_for(&m, Era::V5_4));
    let path = memory::devzero_batched(false, true, b);
    let run = |m: &Machine, n: u64, work_ns: u64| {
        let th: Vec<FaultThread> = procs(m, n, 2_000)
            .into_iter()
            .map(|t| FaultThread { work_ns, ..t })
            .collect();
        memory::simulate(m, &th, &path, Spinlock::Tas, 64, 1)
    };
    m.fault.unmap_ns = 0.0;
    let (merged1, merged16) = (run(&m, 1, 3_200), run(&m, 16, 3_200));
    m.fault.unmap_ns = 300.0;
    let (split1, split16) = (run(&m, 1, 2_900), run(&m, 16, 2_900));
    assert!(
        (split1.time_s / merged1.time_s - 1.0).abs() < 1e-3,
        "{split1:?} vs {merged1:?}"
    );
    assert!(
        split16.time_s < merged16.time_s,
        "{split16:?} vs {merged16:?}"
    );
    assert_eq!(split16.simulated_faults, 16 * 2_000);
}

/// Today's anonymous fault (issue 36, round 14b; `memory::anon_batched`):
/// threads of one process share the VMA's reader count, so 16 of them
/// take longer over the same faults each than one thread alone; and with
/// the LRU lock taken once a batch they wait less than through the Altix
/// path's per-page LRU lock on the same node.
#[test]
fn todays_anonymous_fault_shares_the_vma_count_but_batches_the_lru() {
    let m = machine("xeon-4s");
    let b = Batches::from_knobs(&ContentionKnobs::defaults_for(&m, Era::V6_8));
    let today = memory::anon_batched(b);
    let sim = |n: u64, path: &memory::FaultPath| {
        memory::simulate(&m, &procs(&m, n, 600), path, Spinlock::Tas, u64::MAX, 1)
    };
    let one = sim(1, &today);
    let many = sim(16, &today);
    assert!(many.time_s > one.time_s, "{many:?} vs {one:?}");
    let altix = sim(16, &memory::anon_cmpxchg(memory::Scope::PerNode));
    assert!(many.time_s < altix.time_s, "{many:?} vs {altix:?}");
    assert!(many.lock_wait_fraction < altix.lock_wait_fraction);
}
