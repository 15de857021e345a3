//! The links a request's data crosses between a disk and memory: the HBA's
//! bus, the I/O node's port into the fabric, and the NUMALink port of each
//! node whose memory it lands in ([XFS06] F9). A link moves bytes at its
//! rate, one transfer after another, and overlaps with the disk: data
//! leaves the disk while it is read, so a link only delays a request when
//! it is the slower of the two.
//!
//! A device on a PCI bus attaches to an I/O node the same way: it names
//! the I/O node whose port its DMA crosses.

use crate::engine::{Dur, Time};

#[derive(Debug, Clone)]
pub struct Link {
    bytes_per_ns: f64,
    busy_until: Time,
    pub busy: Dur,
    pub bytes: u64,
}

impl Link {
    /// A link moving `bytes_per_s` (validated positive by the machine reader).
    pub fn new(bytes_per_s: f64) -> Link {
        Link {
            bytes_per_ns: bytes_per_s / 1e9,
            busy_until: Time::ZERO,
            busy: Dur::ZERO,
            bytes: 0,
        }
    }
    /// Move `bytes` that are ready from `ready` on; returns when they are through.
    pub fn carry(&mut self, ready: Time, bytes: u64) -> Time {
        let start = ready.max(self.busy_until);
        let d = Dur((bytes as f64 / self.bytes_per_ns).ceil() as u64);
        self.busy_until = start + d;
        self.busy += d;
        self.bytes += bytes;
        self.busy_until
    }
}
