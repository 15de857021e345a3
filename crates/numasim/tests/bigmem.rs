//! Big Memory chunk manager, ZCB restrictions and TLB partition
//! ([BGP-BIGMEM] D6–D12).

use numasim::kernel::mm::bigmem::{
    bigmem_tlb_entries, Access, BigMemArea, BigMemError, ChunkKind, ElfImage, Mapping,
    TlbPartition, BIGMEM_PAGE_BYTES,
};
use proptest::prelude::*;

const MB: u64 = 1 << 20;
const PAGE: u64 = 4096;

fn area(mb: u64) -> BigMemArea {
    BigMemArea::new(mb * MB, 4096 * MB, PAGE).unwrap()
}

fn zcb(mb: u64) -> BigMemArea {
    let mut a = area(mb);
    a.exec(&ElfImage::zcb(16 * MB, 4 * MB), 8 * MB).unwrap();
    a
}

fn check_invariants(a: &BigMemArea) {
    let chunks = a.chunks();
    for c in &chunks {
        assert!(c.len > 0, "empty chunk {c:?}");
        assert!(c.start >= a.base() && c.end() <= a.end(), "{c:?} outside");
    }
    for w in chunks.windows(2) {
        assert!(w[0].end() <= w[1].start, "overlap {:?} {:?}", w[0], w[1]);
    }
    let free: u64 = a.free_runs().iter().map(|r| r.1).sum();
    assert_eq!(a.used_bytes() + free, a.bytes());
    assert_eq!(a.used_bytes() + a.free_bytes(), a.bytes());
}

#[test]
fn entries_cover_the_area() {
    assert_eq!(bigmem_tlb_entries(1792 * MB), 7);
    assert_eq!(bigmem_tlb_entries(1536 * MB), 6);
    assert_eq!(area(1792).tlb_entries(), 7);
    assert_eq!(area(1536).tlb_entries(), 6);
}

#[test]
fn bad_areas_are_refused() {
    assert_eq!(
        BigMemArea::new(0, 4096 * MB, PAGE).unwrap_err(),
        BigMemError::ZeroSize
    );
    let e = BigMemArea::new(1000 * MB, 4096 * MB, PAGE).unwrap_err();
    assert!(matches!(e, BigMemError::NotPageMultiple { .. }));
    assert!(e.to_string().contains("256 MB"), "{e}");
    let e = BigMemArea::new(2048 * MB, 2000 * MB, PAGE).unwrap_err();
    assert!(matches!(e, BigMemError::TooLarge { .. }), "{e}");
    assert!(BigMemArea::new(1792 * MB, 2000 * MB, PAGE).is_ok());
}

#[test]
fn partition_splits_and_refuses_overcommit() {
    let p = TlbPartition::new(64, 3, 6, 7).unwrap();
    assert_eq!(p.kernel, 3);
    assert_eq!(p.paged, 64 - 3 - 6 - 7);
    assert_eq!(p.pinned() + p.paged, 64);
    // 64 entries: 3 kernel + 6 device + 55 Big Memory pins everything.
    let e = TlbPartition::new(64, 3, 6, 55).unwrap_err();
    assert!(matches!(e, BigMemError::TlbOvercommit { .. }));
    assert!(TlbPartition::new(64, 3, 6, 54).is_ok());
    assert!(TlbPartition::new(64, 3, u32::MAX, 1).is_err());
}

#[test]
fn exec_lays_out_text_data_stack_and_copies_args_through_a_temporary_mapping() {
    let a = zcb(1792);
    let kinds: Vec<ChunkKind> = a.chunks().iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        vec![ChunkKind::Text, ChunkKind::Data, ChunkKind::Stack]
    );
    assert_eq!(a.chunks()[2].end(), a.end());
    assert_eq!(a.counters().temp_installs, 1);
    assert_eq!(a.counters().temp_removals, 1);
    assert!(!a.installed());
    // Only one compute process at a time.
    let mut a = a;
    assert_eq!(
        a.exec(&ElfImage::zcb(MB, 0), MB).unwrap_err(),
        BigMemError::Busy
    );
}

#[test]
fn file_mappings_go_to_paged_memory() {
    let mut a = zcb(512);
    let used = a.used_bytes();
    assert_eq!(a.mmap_file(64 * MB), Mapping::Paged { len: 64 * MB });
    assert_eq!(a.used_bytes(), used);
    assert!(matches!(
        a.mmap_anon(64 * MB).unwrap(),
        Mapping::BigMem { .. }
    ));
    assert_eq!(a.used_bytes(), used + 64 * MB);
}

#[test]
fn a_non_zcb_uses_no_big_memory() {
    let mut a = area(512);
    a.exec(
        &ElfImage {
            e_flags: 0,
            text: MB,
            data: MB,
        },
        MB,
    )
    .unwrap();
    assert!(!a.is_zcb());
    assert_eq!(a.mmap_anon(MB).unwrap(), Mapping::Paged { len: MB });
    assert_eq!(a.used_bytes(), 0);
    assert!(a.fork().is_ok());
    assert!(a.mprotect(0, MB).is_ok());
}

#[test]
fn fork_and_mprotect_of_a_zcb_are_refused() {
    let a = zcb(512);
    assert_eq!(a.fork().unwrap_err(), BigMemError::ForkRefused);
    assert!(a.fork().unwrap_err().to_string().contains("copy-on-write"));
    assert_eq!(
        a.mprotect(a.base(), PAGE).unwrap_err(),
        BigMemError::MprotectRefused
    );
}

#[test]
fn ptrace_installs_then_removes_the_mapping() {
    let mut a = zcb(512);
    let before = a.counters();
    assert!(a.ptrace_access(a.base()).unwrap());
    let after = a.counters();
    assert_eq!(after.temp_installs, before.temp_installs + 1);
    assert_eq!(after.temp_removals, before.temp_removals + 1);
    assert!(!a.installed(), "the mapping must not outlive the call");
    // Nothing mapped in the middle of the area: EIO.
    let hole = a.base() + 256 * MB;
    assert_eq!(
        a.ptrace_access(hole).unwrap_err(),
        BigMemError::NotMapped { addr: hole }
    );
    // Paged addresses need no install.
    assert!(!a.ptrace_access(a.end() + PAGE).unwrap());
}

#[test]
fn one_install_per_schedule_in_followed_by_a_big_memory_access() {
    let mut a = zcb(1792);
    let big = a.base() + 100 * MB;
    let paged = a.end() + MB;
    // Three schedule-ins touch Big Memory (many times), one does not.
    for round in 0..4 {
        a.schedule_in().unwrap();
        assert_eq!(a.access(paged).unwrap(), Access::Paged);
        if round != 2 {
            assert_eq!(a.access(big).unwrap(), Access::MissInstalled);
            for i in 0..10 {
                assert_eq!(a.access(big + i * MB).unwrap(), Access::Hit);
            }
        }
        a.schedule_out().unwrap();
        assert!(!a.installed());
    }
    let c = a.counters();
    assert_eq!(c.installs, 3);
    assert_eq!(c.misses, 3);
    assert_eq!(c.removals, 3);
    // Accesses need a running process.
    assert_eq!(a.access(big).unwrap_err(), BigMemError::NotRunning);
}

#[test]
fn brk_grows_until_the_next_chunk_and_shrinks() {
    let mut a = zcb(512);
    let start = a.brk_end().unwrap();
    let end = a.brk(start + 100 * MB).unwrap();
    assert_eq!(end, start + 100 * MB);
    assert_eq!(a.find(start).unwrap().kind, ChunkKind::Heap);
    // A mapping at the top; the heap cannot grow into the stack or it.
    let Mapping::BigMem { addr, .. } = a.mmap_anon(100 * MB).unwrap() else {
        panic!("a ZCB's anonymous memory is Big Memory")
    };
    assert!(matches!(
        a.brk(addr + PAGE).unwrap_err(),
        BigMemError::NoMemory { .. }
    ));
    a.brk(start).unwrap();
    assert!(a.find(start).is_none());
    assert!(matches!(
        a.brk(start - PAGE).unwrap_err(),
        BigMemError::BrkBelowStart { .. }
    ));
}

#[test]
fn out_of_big_memory_is_enomem_without_fallback() {
    let mut a = zcb(256);
    let e = a.mmap_anon(512 * MB).unwrap_err();
    assert!(matches!(e, BigMemError::NoMemory { .. }), "{e}");
    assert!(e.to_string().contains("cannot fall back"), "{e}");
    // An exec larger than the area fails the same way.
    let mut b = area(256);
    assert!(matches!(
        b.exec(&ElfImage::zcb(300 * MB, 0), MB).unwrap_err(),
        BigMemError::NoMemory { .. }
    ));
}

#[test]
fn partial_munmap_splits_a_chunk() {
    let mut a = zcb(512);
    let Mapping::BigMem { addr, len } = a.mmap_anon(30 * MB).unwrap() else {
        panic!()
    };
    let n = a.chunks().len();
    assert_eq!(a.munmap(addr + 10 * MB, 10 * MB).unwrap(), 10 * MB);
    assert_eq!(a.chunks().len(), n + 1);
    assert_eq!(a.find(addr).unwrap().len, 10 * MB);
    assert_eq!(a.find(addr + 20 * MB).unwrap().end(), addr + len);
    assert!(a.find(addr + 15 * MB).is_none());
    // The stack is not an mmap chunk.
    assert!(a.munmap(a.end() - PAGE, PAGE).is_err());
    check_invariants(&a);
}

#[derive(Debug, Clone)]
enum Op {
    Mmap(u64),
    Munmap(usize, u64, u64),
    Brk(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u64..200 * MB).prop_map(Op::Mmap),
        (any::<usize>(), 0u64..64, 1u64..64).prop_map(|(i, o, l)| Op::Munmap(i, o, l)),
        (0u64..300 * MB).prop_map(Op::Brk),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn chunks_never_overlap_and_space_comes_back(ops in prop::collection::vec(op(), 1..60)) {
        let mut a = zcb(1024);
        let heap = a.brk_end().unwrap();
        let mut maps: Vec<(u64, u64)> = Vec::new();
        for o in ops {
            match o {
                Op::Mmap(len) => {
                    let used = a.used_bytes();
                    match a.mmap_anon(len) {
                        Ok(Mapping::BigMem { addr, len: l }) => {
                            prop_assert!(l >= len && l % PAGE == 0);
                            prop_assert_eq!(a.used_bytes(), used + l);
                            maps.push((addr, l));
                        }
                        Ok(Mapping::Paged { .. }) => prop_assert!(false, "ZCB anon went paged"),
                        Err(BigMemError::NoMemory { largest_free, .. }) => {
                            prop_assert!(largest_free < len);
                            prop_assert_eq!(a.used_bytes(), used);
                        }
                        Err(e) => prop_assert!(false, "{e}"),
                    }
                }
                Op::Munmap(i, off, l) => {
                    if maps.is_empty() { continue; }
                    let (addr, len) = maps.swap_remove(i % maps.len());
                    // A page-aligned piece of the mapping, in 1/64ths.
                    let pages = len / PAGE;
                    let from = pages * off / 64;
                    let n = (pages * l / 64).clamp(1, pages - from);
                    let used = a.used_bytes();
                    prop_assert_eq!(a.munmap(addr + from * PAGE, n * PAGE).unwrap(), n * PAGE);
                    prop_assert_eq!(a.used_bytes(), used - n * PAGE);
                    if from > 0 { maps.push((addr, from * PAGE)); }
                    if from + n < pages { maps.push((addr + (from + n) * PAGE, (pages - from - n) * PAGE)); }
                }
                Op::Brk(size) => {
                    let _ = a.brk(heap + size);
                }
            }
            check_invariants(&a);
        }
        for (addr, len) in maps {
            a.munmap(addr, len).unwrap();
        }
        a.brk(heap).unwrap();
        check_invariants(&a);
        // Only exec's chunks are left; after exit the area is one free run.
        prop_assert!(a.chunks().iter().all(|c| c.kind != ChunkKind::Mmap && c.kind != ChunkKind::Heap));
        a.exit();
        prop_assert_eq!(a.free_runs(), vec![(a.base(), a.bytes())]);
        prop_assert_eq!(BIGMEM_PAGE_BYTES * 4, a.bytes());
    }
}

// The `zcb` workload and the kernel knobs, through a scenario.

use numasim::scenario::run::run;
use numasim::scenario::Scenario;

fn scenario(kernel: &str, ops: &str) -> Result<Scenario, numasim::error::InputError> {
    let text = format!(
        "name = \"z\"\n[machine]\npreset = \"bgp-node\"\n[kernel]\n{kernel}\n\
         [[run]]\nworkload = \"zcb\"\nops = [{ops}]\n[[run]]\nworkload = \"meminfo\"\n"
    );
    Scenario::from_str(&text, "z.toml", None)
}

fn metric(recs: &[numasim::report::Record], m: &str) -> f64 {
    recs.iter()
        .find(|r| r.metric == m)
        .and_then(|r| r.value)
        .unwrap_or_else(|| panic!("no {m}"))
}

#[test]
fn zcb_workload_reports_chunks_and_tlb_events() {
    let sc = scenario(
        "bigmem_mb = 1792",
        "\"exec 16MB 4MB 8MB\", \"mmap 512MB\", \"mmap 256MB\", \"munmap 0\", \
         \"mmap-file 32MB\", \"timeslice 3\", \"ptrace\"",
    )
    .unwrap();
    let recs = run(&sc, &[]).unwrap();
    // text, data, stack, one mmap left.
    assert_eq!(metric(&recs, "bigmem_chunks"), 4.0);
    assert_eq!(metric(&recs, "bigmem_used_mb"), 16.0 + 4.0 + 8.0 + 256.0);
    assert_eq!(metric(&recs, "bigmem_free_mb"), 1792.0 - 284.0);
    assert_eq!(metric(&recs, "paged_mb"), 32.0);
    assert_eq!(metric(&recs, "tlb_bigmem_entries"), 7.0);
    // bgp-node pins 3 kernel and 12 device entries (machine [tlb]).
    assert_eq!(metric(&recs, "tlb_paged_entries"), 64.0 - 3.0 - 12.0 - 7.0);
    assert_eq!(metric(&recs, "tlb_installs"), 3.0);
    assert_eq!(metric(&recs, "tlb_removals"), 3.0);
    // exec's argv copy plus the ptrace access.
    assert_eq!(metric(&recs, "tlb_temp_installs"), 2.0);
    // The area is reserved at boot: the kernel no longer has it.
    let free: f64 = metric(&recs, "mem_free_kb");
    assert!(free < (2048.0 - 1792.0) * 1024.0, "MemFree {free} kB");
}

#[test]
fn forbidden_zcb_calls_are_scenario_errors() {
    for op in ["fork", "mprotect"] {
        let e = scenario("bigmem_mb = 512", &format!("\"exec 1MB\", \"{op}\"")).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("run[0].ops"), "{e}");
        assert!(e.message.contains(op), "{e}");
    }
    // An ordinary binary (no ZCB flag) may fork, and is all paged.
    let text = "name = \"z\"\n[machine]\npreset = \"bgp-node\"\n[kernel]\nbigmem_mb = 512\n\
                [[run]]\nworkload = \"zcb\"\nzcb = false\nops = [\"exec 1MB\", \"fork\", \"mmap 1GB\"]\n";
    let sc = Scenario::from_str(text, "z.toml", None).unwrap();
    let recs = run(&sc, &[]).unwrap();
    assert_eq!(metric(&recs, "bigmem_used_mb"), 0.0);
    assert_eq!(metric(&recs, "paged_mb"), 1024.0 + 1.0 + 8.0);
}

#[test]
fn bad_ops_name_the_item() {
    let e = scenario("bigmem_mb = 512", "\"exec 1MB\", \"mmapp 1MB\"").unwrap_err();
    assert!(
        e.message.contains("item 1") && e.message.contains("did you mean `mmap`"),
        "{e}"
    );
    let e = scenario("bigmem_mb = 512", "\"mmap 1MB\"").unwrap_err();
    assert!(e.message.contains("first operation must be `exec`"), "{e}");
    let e = scenario("bigmem_mb = 512", "\"exec 1MB\", \"munmap 0\"").unwrap_err();
    assert!(e.message.contains("only 0 `mmap`"), "{e}");
}

#[test]
fn asking_for_more_than_the_area_is_enomem() {
    let sc = scenario("bigmem_mb = 512", "\"exec 1MB\", \"mmap 1GB\"").unwrap();
    let e = run(&sc, &[]).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("ENOMEM"), "{e}");
}

#[test]
fn bad_bigmem_knobs_are_refused_at_load() {
    let e = scenario("bigmem_mb = 1000", "\"exec 1MB\"").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("kernel.bigmem_mb"));
    assert!(e.message.contains("multiple of 256"), "{e}");
    let e = scenario("bigmem_mb = 2048", "\"exec 1MB\"").unwrap_err();
    assert_eq!(e.key.as_deref(), Some("kernel.bigmem_mb"));
    assert!(e.message.contains("more than the node can spare"), "{e}");
    let e = scenario("bigmem_mb = 1792\ntlb_device_entries = 60", "\"exec 1MB\"").unwrap_err();
    assert!(e.message.contains("for paged memory"), "{e}");
    // No area at all: the workload says which knob to set.
    let sc = scenario("", "\"exec 1MB\"").unwrap();
    let e = run(&sc, &[]).unwrap_err();
    assert!(e.to_string().contains("kernel.bigmem_mb"), "{e}");
}

#[test]
fn the_example_runs_and_pins_the_papers_entry_counts() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/bgp-zcb.toml");
    let sc = Scenario::from_file(std::path::Path::new(path)).unwrap();
    let recs = run(&sc, &[]).unwrap();
    let entries: Vec<f64> = recs
        .iter()
        .filter(|r| r.metric == "tlb_bigmem_entries")
        .filter_map(|r| r.value)
        .collect();
    assert_eq!(entries, vec![6.0, 7.0]);
}

#[test]
fn brk_to_an_empty_heap_leaves_a_mapping_at_the_break_alone() {
    // 256 MB less 28 MB of exec: one mmap fills the room, starting at the break.
    let mut a = zcb(256);
    let start = a.brk_end().unwrap();
    let Mapping::BigMem { addr, len } = a.mmap_anon(a.free_bytes()).unwrap() else {
        panic!()
    };
    assert_eq!(addr, start);
    a.brk(start).unwrap();
    assert_eq!(
        a.find(start).map(|c| (c.kind, c.len)),
        Some((ChunkKind::Mmap, len))
    );
    assert!(matches!(
        a.brk(start + PAGE).unwrap_err(),
        BigMemError::NoMemory { .. }
    ));
    check_invariants(&a);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Whatever the knobs and the machine's TLB and page size, the zcb
    /// workload gives a result or an input error, never a panic.
    #[test]
    fn zcb_knobs_give_a_result_or_an_error(
        mb in prop::sample::select(vec![0i64, 1, 255, 256, 512, 1792, 2048, 1 << 40, i64::MAX, -1]),
        dev in prop::sample::select(vec![0i64, 6, 54, 60, 64, 1 << 33, -1]),
        tlb in prop::sample::select(vec![0i64, 1, 9, 16, 64, 1 << 20]),
        page in prop::sample::select(vec!["1 KiB", "4 KiB", "64 KiB", "1 GiB"]),
        ops in prop::sample::subsequence(vec!["\"brk 64MB\"", "\"mmap 512MB\"", "\"mmap 3GB\"", "\"munmap 0\"", "\"timeslice 3\"", "\"ptrace\"", "\"mmap-file 1MB\""], 0..7),
    ) {
        let mut list = vec!["\"exec 16MB 4MB 8MB\""];
        list.extend(ops);
        let sets = vec![
            ("kernel.bigmem_mb".to_string(), toml::Value::Integer(mb)),
            ("kernel.tlb_device_entries".to_string(), toml::Value::Integer(dev)),
            ("machine.tlb.entries".to_string(), toml::Value::Integer(tlb)),
            ("machine.page_size".to_string(), toml::Value::String(page.to_string())),
        ];
        if let Ok(sc) = scenario("", &list.join(", ")) {
            if let Err(e) = run(&sc, &sets) {
                prop_assert_eq!(e.exit_code(), 2, "{}", e);
            }
        }
    }
}

/// A bigmem-kernel scenario on bgp-node with one random-read step.
fn bench(kernel: &str, step: &str) -> numasim::scenario::Scenario {
    numasim::scenario::Scenario::from_str(
        &format!(
            "name = \"t\"\n[machine]\npreset = \"bgp-node\"\n[kernel]\n{kernel}\n\
             [[run]]\nworkload = \"random-read\"\n{step}\n"
        ),
        "t.toml",
        None,
    )
    .unwrap()
}

#[test]
fn the_tlb_model_asks_the_chunk_manager_where_a_buffer_lies() {
    use numasim::kernel::mm::tlb::{buffer_in_bigmem, BufferKind};
    let sc = bench("flavour = \"bigmem\"\nbigmem_mb = 512", "size = \"16 MB\"");
    let case = sc.resolve(0, &[]).unwrap();
    let (m, k) = (&case.machine, &case.kernel);
    // A malloc'ed buffer goes to Big Memory, a file mapping stays paged, an
    // ordinary binary uses none.
    assert_eq!(
        buffer_in_bigmem(m, k, true, BufferKind::Anon, 16 * MB),
        Ok(true)
    );
    assert_eq!(
        buffer_in_bigmem(m, k, true, BufferKind::File, 16 * MB),
        Ok(false)
    );
    assert_eq!(
        buffer_in_bigmem(m, k, false, BufferKind::Anon, 16 * MB),
        Ok(false)
    );
    // Text, data and stack take room first: the whole area no longer fits a
    // buffer, but it does fit LOFAR's ring, which is the area itself.
    assert!(buffer_in_bigmem(m, k, true, BufferKind::Anon, 512 * MB).is_err());
    assert_eq!(
        buffer_in_bigmem(m, k, true, BufferKind::IoRing, 512 * MB),
        Ok(true)
    );
}

#[test]
fn a_buffer_larger_than_big_memory_stops_the_run_with_a_clear_error() {
    let sc = bench("flavour = \"bigmem\"\nbigmem_mb = 256", "size = \"512 MB\"");
    match numasim::scenario::run::run(&sc, &[]) {
        Err(numasim::error::Error::Input(e)) => {
            let s = e.to_string();
            assert!(s.contains("ENOMEM") && s.contains("bigmem_mb"), "{s}");
        }
        other => panic!("expected an input error, got {other:?}"),
    }
    // The same buffer in an ordinary binary is paged and runs.
    let sc = bench(
        "flavour = \"bigmem\"\nbigmem_mb = 256",
        "size = \"512 MB\"\nzcb = false",
    );
    numasim::scenario::run::run(&sc, &[]).unwrap();
}
