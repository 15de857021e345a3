//! Which node's free pages a stream of page-cache allocations takes once
//! memory is full, and how busy each node's kswapd is keeping up with it
//! (2.6 `__alloc_pages()`, `wakeup_kswapd()` and `balance_pgdat()`; [XFS06]
//! B12, with A3's fallback before reclaim).
//!
//! Mainline 2.6.15 takes a page from the first zone of the zonelist that is
//! above its low watermark, and wakes the kswapds of the zonelist only when
//! no zone is; each kswapd then reclaims its node up to the high watermark
//! and sleeps. Two regimes follow, worked out here in closed form:
//!
//! - A stream the nearest kswapd keeps up with still cycles through every
//!   node: each gives the `high - low` pages of a wake-up per cycle, and the
//!   first one more, because the stream draws from it while its kswapd is
//!   refilling it: `gap × R / (R - a)` for a stream of `a` bytes/ns and a
//!   kswapd freeing `R`. So a single streaming reader or writer spreads its
//!   pages, and the reclaim work, over every node.
//! - A stream faster than a kswapd takes all that kswapd frees (the node
//!   hovers at its low watermark, its kswapd never sleeps) and spills the
//!   rest down the zonelist, where the same two rules apply again.
//!
//! What no kswapd keeps up with, the allocating tasks reclaim themselves
//! (`try_to_free_pages()` in the slow path). Interleaving (`numactl -i
//! all`, A6) aims each page at the next node in turn, and a bound policy
//! (`numactl --membind`) never leaves the task's node.
//!
//! Several streams (tasks on several nodes) are combined one after another,
//! each on the capacity the ones before left. `watermark_cycle` simulates
//! the watermarks themselves as a fluid; the tests hold the closed form to
//! it (one stream at every rate regime, and two streams).

/// One node's reclaim, as the allocator sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeReclaim {
    /// Bytes/ns the node's kswapd frees running flat out (0: no memory).
    pub capacity: f64,
    /// Bytes between the node's low and high watermarks: what a wake-up
    /// refills (mainline: `pages_min / 4`).
    pub gap: f64,
}

/// Page-cache allocations by the tasks of one node, bytes/ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stream {
    pub node: usize,
    pub rate: f64,
}

/// The memory policy the allocating tasks run under (A6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocPolicy {
    /// The default: the task's node first, then the zonelist.
    LocalFirst,
    /// `MPOL_INTERLEAVE` over every node with memory.
    Interleave,
    /// `MPOL_BIND` to the task's node: no fallback.
    Bind,
}

/// Where a set of streams' pages come from in steady state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Supply {
    /// Bytes/ns taken from each node's free pages; its kswapd frees as much.
    pub from: Vec<f64>,
    /// Bytes/ns no kswapd keeps up with: the allocating tasks reclaim it
    /// themselves (direct reclaim), on their own node.
    pub direct: f64,
}

impl Supply {
    /// Everything the streams allocate, bytes/ns.
    #[cfg(test)] // only the model's own tests read it today
    pub fn total(&self) -> f64 {
        self.from.iter().sum::<f64>() + self.direct
    }
}

/// The steady-state supply of `streams` under `policy`; `zonelist(n)` is
/// node `n`'s fallback order (itself first).
pub fn supply(
    policy: AllocPolicy,
    streams: &[Stream],
    nodes: &[NodeReclaim],
    zonelist: &mut dyn FnMut(usize) -> Vec<usize>,
) -> Supply {
    let n = nodes.len();
    let mut out = Supply {
        from: vec![0.0; n],
        direct: 0.0,
    };
    let mut left: Vec<f64> = nodes.iter().map(|x| x.capacity.max(0.0)).collect();
    match policy {
        AllocPolicy::Bind => {
            for s in streams {
                let take = s.rate.min(left[s.node]);
                out.from[s.node] += take;
                left[s.node] -= take;
                out.direct += s.rate - take;
            }
        }
        AllocPolicy::Interleave => {
            let with_memory: Vec<usize> = (0..n).filter(|&j| nodes[j].capacity > 0.0).collect();
            let total: f64 = streams.iter().map(|s| s.rate).sum();
            if with_memory.is_empty() {
                out.direct = total;
                return out;
            }
            let each = total / with_memory.len() as f64;
            let mut over = Vec::new();
            for &j in &with_memory {
                let take = each.min(left[j]);
                out.from[j] += take;
                left[j] -= take;
                if each > take {
                    over.push((j, each - take));
                }
            }
            // An interleaved page whose node is short falls back along
            // that node's zonelist.
            for (j, a) in over {
                let rest = fill(&mut out.from, &mut left, nodes, a, &zonelist(j));
                out.direct += rest.map_or(0.0, |(_, a)| a);
            }
        }
        AllocPolicy::LocalFirst => {
            let mut streams = streams.to_vec();
            streams.sort_by_key(|s| s.node);
            let mut residuals = Vec::new();
            for s in &streams {
                let zl = zonelist(s.node);
                if let Some((first, a)) = fill(&mut out.from, &mut left, nodes, s.rate, &zl) {
                    residuals.push((first, a, zl));
                }
            }
            spread_residuals(&mut out, &mut left, nodes, residuals);
        }
    }
    out
}

/// Saturate the nodes of `zl` in order while `a` exceeds what each one's
/// kswapd has left; returns the first node that keeps up with the rest and
/// that rest, or `None` with `a` exhausted. Past the zonelist's end the
/// rest is direct reclaim, returned against `usize::MAX`.
fn fill(
    from: &mut [f64],
    left: &mut [f64],
    nodes: &[NodeReclaim],
    mut a: f64,
    zl: &[usize],
) -> Option<(usize, f64)> {
    for &j in zl {
        if nodes[j].capacity <= 0.0 || left[j] <= 0.0 {
            continue;
        }
        if a < left[j] {
            return Some((j, a));
        }
        from[j] += left[j];
        a -= left[j];
        left[j] = 0.0;
        if a <= 0.0 {
            return None;
        }
    }
    // Every kswapd on the zonelist is flat out.
    Some((usize::MAX, a))
}

/// The unsaturated nodes cycle between watermarks: the residual streams
/// take `gap` from each per cycle, and `gap × R / (R - a)` from the first
/// node of their walk, the one refilled while drawn from.
fn spread_residuals(
    out: &mut Supply,
    left: &mut [f64],
    nodes: &[NodeReclaim],
    residuals: Vec<(usize, f64, Vec<usize>)>,
) {
    let mut pending = residuals;
    // A node that several residuals start on may saturate after all: give
    // it its capacity and move those streams on; a few rounds settle it.
    for _ in 0..nodes.len().max(1) {
        let mut on: Vec<f64> = vec![0.0; nodes.len()];
        for (first, a, _) in &pending {
            if *first != usize::MAX {
                on[*first] += a;
            }
        }
        let full: Vec<usize> = (0..nodes.len())
            .filter(|&j| on[j] > 0.0 && on[j] >= left[j])
            .collect();
        if full.is_empty() {
            break;
        }
        let mut next = Vec::new();
        for (first, a, zl) in pending {
            if first != usize::MAX && full.contains(&first) {
                // This stream's share of the saturated node's capacity.
                let take = left[first] * a / on[first];
                out.from[first] += take;
                on[first] -= a;
                left[first] -= take;
                let rest = a - take;
                let after: Vec<usize> = zl
                    .iter()
                    .copied()
                    .skip_while(|&j| j != first)
                    .skip(1)
                    .collect();
                if let Some((f, r)) = fill(&mut out.from, left, nodes, rest, &after) {
                    next.push((f, r, zl));
                }
            } else {
                next.push((first, a, zl));
            }
        }
        pending = next;
    }
    let mut boost: Vec<f64> = vec![0.0; nodes.len()];
    let mut total = 0.0;
    for (first, a, _) in &pending {
        if *first == usize::MAX {
            out.direct += a;
        } else {
            boost[*first] += a;
            total += a;
        }
    }
    if total <= 0.0 {
        return;
    }
    let weight: Vec<f64> = (0..nodes.len())
        .map(|j| {
            if nodes[j].capacity <= 0.0 || left[j] <= 0.0 {
                0.0
            } else if boost[j] > 0.0 {
                nodes[j].gap * left[j] / (left[j] - boost[j]).max(left[j] * 1e-9)
            } else {
                nodes[j].gap
            }
        })
        .collect();
    let sum: f64 = weight.iter().sum();
    if sum <= 0.0 {
        out.direct += total;
        return;
    }
    for j in 0..nodes.len() {
        let take = total * weight[j] / sum;
        out.from[j] += take;
        left[j] -= take;
    }
}

/// The watermark cycle itself, simulated as a fluid for `horizon_ns`: per
/// node the free bytes above `pages_min` (low at `gap`, high at `2 × gap`,
/// as 2.6's 5/4 and 3/2 of `pages_min`), each stream taking from the first
/// zone above low in its zonelist, every kswapd of the zonelist woken when
/// none is, each reclaiming to high and sleeping. The independent
/// reference the closed form is tested against (test builds only: the
/// model runs the closed form); cost grows with nodes × cycles.
#[cfg(test)]
fn watermark_cycle(
    streams: &[Stream],
    nodes: &[NodeReclaim],
    zonelist: &mut dyn FnMut(usize) -> Vec<usize>,
    horizon_ns: f64,
) -> Supply {
    let n = nodes.len();
    let lists: Vec<Vec<usize>> = streams.iter().map(|s| zonelist(s.node)).collect();
    let low: Vec<f64> = nodes.iter().map(|x| x.gap).collect();
    let high: Vec<f64> = nodes.iter().map(|x| 2.0 * x.gap).collect();
    let mut free = high.clone();
    let mut awake = vec![false; n];
    let mut supplied = vec![0.0; n];
    let mut direct = 0.0;
    let mut t = 0.0;
    let eps = |j: usize| 1e-9 * high[j].max(1e-12);
    // Half the horizon settles the cycle; the second half is measured.
    let warm = horizon_ns / 2.0;
    let mut events = 0u64;
    while t < horizon_ns && events < 10_000_000 {
        events += 1;
        // Who takes what now: a zone above low is a stock; a zone at low
        // with its kswapd awake gives what the kswapd frees.
        let (draw, inflow_used, dir) = loop {
            let mut draw = vec![0.0; n];
            let mut used = vec![0.0; n];
            let mut dir = 0.0;
            let mut woke = false;
            for (s, zl) in streams.iter().zip(&lists) {
                let mut d = s.rate;
                for floor in [0usize, 1] {
                    for &j in zl {
                        if d <= 0.0 || nodes[j].capacity <= 0.0 {
                            continue;
                        }
                        let mark = if floor == 0 { low[j] } else { 0.0 };
                        if free[j] > mark + eps(j) {
                            draw[j] += d;
                            d = 0.0;
                        } else if free[j] >= mark - eps(j) && awake[j] {
                            let spare = (nodes[j].capacity - used[j]).max(0.0);
                            let take = spare.min(d);
                            used[j] += take;
                            d -= take;
                        }
                    }
                    if d > 0.0 && floor == 0 {
                        // The low pass failed: wake every kswapd of the zonelist.
                        for &j in zl {
                            if !awake[j] && free[j] < high[j] - eps(j) && nodes[j].capacity > 0.0 {
                                awake[j] = true;
                                woke = true;
                            }
                        }
                    }
                }
                dir += d;
            }
            if !woke {
                break (draw, used, dir);
            }
        };
        // A kswapd that has its node at high (and is not being outrun)
        // sleeps.
        let mut slept = false;
        for j in 0..n {
            let net = nodes[j].capacity - draw[j] - inflow_used[j];
            if awake[j] && free[j] >= high[j] - eps(j) && net >= 0.0 {
                awake[j] = false;
                slept = true;
            }
        }
        if slept {
            continue;
        }
        let net: Vec<f64> = (0..n)
            .map(|j| {
                let made = if awake[j] { nodes[j].capacity } else { 0.0 };
                made - draw[j] - inflow_used[j]
            })
            .collect();
        let mut dt = horizon_ns - t;
        for j in 0..n {
            if net[j] < 0.0 {
                let floor = if free[j] > low[j] + eps(j) {
                    low[j]
                } else {
                    0.0
                };
                dt = dt.min((free[j] - floor).max(0.0) / -net[j]);
            } else if net[j] > 0.0 && awake[j] {
                let roof = if free[j] < low[j] - eps(j) {
                    low[j]
                } else {
                    high[j]
                };
                dt = dt.min((roof - free[j]).max(0.0) / net[j]);
            }
        }
        let dt = dt.max(horizon_ns * 1e-12);
        if t + dt > warm {
            let w = (t + dt - warm).min(dt);
            for j in 0..n {
                supplied[j] += (draw[j] + inflow_used[j]) * w;
            }
            direct += dir * w;
        }
        for j in 0..n {
            free[j] = (free[j] + net[j] * dt).clamp(0.0, high[j]);
        }
        t += dt;
    }
    let span = (horizon_ns - warm).max(1e-12);
    Supply {
        from: supplied.iter().map(|s| s / span).collect(),
        direct: direct / span,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(n: usize) -> impl FnMut(usize) -> Vec<usize> {
        move |home| (0..n).map(|k| (home + k) % n).collect()
    }

    fn equal(n: usize, capacity: f64) -> Vec<NodeReclaim> {
        vec![NodeReclaim { capacity, gap: 1.0 }; n]
    }

    fn close(a: &Supply, b: &Supply, tol: f64) -> bool {
        a.from
            .iter()
            .zip(&b.from)
            .all(|(x, y)| (x - y).abs() <= tol * (x.abs().max(y.abs()).max(1e-3)))
            && (a.direct - b.direct).abs() <= tol * a.direct.abs().max(b.direct.abs()).max(1e-3)
    }

    #[test]
    fn the_closed_form_matches_the_simulated_watermark_cycle_for_one_stream() {
        let nodes = equal(12, 1.0);
        for rate in [0.1, 0.5, 0.9, 1.5, 3.2, 11.5] {
            let s = [Stream { node: 0, rate }];
            let closed = supply(AllocPolicy::LocalFirst, &s, &nodes, &mut ring(12));
            let sim = watermark_cycle(&s, &nodes, &mut ring(12), 4000.0 * 12.0 / rate.min(1.0));
            assert!(
                close(&closed, &sim, 0.03),
                "rate {rate}: {closed:?} vs {sim:?}"
            );
            assert!((closed.total() - rate).abs() < 1e-9);
        }
    }

    #[test]
    fn a_stream_one_kswapd_keeps_up_with_still_spreads_over_every_node() {
        let nodes = equal(12, 1.0);
        let s = supply(
            AllocPolicy::LocalFirst,
            &[Stream { node: 0, rate: 0.5 }],
            &nodes,
            &mut ring(12),
        );
        // The home node gives gap × R/(R − a) = 2 per cycle, the others 1.
        assert!((s.from[0] - 0.5 * 2.0 / 13.0).abs() < 1e-12);
        assert!(s.from[1..].iter().all(|&f| (f - 0.5 / 13.0).abs() < 1e-12));
        assert_eq!(s.direct, 0.0);
    }

    #[test]
    fn a_stream_faster_than_a_kswapd_takes_all_it_frees_and_spills_the_rest() {
        let nodes = equal(4, 1.0);
        let s = supply(
            AllocPolicy::LocalFirst,
            &[Stream { node: 0, rate: 2.5 }],
            &nodes,
            &mut ring(4),
        );
        assert_eq!((s.from[0], s.from[1]), (1.0, 1.0));
        assert!(s.from[2] > s.from[3] && s.direct == 0.0);
        let over = supply(
            AllocPolicy::LocalFirst,
            &[Stream { node: 0, rate: 5.0 }],
            &nodes,
            &mut ring(4),
        );
        assert_eq!(over.from, vec![1.0; 4]);
        assert!((over.direct - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bind_never_leaves_the_node_and_interleave_is_even() {
        let nodes = equal(4, 1.0);
        let b = supply(
            AllocPolicy::Bind,
            &[Stream { node: 2, rate: 1.5 }],
            &nodes,
            &mut ring(4),
        );
        assert_eq!(b.from, vec![0.0, 0.0, 1.0, 0.0]);
        assert!((b.direct - 0.5).abs() < 1e-12);
        let i = supply(
            AllocPolicy::Interleave,
            &[Stream { node: 2, rate: 2.0 }],
            &nodes,
            &mut ring(4),
        );
        assert_eq!(i.from, vec![0.5; 4]);
        // A node without memory gets nothing, interleaved or not.
        let mut holes = equal(4, 1.0);
        holes[1].capacity = 0.0;
        let i = supply(
            AllocPolicy::Interleave,
            &[Stream { node: 1, rate: 1.5 }],
            &holes,
            &mut ring(4),
        );
        assert_eq!(i.from, vec![0.5, 0.0, 0.5, 0.5]);
    }

    #[test]
    fn every_allocated_byte_comes_from_a_node_or_direct_reclaim() {
        let mut nodes = equal(6, 1.0);
        nodes[3].capacity = 0.25;
        nodes[4].gap = 3.0;
        let streams = [
            Stream { node: 0, rate: 0.7 },
            Stream { node: 3, rate: 1.9 },
            Stream { node: 5, rate: 0.2 },
        ];
        for p in [
            AllocPolicy::LocalFirst,
            AllocPolicy::Interleave,
            AllocPolicy::Bind,
        ] {
            let s = supply(p, &streams, &nodes, &mut ring(6));
            assert!((s.total() - 2.8).abs() < 1e-9, "{p:?}: {s:?}");
            for (f, n) in s.from.iter().zip(&nodes) {
                assert!(*f >= 0.0 && *f <= n.capacity + 1e-9, "{p:?}: {s:?}");
            }
        }
    }

    #[test]
    fn two_streams_stay_near_the_simulated_cycle() {
        let nodes = equal(8, 1.0);
        let streams = [Stream { node: 0, rate: 0.6 }, Stream { node: 4, rate: 1.4 }];
        let closed = supply(AllocPolicy::LocalFirst, &streams, &nodes, &mut ring(8));
        let sim = watermark_cycle(&streams, &nodes, &mut ring(8), 40_000.0);
        // Combined one after another: here (one saturated home node, one
        // not) it agrees with the simulated cycle node by node.
        assert!(close(&closed, &sim, 0.02), "{closed:?} vs {sim:?}");
    }
}
