//! The memory system as Intel MLC, STREAM and core-to-core tools measure
//! it (issue 29): idle latency per (CPU node, memory node), read bandwidth
//! per node and per core, and the one-way time of a contended line between
//! two CPUs of each cache domain. [`fit`] writes them into the fitted
//! machine's `[memsys]`; [`validate`] runs the simulator's own workloads
//! (`mlc-latency-matrix`, `mlc-bandwidth-matrix`, `stream`, `c2c-latency`)
//! on that machine and sets them beside the measurements.

use crate::bench::{self, Effort, Rng};
use crate::calibrate::{Fit, Measurements};
use crate::mem::{build_chase, chase, touched_mapping};
use crate::sys::{self, Mapping, PageKind};
use crate::topology::{parse_cpulist, Topology};
use numasim::machine::{Domain, Machine};
use numasim::report::Record;
use serde_json::json;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the probe measured of the memory system. Node numbers are
/// positions in [`Topology::nodes`] (the fitted machine's node numbers).
#[derive(Debug, Clone, Default)]
pub struct MemSysMeas {
    /// (CPU node, memory node, idle latency ns, spread).
    pub latency: Vec<(usize, usize, f64, f64)>,
    /// (CPU node, memory node, bytes/s read by every CPU of the CPU node
    /// together, spread).
    pub node_read: Vec<(usize, usize, f64, f64)>,
    /// One thread's sequential read of a buffer past the caches, bytes/s,
    /// and its spread.
    pub core_read: Option<(f64, f64)>,
    /// Bytes of the buffer each node read covered (every thread a share);
    /// `None` in runs saved before it was recorded: the curve's largest
    /// chase, which the probe used then.
    pub read_bytes: Option<u64>,
    /// (domain name, CPU a, CPU b, one-way ns, spread).
    pub c2c: Vec<(String, usize, usize, f64, f64)>,
    /// Hardware threads per core (`thread_siblings_list`).
    pub smt: Option<u32>,
    /// Packages (sockets) the nodes' CPUs lie in (`physical_package_id`).
    pub sockets: Option<u32>,
    /// When the figures were taken (UTC, `YYYY-MM-DD HH:MM`).
    pub when: String,
}

/// Now, UTC, as `YYYY-MM-DD HH:MM` (no calendar crate: Howard Hinnant's
/// days-to-civil).
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Sum a buffer: a streaming read the compiler vectorizes (four
/// independent sums, so the adds never bound the loads).
#[inline(never)]
pub fn read_sum(buf: &[u64]) -> u64 {
    let mut s = [0u64; 4];
    for c in buf.chunks_exact(4) {
        for k in 0..4 {
            s[k] = s[k].wrapping_add(c[k]);
        }
    }
    s.iter().fold(0, |a, &b| a.wrapping_add(b))
}

/// Read bandwidth of `threads` threads pinned to `cpus`, each reading its
/// own share of one buffer (bound to `node` where given), bytes/s summed,
/// one figure per repetition: `mlc --bandwidth_matrix` with reads only.
pub fn parallel_read(
    size: usize,
    page: PageKind,
    threads: usize,
    cpus: &[usize],
    node: Option<usize>,
    effort: Effort,
) -> std::io::Result<Vec<f64>> {
    let m = touched_mapping(size, page, node)?;
    let per = (m.len() / 8 / threads.max(1)).max(4);
    let words = m.as_u64();
    let mut rates = Vec::with_capacity(effort.reps);
    for _ in 0..effort.reps {
        let (res, _) = bench::run_pinned(threads, cpus, Some(effort.rep_time), |i, stop| {
            let c = &words[(i * per).min(words.len())..((i + 1) * per).min(words.len())];
            let mut done = 0;
            while !stop.load(Ordering::Relaxed) {
                black_box(read_sum(c));
                done += (c.len() * 8) as u64;
            }
            done
        });
        // Each thread's bytes over its own CPU time, summed: on a quiet
        // host the threads run together and this is the wall-clock sum;
        // on a busy one it leaves out the waits for a CPU (as
        // `bench::rates` does), an upper bound where the threads did not
        // overlap.
        rates.push(
            res.iter()
                .map(|r| {
                    r.ops as f64 * 1e9 / r.cpu_ns.clamp(1, (r.end_ns - r.start_ns).max(1)) as f64
                })
                .sum(),
        );
        if sys::stop_requested() {
            break;
        }
    }
    Ok(rates)
}

/// Idle latency from a thread on each of `from` (node, CPU) to one buffer
/// bound to `mem_node`: one random cycle over its lines, built once and
/// chased from each CPU in turn (`mlc --latency_matrix`'s column). Returns
/// (node, median ns, spread) per CPU.
pub fn latency_column(
    mem_node: Option<usize>,
    from: &[(usize, usize)],
    size: usize,
    page: PageKind,
    effort: Effort,
) -> std::io::Result<Vec<(usize, f64, f64)>> {
    let mut m = Mapping::new(size, page)?;
    if let Some(n) = mem_node {
        m.bind_to_node(n)?;
    }
    let mut rng = Rng::new(0xc0ffee + mem_node.unwrap_or(0) as u64);
    build_chase(m.as_u64_mut(), &mut rng);
    let words = m.as_u64();
    let mut out = Vec::new();
    for &(node, cpu) in from {
        let v = std::thread::scope(|s| {
            s.spawn(|| {
                let _ = sys::pin_to_cpu(cpu);
                let mut pos = 0;
                // One pass first: the lines come back from wherever the
                // last reader left them.
                pos = chase(words, pos, words.len() / 8);
                let r = bench::rates(effort, || {
                    pos = chase(words, pos, 1 << 14);
                    1 << 14
                });
                black_box(pos);
                r
            })
            .join()
            .expect("latency thread panicked")
        });
        out.push((node, 1e9 / bench::median(&v).max(1e-9), bench::spread(&v)));
        if sys::stop_requested() {
            break;
        }
    }
    Ok(out)
}

#[repr(align(128))]
struct Line(AtomicU64);

/// One contended line bounced between CPUs `a` and `b`: each thread waits
/// for its parity and then increments, so every increment is one move of
/// the line (the core-to-core latency tools' ping-pong). The first thread
/// times batches of [`PING_BATCH`] of its increments (2 × that many
/// moves); a repetition's figure is its fastest batch: one where both
/// threads were on a CPU throughout (on a busy host most batches wait for
/// the scheduler, which is not the line's cost). Returns the median
/// one-way ns over the repetitions and its spread.
pub fn ping_pong(a: usize, b: usize, effort: Effort) -> (f64, f64) {
    let mut v = Vec::new();
    for _ in 0..effort.reps {
        let line = Line(AtomicU64::new(0));
        // Fastest batch, picoseconds per move.
        let best = AtomicU64::new(u64::MAX);
        bench::run_pinned(2, &[a, b], Some(effort.rep_time), |i, stop| {
            let me = i as u64;
            let (mut n, mut k) = (0u64, 0u64);
            let mut t0 = sys::monotonic_ns();
            loop {
                let x = line.0.load(Ordering::Acquire);
                if x % 2 == me {
                    line.0.store(x + 1, Ordering::Release);
                    n += 1;
                    if i == 0 {
                        k += 1;
                        if k == PING_BATCH {
                            let t = sys::monotonic_ns();
                            best.fetch_min((t - t0) * 1000 / (2 * PING_BATCH), Ordering::Relaxed);
                            (t0, k) = (t, 0);
                        }
                    }
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                std::hint::spin_loop();
            }
            n
        });
        let b = best.load(Ordering::Relaxed);
        if b != u64::MAX {
            v.push(b as f64 / 1000.0);
        }
        if sys::stop_requested() {
            break;
        }
    }
    (bench::median(&v), bench::spread(&v))
}

/// Increments of the first ping-pong thread timed together.
pub const PING_BATCH: u64 = 128;

/// One thread pinned to `cpu` reading a buffer (bound to `node` where
/// given) over and over: bytes/s per repetition, on the thread's CPU time.
pub fn core_read(
    cpu: usize,
    size: usize,
    page: PageKind,
    node: Option<usize>,
    effort: Effort,
) -> std::io::Result<Vec<f64>> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = sys::pin_to_cpu(cpu);
            let m = touched_mapping(size, page, node)?;
            let words = m.as_u64();
            Ok(bench::rates(effort, || {
                black_box(read_sum(words));
                (words.len() * 8) as u64
            }))
        })
        .join()
        .expect("read thread panicked")
    })
}

/// A CPU's siblings, package and last-level-cache sharers from
/// `/sys/devices/system/cpu/cpuN`.
struct CpuTopo {
    siblings: Vec<usize>,
    package: Option<u64>,
    llc: Vec<usize>,
}

fn cpu_topo(root: &Path, cpu: usize) -> CpuTopo {
    let d = root.join(format!("cpu{cpu}"));
    let r = |p: &str| std::fs::read_to_string(d.join(p)).ok();
    let list = |p: &str| {
        r(p).and_then(|s| parse_cpulist(s.trim()).ok())
            .unwrap_or_else(|| vec![cpu])
    };
    // The highest-level data or unified cache's sharers.
    let llc = std::fs::read_dir(d.join("cache"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
                .filter_map(|e| {
                    let p = e.path();
                    let t = std::fs::read_to_string(p.join("type")).ok()?;
                    if t.trim() == "Instruction" {
                        return None;
                    }
                    let level: u32 = std::fs::read_to_string(p.join("level"))
                        .ok()?
                        .trim()
                        .parse()
                        .ok()?;
                    let l = parse_cpulist(
                        std::fs::read_to_string(p.join("shared_cpu_list"))
                            .ok()?
                            .trim(),
                    )
                    .ok()?;
                    Some((level, l))
                })
                .max_by_key(|x| x.0)
                .map(|x| x.1)
        })
        .ok()
        .flatten()
        .unwrap_or_else(|| vec![cpu]);
    CpuTopo {
        siblings: list("topology/thread_siblings_list"),
        package: r("topology/physical_package_id").and_then(|s| s.trim().parse().ok()),
        llc,
    }
}

/// One pair of CPUs per cache domain, the first from the first allowed CPU:
/// (domain, a, b); also the threads per core and the sockets.
pub fn cpu_pairs(
    topo: &Topology,
    allowed: &[usize],
    cpu_root: &Path,
) -> (Vec<(Domain, usize, usize)>, u32, u32) {
    let Some(&a) = allowed.first() else {
        return (vec![], 1, 1);
    };
    let ta = cpu_topo(cpu_root, a);
    let node = |c: usize| topo.node_of_cpu(c);
    let mut out: Vec<(Domain, usize, usize)> = Vec::new();
    let mut packages: Vec<u64> = Vec::new();
    for &b in allowed.iter().skip(1) {
        let tb = cpu_topo(cpu_root, b);
        if let Some(p) = tb.package {
            if !packages.contains(&p) {
                packages.push(p);
            }
        }
        let d = if ta.siblings.contains(&b) {
            Domain::Core
        } else if ta.llc.contains(&b) {
            Domain::Llc
        } else if node(a) == node(b) {
            Domain::Node
        } else if ta.package.is_some() && ta.package == tb.package {
            Domain::Socket
        } else {
            Domain::Remote
        };
        if !out.iter().any(|x| x.0 == d) {
            out.push((d, a, b));
        }
    }
    if let Some(p) = ta.package {
        if !packages.contains(&p) {
            packages.push(p);
        }
    }
    out.sort_by_key(|x| x.0);
    (
        out,
        ta.siblings.len().max(1) as u32,
        packages.len().max(1) as u32,
    )
}

/// The domain of the first two allowed CPUs (where the atomics test's two
/// threads run), from the pairs measured.
fn domain_named(name: &str) -> Option<Domain> {
    Domain::ALL.into_iter().find(|d| d.name() == name)
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Write the measurements into `[memsys]` (each value's comment says it
/// was measured by the probe, on which host, when); see docs/probe.md.
pub fn fit(m: &Measurements, f: &mut Fit) {
    let ms = &m.memsys;
    if ms.latency.is_empty() && ms.c2c.is_empty() && ms.core_read.is_none() {
        f.notes
            .push("memsys: nothing measured; the machine has no [memsys] table".into());
        return;
    }
    let host = m.name.strip_prefix("host-").unwrap_or(&m.name).to_string();
    let by = |what: String| format!("measured by the probe on {host}, {}: {what}", ms.when);
    let copy_own = f.sources.iter().any(|(_, k, _)| k == "stream_mbps") && ms.core_read.is_some();
    let mach = &mut f.machine;
    let n = mach.node_count();
    let mut s = mach.memsys.clone();
    s.explicit = true;
    let mut src: Vec<(&'static str, String)> = Vec::new();
    let sockets = ms.sockets.unwrap_or(1).max(1) as usize;
    s.nodes_per_socket = if n.is_multiple_of(sockets) {
        (n / sockets) as u32
    } else {
        1
    };
    src.push((
        "nodes_per_socket",
        by(format!(
            "{n} node(s) over {sockets} package(s) (physical_package_id)"
        )),
    ));
    // Latency: local = LLC lookup + dram_ns; the hops by domain.
    let llc = mach.llc_latency_ns();
    let local: Vec<f64> = ms
        .latency
        .iter()
        .filter(|x| x.0 == x.1)
        .map(|x| x.2)
        .collect();
    if let Some(l) = mean(&local) {
        s.dram_ns = (l - llc).max(0.0);
        src.push((
            "dram_ns",
            by(format!(
                "idle latency {l:.1} ns (mean of {} local chase(s)) less the LLC lookup {llc:.1} ns",
                local.len()
            )),
        ));
    }
    let socket_of = |node: usize| node / s.nodes_per_socket.max(1) as usize;
    let hops = |same_socket: bool| -> Vec<f64> {
        ms.latency
            .iter()
            .filter(|x| x.0 != x.1 && (socket_of(x.0) == socket_of(x.1)) == same_socket)
            .filter_map(|&(i, j, l, _)| {
                let own = ms.latency.iter().find(|y| y.0 == i && y.1 == i)?.2;
                let _ = j;
                Some((l - own).max(0.0))
            })
            .collect()
    };
    for (key, same) in [("node_hop_ns", true), ("socket_hop_ns", false)] {
        let h = hops(same);
        if let Some(v) = mean(&h) {
            if same {
                s.node_hop_ns = v;
            } else {
                s.socket_hop_ns = v;
            }
            src.push((
                key,
                by(format!(
                    "remote - local idle latency, mean of {} pair(s)",
                    h.len()
                )),
            ));
        }
    }
    // Bandwidth: every CPU of a node reading its own memory.
    let own: Vec<f64> = ms
        .node_read
        .iter()
        .filter(|x| x.0 == x.1)
        .map(|x| x.2 / 1e9)
        .collect();
    let own_gbps = mean(&own);
    if let Some(g) = own_gbps {
        s.node_gbps = g;
        let sp = ms
            .node_read
            .iter()
            .filter(|x| x.0 == x.1)
            .map(|x| x.3)
            .fold(0.0, f64::max);
        src.push((
            "node_gbps",
            by(format!(
                "every CPU of a node reading its own memory, mean of {} node(s){}",
                own.len(),
                crate::calibrate::spread_tag(Some(sp))
            )),
        ));
    }
    // Misses in flight: Little's law on one core's read, with the M/D/1
    // wait the solver adds at that utilisation (kernel/mm/memflow.rs), so
    // the simulated one-thread read reproduces the measured one. Then
    // the node's controllers: solved (on ln node_gbps, secant steps) so
    // that `mlc-bandwidth-matrix` on the fitted machine reproduces every
    // CPU of the node reading; the two are solved in turn, since each
    // figure depends a little on the other parameter.
    let line = mach.cpu.cache_line as f64;
    let mlp_for = |s: &numasim::machine::MemSys, bps: f64| {
        let rho = (bps / 1e9 / s.node_gbps).min(0.9);
        let lat = llc + s.dram_ns + s.queue_ns * rho / (2.0 * (1.0 - rho));
        ((bps / 1e9 * lat / line).max(1.0), lat)
    };
    if let (Some((bps, sp)), Some(l)) = (ms.core_read, mean(&local)) {
        if bps / 1e9 >= s.node_gbps {
            f.notes.push(format!(
                "memsys: one core read {:.0} MB/s, the whole node {:.0} MB/s: the node figure is low (noise); mlp_lines uses 90% utilisation",
                bps / 1e6,
                s.node_gbps * 1e3
            ));
        }
        // A node read over a buffer the node's last-level caches hold
        // much of measured them too (READ_PAST_LLC): it cannot give the
        // controllers, and `mlc-bandwidth-matrix` (memory only) has
        // nothing to reproduce. The node copy, over the sweep's largest
        // buffer, then gives them.
        let home_node = ms.node_read.iter().find(|x| x.0 == x.1).map(|x| x.0);
        let cached = home_node.is_some_and(|i| read_in_llc(m, i));
        let home = ms
            .node_read
            .iter()
            .find(|x| x.0 == x.1 && !cached)
            .map(|x| (x.0, x.2));
        let mut solved = home.is_none();
        // Whether the read only bounded the controllers (the `None` arm).
        let mut read_bound = false;
        for _ in 0..4 {
            s.mlp_lines = mlp_for(&s, bps).0;
            let Some((node, target)) = home else { break };
            let mut base = mach.clone();
            base.memsys = s.clone();
            let sim = |x: f64| {
                let mut t = base.clone();
                t.memsys.node_gbps = x.clamp(-7.0, 13.0).exp();
                node_read_sim(&t, node).unwrap_or(f64::NAN)
            };
            match crate::hierarchy::solve_within(sim, target / 1e6, s.node_gbps.ln(), 1e-3) {
                Some(x) => {
                    s.node_gbps = x.clamp(-7.0, 13.0).exp();
                    solved = true;
                }
                None => {
                    // The cores' misses in flight bind before any
                    // controller does (the node read came out above the
                    // cores' ceiling: the two figures' noise). The
                    // measured rate as `node_gbps` would run the
                    // controllers at utilisation ~1 and queue every miss
                    // (the node read then 26% low, one thread's copy 20%,
                    // on the Xeon guest); the nearest the model comes is
                    // with the controllers just out of the way: the least
                    // node_gbps within 1% of that ceiling. The read is
                    // then a prediction the model misses, not a
                    // calibration it reproduces.
                    solved = false;
                    read_bound = true;
                    f.node_gbps_from = NodeGbpsFrom::Bound;
                    s.node_gbps = least_near_ceiling(sim, s.node_gbps)
                        .unwrap_or(own_gbps.unwrap_or(s.node_gbps))
                        .max(own_gbps.unwrap_or(0.0));
                    break;
                }
            }
        }
        // The node copy moved more bytes through the same controllers
        // (every CPU copying: a read and a write per byte). Where the
        // controllers solved from the node read could not have carried it
        // (the simulated copy short of the measured by more than its
        // spread), or the read measured the caches, the controllers are
        // solved from the copy instead (the copy row is then the
        // calibration, the read's a prediction); where no rate reproduces
        // the copy (its cores' misses in flight bind first), they are
        // taken just out of the way, as above.
        let copy_home = meas_home(m);
        let mut copy_binds = None;
        let mut read_rate_for_copy = None;
        if let (true, Some(nc)) = (solved || cached || read_bound, m.node_copy_bps) {
            let mut t = mach.clone();
            t.memsys = s.clone();
            t.memsys.mlp_lines = mlp_for(&s, bps).0;
            let copy_mlp = |u: &mut Machine| {
                u.memsys.copy_mlp_lines = 0.0;
                if copy_own {
                    u.memsys.copy_mlp_lines = copy_mlp_for(u, copy_home).map_or(0.0, |x| x.0);
                }
            };
            copy_mlp(&mut t);
            let bound = m
                .node_copy_spread
                .unwrap_or(0.0)
                .max(crate::validate::TOLERANCE);
            let meas_mbps = 2.0 * nc / 1e6;
            let mut sim_now = node_copy_sim(m, &t, copy_home);
            // The read only bounded the controllers from below (the
            // model's cores could not read as fast as the host's), and
            // the controllers taken just out of the way of the read
            // carry the node copy faster than the host did (live19-3:
            // 65 against 36 GB/s, STREAM's count; live18-2, live6): the
            // copy shows they bind. They are then put at the rate the
            // node's reads did reach (the read's lower bound itself) and
            // a written line's cost solved from the copy below, as where
            // the read solves (round 18d): on this 2-vCPU guest two
            // threads copy about what one does (node copy 1.0-1.1x one
            // core's 1 GiB memcpy in most saved runs) while they read
            // 1.24-1.65x one core's read (docs/probe.md, Round 20).
            if let (true, Some(g), Some((_, sim))) = (read_bound, own_gbps, sim_now) {
                if sim > meas_mbps * (1.0 + bound) && g < s.node_gbps {
                    s.node_gbps = g;
                    t.memsys.node_gbps = g;
                    t.memsys.mlp_lines = mlp_for(&s, bps).0;
                    copy_mlp(&mut t);
                    sim_now = node_copy_sim(m, &t, copy_home);
                    read_rate_for_copy = Some(g);
                }
            }
            if let Some((_, sim)) = sim_now {
                if cached || sim < meas_mbps * (1.0 - bound) {
                    let sim_copy = |x: f64| {
                        let mut u = t.clone();
                        u.memsys.node_gbps = x.clamp(-7.0, 13.0).exp();
                        u.memsys.mlp_lines = mlp_for(&u.memsys, bps).0;
                        copy_mlp(&mut u);
                        node_copy_sim(m, &u, copy_home).map_or(f64::NAN, |x| x.1)
                    };
                    let was = s.node_gbps;
                    match crate::hierarchy::solve_within(
                        sim_copy,
                        meas_mbps,
                        s.node_gbps.ln(),
                        1e-3,
                    )
                    .filter(|x| x.is_finite())
                    {
                        Some(x) => {
                            s.node_gbps = x.clamp(-7.0, 13.0).exp();
                            f.node_gbps_from = NodeGbpsFrom::Copy;
                            solved = true;
                        }
                        None => {
                            if let Some(g) = least_near_ceiling(sim_copy, s.node_gbps) {
                                s.node_gbps = g.max(was);
                            }
                            f.node_gbps_from = NodeGbpsFrom::Bound;
                            solved = false;
                        }
                    }
                    copy_binds = Some((was, sim, meas_mbps));
                } else if sim > meas_mbps * (1.0 + bound) {
                    // The read's controllers carry more copy than the
                    // host's did: DRAM serves a read/write mix slower
                    // than reads (bus turnaround, write batching), so a
                    // written line's controller cost is solved from the
                    // copy (on its log, at least 1); the read, which
                    // writes nothing, keeps its rate.
                    let sim_cost = |x: f64| {
                        let mut u = t.clone();
                        u.memsys.write_cost = x.clamp(0.0, WRITE_COST_LN_MAX).exp();
                        copy_mlp(&mut u);
                        node_copy_sim(m, &u, copy_home).map_or(f64::NAN, |x| x.1)
                    };
                    match crate::hierarchy::solve_within(sim_cost, meas_mbps, 1.5f64.ln(), 1e-3)
                        .filter(|x| x.is_finite() && (0.0..=WRITE_COST_LN_MAX).contains(x))
                    {
                        Some(x) => {
                            s.write_cost = x.exp();
                            src.push((
                                "write_cost",
                                by(format!(
                                    "solved so that stream on every CPU of node {copy_home} reproduces their memcpy, {meas_mbps:.0} MB/s (STREAM's count){}, on the node read's controllers (where a written line costing a read gave {sim:.0})",
                                    crate::calibrate::spread_tag(m.node_copy_spread)
                                )),
                            ));
                        }
                        None => f.notes.push(format!(
                            "memsys: the simulated node copy ({sim:.0} MB/s) exceeds the measured {meas_mbps:.0} by more than its spread and no write_cost up to {:.0} reproduces it; write_cost left at 1",
                            WRITE_COST_LN_MAX.exp()
                        )),
                    }
                }
            }
        }
        if cached {
            f.notes.push(format!(
                "memsys: the node read covered {} against {} of last-level cache (under {READ_PAST_LLC}x): it measured the caches too ({:.0} MB/s, {:.1} GB/s a CPU where one CPU read {:.1}), so it gives no controller rate and is not validated",
                crate::bench::size_label(read_bytes(m).unwrap_or(0)),
                crate::bench::size_label(home_node.and_then(|i| llc_bytes(m, i)).unwrap_or(0)),
                ms.node_read.iter().find(|x| x.0 == x.1).map_or(0.0, |x| x.2 / 1e6),
                ms.node_read.iter().find(|x| x.0 == x.1).map_or(0.0, |x| {
                    x.2 / 1e9 / m.topo.nodes.get(x.0).map_or(1, |n| n.cpus.len().max(1)) as f64
                }),
                bps / 1e9
            ));
        }
        let (mlp, lat) = mlp_for(&s, bps);
        s.mlp_lines = mlp;
        match (copy_binds, f.node_gbps_from) {
            (Some((was, sim, meas_mbps)), NodeGbpsFrom::Copy) => f.notes.push(format!(
                "memsys: node_gbps {:.1} GB/s, solved from the node copy ({meas_mbps:.0} MB/s, STREAM's count){}",
                s.node_gbps,
                if cached {
                    String::new()
                } else {
                    format!(": from the node read ({was:.1} GB/s) it came out at {sim:.0}, short by more than its spread")
                }
            )),
            (Some((_, _, meas_mbps)), _) => f.notes.push(format!(
                "memsys: no node_gbps makes the simulated node copy match the measured {meas_mbps:.0} MB/s with mlp_lines {mlp:.1} (its cores' misses in flight bound it first); node_gbps {:.1} GB/s, the least within 1% of that ceiling (a lower bound)",
                s.node_gbps
            )),
            _ if read_rate_for_copy.is_some() => f.notes.push(format!(
                "memsys: no node_gbps makes the simulated node read match the measured {:.0} MB/s with mlp_lines {mlp:.1} (its cores' misses in flight bound it first), and controllers just out of its way carried the node copy faster than measured: node_gbps {:.1} GB/s, the rate the node's reads reached, and write_cost from the copy",
                home.map_or(0.0, |h| h.1 / 1e6),
                s.node_gbps
            )),
            _ if !solved => f.notes.push(format!(
                "memsys: no node_gbps makes the simulated node read match the measured {:.0} MB/s with mlp_lines {mlp:.1} (its cores' misses in flight bound it first); node_gbps {:.1} GB/s is the least within 1% of that ceiling (a lower bound)",
                home.map_or(0.0, |h| h.1 / 1e6),
                s.node_gbps
            )),
            _ => {}
        }
        src.push((
            "mlp_lines",
            by(format!(
                "one thread reads {:.0} MB/s{}: x {lat:.1} ns (idle {l:.1} + queue) / {line} B (Little's law)",
                bps / 1e6,
                crate::calibrate::spread_tag(Some(sp))
            )),
        ));
        if solved && f.node_gbps_from == NodeGbpsFrom::Copy {
            src.retain(|x| x.0 != "node_gbps");
            src.push((
                "node_gbps",
                by(format!(
                    "solved so that stream on every CPU of node {copy_home} reproduces their memcpy, {:.0} MB/s (STREAM's count){}",
                    2.0 * m.node_copy_bps.unwrap_or(0.0) / 1e6,
                    crate::calibrate::spread_tag(m.node_copy_spread)
                )),
            ));
        } else if solved && home.is_some() {
            src.retain(|x| x.0 != "node_gbps");
            src.push((
                "node_gbps",
                by(format!(
                    "solved so that mlc-bandwidth-matrix reproduces every CPU of node {} reading its own memory, {:.0} MB/s",
                    home.map_or(0, |h| h.0),
                    home.map_or(0.0, |h| h.1 / 1e6)
                )),
            ));
        }
    }
    if let Some(t) = ms.smt {
        s.smt = t.clamp(1, 8);
        src.push(("smt", by("thread_siblings_list".into())));
    }
    if let Some(c) = m.caches.iter().max_by_key(|c| (c.level, c.size)) {
        s.llc_cpus = c.shared_by.max(1);
        src.push(("llc_cpus", by(format!("L{} shared_cpu_list", c.level))));
    }
    let keys = [
        "core_transfer_ns",
        "llc_transfer_ns",
        "node_transfer_ns",
        "socket_transfer_ns",
        "remote_transfer_ns",
    ];
    for (d, a, b, ns, sp) in &ms.c2c {
        if let Some(d) = domain_named(d) {
            s.c2c_ns[d as usize] = *ns;
            src.push((
                keys[d as usize],
                by(format!(
                    "one line bounced between CPUs {a} and {b}, one way{}",
                    crate::calibrate::spread_tag(Some(*sp))
                )),
            ));
        }
    }
    let missing: Vec<&str> = Domain::ALL
        .iter()
        .filter(|d| !ms.c2c.iter().any(|x| x.0 == d.name()))
        .map(|d| keys[*d as usize])
        .collect();
    if !missing.is_empty() {
        f.notes.push(format!(
            "memsys: no CPU pair of this host in {} (the host has none, or too few CPUs allowed): left at line_transfer_ns",
            missing.join(", ")
        ));
    }
    // One thread's copy: its own lines in flight (`copy_mlp_lines`,
    // `copy_mlp_for`); the read's `mlp_lines` left one core's STREAM
    // copy at its read rate, 15-19% under the host's loop
    // (docs/probe.md, Round 18c).
    if copy_own {
        let mut t = mach.clone();
        t.memsys = s.clone();
        t.memsys.copy_mlp_lines = 0.0;
        let h = &mach.hierarchy;
        let rfo = if h.nt_store_threshold > 0 {
            h.rfo_cost
        } else {
            1.0
        };
        match copy_mlp_for(&t, meas_home(m)) {
            Some((x, target)) => {
                s.copy_mlp_lines = x;
                src.push((
                    "copy_mlp_lines",
                    by(format!(
                        "one thread's stream copy at {target:.0} MB/s: hierarchy.stream_mbps{}",
                        if rfo != 1.0 {
                            format!(" / rfo_cost {rfo:.3} (ordinary stores)")
                        } else {
                            String::new()
                        }
                    )),
                ));
            }
            None => {
                s.copy_mlp_lines = 0.0;
                f.notes.push(
                    "memsys: no copy_mlp_lines makes one thread's stream copy reach the core's copy rate (the controllers bind first); the copy keeps mlp_lines".into(),
                );
            }
        }
    }
    mach.memsys = s;
    for (k, from) in src {
        f.source("memsys", k, from);
    }
}

/// The largest `ln write_cost` the node copy's solve tries: a written
/// line at 20 read lines is past any DRAM turnaround penalty (tWTR +
/// tRTW are a few bursts' time each).
const WRITE_COST_LN_MAX: f64 = 3.0;

/// Where `[memsys] node_gbps` came from (the fit tells the validation
/// which row reproduces it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeGbpsFrom {
    /// Every CPU of the node reading (`bandwidth_mbps`), or nothing.
    #[default]
    Read,
    /// Every CPU of the node copying (`node_copy_mbps`).
    Copy,
    /// Neither: a lower bound where the cores' misses in flight bind.
    Bound,
}

/// A node read's buffer under this many times the node's last-level
/// cache measures the cache as well as the controllers: each thread
/// re-reads its share, and the shares together fit the LLC's share of
/// the node (the Xeon guest: 16 shares of 16 MiB against a 300 MiB L3
/// read 202-240 GB/s, 12.7-15 GB/s a CPU, where one CPU read the whole
/// buffer at 8.8-10.6 GB/s). The probe sizes the buffer past it.
pub const READ_PAST_LLC: u64 = 4;

/// The last-level cache the CPUs of node `node` share, bytes: the
/// largest cache's size times its instances among them (sysfs
/// `shared_cpu_list`).
pub fn llc_bytes(m: &Measurements, node: usize) -> Option<u64> {
    let c = m.caches.iter().max_by_key(|c| (c.level, c.size))?;
    let cpus = m.topo.nodes.get(node)?.cpus.len().max(1) as u64;
    Some(c.size * cpus.div_ceil(u64::from(c.shared_by.max(1))))
}

/// The node read's buffer: as recorded, else the curve's largest chase
/// (the buffer the probe read before it recorded one).
fn read_bytes(m: &Measurements) -> Option<u64> {
    m.memsys.read_bytes.or_else(|| {
        m.sizes
            .iter()
            .filter(|x| x.2.latency_ns.is_some())
            .map(|x| x.0)
            .max()
    })
}

/// The controllers just out of the way: the least `node_gbps` (GB/s) whose
/// simulated rate is within 1% of the rate with no controller limit
/// (`sim` takes the rate's log, clamped to e^-7..e^13), searched from
/// `from` GB/s; `None` where the solve does not converge.
fn least_near_ceiling(sim: impl Fn(f64) -> f64, from: f64) -> Option<f64> {
    let ceiling = sim(13.0);
    crate::hierarchy::solve_within(sim, 0.99 * ceiling, from.ln(), 1e-3)
        .filter(|x| x.is_finite())
        .map(|x| x.clamp(-7.0, 13.0).exp())
}

/// Whether node `node`'s read covered a buffer its last-level cache
/// holds much of (under [`READ_PAST_LLC`] times it).
pub fn read_in_llc(m: &Measurements, node: usize) -> bool {
    match (read_bytes(m), llc_bytes(m, node)) {
        (Some(b), Some(c)) => c > 0 && b < READ_PAST_LLC * c,
        _ => false,
    }
}

/// The node whose CPUs copied (`node_copy_mbps`): the first with CPUs
/// and memory.
fn meas_home(m: &Measurements) -> usize {
    m.topo
        .nodes
        .iter()
        .position(|x| !x.cpus.is_empty() && x.mem_total_kb > 0)
        .unwrap_or(0)
}

/// A validation row (`validate::row`) with the measurement's spread.
fn row(
    case: Vec<(&str, serde_json::Value)>,
    metric: &str,
    unit: &str,
    sim: f64,
    meas: f64,
    spread: f64,
    calibration: bool,
) -> Record {
    let mut r = crate::validate::row(case, metric, unit, sim, meas, calibration);
    r.spread = Some(spread);
    r
}

/// `mlc-bandwidth-matrix` from `node`'s CPUs to its own memory on `m`, MB/s.
fn node_read_sim(m: &Machine, node: usize) -> Option<f64> {
    let recs = run_step(
        m,
        &format!("workload = \"mlc-bandwidth-matrix\"\nfrom_nodes = [{node}]\nto_nodes = [{node}]"),
    );
    find(&recs, "bandwidth_mbps", &[])
}

/// The node copy (`node_copy_mbps`: every CPU of node `home` copying
/// its share of one buffer) simulated as `stream` copy on `m`, STREAM's
/// count (both arrays), with memcpy's store strategy: past glibc's
/// non-temporal threshold (each thread copies half of its share in one
/// call; memcost::stream_copy's rule) the stores bypass the caches and
/// read nothing for ownership, so memory moves 2 lines for the 2 counted,
/// not 3 (`memsys.write_allocate` off). Returns (threads, MB/s).
fn node_copy_sim(meas: &Measurements, m: &Machine, home: usize) -> Option<(usize, f64)> {
    let cpus = meas.topo.nodes.get(home)?.cpus.len().max(1);
    let nt = match (meas.node_copy_bytes, meas.nt_store_threshold) {
        (Some(b), Some(t)) => t > 0 && b / cpus as u64 / 2 > t,
        _ => false,
    };
    let mut nt_m = m.clone();
    if nt {
        nt_m.memsys.write_allocate = false;
    }
    let recs = run_step(
        &nt_m,
        &format!("workload = \"stream\"\nnodes = [{home}]\nthreads = [{cpus}]\nop = [\"copy\"]"),
    );
    find(&recs, "stream_mbps", &[("threads", json!(cpus))]).map(|x| (cpus, x))
}

/// One thread's copy, its lines in flight: `memsys.copy_mlp_lines` solved
/// (on its log, secant steps) so that `stream` copy with one thread on `m`
/// runs at the rate the probe's own memory-served copy gives a core with
/// ordinary stores: `hierarchy.stream_mbps` (memcpy past its non-temporal
/// threshold, both halves counted) times the ownership read's
/// `rfo_cost` below it, as memcost prices the copy rows. Returns the
/// lines and that rate (MB/s); `None` where no number of lines reaches
/// it (the controllers bind first).
fn copy_mlp_for(m: &Machine, home: usize) -> Option<(f64, f64)> {
    let h = &m.hierarchy;
    let rfo = if h.nt_store_threshold > 0 {
        h.rfo_cost
    } else {
        1.0
    };
    let target = h.stream_mbps / rfo;
    let sim = |x: f64| {
        let mut u = m.clone();
        u.memsys.copy_mlp_lines = x.clamp(0.0, 12.0).exp();
        one_copy_sim(&u, home).unwrap_or(f64::NAN)
    };
    crate::hierarchy::solve_within(sim, target, m.memsys.mlp_lines.max(1.0).ln(), 1e-3)
        .filter(|x| x.is_finite())
        .map(|x| (x.clamp(0.0, 12.0).exp(), target))
}

/// One thread's `stream` copy on node `home` of `m`, MB/s (both arrays
/// counted).
fn one_copy_sim(m: &Machine, home: usize) -> Option<f64> {
    let recs = run_step(
        m,
        &format!("workload = \"stream\"\nnodes = [{home}]\nthreads = [1]\nop = [\"copy\"]"),
    );
    find(&recs, "stream_mbps", &[("threads", json!(1))])
}

/// Run one step of a workload on `m`; its records.
fn run_step(m: &Machine, toml_text: &str) -> Vec<Record> {
    let Ok(table) = toml_text.parse::<toml::Table>() else {
        return vec![];
    };
    let Ok(parsed) = numasim::workload::parse_step(&table, m) else {
        return vec![];
    };
    let case = numasim::workload::ResolvedCase {
        keys: vec![],
        machine: std::sync::Arc::new(m.clone()),
        kernel: numasim::kernel::KernelConfig::defaults(m),
        seed: 1,
        steps: vec![table],
        parsed: vec![parsed],
    };
    numasim::workload::run_case(crate::validate::EXPERIMENT, &case).unwrap_or_default()
}

fn find(recs: &[Record], metric: &str, keys: &[(&str, serde_json::Value)]) -> Option<f64> {
    recs.iter()
        .find(|r| r.metric == metric && keys.iter().all(|(k, v)| r.case_value(k) == Some(v)))
        .and_then(|r| r.value)
}

/// The new workloads on the fitted machine beside the measurements. A
/// row is calibration where a parameter was solved from that one
/// measurement alone (one node, one pair of its kind), else validation.
pub fn validate(meas: &Measurements, m: &Machine, from: NodeGbpsFrom) -> Vec<Record> {
    let ms = &meas.memsys;
    let mut out = Vec::new();
    let n = m.node_count();
    remote_copies(meas, m, n, &mut out);
    if !m.memsys.explicit {
        return out;
    }
    let socket_of = |x: usize| m.socket_of(x);
    let class = |i: usize, j: usize| {
        if i == j {
            0
        } else if socket_of(i) == socket_of(j) {
            1
        } else {
            2
        }
    };
    let count =
        |v: &[(usize, usize, f64, f64)], c: u8| v.iter().filter(|x| class(x.0, x.1) == c).count();
    if !ms.latency.is_empty() {
        let recs = run_step(m, "workload = \"mlc-latency-matrix\"");
        for &(i, j, l, sp) in &ms.latency {
            if i >= n || j >= n {
                continue;
            }
            let keys = [("from_node", json!(i)), ("to_node", json!(j))];
            if let Some(sim) = find(&recs, "idle_latency_ns", &keys) {
                let c = class(i, j);
                out.push(row(
                    keys.to_vec(),
                    "idle_latency_ns",
                    "ns",
                    sim,
                    l,
                    sp,
                    count(&ms.latency, c) == 1,
                ));
            }
        }
    }
    if !ms.node_read.is_empty() {
        let recs = run_step(m, "workload = \"mlc-bandwidth-matrix\"");
        for &(i, j, bps, sp) in &ms.node_read {
            if read_in_llc(meas, j) {
                continue; // it measured the caches too (fit's note)
            }
            let keys = [("from_node", json!(i)), ("to_node", json!(j))];
            if let Some(sim) = find(&recs, "bandwidth_mbps", &keys) {
                out.push(row(
                    keys.to_vec(),
                    "bandwidth_mbps",
                    "MB/s",
                    sim,
                    bps / 1e6,
                    sp,
                    i == j && count(&ms.node_read, 0) == 1 && from == NodeGbpsFrom::Read,
                ));
            }
        }
    }
    // STREAM copy, one thread: the probe's STREAM-style copy loop at the
    // largest size (huge pages where measured) counts bytes copied once;
    // STREAM counts both arrays. mlp_lines was fitted on a read, so this
    // is a prediction (write-allocate: 3 lines moved for 2 counted).
    let home = meas_home(meas);
    let big = [PageKind::Thp, PageKind::Hugetlb, PageKind::Base]
        .into_iter()
        .find_map(|k| {
            meas.sizes
                .iter()
                .filter(|x| x.1 == k)
                .max_by_key(|x| x.0)
                .map(|x| (x.0, k, x.2.clone()))
        });
    if let Some((size, page, r)) = big {
        let cpus = meas.topo.nodes[home].cpus.len().max(1);
        let recs = run_step(
            m,
            &format!(
                "workload = \"stream\"\nnodes = [{home}]\nthreads = [1, {cpus}]\nop = [\"copy\"]"
            ),
        );
        if let Some(sim) = find(&recs, "stream_mbps", &[("threads", json!(1))]) {
            out.push(row(
                vec![
                    ("threads", json!(1)),
                    ("op", json!("copy")),
                    ("size", json!(crate::bench::size_label(size))),
                    ("page", json!(page.label())),
                ],
                "stream_mbps",
                "MB/s",
                sim,
                2.0 * r.copy_loop_bps / 1e6,
                r.spread[1],
                false,
            ));
        }
        // memcpy, not STREAM's loop: its own store strategy (node_copy_sim).
        if let (Some((_, sim)), Some(nc)) = (node_copy_sim(meas, m, home), meas.node_copy_bps) {
            out.push(row(
                vec![
                    ("threads", json!(cpus)),
                    ("op", json!("copy")),
                    ("node", json!(home)),
                ],
                "stream_mbps",
                "MB/s",
                sim,
                2.0 * nc / 1e6,
                meas.node_copy_spread.unwrap_or(0.0),
                // The fit writes `write_cost` only from this copy.
                from == NodeGbpsFrom::Copy || m.memsys.write_cost != 1.0,
            ));
        }
    }
    // Core to core: the c2c workload's price per domain.
    if !ms.c2c.is_empty() {
        let recs = run_step(m, "workload = \"c2c-latency\"");
        for (d, a, b, ns, sp) in &ms.c2c {
            let sim = find(&recs, "domain_latency_ns", &[("domain", json!(d))])
                .or_else(|| domain_named(d).map(|d| m.memsys.c2c_ns[d as usize]));
            if let Some(sim) = sim {
                out.push(row(
                    c2c_case(d, *a, *b),
                    "c2c_latency_ns",
                    "ns",
                    sim,
                    *ns,
                    *sp,
                    true,
                ));
            }
        }
    }
    out
}

/// Node to node: one thread of `cpu_node` copying a buffer bound to
/// `mem_node` (`remote_copy_mbps`) is `stream` with its CPUs on one node
/// and its arrays bound to the other. STREAM counts both arrays, the
/// probe the bytes copied: 2 x. The probe's copy is `memcpy`, whose
/// large copies may skip the write-allocate the model's loop pays, so
/// the model may read low here. `interconnect.link_gbps` is fitted on
/// the mean of these: with one remote pair the row is calibration.
fn remote_copies(meas: &Measurements, m: &Machine, n: usize, out: &mut Vec<Record>) {
    let remote: Vec<&(usize, usize, f64, f64)> = meas
        .pairs
        .iter()
        .filter(|p| p.0 != p.1 && p.0 < n && p.1 < n && p.3 > 0.0)
        .collect();
    for p in &remote {
        let recs = run_step(
            m,
            &format!(
                "workload = \"stream\"\nnodes = [{}]\nthreads = [1]\nop = [\"copy\"]\npolicy = \"bind\"\npolicy_nodes = [{}]",
                p.0, p.1
            ),
        );
        if let Some(sim) = find(&recs, "stream_mbps", &[("threads", json!(1))]) {
            out.push(crate::validate::row(
                vec![
                    ("threads", json!(1)),
                    ("op", json!("copy")),
                    ("cpu_node", json!(p.0)),
                    ("mem_node", json!(p.1)),
                ],
                "stream_mbps",
                "MB/s",
                sim,
                2.0 * p.3 / 1e6,
                remote.len() == 1,
            ));
        }
    }
}

/// Measure everything above on this host. `big`: the buffer size past the
/// caches; `page`: huge pages where the host has them.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    topo: &Topology,
    allowed: &[usize],
    max_threads: usize,
    big: usize,
    read_big: usize,
    page: PageKind,
    effort: Effort,
    single_node_latency: Option<(f64, f64)>,
    notes: &mut Vec<String>,
) -> std::io::Result<MemSysMeas> {
    let mut ms = MemSysMeas {
        when: utc_now(),
        read_bytes: Some(read_big as u64),
        ..Default::default()
    };
    let multi = topo.nodes.len() > 1;
    let cpus_of = |i: usize| -> Vec<usize> {
        topo.nodes[i]
            .cpus
            .iter()
            .copied()
            .filter(|c| allowed.contains(c))
            .collect()
    };
    let cpu_nodes: Vec<usize> = (0..topo.nodes.len())
        .filter(|&i| !cpus_of(i).is_empty())
        .collect();
    let mem_nodes: Vec<usize> = (0..topo.nodes.len())
        .filter(|&i| topo.nodes[i].mem_free_kb * 1024 > big as u64 * 2)
        .collect();
    // Latency matrix: one chase buffer per memory node, chased from a CPU
    // of every node (one node: the curve's largest chase is the entry).
    match (multi, single_node_latency) {
        (false, Some((l, sp))) => ms.latency.push((0, 0, l, sp)),
        _ => {
            let from: Vec<(usize, usize)> = cpu_nodes.iter().map(|&i| (i, cpus_of(i)[0])).collect();
            for &j in &mem_nodes {
                let id = multi.then_some(topo.nodes[j].id);
                for (i, l, sp) in latency_column(id, &from, big, page, effort)? {
                    ms.latency.push((i, j, l, sp));
                }
                if sys::stop_requested() {
                    return Ok(ms);
                }
            }
        }
    }
    // Bandwidth: every CPU of each node reading its own memory, and the
    // first node's CPUs reading every other node's.
    for &i in &cpu_nodes {
        let cpus = cpus_of(i);
        let t = cpus.len().min(max_threads);
        let targets: Vec<usize> = if Some(&i) == cpu_nodes.first() {
            mem_nodes.clone()
        } else {
            mem_nodes.iter().copied().filter(|&j| j == i).collect()
        };
        for j in targets {
            let id = multi.then_some(topo.nodes[j].id);
            let v = parallel_read(read_big, page, t, &cpus, id, effort)?;
            ms.node_read
                .push((i, j, bench::median(&v), bench::spread(&v)));
        }
    }
    // One core reading its own node's memory.
    if let Some(&i) = cpu_nodes.first() {
        let cpus = cpus_of(i);
        let id = multi.then_some(topo.nodes[i].id);
        let v = core_read(cpus[0], read_big, page, id, effort)?;
        ms.core_read = Some((bench::median(&v), bench::spread(&v)));
    }
    // Core to core, one pair per domain.
    let (pairs, smt, sockets) = cpu_pairs(topo, allowed, Path::new("/sys/devices/system/cpu"));
    ms.smt = Some(smt);
    ms.sockets = Some(sockets);
    for (d, a, b) in pairs {
        let (ns, sp) = ping_pong(a, b, effort);
        if ns > 0.0 {
            ms.c2c.push((d.name().to_string(), a, b, ns, sp));
        }
    }
    if allowed.len() < 2 {
        notes.push("memsys: one CPU allowed: no core-to-core figure".into());
    }
    Ok(ms)
}

/// Records of the measurements (`experiment = "probe"`), in the metric
/// names of the workloads they check.
pub fn records(ms: &MemSysMeas, topo: &Topology) -> Vec<Record> {
    let id = |i: usize| topo.nodes.get(i).map_or(i, |n| n.id);
    let mut v = Vec::new();
    let rec = |case: Vec<(&str, serde_json::Value)>, metric: &str, unit: &str, x: f64, sp: f64| {
        let mut r = Record::new(
            crate::EXPERIMENT,
            case.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            metric,
            unit,
            x,
        );
        r.spread = Some(sp);
        r
    };
    for &(i, j, l, sp) in &ms.latency {
        v.push(rec(
            vec![("from_node", json!(id(i))), ("to_node", json!(id(j)))],
            "idle_latency_ns",
            "ns",
            l,
            sp,
        ));
    }
    for &(i, j, b, sp) in &ms.node_read {
        v.push(rec(
            vec![("from_node", json!(id(i))), ("to_node", json!(id(j)))],
            "bandwidth_mbps",
            "MB/s",
            b / 1e6,
            sp,
        ));
    }
    if let Some(b) = ms.read_bytes {
        v.push(rec(vec![], "node_read_bytes", "B", b as f64, 0.0));
    }
    if let Some((b, sp)) = ms.core_read {
        v.push(rec(
            vec![("threads", json!(1)), ("op", json!("read"))],
            "core_read_mbps",
            "MB/s",
            b / 1e6,
            sp,
        ));
    }
    for (d, a, b, ns, sp) in &ms.c2c {
        v.push(rec(c2c_case(d, *a, *b), "c2c_latency_ns", "ns", *ns, *sp));
    }
    v.push(rec(
        vec![
            ("smt", json!(ms.smt.unwrap_or(1))),
            ("sockets", json!(ms.sockets.unwrap_or(1))),
            ("when", json!(ms.when)),
        ],
        "memsys_host",
        "",
        0.0,
        0.0,
    ));
    v
}

/// The case of a core-to-core row: its domain and the two CPUs measured.
fn c2c_case(domain: &str, a: usize, b: usize) -> Vec<(&str, serde_json::Value)> {
    vec![
        ("domain", json!(domain)),
        ("cpu_a", json!(a)),
        ("cpu_b", json!(b)),
    ]
}

/// Read the records above back (`--from`); node ids map to positions.
pub fn from_record(ms: &mut MemSysMeas, topo: &Topology, v: &serde_json::Value) {
    let pos = |k: &str| {
        v["case"][k]
            .as_u64()
            .and_then(|id| topo.nodes.iter().position(|n| n.id == id as usize))
    };
    let x = v["value"].as_f64().unwrap_or(0.0);
    let sp = v["spread"].as_f64().unwrap_or(0.0);
    let case = &v["case"];
    match v["metric"].as_str().unwrap_or("") {
        "idle_latency_ns" => {
            if let (Some(i), Some(j)) = (pos("from_node"), pos("to_node")) {
                ms.latency.push((i, j, x, sp));
            }
        }
        "bandwidth_mbps" => {
            if let (Some(i), Some(j)) = (pos("from_node"), pos("to_node")) {
                ms.node_read.push((i, j, x * 1e6, sp));
            }
        }
        "core_read_mbps" => ms.core_read = Some((x * 1e6, sp)),
        "node_read_bytes" => ms.read_bytes = Some(x as u64),
        "c2c_latency_ns" => ms.c2c.push((
            case["domain"].as_str().unwrap_or("llc").to_string(),
            case["cpu_a"].as_u64().unwrap_or(0) as usize,
            case["cpu_b"].as_u64().unwrap_or(0) as usize,
            x,
            sp,
        )),
        "memsys_host" => {
            ms.smt = case["smt"].as_u64().map(|s| s as u32);
            ms.sockets = case["sockets"].as_u64().map(|s| s as u32);
            ms.when = case["when"].as_str().unwrap_or("").to_string();
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy's lines in flight are recovered from a one-thread copy
    /// simulated with them: taken as the core's copy rate directly (no
    /// non-temporal threshold), and through `rfo_cost` where memcpy's
    /// figure is the non-temporal one.
    #[test]
    fn the_copys_lines_in_flight_come_back_from_its_rate() {
        let mut m = numasim::machine::presets::preset("epyc-9004-nps4").unwrap();
        // Fewer lines than the read's: the core binds one thread's copy
        // (with more, the preset's CCD link and controllers bind first and
        // no number of lines is told apart).
        let known = 0.6 * m.memsys.mlp_lines;
        let mut sim = m.clone();
        sim.memsys.copy_mlp_lines = known;
        let rate = one_copy_sim(&sim, 0).unwrap();
        let base = one_copy_sim(&m, 0).unwrap();
        assert!(rate < 0.95 * base, "{rate} vs {base}");
        m.hierarchy.nt_store_threshold = 0;
        m.hierarchy.stream_mbps = rate;
        let (x, target) = copy_mlp_for(&m, 0).unwrap();
        assert!((x / known - 1.0).abs() < 0.005, "{x} vs {known}");
        assert!((target / rate - 1.0).abs() < 1e-12);
        // rfo_cost also moves the simulated copy (memory supplies less of
        // each ownership read): the rate is taken with it.
        for h in [&mut m.hierarchy, &mut sim.hierarchy] {
            h.nt_store_threshold = 288 << 20;
            h.rfo_cost = 1.25;
        }
        m.hierarchy.stream_mbps = 1.25 * one_copy_sim(&sim, 0).unwrap();
        let (x, _) = copy_mlp_for(&m, 0).unwrap();
        assert!((x / known - 1.0).abs() < 0.005, "{x} vs {known}");
    }

    #[test]
    fn a_node_copy_binds_controllers_the_read_could_only_bound() {
        // live19-3's shape on the fixture run: a node read past what the
        // model's cores reach (the read gives a lower bound only), and
        // two threads copying at about one core's copy.
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs/vm-2cpu-quick-18.jsonl");
        let text = std::fs::read_to_string(p).unwrap();
        let mut m = crate::calibrate::measurements_from_records(&text).unwrap();
        let home = meas_home(&m);
        let read = m.memsys.node_read.iter_mut().find(|x| x.0 == x.1).unwrap();
        read.2 *= 3.0;
        let read_gbps = read.2 / 1e9;
        m.node_copy_spread = Some(0.05);
        // Far above the copy (each thread its own core's rate): the
        // controllers just out of the read's way do not bind it.
        m.node_copy_bps = Some(1e15);
        let f = crate::calibrate::fit(&m).unwrap();
        assert_eq!(f.node_gbps_from, NodeGbpsFrom::Bound);
        let loose = f.machine.memsys.node_gbps;
        assert!(loose > read_gbps, "{loose} vs {read_gbps}");
        assert_eq!(f.machine.memsys.write_cost, 1.0);
        let (_, free) = node_copy_sim(&m, &f.machine, home).unwrap();
        // At one thread's share of that: the controllers bind, at the
        // rate the reads reached, and a written line's cost gives the copy.
        m.node_copy_bps = Some(free * 1e6 / 2.0 * 0.6);
        let f = crate::calibrate::fit(&m).unwrap();
        let u = &f.machine;
        assert!((u.memsys.node_gbps / read_gbps - 1.0).abs() < 1e-9);
        assert!(u.memsys.write_cost > 1.0, "{}", u.memsys.write_cost);
        let (_, sim) = node_copy_sim(&m, u, home).unwrap();
        let meas = 2.0 * m.node_copy_bps.unwrap() / 1e6;
        assert!((sim / meas - 1.0).abs() < 0.01, "{sim} vs {meas}");
    }

    /// A written line's controller cost comes back from a node copy
    /// simulated with it: the EPYC guest's quiet run of session 18 fitted,
    /// then its node copy replaced by the copy of that machine with a
    /// known `write_cost` (its one-thread copy lines solved beside it, as
    /// the fit does); the refit gives the cost, the read's controllers
    /// unchanged.
    #[test]
    fn a_written_lines_cost_comes_back_from_the_node_copy() {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs/vm-2cpu-quick-18.jsonl");
        let text = std::fs::read_to_string(p).unwrap();
        let m = crate::calibrate::measurements_from_records(&text).unwrap();
        let f = crate::calibrate::fit(&m).unwrap();
        let home = meas_home(&m);
        for known in [1.3, 1.8] {
            let mut u = f.machine.clone();
            u.memsys.write_cost = known;
            u.memsys.copy_mlp_lines = 0.0;
            u.memsys.copy_mlp_lines = copy_mlp_for(&u, home).unwrap().0;
            let (_, sim) = node_copy_sim(&m, &u, home).unwrap();
            let mut m2 = m.clone();
            m2.node_copy_bps = Some(sim * 1e6 / 2.0);
            let f2 = crate::calibrate::fit(&m2).unwrap();
            let got = f2.machine.memsys.write_cost;
            assert!((got / known - 1.0).abs() < 0.01, "{got} vs {known}");
            assert_eq!(f2.machine.memsys.node_gbps, f.machine.memsys.node_gbps);
        }
    }

    #[test]
    fn read_sum_sums_every_word() {
        let v: Vec<u64> = (1..=64).collect();
        assert_eq!(read_sum(&v), 64 * 65 / 2);
    }

    #[test]
    fn utc_date_is_well_formed() {
        let s = utc_now();
        assert_eq!(s.len(), "2026-01-01 00:00 UTC".len(), "{s}");
        assert!(s.starts_with("20"), "{s}");
    }

    #[test]
    fn ping_pong_moves_the_line() {
        let cpus = sys::allowed_cpus();
        let b = *cpus.get(1).unwrap_or(&cpus[0]);
        let e = Effort {
            rep_time: std::time::Duration::from_millis(20),
            reps: 2,
        };
        let (ns, _) = ping_pong(cpus[0], b, e);
        // A move costs something and far less than a scheduler tick when
        // the two threads run at once; on one CPU they time-share.
        assert!(ns > 0.0 && ns.is_finite(), "{ns}");
    }
}
