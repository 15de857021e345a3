//! Which values of a machine file were left to numasim's defaults, and
//! which defaults they get (issue 29). A default chosen for a 2004 machine
//! (`fault_ns` 1000, 10 GB/s DRAM, a 64-entry TLB) would silently decide
//! results on a machine of today, so a file gets the defaults of its era:
//!
//! - `era = "2004"` or `era = "today"` in the file says it;
//! - else a `[memsys]` table says today (the arch alone does not: the
//!   probe's x86_64 machines must read back unchanged);
//! - else 2004: the file names nothing of today (the Altix, Wildfire and
//!   Blue Gene/P presets, and every older file, keep their values).
//!
//! Today's defaults are the values of a cited modern preset
//! ([`TODAY_SOURCE`], `docs/machine.md` "Presets for today" gives each
//! value's source), for the keys it states from a vendor figure
//! ([`TODAY_KEYS`]); every other key keeps numasim's built-in (2004) value,
//! marked as such. `numasim machines FILE` names each defaulted key, its
//! value and where it came from; a run warns about the defaults that
//! decided its result (`workload/membw.rs`, `scenario/run.rs`).

use super::Machine;
use crate::input::merge::flatten;
use toml::{Table, Value};

pub use super::{Era, Given};

/// The preset today's defaults are read from: 2 x EPYC 9654 in NPS4, every
/// value below an input from AMD's and Lenovo's documents (LP1852).
pub const TODAY_SOURCE: &str = "epyc-9004-nps4";

/// The keys today's defaults fill, each a cited figure in
/// [`TODAY_SOURCE`]: one node's DDR5 channels (3 x DDR5-4800), one xGMI
/// link, the all-core boost clock, the line, the L2 DTLB's entries (its
/// page sizes stay the arch's: a 64 KiB-page aarch64 has others), and the
/// fault path: one CPU's 4 KiB clearing rate (Linux commit cb431accb36e,
/// AMD Milan) and the rest of a minor fault's CPU time and of its page's
/// munmap share (will-it-scale page_fault2 on 4 x Xeon Platinum 8380H, the
/// kernel test robot, and its perf profile; `today-page-fault`). `docs/machine.md` "Presets for today".
pub const TODAY_KEYS: &[&str] = &[
    "dram.bandwidth_gbps",
    "interconnect.link_gbps",
    "cpu.clock_mhz",
    "cpu.cache_line",
    "tlb.entries",
    "fault.fault_ns",
    "fault.unmap_ns",
    "fault.zero_gbps",
];

/// The era a machine table asks for, and why (for `numasim machines`).
/// An `era` key that is neither era is left to the machine's reader,
/// which refuses it naming the allowed values.
pub fn era_of(t: &Table) -> (Era, &'static str) {
    if let Some(e) = t.get("era").and_then(Value::as_str) {
        if let Some((_, era)) = Era::NAMES.iter().find(|(n, _)| *n == e) {
            return (*era, "the file's `era`");
        }
    }
    if t.contains_key("memsys") {
        return (Era::Today, "the file has a [memsys] table");
    }
    // The arch alone does not say it: numasim's probe writes x86_64
    // machines whose unmeasured keys are the built-in values, and reads
    // them back unchanged. A run on an x86_64/aarch64 machine still warns
    // about the 2004 defaults that decide it (`era_warnings`).
    (
        Era::Y2004,
        "the file names no era and has no [memsys]; `era = \"today\"` asks for today's",
    )
}

/// A machine file's text with its era stated, for `numasim machines NAME`:
/// unchanged where a top-level `era` line is there, else `era = "…"` after
/// the top-level `arch` line (or `name`, or first), so the text names the
/// era its defaults come from and reads back in it.
pub fn state_era(text: &str, era: Era) -> String {
    let lines: Vec<&str> = text.lines().collect();
    // Top-level keys end at the first table header.
    let top = lines
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .unwrap_or(lines.len());
    let key = |l: &str, k: &str| {
        l.trim_start()
            .strip_prefix(k)
            .is_some_and(|r| r.trim_start().starts_with('='))
    };
    if lines[..top].iter().any(|l| key(l, "era")) {
        return text.to_string();
    }
    let at = lines[..top]
        .iter()
        .position(|l| key(l, "arch"))
        .or_else(|| lines[..top].iter().position(|l| key(l, "name")))
        .map_or(0, |i| i + 1);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out.insert(
        at,
        format!("era = \"{}\"                         # resolved: whose defaults the keys left out get (docs/machine.md)", era.name()),
    );
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// The table with today's defaults filled in where the file left
/// [`TODAY_KEYS`] out (a table of the 2004 era is returned unchanged).
pub fn with_era_defaults(t: &Table) -> std::borrow::Cow<'_, Table> {
    if era_of(t).0 != Era::Today {
        return std::borrow::Cow::Borrowed(t);
    }
    let Some(src) = today_values() else {
        return std::borrow::Cow::Borrowed(t);
    };
    let have = flatten(t);
    let mut out = t.clone();
    for (k, v) in src {
        if have.iter().any(|(h, _)| h == k) {
            continue;
        }
        let (table, key) = k.split_once('.').expect("dotted");
        let sub = out
            .entry(table.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        if let Value::Table(st) = sub {
            st.entry(key.to_string()).or_insert_with(|| v.clone());
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`TODAY_KEYS`] as [`TODAY_SOURCE`] states them (read once).
fn today_values() -> Option<&'static [(&'static str, Value)]> {
    static VALUES: std::sync::OnceLock<Option<Vec<(&'static str, Value)>>> =
        std::sync::OnceLock::new();
    VALUES
        .get_or_init(|| {
            let text = super::presets::preset_text(TODAY_SOURCE).ok()?;
            let t = super::slit_text::parse_toml(text).ok()?;
            let all = flatten(&t);
            Some(
                TODAY_KEYS
                    .iter()
                    .filter_map(|k| {
                        all.iter()
                            .find(|(h, _)| h == k)
                            .map(|(_, v)| (*k, v.clone()))
                    })
                    .collect(),
            )
        })
        .as_deref()
}

/// Where a defaulted key's value came from.
pub fn source_of(era: Era, key: &str) -> String {
    if era == Era::Today && TODAY_KEYS.contains(&key) {
        format!("today: {TODAY_SOURCE}")
    } else if era == Era::Today {
        "2004 default: no figure of today cited for it".to_string()
    } else {
        "2004 default".to_string()
    }
}

/// The dotted keys the machine as written back has and `input` (the file
/// as read) does not, with the value each took and where it came from:
/// the defaults in force. Keys the file spells another way
/// (`cpus_per_node` for `node_cpus`, `preset`) are not defaults and are
/// left out.
pub fn defaulted_keys(input: &Table, m: &Machine) -> Vec<(String, Value, String)> {
    let Ok(written) = super::slit_text::parse_toml(&m.to_toml_string()) else {
        return Vec::new();
    };
    let era = era_of(input).0;
    // The input layer's dotted-key walk, the one `--set` uses.
    let have = flatten(input);
    let all = flatten(&written);
    // Spelled differently in files: per-node lists vs uniform keys, the
    // distance forms.
    const ALIASES: &[&str] = &[
        // Named on its own line by `numasim machines FILE`, with why.
        "era",
        "node_cpus",
        "node_mem",
        "nodes",
        "distance.matrix",
        "distance.groups",
        "distance.levels",
        "distance.remote",
        "cpu.cache",
    ];
    all.into_iter()
        .filter(|(k, _)| !have.iter().any(|(h, _)| h == k))
        .filter(|(k, _)| !ALIASES.contains(&k.as_str()))
        .map(|(k, v)| {
            let src = source_of(era, &k);
            (k, v, src)
        })
        .collect()
}

/// The keys with no figure of today whose 2004 default decides a
/// workload's result (the fault path's cost and the zeroing rate).
pub fn old_keys_deciding(workload: &str) -> &'static [&'static str] {
    match workload {
        // `devzero` takes no `page_table_lock` (each process its own mm).
        "fault-touch" => &["fault.fault_ns", "fault.ptl_hold_ns"],
        "devzero" => &["fault.fault_ns"],
        "hugetlb" => &["fault.zero_gbps"],
        _ => &[],
    }
}

/// One warning per workload of a machine of today (a `[memsys]` table, or
/// an x86_64/aarch64 arch) whose result a key at numasim's 2004 default
/// decided: the key, its value and that no figure of today backs it. A key
/// the machine's table gave is not warned about, whatever its value (the
/// file states it, even where it states the default's value); a key of
/// [`TODAY_KEYS`] that today's defaults filled carries a cited value.
pub fn era_warnings(m: &Machine, workloads: &[&str]) -> Vec<String> {
    use super::Arch;
    let today = m.memsys.explicit || matches!(m.arch, Arch::X86_64 | Arch::Aarch64);
    if !today {
        return Vec::new();
    }
    let Ok(written) = super::slit_text::parse_toml(&m.to_toml_string()) else {
        return Vec::new();
    };
    let have = flatten(&written);
    let mut out = Vec::new();
    for w in workloads {
        let keys: Vec<String> = old_keys_deciding(w)
            .iter()
            .filter(|k| !m.given.contains(k))
            .filter(|k| !(m.era == Era::Today && TODAY_KEYS.contains(k)))
            .filter_map(|k| {
                let v = have.iter().find(|(h, _)| h == k)?;
                Some(format!("{k} = {}", v.1))
            })
            .collect();
        if !keys.is_empty() {
            out.push(format!(
                "`{w}` on machine `{}`: {} still numasim's 2004 default (no figure of today cited) and decided it; state the machine's own value",
                m.name,
                keys.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        super::super::slit_text::parse_toml(text).unwrap()
    }

    /// A file that omits `[dram]` is told that its DRAM figures are the
    /// defaults; a key it gives is not listed.
    #[test]
    fn omitted_keys_are_named_and_given_ones_are_not() {
        let text = "name = \"t\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = \"1 GiB\"\n[tlb]\nentries = 1536\n";
        let t = table(text);
        let m = Machine::from_table(&t).unwrap();
        let d = defaulted_keys(&t, &m);
        let keys: Vec<&str> = d.iter().map(|(k, _, _)| k.as_str()).collect();
        assert!(keys.contains(&"dram.bandwidth_gbps"), "{keys:?}");
        assert!(keys.contains(&"fault.fault_ns"), "{keys:?}");
        assert!(!keys.contains(&"tlb.entries"), "{keys:?}");
        assert!(!keys.contains(&"name"), "{keys:?}");
    }

    /// A file of today (its arch, or `era`) gets today's cited figures
    /// where it is silent, marked with their source; the same file marked
    /// 2004, and a file with no arch, keep the built-in values.
    #[test]
    fn defaults_follow_the_era() {
        let base = "name = \"t\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = \"1 GiB\"\n";
        let today = table(&format!("{base}arch = \"x86_64\"\nera = \"today\"\n"));
        let old = table(&format!("{base}arch = \"x86_64\"\nera = \"2004\"\n"));
        let bare = table(&format!("{base}arch = \"x86_64\"\n"));
        assert_eq!(era_of(&today).0, Era::Today);
        assert_eq!(era_of(&old).0, Era::Y2004);
        assert_eq!(era_of(&bare).0, Era::Y2004);
        let src = super::super::presets::preset(TODAY_SOURCE).unwrap();
        let mt = Machine::from_table(&today).unwrap();
        let mo = Machine::from_table(&old).unwrap();
        let mb = Machine::from_table(&bare).unwrap();
        assert_eq!(mt.memory.bandwidth_gbps, src.memory.bandwidth_gbps);
        assert_eq!(mt.tlb.entries, src.tlb.entries);
        assert_ne!(mo.memory.bandwidth_gbps, src.memory.bandwidth_gbps);
        assert_eq!(mo.memory.bandwidth_gbps, mb.memory.bandwidth_gbps);
        assert_eq!(mo.tlb.entries, mb.tlb.entries);
        let d = defaulted_keys(&today, &mt);
        let bw = d
            .iter()
            .find(|(k, _, _)| k == "dram.bandwidth_gbps")
            .unwrap();
        assert!(bw.2.contains(TODAY_SOURCE), "{bw:?}");
        // The fault path's CPU time and clearing rate are today's cited
        // figures; the page-table lock's hold has none and stays 2004's.
        let fault = d.iter().find(|(k, _, _)| k == "fault.fault_ns").unwrap();
        assert!(fault.2.contains(TODAY_SOURCE), "{fault:?}");
        assert_eq!(mt.fault.fault_ns, src.fault.fault_ns);
        assert_eq!(mt.fault.zero_gbps, src.fault.zero_gbps);
        assert_ne!(mo.fault.zero_gbps, src.fault.zero_gbps);
        let ptl = d.iter().find(|(k, _, _)| k == "fault.ptl_hold_ns").unwrap();
        assert!(ptl.2.starts_with("2004 default"), "{ptl:?}");
        // A run on it is warned about that one only.
        let w = era_warnings(&mt, &["fault-touch", "hugetlb"]);
        assert!(
            w.len() == 1 && w[0].contains("fault.ptl_hold_ns") && !w[0].contains("fault_ns ="),
            "{w:?}"
        );
    }

    /// A machine of today that leaves the fault path's cost to the 2004
    /// default is warned about for the workloads it decides, by name; one
    /// that states it, or an Altix, is not.
    #[test]
    fn a_run_is_warned_about_the_old_defaults_that_decided_it() {
        let base = "name = \"t\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = \"1 GiB\"\narch = \"x86_64\"\n";
        let m = Machine::from_toml_str(base, "t").unwrap();
        let w = era_warnings(&m, &["fault-touch", "stream"]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("fault.fault_ns = 1000") && w[0].contains("fault-touch"),
            "{w:?}"
        );
        let stated = Machine::from_toml_str(
            &format!("{base}[fault]\nfault_ns = 400.0\nptl_hold_ns = 50.0\n"),
            "t",
        )
        .unwrap();
        assert!(era_warnings(&stated, &["fault-touch"]).is_empty());
        let altix = super::super::presets::preset("altix-512").unwrap();
        assert!(era_warnings(&altix, &["fault-touch"]).is_empty());
    }

    /// Provenance, not value: a file that states the 2004 default's value
    /// for a key is not warned about (it chose it), one that leaves the
    /// key out is, and a machine written back (every key stated) is not.
    #[test]
    fn a_stated_default_value_is_not_warned_and_an_absent_key_is() {
        let base = "name = \"t\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = \"1 GiB\"\narch = \"x86_64\"\n";
        let stated = Machine::from_toml_str(
            &format!("{base}[fault]\nfault_ns = 1000.0\nptl_hold_ns = 100.0\nzero_gbps = 2.0\n"),
            "t",
        )
        .unwrap();
        let absent = Machine::from_toml_str(base, "t").unwrap();
        // The same values: only where they came from differs.
        assert_eq!(stated.fault, absent.fault);
        assert!(
            era_warnings(&stated, &["fault-touch", "hugetlb"]).is_empty(),
            "{:?}",
            era_warnings(&stated, &["fault-touch", "hugetlb"])
        );
        let w = era_warnings(&absent, &["fault-touch", "hugetlb"]);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[1].contains("fault.zero_gbps"), "{w:?}");
        // Half stated: only the absent key is named.
        let half =
            Machine::from_toml_str(&format!("{base}[fault]\nfault_ns = 1000.0\n"), "t").unwrap();
        let w = era_warnings(&half, &["fault-touch"]);
        assert!(
            w.len() == 1 && w[0].contains("fault.ptl_hold_ns") && !w[0].contains("fault.fault_ns"),
            "{w:?}"
        );
        let back = Machine::from_toml_str(&absent.to_toml_string(), "back").unwrap();
        assert!(era_warnings(&back, &["fault-touch", "hugetlb"]).is_empty());
    }

    /// The era is kept on the machine and written back: a file naming
    /// none gets the era its tables imply, and reads back the same.
    #[test]
    fn the_era_is_stored_and_written_back() {
        let base = "name = \"t\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = \"1 GiB\"\n";
        for (text, era) in [
            (base.to_string(), Era::Y2004),
            (format!("{base}era = \"today\"\n"), Era::Today),
            (format!("{base}[memsys]\ndram_ns = 90.0\n"), Era::Today),
            (
                format!("{base}era = \"2004\"\n[memsys]\ndram_ns = 90.0\n"),
                Era::Y2004,
            ),
        ] {
            let m = Machine::from_toml_str(&text, "t").unwrap();
            assert_eq!(m.era, era, "{text}");
            let written = m.to_toml_string();
            assert!(
                written.contains(&format!("era = \"{}\"", era.name())),
                "{written}"
            );
            assert_eq!(Machine::from_toml_str(&written, "t").unwrap().era, era);
        }
        let altix = super::super::presets::preset("altix-512").unwrap();
        assert_eq!(altix.era, Era::Y2004);
        let epyc = super::super::presets::preset(TODAY_SOURCE).unwrap();
        assert_eq!(epyc.era, Era::Today);
    }

    /// Every preset printed with its era reads back as the same machine
    /// in the same era, with one era line; a text that states one is kept.
    #[test]
    fn presets_print_their_era() {
        for (name, _) in super::super::presets::PRESETS {
            let m = super::super::presets::preset(name).unwrap();
            let text = state_era(super::super::presets::preset_text(name).unwrap(), m.era);
            assert_eq!(text.matches("\nera = ").count(), 1, "{name}");
            let back = Machine::from_toml_str(&text, name).unwrap();
            assert_eq!(back, m, "{name}");
            assert_eq!(back.era, m.era, "{name}");
            assert_eq!(state_era(&text, m.era), text, "{name}");
        }
    }

    /// The old presets name no era of today: their tables pass unchanged.
    #[test]
    fn old_presets_keep_their_era() {
        for p in ["altix-512", "altix-256g", "wildfire-gs320", "bgp-node"] {
            let t =
                super::super::slit_text::parse_toml(super::super::presets::preset_text(p).unwrap())
                    .unwrap();
            assert_eq!(era_of(&t).0, Era::Y2004, "{p}");
            assert!(
                matches!(with_era_defaults(&t), std::borrow::Cow::Borrowed(_)),
                "{p}"
            );
        }
    }
}
