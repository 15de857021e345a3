//! `struct rw_semaphore` as used for `mmap_sem` ([ALTIX04] C6, C10): readers
//! do not exclude each other, but each `down_read()`/`up_read()` is an
//! atomic add on the count word, so every reader takes the line exclusively
//! and concurrent faults serialise on it. A writer excludes everyone for as
//! long as it holds the semaphore (what makes `ps` hang during
//! `hugetlb_prefault()`).

use super::Line;
use crate::engine::Time;

/// A reader-writer semaphore: its count line and the writer's hold.
#[derive(Debug)]
pub struct RwSem<'a> {
    line: Line<'a>,
    /// The writer holds it until this time (None: no writer).
    writer_until: Option<Time>,
}

impl<'a> RwSem<'a> {
    pub fn new(line: Line<'a>) -> Self {
        RwSem {
            line,
            writer_until: None,
        }
    }
    /// `down_read()` at `now`: returns when the reader holds it (after any
    /// writer has released and the count's line has reached it).
    pub fn down_read(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        let start = self.writer_until.map_or(now, |w| now.max(w));
        self.line.write(start, cpu, node)
    }
    /// `down_write()` for a hold that ends at `until` (known in advance by
    /// the callers here); returns when the writer holds it.
    #[cfg(test)] // only the model's own tests read it today
    pub fn down_write(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        let start = self.writer_until.map_or(now, |w| now.max(w));
        self.line.write(start, cpu, node)
    }
    /// Record that the writer holds it until `until` (`up_write()` then).
    #[cfg(test)] // only the model's own tests read it today
    pub fn hold_write_until(&mut self, until: Time) {
        self.writer_until = Some(until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{CacheLine, CostTable, Dur};

    #[test]
    fn readers_serialise_on_the_count_and_wait_for_a_writer() {
        let cost = CostTable::from_fn(2, |a, b| if a == b { 10 } else { 100 });
        let mut s = RwSem::new(CacheLine::new(0, &cost));
        let w = s.down_write(Time(0), 0, 0);
        s.hold_write_until(w + Dur(1000));
        // A reader (ps) arriving meanwhile waits for the writer.
        assert!(s.down_read(Time(5), 1, 1) >= w + Dur(1000));
    }
}
