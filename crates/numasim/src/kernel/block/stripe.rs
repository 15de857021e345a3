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
        let (inner, disk, row) = self.place(v);
        (disk as usize, row * self.unit + inner)
    }
    /// Volume byte `v`'s (offset in its stripe unit, disk, row). Units
    /// and disk counts are powers of two in every preset (a 512 KiB or
    /// 1 MiB unit over 256 disks), where a shift and a mask give what
    /// the two 64-bit divisions did: tens of cycles each on x86-64,
    /// once for every run a reader cuts (about two million in
    /// `fs-buffered-read`).
    #[inline]
    fn place(&self, v: u64) -> (u64, u64, u64) {
        if self.unit.is_power_of_two() && self.disks.is_power_of_two() {
            let (us, ds) = (self.unit.trailing_zeros(), self.disks.trailing_zeros());
            let su = v >> us;
            (v & (self.unit - 1), su & (self.disks - 1), su >> ds)
        } else {
            let su = v / self.unit;
            (v % self.unit, su % self.disks, su / self.disks)
        }
    }
    /// Split `[v, v + len)` at stripe-unit boundaries: `f(disk, disk_off, len)`.
    /// One placement for the first unit, then each next unit is the next
    /// disk (the divisions per unit were a twentieth of a buffered read).
    pub fn split(&self, mut v: u64, len: u64, mut f: impl FnMut(usize, u64, u64)) {
        let end = v + len;
        if v >= end {
            return;
        }
        let (mut inner, mut disk, mut row) = self.place(v);
        while v < end {
            let n = (self.unit - inner).min(end - v);
            f(disk as usize, row * self.unit + inner, n);
            v += n;
            inner = 0;
            disk += 1;
            if disk == self.disks {
                disk = 0;
                row += 1;
            }
        }
    }
    /// The requests `[v, v + len)` becomes, as [`requests`](Self::requests)
    /// cuts them, with where each lies: `f(disk, disk_offset, len)`. A
    /// caller that keeps these submits them without cutting the range again.
    pub fn requests_on_disks(
        &self,
        v: u64,
        len: u64,
        max: u64,
        mut f: impl FnMut(usize, u64, u64),
    ) {
        debug_assert!(max > 0);
        self.split(v, len, |d, off, k| {
            let mut o = 0;
            while o < k {
                let b = (k - o).min(max);
                f(d, off + o, b);
                o += b;
            }
        });
    }
    /// The requests `[v, v + len)` becomes: pieces within one stripe unit
    /// and at most `max` bytes (the queue's limit), in volume order:
    /// `f(volume_start, len)`.
    pub fn requests(&self, v: u64, len: u64, max: u64, mut f: impl FnMut(u64, u64)) {
        debug_assert!(max > 0);
        let mut at = v;
        self.split(v, len, |_, _, k| {
            let mut o = 0;
            while o < k {
                let b = (k - o).min(max);
                f(at + o, b);
                o += b;
            }
            at += k;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shifts and masks where the unit and the disk count are powers of
    /// two, divisions otherwise: the same place for every byte, on
    /// random offsets up to 2^60 and near unit boundaries.
    #[test]
    fn a_bytes_place_by_shifts_is_its_place_by_division() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for (disks, unit) in [
            (256u64, 512u64 << 10),
            (256, 1 << 20),
            (1, 4096),
            (7, 512 << 10),
            (256, 3 << 18),
            (12, 1 << 16),
        ] {
            let s = Stripe::new(disks, unit);
            for i in 0..20_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = match i % 3 {
                    0 => x >> 4,
                    1 => (x % 1_000_000) * unit + unit - 1 - (x >> 60),
                    _ => x % (disks * unit * 4),
                };
                let su = v / unit;
                let want = (v % unit, su % disks, su / disks);
                assert_eq!(s.place(v), want, "{disks} x {unit} at {v}");
            }
        }
    }

    #[test]
    fn requests_tile_the_range_within_unit_and_limit() {
        let s = Stripe::new(7, 512 << 10);
        let (v, len, max) = (300_000u64, 5u64 << 20, 192u64 << 10);
        let mut next = v;
        s.requests(v, len, max, |at, n| {
            assert_eq!(at, next, "contiguous, in volume order");
            assert!(n > 0 && n <= max && at % s.unit + n <= s.unit);
            next += n;
        });
        assert_eq!(next, v + len);
    }

    #[test]
    fn requests_on_disks_are_the_requests_where_locate_puts_them() {
        let s = Stripe::new(7, 512 << 10);
        let (v, len, max) = (300_000u64, 5u64 << 20, 192u64 << 10);
        let mut want = Vec::new();
        s.requests(v, len, max, |at, n| want.push((s.locate(at), n)));
        let mut got = Vec::new();
        s.requests_on_disks(v, len, max, |d, off, n| got.push(((d, off), n)));
        assert_eq!(got, want);
        assert!(want.len() > 10);
    }

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
    fn split_gives_each_piece_where_locate_puts_it() {
        for (disks, unit) in [(7u64, 512u64 << 10), (4, 1024), (1, 4096), (256, 3000)] {
            let s = Stripe::new(disks, unit);
            for (v, len) in [
                (0u64, 0u64),
                (5, 1),
                (unit - 1, 2),
                (300_000, 40 << 20),
                (unit * disks * 3 + 17, unit * disks + 5),
            ] {
                let mut at = v;
                s.split(v, len, |d, off, n| {
                    assert_eq!((d, off), s.locate(at), "{disks}x{unit} at {at}");
                    assert!(n > 0 && n <= unit - at % unit);
                    at += n;
                });
                assert_eq!(at, v + len);
            }
        }
    }

    #[test]
    fn consecutive_units_go_round_the_disks() {
        let s = Stripe::new(4, 1024);
        let disks: Vec<usize> = (0..6).map(|i| s.locate(i * 1024).0).collect();
        assert_eq!(disks, vec![0, 1, 2, 3, 0, 1]);
        assert_eq!(s.locate(4 * 1024 + 5), (0, 1024 + 5));
    }
}
