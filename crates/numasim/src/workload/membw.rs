//! Workloads shaped like the tools people run on today's machines, with
//! their metrics named as those tools name them (issue 29):
//!
//! - `mlc-latency-matrix`: `mlc --latency_matrix`, idle latency per
//!   (CPU node, memory node);
//! - `mlc-bandwidth-matrix`: `mlc --bandwidth_matrix`, read bandwidth of
//!   every core of one node from each node's memory;
//! - `mlc-loaded-latency`: `mlc --loaded_latency`, a latency thread's
//!   chase while load threads inject traffic at decreasing delays;
//! - `stream`: McCalpin's STREAM copy/scale/add/triad by thread count and
//!   placement policy (first touch, `numactl --interleave`, bind);
//! - `c2c-latency`: one contended line bounced between two CPUs, per pair.
//!
//! All cost comes from `kernel/mm/memflow.rs` and the machine's
//! `[memsys]`; state is aggregate (one flow per node), so a 4,096-CPU
//! machine runs each in well under a second. The step readers, the specs
//! and the run functions live here so that the registry (issue 28) can
//! take them as one entry each.

use super::sim::{ResolvedCase, Run, Sim, Workload};
use super::spec::{Default as D, Kind, Metric, Param, Range, Spec};
use crate::error::{Error, InputError};
use crate::input::table::{value_u64, TableReader};
use crate::kernel::mm::memflow::{self, Flow};
use crate::machine::{Domain, Machine};
use crate::report::Record;
use serde_json::json;
use toml::Value;

pub const WORKLOAD_NAMES: &[&str] = &[
    "mlc-latency-matrix",
    "mlc-bandwidth-matrix",
    "mlc-loaded-latency",
    "stream",
    "c2c-latency",
];

/// Most nodes a matrix names on each side (a record per pair).
pub const MAX_MATRIX_NODES: usize = 256;
/// Most CPUs a core-to-core matrix names (a record per pair).
pub const MAX_C2C_CPUS: usize = 256;
/// MLC's default injected delays, cycles (`mlc --loaded_latency`).
pub const MLC_DELAYS: &[u64] = &[
    0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700, 2500, 3500, 5000, 9000, 20000,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Copy,
    Scale,
    Add,
    Triad,
}

impl Op {
    const NAMES: &'static [(&'static str, Op)] = &[
        ("copy", Op::Copy),
        ("scale", Op::Scale),
        ("add", Op::Add),
        ("triad", Op::Triad),
    ];
    fn name(self) -> &'static str {
        Op::NAMES
            .iter()
            .find(|(_, o)| *o == self)
            .map_or("?", |p| p.0)
    }
    /// Arrays read and written per element (STREAM counts their bytes).
    fn arrays(self) -> (f64, f64) {
        match self {
            Op::Copy | Op::Scale => (1.0, 1.0),
            Op::Add | Op::Triad => (2.0, 1.0),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Policy {
    /// First touch: each thread's arrays on its own node.
    Local,
    /// Pages spread over these nodes in equal shares.
    Interleave(Vec<usize>),
    /// Every page on these nodes (equal shares, as the kernel's bind
    /// fills them in turn under a streaming load).
    Bind(Vec<usize>),
}

#[derive(Debug, Clone)]
pub enum Step {
    LatencyMatrix {
        from: Vec<usize>,
        to: Vec<usize>,
    },
    BandwidthMatrix {
        from: Vec<usize>,
        to: Vec<usize>,
    },
    LoadedLatency {
        nodes: Vec<usize>,
        delays: Vec<u64>,
    },
    Stream {
        threads: Vec<u64>,
        ops: Vec<Op>,
        policy: Policy,
        nodes: Vec<usize>,
        spread: bool,
    },
    C2c {
        cpus: Vec<u64>,
    },
}

fn nodes_key(
    r: &mut TableReader,
    key: &'static str,
    m: &Machine,
    max: usize,
) -> Result<Vec<usize>, InputError> {
    let n = m.node_count();
    let list = match r.u64_list(key)? {
        Some(l) => l,
        // Every node, or `max` of them evenly spaced on a larger machine.
        None => {
            let k = n.min(max);
            return Ok((0..k).map(|i| i * n / k).collect());
        }
    };
    if list.is_empty() || list.len() > max {
        return Err(InputError::at(
            r.key(key),
            format!("{} nodes: allowed 1..{max}", list.len()),
        ));
    }
    list.iter()
        .map(|&x| {
            if (x as usize) < n {
                Ok(x as usize)
            } else {
                Err(InputError::at(
                    r.key(key),
                    format!("node {x} does not exist (nodes 0..{})", n - 1),
                ))
            }
        })
        .collect()
}

/// An integer or a list of them.
fn counts(r: &mut TableReader, key: &'static str) -> Result<Option<Vec<u64>>, InputError> {
    let items = match r.raw(key) {
        None => return Ok(None),
        Some(Value::Array(a)) => a.clone(),
        Some(v) => vec![v.clone()],
    };
    let v = items
        .iter()
        .map(value_u64)
        .collect::<Result<Vec<u64>, String>>()
        .map_err(|e| InputError::at(r.key(key), e))?;
    if v.is_empty() {
        return Err(InputError::at(r.key(key), "give at least one value"));
    }
    Ok(Some(v))
}

fn cpus_with_memory(m: &Machine, nodes: &[usize]) -> Result<(), InputError> {
    if nodes.iter().all(|&n| m.nodes[n].cpus == 0) {
        return Err(InputError::at("nodes", "those nodes have no CPUs"));
    }
    Ok(())
}

/// The default CPUs of a core-to-core matrix: on the first two nodes of
/// each of the first two sockets, in each of the first two last-level
/// caches, a CPU, its SMT sibling and the next core's first CPU (every
/// domain appears), at most `MAX_C2C_CPUS`.
fn default_c2c_cpus(m: &Machine) -> Vec<u64> {
    let s = &m.memsys;
    let nps = s.nodes_per_socket as usize;
    let mut nodes: Vec<usize> = Vec::new();
    for sock in 0..m.sockets().min(2) {
        for k in 0..nps.min(2) {
            nodes.push(sock * nps + k);
        }
    }
    let mut out = Vec::new();
    for n in nodes {
        let first = m.cpu_index.first_of(n);
        let cpus = m.nodes[n].cpus as u64;
        for llc in 0..2u64 {
            for k in [0, 1, s.smt as u64] {
                let c = llc * s.llc_cpus as u64 + k;
                if c < cpus && !out.contains(&(first + c)) {
                    out.push(first + c);
                }
            }
        }
    }
    out.truncate(MAX_C2C_CPUS);
    out
}

impl Step {
    pub fn from_step(
        name: &str,
        r: &mut TableReader,
        m: &Machine,
    ) -> Result<Option<Step>, InputError> {
        Ok(Some(match name {
            "mlc-latency-matrix" => Step::LatencyMatrix {
                from: nodes_key(r, "from_nodes", m, MAX_MATRIX_NODES)?,
                to: nodes_key(r, "to_nodes", m, MAX_MATRIX_NODES)?,
            },
            "mlc-bandwidth-matrix" => {
                let from = nodes_key(r, "from_nodes", m, MAX_MATRIX_NODES)?;
                cpus_with_memory(m, &from)?;
                Step::BandwidthMatrix {
                    from,
                    to: nodes_key(r, "to_nodes", m, MAX_MATRIX_NODES)?,
                }
            }
            "mlc-loaded-latency" => {
                let nodes = nodes_key(r, "nodes", m, crate::machine::MAX_NODES)?;
                cpus_with_memory(m, &nodes)?;
                let delays = counts(r, "inject_delay")?.unwrap_or_else(|| MLC_DELAYS.to_vec());
                if let Some(d) = delays.iter().find(|&&d| d > 1_000_000) {
                    return Err(InputError::at(
                        r.key("inject_delay"),
                        format!("{d}: allowed 0..1000000 cycles"),
                    ));
                }
                Step::LoadedLatency { nodes, delays }
            }
            "stream" => {
                let nodes = nodes_key(r, "nodes", m, crate::machine::MAX_NODES)?;
                cpus_with_memory(m, &nodes)?;
                let cpus: u64 = nodes.iter().map(|&n| m.nodes[n].cpus as u64).sum();
                let threads = counts(r, "threads")?.unwrap_or_else(|| vec![cpus]);
                if let Some(t) = threads.iter().find(|&&t| t == 0 || t > cpus) {
                    return Err(InputError::at(
                        r.key("threads"),
                        format!("{t}: allowed 1..{cpus} (the CPUs of `nodes`)"),
                    ));
                }
                let ops = match r.list("op", |v| {
                    let s = v.as_str().ok_or("expected a kernel name")?;
                    Op::NAMES
                        .iter()
                        .find(|(n, _)| *n == s)
                        .map(|p| p.1)
                        .ok_or_else(|| {
                            format!(
                                "`{}` is not a STREAM kernel; allowed: copy, scale, add, triad",
                                crate::error::clip(s, 40)
                            )
                        })
                })? {
                    Some(o) if o.is_empty() => {
                        return Err(InputError::at(r.key("op"), "give at least one kernel"))
                    }
                    Some(o) => o,
                    None => vec![Op::Copy, Op::Scale, Op::Add, Op::Triad],
                };
                let set = match r.u64_list("policy_nodes")? {
                    None => None,
                    Some(l) if l.is_empty() => {
                        return Err(InputError::at(
                            r.key("policy_nodes"),
                            "must name at least one node",
                        ))
                    }
                    Some(l) => {
                        if let Some(bad) = l.iter().find(|&&x| x as usize >= m.node_count()) {
                            return Err(InputError::at(
                                r.key("policy_nodes"),
                                format!(
                                    "node {bad} does not exist (nodes 0..{})",
                                    m.node_count() - 1
                                ),
                            ));
                        }
                        Some(l.into_iter().map(|x| x as usize).collect::<Vec<_>>())
                    }
                };
                let all: Vec<usize> = (0..m.node_count()).collect();
                let policy = match r.str("policy")?.unwrap_or("local") {
                    "local" => Policy::Local,
                    "interleave" => Policy::Interleave(set.unwrap_or(all)),
                    "bind" => Policy::Bind(set.ok_or_else(|| {
                        InputError::at(r.key("policy_nodes"), "policy `bind` needs `policy_nodes`")
                    })?),
                    other => {
                        return Err(InputError::at(
                            r.key("policy"),
                            format!(
                                "`{}` is not a policy here; allowed: local, interleave, bind",
                                crate::error::clip(other, 40)
                            ),
                        ))
                    }
                };
                let spread = r
                    .choice("placement", &[("spread", true), ("close", false)])?
                    .unwrap_or(true);
                Step::Stream {
                    threads,
                    ops,
                    policy,
                    nodes,
                    spread,
                }
            }
            "c2c-latency" => {
                let total = m.cpu_count();
                let cpus = match r.u64_list("cpus")? {
                    None => default_c2c_cpus(m),
                    Some(l) => {
                        if l.len() < 2 || l.len() > MAX_C2C_CPUS {
                            return Err(InputError::at(
                                r.key("cpus"),
                                format!("{} CPUs: allowed 2..{MAX_C2C_CPUS}", l.len()),
                            ));
                        }
                        if let Some(bad) = l.iter().find(|&&c| c >= total) {
                            return Err(InputError::at(
                                r.key("cpus"),
                                format!("CPU {bad} does not exist (CPUs 0..{})", total - 1),
                            ));
                        }
                        l
                    }
                };
                Step::C2c { cpus }
            }
            _ => return Ok(None),
        }))
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let m = &sim.case.machine;
        let line = m.cpu.cache_line as f64;
        let mut out = Vec::new();
        match self {
            Step::LatencyMatrix { from, to } => {
                for &a in from {
                    for &b in to {
                        out.push(rec.record(
                            &[("from_node", json!(a)), ("to_node", json!(b))],
                            "idle_latency_ns",
                            "ns",
                            m.idle_latency_ns(a, b),
                        ));
                    }
                }
            }
            Step::BandwidthMatrix { from, to } => {
                for &a in from {
                    for &b in to {
                        let f = [node_flow(
                            m,
                            a,
                            m.nodes[a].cpus as u64,
                            vec![(b, 1.0)],
                            0.0,
                            0.0,
                        )];
                        let s = memflow::solve(m, &f);
                        out.push(rec.record(
                            &[("from_node", json!(a)), ("to_node", json!(b))],
                            "bandwidth_mbps",
                            "MB/s",
                            s.total_gbps(&f, line) * 1e3,
                        ));
                    }
                }
            }
            Step::LoadedLatency { nodes, delays } => {
                let cycle = m.cycle_ns();
                for &d in delays {
                    // Load threads on every CPU of `nodes` but the latency
                    // thread's, reading their own node; the latency thread
                    // chases through the first node's memory.
                    let mut flows: Vec<Flow> = nodes
                        .iter()
                        .filter(|&&n| m.nodes[n].cpus > 0)
                        .map(|&n| {
                            let t = m.nodes[n].cpus as u64 - u64::from(n == nodes[0]);
                            node_flow(m, n, t, vec![(n, 1.0)], 0.0, d as f64 * cycle)
                        })
                        .filter(|f| f.threads > 0.0)
                        .collect();
                    flows.push(Flow {
                        mlp: 1.0,
                        ..node_flow(m, nodes[0], 1, vec![(nodes[0], 1.0)], 0.0, 0.0)
                    });
                    let s = memflow::solve(m, &flows);
                    let k = flows.len() - 1;
                    let keys = [("inject_delay", json!(d))];
                    out.push(rec.record(&keys, "loaded_latency_ns", "ns", s.latency_ns[k]));
                    out.push(rec.record(
                        &keys,
                        "bandwidth_mbps",
                        "MB/s",
                        s.total_gbps(&flows, line) * 1e3,
                    ));
                }
            }
            Step::Stream {
                threads,
                ops,
                policy,
                nodes,
                spread,
            } => {
                for &t in threads {
                    let per_node = place(m, nodes, t, *spread);
                    for &op in ops {
                        let (reads, writes) = op.arrays();
                        let fetched = reads + if m.memsys.write_allocate { writes } else { 0.0 };
                        // A write-allocate store holds a miss slot for its
                        // line; memory supplies the ownership read only
                        // as far as `rfo_cost` says (2 (rfo_cost - 1) of
                        // a line: 1 at the default 1.5, as before).
                        let rfo = (2.0 * (m.hierarchy.rfo_cost - 1.0)).clamp(0.0, 1.0);
                        let supplied = reads
                            + if m.memsys.write_allocate {
                                rfo * writes
                            } else {
                                0.0
                            };
                        let flows: Vec<Flow> = per_node
                            .iter()
                            .map(|&(n, k)| {
                                let homes = match policy {
                                    Policy::Local => vec![(n, 1.0)],
                                    Policy::Interleave(set) | Policy::Bind(set) => {
                                        memflow::homes(n, Some(set))
                                    }
                                };
                                let f = node_flow(m, n, k, homes, writes / fetched, 0.0);
                                Flow {
                                    from_memory: supplied / fetched,
                                    // A kernel that stores keeps the
                                    // copy's lines in flight, where the
                                    // machine gives them (the stores'
                                    // misses drain beside the loads').
                                    mlp: if writes > 0.0 && m.memsys.copy_mlp_lines > 0.0 {
                                        f.mlp * m.memsys.copy_mlp_lines / m.memsys.mlp_lines
                                    } else {
                                        f.mlp
                                    },
                                    ..f
                                }
                            })
                            .collect();
                        let s = memflow::solve(m, &flows);
                        // STREAM counts the bytes its arrays hold, not the
                        // lines a write-allocate store also reads.
                        let counted = (reads + writes) / fetched;
                        out.push(rec.record(
                            &[("threads", json!(t)), ("op", json!(op.name()))],
                            "stream_mbps",
                            "MB/s",
                            s.total_gbps(&flows, line) * counted * 1e3,
                        ));
                    }
                }
            }
            Step::C2c { cpus } => {
                let mut seen = [false; 5];
                for &a in cpus {
                    for &b in cpus {
                        if a == b {
                            continue;
                        }
                        out.push(rec.record(
                            &[("cpu_a", json!(a)), ("cpu_b", json!(b))],
                            "c2c_latency_ns",
                            "ns",
                            m.c2c_ns(a, b),
                        ));
                        seen[m.cpu_domain(a, b) as usize] = true;
                    }
                }
                for d in Domain::ALL {
                    if !seen[d as usize] {
                        continue;
                    }
                    // The domain's price: the first pair of the matrix in it.
                    let (a, b) = cpus
                        .iter()
                        .flat_map(|&a| cpus.iter().map(move |&b| (a, b)))
                        .find(|&(a, b)| a != b && m.cpu_domain(a, b) == d)
                        .expect("seen");
                    out.push(rec.record(
                        &[("domain", json!(d.name()))],
                        "domain_latency_ns",
                        "ns",
                        m.c2c_ns(a, b),
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// `threads` threads of node `node` streaming to `homes`: SMT siblings
/// share their core's misses in flight.
fn node_flow(
    m: &Machine,
    node: usize,
    threads: u64,
    homes: Vec<(usize, f64)>,
    wb: f64,
    delay_ns: f64,
) -> Flow {
    let cores = (m.nodes[node].cpus as u64)
        .div_ceil(m.memsys.smt as u64)
        .max(1);
    let busy_cores = threads.min(cores).max(1);
    // Threads fill cores one per core first, then siblings; cores fill
    // their node's LLC domains in order.
    let cores_per_llc = (m.memsys.llc_cpus as u64)
        .div_ceil(m.memsys.smt as u64)
        .max(1);
    Flow {
        llc_domains: busy_cores.div_ceil(cores_per_llc) as f64,
        node,
        threads: threads as f64,
        homes,
        mlp: m.memsys.mlp_lines * busy_cores as f64 / threads.max(1) as f64,
        writebacks: wb,
        from_memory: 1.0,
        delay_ns,
    }
}

/// Threads per node: `spread` deals them over `nodes` in turn (OpenMP's
/// `OMP_PROC_BIND=spread`), `close` fills each node before the next.
fn place(m: &Machine, nodes: &[usize], threads: u64, spread: bool) -> Vec<(usize, u64)> {
    let with_cpus: Vec<usize> = nodes
        .iter()
        .copied()
        .filter(|&n| m.nodes[n].cpus > 0)
        .collect();
    let mut left = threads;
    let mut out: Vec<(usize, u64)> = Vec::with_capacity(with_cpus.len());
    if spread {
        // Even shares, capped by each node's CPUs; the remainder goes to
        // nodes with room, lowest first.
        let mut room: Vec<u64> = with_cpus.iter().map(|&n| m.nodes[n].cpus as u64).collect();
        let mut got = vec![0u64; with_cpus.len()];
        while left > 0 {
            let open = room.iter().filter(|&&r| r > 0).count() as u64;
            if open == 0 {
                break;
            }
            let share = (left / open).max(1);
            for (i, r) in room.iter_mut().enumerate() {
                if left == 0 {
                    break;
                }
                let k = share.min(*r).min(left);
                got[i] += k;
                *r -= k;
                left -= k;
            }
        }
        for (i, &n) in with_cpus.iter().enumerate() {
            if got[i] > 0 {
                out.push((n, got[i]));
            }
        }
    } else {
        for &n in &with_cpus {
            let k = left.min(m.nodes[n].cpus as u64);
            if k > 0 {
                out.push((n, k));
            }
            left -= k;
        }
    }
    out
}

/// The `[memsys]` keys whose value decides a workload's result on `m`.
fn deciding(name: &str, m: &Machine) -> Vec<&'static str> {
    let s = &m.memsys;
    let mut keys = Vec::new();
    let latency = |keys: &mut Vec<&'static str>| {
        keys.push("dram_ns");
        if s.nodes_per_socket > 1 {
            keys.push("node_hop_ns");
        }
        if m.sockets() > 1 {
            keys.push("socket_hop_ns");
        }
    };
    match name {
        "mlc-latency-matrix" => latency(&mut keys),
        "mlc-bandwidth-matrix" | "mlc-loaded-latency" | "stream" => {
            latency(&mut keys);
            keys.extend([
                "node_gbps",
                "llc_gbps",
                "mlp_lines",
                "queue_ns",
                "queue_lines",
                "smt",
                "llc_cpus",
            ]);
            if m.sockets() > 1 {
                keys.extend(["link_gbps", "links_per_pair"]);
                // With pair links a port is those links (no figure of its own).
                if s.links_per_pair == 0 {
                    keys.push("port_gbps");
                }
            }
            if name == "stream" {
                keys.push("write_allocate");
            }
        }
        "c2c-latency" => keys.extend([
            "smt",
            "llc_cpus",
            "core_transfer_ns",
            "llc_transfer_ns",
            "node_transfer_ns",
            "socket_transfer_ns",
            "remote_transfer_ns",
        ]),
        _ => {}
    }
    keys
}

/// Why a `[memsys]` key has no cited value to replace its default, where
/// the sources were searched and none found (docs/machine.md, "Presets
/// for today"): the warning names it, so a reader knows the default is
/// not an oversight.
fn why_defaulted(key: &str) -> Option<&'static str> {
    match key {
        "llc_gbps" => Some(
            "llc_gbps is unlimited (not modelled): no published rate of a \
             core group's own link into the fabric was found for this part (a \
             mesh die has none like AMD's GMI; every measured group read at its \
             controllers' rate: docs/machine.md, \"llc_gbps on a mesh\")",
        ),
        _ => None,
    }
}

/// One warning per case step whose result a default decided: the machine
/// has no `[memsys]` (the older tables and the SLIT stand in), or its
/// `[memsys]` left keys the workload uses to their defaults.
pub fn default_warnings(case: &ResolvedCase) -> Vec<String> {
    let m = &case.machine;
    let mut out = Vec::new();
    for step in &case.steps {
        let Some(name) = step.get("workload").and_then(toml::Value::as_str) else {
            continue;
        };
        if !WORKLOAD_NAMES.contains(&name) {
            continue;
        }
        let msg = if !m.memsys.explicit {
            format!(
                "`{name}` on machine `{}`: no [memsys], so dram.latency_ns x SLIT ratio, \
                 dram.bandwidth_gbps, interconnect.* and [hierarchy] mlp decide it \
                 (docs/machine.md, \"Memory system\")",
                m.name
            )
        } else {
            let used: Vec<&str> = deciding(name, m)
                .into_iter()
                .filter(|k| m.memsys.defaulted.0.contains(k))
                .collect();
            if used.is_empty() {
                continue;
            }
            let why: String = used
                .iter()
                .filter_map(|k| why_defaulted(k))
                .map(|w| format!("; {w}"))
                .collect();
            format!(
                "`{name}` on machine `{}`: [memsys] {} left to defaults decide it{why}",
                m.name,
                used.join(", ")
            )
        };
        if !out.contains(&msg) {
            out.push(msg);
        }
    }
    out
}

const NODES_ALL: &str = "every node (256 evenly spaced beyond 256)";

pub const SPECS: &[Spec] = &[
    Spec {
        name: "mlc-latency-matrix",
        about: "idle latency from each node's CPUs to each node's memory (mlc --latency_matrix)",
        params: &[
            Param { key: "from_nodes", kind: Kind::IntList, unit: "", default: D::Text(NODES_ALL), range: Range::Text("node ids, 1..256 of them"), about: "nodes whose CPUs load (rows)" },
            Param { key: "to_nodes", kind: Kind::IntList, unit: "", default: D::Text(NODES_ALL), range: Range::Text("node ids, 1..256 of them"), about: "nodes whose memory is read (columns)" },
        ],
        one_of: &[],
        metrics: &[Metric { name: "idle_latency_ns", unit: "ns", about: "load-to-use latency of a dependent chase (row keys `from_node`, `to_node`)" }],
        example_machine: "epyc-9004-nps4",
        example_kernel: "",
        example: "workload = \"mlc-latency-matrix\"\n",
        row_keys: &["from_node", "to_node"],
    },
    Spec {
        name: "mlc-bandwidth-matrix",
        about: "read bandwidth of every CPU of one node from one node's memory (mlc --bandwidth_matrix)",
        params: &[
            Param { key: "from_nodes", kind: Kind::IntList, unit: "", default: D::Text(NODES_ALL), range: Range::Text("node ids with CPUs, 1..256 of them"), about: "nodes whose CPUs read (rows)" },
            Param { key: "to_nodes", kind: Kind::IntList, unit: "", default: D::Text(NODES_ALL), range: Range::Text("node ids, 1..256 of them"), about: "nodes whose memory is read (columns)" },
        ],
        one_of: &[],
        metrics: &[Metric { name: "bandwidth_mbps", unit: "MB/s", about: "read bandwidth (row keys `from_node`, `to_node`)" }],
        example_machine: "epyc-9004-nps4",
        example_kernel: "",
        example: "workload = \"mlc-bandwidth-matrix\"\nfrom_nodes = [0]\n",
        row_keys: &["from_node", "to_node"],
    },
    Spec {
        name: "mlc-loaded-latency",
        about: "a latency thread's chase while every other CPU reads its node's memory at a delay (mlc --loaded_latency)",
        params: &[
            Param { key: "nodes", kind: Kind::IntList, unit: "", default: D::Text("every node"), range: Range::Text("node ids with CPUs"), about: "nodes whose CPUs run load threads; the first also runs the latency thread" },
            Param { key: "inject_delay", kind: Kind::Counts, unit: "cycles", default: D::Text("MLC's list, 0 … 20000"), range: Range::Text("0 … 1000000"), about: "delay between a load thread's requests (row key)" },
        ],
        one_of: &[],
        metrics: &[
            Metric { name: "loaded_latency_ns", unit: "ns", about: "the latency thread's load-to-use latency (row key `inject_delay`)" },
            Metric { name: "bandwidth_mbps", unit: "MB/s", about: "read bandwidth of all threads" },
        ],
        example_machine: "epyc-9004-nps1",
        example_kernel: "",
        example: "workload = \"mlc-loaded-latency\"\nnodes = [0]\ninject_delay = [0, 200, 2000]\n",
        row_keys: &["inject_delay"],
    },
    Spec {
        name: "stream",
        about: "STREAM copy/scale/add/triad by thread count and placement policy",
        params: &[
            Param { key: "threads", kind: Kind::Counts, unit: "", default: D::Text("every CPU of `nodes`"), range: Range::Text("1 .. the CPUs of `nodes`"), about: "OpenMP threads (row key)" },
            Param { key: "op", kind: Kind::StrList, unit: "", default: D::Text("all four"), range: Range::Text("copy, scale, add, triad"), about: "STREAM kernels (row key `op`)" },
            Param { key: "policy", kind: Kind::Choice(&["local", "interleave", "bind"]), unit: "", default: D::Value("\"local\""), range: Range::Any, about: "where the arrays' pages are: first touch, numactl --interleave, --membind" },
            Param { key: "policy_nodes", kind: Kind::IntList, unit: "", default: D::Text("every node (interleave); required for bind"), range: Range::Text("node ids"), about: "the policy's nodes" },
            Param { key: "nodes", kind: Kind::IntList, unit: "", default: D::Text("every node"), range: Range::Text("node ids with CPUs"), about: "nodes whose CPUs run the threads (numactl --cpunodebind)" },
            Param { key: "placement", kind: Kind::Choice(&["spread", "close"]), unit: "", default: D::Value("\"spread\""), range: Range::Any, about: "threads dealt over the nodes in turn, or filling one node first" },
        ],
        one_of: &[],
        metrics: &[Metric { name: "stream_mbps", unit: "MB/s", about: "STREAM's rate: bytes its arrays hold per second (row keys `threads`, `op`)" }],
        example_machine: "epyc-9004-nps4",
        example_kernel: "",
        example: "workload = \"stream\"\nthreads = [1, 8, 96]\nop = [\"triad\"]\npolicy = \"interleave\"\n",
        row_keys: &["op"],
    },
    Spec {
        name: "c2c-latency",
        about: "one contended cache line bounced between two CPUs, per pair (core-to-core latency)",
        params: &[Param { key: "cpus", kind: Kind::IntList, unit: "", default: D::Text("two CPUs of two last-level caches of two nodes of two sockets"), range: Range::Text("2..256 CPU ids"), about: "CPUs of the matrix" }],
        one_of: &[],
        metrics: &[
            Metric { name: "c2c_latency_ns", unit: "ns", about: "one-way line transfer (row keys `cpu_a`, `cpu_b`)" },
            Metric { name: "domain_latency_ns", unit: "ns", about: "the transfer within each cache domain the matrix spans (row key `domain`)" },
        ],
        example_machine: "epyc-9004-nps4",
        example_kernel: "",
        example: "workload = \"c2c-latency\"\n",
        row_keys: &["cpu_a", "cpu_b", "domain"],
    },
];

fn parse(name: &str, r: &mut TableReader, m: &Machine) -> Result<Box<dyn Run>, InputError> {
    super::family_step(name, Step::from_step(name, r, m)?)
}

impl Run for Step {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Step::run(self, sim)
    }
}

/// `mlc-latency-matrix`: its spec and reader.
pub const MLC_LATENCY_MATRIX: Workload = Workload {
    spec: SPECS[0],
    parse: |r, m| parse("mlc-latency-matrix", r, m),
};
/// `mlc-bandwidth-matrix`: its spec and reader.
pub const MLC_BANDWIDTH_MATRIX: Workload = Workload {
    spec: SPECS[1],
    parse: |r, m| parse("mlc-bandwidth-matrix", r, m),
};
/// `mlc-loaded-latency`: its spec and reader.
pub const MLC_LOADED_LATENCY: Workload = Workload {
    spec: SPECS[2],
    parse: |r, m| parse("mlc-loaded-latency", r, m),
};
/// `stream`: its spec and reader.
pub const STREAM: Workload = Workload {
    spec: SPECS[3],
    parse: |r, m| parse("stream", r, m),
};
/// `c2c-latency`: its spec and reader.
pub const C2C_LATENCY: Workload = Workload {
    spec: SPECS[4],
    parse: |r, m| parse("c2c-latency", r, m),
};
