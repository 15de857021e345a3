//! The page cache (`mm/filemap.c`): where file pages and the slab objects
//! that come with them (buffer heads) are placed ([ALTIX04] A4, A5).

use super::mempolicy::{alloc_pages, Allocator, MemPolicy, PolicyCursor};
use super::page_alloc::{AllocError, Gfp, PageAlloc, Placement, Use};
use crate::kernel::config::Spread;

fn policy(s: Spread) -> MemPolicy {
    match s {
        Spread::Local => MemPolicy::Local,
        Spread::RoundRobin => MemPolicy::RoundRobin,
    }
}

/// What reading a file left in memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadResult {
    pub page_cache: Placement,
    pub slab: Placement,
}

/// Read `pages` file pages into the page cache from `who`'s CPU, one
/// `page_cache_alloc()` per page, each with `slab_bytes` of slab objects
/// (buffer heads) from `kmem_cache_alloc()`.
///
/// Slab objects are packed into slab pages: the cache grows by one page for
/// every `page_size / slab_bytes` file pages, so slab pages are placed as a
/// run of their own under `slab_alloc`.
#[allow(clippy::too_many_arguments)]
pub fn read_file(
    mm: &mut PageAlloc,
    cursors: &mut PolicyCursor,
    who: Allocator,
    pages: u64,
    slab_bytes: u64,
    page_cache_alloc: Spread,
    slab_alloc: Spread,
) -> Result<ReadResult, AllocError> {
    let page_cache = alloc_pages(
        mm,
        cursors,
        &policy(page_cache_alloc),
        who,
        pages,
        Gfp::Normal,
        Use::PageCache,
    )?;
    let slab_pages = (pages.saturating_mul(slab_bytes)).div_ceil(mm.page_size());
    let slab = match alloc_pages(
        mm,
        cursors,
        &policy(slab_alloc),
        who,
        slab_pages,
        Gfp::Normal,
        Use::Slab,
    ) {
        Ok(p) => p,
        Err(e) => {
            mm.free(&page_cache, Use::PageCache);
            return Err(e);
        }
    };
    Ok(ReadResult { page_cache, slab })
}
