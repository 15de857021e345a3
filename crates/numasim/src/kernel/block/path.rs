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
        let d = Dur(crate::engine::ceil_u64(bytes as f64 / self.bytes_per_ns));
        self.busy_until = start + d;
        self.busy += d;
        self.bytes += bytes;
        self.busy_until
    }
}

/// The node ports of a machine: one [`Link`] per node, all at one rate,
/// where interleaved data puts an equal share on every port at once. The
/// share is applied to all ports in O(1), not O(nodes): every port's
/// `busy_until` is kept as `max(raw, r) + d`, and an interleaved share
/// composes into the shared `(r, d)` (`max(max(x, r) + d, ready) + s =
/// max(x, r, ready − d) + d + s`), so a striped read over 8,192 nodes
/// costs what one over 2 does. Times are those of a [`Link`] per node.
#[derive(Debug, Clone)]
pub struct LinkSet {
    bytes_per_ns: f64,
    /// Per port, its `busy_until` before the shared transform and what it
    /// carried on its own (together: a booking touches all three).
    ports: Vec<Port>,
    /// The shared transform `x ↦ max(x, r) + d` every port's time is under.
    r: Time,
    d: Dur,
    /// The largest `raw`: the latest port is `max(max_raw, r) + d`.
    max_raw: Time,
    /// Busy time and bytes added to every port by interleaved shares.
    shared_busy: Dur,
    shared_bytes: u64,
}

/// One port of a [`LinkSet`].
#[derive(Debug, Clone, Copy, Default)]
struct Port {
    raw: Time,
    own_busy: Dur,
    own_bytes: u64,
}

impl LinkSet {
    /// `n` ports moving `bytes_per_s` each.
    pub fn new(n: usize, bytes_per_s: f64) -> LinkSet {
        LinkSet {
            bytes_per_ns: bytes_per_s / 1e9,
            ports: vec![Port::default(); n],
            r: Time::ZERO,
            d: Dur::ZERO,
            max_raw: Time::ZERO,
            shared_busy: Dur::ZERO,
            shared_bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.ports.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    pub(crate) fn dur(&self, bytes: u64) -> Dur {
        Dur(crate::engine::ceil_u64(bytes as f64 / self.bytes_per_ns))
    }

    /// When port `i` is free.
    pub fn busy_until(&self, i: usize) -> Time {
        self.ports[i].raw.max(self.r) + self.d
    }

    /// Port `i` moves `bytes` ready from `ready` on; returns when they are
    /// through (as [`Link::carry`]).
    pub fn carry(&mut self, i: usize, ready: Time, bytes: u64) -> Time {
        let d = self.dur(bytes);
        self.carry_dur(i, ready, bytes, d)
    }

    /// `carry` with the time `d` the bytes take already known: also
    /// several bookings of one port ready at one moment, their bytes and
    /// times summed (each after the one before, as booked one by one).
    #[inline]
    pub(crate) fn carry_dur(&mut self, i: usize, ready: Time, bytes: u64, d: Dur) -> Time {
        let done = ready.max(self.busy_until(i)) + d;
        // done ≥ r + d, so the raw value stays above r and reads back exact.
        let p = &mut self.ports[i];
        p.raw = Time(done.as_ns() - self.d.as_ns());
        self.max_raw = self.max_raw.max(p.raw);
        p.own_busy += d;
        p.own_bytes += bytes;
        done
    }

    /// Every port moves `share` bytes ready from `ready` on; returns when
    /// the last is through.
    pub fn carry_all(&mut self, ready: Time, share: u64) -> Time {
        let d = self.dur(share);
        self.carry_all_dur(ready, share, d)
    }

    /// `carry_all` with the share's time `d = dur(share)` already known:
    /// also several shares ready at one moment, their bytes and times
    /// summed (a later share's `ready - d` lies below the first's, so the
    /// floor `r` moves only for the first: the same state and the same
    /// latest time as booking them one by one).
    #[inline]
    pub(crate) fn carry_all_dur(&mut self, ready: Time, share: u64, d: Dur) -> Time {
        self.r = self
            .r
            .max(Time(ready.as_ns().saturating_sub(self.d.as_ns())));
        self.d += d;
        self.shared_busy += d;
        self.shared_bytes += share;
        self.max_raw.max(self.r) + self.d
    }

    /// Every port but `me` moves `share` bytes, then `me` moves `mine`
    /// (at least `share`: the node that gathers the others' shares);
    /// returns when the last is through.
    pub fn carry_all_but(&mut self, me: usize, ready: Time, share: u64, mine: u64) -> Time {
        assert!(mine >= share, "the gathering port moves at least one share");
        let before = self.busy_until(me);
        // One division and ceiling per size (a copy books two link sets).
        let (d_share, d) = (self.dur(share), self.dur(mine));
        let all = self.carry_all_dur(ready, share, d_share);
        // `me` takes its own bytes instead of the share (the shared
        // counters gave it one share). Its new time is above the
        // transform's floor, since `mine` ≥ `share`.
        let done = ready.max(before) + d;
        debug_assert!(done.as_ns() >= self.r.as_ns() + self.d.as_ns());
        let p = &mut self.ports[me];
        p.raw = Time(done.as_ns() - self.d.as_ns());
        self.max_raw = self.max_raw.max(p.raw);
        p.own_busy += Dur(d.as_ns() - d_share.as_ns());
        p.own_bytes += mine - share;
        // The latest port: `me` itself or the latest of the others. Another
        // port's time is what `all` computed unless `me` was the latest
        // there; then the others' latest is at most that.
        all.max(done)
    }

    /// Busy time of port `i`.
    pub fn busy(&self, i: usize) -> Dur {
        self.ports[i].own_busy + self.shared_busy
    }

    /// Bytes port `i` moved.
    pub fn bytes(&self, i: usize) -> u64 {
        self.ports[i].own_bytes + self.shared_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::stream;
    use rand::RngExt;

    /// The O(1) shared shares give exactly the times, busy time and bytes
    /// of one `Link` per node driven the old way, O(nodes) per share.
    #[test]
    fn a_link_set_times_ports_as_one_link_each() {
        let n = 7;
        let mut set = LinkSet::new(n, 3.2e9);
        let mut links: Vec<Link> = (0..n).map(|_| Link::new(3.2e9)).collect();
        let mut rng = stream(5, "linkset-test", 0);
        let mut now = 0u64;
        for _ in 0..4000 {
            now += rng.random_range(0..400u64);
            let ready = Time(now);
            let bytes = rng.random_range(0..20_000u64);
            let i = rng.random_range(0..n);
            let (got, want) = match rng.random_range(0..3u32) {
                0 => (set.carry(i, ready, bytes), links[i].carry(ready, bytes)),
                1 => (
                    set.carry_all(ready, bytes),
                    links
                        .iter_mut()
                        .map(|l| l.carry(ready, bytes))
                        .max()
                        .unwrap(),
                ),
                _ => {
                    let mine = bytes * (n as u64 - 1);
                    let mut t = Time::ZERO;
                    for (j, l) in links.iter_mut().enumerate() {
                        if j != i {
                            t = t.max(l.carry(ready, bytes));
                        }
                    }
                    t = t.max(links[i].carry(ready, mine));
                    (set.carry_all_but(i, ready, bytes, mine), t)
                }
            };
            assert_eq!(got, want);
            for (j, l) in links.iter().enumerate() {
                assert_eq!(set.busy_until(j), l.busy_until);
                assert_eq!(set.busy(j), l.busy);
                assert_eq!(set.bytes(j), l.bytes);
            }
        }
    }
}
