//! PCI workloads ([ALTIX04] G1–G4; docs/pci.md): `pio-read` times PIO
//! reads, `pio-flush` times the ways of ordering posted PIO writes,
//! `dma-iops` drives I/Os against consistent DMA rings placed locally or
//! remotely. Each sweeps the lists its step gives, one row per point.

use super::keys::bounded;
use super::spec as s;
use super::Sim;
use super::{Run, Workload};
use crate::drivers::pci::dma::{self, DmaAlloc};
use crate::drivers::pci::node_in;
use crate::drivers::pci::pio::{self, Load, MmiobWait, Op, PioFlush, PioRead};
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::machine::Machine;
use crate::report::Record;
use rayon::prelude::*;
use serde_json::json;
use toml::Value;

/// Where the device sits and which CPU drives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub device_node: usize,
    pub cpu_node: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    PioRead {
        at: Placement,
        pio: Vec<PioRead>,
        load: Vec<Load>,
        ops: u32,
        dma_nodes: Vec<usize>,
    },
    PioFlush {
        at: Placement,
        methods: Vec<PioFlush>,
        writes: u32,
        mmiob_wait: MmiobWait,
        load: Vec<Load>,
        ops: u32,
        dma_nodes: Vec<usize>,
    },
    DmaIops {
        at: Placement,
        dma_alloc: Vec<DmaAlloc>,
        remote_nodes: Vec<usize>,
        io_size: u64,
        queue_depth: Vec<u32>,
        ios: u32,
        device_ns: f64,
        host_ns: f64,
        isr_reads: u32,
        isr_flush_reads: u32,
        submit_reads: u32,
    },
}

/// A name or a list of names from `options`; `default` when absent.
fn names<T: Copy>(
    r: &mut TableReader,
    key: &'static str,
    options: &[(&'static str, T)],
    default: &[T],
) -> Result<Vec<T>, InputError> {
    let allowed = || {
        options
            .iter()
            .map(|(n, _)| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let one = |v: &Value| -> Result<T, String> {
        let Value::String(s) = v else {
            return Err(format!(
                "expected one of {}, found {}",
                allowed(),
                crate::input::table::describe(v)
            ));
        };
        options
            .iter()
            .find(|(n, _)| n == s)
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let hint = crate::input::table::nearest(s, options.iter().map(|(n, _)| *n))
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                format!(
                    "`{}` is not allowed{hint}; allowed: {}",
                    crate::error::clip(s, 80),
                    allowed()
                )
            })
    };
    let list = match r.raw(key) {
        None => return Ok(default.to_vec()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| one(v).map_err(|m| format!("item {i}: {m}")))
            .collect::<Result<Vec<T>, String>>(),
        Some(v) => one(v).map(|t| vec![t]),
    }
    .map_err(|m| InputError::at(r.key(key), m).allowing(allowed()))?;
    if list.is_empty() {
        return Err(InputError::at(r.key(key), "give at least one").allowing(allowed()));
    }
    Ok(list)
}

fn ns(r: &mut TableReader, key: &'static str, d: f64) -> Result<f64, InputError> {
    match r.nonneg_f64(key)? {
        Some(x) if x > 1e9 => Err(InputError::at(
            r.key(key),
            format!("{x} ns: allowed 0 .. 1000000000 (1 s)"),
        )),
        v => Ok(v.unwrap_or(d)),
    }
}

fn placement(r: &mut TableReader, m: &Machine) -> Result<Placement, InputError> {
    let device_node = match r.u64("device_node")? {
        Some(n) => node_in(m, &r.key("device_node"), n)?,
        None => 0,
    };
    let cpu_node = match r.u64("cpu")? {
        Some(c) => m.cpu_node(c).ok_or_else(|| {
            InputError::at(
                r.key("cpu"),
                format!("CPU {c} does not exist: allowed 0..{}", m.cpu_count() - 1),
            )
        })?,
        None => device_node,
    };
    Ok(Placement {
        device_node,
        cpu_node,
    })
}

fn node_list(
    r: &mut TableReader,
    key: &'static str,
    m: &Machine,
) -> Result<Option<Vec<usize>>, InputError> {
    let Some(list) = r.u64_list(key)? else {
        return Ok(None);
    };
    if list.is_empty() {
        return Err(InputError::at(r.key(key), "give at least one node"));
    }
    let k = r.key(key);
    list.into_iter()
        .map(|n| node_in(m, &k, n))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Events a row may simulate (DMA bursts, mostly): about a second of CPU
/// at most, whatever the bus and sizes (docs/pci.md, Speed).
pub const MAX_BURSTS: u128 = 1 << 22;

/// Refuse `ops` operations beside a busy master when they would take more
/// than [`MAX_BURSTS`] of its bursts: an upper estimate of one operation
/// (every path at the machine's largest distance) over one burst's time.
fn bound_busy_ops(
    r: &TableReader,
    m: &Machine,
    ops: u32,
    writes: u32,
    busy: bool,
) -> Result<(), InputError> {
    if !busy {
        return Ok(());
    }
    let p = &m.pci;
    let far = (0..m.node_count())
        .map(|n| m.mem_latency_ns(0, n))
        .fold(0.0, f64::max);
    let op_ns = 2.0 * m.chipset_read_ns()
        + 4.0 * far
        + p.pio_read_ns
        + p.flush_ns
        + 4.0 * p.bridge_ns
        + p.uc_store_ns * (writes as f64 + 2.0)
        + (writes as f64 + 2.0) * p.pio_bytes() as f64 / p.bytes_per_s() * 1e9
        + 2_000.0;
    let burst_ns = (p.burst_bytes() as f64 / p.bytes_per_s() * 1e9).max(1e-3);
    let bursts = (ops as f64 * (op_ns / burst_ns + 1.0)).ceil();
    if bursts > MAX_BURSTS as f64 {
        return Err(InputError::at(
            r.key("ops"),
            format!("{ops} operations beside a busy bus are about {bursts:.0} DMA bursts: allowed at most {MAX_BURSTS} (fewer ops, or a longer latency_timer)"),
        ));
    }
    Ok(())
}

/// The nearest node at each distance from `from` other than local, in
/// order of distance: one remote placement per hop count.
pub fn one_node_per_distance(m: &Machine, from: usize) -> Vec<usize> {
    let mut seen: Vec<(u32, usize)> = Vec::new();
    for n in 0..m.node_count() {
        let d = m.distances.get(from, n);
        if n != from && !seen.iter().any(|&(sd, _)| sd == d) {
            seen.push((d, n));
        }
    }
    seen.sort();
    seen.into_iter().map(|(_, n)| n).collect()
}

impl Step {
    pub fn from_step(
        name: &str,
        r: &mut TableReader,
        m: &Machine,
    ) -> Result<Option<Step>, InputError> {
        let all: Vec<usize> = (0..m.node_count()).collect();
        let step = match name {
            "pio-read" => Step::PioRead {
                at: placement(r, m)?,
                pio: names(
                    r,
                    "pio",
                    PioRead::NAMES,
                    &[PioRead::Normal, PioRead::Relaxed],
                )?,
                load: names(r, "load", Load::NAMES, &[Load::Idle])?,
                ops: bounded(r, "ops", 200, 1, 100_000)? as u32,
                dma_nodes: node_list(r, "dma_nodes", m)?.unwrap_or(all),
            },
            "pio-flush" => Step::PioFlush {
                at: placement(r, m)?,
                methods: names(
                    r,
                    "pio_flush",
                    PioFlush::NAMES,
                    &[PioFlush::PioRead, PioFlush::RelaxedRead, PioFlush::Mmiob],
                )?,
                writes: bounded(r, "writes", 5, 0, 1000)? as u32,
                mmiob_wait: r
                    .choice("mmiob_wait", MmiobWait::NAMES)?
                    .unwrap_or(MmiobWait::Udelay),
                load: names(r, "load", Load::NAMES, &[Load::Idle])?,
                ops: bounded(r, "ops", 200, 1, 100_000)? as u32,
                dma_nodes: node_list(r, "dma_nodes", m)?.unwrap_or(all),
            },
            "dma-iops" => {
                let at = placement(r, m)?;
                let dma_alloc = names(
                    r,
                    "dma_alloc",
                    DmaAlloc::NAMES,
                    &[DmaAlloc::Local, DmaAlloc::Remote],
                )?;
                let remote_nodes = match node_list(r, "remote_nodes", m)? {
                    Some(l) => {
                        if let Some(&n) = l.iter().find(|&&n| n == at.device_node) {
                            return Err(InputError::at(
                                r.key("remote_nodes"),
                                format!("node {n} is the device's node, not a remote one"),
                            ));
                        }
                        l
                    }
                    None => one_node_per_distance(m, at.device_node),
                };
                if dma_alloc.contains(&DmaAlloc::Remote) && remote_nodes.is_empty() {
                    return Err(InputError::at(
                        r.key("dma_alloc"),
                        "`remote` needs a second node; the machine has one",
                    ));
                }
                let io_size = r.size("io_size")?.unwrap_or(4096);
                if !(1..=16 << 20).contains(&io_size) {
                    return Err(InputError::at(
                        r.key("io_size"),
                        format!("{io_size} bytes: allowed 1 byte .. 16 MiB"),
                    ));
                }
                let queue_depth: Vec<u32> = match r.raw("queue_depth") {
                    None => vec![1],
                    Some(Value::Array(_)) => r.u64_list("queue_depth")?.unwrap_or_default(),
                    Some(_) => vec![r.u64("queue_depth")?.unwrap_or(1)],
                }
                .into_iter()
                .map(|q| {
                    if (1..=256).contains(&q) {
                        Ok(q as u32)
                    } else {
                        Err(InputError::at(
                            r.key("queue_depth"),
                            format!("{q}: allowed 1..256"),
                        ))
                    }
                })
                .collect::<Result<_, _>>()?;
                if queue_depth.is_empty() {
                    return Err(InputError::at(r.key("queue_depth"), "give at least one"));
                }
                let ios = bounded(r, "ios", 2000, 1, 100_000)? as u32;
                let qmax = *queue_depth.iter().max().unwrap_or(&1);
                let bursts = ios as u128 * io_size.div_ceil(m.pci.burst_bytes().max(1)) as u128;
                if bursts > MAX_BURSTS {
                    return Err(InputError::at(
                        r.key("ios"),
                        format!("{ios} I/Os of {io_size} bytes are {bursts} DMA bursts: allowed at most {MAX_BURSTS} (fewer or smaller I/Os)"),
                    ));
                }
                if ios <= qmax {
                    return Err(InputError::at(
                        r.key("ios"),
                        format!("{ios}: must exceed the largest queue_depth ({qmax}) to measure a steady state"),
                    ));
                }
                Step::DmaIops {
                    at,
                    dma_alloc,
                    remote_nodes,
                    io_size,
                    queue_depth,
                    ios,
                    device_ns: ns(r, "device_ns", 5000.0)?,
                    host_ns: ns(r, "host_ns", 5000.0)?,
                    isr_reads: bounded(r, "isr_reads", 0, 0, 64)? as u32,
                    isr_flush_reads: bounded(r, "isr_flush_reads", 0, 0, 64)? as u32,
                    submit_reads: bounded(r, "submit_reads", 0, 0, 64)? as u32,
                }
            }
            _ => return Ok(None),
        };
        match &step {
            Step::PioRead { load, ops, .. } => {
                bound_busy_ops(r, m, *ops, 0, load.contains(&Load::Busy))?
            }
            Step::PioFlush {
                load, ops, writes, ..
            } => bound_busy_ops(r, m, *ops, *writes, load.contains(&Load::Busy))?,
            Step::DmaIops { .. } => {}
        }
        Ok(Some(step))
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let m = &sim.case.machine;
        let seed = sim.case.seed;
        let setup =
            |at: &Placement, load: Load, ops: u32, dma_nodes: &[usize], mmiob_wait: MmiobWait| {
                pio::Setup {
                    device_node: at.device_node,
                    cpu_node: at.cpu_node,
                    load,
                    dma_nodes: dma_nodes.to_vec(),
                    ops,
                    mmiob_wait,
                    seed,
                }
            };
        let mut out = Vec::new();
        match self {
            Step::PioRead {
                at,
                pio,
                load,
                ops,
                dma_nodes,
            } => {
                let pts: Vec<(PioRead, Load)> = pio
                    .iter()
                    .flat_map(|&p| load.iter().map(move |&l| (p, l)))
                    .collect();
                let res: Vec<_> = pts
                    .par_iter()
                    .map(|&(p, l)| {
                        pio::simulate(
                            m,
                            &setup(at, l, *ops, dma_nodes, MmiobWait::Udelay),
                            Op::Read(p),
                        )
                    })
                    .collect();
                for (&(p, l), r) in pts.iter().zip(res) {
                    let row = [("pio", json!(p.name())), ("load", json!(l.name()))];
                    out.push(rec.record(&row, "time_ns", "ns", r.mean_ns));
                    out.push(rec.record(&row, "time_max_ns", "ns", r.max_ns));
                    out.push(rec.record(&row, "dma_mbps", "MB/s", r.dma_mbps));
                }
            }
            Step::PioFlush {
                at,
                methods,
                writes,
                mmiob_wait,
                load,
                ops,
                dma_nodes,
            } => {
                let mut pts: Vec<(Option<PioFlush>, Load)> = Vec::new();
                for &l in load {
                    pts.extend(methods.iter().map(|&f| (Some(f), l)));
                    pts.push((None, l));
                }
                let res: Vec<_> = pts
                    .par_iter()
                    .map(|&(f, l)| {
                        // None: one poll of the hub's register with nothing
                        // pending, the "(local chipset read alone)" row.
                        let op = match f {
                            Some(method) => Op::Flush {
                                method,
                                writes: *writes,
                            },
                            None => Op::Flush {
                                method: PioFlush::Mmiob,
                                writes: 0,
                            },
                        };
                        pio::simulate(m, &setup(at, l, *ops, dma_nodes, *mmiob_wait), op)
                    })
                    .collect();
                for (&(f, l), r) in pts.iter().zip(res) {
                    match f {
                        Some(f) => {
                            let row = [("pio_flush", json!(f.name())), ("load", json!(l.name()))];
                            out.push(rec.record(&row, "time_ns", "ns", r.mean_ns));
                        }
                        None => {
                            let row = [("load", json!(l.name()))];
                            out.push(rec.record(&row, "chipset_read_ns", "ns", r.mean_ns));
                        }
                    }
                }
            }
            Step::DmaIops {
                at,
                dma_alloc,
                remote_nodes,
                io_size,
                queue_depth,
                ios,
                device_ns,
                host_ns,
                isr_reads,
                isr_flush_reads,
                submit_reads,
            } => {
                let mut pts: Vec<(DmaAlloc, usize, u32)> = Vec::new();
                for &q in queue_depth {
                    for &a in dma_alloc {
                        match a {
                            DmaAlloc::Local => pts.push((a, at.device_node, q)),
                            DmaAlloc::Remote => pts.extend(remote_nodes.iter().map(|&n| (a, n, q))),
                        }
                    }
                }
                let res: Vec<_> = pts
                    .par_iter()
                    .map(|&(_, ring_node, q)| {
                        dma::simulate(
                            m,
                            &dma::Setup {
                                device_node: at.device_node,
                                cpu_node: at.cpu_node,
                                ring_node,
                                io_size: *io_size,
                                queue_depth: q,
                                ios: *ios,
                                device_ns: *device_ns,
                                host_ns: *host_ns,
                                isr_reads: *isr_reads,
                                isr_flush_reads: *isr_flush_reads,
                                submit_reads: *submit_reads,
                            },
                        )
                    })
                    .collect();
                for (&(a, n, q), r) in pts.iter().zip(res) {
                    let row = [
                        ("dma_alloc", json!(a.name())),
                        ("ring_node", json!(n)),
                        ("distance", json!(m.distances.get(at.device_node, n))),
                        ("queue_depth", json!(q)),
                    ];
                    out.push(rec.record(&row, "iops", "1/s", r.iops));
                    out.push(rec.record(&row, "io_latency_us", "us", r.latency_us));
                }
            }
        }
        Ok(out)
    }
}

/// The reader of each workload of this family.
fn parse(name: &str, r: &mut TableReader, m: &Machine) -> Result<Box<dyn Run>, InputError> {
    super::family_step(name, Step::from_step(name, r, m)?)
}

impl Run for Step {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Step::run(self, sim)
    }
}

/// The `pio-read` workload: its keys, metrics and example, and its reader.
pub const PIO_READ: Workload = Workload {
    spec: s::Spec {
            name: "pio-read",
            about: "a CPU times PIO reads of a device register, normal (DMA flushed after the read, sn2) or relaxed, on an idle bus or beside a DMA stream",
            params: &[
                s::PCI_DEVICE_NODE,
                s::PCI_CPU,
                s::p("pio", s::Kind::StrList, "", s::Default::Value("[\"normal\", \"relaxed\"]"), s::Range::Text("`normal`, `relaxed` (a name or a list)"), "read routine: `readX()` or `readX_relaxed()`"),
                s::PCI_LOAD,
                s::PCI_OPS,
                s::PCI_DMA_NODES,
            ],
            one_of: &[],
            metrics: &[
                s::m("time_ns", "ns", "mean time of one read (rows `pio`, `load`)"),
                s::m("time_max_ns", "ns", "slowest read"),
                s::m("dma_mbps", "MB/s", "background DMA written to memory meanwhile"),
            ],
            example_machine: "altix-512",
            example_kernel: "",
            example: "workload = \"pio-read\"\nload = [\"idle\", \"busy\"]\nops = 50\n",
            row_keys: &[],
    },
    parse: |r, m| parse("pio-read", r, m),
};

/// The `pio-flush` workload: its keys, metrics and example, and its reader.
pub const PIO_FLUSH: Workload = Workload {
    spec: s::Spec {
            name: "pio-flush",
            about: "a CPU posts PIO writes and orders them: a PIO read, a relaxed read, or sn_mmiob() polling the local hub",
            params: &[
                s::PCI_DEVICE_NODE,
                s::PCI_CPU,
                s::p("pio_flush", s::Kind::StrList, "", s::Default::Value("[\"pio-read\", \"relaxed-read\", \"mmiob\"]"), s::Range::Text("`pio-read`, `relaxed-read`, `mmiob` (a name or a list)"), "how the writes are ordered"),
                s::p("writes", s::Kind::Int, "", s::Default::Value("5"), s::Range::Int(0, 1000), "posted writes before the ordering step"),
                s::p("mmiob_wait", s::Kind::Str, "", s::Default::Value("\"udelay\""), s::Range::Text("`udelay` (2.6.0 to 2.6.7-rc2), `cpu-relax` (2.6.7-rc3 on)"), "what `sn_mmiob()` does between polls of the hub's register"),
                s::PCI_LOAD,
                s::PCI_OPS,
                s::PCI_DMA_NODES,
            ],
            one_of: &[],
            metrics: &[
                s::m("time_ns", "ns", "mean time of the writes and their ordering (rows `pio_flush`, `load`)"),
                s::m("chipset_read_ns", "ns", "one poll of the local hub's register with nothing pending"),
            ],
            example_machine: "altix-512",
            example_kernel: "",
            example: "workload = \"pio-flush\"\nops = 50\n",
            row_keys: &[],
    },
    parse: |r, m| parse("pio-flush", r, m),
};

/// The `dma-iops` workload: its keys, metrics and example, and its reader.
pub const DMA_IOPS: Workload = Workload {
    spec: s::Spec {
            name: "dma-iops",
            about: "a storage adapter drives I/Os against command/status rings from pci_alloc_consistent() on its node or a remote one",
            params: &[
                s::PCI_DEVICE_NODE,
                s::PCI_CPU,
                s::p("dma_alloc", s::Kind::StrList, "", s::Default::Value("[\"local\", \"remote\"]"), s::Range::Text("`local`, `remote` (a name or a list)"), "where the rings are: the device's node or each of `remote_nodes`"),
                s::p("remote_nodes", s::Kind::IntList, "", s::Default::Text("the nearest node at each distance from the device"), s::Range::Text("node ids other than the device's"), "ring nodes for `remote`, one row each"),
                s::p("io_size", s::Kind::Size, "B", s::Default::Value("\"4 KiB\""), s::Range::Text("1 byte .. 16 MiB"), "data each I/O DMA-writes into memory"),
                s::p("queue_depth", s::Kind::Counts, "", s::Default::Value("1"), s::Range::Int(1, 256), "I/Os outstanding, one row each"),
                s::p("ios", s::Kind::Int, "", s::Default::Value("2000"), s::Range::Int(1, 100_000), "I/Os completed; more than the largest queue_depth"),
                s::p("device_ns", s::Kind::Float, "ns", s::Default::Value("5000.0"), s::Range::Float(0.0, 1e9), "the adapter's processing per command"),
                s::p("host_ns", s::Kind::Float, "ns", s::Default::Value("5000.0"), s::Range::Float(0.0, 1e9), "CPU time per completion (interrupt, midlayer, next submission)"),
                s::p("isr_reads", s::Kind::Int, "", s::Default::Value("0"), s::Range::Int(0, 64), "relaxed PIO reads of adapter registers per interrupt, each behind the bus traffic (qla1280: 4)"),
                s::p("isr_flush_reads", s::Kind::Int, "", s::Default::Value("0"), s::Range::Int(0, 64), "flushing PIO reads (`readw` on sn2: the read, then sn_dma_flush()) per interrupt, after the relaxed ones (qla1280: 1)"),
                s::p("submit_reads", s::Kind::Int, "", s::Default::Value("0"), s::Range::Int(0, 64), "relaxed PIO reads after each doorbell write, the CPU waiting for each (qla1280: 1)"),
            ],
            one_of: &[],
            metrics: &[
                s::m("iops", "1/s", "I/Os per second (rows `dma_alloc`, `ring_node`, `distance`, `queue_depth`)"),
                s::m("io_latency_us", "us", "mean time from writing a command to handling its completion"),
            ],
            example_machine: "altix-512",
            example_kernel: "",
            example: "workload = \"dma-iops\"\nremote_nodes = [1, 255]\nios = 200\n",
            row_keys: &["ring_node", "distance"],
    },
    parse: |r, m| parse("dma-iops", r, m),
};
