//! Memory micro-benchmarks of the Blue Gene/P paper and their modern
//! counterparts ([BGP-BIGMEM] D1–D15): a streaming copy, random reads,
//! `gettimeofday()` cost, Selfish/FMA noise, LOFAR's ring-buffer copy.
//! Costs come from kernel/mm/memcost.rs; one row per buffer size.

use super::spec as s;
use super::Sim;
use super::{Run, Workload};
use crate::engine::rng::stream;
use crate::error::{Error, InputError};
use crate::input::size::format_size;
use crate::input::table::{value_size, TableReader};
use crate::kernel::mm::memcost;
use crate::kernel::mm::tlb::BufferKind;
use crate::machine::Machine;
use crate::report::Record;
use serde_json::Value as Json;
use toml::Value;

/// Default sampled accesses of the random-read TLB simulation.
pub const DEFAULT_SAMPLES: u64 = 100_000;

/// A buffer size as written (the record's `size` key) and in bytes.
#[derive(Debug, Clone)]
pub struct Size {
    pub label: Json,
    pub bytes: u64,
}

#[derive(Debug, Clone)]
pub enum Step {
    Stream {
        sizes: Vec<Size>,
        zcb: bool,
        hot: u32,
    },
    Random {
        sizes: Vec<Size>,
        read_bytes: u64,
        samples: u64,
        zcb: bool,
        hot: u32,
    },
    Gtod {
        syscall: bool,
    },
    Selfish {
        threshold_us: f64,
        duration_s: f64,
        zcb: bool,
    },
    Ring {
        ring: u64,
        streams: u32,
        block: u64,
        unit: u64,
        zcb: bool,
        hot: u32,
    },
}

fn sizes(r: &mut TableReader, machine: &Machine, min: u64) -> Result<Vec<Size>, InputError> {
    let items: Vec<Value> = match r.raw("size") {
        None => {
            return Err(InputError::at(
                r.key("size"),
                "missing: the buffer size, e.g. size = [\"16 kB\", \"4 MB\"]",
            ))
        }
        Some(Value::Array(a)) => a.clone(),
        Some(v) => vec![v.clone()],
    };
    if items.is_empty() {
        return Err(InputError::at(r.key("size"), "give at least one size"));
    }
    let mem = machine.mem_bytes();
    items
        .iter()
        .map(|v| {
            let bytes = value_size(v).map_err(|e| InputError::at(r.key("size"), e))?;
            if bytes < min || bytes > mem {
                return Err(InputError::at(
                    r.key("size"),
                    format!(
                        "{}: allowed {} .. the machine's memory ({})",
                        format_size(bytes),
                        format_size(min),
                        format_size(mem)
                    ),
                ));
            }
            Ok(Size {
                label: crate::machine::slit_text::toml_to_json(v),
                bytes,
            })
        })
        .collect()
}

fn hot(r: &mut TableReader) -> Result<u32, InputError> {
    match r.u64("hot_pages")? {
        Some(h) if h > 64 => Err(InputError::at(
            r.key("hot_pages"),
            format!("{h}: allowed 0..64"),
        )),
        v => Ok(v.unwrap_or(2) as u32),
    }
}

fn zcb(r: &mut TableReader) -> Result<bool, InputError> {
    Ok(r.bool("zcb")?.unwrap_or(true))
}

impl Step {
    pub fn from_step(
        name: &str,
        r: &mut TableReader,
        machine: &Machine,
    ) -> Result<Option<Step>, InputError> {
        Ok(Some(match name {
            "stream-copy" => Step::Stream {
                sizes: sizes(r, machine, 2 * machine.cpu.cache_line as u64)?,
                zcb: zcb(r)?,
                hot: hot(r)?,
            },
            "random-read" => {
                let read_bytes = match r.u64("read_bytes")? {
                    Some(b) if b == 0 || b > machine.cpu.cache_line as u64 => {
                        return Err(InputError::at(
                            r.key("read_bytes"),
                            format!(
                                "{b}: allowed 1..{} (one cache line)",
                                machine.cpu.cache_line
                            ),
                        ))
                    }
                    v => v.unwrap_or(8),
                };
                let samples = match r.u64("samples")? {
                    // Host time is linear in samples (docs/tlb.md: bounds).
                    Some(s) if !(1000..=1_000_000).contains(&s) => {
                        return Err(InputError::at(
                            r.key("samples"),
                            format!("{s}: allowed 1000..1000000"),
                        ))
                    }
                    v => v.unwrap_or(DEFAULT_SAMPLES),
                };
                Step::Random {
                    sizes: sizes(r, machine, read_bytes)?,
                    read_bytes,
                    samples,
                    zcb: zcb(r)?,
                    hot: hot(r)?,
                }
            }
            "gettimeofday-cost" => Step::Gtod {
                syscall: r
                    .choice("gettimeofday", &[("syscall", true), ("user", false)])?
                    .unwrap_or(true),
            },
            "selfish" => {
                let threshold_us = match r.nonneg_f64("threshold_us")? {
                    Some(t) if t > 1e6 => {
                        return Err(InputError::at(
                            r.key("threshold_us"),
                            format!("{t}: allowed 0 .. 1000000"),
                        ))
                    }
                    v => v.unwrap_or(1.0),
                };
                let duration_s = match r.f64("duration_s")? {
                    Some(d) if !(0.001..=3600.0).contains(&d) => {
                        return Err(InputError::at(
                            r.key("duration_s"),
                            format!("{d}: allowed 0.001 .. 3600"),
                        ))
                    }
                    v => v.unwrap_or(1.0),
                };
                Step::Selfish {
                    threshold_us,
                    duration_s,
                    zcb: zcb(r)?,
                }
            }
            "ring-copy" => {
                let ring = r.size("ring")?.unwrap_or(1536 << 20);
                if ring == 0 || ring > machine.mem_bytes() {
                    return Err(InputError::at(
                        r.key("ring"),
                        format!(
                            "{}: allowed 1 byte .. the machine's memory ({})",
                            format_size(ring),
                            format_size(machine.mem_bytes())
                        ),
                    ));
                }
                // LOFAR's 16-bit station data: 244 subbands, 16 samples
                // of 8 bytes per subband per packet (docs/tlb.md).
                let streams = match r.u64("streams")? {
                    Some(s) if s == 0 || s > 65_536 => {
                        return Err(InputError::at(
                            r.key("streams"),
                            format!("{s}: allowed 1..65536"),
                        ))
                    }
                    v => v.unwrap_or(244) as u32,
                };
                let block = match r.u64("block_bytes")? {
                    Some(b) if b == 0 || b > 1 << 20 => {
                        return Err(InputError::at(
                            r.key("block_bytes"),
                            format!("{b}: allowed 1..1048576"),
                        ))
                    }
                    v => v.unwrap_or(128),
                };
                let unit = match r.u64("copy_unit_bytes")? {
                    Some(u) if u == 0 || u > block => {
                        return Err(InputError::at(
                            r.key("copy_unit_bytes"),
                            format!(
                                "{u}: allowed 1..{block} (block_bytes: a copy stays in one row)"
                            ),
                        ))
                    }
                    v => v.unwrap_or(8.min(block)),
                };
                if ring / streams as u64 <= block {
                    return Err(InputError::at(
                        r.key("streams"),
                        "each stream's part of the ring must hold more than one block (block_bytes)",
                    ));
                }
                Step::Ring {
                    ring,
                    streams,
                    block,
                    unit,
                    zcb: zcb(r)?,
                    hot: hot(r)?,
                }
            }
            _ => return Ok(None),
        }))
    }

    /// Buffers a ZCB maps (key, kind, bytes), for the Big Memory check.
    fn zcb_buffers(&self) -> Vec<(&'static str, BufferKind, u64)> {
        match self {
            Step::Stream {
                sizes, zcb: true, ..
            }
            | Step::Random {
                sizes, zcb: true, ..
            } => sizes
                .iter()
                .map(|s| ("size", BufferKind::Anon, s.bytes))
                .collect(),
            Step::Ring {
                ring, zcb: true, ..
            } => vec![("ring", BufferKind::IoRing, *ring)],
            _ => Vec::new(),
        }
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let m = &sim.case.machine;
        let k = &sim.case.kernel;
        // A ZCB's malloc of a buffer Big Memory cannot hold fails (ENOMEM,
        // no fallback to paged memory: D9).
        for (key, kind, bytes) in self.zcb_buffers() {
            crate::kernel::mm::tlb::buffer_in_bigmem(m, k, true, kind, bytes).map_err(|e| {
                InputError::at(
                    key,
                    format!(
                        "{}: a compute binary cannot map it in Big Memory ({e}); \
                         raise kernel.bigmem_mb or set zcb = false",
                        format_size(bytes)
                    ),
                )
            })?;
        }
        let seed = sim.case.seed;
        let mut out = Vec::new();
        match self {
            Step::Stream { sizes, zcb, hot } => {
                for (i, s) in sizes.iter().enumerate() {
                    let r = memcost::stream_copy(
                        m,
                        k,
                        s.bytes,
                        *zcb,
                        *hot,
                        stream(seed, "tlb-stream", i as u64),
                    );
                    let row = [("size", s.label.clone())];
                    out.push(rec.record(&row, "copy_mbps", "MB/s", r.mbps));
                    out.push(rec.record(&row, "tlb_misses_per_pass", "count", r.misses_per_pass));
                }
            }
            Step::Random {
                sizes,
                read_bytes,
                samples,
                zcb,
                hot,
            } => {
                for (i, s) in sizes.iter().enumerate() {
                    let r = memcost::random_read(
                        m,
                        k,
                        s.bytes,
                        *read_bytes,
                        *zcb,
                        *hot,
                        *samples,
                        stream(seed, "tlb-random", i as u64),
                    );
                    let row = [("size", s.label.clone())];
                    out.push(rec.record(&row, "random_mbps", "MB/s", r.mbps));
                    out.push(rec.record(&row, "ns_per_read", "ns", r.ns_per_read));
                    out.push(rec.record(&row, "tlb_miss_rate", "fraction", r.tlb_miss_rate));
                }
            }
            Step::Gtod { syscall } => {
                let ns = memcost::gettimeofday_ns(m, k, *syscall);
                out.push(rec.record(&[], "time_per_call_us", "us", ns / 1e3));
            }
            Step::Selfish {
                threshold_us,
                duration_s,
                zcb,
            } => {
                let s = memcost::selfish(m, k, *zcb, threshold_us * 1e3, *duration_s);
                out.push(rec.record(&[], "noise_cpu_pct", "%", s.noise_cpu_pct));
                out.push(rec.record(&[], "detours_per_s", "1/s", s.detours_per_s));
                out.push(rec.record(&[], "fpu_gflops", "Gflop/s", s.fpu_gflops));
            }
            Step::Ring {
                ring,
                streams,
                block,
                unit,
                zcb,
                hot,
            } => {
                let r = memcost::ring_copy(
                    m,
                    k,
                    *ring,
                    *streams,
                    *block,
                    *unit,
                    *zcb,
                    *hot,
                    stream(seed, "tlb-ring", 0),
                );
                out.push(rec.record(&[], "memcpy_mbps", "MB/s", r.mbps));
                out.push(rec.record(&[], "tlb_miss_rate", "fraction", r.tlb_miss_rate));
                out.push(rec.record(&[], "tlb_misses_per_block", "count", r.misses_per_block));
                out.push(rec.record(&[], "tlb_miss_ns", "ns", r.miss_cost_ns));
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

/// The `stream-copy` workload: its keys, metrics and example, and its reader.
pub const STREAM_COPY: Workload = Workload {
    spec: s::Spec {
        name: "stream-copy",
        about: "copy one half of a buffer to the other, pass after pass (TLB, prefetch, tick)",
        params: &[s::SIZES, s::ZCB, s::HOT],
        one_of: &[],
        metrics: &[
            s::m("copy_mbps", "MB/s", "copy bandwidth (row key `size`)"),
            s::m("tlb_misses_per_pass", "count", "TLB misses per pass"),
        ],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"stream-copy\"\nsize = [\"16 kB\", \"64 MB\"]\n",
        row_keys: &[],
    },
    parse: |r, m| parse("stream-copy", r, m),
};

/// The `random-read` workload: its keys, metrics and example, and its reader.
pub const RANDOM_READ: Workload = Workload {
    spec: s::Spec {
        name: "random-read",
        about: "random reads within a buffer: caches and TLB misses (sampled TLB)",
        params: &[
            s::p(
                "read_bytes",
                s::Kind::Int,
                "B",
                s::Default::Value("8"),
                s::Range::Text("1 .. the cache line"),
                "bytes per read",
            ),
            s::p(
                "samples",
                s::Kind::Int,
                "",
                s::Default::Value("100000"),
                s::Range::Int(1000, 1_000_000),
                "sampled accesses of the TLB simulation",
            ),
            s::SIZES,
            s::ZCB,
            s::HOT,
        ],
        one_of: &[],
        metrics: &[
            s::m("random_mbps", "MB/s", "read bandwidth (row key `size`)"),
            s::m("ns_per_read", "ns", "mean time per read"),
            s::m("tlb_miss_rate", "fraction", "TLB misses per read"),
        ],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"random-read\"\nsize = [\"1 MB\", \"256 MB\"]\n",
        row_keys: &[],
    },
    parse: |r, m| parse("random-read", r, m),
};

/// The `gettimeofday-cost` workload: its keys, metrics and example, and its reader.
pub const GETTIMEOFDAY_COST: Workload = Workload {
    spec: s::Spec {
        name: "gettimeofday-cost",
        about: "one core calls gettimeofday() as a system call or in user space",
        params: &[s::p(
            "gettimeofday",
            s::Kind::Choice(&["syscall", "user"]),
            "",
            s::Default::Value("\"syscall\""),
            s::Range::Any,
            "how the time is read",
        )],
        one_of: &[],
        metrics: &[s::m("time_per_call_us", "us", "time of one call")],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"gettimeofday-cost\"\n",
        row_keys: &[],
    },
    parse: |r, m| parse("gettimeofday-cost", r, m),
};

/// The `selfish` workload: its keys, metrics and example, and its reader.
pub const SELFISH: Workload = Workload {
    spec: s::Spec {
        name: "selfish",
        about: "Selfish detour benchmark and an L1-resident FMA loop: OS noise",
        params: &[
            s::p(
                "threshold_us",
                s::Kind::Float,
                "us",
                s::Default::Value("1.0"),
                s::Range::Float(0.0, 1e6),
                "a gap longer than this is a detour",
            ),
            s::p(
                "duration_s",
                s::Kind::Float,
                "s",
                s::Default::Value("1.0"),
                s::Range::Float(0.001, 3600.0),
                "simulated time",
            ),
            s::ZCB,
        ],
        one_of: &[],
        metrics: &[
            s::m("noise_cpu_pct", "%", "share of time in detours"),
            s::m("detours_per_s", "1/s", "detours per second"),
            s::m("fpu_gflops", "Gflop/s", "the FMA loop's rate"),
        ],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"selfish\"\n",
        row_keys: &[],
    },
    parse: |r, m| parse("selfish", r, m),
};

/// The `ring-copy` workload: its keys, metrics and example, and its reader.
pub const RING_COPY: Workload = Workload {
    spec: s::Spec {
        name: "ring-copy",
        about: "LOFAR: copy blocks into the rows of a ring buffer (a TLB miss per row visit)",
        params: &[
            s::p(
                "ring",
                s::Kind::Size,
                "B",
                s::Default::Value("\"1536 MiB\""),
                s::Range::Text("1 byte .. the machine's memory"),
                "the ring buffer",
            ),
            s::p(
                "streams",
                s::Kind::Int,
                "",
                s::Default::Value("244"),
                s::Range::Int(1, 65_536),
                "rows (subbands); ring / streams > block_bytes",
            ),
            s::p(
                "block_bytes",
                s::Kind::Int,
                "B",
                s::Default::Value("128"),
                s::Range::Int(1, 1_048_576),
                "bytes copied into a row per visit",
            ),
            s::p(
                "copy_unit_bytes",
                s::Kind::Int,
                "B",
                s::Default::Text("min(8, block_bytes)"),
                s::Range::Text("1 .. block_bytes"),
                "bytes per load/store",
            ),
            s::ZCB,
            s::HOT,
        ],
        one_of: &[],
        metrics: &[
            s::m("memcpy_mbps", "MB/s", "copy bandwidth"),
            s::m("tlb_miss_rate", "fraction", "TLB misses per access"),
            s::m("tlb_misses_per_block", "count", "TLB misses per block"),
            s::m("tlb_miss_ns", "ns", "cost of one TLB miss"),
        ],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"ring-copy\"\nring = \"256 MB\"\n",
        row_keys: &[],
    },
    parse: |r, m| parse("ring-copy", r, m),
};
