//! `seqlock_t` ([ALTIX04] C6): the writer increments the sequence (taking
//! its line exclusively); readers read it before and after and retry if it
//! changed or was odd. Readers share the line, so a read-mostly seqlock
//! costs a hit; each write makes every reader miss once.

use super::Line;
use crate::engine::Time;

#[derive(Debug)]
pub struct SeqLock<'a> {
    line: Line<'a>,
    seq: u64,
}

impl<'a> SeqLock<'a> {
    pub fn new(line: Line<'a>) -> Self {
        SeqLock { line, seq: 0 }
    }
    /// `read_seqbegin()`: when the read is done, and the sequence seen.
    pub fn read_begin(&mut self, now: Time, cpu: usize, node: usize) -> (Time, u64) {
        (self.line.read(now, cpu, node), self.seq)
    }
    /// `read_seqretry()`: the read section must be repeated.
    pub fn read_retry(&mut self, now: Time, cpu: usize, node: usize, seq: u64) -> (Time, bool) {
        let t = self.line.read(now, cpu, node);
        (t, seq % 2 == 1 || seq != self.seq)
    }
    /// `write_seqlock()`.
    pub fn write_lock(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        self.seq += 1;
        self.line.write(now, cpu, node)
    }
    /// `write_sequnlock()`.
    pub fn write_unlock(&mut self, now: Time, cpu: usize, node: usize) -> Time {
        self.seq += 1;
        self.line.write(now, cpu, node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{CacheLine, CostTable};

    #[test]
    fn reader_retries_across_a_write() {
        let cost = CostTable::from_fn(1, |_, _| 10);
        let mut s = SeqLock::new(CacheLine::new(0, &cost));
        let (t, seq) = s.read_begin(Time(0), 1, 0);
        assert!(!s.read_retry(t, 1, 0, seq).1);
        let (t, seq) = s.read_begin(t, 1, 0);
        let w = s.write_lock(t, 0, 0);
        assert!(
            s.read_retry(w, 1, 0, seq).1,
            "a write in between forces a retry"
        );
        let u = s.write_unlock(w, 0, 0);
        let (t, seq) = s.read_begin(u, 1, 0);
        assert!(!s.read_retry(t, 1, 0, seq).1);
    }
}
