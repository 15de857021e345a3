//! Reading a machine TOML into [`Machine`] (all validation in one place) and
//! writing one back. See `docs/machine.md` for the format.

use super::distance::MAX_DISTANCE;
use super::*;
use crate::input::size::format_size;
use crate::input::table::{value_u32_in, TableReader};
use toml::{Table, Value};

// Here rather than in mod.rs, so that mod.rs (the types) does not import
// its own reader and writer (tests/layers.rs: no import circles).
impl Machine {
    /// Read and validate a machine table (`[machine]`, a preset's text).
    pub fn from_table(table: &toml::Table) -> Result<Machine, InputError> {
        // A `[block] preset` names a storage preset: merged in first, so
        // the readers below see one machine table (machine/storage.rs);
        // keys the file still leaves out get its era's defaults (defaults.rs).
        let expanded = super::storage::expand(table)?;
        let table = expanded.as_ref().unwrap_or(table);
        let mut m = read_machine(&super::defaults::with_era_defaults(table))?;
        // What the table gave, before today's defaults filled it in.
        m.given = super::defaults::Given::of(table);
        Ok(m)
    }

    /// The machine as TOML that [`Machine::from_toml_str`] reads back unchanged.
    pub fn to_toml_string(&self) -> String {
        write_machine(self)
    }
}

/// Defaults for optional physical parameters; documented in `docs/machine.md`.
mod default {
    pub const PAGE_SIZE: u64 = 4096;
    pub const LOCAL_DISTANCE: u32 = 10;
    pub const REMOTE_DISTANCE: u32 = 20;
    pub const MEM_LATENCY_NS: f64 = 100.0;
    pub const MEM_BANDWIDTH_GBPS: f64 = 10.0;
    pub const LINK_GBPS: f64 = 10.0;
    pub const LINE_TRANSFER_NS: f64 = 50.0;
    pub const CLOCK_MHZ: f64 = 2000.0;
    pub const CACHE_LINE: u64 = 64;
    pub const TLB_ENTRIES: u64 = 64;
    pub const TLB_MISS_NS: f64 = 20.0;
    /// Linux/include/linux/mm_types.h on 64-bit: flags, _count+_mapcount,
    /// private, mapping, index, lru = 56 bytes in 2.6; 32 on 32-bit.
    pub const STRUCT_PAGE_64: u64 = 56;
    pub const STRUCT_PAGE_32: u64 = 32;
    /// One `struct buffer_head` per 4 KiB block, 128 bytes each (a 2.4
    /// buffer head on 64-bit, cache-aligned in its slab): docs/pagecache.md.
    pub const BUFFER_HEAD_BYTES: u64 = 128;
    pub const FS_BLOCK: u64 = 4096;
}

/// Upper bounds on sizes the model allocates or loops over in proportion
/// (docs/machine.md, docs/tlb.md): a TLB holds one slot per entry; 4 KiB is
/// a page on most machines, far above any cache line shipped (32 to 256 B).
pub const MAX_TLB_ENTRIES: u32 = 1 << 16;
pub const MAX_CACHE_LINE: u32 = 4096;
/// Disks or controllers in one machine (Altix A3700 in [ALTIX04]: 256 disks).
pub const MAX_IO_DEVICES: u32 = 1 << 20;

pub(super) fn read_machine(t: &Table) -> Result<Machine, InputError> {
    let mut r = TableReader::new("", t);
    let name = r.str("name")?.unwrap_or("unnamed").to_string();
    let description = r.str("description")?.unwrap_or("").to_string();
    let arch = r.choice("arch", Arch::NAMES)?.unwrap_or(Arch::X86_64);
    // Read by `with_era_defaults` before; checked here like every key,
    // then kept as `era_of` resolves it (absent: from `[memsys]`).
    r.choice("era", super::defaults::Era::NAMES)?;
    let era = super::defaults::era_of(t).0;
    let page_size = r.size("page_size")?.unwrap_or(default::PAGE_SIZE);
    if !page_size.is_power_of_two() || page_size < 1024 {
        return Err(InputError::at(
            "page_size",
            format!("{page_size} bytes: must be a power of two of at least 1 KiB"),
        ));
    }
    if !arch.page_sizes().contains(&page_size) {
        let allowed: Vec<String> = arch.page_sizes().iter().map(|&s| format_size(s)).collect();
        return Err(InputError::at(
            "page_size",
            format!(
                "{}: arch `{}` has no such base page; allowed: {}",
                format_size(page_size),
                arch.name(),
                allowed.join(", ")
            ),
        )
        .allowing(allowed.join(", ")));
    }

    let nodes = read_nodes(&mut r, page_size)?;
    let n = nodes.len();

    let (distance_spec, distances) = match r.table("distance")? {
        None => {
            let spec = DistanceSpec::Flat {
                remote: default::REMOTE_DISTANCE,
            };
            let d = Distances::build(n, default::LOCAL_DISTANCE, &spec)?;
            (spec, d)
        }
        Some(mut dr) => {
            // SLIT distances are one byte; reading them as u32 in 0..=255
            // refuses what a cast would wrap.
            let local = dr
                .u32_in("local", 0, MAX_DISTANCE)?
                .unwrap_or(default::LOCAL_DISTANCE);
            // A large matrix arrives as a compact string (slit_text.rs).
            let compact = match dr.raw("matrix") {
                Some(Value::String(s)) => super::slit_text::decode(s),
                _ => None,
            };
            let matrix = match compact {
                Some(m) => Some(m.map_err(|why| InputError::at(dr.key("matrix"), why))?),
                None => dr
                    .list("matrix", |v| match v {
                        Value::Array(row) => row
                            .iter()
                            .map(|x| value_u32_in(x, 0, MAX_DISTANCE))
                            .collect::<Result<Vec<u32>, String>>(),
                        other => Err(format!(
                            "expected a row (list of numbers), found {}",
                            crate::input::table::describe(other)
                        )),
                    })?
                    .map(|rows| SlitRows::from_rows(&rows).expect("entries were read as 0..=255")),
            };
            let groups = dr.u32_list_in("groups", 1, MAX_NODES as u32)?;
            let levels = dr.u32_list_in("levels", 0, MAX_DISTANCE)?;
            let remote = dr.u32_in("remote", 0, MAX_DISTANCE)?;
            let spec = match (matrix, groups, levels, remote) {
                (Some(m), None, None, None) => DistanceSpec::Matrix(m),
                (None, Some(groups), Some(levels), None) => {
                    DistanceSpec::Hierarchy { groups, levels }
                }
                (None, None, None, remote) => DistanceSpec::Flat {
                    remote: remote.unwrap_or(default::REMOTE_DISTANCE),
                },
                _ => {
                    return Err(InputError::at(
                        "distance",
                        "give exactly one of: `matrix`, `groups` with `levels`, or `remote`",
                    ));
                }
            };
            let d =
                Distances::build(n, local, &spec).map_err(|e| fix_key(e, "distance", dr.path()))?;
            dr.finish()?;
            (spec, d)
        }
    };

    let memory = match r.table("dram")? {
        None => Memory {
            latency_ns: default::MEM_LATENCY_NS,
            bandwidth_gbps: default::MEM_BANDWIDTH_GBPS,
        },
        Some(mut m) => {
            let v = Memory {
                latency_ns: positive(&mut m, "latency_ns")?.unwrap_or(default::MEM_LATENCY_NS),
                bandwidth_gbps: positive(&mut m, "bandwidth_gbps")?
                    .unwrap_or(default::MEM_BANDWIDTH_GBPS),
            };
            m.finish()?;
            v
        }
    };

    let interconnect = match r.table("interconnect")? {
        None => Interconnect {
            link_gbps: default::LINK_GBPS,
            line_transfer_ns: default::LINE_TRANSFER_NS,
        },
        Some(mut m) => {
            let v = Interconnect {
                link_gbps: positive(&mut m, "link_gbps")?.unwrap_or(default::LINK_GBPS),
                line_transfer_ns: positive(&mut m, "line_transfer_ns")?
                    .unwrap_or(default::LINE_TRANSFER_NS),
            };
            m.finish()?;
            v
        }
    };

    let cpu = read_cpu(&mut r)?;
    let tlb = read_tlb(&mut r, page_size)?;
    let io = read_io(&mut r, n)?;
    let fs = read_fs(&mut r, page_size)?;
    let block = super::blockio::read(&mut r)?;
    let boot = read_boot(&mut r, arch, &nodes)?;
    let swap_bytes = read_swap(&mut r, &io)?;
    let (coherence, timer, fault) = super::coherence::read(&mut r)?;
    let (hierarchy, syscall, noise) = super::hierarchy::read(&mut r, &cpu, &memory)?;
    let pci = super::pci::read(&mut r)?;

    let mut m = Machine {
        name,
        description,
        arch,
        page_size,
        cpu_index: super::CpuIndex::of(&nodes),
        nodes,
        distance_spec,
        distances,
        memory,
        interconnect,
        cpu,
        tlb,
        io,
        fs,
        block,
        boot,
        swap_bytes,
        coherence,
        timer,
        fault,
        hierarchy,
        syscall,
        noise,
        pci,
        memsys: Default::default(),
        era,
        given: Default::default(),
    };
    // `[memsys]` derives its defaults from the tables above.
    m.memsys = super::memsys::read(&mut r, &m)?;
    r.finish()?;
    Ok(m)
}

/// Errors from `Distances::build` carry keys relative to the machine root;
/// place them under the table actually being read.
fn fix_key(e: InputError, local_prefix: &str, path: &str) -> InputError {
    let key = e.key.clone().unwrap_or_default();
    let rel = key
        .strip_prefix(local_prefix)
        .map(|s| s.trim_start_matches('.'))
        .unwrap_or(&key)
        .to_string();
    InputError {
        key: Some(if rel.is_empty() {
            path.to_string()
        } else {
            format!("{path}.{rel}")
        }),
        ..e
    }
}

fn positive(r: &mut TableReader, key: &'static str) -> Result<Option<f64>, InputError> {
    match r.f64(key)? {
        Some(x) if x <= 0.0 => Err(InputError::at(
            r.key(key),
            format!("must be greater than zero (got {x})"),
        )),
        v => Ok(v),
    }
}

fn read_nodes(r: &mut TableReader, page_size: u64) -> Result<Vec<Node>, InputError> {
    let count = r.u64("nodes")?;
    let cpus_per_node = r.u64("cpus_per_node")?;
    let node_cpus = r.u64_list("node_cpus")?;
    let mem_per_node = r.size("mem_per_node")?;
    let node_mem = r.size_list("node_mem")?;
    let memory = r.size("memory")?;

    let n = match (count, &node_cpus, &node_mem) {
        (Some(c), _, _) => c as usize,
        (None, Some(l), _) => l.len(),
        (None, None, Some(l)) => l.len(),
        _ => {
            return Err(InputError::at(
                "nodes",
                "missing: say how many NUMA nodes the machine has (nodes = N)",
            ))
        }
    };
    if n == 0 {
        return Err(InputError::at(
            "nodes",
            "must be at least 1 (a machine with no nodes has no CPUs or memory)",
        ));
    }
    if n > MAX_NODES {
        return Err(InputError::at(
            "nodes",
            format!(
                "{n} nodes is more than numasim models ({MAX_NODES}): the node distance matrix alone would \
                 need {} MiB. Group CPUs into fewer, larger nodes.",
                (n as u128 * n as u128 * 2) >> 20
            ),
        ));
    }
    let cpus: Vec<u64> = match (cpus_per_node, node_cpus) {
        (Some(_), Some(_)) => {
            return Err(InputError::at(
                "cpus_per_node",
                "give either `cpus_per_node` or `node_cpus`, not both",
            ));
        }
        (Some(c), None) => vec![c; n],
        (None, Some(l)) => l,
        (None, None) => {
            return Err(InputError::at(
                "cpus_per_node",
                "missing: give `cpus_per_node = N` or a list `node_cpus`",
            ));
        }
    };
    if cpus.len() != n {
        return Err(InputError::at(
            "node_cpus",
            format!("has {} entries but nodes = {n}", cpus.len()),
        ));
    }
    // Any one node above MAX_CPUS makes the (saturating) total exceed it
    // too, so every count fits the u32 it is stored in.
    let total_cpus: u64 = cpus.iter().fold(0u64, |a, &c| a.saturating_add(c));
    if total_cpus == 0 {
        return Err(InputError::at("cpus_per_node", "the machine has no CPU"));
    }
    if total_cpus > MAX_CPUS {
        return Err(InputError::at(
            "cpus_per_node",
            format!("{total_cpus} CPUs is more than numasim models ({MAX_CPUS})"),
        ));
    }
    let mem: Vec<u64> = match (mem_per_node, node_mem, memory) {
        (Some(m), None, None) => vec![m; n],
        (None, Some(l), None) => {
            if l.len() != n {
                return Err(InputError::at(
                    "node_mem",
                    format!("has {} entries but nodes = {n}; give one size per node (or use mem_per_node/memory)", l.len()),
                ));
            }
            l
        }
        (None, None, Some(total)) => {
            // Split evenly in whole pages; the remainder goes to the first nodes.
            let pages = total / page_size;
            (0..n as u64)
                .map(|i| (pages / n as u64 + u64::from(i < pages % n as u64)) * page_size)
                .collect()
        }
        (None, None, None) => {
            return Err(InputError::at(
                "memory",
                "missing: give `memory` (total), `mem_per_node`, or `node_mem`",
            ));
        }
        _ => {
            return Err(InputError::at(
                "memory",
                "give only one of `memory` (total), `mem_per_node`, `node_mem` (per-node list)",
            ));
        }
    };
    if mem.iter().all(|&m| m < page_size) {
        return Err(InputError::at(
            "memory",
            "the machine has no memory (every node is smaller than a page)",
        ));
    }
    mem.iter()
        .try_fold(0u64, |acc, &m| acc.checked_add(m))
        .ok_or_else(|| InputError::at("memory", "total memory exceeds 16 EiB"))?;
    Ok(cpus
        .into_iter()
        .zip(mem)
        .map(|(c, m)| Node {
            cpus: u32::try_from(c).unwrap_or(u32::MAX),
            mem_bytes: m,
        })
        .collect())
}

fn read_cpu(r: &mut TableReader) -> Result<Cpu, InputError> {
    let Some(mut c) = r.table("cpu")? else {
        return Ok(Cpu {
            model: "generic".into(),
            clock_mhz: default::CLOCK_MHZ,
            cache_line: default::CACHE_LINE as u32,
            caches: vec![],
        });
    };
    let model = c.str("model")?.unwrap_or("generic").to_string();
    let clock_mhz = positive(&mut c, "clock_mhz")?.unwrap_or(default::CLOCK_MHZ);
    let cache_line = c
        .u32_in("cache_line", 8, MAX_CACHE_LINE)?
        .unwrap_or(default::CACHE_LINE as u32);
    if !cache_line.is_power_of_two() {
        return Err(InputError::at(
            c.key("cache_line"),
            "must be a power of two",
        ));
    }
    let key = c.key("cache");
    let caches = c
        .list("cache", |v| {
            let Value::Table(t) = v else {
                return Err("expected a table { level, size, latency_cycles }".into());
            };
            let mut cr = TableReader::new("", t);
            let cache = (|| -> Result<Cache, InputError> {
                let level = cr
                    .u32_in("level", 1, 4)?
                    .ok_or_else(|| InputError::at("level", "missing"))?
                    as u8; // 1..=4 fits
                let size = cr
                    .size("size")?
                    .ok_or_else(|| InputError::at("size", "missing"))?;
                let latency_cycles = cr.nonneg_f64("latency_cycles")?.unwrap_or(0.0);
                let shared_by = cr
                    .u32_in("shared_by", 0, MAX_CPUS as u32)?
                    .unwrap_or(1)
                    .max(1);
                let copy_mbps = cr.f64("copy_mbps")?;
                if let Some(x) = copy_mbps.filter(|x| !(x.is_finite() && *x > 0.0)) {
                    return Err(InputError::at(
                        "copy_mbps",
                        format!("{x}: must be more than 0"),
                    ));
                }
                Ok(Cache {
                    level,
                    size,
                    latency_cycles,
                    shared_by,
                    copy_mbps,
                })
            })()
            .map_err(|e| e.to_string())?;
            cr.finish().map_err(|e| e.to_string())?;
            Ok(cache)
        })
        .map_err(|e| InputError {
            key: Some(key.clone()),
            ..e
        })?
        .unwrap_or_default();
    c.finish()?;
    Ok(Cpu {
        model,
        clock_mhz,
        cache_line,
        caches,
    })
}

fn read_tlb(r: &mut TableReader, page_size: u64) -> Result<Tlb, InputError> {
    let Some(mut t) = r.table("tlb")? else {
        return Ok(Tlb {
            entries: default::TLB_ENTRIES as u32,
            page_sizes: vec![page_size],
            miss_ns: default::TLB_MISS_NS,
            refill: TlbRefill::Hardware,
            kernel_entries: 0,
            device_entries: 0,
            walk_levels: 4,
            miss_l1_lines: 0.0,
        });
    };
    // The TLB model keeps one slot per entry (kernel/mm/tlb.rs), so the
    // count is bounded: docs/tlb.md.
    let entries = match t.u64("entries")? {
        Some(0) => {
            return Err(InputError::at(
                t.key("entries"),
                "a TLB needs at least one entry",
            ))
        }
        Some(e) if e > MAX_TLB_ENTRIES as u64 => {
            return Err(InputError::at(
                t.key("entries"),
                format!(
                    "{e}: allowed 1..{MAX_TLB_ENTRIES} (the largest TLBs shipped hold a few \
                     thousand entries)"
                ),
            ))
        }
        v => v.map_or(default::TLB_ENTRIES as u32, |e| e as u32), // <= MAX_TLB_ENTRIES
    };
    let mut page_sizes = t
        .size_list("page_sizes")?
        .unwrap_or_else(|| vec![page_size]);
    page_sizes.sort_unstable();
    if let Some(bad) = page_sizes.iter().find(|s| !s.is_power_of_two()) {
        return Err(InputError::at(
            t.key("page_sizes"),
            format!("{bad} is not a power of two"),
        ));
    }
    let miss_ns = t.nonneg_f64("miss_ns")?.unwrap_or(default::TLB_MISS_NS);
    let refill = t
        .choice(
            "refill",
            &[
                ("hardware", TlbRefill::Hardware),
                ("software", TlbRefill::Software),
            ],
        )?
        .unwrap_or(TlbRefill::Hardware);
    let kernel_entries = t.u32_in("kernel_entries", 0, entries - 1)?.unwrap_or(0);
    let device_entries = t.u32_in("device_entries", 0, entries - 1)?.unwrap_or(0);
    if kernel_entries + device_entries >= entries {
        return Err(InputError::at(
            t.key("kernel_entries"),
            format!(
                "{kernel_entries} kernel + {device_entries} device entries leave none of the \
                 {entries} for user pages: allowed at most {} pinned",
                entries - 1
            ),
        ));
    }
    let walk_levels = t.u32_in("walk_levels", 1, 6)?.unwrap_or(4);
    let miss_l1_lines = match t.nonneg_f64("miss_l1_lines")? {
        Some(x) if x > 1e6 => {
            return Err(InputError::at(
                t.key("miss_l1_lines"),
                format!("{x}: allowed 0 .. 1000000"),
            ))
        }
        v => v.unwrap_or(0.0),
    };
    t.finish()?;
    Ok(Tlb {
        entries,
        page_sizes,
        miss_ns,
        refill,
        kernel_entries,
        device_entries,
        walk_levels,
        miss_l1_lines,
    })
}

/// `swap_gb`: swap space in GiB (the papers' "GB" of memory are GiB).
/// Swap lives on the machine's disks, so a machine with swap needs some.
fn read_swap(r: &mut TableReader, io: &Io) -> Result<u64, InputError> {
    let Some(gb) = r.nonneg_f64("swap_gb")? else {
        return Ok(0);
    };
    if gb > (1u64 << 24) as f64 {
        return Err(InputError::at("swap_gb", format!("{gb}: more than 16 EiB")));
    }
    if gb > 0.0 && io.disks.iter().all(|g| g.count == 0 || g.mibps <= 0.0) {
        return Err(InputError::at(
            "swap_gb",
            "swap needs a disk to live on: add [io] disks = [{ count, mibps }]",
        ));
    }
    Ok((gb * (1u64 << 30) as f64) as u64)
}

fn read_io(r: &mut TableReader, nodes: usize) -> Result<Io, InputError> {
    let Some(mut t) = r.table("io")? else {
        return Ok(Io::default());
    };
    // Checked before narrowing: node 2^32 must not become node 0.
    let io_nodes: Vec<u32> = t
        .u32_list_in("io_nodes", 0, nodes as u32 - 1)?
        .unwrap_or_default();
    let controllers = t.u32_in("controllers", 0, MAX_IO_DEVICES)?.unwrap_or(0);
    let disks = t
        .list("disks", |v| {
            let Value::Table(tab) = v else {
                return Err("expected a table { count, kind, mibps, write_mibps }".into());
            };
            let mut dr = TableReader::new("", tab);
            let g = (|| -> Result<DiskGroup, InputError> {
                let g = DiskGroup {
                    count: dr.u32_in("count", 0, MAX_IO_DEVICES)?.unwrap_or(1),
                    kind: dr.str("kind")?.unwrap_or("disk").to_string(),
                    mibps: dr
                        .nonneg_f64("mibps")?
                        .ok_or_else(|| InputError::at("mibps", "missing"))?,
                    write_mibps: dr.nonneg_f64("write_mibps")?,
                };
                // A drive that takes no writes would stall every writer for
                // ever; omit the key to write at `mibps`.
                if g.count > 0 && g.write_mibps == Some(0.0) {
                    return Err(InputError::at(
                        "write_mibps",
                        "must be > 0 MiB/s for a group with disks (omit it to write at `mibps`)",
                    ));
                }
                Ok(g)
            })()
            .map_err(|e| e.to_string())?;
            dr.finish().map_err(|e| e.to_string())?;
            Ok(g)
        })?
        .unwrap_or_default();
    t.finish()?;
    Ok(Io {
        io_nodes,
        controllers,
        disks,
    })
}

fn read_fs(r: &mut TableReader, page_size: u64) -> Result<Fs, InputError> {
    let default = page_size.div_ceil(default::FS_BLOCK) * default::BUFFER_HEAD_BYTES;
    let Some(mut t) = r.table("fs")? else {
        return Ok(Fs {
            slab_per_cached_page: default,
        });
    };
    let slab = t.size("slab_per_cached_page")?.unwrap_or(default);
    if slab > page_size.saturating_mul(4) {
        return Err(InputError::at(
            t.key("slab_per_cached_page"),
            "more than four pages of slab per cached page",
        ));
    }
    t.finish()?;
    Ok(Fs {
        slab_per_cached_page: slab,
    })
}

fn read_boot(r: &mut TableReader, arch: Arch, nodes: &[Node]) -> Result<BootFootprint, InputError> {
    let sp = if arch.is_64bit() {
        default::STRUCT_PAGE_64
    } else {
        default::STRUCT_PAGE_32
    };
    // Linux boots on a CPU whose node has memory; imported machines may have a
    // memoryless node 0, so the default is the first node with both.
    let first = nodes
        .iter()
        .position(|n| n.cpus > 0 && n.mem_bytes > 0)
        .ok_or_else(|| {
            InputError::at(
                "node_mem",
                "no node has both CPUs and memory, so nothing can boot the kernel",
            )
        })?;
    let mut b = BootFootprint {
        struct_page_bytes: sp,
        percpu_area: 0,
        node_reserved: 0,
        kernel_reserved: 0,
        boot_node: first as u32,
    };
    if let Some(mut t) = r.table("boot")? {
        b.struct_page_bytes = t.u64("struct_page_bytes")?.unwrap_or(sp);
        if !(1..=1024).contains(&b.struct_page_bytes) {
            return Err(InputError::at(
                t.key("struct_page_bytes"),
                format!(
                    "{}: allowed 1..1024 (Linux's struct page is 32 to 128 bytes)",
                    b.struct_page_bytes
                ),
            ));
        }
        b.percpu_area = t.size("percpu_area")?.unwrap_or(0);
        b.node_reserved = t.size("node_reserved")?.unwrap_or(0);
        b.kernel_reserved = t.size("kernel_reserved")?.unwrap_or(0);
        b.boot_node = t
            .u32_in("boot_node", 0, nodes.len() as u32 - 1)?
            .unwrap_or(first as u32);
        t.finish()?;
    }
    if nodes[b.boot_node as usize].cpus == 0 || nodes[b.boot_node as usize].mem_bytes == 0 {
        return Err(InputError::at(
            "boot.boot_node",
            format!(
                "node {} needs CPUs and memory to boot the kernel",
                b.boot_node
            ),
        ));
    }
    Ok(b)
}

pub(super) fn write_machine(m: &Machine) -> String {
    let mut t = Table::new();
    t.insert("name".into(), m.name.clone().into());
    if !m.description.is_empty() {
        t.insert("description".into(), m.description.clone().into());
    }
    t.insert("arch".into(), m.arch.name().into());
    t.insert("era".into(), m.era.name().into());
    t.insert("page_size".into(), format_size(m.page_size).into());
    t.insert("nodes".into(), (m.nodes.len() as i64).into());
    let c0 = m.nodes[0].cpus;
    if m.nodes.iter().all(|n| n.cpus == c0) {
        t.insert("cpus_per_node".into(), (c0 as i64).into());
    } else {
        t.insert(
            "node_cpus".into(),
            m.nodes
                .iter()
                .map(|n| Value::from(n.cpus as i64))
                .collect::<Vec<_>>()
                .into(),
        );
    }
    let m0 = m.nodes[0].mem_bytes;
    if m.nodes.iter().all(|n| n.mem_bytes == m0) {
        t.insert("mem_per_node".into(), format_size(m0).into());
    } else {
        t.insert(
            "node_mem".into(),
            m.nodes
                .iter()
                .map(|n| Value::from(format_size(n.mem_bytes)))
                .collect::<Vec<_>>()
                .into(),
        );
    }
    let mut d = Table::new();
    d.insert("local".into(), (m.distances.local() as i64).into());
    let ints = |v: &[u32]| Value::Array(v.iter().map(|&x| (x as i64).into()).collect());
    match &m.distance_spec {
        DistanceSpec::Flat { remote } => {
            d.insert("remote".into(), (*remote as i64).into());
        }
        DistanceSpec::Hierarchy { groups, levels } => {
            d.insert("groups".into(), ints(groups));
            d.insert("levels".into(), ints(levels));
        }
        DistanceSpec::Matrix(_) => {
            // Written as text below: as TOML values an entry would cost
            // about 250 bytes (2 GB for 8,192 nodes).
            d.insert("matrix".into(), MATRIX_PLACEHOLDER.into());
        }
    }
    t.insert("distance".into(), d.into());
    let mut dram = Table::new();
    dram.insert("latency_ns".into(), m.memory.latency_ns.into());
    dram.insert("bandwidth_gbps".into(), m.memory.bandwidth_gbps.into());
    t.insert("dram".into(), dram.into());
    let mut ic = Table::new();
    ic.insert("link_gbps".into(), m.interconnect.link_gbps.into());
    ic.insert(
        "line_transfer_ns".into(),
        m.interconnect.line_transfer_ns.into(),
    );
    t.insert("interconnect".into(), ic.into());
    let mut cpu = Table::new();
    cpu.insert("model".into(), m.cpu.model.clone().into());
    cpu.insert("clock_mhz".into(), m.cpu.clock_mhz.into());
    cpu.insert("cache_line".into(), (m.cpu.cache_line as i64).into());
    if !m.cpu.caches.is_empty() {
        let caches = m.cpu.caches.iter().map(|c| {
            let mut ct = Table::new();
            ct.insert("level".into(), (c.level as i64).into());
            ct.insert("size".into(), format_size(c.size).into());
            ct.insert("latency_cycles".into(), c.latency_cycles.into());
            ct.insert("shared_by".into(), (c.shared_by as i64).into());
            if let Some(x) = c.copy_mbps {
                ct.insert("copy_mbps".into(), x.into());
            }
            Value::Table(ct)
        });
        cpu.insert("cache".into(), Value::Array(caches.collect()));
    }
    t.insert("cpu".into(), cpu.into());
    let mut tlb = Table::new();
    tlb.insert("entries".into(), (m.tlb.entries as i64).into());
    tlb.insert(
        "page_sizes".into(),
        m.tlb
            .page_sizes
            .iter()
            .map(|&s| Value::from(format_size(s)))
            .collect::<Vec<_>>()
            .into(),
    );
    tlb.insert("miss_ns".into(), m.tlb.miss_ns.into());
    tlb.insert(
        "refill".into(),
        match m.tlb.refill {
            TlbRefill::Hardware => "hardware",
            TlbRefill::Software => "software",
        }
        .into(),
    );
    tlb.insert(
        "kernel_entries".into(),
        (m.tlb.kernel_entries as i64).into(),
    );
    tlb.insert(
        "device_entries".into(),
        (m.tlb.device_entries as i64).into(),
    );
    tlb.insert("walk_levels".into(), (m.tlb.walk_levels as i64).into());
    tlb.insert("miss_l1_lines".into(), m.tlb.miss_l1_lines.into());
    t.insert("tlb".into(), tlb.into());
    if m.swap_bytes > 0 {
        t.insert(
            "swap_gb".into(),
            (m.swap_bytes as f64 / (1u64 << 30) as f64).into(),
        );
    }
    if m.io != Io::default() {
        let mut io = Table::new();
        io.insert("io_nodes".into(), ints(&m.io.io_nodes));
        io.insert("controllers".into(), (m.io.controllers as i64).into());
        let disks = m.io.disks.iter().map(|g| {
            let mut gt = Table::new();
            gt.insert("count".into(), (g.count as i64).into());
            gt.insert("kind".into(), g.kind.clone().into());
            gt.insert("mibps".into(), g.mibps.into());
            if let Some(w) = g.write_mibps {
                gt.insert("write_mibps".into(), w.into());
            }
            Value::Table(gt)
        });
        io.insert("disks".into(), Value::Array(disks.collect()));
        t.insert("io".into(), io.into());
    }
    let mut fs = Table::new();
    fs.insert(
        "slab_per_cached_page".into(),
        (m.fs.slab_per_cached_page as i64).into(),
    );
    t.insert("fs".into(), fs.into());
    if let Some(b) = &m.block {
        t.insert("block".into(), super::blockio::write(b).into());
    }
    let mut b = Table::new();
    b.insert(
        "struct_page_bytes".into(),
        (m.boot.struct_page_bytes as i64).into(),
    );
    b.insert("percpu_area".into(), format_size(m.boot.percpu_area).into());
    b.insert(
        "node_reserved".into(),
        format_size(m.boot.node_reserved).into(),
    );
    b.insert(
        "kernel_reserved".into(),
        format_size(m.boot.kernel_reserved).into(),
    );
    b.insert("boot_node".into(), (m.boot.boot_node as i64).into());
    t.insert("boot".into(), b.into());
    super::coherence::write(m, &mut t);
    super::hierarchy::write(m, &mut t);
    super::pci::write(m, &mut t);
    super::memsys::write(m, &mut t);
    let text = toml::to_string(&t).expect("a TOML table always serialises");
    match &m.distance_spec {
        DistanceSpec::Matrix(rows) => {
            let line = format!("\nmatrix = \"{MATRIX_PLACEHOLDER}\"\n");
            match text.match_indices(&line).count() {
                1 => text.replacen(&line, &format!("\nmatrix = {}\n", matrix_text(rows)), 1),
                // A name or description spelling the placeholder line out
                // (never in practice): the slow way, every entry a value.
                _ => {
                    let rows: Vec<Value> = (0..rows.rows())
                        .map(|i| {
                            Value::Array(rows.row(i).iter().map(|&v| (v as i64).into()).collect())
                        })
                        .collect();
                    if let Some(Value::Table(d)) = t.get_mut("distance") {
                        d.insert("matrix".into(), Value::Array(rows));
                    }
                    toml::to_string(&t).expect("a TOML table always serialises")
                }
            }
        }
        _ => text,
    }
}

/// The `matrix` value while the rest of a machine is written.
const MATRIX_PLACEHOLDER: &str = "numasim: the distance matrix is written here";

/// A matrix as TOML: on one line as the TOML writer puts an array of
/// arrays (`[[10, 20], [20, 10]]`) up to 128 rows, one row a line beyond.
fn matrix_text(rows: &SlitRows) -> String {
    use std::fmt::Write;
    let n = rows.rows();
    let mut s = String::with_capacity(n * n * 4 + n * 8 + 8);
    let long = n > 128;
    s.push('[');
    for i in 0..n {
        if long {
            s.push_str("\n    ");
        } else if i > 0 {
            s.push_str(", ");
        }
        s.push('[');
        for (j, v) in rows.row(i).iter().enumerate() {
            if j > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{v}");
        }
        s.push(']');
        if long {
            s.push(',');
        }
    }
    if long {
        s.push('\n');
    }
    s.push(']');
    s
}
