//! The boot-time hash tables as `dmesg` shows them: print a booted model in
//! the kernel's own format for its release (`numasim dmesg`), and read a
//! real `dmesg` or `journalctl -k` back to predict the same tables from the
//! facts the log states (`numasim bootlog FILE`). docs/placement.md, "Boot
//! logs", lists the lines read and the format strings by release.

use crate::error::{Error, InputError};
use crate::kernel::boot::{boot, BootHash, Booted};
use crate::kernel::config::{default_config_numa, mem_nodes, IlNext, KernelConfig};
use crate::kernel::era::{Era, PrintStyle};
use crate::machine::{Arch, Machine};
use crate::scenario::size::format_size;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One table line: `%s hash table entries: %ld (order: %d, %lu bytes[, %s])`.
pub fn hash_line(
    era: Era,
    label: &str,
    entries: u64,
    order: i64,
    bytes: u64,
    kind: &str,
) -> String {
    match era.print_style() {
        PrintStyle::Plain => {
            format!("{label} hash table entries: {entries} (order: {order}, {bytes} bytes)")
        }
        PrintStyle::KindHuge => {
            format!("{label} hash table entries: {entries} (order: {order}, {bytes} bytes, {kind})")
        }
    }
}

/// What the kernel prints after "bytes, ": `linear`, `vmalloc` or
/// `vmalloc hugepage`.
fn kind_of(h: &BootHash, era: Era, machine: &Machine) -> &'static str {
    if !h.vmalloc() {
        "linear"
    } else if era.huge_vmalloc(machine.arch, machine.page_size, h.bytes()) {
        "vmalloc hugepage"
    } else {
        "vmalloc"
    }
}

/// A uname-like release string carrying the architecture, as distribution
/// kernels' `Linux version` lines do ("5.4.0-numasim.x86_64").
fn release_string(era: Era, arch: Arch) -> String {
    let base = match era {
        Era::V2_6_9 | Era::V2_6_32 => era.name().to_string(),
        e => format!("{}.0", e.name()),
    };
    format!("{base}-numasim.{}", arch.name())
}

/// The boot lines a kernel of `cfg.version` prints for `booted`, with the
/// memory, node and command-line lines `bootlog` reads back.
pub fn render(machine: &Machine, cfg: &KernelConfig, booted: &Booted) -> String {
    let era = cfg.version;
    let mut out = String::new();
    let mut line = |s: String| {
        let _ = writeln!(out, "[    0.000000] {s}");
    };
    line(format!(
        "Linux version {} (numasim prediction for `{}`)",
        release_string(era, machine.arch),
        machine.name
    ));
    // Boot parameters that differ from this release's defaults.
    let mut params = Vec::new();
    let numa = default_config_numa(machine, era);
    if cfg.hashdist != era.hashdist_default(machine.arch, numa, mem_nodes(machine)) {
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
    // Node memory: the "Early memory node ranges" block (3.x on), or
    // free_area_init_node()'s "On node N totalpages" (2.6).
    let ps = machine.page_size;
    if era >= Era::V4_15 {
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
    }
    let total_kb: u64 = machine
        .nodes
        .iter()
        .map(|n| n.mem_bytes / ps * ps)
        .sum::<u64>()
        >> 10;
    let free_kb: u64 = booted.mm.nodes().iter().map(|n| n.free).sum::<u64>() * (ps >> 10);
    let reserved = total_kb.saturating_sub(free_kb);
    line(if era >= Era::V4_15 {
        format!("Memory: {free_kb}K/{total_kb}K available (0K kernel code, 0K rwdata, 0K rodata, 0K init, 0K bss, {reserved}K reserved, 0K cma-reserved)")
    } else {
        format!("Memory: {free_kb}k/{total_kb}k available (0k kernel code, 0k absent, {reserved}k reserved, 0k data, 0k init)")
    });
    for name in ["dentry", "inode", "tcp_ehash", "tcp_bhash"] {
        let Some(h) = booted.hash(name) else { continue };
        line(hash_line(
            era,
            h.label,
            h.entries,
            h.order(ps),
            h.bytes(),
            kind_of(h, era, machine),
        ));
    }
    if let (Some(e), Some(b)) = (booted.hash("tcp_ehash"), booted.hash("tcp_bhash")) {
        line(format!(
            "TCP: Hash tables configured (established {} bind {})",
            e.entries, b.entries
        ));
    }
    out
}

/// A table line read from a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTable {
    pub label: String,
    pub entries: u64,
    pub order: i64,
    pub bytes: u64,
    /// `linear`, `vmalloc`, `vmalloc hugepage`; None in logs before 5.x.
    pub kind: Option<String>,
}

/// What a boot log says about the machine and its tables.
#[derive(Debug, Clone, Default)]
pub struct LogFacts {
    /// The release token of `Linux version` ("5.4.0-150-generic").
    pub version: Option<String>,
    pub arch: Option<Arch>,
    /// Why the architecture was taken to be what it is.
    pub arch_from: Option<String>,
    /// `PAGE_SHIFT` as the table lines imply it (ilog2(bytes) - order).
    pub page_shift: Option<u32>,
    /// Bytes per node from "Early memory node ranges" lines.
    pub node_ranges: BTreeMap<u32, u64>,
    /// Pages per node from "On node N totalpages" lines.
    pub node_pages: BTreeMap<u32, u64>,
    /// Physical memory from the `Memory:` line (less `absent`), bytes.
    pub memory_line: Option<u64>,
    /// `key=value` words of the command line.
    pub cmdline: Vec<(String, String)>,
    pub tables: Vec<LogTable>,
    pub lines: usize,
    /// Lines that looked like a table or memory line but did not parse.
    pub malformed: Vec<(usize, String)>,
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

fn parse_hash_line(msg: &str) -> Option<LogTable> {
    let (label, rest) = msg.split_once(" hash table entries: ")?;
    let (entries, rest) = rest.split_once(" (order: ")?;
    let (order, rest) = rest.split_once(", ")?;
    let (bytes, rest) = rest.split_once(" bytes")?;
    let kind = match rest.trim_end() {
        ")" => None,
        k => Some(k.strip_prefix(", ")?.strip_suffix(')')?.to_string()),
    };
    let t = LogTable {
        label: label.trim().to_string(),
        entries: entries.trim().parse().ok()?,
        order: order.trim().parse().ok()?,
        bytes: bytes.trim().parse().ok()?,
        kind,
    };
    // A table is a power-of-two count of buckets of a few words; anything
    // else is a mangled line, not a kernel's.
    if t.label.is_empty() || t.entries == 0 || !t.entries.is_power_of_two() || t.bytes == 0 {
        return None;
    }
    if !t.bytes.is_multiple_of(t.entries) || !(t.bytes / t.entries).is_power_of_two() {
        return None;
    }
    let shift = t.bytes.ilog2() as i64 - t.order;
    (10..=20).contains(&shift).then_some(t)
}

/// `Memory: 16318940K/16645564K available (… 123k absent …)`: the second
/// figure less `absent` is the physical memory present, bytes.
fn parse_memory_line(msg: &str) -> Option<u64> {
    let rest = msg.strip_prefix("Memory: ")?;
    let (_, rest) = rest.split_once('/')?;
    let (total, rest) = rest.split_once(['k', 'K'])?;
    let total: u64 = total.trim().parse().ok()?;
    let absent = rest
        .split([',', '('])
        .find_map(|w| w.trim().strip_suffix(" absent"))
        .and_then(|a| a.trim_end_matches(['k', 'K']).parse::<u64>().ok())
        .unwrap_or(0);
    Some(total.checked_sub(absent)? << 10)
}

/// `  node   0: [mem 0x0000000000001000-0x000000000009efff]`
fn parse_node_range(msg: &str) -> Option<(u32, u64)> {
    let rest = msg.trim_start().strip_prefix("node ")?;
    let (id, rest) = rest.split_once(':')?;
    let range = rest.trim().strip_prefix("[mem ")?.strip_suffix(']')?;
    let (a, b) = range.split_once('-')?;
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok();
    let (a, b) = (hex(a)?, hex(b)?);
    Some((id.trim().parse().ok()?, b.checked_sub(a)? + 1))
}

/// `On node 0 totalpages: 4194153`
fn parse_totalpages(msg: &str) -> Option<(u32, u64)> {
    let rest = msg.strip_prefix("On node ")?;
    let (id, pages) = rest.split_once(" totalpages: ")?;
    Some((id.trim().parse().ok()?, pages.trim().parse().ok()?))
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
        ("ia64", Arch::Ia64),
        ("i686", Arch::I386),
        ("i586", Arch::I386),
        ("i386", Arch::I386),
        ("armv7", Arch::Arm),
        ("alpha", Arch::Alpha),
        ("ppc32", Arch::Ppc32),
    ]
    .into_iter()
    .find(|(k, _)| v.contains(k))
    .map(|(_, a)| a)
}

/// Read a boot log. Never fails: what it cannot read is counted.
pub fn parse_log(text: &str) -> LogFacts {
    let mut f = LogFacts::default();
    let mut markers: Vec<(&str, Arch)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        f.lines += 1;
        let msg = message(raw);
        if let Some(rest) = msg.strip_prefix("Linux version ") {
            if f.version.is_none() {
                f.version = rest.split_whitespace().next().map(str::to_string);
            }
        } else if msg.contains(" hash table entries: ") {
            match parse_hash_line(msg) {
                Some(t) => f.tables.push(t),
                None => f.malformed.push((i + 1, msg.to_string())),
            }
        } else if msg.starts_with("Memory: ") && msg.contains("available") {
            match parse_memory_line(msg) {
                Some(b) => f.memory_line = Some(b),
                None => f.malformed.push((i + 1, msg.to_string())),
            }
        } else if msg.starts_with("On node ") && msg.contains(" totalpages: ") {
            match parse_totalpages(msg) {
                Some((n, p)) => {
                    f.node_pages.insert(n, p);
                }
                None => f.malformed.push((i + 1, msg.to_string())),
            }
        } else if msg.trim_start().starts_with("node ") && msg.contains(": [mem ") {
            match parse_node_range(msg) {
                Some((n, b)) => *f.node_ranges.entry(n).or_insert(0) += b,
                None => f.malformed.push((i + 1, msg.to_string())),
            }
        } else if let Some(cl) = msg.strip_prefix("Kernel command line: ") {
            f.cmdline = cl
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        }
        // Messages only one architecture's kernel prints.
        for (needle, arch) in [
            ("x86/fpu:", Arch::X86_64),
            ("BIOS-e820:", Arch::X86_64),
            ("HIGHMEM available", Arch::I386),
            ("CPU: ARMv7", Arch::Arm),
            ("Booting Linux on physical CPU", Arch::Aarch64),
            ("PowerNV", Arch::Ppc64le),
            ("pSeries", Arch::Ppc64le),
            ("radix-mmu:", Arch::Ppc64le),
            ("hash-mmu:", Arch::Ppc64le),
        ] {
            if msg.contains(needle) && !markers.iter().any(|(n, _)| *n == needle) {
                markers.push((needle, arch));
            }
        }
    }
    if let Some(a) = f.version.as_deref().and_then(arch_in_release) {
        f.arch = Some(a);
        f.arch_from = Some("the `Linux version` release string".into());
    } else if !markers.is_empty() {
        // A 32-bit kernel prints the 64-bit family's markers too: the
        // 32-bit marker decides (HIGHMEM on x86, ARMv7 on ARM).
        let pick = markers
            .iter()
            .find(|(_, a)| matches!(a, Arch::I386 | Arch::Arm))
            .or(markers.first())
            .copied();
        if let Some((needle, a)) = pick {
            f.arch = Some(a);
            f.arch_from = Some(format!("the line \"{needle}\""));
        }
    }
    let shifts: Vec<u32> = f
        .tables
        .iter()
        .map(|t| (t.bytes.ilog2() as i64 - t.order) as u32)
        .collect();
    f.page_shift = shifts.first().copied();
    f
}

/// How a check came out: the facts used, the rows, and notes.
pub struct Check {
    pub header: Vec<String>,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
}

pub struct Row {
    pub label: String,
    pub real: Option<LogTable>,
    pub predicted: Option<LogTable>,
}

/// Overrides a user gives where the log is silent.
#[derive(Debug, Clone, Default)]
pub struct Given {
    pub version: Option<String>,
    pub arch: Option<Arch>,
}

/// Predict the tables of the machine `facts` describe and set them beside
/// the log's. Missing facts end in notes, not errors: a log that cannot
/// be checked says why.
pub fn check(facts: &LogFacts, given: &Given) -> Result<Check, Error> {
    let mut notes = Vec::new();
    let mut header = Vec::new();
    if !facts.malformed.is_empty() {
        let first = &facts.malformed[0];
        notes.push(format!(
            "{} malformed line(s) skipped (first: line {}: \"{}\")",
            facts.malformed.len(),
            first.0,
            first.1.chars().take(80).collect::<String>()
        ));
    }
    let empty = |notes: Vec<String>, header: Vec<String>| Check {
        header,
        rows: Vec::new(),
        notes,
    };
    let version = match given.version.as_ref().or(facts.version.as_ref()) {
        Some(v) => v.clone(),
        None => {
            notes.push(
                "no `Linux version` line: the kernel release is unknown; give --kernel-version"
                    .into(),
            );
            return Ok(empty(notes, header));
        }
    };
    let era = match Era::nearest(&version) {
        Ok((e, exact)) => {
            if !exact {
                notes.push(format!(
                    "release {version} is not modelled; predicting with the formulas of {}, the nearest older modelled release",
                    e.name()
                ));
            }
            e
        }
        Err(e) => {
            notes.push(format!(
                "cannot read the release: {e}; give --kernel-version"
            ));
            return Ok(empty(notes, header));
        }
    };
    let (arch, arch_from) = match (given.arch, facts.arch) {
        (Some(a), _) => (a, "--arch".to_string()),
        (None, Some(a)) => (a, facts.arch_from.clone().unwrap_or_default()),
        (None, None) => {
            notes.push("the log does not say the architecture (no release suffix or arch-only line); give --arch".into());
            return Ok(empty(notes, header));
        }
    };
    let page_size = match facts.page_shift {
        Some(s) => 1u64 << s,
        None => arch.page_sizes()[if arch == Arch::Ppc64le { 1 } else { 0 }],
    };
    if !arch.page_sizes().contains(&page_size) {
        notes.push(format!(
            "the table lines imply {} pages, which {} does not have; check --arch",
            format_size(page_size),
            arch.name()
        ));
        return Ok(empty(notes, header));
    }
    // Node memory: ranges, else totalpages, else the Memory: line on one node.
    let (nodes, from): (Vec<u64>, &str) = if !facts.node_ranges.is_empty() {
        (
            per_node(&facts.node_ranges, 1),
            "\"Early memory node ranges\"",
        )
    } else if !facts.node_pages.is_empty() {
        (
            per_node(&facts.node_pages, page_size),
            "\"On node N totalpages\"",
        )
    } else if let Some(b) = facts.memory_line {
        notes.push("no per-node memory lines: assumed one node".into());
        (vec![b], "the `Memory:` line")
    } else {
        notes.push("the log has no memory lines (`Memory:`, node ranges or totalpages): cannot size the tables".into());
        return Ok(empty(notes, header));
    };
    let nodes: Vec<u64> = nodes.iter().map(|b| b / page_size * page_size).collect();
    let machine = log_machine(arch, page_size, &nodes).map_err(Error::Input)?;
    let mut cfg = KernelConfig::defaults_for(&machine, era);
    cfg.initcall_il_next = IlNext::At(0);
    for (k, v) in &facts.cmdline {
        let n = || v.parse::<u64>().ok();
        match k.as_str() {
            "hashdist" => match n() {
                Some(x) => cfg.hashdist = x != 0,
                None => notes.push(format!("command line hashdist={v}: not a number, ignored")),
            },
            "thash_entries" | "dhash_entries" | "ihash_entries" => match n() {
                Some(x) if x <= crate::kernel::config::MAX_HASH_ENTRIES => match k.as_str() {
                    "thash_entries" => cfg.thash_entries = x,
                    "dhash_entries" => cfg.dhash_entries = x,
                    _ => cfg.ihash_entries = x,
                },
                _ => notes.push(format!(
                    "command line {k}={v}: not a count the kernel takes, ignored"
                )),
            },
            _ => {}
        }
    }
    let booted = boot(&machine, &cfg, 0)?;
    let total: u64 = nodes.iter().sum();
    header.push(format!(
        "kernel {version} (formulas of {}), {} ({arch_from}), {} pages, {} node(s), {} (from {from}), hashdist={}",
        era.name(),
        arch.name(),
        format_size(page_size),
        nodes.len(),
        format_size(total),
        u8::from(cfg.hashdist)
    ));
    let mut rows = Vec::new();
    for name in ["dentry", "inode", "tcp_ehash", "tcp_bhash"] {
        let Some(h) = booted.hash(name) else { continue };
        let pred = LogTable {
            label: h.label.to_string(),
            entries: h.entries,
            order: h.order(page_size),
            bytes: h.bytes(),
            kind: Some(kind_of(h, era, &machine).to_string()),
        };
        let real = facts
            .tables
            .iter()
            .rev()
            .find(|t| t.label == h.label)
            .cloned();
        if real.is_none() {
            notes.push(format!("the log has no \"{}\" line", h.label));
        }
        rows.push(Row {
            label: h.label.to_string(),
            real,
            predicted: Some(pred),
        });
    }
    let mut unmodelled: Vec<&str> = facts
        .tables
        .iter()
        .map(|t| t.label.as_str())
        .filter(|l| !rows.iter().any(|r| r.label == *l))
        .collect();
    unmodelled.dedup();
    if !unmodelled.is_empty() {
        notes.push(format!(
            "tables in the log numasim does not model: {}",
            unmodelled.join(", ")
        ));
    }
    Ok(Check {
        header,
        rows,
        notes,
    })
}

/// Per-node values as a dense list (node ids missing in between have no memory).
fn per_node(m: &BTreeMap<u32, u64>, unit: u64) -> Vec<u64> {
    let n = m.keys().max().map_or(0, |&k| k as usize + 1);
    let mut v = vec![0; n];
    for (&k, &x) in m {
        v[k as usize] = x.saturating_mul(unit);
    }
    v
}

/// A machine with the log's arch, page size and node memory, one CPU per node.
fn log_machine(arch: Arch, page_size: u64, nodes: &[u64]) -> Result<Machine, InputError> {
    let mut t = toml::Table::new();
    t.insert("name".into(), "bootlog".into());
    t.insert("arch".into(), arch.name().into());
    t.insert("page_size".into(), format_size(page_size).into());
    t.insert("nodes".into(), (nodes.len() as i64).into());
    let cpus: Vec<toml::Value> = nodes.iter().map(|_| 1i64.into()).collect();
    let mem: Vec<toml::Value> = nodes.iter().map(|&b| format_size(b).into()).collect();
    t.insert("node_cpus".into(), cpus.into());
    t.insert("node_mem".into(), mem.into());
    Machine::from_table(&t).map_err(|e| e.in_file("the log's machine"))
}

/// The check as a table: real, predicted and their ratio per table.
pub fn render_check(c: &Check) -> String {
    let mut s = String::new();
    for h in &c.header {
        let _ = writeln!(s, "{h}");
    }
    if !c.rows.is_empty() {
        let _ = writeln!(
            s,
            "{:<16} {:>12} {:>12} {:>7}  {:>6} {:>6}  {:<17} {:<17}",
            "table",
            "real",
            "predicted",
            "pred/real",
            "order",
            "pred",
            "real alloc",
            "predicted alloc"
        );
        for r in &c.rows {
            let p = r.predicted.as_ref();
            let (real, ratio, order, kind) = match &r.real {
                Some(t) => (
                    t.entries.to_string(),
                    p.map_or("-".into(), |p| {
                        format!("{:.3}", p.entries as f64 / t.entries as f64)
                    }),
                    t.order.to_string(),
                    t.kind.clone().unwrap_or_else(|| "(not printed)".into()),
                ),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            let _ = writeln!(
                s,
                "{:<16} {:>12} {:>12} {:>9}  {:>6} {:>6}  {:<17} {:<17}",
                r.label,
                real,
                p.map_or("-".into(), |p| p.entries.to_string()),
                ratio,
                order,
                p.map_or("-".into(), |p| p.order.to_string()),
                kind,
                p.and_then(|p| p.kind.clone()).unwrap_or_default()
            );
        }
    }
    for n in &c.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}
