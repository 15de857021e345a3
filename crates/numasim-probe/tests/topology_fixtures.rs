//! The sysfs reader on fixture trees (one node, eight nodes, a memoryless
//! node with a CPU-less memory node), and machines calibrated from them
//! round-tripping through the loader.

use numasim::machine::Machine;
use numasim_probe::calibrate::{build_machine, Measurements};
use numasim_probe::topology::Topology;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn measurements(topo: Topology) -> Measurements {
    let total = topo.nodes.iter().map(|n| n.mem_total_kb).sum();
    Measurements {
        name: "fixture".into(),
        description: "from a fixture".into(),
        topo,
        proc_mem_total_kb: total,
        page_size: 4096,
        huge_page_sizes: vec![2 << 20],
        sizes: vec![],
        node_copy_bps: Some(5e9),
        node_copy_spread: None,
        node_copy_bytes: None,
        atomic_shared_ns: vec![(1, 5.0), (2, 40.0)],
        atomic_percpu_ns: Vec::new(),
        pairs: vec![],
        disk: Some(("probed ext4".into(), 500.0)),
        io: Default::default(),
        caches: vec![],
        cpu_model: "test cpu".into(),
        clock_mhz: Some(2500.0),
        tlb_entries: None,
        nt_store_threshold: None,
        fault_bytes: 0,
        fault_per_s: vec![],
        fault_on_cpu_per_s: vec![],
        clock_gettime_ns: vec![],
        gettimeofday_ns: vec![],
        spreads: vec![],
        memsys: Default::default(),
    }
}

fn round_trip(t: Topology) -> Machine {
    let (m, _notes) = build_machine(&measurements(t)).expect("calibrates");
    let back = Machine::from_toml_str(&m.to_toml_string(), "fixture").expect("loads");
    assert_eq!(back, m);
    m
}

#[test]
fn one_node() {
    let t = Topology::read(&fixture("one-node")).unwrap();
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.nodes[0].cpus, vec![0, 1]);
    assert_eq!(t.nodes[0].mem_total_kb, 4810968);
    assert_eq!(t.nodes[0].mem_free_kb, 4650260);
    assert_eq!(t.matrix(), vec![vec![10]]);
    let m = round_trip(t);
    assert_eq!(m.node_count(), 1);
    assert_eq!(m.cpu_count(), 2);
    assert_eq!(m.mem_bytes(), 4810968 * 1024);
    assert_eq!(m.memory.bandwidth_gbps, 10.0);
    assert_eq!(m.interconnect.line_transfer_ns, 20.0); // half the 2-thread add
    assert_eq!(m.io.disks[0].mibps, 500.0);
}

#[test]
fn eight_nodes() {
    let t = Topology::read(&fixture("eight-nodes")).unwrap();
    assert_eq!(t.nodes.len(), 8);
    assert_eq!(t.nodes[5].cpus, (40..48).collect::<Vec<_>>());
    assert_eq!(t.nodes[3].mem_free_kb, 15 * 1024 * 1024 + 3);
    assert_eq!(t.matrix()[0], vec![10, 12, 12, 12, 32, 32, 32, 32]);
    assert_eq!(t.matrix()[6][2], 32);
    assert_eq!(t.node_of_cpu(63), Some(7));
    let m = round_trip(t);
    assert_eq!(m.node_count(), 8);
    assert_eq!(m.cpu_count(), 64);
    assert_eq!(m.distances.ratio(0, 7), 3.2);
}

#[test]
fn memoryless_and_cpuless_nodes() {
    let t = Topology::read(&fixture("memoryless")).unwrap();
    assert_eq!(t.nodes.len(), 3);
    assert_eq!(t.nodes[0].mem_total_kb, 0);
    assert_eq!(t.nodes[0].cpus.len(), 4);
    assert!(t.nodes[2].cpus.is_empty());
    let m = round_trip(t);
    assert_eq!(m.nodes[0].mem_bytes, 0);
    assert_eq!(m.nodes[2].cpus, 0);
    assert_eq!(
        m.boot.boot_node, 1,
        "boots on the first node with CPUs and memory"
    );
}

#[test]
fn missing_tree_is_an_error_naming_the_path() {
    let e = Topology::read(&fixture("no-such-tree")).unwrap_err();
    assert!(e.contains("no-such-tree"), "{e}");
}

/// The memory-system figures of an eight-node, two-socket host (issue
/// 29): local, same-socket and cross-socket latency, node and core reads,
/// two c2c domains. The fit writes `[memsys]`, the machine reads back,
/// and `mlc-latency-matrix` on it gives every measured pair within the
/// pairs' own scatter (the hops are means per kind, not one per pair).
#[test]
fn eight_nodes_memsys_fits_and_validates() {
    use numasim_probe::memsys::MemSysMeas;
    let t = Topology::read(&fixture("eight-nodes")).unwrap();
    let mut meas = measurements(t);
    let lat = |i: usize, j: usize| {
        let same = (i < 4) == (j < 4);
        if i == j {
            110.0
        } else if same {
            120.0 + j as f64 // a little scatter within the socket
        } else {
            200.0
        }
    };
    let mut ms = MemSysMeas {
        smt: Some(2),
        sockets: Some(2),
        when: "2026-01-01 00:00 UTC".into(),
        core_read: Some((12e9, 0.02)),
        ..Default::default()
    };
    for i in 0..8 {
        for j in 0..8 {
            ms.latency.push((i, j, lat(i, j), 0.01));
        }
        ms.node_read.push((i, i, 60e9, 0.02));
    }
    ms.c2c.push(("core".into(), 0, 1, 8.0, 0.05));
    ms.c2c.push(("remote".into(), 0, 40, 180.0, 0.05));
    meas.memsys = ms;
    let f = numasim_probe::calibrate::fit(&meas).expect("fits");
    let s = &f.machine.memsys;
    assert!(s.explicit);
    assert_eq!(s.nodes_per_socket, 4);
    assert_eq!(s.smt, 2);
    assert!((s.socket_hop_ns - 90.0).abs() < 1e-9, "{}", s.socket_hop_ns);
    assert!(s.node_hop_ns > 10.0 && s.node_hop_ns < 18.0);
    assert_eq!(s.c2c_ns[0], 8.0);
    assert_eq!(s.c2c_ns[4], 180.0);
    let (text, _) = f.annotated_toml();
    assert!(text.contains("measured by the probe on fixture, 2026-01-01 00:00 UTC"));
    let back = Machine::from_toml_str(&text, "fixture").expect("loads");
    assert_eq!(back, f.machine);
    let rows = numasim_probe::memsys::validate(&meas, &f.machine, f.node_gbps_from);
    let lat_rows: Vec<_> = rows
        .iter()
        .filter(|r| r.metric == "idle_latency_ns")
        .collect();
    assert_eq!(lat_rows.len(), 64);
    for r in &lat_rows {
        let d = r.deviation().unwrap().abs();
        assert!(d < 0.06, "{:?}: {d}", r.case);
    }
    // The eight nodes alike: every local row is a validation of the mean.
    assert!(lat_rows
        .iter()
        .all(|r| r.role == Some(numasim::report::Role::Validation)));
    assert!(rows.iter().any(|r| r.metric == "bandwidth_mbps"));
    assert!(rows.iter().any(|r| r.metric == "c2c_latency_ns"));
}

#[test]
fn shared_counter_fit_reproduces_its_two_threads_and_predicts_more() {
    // The fitted line transfer, run through the simulated shared counter,
    // gives back the 2-thread add it was fitted on (it gave twice that when
    // the fit took the whole figure), and more threads wait longer per add.
    let mut meas = measurements(Topology::read(&fixture("eight-nodes")).unwrap());
    meas.atomic_shared_ns = vec![(1, 5.0), (2, 40.0), (8, 150.0)];
    let (m, _) = build_machine(&meas).expect("calibrates");
    let rows = numasim_probe::validate::validate(&meas, &m, &[]);
    let at = |t: u64| {
        rows.iter()
            .find(|r| r.metric == "atomic_add_ns" && r.case_value("threads") == Some(&t.into()))
            .unwrap_or_else(|| panic!("no {t}-thread atomic row"))
    };
    let two = at(2);
    let two_ns = two.value.expect("simulated");
    assert!((two_ns - 40.0).abs() < 0.02 * 40.0, "{two_ns}");
    assert_eq!(two.role, Some(numasim::report::Role::Calibration));
    let eight = at(8);
    assert_eq!(eight.role, Some(numasim::report::Role::Validation));
    let eight_ns = eight.value.expect("simulated");
    assert!(eight_ns > 2.0 * two_ns, "{eight_ns} vs {two_ns}");
    assert!(rows
        .iter()
        .all(|r| r.metric != "atomic_add_ns" || r.case_value("threads") != Some(&1u64.into())));
}

#[test]
fn node_to_node_copies_are_simulated_as_bound_streams() {
    // Every remote pair's one-thread copy becomes a `stream` row with its
    // CPUs on one node and its arrays bound to the other; with several
    // pairs (the link fitted on their mean) they are predictions, and a
    // farther pair is simulated no faster than a nearer one.
    let mut meas = measurements(Topology::read(&fixture("eight-nodes")).unwrap());
    meas.pairs = vec![
        (0, 0, 100.0, 8.0e9),
        (0, 1, 150.0, 5.0e9),
        (0, 7, 250.0, 3.0e9),
    ];
    let (m, _) = build_machine(&meas).expect("calibrates");
    let rows = numasim_probe::memsys::validate(&meas, &m, Default::default());
    let pair = |j: u64| {
        rows.iter()
            .find(|r| r.metric == "stream_mbps" && r.case_value("mem_node") == Some(&j.into()))
            .unwrap_or_else(|| panic!("no 0 -> {j} copy row"))
    };
    let (near, far) = (pair(1), pair(7));
    assert_eq!(near.role, Some(numasim::report::Role::Validation));
    assert_eq!(near.paper, Some(10_000.0));
    assert_eq!(far.paper, Some(6_000.0));
    assert!(near.value.unwrap() > 0.0);
    assert!(far.value.unwrap() <= near.value.unwrap() * 1.0001);
    assert!(rows
        .iter()
        .all(|r| r.case_value("mem_node") != Some(&0u64.into())));
}
