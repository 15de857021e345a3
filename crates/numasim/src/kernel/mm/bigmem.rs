//! Big Memory, the ZeptoOS compute-node memory region ([BGP-BIGMEM] D6–D12).
//!
//! A physically contiguous area is reserved at boot (`kernel.bigmem_mb`) and
//! handed to one "Zepto compute binary" (ZCB) at a time. It is an offset
//! mapping covered by a handful of pinned 256 MB TLB entries, so the process
//! takes no TLB misses there beyond one per schedule-in. Inside it, one VMA
//! with no PTEs covers the whole area and a chunk manager (the kernel kept a
//! red-black tree; here a `BTreeMap`, also O(log n)) tracks text, data, heap,
//! stack and anonymous `mmap` chunks. File-backed mappings stay in normal
//! paged memory. docs/bigmem.md says what is and is not modelled.
//!
//! The model is a plain struct with counters (installs, removals, misses) so
//! that a TLB model can charge their cost; it charges no time itself.

use std::collections::BTreeMap;
use std::fmt;

/// Size of one Big Memory TLB entry: [BGP-BIGMEM] D8, "We currently use
/// 256 MB pages to cover the application memory".
pub const BIGMEM_PAGE_BYTES: u64 = 256 << 20;

/// Where the Big Memory virtual range starts. Not stated: only containment
/// matters to the model, so any 256 MB-aligned user address serves.
pub const BIGMEM_VIRT_BASE: u64 = 0x1000_0000;

/// Default stack of a ZCB when the workload names none: the kernel's
/// default `RLIMIT_STACK` (`_STK_LIM`, 8 MiB, include/linux/resource.h).
pub const DEFAULT_STACK_BYTES: u64 = 8 << 20;

/// Bit the ZCB tool sets in the ELF header's processor-specific `e_flags`
/// (D7). The paper does not give its value; any bit unused by the PowerPC
/// ABI serves, this one is the model's choice.
pub const EF_ZEPTO_COMPUTE: u32 = 0x0001_0000;

/// What goes wrong in Big Memory, as the kernel would report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BigMemError {
    /// `kernel.bigmem_mb = 0` asked for an area.
    ZeroSize,
    /// The size is not a whole number of 256 MB pages.
    NotPageMultiple { bytes: u64 },
    /// Larger than the node's memory less what the kernel needs to boot.
    TooLarge { bytes: u64, available: u64 },
    /// More pinned entries than the TLB has (or none left for paged memory).
    TlbOvercommit {
        total: u32,
        kernel: u32,
        device: u32,
        bigmem: u32,
    },
    /// ENOMEM: no free run of Big Memory is large enough. Anonymous memory
    /// of a ZCB has no fallback to paged memory (D9): the process fails.
    NoMemory { want: u64, largest_free: u64 },
    /// Only one compute process uses the area at a time (D6).
    Busy,
    /// No compute process has been exec'ed.
    NoProcess,
    /// `fork()` of a ZCB: fork relies on copy-on-write (D12).
    ForkRefused,
    /// `mprotect()` is not implemented for Big Memory (D12).
    MprotectRefused,
    /// EINVAL: the range is not inside one `mmap` chunk, or unaligned.
    BadRange { addr: u64, len: u64 },
    /// `brk` below the start of the heap.
    BrkBelowStart { new_end: u64, start: u64 },
    /// EIO from `access_process_vm()`: nothing is mapped there.
    NotMapped { addr: u64 },
    /// A schedule-in/out or access while the process is not in that state.
    NotRunning,
}

impl fmt::Display for BigMemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mb = |b: &u64| *b as f64 / (1u64 << 20) as f64;
        match self {
            BigMemError::ZeroSize => write!(f, "the Big Memory area must be larger than 0 MB"),
            BigMemError::NotPageMultiple { bytes } => write!(
                f,
                "{} MB is not a multiple of the 256 MB Big Memory page; allowed: 256, 512, 768, …",
                mb(bytes)
            ),
            BigMemError::TooLarge { bytes, available } => write!(
                f,
                "{} MB is more than the node can spare: {} MB once the kernel has its boot memory",
                mb(bytes),
                mb(available)
            ),
            BigMemError::TlbOvercommit {
                total,
                kernel,
                device,
                bigmem,
            } => write!(
                f,
                "the TLB has {total} entries but {kernel} kernel + {device} device + {bigmem} Big Memory \
                 entries are pinned, leaving none for paged memory: allowed at most {} pinned; \
                 shrink kernel.bigmem_mb or kernel.tlb_device_entries",
                total.saturating_sub(1)
            ),
            BigMemError::NoMemory { want, largest_free } => write!(
                f,
                "ENOMEM: {} MB asked, the largest free run of Big Memory is {} MB (a ZCB's anonymous \
                 memory cannot fall back to paged memory)",
                mb(want),
                mb(largest_free)
            ),
            BigMemError::Busy => write!(
                f,
                "a compute process already owns Big Memory; only one runs at a time"
            ),
            BigMemError::NoProcess => write!(f, "no compute process: exec one first"),
            BigMemError::ForkRefused => write!(
                f,
                "a Zepto compute binary cannot fork(): fork relies on copy-on-write, which Big Memory does not have"
            ),
            BigMemError::MprotectRefused => write!(
                f,
                "mprotect() is not implemented for Big Memory (debuggers that need it do not work)"
            ),
            BigMemError::BadRange { addr, len } => write!(
                f,
                "EINVAL: {len:#x} bytes at {addr:#x} is not a page-aligned part of one mmap chunk"
            ),
            BigMemError::BrkBelowStart { new_end, start } => write!(
                f,
                "brk {new_end:#x} is below the start of the heap ({start:#x})"
            ),
            BigMemError::NotMapped { addr } => {
                write!(f, "EIO: nothing of the process is mapped at {addr:#x}")
            }
            BigMemError::NotRunning => write!(f, "the compute process is not in that state"),
        }
    }
}

impl std::error::Error for BigMemError {}

/// Number of 256 MB entries that cover `bytes` (7 for 1792 MB).
pub fn bigmem_tlb_entries(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(BIGMEM_PAGE_BYTES)).unwrap_or(u32::MAX)
}

/// The four groups of the Zepto kernel's TLB (D11). Kernel, device and Big
/// Memory entries are pinned; paged memory gets what is left and is refilled
/// in software.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlbPartition {
    pub total: u32,
    pub kernel: u32,
    pub device: u32,
    pub bigmem: u32,
    pub paged: u32,
}

impl TlbPartition {
    /// Split `total` entries, `kernel` of them pinned for kernel low memory
    /// (3 on BG/P, machine `[tlb] kernel_entries`); at least one must be
    /// left for paged memory, since the software refill needs somewhere to
    /// put a translation.
    pub fn new(
        total: u32,
        kernel: u32,
        device: u32,
        bigmem: u32,
    ) -> Result<TlbPartition, BigMemError> {
        let pinned = kernel
            .checked_add(device)
            .and_then(|p| p.checked_add(bigmem));
        match pinned {
            Some(p) if p < total => Ok(TlbPartition {
                total,
                kernel,
                device,
                bigmem,
                paged: total - p,
            }),
            _ => Err(BigMemError::TlbOvercommit {
                total,
                kernel,
                device,
                bigmem,
            }),
        }
    }
    /// The split on `machine` under the kernel's knobs. Validation
    /// (kernel/mm/flavour.rs) guarantees one paged entry; should a caller
    /// bypass it, paged memory still gets one.
    pub fn of(
        machine: &crate::machine::Machine,
        mm: &crate::kernel::mm::flavour::MmKnobs,
    ) -> TlbPartition {
        let (total, kernel) = (machine.tlb.entries, machine.tlb.kernel_entries);
        let (device, bigmem) = (mm.tlb_device_entries, mm.bigmem_entries());
        TlbPartition::new(total, kernel, device, bigmem).unwrap_or(TlbPartition {
            total,
            kernel,
            device,
            bigmem,
            paged: 1,
        })
    }
    /// Entries that survive a context switch.
    pub fn pinned(&self) -> u32 {
        self.kernel + self.device + self.bigmem
    }
}

/// The ELF header fields the loader looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElfImage {
    pub e_flags: u32,
    pub text: u64,
    pub data: u64,
}

impl ElfImage {
    /// A binary with the ZCB flag set (what the ZeptoOS tool does).
    pub fn zcb(text: u64, data: u64) -> ElfImage {
        ElfImage {
            e_flags: EF_ZEPTO_COMPUTE,
            text,
            data,
        }
    }
    /// `load_elf_binary()` sets the personality bit from this (D7).
    pub fn is_zcb(&self) -> bool {
        self.e_flags & EF_ZEPTO_COMPUTE != 0
    }
}

/// What a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChunkKind {
    Text,
    Data,
    Heap,
    Stack,
    Mmap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub start: u64,
    pub len: u64,
    pub kind: ChunkKind,
}

impl Chunk {
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Where a mapping landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// In Big Memory, at this virtual address.
    BigMem { addr: u64, len: u64 },
    /// In normal paged memory (file mappings; everything of a non-ZCB).
    Paged { len: u64 },
}

/// What one memory access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Big Memory, entries already installed: no miss.
    Hit,
    /// Big Memory, first access since schedule-in: one miss, then the
    /// page-fault hook installed every Big Memory entry.
    MissInstalled,
    /// Not Big Memory (or not a ZCB): the normal paged path.
    Paged,
}

/// Events a TLB model charges (D10, D12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BigMemCounters {
    /// Times the fault hook installed all Big Memory entries.
    pub installs: u64,
    /// Times they were removed at schedule-out (each costs slightly more
    /// than one miss, per the paper).
    pub removals: u64,
    /// TLB misses taken on Big Memory (one per install by the hook).
    pub misses: u64,
    /// Temporary installs by the kernel on the process's behalf: copying
    /// argv/envp at exec, and `access_process_vm()` for ptrace.
    pub temp_installs: u64,
    /// Their removals (always equal to `temp_installs` once a call returns).
    pub temp_removals: u64,
    /// Bytes mapped in paged memory (file mappings).
    pub paged_bytes: u64,
}

/// The one compute process and its Big Memory address space.
#[derive(Debug, Clone)]
struct Zcb {
    zcb: bool,
    /// Chunks by start address: the red-black tree of the paper.
    chunks: BTreeMap<u64, Chunk>,
    heap_start: u64,
    running: bool,
    installed: bool,
}

/// The Big Memory area and the chunk manager of its compute process.
#[derive(Debug, Clone)]
pub struct BigMemArea {
    base: u64,
    bytes: u64,
    /// Granularity of chunks: the paged kernel's base page, as mmap(2)
    /// rounds lengths to it.
    align: u64,
    proc_: Option<Zcb>,
    counters: BigMemCounters,
}

fn align_up(x: u64, a: u64) -> Option<u64> {
    x.checked_add(a - 1).map(|v| v / a * a)
}

impl BigMemArea {
    /// Reserve `bytes` at boot. `available` is the node's memory less what
    /// the kernel needs; `page_size` is the paged kernel's base page.
    pub fn new(bytes: u64, available: u64, page_size: u64) -> Result<BigMemArea, BigMemError> {
        if bytes == 0 {
            return Err(BigMemError::ZeroSize);
        }
        if !bytes.is_multiple_of(BIGMEM_PAGE_BYTES) {
            return Err(BigMemError::NotPageMultiple { bytes });
        }
        if bytes > available {
            return Err(BigMemError::TooLarge { bytes, available });
        }
        Ok(BigMemArea {
            base: BIGMEM_VIRT_BASE,
            bytes,
            align: page_size.clamp(1, BIGMEM_PAGE_BYTES),
            proc_: None,
            counters: BigMemCounters::default(),
        })
    }

    pub fn base(&self) -> u64 {
        self.base
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn end(&self) -> u64 {
        self.base + self.bytes
    }
    /// Pinned 256 MB entries needed to cover the area.
    pub fn tlb_entries(&self) -> u32 {
        bigmem_tlb_entries(self.bytes)
    }
    pub fn counters(&self) -> BigMemCounters {
        self.counters
    }
    pub fn contains(&self, addr: u64) -> bool {
        (self.base..self.end()).contains(&addr)
    }
    /// Whether the Big Memory entries are in the TLB now.
    pub fn installed(&self) -> bool {
        self.proc_.as_ref().is_some_and(|p| p.installed)
    }
    /// Whether the current process is a ZCB.
    pub fn is_zcb(&self) -> bool {
        self.proc_.as_ref().is_some_and(|p| p.zcb)
    }

    /// The chunks in address order.
    pub fn chunks(&self) -> Vec<Chunk> {
        self.proc_
            .as_ref()
            .map(|p| p.chunks.values().copied().collect())
            .unwrap_or_default()
    }
    pub fn used_bytes(&self) -> u64 {
        self.proc_
            .as_ref()
            .map_or(0, |p| p.chunks.values().map(|c| c.len).sum())
    }
    pub fn free_bytes(&self) -> u64 {
        self.bytes - self.used_bytes()
    }
    /// The free runs between chunks, in address order, as (start, len).
    pub fn free_runs(&self) -> Vec<(u64, u64)> {
        let mut runs = Vec::new();
        let mut at = self.base;
        if let Some(p) = &self.proc_ {
            for c in p.chunks.values() {
                if c.start > at {
                    runs.push((at, c.start - at));
                }
                at = c.end();
            }
        }
        if self.end() > at {
            runs.push((at, self.end() - at));
        }
        runs
    }
    /// The chunk holding `addr`: an O(log n) search of the tree.
    pub fn find(&self, addr: u64) -> Option<Chunk> {
        let p = self.proc_.as_ref()?;
        p.chunks
            .range(..=addr)
            .next_back()
            .map(|(_, c)| *c)
            .filter(|c| addr < c.end())
    }

    fn proc_mut(&mut self) -> Result<&mut Zcb, BigMemError> {
        self.proc_.as_mut().ok_or(BigMemError::NoProcess)
    }

    /// `execve()` of `image` with a stack of `stack` bytes. For a ZCB, text
    /// and data are loaded at the bottom of the area (not file-mapped), the
    /// heap starts right after them, the stack sits at the top; the kernel
    /// installs the Big Memory entries temporarily to copy argv and envp
    /// onto the stack (D8). A non-ZCB runs entirely in paged memory.
    pub fn exec(&mut self, image: &ElfImage, stack: u64) -> Result<(), BigMemError> {
        if self.proc_.is_some() {
            return Err(BigMemError::Busy);
        }
        let mut p = Zcb {
            zcb: image.is_zcb(),
            chunks: BTreeMap::new(),
            heap_start: self.base,
            running: false,
            installed: false,
        };
        if !p.zcb {
            self.counters.paged_bytes += image.text + image.data + stack;
            self.proc_ = Some(p);
            return Ok(());
        }
        let a = self.align;
        let round = |x: u64| align_up(x, a).unwrap_or(u64::MAX);
        let (text, data, stack) = (round(image.text), round(image.data), round(stack));
        let need = text
            .checked_add(data)
            .and_then(|x| x.checked_add(stack))
            .unwrap_or(u64::MAX);
        if need > self.bytes {
            return Err(BigMemError::NoMemory {
                want: need,
                largest_free: self.bytes,
            });
        }
        let mut at = self.base;
        for (len, kind) in [(text, ChunkKind::Text), (data, ChunkKind::Data)] {
            if len > 0 {
                p.chunks.insert(
                    at,
                    Chunk {
                        start: at,
                        len,
                        kind,
                    },
                );
                at += len;
            }
        }
        p.heap_start = at;
        if stack > 0 {
            let s = self.end() - stack;
            p.chunks.insert(
                s,
                Chunk {
                    start: s,
                    len: stack,
                    kind: ChunkKind::Stack,
                },
            );
        }
        self.proc_ = Some(p);
        // argv/envp copied onto the stack through a temporary mapping.
        self.counters.temp_installs += 1;
        self.counters.temp_removals += 1;
        Ok(())
    }

    /// The process exits: every chunk goes back to the area.
    pub fn exit(&mut self) {
        self.proc_ = None;
    }

    /// The current program break (end of the heap).
    pub fn brk_end(&self) -> Option<u64> {
        let p = self.proc_.as_ref()?;
        Some(
            p.chunks
                .get(&p.heap_start)
                .filter(|c| c.kind == ChunkKind::Heap)
                .map_or(p.heap_start, Chunk::end),
        )
    }

    /// `brk(new_end)`: grow or shrink the heap in place. Growing needs the
    /// space above the heap to be free; there is no fallback.
    pub fn brk(&mut self, new_end: u64) -> Result<u64, BigMemError> {
        if !self.is_zcb() {
            // A non-ZCB's heap is paged memory, not tracked here.
            self.proc_mut()?;
            return Ok(new_end);
        }
        let cur = self.brk_end().ok_or(BigMemError::NoProcess)?;
        let a = self.align;
        let area_end = self.end();
        let p = self.proc_mut()?;
        let start = p.heap_start;
        if new_end < start {
            return Err(BigMemError::BrkBelowStart { new_end, start });
        }
        let new_end = align_up(new_end, a).unwrap_or(u64::MAX);
        if new_end > cur {
            // Space between the break and the next chunk (or the area's end).
            let next = p.chunks.range(cur..).next().map_or(area_end, |(s, _)| *s);
            if new_end > next {
                return Err(BigMemError::NoMemory {
                    want: new_end - start,
                    largest_free: next - start,
                });
            }
        }
        if new_end == start {
            // An empty heap has no chunk; a mapping that filled the room
            // above the data may start here and must survive.
            if p.chunks
                .get(&start)
                .is_some_and(|c| c.kind == ChunkKind::Heap)
            {
                p.chunks.remove(&start);
            }
        } else {
            p.chunks.insert(
                start,
                Chunk {
                    start,
                    len: new_end - start,
                    kind: ChunkKind::Heap,
                },
            );
        }
        Ok(new_end)
    }

    /// Anonymous private `mmap` of `len` bytes: Big Memory for a ZCB (D9).
    ///
    /// Placement is first fit from the top of the area down, below the
    /// stack, as Linux's top-down mmap layout places mappings: the heap at
    /// the bottom keeps room to grow up. Out of space is ENOMEM.
    pub fn mmap_anon(&mut self, len: u64) -> Result<Mapping, BigMemError> {
        if !self.is_zcb() {
            self.proc_mut()?;
            self.counters.paged_bytes = self.counters.paged_bytes.saturating_add(len);
            return Ok(Mapping::Paged { len });
        }
        let want = match align_up(len, self.align) {
            Some(w) if w > 0 => w,
            _ => return Err(BigMemError::BadRange { addr: 0, len }),
        };
        let runs = self.free_runs();
        // Highest run first, taking its top end: the heap keeps its room.
        let pick = runs.iter().rev().find(|(_, l)| *l >= want).copied();
        let Some((s, l)) = pick else {
            return Err(BigMemError::NoMemory {
                want,
                largest_free: runs.iter().map(|r| r.1).max().unwrap_or(0),
            });
        };
        let addr = s + l - want;
        let p = self.proc_mut()?;
        p.chunks.insert(
            addr,
            Chunk {
                start: addr,
                len: want,
                kind: ChunkKind::Mmap,
            },
        );
        Ok(Mapping::BigMem { addr, len: want })
    }

    /// File-backed `mmap`: always normal paged memory, since Big Memory
    /// bypasses the page allocator and cannot back a file (D8, D9).
    pub fn mmap_file(&mut self, len: u64) -> Mapping {
        self.counters.paged_bytes = self.counters.paged_bytes.saturating_add(len);
        Mapping::Paged { len }
    }

    /// `munmap(addr, len)` of (part of) one anonymous mapping; a cut in the
    /// middle splits the chunk in two. Returns the bytes given back.
    /// Unmapping text, data, heap or stack is not modelled (EINVAL).
    pub fn munmap(&mut self, addr: u64, len: u64) -> Result<u64, BigMemError> {
        let a = self.align;
        let bad = BigMemError::BadRange { addr, len };
        let len_a = align_up(len, a).ok_or(bad.clone())?;
        let end = addr.checked_add(len_a).ok_or(bad.clone())?;
        if len == 0 || !addr.is_multiple_of(a) {
            return Err(bad);
        }
        let c = self.find(addr).ok_or(bad.clone())?;
        if c.kind != ChunkKind::Mmap || end > c.end() {
            return Err(bad);
        }
        let p = self.proc_mut()?;
        p.chunks.remove(&c.start);
        if addr > c.start {
            p.chunks.insert(
                c.start,
                Chunk {
                    start: c.start,
                    len: addr - c.start,
                    kind: ChunkKind::Mmap,
                },
            );
        }
        if end < c.end() {
            p.chunks.insert(
                end,
                Chunk {
                    start: end,
                    len: c.end() - end,
                    kind: ChunkKind::Mmap,
                },
            );
        }
        Ok(len_a)
    }

    /// `fork()`: refused for a ZCB (D12).
    pub fn fork(&self) -> Result<(), BigMemError> {
        match &self.proc_ {
            None => Err(BigMemError::NoProcess),
            Some(p) if p.zcb => Err(BigMemError::ForkRefused),
            Some(_) => Ok(()),
        }
    }

    /// `mprotect()`: not implemented for a ZCB (D12).
    pub fn mprotect(&self, _addr: u64, _len: u64) -> Result<(), BigMemError> {
        match &self.proc_ {
            None => Err(BigMemError::NoProcess),
            Some(p) if p.zcb => Err(BigMemError::MprotectRefused),
            Some(_) => Ok(()),
        }
    }

    /// `access_process_vm()` on behalf of a tracer (ptrace, gdb, strace).
    /// Big Memory is private to the ZCB, so the fix installs its mapping
    /// for the duration of the call and removes it after (D12). Returns
    /// whether a temporary install was needed.
    pub fn ptrace_access(&mut self, addr: u64) -> Result<bool, BigMemError> {
        if !self.is_zcb() || !self.contains(addr) {
            self.proc_mut()?;
            return Ok(false);
        }
        if self.find(addr).is_none() {
            return Err(BigMemError::NotMapped { addr });
        }
        if self.installed() {
            return Ok(false);
        }
        self.counters.temp_installs += 1;
        self.counters.temp_removals += 1;
        Ok(true)
    }

    /// The scheduler switches the compute process in. Nothing is installed
    /// yet: the first Big Memory access faults (D10).
    pub fn schedule_in(&mut self) -> Result<(), BigMemError> {
        let p = self.proc_mut()?;
        if p.running {
            return Err(BigMemError::NotRunning);
        }
        p.running = true;
        Ok(())
    }

    /// The process is switched out: its Big Memory entries are removed to
    /// keep the mapping private.
    pub fn schedule_out(&mut self) -> Result<(), BigMemError> {
        let p = self.proc_mut()?;
        if !p.running {
            return Err(BigMemError::NotRunning);
        }
        p.running = false;
        if p.installed {
            p.installed = false;
            self.counters.removals += 1;
        }
        Ok(())
    }

    /// A memory access by the running process.
    pub fn access(&mut self, addr: u64) -> Result<Access, BigMemError> {
        let big = self.contains(addr) && self.is_zcb();
        let p = self.proc_mut()?;
        if !p.running {
            return Err(BigMemError::NotRunning);
        }
        if !big {
            return Ok(Access::Paged);
        }
        if p.installed {
            return Ok(Access::Hit);
        }
        self.counters.misses += 1;
        self.fault(addr)
    }

    /// The page-fault hook: if `current` is a ZCB and `addr` lies in Big
    /// Memory, install every Big Memory entry at once.
    pub fn fault(&mut self, addr: u64) -> Result<Access, BigMemError> {
        let big = self.contains(addr) && self.is_zcb();
        let p = self.proc_mut()?;
        if !big {
            return Ok(Access::Paged);
        }
        if !p.installed {
            p.installed = true;
            self.counters.installs += 1;
        }
        Ok(Access::MissInstalled)
    }
}

/// The Big Memory knobs of `[kernel]` (D6, D11), read with the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BigMemKnobs {
    /// `kernel.bigmem_mb` in bytes; 0 = no Big Memory (a stock kernel).
    pub bytes: u64,
    /// `kernel.tlb_device_entries`: pinned device mappings (D11, not stated).
    pub tlb_device_entries: u32,
}

impl BigMemKnobs {
    /// No Big Memory; the machine's pinned device entries (`[tlb]
    /// device_entries`, 12 on bgp-node: docs/tlb.md).
    pub fn defaults(machine: &crate::machine::Machine) -> Self {
        BigMemKnobs {
            bytes: 0,
            tlb_device_entries: machine.tlb.device_entries,
        }
    }
}

/// Memory of the boot node left once boot has reserved `mem_map`, per-CPU
/// areas, node data and the kernel image there: what Big Memory may take.
pub fn available_bytes(machine: &crate::machine::Machine) -> u64 {
    let b = &machine.boot;
    let Some(node) = machine.nodes.get(b.boot_node as usize) else {
        return 0;
    };
    let pages = node.mem_bytes / machine.page_size.max(1);
    let kernel = pages
        .saturating_mul(b.struct_page_bytes)
        .saturating_add((node.cpus as u64).saturating_mul(b.percpu_area))
        .saturating_add(b.node_reserved)
        .saturating_add(b.kernel_reserved);
    node.mem_bytes.saturating_sub(kernel)
}

impl BigMemKnobs {
    /// The Big Memory of the kernel flavour's knobs (`kernel.bigmem_mb`,
    /// `kernel.tlb_device_entries`, read once in kernel/mm/flavour.rs), checked
    /// here against what the boot node can give and the TLB can pin: an
    /// area that cannot exist is refused before anything runs.
    pub fn from_mm(
        mm: &crate::kernel::mm::flavour::MmKnobs,
        machine: &crate::machine::Machine,
    ) -> Result<BigMemKnobs, String> {
        let mut k = BigMemKnobs {
            bytes: 0,
            tlb_device_entries: mm.tlb_device_entries,
        };
        let mb = mm.bigmem_mb;
        if mb == 0 {
            return Ok(k);
        }
        // The area is carved out of the paged kernel's memory in base
        // pages, so a base page must tile a 256 MB Big Memory page.
        if !BIGMEM_PAGE_BYTES.is_multiple_of(machine.page_size.max(1)) {
            return Err(format!(
                "Big Memory needs a base page that divides 256 MB; machine.page_size is {} bytes",
                machine.page_size
            ));
        }
        let bytes = mb
            .checked_mul(1 << 20)
            .ok_or_else(|| format!("{mb} MB is too large"))?;
        let area = BigMemArea::new(bytes, available_bytes(machine), machine.page_size)
            .map_err(|e| e.to_string())?;
        TlbPartition::new(
            machine.tlb.entries,
            machine.tlb.kernel_entries,
            k.tlb_device_entries,
            area.tlb_entries(),
        )
        .map_err(|e| e.to_string())?;
        k.bytes = bytes;
        Ok(k)
    }

    /// The area these knobs reserve, if any.
    pub fn area(
        &self,
        machine: &crate::machine::Machine,
    ) -> Option<Result<BigMemArea, BigMemError>> {
        (self.bytes > 0)
            .then(|| BigMemArea::new(self.bytes, available_bytes(machine), machine.page_size))
    }

    /// The TLB partition of a Big Memory kernel on `machine`.
    pub fn partition(
        &self,
        machine: &crate::machine::Machine,
    ) -> Result<TlbPartition, BigMemError> {
        TlbPartition::new(
            machine.tlb.entries,
            machine.tlb.kernel_entries,
            self.tlb_device_entries,
            bigmem_tlb_entries(self.bytes),
        )
    }
}
