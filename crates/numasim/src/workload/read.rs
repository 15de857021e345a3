//! The `read` workload: one process reads a file with buffered I/O, so every
//! page goes through `page_cache_alloc()` and brings its buffer heads with it
//! ([ALTIX04] A4, A5). Reports where the cache and slab landed.

use super::spec as s;
use super::Sim;
use super::{Run, Workload};
use crate::error::{Error, InputError};
use crate::input::table::TableReader;
use crate::kernel::mm::filemap::read_file;
use crate::kernel::mm::mempolicy::Allocator;
use crate::machine::Machine;
use crate::report::Record;

#[derive(Debug, Clone)]
pub struct Read {
    pub bytes: u64,
    pub cpu: u64,
}

impl Read {
    pub fn from_step(r: &mut TableReader, machine: &Machine) -> Result<Read, InputError> {
        let bytes = r
            .size("bytes")?
            .ok_or_else(|| InputError::at("bytes", "missing: the file size, e.g. \"40 GB\""))?;
        let cpu = r.u64("cpu")?.unwrap_or(0);
        if cpu >= machine.cpu_count() {
            return Err(InputError::at(
                "cpu",
                format!(
                    "CPU {cpu} does not exist (CPUs 0..{})",
                    machine.cpu_count() - 1
                ),
            ));
        }
        Ok(Read { bytes, cpu })
    }

    pub fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        let rec = sim.recorder();
        let machine = &sim.case.machine;
        let node = machine.cpu_node(self.cpu).unwrap_or(0);
        let (pc, slab) = (sim.case.kernel.page_cache_alloc, sim.case.kernel.slab_alloc);
        let booted = sim.booted()?;
        let pages = booted.mm.pages_for(self.bytes);
        let who = Allocator {
            task: 1000,
            cpu: self.cpu,
            node,
        };
        let res = read_file(
            &mut booted.mm,
            &mut booted.cursors,
            who,
            pages,
            machine.fs.slab_per_cached_page,
            pc,
            slab,
        );
        let Ok(res) = res else {
            // Not enough memory for the cache: reclaim is not modelled yet.
            return Ok(vec![rec.record(&[], "read_oom", "flag", 1.0)]);
        };
        // Pages this read put on each node; the reader's node against the
        // median of the others.
        let n = booted.mm.node_count();
        let per: Vec<u64> = (0..n)
            .map(|i| res.page_cache.on_node(i) + res.slab.on_node(i))
            .collect();
        let mut others: Vec<u64> = (0..n).filter(|&i| i != node).map(|i| per[i]).collect();
        others.sort_unstable();
        let median = others.get(others.len() / 2).copied().unwrap_or(0);
        Ok(vec![
            rec.record(
                &[],
                "reader_node_excess_pages",
                "pages",
                per[node].saturating_sub(median) as f64,
            ),
            rec.record(&[], "read_oom", "flag", 0.0),
        ])
    }
}

impl Run for Read {
    fn run(&self, sim: &mut Sim) -> Result<Vec<Record>, Error> {
        Read::run(self, sim)
    }
}

/// The `read` workload: its keys, metrics and example, and its reader.
pub const READ: Workload = Workload {
    spec: s::Spec {
        name: "read",
        about: "one process reads a file through the page cache (buffered I/O)",
        params: &[
            s::p(
                "bytes",
                s::Kind::Size,
                "B",
                s::Default::Required,
                s::Range::Any,
                "the file's size",
            ),
            s::CPU0,
        ],
        one_of: &[],
        metrics: &[
            s::m(
                "reader_node_excess_pages",
                "pages",
                "pages beyond the reader's node share it took",
            ),
            s::m("read_oom", s::FLAG, "1 if the read ran out of memory"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"read\"\nbytes = \"4 GB\"\n",
        row_keys: &[],
    },
    parse: |r, m| Ok(Box::new(Read::from_step(r, m)?)),
};
