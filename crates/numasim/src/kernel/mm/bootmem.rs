//! The boot-time allocator (`mm/bootmem.c`): before the buddy allocator
//! exists, reservations are carved out of a node's memory with no watermark.
//! `alloc_bootmem()` takes the first node, in pgdat order, that has room;
//! numasim's pgdat order starts at the boot node (docs/placement.md).

use super::page_alloc::{AllocError, Gfp, PageAlloc, Placement, Use};

/// `alloc_bootmem_node()`: `bytes` on exactly this node.
pub fn alloc_bootmem_node(
    mm: &mut PageAlloc,
    node: usize,
    bytes: u64,
    what: Use,
) -> Result<Placement, AllocError> {
    let pages = mm.pages_for(bytes);
    mm.alloc_on_node(node, pages, Gfp::Boot, what)
}

/// `alloc_bootmem()`: `bytes` contiguous on the first node from `boot_node`
/// on (wrapping) with room for all of it.
pub fn alloc_bootmem(
    mm: &mut PageAlloc,
    boot_node: usize,
    bytes: u64,
    what: Use,
) -> Result<Placement, AllocError> {
    let pages = mm.pages_for(bytes);
    let n = mm.node_count();
    for i in 0..n {
        let node = (boot_node + i) % n;
        if let Ok(p) = mm.alloc_on_node(node, pages, Gfp::Boot, what) {
            return Ok(p);
        }
    }
    Err(AllocError::NoMemory { pages })
}
