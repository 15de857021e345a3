//! Memory traffic of many threads at once: where their misses go, what
//! each controller and inter-socket link carries, how long a miss waits
//! there, and so how fast each thread runs. The model behind the
//! `mlc-*` and `stream` workloads (docs/machine.md, "Memory system").
//!
//! Three mechanisms, each with its source:
//! - A thread keeps at most `mlp_lines` misses in flight, so by Little's
//!   law (Little 1961) it fetches at most `mlp_lines / latency` lines per
//!   ns: one core cannot stream at a node's bandwidth.
//! - Each controller and link is a queue; at utilisation ρ a request
//!   waits `queue_ns × ρ / (2(1 − ρ))`, the M/D/1 mean wait
//!   (Pollaczek–Khinchine with deterministic service; Kleinrock 1975,
//!   vol. 1 §5.7). Latency therefore rises with load (MLC's loaded-latency
//!   curve) and no resource carries more than it can.
//! - A miss to another socket's memory crosses the link between the two
//!   sockets and both sockets' ports; interleaved pages spread the misses
//!   over every node's controllers and the links to them.
//!
//! State is aggregate: one flow per group of identical threads (threads of
//! one node with one placement), loads per controller, per socket port
//! and per socket pair. A solve costs O(iterations × Σ homes of flows).

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

fn wait(queue_ns: f64, rho: f64) -> f64 {
    let r = rho.clamp(0.0, RHO_CAP);
    queue_ns * r / (2.0 * (1.0 - r))
}

/// The sockets' resources a flow's misses to `home` load, as indices into
/// the load vectors: (home's port out, node's port in, pair link slot).
struct Topo {
    sockets: usize,
    pair_links: bool,
}

impl Topo {
    fn pair(&self, from: usize, to: usize) -> usize {
        from * self.sockets + to
    }
}

/// Solve the steady state of `flows` on machine `m`: damped fixed-point
/// iteration on each flow's rate (each rate is a decreasing function of
/// the loads, so the fixed point is unique).
pub fn solve(m: &Machine, flows: &[Flow]) -> Solution {
    let s = &m.memsys;
    let n = m.node_count();
    let line = m.cpu.cache_line as f64;
    let topo = Topo {
        sockets: m.sockets(),
        pair_links: s.links_per_pair > 0 && m.sockets() > 1,
    };
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
    let mut x: Vec<f64> = flows
        .iter()
        .zip(&idle)
        .map(|(f, l)| {
            let lat: f64 = f.homes.iter().zip(l).map(|(&(_, p), &l)| p * l).sum();
            rate(f, lat)
        })
        .collect();
    let mut step = vec![0.5f64; flows.len()];
    let mut last_dir = vec![0i8; flows.len()];
    let ctrl_cap = s.node_gbps;
    let port_cap = s.port_gbps;
    let pair_cap = s.link_gbps * s.links_per_pair as f64;
    let mut ctrl = vec![0.0f64; n];
    let mut port_out = vec![0.0f64; topo.sockets];
    let mut port_in = vec![0.0f64; topo.sockets];
    let mut pair = if topo.pair_links {
        vec![0.0f64; topo.sockets * topo.sockets]
    } else {
        Vec::new()
    };
    let mut lat = vec![0.0f64; flows.len()];
    let mut max_llc = 0.0f64;
    for _ in 0..ITERATIONS {
        ctrl.iter_mut().for_each(|v| *v = 0.0);
        port_out.iter_mut().for_each(|v| *v = 0.0);
        port_in.iter_mut().for_each(|v| *v = 0.0);
        pair.iter_mut().for_each(|v| *v = 0.0);
        // Loads in bytes per ns (GB/s): fetched lines from the home to
        // the thread, written-back lines the other way.
        for (f, &xf) in flows.iter().zip(&x) {
            let fs = m.socket_of(f.node);
            for &(h, p) in &f.homes {
                let fetched = f.threads * xf * p * line;
                let back = fetched * f.writebacks;
                ctrl[h] += fetched + back;
                let hs = m.socket_of(h);
                if hs != fs {
                    port_out[hs] += fetched;
                    port_in[fs] += fetched;
                    port_out[fs] += back;
                    port_in[hs] += back;
                    if topo.pair_links {
                        pair[topo.pair(hs, fs)] += fetched;
                        pair[topo.pair(fs, hs)] += back;
                    }
                }
            }
        }
        let mut moved = 0.0f64;
        max_llc = 0.0;
        for (i, f) in flows.iter().enumerate() {
            let fs = m.socket_of(f.node);
            // The flow's own LLC domains' links (GMI on AMD), shared by
            // all its misses wherever they go.
            let llc_load = f.threads * x[i] * line * (1.0 + f.writebacks);
            let llc_rho = llc_load / (s.llc_gbps * f.llc_domains.max(1.0));
            max_llc = max_llc.max(llc_rho);
            let w_llc = wait(s.queue_ns, llc_rho);
            let mut l = 0.0;
            for (k, &(h, p)) in f.homes.iter().enumerate() {
                let mut w = w_llc + wait(s.queue_ns, ctrl[h] / ctrl_cap);
                let hs = m.socket_of(h);
                if hs != fs {
                    w += wait(s.queue_ns, port_out[hs] / port_cap)
                        .max(wait(s.queue_ns, port_in[fs] / port_cap));
                    if topo.pair_links {
                        w += wait(s.queue_ns, pair[topo.pair(hs, fs)] / pair_cap);
                    }
                }
                l += p * (idle[i][k] + w);
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
        if moved < 1e-9 {
            break;
        }
    }
    let mut max_util = max_llc;
    let node_util: Vec<f64> = ctrl.iter().map(|c| c / ctrl_cap).collect();
    for u in &node_util {
        max_util = max_util.max(*u);
    }
    for p in port_out.iter().chain(&port_in) {
        max_util = max_util.max(p / port_cap);
    }
    for p in &pair {
        max_util = max_util.max(p / pair_cap);
    }
    Solution {
        lines_per_ns: x,
        latency_ns: lat,
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
    /// mean of the hops, and every thread of a full machine streaming
    /// interleaved pushes half its traffic through the links.
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
        assert!(bi < bl, "whole machine: interleave {bi} vs local {bl}");
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
