//! Kernel knobs, named as in Linux, read and validated in one place. Their
//! defaults depend on the architecture the way the kernel's did; each
//! default is documented in docs/placement.md.

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::kernel::era::Era;
use crate::kernel::mm::page_alloc::KswapdTrigger;
use crate::kernel::mm::sysctl_vm::VmSysctl;
use crate::machine::{Arch, Machine};

/// Where the boot task's interleave cursor stands when the initcalls allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IlNext {
    /// Drawn from the scenario seed: real boots differ here.
    Random,
    /// Index into the interleave set (nodes with memory).
    At(u64),
}

/// Where a class of kernel allocations goes ([ALTIX04] A4, A5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// On the allocating CPU's node (mainline).
    Local,
    /// `GFP_ROUND_ROBIN`: a per-CPU counter modulo the nodes picks the zonelist.
    RoundRobin,
}

impl Spread {
    pub const NAMES: &'static [(&'static str, Spread)] = &[
        ("local", Spread::Local),
        ("round-robin", Spread::RoundRobin),
    ];
    pub fn name(self) -> &'static str {
        match self {
            Spread::Local => "local",
            Spread::RoundRobin => "round-robin",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct KernelConfig {
    /// `kernel.version`: the release whose boot-table formulas apply (era.rs).
    pub version: Era,
    /// `CONFIG_NUMA` of the kernel build: distributions' 64-bit kernels have
    /// it on even for one node; 2.6.9 defaults it to "more than one node".
    pub config_numa: bool,
    /// `hashdist=`: boot hashes from vmalloc (interleaved) instead of one node.
    pub hashdist: bool,
    /// `thash_entries=`: TCP established hash entries, 0 = sized from memory.
    pub thash_entries: u64,
    /// `dhash_entries=`: dentry hash entries, 0 = sized from memory.
    pub dhash_entries: u64,
    /// `ihash_entries=`: inode hash entries, 0 = sized from memory.
    pub ihash_entries: u64,
    /// Largest single vmalloc, bytes; 0 = no cap.
    pub vmalloc_max_bytes: u64,
    /// `MAX_ORDER`: the largest buddy block is 2^(max_order-1) pages.
    pub max_order: u32,
    /// `min_free_kbytes`; None = the 2.6 formula.
    pub min_free_kbytes: Option<u64>,
    /// The boot task's interleave cursor when `inet_init()` runs.
    pub initcall_il_next: IlNext,
    /// `page_cache_alloc()` placement (SGI's `GFP_ROUND_ROBIN`, A4).
    pub page_cache_alloc: Spread,
    /// Slab page placement, e.g. buffer heads (`kmem_getpages()`, A5).
    pub slab_alloc: Spread,
    /// When kswapd wakes: 2.4's global pressure or 2.6's zonelist walk (B1).
    pub kswapd_trigger: KswapdTrigger,
    /// Reclaim, swap, writeback and OOM knobs (B2–B13).
    pub vm: VmSysctl,
    /// Contention knobs (C2–C12): `prof_cpu_mask`, `timer_adjust`, … (contention.rs).
    pub contention: crate::kernel::locking::contention::ContentionKnobs,
    /// Blue Gene Big Memory as boot reserves it, derived from `mm` (D6, D11; mm/bigmem.rs).
    pub bigmem: crate::kernel::mm::bigmem::BigMemKnobs,
    /// Flavour, page size, prefetch, tick, Big Memory, TLB partitions (D1–D15, flavour.rs).
    pub mm: crate::kernel::mm::flavour::MmKnobs,
    /// Run queues, load balancing and wake-up placement (E1–E4, sched/).
    pub sched: crate::kernel::sched::SchedKnobs,
    /// Filesystem and block I/O knobs of section F, set by `version` (kernel/fs).
    pub io: crate::kernel::fs::IoKnobs,
}

impl KernelConfig {
    /// Defaults for `machine`, as its kernel would boot without parameters.
    pub fn defaults(machine: &Machine) -> KernelConfig {
        KernelConfig::defaults_for(machine, Era::V2_6_9)
    }

    /// Defaults for `machine` running release `version`.
    pub fn defaults_for(machine: &Machine, version: Era) -> KernelConfig {
        let config_numa = default_config_numa(machine, version);
        KernelConfig {
            version,
            config_numa,
            hashdist: version.hashdist_default(machine.arch, config_numa, mem_nodes(machine)),
            thash_entries: 0,
            dhash_entries: 0,
            ihash_entries: 0,
            // The largest single vmalloc: IA64's 256 MB (HASHDIST04); the
            // whole vmalloc area on 32-bit i386 (128 MiB) and ARM (240 MiB).
            vmalloc_max_bytes: default_vmalloc_max(machine.arch),
            // Kconfig FORCE_MAX_ZONEORDER by arch and page size (machine/mod.rs).
            max_order: machine.arch.default_max_order(machine.page_size),
            min_free_kbytes: None,
            initcall_il_next: IlNext::Random,
            page_cache_alloc: Spread::Local,
            slab_alloc: Spread::Local,
            kswapd_trigger: KswapdTrigger::PerNode,
            vm: VmSysctl::default(),
            contention: crate::kernel::locking::contention::ContentionKnobs::defaults(machine),
            bigmem: crate::kernel::mm::bigmem::BigMemKnobs::defaults(machine),
            mm: crate::kernel::mm::flavour::MmKnobs::defaults(machine),
            sched: crate::kernel::sched::SchedKnobs::defaults(machine),
            io: crate::kernel::fs::IoKnobs::for_version(crate::kernel::fs::KernelVersion::V2_6_15),
        }
    }

    /// A knob's value in force, as records show it.
    pub fn knob_json(&self, knob: &str) -> Option<serde_json::Value> {
        use serde_json::json;
        Some(match knob {
            "version" if self.io.version_named => json!(self.io.version.name()),
            "version" => json!(self.version.name()),
            "config_numa" => json!(u8::from(self.config_numa)),
            "hashdist" => json!(u8::from(self.hashdist)),
            "thash_entries" => json!(self.thash_entries),
            "dhash_entries" => json!(self.dhash_entries),
            "ihash_entries" => json!(self.ihash_entries),
            "vmalloc_max_mb" => json!(self.vmalloc_max_bytes >> 20),
            "max_order" => json!(self.max_order),
            "min_free_kbytes" => self.min_free_kbytes.map_or(json!("auto"), |v| json!(v)),
            "page_cache_alloc" => json!(self.page_cache_alloc.name()),
            "slab_alloc" => json!(self.slab_alloc.name()),
            "kswapd_trigger" => json!(match self.kswapd_trigger {
                KswapdTrigger::Global => "global",
                KswapdTrigger::PerNode => "per-node",
            }),
            "initcall_il_next" => match self.initcall_il_next {
                IlNext::Random => json!("random"),
                IlNext::At(i) => json!(i),
            },
            other => {
                return self
                    .vm
                    .knob_json(other)
                    .or_else(|| self.contention.knob_json(other))
                    .or_else(|| self.mm.knob_json(other))
                    .or_else(|| self.sched.knob_json(other))
                    .or_else(|| self.io.knob_json(other))
            }
        })
    }

    /// Read the `[kernel]` table over the machine's defaults.
    pub fn read(r: &mut TableReader, machine: &Machine) -> Result<KernelConfig, InputError> {
        // One `version` for every mechanism: the I/O releases of [XFS06]
        // (sles9sp2, 2.6.15 .. 2.6.17) boot with 2.6.9-era tables; any
        // other release picks its boot-table era and the newest I/O paths
        // from 2.6.32 on.
        let mut io_version = None;
        let version = match r.raw("version") {
            None => Era::V2_6_9,
            Some(toml::Value::String(v)) => {
                match crate::kernel::fs::KernelVersion::NAMES
                    .iter()
                    .find(|(n, _)| n == v)
                {
                    Some(&(_, iov)) => {
                        io_version = Some(iov);
                        Era::V2_6_9
                    }
                    None => Era::parse(v).map_err(|e| {
                        InputError::at(
                            r.key("version"),
                            format!(
                                "{e}; for the I/O experiments also: {}",
                                crate::kernel::fs::KernelVersion::NAMES
                                    .iter()
                                    .map(|(n, _)| *n)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        )
                    })?,
                }
            }
            // TOML reads version = 3.10 as the number 3.1: ask for quotes.
            Some(v) => {
                return Err(InputError::at(
                    r.key("version"),
                    format!(
                        "expected a quoted release such as \"3.10\", found {}",
                        crate::input::table::describe(v)
                    ),
                ))
            }
        };
        let mut k = KernelConfig::defaults_for(machine, version);
        if let Some(v) = r.bool("config_numa")? {
            k.config_numa = v;
            k.hashdist = version.hashdist_default(machine.arch, v, mem_nodes(machine));
        }
        k.contention = crate::kernel::locking::contention::ContentionKnobs::read(r, machine)?;
        k.mm = crate::kernel::mm::flavour::MmKnobs::read(r, machine)?;
        k.sched = crate::kernel::sched::SchedKnobs::read(r, machine)?;
        k.bigmem = crate::kernel::mm::bigmem::BigMemKnobs::from_mm(&k.mm, machine)
            .map_err(|e| InputError::at(r.key("bigmem_mb"), e))?;
        if let Some(v) = r.bool("hashdist")? {
            k.hashdist = v;
        }
        k.thash_entries = hash_entries_knob(r, "thash_entries")?;
        k.dhash_entries = hash_entries_knob(r, "dhash_entries")?;
        k.ihash_entries = hash_entries_knob(r, "ihash_entries")?;
        if let Some(mb) = r.u64("vmalloc_max_mb")? {
            k.vmalloc_max_bytes = mb
                .checked_mul(1 << 20)
                .ok_or_else(|| InputError::at(r.key("vmalloc_max_mb"), "too large"))?;
        }
        if let Some(o) = r.u64("max_order")? {
            if !(1..=40).contains(&o) {
                return Err(InputError::at(
                    r.key("max_order"),
                    format!("{o}: allowed 1..40 (Linux uses 11 to 18)"),
                ));
            }
            k.max_order = o as u32;
        }
        if let Some(kb) = r.u64("min_free_kbytes")? {
            let mem_kb = machine.mem_bytes() / 1024;
            if kb > mem_kb {
                return Err(InputError::at(
                    r.key("min_free_kbytes"),
                    format!("{kb} kB is more than the machine's memory ({mem_kb} kB)"),
                ));
            }
            k.min_free_kbytes = Some(kb);
        }
        k.page_cache_alloc = r
            .choice("page_cache_alloc", Spread::NAMES)?
            .unwrap_or(k.page_cache_alloc);
        k.slab_alloc = r
            .choice("slab_alloc", Spread::NAMES)?
            .unwrap_or(k.slab_alloc);
        k.kswapd_trigger = r
            .choice(
                "kswapd_trigger",
                &[
                    ("global", KswapdTrigger::Global),
                    ("per-node", KswapdTrigger::PerNode),
                ],
            )?
            .unwrap_or(k.kswapd_trigger);
        k.vm = VmSysctl::read(r)?;
        let io_base = io_version.unwrap_or(if version >= Era::V2_6_32 {
            crate::kernel::fs::KernelVersion::V2_6_17
        } else {
            crate::kernel::fs::KernelVersion::V2_6_15
        });
        k.io = crate::kernel::fs::IoKnobs::read(r, io_base, io_version.is_some())?;
        // IO-less dirty throttling (3.2) on the releases after it, unless given.
        if version >= Era::V3_10 && !r.has("dirty_throttle") {
            k.io.dirty_throttle = crate::kernel::fs::DirtyThrottle::IoLess;
        }
        // Reclaim leaves dirty pages to the flushers from 3.2 on (B12).
        if version >= Era::V3_10 && !r.has("reclaim_writeback") {
            k.io.reclaim_writeback = crate::kernel::fs::ReclaimWriteback::Flusher;
        }
        // The version boots with its zone_reclaim_mode unless it is given (B13).
        if io_version.is_some() && !r.has("zone_reclaim_mode") {
            k.vm.zone_reclaim_mode = k.io.zone_reclaim_default();
        }
        match r.raw("initcall_il_next") {
            None => {}
            Some(toml::Value::String(s)) if s == "random" => k.initcall_il_next = IlNext::Random,
            Some(toml::Value::Integer(i)) if *i >= 0 => {
                let nodes = machine.nodes.iter().filter(|n| n.mem_bytes > 0).count() as u64;
                if *i as u64 >= nodes {
                    return Err(InputError::at(
                        r.key("initcall_il_next"),
                        format!(
                            "{i}: the interleave set has {nodes} nodes, so allowed 0..{}",
                            nodes - 1
                        ),
                    ));
                }
                k.initcall_il_next = IlNext::At(*i as u64);
            }
            Some(v) => {
                return Err(InputError::at(
                    r.key("initcall_il_next"),
                    format!(
                        "expected \"random\" or a node index, found {}",
                        crate::input::table::describe(v)
                    ),
                ));
            }
        }
        Ok(k)
    }
}

/// The largest single vmalloc by arch: IA64's 256 MB (HASHDIST04); the
/// whole vmalloc area on 32-bit i386 (128 MiB) and ARM (240 MiB); 0 (no
/// limit numasim models) elsewhere.
pub fn default_vmalloc_max(arch: Arch) -> u64 {
    match arch {
        Arch::Ia64 => 256 << 20,
        Arch::I386 => 128 << 20,
        Arch::Arm => 240 << 20,
        _ => 0,
    }
}

/// Nodes with memory (`N_MEMORY`).
pub fn mem_nodes(machine: &Machine) -> usize {
    machine.nodes.iter().filter(|n| n.mem_bytes > 0).count()
}

/// `CONFIG_NUMA` as the machine's kernel was built: 2.6.9 (SGI's Altix
/// kernels) by node count; later distribution kernels on every 64-bit arch.
pub fn default_config_numa(machine: &Machine, version: Era) -> bool {
    match version {
        Era::V2_6_9 => machine.node_count() > 1,
        _ => machine.arch.is_64bit(),
    }
}

/// Largest `*hash_entries=` numasim accepts: `alloc_large_system_hash()`
/// keeps at most 2^31 entries (`max = min(max, 0x80000000ULL)`), and the
/// boot parameters are parsed into an `unsigned long`.
pub const MAX_HASH_ENTRIES: u64 = 1 << 31;

/// A `*hash_entries=` knob: 0 (or absent) sizes the table from memory, as
/// the kernel reads `thash_entries=0`; above 2^31 is refused.
fn hash_entries_knob(r: &mut TableReader, key: &'static str) -> Result<u64, InputError> {
    match r.u64(key)? {
        Some(n) if n > MAX_HASH_ENTRIES => Err(InputError::at(
            r.key(key),
            format!("{n}: above the kernel's 2^31-entry cap; allowed 0 (size from memory) or 1..=2147483648"),
        )),
        n => Ok(n.unwrap_or(0)),
    }
}
