//! Memory management, laid out like Linux `mm/`: the buddy allocator's
//! per-node free memory and zonelists (`page_alloc`), placement policies
//! (`mempolicy`), the boot-time allocator (`bootmem`), `vmalloc`, and
//! `alloc_large_system_hash` (`hash`).

pub mod bootmem;
pub mod filemap;
pub mod hash;
pub mod hugetlb;
pub mod memory;
pub mod mempolicy;
pub mod page_alloc;
pub mod page_cache_size;
pub mod vmalloc;

pub use mempolicy::{MemPolicy, PolicyCursor};
pub use page_alloc::{Gfp, NodeUse, PageAlloc, Placement, Use};
