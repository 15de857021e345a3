//! PCI ordering and DMA placement on Altix ([ALTIX04] G1–G4): the
//! calibration rows hold, the mechanisms move the way they must, runs are
//! deterministic, and bad input names its key.

use numasim::error::InputError;
use numasim::experiments;
use numasim::report::Record;
use numasim::scenario::run::run;
use numasim::scenario::Scenario;
use serde_json::json;

fn replay(id: &str) -> (Scenario, Vec<Record>) {
    let sc = experiments::load(id).unwrap();
    let recs = run(&sc, &[]).unwrap();
    (sc, recs)
}

fn value(recs: &[Record], metric: &str, keys: &[(&str, serde_json::Value)]) -> f64 {
    recs.iter()
        .find(|r| r.metric == metric && keys.iter().all(|(k, v)| r.case_value(k) == Some(v)))
        .and_then(|r| r.value)
        .unwrap_or_else(|| panic!("no {metric} at {keys:?}"))
}

fn scenario(step: &str) -> Result<Scenario, InputError> {
    Scenario::from_str(
        &format!("name = \"t\"\nseed = 1\n[machine]\npreset = \"altix-512\"\n[[run]]\n{step}"),
        "t.toml",
        None,
    )
}

#[test]
fn relaxed_reads_beat_normal_ones_idle_and_busy() {
    let (_, recs) = replay("altix-pio");
    for load in ["idle", "busy"] {
        let n = value(
            &recs,
            "time_ns",
            &[("pio", json!("normal")), ("load", json!(load))],
        );
        let r = value(
            &recs,
            "time_ns",
            &[("pio", json!("relaxed")), ("load", json!(load))],
        );
        assert!(r < n, "{load}: relaxed {r} vs normal {n}");
    }
    // Both wait for the bus behind DMA bursts; only the normal read also
    // waits for the DMA writes to reach memory.
    let t = |p: &str, l: &str| value(&recs, "time_ns", &[("pio", json!(p)), ("load", json!(l))]);
    assert!(t("relaxed", "busy") > t("relaxed", "idle"));
    assert!(
        t("normal", "busy") - t("normal", "idle") > t("relaxed", "busy") - t("relaxed", "idle"),
        "the flush should add to what a busy bus costs"
    );
}

/// The three ways to order 5 posted writes, with `sn_mmiob()` polling
/// back to back (`cpu-relax`, 2.6.7-rc3 on) or one `udelay(1)` apart
/// (`udelay`, the experiment's kernels).
fn flush_rows(wait: &str) -> Vec<Record> {
    let sc = scenario(&format!(
        "workload = \"pio-flush\"\nmmiob_wait = \"{wait}\"\nload = [\"idle\", \"busy\"]\nops = 100\n"
    ))
    .unwrap();
    run(&sc, &[]).unwrap()
}

fn flush_time(recs: &[Record], method: &str, load: &str) -> f64 {
    value(
        recs,
        "time_ns",
        &[("pio_flush", json!(method)), ("load", json!(load))],
    )
}

#[test]
fn mmiob_polling_back_to_back_is_the_cheapest_way_to_order_posted_writes() {
    let recs = flush_rows("cpu-relax");
    for load in ["idle", "busy"] {
        let t = |m: &str| flush_time(&recs, m, load);
        let (pio, relaxed, mmiob) = (t("pio-read"), t("relaxed-read"), t("mmiob"));
        assert!(
            mmiob < relaxed && relaxed < pio,
            "{load}: {mmiob} {relaxed} {pio}"
        );
        // sn_mmiob() polls the local hub at least once.
        let chipset = value(&recs, "chipset_read_ns", &[("load", json!(load))]);
        assert!(
            mmiob >= chipset,
            "{load}: mmiob {mmiob} < one poll {chipset}"
        );
    }
}

/// The first poll is issued right after the stores and samples the hub's
/// register before any write response can be back (each must go out on
/// the link and back), so with `udelay(1)` between polls sn_mmiob() always
/// pays one microsecond and a second poll.
#[test]
fn mmiob_with_udelay_always_pays_a_second_poll() {
    let m = numasim::machine::presets::preset("altix-512").unwrap();
    let slow = flush_rows("udelay");
    let fast = flush_rows("cpu-relax");
    for load in ["idle", "busy"] {
        let u = flush_time(&slow, "mmiob", load);
        let c = flush_time(&fast, "mmiob", load);
        let floor = 5.0 * m.pci.uc_store_ns + 2.0 * m.chipset_read_ns() + 1000.0;
        assert!(u >= floor - 0.5, "{load}: udelay mmiob {u} below {floor}");
        assert!(u > c, "{load}: udelay {u} vs cpu-relax {c}");
        // The reads do not poll: the wait does not touch them.
        for method in ["pio-read", "relaxed-read"] {
            let (a, b) = (
                flush_time(&slow, method, load),
                flush_time(&fast, method, load),
            );
            assert!((a - b).abs() < 1e-9, "{load} {method}: {a} vs {b}");
        }
    }
}

/// Write responses come back on the chipset-to-hub link behind the DMA
/// packets queued there, so a busy bus delays sn_mmiob() even though it
/// never waits for the bus or for memory; the register read alone does not
/// move.
#[test]
fn write_responses_queue_behind_dma_on_the_io_link() {
    let recs = flush_rows("cpu-relax");
    let idle = flush_time(&recs, "mmiob", "idle");
    let busy = flush_time(&recs, "mmiob", "busy");
    assert!(busy > idle, "mmiob idle {idle}, busy {busy}");
    let poll = |l: &str| value(&recs, "chipset_read_ns", &[("load", json!(l))]);
    assert_eq!(poll("idle"), poll("busy"));
}

/// A slower hub-chipset link (Xtown2 also runs at 800 MB/s) carries the
/// background DMA at no more than its own rate, the chipset's buffer
/// throttling the bus, and makes every packet that shares it wait longer.
#[test]
fn a_slower_io_link_throttles_dma_and_delays_read_responses() {
    let at = |gbps: f64| {
        let sc = Scenario::from_str(
            &format!("name = \"t\"\nseed = 1\n[machine]\npreset = \"altix-512\"\n[machine.pci]\nio_link_gbps = {gbps}\n[[run]]\nworkload = \"pio-read\"\npio = \"relaxed\"\nload = [\"idle\", \"busy\"]\nops = 100\n"),
            "t.toml",
            None,
        )
        .unwrap();
        let recs = run(&sc, &[]).unwrap();
        let t = |l: &str| value(&recs, "time_ns", &[("load", json!(l))]);
        let mbps = value(&recs, "dma_mbps", &[("load", json!("busy"))]);
        (t("idle"), t("busy"), mbps)
    };
    let (fast_idle, fast_busy, fast_mbps) = at(1.2);
    let (slow_idle, slow_busy, slow_mbps) = at(0.8);
    assert!(slow_idle > fast_idle, "idle: {fast_idle} vs {slow_idle}");
    assert!(
        slow_busy - slow_idle > fast_busy - fast_idle,
        "busy penalty: 1.2 GB/s {} vs 0.8 GB/s {}",
        fast_busy - fast_idle,
        slow_busy - slow_idle
    );
    // 512-byte bursts are 33 micropackets of 16 bytes on the link.
    assert!(slow_mbps <= 800.0 * 512.0 / 528.0 + 1.0, "{slow_mbps}");
    assert!(slow_mbps < fast_mbps, "{slow_mbps} vs {fast_mbps}");
}

#[test]
fn the_flush_waits_longer_for_dma_to_farther_memory() {
    let at = |nodes: &str| {
        let sc = scenario(&format!(
            "workload = \"pio-read\"\nload = \"busy\"\nops = 100\ndma_nodes = {nodes}\n"
        ))
        .unwrap();
        let recs = run(&sc, &[]).unwrap();
        let t = |p: &str| value(&recs, "time_ns", &[("pio", json!(p))]);
        let mbps = value(&recs, "dma_mbps", &[("pio", json!("normal"))]);
        (t("normal"), t("relaxed"), mbps)
    };
    let (near_n, near_r, near_mbps) = at("[0]");
    let (far_n, far_r, far_mbps) = at("[255]");
    assert!(far_n > near_n, "normal read: near {near_n}, far {far_n}");
    // A relaxed read does not wait for the DMA writes at all.
    assert!(
        (far_r - near_r).abs() < 1.0,
        "relaxed: near {near_r}, far {far_r}"
    );
    // The background load is a real stream at (just under) the bus rate.
    let bus = 133.0 * 8.0;
    for m in [near_mbps, far_mbps] {
        assert!(
            m > 0.85 * bus && m <= bus * 1.001,
            "background DMA {m} MB/s, bus {bus}"
        );
    }
}

#[test]
fn local_dma_rings_beat_remote_ones_more_so_at_more_hops() {
    let (_, recs) = replay("altix-dma-placement");
    for q in [1, 16] {
        let local = value(
            &recs,
            "iops",
            &[("dma_alloc", json!("local")), ("queue_depth", json!(q))],
        );
        let mut last = local;
        for d in [19, 23, 27, 31, 35] {
            let remote = value(
                &recs,
                "iops",
                &[
                    ("dma_alloc", json!("remote")),
                    ("distance", json!(d)),
                    ("queue_depth", json!(q)),
                ],
            );
            assert!(
                remote < last,
                "qd {q}: distance {d}: {remote} not below {last}"
            );
            last = remote;
        }
    }
}

#[test]
fn runs_are_deterministic() {
    for id in ["altix-pio", "altix-dma-placement"] {
        let (_, a) = replay(id);
        let (_, b) = replay(id);
        let j = |r: &[Record]| {
            r.iter()
                .map(|x| serde_json::to_string(x).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(j(&a), j(&b), "{id}");
    }
}

fn bad(step: &str) -> InputError {
    scenario(step).expect_err("should be refused")
}

#[test]
fn bad_input_names_the_key() {
    let e = bad("workload = \"pio-read\"\npio = \"fast\"\n");
    assert_eq!(e.key.as_deref(), Some("run[0].pio"), "{e}");
    assert!(e.message.contains("relaxed"), "{e}");
    let e = bad("workload = \"pio-flush\"\npio_flush = [\"mmiob\", \"barrier\"]\n");
    assert_eq!(e.key.as_deref(), Some("run[0].pio_flush"), "{e}");
    assert!(e.message.contains("mmiob"), "{e}");
    let e = bad("workload = \"pio-flush\"\nwrites = -5\n");
    assert_eq!(e.key.as_deref(), Some("run[0].writes"), "{e}");
    let e = bad("workload = \"pio-flush\"\nmmiob_wait = \"spin\"\n");
    assert_eq!(e.key.as_deref(), Some("run[0].mmiob_wait"), "{e}");
    assert!(e.message.contains("cpu-relax"), "{e}");
    let e = bad("workload = \"pio-flush\"\nwrites = -5\n");
    assert_eq!(e.key.as_deref(), Some("run[0].writes"), "{e}");
    let e = bad("workload = \"dma-iops\"\nio_size = -4096\n");
    assert_eq!(e.key.as_deref(), Some("run[0].io_size"), "{e}");
    assert!(e.message.contains("negative"), "{e}");
    let e = bad("workload = \"dma-iops\"\nio_size = \"-4 KiB\"\n");
    assert_eq!(e.key.as_deref(), Some("run[0].io_size"), "{e}");
    let e = bad("workload = \"pio-read\"\ndevice_node = 256\n");
    assert_eq!(e.key.as_deref(), Some("run[0].device_node"), "{e}");
    assert!(e.message.contains("does not exist"), "{e}");
    let e = bad("workload = \"dma-iops\"\nremote_nodes = [3, 999]\n");
    assert_eq!(e.key.as_deref(), Some("run[0].remote_nodes"), "{e}");
    let e = bad("workload = \"dma-iops\"\nremote_nodes = [0]\n");
    assert!(e.message.contains("device's node"), "{e}");
    let e = bad("workload = \"dma-iops\"\nqueue_depth = 32\nios = 32\n");
    assert_eq!(e.key.as_deref(), Some("run[0].ios"), "{e}");
    assert_eq!(e.file.as_deref(), Some("t.toml"));
}

#[test]
fn bad_machine_pci_values_name_the_key() {
    let body = "name = \"t\"\n[machine]\npreset = \"altix-512\"\n[machine.pci]\nbridge_ns = -3\n[[run]]\nworkload = \"pio-read\"\n";
    let e = Scenario::from_str(body, "t.toml", None).expect_err("negative time");
    assert!(
        e.key.as_deref().unwrap_or("").ends_with("pci.bridge_ns"),
        "{e}"
    );
    let body = "name = \"t\"\n[machine]\npreset = \"altix-512\"\n[machine.pci]\nio_link_gbps = 0\n[[run]]\nworkload = \"pio-read\"\n";
    let e = Scenario::from_str(body, "t.toml", None).expect_err("zero link");
    assert!(
        e.key.as_deref().unwrap_or("").ends_with("pci.io_link_gbps"),
        "{e}"
    );
    assert!(e.message.contains("GB/s"), "{e}");
}

/// Coherence on the status ring: the device's status write to a line the
/// handler's CPU still shares must wait for the ring's home to invalidate
/// that copy. At queue depth 1 a remote ring then costs each I/O five
/// fabric round trips between the ring's node and the CPU's (the command
/// write miss, the command fetch forwarded from the CPU, the status write
/// and its ack, the invalidation, the handler's status miss), not four.
#[test]
fn remote_status_ring_pays_the_invalidation_round_trip() {
    let m = numasim::machine::presets::preset("altix-512").unwrap();
    let (_, recs) = replay("altix-dma-placement");
    let lat = |alloc: &str, d: u64| {
        let mut keys = vec![("dma_alloc", json!(alloc)), ("queue_depth", json!(1))];
        if alloc == "remote" {
            keys.push(("distance", json!(d)));
        }
        value(&recs, "io_latency_us", &keys) * 1e3
    };
    let local = lat("local", 10);
    for (d, ring) in [(19u64, 1usize), (35, 64)] {
        let gap = lat("remote", d) - local;
        let rt = 2.0 * m.fabric_one_way_ns(0, ring);
        assert!(
            gap > 4.5 * rt && gap < 5.5 * rt,
            "distance {d}: remote ring adds {gap:.0} ns per I/O, fabric round trip {rt:.0}"
        );
    }
}

/// `dma-iops` on altix-512 (device and CPU on node 0, the remote ring on
/// node 64) at queue depths 1 and 16, 400 I/Os, with `extra` step keys.
fn dma_rows(extra: &str) -> Vec<Record> {
    let sc = scenario(&format!(
        "workload = \"dma-iops\"\nremote_nodes = [64]\nqueue_depth = [1, 16]\nios = 400\n{extra}"
    ))
    .unwrap();
    run(&sc, &[]).unwrap()
}

fn dma_value(recs: &[Record], metric: &str, alloc: &str, q: u32) -> f64 {
    value(
        recs,
        metric,
        &[("dma_alloc", json!(alloc)), ("queue_depth", json!(q))],
    )
}

/// What the remote ring adds to an I/O's latency at queue depth 1, µs.
fn remote_gap_us(recs: &[Record]) -> f64 {
    dma_value(recs, "io_latency_us", "remote", 1) - dma_value(recs, "io_latency_us", "local", 1)
}

/// The least an idle relaxed read costs on the device's node: the hub
/// register read's two halves, the device's answer, two chipset crossings.
fn relaxed_floor(m: &numasim::machine::Machine) -> f64 {
    m.chipset_read_ns() + m.pci.pio_read_ns + 2.0 * m.pci.bridge_ns
}

/// The handler's relaxed register reads (5 here, as a count) cost
/// every I/O the same wherever the rings are, so at queue depth 1 they add
/// at least 5 idle relaxed reads per I/O and leave the remote ring's extra
/// cost as it was; at queue depth 16 one handler takes several completions,
/// so the reads cost a smaller share of the I/O rate.
#[test]
fn handler_register_reads_add_to_every_io_and_amortise_at_depth() {
    let (none, five) = (dma_rows("isr_reads = 0\n"), dma_rows("isr_reads = 5\n"));
    let get = dma_value;
    let m = numasim::machine::presets::preset("altix-512").unwrap();
    let relaxed_floor = relaxed_floor(&m);
    for alloc in ["local", "remote"] {
        let added =
            (get(&five, "io_latency_us", alloc, 1) - get(&none, "io_latency_us", alloc, 1)) * 1e3;
        assert!(
            added >= 5.0 * relaxed_floor,
            "{alloc}: reads add {added:.0} ns, below 5 x {relaxed_floor:.0}"
        );
    }
    assert!(
        (remote_gap_us(&five) - remote_gap_us(&none)).abs() < 0.01,
        "remote-ring gap {} vs {} us",
        remote_gap_us(&five),
        remote_gap_us(&none)
    );
    let drop = |q: u32| 1.0 - get(&five, "iops", "local", q) / get(&none, "iops", "local", q);
    assert!(drop(1) > 0.2, "qd 1: reads cut IOPS by {:.3}", drop(1));
    assert!(
        drop(16) < drop(1) / 4.0,
        "qd 16 {:.3} vs qd 1 {:.3}",
        drop(16),
        drop(1)
    );
}

/// qla1280 3.24.4 (2.6.8) makes one flushing read per interrupt
/// (`RD_REG_WORD_dmasync(&reg->semaphore)`: `readw`, so `sn_dma_flush()`
/// on sn2) and reads the doorbell back after each submission. At queue
/// depth 1 the flush finds every earlier DMA write acknowledged (the
/// interrupt followed the status write), so it adds at least its own chain
/// (a relaxed read, the flag's ownership miss, the chipset's turnaround,
/// the recall of the flag line and the spin's miss) to every I/O wherever
/// the ring is, and leaves the remote ring's extra time as it was. The
/// read-back overlaps the adapter's work at depth 1 (it never speeds an
/// I/O there) but lengthens the CPU's share of every I/O, so at depth 16,
/// beside the driver's other reads, it makes the CPU the limit and lowers
/// the rate. (At depth 16 neither is monotone to the last 0.5%: a longer
/// handler takes larger batches.)
#[test]
fn flushing_handler_read_and_doorbell_read_back_cost_every_io() {
    let (base, flush, both) = (
        dma_rows("isr_reads = 4\n"),
        dma_rows("isr_reads = 4\nisr_flush_reads = 1\n"),
        dma_rows("isr_reads = 4\nisr_flush_reads = 1\nsubmit_reads = 1\n"),
    );
    let get = dma_value;
    let m = numasim::machine::presets::preset("altix-512").unwrap();
    let chain = relaxed_floor(&m) + m.pci.flush_ns + 3.0 * m.mem_latency_ns(0, 0);
    for alloc in ["local", "remote"] {
        let added =
            (get(&flush, "io_latency_us", alloc, 1) - get(&base, "io_latency_us", alloc, 1)) * 1e3;
        assert!(
            added >= chain,
            "{alloc}: the flushing read adds {added:.0} ns, below its chain {chain:.0}"
        );
        assert!(
            get(&both, "iops", alloc, 1) <= get(&flush, "iops", alloc, 1),
            "{alloc} qd 1: a read-back made the run faster"
        );
        let drop = 1.0 - get(&both, "iops", alloc, 16) / get(&flush, "iops", alloc, 16);
        assert!(
            drop > 0.02,
            "{alloc} qd 16: the read-back cut IOPS by {drop:.4}"
        );
    }
    assert!(
        (remote_gap_us(&flush) - remote_gap_us(&base)).abs() < 0.01,
        "remote-ring gap {} vs {} us",
        remote_gap_us(&flush),
        remote_gap_us(&base)
    );
}
