//! Kernel knobs, named as in Linux, read and validated in one place. Their
//! defaults depend on the architecture the way the kernel's did; each
//! default is documented in docs/placement.md.

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::kernel::era::Era;
use crate::kernel::knobs::{self, choice_knob, Allowed, Knob, KnobDoc};
use crate::kernel::mm::page_alloc::KswapdTrigger;
use crate::kernel::mm::sysctl_vm::VmSysctl;
use crate::machine::{Arch, Machine};
use serde_json::json;

/// Where the boot task's interleave cursor stands when the initcalls allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IlNext {
    /// Drawn from the scenario seed: real boots differ here.
    Random,
    /// Index into the interleave set (nodes with memory).
    At(u64),
}

knob_enum! {
    /// Where a class of kernel allocations goes ([ALTIX04] A4, A5).
    Spread {
        /// On the allocating CPU's node (mainline).
        Local = "local",
        /// `GFP_ROUND_ROBIN`: a per-CPU counter modulo the nodes picks the zonelist.
        RoundRobin = "round-robin",
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct KernelConfig {
    /// `kernel.version`: the release, which picks the boot-table formulas
    /// (`Era::boot_tables`) and the I/O paths (`Era::io_release`), era.rs.
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
        let config_numa = default_config_numa(machine, version.boot_tables());
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
            contention: crate::kernel::locking::contention::ContentionKnobs::defaults_for(
                machine, version,
            ),
            bigmem: crate::kernel::mm::bigmem::BigMemKnobs::defaults(machine),
            mm: crate::kernel::mm::flavour::MmKnobs::defaults(machine),
            sched: crate::kernel::sched::SchedKnobs::defaults(machine),
            io: crate::kernel::fs::IoKnobs::for_version(version),
        }
    }

    /// A knob's value in force, as records show it.
    pub fn knob_json(&self, knob: &str) -> Option<serde_json::Value> {
        knobs::json_of(KNOBS, self, knob)
            .or_else(|| self.vm.knob_json(knob))
            .or_else(|| self.contention.knob_json(knob))
            .or_else(|| self.mm.knob_json(knob))
            .or_else(|| self.sched.knob_json(knob))
            .or_else(|| self.io.knob_json(knob))
    }

    /// Read the `[kernel]` table over the machine's defaults.
    pub fn read(r: &mut TableReader, machine: &Machine) -> Result<KernelConfig, InputError> {
        // One `version` for every mechanism: the I/O releases of [XFS06]
        // (sles9sp2, 2.6.15 .. 2.6.17) boot with 2.6.9-era tables; any
        // other release picks its boot-table era and the newest I/O paths
        // from 2.6.32 on (`Era::boot_tables`, `Era::io_release`).
        let version = match r.raw("version") {
            None => Era::V2_6_9,
            Some(toml::Value::String(v)) => {
                Era::from_setting(v).map_err(|e| InputError::at(r.key("version"), e))?
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
        // `version` is read above (it picks every default); `config_numa`
        // before the subsystems, since hashdist's default follows it.
        knobs::read_all(&KNOBS[1..2], r, &mut k, machine)?;
        k.contention =
            crate::kernel::locking::contention::ContentionKnobs::read_for(r, machine, version)?;
        k.mm = crate::kernel::mm::flavour::MmKnobs::read(r, machine)?;
        k.sched = crate::kernel::sched::SchedKnobs::read(r, machine)?;
        k.bigmem = crate::kernel::mm::bigmem::BigMemKnobs::from_mm(&k.mm, machine)
            .map_err(|e| InputError::at(r.key("bigmem_mb"), e))?;
        knobs::read_all(&KNOBS[2..], r, &mut k, machine)?;
        k.vm = VmSysctl::read(r, machine)?;
        k.io = crate::kernel::fs::IoKnobs::read(r, version, machine)?;
        // IO-less dirty throttling (3.2) on the releases after it, unless given.
        if version >= Era::V3_10 && !r.has("dirty_throttle") {
            k.io.dirty_throttle = crate::kernel::fs::DirtyThrottle::IoLess;
        }
        // Reclaim leaves dirty pages to the flushers from 3.2 on (B12).
        if version >= Era::V3_10 && !r.has("reclaim_writeback") {
            k.io.reclaim_writeback = crate::kernel::fs::ReclaimWriteback::Flusher;
        }
        // The version boots with its zone_reclaim_mode unless it is given (B13).
        if version.is_io_release() && !r.has("zone_reclaim_mode") {
            k.vm.zone_reclaim_mode = k.io.zone_reclaim_default();
        }
        Ok(k)
    }
}

const KSWAPD_TRIGGER: &[(&str, KswapdTrigger)] = &[
    ("global", KswapdTrigger::Global),
    ("per-node", KswapdTrigger::PerNode),
];

/// The boot and placement knobs of `[kernel]` itself, declared once
/// (kernel/knobs.rs); the subsystems declare theirs beside their models
/// ([`knob_docs`] lists them all). docs/placement.md.
pub const KNOBS: &[Knob<KernelConfig>] = &[
    Knob {
        name: "version",
        allowed: Allowed::Text("a quoted release: `2.6.9`, `2.6.32`, `3.10`, `4.15`, `5.4`, `6.8` (vendor strings map to the nearest), or an I/O release of [XFS06]: `sles9sp2`, `2.6.15`, `2.6.15-slowpurge`, `2.6.16`, `2.6.17`"),
        default: "`2.6.9`",
        doc: "the release: its boot-table formulas (era.rs, docs/placement.md) and its I/O paths (docs/io.md); every other knob's default follows it",
        // Read first, by `KernelConfig::read`: it picks the defaults.
        read: |_, _, _| Ok(()),
        json: |k| json!(k.version.name()),
    },
    Knob {
        name: "config_numa",
        allowed: Allowed::Bool,
        default: "on 2.6.9 with more than one node; later, on every 64-bit arch",
        doc: "CONFIG_NUMA of the kernel build",
        read: |r, k, machine| {
            if let Some(v) = r.bool("config_numa")? {
                k.config_numa = v;
                k.hashdist = k.version.hashdist_default(machine.arch, v, mem_nodes(machine));
            }
            Ok(())
        },
        json: |k| json!(u8::from(k.config_numa)),
    },
    Knob {
        name: "hashdist",
        allowed: Allowed::Bool,
        default: "the release's HASHDIST_DEFAULT (2.6.9: CONFIG_NUMA on ia64)",
        doc: "`hashdist=`: boot hashes from vmalloc (interleaved over nodes) instead of one node (A1)",
        read: |r, k, _| {
            if let Some(v) = r.bool("hashdist")? {
                k.hashdist = v;
            }
            Ok(())
        },
        json: |k| json!(u8::from(k.hashdist)),
    },
    hash_entries_knob!(thash_entries, "`thash_entries=`: TCP established hash entries"),
    hash_entries_knob!(dhash_entries, "`dhash_entries=`: dentry hash entries"),
    hash_entries_knob!(ihash_entries, "`ihash_entries=`: inode hash entries"),
    Knob {
        name: "vmalloc_max_mb",
        allowed: Allowed::Text("MB, 0 = no cap"),
        default: "256 on ia64, 128 on i386, 240 on ARM, 0 elsewhere",
        doc: "the largest single vmalloc (a hashdist table larger than it falls back)",
        read: |r, k, _| {
            if let Some(mb) = r.u64("vmalloc_max_mb")? {
                k.vmalloc_max_bytes = mb
                    .checked_mul(1 << 20)
                    .ok_or_else(|| InputError::at(r.key("vmalloc_max_mb"), "too large"))?;
            }
            Ok(())
        },
        json: |k| json!(k.vmalloc_max_bytes >> 20),
    },
    Knob {
        name: "max_order",
        allowed: Allowed::Text("1..40"),
        default: "Kconfig FORCE_MAX_ZONEORDER by arch and page size",
        doc: "MAX_ORDER: the largest buddy block is 2^(max_order-1) pages",
        read: |r, k, _| {
            if let Some(o) = r.u64("max_order")? {
                if !(1..=40).contains(&o) {
                    return Err(InputError::at(
                        r.key("max_order"),
                        format!("{o}: allowed 1..40 (Linux uses 11 to 18)"),
                    ));
                }
                k.max_order = o as u32;
            }
            Ok(())
        },
        json: |k| json!(k.max_order),
    },
    Knob {
        name: "min_free_kbytes",
        allowed: Allowed::Text("kB, at most the machine's memory, or `\"auto\"`"),
        default: "`auto`: the 2.6 formula, sqrt(lowmem kB × 16)",
        doc: "min_free_kbytes: the zones' watermarks",
        read: |r, k, machine| {
            // "auto", as records show the formula's value, reads back.
            if matches!(r.raw("min_free_kbytes"), Some(toml::Value::String(s)) if s == "auto") {
                k.min_free_kbytes = None;
            } else if let Some(kb) = r.u64("min_free_kbytes")? {
                let mem_kb = machine.mem_bytes() / 1024;
                if kb > mem_kb {
                    return Err(InputError::at(
                        r.key("min_free_kbytes"),
                        format!("{kb} kB is more than the machine's memory ({mem_kb} kB)"),
                    ));
                }
                k.min_free_kbytes = Some(kb);
            }
            Ok(())
        },
        json: |k| k.min_free_kbytes.map_or(json!("auto"), |v| json!(v)),
    },
    choice_knob!(KernelConfig, page_cache_alloc, Spread,
        default: "`local`",
        doc: "page_cache_alloc() placement: the allocating CPU's node or SGI's GFP_ROUND_ROBIN (A4)"),
    choice_knob!(KernelConfig, slab_alloc, Spread,
        default: "`local`",
        doc: "slab page placement, e.g. buffer heads (kmem_getpages(), A5)"),
    Knob {
        name: "kswapd_trigger",
        allowed: Allowed::Names(|| KSWAPD_TRIGGER.iter().map(|(n, _)| *n).collect()),
        default: "`per-node`",
        doc: "when kswapd wakes: 2.4's global pressure or 2.6's zonelist walk (B1)",
        read: |r, k, _| {
            k.kswapd_trigger = r
                .choice("kswapd_trigger", KSWAPD_TRIGGER)?
                .unwrap_or(k.kswapd_trigger);
            Ok(())
        },
        json: |k| {
            json!(match k.kswapd_trigger {
                KswapdTrigger::Global => "global",
                KswapdTrigger::PerNode => "per-node",
            })
        },
    },
    Knob {
        name: "initcall_il_next",
        allowed: Allowed::Text("`\"random\"` or a node index into the interleave set"),
        default: "`random` (drawn from the seed: real boots differ here)",
        doc: "where the boot task's interleave cursor stands when inet_init() allocates",
        read: |r, k, machine| {
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
            Ok(())
        },
        json: |k| match k.initcall_il_next {
            IlNext::Random => json!("random"),
            IlNext::At(i) => json!(i),
        },
    },
];

/// Every `[kernel]` knob, by subsystem, as `numasim knobs` and
/// docs/knobs.md show them.
pub fn knob_docs() -> Vec<KnobDoc> {
    let mut v = knobs::docs_of("boot and placement (kernel/config.rs)", KNOBS);
    v.extend(knobs::docs_of(
        "reclaim, swap, writeback and OOM (kernel/mm/sysctl_vm.rs)",
        crate::kernel::mm::sysctl_vm::KNOBS,
    ));
    v.extend(knobs::docs_of(
        "flavour and address translation (kernel/mm/flavour.rs)",
        crate::kernel::mm::flavour::KNOBS,
    ));
    v.extend(knobs::docs_of(
        "contention (kernel/locking/contention.rs)",
        crate::kernel::locking::contention::KNOBS,
    ));
    v.extend(knobs::docs_of(
        "scheduler (kernel/sched/mod.rs)",
        crate::kernel::sched::KNOBS,
    ));
    v.extend(knobs::docs_of(
        "filesystems and block I/O (kernel/fs/mod.rs)",
        crate::kernel::fs::KNOBS,
    ));
    v
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
macro_rules! hash_entries_knob {
    ($field:ident, $doc:literal) => {
        Knob::<KernelConfig> {
            name: stringify!($field),
            allowed: Allowed::Text("0 (size from memory) or 1..=2147483648"),
            default: "0",
            doc: $doc,
            read: |r, k, _| {
                let key = stringify!($field);
                k.$field = match r.u64(key)? {
                    Some(n) if n > MAX_HASH_ENTRIES => return Err(InputError::at(
                        r.key(key),
                        format!("{n}: above the kernel's 2^31-entry cap; allowed 0 (size from memory) or 1..=2147483648"),
                    )),
                    n => n.unwrap_or(0),
                };
                Ok(())
            },
            json: |k| json!(k.$field),
        }
    };
}
use hash_entries_knob;
