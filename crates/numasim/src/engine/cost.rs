//! The cost of moving a cache line between nodes, supplied by the caller.
//!
//! Resources ([`Lock`](super::Lock), [`CacheLine`](super::CacheLine)) do not
//! know the machine; they ask a [`TransferCost`] how long a line takes to go
//! from one node to another. The machine model plugs in by building a
//! [`CostTable`] from `Machine::line_transfer_ns`, so the engine depends on
//! nothing above it.

use std::rc::Rc;
use std::sync::Arc;

/// Nanoseconds to move one cache line from `from_node` to `to_node`
/// (`from == to` is the cost within a node, e.g. between two CPUs' caches).
pub trait TransferCost {
    /// The transfer time in whole nanoseconds.
    fn transfer_ns(&self, from_node: usize, to_node: usize) -> u64;
    /// Nested node-group sizes (nodes `a` and `b` share a level-k group
    /// when `a / groups[k] == b / groups[k]`) such that the cost between
    /// two distinct nodes depends only on the smallest group they share;
    /// `Some(&[])` when every remote node costs the same. Resources use it
    /// to treat the waiters at one distance as one group; `None` (the
    /// default): no such structure is known.
    fn nested_groups(&self) -> Option<&[u32]> {
        None
    }
    /// With [`nested_groups`](Self::nested_groups), when the cost is held
    /// per level: the time on the node, then within each group level, then
    /// between nodes in no common group (`groups.len() + 2` values). Lets
    /// a lock skip the levels that cannot change a maximum.
    fn level_ns(&self) -> Option<&[u64]> {
        None
    }
    /// With [`level_ns`](Self::level_ns), when every group size is a power
    /// of two, each holds the one inside it and the time never falls
    /// from one level to the next: the groups' `log2`s and the level
    /// times, checked once when the cost is built (a lock asks at every
    /// hand-off for its farthest spinner, which is then the highest bit
    /// in which a waiter's node differs: issue 31).
    fn pow2_levels(&self) -> Option<(&[u32], &[u64])> {
        None
    }
}

impl<T: TransferCost + ?Sized> TransferCost for &T {
    // Always: a lock's release looks up a cost per distance class, and the
    // call (not the lookup) was a tenth of a gettimeofday storm (issue 31).
    #[inline(always)]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        (**self).transfer_ns(from, to)
    }
    fn nested_groups(&self) -> Option<&[u32]> {
        (**self).nested_groups()
    }
    fn level_ns(&self) -> Option<&[u64]> {
        (**self).level_ns()
    }
    fn pow2_levels(&self) -> Option<(&[u32], &[u64])> {
        (**self).pow2_levels()
    }
}
impl<T: TransferCost + ?Sized> TransferCost for Rc<T> {
    #[inline]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        (**self).transfer_ns(from, to)
    }
    fn nested_groups(&self) -> Option<&[u32]> {
        (**self).nested_groups()
    }
    fn level_ns(&self) -> Option<&[u64]> {
        (**self).level_ns()
    }
    fn pow2_levels(&self) -> Option<(&[u32], &[u64])> {
        (**self).pow2_levels()
    }
}
impl<T: TransferCost + ?Sized> TransferCost for Arc<T> {
    #[inline]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        (**self).transfer_ns(from, to)
    }
    fn nested_groups(&self) -> Option<&[u32]> {
        (**self).nested_groups()
    }
    fn level_ns(&self) -> Option<&[u64]> {
        (**self).level_ns()
    }
    fn pow2_levels(&self) -> Option<(&[u32], &[u64])> {
        (**self).pow2_levels()
    }
}

/// Wraps a closure `Fn(from, to) -> ns` as a [`TransferCost`].
#[derive(Debug, Clone, Copy)]
pub struct FnCost<F>(pub F);

impl<F: Fn(usize, usize) -> u64> TransferCost for FnCost<F> {
    #[inline]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        (self.0)(from, to)
    }
}

/// Two costs: within a node and between any two nodes (tests, toy machines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformCost {
    /// Cost when `from == to`.
    pub local_ns: u64,
    /// Cost otherwise.
    pub remote_ns: u64,
}

impl TransferCost for UniformCost {
    #[inline]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        if from == to {
            self.local_ns
        } else {
            self.remote_ns
        }
    }
    fn nested_groups(&self) -> Option<&[u32]> {
        Some(&[])
    }
}

/// Transfer costs between every pair of `n` nodes, precomputed once so hot
/// paths do no float arithmetic: dense `n × n` for an arbitrary function,
/// or per group level for a machine whose distances follow nested groups
/// (a few entries instead of nodes², which at 8,192 nodes is 512 MiB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostTable {
    n: usize,
    repr: CostRepr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum CostRepr {
    Dense(Vec<u64>),
    /// `ns[0]` within a node, `ns[k + 1]` for smallest common group k,
    /// `ns[groups.len() + 1]` for none.
    Groups {
        groups: Vec<u32>,
        ns: Vec<u64>,
        /// `log2` of each group size when every one is a power of two (every
        /// preset): then `a / g == b / g` is `a >> s == b >> s`, and a hand-off
        /// costs no division (a 64-bit divide per level was a tenth of a
        /// contended-lock run). Empty otherwise.
        shifts: Vec<u32>,
        /// [`TransferCost::pow2_levels`] holds for these groups and times.
        pow2: bool,
    },
}

impl CostTable {
    /// Build from `f(from, to)` in fractional nanoseconds, rounded to the
    /// nearest nanosecond, e.g.
    /// `CostTable::from_fn_f64(m.nodes.len(), |a, b| m.line_transfer_ns(a, b))`.
    pub fn from_fn_f64(n: usize, f: impl Fn(usize, usize) -> f64) -> Self {
        Self::from_fn(n, |a, b| super::Dur::from_ns_f64(f(a, b)).as_ns())
    }

    /// Build from `f(from, to)` in nanoseconds.
    pub fn from_fn(n: usize, f: impl Fn(usize, usize) -> u64) -> Self {
        let mut ns = Vec::with_capacity(n * n);
        for a in 0..n {
            for b in 0..n {
                ns.push(f(a, b));
            }
        }
        CostTable {
            n,
            repr: CostRepr::Dense(ns),
        }
    }

    /// Costs that follow nested `groups` (see
    /// [`TransferCost::nested_groups`]): `ns[0]` within a node, `ns[k + 1]`
    /// between nodes whose smallest common group is level k, the last
    /// between nodes in no common group (`groups.len() + 2` entries).
    ///
    /// # Panics
    /// If `ns` has the wrong length (a bug in the caller).
    pub fn from_groups(n: usize, groups: Vec<u32>, ns: Vec<u64>) -> Self {
        assert_eq!(ns.len(), groups.len() + 2, "one cost per level");
        let all_pow2 = groups.iter().all(|g| g.is_power_of_two());
        let shifts: Vec<u32> = if all_pow2 {
            groups.iter().map(|g| g.trailing_zeros()).collect()
        } else {
            Vec::new()
        };
        // Powers of two nest when each is at least the one inside it.
        let pow2 = all_pow2
            && shifts.windows(2).all(|w| w[0] <= w[1])
            && ns.windows(2).all(|w| w[0] <= w[1]);
        CostTable {
            n,
            repr: CostRepr::Groups {
                groups,
                ns,
                shifts,
                pow2,
            },
        }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.n
    }
}

/// The panic of a node outside the table, out of line so that the hot
/// lookup inlines into the locks and lines that call it per hand-off.
#[cold]
#[inline(never)]
fn outside(from: usize, to: usize, n: usize) -> ! {
    panic!("node {from} or {to} outside a {n}-node cost table")
}

impl TransferCost for CostTable {
    /// # Panics
    /// If either node is outside the table (a bug in the caller).
    #[inline(always)]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        if from >= self.n || to >= self.n {
            outside(from, to, self.n);
        }
        match &self.repr {
            CostRepr::Dense(ns) => ns[from * self.n + to],
            CostRepr::Groups { ns, .. } if from == to => ns[0],
            CostRepr::Groups {
                groups, ns, shifts, ..
            } if shifts.is_empty() => {
                let k = groups
                    .iter()
                    .position(|&g| from / g as usize == to / g as usize)
                    .unwrap_or(groups.len());
                ns[k + 1]
            }
            CostRepr::Groups { ns, shifts, .. } => {
                let k = shifts
                    .iter()
                    .position(|&s| from >> s == to >> s)
                    .unwrap_or(shifts.len());
                ns[k + 1]
            }
        }
    }
    fn nested_groups(&self) -> Option<&[u32]> {
        match &self.repr {
            CostRepr::Groups { groups, .. } => Some(groups),
            CostRepr::Dense(_) => None,
        }
    }
    fn level_ns(&self) -> Option<&[u64]> {
        match &self.repr {
            CostRepr::Groups { ns, .. } => Some(ns),
            CostRepr::Dense(_) => None,
        }
    }
    #[inline(always)]
    fn pow2_levels(&self) -> Option<(&[u32], &[u64])> {
        match &self.repr {
            CostRepr::Groups {
                shifts,
                ns,
                pow2: true,
                ..
            } => Some((shifts, ns)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Power-of-two groups (shifts) cost as the same groups by division.
    #[test]
    fn shifted_groups_equal_divided_groups() {
        for groups in [
            vec![],
            vec![1],
            vec![2, 8],
            vec![4, 16, 64, 256],
            vec![2, 4, 8, 16, 32],
        ] {
            let ns: Vec<u64> = (0..groups.len() as u64 + 2).map(|k| 10 + 7 * k).collect();
            let t = CostTable::from_groups(300, groups.clone(), ns.clone());
            let CostRepr::Groups { shifts, .. } = &t.repr else {
                unreachable!()
            };
            assert_eq!(shifts.len(), groups.len());
            for a in 0..300 {
                for b in 0..300 {
                    let k = groups
                        .iter()
                        .position(|&g| a / g as usize == b / g as usize)
                        .unwrap_or(groups.len());
                    let want = if a == b { ns[0] } else { ns[k + 1] };
                    assert_eq!(t.transfer_ns(a, b), want, "{groups:?} {a} {b}");
                }
            }
        }
        // Not all powers of two: the divided form.
        let t = CostTable::from_groups(30, vec![3, 6], vec![1, 2, 3, 4]);
        assert_eq!(t.transfer_ns(2, 4), 3);
        assert_eq!(t.transfer_ns(5, 6), 4);
    }

    /// Where `pow2_levels` answers, a pair's time is the level of the
    /// highest bit in which its nodes differ; where the groups do not nest,
    /// are not powers of two or the times fall, it does not answer.
    #[test]
    fn pow2_levels_are_the_highest_differing_bit() {
        for (groups, ns, answers) in [
            (vec![], vec![5, 9], true),
            (vec![2, 8], vec![1, 2, 3, 4], true),
            (vec![4, 4, 64], vec![1, 2, 2, 3, 9], true),
            (vec![3, 6], vec![1, 2, 3, 4], false),
            (vec![8, 2], vec![1, 2, 3, 4], false),
            (vec![2, 8], vec![1, 3, 2, 4], false),
        ] {
            let t = CostTable::from_groups(200, groups.clone(), ns.clone());
            assert_eq!(t.pow2_levels().is_some(), answers, "{groups:?} {ns:?}");
            let Some((shifts, level)) = t.pow2_levels() else {
                continue;
            };
            assert_eq!(level, &ns[..]);
            for a in 0..200usize {
                for b in 0..200usize {
                    let want = match a ^ b {
                        0 => level[0],
                        d => {
                            let high = 63 - d.leading_zeros();
                            level[shifts.iter().take_while(|&&s| s <= high).count() + 1]
                        }
                    };
                    assert_eq!(t.transfer_ns(a, b), want, "{groups:?} {a} {b}");
                }
            }
        }
    }

    #[test]
    fn table_matches_function_and_rounds() {
        let t = CostTable::from_fn_f64(3, |a, b| 100.0 + 10.4 * a.abs_diff(b) as f64);
        assert_eq!(t.nodes(), 3);
        assert_eq!(t.transfer_ns(0, 0), 100);
        assert_eq!(t.transfer_ns(0, 2), 121);
        assert_eq!(t.transfer_ns(2, 1), 110);
        let r = Rc::new(t.clone());
        assert_eq!(r.transfer_ns(0, 2), 121);
        let by_ref: &dyn TransferCost = &t;
        assert_eq!((&by_ref).transfer_ns(1, 0), 110);
        assert_eq!(
            FnCost(|a: usize, b: usize| (a * 10 + b) as u64).transfer_ns(2, 3),
            23
        );
    }
}
