//! The `touch` workload: threads first-touch anonymous memory under a
//! memory policy ([ALTIX04] A1, A2; A6). Reports where the pages landed and
//! how much of each thread's memory is remote — the quantity that sets the
//! pace of a tightly synchronised parallel job.

use super::keys::node_ids;
use super::spec as s;
use super::Sim;
use super::{Run, Workload};
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::mm::mempolicy::{alloc_pages, Allocator};
use crate::kernel::mm::{Gfp, MemPolicy, Use};
use crate::machine::Machine;
use crate::report::Record;
use serde_json::json;

/// Rounds in which concurrent threads advance (see `Touch::run`).
const TOUCH_ROUNDS: u64 = 64;

/// One thread's touched memory as the report needs it.
#[derive(Debug, Clone, Copy, Default)]
struct ThreadMem {
    pages: u64,
    /// Pages on the thread's own node.
    own: u64,
    /// Σ pages × distance ratio to the thread's node.
    lat: f64,
}

#[derive(Debug, Clone)]
pub struct Touch {
    /// The CPU each thread runs on.
    pub cpus: Vec<u64>,
    pub bytes_per_thread: u64,
    pub policy: MemPolicy,
}

/// Node ids under `key`, as the policy's node masks hold them.
fn node_list(
    r: &mut TableReader,
    key: &'static str,
    machine: &Machine,
) -> Result<Option<Vec<u32>>, InputError> {
    Ok(node_ids(r, key, machine)?.map(|l| l.into_iter().map(|n| n as u32).collect()))
}

/// The most threads one touch step simulates, as the contention workloads'
/// sweeps (16,384 CPUs): each thread's rounds are simulated, about 0.05 ms
/// of host time apiece with a CPU's node found by table (issue 31), so
/// 16,384 interleaving threads take about a second.
pub const MAX_TOUCH_THREADS: usize = 16384;

/// The most per-node allocations a touch step's rounds may make (threads ×
/// rounds × the nodes each round's share spreads over): 2²⁷ take about 5
/// CPU-seconds. A thread's placement is folded as it lands (pages, pages on
/// its node, pages × distance), so memory does not grow with threads × nodes.
pub const MAX_TOUCH_SHARES: u128 = 1 << 27;

impl Touch {
    /// Keys: `bytes` (per thread), and the threads as `threads = N` (CPUs 0..N),
    /// `cpus = [..]`, or `nodes = [..]` (one thread on every CPU of those
    /// nodes); `policy` with `policy_nodes` for bind/preferred/interleave.
    pub fn from_step(r: &mut TableReader, machine: &Machine) -> Result<Touch, InputError> {
        let bytes_per_thread = r.size("bytes")?.ok_or_else(|| {
            InputError::at(
                "bytes",
                "missing: how much each thread touches, e.g. \"1.8 GB\"",
            )
        })?;
        let threads = r.u64("threads")?;
        let cpus = r.u64_list("cpus")?;
        let nodes = node_list(r, "nodes", machine)?;
        let total = machine.cpu_count();
        let cpus: Vec<u64> = match (threads, cpus, nodes) {
            (Some(t), None, None) => {
                if t == 0 || t > total {
                    return Err(InputError::at(
                        "threads",
                        format!("{t}: the machine has {total} CPUs"),
                    ));
                }
                (0..t).collect()
            }
            (None, Some(c), None) => {
                if let Some(bad) = c.iter().find(|&&c| c >= total) {
                    return Err(InputError::at(
                        "cpus",
                        format!("CPU {bad} does not exist (CPUs 0..{})", total - 1),
                    ));
                }
                c
            }
            (None, None, Some(ns)) => {
                let mut first = vec![0u64; machine.node_count() + 1];
                for (i, n) in machine.nodes.iter().enumerate() {
                    first[i + 1] = first[i] + n.cpus as u64;
                }
                ns.iter()
                    .flat_map(|&n| first[n as usize]..first[n as usize + 1])
                    .collect()
            }
            _ => {
                return Err(InputError::at(
                    "threads",
                    "give exactly one of `threads`, `cpus`, `nodes`",
                ))
            }
        };
        if cpus.is_empty() {
            return Err(InputError::at(
                "nodes",
                "those nodes have no CPUs to run threads",
            ));
        }
        // Each thread is simulated (about 0.05 ms of host time apiece).
        if cpus.len() > MAX_TOUCH_THREADS {
            return Err(InputError::at(
                "threads",
                format!(
                    "{} threads: allowed 1..{MAX_TOUCH_THREADS} (each thread's rounds are \
                     simulated, about 0.05 ms of host time apiece; docs/placement.md)",
                    cpus.len()
                ),
            ));
        }
        let want = bytes_per_thread as u128 * cpus.len() as u128;
        if want > machine.mem_bytes() as u128 {
            return Err(InputError::at(
                "bytes",
                format!(
                    "{} threads x {} is more memory than the machine has ({})",
                    cpus.len(),
                    crate::input::size::format_size(bytes_per_thread),
                    crate::input::size::format_size(machine.mem_bytes())
                ),
            ));
        }
        let set = node_list(r, "policy_nodes", machine)?;
        let all: Vec<u32> = (0..machine.node_count() as u32).collect();
        let name = r.str("policy")?.unwrap_or("local");
        let need = |what: &str| {
            InputError::at(
                "policy_nodes",
                format!("policy `{what}` needs `policy_nodes`"),
            )
        };
        let policy = match name {
            "local" => MemPolicy::Local,
            "round-robin" => MemPolicy::RoundRobin,
            "interleave" => MemPolicy::Interleave(set.unwrap_or(all)),
            "bind" => MemPolicy::Bind(set.ok_or_else(|| need("bind"))?),
            "preferred" => {
                let s = set.ok_or_else(|| need("preferred"))?;
                MemPolicy::Preferred(s[0])
            }
            other => {
                let hint = crate::input::table::nearest(other, MemPolicy::NAMES.iter().copied())
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                return Err(InputError::at(
                    "policy",
                    format!(
                        "`{}` is not a policy{hint}; allowed: {}",
                        crate::error::clip(other, 80),
                        MemPolicy::NAMES.join(", ")
                    ),
                )
                .allowing(MemPolicy::NAMES.join(", ")));
            }
        };
        // An interleave over k nodes splits each round's share over up to k
        // nodes (round-robin: every node; local, bind, preferred: one).
        let spread = match &policy {
            MemPolicy::Interleave(set) => set.len() as u128,
            MemPolicy::RoundRobin => machine.node_count() as u128,
            _ => 1,
        };
        let pages = bytes_per_thread.div_ceil(machine.page_size) as u128;
        // And each round a thread's share is split over up to that many
        // nodes: the allocation calls the rounds make.
        let rounds = TOUCH_ROUNDS as u128;
        let (q, rem) = (pages / rounds, pages % rounds);
        let calls =
            cpus.len() as u128 * (rem * (q + 1).min(spread) + (rounds - rem) * q.min(spread));
        if calls > MAX_TOUCH_SHARES {
            return Err(InputError::at(
                "threads",
                format!(
                    "{} threads × {TOUCH_ROUNDS} rounds over up to {} nodes each (`{}` over \
                     {spread} nodes) = {calls} per-node allocations: allowed at most \
                     {MAX_TOUCH_SHARES} (numasim's bound on a touch step's work, \
                     docs/placement.md); use fewer threads, fewer `policy_nodes` or less \
                     memory per thread",
                    cpus.len(),
                    (q + 1).min(spread),
                    policy.name()
                ),
            ));
        }
        Ok(Touch {
            cpus,
            bytes_per_thread,
            policy,
        })
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let machine = &sim.case.machine;
        let booted = sim.booted()?;
        let pages = booted.mm.pages_for(self.bytes_per_thread);
        let nodes = booted.mm.node_count();
        let mut per_node = vec![0u64; nodes];
        // Threads fault concurrently: every thread advances by 1/TOUCH_ROUNDS
        // of its memory per round, so a full node pushes its overflow onto
        // neighbours while their own threads are still touching, as on a real
        // machine; one thread after another would exaggerate the cascade.
        // Per thread what the report needs, folded in as pages land: pages,
        // pages on its own node, and pages × distance ratio (a placement
        // kept per thread would be threads × nodes of state).
        let mut placed = vec![ThreadMem::default(); self.cpus.len()];
        let mut oom = false;
        'rounds: for round in 0..TOUCH_ROUNDS {
            let share = pages / TOUCH_ROUNDS + u64::from(round < pages % TOUCH_ROUNDS);
            for (t, &cpu) in self.cpus.iter().enumerate() {
                let node = machine.cpu_node(cpu).unwrap_or(0);
                let who = Allocator {
                    task: 1 + t as u32,
                    cpu,
                    node,
                };
                match alloc_pages(
                    &mut booted.mm,
                    &mut booted.cursors,
                    &self.policy,
                    who,
                    share,
                    Gfp::Normal,
                    Use::Anon,
                ) {
                    Ok(p) => {
                        let m = &mut placed[t];
                        for &(n, k) in &p.parts {
                            per_node[n as usize] += k;
                            m.pages += k;
                            if n as usize == node {
                                m.own += k;
                            }
                            m.lat += k as f64 * machine.distances.ratio(node, n as usize);
                        }
                    }
                    Err(_) => {
                        oom = true;
                        break 'rounds;
                    }
                }
            }
        }
        let (mut remote, mut total, mut worst) = (0u64, 0u64, 0.0f64);
        // The slowest thread's mean memory latency relative to all-local.
        let mut slowdown = 1.0f64;
        for m in &placed {
            let off = m.pages - m.own;
            remote += off;
            total += m.pages;
            worst = worst.max(off as f64 / m.pages.max(1) as f64);
            slowdown = slowdown.max(m.lat / m.pages.max(1) as f64);
        }
        let kb = booted.mm.page_size() / 1024;
        let mut out: Vec<Record> = per_node
            .iter()
            .enumerate()
            .map(|(n, &p)| rec.record(&[("node", json!(n))], "touched_kb", "kB", (p * kb) as f64))
            .collect();
        out.push(rec.record(
            &[],
            "job_remote_fraction",
            "fraction",
            if total == 0 {
                0.0
            } else {
                remote as f64 / total as f64
            },
        ));
        out.push(rec.record(&[], "max_thread_remote_fraction", "fraction", worst));
        out.push(rec.record(&[], "job_slowdown", "x", slowdown));
        out.push(rec.record(&[], "oom", "flag", f64::from(u8::from(oom))));
        Ok(out)
    }
}

impl Run for Touch {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Touch::run(self, sim)
    }
}

/// The `touch` workload: its keys, metrics and example, and its reader.
pub const TOUCH: Workload = Workload {
    spec: s::Spec {
        name: "touch",
        about: "threads first-touch memory under a policy; report where it landed",
        params: &[
            s::p(
                "bytes",
                s::Kind::Size,
                "B",
                s::Default::Required,
                s::Range::Text("threads × bytes ≤ the machine's memory"),
                "memory each thread touches",
            ),
            s::p(
                "threads",
                s::Kind::Int,
                "",
                s::Default::Text("give one of threads, cpus, nodes"),
                s::Range::Text("1 .. min(the machine's CPUs, 16384)"),
                "threads on CPUs 0, 1, …",
            ),
            s::p(
                "cpus",
                s::Kind::IntList,
                "",
                s::Default::Text("give one of threads, cpus, nodes"),
                s::Range::Text("CPU ids 0 .. CPUs − 1"),
                "one thread on each listed CPU",
            ),
            s::p(
                "nodes",
                s::Kind::IntList,
                "",
                s::Default::Text("give one of threads, cpus, nodes"),
                s::Range::Text("node ids 0 .. nodes − 1"),
                "one thread on every CPU of the listed nodes",
            ),
            s::p(
                "policy",
                s::Kind::Choice(&["local", "bind", "preferred", "interleave", "round-robin"]),
                "",
                s::Default::Value("\"local\""),
                s::Range::Any,
                "the memory policy (set_mempolicy/numactl)",
            ),
            s::p(
                "policy_nodes",
                s::Kind::IntList,
                "",
                s::Default::Text("all nodes (interleave); required by bind and preferred"),
                s::Range::Text("node ids 0 .. nodes − 1"),
                "the policy's node mask",
            ),
        ],
        one_of: &["threads", "cpus", "nodes"],
        metrics: &[
            s::m(
                "touched_kb",
                "kB",
                "memory placed on each node (row key `node`)",
            ),
            s::m(
                "job_remote_fraction",
                "fraction",
                "share of the job's memory off its threads' nodes",
            ),
            s::m(
                "max_thread_remote_fraction",
                "fraction",
                "the worst thread's remote share",
            ),
            s::m(
                "job_slowdown",
                "x",
                "a synchronised job's slowdown from remote memory",
            ),
            s::m("oom", s::FLAG, "1 if the touch ran out of memory"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example:
            "workload = \"touch\"\nbytes = \"1 GB\"\nnodes = [0, 1]\npolicy = \"interleave\"\n",
        row_keys: &["node"],
    },
    parse: |r, m| Ok(Box::new(Touch::from_step(r, m)?)),
};
