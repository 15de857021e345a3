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
}

impl<T: TransferCost + ?Sized> TransferCost for &T {
    #[inline]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        (**self).transfer_ns(from, to)
    }
}
impl<T: TransferCost + ?Sized> TransferCost for Rc<T> {
    #[inline]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        (**self).transfer_ns(from, to)
    }
}
impl<T: TransferCost + ?Sized> TransferCost for Arc<T> {
    #[inline]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        (**self).transfer_ns(from, to)
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
}

/// A dense `n × n` table of transfer costs, precomputed once so that hot
/// paths do a single indexed load instead of float arithmetic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostTable {
    n: usize,
    ns: Vec<u64>,
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
        CostTable { n, ns }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.n
    }
}

impl TransferCost for CostTable {
    /// # Panics
    /// If either node is outside the table (a bug in the caller).
    #[inline]
    fn transfer_ns(&self, from: usize, to: usize) -> u64 {
        assert!(
            from < self.n && to < self.n,
            "node {from} or {to} outside a {}-node cost table",
            self.n
        );
        self.ns[from * self.n + to]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
