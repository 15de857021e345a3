//! `[memsys]`: the memory system as today's machines build it, beside the
//! SLIT. The SLIT (`[distance]`) is the firmware's placement hint that
//! `page_alloc` sorts zonelists by; it is not a latency ratio (Genoa's
//! cross-socket SLIT is 32, its remote/local latency ratio near 1.7). Here
//! latency and bandwidth get their own description, as hwloc's distances
//! and Intel MLC's matrices give them: a memory-side latency, an extra
//! latency per hop, achievable bandwidth per node's controllers and per
//! inter-socket link, the misses a core keeps in flight, and the cache
//! domains a contended line moves between. `docs/machine.md` ("Memory
//! system") gives each field, its default and each preset's source.
//!
//! The table is optional. Without it every value is derived from the
//! older tables so that machines described before it (Altix, Wildfire,
//! Blue Gene/P) cost exactly what they did: latency is `dram.latency_ns`
//! (a load-to-use figure) times the SLIT ratio, a node's link into the
//! fabric is `interconnect.link_gbps`, a line moves at
//! `interconnect.line_transfer_ns` times the SLIT ratio.

use super::Machine;
use crate::error::InputError;
use crate::input::table::TableReader;
use toml::Table;

/// Where two CPUs share the most, nearest first: what a contended line
/// costs to move between them ([`MemSys::c2c_ns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Domain {
    /// SMT siblings: one core's L1/L2.
    Core,
    /// One last-level cache (an AMD CCX/CCD, an Intel die's slice set).
    Llc,
    /// One NUMA node, different last-level caches.
    Node,
    /// One socket, different nodes (NPS2/NPS4, SNC).
    Socket,
    /// Different sockets.
    Remote,
}

impl Domain {
    pub const ALL: [Domain; 5] = [
        Domain::Core,
        Domain::Llc,
        Domain::Node,
        Domain::Socket,
        Domain::Remote,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Domain::Core => "core",
            Domain::Llc => "llc",
            Domain::Node => "node",
            Domain::Socket => "socket",
            Domain::Remote => "remote",
        }
    }
}

/// The memory system's parameters, explicit or derived (`defaulted` names
/// the keys a machine file left to defaults).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemSys {
    /// Whether the machine has a `[memsys]` table (else the old rules).
    pub explicit: bool,
    /// NUMA nodes per socket (NPS1/2/4, SNC2/4); sockets = nodes / this.
    pub nodes_per_socket: u32,
    /// Memory-side latency of a local miss, ns: from the last-level cache
    /// miss to the line's return (home agent, controller, DRAM). A load's
    /// idle latency is the LLC lookup plus this plus the hops: the cache
    /// hierarchy is counted once.
    pub dram_ns: f64,
    /// Extra latency to another node of the same socket, ns.
    pub node_hop_ns: f64,
    /// Extra latency to a node of another socket, ns.
    pub socket_hop_ns: f64,
    /// Extra latency per node pair, ns (overrides the two above).
    pub hop_ns: Option<Vec<Vec<f64>>>,
    /// Achievable read bandwidth of one node's memory controllers, GB/s.
    pub node_gbps: f64,
    /// Achievable bandwidth of one last-level-cache domain's link into the
    /// fabric (an AMD CCD's GMI link), GB/s; infinite: not modelled.
    pub llc_gbps: f64,
    /// Achievable bandwidth of one inter-socket link, each direction, GB/s.
    pub link_gbps: f64,
    /// Links between each two sockets (fully connected); 0: no pair links,
    /// traffic is limited by the sockets' ports only.
    pub links_per_pair: u32,
    /// Each socket's port into the fabric, each direction, GB/s.
    pub port_gbps: f64,
    /// Lines one hardware thread keeps in flight when streaming (L1 fill
    /// buffers plus the L2 prefetcher's misses): by Little's law its
    /// bandwidth is at most `mlp_lines × line / latency`.
    pub mlp_lines: f64,
    /// Lines one hardware thread keeps in flight when it copies (a STREAM
    /// kernel that stores: its loads' and ownership reads' misses
    /// together), where that is not `mlp_lines`: a store's miss drains
    /// from the store buffer through the L2 (its ownership prefetch)
    /// beside the loads' fill buffers, so one core can copy faster than
    /// it reads. Fitted by the probe from its own copy with ordinary
    /// stores. 0 (absent): `mlp_lines`, every preset; written only where
    /// set.
    pub copy_mlp_lines: f64,
    /// A written line's cost at a node's controllers, in read lines: DRAM
    /// turns its bus around between reads and writes (tWTR, tRTW) and
    /// the controller drains its write queue in batches that stall the
    /// reads behind them, so a mix of reads and writes moves fewer bytes
    /// than reads alone. Only the controllers pay it (links carry a
    /// line as a line). Fitted by the probe from its node copy against
    /// its node read. 1 (absent): a write costs a read, every preset;
    /// written only where set.
    pub write_cost: f64,
    /// M/D/1 service time of a queue at a controller or link, ns: a
    /// request waits `queue_ns × ρ / (2 (1 − ρ))` at utilisation ρ.
    pub queue_ns: f64,
    /// Lines one queue (a node's controllers, a link) holds in flight; the
    /// rest wait in the requesters' fill buffers, so a request waits there
    /// at most `queue_lines × line / capacity` (Little's law on a full
    /// queue). Infinite: the open M/D/1 wait, unbounded.
    pub queue_lines: f64,
    /// Hardware threads per core (SMT siblings numbered next to each other).
    pub smt: u32,
    /// CPUs (hardware threads) sharing one last-level cache.
    pub llc_cpus: u32,
    /// Line transfer between CPUs of each [`Domain`], ns (one way).
    pub c2c_ns: [f64; 5],
    /// Stores read the line first (write-allocate): STREAM's copy moves
    /// three lines for the two it counts. False: non-temporal stores.
    pub write_allocate: bool,
    /// Keys a `[memsys]` table left to their defaults (empty without one).
    pub defaulted: Defaulted,
}

/// Which keys were defaulted: provenance, not a parameter, so two machines
/// with the same values are equal however they were written (a machine
/// written back names every key).
#[derive(Debug, Clone, Default)]
pub struct Defaulted(pub Vec<&'static str>);

impl PartialEq for Defaulted {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

const KEYS: &[&str] = &[
    "nodes_per_socket",
    "dram_ns",
    "node_hop_ns",
    "socket_hop_ns",
    "hop_ns",
    "node_gbps",
    "llc_gbps",
    "link_gbps",
    "links_per_pair",
    "port_gbps",
    "mlp_lines",
    "copy_mlp_lines",
    "write_cost",
    "queue_ns",
    "queue_lines",
    "smt",
    "llc_cpus",
    "core_transfer_ns",
    "llc_transfer_ns",
    "node_transfer_ns",
    "socket_transfer_ns",
    "remote_transfer_ns",
    "write_allocate",
];

const MAX: f64 = 1e7;

fn num(r: &mut TableReader, key: &'static str, lo: f64) -> Result<Option<f64>, InputError> {
    match r.f64(key)? {
        Some(x) if x.is_nan() || x < lo || x > MAX => Err(InputError::at(
            r.key(key),
            format!("{x}: allowed {lo} .. {MAX}"),
        )),
        v => Ok(v),
    }
}

/// The CPUs sharing the largest cache (its `shared_by`), else a node's.
fn llc_cpus_of(m: &Machine) -> u32 {
    m.cpu
        .caches
        .iter()
        .max_by_key(|c| (c.level, c.size))
        .map(|c| c.shared_by.max(1))
        .unwrap_or_else(|| m.nodes.first().map_or(1, |n| n.cpus.max(1)))
}

/// The derived values: today's rules, exactly (module comment).
pub(super) fn derived(m: &Machine) -> MemSys {
    let lt = m.interconnect.line_transfer_ns;
    MemSys {
        explicit: false,
        nodes_per_socket: 1,
        dram_ns: (m.memory.latency_ns - m.llc_latency_ns()).max(0.0),
        node_hop_ns: 0.0,
        socket_hop_ns: 0.0,
        hop_ns: None,
        node_gbps: m.memory.bandwidth_gbps,
        llc_gbps: f64::INFINITY,
        link_gbps: m.interconnect.link_gbps,
        links_per_pair: 0,
        port_gbps: m.interconnect.link_gbps,
        mlp_lines: m.hierarchy.mlp,
        copy_mlp_lines: 0.0,
        write_cost: 1.0,
        queue_ns: m.memory.latency_ns / 2.0,
        queue_lines: f64::INFINITY,
        smt: 1,
        llc_cpus: llc_cpus_of(m),
        c2c_ns: [lt, lt, lt, lt, lt],
        write_allocate: true,
        defaulted: Defaulted::default(),
    }
}

/// Read `[memsys]` (optional) once the rest of the machine is known.
pub(super) fn read(r: &mut TableReader, m: &Machine) -> Result<MemSys, InputError> {
    let mut s = derived(m);
    let Some(mut t) = r.table("memsys")? else {
        return Ok(s);
    };
    s.explicit = true;
    let n = m.node_count() as u32;
    for k in KEYS {
        if !t.has(k) {
            s.defaulted.0.push(k);
        }
    }
    if let Some(v) = t.u32_in("nodes_per_socket", 1, n.max(1))? {
        if !n.is_multiple_of(v) {
            return Err(InputError::at(
                t.key("nodes_per_socket"),
                format!("{v} does not divide the machine's {n} nodes"),
            ));
        }
        s.nodes_per_socket = v;
    }
    if let Some(v) = num(&mut t, "dram_ns", 0.0)? {
        s.dram_ns = v;
    }
    s.node_hop_ns = num(&mut t, "node_hop_ns", 0.0)?.unwrap_or(0.0);
    s.socket_hop_ns = num(&mut t, "socket_hop_ns", 0.0)?.unwrap_or(0.0);
    if let Some(rows) = t.list("hop_ns", |v| match v {
        toml::Value::Array(row) => row
            .iter()
            .map(|x| match crate::input::table::value_f64(x) {
                Ok(f) if (0.0..=MAX).contains(&f) => Ok(f),
                Ok(f) => Err(format!("{f}: allowed 0 .. {MAX}")),
                Err(e) => Err(e),
            })
            .collect::<Result<Vec<f64>, String>>(),
        other => Err(format!(
            "expected a row (list of numbers), found {}",
            crate::input::table::describe(other)
        )),
    })? {
        if rows.len() != n as usize || rows.iter().any(|r| r.len() != n as usize) {
            return Err(InputError::at(
                t.key("hop_ns"),
                format!("must be {n} rows of {n} numbers (one per node pair)"),
            ));
        }
        s.hop_ns = Some(rows);
    }
    if let Some(v) = num(&mut t, "node_gbps", 1e-3)? {
        s.node_gbps = v;
    }
    if let Some(v) = num(&mut t, "llc_gbps", 1e-3)? {
        s.llc_gbps = v;
    }
    if let Some(v) = num(&mut t, "link_gbps", 1e-3)? {
        s.link_gbps = v;
    }
    if let Some(v) = t.u32_in("links_per_pair", 0, 64)? {
        s.links_per_pair = v;
    }
    s.port_gbps = match num(&mut t, "port_gbps", 1e-3)? {
        Some(v) => v,
        // Without a port figure a socket's port is all its pair links.
        None if s.links_per_pair > 0 => f64::INFINITY,
        None => s.link_gbps,
    };
    if let Some(v) = num(&mut t, "mlp_lines", 1.0)? {
        s.mlp_lines = v;
    }
    if let Some(v) = num(&mut t, "copy_mlp_lines", 1.0)? {
        s.copy_mlp_lines = v;
    }
    if let Some(v) = num(&mut t, "write_cost", 1.0)? {
        s.write_cost = v;
    }
    if let Some(v) = num(&mut t, "queue_ns", 0.0)? {
        s.queue_ns = v;
    }
    if let Some(v) = num(&mut t, "queue_lines", 1.0)? {
        s.queue_lines = v;
    }
    if let Some(v) = t.u32_in("smt", 1, 8)? {
        s.smt = v;
    }
    if let Some(v) = t.u32_in("llc_cpus", 1, super::MAX_CPUS as u32)? {
        s.llc_cpus = v;
    }
    for (i, k) in [
        "core_transfer_ns",
        "llc_transfer_ns",
        "node_transfer_ns",
        "socket_transfer_ns",
        "remote_transfer_ns",
    ]
    .into_iter()
    .enumerate()
    {
        if let Some(v) = num(&mut t, k, 0.0)? {
            s.c2c_ns[i] = v;
        }
    }
    if let Some(v) = t.bool("write_allocate")? {
        s.write_allocate = v;
    }
    t.finish()?;
    Ok(s)
}

/// Write `[memsys]` back where the machine had one (derived values are
/// not written: they follow the other tables).
pub(super) fn write(m: &Machine, t: &mut Table) {
    let s = &m.memsys;
    if !s.explicit {
        return;
    }
    let mut mt = Table::new();
    mt.insert(
        "nodes_per_socket".into(),
        (s.nodes_per_socket as i64).into(),
    );
    mt.insert("dram_ns".into(), s.dram_ns.into());
    mt.insert("node_hop_ns".into(), s.node_hop_ns.into());
    mt.insert("socket_hop_ns".into(), s.socket_hop_ns.into());
    if let Some(rows) = &s.hop_ns {
        let v: Vec<toml::Value> = rows
            .iter()
            .map(|r| toml::Value::Array(r.iter().map(|&x| x.into()).collect()))
            .collect();
        mt.insert("hop_ns".into(), v.into());
    }
    mt.insert("node_gbps".into(), s.node_gbps.into());
    if s.llc_gbps.is_finite() {
        mt.insert("llc_gbps".into(), s.llc_gbps.into());
    }
    mt.insert("link_gbps".into(), s.link_gbps.into());
    mt.insert("links_per_pair".into(), (s.links_per_pair as i64).into());
    if s.port_gbps.is_finite() {
        mt.insert("port_gbps".into(), s.port_gbps.into());
    }
    mt.insert("mlp_lines".into(), s.mlp_lines.into());
    if s.copy_mlp_lines > 0.0 {
        mt.insert("copy_mlp_lines".into(), s.copy_mlp_lines.into());
    }
    if s.write_cost != 1.0 {
        mt.insert("write_cost".into(), s.write_cost.into());
    }
    mt.insert("queue_ns".into(), s.queue_ns.into());
    if s.queue_lines.is_finite() {
        mt.insert("queue_lines".into(), s.queue_lines.into());
    }
    mt.insert("smt".into(), (s.smt as i64).into());
    mt.insert("llc_cpus".into(), (s.llc_cpus as i64).into());
    for (i, k) in [
        "core_transfer_ns",
        "llc_transfer_ns",
        "node_transfer_ns",
        "socket_transfer_ns",
        "remote_transfer_ns",
    ]
    .into_iter()
    .enumerate()
    {
        mt.insert(k.into(), s.c2c_ns[i].into());
    }
    mt.insert("write_allocate".into(), s.write_allocate.into());
    t.insert("memsys".into(), mt.into());
}

impl Machine {
    /// Sockets: nodes / `nodes_per_socket`.
    pub fn sockets(&self) -> usize {
        (self.node_count() / self.memsys.nodes_per_socket.max(1) as usize).max(1)
    }
    /// The socket of a node.
    pub fn socket_of(&self, node: usize) -> usize {
        node / self.memsys.nodes_per_socket.max(1) as usize
    }
    /// Idle load-to-use latency from a CPU of `from` to memory on `to`, ns,
    /// as `mlc --latency_matrix` measures it (a dependent chase, no
    /// queueing). With `[memsys]`: LLC lookup + memory-side latency + the
    /// hop; without: `dram.latency_ns` × SLIT ratio, today's rule.
    pub fn idle_latency_ns(&self, from: usize, to: usize) -> f64 {
        let s = &self.memsys;
        if !s.explicit {
            return self.mem_latency_ns(from, to);
        }
        self.llc_latency_ns() + s.dram_ns + self.hop_ns(from, to)
    }
    /// Extra latency of the hop from `from`'s CPUs to `to`'s memory, ns.
    pub fn hop_ns(&self, from: usize, to: usize) -> f64 {
        let s = &self.memsys;
        if !s.explicit {
            return self.mem_latency_ns(from, to) - self.mem_latency_ns(from, from);
        }
        if let Some(h) = &s.hop_ns {
            return h[from][to];
        }
        if from == to {
            0.0
        } else if self.socket_of(from) == self.socket_of(to) {
            s.node_hop_ns
        } else {
            s.socket_hop_ns
        }
    }
    /// The nearest domain two CPUs share.
    pub fn cpu_domain(&self, a: u64, b: u64) -> Domain {
        let s = &self.memsys;
        let (na, nb) = (self.cpu_node(a).unwrap_or(0), self.cpu_node(b).unwrap_or(0));
        if na != nb {
            return if self.socket_of(na) == self.socket_of(nb) {
                Domain::Socket
            } else {
                Domain::Remote
            };
        }
        // CPUs are numbered node by node, SMT siblings next to each other.
        let first = self.cpu_index.first_of(na);
        let (ra, rb) = (a - first, b - first);
        if ra / s.smt as u64 == rb / s.smt as u64 {
            Domain::Core
        } else if ra / s.llc_cpus as u64 == rb / s.llc_cpus as u64 {
            Domain::Llc
        } else {
            Domain::Node
        }
    }
    /// One-way time for a contended line to move from CPU `a` to CPU `b`,
    /// ns, by the domain they share; without `[memsys]`, today's
    /// `line_transfer_ns` × SLIT ratio between their nodes.
    pub fn c2c_ns(&self, a: u64, b: u64) -> f64 {
        if !self.memsys.explicit {
            let (na, nb) = (self.cpu_node(a).unwrap_or(0), self.cpu_node(b).unwrap_or(0));
            return self.line_transfer_ns(na, nb);
        }
        self.memsys.c2c_ns[self.cpu_domain(a, b) as usize]
    }
}
