//! The XFS distributed per-CPU superblock counter (`xfs_icsb`, Linux
//! 2.6.17; [XFS06] F4), as an algorithm on exact integers.
//!
//! - Fast path: a CPU adds to or takes from its own share only.
//! - When a CPU's share cannot cover a subtraction, every per-CPU counter is
//!   locked out and drained into the global count (`xfs_icsb_disable_counter`),
//!   the change is applied there exactly, and the total is spread evenly
//!   again (`xfs_icsb_balance_counter`: total / CPUs each, the first CPU
//!   taking the remainder).
//! - Near zero: if the even share would be below the threshold, the counter
//!   stays in global mode — slow, single-threaded and exact — until adds
//!   bring it back above (the counter "gets slower and more accurate as the
//!   aggregated total approaches zero").
//!
//! A change that would make the total negative fails (`ENOSPC`) and changes
//! nothing, whatever mode the counter is in.

/// Mainline `XFS_ICSB_FDBLK_CNTR_REENABLE`: 512 blocks per CPU plus the
/// allocator's set-aside (fs/xfs/xfs_mount.c, 2.6.17); the inode counters
/// use 64. Kept a parameter: [`XfsCounter::new`] takes the threshold.
#[cfg(test)]
pub const XFS_ICSB_FDBLK_CNTR_REENABLE: u64 = 512;

/// The change would take the counter below zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enospc;

/// Counts of the paths taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XfsCounterStats {
    pub fast: u64,
    pub rebalances: u64,
    pub global_ops: u64,
    pub enospc: u64,
}

#[derive(Debug, Clone)]
pub struct XfsCounter {
    percpu: Vec<u64>,
    /// The whole count while in global mode; 0 otherwise.
    global: u64,
    global_mode: bool,
    threshold: u64,
    stats: XfsCounterStats,
}

impl XfsCounter {
    /// `total` units spread over `cpus` CPUs; global mode below `threshold`
    /// units per CPU.
    pub fn new(cpus: usize, total: u64, threshold: u64) -> Self {
        assert!(cpus > 0, "a counter needs at least one CPU");
        let mut c = XfsCounter {
            percpu: vec![0; cpus],
            global: total,
            global_mode: true,
            threshold,
            stats: XfsCounterStats::default(),
        };
        c.balance();
        c
    }

    /// `xfs_icsb_modify_counters()`: add `delta` (negative: take) on `cpu`.
    pub fn modify(&mut self, cpu: usize, delta: i64) -> Result<(), Enospc> {
        let cpu = cpu % self.percpu.len();
        if !self.global_mode {
            let mine = &mut self.percpu[cpu];
            if delta >= 0 {
                *mine += delta as u64;
                self.stats.fast += 1;
                return Ok(());
            }
            if *mine >= delta.unsigned_abs() {
                *mine -= delta.unsigned_abs();
                self.stats.fast += 1;
                return Ok(());
            }
            // This CPU ran dry: lock every counter out and drain them.
            self.disable();
        }
        self.stats.global_ops += 1;
        let r = if delta >= 0 {
            self.global += delta as u64;
            Ok(())
        } else if self.global >= delta.unsigned_abs() {
            self.global -= delta.unsigned_abs();
            Ok(())
        } else {
            self.stats.enospc += 1;
            Err(Enospc)
        };
        self.balance();
        r
    }

    /// Drain every per-CPU share into the global count.
    fn disable(&mut self) {
        self.global += self.percpu.iter().sum::<u64>();
        self.percpu.iter_mut().for_each(|c| *c = 0);
        self.global_mode = true;
    }

    /// Spread the global count evenly if each share reaches the threshold;
    /// otherwise stay global.
    fn balance(&mut self) {
        debug_assert!(self.global_mode);
        let n = self.percpu.len() as u64;
        let share = self.global / n;
        if share < self.threshold.max(1) {
            return;
        }
        let rem = self.global % n;
        for c in &mut self.percpu {
            *c = share;
        }
        self.percpu[0] += rem;
        self.global = 0;
        self.global_mode = false;
        self.stats.rebalances += 1;
    }

    /// The exact total (what `statfs` reports after summing every CPU).
    #[cfg(test)] // only the model's own tests read it today
    pub fn total(&self) -> u64 {
        self.global + self.percpu.iter().sum::<u64>()
    }
    /// In the slow, exact global mode.
    #[cfg(test)] // only the model's own tests read it today
    pub fn is_global(&self) -> bool {
        self.global_mode
    }
    pub fn stats(&self) -> XfsCounterStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_near_zero() {
        let mut c = XfsCounter::new(8, 8 * 600, XFS_ICSB_FDBLK_CNTR_REENABLE);
        assert!(!c.is_global());
        // CPU 3 takes more than its share: the counter rebalances and, with
        // under 512 per CPU left, falls back to global mode.
        c.modify(3, -4000).unwrap();
        assert!(c.is_global());
        assert_eq!(c.total(), 800);
        // Every last unit can be taken, from any CPU, and no more.
        c.modify(7, -799).unwrap();
        c.modify(0, -1).unwrap();
        assert_eq!(c.total(), 0);
        assert_eq!(c.modify(5, -1), Err(Enospc));
        assert_eq!(c.total(), 0);
        // Adds bring it back to per-CPU mode once the share is large enough.
        c.modify(2, 8 * 512).unwrap();
        assert!(!c.is_global());
        assert_eq!(c.total(), 8 * 512);
    }

    proptest! {
        /// Random concurrent adds and subtracts (interleaved across CPUs):
        /// the counter never loses or invents a unit, and refuses a
        /// subtraction exactly when the true total cannot cover it.
        #[test]
        fn never_loses_or_invents_a_unit(
            cpus in 1usize..64,
            start in 0u64..200_000,
            threshold in 0u64..1024,
            ops in prop::collection::vec((0usize..64, -5_000i64..5_000), 1..400),
        ) {
            let mut c = XfsCounter::new(cpus, start, threshold);
            let mut truth = start as i128;
            for &(cpu, d) in &ops {
                let r = c.modify(cpu, d);
                if truth + d as i128 >= 0 {
                    prop_assert_eq!(r, Ok(()));
                    truth += d as i128;
                } else {
                    prop_assert_eq!(r, Err(Enospc));
                }
                prop_assert_eq!(c.total() as i128, truth);
            }
            let s = c.stats();
            prop_assert_eq!(s.fast + s.global_ops, ops.len() as u64);
        }
    }
}
