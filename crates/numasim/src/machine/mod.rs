//! The machine model: nodes with CPUs and memory, distances, caches, TLB,
//! interconnect, I/O, and the boot-time footprint of the kernel built for it.
//!
//! A machine is read from TOML (a preset under `machines/`, a file, or an
//! import), validated once into [`Machine`], and shared by every experiment
//! run on it. `docs/machine.md` gives each field's meaning and each preset's
//! sources.

pub(crate) mod blockio;
pub(crate) mod coherence;
pub mod defaults;
pub(crate) mod distance;
pub(crate) mod hierarchy;
pub mod import;
pub(crate) mod memsys;
pub(crate) mod pci;
pub mod presets;
pub mod slit_text;
pub mod storage;
mod toml_io;

pub use coherence::{Coherence, FaultCosts, Timer};
pub use distance::{DistanceSpec, Distances, SlitRows};
pub use hierarchy::{Access, Hierarchy, Noise, Replacement, SyscallCosts, RFO_COST};
pub use memsys::{Domain, MemSys};
pub use pci::PciBus;

use crate::error::InputError;

/// Largest node count numasim accepts: an explicit distance matrix (and the
/// zonelists sorted from it) grows as nodes², and 8192 nodes is already
/// 64 Mi entries; nested-group machines keep neither.
pub const MAX_NODES: usize = 8192;
/// Largest CPU count: per-CPU state is small, but a bound keeps a typo
/// (`cpus_per_node = 1000000`) from exhausting memory.
pub const MAX_CPUS: u64 = 1 << 21;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Ia64,
    Alpha,
    Ppc32,
    X86_64,
    Aarch64,
    /// 32-bit x86: lowmem/highmem split, 128 MiB of vmalloc space.
    I386,
    /// 64-bit POWER, little endian; distributions build it with 64 KiB pages.
    Ppc64le,
    /// 64-bit POWER, big endian (PowerMac G5, older pSeries distributions);
    /// the boot tables are sized as on ppc64le.
    Ppc64,
    /// 32-bit ARM (ARMv7): lowmem/highmem split, 240 MiB of vmalloc space.
    Arm,
}

impl Arch {
    /// Names as `uname -m` and the kernel tree spell them; the first name
    /// of an architecture is the one written back (`arm64` reads as `aarch64`).
    pub const NAMES: &'static [(&'static str, Arch)] = &[
        ("ia64", Arch::Ia64),
        ("alpha", Arch::Alpha),
        ("ppc32", Arch::Ppc32),
        ("x86_64", Arch::X86_64),
        ("aarch64", Arch::Aarch64),
        ("arm64", Arch::Aarch64),
        ("i386", Arch::I386),
        ("i686", Arch::I386),
        ("ppc64le", Arch::Ppc64le),
        ("ppc64", Arch::Ppc64),
        ("arm", Arch::Arm),
        ("armv7l", Arch::Arm),
    ];
    pub fn name(self) -> &'static str {
        Arch::NAMES
            .iter()
            .find(|(_, a)| *a == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }
    pub fn is_64bit(self) -> bool {
        !matches!(self, Arch::Ppc32 | Arch::I386 | Arch::Arm)
    }
    /// `sizeof(void *)`: a hash bucket is one or more pointers.
    pub fn pointer_bytes(self) -> u64 {
        if self.is_64bit() {
            8
        } else {
            4
        }
    }
    /// Base page sizes the architecture's Kconfig offers (`PAGE_SHIFT`).
    pub fn page_sizes(self) -> &'static [u64] {
        const K: u64 = 1024;
        match self {
            Arch::X86_64 | Arch::I386 | Arch::Arm => &[4 * K],
            Arch::Alpha => &[8 * K],
            Arch::Ia64 => &[4 * K, 8 * K, 16 * K, 64 * K],
            Arch::Aarch64 => &[4 * K, 16 * K, 64 * K],
            Arch::Ppc64le | Arch::Ppc64 => &[4 * K, 64 * K],
            // 44x (Blue Gene/P): PPC_4K/16K/64K/256K_PAGES.
            Arch::Ppc32 => &[4 * K, 16 * K, 64 * K, 256 * K],
        }
    }
    /// Bytes of directly mapped (low) memory on 32-bit kernels with the
    /// default 3G/1G split: i386 `MAXMEM` (896 MiB less the 128 MiB vmalloc
    /// reserve is mapped up to 896 MiB), ARM's 760 MiB below `VMALLOC_START`
    /// with the 240 MiB default vmalloc area. None: all memory is lowmem.
    /// Not applied to ppc32, whose Blue Gene/P calibration predates it.
    pub fn lowmem_bytes(self) -> Option<u64> {
        match self {
            Arch::I386 => Some(896 << 20),
            Arch::Arm => Some(760 << 20),
            _ => None,
        }
    }
    /// `MAX_ORDER` as Kconfig sets it (exclusive: the largest block is
    /// 2^(MAX_ORDER-1) pages): IA64 `FORCE_MAX_ZONEORDER` 17 with hugetlb,
    /// arm64 14 with 64 KiB pages and 12 with 16 KiB, ppc64 9 with 64 KiB
    /// pages, 11 elsewhere.
    pub fn default_max_order(self, page_size: u64) -> u32 {
        match (self, page_size >> 10) {
            (Arch::Ia64, _) => 17,
            (Arch::Aarch64, 64) => 14,
            (Arch::Aarch64, 16) => 12,
            (Arch::Ppc64le | Arch::Ppc64, 64) => 9,
            _ => 11,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub cpus: u32,
    /// Present memory in bytes (what `MemTotal` of the node reports). Zero
    /// for a memoryless node.
    pub mem_bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cache {
    pub level: u8,
    pub size: u64,
    pub latency_cycles: f64,
    /// How many CPUs share one instance (1 = private).
    pub shared_by: u32,
    /// One core's copy rate (buffer bytes per second of one pass) when
    /// the buffer lives in this cache, MB/s; `None` streams it at
    /// `[hierarchy] stream_mbps` (docs/tlb.md, "Copy through the caches").
    pub copy_mbps: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cpu {
    pub model: String,
    pub clock_mhz: f64,
    pub cache_line: u32,
    pub caches: Vec<Cache>,
}

impl Cpu {
    /// The highest-level cache (the last of them where levels tie), or
    /// `None` on a machine described without caches.
    pub fn last_level_cache(&self) -> Option<&Cache> {
        self.caches.iter().max_by_key(|c| c.level)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlbRefill {
    Hardware,
    Software,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tlb {
    pub entries: u32,
    /// Page sizes the MMU can map, smallest first.
    pub page_sizes: Vec<u64>,
    /// Cost of one miss (walk or software refill), in ns.
    pub miss_ns: f64,
    pub refill: TlbRefill,
    /// Entries pinned for kernel memory (bolted entries above the
    /// software handler's high-water mark).
    pub kernel_entries: u32,
    /// Entries pinned for memory-mapped devices: the default of
    /// `kernel.tlb_device_entries`.
    pub device_entries: u32,
    /// Page-table levels a walk reads for the smallest page size; each
    /// 512-fold larger page reads one level less.
    pub walk_levels: u32,
    /// L1 data lines one miss evicts (the handler's or walker's own loads).
    pub miss_l1_lines: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// Load-to-use latency of local memory, ns; remote scales with distance.
    pub latency_ns: f64,
    /// Sustainable bandwidth of one node's memory, GB/s (10^9 B/s).
    pub bandwidth_gbps: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Interconnect {
    /// Each node's link into the fabric, GB/s in each direction.
    pub link_gbps: f64,
    /// Time to move one cache line's ownership between two CPUs of one node, ns.
    /// Between nodes it scales with distance like memory latency.
    pub line_transfer_ns: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DiskGroup {
    pub count: u32,
    pub kind: String,
    /// Streaming rate of one disk, MiB/s (reads; writes too unless
    /// `write_mibps` is set).
    pub mibps: f64,
    /// Streaming write rate, MiB/s, where it differs from `mibps`: NAND
    /// programs slower than it reads; a platter writes as fast as it reads.
    pub write_mibps: Option<f64>,
}

impl DiskGroup {
    /// Media rate of one disk for a write, MiB/s.
    pub fn write_rate(&self) -> f64 {
        self.write_mibps.unwrap_or(self.mibps)
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Io {
    /// Nodes that carry I/O (PCI buses), by node id.
    pub io_nodes: Vec<u32>,
    pub controllers: u32,
    pub disks: Vec<DiskGroup>,
}

/// The kernel's fixed boot-time footprint on this machine: what is reserved
/// before any table this model sizes is allocated.
#[derive(Debug, Clone, PartialEq)]
pub struct BootFootprint {
    /// `sizeof(struct page)`: the memory map costs this per present page.
    pub struct_page_bytes: u64,
    /// Per-CPU data area, reserved on each CPU's node.
    pub percpu_area: u64,
    /// Other per-node boot reservations (pgdat, node-local kernel data).
    pub node_reserved: u64,
    /// Kernel image and early allocations on the boot node not modelled one by one.
    pub kernel_reserved: u64,
    /// Node whose CPU boots the kernel.
    pub boot_node: u32,
}

/// The filesystem and block layer as the kernel of this machine uses them.
#[derive(Debug, Clone, PartialEq)]
pub struct Fs {
    /// Slab bytes (buffer heads and what comes with them) allocated per
    /// page-cache page by buffered I/O.
    pub slab_per_cached_page: u64,
}

/// The era whose defaults a machine file gets (defaults.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Era {
    #[default]
    /// numasim's built-in defaults (the machines of the 2004 papers).
    Y2004,
    /// Values of `defaults::TODAY_SOURCE` for `defaults::TODAY_KEYS`.
    Today,
}

impl Era {
    pub const NAMES: &'static [(&'static str, Era)] =
        &[("2004", Era::Y2004), ("today", Era::Today)];
    pub fn name(self) -> &'static str {
        match self {
            Era::Y2004 => "2004",
            Era::Today => "today",
        }
    }
}

/// The dotted keys a machine's table gave (`fault.fault_ns`), before any
/// default filled it in: a value is defaulted because its key was absent,
/// not because it equals a default (a file may state the default value).
/// Provenance, not physics: it compares equal for every machine, so a
/// machine written back and read again is the same machine.
#[derive(Debug, Clone, Default)]
pub struct Given(std::collections::BTreeSet<String>);

impl PartialEq for Given {
    fn eq(&self, _: &Given) -> bool {
        true
    }
}

impl Given {
    /// The keys of a machine table (as `--set` spells them).
    pub fn of(t: &toml::Table) -> Given {
        Given(
            crate::input::merge::flatten(t)
                .into_iter()
                .map(|(k, _)| k)
                .collect(),
        )
    }
    pub fn contains(&self, key: &str) -> bool {
        self.0.contains(key)
    }
    /// A value set after reading, as the probe sets what it measured.
    pub fn insert(&mut self, key: &str) {
        self.0.insert(key.to_string());
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub name: String,
    pub description: String,
    pub arch: Arch,
    pub page_size: u64,
    pub nodes: Vec<Node>,
    pub distance_spec: DistanceSpec,
    pub distances: Distances,
    pub memory: Memory,
    pub interconnect: Interconnect,
    pub cpu: Cpu,
    pub tlb: Tlb,
    pub io: Io,
    pub fs: Fs,
    /// `[block]`: disks, HBAs, I/O nodes and I/O path lengths (blockio.rs);
    /// None on machines no I/O experiment runs on.
    pub block: Option<blockio::BlockParams>,
    pub boot: BootFootprint,
    /// Swap space (`swapon`), bytes; it lives on the machine's disks.
    pub swap_bytes: u64,
    /// `[coherence]`, `[timer]`, `[fault]`: contention parameters (coherence.rs).
    pub coherence: Coherence,
    pub timer: Timer,
    pub fault: FaultCosts,
    /// `[hierarchy]`, `[syscall]`, `[noise]`: TLB and cache cost model (hierarchy.rs).
    pub hierarchy: Hierarchy,
    pub syscall: SyscallCosts,
    pub noise: Noise,
    /// `[pci]`: the I/O bus and chipset path (pci.rs, drivers/pci).
    pub pci: PciBus,
    /// `[memsys]`: latency per hop, bandwidth per controller and link,
    /// misses in flight, cache domains (memsys.rs); derived from the
    /// tables above where the machine has none.
    pub memsys: MemSys,
    /// The era whose defaults filled what the machine's table left out
    /// (defaults.rs); written back, so `numasim machines` names it.
    pub era: Era,
    /// Which keys the machine's table gave, so a run warns about a 2004
    /// default only where the key was absent (defaults.rs).
    pub given: Given,
    /// Where each node's CPUs start, built once with `nodes`: `cpu_node`
    /// in O(1) on uniform machines and O(log nodes) otherwise, where a scan
    /// of the node list made every per-thread lookup O(nodes).
    pub(crate) cpu_index: CpuIndex,
}

/// The first CPU of each node (and the total), for CPU → node lookups.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuIndex {
    /// `first[i]` is node i's first CPU; one more entry holds the total.
    first: Vec<u64>,
    /// CPUs per node when every node has the same number (and more than 0).
    uniform: Option<u64>,
}

impl CpuIndex {
    pub fn of(nodes: &[Node]) -> CpuIndex {
        let mut first = Vec::with_capacity(nodes.len() + 1);
        let mut at = 0u64;
        for n in nodes {
            first.push(at);
            at += n.cpus as u64;
        }
        first.push(at);
        let uniform = nodes
            .first()
            .map(|n| n.cpus as u64)
            .filter(|&c| c > 0 && nodes.iter().all(|n| n.cpus as u64 == c));
        CpuIndex { first, uniform }
    }

    /// The first CPU of `node`.
    pub fn first_of(&self, node: usize) -> u64 {
        self.first.get(node).copied().unwrap_or(0)
    }

    /// The node of `cpu`, or None past the last CPU.
    pub fn node_of(&self, cpu: u64) -> Option<usize> {
        let total = *self.first.last()?;
        if cpu >= total {
            return None;
        }
        if let Some(c) = self.uniform {
            return Some((cpu / c) as usize);
        }
        // The last node whose first CPU is at or before `cpu` (nodes with no
        // CPUs share their first with the next node and are skipped).
        Some(self.first.partition_point(|&f| f <= cpu) - 1)
    }
}

impl Machine {
    /// Aggregate streaming rate of all disks, bytes/s: the "hardware rate"
    /// a streaming writer could reach.
    pub fn disk_bytes_per_s(&self) -> f64 {
        self.io
            .disks
            .iter()
            .map(|g| g.count as f64 * g.mibps * 1024.0 * 1024.0)
            .sum()
    }

    /// Aggregate streaming write rate of all disks, bytes/s.
    pub fn disk_write_bytes_per_s(&self) -> f64 {
        self.io
            .disks
            .iter()
            .map(|g| g.count as f64 * g.write_rate() * 1024.0 * 1024.0)
            .sum()
    }

    /// A machine with the given nodes and distance matrix and documented
    /// defaults for everything else; importers and the probe start here.
    pub fn basic(
        name: &str,
        nodes: Vec<Node>,
        matrix: Vec<Vec<u32>>,
    ) -> Result<Machine, InputError> {
        let mut t = toml::Table::new();
        t.insert("name".into(), name.into());
        t.insert("nodes".into(), (nodes.len() as i64).into());
        let cpus: Vec<toml::Value> = nodes.iter().map(|n| (n.cpus as i64).into()).collect();
        let mem: Vec<toml::Value> = nodes
            .iter()
            .map(|n| crate::input::size::format_size(n.mem_bytes).into())
            .collect();
        t.insert("node_cpus".into(), cpus.into());
        t.insert("node_mem".into(), mem.into());
        let mut d = toml::Table::new();
        // One byte an entry, not a TOML value each (slit_text.rs).
        d.insert("matrix".into(), slit_text::encode(&matrix).into());
        t.insert("distance".into(), d.into());
        Machine::from_table(&t)
    }

    /// Parse and validate a machine TOML text; `file` names it in errors.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Machine, InputError> {
        let table = slit_text::parse_toml(text)
            .map_err(|e| InputError::new(format!("not valid TOML: {e}")).in_file(file))?;
        Machine::from_table(&table).map_err(|e| e.in_file(file))
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
    pub fn cpu_count(&self) -> u64 {
        self.nodes.iter().map(|n| n.cpus as u64).sum()
    }
    pub fn mem_bytes(&self) -> u64 {
        self.nodes.iter().map(|n| n.mem_bytes).sum()
    }
    /// Node of a CPU, CPUs numbered node by node as Linux numbers them on
    /// the machines modelled here (Altix: CPUs 2n and 2n+1 on node n).
    pub fn cpu_node(&self, cpu: u64) -> Option<usize> {
        self.cpu_index.node_of(cpu)
    }
    /// Latency of a load from `from`'s CPUs to `to`'s memory, ns.
    pub fn mem_latency_ns(&self, from: usize, to: usize) -> f64 {
        self.memory.latency_ns * self.distances.ratio(from, to)
    }
    /// Time for a cache line's ownership to move from a CPU on `from` to one on `to`.
    pub fn line_transfer_ns(&self, from: usize, to: usize) -> f64 {
        self.interconnect.line_transfer_ns * self.distances.ratio(from, to)
    }
    pub fn pages_of_node(&self, node: usize) -> u64 {
        self.nodes[node].mem_bytes / self.page_size
    }
}

#[cfg(test)]
mod cpu_index_tests {
    use super::{CpuIndex, Node};

    /// The index answers as the scan of the node list it replaced, on
    /// uniform nodes, uneven ones and nodes with no CPUs.
    #[test]
    fn the_index_agrees_with_a_scan_of_the_nodes() {
        let scan = |nodes: &[Node], cpu: u64| {
            let mut first = 0u64;
            for (i, n) in nodes.iter().enumerate() {
                if cpu < first + n.cpus as u64 {
                    return Some(i);
                }
                first += n.cpus as u64;
            }
            None
        };
        let node = |cpus| Node {
            cpus,
            mem_bytes: 1 << 30,
        };
        for shape in [
            vec![2, 2, 2, 2],
            vec![3, 1, 0, 4, 0, 0, 2],
            vec![0, 5],
            vec![1],
            vec![],
        ] {
            let nodes: Vec<Node> = shape.iter().map(|&c| node(c)).collect();
            let idx = CpuIndex::of(&nodes);
            for cpu in 0..12 {
                assert_eq!(idx.node_of(cpu), scan(&nodes, cpu), "{shape:?} cpu {cpu}");
            }
        }
    }
}
