//! Per-node free memory and `__alloc_pages()`'s walk of nearest-first
//! zonelists ([ALTIX04] A1, A2; [WILDFIRE01] A3).
//!
//! State is aggregated: one free count per node and per-node counts of what
//! the used pages hold, never one object per page. One zone per node: the
//! Altix-era machines put all memory in ZONE_DMA/NORMAL of their node, and
//! a zone split would change no placement modelled here.

use crate::kernel::era::Era;
use crate::machine::Machine;
use std::sync::Arc;

/// What a page is used for; per-node meminfo breaks usage down by this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Use {
    /// `mem_map`: one `struct page` per present page.
    MemMap,
    /// Per-CPU data areas.
    PerCpu,
    /// Other node-local boot reservations (pgdat, node data).
    NodeData,
    /// Kernel image and early boot allocations on the boot node.
    Kernel,
    /// Boot-time hash tables (dentry, inode, TCP).
    Hash,
    /// Anonymous user memory.
    Anon,
    /// Page cache.
    PageCache,
    /// Slab (buffer heads, dentries…).
    Slab,
}

impl Use {
    pub const ALL: [Use; 8] = [
        Use::MemMap,
        Use::PerCpu,
        Use::NodeData,
        Use::Kernel,
        Use::Hash,
        Use::Anon,
        Use::PageCache,
        Use::Slab,
    ];
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Which watermark an allocation must leave free (`__alloc_pages()`'s passes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gfp {
    /// Boot-time (bootmem) reservations: no watermark exists yet.
    Boot,
    /// Ordinary allocations: stay above `pages_low` on the first pass; if no
    /// node in the zonelist can, kswapd is woken and the second pass may go
    /// down to `pages_min` (`__alloc_pages()`, 2.4 and 2.6).
    Normal,
    /// The second pass of an ordinary allocation: down to `pages_min`.
    Min,
    /// `GFP_ATOMIC`: may dip to half of `pages_min` (`ALLOC_HARDER|ALLOC_HIGH`).
    Atomic,
}

impl Gfp {
    fn index(self) -> usize {
        self as usize
    }
}

/// When kswapd is woken ([ALTIX04] B1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KswapdTrigger {
    /// 2.4: free memory summed over all nodes below a global low watermark
    /// (numasim takes the sum of the nodes' `pages_low`).
    Global,
    /// 2.6: an allocation's zonelist walk finds no node above `pages_low`.
    PerNode,
}

/// Pages placed by one request: (node, pages) in the order they were taken.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub parts: Vec<(u32, u64)>,
}

impl Placement {
    pub fn pages(&self) -> u64 {
        self.parts.iter().map(|&(_, p)| p).sum()
    }
    pub fn on_node(&self, node: usize) -> u64 {
        self.parts
            .iter()
            .filter(|&&(n, _)| n as usize == node)
            .map(|&(_, p)| p)
            .sum()
    }
    /// Add another placement's pages to this one.
    pub fn merge(&mut self, other: &Placement) {
        for &(n, k) in &other.parts {
            self.add(n as usize, k);
        }
    }
    /// Count `pages` more on `node`.
    pub fn add_pages(&mut self, node: usize, pages: u64) {
        self.add(node, pages)
    }
    pub fn add(&mut self, node: usize, pages: u64) {
        if pages == 0 {
            return;
        }
        match self.parts.iter_mut().find(|(n, _)| *n as usize == node) {
            Some((_, p)) => *p += pages,
            None => self.parts.push((node as u32, pages)),
        }
    }
}

/// A [`Placement`] added to many times: the same parts in the same order
/// as repeated [`Placement::add`] would give, but past a few parts found by
/// an index instead of a scan, so a placement spread over thousands of
/// nodes (an interleaved touch on 8,192 nodes) grows in linear time.
#[derive(Debug, Clone, Default)]
pub struct PlacementSum {
    p: Placement,
    index: Option<std::collections::HashMap<u32, u32, NodeHash>>,
}

/// Node ids are small, dense and not chosen by an adversary who can see
/// the hash: one multiply (Fibonacci hashing) instead of SipHash.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeHash;

impl std::hash::BuildHasher for NodeHash {
    type Hasher = NodeHasher;
    fn build_hasher(&self) -> NodeHasher {
        NodeHasher(0)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct NodeHasher(u64);

impl std::hash::Hasher for NodeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl PlacementSum {
    /// Parts up to which a scan is cheaper than the index.
    const SCAN: usize = 16;

    pub fn add(&mut self, node: usize, pages: u64) {
        if pages == 0 {
            return;
        }
        let parts = &mut self.p.parts;
        // Runs of pages on one node are the common case.
        if let Some(last) = parts.last_mut().filter(|(n, _)| *n as usize == node) {
            last.1 += pages;
            return;
        }
        let found = match &self.index {
            Some(ix) => ix.get(&(node as u32)).map(|&i| i as usize),
            None => parts.iter().position(|(n, _)| *n as usize == node),
        };
        match found {
            Some(i) => parts[i].1 += pages,
            None => {
                parts.push((node as u32, pages));
                match &mut self.index {
                    Some(ix) => {
                        ix.insert(node as u32, (parts.len() - 1) as u32);
                    }
                    None if parts.len() > Self::SCAN => {
                        self.index = Some(
                            parts
                                .iter()
                                .enumerate()
                                .map(|(i, &(n, _))| (n, i as u32))
                                .collect(),
                        );
                    }
                    None => {}
                }
            }
        }
    }

    pub fn merge(&mut self, other: &Placement) {
        for &(n, k) in &other.parts {
            self.add(n as usize, k);
        }
    }

    pub fn into_placement(self) -> Placement {
        self.p
    }
}

/// One node's memory: present pages, free pages, and what the rest holds.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeUse {
    pub present: u64,
    pub free: u64,
    pub used_by: [u64; 8],
    /// `pages_min`, `pages_low`, `pages_high` of the node's zone.
    pub watermark: [u64; 3],
}

/// Why an allocation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocError {
    /// No node in the zonelist could take the request (pages requested).
    NoMemory { pages: u64 },
    /// A contiguous request larger than the largest buddy block (`MAX_ORDER`).
    OrderTooLarge { order: u32, max_order: u32 },
}

/// The page allocator of a booted (or booting) machine.
#[derive(Debug, Clone)]
pub struct PageAlloc {
    page_size: u64,
    nodes: Vec<NodeUse>,
    /// Machine-wide sums kept as nodes change, so that asking "is there
    /// room anywhere" or "how much is free" costs nothing per node: free
    /// pages, pages above each `Gfp`'s watermark, pages per `Use`.
    free_total: u64,
    present_total: u64,
    avail_total: [u64; 4],
    used_total: [u64; 8],
    /// Per `Gfp`, a bit per node with room above that watermark, so a
    /// zonelist walk on a nearly full machine skips the full nodes a word
    /// (64 nodes) at a time instead of asking each.
    room: [Vec<u64>; 4],
    /// Nested-group machines: the group sizes, innermost first; a zonelist
    /// is then a walk computed from them and never stored (nodes² entries
    /// at 8,192 nodes were 270 MiB).
    groups: Option<Arc<[u32]>>,
    /// Other machines: nearest-first node order per node, built on first use.
    zonelists: Vec<Option<Arc<[u32]>>>,
    distances: crate::machine::Distances,
    max_order: u32,
    /// Times an allocation found every node of its zonelist below
    /// `pages_low` and woke kswapd: the 2.4 trigger is global pressure only.
    kswapd_wakeups: u64,
    kswapd_trigger: KswapdTrigger,
}

impl PageAlloc {
    /// Every present page free; `max_order` is the kernel's `MAX_ORDER`.
    pub fn new(machine: &Machine, max_order: u32) -> Self {
        let nodes = (0..machine.node_count())
            .map(|i| {
                let present = machine.pages_of_node(i);
                NodeUse {
                    present,
                    free: present,
                    used_by: [0; 8],
                    watermark: [0; 3],
                }
            })
            .collect();
        let d = &machine.distances;
        // The structural walk is nearest-first only when distances grow
        // outward level by level (every preset); otherwise sort per node.
        let groups = match (d.nested_groups(), d.group_levels()) {
            (Some(groups), Some(levels))
                if levels.windows(2).all(|w| w[0] < w[1])
                    && levels.first().is_none_or(|&l| l > d.local()) =>
            {
                Some(Arc::from(groups))
            }
            _ => None,
        };
        let mut pa = PageAlloc {
            page_size: machine.page_size,
            nodes,
            free_total: 0,
            present_total: 0,
            avail_total: [0; 4],
            used_total: [0; 8],
            room: std::array::from_fn(|_| vec![0; machine.node_count().div_ceil(64)]),
            zonelists: if groups.is_some() {
                Vec::new()
            } else {
                vec![None; machine.node_count()]
            },
            groups,
            distances: machine.distances.clone(),
            max_order,
            kswapd_wakeups: 0,
            kswapd_trigger: KswapdTrigger::PerNode,
        };
        pa.recount();
        pa
    }

    /// The machine-wide sums, from scratch.
    fn recount(&mut self) {
        self.free_total = 0;
        self.present_total = self.nodes.iter().map(|n| n.present).sum();
        self.avail_total = [0; 4];
        self.used_total = [0; 8];
        for i in 0..self.nodes.len() {
            self.count_node(i, true);
        }
    }

    /// Set node `i`'s bits in [`room`](Self::room) from its free pages.
    #[inline]
    fn mark_room(&mut self, i: usize) {
        let avail = Self::avail_of(&self.nodes[i]);
        let (w, b) = (i / 64, 1u64 << (i % 64));
        for (k, bits) in self.room.iter_mut().enumerate() {
            bits[w] = (bits[w] & !b) | (b * u64::from(avail[k] > 0));
        }
    }

    /// Flip node `i`'s bits in [`room`](Self::room) where its room went
    /// from none to some or back (most takes and frees change neither).
    #[inline(always)]
    fn update_room(&mut self, i: usize, before: &[u64; 4], after: &[u64; 4]) {
        // Which watermarks' room flipped, tested before any bit word is
        // touched: most takes and frees flip none (the four words' loads
        // and stores were 4% of altix-bigio).
        let flipped = (0..4).any(|k| (before[k] > 0) != (after[k] > 0));
        if !flipped {
            return;
        }
        let (w, b) = (i / 64, 1u64 << (i % 64));
        for k in 0..4 {
            self.room[k][w] ^= b * u64::from((before[k] > 0) != (after[k] > 0));
        }
    }

    /// A node's pages above each watermark (`Gfp` order).
    #[inline]
    fn avail_of(n: &NodeUse) -> [u64; 4] {
        [
            n.free,
            n.free.saturating_sub(n.watermark[1]),
            n.free.saturating_sub(n.watermark[0]),
            n.free.saturating_sub(n.watermark[0] / 2),
        ]
    }

    /// Add (or remove) node `i`'s share of the machine-wide sums (a
    /// recount); `take` and `free_on_node` update them by the change.
    #[inline]
    fn count_node(&mut self, i: usize, add: bool) {
        self.mark_room(i);
        let n = &self.nodes[i];
        let avail = Self::avail_of(n);
        let (free, used) = (n.free, n.used_by);
        if add {
            self.free_total += free;
            for k in 0..4 {
                self.avail_total[k] += avail[k];
            }
            for k in 0..8 {
                self.used_total[k] += used[k];
            }
        } else {
            self.free_total -= free;
            for k in 0..4 {
                self.avail_total[k] -= avail[k];
            }
            for k in 0..8 {
                self.used_total[k] -= used[k];
            }
        }
    }

    /// Pages above `gfp`'s watermark, summed over every node.
    pub fn total_available(&self, gfp: Gfp) -> u64 {
        self.avail_total[gfp.index()]
    }
    /// Pages held for `what`, summed over every node.
    pub fn total_used(&self, what: Use) -> u64 {
        self.used_total[what.index()]
    }

    pub fn page_size(&self) -> u64 {
        self.page_size
    }
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
    pub fn node(&self, n: usize) -> &NodeUse {
        &self.nodes[n]
    }
    pub fn nodes(&self) -> &[NodeUse] {
        &self.nodes
    }
    pub fn max_order(&self) -> u32 {
        self.max_order
    }
    pub fn kswapd_wakeups(&self) -> u64 {
        self.kswapd_wakeups
    }
    pub fn set_kswapd_trigger(&mut self, t: KswapdTrigger) {
        self.kswapd_trigger = t;
    }

    /// Decide, for an ordinary allocation, whether kswapd wakes: per node
    /// when the zonelist walk came up short, globally when the machine's free
    /// memory is under the global low watermark.
    fn wake_kswapd_if_due(&mut self, zonelist_short: bool) {
        let due = match self.kswapd_trigger {
            KswapdTrigger::PerNode => zonelist_short,
            KswapdTrigger::Global => {
                let low: u64 = self.nodes.iter().map(|n| n.watermark[1]).sum();
                self.total_free() < low
            }
        };
        if due {
            self.kswapd_wakeups += 1;
        }
    }
    pub fn total_free(&self) -> u64 {
        self.free_total
    }
    pub fn total_present(&self) -> u64 {
        self.present_total
    }
    /// Pages needed to hold `bytes`.
    pub fn pages_for(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.page_size)
    }

    /// `setup_per_zone_pages_min()` of 2.6: `min_free_kbytes = sqrt(lowmem_kB * 16)`
    /// clamped to [128, 65536] kB, shared among zones by size; `pages_low` and
    /// `pages_high` are 5/4 and 3/2 of `pages_min` (mm/page_alloc.c, 2.6.10).
    pub fn set_watermarks(&mut self, min_free_kbytes: Option<u64>) {
        let total = self.total_present();
        let lowmem_kb = total.saturating_mul(self.page_size / 1024);
        let min_kb = min_free_kbytes
            .unwrap_or_else(|| ((lowmem_kb as f64 * 16.0).sqrt() as u64).clamp(128, 65536));
        let min_pages_total = min_kb.saturating_mul(1024) / self.page_size;
        for n in &mut self.nodes {
            let min = if total == 0 {
                0
            } else {
                (min_pages_total as u128 * n.present as u128 / total as u128) as u64
            };
            n.watermark = [
                min,
                min.saturating_add(min / 4),
                min.saturating_add(min / 2),
            ];
        }
        self.recount();
    }

    /// Free pages the node can give to a request of this kind.
    fn available(&self, node: usize, gfp: Gfp) -> u64 {
        let n = &self.nodes[node];
        let reserve = match gfp {
            Gfp::Boot => 0,
            Gfp::Normal => n.watermark[1],
            Gfp::Min => n.watermark[0],
            Gfp::Atomic => n.watermark[0] / 2,
        };
        n.free.saturating_sub(reserve)
    }

    /// The node order `__alloc_pages()` walks for an allocation on `node`:
    /// the node itself, then others by distance. Among equidistant nodes the
    /// order is by node number counted up from `node` (wrapping), which
    /// spreads the fallback load of different nodes over different
    /// neighbours — the intent of `find_next_best_node()`'s load penalty.
    pub fn zonelist(&mut self, node: usize) -> ZoneWalk {
        if let Some(groups) = &self.groups {
            return ZoneWalk::nested(node, self.nodes.len(), groups.clone());
        }
        if self.zonelists[node].is_none() {
            let n = self.nodes.len();
            let d = &self.distances;
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&j| (d.get(node, j as usize), (j as usize + n - node) % n));
            self.zonelists[node] = Some(order.into());
        }
        let order = self.zonelists[node].clone().expect("built just above");
        ZoneWalk::Listed { order, at: 0 }
    }

    fn take(&mut self, node: usize, pages: u64, what: Use) {
        if pages == 0 {
            return;
        }
        let before = Self::avail_of(&self.nodes[node]);
        let n = &mut self.nodes[node];
        debug_assert!(n.free >= pages);
        n.free -= pages;
        n.used_by[what.index()] += pages;
        let after = Self::avail_of(n);
        self.free_total -= pages;
        self.used_total[what.index()] += pages;
        for k in 0..4 {
            // Less free: each watermark's room shrinks or stays.
            self.avail_total[k] -= before[k] - after[k];
        }
        self.update_room(node, &before, &after);
    }

    /// Reserve pages on one node, or fail: bootmem's `alloc_bootmem_node()`
    /// and other node-pinned reservations.
    pub fn alloc_on_node(
        &mut self,
        node: usize,
        pages: u64,
        gfp: Gfp,
        what: Use,
    ) -> Result<Placement, AllocError> {
        if self.available(node, gfp) < pages {
            return Err(AllocError::NoMemory { pages });
        }
        self.take(node, pages, what);
        let mut p = Placement::default();
        p.add(node, pages);
        Ok(p)
    }

    /// One physically contiguous block of `2^order` pages, from the first
    /// node in `node`'s zonelist that has room (`__get_free_pages()`).
    pub fn alloc_block(
        &mut self,
        node: usize,
        order: u32,
        gfp: Gfp,
        what: Use,
    ) -> Result<Placement, AllocError> {
        if order >= self.max_order {
            return Err(AllocError::OrderTooLarge {
                order,
                max_order: self.max_order,
            });
        }
        let pages = 1u64 << order;
        for cand in self.zonelist(node) {
            if self.available(cand as usize, gfp) >= pages {
                return self.alloc_on_node(cand as usize, pages, gfp, what);
            }
        }
        Err(AllocError::NoMemory { pages })
    }

    /// `pages` order-0 pages wanted on `node`: as many as fit there, the
    /// rest spilled along its zonelist, nearest first (first touch, A1).
    /// All or nothing: on failure nothing is taken.
    /// `allowed`, where given, restricts the walk to those nodes (`MPOL_BIND`).
    pub fn alloc_spill(
        &mut self,
        node: usize,
        pages: u64,
        gfp: Gfp,
        what: Use,
        allowed: Option<&[bool]>,
    ) -> Result<Placement, AllocError> {
        // Without a cpuset every node is in the walk: whether it can give
        // the pages is the machine-wide sum, and the walk is never copied.
        let zl: Option<Vec<u32>> = allowed.map(|_| self.zonelist_within(node, allowed));
        let fits = |pa: &mut PageAlloc, gfp: Gfp| match &zl {
            None => pa.total_available(gfp) >= pages,
            Some(zl) => pa.has_available(zl, gfp, pages),
        };
        let short = !fits(self, gfp);
        let gfp = self.pressure_pass(gfp, short);
        if !fits(self, gfp) {
            return Err(AllocError::NoMemory { pages });
        }
        let mut p = Placement::default();
        match zl {
            None => self.alloc_upto_into(node, pages, gfp, what, &mut p),
            Some(zl) => self.take_along(zl.into_iter(), pages, gfp, what, &mut p),
        }
        Ok(p)
    }

    /// Wanted pages per node (e.g. an interleave's shares), each share
    /// placed on its node or spilled along that node's zonelist.
    /// All or nothing.
    pub fn alloc_shares(
        &mut self,
        shares: &[(usize, u64)],
        gfp: Gfp,
        what: Use,
        allowed: Option<&[bool]>,
    ) -> Result<Placement, AllocError> {
        let want: u64 = shares.iter().map(|&(_, p)| p).sum();
        let all = allowed.map(|_| self.zonelist_within(0, allowed));
        let room = |pa: &PageAlloc, gfp: Gfp| match &all {
            None => pa.total_available(gfp),
            Some(all) => pa.available_in(all, gfp),
        };
        let short = room(self, gfp) < want;
        let gfp = self.pressure_pass(gfp, short);
        if room(self, gfp) < want {
            return Err(AllocError::NoMemory { pages: want });
        }
        let mut out = PlacementSum::default();
        // Local parts first, so one node's spill never takes another's share.
        let mut spill = Vec::new();
        for &(node, pages) in shares {
            let take = self.available(node, gfp).min(pages);
            self.take(node, take, what);
            out.add(node, take);
            if pages > take {
                spill.push((node, pages - take));
            }
        }
        for (node, pages) in spill {
            let zl = self.zonelist_within(node, allowed);
            if !self.has_available(&zl, gfp, pages) {
                return Err(AllocError::NoMemory { pages: want });
            }
            let mut p = Placement::default();
            self.take_along(zl.into_iter(), pages, gfp, what, &mut p);
            out.merge(&p);
        }
        Ok(out.into_placement())
    }

    /// `node`'s zonelist, restricted to `allowed` nodes where given.
    fn zonelist_within(&mut self, node: usize, allowed: Option<&[bool]>) -> Vec<u32> {
        self.zonelist(node)
            .filter(|&c| allowed.is_none_or(|a| a[c as usize]))
            .collect()
    }

    /// Whether the nodes of `zl` together can give `pages`; stops at the
    /// first prefix that can (usually the local node), so a fitting
    /// allocation does not cost a pass over every node.
    fn has_available(&self, zl: &[u32], gfp: Gfp, pages: u64) -> bool {
        let mut sum = 0u64;
        for &c in zl {
            sum = sum.saturating_add(self.available(c as usize, gfp));
            if sum >= pages {
                return true;
            }
        }
        pages == 0
    }
    fn available_in(&self, zl: &[u32], gfp: Gfp) -> u64 {
        zl.iter()
            .map(|&c| self.available(c as usize, gfp))
            .fold(0u64, u64::saturating_add)
    }

    /// `__alloc_pages()`'s passes for an ordinary allocation: decide whether
    /// kswapd wakes, and if the first pass (above `pages_low`) came up short,
    /// let the second go down to `pages_min`.
    fn pressure_pass(&mut self, gfp: Gfp, short: bool) -> Gfp {
        if gfp != Gfp::Normal {
            return gfp;
        }
        self.wake_kswapd_if_due(short);
        if short {
            Gfp::Min
        } else {
            gfp
        }
    }

    /// Take up to `pages` along a node order, each node down to its
    /// watermark for `gfp`. Stops when the request is met or when no node
    /// has room left (the machine-wide sum says so), so a walk past nodes
    /// that are all full costs nothing.
    fn take_along(
        &mut self,
        zl: impl Iterator<Item = u32>,
        pages: u64,
        gfp: Gfp,
        what: Use,
        p: &mut Placement,
    ) {
        let mut left = pages;
        for cand in zl {
            if left == 0 || self.avail_total[gfp.index()] == 0 {
                break;
            }
            let take = self.available(cand as usize, gfp).min(left);
            if take > 0 {
                self.take(cand as usize, take, what);
                p.add(cand as usize, take);
                left -= take;
            }
        }
    }

    /// Free pages `node` can give to a request of this kind.
    pub fn available_on(&self, node: usize, gfp: Gfp) -> u64 {
        self.available(node, gfp)
    }

    /// As many of `pages` as `node`'s zonelist can give at this watermark,
    /// nearest first; never fails (the timed VM's allocation passes).
    pub fn alloc_upto(&mut self, node: usize, pages: u64, gfp: Gfp, what: Use) -> Placement {
        let mut p = Placement::default();
        self.alloc_upto_into(node, pages, gfp, what, &mut p);
        p
    }

    /// [`alloc_upto`](Self::alloc_upto) into `p`, which is cleared first:
    /// a caller that allocates on every tick keeps one and reuses its
    /// vector (a fresh one a call was altix-bigio's largest `malloc` user).
    pub fn alloc_upto_into(
        &mut self,
        node: usize,
        pages: u64,
        gfp: Gfp,
        what: Use,
        p: &mut Placement,
    ) {
        p.parts.clear();
        if pages == 0 || self.avail_total[gfp.index()] == 0 {
            return;
        }
        // The groups are lent out for the walk and put back (an `Arc`
        // clone here was two atomic operations on every allocation).
        match self.groups.take() {
            Some(groups) => {
                self.take_nested(node, &groups, pages, gfp, what, p);
                self.groups = Some(groups);
            }
            None => {
                let zl = self.zonelist(node);
                self.take_along(zl, pages, gfp, what, p);
            }
        }
    }

    /// [`take_along`](Self::take_along) over [`ZoneWalk::Nested`]'s order,
    /// range by range, visiting only the nodes with room for `gfp`: the
    /// nodes it skips would each have given nothing, so the placement is
    /// the walk's.
    fn take_nested(
        &mut self,
        node: usize,
        groups: &[u32],
        pages: u64,
        gfp: Gfp,
        what: Use,
        p: &mut Placement,
    ) {
        let n = self.nodes.len();
        let mut left = pages;
        let (mut lo, mut hi) = (node, node + 1);
        let mut ranges = [(node, node + 1), (0, 0)];
        for level in 0..=groups.len() + 1 {
            for (a, b) in ranges {
                let mut at = a;
                while let Some(cand) = next_set(&self.room[gfp.index()], at, b) {
                    if left == 0 || self.avail_total[gfp.index()] == 0 {
                        return;
                    }
                    let take = self.available(cand, gfp).min(left);
                    self.take(cand, take, what);
                    // Each node comes once: `add`'s search would find nothing.
                    p.parts.push((cand as u32, take));
                    left -= take;
                    at = cand + 1;
                }
            }
            // The next level's group less the inner one: above, then below.
            let (glo, ghi) = match groups.get(level) {
                Some(&g) => {
                    let g = g as usize;
                    (node / g * g, (node / g * g + g).min(n))
                }
                None => (0, n),
            };
            ranges = [(hi, ghi), (glo, lo)];
            (lo, hi) = (glo, ghi.max(hi));
        }
    }

    /// As many of `pages` as `node` itself can give at this watermark.
    pub fn alloc_upto_node(&mut self, node: usize, pages: u64, gfp: Gfp, what: Use) -> u64 {
        let take = self.available(node, gfp).min(pages);
        self.take(node, take, what);
        take
    }

    /// Pages freed on one node (reclaim, exit, swap-out).
    pub fn free_on_node(&mut self, node: usize, pages: u64, what: Use) {
        if pages == 0 {
            return;
        }
        let before = Self::avail_of(&self.nodes[node]);
        self.release_use(node, pages, what);
        self.add_free(node, pages, &before);
    }

    /// Pages of several uses freed on one node at once: what
    /// [`free_on_node`](Self::free_on_node) once a use does (the sums move by
    /// the same amounts, and a watermark's room bit ends as it would after
    /// the last call), with the node's watermark sums and room bits updated
    /// once. Reclaim frees a node's clean cache and its swapped pages in one
    /// pass, on every node (issue 31: a call a use was a seventh of
    /// altix-bigio).
    /// A fixed number of uses, inlined: reclaim's two-use call on each of
    /// 64 nodes a pass was a tenth of altix-bigio as a call over a slice.
    #[inline]
    pub fn free_uses_on_node<const N: usize>(&mut self, node: usize, frees: &[(Use, u64); N]) {
        let pages: u64 = frees.iter().map(|&(_, p)| p).sum();
        if pages == 0 {
            return;
        }
        let before = Self::avail_of(&self.nodes[node]);
        for &(what, p) in frees {
            // Most passes free one use only on a node.
            if p > 0 {
                self.release_use(node, p, what);
            }
        }
        self.add_free(node, pages, &before);
    }

    /// `pages` of `what` on `node` stop being used (the first half of a
    /// free; [`add_free`](Self::add_free) is the second).
    // Always inlined: as calls they cost altix-toss 1% more instructions.
    #[inline(always)]
    fn release_use(&mut self, node: usize, pages: u64, what: Use) {
        let used = &mut self.nodes[node].used_by[what.index()];
        assert!(
            *used >= pages,
            "freeing {pages} {what:?} pages on node {node} that holds {used}"
        );
        *used -= pages;
        self.used_total[what.index()] -= pages;
    }

    /// `pages` become free on `node`, whose watermark room was `before`
    /// when the free began: the totals and the room bits follow.
    // Always inlined: as calls they cost altix-toss 1% more instructions.
    #[inline(always)]
    fn add_free(&mut self, node: usize, pages: u64, before: &[u64; 4]) {
        let n = &mut self.nodes[node];
        n.free += pages;
        let after = Self::avail_of(n);
        self.free_total += pages;
        for k in 0..4 {
            // More free: each watermark's room grows or stays.
            self.avail_total[k] += after[k] - before[k];
        }
        self.update_room(node, before, &after);
    }

    /// Give pages back (`__free_pages()`).
    pub fn free(&mut self, placement: &Placement, what: Use) {
        for &(node, pages) in &placement.parts {
            self.free_on_node(node as usize, pages, what);
        }
    }

    /// Conservation: on every node, free plus used equals present; the
    /// machine-wide sums agree with the nodes.
    pub fn check_conservation(&self) -> Result<(), String> {
        let mut again = self.clone();
        again.recount();
        if (again.free_total, again.avail_total, again.used_total)
            != (self.free_total, self.avail_total, self.used_total)
            || again.present_total != self.present_total
        {
            return Err("machine-wide page sums differ from the nodes'".into());
        }
        for (i, n) in self.nodes.iter().enumerate() {
            let used: u64 = n.used_by.iter().sum();
            if used + n.free != n.present {
                return Err(format!(
                    "node {i}: free {} + used {used} != present {}",
                    n.free, n.present
                ));
            }
        }
        Ok(())
    }
}

/// The lowest set bit of `bits` in `from..to`.
#[inline]
fn next_set(bits: &[u64], from: usize, to: usize) -> Option<usize> {
    let mut w = from / 64;
    if from >= to || w >= bits.len() {
        return None;
    }
    let mut word = bits[w] & (!0u64 << (from % 64));
    loop {
        if word != 0 {
            let i = w * 64 + word.trailing_zeros() as usize;
            return (i < to).then_some(i);
        }
        w += 1;
        if w * 64 >= to || w >= bits.len() {
            return None;
        }
        word = bits[w];
    }
}

/// A zonelist: the nodes `__alloc_pages()` tries for an allocation on one
/// node, nearest first. On a nested-group machine it is computed as it is
/// walked: the node, then each level's group less the inner one, within a
/// level the nodes above the inner group then those below (wrapped order
/// from the node, which spreads the fallback load of different nodes over
/// different neighbours — the intent of `find_next_best_node()`'s load
/// penalty). Nothing per node is stored, and a walk that stops early costs
/// only the nodes it passed.
#[derive(Debug, Clone)]
pub enum ZoneWalk {
    Nested {
        first: Option<u32>,
        above: std::ops::Range<usize>,
        below: std::ops::Range<usize>,
        lo: usize,
        hi: usize,
        node: usize,
        n: usize,
        groups: Arc<[u32]>,
        level: usize,
    },
    Listed {
        order: Arc<[u32]>,
        at: usize,
    },
}

impl ZoneWalk {
    fn nested(node: usize, n: usize, groups: Arc<[u32]>) -> ZoneWalk {
        ZoneWalk::Nested {
            first: Some(node as u32),
            above: 0..0,
            below: 0..0,
            lo: node,
            hi: node + 1,
            node,
            n,
            groups,
            level: 0,
        }
    }
}

impl Iterator for ZoneWalk {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        match self {
            ZoneWalk::Listed { order, at } => {
                let r = order.get(*at).copied();
                *at += 1;
                r
            }
            ZoneWalk::Nested {
                first,
                above,
                below,
                lo,
                hi,
                node,
                n,
                groups,
                level,
            } => {
                if let Some(f) = first.take() {
                    return Some(f);
                }
                loop {
                    if let Some(j) = above.next() {
                        return Some(j as u32);
                    }
                    if let Some(j) = below.next() {
                        return Some(j as u32);
                    }
                    if *level > groups.len() {
                        return None;
                    }
                    let (glo, ghi) = match groups.get(*level) {
                        Some(&g) => {
                            let g = g as usize;
                            (*node / g * g, (*node / g * g + g).min(*n))
                        }
                        None => (0, *n),
                    };
                    *above = *hi..ghi;
                    *below = glo..*lo;
                    (*lo, *hi) = (glo, ghi.max(*hi));
                    *level += 1;
                }
            }
        }
    }
}

/// `pcp->batch` of a zone of `zone_pages` pages of `page_size` bytes under
/// `version` (mm/page_alloc.c): pages the per-CPU list takes from the buddy
/// lists per refill (`rmqueue_bulk()`) and gives back per bulk free
/// (`free_pages_bulk()`), each under one hold of `zone->lock`. Per-CPU
/// page lists came with Andrew Morton's "hot-n-cold pages: page allocator
/// core" (2002-10-29, in 2.5.45). 2.6.9 (read): a thousandth of the zone,
/// at most 256 KB, divided by 4 (16 pages of 4 KiB, 4 of 16 KiB). Later
/// `zone_batchsize()`: at most 512 KB, divided by 4, clamped to 2^n - 1
/// (31 pages of 4 KiB), the rule of 2.6.32 to 4.18; at most 1 MB from
/// 4.19 (Aaron Lu, "mm, page_alloc: double zone's batchsize",
/// d8a759b57035: 63). The I/O releases take 2.6.9's rule, as they take
/// its boot tables.
pub fn zone_batchsize(version: Era, zone_pages: u64, page_size: u64) -> u64 {
    let era = version.boot_tables();
    let cap = match era {
        Era::V2_6_9 => 256 << 10,
        Era::V2_6_32 | Era::V3_10 | Era::V4_15 => 512 << 10,
        _ => 1 << 20,
    } / page_size.max(1);
    let batch = ((zone_pages / 1024).min(cap) / 4).max(1);
    if era == Era::V2_6_9 {
        batch
    } else {
        // rounddown_pow_of_two(batch + batch / 2) - 1, at least 1.
        let x = batch + batch / 2;
        ((1u64 << (63 - x.leading_zeros())) - 1).max(1)
    }
}
