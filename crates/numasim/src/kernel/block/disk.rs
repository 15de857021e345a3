//! The machine's disks seen as one streaming device: a byte budget per time
//! step that swap-in reads, swap-out writes and file writeback draw from, in
//! that order (the allocator waits on the first two; the flusher does not).

/// Bandwidth shared by everything that does I/O within one step.
#[derive(Debug, Clone)]
pub struct Disk {
    bytes_per_s: f64,
    /// Bytes still free in the current step.
    left: f64,
    /// Bytes a step moved beyond its budget, paid from the next steps: a
    /// swap-in read sized before its own allocation reclaimed (and wrote
    /// swap) in the same step would otherwise let the disk move more than
    /// its rate (the checked build's assertion found it).
    overdrawn: f64,
    /// Bytes moved in total, for reports.
    moved: f64,
}

impl Disk {
    pub fn new(bytes_per_s: f64) -> Disk {
        Disk {
            bytes_per_s,
            left: 0.0,
            overdrawn: 0.0,
            moved: 0.0,
        }
    }
    pub fn bytes_per_s(&self) -> f64 {
        self.bytes_per_s
    }
    /// Open a new step of `dt_s` seconds, less what earlier steps overdrew.
    pub fn start_step(&mut self, dt_s: f64) {
        let budget = self.bytes_per_s * dt_s - self.overdrawn;
        self.left = budget.max(0.0);
        self.overdrawn = (-budget).max(0.0);
    }
    /// Whole pages of `page` bytes that still fit in this step.
    pub fn pages_left(&self, page: u64) -> u64 {
        (self.left / page as f64).floor().max(0.0) as u64
    }
    /// Move `pages` pages. Callers ask no more than `pages_left`, except a
    /// read whose allocation reclaimed in between: what exceeds the budget
    /// is carried as an overdraft into the next steps, so over any run the
    /// disk moves at most its rate (plus one step).
    pub fn transfer(&mut self, pages: u64, page: u64) {
        let b = (pages * page) as f64;
        self.overdrawn += (b - self.left).max(0.0);
        self.left = (self.left - b).max(0.0);
        self.moved += b;
    }
    pub fn moved_bytes(&self) -> f64 {
        self.moved
    }
}
