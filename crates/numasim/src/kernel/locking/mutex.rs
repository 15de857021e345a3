//! A sleeping lock held for micro- to milliseconds (an inode's `i_mutex`,
//! a semaphore), where the line transfer is noise next to the hold: the
//! model of `kernel/locking/mutex.c` at the grain the I/O experiments need.

use crate::engine::{Dur, Time};

/// A FIFO sleeping lock (a semaphore or mutex held for micro- to
/// milliseconds, where the line transfer is noise): grant = max(now, free).
#[derive(Debug, Clone, Default)]
pub struct Mutex {
    free_at: Time,
    pub wait: Dur,
}

impl Mutex {
    /// Take it at `now` for `hold`: returns when the holder is done.
    pub fn hold(&mut self, now: Time, hold: Dur) -> Time {
        let start = now.max(self.free_at);
        self.wait += start - now;
        self.free_at = start + hold;
        self.free_at
    }
}
