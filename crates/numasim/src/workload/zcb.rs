//! The `zcb` workload: a Zepto compute binary's memory calls against the
//! Big Memory chunk manager ([BGP-BIGMEM] D6–D12, kernel/mm/bigmem.rs).
//!
//! ```toml
//! [kernel]
//! bigmem_mb = 1792
//! [[run]]
//! workload = "zcb"
//! ops = ["exec 16MB 4MB 8MB", "brk 64MB", "mmap 512MB", "mmap 256MB",
//!        "munmap 0", "mmap-file 32MB", "timeslice 3", "ptrace"]
//! ```
//!
//! Operations, in order (sizes as elsewhere: `16MB`, `"1 GiB"` without the
//! space):
//! - `exec TEXT [DATA [STACK]]`: must come first; stack defaults to 8 MiB;
//! - `brk SIZE`: set the heap to SIZE bytes (grows or shrinks in place);
//! - `mmap SIZE`: anonymous private mapping; numbered 0, 1, … in order;
//! - `mmap-file SIZE`: a file-backed mapping (paged memory);
//! - `munmap N [OFFSET SIZE]`: unmap mmap number N, or part of it;
//! - `timeslice [K]`: K times: schedule in, touch Big Memory, schedule out;
//! - `ptrace`: a tracer reads the process (`access_process_vm()`);
//! - `fork`, `mprotect`: refused for a ZCB (a scenario error, exit 2).
//!
//! `zcb = false` runs the same calls as an ordinary binary: everything is
//! paged, and fork/mprotect are allowed.

use super::spec as s;
use super::Sim;
use super::{Run, Workload};
use crate::error::{Error, InputError};
use crate::input::size::parse_size;
use crate::input::table::TableReader;
use crate::kernel::mm::bigmem::{
    BigMemArea, BigMemError, ElfImage, Mapping, DEFAULT_STACK_BYTES, EF_ZEPTO_COMPUTE,
};
use crate::report::Record;

/// Most operations in one step (keeps the loop and the message short).
const MAX_OPS: usize = 100_000;
/// Most time slices in one `timeslice` op.
const MAX_SLICES: u64 = 1_000_000;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Exec { text: u64, data: u64, stack: u64 },
    Brk(u64),
    Mmap(u64),
    MmapFile(u64),
    Munmap { n: usize, part: Option<(u64, u64)> },
    Timeslice(u64),
    Ptrace,
    Fork,
    Mprotect,
}

const SYNTAX: &str = "allowed: `exec TEXT [DATA [STACK]]`, `brk SIZE`, `mmap SIZE`, \
                      `mmap-file SIZE`, `munmap N [OFFSET SIZE]`, `timeslice [K]`, `ptrace`, \
                      `fork`, `mprotect`";

fn parse_op(text: &str, mmaps: usize) -> Result<Op, String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let size = |s: &str| parse_size(s).map_err(|e| e.message);
    let count = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("`{s}` is not a whole number"))
    };
    let arity = |lo: usize, hi: usize| {
        if (lo..=hi).contains(&(w.len() - 1)) {
            Ok(())
        } else {
            Err(format!("`{text}`: wrong number of arguments; {SYNTAX}"))
        }
    };
    let Some(&head) = w.first() else {
        return Err(format!("empty operation; {SYNTAX}"));
    };
    Ok(match head {
        "exec" => {
            arity(1, 3)?;
            Op::Exec {
                text: size(w[1])?,
                data: w.get(2).map_or(Ok(0), |s| size(s))?,
                stack: w.get(3).map_or(Ok(DEFAULT_STACK_BYTES), |s| size(s))?,
            }
        }
        "brk" => {
            arity(1, 1)?;
            Op::Brk(size(w[1])?)
        }
        "mmap" => {
            arity(1, 1)?;
            Op::Mmap(size(w[1])?)
        }
        "mmap-file" => {
            arity(1, 1)?;
            Op::MmapFile(size(w[1])?)
        }
        "munmap" => {
            if w.len() != 2 && w.len() != 4 {
                return Err(format!(
                    "`{text}`: write `munmap N` or `munmap N OFFSET SIZE`"
                ));
            }
            let n = count(w[1])? as usize;
            if n >= mmaps {
                return Err(format!(
                    "`{text}`: only {mmaps} `mmap` operation(s) come before it (numbered from 0)"
                ));
            }
            let part = if w.len() == 4 {
                Some((size(w[2])?, size(w[3])?))
            } else {
                None
            };
            Op::Munmap { n, part }
        }
        "timeslice" => {
            arity(0, 1)?;
            let k = w.get(1).map_or(Ok(1), |s| count(s))?;
            if k == 0 || k > MAX_SLICES {
                return Err(format!("`{text}`: allowed 1..{MAX_SLICES} time slices"));
            }
            Op::Timeslice(k)
        }
        "ptrace" => {
            arity(0, 0)?;
            Op::Ptrace
        }
        "fork" => {
            arity(0, 0)?;
            Op::Fork
        }
        "mprotect" => {
            arity(0, 0)?;
            Op::Mprotect
        }
        other => {
            let names = [
                "exec",
                "brk",
                "mmap",
                "mmap-file",
                "munmap",
                "timeslice",
                "ptrace",
                "fork",
                "mprotect",
            ];
            let hint = crate::input::table::nearest(other, names.into_iter())
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "no operation `{}`{hint}; {SYNTAX}",
                crate::error::clip(other, 80)
            ));
        }
    })
}

#[derive(Debug, Clone)]
pub struct Zcb {
    zcb: bool,
    ops: Vec<(String, Op)>,
}

impl Zcb {
    pub fn from_step(r: &mut TableReader) -> Result<Zcb, InputError> {
        let zcb = r.bool("zcb")?.unwrap_or(true);
        let texts = r
            .list("ops", |v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("expected a string; {SYNTAX}"))
            })?
            .ok_or_else(|| {
                InputError::at(
                    r.key("ops"),
                    format!(
                        "missing: list the calls, e.g. [\"exec 16MB\", \"mmap 512MB\"]; {SYNTAX}"
                    ),
                )
            })?;
        if texts.len() > MAX_OPS {
            return Err(InputError::at(
                r.key("ops"),
                format!("{} operations: allowed at most {MAX_OPS}", texts.len()),
            ));
        }
        let mut ops = Vec::new();
        let mut mmaps = 0;
        for (i, t) in texts.iter().enumerate() {
            let op = parse_op(t, mmaps)
                .map_err(|m| InputError::at(r.key("ops"), format!("item {i}: {m}")))?;
            let refused = match op {
                Op::Exec { .. } if i > 0 => Some(
                    "only the first operation may be `exec` (one compute process at a time)"
                        .to_string(),
                ),
                Op::Exec { .. } => None,
                _ if i == 0 => Some("the first operation must be `exec`".to_string()),
                Op::Fork if zcb => Some(BigMemError::ForkRefused.to_string()),
                Op::Mprotect if zcb => Some(BigMemError::MprotectRefused.to_string()),
                _ => None,
            };
            if let Some(m) = refused {
                return Err(InputError::at(r.key("ops"), format!("item {i} `{t}`: {m}")));
            }
            if matches!(op, Op::Mmap(_)) {
                mmaps += 1;
            }
            ops.push((t.clone(), op));
        }
        Ok(Zcb { zcb, ops })
    }

    /// Replay the calls on a fresh area; the first error stops the run.
    pub fn simulate(&self, area: &mut BigMemArea) -> Result<(), InputError> {
        let mut maps: Vec<Mapping> = Vec::new();
        let mut heap_start = area.base();
        for (i, (text, op)) in self.ops.iter().enumerate() {
            let fail = |e: BigMemError| InputError::at("ops", format!("item {i} `{text}`: {e}"));
            match *op {
                Op::Exec { text, data, stack } => {
                    let image = ElfImage {
                        e_flags: if self.zcb { EF_ZEPTO_COMPUTE } else { 0 },
                        text,
                        data,
                    };
                    area.exec(&image, stack).map_err(fail)?;
                    heap_start = area.brk_end().unwrap_or(heap_start);
                }
                Op::Brk(size) => {
                    let end = heap_start
                        .checked_add(size)
                        .ok_or_else(|| fail(BigMemError::BadRange { addr: 0, len: size }))?;
                    area.brk(end).map_err(fail)?;
                }
                Op::Mmap(len) => maps.push(area.mmap_anon(len).map_err(fail)?),
                Op::MmapFile(len) => {
                    area.mmap_file(len);
                }
                Op::Munmap { n, part } => {
                    if let Mapping::BigMem { addr, len } = maps[n] {
                        let (off, l) = part.unwrap_or((0, len));
                        let at = addr
                            .checked_add(off)
                            .ok_or_else(|| fail(BigMemError::BadRange { addr, len: l }))?;
                        area.munmap(at, l).map_err(fail)?;
                    }
                }
                Op::Timeslice(k) => {
                    for _ in 0..k {
                        area.schedule_in().map_err(fail)?;
                        area.access(area.base()).map_err(fail)?;
                        area.schedule_out().map_err(fail)?;
                    }
                }
                Op::Ptrace => {
                    area.ptrace_access(area.base()).map_err(fail)?;
                }
                Op::Fork => area.fork().map_err(fail)?,
                Op::Mprotect => area.mprotect(area.base(), 1).map_err(fail)?,
            }
        }
        Ok(())
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let machine = &sim.case.machine;
        let knobs = sim.case.kernel.bigmem;
        let mut area = match knobs.area(machine) {
            None => {
                return Err(InputError::at(
                    "kernel.bigmem_mb",
                    "the zcb workload needs a Big Memory area: set kernel.bigmem_mb, e.g. 1792",
                )
                .into())
            }
            Some(a) => a.map_err(|e| InputError::at("kernel.bigmem_mb", e.to_string()))?,
        };
        let part = knobs
            .partition(machine)
            .map_err(|e| InputError::at("kernel.bigmem_mb", e.to_string()))?;
        // The area is reserved at boot: boot so a meminfo step shows it.
        sim.booted()?;
        self.simulate(&mut area)?;
        let mb = |b: u64| b as f64 / (1u64 << 20) as f64;
        let c = area.counters();
        let largest = area.free_runs().iter().map(|r| r.1).max().unwrap_or(0);
        Ok(vec![
            rec.record(&[], "bigmem_chunks", "chunks", area.chunks().len() as f64),
            rec.record(&[], "bigmem_used_mb", "MB", mb(area.used_bytes())),
            rec.record(&[], "bigmem_free_mb", "MB", mb(area.free_bytes())),
            rec.record(&[], "bigmem_largest_free_mb", "MB", mb(largest)),
            rec.record(&[], "paged_mb", "MB", mb(c.paged_bytes)),
            rec.record(&[], "tlb_bigmem_entries", "entries", f64::from(part.bigmem)),
            rec.record(&[], "tlb_paged_entries", "entries", f64::from(part.paged)),
            rec.record(&[], "tlb_installs", "count", c.installs as f64),
            rec.record(&[], "tlb_removals", "count", c.removals as f64),
            rec.record(&[], "tlb_misses", "count", c.misses as f64),
            rec.record(&[], "tlb_temp_installs", "count", c.temp_installs as f64),
        ])
    }
}

impl Run for Zcb {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Zcb::run(self, sim)
    }
}

/// The `zcb` workload: its keys, metrics and example, and its reader.
pub const ZCB: Workload = Workload {
    spec: s::Spec {
            name: "zcb",
            about: "a Zepto compute binary's exec/brk/mmap/munmap/ptrace in Big Memory (BG/P)",
            params: &[
                s::ZCB,
                s::p("ops", s::Kind::StrList, "", s::Default::Required, s::Range::Text("at most 100000; the first is `exec`: `exec TEXT [DATA [STACK]]`, `brk SIZE`, `mmap SIZE`, `mmap-file SIZE`, `munmap N [OFFSET SIZE]`, `timeslice [K]`, `ptrace`, `fork`, `mprotect`"), "the calls, in order"),
            ],
            one_of: &[],
            metrics: &[
                s::m("bigmem_chunks", "chunks", "chunks in the Big Memory area"),
                s::m("bigmem_used_mb", "MB", "used"),
                s::m("bigmem_free_mb", "MB", "free"),
                s::m("bigmem_largest_free_mb", "MB", "largest free chunk"),
                s::m("paged_mb", "MB", "paged memory outside the area"),
                s::m("tlb_bigmem_entries", "entries", "TLB entries pinned for Big Memory"),
                s::m("tlb_paged_entries", "entries", "TLB entries left to paged memory"),
                s::m("tlb_installs", "count", "TLB installs"),
                s::m("tlb_removals", "count", "TLB removals"),
                s::m("tlb_misses", "count", "TLB misses"),
                s::m("tlb_temp_installs", "count", "temporary installs"),
            ],
            example_machine: "bgp-node",
            example_kernel: "bigmem_mb = 1792\n",
            example: "workload = \"zcb\"\nops = [\"exec 16MB\", \"mmap 256MB\", \"munmap 0\"]\n",
            row_keys: &[],
    },
    parse: |r, _| Ok(Box::new(Zcb::from_step(r)?)),
};
