//! `vmalloc()`: virtually contiguous memory from single pages, so the pages
//! follow the caller's memory policy — interleaved over all nodes while
//! the kernel boots ([HASHDIST04] A12).

use super::mempolicy::{alloc_pages, Allocator, MemPolicy, PolicyCursor};
use super::page_alloc::{AllocError, Gfp, PageAlloc, Placement, Use};

/// Why a vmalloc failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmallocError {
    /// Larger than one vmalloc may be (`kernel.vmalloc_max_mb`, 256 MB on IA64).
    TooLarge {
        bytes: u64,
        max: u64,
    },
    NoMemory(AllocError),
}

/// Allocate `bytes` page by page under `policy`; `max_bytes` = 0 means no cap.
#[allow(clippy::too_many_arguments)]
pub fn vmalloc(
    mm: &mut PageAlloc,
    cursors: &mut PolicyCursor,
    policy: &MemPolicy,
    who: Allocator,
    bytes: u64,
    max_bytes: u64,
    what: Use,
) -> Result<Placement, VmallocError> {
    if max_bytes != 0 && bytes > max_bytes {
        return Err(VmallocError::TooLarge {
            bytes,
            max: max_bytes,
        });
    }
    let pages = mm.pages_for(bytes);
    alloc_pages(mm, cursors, policy, who, pages, Gfp::Atomic, what).map_err(VmallocError::NoMemory)
}
