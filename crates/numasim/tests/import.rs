//! The three importers on fixtures in the exact formats the tools write
//! (`tests/fixtures/import/{sysfs,numactl,hwloc}/<machine>`), and on broken
//! copies of them.

use numasim::machine::import::{from_hwloc_xml, from_numactl, from_sysfs, from_sysfs_checked};
use numasim::machine::Machine;
use std::path::{Path, PathBuf};

const MACHINES: &[&str] = &["one-node", "two-node", "eight-node", "memoryless"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

fn sysfs(name: &str) -> Machine {
    from_sysfs(&fixtures().join("sysfs").join(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn numactl(name: &str) -> Machine {
    let p = fixtures().join("numactl").join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&p).unwrap();
    from_numactl(&text, &p.display().to_string()).unwrap_or_else(|e| panic!("{e}"))
}

fn hwloc(name: &str) -> Machine {
    let p = fixtures().join("hwloc").join(format!("{name}.xml"));
    let text = std::fs::read_to_string(&p).unwrap();
    from_hwloc_xml(&text, &p.display().to_string()).unwrap_or_else(|e| panic!("{e}"))
}

/// What each fixture describes: CPUs and MemTotal (kB) per node, distances.
struct Expect {
    cpus: Vec<u32>,
    mem_kb: Vec<u64>,
    matrix: Vec<Vec<u32>>,
}

fn expect(name: &str) -> Expect {
    match name {
        "one-node" => Expect {
            cpus: vec![8],
            mem_kb: vec![16303588],
            matrix: vec![vec![10]],
        },
        "two-node" => Expect {
            cpus: vec![8, 8],
            mem_kb: vec![32567348, 33023476],
            matrix: vec![vec![10, 21], vec![21, 10]],
        },
        "eight-node" => Expect {
            cpus: vec![4; 8],
            mem_kb: vec![
                16417400, 16515072, 16515072, 16515072, 16515072, 16515072, 16515072, 16497660,
            ],
            matrix: (0..8)
                .map(|i| {
                    (0..8)
                        .map(|j| {
                            if i == j {
                                10
                            } else if i / 2 == j / 2 {
                                16
                            } else {
                                22
                            }
                        })
                        .collect()
                })
                .collect(),
        },
        "memoryless" => Expect {
            cpus: vec![8, 8, 0],
            mem_kb: vec![0, 66846720, 16431104],
            matrix: vec![vec![10, 20, 40], vec![20, 10, 40], vec![40, 40, 10]],
        },
        _ => unreachable!(),
    }
}

fn check(m: &Machine, e: &Expect, exact_mem: bool, what: &str) {
    assert_eq!(m.node_count(), e.cpus.len(), "{what}: node count");
    let cpus: Vec<u32> = m.nodes.iter().map(|n| n.cpus).collect();
    assert_eq!(cpus, e.cpus, "{what}: CPUs per node");
    for (i, (n, &kb)) in m.nodes.iter().zip(&e.mem_kb).enumerate() {
        let want = kb * 1024;
        if exact_mem {
            assert_eq!(n.mem_bytes, want, "{what}: memory of node {i}");
        } else {
            // numactl prints MemTotal >> 20.
            assert_eq!(
                n.mem_bytes,
                (want >> 20) << 20,
                "{what}: memory of node {i}"
            );
        }
    }
    assert_eq!(m.distances.to_matrix(), e.matrix, "{what}: distances");
}

#[test]
fn sysfs_fixtures() {
    for name in MACHINES {
        let m = sysfs(name);
        check(&m, &expect(name), true, &format!("sysfs {name}"));
        assert_eq!(m.name, *name);
        assert_eq!(m.page_size, 4096);
        assert_eq!(
            m.tlb.page_sizes,
            vec![4096, 2 << 20, 1 << 30],
            "sysfs {name}"
        );
    }
}

#[test]
fn numactl_fixtures() {
    for name in MACHINES {
        let m = numactl(name);
        check(&m, &expect(name), false, &format!("numactl {name}"));
        assert_eq!(m.name, *name);
    }
}

#[test]
fn hwloc_fixtures() {
    for name in MACHINES {
        let m = hwloc(name);
        check(&m, &expect(name), true, &format!("hwloc {name}"));
        assert_eq!(m.page_size, 4096);
        assert_eq!(
            m.tlb.page_sizes,
            vec![4096, 2 << 20, 1 << 30],
            "hwloc {name}"
        );
        assert_eq!(m.cpu.cache_line, 64);
        assert_eq!(m.arch.name(), "x86_64");
    }
    let m = hwloc("two-node");
    assert_eq!(m.name, "twosock", "named after the HostName info");
    assert_eq!(m.cpu.model, "Intel(R) Xeon(R) CPU E5-2623 v4 @ 2.60GHz");
    assert_eq!(m.cpu.clock_mhz, 2600.0);
    let caches: Vec<(u8, u64, u32)> = m
        .cpu
        .caches
        .iter()
        .map(|c| (c.level, c.size, c.shared_by))
        .collect();
    assert_eq!(
        caches,
        vec![(1, 32 << 10, 2), (2, 256 << 10, 2), (3, 10 << 20, 8)],
        "one cache per level, shared by the PUs under it"
    );
    let m = hwloc("eight-node");
    assert_eq!(
        m.cpu.clock_mhz, 2000.0,
        "no clock in the model string: default kept"
    );
    assert_eq!(m.cpu.caches[2].shared_by, 4);
}

#[test]
fn memoryless_node_has_zero_memory_and_does_not_boot() {
    for (src, m) in [
        ("sysfs", sysfs("memoryless")),
        ("numactl", numactl("memoryless")),
        ("hwloc", hwloc("memoryless")),
    ] {
        assert_eq!(m.nodes[0].mem_bytes, 0, "{src}");
        assert_eq!(m.nodes[0].cpus, 8, "{src}");
        assert_eq!(m.nodes[2].cpus, 0, "{src}: the CPU-less node 3");
        assert_ne!(
            m.boot.boot_node, 0,
            "{src}: the memoryless node cannot boot"
        );
        assert_eq!(m.boot.boot_node, 1, "{src}");
    }
}

#[test]
fn every_import_round_trips_through_toml() {
    for name in MACHINES {
        for m in [sysfs(name), numactl(name), hwloc(name)] {
            let text = m.to_toml_string();
            let back = Machine::from_toml_str(&text, "round-trip.toml")
                .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert_eq!(back, m, "{name}");
        }
    }
}

#[test]
fn the_three_sources_agree() {
    for name in MACHINES {
        let (s, n, h) = (sysfs(name), numactl(name), hwloc(name));
        assert_eq!(
            s.nodes, h.nodes,
            "{name}: sysfs and hwloc give bytes exactly"
        );
        for (a, b) in s.nodes.iter().zip(&n.nodes) {
            assert_eq!(a.cpus, b.cpus, "{name}");
            assert!(
                a.mem_bytes - b.mem_bytes < 1 << 20,
                "{name}: numactl rounds down to whole MiB"
            );
        }
        assert_eq!(s.distances, n.distances, "{name}");
        assert_eq!(s.distances, h.distances, "{name}");
        assert_eq!(s.boot, n.boot, "{name}");
        assert_eq!(s.boot, h.boot, "{name}");
    }
}

// ---- bad input: a clear InputError naming the file, never a panic ----

/// A scratch copy of a sysfs fixture that a test may break.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, tag: &str) -> Scratch {
        let dst = std::env::temp_dir().join(format!(
            "numasim-import-{}-{tag}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dst);
        copy_dir(&fixtures().join("sysfs").join(name), &dst);
        Scratch(dst)
    }
    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.0.join(rel), text).unwrap();
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}

fn sysfs_err(s: &Scratch) -> numasim::error::InputError {
    match from_sysfs(&s.0) {
        Ok(_) => panic!("broken sysfs tree {} was accepted", s.0.display()),
        Err(e) => e,
    }
}

#[test]
fn sysfs_missing_node_directory() {
    let s = Scratch::new("two-node", "missing");
    std::fs::remove_dir_all(s.0.join("node1")).unwrap();
    let e = sysfs_err(&s);
    assert!(e.file.as_deref().unwrap().ends_with("node1"), "{e}");
    assert!(e.message.contains("missing"), "{e}");
}

#[test]
fn sysfs_truncated_and_garbage_files() {
    let cases: &[(&str, &str, &str)] = &[
        ("node1/meminfo", "", "MemTotal"),
        ("node1/meminfo", "Node 1 MemTot", "MemTotal"),
        ("node1/meminfo", "Node 1 MemTotal:   12ab kB\n", "line 1"),
        ("node0/cpulist", "0-x\n", "0-x"),
        ("node0/distance", "10 twenty-one\n", "twenty-one"),
        ("node0/distance", "", "empty"),
        ("online", "zero\n", "zero"),
    ];
    for (file, text, needle) in cases {
        let s = Scratch::new("two-node", "garbage");
        s.write(file, text);
        let e = sysfs_err(&s);
        assert!(
            e.file.as_deref().unwrap().ends_with(file),
            "{file}: error should name the file: {e}"
        );
        assert!(e.message.contains(needle), "{file}: {e}");
    }
}

#[test]
fn sysfs_bad_distance_tables() {
    let s = Scratch::new("two-node", "nonsquare");
    s.write("node0/distance", "10 21 21\n");
    let e = sysfs_err(&s);
    assert!(
        e.file.as_deref().unwrap().ends_with("node0/distance"),
        "{e}"
    );
    assert!(e.message.contains("2×2"), "{e}");

    let s = Scratch::new("two-node", "asym");
    s.write("node0/distance", "10 20\n");
    let e = sysfs_err(&s);
    assert!(e.message.contains("not symmetric"), "{e}");
    assert!(e.file.is_some());
}

#[test]
fn sysfs_not_a_directory() {
    let e = from_sysfs(Path::new("/nonexistent/numasim/node")).unwrap_err();
    assert_eq!(e.file.as_deref(), Some("/nonexistent/numasim/node"));
}

fn numactl_text(name: &str) -> String {
    std::fs::read_to_string(fixtures().join("numactl").join(format!("{name}.txt"))).unwrap()
}

fn numactl_err(text: &str) -> numasim::error::InputError {
    match from_numactl(text, "box.txt") {
        Ok(m) => panic!("accepted broken numactl output:\n{text}\n{m:?}"),
        Err(e) => {
            assert_eq!(e.file.as_deref(), Some("box.txt"), "{e}");
            e
        }
    }
}

#[test]
fn numactl_bad_input() {
    let t = numactl_text("two-node");
    // Truncated before the distance table, and before node 1.
    let cut = &t[..t.find("node distances").unwrap()];
    assert!(numactl_err(cut).message.contains("distance rows"));
    let cut = &t[..t.find("node 1 cpus").unwrap()];
    assert!(numactl_err(cut).message.contains("node 1"));
    assert!(numactl_err("").message.contains("available"));
    // Non-square and asymmetric tables.
    let e = numactl_err(&t.replace("  0:  10  21 ", "  0:  10  21  21 "));
    assert!(e.message.contains("square"), "{e}");
    let e = numactl_err(&t.replace("  0:  10  21 ", "  0:  10  20 "));
    assert!(e.message.contains("not symmetric"), "{e}");
    // Garbage numbers.
    let e = numactl_err(&t.replace("node 0 size: 31804 MB", "node 0 size: lots MB"));
    assert!(e.message.starts_with("line 3:"), "{e}");
    let e = numactl_err(&t.replace("node 0 cpus: 0 1", "node 0 cpus: 0 one"));
    assert!(e.message.starts_with("line 2:"), "{e}");
    let e = numactl_err(&t.replace("available: 2 nodes", "available: 3 nodes"));
    assert!(e.message.contains("3 nodes"), "{e}");
    // A CPU on two nodes.
    let e = numactl_err(&t.replace("node 1 cpus: 4", "node 1 cpus: 0 4"));
    assert!(e.message.contains("CPU 0"), "{e}");
}

fn hwloc_text(name: &str) -> String {
    std::fs::read_to_string(fixtures().join("hwloc").join(format!("{name}.xml"))).unwrap()
}

fn hwloc_err(text: &str) -> numasim::error::InputError {
    match from_hwloc_xml(text, "box.xml") {
        Ok(_) => panic!("accepted broken hwloc XML"),
        Err(e) => {
            assert_eq!(e.file.as_deref(), Some("box.xml"), "{e}");
            e
        }
    }
}

#[test]
fn hwloc_bad_input() {
    let t = hwloc_text("two-node");
    let e = hwloc_err(&t[..t.len() / 2]);
    assert!(e.message.contains("not valid XML"), "{e}");
    let e = hwloc_err(&t.replace("10 21 21 10 ", "10 21 21 "));
    assert!(e.message.contains("square"), "{e}");
    let e = hwloc_err(&t.replace("10 21 21 10 ", "10 21 20 10 "));
    assert!(e.message.contains("not symmetric"), "{e}");
    let e = hwloc_err(&t.replace("local_memory=\"33348964352\"", "local_memory=\"33e9\""));
    assert!(e.message.contains("local_memory"), "{e}");
    assert!(e.message.starts_with("line "), "{e}");
    let e = hwloc_err(&t.replace(
        "<u64values length=\"12\">10 21",
        "<u64values length=\"12\">ten 21",
    ));
    assert!(e.message.contains("`ten`"), "{e}");
    let e = hwloc_err(&t.replace(
        "<indexes length=\"4\">0 1 </indexes>",
        "<indexes length=\"4\">0 7 </indexes>",
    ));
    assert!(e.message.contains("index 7"), "{e}");
    let no_dist = {
        let a = t.find("<distances2").unwrap();
        let b = t.find("</distances2>").unwrap() + "</distances2>".len();
        format!("{}{}", &t[..a], &t[b..])
    };
    assert!(hwloc_err(&no_dist).message.contains("distances2"));
}

#[test]
fn truncation_anywhere_never_panics() {
    for name in MACHINES {
        let t = numactl_text(name);
        for cut in (0..t.len()).step_by(7) {
            let _ = from_numactl(&t[..cut], "cut.txt");
        }
        let x = hwloc_text(name);
        for cut in (0..x.len()).step_by(x.len() / 200 + 1) {
            if x.is_char_boundary(cut) {
                assert!(from_hwloc_xml(&x[..cut], "cut.xml").is_err());
            }
        }
    }
}

#[test]
fn hwloc_absurd_object_counts_are_refused() {
    let t = hwloc_text("two-node").replace("nbobjs=\"2\"", "nbobjs=\"18446744073709551615\"");
    assert!(hwloc_err(&t).message.contains("covers"));
}

// ---- node memory cross-checked with /proc/meminfo ----

/// A Firecracker guest booted with `deferred_init=lazy` (the host of issue
/// 20): node0's MemTotal counts only the struct pages initialised so far,
/// /proc/meminfo's MemTotal counts all of them, 192 online 128 MiB blocks.
#[test]
fn sysfs_lazy_init_host_takes_proc_meminfo() {
    let root = fixtures().join("sysfs-host/lazy-init");
    let meminfo = std::fs::read_to_string(root.join("proc-meminfo")).unwrap();
    let node_dir = root.join("node");
    let plain = from_sysfs(&node_dir).unwrap();
    let (m, notes) = from_sysfs_checked(&node_dir, Some((&meminfo, "proc-meminfo"))).unwrap();
    assert_eq!(m.nodes[0].mem_bytes, 24684092 * 1024);
    assert!(plain.nodes[0].mem_bytes < m.nodes[0].mem_bytes / 2);
    let note = notes.join("\n");
    assert!(
        note.contains("short of proc-meminfo") && note.contains("memory blocks"),
        "{note}"
    );
    // What the issue saw: the kernel sizes the dentry hash from all its
    // memory, so the corrected machine boots with a larger hash.
    let dentry = |m: &Machine| {
        let cfg = numasim::kernel::config::KernelConfig::defaults(m);
        numasim::kernel::boot::boot(m, &cfg, 1)
            .unwrap()
            .hash("dentry")
            .unwrap()
            .requested_bytes()
    };
    assert!(
        dentry(&m) > dentry(&plain),
        "{} vs {}",
        dentry(&m),
        dentry(&plain)
    );
    // Still a machine that prints and reads back unchanged.
    let back = Machine::from_toml_str(&m.to_toml_string(), "back").unwrap();
    assert_eq!(back.to_toml_string(), m.to_toml_string());
}

#[test]
fn sysfs_meminfo_agreeing_and_bad() {
    let dir = fixtures().join("sysfs/two-node");
    let agree = "MemTotal:       65590824 kB\n";
    let (m, notes) = from_sysfs_checked(&dir, Some((agree, "mi"))).unwrap();
    assert_eq!(m.to_toml_string(), sysfs("two-node").to_toml_string());
    assert!(notes[0].contains("agrees"), "{notes:?}");
    let e = from_sysfs_checked(&dir, Some(("MemTotal: lots kB\n", "mi"))).unwrap_err();
    assert_eq!(e.file.as_deref(), Some("mi"), "{e}");
    assert!(e.message.contains("line 1"), "{e}");
    // A garbage block size names its file.
    let s = Scratch::new("two-node", "blocks");
    let node = s.0.join("node");
    copy_dir(&dir, &node);
    std::fs::create_dir_all(s.0.join("memory")).unwrap();
    std::fs::write(s.0.join("memory/block_size_bytes"), "huge\n").unwrap();
    let e = from_sysfs_checked(&node, Some((agree, "mi"))).unwrap_err();
    assert!(
        e.file.as_deref().unwrap().ends_with("block_size_bytes"),
        "{e}"
    );
}

#[test]
fn numactl_1_0_without_cpus_or_distances_imports_flagged() {
    let p = fixtures().join("numactl/numactl-1.0-two-node.txt");
    let text = std::fs::read_to_string(&p).unwrap();
    let m = from_numactl(&text, &p.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.node_count(), 2);
    assert_eq!(m.nodes[0].mem_bytes, 4031 << 20);
    // Unknown CPUs and distances are said, not silently invented.
    assert!(m.description.contains("CPUs unknown"), "{}", m.description);
    assert!(
        m.description.contains("distances unknown"),
        "{}",
        m.description
    );
    assert_eq!(m.distances.get(0, 1), 20);
    // The flags survive the TOML round trip a user edits.
    let back = Machine::from_toml_str(&m.to_toml_string(), "rt").unwrap();
    assert_eq!(back.description, m.description);
    // cpus on some nodes only is still a truncated file.
    let partial = text.replace("node 1 size", "node 0 cpus: 0 1\nnode 1 size");
    let e = from_numactl(&partial, "partial.txt")
        .unwrap_err()
        .to_string();
    assert!(e.contains("node 1 cpus"), "{e}");
}

#[test]
fn sysfs_of_old_kernels_cpumap_and_nul_terminated_files() {
    let s = Scratch::new("two-node", "oldkernel");
    let want = sysfs("two-node");
    for node in ["node0", "node1"] {
        let dir = s.0.join(node);
        std::fs::remove_file(dir.join("cpulist")).unwrap();
        for f in ["cpumap", "distance", "meminfo"] {
            let mut b = std::fs::read(dir.join(f)).unwrap();
            b.push(0);
            std::fs::write(dir.join(f), b).unwrap();
        }
    }
    let mut b = std::fs::read(s.0.join("online")).unwrap();
    b.push(0);
    std::fs::write(s.0.join("online"), b).unwrap();
    let m = from_sysfs(&s.0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.nodes, want.nodes, "cpumap gives the same CPUs as cpulist");
    assert_eq!(m.distances.to_matrix(), want.distances.to_matrix());
    // Neither file: the error names the node directory.
    std::fs::remove_file(s.0.join("node1/cpumap")).unwrap();
    let e = sysfs_err(&s).to_string();
    assert!(e.contains("node1") && e.contains("cpumap"), "{e}");
}

#[test]
fn hwloc_of_a_ppc64le_machine_keeps_arch_and_64k_pages() {
    let m = hwloc("power9-one-node");
    assert_eq!(m.arch.name(), "ppc64le");
    assert_eq!(m.page_size, 64 << 10);
    assert_eq!(m.tlb.page_sizes[0], 64 << 10);
    let back = Machine::from_toml_str(&m.to_toml_string(), "rt").unwrap();
    assert_eq!((back.arch, back.page_size), (m.arch, m.page_size));
    // Without page types the arch's distribution default holds.
    let text = std::fs::read_to_string(fixtures().join("hwloc/power9-one-node.xml")).unwrap();
    let bare: String = text
        .lines()
        .filter(|l| !l.contains("page_type"))
        .collect::<Vec<_>>()
        .join("\n");
    let m = from_hwloc_xml(&bare, "bare.xml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.page_size, 64 << 10);
}
