//! Writeback of dirty page cache by the flusher (`bdflush`/`kupdated` in
//! 2.4, `pdflush` in 2.6; `mm/page-writeback.c`). It writes in file-offset
//! order with whatever disk time swap and reclaim leave in the tick, and
//! makes pages clean without freeing them: only reclaim frees page cache
//! ([ALTIX04] B1).

use super::page_alloc::PageAlloc;
use super::vm::Vm;

impl Vm {
    /// One tick of the flusher.
    pub(super) fn flush(&mut self, mm: &PageAlloc) {
        let _ = mm;
        let budget = self.disk.pages_left(self.page);
        let w = budget.min(self.dirty_total);
        if w == 0 {
            return;
        }
        let mut k = self.scratch.take().unwrap_or_default();
        self.dirty_total -= w;
        for (n, &p) in k.split(w, &self.dirty).iter().enumerate() {
            self.dirty[n] -= p;
            if self.sys.reclaim_list && self.sys.reclaim_list_rejoin {
                self.listed[n] += p;
            }
        }
        self.scratch = Some(k);
        self.disk.transfer(w, self.page);
        self.stats.flushed_pages += w;
    }
}
