//! The boot-time hash tables as `dmesg` shows them: print a booted model in
//! the kernel's own format for its release (`numasim dmesg`), and read a
//! real `dmesg` or `journalctl -k` back to predict every table line it
//! prints from the facts the log states (`numasim bootlog FILE`): the
//! release, the architecture, the page size, memory as the kernel counts
//! it, CPUs, nodes and boot parameters. The sizing rules by release are in
//! `kernel/mm/hash_tables.rs`; docs/placement.md, "Boot logs", lists the
//! lines read and the release of every rule.

use crate::error::{Error, InputError};
use crate::input::size::format_size;
use crate::kernel::boot::{BootHash, Booted, HashSource};
use crate::kernel::config::{default_vmalloc_max, KernelConfig};
use crate::kernel::mm::hash_tables::{
    hashdist, predict, vmalloc_is_huge, HashInputs, LineFormat, Predicted, Rules,
};
use crate::kernel::release::{Release, Vendor};
use crate::machine::{Arch, Machine};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The most `bootlog` reads: a full boot log is a few hundred KiB; a
/// multi-day `journalctl -k` a few MiB.
pub const MAX_LOG_BYTES: u64 = crate::input::MAX_BOOT_LOG_BYTES;

/// `MAX_NUMNODES` is `1 << CONFIG_NODES_SHIFT`, and Kconfig bounds
/// `NODES_SHIFT` to 10 (`mm/Kconfig`, `arch/*/Kconfig`): no node id reaches 1024.
pub const MAX_NUMNODES: u64 = 1 << 10;

/// Read a log from `r` (a file, stdin), at most [`MAX_LOG_BYTES`]: more is
/// refused naming `name` (`bootlog /dev/zero` stops at 64 MiB). Stray bytes
/// (serial consoles) are read lossily.
pub fn read_log(r: impl std::io::Read, name: &str) -> Result<String, Error> {
    let mut b = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(r, MAX_LOG_BYTES + 1), &mut b)
        .map_err(|e| InputError::new(format!("cannot read it: {e}")).in_file(name))?;
    if b.len() as u64 > MAX_LOG_BYTES {
        return Err(InputError::new(format!(
            "more than {} MiB; bootlog reads at most that much (a boot log is a few hundred KiB): give `dmesg` or `journalctl -k -b` output",
            MAX_LOG_BYTES >> 20
        ))
        .in_file(name)
        .into());
    }
    Ok(String::from_utf8_lossy(&b).into_owned())
}

// ------------------------------------------------------------ dmesg

/// One table line in the format `format` prints it.
pub fn hash_line(
    format: LineFormat,
    label: &str,
    entries: u64,
    order: i64,
    bytes: u64,
    kind: Option<&str>,
) -> String {
    match (format, kind) {
        (LineFormat::Alsh | LineFormat::OrderComma, Some(k)) => {
            format!("{label} hash table entries: {entries} (order: {order}, {bytes} bytes, {k})")
        }
        (LineFormat::Alsh | LineFormat::OrderComma, None) => {
            format!("{label} hash table entries: {entries} (order: {order}, {bytes} bytes)")
        }
        (LineFormat::OrderColon, _) => {
            format!("{label} hash table entries: {entries} (order {order}: {bytes} bytes)")
        }
        (LineFormat::EntriesOnly, _) => format!("{label} hash table entries: {entries}"),
        (LineFormat::Dquot, _) => {
            format!("{label} hash table entries: {entries} (order {order}, {bytes} bytes)")
        }
    }
}

/// What `bootlog` assumes for `hashdist` when the command line is silent:
/// the release's default with `CONFIG_NUMA` on 64-bit arches.
fn assumed_hashdist(rules: &Rules, arch: Arch, memory_nodes: u64) -> bool {
    rules.hashdist_default(arch, arch.is_64bit(), memory_nodes)
}

/// The kind a booted core table prints.
fn boot_kind(h: &BootHash, rules: &Rules, inp: &HashInputs) -> Option<&'static str> {
    rules.prints_kind().then(|| match h.source {
        HashSource::Vmalloc if vmalloc_is_huge(rules, inp, h.bytes()) => "vmalloc hugepage",
        HashSource::Vmalloc => "vmalloc",
        HashSource::Bootmem | HashSource::Pages => "linear",
    })
}

/// The boot lines a kernel of `cfg.version` prints for `booted`: the lines
/// `bootlog` reads (release, command line, node memory, CPUs, the zonelist
/// total) and every table line. The four tables numasim places come from
/// the boot model; the others from the release rules on the same inputs.
/// Knobs Linux does not print (`kernel.max_order`, `kernel.vmalloc_max_mb`)
/// go on a `numasim:` line when they are not the arch's defaults.
pub fn render(machine: &Machine, cfg: &KernelConfig, booted: &Booted) -> String {
    let era = cfg.version.boot_tables();
    let rel = Release::of_era(era);
    let rules = Rules::of(&rel);
    let inp = &booted.inputs;
    let mut out = String::new();
    let mut line = |s: String| {
        let _ = writeln!(out, "[    0.000000] {s}");
    };
    line(format!(
        "Linux version {}.{} (numasim prediction for `{}`)",
        rel.raw,
        machine.arch.name(),
        machine.name
    ));
    let mut params = Vec::new();
    if cfg.hashdist != assumed_hashdist(&rules, machine.arch, inp.memory_nodes) {
        params.push(format!("hashdist={}", u8::from(cfg.hashdist)));
    }
    for (k, v) in [
        ("thash_entries", cfg.thash_entries),
        ("dhash_entries", cfg.dhash_entries),
        ("ihash_entries", cfg.ihash_entries),
    ] {
        if v != 0 {
            params.push(format!("{k}={v}"));
        }
    }
    line(
        format!("Kernel command line: root=/dev/sda1 {}", params.join(" "))
            .trim_end()
            .to_string(),
    );
    let mut knobs = Vec::new();
    if cfg.max_order != machine.arch.default_max_order(machine.page_size) {
        knobs.push(format!("kernel.max_order={}", cfg.max_order));
    }
    if cfg.vmalloc_max_bytes != default_vmalloc_max(machine.arch) {
        knobs.push(format!(
            "kernel.vmalloc_max_mb={}",
            cfg.vmalloc_max_bytes >> 20
        ));
    }
    if !knobs.is_empty() {
        line(format!(
            "numasim: {} (not a Linux line: the knobs no kernel prints)",
            knobs.join(" ")
        ));
    }
    let ps = machine.page_size;
    let lowmem = machine.arch.lowmem_bytes();
    if era.key() >= (4, 15, 0) && lowmem.is_none() {
        line("Early memory node ranges".into());
        let mut start = 0u64;
        for (i, n) in machine.nodes.iter().enumerate() {
            let pages = n.mem_bytes / ps;
            if pages == 0 {
                continue;
            }
            let end = start + pages * ps - 1;
            line(format!("  node {i:>3}: [mem {start:#018x}-{end:#018x}]"));
            start = end + 1;
        }
    } else {
        for (i, n) in machine.nodes.iter().enumerate() {
            line(format!("On node {i} totalpages: {}", n.mem_bytes / ps));
        }
        if let Some(low) = lowmem {
            // The lowmem/highmem split, counted as the boot model counts it.
            let total: u64 = machine.nodes.iter().map(|n| n.mem_bytes / ps).sum();
            let low_pages = total.min(low / ps);
            let memmap = total.saturating_sub(inp.all_pages);
            if memmap > 0 {
                line(format!("  Normal zone: {memmap} pages used for memmap"));
            }
            line(format!("  Normal zone: {low_pages} pages, LIFO batch:31"));
            line(format!(
                "  HighMem zone: {} pages, LIFO batch:31",
                total - low_pages
            ));
        }
    }
    line(format!(
        "smpboot: Allowing {} CPUs, 0 hotplug CPUs",
        inp.possible_cpus
    ));
    line(format!(
        "Built {} zonelists, mobility grouping on.  Total pages: {}",
        inp.online_nodes, inp.all_pages
    ));
    let total_kb: u64 = machine
        .nodes
        .iter()
        .map(|n| n.mem_bytes / ps * ps)
        .sum::<u64>()
        >> 10;
    let free_kb: u64 = booted.mm.nodes().iter().map(|n| n.free).sum::<u64>() * (ps >> 10);
    let reserved = total_kb.saturating_sub(free_kb);
    line(if era.key() >= (4, 15, 0) {
        format!("Memory: {free_kb}K/{total_kb}K available (0K kernel code, 0K rwdata, 0K rodata, 0K init, 0K bss, {reserved}K reserved, 0K cma-reserved)")
    } else {
        format!("Memory: {free_kb}k/{total_kb}k available (0k kernel code, 0k absent, {reserved}k reserved, 0k data, 0k init)")
    });
    let core = [
        ("Dentry cache", "dentry"),
        ("Inode-cache", "inode"),
        ("TCP established", "tcp_ehash"),
        ("TCP bind", "tcp_bhash"),
    ];
    for p in predict(&rel, inp) {
        if p.optional {
            continue;
        }
        match core.iter().find(|(l, _)| *l == p.label) {
            Some((_, name)) => {
                if let Some(h) = booted.hash(name) {
                    line(hash_line(
                        LineFormat::Alsh,
                        h.label,
                        h.entries,
                        h.order(ps),
                        h.bytes(),
                        boot_kind(h, &rules, inp),
                    ));
                }
            }
            None => line(hash_line(
                p.format, p.label, p.entries, p.order, p.bytes, p.kind,
            )),
        }
    }
    if let (Some(e), Some(b)) = (booted.hash("tcp_ehash"), booted.hash("tcp_bhash")) {
        line(format!(
            "TCP: Hash tables configured (established {} bind {})",
            e.entries, b.entries
        ));
    }
    out
}

// ------------------------------------------------------------ reading

/// A table line read from a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTable {
    /// As printed, less a `VFS: ` prefix.
    pub label: String,
    pub entries: u64,
    /// None where the line prints no order (`Mount-cache hash table entries: 256`).
    pub order: Option<i64>,
    pub bytes: Option<u64>,
    /// `linear`, `vmalloc`, `vmalloc hugepage`: printed from 5.3.
    pub kind: Option<String>,
    /// None: a form numasim does not know (the details are kept in `raw`).
    pub format: Option<LineFormat>,
    /// 1-based line number in the log.
    pub line: usize,
    pub raw: String,
}

/// A zone's counts from `free_area_init_core()`'s debug lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZoneLines {
    pub node: u32,
    pub name: String,
    pub memmap: u64,
    pub reserved: u64,
    pub pages: Option<u64>,
}

/// What a boot log says about the machine and its tables (its last boot).
#[derive(Debug, Clone, Default)]
pub struct LogFacts {
    /// The log's name in messages (`boot.txt`, `-`).
    pub name: String,
    /// The release token of `Linux version` and the whole line.
    pub version: Option<String>,
    pub version_line: Option<String>,
    /// `Linux version` lines seen: each starts a boot, and the last is read.
    pub boots: usize,
    /// Lines only some architectures print: (line, what, family).
    pub markers: Vec<(usize, &'static str, Family)>,
    /// Bytes per node from "Early memory node ranges" lines.
    pub node_ranges: BTreeMap<u32, u64>,
    /// Pages per node from 2.6's `early_node_map` PFN ranges.
    pub node_pfns: BTreeMap<u32, u64>,
    /// "On node N totalpages: P".
    pub node_pages: BTreeMap<u32, u64>,
    /// The last node line read (for messages).
    pub last_node_line: usize,
    pub zones: Vec<ZoneLines>,
    /// "Built N zonelists … Total pages: T": (N, T, line).
    pub zonelists: Option<(u64, u64, usize)>,
    /// `Memory:` line: (total kB, absent kB, highmem kB, line).
    pub memory_line: Option<(u64, u64, u64, usize)>,
    /// "NNNMB LOWMEM available" / "HIGHMEM available", MiB.
    pub lowmem_mb: Option<u64>,
    pub highmem_mb: Option<u64>,
    /// Possible CPUs and where the count came from.
    pub cpus: Option<(u64, &'static str)>,
    /// Online nodes ("smp: Brought up N nodes").
    pub online_nodes: Option<u64>,
    /// `key=value` words of the command line.
    pub cmdline: Vec<(String, String)>,
    /// `numasim:` knobs: max_order, vmalloc_max_mb.
    pub max_order: Option<u32>,
    pub vmalloc_max_mb: Option<u64>,
    /// ppc64: radix (true) or hash (false) MMU.
    pub ppc_radix: Option<bool>,
    pub tables: Vec<LogTable>,
    pub lines: usize,
    /// Lines that looked like a table or memory line but did not parse.
    pub malformed: Vec<(usize, String)>,
    /// Input that cannot be a kernel's (a node id past MAX_NUMNODES,
    /// ranges that overflow 64 bits): refused with the line.
    pub refused: Option<(usize, String)>,
}

/// Architecture families a marker line points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    X86,
    Arm,
    Arm64,
    Ppc64,
    Ia64,
    /// A 32-bit kernel (highmem, `LOWMEM`, `CPU: ARMv…`).
    Bits32,
}

/// The message of a log line: without dmesg's `[ time]`, a syslog `<6>`
/// level, or journalctl's `Mon DD HH:MM:SS host kernel: ` prefix.
fn message(line: &str) -> &str {
    let mut m = line.trim_end_matches(['\r', '\n']);
    if let Some(i) = m.find(" kernel: ") {
        m = &m[i + " kernel: ".len()..];
    }
    if m.starts_with('<') {
        if let Some(i) = m.find('>') {
            if m[1..i].bytes().all(|b| b.is_ascii_digit()) {
                m = &m[i + 1..];
            }
        }
    }
    if m.starts_with('[') {
        if let Some(i) = m.find(']') {
            m = &m[i + 1..];
        }
    }
    m.trim_start_matches(' ')
}

/// The number at the start of `s`.
fn leading_u64(s: &str) -> Option<(u64, &str)> {
    let s = s.trim_start();
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 || end > 20 {
        return None;
    }
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// `X hash table entries: N …`: Ok(None) when the count is not a number.
fn parse_table(msg: &str, line: usize) -> Option<LogTable> {
    let (label, rest) = msg.split_once(" hash table entries: ")?;
    let label = label.trim();
    let label = label.strip_prefix("VFS: ").unwrap_or(label).trim();
    let (entries, rest) = leading_u64(rest)?;
    if label.is_empty() || entries == 0 || !entries.is_power_of_two() {
        return None;
    }
    let mut t = LogTable {
        label: label.to_string(),
        entries,
        order: None,
        bytes: None,
        kind: None,
        format: None,
        line,
        raw: msg.to_string(),
    };
    let rest = rest.trim();
    let order_num = |s: &str| -> Option<(i64, String)> {
        let s = s.trim_start();
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let (n, r) = leading_u64(s)?;
        let n = i64::try_from(n).ok().filter(|n| *n <= 64)?;
        Some((if neg { -n } else { n }, r.to_string()))
    };
    let bytes_num = |s: &str| -> Option<(u64, String)> {
        let (b, r) = leading_u64(s)?;
        let r = r.strip_prefix(" bytes")?;
        Some((b, r.to_string()))
    };
    if rest.is_empty() {
        t.format = Some(LineFormat::EntriesOnly);
    } else if let Some(r) = rest.strip_prefix("(order: ") {
        let (o, r) = order_num(r)?;
        let r = r.strip_prefix(", ")?;
        let (b, r) = bytes_num(r)?;
        let kind = match r.trim_end_matches('.').trim_end() {
            ")" => None,
            k => Some(k.strip_prefix(", ")?.strip_suffix(')')?.trim().to_string()),
        };
        t.order = Some(o);
        t.bytes = Some(b);
        t.kind = kind;
        t.format = Some(LineFormat::Alsh);
    } else if let Some(r) = rest.strip_prefix("(order ") {
        let (o, r) = order_num(r)?;
        let (fmt, r) = if let Some(r) = r.strip_prefix(": ") {
            (LineFormat::OrderColon, r)
        } else {
            (LineFormat::Dquot, r.strip_prefix(", ")?)
        };
        let (b, r) = bytes_num(r)?;
        if r.trim() != ")" {
            return None;
        }
        t.order = Some(o);
        t.bytes = Some(b);
        t.format = Some(fmt);
    }
    // A table is a power-of-two count of whole buckets.
    if let Some(b) = t.bytes {
        if b == 0 || !b.is_multiple_of(entries) {
            return None;
        }
    }
    Some(t)
}

/// `Memory: 16318940K/16645564K available (… 123k absent … 0k highmem)`.
fn parse_memory_line(msg: &str) -> Option<(u64, u64, u64)> {
    let rest = msg.strip_prefix("Memory: ")?;
    let (_, rest) = rest.split_once('/')?;
    let (total, rest) = leading_u64(rest)?;
    let rest = rest.strip_prefix(['k', 'K'])?;
    let field = |name: &str| -> Option<u64> {
        rest.split([',', '(', ')'])
            .find_map(|w| w.trim().strip_suffix(name))
            .and_then(|a| leading_u64(a.trim()).map(|(n, _)| n))
    };
    Some((
        total,
        field(" absent").unwrap_or(0),
        field(" highmem").unwrap_or(0),
    ))
}

/// `  node   0: [mem 0x0000000000001000-0x000000000009efff]` → (node, start, end).
fn parse_node_range(msg: &str) -> Option<(u64, u64, u64)> {
    let rest = msg.trim_start().strip_prefix("node ")?;
    let (id, rest) = rest.split_once(':')?;
    let range = rest.trim().strip_prefix("[mem ")?.strip_suffix(']')?;
    let (a, b) = range.split_once('-')?;
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok();
    Some((id.trim().parse().ok()?, hex(a)?, hex(b)?))
}

/// 2.6 `early_node_map`: `    0: 0x00000001 -> 0x000000a0` → (node, start pfn, end pfn).
fn parse_pfn_range(msg: &str) -> Option<(u64, u64, u64)> {
    let (id, rest) = msg.trim().split_once(": ")?;
    let (a, b) = rest.split_once(" -> ")?;
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok();
    Some((id.trim().parse().ok()?, hex(a)?, hex(b)?))
}

/// The number after `key` in `msg` ("nr_cpu_ids:8", "CPUs=8").
fn number_after(msg: &str, key: &str) -> Option<u64> {
    let i = msg.find(key)?;
    leading_u64(&msg[i + key.len()..]).map(|(n, _)| n)
}

/// The architecture a release string names (`uname -r` of distributions).
fn arch_in_release(v: &str) -> Option<Arch> {
    let v = v.to_ascii_lowercase();
    [
        ("x86_64", Arch::X86_64),
        ("amd64", Arch::X86_64),
        ("aarch64", Arch::Aarch64),
        ("arm64", Arch::Aarch64),
        ("ppc64le", Arch::Ppc64le),
        ("ppc64el", Arch::Ppc64le),
        ("ppc64", Arch::Ppc64),
        ("powerpc64", Arch::Ppc64),
        ("ia64", Arch::Ia64),
        ("i686", Arch::I386),
        ("i586", Arch::I386),
        ("i386", Arch::I386),
        ("-686", Arch::I386),
        ("-pae", Arch::I386),
        ("armv7", Arch::Arm),
        ("armmp", Arch::Arm),
        ("armhf", Arch::Arm),
        ("alpha", Arch::Alpha),
        ("ppc32", Arch::Ppc32),
    ]
    .into_iter()
    .find(|(k, _)| v.contains(k))
    .map(|(_, a)| a)
}

/// Per-boot state while reading.
#[derive(Default)]
struct Reading {
    facts: LogFacts,
    /// The node whose zone lines follow ("On node N totalpages", "Initmem setup node N").
    zone_node: u32,
    in_pfn_map: bool,
}

/// Read a boot log. Never fails: what it cannot read is counted, and what
/// no kernel prints is kept as a refusal for [`check`] to report.
pub fn parse_log(text: &str) -> LogFacts {
    parse_log_named("the log", text)
}

/// [`parse_log`], naming the log in messages.
pub fn parse_log_named(name: &str, text: &str) -> LogFacts {
    let mut st = Reading::default();
    let mut lines = 0;
    let mut boots = 0;
    let mut malformed = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        lines += 1;
        let n = i + 1;
        let msg = message(raw);
        if let Some(rest) = msg.strip_prefix("Linux version ") {
            // A second boot: read the last.
            boots += 1;
            if st.facts.version.is_some() || !st.facts.tables.is_empty() {
                st = Reading::default();
            }
            st.facts.version = rest.split_whitespace().next().map(str::to_string);
            st.facts.version_line = Some(msg.to_string());
        } else {
            read_line(&mut st, msg, n, &mut malformed);
        }
    }
    let mut f = st.facts;
    f.name = name.to_string();
    f.lines = lines;
    f.boots = boots;
    f.malformed = malformed;
    f
}

fn refuse(f: &mut LogFacts, line: usize, msg: String) {
    if f.refused.is_none() {
        f.refused = Some((line, msg));
    }
}

fn read_line(st: &mut Reading, msg: &str, n: usize, malformed: &mut Vec<(usize, String)>) {
    let f = &mut st.facts;
    let bad =
        |malformed: &mut Vec<(usize, String)>| malformed.push((n, msg.chars().take(200).collect()));
    if msg.contains(" hash table entries: ") {
        match parse_table(msg, n) {
            Some(t) => f.tables.push(t),
            None => bad(malformed),
        }
        return;
    }
    if msg.starts_with("Memory: ") && msg.contains("available") {
        match parse_memory_line(msg) {
            Some((t, a, h)) => f.memory_line = Some((t, a, h, n)),
            None => bad(malformed),
        }
        return;
    }
    if let Some(rest) = msg.strip_prefix("On node ") {
        if let Some((id, pages)) = rest.split_once(" totalpages: ") {
            match (leading_u64(id), leading_u64(pages)) {
                (Some((id, _)), Some((p, _))) => {
                    if id >= MAX_NUMNODES {
                        refuse(f, n, format!("node {id}: Linux numbers nodes below MAX_NUMNODES ({MAX_NUMNODES} at most)"));
                        return;
                    }
                    st.zone_node = id as u32;
                    f.node_pages.insert(id as u32, p);
                    f.last_node_line = n;
                }
                _ => bad(malformed),
            }
            return;
        }
    }
    if let Some(rest) = msg.strip_prefix("Initmem setup node ") {
        if let Some((id, _)) = leading_u64(rest) {
            if id < MAX_NUMNODES {
                st.zone_node = id as u32;
            }
        }
    }
    let t = msg.trim_start();
    if let Some(zone) = t.split_once(" zone: ").filter(|(z, _)| {
        !z.contains(' ')
            && matches!(
                *z,
                "DMA" | "DMA32" | "Normal" | "HighMem" | "Movable" | "Device"
            )
    }) {
        let (name, rest) = zone;
        let node = st.zone_node;
        let idx = match f
            .zones
            .iter()
            .position(|z| z.node == node && z.name == name)
        {
            Some(i) => i,
            None => {
                f.zones.push(ZoneLines {
                    node,
                    name: name.to_string(),
                    ..ZoneLines::default()
                });
                f.zones.len() - 1
            }
        };
        if let Some((v, r)) = leading_u64(rest) {
            let z = &mut f.zones[idx];
            if r.starts_with(" pages used for memmap") {
                z.memmap = v;
            } else if r.starts_with(" pages reserved") {
                z.reserved = v;
            } else if r.starts_with(" pages") {
                z.pages = Some(v);
            }
        }
        return;
    }
    if t.starts_with("node ") && t.contains(": [mem ") {
        match parse_node_range(t) {
            Some((id, a, b)) if b >= a => {
                if id >= MAX_NUMNODES {
                    refuse(f, n, format!("node {id}: Linux numbers nodes below MAX_NUMNODES ({MAX_NUMNODES} at most)"));
                    return;
                }
                let Some(len) = (b - a).checked_add(1) else {
                    refuse(f, n, format!("node {id}: the range {a:#x}-{b:#x} covers 2^64 bytes: no machine has that"));
                    return;
                };
                f.last_node_line = n;
                let e = f.node_ranges.entry(id as u32).or_insert(0);
                match e.checked_add(len) {
                    Some(s) => *e = s,
                    None => refuse(
                        f,
                        n,
                        format!("node {id}: its memory ranges add up past 2^64 bytes: no machine has that"),
                    ),
                }
            }
            _ => bad(malformed),
        }
        return;
    }
    if msg.starts_with("early_node_map") {
        st.in_pfn_map = true;
        return;
    }
    if st.in_pfn_map {
        match parse_pfn_range(msg) {
            Some((id, a, b)) if id < MAX_NUMNODES && b >= a => {
                let e = f.node_pfns.entry(id as u32).or_insert(0);
                *e = e.saturating_add(b - a);
                return;
            }
            _ => st.in_pfn_map = false,
        }
    }
    if msg.starts_with("Built ") && msg.contains(" zonelists") {
        let nodes = leading_u64(&msg["Built ".len()..]).map(|(n, _)| n);
        match (nodes, number_after(msg, "Total pages: ")) {
            (Some(z), Some(t)) => f.zonelists = Some((z, t, n)),
            _ => bad(malformed),
        }
        return;
    }
    if let Some(cl) = msg.strip_prefix("Kernel command line:") {
        f.cmdline = cl
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        return;
    }
    if let Some(rest) = msg.strip_prefix("numasim: ") {
        for w in rest.split_whitespace() {
            if let Some(v) = w.strip_prefix("kernel.max_order=") {
                f.max_order = v.parse().ok();
            } else if let Some(v) = w.strip_prefix("kernel.vmalloc_max_mb=") {
                f.vmalloc_max_mb = v.parse().ok();
            }
        }
        return;
    }
    // CPUs: the possible count first, then nr_cpu_ids, then online.
    let cpu_sources: [(&str, &'static str, u8); 8] = [
        ("Allowing ", "\"Allowing N CPUs\"", 0),
        ("nr_cpu_ids:", "setup_percpu's nr_cpu_ids", 1),
        (" CPUs=", "SLUB's CPUs=", 2),
        ("to nr_cpu_ids=", "RCU's nr_cpu_ids", 2),
        (
            "Partition configured for ",
            "\"Partition configured for N cpus\"",
            2,
        ),
        ("Brought up ", "\"Brought up N CPUs\"", 3),
        ("Total of ", "\"Total of N processors activated\"", 3),
        ("smp: Brought up ", "\"smp: Brought up … CPUs\"", 3),
    ];
    for (key, what, rank) in cpu_sources {
        if !msg.contains(key) {
            continue;
        }
        let v = if key == "smp: Brought up " || key == "Brought up " {
            msg.rsplit_once(", ")
                .map_or(msg, |(_, r)| r)
                .split_once(" CPU")
                .and_then(|(a, _)| leading_u64(a.rsplit(' ').next().unwrap_or(a)).map(|(n, _)| n))
                .or_else(|| number_after(msg, key))
        } else {
            number_after(msg, key)
        };
        let is_cpus = key != "Allowing " || msg.contains(" CPUs");
        if let (Some(v), true) = (v, is_cpus) {
            let better = f.cpus.is_none_or(|(_, w)| {
                let old = cpu_sources
                    .iter()
                    .find(|(_, x, _)| *x == w)
                    .map_or(9, |s| s.2);
                rank < old
            });
            if v > 0 && v <= crate::machine::MAX_CPUS && better {
                f.cpus = Some((v, what));
            }
        }
        break;
    }
    if let Some(rest) = msg.strip_prefix("smp: Brought up ") {
        if let Some((nodes, _)) =
            leading_u64(rest).filter(|(_, r)| r.trim_start().starts_with("node"))
        {
            f.online_nodes = Some(nodes);
        }
    }
    for (key, is_low) in [
        ("MB LOWMEM available", true),
        ("MB HIGHMEM available", false),
    ] {
        if let Some(i) = msg.find(key) {
            if let Some((mb, _)) = leading_u64(msg[..i].rsplit(' ').next().unwrap_or("")) {
                if is_low {
                    f.lowmem_mb = Some(mb);
                } else {
                    f.highmem_mb = Some(mb);
                }
            }
        }
    }
    if msg.contains("radix-mmu:") || msg.contains("Using radix MMU") {
        f.ppc_radix = Some(true);
    } else if msg.contains("hash-mmu:") || msg.contains("Using 1TB segments") {
        f.ppc_radix.get_or_insert(false);
    }
    for (needle, fam) in [
        ("x86/fpu:", Family::X86),
        ("BIOS-e820", Family::X86),
        ("BIOS-provided physical RAM map", Family::X86),
        ("smpboot: ", Family::X86),
        ("CPU features: detected", Family::Arm64),
        ("CPU: All CPU(s) started at EL", Family::Arm64),
        ("Booting Linux on physical CPU", Family::Arm),
        ("CPU: ARMv", Family::Bits32),
        ("PowerNV", Family::Ppc64),
        ("pSeries", Family::Ppc64),
        ("radix-mmu:", Family::Ppc64),
        ("hash-mmu:", Family::Ppc64),
        ("PowerMac", Family::Ppc64),
        ("SAL ", Family::Ia64),
        ("HIGHMEM available", Family::Bits32),
        ("LOWMEM available", Family::Bits32),
        ("HighMem zone", Family::Bits32),
        ("lowmem  : 0x", Family::Bits32),
    ] {
        if msg.contains(needle) && !f.markers.iter().any(|(_, m, _)| *m == needle) {
            f.markers.push((n, needle, fam));
        }
    }
}

// ------------------------------------------------------------ checking

/// Overrides a user gives where the log is silent.
#[derive(Debug, Clone, Default)]
pub struct Given {
    pub version: Option<String>,
    pub arch: Option<Arch>,
}

/// How one table line came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Entries, order, bytes and (where printed) kind all as predicted.
    Match,
    /// The fields that differ.
    Mismatch(Vec<&'static str>),
    /// A table numasim has no rule for.
    NotModelled,
    /// The release would print it, but the log does not (a trimmed log, or
    /// a kernel built without it).
    NotInLog,
    /// A prediction needs a fact the log lacks (named).
    NoPrediction(String),
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Match => "ok",
            Status::Mismatch(_) => "MISMATCH",
            Status::NotModelled => "not modelled",
            Status::NotInLog => "not in log",
            Status::NoPrediction(_) => "no prediction",
        }
    }
}

pub struct Row {
    pub label: String,
    pub real: Option<LogTable>,
    pub predicted: Option<Predicted>,
    pub status: Status,
}

/// How a check came out: the facts used, one row per table, and notes.
pub struct Check {
    pub name: String,
    pub lines: usize,
    /// (what, value and where it came from).
    pub facts: Vec<(&'static str, String)>,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
}

impl Check {
    /// Every table line the log prints was predicted, whole.
    pub fn all_matched(&self) -> bool {
        let real: Vec<&Row> = self.rows.iter().filter(|r| r.real.is_some()).collect();
        !real.is_empty() && real.iter().all(|r| r.status == Status::Match)
    }
    /// (matched, table lines in the log).
    pub fn tally(&self) -> (usize, usize) {
        let real = self.rows.iter().filter(|r| r.real.is_some());
        let n = real.clone().count();
        (real.filter(|r| r.status == Status::Match).count(), n)
    }
}

/// What the prediction is made from.
struct Inferred {
    release: Release,
    inputs: HashInputs,
}

/// Where a table line printed by a vendor or stable kernel ahead of its
/// base release first appears upstream: predicted with that release's rule.
fn upstream_with(label: &str) -> Option<(u32, u32, u32)> {
    Some(match label {
        "IP idents" => (5, 13, 0),
        "Table-perturb" => (5, 19, 0),
        "futex" => (3, 14, 0),
        "Mount-cache" | "Mountpoint-cache" => (3, 13, 0),
        "MPTCP token" => (5, 7, 0),
        "tcp_listen_portaddr_hash" => (4, 16, 0),
        "UDP" | "UDP-Lite" => (2, 6, 33),
        "PV qspinlock" => (4, 2, 0),
        _ => return None,
    })
}

/// Pages summed over the nodes, refused (at the last node line) past 2^64.
fn node_sum(f: &LogFacts, mut pages: impl Iterator<Item = u64>, what: &str) -> Result<u64, Error> {
    pages
        .try_fold(0u64, |s, p| s.checked_add(p))
        .ok_or_else(|| {
            err_at(
                f,
                f.last_node_line,
                format!("the nodes' {what} add up past 2^64 pages"),
            )
        })
}

fn err_at(f: &LogFacts, line: usize, msg: impl std::fmt::Display) -> Error {
    let at = if line == 0 {
        String::new()
    } else {
        format!("line {line}: ")
    };
    InputError::new(format!("{at}{msg}"))
        .in_file(f.name.clone())
        .into()
}

/// Memory as the kernel counts it: (nr_kernel_pages, nr_all_pages, max_pfn, source).
fn memory(
    f: &LogFacts,
    rules: &Rules,
    arch: Arch,
    ps: u32,
    notes: &mut Vec<String>,
) -> Result<Option<(u64, u64, u64, String)>, Error> {
    let page = 1u64 << ps;
    // Pages per node, present, from whichever lines the log has.
    let present: Option<(u64, usize, &str)> = if !f.node_pages.is_empty() {
        let s = node_sum(f, f.node_pages.values().copied(), "page counts")?;
        Some((s, 0, "\"On node N totalpages\""))
    } else if !f.node_ranges.is_empty() {
        let s = node_sum(f, f.node_ranges.values().map(|b| b / page), "ranges")?;
        Some((s, 0, "\"Early memory node ranges\""))
    } else if !f.node_pfns.is_empty() {
        Some((
            f.node_pfns.values().fold(0u64, |a, b| a.saturating_add(*b)),
            0,
            "early_node_map",
        ))
    } else if let Some((total, absent, _, line)) = f.memory_line {
        let kb = total.checked_sub(absent).ok_or_else(|| {
            err_at(
                f,
                line,
                "the `Memory:` line's absent memory exceeds its total",
            )
        })?;
        let bytes = kb
            .checked_mul(1024)
            .ok_or_else(|| err_at(f, line, "the `Memory:` line's total is past 2^64 bytes"))?;
        Some((bytes / page, line, "the `Memory:` line"))
    } else {
        None
    };
    // Highmem pages (32-bit), from zone lines, HIGHMEM available, or the Memory: line.
    let high_zone: u64 = f
        .zones
        .iter()
        .filter(|z| z.name == "HighMem")
        .filter_map(|z| z.pages)
        .sum();
    let high_memmap: u64 = f
        .zones
        .iter()
        .filter(|z| z.name == "HighMem")
        .map(|z| z.memmap)
        .sum();
    // Zone "N pages, LIFO batch" counts before (3.x on) or after (2.6.2x)
    // the memory map and reserve come off: tell by the node's total.
    let after_subtraction = f.node_pages.iter().any(|(node, total)| {
        let zs: Vec<&ZoneLines> = f.zones.iter().filter(|z| z.node == *node).collect();
        let pages: u64 = zs.iter().filter_map(|z| z.pages).sum();
        let off: u64 = zs.iter().map(|z| z.memmap + z.reserved).sum();
        off > 0 && pages + off == *total && pages != *total
    });
    let highmem = if high_zone > 0 {
        if after_subtraction {
            high_zone
        } else {
            high_zone.saturating_sub(high_memmap)
        }
    } else if let Some(mb) = f.highmem_mb {
        mb << (20 - ps.min(20))
    } else if let Some((_, _, h, _)) = f.memory_line {
        (h << 10) >> ps
    } else {
        0
    };
    let lowmem_limit = |all: u64| -> u64 {
        if arch.is_64bit() {
            all
        } else if highmem > 0 {
            all.saturating_sub(highmem)
        } else if let Some(mb) = f.lowmem_mb {
            all.min(mb << (20 - ps.min(20)))
        } else {
            arch.lowmem_bytes().map_or(all, |b| all.min(b >> ps))
        }
    };
    let max_pfn = present.map_or(0, |p| p.0);
    if let Some((pages, line, _)) = present {
        if pages.checked_mul(page).is_none() {
            let line = if line == 0 { f.last_node_line } else { line };
            return Err(err_at(
                f,
                line,
                format!(
                    "{pages} pages of {} is past 2^64 bytes: no machine has that",
                    format_size(page)
                ),
            ));
        }
    }
    if let Some((_, total, line)) = f.zonelists {
        if total.checked_mul(page).is_none() {
            return Err(err_at(
                f,
                line,
                format!(
                    "\"Total pages: {total}\" of {} is past 2^64 bytes: no machine has that",
                    format_size(page)
                ),
            ));
        }
        return Ok(Some((
            lowmem_limit(total),
            total,
            max_pfn.max(total),
            "\"Built N zonelists … Total pages\"".into(),
        )));
    }
    let Some((present, _, from)) = present else {
        return Ok(None);
    };
    // Zone lines with the memory map (2.6.20 on): exact.
    let with_memmap = f.zones.iter().any(|z| z.memmap > 0);
    if !f.zones.is_empty() && (with_memmap || !rules.counts_without_memmap()) {
        // A zone's pages as the kernel counts them once its memory map and
        // reserve are taken out.
        let usable = |z: &ZoneLines| {
            let p = z.pages.unwrap_or(0);
            if after_subtraction {
                p
            } else {
                p.saturating_sub(z.memmap + z.reserved)
            }
        };
        let low: u64 = f
            .zones
            .iter()
            .filter(|z| z.name != "HighMem")
            .map(usable)
            .sum();
        let all: u64 = f.zones.iter().map(usable).sum();
        if all > 0 {
            return Ok(Some((
                low,
                all,
                max_pfn,
                "the zone lines of \"On node N totalpages\"".into(),
            )));
        }
    }
    // Present pages less an estimated memory map.
    let memmap = if rules.counts_without_memmap() {
        let spb = if arch.is_64bit() { 64 } else { 32 };
        notes.push(format!(
            "memory from {from}: the memory map is estimated at {spb} bytes per page (no zone lines or zonelist total in the log)"
        ));
        present.saturating_mul(spb).div_ceil(page)
    } else {
        0
    };
    let all = present.saturating_sub(memmap);
    Ok(Some((lowmem_limit(all), all, max_pfn, from.to_string())))
}

fn infer(
    f: &LogFacts,
    given: &Given,
    notes: &mut Vec<String>,
    facts: &mut Vec<(&'static str, String)>,
) -> Result<Option<Inferred>, Error> {
    let Some(version) = given.version.clone().or_else(|| f.version.clone()) else {
        notes.push(
            "no `Linux version` line: the kernel release is unknown; give --kernel-version".into(),
        );
        return Ok(None);
    };
    let Some(mut release) = Release::parse(&version) else {
        notes.push(format!(
            "cannot read the release \"{version}\" (expected major.minor…, e.g. 5.4.0-42-generic); give --kernel-version"
        ));
        return Ok(None);
    };
    if let Some(l) = &f.version_line {
        if given.version.is_none() {
            release = release.with_upstream_hint(l);
        }
    }
    let rules = Rules::of(&release);
    facts.push((
        "kernel",
        format!("{} ({})", release.raw, release.describe()),
    ));
    if f.boots > 1 {
        notes.push(format!(
            "the log holds {} boots; the last is checked",
            f.boots
        ));
    }
    // Architecture: the release suffix, else the marker lines, with the
    // pointer size from the dentry/inode buckets deciding 32/64-bit.
    let bucket = f
        .tables
        .iter()
        .filter(|t| matches!(t.label.as_str(), "Dentry cache" | "Inode-cache"))
        .find_map(|t| t.bytes.map(|b| b / t.entries));
    let has = |fam: Family| f.markers.iter().find(|(_, _, x)| *x == fam);
    let (arch, from) = if let Some(a) = given.arch {
        (a, "--arch".to_string())
    } else if let Some(a) = f.version.as_deref().and_then(arch_in_release) {
        (a, "the `Linux version` release string".to_string())
    } else {
        let bits32 = bucket == Some(4) || (bucket != Some(8) && has(Family::Bits32).is_some());
        let (fam, why) = if let Some((l, m, _)) = has(Family::Ppc64) {
            (Family::Ppc64, format!("line {l} (\"{m}\")"))
        } else if let Some((l, m, _)) = has(Family::Ia64) {
            (Family::Ia64, format!("line {l} (\"{m}\")"))
        } else if let Some((l, m, _)) = has(Family::Arm64)
            .or(has(Family::Arm))
            .or(f.markers.iter().find(|(_, m, _)| *m == "CPU: ARMv"))
        {
            let arm64 = has(Family::Arm64).is_some() || bucket == Some(8);
            (
                if arm64 { Family::Arm64 } else { Family::Arm },
                format!("line {l} (\"{m}\")"),
            )
        } else if let Some((l, m, _)) = has(Family::X86).or(has(Family::Bits32)) {
            (Family::X86, format!("line {l} (\"{m}\")"))
        } else {
            notes.push("the log does not say the architecture (no release suffix or arch-only line); give --arch".into());
            return Ok(None);
        };
        let a = match fam {
            Family::Ppc64 => Arch::Ppc64le,
            Family::Ia64 => Arch::Ia64,
            Family::Arm64 => Arch::Aarch64,
            Family::Arm => {
                if bits32 {
                    Arch::Arm
                } else {
                    Arch::Aarch64
                }
            }
            _ => {
                if bits32 {
                    Arch::I386
                } else {
                    Arch::X86_64
                }
            }
        };
        let width = match bucket {
            Some(b) => format!(", {}-bit from the {b}-byte dentry buckets", b * 8),
            None if bits32 => ", 32-bit from a highmem/lowmem or ARMv7 line".to_string(),
            None => String::new(),
        };
        if fam == Family::Ppc64 {
            notes.push("POWER endianness is not in the log: taken as little-endian (the tables are sized alike)".into());
        }
        (a, format!("{why}{width}"))
    };
    // Page size: log2(bytes) - order of the table lines whose order is a
    // page order and whose size is a power of two. A table of another size
    // (MPTCP token, 5.7+: 786432 bytes) prints `ilog2(size) - PAGE_SHIFT`
    // in older kernels and the rounded-up get_order(size) in newer ones
    // (order 8 in a 6.18 log), so it cannot tell the page size: read as
    // ilog2 it implied 2 KiB pages and refused every such x86_64 log.
    let mut shifts = BTreeSet::new();
    for t in &f.tables {
        if t.label == "PID" || t.format == Some(LineFormat::OrderColon) {
            continue;
        }
        if let (Some(o), Some(b)) = (t.order, t.bytes.filter(|b| b.is_power_of_two())) {
            let s = b.ilog2() as i64 - o;
            if (10..=20).contains(&s) {
                shifts.insert(s as u32);
            }
        }
    }
    let default_ps = match arch {
        Arch::Ppc64le | Arch::Ppc64 => 16,
        Arch::Ia64 => 14,
        Arch::Alpha => 13,
        _ => 12,
    };
    let (ps, ps_from) = match shifts.iter().next() {
        Some(&s) => (s, "the table lines"),
        None => (default_ps, "the arch's usual size (no table line shows it)"),
    };
    if shifts.len() > 1 {
        notes.push(format!("the table lines imply different page sizes ({shifts:?} as shifts): the smallest is used"));
    }
    if !arch.page_sizes().contains(&(1 << ps)) {
        notes.push(format!(
            "the table lines imply {} pages, which {} does not have; check --arch",
            format_size(1 << ps),
            arch.name()
        ));
        return Ok(None);
    }
    facts.push((
        "arch",
        format!(
            "{} (from {from}), {} pages (from {ps_from})",
            arch.name(),
            format_size(1 << ps)
        ),
    ));
    let Some((kernel_pages, all_pages, max_pfn, mem_from)) = memory(f, &rules, arch, ps, notes)?
    else {
        notes.push("the log has no memory lines (zonelist \"Total pages\", node ranges, \"On node N totalpages\" or `Memory:`): cannot size the tables".into());
        return Ok(None);
    };
    if all_pages == 0 {
        notes.push("the log's memory lines add up to no memory: cannot size the tables".into());
        return Ok(None);
    }
    facts.push((
        "memory",
        format!("{kernel_pages} kernel pages, {all_pages} in all (from {mem_from})"),
    ));
    let mut inputs = HashInputs::new(arch, ps, all_pages);
    inputs.kernel_pages = kernel_pages;
    inputs.all_pages = all_pages;
    inputs.max_pfn = max_pfn.max(all_pages);
    let mut node_ids: BTreeSet<u32> = BTreeSet::new();
    node_ids.extend(
        f.node_ranges
            .iter()
            .filter(|(_, b)| **b > 0)
            .map(|(n, _)| *n),
    );
    node_ids.extend(
        f.node_pages
            .iter()
            .filter(|(_, p)| **p > 0)
            .map(|(n, _)| *n),
    );
    node_ids.extend(f.node_pfns.iter().filter(|(_, p)| **p > 0).map(|(n, _)| *n));
    inputs.memory_nodes = (node_ids.len() as u64).max(1);
    inputs.online_nodes = f
        .online_nodes
        .or(f.zonelists.map(|z| z.0))
        .unwrap_or(inputs.memory_nodes)
        .max(inputs.memory_nodes);
    let cpus = f.cpus;
    if let Some((c, _)) = cpus {
        inputs.possible_cpus = c;
    }
    facts.push((
        "cpus, nodes",
        format!(
            "{}, {} node(s) with memory, {} online",
            cpus.map_or("no CPU count in the log".to_string(), |(c, w)| format!(
                "{c} possible CPUs (from {w})"
            )),
            inputs.memory_nodes,
            inputs.online_nodes
        ),
    ));
    for (k, v) in &f.cmdline {
        let num = || -> Option<u64> {
            match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => v.parse().ok(),
            }
        };
        match k.as_str() {
            "hashdist" => match num() {
                Some(x) => inputs.hashdist_param = Some(x != 0),
                None => notes.push(format!("command line hashdist={v}: not a number, ignored")),
            },
            "thash_entries" | "dhash_entries" | "ihash_entries" | "uhash_entries"
            | "rhash_entries" | "mhash_entries" | "mphash_entries" => {
                let Some(x) = num() else {
                    notes.push(format!("command line {k}={v}: not a number, ignored"));
                    continue;
                };
                let slot = match k.as_str() {
                    "thash_entries" => &mut inputs.thash_entries,
                    "dhash_entries" => &mut inputs.dhash_entries,
                    "ihash_entries" => &mut inputs.ihash_entries,
                    "uhash_entries" => &mut inputs.uhash_entries,
                    "rhash_entries" => &mut inputs.rhash_entries,
                    "mhash_entries" => &mut inputs.mhash_entries,
                    _ => &mut inputs.mphash_entries,
                };
                *slot = x;
            }
            _ => {}
        }
    }
    inputs.max_order = f.max_order.unwrap_or(inputs.max_order);
    inputs.vmalloc_limit = f
        .vmalloc_max_mb
        .and_then(|mb| mb.checked_mul(1 << 20))
        .unwrap_or(default_vmalloc_max(arch));
    if let Some(r) = f.ppc_radix {
        inputs.ppc_radix = r;
    }
    let hd = hashdist(&rules, &inputs);
    facts.push((
        "hashdist",
        format!(
            "{} ({})",
            u8::from(hd),
            if inputs.hashdist_param.is_some() {
                "the command line"
            } else if rules.single_node_hashdist_off()
                && inputs.memory_nodes <= 1
                && arch.is_64bit()
            {
                "the release's default, off with one memory node (5.3+)"
            } else {
                "the release's default"
            }
        ),
    ));
    Ok(Some(Inferred { release, inputs }))
}

fn compare(real: &LogTable, p: &Predicted) -> Status {
    let mut diff = Vec::new();
    if real.entries != p.entries {
        diff.push("entries");
    }
    // The entries-only mount line prints nothing else to compare.
    if real.format != Some(LineFormat::EntriesOnly) || p.format != LineFormat::EntriesOnly {
        if real.order != Some(p.order) {
            diff.push("order");
        }
        if real.bytes != Some(p.bytes) {
            diff.push("bytes");
        }
        if real.kind.as_deref() != p.kind {
            diff.push("kind");
        }
    }
    if diff.is_empty() {
        Status::Match
    } else {
        Status::Mismatch(diff)
    }
}

/// Predict the tables of the machine `facts` describe and set them beside
/// the log's. Missing facts end in notes; input no kernel prints (node ids
/// past `MAX_NUMNODES`, ranges past 2^64) is refused naming the log and line.
pub fn check(facts: &LogFacts, given: &Given) -> Result<Check, Error> {
    if let Some((line, msg)) = &facts.refused {
        return Err(err_at(facts, *line, msg));
    }
    let mut notes = Vec::new();
    let mut fact_lines = Vec::new();
    if !facts.malformed.is_empty() {
        let first = &facts.malformed[0];
        notes.push(format!(
            "{} line(s) that look like a table or memory line but do not parse, skipped (first: {}:{}: \"{}\")",
            facts.malformed.len(),
            facts.name,
            first.0,
            first.1.chars().take(80).collect::<String>()
        ));
    }
    let inferred = infer(facts, given, &mut notes, &mut fact_lines)?;
    let predicted: Vec<Predicted> = match &inferred {
        Some(i) => predict(&i.release, &i.inputs),
        None => Vec::new(),
    };
    let needs_cpus = |l: &str| matches!(l, "futex" | "PV qspinlock");
    let mut rows = Vec::new();
    let mut used = BTreeSet::new();
    // The last line of each table (a log may repeat one).
    let mut seen = BTreeSet::new();
    let mut reals: Vec<&LogTable> = facts
        .tables
        .iter()
        .rev()
        .filter(|t| seen.insert(t.label.clone()))
        .collect();
    reals.reverse();
    for t in reals {
        let row = |status, predicted| Row {
            label: t.label.clone(),
            real: Some(t.clone()),
            predicted,
            status,
        };
        let Some(inf) = &inferred else {
            rows.push(row(Status::NoPrediction("see the notes".into()), None));
            continue;
        };
        if t.format.is_none() {
            notes.push(format!(
                "{}:{}: \"{}\" prints its size in a form numasim does not read",
                facts.name, t.line, t.label
            ));
            rows.push(row(Status::NotModelled, None));
            continue;
        }
        if needs_cpus(&t.label) && facts.cpus.is_none() {
            rows.push(row(
                Status::NoPrediction(
                    "the log gives no CPU count (\"Allowing N CPUs\", nr_cpu_ids, SLUB CPUs=)"
                        .into(),
                ),
                None,
            ));
            continue;
        }
        let mut p = predicted.iter().find(|p| p.label == t.label).cloned();
        // A vendor or stable kernel printing a table (or its newer form)
        // ahead of its base release: the upstream rule, noted.
        let newer_form = p.as_ref().is_some_and(|p| {
            p.format == LineFormat::EntriesOnly
                && t.format == Some(LineFormat::Alsh)
                && t.label == "Mount-cache"
        });
        if p.is_none() || newer_form {
            if let Some((a, b, c)) = upstream_with(&t.label) {
                if !inf.release.at_least(a, b, c) {
                    let up = Release {
                        raw: format!("{a}.{b}.{c}"),
                        major: a,
                        minor: b,
                        sublevel: c,
                        vendor: Vendor::Upstream,
                    };
                    let rules = Rules::of(&inf.release);
                    p = predict(&up, &inf.inputs)
                        .into_iter()
                        .find(|q| q.label == t.label)
                        .map(|mut q| {
                            if !rules.prints_kind() {
                                q.kind = None;
                            }
                            q.why = format!(
                                "{} (as upstream {a}.{b} sizes it: a backport to {})",
                                q.why, inf.release.raw
                            );
                            q
                        });
                }
            }
        }
        match p {
            Some(p) => {
                used.insert(p.label);
                rows.push(row(compare(t, &p), Some(p)));
            }
            None => rows.push(row(Status::NotModelled, None)),
        }
    }
    if let Some(inf) = &inferred {
        for p in &predicted {
            let unknowable = needs_cpus(p.label) && facts.cpus.is_none();
            if !used.contains(p.label)
                && !p.optional
                && !unknowable
                && !rows.iter().any(|r| r.label == p.label)
            {
                rows.push(Row {
                    label: p.label.to_string(),
                    real: None,
                    predicted: Some(p.clone()),
                    status: Status::NotInLog,
                });
            }
        }
        let missing: Vec<&str> = rows
            .iter()
            .filter(|r| r.status == Status::NotInLog)
            .map(|r| r.label.as_str())
            .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "{} prints {} too; the log has no such line (trimmed, or the kernel was built without it)",
                inf.release.raw,
                missing.join(", ")
            ));
        }
    }
    let unmodelled: Vec<&str> = rows
        .iter()
        .filter(|r| r.status == Status::NotModelled)
        .map(|r| r.label.as_str())
        .collect();
    if !unmodelled.is_empty() {
        notes.push(format!(
            "tables in the log numasim does not model: {}",
            unmodelled.join(", ")
        ));
    }
    Ok(Check {
        name: facts.name.clone(),
        lines: facts.lines,
        facts: fact_lines,
        rows,
        notes,
    })
}

fn cell(t: Option<(Option<u64>, Option<i64>, Option<u64>, Option<&str>)>) -> String {
    match t {
        None => format!("{:>10} {:>5} {:>11} {:<16}", "-", "-", "-", ""),
        Some((e, o, b, k)) => format!(
            "{:>10} {:>5} {:>11} {:<16}",
            e.map_or("-".into(), |v| v.to_string()),
            o.map_or("-".into(), |v| v.to_string()),
            b.map_or("-".into(), |v| v.to_string()),
            k.unwrap_or("-")
        ),
    }
}

/// The check as a table: one line per table, real and predicted side by side.
pub fn render_check(c: &Check) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}: {} lines", c.name, c.lines);
    for (k, v) in &c.facts {
        let _ = writeln!(s, "{k:<12} {v}");
    }
    if !c.rows.is_empty() {
        let _ = writeln!(
            s,
            "{:<26} {:<45} {:<45} result",
            "",
            "------------------ real -------------------",
            "--------------- predicted -----------------"
        );
        let _ = writeln!(
            s,
            "{:<26} {:>10} {:>5} {:>11} {:<16} {:>10} {:>5} {:>11} {:<16} ",
            "table", "entries", "order", "bytes", "kind", "entries", "order", "bytes", "kind"
        );
        for r in &c.rows {
            let real = r
                .real
                .as_ref()
                .map(|t| (Some(t.entries), t.order, t.bytes, t.kind.as_deref()));
            let pred = r
                .predicted
                .as_ref()
                .map(|p| (Some(p.entries), Some(p.order), Some(p.bytes), p.kind));
            let result = match &r.status {
                Status::Mismatch(d) => format!("MISMATCH: {}", d.join(", ")),
                Status::NoPrediction(why) => format!("no prediction: {why}"),
                st => st.word().to_string(),
            };
            let _ = writeln!(
                s,
                "{:<26} {} {} {}",
                r.label,
                cell(real),
                cell(pred),
                result
            );
        }
        let (m, n) = c.tally();
        let _ = writeln!(
            s,
            "{m} of {n} table lines match whole (entries, order, bytes, kind)"
        );
    }
    for n in &c.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The check as JSON lines: the facts, one object per table, the notes, a summary.
pub fn render_check_jsonl(c: &Check) -> String {
    use serde_json::json;
    let mut s = String::new();
    let facts: serde_json::Map<String, serde_json::Value> = c
        .facts
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let _ = writeln!(
        s,
        "{}",
        json!({"type": "facts", "file": c.name, "lines": c.lines, "facts": facts})
    );
    for r in &c.rows {
        let real = r.real.as_ref().map(|t| json!({"entries": t.entries, "order": t.order, "bytes": t.bytes, "kind": t.kind, "line": t.line}));
        let pred = r.predicted.as_ref().map(|p| json!({"entries": p.entries, "order": p.order, "bytes": p.bytes, "kind": p.kind, "why": p.why}));
        let mismatch: Vec<&str> = match &r.status {
            Status::Mismatch(d) => d.clone(),
            _ => Vec::new(),
        };
        let why = match &r.status {
            Status::NoPrediction(w) => Some(w.clone()),
            _ => None,
        };
        let _ = writeln!(
            s,
            "{}",
            json!({"type": "table", "table": r.label, "real": real, "predicted": pred, "result": r.status.word(), "mismatch": mismatch, "reason": why})
        );
    }
    for n in &c.notes {
        let _ = writeln!(s, "{}", json!({"type": "note", "text": n}));
    }
    let (m, n) = c.tally();
    let _ = writeln!(
        s,
        "{}",
        json!({"type": "summary", "matched": m, "table_lines": n, "all_matched": c.all_matched()})
    );
    s
}
