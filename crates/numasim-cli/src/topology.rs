//! What `numasim machines FILE` shows besides the TOML: the node distance
//! matrix as the kernel's SLIT would give it (`numactl --hardware`'s
//! "node distances"), and an lstopo-like SVG (packages, NUMA nodes with
//! their memory, CPUs, the largest cache) to check an import at a glance.

use numasim::input::size::mem_label;
use numasim::machine::Machine;
use std::fmt::Write as _;

/// Nodes printed entry by entry; past this, the distances are counted.
const MAX_MATRIX_NODES: usize = 32;
/// Nodes drawn; past this, the picture says how many more there are.
const MAX_DRAWN_NODES: usize = 64;
/// CPUs drawn one box each in a node; past this, one box for the range.
const MAX_DRAWN_CPUS: u32 = 64;

/// `numactl --hardware`'s "node distances" table, or for a large machine
/// the number of node pairs at each distance.
pub fn matrix_text(m: &Machine) -> String {
    let n = m.node_count();
    let d = &m.distances;
    let mut s = String::new();
    if n <= MAX_MATRIX_NODES {
        let _ = writeln!(s, "node distances:");
        let _ = write!(s, "node ");
        for j in 0..n {
            let _ = write!(s, "{j:>4}");
        }
        s.push('\n');
        for i in 0..n {
            let _ = write!(s, "{i:>4}:");
            for j in 0..n {
                let _ = write!(s, "{:>4}", d.get(i, j));
            }
            s.push('\n');
        }
    } else {
        let _ = writeln!(
            s,
            "node distances: {n} nodes (over {MAX_MATRIX_NODES}: node pairs counted by distance)"
        );
        for (dist, pairs) in d.pair_counts() {
            let _ = writeln!(s, "  {dist:>4}: {pairs} ordered pairs");
        }
    }
    s
}

/// Packages (sockets) as the distances show them: where there are two or
/// more remote distances, the nodes within the smallest of them of each
/// other (an EPYC socket's NPS4 quadrants, at 12 against 32 across); with
/// one remote distance, each node alone.
pub fn packages(m: &Machine) -> Vec<Vec<usize>> {
    let n = m.node_count();
    let d = &m.distances;
    let remote: Vec<u32> = d
        .pair_counts()
        .into_iter()
        .map(|(x, _)| x)
        .filter(|&x| x != d.local())
        .collect();
    if remote.len() < 2 || n > 4096 {
        return (0..n).map(|i| vec![i]).collect();
    }
    let near = *remote.iter().min().unwrap();
    // Union-find over the pairs within `near`: n² only on machines small
    // enough to draw (the picture stops at MAX_DRAWN_NODES anyway).
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    for i in 0..n.min(MAX_DRAWN_NODES * 4) {
        for j in i + 1..n.min(MAX_DRAWN_NODES * 4) {
            if d.get(i, j) <= near {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a] = b;
            }
        }
    }
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for i in 0..n {
        let r = root(&mut parent, i);
        match groups.iter_mut().find(|(k, _)| *k == r) {
            Some((_, g)) => g.push(i),
            None => groups.push((r, vec![i])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The machine as an lstopo-like SVG: a box per package, inside it a box
/// per NUMA node with its memory, inside that a box per CPU.
pub fn svg(m: &Machine) -> String {
    const W: f64 = 900.0;
    const PAD: f64 = 10.0;
    const CPU_W: f64 = 46.0;
    const CPU_H: f64 = 22.0;
    let per_row = ((W - 6.0 * PAD) / (CPU_W + 4.0)).floor().max(1.0) as u32;
    let llc = m.cpu.caches.iter().max_by_key(|c| c.level);
    // Each node's first CPU (CPUs are numbered node by node).
    let mut firsts = Vec::with_capacity(m.node_count());
    let mut next = 0u64;
    for n in &m.nodes {
        firsts.push(next);
        next += n.cpus as u64;
    }
    let mut body = String::new();
    let mut y = 60.0;
    let mut drawn = 0usize;
    for (pi, pkg) in packages(m).iter().enumerate() {
        if drawn >= MAX_DRAWN_NODES {
            break;
        }
        let top = y;
        y += 28.0;
        let mut inner = String::new();
        for &node in pkg {
            if drawn >= MAX_DRAWN_NODES {
                break;
            }
            drawn += 1;
            let cpus = m.nodes[node].cpus;
            let first = firsts[node];
            let boxes = if cpus > MAX_DRAWN_CPUS { 1 } else { cpus };
            let rows = boxes.div_ceil(per_row).max(1);
            let h = 30.0 + rows as f64 * (CPU_H + 4.0) + PAD;
            let _ = write!(
                inner,
                "<rect x='{x}' y='{y}' width='{w}' height='{h}' fill='#f4e7b8' stroke='#7a6a2a'/>\
                 <text x='{tx}' y='{ty}' font-size='13'>NUMANode #{node} ({mem})</text>",
                x = 2.0 * PAD,
                w = W - 4.0 * PAD,
                tx = 2.0 * PAD + 6.0,
                ty = y + 18.0,
                mem = esc(&mem_label(m.nodes[node].mem_bytes)),
            );
            if cpus == 0 {
                let _ = write!(
                    inner,
                    "<text x='{}' y='{}' font-size='11' fill='#555'>no CPUs (memory only)</text>",
                    3.0 * PAD,
                    y + 40.0
                );
            }
            for b in 0..boxes {
                let (r, c) = (b / per_row, b % per_row);
                let bx = 3.0 * PAD + c as f64 * (CPU_W + 4.0);
                let by = y + 28.0 + r as f64 * (CPU_H + 4.0);
                let label = if cpus > MAX_DRAWN_CPUS {
                    format!("PU {first}–{} ({cpus} CPUs)", first + cpus as u64 - 1)
                } else {
                    format!("PU {}", first + b as u64)
                };
                let bw = if cpus > MAX_DRAWN_CPUS { 220.0 } else { CPU_W };
                let _ = write!(
                    inner,
                    "<rect x='{bx}' y='{by}' width='{bw}' height='{CPU_H}' fill='#fff' stroke='#888'/>\
                     <text x='{tx}' y='{ty}' font-size='10'>{label}</text>",
                    tx = bx + 4.0,
                    ty = by + 15.0,
                );
            }
            y += h + PAD;
        }
        let _ = write!(
            body,
            "<rect x='{PAD}' y='{top}' width='{w}' height='{h}' fill='#e8eef7' stroke='#345'/>\
             <text x='{tx}' y='{ty}' font-size='14' font-weight='bold'>Package #{pi}</text>{inner}",
            w = W - 2.0 * PAD,
            h = y - top,
            tx = PAD + 6.0,
            ty = top + 19.0,
        );
        y += PAD;
    }
    let more = m.node_count().saturating_sub(drawn);
    if more > 0 {
        let _ = write!(
            body,
            "<text x='{PAD}' y='{}' font-size='13'>… {more} more nodes not drawn (the first {drawn} shown)</text>",
            y + 14.0
        );
        y += 24.0;
    }
    let cache = llc
        .map(|c| {
            format!(
                ", L{} {} shared by {} CPUs",
                c.level,
                mem_label(c.size),
                c.shared_by
            )
        })
        .unwrap_or_default();
    let title = format!(
        "{}: {} nodes, {} CPUs, {}{cache}",
        m.name,
        m.node_count(),
        m.cpu_count(),
        mem_label(m.mem_bytes())
    );
    format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{h}' viewBox='0 0 {W} {h}' \
         font-family='sans-serif'><rect width='100%' height='100%' fill='#fff'/>\
         <text x='{PAD}' y='24' font-size='16' font-weight='bold'>{t}</text>\
         <text x='{PAD}' y='44' font-size='12' fill='#444'>packages from the node distances; \
         numasim machines FILE --svg</text>{body}</svg>\n",
        h = y + PAD,
        t = esc(&title),
    )
}
