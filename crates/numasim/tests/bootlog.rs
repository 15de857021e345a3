//! `numasim bootlog`: real boot logs from public sources (fixtures/bootlog,
//! SOURCES.md names each), every table line checked whole (entries, order,
//! bytes and, where printed, allocation kind); numasim's own `dmesg`
//! output read back; and the refusals of bad input, each naming the log
//! and the line.

use numasim::bootlog::{
    check, parse_log, parse_log_named, read_log, render, render_check, render_check_jsonl, Given,
    Status,
};
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

/// Every table line the log prints predicted whole; the facts used contain `has`.
fn assert_whole(name: &str, lines: usize, has: &[&str]) {
    let c = check(&parse_log_named(name, &fixture(name)), &Given::default()).unwrap();
    let out = render_check(&c);
    for h in has {
        assert!(out.contains(h), "{name}: output lacks `{h}`:\n{out}");
    }
    let (m, n) = c.tally();
    assert_eq!((m, n), (lines, lines), "{name}:\n{out}");
    assert!(c.all_matched(), "{name}:\n{out}");
}

#[test]
fn real_ubuntu_5_4_one_node_64_gib_every_line_with_its_kind() {
    // One node: hashdist off (5.3's single-node rule), so every table linear.
    assert_whole(
        "linuxhw-ubuntu-5.4.0-42-x86_64-64g.txt",
        11,
        &[
            "Ubuntu kernel on 5.4.44",
            "16502105 kernel pages",
            "8 possible CPUs",
            "hashdist     0",
        ],
    );
}

#[test]
fn real_opensuse_4_12_four_nodes_vendor_release() {
    // lp151 is SUSE's 4.12.14; 56 GiB is below the adaptive base anyway.
    assert_whole(
        "linuxhw-opensuse-4.12.14-lp151-x86_64-4node.txt",
        10,
        &[
            "SUSE kernel on 4.12.14",
            "4 node(s) with memory, 4 online",
            "32 possible CPUs",
        ],
    );
}

#[test]
fn real_rhel6_2_6_32_pid_route_cache_mount_page_futex_backport() {
    assert_whole(
        "linuxhw-centos6-2.6.32-754-x86_64-16g.txt",
        9,
        &["RHEL 6", "4134885 kernel pages"],
    );
}

#[test]
fn real_rhel7_3_10_backports_eight_byte_ehash_and_mount_hash() {
    // 32 GiB at one bucket per 128 KiB (3.8 on): 262144 eight-byte buckets.
    assert_whole("linuxhw-centos7-3.10.0-957-x86_64-32g.txt", 11, &["RHEL 7"]);
    let c = check(
        &parse_log(&fixture("linuxhw-centos7-3.10.0-957-x86_64-32g.txt")),
        &Given::default(),
    )
    .unwrap();
    let ehash = c
        .rows
        .iter()
        .find(|r| r.label == "TCP established")
        .unwrap();
    assert_eq!(
        ehash.predicted.as_ref().unwrap().bytes / ehash.predicted.as_ref().unwrap().entries,
        8
    );
}

#[test]
fn real_2_6_0_i386_old_pid_and_mount_formats() {
    // "PID hash table entries: 4096 (order 12: 32768 bytes)" is a table, not
    // a malformed line; 32-bit from the 4-byte dentry buckets.
    assert_whole(
        "lkml-2.6.0-test9-mjb2-i386-896m.txt",
        4,
        &["i386", "32-bit from the 4-byte dentry buckets"],
    );
}

#[test]
fn real_arm32_openwrt_is_not_taken_for_arm64() {
    assert_whole(
        "gh-openwrt-2670-4.19.93-arm-r7800.txt",
        1,
        &["arm (from line 1", "121800 kernel pages"],
    );
}

#[test]
fn hand_written_logs_from_the_format_strings() {
    assert_whole(
        "rhel6-2.6.32-x86_64-2node.txt",
        4,
        &["2 node(s) with memory"],
    );
    assert_whole("debian-2.6.32-i386-highmem.txt", 4, &["i386"]);
    assert_whole("ubuntu-5.4-x86_64-1node.txt", 5, &["5.4"]);
    // 2 nodes: a 2 MiB bind hash is 1 MiB a node, under a PMD: plain vmalloc.
    assert_whole(
        "power9-6.8-ppc64le-2node.journal",
        4,
        &["ppc64le", "64 KiB pages"],
    );
}

#[test]
fn tcp_established_before_3_8_is_one_bucket_per_8_kib() {
    let log = fixture("linuxhw-centos7-3.10.0-957-x86_64-32g.txt")
        .replace("3.10.0-957.10.1.el7.x86_64", "3.7.10-1.x86_64");
    let c = check(&parse_log(&log), &Given::default()).unwrap();
    let r = c
        .rows
        .iter()
        .find(|r| r.label == "TCP established")
        .unwrap();
    // 32 GiB at scale 13 is past the 512K cap; 16-byte buckets (twchain).
    let p = r.predicted.as_ref().unwrap();
    assert_eq!((p.entries, p.bytes), (512 * 1024, 8 << 20));
    assert!(matches!(&r.status, Status::Mismatch(d) if d.contains(&"entries")));
}

#[test]
fn the_output_header_says_which_column_is_which() {
    let c = check(
        &parse_log(&fixture("linuxhw-ubuntu-5.4.0-42-x86_64-64g.txt")),
        &Given::default(),
    )
    .unwrap();
    let out = render_check(&c);
    let header: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("real") || l.starts_with("table"))
        .collect();
    assert!(
        header[0].contains("real") && header[0].contains("predicted"),
        "{out}"
    );
    assert!(
        header[1].matches("entries").count() == 2 && header[1].matches("kind").count() == 2,
        "{out}"
    );
    let jsonl = render_check_jsonl(&c);
    let rows: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let dentry = rows.iter().find(|r| r["table"] == "Dentry cache").unwrap();
    for side in ["real", "predicted"] {
        for k in ["entries", "order", "bytes", "kind"] {
            assert!(!dentry[side][k].is_null(), "{side}.{k}: {dentry}");
        }
    }
    assert_eq!(rows.last().unwrap()["all_matched"], true);
}

#[test]
fn unknown_tables_are_listed_as_not_modelled_never_malformed() {
    let mut log = fixture("linuxhw-ubuntu-5.4.0-42-x86_64-64g.txt");
    log.push_str(
        "[    1.0] stackdepot hash table entries: 1048576 (order: 11, 8388608 bytes, linear)\n",
    );
    log.push_str("[    1.0] futex hash table entries: 2048 (131072 bytes on 1 NUMA nodes, total 128 KiB, linear).\n");
    let f = parse_log(&log);
    assert!(f.malformed.is_empty(), "{:?}", f.malformed);
    let c = check(&f, &Given::default()).unwrap();
    let r = c.rows.iter().find(|r| r.label == "stackdepot").unwrap();
    assert_eq!(r.status, Status::NotModelled);
    assert!(
        c.notes.iter().any(|n| n.contains("stackdepot")),
        "{:?}",
        c.notes
    );
    assert!(!c.all_matched());
}

#[test]
fn memoryless_and_fake_numa_nodes_are_counted_as_the_kernel_counts_them() {
    // 8 online nodes, 7 with memory: hashdist stays on (more than one memory node).
    let mut log = String::from("[0] Linux version 5.15.0-91-generic (b) #1 SMP\n[0] x86/fpu: x\n[0] Early memory node ranges\n");
    for n in 0..7 {
        log.push_str(&format!(
            "[0]   node   {n}: [mem {:#018x}-{:#018x}]\n",
            (n as u64) << 34,
            (((n as u64) + 1) << 34) - 1
        ));
    }
    log.push_str("[0] smpboot: Allowing 64 CPUs, 0 hotplug CPUs\n[0] Built 8 zonelists, mobility grouping on.  Total pages: 29000000\n");
    log.push_str("[0] smp: Brought up 8 nodes, 64 CPUs\n");
    log.push_str("[0] Dentry cache hash table entries: 16777216 (order: 15, 134217728 bytes, vmalloc hugepage)\n");
    let c = check(&parse_log(&log), &Given::default()).unwrap();
    let out = render_check(&c);
    assert!(out.contains("7 node(s) with memory, 8 online"), "{out}");
    assert!(out.contains("hashdist     1"), "{out}");
}

#[test]
fn logs_missing_facts_give_notes_not_errors() {
    let no_version =
        "[    0.0] Dentry cache hash table entries: 2097152 (order: 12, 16777216 bytes)\n";
    let c = check(&parse_log(no_version), &Given::default()).unwrap();
    assert!(c.notes.iter().any(|n| n.contains("--kernel-version")));
    assert!(!c.all_matched());
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
    // No CPU count: the futex line cannot be predicted, and says why.
    let log = fixture("linuxhw-ubuntu-5.4.0-42-x86_64-64g.txt")
        .replace("Allowing 8 CPUs", "x")
        .replace("nr_cpu_ids", "x")
        .replace("CPUs=", "x")
        .replace("Brought up", "x");
    let c = check(&parse_log(&log), &Given::default()).unwrap();
    let r = c.rows.iter().find(|r| r.label == "futex").unwrap();
    assert!(
        matches!(&r.status, Status::NoPrediction(w) if w.contains("CPU count")),
        "{:?}",
        r.status
    );
}

#[test]
fn malformed_lines_are_skipped_and_counted() {
    let mut text = fixture("linuxhw-centos6-2.6.32-754-x86_64-16g.txt");
    for bad in [
        "<6>Dentry cache hash table entries: lots (order: 10, 4194304 bytes)",
        "<6>Inode-cache hash table entries: 262144 (order: 9, 2097153 bytes)",
        "<6>TCP bind hash table entries: 65536 (order: 99, 1048576 bytes)",
        "<6>Memory: nothing/available",
        "  node   0: [mem 0xzz-0x1]",
    ] {
        text.push_str(bad);
        text.push('\n');
    }
    text.push_str("\u{fffd}\u{0}\u{1b}[31m binary junk\n");
    let f = parse_log(&text);
    assert_eq!(f.malformed.len(), 5, "{:?}", f.malformed);
    let c = check(&f, &Given::default()).unwrap();
    assert!(c.notes[0].starts_with("5 line(s)"), "{:?}", c.notes);
    assert!(c.all_matched(), "{}", render_check(&c));
}

// ---------------------------------------------------------------- issue 27

#[test]
fn a_node_id_past_max_numnodes_is_refused_naming_the_line_not_allocated() {
    // Was: one slot per node id, 32 GiB for node 4294967295, abort (134).
    let f = parse_log_named(
        "two.txt",
        "On node 4294967295 totalpages: 1\nLinux version 5.4.0\n",
    );
    let e = check(&f, &Given::default()).err().expect("refused");
    assert_eq!(e.exit_code(), 2);
    let m = e.to_string();
    assert!(
        m.starts_with("two.txt: line 1: ") && m.contains("MAX_NUMNODES"),
        "{m}"
    );
}

#[test]
fn node_ranges_that_wrap_64_bits_are_refused_with_file_and_line() {
    // Was: 16 EiB - 1 GiB then 2 GiB wrapped to a "1 GiB" machine, exit 0.
    let log = "Linux version 5.4.0-x86_64\n  node   0: [mem 0x0000000000000000-0xffffffffbfffffff]\n  node   0: [mem 0x0000000000000000-0x000000007fffffff]\n";
    let e = check(&parse_log_named("wrap.txt", log), &Given::default())
        .err()
        .expect("refused");
    assert!(e.to_string().starts_with("wrap.txt: line 3: "), "{e}");
    // Was: one full 64-bit range wrapped to zero, "the machine has no memory".
    let log =
        "Linux version 5.4.0-x86_64\n  node   0: [mem 0x0000000000000000-0xffffffffffffffff]\n";
    let e = check(&parse_log_named("full.txt", log), &Given::default())
        .err()
        .expect("refused");
    assert!(
        e.to_string().starts_with("full.txt: line 2: ") && e.to_string().contains("2^64"),
        "{e}"
    );
    let log =
        "Linux version 5.4.0-x86_64\nMemory: 1K/18446744073709551615K available (0K kernel code)\n";
    let e = check(&parse_log_named("mem.txt", log), &Given::default())
        .err()
        .expect("refused");
    assert!(e.to_string().starts_with("mem.txt: line 2: "), "{e}");
}

#[test]
fn errors_name_the_log_not_a_toml_key() {
    for log in [
        "On node 2000 totalpages: 5\n",
        "  node 5000: [mem 0x0-0x1000]\n",
    ] {
        let e = check(&parse_log_named("boot.txt", log), &Given::default())
            .err()
            .expect("refused");
        let m = e.to_string();
        assert!(
            m.starts_with("boot.txt: line 1: ") && !m.contains("key `"),
            "{m}"
        );
    }
}

#[test]
fn input_is_read_up_to_64_mib_then_refused_naming_it() {
    // Was: `bootlog /dev/zero` grew to 4.2 GB in 3 s.
    let e = read_log(std::io::repeat(0), "/dev/zero").expect_err("refused");
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string().starts_with("/dev/zero: more than 64 MiB"),
        "{e}"
    );
    let ok = read_log(&b"Linux version 5.4.0\n\xff\xfe junk\n"[..], "x").unwrap();
    assert!(ok.contains("Linux version"));
}

/// Boot every preset with every release (and `cfg` changes), print its
/// `dmesg`, read it back: every line predicted whole.
fn round_trip(tweak: impl Fn(&mut KernelConfig), what: &str) -> usize {
    let mut checked = 0;
    for (name, _) in presets::PRESETS {
        let m = presets::preset(name).unwrap();
        for &(v, era) in Era::KNOWN {
            let mut cfg = KernelConfig::defaults_for(&m, era);
            cfg.initcall_il_next = numasim::kernel::config::IlNext::At(0);
            tweak(&mut cfg);
            let Ok(b) = boot(&m, &cfg, 1) else { continue };
            let text = render(&m, &cfg, &b);
            let c = check(&parse_log(&text), &Given::default()).unwrap();
            assert!(
                c.all_matched(),
                "{what}: {name} {v}:\n{}\n{text}",
                render_check(&c)
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn dmesg_output_reads_back_to_itself_for_every_preset_and_release() {
    assert!(round_trip(|_| {}, "defaults") > 30);
}

#[test]
fn dmesg_with_other_vmalloc_and_max_order_reads_back_to_itself() {
    // Was: 0.125x to 512x with no note, the log not carrying the knobs.
    round_trip(|c| c.vmalloc_max_bytes = 64 << 20, "vmalloc_max_mb=64");
    round_trip(|c| c.max_order = 9, "max_order=9");
    round_trip(
        |c| {
            c.hashdist = !c.hashdist;
            c.thash_entries = 1 << 16;
        },
        "hashdist flipped, thash_entries",
    );
}

fn tables(preset: &str, version: &str, sets: &[(&str, toml::Value)]) -> Vec<(u64, bool)> {
    let m = presets::preset(preset).unwrap();
    let mut t = toml::Table::new();
    t.insert("version".into(), version.into());
    for (k, v) in sets {
        t.insert((*k).into(), v.clone());
    }
    let mut r = numasim::input::table::TableReader::new("kernel", &t);
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
fn hashdist_0_halves_a_too_large_ehash_until_5_3_vmallocs_it() {
    // thash_entries=2097152 on a 4 KiB, MAX_ORDER 11 machine: far above one
    // 4 MiB buddy block in both releases.
    let sets = [
        ("hashdist", toml::Value::Boolean(false)),
        ("thash_entries", toml::Value::Integer(2097152)),
    ];
    // 2.6.32 (16 B buckets, 32 MiB asked): halved until one block holds it.
    assert_eq!(tables("xeon-4s", "2.6.32", &sets)[2], (4 << 20, false));
    // 5.4 and 6.8 (8 B buckets, 16 MiB asked): get_order >= MAX_ORDER takes vmalloc.
    assert_eq!(tables("xeon-4s", "5.4", &sets)[2], (16 << 20, true));
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
fn a_table_not_a_power_of_two_in_bytes_does_not_decide_the_page_size() {
    // 5.7+ prints MPTCP's token table, 32768 entries of 24 bytes: 786432
    // bytes, order 8 in a 6.18 log (get_order), 7 in older ones (ilog2).
    // Read as ilog2(bytes) - order, the 6.18 line implied 2 KiB pages and
    // refused every x86_64 log printing it (the README tour's
    // `dmesg > boot.txt; numasim bootlog boot.txt` on a 6.x host).
    let name = "linuxhw-ubuntu-5.4.0-42-x86_64-64g.txt";
    for order in [7, 8] {
        let mut log = fixture(name);
        log += &format!("[    0.636100] MPTCP token hash table entries: 32768 (order: {order}, 786432 bytes, linear)\n");
        let c = check(&parse_log_named(name, &log), &Given::default()).unwrap();
        let out = render_check(&c);
        assert!(out.contains("4 KiB pages (from the table lines)"), "{out}");
        assert!(!out.contains("different page sizes"), "{out}");
        // The 11 lines of the fixture still match whole beside the new one.
        assert!(c.tally().0 >= 11, "{out}");
    }
}
