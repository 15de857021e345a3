//! A statistics counter kept as one global word, one word per node, or one
//! per CPU ([ALTIX04] C3, C8). Updates write the line of the updater's slot;
//! a read sums every slot (touching each line). One global word makes every
//! CPU's update a cache-line conflict; per-node words leave only the CPUs of
//! one node sharing a line; per-CPU words never conflict.

use super::Line;
use crate::engine::Time;
use crate::machine::Machine;

/// Where the slots are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Global,
    PerNode,
}

#[derive(Debug)]
pub struct SplitCounter<'a> {
    layout: Layout,
    lines: Vec<Line<'a>>,
    values: Vec<i64>,
}

impl<'a> SplitCounter<'a> {
    /// A counter on `machine`; `make(home)` builds each slot's line.
    pub fn new(machine: &Machine, layout: Layout, mut make: impl FnMut(usize) -> Line<'a>) -> Self {
        let homes: Vec<usize> = match layout {
            Layout::Global => vec![0],
            Layout::PerNode => (0..machine.node_count()).collect(),
        };
        SplitCounter {
            layout,
            values: vec![0; homes.len()],
            lines: homes.into_iter().map(&mut make).collect(),
        }
    }
    fn slot(&self, node: usize) -> usize {
        match self.layout {
            Layout::Global => 0,
            Layout::PerNode => node,
        }
    }
    /// Add `delta` from `cpu` on `node` (the node of the page, for C8).
    pub fn add(&mut self, now: Time, cpu: usize, node: usize, delta: i64) -> Time {
        let s = self.slot(node);
        self.values[s] += delta;
        self.lines[s].write(now, cpu, node)
    }
    /// Read the sum from `cpu`: one line read per slot, in a loop.
    #[cfg(test)] // only the model's own tests read it today
    pub fn sum(&mut self, now: Time, cpu: usize, node: usize) -> (Time, i64) {
        let mut t = now;
        for l in &mut self.lines {
            t = l.read(t, cpu, node);
        }
        (t, self.values.iter().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::CacheLine;
    use crate::machine::presets;

    #[test]
    fn per_node_counts_sum_to_the_global_count() {
        let m =
            Machine::from_toml_str(presets::preset_text("wildfire-gs320").unwrap(), "w").unwrap();
        let cost = m.line_cost_table();
        let mut g = SplitCounter::new(&m, Layout::Global, |h| CacheLine::new(h, &cost));
        let mut p = SplitCounter::new(&m, Layout::PerNode, |h| CacheLine::new(h, &cost));
        let mut t = Time(0);
        for cpu in 0..32usize {
            let node = cpu / 4;
            t = g.add(t, cpu, node, cpu as i64 - 3);
            t = p.add(t, cpu, node, cpu as i64 - 3);
        }
        assert_eq!(g.sum(t, 0, 0).1, p.sum(t, 0, 0).1);
    }
}
