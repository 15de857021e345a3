//! Whatever values a user sets, numasim answers with a result or an input
//! error — never a panic (overflow included: tests run with overflow checks).

use numasim::scenario::run::run;
use numasim::scenario::Scenario;
use proptest::prelude::*;
use toml::Value;

const KEYS: &[&str] = &[
    "machine.nodes",
    "machine.cpus_per_node",
    "machine.mem_per_node",
    "machine.memory",
    "machine.page_size",
    "machine.distance.remote",
    "machine.distance.local",
    "machine.boot.struct_page_bytes",
    "machine.boot.percpu_area",
    "machine.boot.node_reserved",
    "machine.boot.kernel_reserved",
    "machine.boot.boot_node",
    "machine.tlb.entries",
    "kernel.hashdist",
    "kernel.thash_entries",
    "kernel.dhash_entries",
    "kernel.ihash_entries",
    "kernel.vmalloc_max_mb",
    "kernel.max_order",
    "kernel.min_free_kbytes",
    "kernel.initcall_il_next",
    "kernel.bigmem_mb",
    "kernel.tlb_device_entries",
];

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            0i64,
            1,
            2,
            3,
            7,
            16,
            63,
            64,
            255,
            256,
            65535,
            1 << 31,
            1 << 40,
            1 << 62,
            i64::MAX,
            -1
        ])
        .prop_map(Value::Integer),
        prop::sample::select(vec![
            "1 KiB", "4 KiB", "16 KiB", "1 MiB", "4 GiB", "1 TiB", "1 EiB", "15 EiB", "x",
            "random", ""
        ])
        .prop_map(|s| Value::String(s.to_string())),
        any::<bool>().prop_map(Value::Boolean),
        prop::sample::select(vec![0.5f64, -2.0, 1e300]).prop_map(Value::Float),
    ]
}

const BASE: &str = "name = \"t\"\n[machine]\nnodes = 4\ncpus_per_node = 2\nmem_per_node = \"1 GiB\"\n\
                    [[run]]\nworkload = \"boot\"\n[[run]]\nworkload = \"meminfo\"\n\
                    [[run]]\nworkload = \"touch\"\nthreads = 2\nbytes = \"64 MiB\"\npolicy = \"interleave\"\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn any_override_gives_a_result_or_an_error(sets in prop::collection::vec((prop::sample::select(KEYS), value()), 1..4)) {
        let sc = Scenario::from_str(BASE, "t.toml", None).unwrap();
        let sets: Vec<(String, Value)> = sets.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        // Huge node counts are refused at validation; everything else runs.
        let _ = run(&sc, &sets);
    }
}

const CONTENTION_KEYS: &[&str] = &[
    "machine.nodes",
    "machine.cpus_per_node",
    "machine.coherence.directory_ns",
    "machine.coherence.spin_jitter_ns",
    "machine.timer.hz",
    "machine.timer.clock_read_ns",
    "machine.timer.syscall_ns",
    "machine.timer.tick_phase",
    "machine.fault.fault_ns",
    "machine.fault.ptl_hold_ns",
    "machine.fault.unmap_ns",
    "machine.fault.zero_gbps",
    "kernel.prof_cpu_mask",
    "kernel.timer_adjust",
    "kernel.anon_fault",
    "kernel.devzero",
    "kernel.hugetlb",
    "kernel.hugepagesz",
    "kernel.pagecache_count",
    "kernel.spinlock",
    "threads",
    "cpus",
    "processes",
    "hold_ns",
    "think_ns",
    "calls",
    "sample",
];

const CONTENTION_BASE: &str = "name = \"t\"\n[machine]\nnodes = 4\ncpus_per_node = 2\nmem_per_node = \"1 GiB\"\n\
                    [[run]]\nworkload = \"tick\"\ncpus = 8\n\
                    [[run]]\nworkload = \"gettimeofday\"\nthreads = 4\ncalls = 20\n\
                    [[run]]\nworkload = \"fault-touch\"\nthreads = 4\nbytes = \"16 MiB\"\nsample = 8\n\
                    [[run]]\nworkload = \"devzero\"\nprocesses = 4\nbytes = \"4 MiB\"\nsample = 8\n\
                    [[run]]\nworkload = \"hugetlb\"\ncpus = 2\nsize = \"64 MiB\"\n\
                    [[run]]\nworkload = \"pagecache-count\"\ncpus = 8\nops = 10\n\
                    [[run]]\nworkload = \"spinlock\"\ncpus = 8\nhold_ns = 100\nduration_us = 200\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    #[test]
    fn contention_overrides_give_a_result_or_an_error(sets in prop::collection::vec((prop::sample::select(CONTENTION_KEYS), value()), 1..4)) {
        let sc = Scenario::from_str(CONTENTION_BASE, "t.toml", None).unwrap();
        let sets: Vec<(String, Value)> = sets.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        // Large machines are slow here, not wrong: keep the sweep small.
        if sets.iter().any(|(k, v)| k.starts_with("machine.") && k.ends_with("s") && v.as_integer().is_some_and(|i| i > 64)) {
            return Ok(());
        }
        let _ = run(&sc, &sets);
    }
}

const VM_KEYS: &[&str] = &[
    "machine.swap_gb",
    "machine.mem_per_node",
    "kernel.kswapd_trigger",
    "kernel.page_cache_alloc",
    "kernel.lru",
    "kernel.toss",
    "kernel.toss_fast",
    "kernel.reclaim_list",
    "kernel.reclaim_list_rejoin",
    "kernel.page_cache_limit",
    "kernel.page_cache_limit_threshold",
    "kernel.page_cache_throttle_ms",
    "kernel.vm_swappiness",
    "kernel.zone_reclaim_mode",
    "kernel.dirty_ratio",
    "kernel.oom",
    "kernel.oom_victim",
    "kernel.oom_swap_window_s",
    "kernel.oom_wait_s",
    "kernel.oom_swap_success_pct",
    "kernel.oom_swap_attempts_min",
    "bytes",
    "horizon_s",
    "cpu",
    "from_anon",
    "threads",
];

// A small machine under memory pressure: a job, a writer, an allocator that
// runs until killed, and bcfree, with a short horizon.
const VM_BASE: &str =
    "name = \"t\"\n[machine]\nnodes = 2\ncpus_per_node = 2\nmem_per_node = \"64 MiB\"\n\
                       swap_gb = 0.03125\nio = { disks = [ { count = 1, mibps = 50.0 } ] }\n\
                       [kernel]\nreclaim_list = 1\ntoss = 1\ntoss_fast = 1\n\
                       [[run]]\nworkload = \"hold\"\nbytes = \"96 MiB\"\n\
                       [[run]]\nworkload = \"write\"\nbytes = \"48 MiB\"\nhorizon_s = 20\n\
                       [[run]]\nworkload = \"bcfree\"\n\
                       [[run]]\nworkload = \"runaway\"\nhorizon_s = 60\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]
    #[test]
    fn vm_overrides_give_a_result_or_an_error(sets in prop::collection::vec((prop::sample::select(VM_KEYS), value()), 1..4)) {
        let sc = Scenario::from_str(VM_BASE, "t.toml", None).unwrap();
        let sets: Vec<(String, Value)> = sets.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        // Memory sizes beyond a few GiB only make the timed run slow.
        if sets.iter().any(|(k, v)| k == "machine.mem_per_node" && v.as_str().is_some_and(|s| s.contains("TiB") || s.contains("EiB"))) {
            return Ok(());
        }
        let _ = run(&sc, &sets);
    }
}

const PCI_KEYS: &[&str] = &[
    "machine.nodes",
    "machine.pci.bus_mhz",
    "machine.pci.bus_bytes",
    "machine.pci.latency_timer",
    "machine.pci.pio_clocks",
    "machine.pci.pio_read_ns",
    "machine.pci.bridge_ns",
    "machine.pci.flush_ns",
    "machine.pci.uc_store_ns",
    "machine.pci.io_link_gbps",
    "machine.timer.clock_read_ns",
    "machine.interconnect.link_gbps",
    "device_node",
    "cpu",
    "ops",
    "writes",
    "load",
    "pio",
    "pio_flush",
    "mmiob_wait",
    "io_size",
    "queue_depth",
    "ios",
    "device_ns",
    "host_ns",
    "isr_reads",
    "isr_flush_reads",
    "submit_reads",
];

const PCI_BASE: &str = "name = \"t\"\n[machine]\nnodes = 4\ncpus_per_node = 2\nmem_per_node = \"1 GiB\"\n\
                    [[run]]\nworkload = \"pio-read\"\nload = \"busy\"\nops = 20\ndevice_node = 1\ncpu = 0\n\
                    [[run]]\nworkload = \"pio-flush\"\nops = 20\nwrites = 5\nload = [\"idle\", \"busy\"]\n\
                    [[run]]\nworkload = \"dma-iops\"\nios = 50\nqueue_depth = 2\nio_size = 4096\ndevice_ns = 100.0\nhost_ns = 100.0\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    #[test]
    fn pci_overrides_give_a_result_or_an_error(sets in prop::collection::vec((prop::sample::select(PCI_KEYS), value()), 1..4)) {
        let sc = Scenario::from_str(PCI_BASE, "t.toml", None).unwrap();
        let sets: Vec<(String, Value)> = sets.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        if sets.iter().any(|(k, v)| k == "machine.nodes" && v.as_integer().is_some_and(|i| i > 64)) {
            return Ok(());
        }
        let _ = run(&sc, &sets);
    }
}
