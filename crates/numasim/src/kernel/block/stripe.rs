//! MD `raid0` over DM `striped` ([XFS06] F8), modelled as one flat stripe
//! (the paper found XVM's flat and two-level stripes equivalent): volume
//! byte `v` lies in stripe unit `v / unit`, on disk `(v / unit) % disks`.
//! Every I/O is split at stripe-unit boundaries, so no disk sees an I/O
//! larger than the unit.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe {
    pub disks: u64,
    pub unit: u64,
}

impl Stripe {
    pub fn new(disks: u64, unit: u64) -> Stripe {
        debug_assert!(disks > 0 && unit > 0);
        Stripe { disks, unit }
    }
    /// Where volume byte `v` lives: (disk, byte offset on the disk).
    pub fn locate(&self, v: u64) -> (usize, u64) {
        let su = v / self.unit;
        let disk = (su % self.disks) as usize;
        let off = (su / self.disks) * self.unit + v % self.unit;
        (disk, off)
    }
    /// Split `[v, v + len)` at stripe-unit boundaries: `f(disk, disk_off, len)`.
    pub fn split(&self, mut v: u64, len: u64, mut f: impl FnMut(usize, u64, u64)) {
        let end = v + len;
        while v < end {
            let n = (self.unit - v % self.unit).min(end - v);
            let (d, off) = self.locate(v);
            f(d, off, n);
            v += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_conserves_bytes_and_never_exceeds_the_unit() {
        let s = Stripe::new(7, 512 << 10);
        let (mut total, mut max) = (0, 0);
        s.split(300_000, 40 << 20, |_, _, n| {
            total += n;
            max = max.max(n);
        });
        assert_eq!(total, 40 << 20);
        assert!(max <= 512 << 10);
    }

    #[test]
    fn consecutive_units_go_round_the_disks() {
        let s = Stripe::new(4, 1024);
        let disks: Vec<usize> = (0..6).map(|i| s.locate(i * 1024).0).collect();
        assert_eq!(disks, vec![0, 1, 2, 3, 0, 1]);
        assert_eq!(s.locate(4 * 1024 + 5), (0, 1024 + 5));
    }
}
