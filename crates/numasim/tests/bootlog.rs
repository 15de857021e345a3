//! `numasim bootlog`: boot logs written by hand from the kernel's own
//! format strings (`alloc_large_system_hash()`'s pr_info, `tcp_init()`,
//! `free_area_init_node()`, `mem_init()`), with table sizes worked out by
//! hand from each release's formulas (comments in the fixtures' tests), and
//! `numasim dmesg` output read back.

use numasim::bootlog::{check, parse_log, render, Given};
use numasim::kernel::boot::boot;
use numasim::kernel::era::Era;
use numasim::kernel::KernelConfig;
use numasim::machine::presets;
use std::path::Path;

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bootlog")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// Every modelled table of the log predicted exactly: entries, order and,
/// where the log prints it, the allocation kind.
fn assert_predicts(name: &str, header_has: &[&str]) {
    let facts = parse_log(&fixture(name));
    let c = check(&facts, &Given::default()).unwrap();
    let header = c.header.join("\n");
    for h in header_has {
        assert!(header.contains(h), "{name}: header `{header}` lacks `{h}`");
    }
    assert_eq!(c.rows.len(), 4, "{name}: {:?}", c.notes);
    for r in &c.rows {
        let (real, pred) = (r.real.as_ref().unwrap(), r.predicted.as_ref().unwrap());
        assert_eq!(real.entries, pred.entries, "{name}: {} entries", r.label);
        assert_eq!(real.bytes, pred.bytes, "{name}: {} bytes", r.label);
        assert_eq!(real.order, pred.order, "{name}: {} order", r.label);
        if let Some(k) = &real.kind {
            assert_eq!(Some(k), pred.kind.as_ref(), "{name}: {} kind", r.label);
        }
    }
}

#[test]
fn ubuntu_5_4_one_node_4k() {
    // 16 GiB, memmap 64 B/page: nr_kernel_pages 4128768. Dentry scale 13:
    // >>1, roundup -> 2^21; inode 2^20; ehash scale 17: >>5 -> 2^17 of 8 B;
    // bind 2^17 capped at 64K of 16 B.
    assert_predicts(
        "ubuntu-5.4-x86_64-1node.txt",
        &["formulas of 5.4", "x86_64", "4 KiB", "1 node"],
    );
    let c = check(
        &parse_log(&fixture("ubuntu-5.4-x86_64-1node.txt")),
        &Given::default(),
    )
    .unwrap();
    assert!(
        c.notes.iter().any(|n| n.contains("Mount-cache")),
        "{:?}",
        c.notes
    );
}

#[test]
fn rhel6_2_6_32_two_nodes_syslog_levels() {
    // 2 x 2 GiB: nr_kernel_pages 1032192; ehash scale 13 -> 2^19 = the
    // 512K cap, 16 B buckets (chain + twchain), vmalloc'ed (hashdist).
    assert_predicts(
        "rhel6-2.6.32-x86_64-2node.txt",
        &["formulas of 2.6.32", "2 node", "hashdist=1"],
    );
}

#[test]
fn power9_6_8_64k_pages_sparse_node_ids_journalctl() {
    // 2 x 128 GiB of 64 KiB pages: 4190208 kernel pages, above the 64 GiB
    // adaptive base once: dentry scale 14 -> <<2 -> 2^24; inode 2^23;
    // ehash 2^19 capped, 8 B; bind 64K of 32 B (bhash + bhash2).
    assert_predicts(
        "power9-6.8-ppc64le-2node.journal",
        &["ppc64le", "64 KiB", "9 node", "hashdist=1"],
    );
}

#[test]
fn debian_i386_highmem_sizes_from_lowmem() {
    // 4 GiB, 896 MiB lowmem: 229376 - 8192 (memmap of all memory, 32 B)
    // = 221184 kernel pages; 4-byte pointers.
    assert_predicts(
        "debian-2.6.32-i386-highmem.txt",
        &["i386", "the line \"HIGHMEM available\""],
    );
}

#[test]
fn dmesg_output_reads_back_to_itself_for_every_preset_and_release() {
    for (name, _) in presets::PRESETS {
        let m = presets::preset(name).unwrap();
        for &(v, era) in Era::KNOWN {
            let mut cfg = KernelConfig::defaults_for(&m, era);
            cfg.initcall_il_next = numasim::kernel::config::IlNext::At(0);
            let Ok(b) = boot(&m, &cfg, 1) else { continue };
            let text = render(&m, &cfg, &b);
            let c = check(&parse_log(&text), &Given::default()).unwrap();
            assert_eq!(c.rows.len(), 4, "{name} {v}: {:?}\n{text}", c.notes);
            for r in &c.rows {
                let (real, pred) = (r.real.as_ref().unwrap(), r.predicted.as_ref().unwrap());
                let what = format!("{name} {v} {}\n{text}", r.label);
                assert_eq!(
                    (real.entries, real.bytes, real.order),
                    (pred.entries, pred.bytes, pred.order),
                    "{what}"
                );
                // Releases before 6.x print no allocation kind.
                assert_eq!(real.kind.is_some(), era >= Era::V6_8, "{what}");
                if real.kind.is_some() {
                    assert_eq!(real.kind, pred.kind, "{what}");
                }
            }
        }
    }
}

fn tables(preset: &str, version: &str, sets: &[(&str, toml::Value)]) -> Vec<(u64, bool)> {
    let m = presets::preset(preset).unwrap();
    let mut t = toml::Table::new();
    t.insert("version".into(), version.into());
    for (k, v) in sets {
        t.insert((*k).into(), v.clone());
    }
    let mut r = numasim::scenario::table::TableReader::new("kernel", &t);
    let cfg = KernelConfig::read(&mut r, &m).unwrap();
    let b = boot(&m, &cfg, 1).unwrap();
    ["dentry", "inode", "tcp_ehash", "tcp_bhash"]
        .iter()
        .map(|n| {
            let h = b.hash(n).unwrap();
            (h.bytes(), h.vmalloc())
        })
        .collect()
}

#[test]
fn hashdist_0_halves_a_too_large_ehash_until_6_x_vmallocs_it() {
    // thash_entries=2097152 on a 4 KiB, MAX_ORDER 11 machine: far above one
    // 4 MiB buddy block in both releases.
    let sets = [
        ("hashdist", toml::Value::Boolean(false)),
        ("thash_entries", toml::Value::Integer(2097152)),
    ];
    // 2.6.32 (16 B buckets, 32 MiB asked): halved until one block holds it.
    assert_eq!(tables("xeon-4s", "2.6.32", &sets)[2], (4 << 20, false));
    // 6.8 (8 B buckets, 16 MiB asked): get_order >= MAX_ORDER takes vmalloc.
    assert_eq!(tables("xeon-4s", "6.8", &sets)[2], (16 << 20, true));
}

#[test]
fn adaptive_scale_shrinks_dentry_on_a_large_machine() {
    let old = tables("xeon-4s", "3.10", &[])[0].0;
    let new = tables("xeon-4s", "4.15", &[])[0].0;
    // 1.5 TiB is above 64 GiB by three quadruplings (256G, 1T, 4T > 1.5T).
    assert_eq!(old / new, 8);
}

#[test]
fn logs_missing_facts_give_notes_not_errors() {
    let no_version =
        "[    0.0] Dentry cache hash table entries: 2097152 (order: 12, 16777216 bytes)\n";
    let c = check(&parse_log(no_version), &Given::default()).unwrap();
    assert!(c.rows.is_empty() && c.notes.iter().any(|n| n.contains("--kernel-version")));
    let given = Given {
        version: Some("5.4".into()),
        arch: None,
    };
    let c = check(&parse_log(no_version), &given).unwrap();
    assert!(
        c.notes.iter().any(|n| n.contains("--arch")),
        "{:?}",
        c.notes
    );
    let given = Given {
        version: Some("5.4".into()),
        arch: Some(numasim::machine::Arch::X86_64),
    };
    let c = check(&parse_log(no_version), &given).unwrap();
    assert!(
        c.notes.iter().any(|n| n.contains("no memory lines")),
        "{:?}",
        c.notes
    );
    // A release between modelled ones is predicted with the older one, said.
    let text =
        fixture("ubuntu-5.4-x86_64-1node.txt").replace("5.4.0-150-generic", "5.15.0-91-generic");
    let c = check(&parse_log(&text), &Given::default()).unwrap();
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("5.15.0-91-generic is not modelled")),
        "{:?}",
        c.notes
    );
}

#[test]
fn malformed_lines_are_skipped_and_counted() {
    let mut text = fixture("rhel6-2.6.32-x86_64-2node.txt");
    for bad in [
        "<6>Dentry cache hash table entries: lots (order: 10, 4194304 bytes)",
        "<6>Inode-cache hash table entries: 262144 (order: 9, 2097153 bytes)",
        "<6>TCP bind hash table entries: 65536 (order: 99, 1048576 bytes)",
        "<6>Memory: nothing/available",
        "<7>On node x totalpages: 5",
        "  node   0: [mem 0xzz-0x1]",
    ] {
        text.push_str(bad);
        text.push('\n');
    }
    text.push_str("\u{fffd}\u{0}\u{1b}[31m binary junk\n");
    let f = parse_log(&text);
    assert_eq!(f.malformed.len(), 6, "{:?}", f.malformed);
    let c = check(&f, &Given::default()).unwrap();
    assert!(
        c.notes[0].starts_with("6 malformed line(s) skipped"),
        "{:?}",
        c.notes
    );
    // The good lines still give the same prediction.
    assert!(c
        .rows
        .iter()
        .all(|r| r.real.as_ref().map(|t| t.entries) == r.predicted.as_ref().map(|t| t.entries)));
}
