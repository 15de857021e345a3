//! Booting the kernel to a shell (`init=/bin/sh`): the order of
//! `start_kernel()` and the initcalls, reduced to the allocations that
//! decide where boot-time memory lands ([HASHDIST04] A12–A14, [ALTIX04] A10,
//! A11). docs/placement.md walks through it with the Altix figures.
//!
//! 1. bootmem: each node's `mem_map`, per-CPU areas and node data; the
//!    kernel image on the boot node.
//! 2. `vfs_caches_init_early()`: with `hashdist=0` the dentry and inode
//!    hashes come from `alloc_bootmem()` (`HASH_EARLY`): contiguous, on the
//!    first node with room — the boot node.
//! 3. `mem_init()`: bootmem is handed to the buddy allocator; watermarks.
//! 4. `numa_policy_init()`: the boot task interleaves its allocations over
//!    all nodes with memory until boot ends; every `alloc_pages()` call
//!    takes the next node, whatever its order.
//! 5. `vfs_caches_init()`: with `hashdist=1` the dentry and inode hashes are
//!    vmalloc'ed here, page by page, so interleaved.
//! 6. initcalls (`inet_init()` → `tcp_init()`): the TCP established and bind
//!    hashes; `hashdist=1` vmallocs them, `hashdist=0` takes each as one
//!    `__get_free_pages()` block on the node the interleave cursor points
//!    at. Where the cursor stands then depends on every boot allocation in
//!    between, which numasim does not list one by one:
//!    `kernel.initcall_il_next` says where it is.

use super::config::{IlNext, KernelConfig};
use super::era::Era;
use super::mm::bootmem::{alloc_bootmem, alloc_bootmem_node};
use super::mm::hash::{hash_entries, tcp_scale, HashSizing};
use super::mm::hash_tables::{alsh_entries, core_sizing, HashInputs, Rules};
use super::mm::mempolicy::{alloc_block, Allocator, MemPolicy, PolicyCursor};
use super::mm::page_alloc::{AllocError, Gfp, PageAlloc, Placement, Use};
use super::mm::vmalloc::{vmalloc, VmallocError};
use crate::engine::stream;
use crate::error::{Error, InputError};
use crate::machine::Machine;
use rand::RngExt;

/// `tcp_init()` caps the bind hash at 64K buckets.
const TCP_BHASH_MAX_ENTRIES: u64 = 64 * 1024;
/// Dentry hash: one bucket per 2^13 bytes (`dcache_init()`).
const DHASH_SCALE: u32 = 13;
/// Inode hash: one bucket per 2^14 bytes (`inode_init()`).
const IHASH_SCALE: u32 = 14;

/// Task ids in the boot model.
const BOOT_TASK: u32 = 0;

/// How a table's memory was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashSource {
    Bootmem,
    Vmalloc,
    Pages,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BootHash {
    pub name: &'static str,
    /// The name `alloc_large_system_hash()` prints ("Dentry cache").
    pub label: &'static str,
    /// Entries the sizing asked for before any allocation failed.
    pub requested_entries: u64,
    pub entries: u64,
    pub bucket_size: u64,
    pub source: HashSource,
    pub placement: Placement,
}

impl BootHash {
    pub fn bytes(&self) -> u64 {
        self.entries * self.bucket_size
    }
    pub fn requested_bytes(&self) -> u64 {
        self.requested_entries * self.bucket_size
    }
    /// The order dmesg prints: `ilog2(size) - PAGE_SHIFT` (negative below a page).
    pub fn order(&self, page_size: u64) -> i64 {
        self.bytes().ilog2() as i64 - page_size.trailing_zeros() as i64
    }
    pub fn vmalloc(&self) -> bool {
        self.source == HashSource::Vmalloc
    }
}

/// The kernel's name for a table numasim calls `name`.
pub fn table_label(name: &str) -> &'static str {
    match name {
        "dentry" => "Dentry cache",
        "inode" => "Inode-cache",
        "tcp_ehash" => "TCP established",
        "tcp_bind" | "tcp_bhash" => "TCP bind",
        _ => "?",
    }
}

/// A booted machine: its memory and the tables boot placed.
#[derive(Debug, Clone)]
pub struct Booted {
    pub mm: PageAlloc,
    pub cursors: PolicyCursor,
    pub hashes: Vec<BootHash>,
    /// Node the initcalls' interleave cursor pointed at (for reports).
    pub initcall_node: usize,
    /// What the tables were sized from (`nr_kernel_pages`, `nr_all_pages`,
    /// CPUs, nodes, boot parameters): `numasim dmesg` prints it back.
    pub inputs: HashInputs,
}

impl Booted {
    pub fn hash(&self, name: &str) -> Option<&BootHash> {
        self.hashes.iter().find(|h| h.name == name)
    }
}

/// The key a machine too small to boot is refused under: its memory.
pub const MEMORY_KEY: &str = "machine.mem_per_node";

/// What to give a machine that cannot boot, after why.
fn more_memory(machine: &Machine) -> String {
    let per_node = machine.nodes.iter().map(|n| n.mem_bytes).max().unwrap_or(0);
    format!(
        "it has {} per node at most; allowed: enough memory per node for the memory map,          per-CPU areas, the kernel and its boot hash tables (raise `mem_per_node`,          `memory` or `node_mem`)",
        crate::input::size::mem_label(per_node)
    )
}

fn no_memory(what: &str, machine: &Machine, e: AllocError) -> Error {
    let pages = match e {
        AllocError::NoMemory { pages } => format!("{pages} pages"),
        AllocError::OrderTooLarge { order, .. } => format!("an order-{order} block"),
    };
    InputError::at(
        MEMORY_KEY,
        format!(
            "`{}` is too small to boot: no memory for {what} ({pages}); {}",
            machine.name,
            more_memory(machine)
        ),
    )
    .into()
}

/// Boot `machine` with `cfg`; `seed` decides what real boots leave to chance.
pub fn boot(machine: &Machine, cfg: &KernelConfig, seed: u64) -> Result<Booted, Error> {
    let mut mm = PageAlloc::new(machine, cfg.max_order);
    mm.set_kswapd_trigger(cfg.kswapd_trigger);
    let b = &machine.boot;
    let boot_node = b.boot_node as usize;
    let page_shift = machine.page_size.trailing_zeros();

    // 1. Per-node boot reservations.
    for (i, node) in machine.nodes.iter().enumerate() {
        if node.mem_bytes == 0 {
            continue;
        }
        // Saturating: an absurd footprint then fails as "no memory", not an overflow.
        let memmap = mm.node(i).present.saturating_mul(b.struct_page_bytes);
        alloc_bootmem_node(&mut mm, i, memmap, Use::MemMap)
            .map_err(|e| no_memory("mem_map", machine, e))?;
        let percpu = (node.cpus as u64).saturating_mul(b.percpu_area);
        alloc_bootmem_node(&mut mm, i, percpu, Use::PerCpu)
            .map_err(|e| no_memory("per-CPU areas", machine, e))?;
        alloc_bootmem_node(&mut mm, i, b.node_reserved, Use::NodeData)
            .map_err(|e| no_memory("node data", machine, e))?;
    }
    alloc_bootmem_node(&mut mm, boot_node, b.kernel_reserved, Use::Kernel)
        .map_err(|e| no_memory("the kernel image", machine, e))?;
    // Big Memory is carved out at boot and never seen by the buddy
    // allocator ([BGP-BIGMEM] D6); it counts as kernel-reserved memory.
    alloc_bootmem_node(&mut mm, boot_node, cfg.bigmem.bytes, Use::Kernel)
        .map_err(|e| no_memory("the Big Memory area", machine, e))?;

    let era = cfg.version.boot_tables();
    let ptr = machine.arch.pointer_bytes();
    let mem_pages = mm.total_present();
    let lowmem_pages = machine
        .arch
        .lowmem_bytes()
        .map_or(mem_pages, |b| mem_pages.min(b >> page_shift));
    // 2.6.9 (SGI's patch, the experiments) keeps its own sizing below; the
    // later releases follow the release rules (kernel/mm/hash_tables.rs).
    let sgi = era == Era::V2_6_9;
    let rules = Rules::of_era(era);
    // nr_kernel_pages / nr_all_pages: from 2.6.20 without the memory map.
    let memmap = if rules.counts_without_memmap() {
        mem_pages
            .saturating_mul(b.struct_page_bytes)
            .div_ceil(machine.page_size)
    } else {
        0
    };
    let mut inputs = HashInputs::new(machine.arch, page_shift, mem_pages);
    inputs.kernel_pages = lowmem_pages.saturating_sub(memmap);
    inputs.all_pages = mem_pages.saturating_sub(memmap);
    inputs.max_pfn = mem_pages;
    inputs.possible_cpus = machine.cpu_count().max(1);
    inputs.online_nodes = machine.node_count() as u64;
    inputs.memory_nodes = machine.nodes.iter().filter(|n| n.mem_bytes > 0).count() as u64;
    inputs.hashdist_param = Some(cfg.hashdist);
    inputs.config_numa = cfg.config_numa;
    inputs.thash_entries = cfg.thash_entries;
    inputs.dhash_entries = cfg.dhash_entries;
    inputs.ihash_entries = cfg.ihash_entries;
    inputs.max_order = cfg.max_order;
    inputs.vmalloc_limit = cfg.vmalloc_max_bytes;
    // 2.6.9 sizes lowmem tables from nr_kernel_pages and the TCP tables
    // (HASH_HIGHMEM) from all pages; on 64-bit machines both are all memory.
    let size = |s: &HashSizing, highmem: bool| -> u64 {
        hash_entries(
            s,
            if highmem { mem_pages } else { lowmem_pages },
            page_shift,
        )
    };
    // Bucket bytes and requested entries of a core table, by release.
    let late = |name: &str, ehash_entries: u64| -> (u64, u64) {
        let s = core_sizing(&rules, &inputs, name, ehash_entries).expect("a core table");
        (s.bucket, alsh_entries(&rules, &inputs, &s))
    };
    let dentry = HashSizing {
        bucket_size: ptr,
        numentries: cfg.dhash_entries,
        scale: DHASH_SCALE,
        limit: 0,
    };
    let inode = HashSizing {
        bucket_size: ptr,
        numentries: cfg.ihash_entries,
        scale: IHASH_SCALE,
        limit: 0,
    };
    let vfs = |name: &str, s: &HashSizing| -> (u64, u64) {
        if sgi {
            (s.bucket_size, size(s, false))
        } else {
            late(name, 0)
        }
    };
    let mut hashes = Vec::new();

    // 2. vfs_caches_init_early(): HASH_EARLY tables from bootmem.
    if !cfg.hashdist {
        for (name, s) in [("dentry", dentry), ("inode", inode)] {
            let (bucket, requested) = vfs(name, &s);
            hashes.push(alloc_large_system_hash(
                name,
                bucket,
                requested,
                |bytes, mm| {
                    alloc_bootmem(mm, boot_node, bytes, Use::Hash)
                        .ok()
                        .map(|p| (p, HashSource::Bootmem))
                },
                &mut mm,
                machine,
            )?);
        }
    }

    // 3. mem_init(): watermarks exist from here on.
    mm.set_watermarks(cfg.min_free_kbytes);

    // 4. numa_policy_init(): the boot task interleaves over nodes with memory.
    let il_set: Vec<u32> = (0..machine.node_count() as u32)
        .filter(|&n| machine.nodes[n as usize].mem_bytes > 0)
        .collect();
    let policy = MemPolicy::Interleave(il_set.clone());
    let mut cursors = PolicyCursor::default();
    cursors.set_il_next(BOOT_TASK, 0);
    let boot_cpu = machine.nodes[..boot_node]
        .iter()
        .map(|n| n.cpus as u64)
        .sum();
    let who = Allocator {
        task: BOOT_TASK,
        cpu: boot_cpu,
        node: boot_node,
    };
    let vmax = cfg.vmalloc_max_bytes;

    // 5. vfs_caches_init(): with hashdist the dentry and inode hashes are vmalloc'ed.
    if cfg.hashdist {
        for (name, s) in [("dentry", dentry), ("inode", inode)] {
            let (bucket, requested) = vfs(name, &s);
            hashes.push(alloc_large_system_hash(
                name,
                bucket,
                requested,
                |bytes, mm| vmalloc_hash(mm, &mut cursors, &policy, who, bytes, vmax),
                &mut mm,
                machine,
            )?);
        }
    }

    // 6. inet_init() -> tcp_init(), in the init task, which inherited the policy.
    let il_next = match cfg.initcall_il_next {
        IlNext::At(i) => i,
        IlNext::Random => {
            stream(seed, "boot.initcall_il_next", 0).random_range(0..il_set.len() as u64)
        }
    };
    cursors.set_il_next(BOOT_TASK, il_next);
    let initcall_node = il_set[il_next as usize] as usize;
    // 2.6.9: tcp_init() of the hashdist patch.
    let scale = tcp_scale(mem_pages, page_shift);
    let tcp = |numentries: u64, limit: u64| HashSizing {
        bucket_size: 2 * ptr,
        numentries,
        scale,
        limit,
    };
    let ehash_sizing = tcp(cfg.thash_entries, 0);
    let vmalloc_fallback = !sgi && rules.vmalloc_when_too_big();
    let max_order = mm.max_order();
    let mut get_table = |bytes: u64, mm: &mut PageAlloc| -> Option<(Placement, HashSource)> {
        let order = mm.pages_for(bytes).next_power_of_two().trailing_zeros();
        // 5.x: `get_order(size) >= MAX_ORDER || hashdist` takes vmalloc.
        if cfg.hashdist || (vmalloc_fallback && order >= max_order) {
            vmalloc_hash(mm, &mut cursors, &policy, who, bytes, vmax)
        } else {
            // __get_free_pages(GFP_ATOMIC, order) (alloc_pages_exact()
            // later): one block, interleaved node.
            alloc_block(
                mm,
                &mut cursors,
                &policy,
                who,
                order,
                Gfp::Atomic,
                Use::Hash,
            )
            .ok()
            .map(|p| (p, HashSource::Pages))
        }
    };
    let (bucket, requested) = if sgi {
        (ehash_sizing.bucket_size, size(&ehash_sizing, true))
    } else {
        late("tcp_ehash", 0)
    };
    let ehash = alloc_large_system_hash(
        "tcp_ehash",
        bucket,
        requested,
        &mut get_table,
        &mut mm,
        machine,
    )?;
    // 2.6.9: tcp_ehash_size = (1 << shift) >> 1 (the other half held
    // TIME_WAIT sockets), and the bind hash follows it; later releases as
    // the rules say.
    let (bucket, requested) = if sgi {
        let s = tcp(ehash.entries / 2, TCP_BHASH_MAX_ENTRIES);
        (s.bucket_size, size(&s, true))
    } else {
        late("tcp_bhash", ehash.entries)
    };
    let bhash = alloc_large_system_hash(
        "tcp_bhash",
        bucket,
        requested,
        &mut get_table,
        &mut mm,
        machine,
    )?;
    hashes.push(ehash);
    hashes.push(bhash);

    debug_assert!(mm.check_conservation().is_ok());
    Ok(Booted {
        mm,
        cursors,
        hashes,
        initcall_node,
        inputs,
    })
}

fn vmalloc_hash(
    mm: &mut PageAlloc,
    cursors: &mut PolicyCursor,
    policy: &MemPolicy,
    who: Allocator,
    bytes: u64,
    vmax: u64,
) -> Option<(Placement, HashSource)> {
    match vmalloc(mm, cursors, policy, who, bytes, vmax, Use::Hash) {
        Ok(p) => Some((p, HashSource::Vmalloc)),
        Err(VmallocError::TooLarge { .. }) | Err(VmallocError::NoMemory(_)) => None,
    }
}

/// Size a table, then try to allocate it, halving until it fits
/// (`while (!table && size > PAGE_SIZE && --log2qty)`).
fn alloc_large_system_hash(
    name: &'static str,
    bucket_size: u64,
    requested: u64,
    mut get: impl FnMut(u64, &mut PageAlloc) -> Option<(Placement, HashSource)>,
    mm: &mut PageAlloc,
    machine: &Machine,
) -> Result<BootHash, Error> {
    let mut log2qty = requested.ilog2();
    loop {
        let bytes = bucket_size << log2qty;
        if let Some((placement, source)) = get(bytes, mm) {
            return Ok(BootHash {
                name,
                label: table_label(name),
                requested_entries: requested,
                entries: 1 << log2qty,
                bucket_size,
                source,
                placement,
            });
        }
        if bytes <= mm.page_size() || log2qty == 0 {
            // The kernel panics ("Failed to allocate {name} hash table"):
            // the machine is too small to boot, which is the input's to fix.
            return Err(InputError::at(
                MEMORY_KEY,
                format!(
                    "too small to boot: the kernel cannot allocate even one page for its \
                     {name} hash table (kernel panic: \"Failed to allocate {name} hash \
                     table\"); {}",
                    more_memory(machine)
                ),
            )
            .into());
        }
        log2qty -= 1;
    }
}
