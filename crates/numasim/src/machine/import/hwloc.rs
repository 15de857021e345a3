//! hwloc v2 XML (`lstopo --of xml`, `hwloc-gather-topology`).
//!
//! In the v2 format a NUMA node is a *memory child* of the object whose
//! CPUs are local to it (a Package, a Group, the Machine), listed as an
//! `<object type="NUMANode">` element among that object's children, possibly
//! behind `MemCache` objects. hwloc does not record Linux's CPU-to-node map
//! directly, so a PU is given to the NUMA node attached to its nearest
//! ancestor that has one (the lowest os_index if several share it: KNL flat
//! mode's DDR rather than its MCDRAM). Node distances come from the
//! `<distances2 type="NUMANode">` matrix the Linux backend fills from sysfs.

use super::{build, name_from_source, revalidate, RawNode};
use crate::error::InputError;
use crate::machine::{Arch, Cache, Machine};
use roxmltree::{Document, Node};
use std::collections::BTreeMap;

/// Import a machine from hwloc v2 XML text; `source` names it in errors.
pub fn from_hwloc_xml(text: &str, source: &str) -> Result<Machine, InputError> {
    // Real exports carry `<!DOCTYPE topology SYSTEM "hwloc2.dtd">`.
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = Document::parse_with_options(text, opts).map_err(|e| {
        InputError::new(format!(
            "not valid XML ({e}); give the output of `lstopo --of xml` (truncated file?)"
        ))
        .in_file(source)
    })?;
    let x = Xml { doc: &doc, source };
    let root = doc.root_element();
    if root.tag_name().name() != "topology" {
        return Err(x.at(
            root,
            format!(
                "the root element is <{}>; an hwloc XML file starts with <topology>",
                root.tag_name().name()
            ),
        ));
    }
    match root.attribute("version") {
        Some(v) if v.starts_with("2.") || v.starts_with("3.") => {}
        Some(v) => {
            return Err(x.at(
                root,
                format!("hwloc XML version {v} is not supported; numasim reads version 2.x (hwloc 2.0 and later)"),
            ))
        }
        None => {
            return Err(x.at(
                root,
                "<topology> has no version attribute, so this is hwloc 1.x XML; \
                 export it again with hwloc 2 (`lstopo --of xml`)",
            ))
        }
    }

    // NUMA nodes, by os_index.
    let mut numa: BTreeMap<u32, Numa> = BTreeMap::new();
    let mut page_sizes: Vec<u64> = Vec::new();
    for n in root.descendants().filter(|n| is_obj(n, "NUMANode")) {
        let id = x.req_u64(n, "os_index")?;
        let id = u32::try_from(id).map_err(|_| x.at(n, format!("os_index {id} is too large")))?;
        let mem = x.opt_u64(n, "local_memory")?.unwrap_or(0);
        for p in n.children().filter(|c| c.has_tag_name("page_type")) {
            let size = x.req_u64(p, "size")?;
            x.req_u64(p, "count")?;
            page_sizes.push(size);
        }
        let gp = x.opt_u64(n, "gp_index")?;
        if numa
            .insert(
                id,
                Numa {
                    mem,
                    gp,
                    cpus: vec![],
                },
            )
            .is_some()
        {
            return Err(x.at(n, format!("a second NUMANode with os_index {id}")));
        }
    }
    if numa.is_empty() {
        return Err(InputError::new(
            "has no <object type=\"NUMANode\">: not an hwloc v2 topology, or a truncated one",
        )
        .in_file(source));
    }

    // Each PU to the NUMA node of its nearest ancestor that has one.
    let mut pu_count = 0usize;
    for pu in root.descendants().filter(|n| is_obj(n, "PU")) {
        let cpu = x.req_u64(pu, "os_index")?;
        let cpu =
            u32::try_from(cpu).map_err(|_| x.at(pu, format!("os_index {cpu} is too large")))?;
        let node = local_node(&x, pu)?
            .ok_or_else(|| x.at(pu, format!("PU P#{cpu} has no NUMA node above it")))?;
        let entry = numa
            .get_mut(&node)
            .ok_or_else(|| x.at(pu, format!("PU P#{cpu}'s NUMA node {node} was not found")))?;
        entry.cpus.push(cpu);
        pu_count += 1;
    }
    if pu_count == 0 {
        return Err(
            InputError::new("has no <object type=\"PU\">: the topology has no CPU").in_file(source),
        );
    }

    let ids: Vec<u32> = numa.keys().copied().collect();
    let matrix = distances(&x, root, &ids, &numa)?;
    let nodes: Vec<RawNode> = numa
        .into_iter()
        .map(|(id, n)| RawNode {
            id,
            cpus: n.cpus,
            mem_bytes: n.mem,
        })
        .collect();

    let name = info(root, "HostName")
        .map(|h| name_from_source(&h))
        .filter(|n| n != "imported")
        .unwrap_or_else(|| name_from_source(source));
    let mut m = build(
        &name,
        format!("imported from hwloc XML {source}"),
        &nodes,
        matrix,
        source,
    )?;

    if let Some(arch) = info(root, "Architecture") {
        // hwloc writes `uname -m`; big-endian ppc64 sizes tables as ppc64le.
        let arch = if arch == "ppc64" {
            "ppc64le".to_string()
        } else {
            arch
        };
        if let Some((_, a)) = Arch::NAMES.iter().find(|(n, _)| *n == arch) {
            m.arch = *a;
        }
    }
    // Without page types, the architecture's usual base page: POWER
    // distributions build 64 KiB pages.
    if page_sizes.is_empty() && m.arch == Arch::Ppc64le {
        m.page_size = 64 << 10;
        m.tlb.page_sizes = vec![64 << 10];
    }
    if let Some(model) = info(root, "CPUModel") {
        if !model.is_empty() {
            if let Some(mhz) = clock_from_model(&model) {
                m.cpu.clock_mhz = mhz;
            }
            m.cpu.model = model;
        }
    }
    let (caches, line) = caches(&x, root)?;
    if let Some(line) = line {
        m.cpu.cache_line = line;
    }
    m.cpu.caches = caches;
    if !page_sizes.is_empty() {
        page_sizes.sort_unstable();
        page_sizes.dedup();
        m.page_size = page_sizes[0];
        m.tlb.page_sizes = page_sizes;
    }
    revalidate(m, source)
}

struct Numa {
    mem: u64,
    gp: Option<u64>,
    cpus: Vec<u32>,
}

/// Errors located at an element: the file, the line, the element.
struct Xml<'a, 'i> {
    doc: &'a Document<'i>,
    source: &'a str,
}

impl Xml<'_, '_> {
    fn at(&self, n: Node, message: impl Into<String>) -> InputError {
        let pos = self.doc.text_pos_at(n.range().start);
        let what = match (n.attribute("type"), n.attribute("os_index")) {
            (Some(t), Some(i)) => {
                format!("<{} type=\"{t}\" os_index=\"{i}\">", n.tag_name().name())
            }
            (Some(t), None) => format!("<{} type=\"{t}\">", n.tag_name().name()),
            _ => format!("<{}>", n.tag_name().name()),
        };
        InputError::new(format!("line {}: {what}: {}", pos.row, message.into()))
            .in_file(self.source)
    }

    fn opt_u64(&self, n: Node, attr: &str) -> Result<Option<u64>, InputError> {
        match n.attribute(attr) {
            None => Ok(None),
            Some(v) => {
                v.trim().parse::<u64>().map(Some).map_err(|_| {
                    self.at(n, format!("attribute {attr}=\"{v}\" is not a whole number"))
                })
            }
        }
    }

    fn req_u64(&self, n: Node, attr: &str) -> Result<u64, InputError> {
        self.opt_u64(n, attr)?
            .ok_or_else(|| self.at(n, format!("the {attr} attribute is missing")))
    }
}

fn is_obj(n: &Node, ty: &str) -> bool {
    n.has_tag_name("object") && n.attribute("type") == Some(ty)
}

/// The first `<info name=… value=…>` with this name anywhere (v2 puts
/// Architecture and HostName on the Machine object, v3 under <topology>).
fn info(root: Node, name: &str) -> Option<String> {
    root.descendants()
        .find(|n| n.has_tag_name("info") && n.attribute("name") == Some(name))
        .and_then(|n| n.attribute("value"))
        .map(|v| v.trim().to_string())
}

/// The os_index of the NUMA node local to a PU.
fn local_node(x: &Xml, pu: Node) -> Result<Option<u32>, InputError> {
    for anc in pu.ancestors().skip(1) {
        if is_obj(&anc, "NUMANode") {
            return Ok(Some(numa_id(x, anc)?));
        }
        let mut found: Option<u32> = None;
        for m in memory_children(anc) {
            let id = numa_id(x, m)?;
            found = Some(found.map_or(id, |f: u32| f.min(id)));
        }
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

fn numa_id(x: &Xml, n: Node) -> Result<u32, InputError> {
    let id = x.req_u64(n, "os_index")?;
    u32::try_from(id).map_err(|_| x.at(n, format!("os_index {id} is too large")))
}

/// NUMANode children of an object, looking through memory-side caches.
fn memory_children<'a, 'i>(obj: Node<'a, 'i>) -> Vec<Node<'a, 'i>> {
    let mut out = Vec::new();
    for c in obj.children() {
        if is_obj(&c, "NUMANode") {
            out.push(c);
        } else if is_obj(&c, "MemCache") {
            out.extend(memory_children(c));
        }
    }
    out
}

/// The node distance matrix in `ids` order.
fn distances(
    x: &Xml,
    root: Node,
    ids: &[u32],
    numa: &BTreeMap<u32, Numa>,
) -> Result<Vec<Vec<u32>>, InputError> {
    let n = ids.len();
    let candidates: Vec<Node> = root
        .children()
        .filter(|c| c.has_tag_name("distances2") && c.attribute("type") == Some("NUMANode"))
        .collect();
    // kind bit 4 = HWLOC_DISTANCES_KIND_MEANS_LATENCY; bandwidth matrices are skipped.
    let mut chosen = None;
    for c in &candidates {
        let kind = x.opt_u64(*c, "kind")?;
        if kind.is_none() || kind.is_some_and(|k| k & 4 != 0) {
            chosen = Some(*c);
            break;
        }
    }
    let Some(d) = chosen else {
        if n == 1 {
            return Ok(vec![vec![10]]);
        }
        return Err(InputError::new(format!(
            "has no <distances2 type=\"NUMANode\"> latency matrix, and the machine has {n} NUMA nodes; \
             export from a Linux host (hwloc reads the distances from sysfs)"
        ))
        .in_file(x.source));
    };
    let nb = x.req_u64(d, "nbobjs")? as usize;
    let gp = match d.attribute("indexing") {
        None | Some("os") => false,
        Some("gp") => true,
        Some(other) => {
            return Err(x.at(d, format!("indexing=\"{other}\" is not `os` or `gp`")));
        }
    };
    let collect = |tag: &str| -> Result<Vec<u64>, InputError> {
        let mut out = Vec::new();
        for c in d.children().filter(|c| c.has_tag_name(tag)) {
            for t in c.text().unwrap_or("").split_whitespace() {
                out.push(
                    t.parse::<u64>()
                        .map_err(|_| x.at(c, format!("`{t}` is not a whole number")))?,
                );
            }
        }
        Ok(out)
    };
    if nb != n {
        return Err(x.at(
            d,
            format!("covers {nb} NUMA nodes but the topology has {n}"),
        ));
    }
    let indexes = collect("indexes")?;
    let values = collect("u64values")?;
    if indexes.len() != nb {
        return Err(x.at(
            d,
            format!(
                "nbobjs=\"{nb}\" but <indexes> lists {} objects",
                indexes.len()
            ),
        ));
    }
    if values.len() != nb * nb {
        return Err(x.at(
            d,
            format!(
                "{nb} objects need {} values ({nb}×{nb}) but <u64values> holds {}; \
                 the matrix must be square (truncated file?)",
                nb * nb,
                values.len()
            ),
        ));
    }
    // Position of each matrix row in `ids` order.
    let mut pos = Vec::with_capacity(nb);
    for &ix in &indexes {
        let p = ids.iter().position(|&id| {
            if gp {
                numa.get(&id).and_then(|m| m.gp) == Some(ix)
            } else {
                id as u64 == ix
            }
        });
        let p = p.ok_or_else(|| {
            x.at(
                d,
                format!(
                    "index {ix} names no NUMANode (indexing=\"{}\")",
                    if gp { "gp" } else { "os" }
                ),
            )
        })?;
        if pos.contains(&p) {
            return Err(x.at(d, format!("index {ix} appears twice")));
        }
        pos.push(p);
    }
    let mut matrix = vec![vec![0u32; n]; n];
    for i in 0..nb {
        for j in 0..nb {
            let v = values[i * nb + j];
            matrix[pos[i]][pos[j]] =
                u32::try_from(v).map_err(|_| x.at(d, format!("distance {v} is too large")))?;
        }
    }
    Ok(matrix)
}

/// One cache per level (the first data or unified one hwloc lists), with
/// the number of PUs under it as `shared_by`; and the cache line size.
fn caches(x: &Xml, root: Node) -> Result<(Vec<Cache>, Option<u32>), InputError> {
    let mut by_level: BTreeMap<u8, Cache> = BTreeMap::new();
    let mut line = None;
    for c in root.descendants().filter(|n| n.has_tag_name("object")) {
        let Some(ty) = c.attribute("type") else {
            continue;
        };
        let level: u8 = match ty
            .strip_prefix('L')
            .and_then(|t| t.strip_suffix("Cache"))
            .and_then(|t| t.parse().ok())
        {
            Some(l) => l,
            None => continue, // not a data/unified cache (L1iCache, MemCache, …)
        };
        if by_level.contains_key(&level) {
            continue;
        }
        let size = x.req_u64(c, "cache_size")?;
        if let Some(l) = x.opt_u64(c, "cache_linesize")? {
            if l > 0 && line.is_none() {
                let l = u32::try_from(l)
                    .ok()
                    .filter(|l| l.is_power_of_two())
                    .ok_or_else(|| x.at(c, format!("cache_linesize {l} is not a power of two")))?;
                line = Some(l);
            }
        }
        let pus = c.descendants().filter(|n| is_obj(n, "PU")).count().max(1);
        by_level.insert(
            level,
            Cache {
                level,
                size,
                latency_cycles: 0.0,
                shared_by: u32::try_from(pus).unwrap_or(u32::MAX),
                copy_mbps: None,
            },
        );
    }
    Ok((by_level.into_values().collect(), line))
}

/// `Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz` → 2100 MHz (the nominal
/// clock the model string states; hwloc records no other).
fn clock_from_model(model: &str) -> Option<f64> {
    let after = model.rsplit_once('@')?.1.trim();
    let (num, mult) = if let Some(n) = after.strip_suffix("GHz") {
        (n, 1000.0)
    } else if let Some(n) = after.strip_suffix("MHz") {
        (n, 1.0)
    } else {
        return None;
    };
    let v: f64 = num.trim().parse().ok()?;
    (v > 0.0 && v.is_finite()).then_some(v * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_from_model_strings() {
        assert_eq!(
            clock_from_model("Intel(R) Xeon(R) CPU E5-4640 0 @ 2.40GHz"),
            Some(2400.0)
        );
        assert_eq!(clock_from_model("AMD EPYC 7742 64-Core Processor"), None);
        assert_eq!(clock_from_model("x @ 800MHz"), Some(800.0));
        assert_eq!(clock_from_model("x @ fastGHz"), None);
    }

    #[test]
    fn v1_and_garbage_are_refused() {
        let e =
            from_hwloc_xml("<topology><object type=\"Machine\"/></topology>", "a.xml").unwrap_err();
        assert!(e.message.contains("hwloc 1.x"), "{e}");
        let e = from_hwloc_xml("<topology version=\"2.0\"><object", "a.xml").unwrap_err();
        assert!(e.message.contains("not valid XML"), "{e}");
        assert_eq!(e.file.as_deref(), Some("a.xml"));
        let e = from_hwloc_xml("<html/>", "a.xml").unwrap_err();
        assert!(e.message.contains("<topology>"), "{e}");
    }

    #[test]
    fn bad_attribute_names_line_and_element() {
        let xml = "<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\">\n\
                   <object type=\"NUMANode\" os_index=\"0\" local_memory=\"12x\"/>\n\
                   <object type=\"PU\" os_index=\"0\"/>\n</object>\n</topology>";
        let e = from_hwloc_xml(xml, "b.xml").unwrap_err();
        assert!(
            e.message
                .starts_with("line 3: <object type=\"NUMANode\" os_index=\"0\">"),
            "{e}"
        );
        assert!(e.message.contains("local_memory"), "{e}");
    }
}
