//! Page-cache and slab placement ([ALTIX04] A4, A5) and the 2.4 kswapd
//! trigger: directions the paper describes, and conservation.

use numasim::experiments;
use numasim::kernel::config::Spread;
use numasim::kernel::mm::filemap::read_file;
use numasim::kernel::mm::mempolicy::Allocator;
use numasim::kernel::mm::{PageAlloc, PolicyCursor};
use numasim::machine::presets::preset;
use numasim::report::{Record, Summary};
use numasim::scenario::run::run;
use proptest::prelude::*;

fn metric(recs: &[Record], pc: &str, slab: &str, m: &str) -> f64 {
    recs.iter()
        .find(|r| {
            r.metric == m
                && r.case_value("kernel.page_cache_alloc")
                    .and_then(|v| v.as_str())
                    == Some(pc)
                && r.case_value("kernel.slab_alloc").and_then(|v| v.as_str()) == Some(slab)
        })
        .and_then(|r| r.value)
        .unwrap_or_else(|| panic!("no {m} for {pc}/{slab}"))
}

#[test]
fn local_page_cache_floods_nodes_without_waking_kswapd_and_the_job_spills() {
    let sc = experiments::load("altix-pagecache-spill").unwrap();
    let recs = run(&sc, &[]).unwrap();
    // Local: 40 GB of cache fills ~20 nodes of 2 GB; kswapd sleeps (2.4 global trigger).
    assert_eq!(metric(&recs, "local", "local", "kswapd_woken"), 0.0);
    assert!(metric(&recs, "local", "local", "nodes_full_of_page_cache") >= 19.0);
    assert!(metric(&recs, "local", "local", "job_remote_fraction") > 0.9);
    assert!(metric(&recs, "local", "local", "job_slowdown") > 2.0);
    // Round-robin cache and slab: the job stays local.
    assert!(metric(&recs, "round-robin", "round-robin", "job_remote_fraction") < 0.01);
    assert!(metric(&recs, "round-robin", "round-robin", "job_slowdown") < 1.1);
    // Round-robin cache alone leaves the buffer heads on node 0: in between.
    let mid = metric(&recs, "round-robin", "local", "job_remote_fraction");
    assert!(mid > 0.01 && mid < 0.9, "{mid}");
}

#[test]
fn buffer_heads_pile_up_on_the_reader_node_unless_slab_is_round_robin() {
    let sc = experiments::load("altix-buffer-head-imbalance").unwrap();
    let recs = run(&sc, &[]).unwrap();
    let s = Summary::of(&sc.name, &recs, &sc.papers);
    assert!(s.passed() && s.compared == 1, "{s}");
    let rr = recs
        .iter()
        .find(|r| r.case_value("kernel.slab_alloc").and_then(|v| v.as_str()) == Some("round-robin"))
        .and_then(|r| r.value)
        .unwrap();
    assert!(rr < 100.0, "round-robin slab removes the imbalance ({rr})");
}

#[test]
fn kswapd_wakes_only_under_global_pressure() {
    let m = preset("altix-hashdist-16").unwrap();
    let mut mm = PageAlloc::new(&m, 17);
    mm.set_watermarks(None);
    let mut cur = PolicyCursor::default();
    let who = Allocator {
        task: 1,
        cpu: 0,
        node: 0,
    };
    // Fill node 0 and spill: other nodes have room, kswapd sleeps.
    let node0 = mm.node(0).present;
    read_file(
        &mut mm,
        &mut cur,
        who,
        node0 * 2,
        0,
        Spread::Local,
        Spread::Local,
    )
    .unwrap();
    assert_eq!(mm.kswapd_wakeups(), 0);
    // Take nearly everything: every node below pages_low wakes it.
    let rest = mm.total_free() - mm.nodes().iter().map(|n| n.watermark[1]).sum::<u64>() + 1;
    read_file(
        &mut mm,
        &mut cur,
        who,
        rest,
        0,
        Spread::Local,
        Spread::Local,
    )
    .unwrap();
    assert_eq!(mm.kswapd_wakeups(), 1);
}

proptest! {
    /// Reads conserve pages on every node; a read that does not fit takes nothing.
    #[test]
    fn reads_conserve_pages(reads in prop::collection::vec((0u64..600_000, 0u64..2048, any::<bool>(), any::<bool>(), 0u64..32), 1..12)) {
        let m = preset("altix-hashdist-16").unwrap();
        let mut mm = PageAlloc::new(&m, 17);
        mm.set_watermarks(None);
        let mut cur = PolicyCursor::default();
        for (pages, slab, pc_rr, slab_rr, cpu) in reads {
            let who = Allocator { task: 1, cpu, node: (cpu / 2) as usize };
            let spread = |rr| if rr { Spread::RoundRobin } else { Spread::Local };
            let before = mm.total_free();
            match read_file(&mut mm, &mut cur, who, pages, slab, spread(pc_rr), spread(slab_rr)) {
                Ok(r) => prop_assert_eq!(before - mm.total_free(), r.page_cache.pages() + r.slab.pages()),
                Err(_) => prop_assert_eq!(before, mm.total_free()),
            }
            prop_assert!(mm.check_conservation().is_ok());
        }
    }
}

#[test]
fn the_global_trigger_waits_for_the_whole_machine() {
    use numasim::kernel::mm::page_alloc::KswapdTrigger;
    let m = preset("altix-hashdist-16").unwrap();
    let mut mm = PageAlloc::new(&m, 17);
    mm.set_watermarks(None);
    mm.set_kswapd_trigger(KswapdTrigger::Global);
    let mut cur = PolicyCursor::default();
    let who = Allocator {
        task: 1,
        cpu: 0,
        node: 0,
    };
    // Half the machine full of cache: no wake-up.
    let half = mm.total_free() / 2;
    read_file(
        &mut mm,
        &mut cur,
        who,
        half,
        0,
        Spread::Local,
        Spread::Local,
    )
    .unwrap();
    assert_eq!(mm.kswapd_wakeups(), 0);
    // Down to the global low watermark: it wakes.
    let low: u64 = mm.nodes().iter().map(|n| n.watermark[1]).sum();
    let to_low = mm.total_free() - low + 1;
    read_file(
        &mut mm,
        &mut cur,
        who,
        to_low,
        0,
        Spread::Local,
        Spread::Local,
    )
    .unwrap();
    assert!(mm.kswapd_wakeups() >= 1);
}
