//! Where new pages go: Linux memory policies (`mm/mempolicy.c`) plus SGI's
//! `GFP_ROUND_ROBIN` page-cache placement ([ALTIX04] A4).

use super::page_alloc::{AllocError, Gfp, PageAlloc, Placement, Use};
use std::collections::HashMap;

/// A placement policy, with the kernel's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// First touch: the allocating CPU's node, spilling nearest-first (`MPOL_DEFAULT`).
    Local,
    /// Only these nodes, nearest-first from the allocating CPU (`MPOL_BIND`).
    Bind(Vec<u32>),
    /// This node first, then its zonelist (`MPOL_PREFERRED`).
    Preferred(u32),
    /// Page i of a request on the i-th next node of the set (`MPOL_INTERLEAVE`,
    /// one per-task cursor, `il_next`).
    Interleave(Vec<u32>),
    /// SGI's `alloc_pages_round_robin()`: a per-CPU counter modulo the node
    /// count picks the zonelist, one step per allocation call.
    RoundRobin,
}

impl MemPolicy {
    pub const NAMES: &'static [&'static str] =
        &["local", "bind", "preferred", "interleave", "round-robin"];

    pub fn name(&self) -> &'static str {
        match self {
            MemPolicy::Local => "local",
            MemPolicy::Bind(_) => "bind",
            MemPolicy::Preferred(_) => "preferred",
            MemPolicy::Interleave(_) => "interleave",
            MemPolicy::RoundRobin => "round-robin",
        }
    }
}

/// The cursors policies advance: each task's interleave `il_next`, each
/// CPU's round-robin counter.
#[derive(Debug, Clone, Default)]
pub struct PolicyCursor {
    /// Index into the interleave set of the next node, per task.
    il_next: HashMap<u32, u64>,
    /// Round-robin counter per CPU. Initial value: the CPU number, so CPUs
    /// start on different nodes (not stated in ALTIX04; docs/placement.md).
    rr: HashMap<u64, u64>,
}

impl PolicyCursor {
    /// Set a task's interleave cursor (index into its node set).
    pub fn set_il_next(&mut self, task: u32, index: u64) {
        self.il_next.insert(task, index);
    }
    pub fn il_next(&self, task: u32) -> u64 {
        self.il_next.get(&task).copied().unwrap_or(0)
    }
}

/// Who allocates: the task (for its interleave cursor), its CPU, and the CPU's node.
#[derive(Debug, Clone, Copy)]
pub struct Allocator {
    pub task: u32,
    pub cpu: u64,
    pub node: usize,
}

fn mask(nodes: usize, set: &[u32]) -> Vec<bool> {
    let mut m = vec![false; nodes];
    for &n in set {
        if (n as usize) < nodes {
            m[n as usize] = true;
        }
    }
    m
}

/// Split `pages` single-page allocations over `set`, page i on `set[(start + i) % k]`.
pub fn interleave_shares(set: &[u32], start: u64, pages: u64) -> Vec<(usize, u64)> {
    interleave_shares_by(set.len() as u64, |i| set[i as usize], start, pages)
}

/// [`interleave_shares`] over `k` nodes, the i-th of the set being
/// `node(i)`: only the nodes that get a page are visited, so a request of
/// a few pages over 8,192 nodes costs a few steps, not 8,192.
fn interleave_shares_by(
    k: u64,
    node: impl Fn(u64) -> u32,
    start: u64,
    pages: u64,
) -> Vec<(usize, u64)> {
    let (base, extra) = (pages / k, pages % k);
    // With base = 0 only the first `extra` positions get a page.
    let visit = if base == 0 { extra } else { k };
    (0..visit)
        .map(|i| {
            let idx = ((start % k) + i) % k;
            (node(idx) as usize, base + u64::from(i < extra))
        })
        .collect()
}

/// Place `pages` order-0 pages (one allocation call per page) under `policy`.
pub fn alloc_pages(
    mm: &mut PageAlloc,
    cursors: &mut PolicyCursor,
    policy: &MemPolicy,
    who: Allocator,
    pages: u64,
    gfp: Gfp,
    what: Use,
) -> Result<Placement, AllocError> {
    let n = mm.node_count();
    match policy {
        MemPolicy::Local => mm.alloc_spill(who.node, pages, gfp, what, None),
        MemPolicy::Preferred(p) => mm.alloc_spill(*p as usize, pages, gfp, what, None),
        MemPolicy::Bind(set) => mm.alloc_spill(who.node, pages, gfp, what, Some(&mask(n, set))),
        MemPolicy::Interleave(set) => {
            let start = cursors.il_next(who.task);
            let shares = interleave_shares(set, start, pages);
            let p = mm.alloc_shares(&shares, gfp, what, None)?;
            cursors
                .il_next
                .insert(who.task, (start + pages) % set.len() as u64);
            Ok(p)
        }
        MemPolicy::RoundRobin => {
            let start = *cursors.rr.get(&who.cpu).unwrap_or(&who.cpu);
            let shares = interleave_shares_by(n as u64, |i| i as u32, start, pages);
            let p = mm.alloc_shares(&shares, gfp, what, None)?;
            cursors.rr.insert(who.cpu, (start + pages) % n as u64);
            Ok(p)
        }
    }
}

/// One contiguous block of `2^order` pages under `policy`: interleave and
/// round-robin pick one node for the whole block and advance by one
/// (`alloc_page_interleave()` takes the order as given).
pub fn alloc_block(
    mm: &mut PageAlloc,
    cursors: &mut PolicyCursor,
    policy: &MemPolicy,
    who: Allocator,
    order: u32,
    gfp: Gfp,
    what: Use,
) -> Result<Placement, AllocError> {
    let n = mm.node_count();
    let node = match policy {
        MemPolicy::Local | MemPolicy::Bind(_) => who.node,
        MemPolicy::Preferred(p) => *p as usize,
        MemPolicy::Interleave(set) => {
            let i = cursors.il_next(who.task);
            cursors.il_next.insert(who.task, (i + 1) % set.len() as u64);
            set[(i % set.len() as u64) as usize] as usize
        }
        MemPolicy::RoundRobin => {
            let c = *cursors.rr.get(&who.cpu).unwrap_or(&who.cpu);
            cursors.rr.insert(who.cpu, (c + 1) % n as u64);
            (c % n as u64) as usize
        }
    };
    if let MemPolicy::Bind(set) = policy {
        if order >= mm.max_order() {
            return Err(AllocError::OrderTooLarge {
                order,
                max_order: mm.max_order(),
            });
        }
        // The block must come from the set, nearest-first from the CPU's node.
        let allowed = mask(n, set);
        let zl: Vec<u32> = mm.zonelist(node).filter(|&c| allowed[c as usize]).collect();
        let mut last = Err(AllocError::NoMemory { pages: 1 << order });
        for c in zl {
            last = mm.alloc_on_node(c as usize, 1 << order, gfp, what);
            if last.is_ok() {
                break;
            }
        }
        return last;
    }
    mm.alloc_block(node, order, gfp, what)
}
