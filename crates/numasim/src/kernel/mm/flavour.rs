//! Kernel flavours of the Blue Gene/P experiments ([BGP-BIGMEM] D1–D15) and
//! the address-translation knobs they set: page size, L2 optimistic
//! prefetch, the tick rate, Big Memory and the pinned TLB partitions.
//!
//! The case key `kernel` (`cnk`, `linux`, `linux-4k`, `linux-64k`,
//! `bigmem`) is `kernel.flavour`; it sets the defaults below, and each
//! knob written beside it overrides its flavour's value. docs/tlb.md.

use crate::error::InputError;
use crate::input::size::format_size;
use crate::input::table::TableReader;
use crate::kernel::knobs::{self, choice_knob, Allowed, Knob};
use crate::machine::Machine;
use serde_json::{json, Value as Json};

/// Size of one Big Memory TLB entry ([BGP-BIGMEM] D8).
pub const BIGMEM_ENTRY: u64 = 256 << 20;

knob_enum! {
    /// Which kernel runs on the node.
    Flavour {
        /// IBM Compute Node Kernel: static offset mapping, no TLB misses (D1).
        Cnk = "cnk",
        /// Paged Linux at the machine's page size (D2).
        Linux = "linux",
        /// Paged Linux, 4 kB pages (D2).
        Linux4k = "linux-4k",
        /// Paged Linux, 64 kB pages (D4).
        Linux64k = "linux-64k",
        /// ZeptoOS Big Memory: the compute process in pinned 256 MB entries (D6–D11).
        Bigmem = "bigmem",
    }
}
knob_enum! {
    /// The L2 stream prefetcher's mode (D3).
    L2Prefetch { Optimistic = "optimistic", Off = "off" }
}
knob_enum! {
    /// Victim choice of the paged TLB partition.
    Replacement {
        /// Round robin over the paged entries, as the PPC44x software
        /// handler's `tlb_44x_index` does (FIFO).
        RoundRobin = "round-robin",
        /// Least recently used.
        Lru = "lru",
        /// A random victim.
        Random = "random",
    }
}

/// How `gettimeofday()` is served by the kernel (D1, D2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallModel {
    /// CNK: every register saved, 64-bit timebase conversion.
    FullSave64,
    /// Linux: volatile registers saved, 32-bit delta since the last tick.
    MinimalSave32,
}

/// The address-translation and noise knobs in force.
#[derive(Debug, Clone, PartialEq)]
pub struct MmKnobs {
    pub flavour: Flavour,
    /// Base page of paged memory, bytes.
    pub page_size: u64,
    pub l2_prefetch: L2Prefetch,
    /// Timer ticks per second on the compute core (0 = none, as on CNK).
    pub hz: u32,
    /// Size of the Big Memory region, MB (0 = none).
    pub bigmem_mb: u64,
    /// TLB entries pinned for device mappings.
    pub tlb_device_entries: u32,
    /// Disable nonessential interrupts while the compute process runs (D13).
    pub bigmem_quiet_irqs: bool,
    pub tlb_replacement: Replacement,
}

impl MmKnobs {
    pub fn defaults(machine: &Machine) -> Self {
        MmKnobs {
            flavour: Flavour::Linux,
            page_size: machine.page_size,
            l2_prefetch: L2Prefetch::Off,
            hz: machine.timer.hz,
            bigmem_mb: 0,
            tlb_device_entries: machine.tlb.device_entries,
            bigmem_quiet_irqs: false,
            // PPC44x software refill: round robin (`tlb_44x_index`);
            // hardware TLBs approximate LRU.
            tlb_replacement: match machine.tlb.refill {
                crate::machine::TlbRefill::Software => Replacement::RoundRobin,
                crate::machine::TlbRefill::Hardware => Replacement::Lru,
            },
        }
    }

    /// The flavour's defaults on `machine`.
    pub fn for_flavour(f: Flavour, machine: &Machine) -> Self {
        let mut k = MmKnobs::defaults(machine);
        k.flavour = f;
        match f {
            Flavour::Cnk => {
                k.l2_prefetch = L2Prefetch::Optimistic;
                k.hz = 0;
            }
            Flavour::Linux => {}
            Flavour::Linux4k => k.page_size = 4 << 10,
            Flavour::Linux64k => k.page_size = 64 << 10,
            Flavour::Bigmem => {
                // The paged part keeps the machine's base page (4 KiB on
                // bgp-node): docs/tlb.md.
                k.l2_prefetch = L2Prefetch::Optimistic;
                k.bigmem_mb = default_bigmem_mb(machine);
            }
        }
        k
    }

    pub fn syscall_model(&self) -> SyscallModel {
        match self.flavour {
            Flavour::Cnk => SyscallModel::FullSave64,
            _ => SyscallModel::MinimalSave32,
        }
    }

    /// TLB entries the Big Memory group pins.
    pub fn bigmem_entries(&self) -> u32 {
        // Saturate, never wrap: TlbPartition::new refuses more than the TLB holds.
        u32::try_from(self.bigmem_mb / 256).unwrap_or(u32::MAX)
    }

    pub fn knob_json(&self, knob: &str) -> Option<Json> {
        knobs::json_of(KNOBS, self, knob)
    }

    pub fn read(r: &mut TableReader, machine: &Machine) -> Result<Self, InputError> {
        let mut k = MmKnobs::for_flavour(Flavour::Linux, machine);
        knobs::read_all(KNOBS, r, &mut k, machine)?;
        // One entry at least must stay paged (mm/bigmem.rs `TlbPartition`).
        crate::kernel::mm::bigmem::TlbPartition::new(
            machine.tlb.entries,
            machine.tlb.kernel_entries,
            k.tlb_device_entries,
            k.bigmem_entries(),
        )
        .map_err(|e| InputError::at(r.key("tlb_device_entries"), e.to_string()))?;
        Ok(k)
    }
}

/// The flavour and address-translation knobs, declared once
/// (kernel/knobs.rs); read in this order: `flavour` first, since it sets
/// the others' defaults. docs/tlb.md.
pub const KNOBS: &[Knob<MmKnobs>] = &[
    Knob {
        name: "flavour",
        allowed: Allowed::Names(|| Flavour::NAMES.iter().map(|(n, _)| *n).collect()),
        default: "`linux`",
        doc: "the kernel on a Blue Gene/P node (D1–D11); sets the defaults of the knobs below (the case key `kernel`)",
        read: |r, k, machine| {
            if let Some(f) = r.choice("flavour", Flavour::NAMES)? {
                *k = MmKnobs::for_flavour(f, machine);
            }
            Ok(())
        },
        json: |k| json!(k.flavour.name()),
    },
    Knob {
        name: "page_size",
        allowed: Allowed::Text("a size the machine's TLB maps (machine `[tlb] page_sizes`)"),
        default: "the machine's base page; 4 KiB on `linux-4k`, 64 KiB on `linux-64k`",
        doc: "the base page of paged memory (D2, D4)",
        read: |r, k, machine| {
            if let Some(p) = r.size("page_size")? {
                if !machine.tlb.page_sizes.contains(&p) {
                    let allowed: Vec<String> = machine
                        .tlb
                        .page_sizes
                        .iter()
                        .map(|&s| format_size(s))
                        .collect();
                    return Err(InputError::at(
                        r.key("page_size"),
                        format!(
                            "{}: the machine's TLB maps {} (machine [tlb] page_sizes)",
                            format_size(p),
                            allowed.join(", ")
                        ),
                    ));
                }
                k.page_size = p;
            }
            if !machine.tlb.page_sizes.contains(&k.page_size) && k.flavour != Flavour::Cnk {
                return Err(InputError::at(
                    r.key("flavour"),
                    format!(
                        "`{}` uses {} pages, which this machine's TLB does not map (machine [tlb] page_sizes)",
                        k.flavour.name(),
                        format_size(k.page_size)
                    ),
                ));
            }
            Ok(())
        },
        json: |k| json!(format_size(k.page_size)),
    },
    choice_knob!(MmKnobs, l2_prefetch, L2Prefetch,
        default: "`off`; `optimistic` on `cnk` and `bigmem`",
        doc: "the L2 stream prefetcher's mode (D3)"),
    Knob {
        name: "hz",
        allowed: Allowed::Text("0..100000 (0 = no tick)"),
        default: "the machine's `[timer] hz`; 0 on `cnk`",
        doc: "timer ticks per second on the compute core (0 = none, as on CNK)",
        read: |r, k, _| {
            if let Some(hz) = r.u64("hz")? {
                if hz > 100_000 {
                    return Err(InputError::at(
                        r.key("hz"),
                        format!("{hz}: allowed 0..100000 (0 = no tick)"),
                    ));
                }
                k.hz = hz as u32;
            }
            Ok(())
        },
        json: |k| json!(k.hz),
    },
    Knob {
        name: "bigmem_mb",
        allowed: Allowed::Text("a multiple of 256, at most the machine's memory"),
        default: "0; on `bigmem` 1792 where the boot node and TLB allow, less on smaller machines",
        doc: "the Big Memory region in pinned 256 MB TLB entries (D6–D11)",
        read: |r, k, machine| {
            if let Some(mb) = r.u64("bigmem_mb")? {
                let mem_mb = machine.mem_bytes() >> 20;
                if mb % 256 != 0 {
                    return Err(InputError::at(
                        r.key("bigmem_mb"),
                        format!("{mb}: must be a multiple of 256 (one 256 MB TLB entry each)"),
                    ));
                }
                if mb > mem_mb {
                    return Err(InputError::at(
                        r.key("bigmem_mb"),
                        format!("{mb} MB is more than the machine's memory ({mem_mb} MB)"),
                    ));
                }
                k.bigmem_mb = mb;
            }
            if k.bigmem_mb > 0 && !machine.tlb.page_sizes.contains(&BIGMEM_ENTRY) {
                return Err(InputError::at(
                    r.key("bigmem_mb"),
                    "Big Memory needs 256 MiB TLB entries, which this machine's TLB does not map \
                     (machine [tlb] page_sizes)",
                ));
            }
            Ok(())
        },
        json: |k| json!(k.bigmem_mb),
    },
    Knob {
        name: "tlb_device_entries",
        allowed: Allowed::Text("a whole number; one TLB entry at least stays paged"),
        default: "the machine's `[tlb] device_entries`",
        doc: "TLB entries pinned for device mappings",
        read: |r, k, _| {
            if let Some(d) = r.u64("tlb_device_entries")? {
                k.tlb_device_entries = d.min(u32::MAX as u64) as u32;
            }
            Ok(())
        },
        json: |k| json!(k.tlb_device_entries),
    },
    Knob {
        name: "bigmem_quiet_irqs",
        allowed: Allowed::Bool,
        default: "0",
        doc: "disable nonessential interrupts while the compute process runs (D13)",
        read: |r, k, _| {
            k.bigmem_quiet_irqs = r.bool("bigmem_quiet_irqs")?.unwrap_or(false);
            Ok(())
        },
        json: |k| json!(u8::from(k.bigmem_quiet_irqs)),
    },
    choice_knob!(MmKnobs, tlb_replacement, Replacement,
        default: "`round-robin` with a software-refilled TLB (PPC44x `tlb_44x_index`), `lru` with a hardware one",
        doc: "the victim choice of the paged TLB partition"),
];

/// Seven 256 MB entries (1792 MB, the paper's example) where the boot
/// node allows, leaving at least 256 MB to the paged kernel; less on
/// smaller machines.
fn default_bigmem_mb(machine: &Machine) -> u64 {
    let avail_mb = crate::kernel::mm::bigmem::available_bytes(machine) >> 20;
    let fit = avail_mb.saturating_sub(256) / 256 * 256;
    let room = (machine.tlb.entries as u64)
        .saturating_sub(machine.tlb.kernel_entries as u64 + machine.tlb.device_entries as u64 + 1)
        * 256;
    fit.min(1792).min(room)
}
