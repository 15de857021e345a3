//! Memory traffic of many threads at once: where their misses go, what
//! each controller and inter-socket link carries, how long a miss waits
//! there, and so how fast each thread runs. The model behind the
//! `mlc-*` and `stream` workloads (docs/machine.md, "Memory system").
//!
//! The mechanisms, each with its source:
//! - A thread keeps at most `mlp_lines` misses in flight, so by Little's
//!   law (Little 1961) it fetches at most `mlp_lines / latency` lines per
//!   ns: one core cannot stream at a node's bandwidth.
//! - Each controller and link is a queue; at utilisation ρ a request
//!   waits `queue_ns × ρ / (2(1 − ρ))`, the M/D/1 mean wait
//!   (Pollaczek–Khinchine with deterministic service; Kleinrock 1975,
//!   vol. 1 §5.7), so latency rises with load (MLC's loaded-latency curve).
//! - The system is closed, not open: the requesters' misses in flight are
//!   the whole population, and a queue holds at most `queue_lines` of them
//!   (a controller's read queues; the rest wait in the requesters' own
//!   fill buffers). By Little's law on a full queue a request waits there
//!   at most `queue_lines × line / capacity`, so the loaded latency is
//!   bounded where the open M/D/1 wait grows without bound; a queue admits
//!   requests round-robin per requester (max-min fair shares, progressive
//!   filling: Bertsekas & Gallager, Data Networks, 2nd ed. §6.5.2), so it
//!   never carries more than its capacity, and a thread that asks for less
//!   than its share (MLC's latency thread) is not held back. A thread held
//!   back keeps its misses in flight longer: its latency is its misses in
//!   flight over its admitted rate (Little's law for a closed network, the
//!   fixed point mean-value analysis solves; Reiser & Lavenberg 1980).
//! - A node's threads are placed from its first CPU, so its flows share
//!   its first last-level-cache domain and that domain's link into the
//!   fabric (AMD's GMI, `llc_gbps`): MLC's latency thread waits there
//!   behind the loaders of its CCD.
//! - A miss to another socket's memory crosses the link between the two
//!   sockets and both sockets' ports; interleaved pages spread the misses
//!   over every node's controllers and the links to them.
//!
//! State is aggregate: one flow per group of identical threads (threads of
//! one node with one placement), loads per controller, per socket port
//! and per socket pair. A solve costs O(iterations × Σ homes of flows ×
//! log flows) (the fair shares sort each queue's users).

use crate::machine::Machine;

/// A group of identical threads.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// The node the threads run on.
    pub node: usize,
    /// How many threads.
    pub threads: f64,
    /// Where their misses go: (home node, share), shares summing to 1.
    pub homes: Vec<(usize, f64)>,
    /// Lines each thread keeps in flight (1: a dependent chase).
    pub mlp: f64,
    /// Lines written back per line fetched (STREAM's stores; 0 for reads).
    pub writebacks: f64,
    /// Share of the lines a thread holds in flight that memory supplies:
    /// 1, except for stores whose ownership read memory mostly does not
    /// carry (`[hierarchy] rfo_cost` under 1.5, fitted by the probe from
    /// its own copies): the store's line still holds a miss slot until it
    /// is owned, but its read is not traffic.
    pub from_memory: f64,
    /// Time a thread waits between requests, ns (MLC's injected delay).
    pub delay_ns: f64,
    /// Last-level-cache domains the threads occupy: their traffic shares
    /// those domains' links into the fabric (`[memsys] llc_gbps`).
    pub llc_domains: f64,
}

/// The solved steady state.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// Per flow: lines fetched per ns by one thread.
    pub lines_per_ns: Vec<f64>,
    /// Per flow: mean load-to-use latency of its misses, ns.
    pub latency_ns: Vec<f64>,
    /// Highest utilisation of any controller or link.
    pub max_util: f64,
    /// Utilisation of each node's controllers.
    pub node_util: Vec<f64>,
}

impl Solution {
    /// Bytes per second fetched by all threads of flow `i` (GB/s = bytes/ns).
    pub fn flow_gbps(&self, flows: &[Flow], line: f64, i: usize) -> f64 {
        self.lines_per_ns[i] * flows[i].threads * line
    }
    /// Fetched bytes per ns of all flows.
    pub fn total_gbps(&self, flows: &[Flow], line: f64) -> f64 {
        (0..flows.len())
            .map(|i| self.flow_gbps(flows, line, i))
            .sum()
    }
}

/// The highest utilisation a queue is evaluated at: the wait grows
/// without bound towards 1, and the damped iteration needs a finite value.
const RHO_CAP: f64 = 0.999;
const ITERATIONS: usize = 400;

/// Mean wait at a queue of capacity `cap` (bytes/ns) at utilisation ρ: the
/// M/D/1 wait, but never more than draining `max_lines` at capacity (the
/// queue is full: Little's law).
fn wait(queue_ns: f64, rho: f64, max_lines: f64, line: f64, cap: f64) -> f64 {
    let r = rho.clamp(0.0, RHO_CAP);
    (queue_ns * r / (2.0 * (1.0 - r))).min(max_lines * line / cap)
}

/// Max-min fair shares at one queue (progressive filling): users with
/// per-thread demand `d` (bytes/ns) and `n` threads; returns the level
/// each thread's flow through the queue is held to (infinite when the
/// demand fits). O(k log k) in the queue's users.
fn fair_level(users: &mut [(f64, f64)], cap: f64) -> f64 {
    let total: f64 = users.iter().map(|&(d, n)| d * n).sum();
    if total <= cap {
        return f64::INFINITY;
    }
    users.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut left = cap;
    let mut threads: f64 = users.iter().map(|u| u.1).sum();
    for &(d, n) in users.iter() {
        // Everyone left could get `left / threads`; a user asking less
        // takes what it asks and leaves the rest to the others.
        let level = left / threads.max(1e-12);
        if d >= level {
            return level;
        }
        left -= d * n;
        threads -= n;
    }
    f64::INFINITY
}

/// Solve the steady state of `flows` on machine `m`: damped fixed-point
/// iteration on each flow's demanded rate (a decreasing function of the
/// loads, so the fixed point is unique), each queue admitting its fair
/// shares of the demand (module comment).
pub fn solve(m: &Machine, flows: &[Flow]) -> Solution {
    let s = &m.memsys;
    let n = m.node_count();
    let line = m.cpu.cache_line as f64;
    let sockets = m.sockets();
    let pair_links = s.links_per_pair > 0 && sockets > 1;
    // The shared queues, indexed: each node's controllers, each socket's
    // port out and in, each ordered socket pair's links.
    let port_out = |k: usize| n + k;
    let port_in = |k: usize| n + sockets + k;
    let pair = |a: usize, b: usize| n + 2 * sockets + a * sockets + b;
    let resources = n + 2 * sockets + if pair_links { sockets * sockets } else { 0 };
    let mut cap = vec![s.node_gbps; n];
    cap.extend(std::iter::repeat_n(s.port_gbps, 2 * sockets));
    if pair_links {
        cap.extend(std::iter::repeat_n(
            s.link_gbps * s.links_per_pair as f64,
            sockets * sockets,
        ));
    }
    // Bytes each queue carries per line a thread of the flow fetches:
    // fetched lines from the home to the thread, written-back lines the
    // other way (aggregated per queue; queues of infinite capacity left out).
    let uses: Vec<Vec<(usize, f64)>> = flows
        .iter()
        .map(|f| {
            let mut u: std::collections::BTreeMap<usize, f64> = Default::default();
            let fs = m.socket_of(f.node);
            for &(h, p) in &f.homes {
                let fetched = p * line * f.from_memory;
                let back = p * line * f.writebacks;
                // The controllers pay a written line `write_cost` read
                // lines (bus turnaround); links carry it as a line.
                *u.entry(h).or_default() += fetched + back * m.memsys.write_cost;
                let hs = m.socket_of(h);
                if hs != fs {
                    *u.entry(port_out(hs)).or_default() += fetched;
                    *u.entry(port_in(fs)).or_default() += fetched;
                    *u.entry(port_out(fs)).or_default() += back;
                    *u.entry(port_in(hs)).or_default() += back;
                    if pair_links {
                        *u.entry(pair(hs, fs)).or_default() += fetched;
                        *u.entry(pair(fs, hs)).or_default() += back;
                    }
                }
            }
            u.into_iter()
                .filter(|&(r, c)| c > 0.0 && cap[r].is_finite())
                .collect()
        })
        .collect();
    let mut users: Vec<Vec<(usize, f64)>> = vec![Vec::new(); resources];
    for (i, u) in uses.iter().enumerate() {
        for &(r, c) in u {
            users[r].push((i, c));
        }
    }
    // Idle latency of each (flow, home): no queueing.
    let idle: Vec<Vec<f64>> = flows
        .iter()
        .map(|f| {
            f.homes
                .iter()
                .map(|&(h, _)| m.idle_latency_ns(f.node, h))
                .collect()
        })
        .collect();
    let rate = |f: &Flow, lat: f64| f.mlp / (lat + f.mlp * f.delay_ns);
    // Demanded lines per ns of one thread of each flow, and admitted.
    let mut x: Vec<f64> = flows
        .iter()
        .zip(&idle)
        .map(|(f, l)| {
            let lat: f64 = f.homes.iter().zip(l).map(|(&(_, p), &l)| p * l).sum();
            rate(f, lat)
        })
        .collect();
    let mut admit = vec![1.0f64; flows.len()];
    let mut step = vec![0.5f64; flows.len()];
    let mut last_dir = vec![0i8; flows.len()];
    let mut load = vec![0.0f64; resources];
    let mut lat = vec![0.0f64; flows.len()];
    let mut llc_rho = vec![0.0f64; flows.len()];
    let mut llc_first = vec![0.0f64; n];
    let mut level = vec![f64::INFINITY; resources];
    let llc_bytes = |f: &Flow| line * (f.from_memory + f.writebacks);
    let llc_cap = |f: &Flow| s.llc_gbps * f.llc_domains.max(1.0);
    let w = |rho: f64, c: f64| wait(s.queue_ns, rho, s.queue_lines, line, c);
    for _ in 0..ITERATIONS {
        // Admitted loads, bytes per ns (GB/s).
        load.iter_mut().for_each(|v| *v = 0.0);
        for (i, f) in flows.iter().enumerate() {
            let y = f.threads * x[i] * admit[i];
            for &(r, c) in &uses[i] {
                load[r] += y * c;
            }
        }
        // Each node's first LLC domain carries its share of every flow of
        // the node: threads are placed from the node's first CPU, so all
        // of a node's flows share that domain's link (MLC's latency thread
        // shares its CCD's GMI link with the loaders beside it).
        llc_first.iter_mut().for_each(|v| *v = 0.0);
        for (i, f) in flows.iter().enumerate() {
            llc_first[f.node] +=
                f.threads * x[i] * admit[i] * llc_bytes(f) / f.llc_domains.max(1.0);
        }
        let mut moved = 0.0f64;
        for (i, f) in flows.iter().enumerate() {
            let fs = m.socket_of(f.node);
            // The flow's own LLC domains' links (GMI on AMD), shared by
            // all its misses wherever they go.
            let lc = llc_cap(f);
            llc_rho[i] = llc_first[f.node] / s.llc_gbps;
            let w_llc = w(llc_rho[i], lc);
            let mut l = 0.0;
            for (k, &(h, p)) in f.homes.iter().enumerate() {
                let mut wh = w_llc + w(load[h] / cap[h], cap[h]);
                let hs = m.socket_of(h);
                if hs != fs {
                    let (po, pi) = (port_out(hs), port_in(fs));
                    wh += w(load[po] / cap[po], cap[po]).max(w(load[pi] / cap[pi], cap[pi]));
                    if pair_links {
                        let pr = pair(hs, fs);
                        wh += w(load[pr] / cap[pr], cap[pr]);
                    }
                }
                l += p * (idle[i][k] + wh);
            }
            lat[i] = l;
            let target = rate(f, l);
            // Damped step; halve it whenever the direction flips, so the
            // iteration settles on the fixed point instead of oscillating.
            let dir = if target > x[i] { 1 } else { -1 };
            if dir != last_dir[i] && last_dir[i] != 0 {
                step[i] = (step[i] * 0.5).max(1e-4);
            }
            last_dir[i] = dir;
            let next = x[i] + step[i] * (target - x[i]);
            moved = moved.max(((next - x[i]) / x[i].max(1e-12)).abs());
            x[i] = next;
        }
        // Each queue's fair level for the demands; a flow is admitted the
        // smallest fraction any of its queues (or its own LLC link) allows.
        let mut shares: Vec<(f64, f64)> = Vec::new();
        for r in 0..resources {
            let demand: f64 = users[r]
                .iter()
                .map(|&(i, c)| flows[i].threads * x[i] * c)
                .sum();
            level[r] = if demand <= cap[r] {
                f64::INFINITY
            } else {
                shares.clear();
                shares.extend(users[r].iter().map(|&(i, c)| (x[i] * c, flows[i].threads)));
                fair_level(&mut shares, cap[r])
            };
        }
        for (i, f) in flows.iter().enumerate() {
            let own = f.threads * x[i] * llc_bytes(f);
            let mut a = (llc_cap(f) / own.max(1e-300)).min(1.0);
            for &(r, c) in &uses[i] {
                if level[r].is_finite() {
                    a = a.min(level[r] / (x[i] * c).max(1e-300));
                }
            }
            moved = moved.max((a - admit[i]).abs());
            admit[i] = a;
        }
        if moved < 1e-9 {
            break;
        }
    }
    // Final admitted loads, so no queue is reported above its capacity.
    load.iter_mut().for_each(|v| *v = 0.0);
    for (i, f) in flows.iter().enumerate() {
        let y = f.threads * x[i] * admit[i];
        for &(r, c) in &uses[i] {
            load[r] += y * c;
        }
    }
    let lines_per_ns: Vec<f64> = x.iter().zip(&admit).map(|(x, a)| x * a).collect();
    // A flow held back keeps its misses in flight longer: Little's law.
    let latency_ns: Vec<f64> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if admit[i] < 1.0 && lines_per_ns[i] > 0.0 {
                (f.mlp / lines_per_ns[i] - f.mlp * f.delay_ns).max(lat[i])
            } else {
                lat[i]
            }
        })
        .collect();
    let node_util: Vec<f64> = (0..n).map(|h| load[h] / cap[h]).collect();
    let mut max_util = llc_rho.iter().copied().fold(0.0f64, f64::max);
    for r in 0..resources {
        if cap[r].is_finite() {
            max_util = max_util.max(load[r] / cap[r]);
        }
    }
    Solution {
        lines_per_ns,
        latency_ns,
        max_util,
        node_util,
    }
}

/// The homes of a thread on `node` under a policy: its own node (first
/// touch), or every node of `set` in equal shares (interleave).
pub fn homes(node: usize, interleave: Option<&[usize]>) -> Vec<(usize, f64)> {
    match interleave {
        None => vec![(node, 1.0)],
        Some(set) => {
            let p = 1.0 / set.len().max(1) as f64;
            set.iter().map(|&h| (h, p)).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn genoa_like() -> Machine {
        Machine::from_toml_str(
            r#"
name = "t"
nodes = 4
cpus_per_node = 32
mem_per_node = "64 GiB"
[distance]
matrix = [[10,12,32,32],[12,10,32,32],[32,32,10,12],[32,32,12,10]]
[dram]
latency_ns = 100.0
bandwidth_gbps = 100.0
[cpu]
model = "t"
clock_mhz = 3000.0
cache = [{ level = 3, size = "32 MiB", latency_cycles = 50.0, shared_by = 8 }]
[memsys]
nodes_per_socket = 2
dram_ns = 80.0
node_hop_ns = 10.0
socket_hop_ns = 70.0
node_gbps = 80.0
link_gbps = 40.0
links_per_pair = 2
mlp_lines = 24.0
queue_ns = 40.0
smt = 2
llc_cpus = 8
"#,
            "t.toml",
        )
        .unwrap()
    }

    fn node_flow(m: &Machine, node: usize, threads: f64, set: Option<&[usize]>, mlp: f64) -> Flow {
        let _ = m;
        Flow {
            node,
            threads,
            homes: homes(node, set),
            mlp,
            writebacks: 0.0,
            from_memory: 1.0,
            delay_ns: 0.0,
            llc_domains: 4.0,
        }
    }

    /// Little's law: one thread fetches mlp lines per latency, far below
    /// what the node's controllers carry; twice the misses in flight,
    /// nearly twice the bandwidth.
    #[test]
    fn one_core_is_limited_by_its_misses_in_flight() {
        let m = genoa_like();
        let f = [node_flow(&m, 0, 1.0, None, 24.0)];
        let s = solve(&m, &f);
        let idle = m.idle_latency_ns(0, 0);
        let want = 24.0 * 64.0 / idle;
        let got = s.total_gbps(&f, 64.0);
        // At most the idle bound; a little less, as its own traffic queues.
        assert!(got <= want && got > 0.9 * want, "{got} vs {want}");
        assert!(got < m.memsys.node_gbps / 2.0);
        let f2 = [node_flow(&m, 0, 1.0, None, 12.0)];
        let half = solve(&m, &f2).total_gbps(&f2, 64.0);
        assert!(got > 1.8 * half, "{got} vs {half}");
    }

    /// A thread shares its LLC domain's link into the fabric with the
    /// other flows of its node (MLC's latency thread on the loaders' CCD):
    /// with loaders beside it reading another node, it still waits at that
    /// link, though nothing else of its path is loaded.
    #[test]
    fn a_thread_waits_at_the_llc_link_its_node_s_loaders_share() {
        let mut m = genoa_like();
        m.memsys.llc_gbps = 20.0;
        let one = |node: usize, threads: f64, home: usize, mlp: f64| Flow {
            node,
            threads,
            homes: vec![(home, 1.0)],
            mlp,
            writebacks: 0.0,
            from_memory: 1.0,
            delay_ns: 0.0,
            llc_domains: 1.0,
        };
        let idle = m.idle_latency_ns(0, 0);
        let beside = [one(0, 7.0, 1, 24.0), one(0, 1.0, 0, 1.0)];
        let elsewhere = [one(1, 7.0, 1, 24.0), one(0, 1.0, 0, 1.0)];
        let (b, e) = (solve(&m, &beside), solve(&m, &elsewhere));
        assert!(
            b.latency_ns[1] > 1.5 * idle,
            "{} vs idle {idle}",
            b.latency_ns[1]
        );
        assert!(
            e.latency_ns[1] < 1.05 * idle,
            "{} vs idle {idle}",
            e.latency_ns[1]
        );
    }

    /// Many threads saturate the controllers: the bandwidth approaches but
    /// never passes the node's capacity, and latency rises (loaded latency).
    #[test]
    fn loaded_threads_queue_at_the_controller() {
        let m = genoa_like();
        let f = [node_flow(&m, 0, 32.0, None, 24.0)];
        let s = solve(&m, &f);
        let got = s.total_gbps(&f, 64.0);
        assert!(got <= m.memsys.node_gbps * 1.001, "{got}");
        assert!(got > m.memsys.node_gbps * 0.8, "{got}");
        assert!(s.latency_ns[0] > m.idle_latency_ns(0, 0) * 1.5);
    }

    /// Interleave gains where bandwidth binds: the threads of one node,
    /// saturating its controllers, spread their misses over four nodes'
    /// controllers and get more bandwidth than first touch gives them.
    #[test]
    fn interleave_gains_where_bandwidth_binds() {
        let m = genoa_like();
        let all = [0usize, 1, 2, 3];
        let local = [node_flow(&m, 0, 32.0, None, 24.0)];
        let inter = [node_flow(&m, 0, 32.0, Some(&all), 24.0)];
        let bl = solve(&m, &local).total_gbps(&local, 64.0);
        let bi = solve(&m, &inter).total_gbps(&inter, 64.0);
        assert!(bi > 1.2 * bl, "interleave {bi} vs local {bl}");
    }

    /// Interleave loses where latency binds: one dependent chase pays the
    /// mean of the hops. On a full machine streaming, every controller is
    /// saturated either way, so interleave cannot gain (and loses once the
    /// links, now carrying half the traffic, bind).
    #[test]
    fn interleave_loses_where_latency_binds() {
        let m = genoa_like();
        let all = [0usize, 1, 2, 3];
        let local = [node_flow(&m, 0, 1.0, None, 1.0)];
        let inter = [node_flow(&m, 0, 1.0, Some(&all), 1.0)];
        let ll = solve(&m, &local).latency_ns[0];
        let li = solve(&m, &inter).latency_ns[0];
        assert!(li > 1.2 * ll, "interleave {li} vs local {ll}");
        let flows = |set: Option<&[usize]>| -> Vec<Flow> {
            (0..4).map(|n| node_flow(&m, n, 32.0, set, 24.0)).collect()
        };
        let (fl, fi) = (flows(None), flows(Some(&all)));
        let bl = solve(&m, &fl).total_gbps(&fl, 64.0);
        let bi = solve(&m, &fi).total_gbps(&fi, 64.0);
        assert!(
            bi <= bl * (1.0 + 1e-9),
            "whole machine: interleave {bi} vs local {bl}"
        );
    }

    /// Remote traffic is capped by the links between the sockets.
    #[test]
    fn remote_bandwidth_is_capped_by_the_links() {
        let m = genoa_like();
        let f = [Flow {
            homes: vec![(2, 1.0)],
            ..node_flow(&m, 0, 32.0, None, 24.0)
        }];
        let got = solve(&m, &f).total_gbps(&f, 64.0);
        assert!(got <= 2.0 * 40.0 * 1.001, "{got}");
        assert!(got > 0.8 * 80.0 * 0.8, "{got}");
    }

    /// MLC's loaded latency on a closed system: as the load threads'
    /// injected delay falls the latency thread's latency rises, the total
    /// bandwidth never passes the controllers', and with a finite queue the
    /// latency at saturation stays below the idle latency plus draining the
    /// full queue (Little's law), where the open M/D/1 wait grows without
    /// bound.
    #[test]
    fn loaded_latency_rises_with_load_and_is_bounded_by_the_full_queue() {
        let mut m = genoa_like();
        m.memsys.queue_lines = 64.0;
        let idle = m.idle_latency_ns(0, 0);
        let bound = 64.0 * 64.0 / m.memsys.node_gbps;
        let point = |m: &Machine, delay: f64| {
            let flows = [
                Flow {
                    delay_ns: delay,
                    ..node_flow(m, 0, 31.0, None, 24.0)
                },
                node_flow(m, 0, 1.0, None, 1.0),
            ];
            let s = solve(m, &flows);
            (s.latency_ns[1], s.total_gbps(&flows, 64.0))
        };
        let curve: Vec<(f64, f64)> = [100.0, 30.0, 10.0, 3.0, 1.0, 0.0]
            .iter()
            .map(|&d| point(&m, d))
            .collect();
        for w in curve.windows(2) {
            assert!(
                w[1].0 >= w[0].0 - 1e-6,
                "latency falls with load: {curve:?}"
            );
        }
        for &(lat, bw) in &curve {
            assert!(bw <= m.memsys.node_gbps * 1.001, "{curve:?}");
            assert!(lat <= idle + bound + 1e-6, "{lat} past {idle} + {bound}");
        }
        let (sat, _) = curve[curve.len() - 1];
        assert!(sat > idle + 0.5 * bound, "saturated: {sat} vs {idle}");
        // The open queue (no bound) waits far longer at the same load.
        m.memsys.queue_lines = f64::INFINITY;
        let (open, bw) = point(&m, 0.0);
        assert!(open > 2.0 * sat, "open {open} vs closed {sat}");
        assert!(bw <= m.memsys.node_gbps * 1.001);
    }

    /// A thread held back at a saturated queue keeps its misses in flight
    /// longer: its latency is its misses in flight over its admitted rate
    /// (Little's law), and the threads' shares of the queue are equal.
    #[test]
    fn held_back_threads_obey_littles_law() {
        let mut m = genoa_like();
        m.memsys.queue_lines = 64.0;
        let f = [node_flow(&m, 0, 32.0, None, 24.0)];
        let s = solve(&m, &f);
        let x = s.lines_per_ns[0];
        assert!((s.latency_ns[0] - 24.0 / x).abs() < 1e-6 * s.latency_ns[0]);
        let per_thread = m.memsys.node_gbps / 64.0 / 32.0;
        assert!(
            (x - per_thread).abs() < 0.01 * per_thread,
            "{x} vs {per_thread}"
        );
    }

    /// Without `[memsys]` the latency is today's: DRAM latency × SLIT ratio.
    #[test]
    fn old_machines_keep_the_slit_rule() {
        let m = crate::machine::presets::preset("altix-512").unwrap();
        assert!(!m.memsys.explicit);
        for (a, b) in [(0, 0), (0, 1), (0, 100)] {
            assert_eq!(m.idle_latency_ns(a, b), m.mem_latency_ns(a, b));
            assert_eq!(
                m.c2c_ns(2 * a as u64, 2 * b as u64),
                m.line_transfer_ns(a, b)
            );
        }
    }

    /// The cache domains order a contended line's cost.
    #[test]
    fn line_transfers_follow_the_cache_domains() {
        let mut m = genoa_like();
        m.memsys.c2c_ns = [5.0, 20.0, 80.0, 110.0, 200.0];
        assert_eq!(m.cpu_domain(0, 1), crate::machine::Domain::Core);
        assert_eq!(m.cpu_domain(0, 7), crate::machine::Domain::Llc);
        assert_eq!(m.cpu_domain(0, 8), crate::machine::Domain::Node);
        assert_eq!(m.cpu_domain(0, 32), crate::machine::Domain::Socket);
        assert_eq!(m.cpu_domain(0, 64), crate::machine::Domain::Remote);
        let c: Vec<f64> = [1, 7, 8, 32, 64].iter().map(|&b| m.c2c_ns(0, b)).collect();
        assert!(c.windows(2).all(|w| w[0] < w[1]), "{c:?}");
    }
}
