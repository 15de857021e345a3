//! Memory management, laid out like Linux `mm/`: the buddy allocator's
//! per-node free memory and zonelists (`page_alloc`), placement policies
//! (`mempolicy`), the boot-time allocator (`bootmem`), `vmalloc`, and
//! `alloc_large_system_hash` (`hash`, and every table by release in
//! `hash_tables`); and, while the clock runs, the VM
//! (`vm`) with reclaim (`vmscan`), writeback, swap and the OOM killer;
//! and Blue Gene Big Memory (`bigmem`), the ZeptoOS chunk manager.

pub mod bigmem;
pub(crate) mod bootmem;
pub mod filemap;
pub mod flavour;
pub mod hash;
pub(crate) mod hash_tables;
pub(crate) mod hugetlb;
pub(crate) mod kswapd;
pub mod memcost;
pub(crate) mod memflow;
pub mod memory;
pub mod mempolicy;
pub(crate) mod oom_kill;
pub mod page_alloc;
pub(crate) mod page_writeback;
pub(crate) mod swap;
pub mod sysctl_vm;
pub mod tlb;
pub mod vm;
pub mod vmalloc;
pub mod vmscan;
pub(crate) mod writeback;

pub use mempolicy::{MemPolicy, PolicyCursor};
pub use page_alloc::{Gfp, NodeUse, PageAlloc, Placement, Use};
