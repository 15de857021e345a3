//! The fitting on recorded probe runs (`tests/fixtures/runs/*.jsonl`:
//! three consecutive `--quick --validate --format jsonl` runs on a 2-vCPU
//! Firecracker guest, AMD EPYC; the host records at the end of each —
//! caches, clock, page sizes, `TLB size` — were read off the same guest's
//! sysfs and /proc/cpuinfo; and one such run on a 2-vCPU KVM guest of an
//! Intel Xeon, `xeon-2cpu-quick-1.jsonl`, which also records glibc's
//! non-temporal threshold for `memcpy`). The fitted machine reproduces the
//! measurements it was fitted on, predicts the others, reads back as the
//! same machine, and three runs agree within their reported spreads.

use numasim::machine::Machine;
use numasim::report::Role;
use numasim_probe::calibrate::{fit, measurements_from_jsonl, measurements_from_records, Fit};
use numasim_probe::validate::{validate, validation_summary, EXPERIMENT};
use std::path::PathBuf;

fn run_text(i: usize) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/runs/vm-2cpu-quick-{i}.jsonl"));
    std::fs::read_to_string(p).unwrap()
}

fn fitted(i: usize) -> (numasim_probe::calibrate::Measurements, Fit) {
    let m = measurements_from_records(&run_text(i)).unwrap();
    let f = fit(&m).unwrap();
    (m, f)
}

/// Calibration rows reproduce their measurement within 5% (the fit's
/// arithmetic); the prediction rows — every other size, page kind, thread
/// count — have a median |Δ| of at most 15% on each run.
#[test]
fn validate_reproduces_calibration_and_predicts_the_rest() {
    for i in 1..=3 {
        let (m, f) = fitted(i);
        let rows = validate(&m, &f.machine, &f.used);
        assert!(rows.iter().all(|r| r.experiment == EXPERIMENT));
        let cal: Vec<_> = rows
            .iter()
            .filter(|r| r.role == Some(Role::Calibration))
            .collect();
        assert!(cal.len() >= 8, "run {i}: {} calibration rows", cal.len());
        for r in &cal {
            let d = r.deviation().unwrap();
            // The engine prices a line transfer in whole nanoseconds, and a
            // shared-counter add at 2 threads is two of them: up to 1 ns off
            // (7% of this guest's 14.8 ns), whatever the fit.
            let bound = match r.metric.as_str() {
                "atomic_add_ns" => 0.05f64.max(1.0 / r.paper.unwrap()),
                _ => 0.05,
            };
            assert!(
                d.abs() <= bound,
                "run {i} {} {:?}: {d:+.3}",
                r.metric,
                r.case
            );
        }
        let (median, worst, n) = validation_summary(&rows).unwrap();
        assert_eq!(n + cal.len(), rows.len());
        assert!(
            median <= 0.15,
            "run {i}: median |Δ| {median:.3} (worst {worst:.3})"
        );
        // Every kind of prediction is there: curves, clock, faults.
        for metric in [
            "copy_mbps",
            "random_mbps",
            "mem_latency_ns",
            "gettimeofday_ns",
            "fault_per_s",
        ] {
            assert!(
                rows.iter()
                    .any(|r| r.metric == metric && r.role == Some(Role::Validation)),
                "run {i}: no {metric} prediction"
            );
        }
    }
}

/// Three consecutive runs write machines whose fitted values agree within
/// their reported spreads: |a - b| <= spread_a |a| + spread_b |b|.
#[test]
fn three_runs_agree_within_their_spreads() {
    let fits: Vec<Fit> = (1..=3).map(|i| fitted(i).1).collect();
    let value = |f: &Fit, key: &str| -> f64 {
        let m = &f.machine;
        let cache = |k: &str| -> usize {
            k[k.find('#').unwrap() + 1..k.find('.').unwrap_or(k.len())]
                .parse()
                .unwrap()
        };
        match key {
            k if k.starts_with("cpu.cache#") && k.ends_with("latency_cycles") => {
                m.cpu.caches[cache(&k["cpu.".len()..])].latency_cycles
            }
            k if k.starts_with("cpu.cache#") && k.ends_with("copy_mbps") => {
                m.cpu.caches[cache(&k["cpu.".len()..])].copy_mbps.unwrap()
            }
            "dram.latency_ns" => m.memory.latency_ns,
            "tlb.miss_ns" => m.tlb.miss_ns,
            "tlb.entries" => m.tlb.entries as f64,
            "hierarchy.read_ns" => m.hierarchy.read_ns,
            "hierarchy.mlp" => m.hierarchy.mlp,
            "hierarchy.l1_copy_mbps" => m.hierarchy.l1_copy_mbps,
            "hierarchy.stream_mbps" => m.hierarchy.stream_mbps,
            "hierarchy.llc_reach" => m.hierarchy.llc_reach as f64,
            "hierarchy.reach" => *m.hierarchy.reach.last().unwrap() as f64,
            "hierarchy.stream_reach" => *m.hierarchy.stream_reach.last().unwrap() as f64,
            "hierarchy.random_reach" => *m.hierarchy.random_reach.last().unwrap() as f64,
            "hierarchy.prefetch_depth_lines" => m.hierarchy.prefetch_depth_lines,
            "hierarchy.l1_miss_issue_ns" => m.hierarchy.l1_miss_issue_ns,
            // A choice between two policies per cache, not a value with a
            // spread: compared below as the same choice or not.
            "hierarchy.cyclic_retain" | "hierarchy.stream_retain" | "hierarchy.host_frame" => {
                f64::NAN
            }
            other => panic!("no accessor for {other}"),
        }
    };
    let mut checked = 0;
    let mut disagree = Vec::new();
    for (key, _) in &fits[0].spreads {
        for a in 0..3 {
            for b in a + 1..3 {
                let sp = |f: &Fit| f.spreads.iter().find(|(k, _)| k == key).map(|x| x.1);
                let (Some(sa), Some(sb)) = (sp(&fits[a]), sp(&fits[b])) else {
                    continue;
                };
                let (va, vb) = (value(&fits[a], key), value(&fits[b], key));
                if va.is_nan() {
                    continue;
                }
                checked += 1;
                if (va - vb).abs() > sa * va.abs() + sb * vb.abs() + 1e-9 {
                    disagree.push(format!(
                        "{key}: run {} {va:.3} ±{:.1}% vs run {} {vb:.3} ±{:.1}%",
                        a + 1,
                        sa * 100.0,
                        b + 1,
                        sb * 100.0
                    ));
                }
            }
        }
    }
    assert!(checked >= 30, "only {checked} comparisons");
    // How the host places a huge page is the host's: one choice for all.
    let frames: Vec<u64> = fits
        .iter()
        .map(|f| f.machine.hierarchy.host_frame)
        .collect();
    assert!(frames.windows(2).all(|w| w[0] == w[1]), "{frames:?}");
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    // The node bandwidth: flagged runs fall back to one core's stream
    // rate, so the three machines' bandwidths agree too.
    let bw: Vec<f64> = fits
        .iter()
        .map(|f| f.machine.memory.bandwidth_gbps)
        .collect();
    let (lo, hi) = (
        bw.iter().cloned().fold(f64::MAX, f64::min),
        bw.iter().cloned().fold(0.0, f64::max),
    );
    assert!(hi / lo < 1.10, "{bw:?}");
}

#[test]
fn annotated_machine_reads_back_and_names_its_sources() {
    let (_, f) = fitted(2);
    let (text, unseen) = f.annotated_toml();
    let back = Machine::from_toml_str(&text, "annotated").unwrap();
    assert_eq!(back, f.machine);
    for key in [
        "stream_mbps",
        "clock_read_ns",
        "fault_ns",
        "read_ns",
        "llc_reach",
        "mlp",
        "copy_mbps",
        "latency_cycles",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key} is not written as fitted:\n{text}"));
        assert!(line.contains("  # "), "{line}");
    }
    assert!(unseen.contains(&"timer.hz".to_string()), "{unseen:?}");
    assert!(!unseen.iter().any(|u| u == "hierarchy.stream_mbps"));
    assert!(
        text.contains("# hz = 1000  # default: not seen by the probe"),
        "{text}"
    );
}

/// A noisy node bandwidth is flagged and not written: where its slowest
/// repetition may have copied less than one core, one core's stream rate
/// (a lower bound) is, and the comment says so.
#[test]
fn a_noisy_bandwidth_is_flagged_not_silently_written() {
    let mut m = measurements_from_records(&run_text(2)).unwrap();
    let line = |f: &Fit| machine_line(f, "bandwidth_gbps");
    m.node_copy_spread = Some(0.02);
    let quiet = fit(&m).unwrap();
    assert!(
        line(&quiet).contains("spread 2.0%") && !line(&quiet).contains("FLAGGED"),
        "{}",
        line(&quiet)
    );
    // The 2-vCPU guest's bimodal copy: a median 1.2x one core's, whose
    // slowest repetition may have copied less than one core.
    let core = quiet.machine.hierarchy.stream_mbps / 1e3;
    m.node_copy_bps = Some(1.2 * core / 2.0 * 1e9);
    m.node_copy_spread = Some(0.30);
    let noisy = fit(&m).unwrap();
    assert!(line(&noisy).contains("FLAGGED"), "{}", line(&noisy));
    assert!(
        (noisy.machine.memory.bandwidth_gbps - noisy.machine.hierarchy.stream_mbps / 1e3).abs()
            < 1e-9
    );
}

/// A node copy just over the spread bound whose slowest repetition still
/// copied far more than one core: that repetition's bound, 2 x median x
/// (1 - spread), is written, not one core's rate (the 16-vCPU Xeon guest's
/// run at 10.9%, where one core's 19 GB/s made 16 threads' zeroing share a
/// fifth of the node and bent the simulated faults).
#[test]
fn a_noisy_bandwidth_keeps_what_every_repetition_reached() {
    let mut m = measurements_from_records(&run_text(2)).unwrap();
    let quiet = fit(&m).unwrap();
    let core = quiet.machine.hierarchy.stream_mbps / 1e3;
    // Every CPU copying 8x one core's rate (STREAM's count 2 x the copy).
    m.node_copy_bps = Some(4.0 * core * 1e9);
    m.node_copy_spread = Some(0.12);
    let noisy = fit(&m).unwrap();
    let want = 2.0 * 4.0 * core * (1.0 - 0.12);
    assert!(
        (noisy.machine.memory.bandwidth_gbps - want).abs() < 1e-9 * want,
        "{} vs {want}",
        noisy.machine.memory.bandwidth_gbps
    );
    let line = machine_line(&noisy, "bandwidth_gbps");
    assert!(
        line.contains("FLAGGED") && line.contains("slowest repetition"),
        "{line}"
    );
}

#[test]
fn a_saved_runs_stream_rows_read_back_into_their_buffer() {
    // Round 22b's read-only and write-only streams, as a run writes them.
    let text = run_text(1)
        + r#"{"experiment":"probe","case":{"size":"16 MiB","bytes":16777216,"page":"4k"},"metric":"read_mbps","unit":"MB/s","value":111000.0,"spread":0.21}"#
        + "\n"
        + r#"{"experiment":"probe","case":{"size":"16 MiB","bytes":16777216,"page":"4k"},"metric":"write_mbps","unit":"MB/s","value":120000.0,"spread":0.19}"#
        + "\n";
    let m = measurements_from_records(&text).unwrap();
    let (_, _, r) = m
        .sizes
        .iter()
        .find(|(s, p, _)| *s == 16 << 20 && *p == numasim_probe::sys::PageKind::Base)
        .expect("the 16 MiB 4k buffer");
    assert_eq!((r.read_bps, r.write_bps), (111e9, 120e9));
    assert_eq!((r.spread[4], r.spread[5]), (0.21, 0.19));
    // The buffer's other figures are the run's, untouched.
    assert!(r.copy_bps > 0.0 && r.random_bps > 0.0);
}

#[test]
fn broken_records_are_refused_with_their_line() {
    let good = run_text(1);
    let cases = [
        ("{not json", "not JSON"),
        (
            r#"{"experiment":"probe","case":{},"value":1}"#,
            "no `metric`",
        ),
        (
            r#"{"experiment":"probe","case":{"threads":1},"metric":"gettimeofday_ns","value":"x"}"#,
            "no finite",
        ),
        (
            r#"{"experiment":"probe","case":{"bytes":4096,"page":"64k"},"metric":"copy_mbps","value":1}"#,
            "page `64k`",
        ),
        (
            r#"{"experiment":"probe","case":{"page":"4k"},"metric":"copy_mbps","value":1}"#,
            "case.bytes",
        ),
        (
            r#"{"experiment":"probe","case":{"of":"base"},"metric":"page_bytes","value":3000}"#,
            "not a power of two",
        ),
    ];
    for (line, needle) in cases {
        let e = measurements_from_records(&format!("{good}{line}\n")).unwrap_err();
        assert!(e.contains(needle) && e.contains("line "), "{line}: {e}");
    }
    // Truncated: the host records are at the end, so a cut run lacks them.
    let half = &good[..good.len() / 2];
    let e = measurements_from_records(half).unwrap_err();
    assert!(
        e.contains("not JSON") || e.contains("no `clock_mhz`"),
        "{e}"
    );
    // The measured part alone still parses into a given base.
    let base = measurements_from_records(&good).unwrap();
    assert!(measurements_from_jsonl(&good, base).is_ok());
}

/// The guest's `TLB size` (192 entries) puts a walk on most loads of the
/// 4 MiB chase with 4 KiB pages, which measured no slower than with huge
/// pages: the sweep contradicts it, so the fit raises the entries (and
/// says so in the machine file), and the 4 MiB 4k chase is predicted
/// within its spread where it was 60-80% over. Without the sweep's
/// smaller sizes nothing contradicts `TLB size`, and it is kept.
#[test]
fn the_sweep_overrules_a_tlb_size_it_contradicts() {
    for i in 1..=3 {
        let (m, f) = fitted(i);
        assert_eq!(m.tlb_entries, Some(192), "run {i}");
        let e = f.machine.tlb.entries;
        assert!((512..=4096).contains(&e), "run {i}: {e} entries");
        let (text, _) = f.annotated_toml();
        let line = text
            .lines()
            .find(|l| l.starts_with("entries ="))
            .expect("tlb.entries written");
        assert!(line.contains("4k chase"), "run {i}: {line}");
        let rows = validate(&m, &f.machine, &f.used);
        let r = rows
            .iter()
            .find(|r| {
                r.metric == "mem_latency_ns"
                    && r.case_value("size").and_then(|v| v.as_str()) == Some("4 MiB")
                    && r.case_value("page").and_then(|v| v.as_str()) == Some("4k")
            })
            .expect("4 MiB 4k chase row");
        assert_eq!(r.role, Some(Role::Validation));
        let d = r.deviation().unwrap().abs();
        assert!(d <= r.spread.unwrap().max(0.05), "run {i}: {d:.3}");
        // Only the largest 4k chase left: nothing to check it against.
        let mut only = m.clone();
        let largest = only
            .sizes
            .iter()
            .filter(|x| x.1.label() == "4k" && x.2.latency_ns.is_some())
            .map(|x| x.0)
            .max()
            .unwrap();
        only.sizes
            .retain(|x| x.1.label() != "4k" || x.0 == largest || x.2.latency_ns.is_none());
        assert_eq!(fit(&only).unwrap().machine.tlb.entries, 192, "run {i}");
    }
}

/// Per-CPU counters share no line, so the model's add costs one thread's
/// at every count; on the quiet EPYC guest (two vCPUs on separate cores)
/// the 2-thread per-CPU add is within max(its spread, 5%) of that, and a
/// host where it is not (vCPUs sharing a core) would show it as a
/// validation row outside its bound.
#[test]
fn per_cpu_counters_are_validated_against_one_thread() {
    for i in 1..=3 {
        let (m, f) = fitted(i);
        let rows = validate(&m, &f.machine, &f.used);
        let r = rows
            .iter()
            .find(|r| {
                r.metric == "atomic_add_ns"
                    && r.case_value("kind").and_then(|v| v.as_str()) == Some("percpu")
            })
            .expect("a per-CPU row");
        assert_eq!(r.role, Some(Role::Validation));
        assert_eq!(r.case_value("threads"), Some(&2u64.into()));
        let one = m.atomic_percpu_ns.iter().find(|x| x.0 == 1).unwrap().1;
        assert_eq!(r.value, Some(one));
        let sp = r.spread.expect("its spread");
        assert!(sp > 0.0 && sp < 0.5, "run {i}: {sp}");
        assert!(r.deviation().unwrap().abs() <= sp.max(0.05), "run {i}");
    }
}

/// Largest |Δ| of the validation rows of `metric` at `size` on a fit.
fn worst_at(m: &numasim_probe::calibrate::Measurements, f: &Fit, metric: &str, size: &str) -> f64 {
    let rows = validate(m, &f.machine, &f.used);
    let at: Vec<f64> = rows
        .iter()
        .filter(|r| r.metric == metric && r.role == Some(Role::Validation))
        .filter(|r| r.case_value("size").and_then(|v| v.as_str()) == Some(size))
        .map(|r| r.deviation().unwrap().abs())
        .collect();
    assert!(!at.is_empty(), "no {metric} validation row at {size}");
    at.into_iter().fold(0.0, f64::max)
}

/// The EPYC guest's L3 keeps a 16 MiB copy (54 GB/s, its own rate)
/// but not a 16 MiB chase (memory's latency): the copy's own reach,
/// fitted from the copy sweep, reaches past 16 MiB where the chase's
/// stops short of it, and the 16 MiB copy is predicted within 15% (it
/// was 52-55% slow with the chase's reach).
#[test]
fn the_epyc_l3_keeps_a_stream_that_the_chase_loses() {
    for i in 1..=3 {
        let (m, f) = fitted(i);
        let h = &f.machine.hierarchy;
        let (chase, stream) = (*h.reach.last().unwrap(), *h.stream_reach.last().unwrap());
        assert!(
            chase < 16 << 20 && stream >= 16 << 20,
            "run {i}: chase reach {chase}, stream reach {stream}"
        );
        let d = worst_at(&m, &f, "copy_mbps", "16 MiB");
        assert!(d <= 0.15, "run {i}: 16 MiB copy |Δ| {d:.3}");
    }
}

/// The EPYC guest's 64 KiB copy (32 KiB a call) runs faster than its
/// 16 KiB one (8 KiB a call, L1's calibration) and its 256 KiB one: the
/// probe's loop reads the clock after every call (22 ns, a third of a
/// 16 KiB call), and L1 keeps part of a 64 KiB cycle, copied at L1's
/// rate. With the clock read simulated the 64 KiB copy is predicted
/// within 5% on all three runs; fitted as if the loop cost nothing, it
/// is more than 10% slow on each.
#[test]
fn the_copy_loops_clock_read_and_l1s_share_explain_the_64_kib_copy() {
    for i in 1..=3 {
        let (m, f) = fitted(i);
        let with = worst_at(&m, &f, "copy_mbps", "64 KiB");
        let mut plain = m.clone();
        plain.clock_gettime_ns.clear();
        let fp = fit(&plain).unwrap();
        let without = worst_at(&plain, &fp, "copy_mbps", "64 KiB");
        assert!(
            with <= 0.05 && without > 0.10,
            "run {i}: |Δ| {with:.3} with the loop's clock read, {without:.3} without"
        );
    }
}

/// A Xeon guest's run (`xeon-2cpu-quick-1.jsonl`: 2 vCPUs of a KVM
/// guest, L3 300 MiB; glibc 2.36 whose loader gives a 114 MiB
/// non-temporal threshold): the 64 MiB copy (32 MiB copied, ordinary
/// stores, each destination line read for ownership) is slower than the
/// 256 MiB and 1 GiB ones (non-temporal stores). With the threshold the
/// 64 MiB copy is predicted within 15%; without it, at the non-temporal
/// rate, more than 30% fast.
#[test]
fn memcpys_non_temporal_threshold_explains_the_xeon_64_mib_copy() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/xeon-2cpu-quick-1.jsonl");
    let m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
    assert_eq!(m.nt_store_threshold, Some(114 << 20));
    let f = fit(&m).unwrap();
    assert_eq!(f.machine.hierarchy.nt_store_threshold, 114 << 20);
    let with = worst_at(&m, &f, "copy_mbps", "64 MiB");
    let mut plain = m.clone();
    plain.nt_store_threshold = None;
    let fp = fit(&plain).unwrap();
    assert_eq!(fp.machine.hierarchy.nt_store_threshold, 0);
    let without = worst_at(&plain, &fp, "copy_mbps", "64 MiB");
    assert!(
        with <= 0.15 && without > 0.3,
        "|Δ| {with:.3} with, {without:.3} without"
    );
}

/// The direct write and read of 64 MiB at `size` a call on `mach`, as
/// the probe would have measured them (spread 0), into `meas`.
fn push_direct_rates(meas: &mut numasim_probe::iofit::IoMeas, mach: &Machine, size: u64) {
    let k = numasim::kernel::KernelConfig::defaults(mach);
    let io = numasim::workload::HostFileIo {
        fs: numasim::kernel::fs::FsKind::Xfs,
        file_size: 64 << 20,
        io_size: size,
        readahead: 256 << 10,
    };
    let d = io.direct(mach, &k, 1).unwrap();
    for (write, mibps) in [(true, d.direct_write_mibps), (false, d.direct_read_mibps)] {
        meas.rates.push(numasim_probe::iofit::Rate {
            direct: true,
            write,
            request: size,
            mibps,
            spread: Some(0.0),
        });
    }
}

/// The disk fit separates a per-request latency from the media rate, for
/// reads and writes each, and the allocating write's work from both: a
/// disk simulated with known latencies (a write acknowledged sooner than
/// a read, as the Xeon guest's virtual disk does), rates and allocation
/// cost gives direct rates at 1 MiB and 128 KiB a call and CPU costs per
/// call; fitted back from them, the figures come out as they went in and
/// the four calibration rows reproduce their measurement. Fitted as one
/// latency both ways (the 128 KiB write left out), the same 128 KiB write
/// misses by a quarter or more: the row can fail.
#[test]
fn the_disk_fit_recovers_latency_and_rate_from_two_request_sizes() {
    use numasim::kernel::KernelConfig;
    use numasim_probe::iofit::{self, CpuCost, DiskFit, IoMeas, LARGE_REQUEST, SMALL_REQUEST};
    let (_, f) = fitted(1);
    let truth = DiskFit {
        latency_us: 200.0,
        write_latency_us: Some(40.0),
        alloc_us: Some(4.0),
        ..DiskFit::rates(2000.0, 1500.0)
    };
    let mut meas = IoMeas {
        fs: "ext4".into(),
        file_bytes: 64 << 20,
        rates: Vec::new(),
        read_ahead: Some(128 << 10),
        max_request: Some(1 << 20),
        max_segments: None,
        cpu: Vec::new(),
        depths: Vec::new(),
        ..IoMeas::default()
    };
    let mach = iofit::io_machine(&f.machine, &truth, &meas).unwrap();
    let dirty_ns = mach.block.as_ref().unwrap().dio_dirty_page_ns;
    for size in [LARGE_REQUEST, SMALL_REQUEST] {
        push_direct_rates(&mut meas, &mach, size);
        // The read's CPU per call, and the write's: that plus the two
        // allocation steps, less the read's page re-dirtying.
        let mib = size as f64 / (1u64 << 20) as f64;
        let read_s = 30e-6 * mib + 5e-6;
        let pages = size.div_ceil(f.machine.page_size) as f64;
        let write_s = read_s + 8e-6 - pages * dirty_ns * 1e-9;
        for (write, s) in [(true, write_s), (false, read_s)] {
            meas.cpu.push(CpuCost {
                direct: true,
                write,
                request: size,
                pct_per_mibps: s / mib * 100.0,
            });
        }
    }
    let got = iofit::fit(&f.machine, &meas).unwrap();
    let near = |a: f64, b: f64, tol: f64| (a / b - 1.0).abs() < tol;
    assert!(
        near(got.read_mibps, 2000.0, 0.01)
            && near(got.write_mibps, 1500.0, 0.01)
            && near(got.latency_us, 200.0, 0.02)
            && near(got.write_latency_us.unwrap(), 40.0, 0.05)
            && near(got.alloc_us.unwrap(), 4.0, 0.01),
        "{got:?}"
    );
    let rows = iofit::validate(&f.machine, &meas, &got);
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(r.role, Some(Role::Calibration), "{r:?}");
        assert!(r.deviation().unwrap().abs() < 0.01, "{r:?}");
    }
    // One latency both ways: the 128 KiB write is predicted, and missed.
    let mut one = meas.clone();
    let small_write = one
        .rates
        .iter()
        .position(|r| r.write && r.request == SMALL_REQUEST)
        .unwrap();
    let kept = one.rates.remove(small_write);
    let fit_one = iofit::fit(&f.machine, &one).unwrap();
    assert_eq!(fit_one.write_latency_us, None);
    let mach = iofit::io_machine(&f.machine, &fit_one, &one).unwrap();
    let io = numasim::workload::HostFileIo {
        fs: numasim::kernel::fs::FsKind::Xfs,
        file_size: 64 << 20,
        io_size: SMALL_REQUEST,
        readahead: 256 << 10,
    };
    let sim = io
        .direct(&mach, &KernelConfig::defaults(&mach), 1)
        .unwrap()
        .direct_write_mibps;
    assert!(sim / kept.mibps - 1.0 < -0.25, "{sim} vs {}", kept.mibps);
}

/// A run saved before the 128 KiB pass fits the disk's rates with no
/// latency, its direct rows are calibration (reproduced within 1%), and
/// the buffered read is the one prediction.
#[test]
fn an_older_run_fits_its_disk_from_one_request_size() {
    for i in 1..=3 {
        let (m, f) = fitted(i);
        let d = f.disk.as_ref().expect("the EPYC runs have direct I/O");
        assert_eq!(d.latency_us, 0.0);
        let g = &f.machine.io.disks[0];
        assert!(g.write_mibps.is_some_and(|w| w > g.mibps), "{g:?}");
        let rows = numasim_probe::iofit::validate(&f.machine, &m.io, d);
        let cal: Vec<_> = rows
            .iter()
            .filter(|r| r.role == Some(Role::Calibration))
            .collect();
        assert_eq!(cal.len(), 2, "{rows:?}");
        assert!(cal.iter().all(|r| r.deviation().unwrap().abs() < 0.01));
        assert_eq!(rows.len(), 3, "{rows:?}");
    }
}

/// The machine file carries the block layer its disk was fitted through
/// (`[block]`, `[io] controllers`), so a scenario on the fitted host runs
/// file I/O as `--validate` replays it, with no probe in between.
#[test]
fn the_machine_file_carries_the_block_layer_its_disk_was_fitted_through() {
    let (m, f) = fitted(2);
    let d = f.disk.as_ref().expect("the EPYC runs have direct I/O");
    let (text, _) = f.annotated_toml();
    let back = Machine::from_toml_str(&text, "annotated").unwrap();
    let replayed = numasim_probe::iofit::io_machine(&f.machine, d, &m.io).unwrap();
    assert!(back.block.is_some(), "{text}");
    assert_eq!(back.block, replayed.block);
    assert_eq!(back.io, replayed.io);
    assert!(
        text.lines()
            .any(|l| l.starts_with("max_request = ") && l.contains("max_sectors_kb")),
        "{text}"
    );
}

/// The node copy is `memcpy` past glibc's non-temporal threshold (each of
/// two threads copies 256 MiB halves, the threshold 114 MiB): memory
/// moves 2 lines per 2 counted, and the controllers carried it. On the
/// Xeon fixture with its node copy as a quiet run of the same guest
/// measured it (18.8 GB/s copied, twice one core's memcpy, spread 9%),
/// the node read measured the caches, so the 2-thread STREAM row gives
/// `node_gbps` and is reproduced: each core's copy keeps its own lines
/// in flight (Round 18c), which carry it. A copy past what they carry
/// (40 GB/s copied) leaves the controllers a lower bound, said in a
/// note: the row can fail.
#[test]
fn the_node_copy_is_priced_with_memcpys_stores_and_bounds_the_controllers() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/xeon-2cpu-quick-1.jsonl");
    let mut m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
    assert_eq!(m.node_copy_bytes, Some(1 << 30));
    m.node_copy_bps = Some(18.8e9);
    m.node_copy_spread = Some(0.09);
    let node_row = |m: &numasim_probe::calibrate::Measurements, f: &Fit| {
        numasim_probe::memsys::validate(m, &f.machine, f.node_gbps_from)
            .into_iter()
            .find(|r| {
                r.metric == "stream_mbps"
                    && r.case_value("threads").and_then(|v| v.as_u64()) == Some(2)
            })
            .and_then(|r| r.deviation())
            .unwrap()
    };
    let f = fit(&m).unwrap();
    let d = node_row(&m, &f);
    // The node read measured the caches, so the copy gives the
    // controllers; each core's copy keeps its own lines in flight
    // (`copy_mlp_lines`, from one core's copy: more than the read's
    // `mlp_lines`), which carry 2 x 18.8 GB/s, so the row is reproduced.
    assert!(f.machine.memsys.copy_mlp_lines > f.machine.memsys.mlp_lines);
    assert_eq!(f.node_gbps_from, numasim_probe::memsys::NodeGbpsFrom::Copy);
    assert!(d.abs() < 0.01, "{d}");
    // Past what those lines carry, no controller rate reproduces it: they
    // are taken just out of its way (a lower bound), and the fit says so.
    let mut past = m.clone();
    past.node_copy_bps = Some(40.0e9);
    let fpast = fit(&past).unwrap();
    assert_eq!(
        fpast.node_gbps_from,
        numasim_probe::memsys::NodeGbpsFrom::Bound
    );
    assert!(
        fpast
            .notes
            .iter()
            .any(|n| n.contains("simulated node copy match the measured")),
        "{:?}",
        fpast.notes
    );
    // Within the cores' reach, the copy is solved for and reproduced.
    let mut within = m.clone();
    within.node_copy_bps = Some(15.0e9);
    let fw = fit(&within).unwrap();
    assert_eq!(fw.node_gbps_from, numasim_probe::memsys::NodeGbpsFrom::Copy);
    let d = node_row(&within, &fw);
    assert!(d.abs() < 0.01, "{d}");
}

/// The 16-vCPU Xeon (Emerald Rapids) guest: its node read re-read 16 MiB
/// shares of a 256 MiB buffer under a 300 MiB L3 and came out 12.7 GB/s a
/// CPU where one CPU read the whole buffer at 10.6: no controller rate
/// gives that, so the read is not validated and `node_gbps` is solved
/// from the node copy (1 GiB), which the model then reproduces; every
/// calibration row within 5%.
#[test]
fn a_node_read_within_the_llc_gives_way_to_the_node_copy() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/emr-16cpu-quick-1.jsonl");
    let m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
    assert!(numasim_probe::memsys::read_in_llc(&m, 0));
    let f = fit(&m).unwrap();
    assert_eq!(f.node_gbps_from, numasim_probe::memsys::NodeGbpsFrom::Copy);
    let rows = numasim_probe::memsys::validate(&m, &f.machine, f.node_gbps_from);
    assert!(!rows.iter().any(|r| r.metric == "bandwidth_mbps"));
    let copy = rows
        .iter()
        .find(|r| {
            r.metric == "stream_mbps"
                && r.case_value("threads").and_then(|v| v.as_u64()) == Some(16)
        })
        .unwrap();
    assert_eq!(copy.role, Some(Role::Calibration));
    assert!(
        copy.deviation().unwrap().abs() < 0.01,
        "{:?}",
        copy.deviation()
    );
    // A buffer past 4x the LLC is the controllers' again.
    let mut big = m.clone();
    big.memsys.read_bytes = Some(2 << 30);
    assert!(!numasim_probe::memsys::read_in_llc(&big, 0));
}

/// The buffered read's page-cache work is solved from the reading
/// thread's CPU time: the model's reader then takes the measured CPU a
/// MiB, and a host whose reader is that busy (the EPYC guest: 80%) is
/// predicted near its CPU's pace, not the disk's.
#[test]
fn the_buffered_reads_page_work_comes_from_its_cpu_time() {
    let (m, f) = fitted(1);
    let d = f.disk.as_ref().unwrap();
    let Some(p) = d.page_op_ns else {
        panic!("no page_op_ns: {:?}", d.notes)
    };
    let mach = numasim_probe::iofit::io_machine(&f.machine, d, &m.io).unwrap();
    assert_eq!(mach.block.as_ref().unwrap().page_op_ns, p);
    let rows = numasim_probe::iofit::validate(&f.machine, &m.io, d);
    let buffered = rows
        .iter()
        .find(|r| {
            r.metric == "seq_read_mibps"
                && r.case_value("io").and_then(|v| v.as_str()) == Some("buffered")
        })
        .unwrap();
    let cpu =
        m.io.cpu
            .iter()
            .find(|c| !c.direct && !c.write)
            .unwrap()
            .pct_per_mibps;
    // Its reader's CPU alone caps the rate: 100 / cpu_pct_per_mibps MiB/s.
    assert!(
        buffered.value.unwrap() <= 100.0 / cpu * 1.01,
        "{:?}",
        buffered.value
    );
}

/// A disk with one latency each way and `commands`, no allocation cost,
/// and the direct rates (1 MiB and 128 KiB a call, no sweep) that the
/// probe would have measured of it on `f`'s machine.
fn sweep_disk(
    f: &Fit,
    read_mibps: f64,
    write_mibps: f64,
    commands: u32,
) -> (numasim_probe::iofit::DiskFit, numasim_probe::iofit::IoMeas) {
    use numasim_probe::iofit::{self, DiskFit, IoMeas, LARGE_REQUEST, SMALL_REQUEST};
    let truth = DiskFit {
        latency_us: 150.0,
        write_latency_us: Some(40.0),
        commands,
        ..DiskFit::rates(read_mibps, write_mibps)
    };
    let mut meas = IoMeas {
        fs: "ext4".into(),
        file_bytes: 64 << 20,
        read_ahead: Some(128 << 10),
        max_request: Some(1 << 20),
        ..IoMeas::default()
    };
    let mach = iofit::io_machine(&f.machine, &truth, &meas).unwrap();
    for size in [LARGE_REQUEST, SMALL_REQUEST] {
        push_direct_rates(&mut meas, &mach, size);
    }
    (truth, meas)
}

/// The sweep's 1 MiB speed-ups at `depths`, exact (no spread), as a
/// run would have recorded them.
fn push_sweep(meas: &mut numasim_probe::iofit::IoMeas, depths: &[u32], ups: &[f64]) {
    for (&depth, &speedup) in depths.iter().zip(ups) {
        meas.depths.push(numasim_probe::iofit::DepthRate {
            request: numasim_probe::iofit::LARGE_REQUEST,
            depth,
            mibps: 0.0,
            speedup,
            spread: Some(0.0),
            rate_spread: None,
        });
    }
}

/// `disk_commands` from the queue-depth sweep: a disk simulated with a
/// known number of commands (3, then 1) gives direct rates at depth 1 and
/// the sweep's speed-ups at depths 2, 4 and 8; fitted back, the count
/// comes out as it went in, no ceiling is claimed, and the sweep's
/// calibration rows reproduce their speed-ups. Fitted with the sweep left
/// out, the disk keeps one command and misses the depth-4 speed-up.
#[test]
fn the_disk_fit_recovers_a_known_command_count_from_a_depth_sweep() {
    use numasim_probe::iofit::{self, LARGE_REQUEST};
    let (_, f) = fitted(1);
    for commands in [3u32, 1] {
        let (truth, meas) = sweep_disk(&f, 1200.0, 1500.0, commands);
        let depths = [2u32, 4, 8];
        let ups = iofit::sim_speedups(&f.machine, &meas, &truth, LARGE_REQUEST, &depths).unwrap();
        if commands == 3 {
            assert!(ups[1] > 2.0, "the sweep sees the commands: {ups:?}");
        }
        let mut swept = meas.clone();
        push_sweep(&mut swept, &depths, &ups);
        let got = iofit::fit(&f.machine, &swept).unwrap();
        assert_eq!(
            (got.commands, got.ceiling_mibps, got.command_share),
            (commands, None, 0.0),
            "{got:?}"
        );
        let rows = iofit::validate(&f.machine, &swept, &got);
        let sweep: Vec<_> = rows.iter().filter(|r| r.metric == "qd_speedup").collect();
        assert_eq!(sweep.len(), 3);
        for r in sweep {
            assert_eq!(r.role, Some(Role::Calibration), "{r:?}");
            assert!(r.deviation().unwrap().abs() < 0.02, "{r:?}");
        }
        // No sweep: one command, and with 3 the depth-4 point is missed.
        let plain = iofit::fit(&f.machine, &meas).unwrap();
        assert_eq!(plain.commands, 1);
        let one = iofit::sim_speedups(&f.machine, &meas, &plain, LARGE_REQUEST, &[4]).unwrap()[0];
        if commands == 3 {
            assert!(ups[1] / one > 1.5, "{one} against {}", ups[1]);
        }
    }
}

/// A ceiling on all commands together caps every byte, written or read
/// (`controller_mbps`), so the sweep's fit never claims one below the
/// media rate the direct writes fitted: a disk that writes at 3,000 MiB/s
/// and whose read sweep levels off at 1.3x keeps its direct-write
/// calibration row (a live run on this guest fitted 1,678 MiB/s from the
/// reads and put its 1 MiB write 48% low).
#[test]
fn the_sweep_never_fits_a_ceiling_below_the_write_rate() {
    use numasim_probe::iofit;
    let (_, f) = fitted(1);
    let (_, mut meas) = sweep_disk(&f, 1200.0, 3000.0, 1);
    push_sweep(&mut meas, &[2, 4, 8], &[1.3; 3]);
    let got = iofit::fit(&f.machine, &meas).unwrap();
    if let Some(c) = got.ceiling_mibps {
        assert!(c > got.write_mibps, "{got:?}");
    }
    let rows = iofit::validate(&f.machine, &meas, &got);
    let writes: Vec<_> = rows
        .iter()
        .filter(|r| r.metric == "seq_write_mibps" && format!("{:?}", r.case).contains("direct"))
        .collect();
    assert!(!writes.is_empty());
    for r in writes {
        assert!(r.deviation().unwrap().abs() < 0.02, "{r:?}");
    }
}

/// A saved run's queue-depth sweep reads back (`--from`): each depth's
/// rate and speed-up join into one point, a run without one has none,
/// and a depth of 0 is refused naming the key.
#[test]
fn a_saved_depth_sweep_reads_back_and_a_bad_depth_is_refused() {
    let plain = measurements_from_records(&run_text(1)).unwrap();
    assert!(plain.io.depths.is_empty());
    let line = |depth: u32, metric: &str, value: f64| {
        format!(
            "{{\"experiment\":\"probe\",\"case\":{{\"io\":\"direct\",\"fs\":\"ext4\",\"request\":\"1 MiB\",\"depth\":{depth}}},\"metric\":\"{metric}\",\"unit\":\"x\",\"value\":{value},\"paper\":null,\"role\":null,\"spread\":0.1}}\n"
        )
    };
    let mut text = run_text(1);
    text += &line(1, "qd_read_mibps", 1000.0);
    text += &line(4, "qd_read_mibps", 2500.0);
    text += &line(4, "qd_speedup", 2.4);
    let m = measurements_from_records(&text).unwrap();
    let d = &m.io.depths;
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!((d[0].depth, d[0].mibps, d[0].speedup), (1, 1000.0, 1.0));
    assert_eq!((d[1].depth, d[1].mibps, d[1].speedup), (4, 2500.0, 2.4));
    assert_eq!(d[1].spread, Some(0.1));
    let bad = run_text(1) + &line(0, "qd_speedup", 2.0);
    let e = measurements_from_records(&bad).unwrap_err();
    assert!(e.contains("depth"), "{e}");
}

/// Round 16b's records (device request counts, the huge-page buffer's
/// direct reads) added to an older run change nothing the fit used before:
/// the 4 KiB buffer's rates, the CPU costs and the machine file stay as
/// they were, the huge-page rates land apart, and the buffered read's
/// request size is read.
#[test]
fn round_16b_records_leave_the_older_fit_alone() {
    let old = run_text(1);
    let add = [
        r#"{"experiment":"probe","case":{"io":"direct","fs":"ext4","buffer":"thp"},"metric":"seq_read_mibps","unit":"MiB/s","value":3236.0,"paper":null,"role":null,"spread":0.07}"#,
        r#"{"experiment":"probe","case":{"io":"direct","fs":"ext4","buffer":"thp"},"metric":"seq_write_mibps","unit":"MiB/s","value":3520.0,"paper":null,"role":null,"spread":0.03}"#,
        r#"{"experiment":"probe","case":{"io":"direct","fs":"ext4","buffer":"thp","op":"read"},"metric":"cpu_pct_per_mibps","unit":"%CPU/(MiB/s)","value":0.5,"paper":null,"role":null}"#,
        r#"{"experiment":"probe","case":{"io":"direct","fs":"ext4","buffer":"thp"},"metric":"io_buffer_huge_pct","unit":"%","value":100.0,"paper":null,"role":null}"#,
        r#"{"experiment":"probe","case":{"io":"buffered","fs":"ext4","op":"read"},"metric":"io_requests","unit":"requests","value":131.0,"paper":null,"role":null}"#,
        r#"{"experiment":"probe","case":{"io":"buffered","fs":"ext4","op":"read"},"metric":"io_request_bytes","unit":"B","value":2052268.0,"paper":null,"role":null}"#,
        r#"{"experiment":"probe","case":{"io":"direct","fs":"ext4","request":"1 MiB","depth":1},"metric":"io_request_bytes","unit":"B","value":784190.0,"paper":null,"role":null}"#,
    ];
    let new = format!("{}\n{}\n", old.trim_end(), add.join("\n"));
    let a = measurements_from_records(&old).unwrap();
    let b = measurements_from_records(&new).unwrap();
    assert_eq!(a.io.rates, b.io.rates);
    assert_eq!(a.io.cpu, b.io.cpu);
    assert!(a.io.huge_rates.is_empty() && a.io.buffered_request.is_none());
    assert_eq!(b.io.huge_rates.len(), 2);
    assert_eq!(b.io.buffered_request, Some(2052268.0));
    assert_eq!(
        fit(&a).unwrap().annotated_toml().0,
        fit(&b).unwrap().annotated_toml().0
    );
}

/// Faults the 16-vCPU Xeon guest's fitted machine would show (simulated
/// through today's path), fed back as measurements: the fit recovers its
/// `fault_ns`, and every thread count's row is reproduced, with the node
/// copy quiet and with it just over the spread bound (11%, the guest's own
/// figure in this run and in /work/probe17 run 2). With one core's stream
/// rate written for a flagged copy, 16 threads' zeroing shared 19 GB/s and
/// the 16-thread row came out 38% low.
#[test]
fn a_fault_sweep_is_recovered_through_a_noisy_node_copy() {
    use numasim_probe::validate::fault_rate;
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/emr-16cpu-quick-1.jsonl");
    let mut m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
    m.node_copy_spread = Some(0.02);
    let truth = fit(&m).unwrap().machine;
    let counts = [1usize, 2, 4, 8, 16];
    let rates: Vec<(usize, f64)> = counts
        .iter()
        .map(|&t| (t, fault_rate(&truth, t as u64, m.fault_bytes).unwrap()))
        .collect();
    m.fault_per_s = rates.clone();
    m.fault_on_cpu_per_s = rates.clone();
    for spread in [0.02, 0.11] {
        m.node_copy_spread = Some(spread);
        let f = fit(&m).unwrap();
        let d = f.machine.fault.fault_ns / truth.fault.fault_ns - 1.0;
        assert!(d.abs() < 0.01, "spread {spread}: fault_ns {d:+.4}");
        for &(t, want) in &rates {
            let got = fault_rate(&f.machine, t as u64, m.fault_bytes).unwrap();
            assert!(
                (got / want - 1.0).abs() < 0.02,
                "spread {spread}, {t} threads: {got:.0} vs {want:.0} faults/s"
            );
        }
    }
}

/// The `[block]` keys of round 17's segment disk.
const SEGMENT_KEYS: [&str; 4] = [
    "segment_ns",
    "segment_write_ns",
    "segment_run",
    "max_segments",
];

/// `mach` reading a call of `size` bytes whose buffer lies in `runs`
/// contiguous runs (`[block] segment_run`, at least a 4 KiB page).
fn with_buffer_runs(mach: &Machine, size: u64, runs: f64) -> Machine {
    let mut at = mach.clone();
    at.block.as_mut().unwrap().segment_run = Some(((size as f64 / runs).round() as u64).max(4096));
    at
}

/// A disk with a per-segment cost as this guest's virtio disk measured
/// (2 µs a read segment, 0.25 µs a written one), 50/40 µs latencies and
/// 4,000/4,500 MiB/s.
fn segment_disk() -> numasim_probe::iofit::DiskFit {
    numasim_probe::iofit::DiskFit {
        latency_us: 50.0,
        write_latency_us: Some(40.0),
        segment_us: Some(2.0),
        segment_write_us: Some(0.25),
        segment_run: Some(4096),
        ..numasim_probe::iofit::DiskFit::rates(4000.0, 4500.0)
    }
}

/// The virtio guest's queue as the segment tests read it: ext4, 4 MiB
/// requests at most, 254 segments a request.
fn segment_meas(read_ahead: u64) -> numasim_probe::iofit::IoMeas {
    numasim_probe::iofit::IoMeas {
        fs: "ext4".into(),
        file_bytes: 64 << 20,
        read_ahead: Some(read_ahead),
        max_request: Some(4 << 20),
        max_segments: Some(254),
        ..Default::default()
    }
}

/// Round 17: a disk simulated with a known per-segment cost (2 µs a read
/// segment, 0.25 µs a written one, as this guest's virtio disk measured),
/// latency and rates, read and written at 1 MiB and 128 KiB a call from a
/// buffer of 4 KiB pages (its runs counted, ~200 a MiB) and from a
/// huge-page one: fitted back, latency, segment costs and rates come out
/// as they went in and every direct row is reproduced. Fitted from the
/// 4 KiB buffer alone (no segment cost), the same disk's huge-page read
/// would be predicted at less than two-thirds of itself: the row can fail.
#[test]
fn the_segment_disk_is_recovered_from_both_buffers_and_its_calls() {
    use numasim_probe::iofit::{self, IoMeas, LARGE_REQUEST, SMALL_REQUEST};
    let (_, f) = fitted(1);
    let truth = segment_disk();
    let mut meas = segment_meas(128 << 10);
    let mach = iofit::io_machine(&f.machine, &truth, &meas).unwrap();
    for (huge, size, runs) in [
        (false, LARGE_REQUEST, 200.0),
        (false, SMALL_REQUEST, 25.0),
        (true, LARGE_REQUEST, 1.0),
        (true, SMALL_REQUEST, 1.0),
    ] {
        meas.buffer_runs.push((huge, size, runs));
        let mut got = IoMeas::default();
        push_direct_rates(&mut got, &with_buffer_runs(&mach, size, runs), size);
        if huge {
            meas.huge_rates.extend(got.rates);
        } else {
            meas.rates.extend(got.rates);
        }
    }
    let got = iofit::fit(&f.machine, &meas).unwrap();
    let near = |a: f64, b: f64, tol: f64| (a / b - 1.0).abs() < tol;
    assert!(
        near(got.read_mibps, 4000.0, 0.02)
            && near(got.latency_us, 50.0, 0.05)
            && near(got.segment_us.unwrap(), 2.0, 0.03)
            && near(got.write_mibps, 4500.0, 0.03)
            && near(got.write_latency_us.unwrap(), 40.0, 0.1)
            && near(got.segment_write_us.unwrap(), 0.25, 0.15),
        "{got:?}"
    );
    let rows = iofit::validate(&f.machine, &meas, &got);
    assert_eq!(rows.len(), 8, "{rows:?}");
    for r in &rows {
        assert_eq!(r.role, Some(Role::Calibration), "{r:?}");
        assert!(r.deviation().unwrap().abs() < 0.02, "{r:?}");
    }
    let text = iofit::io_machine(&f.machine, &got, &meas)
        .unwrap()
        .to_toml_string();
    for key in SEGMENT_KEYS {
        assert!(text.contains(key), "{key}");
    }
    // The 4 KiB buffer alone: no segment cost, and the huge-page read is
    // missed.
    let mut plain = meas.clone();
    let thp = plain.huge_rates.clone();
    plain.huge_rates.clear();
    let old = iofit::fit(&f.machine, &plain).unwrap();
    assert_eq!(old.segment_us, None);
    let old_mach = iofit::io_machine(&f.machine, &old, &plain).unwrap();
    let mut thp_meas = IoMeas::default();
    push_direct_rates(&mut thp_meas, &old_mach, LARGE_REQUEST);
    let sim = thp_meas.rates.iter().find(|r| !r.write).unwrap().mibps;
    let meas_thp = thp
        .iter()
        .find(|r| !r.write && r.request == LARGE_REQUEST)
        .unwrap()
        .mibps;
    assert!(sim < meas_thp * 2.0 / 3.0, "{sim} vs {meas_thp}");
}

/// Round 20c: the sweep's 1 MiB depth-1 point joins the segment disk's
/// fit. A disk of known segment cost is read as live20-7 was: the 4 KiB
/// buffer's passes in ~21 segments (a short lever on the segment cost)
/// and the 1 MiB one 10% slow with a 12% spread, the huge-page passes
/// exact within 3%, the sweep's depth-1 points exact (1 MiB in 200
/// segments, 10% spread; 4 MiB in 300, two requests a call). Fitted with
/// the sweep's 1 MiB point, the 4 MiB depth-1 rate (never a fit point) is
/// predicted within 4%, and the 1 MiB point's row is calibration; without
/// it (its buffer not counted) the segment cost fitted from the short
/// lever misses the 4 MiB call by more than twice as much.
#[test]
fn the_sweeps_depth_1_point_steadies_a_4_mib_calls_segments() {
    use numasim_probe::iofit::{self, DepthRate, IoMeas, LARGE_REQUEST, SMALL_REQUEST};
    let (_, f) = fitted(1);
    let truth = segment_disk();
    let mut meas = segment_meas(4 << 20);
    let mach = iofit::io_machine(&f.machine, &truth, &meas).unwrap();
    let k = numasim::kernel::KernelConfig::defaults(&mach);
    let at = |size: u64, runs: f64| with_buffer_runs(&mach, size, runs);
    for (huge, size, runs, slow, spread) in [
        (false, LARGE_REQUEST, 21.5, 0.9, 0.12),
        (false, SMALL_REQUEST, 20.5, 1.0, 0.3),
        (true, LARGE_REQUEST, 1.0, 1.0, 0.03),
        (true, SMALL_REQUEST, 1.0, 1.0, 0.03),
    ] {
        meas.buffer_runs.push((huge, size, runs));
        let mut got = IoMeas::default();
        push_direct_rates(&mut got, &at(size, runs), size);
        for r in &mut got.rates {
            r.spread = Some(spread);
            if !r.write {
                r.mibps *= slow;
            }
        }
        if huge {
            meas.huge_rates.extend(got.rates);
        } else {
            meas.rates.extend(got.rates);
        }
    }
    for (size, runs) in [(LARGE_REQUEST, 200.0), (4u64 << 20, 300.0)] {
        let mibps = meas
            .host_io(size)
            .direct_read_depth(&at(size, runs), &k, 1, 1)
            .unwrap();
        meas.sweep_runs.push((size, 1, runs));
        meas.depths.push(DepthRate {
            request: size,
            depth: 1,
            mibps,
            speedup: 1.0,
            spread: None,
            rate_spread: Some(0.1),
        });
    }
    let row = |meas: &IoMeas| {
        let fit = iofit::fit(&f.machine, meas).unwrap();
        let rows = iofit::validate(&f.machine, meas, &fit);
        let d1 = |req: &str| {
            rows.iter()
                .find(|r| {
                    r.metric == "qd_read_mibps"
                        && r.case
                            .iter()
                            .any(|(k, v)| k == "request" && v.as_str() == Some(req))
                })
                .cloned()
                .unwrap()
        };
        (fit, d1("1 MiB"), d1("4 MiB"))
    };
    let (fit, one, four) = row(&meas);
    assert!(fit.sweep_point, "{fit:?}");
    assert_eq!(one.role, Some(Role::Calibration));
    assert_eq!(four.role, Some(Role::Validation));
    let with = four.deviation().unwrap().abs();
    assert!(with < 0.04, "{four:?} {fit:?}");
    let mut plain = meas.clone();
    plain.sweep_runs.retain(|s| s.0 != LARGE_REQUEST);
    let (old, one_old, four_old) = row(&plain);
    assert!(!old.sweep_point);
    assert_eq!(one_old.role, Some(Role::Validation));
    let without = four_old.deviation().unwrap().abs();
    assert!(without > 2.0 * with, "{without} vs {with}: {old:?}");
}

/// Runs saved before round 16b (the fixtures: no huge-page buffer, no
/// counted runs, no request sizes) fit no segment cost, and their machine
/// file has none of the segment keys: their refits stay as they were.
#[test]
fn runs_without_the_segment_records_fit_no_segment_cost() {
    for i in 1..=3 {
        let (_, f) = fitted(i);
        let d = f.disk.as_ref().unwrap();
        assert_eq!(
            (d.segment_us, d.segment_write_us, d.segment_run),
            (None, None, None)
        );
        let text = f.machine.to_toml_string();
        for key in SEGMENT_KEYS {
            assert!(!text.contains(key), "run {i}: {key}");
        }
    }
}

/// Round 17: the buffered read's page-cache runs (`io_cache_run_bytes`)
/// are read from a run's records, and the buffered read is simulated
/// with them: folios of 4 KiB pages make a 4 MiB request of hundreds of
/// segments (split at `max_segments`) and run slower than huge runs on
/// the same segment disk; a run without the record keeps huge runs.
#[test]
fn the_buffered_read_is_simulated_with_its_counted_page_cache_runs() {
    use numasim_probe::iofit::{self, IoMeas, Rate, LARGE_REQUEST};
    let mut text = run_text(1);
    text.push_str(
        "{\"experiment\":\"probe\",\"case\":{\"io\":\"buffered\",\"fs\":\"ext4\",\"op\":\"read\"},\"metric\":\"io_cache_run_bytes\",\"unit\":\"bytes\",\"value\":278370.4,\"paper\":null,\"role\":null}\n",
    );
    let m = measurements_from_records(&text).unwrap();
    assert_eq!(m.io.cache_run, Some(278370.4));
    let (_, f) = fitted(1);
    let disk = segment_disk();
    let meas = IoMeas {
        fs: "ext4".into(),
        file_bytes: 64 << 20,
        read_ahead: Some(4 << 20),
        max_request: Some(4 << 20),
        max_segments: Some(254),
        buffered_request: Some(4.0 * 1048576.0),
        rates: vec![Rate {
            direct: false,
            write: false,
            request: LARGE_REQUEST,
            mibps: 2000.0,
            spread: Some(0.0),
        }],
        ..IoMeas::default()
    };
    let sim = |cache_run: Option<f64>| {
        let meas = IoMeas {
            cache_run,
            ..meas.clone()
        };
        let rows = iofit::validate(&f.machine, &meas, &disk);
        assert_eq!(rows.len(), 1, "{rows:?}");
        rows[0].value.unwrap()
    };
    let (huge, scattered) = (sim(None), sim(Some(4096.0)));
    assert_eq!(sim(Some(2.0 * 1048576.0)), huge);
    assert!(scattered < huge * 0.8, "{scattered} vs {huge}");
}

fn emr_run(i: usize) -> (numasim_probe::calibrate::Measurements, Fit) {
    saved(&format!("emr-16cpu-quick-{i}"))
}

/// Index of the level-2 cache in the order the model walks them.
fn l2_of(m: &Machine) -> usize {
    m.cpu
        .caches
        .iter()
        .position(|c| c.level == 2)
        .expect("an L2")
}

/// The 16-vCPU Xeon guest's first saved run of round 17
/// (`emr-16cpu-quick-2.jsonl`, L2 2 MiB per core): its 4 MiB copy ran at
/// 1.01-1.03x its 16 MiB one, all of it at the L3's rate. The stream fit
/// keeps a private L2 LRU-like, and the 4 MiB copies are predicted
/// within 5%; the same machine with an L2 that keeps reach/W of a
/// stream puts them more than 10% fast (the χ² had chosen that, +16/+18%).
#[test]
fn a_private_l2_keeps_nothing_of_a_copy_past_it() {
    let (m, f) = emr_run(2);
    let l2 = l2_of(&f.machine);
    assert_eq!(f.machine.hierarchy.stream_retain[l2], 0.0);
    let lru = worst_at(&m, &f, "copy_mbps", "4 MiB");
    let mut keeps = f.clone();
    keeps.machine.hierarchy.stream_retain[l2] = 1.0;
    let kept = worst_at(&m, &keeps, "copy_mbps", "4 MiB");
    assert!(
        lru <= 0.05 && kept > 0.10,
        "4 MiB copy |Δ| {lru:.3} LRU-like, {kept:.3} keeping reach/W"
    );
}

/// A copy sweep simulated on a known machine (the Xeon fixture's fit
/// with its L3 copying 15% faster and its L2 stream reach at the sysfs
/// size), fed back as measurements (spread 0, the loop's clock read
/// added as the probe times it), is fitted back: the L3's copy rate
/// within 2%, the L2 LRU-like, every copy row within 2%.
#[test]
fn the_stream_fit_recovers_a_known_l3_rate_from_a_simulated_sweep() {
    let (mut m, f) = emr_run(1);
    let mut truth = f.machine.clone();
    let l2 = l2_of(&truth);
    let l3 = truth.cpu.caches.len() - 1;
    let rate = truth.cpu.caches[l3].copy_mbps.unwrap() * 1.15;
    truth.cpu.caches[l3].copy_mbps = Some(rate);
    truth.hierarchy.stream_reach[l2] = truth.cpu.caches[l2].size;
    truth.hierarchy.stream_retain[l2] = 0.0;
    let clock: Vec<(u64, f64)> = m
        .sizes
        .iter()
        .map(|(s, ..)| (*s, numasim_probe::hierarchy::loop_ns(&m, "copy_mbps", *s)))
        .collect();
    for ((s, page, r), (_, c)) in m.sizes.iter_mut().zip(&clock) {
        if r.copy_bps <= 0.0 {
            continue;
        }
        let k = numasim_probe::hierarchy::kernel_for(&truth, *page, m.page_size);
        let v = numasim_probe::hierarchy::simulate(&truth, &k, "copy_mbps", *s, 1) + c;
        r.copy_bps = 1e3 / v * 1e6 / 2.0;
        r.spread[0] = 0.0;
    }
    let g = fit(&m).unwrap();
    let got = g.machine.cpu.caches[l3].copy_mbps.unwrap();
    assert!(
        (got / rate - 1.0).abs() <= 0.02,
        "L3 copy {got:.0} against {rate:.0}"
    );
    assert_eq!(g.machine.hierarchy.stream_retain[l2], 0.0);
    let rows = validate(&m, &g.machine, &g.used);
    for r in rows.iter().filter(|r| r.metric == "copy_mbps") {
        let d = r.deviation().unwrap();
        assert!(d.abs() <= 0.02, "{:?}: {d:+.3}", r.case);
    }
}

/// The whole memory sweep of `m` (copy, random reads, chase) simulated on
/// `truth` with no spread, `extra` sizes added to each page kind (round
/// 17c's boundary sizes), the copy loop's clock read added as the probe
/// times it.
fn simulated_sweep(
    m: &numasim_probe::calibrate::Measurements,
    truth: &Machine,
    extra: &[u64],
) -> numasim_probe::calibrate::Measurements {
    use numasim_probe::hierarchy::{kernel_for, loop_ns, simulate};
    let mut m = m.clone();
    let pages: Vec<_> = m.sizes.iter().map(|x| (x.1, x.2.clone())).collect();
    for &s in extra {
        for (page, r) in &pages {
            if !m.sizes.iter().any(|x| x.0 == s && x.1 == *page) {
                m.sizes.push((s, *page, r.clone()));
            }
        }
    }
    m.sizes.sort_by_key(|x| (x.0, x.1.label()));
    let clock: Vec<f64> = m
        .sizes
        .iter()
        .map(|(s, ..)| loop_ns(&m, "copy_mbps", *s))
        .collect();
    for ((s, page, r), c) in m.sizes.iter_mut().zip(clock) {
        let k = kernel_for(truth, *page, m.page_size);
        r.copy_bps = 1e3 / (simulate(truth, &k, "copy_mbps", *s, 1) + c) * 1e6 / 2.0;
        r.random_bps = 8e9 / simulate(truth, &k, "random_mbps", *s, 1);
        r.latency_ns = Some(simulate(truth, &k, "mem_latency_ns", *s, 1));
        r.spread = [0.0; 6];
    }
    m
}

/// The chase fit's L2 reach and the range of reaches within 1 of its
/// least χ², from the fit's note ("L2 995 KiB (913 KiB..995 KiB)").
fn chase_l2_reach(f: &Fit) -> (u64, u64, u64) {
    let note = f
        .notes
        .iter()
        .find(|n| n.contains("hierarchy.reach fitted"))
        .expect("the chase's reach note");
    let part = note
        .split("; ")
        .find(|p| p.starts_with("L2 "))
        .expect("an L2 in the note");
    let parse = |s: &str| numasim_probe::bench::parse_size_label(s).expect(s);
    let (reach, rest) = part[3..].split_once(" (").expect("a range");
    let (a, b) = rest
        .split_once(')')
        .expect("a range")
        .0
        .split_once("..")
        .expect("..");
    (parse(reach), parse(a), parse(b))
}

/// Round 17c: a chase sweep simulated on the EPYC guest's fitted machine
/// with its L2 LRU-like to a reach of 1.5 MiB (between the old sweep's 1
/// and 4 MiB, where every LRU-like reach scored alike: round 17b). With
/// the boundary sizes (512 KiB, 2, 6, 8, 12, 32 MiB) the reaches within
/// 1 of the least χ² still hold the truth and span at most an octave,
/// at least an octave less than the 4x sweep's range for the same
/// machine: the 2 MiB chase, past the reach, rules out every reach from
/// 2 to 4 MiB. (A reach between two sizes of an LRU-like step stays
/// unresolved: the fit keeps the candidate nearest the sysfs size.)
#[test]
fn the_boundary_sizes_narrow_the_chases_l2_reach() {
    let (m, f) = fitted(1);
    let mut truth = f.machine.clone();
    let l2 = l2_of(&truth);
    let reach = 1536u64 << 10;
    // Huge pages contiguous (round 18): a sharp step at the reach, which
    // two sizes 4x apart cannot place. On scattered host frames the
    // Poisson-loaded sets place it from either sweep.
    truth.hierarchy.host_frame = 0;
    truth.hierarchy.reach[l2] = reach;
    truth.hierarchy.cyclic_retain[l2] = 0.0;
    for i in l2 + 1..truth.hierarchy.reach.len() {
        truth.hierarchy.reach[i] = truth.hierarchy.reach[i].max(reach);
    }
    let boundary = [512 << 10, 2 << 20, 6 << 20, 8 << 20, 12 << 20, 32 << 20];
    let old = fit(&simulated_sweep(&m, &truth, &[])).unwrap();
    let new = fit(&simulated_sweep(&m, &truth, &boundary)).unwrap();
    let (_, a_old, b_old) = chase_l2_reach(&old);
    let (r_new, a_new, b_new) = chase_l2_reach(&new);
    let octaves = |a: u64, b: u64| (b as f64 / a as f64).log2();
    assert_eq!(new.machine.hierarchy.cyclic_retain[l2], 0.0);
    assert!(
        a_new <= reach && reach <= b_new && (a_new..=b_new).contains(&r_new),
        "fitted {r_new} ({a_new}..{b_new}) against {reach}: {:?}",
        new.notes
    );
    // The 4x sweep either spans an octave more or misses the truth (with
    // the host's placement also fitted since round 18 it may settle on
    // scattered frames and a reach past 2 MiB).
    let old_holds = a_old <= reach && reach <= b_old;
    assert!(
        octaves(a_new, b_new) <= 1.0
            && (!old_holds || octaves(a_new, b_new) + 1.0 <= octaves(a_old, b_old)),
        "range {a_new}..{b_new} against the 4x sweep's {a_old}..{b_old}"
    );
}

/// Round 18: a chase sweep (boundary sizes included) simulated on the
/// EPYC fixture's fitted machine with its L2 LRU-like at its sysfs size,
/// once on 4 KiB host frames (a huge page's lines spread over the L2's
/// sets as a 4 KiB page's are: Poisson) and once contiguous (every set
/// holding its share exactly). The fit tells the two apart, as
/// `host_frame` says, and the 1 MiB huge-page chase, where they differ
/// most, comes back within 5%.
#[test]
fn the_fit_tells_scattered_host_frames_from_contiguous_pages() {
    let (m, f) = fitted(1);
    let boundary = [512 << 10, 2 << 20, 6 << 20, 8 << 20, 12 << 20, 32 << 20];
    for frame in [4096u64, 0] {
        let mut truth = f.machine.clone();
        let l2 = l2_of(&truth);
        let size = truth.cpu.caches[l2].size;
        truth.hierarchy.reach[l2] = size;
        truth.hierarchy.cyclic_retain[l2] = 0.0;
        for i in l2 + 1..truth.hierarchy.reach.len() {
            truth.hierarchy.reach[i] = truth.hierarchy.reach[i].max(size);
        }
        truth.hierarchy.host_frame = frame;
        let sweep = simulated_sweep(&m, &truth, &boundary);
        let got = fit(&sweep).unwrap();
        assert_eq!(got.machine.hierarchy.host_frame, frame, "{:?}", got.notes);
        // The huge-page chase at 1 MiB, where the two differ most (the 4k
        // one is Poisson-loaded either way, and a contiguous page leaves
        // the L2's reach anywhere from its size to the 2 MiB step).
        let rows = validate(&sweep, &got.machine, &got.used);
        let d = rows
            .iter()
            .find(|r| {
                r.metric == "mem_latency_ns"
                    && r.case_value("size").and_then(|v| v.as_str()) == Some("1 MiB")
                    && r.case_value("page").and_then(|v| v.as_str()) == Some("thp")
            })
            .and_then(|r| r.deviation())
            .expect("a 1 MiB huge-page chase row");
        assert!(d.abs() <= 0.05, "host frame {frame}: 1 MiB chase {d:+.3}");
    }
}

/// Round 18b: a first-level TLB of 64 entries whose misses cost 1 ns
/// where the second level holds the page, on the first fixture's
/// fitted machine with its huge pages on 4 KiB host frames: the fit
/// recovers both from a sweep with sizes around the step (256 KiB = 64
/// pages, 512 KiB = 128), and a sweep simulated without a first level
/// sets none.
#[test]
fn the_fit_recovers_a_first_level_tlb_from_the_chase() {
    let (m, f) = fitted(1);
    let extra = [256 << 10, 512 << 10, 2 << 20];
    let mut truth = f.machine.clone();
    truth.hierarchy.host_frame = 4096;
    truth.hierarchy.l1_tlb_entries = 0;
    truth.hierarchy.stlb_hit_ns = 0.0;
    let got = fit(&simulated_sweep(&m, &truth, &extra)).unwrap();
    assert_eq!(got.machine.hierarchy.l1_tlb_entries, 0, "{:?}", got.notes);
    truth.hierarchy.l1_tlb_entries = 64;
    truth.hierarchy.stlb_hit_ns = 1.0;
    let got = fit(&simulated_sweep(&m, &truth, &extra)).unwrap();
    let h = &got.machine.hierarchy;
    assert_eq!(h.l1_tlb_entries, 64, "{:?}", got.notes);
    assert!((h.stlb_hit_ns - 1.0).abs() < 0.15, "{}", h.stlb_hit_ns);
    assert!(
        got.notes.iter().any(|n| n.contains("l1_tlb_entries 64")),
        "{:?}",
        got.notes
    );
}

/// Round 18b: `tlb.miss_ns` from every 4k chase size that walks, each
/// by its bound: a sweep simulated with a known walk price gives it
/// back, and a noisy largest size (its chase 10% slow, spread 40%)
/// moves it far less than solving there alone would (the old fit took
/// that size's excess whole).
#[test]
fn the_walks_price_comes_from_every_size_that_walks() {
    let (m, f) = fitted(1);
    let mut truth = f.machine.clone();
    truth.tlb.miss_ns = 20.0;
    let extra = [16 << 20, 32 << 20, 64 << 20, 256 << 20];
    let sweep = simulated_sweep(&m, &truth, &extra);
    let got = fit(&sweep).unwrap();
    let clean = got.machine.tlb.miss_ns;
    // Within 25%: the sweep's other parameters come back close, not
    // exact (the caches' reaches from 4x-apart sizes), and each walking
    // size carries their part.
    assert!((clean - 20.0).abs() < 5.0, "{clean} {:?}", got.notes);
    assert!(
        got.notes.iter().any(|n| n.contains("least squares")),
        "{:?}",
        got.notes
    );
    let mut noisy = sweep.clone();
    let largest = noisy
        .sizes
        .iter()
        .filter(|x| x.1 == numasim_probe::sys::PageKind::Base && x.2.latency_ns.is_some())
        .map(|x| x.0)
        .max()
        .expect("a 4k chase");
    for (s, p, r) in noisy.sizes.iter_mut() {
        if *s == largest && *p == numasim_probe::sys::PageKind::Base {
            r.latency_ns = r.latency_ns.map(|l| l * 1.1);
            r.spread[3] = 0.4;
        } else {
            r.spread[3] = 0.02;
        }
    }
    let got = fit(&noisy).unwrap();
    let shifted = got.machine.tlb.miss_ns;
    let solved = got
        .notes
        .iter()
        .find_map(|n| n.split("solved at the largest alone: ").nth(1))
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{:?}", got.notes));
    eprintln!("clean {clean}, noisy: least squares {shifted}, the largest alone {solved}");
    assert!(
        (shifted - clean).abs() < 0.5 * (solved - clean).abs(),
        "least squares {shifted}, the largest alone {solved}"
    );
}

/// One thread's STREAM copy (the probe's loop at its largest buffer,
/// ordinary stores) follows from the copy rows' parameters: with each
/// core's copy keeping its own lines in flight (`copy_mlp_lines`, solved
/// from `hierarchy.stream_mbps` / `rfo_cost`), the EPYC guest's quiet run
/// of session 18 has the row within max(its spread, 5%), where the read's
/// `mlp_lines` (the copy at the read's rate) left it -18.5%, 3.7x its
/// bound. Where no number of lines reaches the core's copy rate (the
/// saved 2-vCPU Xeon run: its controllers bind first), the key is not
/// set and the fit says so.
#[test]
fn one_threads_stream_copy_follows_the_copy_rows() {
    let load = |name: &str| {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs")
            .join(name);
        let m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
        let f = fit(&m).unwrap();
        (m, f)
    };
    let row = |m: &numasim_probe::calibrate::Measurements, f: &Fit, mach: &Machine| {
        numasim_probe::memsys::validate(m, mach, f.node_gbps_from)
            .into_iter()
            .find(|r| {
                r.metric == "stream_mbps"
                    && r.case_value("threads").and_then(|v| v.as_u64()) == Some(1)
            })
            .map(|r| (r.deviation().unwrap(), r.spread.unwrap_or(0.0)))
            .unwrap()
    };
    let (m, f) = load("vm-2cpu-quick-18.jsonl");
    assert!(f.machine.memsys.copy_mlp_lines > f.machine.memsys.mlp_lines);
    let (d, sp) = row(&m, &f, &f.machine);
    let mut read_lines = f.machine.clone();
    read_lines.memsys.copy_mlp_lines = 0.0;
    let (d0, _) = row(&m, &f, &read_lines);
    assert!(d.abs() <= sp.max(0.05), "{d} (spread {sp})");
    assert!(d0 < -0.15, "{d0}");
    let (_, f) = load("xeon-2cpu-quick-1.jsonl");
    assert_eq!(f.machine.memsys.copy_mlp_lines, 0.0);
    assert!(
        f.notes.iter().any(|n| n.contains("no copy_mlp_lines")),
        "{:?}",
        f.notes
    );
}

/// A written line's controller cost (docs/probe.md, Round 18d): on the
/// EPYC guest's quiet run of session 18 the node read's controllers
/// (61.6 GB/s) carried the two-thread node copy 17% above the host's,
/// so `write_cost` is solved from the copy: the copy row is reproduced
/// (a calibration now), the node read keeps its rate.
#[test]
fn a_written_lines_controller_cost_comes_from_the_node_copy() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/vm-2cpu-quick-18.jsonl");
    let m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
    let rows = |m: &numasim_probe::calibrate::Measurements, mach: &Machine, f: &Fit| {
        let rows = numasim_probe::memsys::validate(m, mach, f.node_gbps_from);
        let copy = rows
            .iter()
            .find(|r| {
                r.metric == "stream_mbps"
                    && r.case_value("threads").and_then(|v| v.as_u64()) == Some(2)
            })
            .cloned()
            .unwrap();
        let read = rows
            .iter()
            .find(|r| r.metric == "bandwidth_mbps")
            .cloned()
            .unwrap();
        (copy, read)
    };
    let f = fit(&m).unwrap();
    let cost = f.machine.memsys.write_cost;
    assert!(cost > 1.2 && cost < 2.0, "{cost}");
    let (copy, read) = rows(&m, &f.machine, &f);
    assert_eq!(copy.role, Some(Role::Calibration));
    assert!(copy.deviation().unwrap().abs() < 0.01, "{copy:?}");
    assert!(read.deviation().unwrap().abs() < 0.01, "{read:?}");
    // Without it the read's controllers carry the copy past its bound.
    let mut free = f.machine.clone();
    free.memsys.write_cost = 1.0;
    let (copy1, read1) = rows(&m, &free, &f);
    assert!(
        copy1.deviation().unwrap() > copy1.spread.unwrap().max(0.05),
        "{copy1:?}"
    );
    assert_eq!(read1.value, read.value);
}

/// Round 19: the share of a request's cost that keeps the device busy
/// (`DiskFit::command_share`, written as `[block] disk_command_us`). A
/// call of one request at queue depth 1 pays it as it paid the
/// overlapped latency (the depth-1 rows cannot move), while queued
/// requests pay it one after another, so the sweep's speed-ups fall as
/// it grows; a write's part never passes the write's own latency; at 0
/// the machine is the disk of before.
#[test]
fn the_devices_busy_share_slows_queued_requests_only() {
    use numasim::kernel::KernelConfig;
    use numasim_probe::iofit::{self, DiskFit, LARGE_REQUEST};
    let (_, f) = fitted(1);
    let (plain, meas) = sweep_disk(&f, 1200.0, 1500.0, 1);
    // A write request as dear as a read one: no cap below.
    let truth = DiskFit {
        write_latency_us: Some(150.0),
        ..plain.clone()
    };
    let at = |share: f64| DiskFit {
        command_share: share,
        ..truth.clone()
    };
    let base = iofit::io_machine(&f.machine, &truth, &meas).unwrap();
    let zero = iofit::io_machine(&f.machine, &at(0.0), &meas).unwrap();
    assert_eq!(base.to_toml_string(), zero.to_toml_string());
    let b0 = base.block.as_ref().unwrap();
    let mut last = f64::INFINITY;
    for share in [0.0, 0.5, 1.0] {
        let d = at(share);
        let mach = iofit::io_machine(&f.machine, &d, &meas).unwrap();
        let b = mach.block.as_ref().unwrap();
        let busy = share * 150.0;
        assert!((b.disk_command_us - b0.disk_command_us - busy).abs() < 1e-9);
        assert!((b.disk_latency_us - (150.0 - busy)).abs() < 1e-9);
        assert!((b.disk_write_latency_us.unwrap() - (150.0 - busy)).abs() < 1e-9);
        let k = KernelConfig::defaults(&mach);
        let one = meas
            .host_io(LARGE_REQUEST)
            .direct_read_depth(&mach, &k, 1, 1)
            .unwrap();
        let k0 = KernelConfig::defaults(&base);
        let one0 = meas
            .host_io(LARGE_REQUEST)
            .direct_read_depth(&base, &k0, 1, 1)
            .unwrap();
        assert!((one / one0 - 1.0).abs() < 0.005, "{one} against {one0}");
        let up = iofit::sim_speedups(&f.machine, &meas, &d, LARGE_REQUEST, &[8]).unwrap()[0];
        assert!(up < last || share == 0.0, "{share}: {up} after {last}");
        last = up;
    }
    // Beyond the unit interval it is clamped: all of the read's cost.
    let over = iofit::io_machine(&f.machine, &at(3.0), &meas).unwrap();
    let full = iofit::io_machine(&f.machine, &at(1.0), &meas).unwrap();
    assert_eq!(over.to_toml_string(), full.to_toml_string());
    // A write request of 40 us caps the busy part at 40: the read keeps
    // 110 us of latency, the write none, and each its total.
    let capped = DiskFit {
        command_share: 1.0,
        ..plain
    };
    let b = iofit::io_machine(&f.machine, &capped, &meas).unwrap();
    let b = b.block.as_ref().unwrap();
    assert!((b.disk_command_us - b0.disk_command_us - 40.0).abs() < 1e-9);
    assert!((b.disk_latency_us - 110.0).abs() < 1e-9);
    assert_eq!(b.disk_write_latency_us, Some(0.0));
}

/// Round 19: a disk simulated with a known busy share (a quarter and a
/// half of its 150 us request cost, the write's 40 us capping neither)
/// gives direct rates at depth 1 and the sweep's 1 MiB speed-ups at
/// depths 2, 4 and 8; fitted back, the share comes out as it went in
/// with one command and no ceiling, the sweep's calibration rows are
/// reproduced within 2%, and so are the depth-1 rates. A disk with no
/// busy share fitted to the same sweep puts its depth-8 speed-up past
/// that.
#[test]
fn the_disk_fit_recovers_a_known_busy_share_from_a_depth_sweep() {
    use numasim_probe::iofit::{self, DiskFit, LARGE_REQUEST};
    let (_, f) = fitted(1);
    for share in [0.25, 0.5] {
        let (plain, mut meas) = sweep_disk(&f, 1200.0, 1500.0, 1);
        let truth = DiskFit {
            command_share: share,
            write_latency_us: Some(150.0),
            ..plain
        };
        meas.rates.clear();
        let mach = iofit::io_machine(&f.machine, &truth, &meas).unwrap();
        for size in [LARGE_REQUEST, iofit::SMALL_REQUEST] {
            push_direct_rates(&mut meas, &mach, size);
        }
        let depths = [2u32, 4, 8];
        let ups = iofit::sim_speedups(&f.machine, &meas, &truth, LARGE_REQUEST, &depths).unwrap();
        push_sweep(&mut meas, &depths, &ups);
        let got = iofit::fit(&f.machine, &meas).unwrap();
        assert_eq!(
            (got.commands, got.ceiling_mibps, got.command_share),
            (1, None, share),
            "{got:?}"
        );
        let rows = iofit::validate(&f.machine, &meas, &got);
        for r in rows
            .iter()
            .filter(|r| r.metric == "qd_speedup" || r.role == Some(Role::Calibration))
        {
            assert!(r.deviation().unwrap().abs() < 0.02, "{r:?}");
        }
        let none = DiskFit {
            command_share: 0.0,
            ..got.clone()
        };
        let up0 = iofit::sim_speedups(&f.machine, &meas, &none, LARGE_REQUEST, &[8]).unwrap()[0];
        assert!(up0 / ups[2] > 1.02, "{up0} against {}", ups[2]);
    }
}

/// Round 19's sweep records (the readers' CPU and the device's busy
/// share at each depth) are not a pass's: an older run with them added
/// fits the same disk and writes the same machine file.
#[test]
fn round_19_sweep_records_leave_the_fit_alone() {
    let old = run_text(1);
    let add = [
        r#"{"experiment":"probe","case":{"io":"direct","fs":"ext4","request":"1 MiB","depth":1,"op":"read"},"metric":"cpu_pct_per_mibps","unit":"%CPU/(MiB/s)","value":0.9,"paper":null,"role":null}"#,
        r#"{"experiment":"probe","case":{"io":"direct","fs":"ext4","request":"1 MiB","depth":8,"op":"read"},"metric":"cpu_pct_per_mibps","unit":"%CPU/(MiB/s)","value":0.2,"paper":null,"role":null}"#,
        r#"{"experiment":"probe","case":{"io":"direct","fs":"ext4","request":"1 MiB","depth":8},"metric":"io_busy_pct","unit":"%","value":97.0,"paper":null,"role":null}"#,
    ];
    let new = format!("{}\n{}\n", old.trim_end(), add.join("\n"));
    let a = measurements_from_records(&old).unwrap();
    let b = measurements_from_records(&new).unwrap();
    assert_eq!(a.io.cpu, b.io.cpu);
    assert_eq!(
        fit(&a).unwrap().annotated_toml().0,
        fit(&b).unwrap().annotated_toml().0
    );
}
/// Round 19: what a load L1 misses costs the random reads' loop
/// (`hierarchy.l1_miss_issue_ns`), recovered from a sweep simulated on
/// the first fixture's fitted machine with a known price (a tenth of
/// `read_ns`, about twice the EPYC guest's) at the sizes the loop binds,
/// and none fitted from a sweep simulated without one.
#[test]
fn the_fit_recovers_a_missing_loads_issue_cost_from_the_random_reads() {
    let (m, f) = fitted(1);
    let extra = [256 << 10, 512 << 10, 2 << 20];
    let mut truth = f.machine.clone();
    truth.hierarchy.l1_miss_issue_ns = 0.0;
    let got = fit(&simulated_sweep(&m, &truth, &extra)).unwrap();
    assert_eq!(
        got.machine.hierarchy.l1_miss_issue_ns, 0.0,
        "{:?}",
        got.notes
    );
    let price = 0.1 * truth.hierarchy.read_ns;
    truth.hierarchy.l1_miss_issue_ns = price;
    let got = fit(&simulated_sweep(&m, &truth, &extra)).unwrap();
    let x = got.machine.hierarchy.l1_miss_issue_ns;
    assert!(
        (x / price - 1.0).abs() < 0.1,
        "{x} against {price}: {:?}",
        got.notes
    );
    assert!(
        got.notes
            .iter()
            .any(|n| n.contains("hierarchy.l1_miss_issue_ns")),
        "{:?}",
        got.notes
    );
}

/// Round 19 on a real run (live18-3, the fixture `vm-2cpu-quick-18`):
/// its random reads from 256 KiB to 8 MiB ran 4-5% below the L1 rate,
/// L2 or L3 alike. With the fitted price each is within 5% (median 1%
/// or less); without it the model gives the L1 rate there, every row
/// fast and the median past 3.5%.
#[test]
fn a_real_runs_random_reads_past_l1_follow_the_missing_loads_issue_cost() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/vm-2cpu-quick-18.jsonl");
    let m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
    let f = fit(&m).unwrap();
    let price = f.machine.hierarchy.l1_miss_issue_ns;
    assert!(price > 0.05 && price < 0.1, "{price}");
    let plateau = |mach: &Machine| -> Vec<f64> {
        validate(&m, mach, &f.used)
            .iter()
            .filter(|r| r.metric == "random_mbps" && r.role == Some(Role::Validation))
            .filter(|r| {
                let s = r.case_value("size").and_then(|v| v.as_str()).unwrap_or("");
                [
                    "256 KiB", "512 KiB", "1 MiB", "2 MiB", "4 MiB", "6 MiB", "8 MiB",
                ]
                .contains(&s)
            })
            .filter_map(|r| r.deviation())
            .collect()
    };
    let median = |mut v: Vec<f64>| {
        v.iter_mut().for_each(|x| *x = x.abs());
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let with = plateau(&f.machine);
    assert!(with.len() >= 12, "{with:?}");
    assert!(with.iter().all(|d| d.abs() <= 0.05), "{with:?}");
    assert!(median(with) <= 0.01);
    let mut none = f.machine.clone();
    none.hierarchy.l1_miss_issue_ns = 0.0;
    let without = plateau(&none);
    assert!(without.iter().all(|&d| d > 0.0), "{without:?}");
    assert!(median(without) > 0.035);
}

/// Round 19b: the private L2's replacement as the chase finds it is a
/// choice fitted jointly with the latencies. A sweep simulated on
/// live18-3's fitted machine (the fixture `vm-2cpu-quick-18`, which
/// keeps the retention rule) gives the retention rule back; the same
/// machine with its L2 evicting at random at its sysfs size gives random
/// eviction back, and the simulated 1-2 MiB chase within 5%.
#[test]
fn the_joint_fit_recovers_the_l2s_replacement_from_the_chase() {
    use numasim::machine::Replacement;
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/runs/vm-2cpu-quick-18.jsonl");
    let m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
    let f = fit(&m).unwrap();
    let random = |mach: &Machine| mach.hierarchy.cyclic_policy.contains(&Replacement::Random);
    assert!(!random(&f.machine), "{:?}", f.notes);
    let got = fit(&simulated_sweep(&m, &f.machine, &[])).unwrap();
    assert!(!random(&got.machine), "{:?}", got.notes);
    let mut truth = f.machine.clone();
    let n = truth.cpu.caches.len();
    let l2 = (0..n)
        .find(|&i| truth.cpu.caches[i].level == 2)
        .expect("an L2");
    truth.hierarchy.cyclic_policy = vec![Replacement::Retain; n];
    truth.hierarchy.cyclic_policy[l2] = Replacement::Random;
    truth.hierarchy.reach[l2] = truth.cpu.caches[l2].size;
    let sweep = simulated_sweep(&m, &truth, &[]);
    let got = fit(&sweep).unwrap();
    assert_eq!(
        got.machine.hierarchy.cyclic_policy.get(l2),
        Some(&Replacement::Random),
        "{:?}",
        got.notes
    );
    assert!(
        got.notes.iter().any(|x| x.contains("cyclic_policy random")),
        "{:?}",
        got.notes
    );
    let mut checked = 0;
    for row in validate(&sweep, &got.machine, &got.used) {
        let s = row
            .case_value("size")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        if row.metric == "mem_latency_ns" && ["1 MiB", "2 MiB"].contains(&s) {
            let d = row.deviation().expect("a deviation");
            assert!(d.abs() < 0.05, "{s}: {d}");
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "both pages at 1 and 2 MiB");
}

/// A fixture run by file name, and its fit.
fn saved(name: &str) -> (numasim_probe::calibrate::Measurements, Fit) {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/runs/{name}.jsonl"));
    let m = measurements_from_records(&std::fs::read_to_string(p).unwrap()).unwrap();
    let f = fit(&m).unwrap();
    (m, f)
}

/// The fitted machine file's line for `key` (`key = value  # source`).
fn machine_line(f: &Fit, key: &str) -> String {
    let (t, _) = f.annotated_toml();
    t.lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no {key} in the machine file"))
        .to_string()
}

/// Round 20 on two quiet runs of the EPYC guest (live19-1, live19-3).
/// live19-1's 1 GiB huge-page copy read 8.2 GB/s over rounds spread
/// 199%, below its own 4 KiB copy (17.6 GB/s): it is set aside, the
/// machine file says so, and one core's STREAM copy (the copy loop of
/// the same buffers, 36.3 GB/s, spread 3%) is predicted within 1.5x its
/// bound (it was -55%, 11x). live19-3's node read is past what the
/// model's cores reach, so it only bounded the controllers and the
/// node copy was never fitted (65 against 36 GB/s); now the copy binds
/// them through a written line's cost. live18-3 (fixture 18), whose
/// copy agrees, keeps its huge-page pass.
#[test]
fn round_20_a_disturbed_copy_is_set_aside_and_a_node_copy_binds() {
    let row = |rows: &[numasim::report::Record], threads: i64| {
        rows.iter()
            .find(|r| {
                r.metric == "stream_mbps"
                    && r.case_value("threads").and_then(|v| v.as_i64()) == Some(threads)
                    && r.case_value("cpu_node").is_none()
            })
            .cloned()
            .unwrap()
    };
    let (m, f) = saved("vm-2cpu-quick-19-1");
    let line = machine_line(&f, "stream_mbps");
    assert!(
        line.contains("at 1 GiB (4k)") && line.contains("set aside"),
        "{line}"
    );
    let zero = machine_line(&f, "zero_gbps");
    assert!(zero.contains("(4k)"), "{zero}");
    let rows = numasim_probe::memsys::validate(&m, &f.machine, f.node_gbps_from);
    let one = row(&rows, 1);
    let bound = one.spread.unwrap().max(0.05);
    let d = one.deviation().unwrap().abs();
    assert!(
        d <= 1.5 * bound,
        "one core's copy off by {d} against {bound}"
    );

    let (m, f) = saved("vm-2cpu-quick-19-3");
    assert!(f.machine.memsys.write_cost > 1.0);
    let rows = numasim_probe::memsys::validate(&m, &f.machine, f.node_gbps_from);
    let two = row(&rows, 2);
    assert_eq!(two.role, Some(Role::Calibration));
    assert!(
        two.deviation().unwrap().abs() < 0.01,
        "{:?}",
        two.deviation()
    );

    let (_, f) = fitted(18);
    let line = machine_line(&f, "stream_mbps");
    assert!(
        line.contains("(thp)") && !line.contains("set aside"),
        "{line}"
    );
}
