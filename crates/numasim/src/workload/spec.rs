//! The registry of workloads: every `[[run]]` step's keys (type, unit,
//! default, allowed range), the metrics it reports (with units) and an
//! example step.
//!
//! The validator reads it (unknown and missing keys are found here before a
//! workload's own reader runs), `numasim workloads` prints it and
//! `docs/scenario.md` is generated from it. Tests hold it to the readers:
//! the keys each reader asks for, the stated defaults and the integer
//! ranges (`tests/workload_spec.rs`), and the metric units the examples
//! report.

/// What a key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A size: an integer of bytes or a string with a unit (`"1.5 GB"`).
    Size,
    /// A size or a list of sizes (one row per size).
    Sizes,
    /// A whole number.
    Int,
    /// A whole number or a list of them (one row per count).
    Counts,
    /// A list of whole numbers (CPU or node ids).
    IntList,
    /// A number.
    Float,
    /// `true`/`false` (or 1/0).
    Bool,
    /// A string.
    Str,
    /// One of the listed names.
    Choice(&'static [&'static str]),
    /// A list of strings.
    StrList,
}

impl Kind {
    pub fn name(&self) -> String {
        match self {
            Kind::Size => "size".into(),
            Kind::Sizes => "size or list of sizes".into(),
            Kind::Int => "integer".into(),
            Kind::Counts => "integer or list".into(),
            Kind::IntList => "list of integers".into(),
            Kind::Float => "number".into(),
            Kind::Bool => "boolean".into(),
            Kind::Str => "string".into(),
            Kind::Choice(c) => c.join(" \\| "),
            Kind::StrList => "list of strings".into(),
        }
    }
}

/// A key's value when the step leaves it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// The step must give it.
    Required,
    /// This TOML value (a test checks that writing it changes nothing).
    Value(&'static str),
    /// Depends on the machine or other keys; said in words.
    Text(&'static str),
}

/// What values a key allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// Whole numbers `lo..=hi` (a test checks `lo - 1` and `hi + 1` are refused).
    Int(u64, u64),
    /// Numbers `lo..=hi`.
    Float(f64, f64),
    /// In words (machine-dependent, or checked together with other keys).
    Text(&'static str),
    /// Whatever the type allows.
    Any,
}

#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub key: &'static str,
    pub kind: Kind,
    /// Unit of a number (`""` where none).
    pub unit: &'static str,
    pub default: Default,
    pub range: Range,
    /// What it means; extra limits that involve other keys.
    pub about: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub about: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub about: &'static str,
    pub params: &'static [Param],
    /// Groups of keys of which exactly one must be given.
    pub one_of: &'static [&'static str],
    pub metrics: &'static [Metric],
    /// The built-in machine the example runs on.
    pub example_machine: &'static str,
    /// `[kernel]` knobs the example needs (TOML body; often none).
    pub example_kernel: &'static str,
    /// An example `[[run]]` step (TOML body, without the header).
    pub example: &'static str,
}

impl Spec {
    pub fn param(&self, key: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.key == key)
    }
    pub fn metric_names(&self) -> Vec<&'static str> {
        self.metrics.iter().map(|m| m.name).collect()
    }
}

/// The keys every step may carry besides its own.
pub const COMMON: &[Param] = &[
    Param {
        key: "workload",
        kind: Kind::Str,
        unit: "",
        default: Default::Required,
        range: Range::Text("a workload name (`numasim workloads`)"),
        about: "which program the step runs",
    },
    Param {
        key: "metrics",
        kind: Kind::StrList,
        unit: "",
        default: Default::Text("every metric of the workload"),
        range: Range::Text("the workload's metrics"),
        about: "keep only these metrics",
    },
];

const fn p(
    key: &'static str,
    kind: Kind,
    unit: &'static str,
    default: Default,
    range: Range,
    about: &'static str,
) -> Param {
    Param {
        key,
        kind,
        unit,
        default,
        range,
        about,
    }
}

const fn m(name: &'static str, unit: &'static str, about: &'static str) -> Metric {
    Metric { name, unit, about }
}

use self::Default::{Required, Text as DText, Value as DVal};
use self::Kind::*;
use self::Range::{Any, Int as RInt, Text as RText};

const TASK_JOB: Param = p(
    "task",
    Str,
    "",
    DVal("\"job\""),
    Any,
    "the task's name: steps naming the same task share its memory",
);
const HORIZON: Param = p(
    "horizon_s",
    Int,
    "s",
    DVal("3600"),
    RInt(1, 86_400),
    "simulated time after which the step gives up",
);
const CPU0: Param = p(
    "cpu",
    Int,
    "",
    DVal("0"),
    RText("0 .. the machine's CPUs − 1"),
    "the CPU the task runs on",
);
const NODES_MEM: Param = p(
    "nodes",
    IntList,
    "",
    DText("every node with memory"),
    RText("node ids 0 .. nodes − 1, at least one"),
    "nodes the memory is spread over",
);
const ZCB: Param = p(
    "zcb",
    Bool,
    "",
    DVal("true"),
    Any,
    "under a `bigmem` kernel, run as a Zepto compute binary (buffers in Big Memory)",
);
const HOT: Param = p(
    "hot_pages",
    Int,
    "pages",
    DVal("2"),
    RInt(0, 64),
    "pages outside the buffer touched every pass (stack, code): TLB entries they keep",
);
const SIZES: Param = p(
    "size",
    Sizes,
    "B",
    Required,
    RText("two cache lines (random-read: `read_bytes`) .. the machine's memory"),
    "buffer sizes, one row each",
);
const fn counts(key: &'static str, default: Default, about: &'static str) -> Param {
    p(
        key,
        Counts,
        "",
        default,
        RText("1 .. min(the machine's CPUs, 16384); at most 64 counts, together at most 16384"),
        about,
    )
}

const PCI_DEVICE_NODE: Param = p(
    "device_node",
    Int,
    "",
    DVal("0"),
    RText("0 .. nodes − 1"),
    "node whose I/O chipset the device's bus hangs off",
);
const PCI_CPU: Param = p(
    "cpu",
    Int,
    "",
    DText("the first CPU of the device's node"),
    RText("0 .. the machine's CPUs − 1"),
    "the CPU that drives the device",
);
const PCI_LOAD: Param = p(
    "load",
    StrList,
    "",
    DVal("[\"idle\"]"),
    RText("`idle`, `busy` (a name or a list)"),
    "`busy`: a second bus master streams DMA writes as fast as the bus allows",
);
const PCI_OPS: Param = p(
    "ops",
    Int,
    "",
    DVal("200"),
    RInt(1, 100_000),
    "operations timed, one after another with random gaps",
);
const PCI_DMA_NODES: Param = p(
    "dma_nodes",
    IntList,
    "",
    DText("every node"),
    RText("node ids 0 .. nodes − 1"),
    "nodes the background DMA writes go to, in turn",
);

const FLAG: &str = "flag";

const FS: Param = p(
    "fs",
    Choice(&["xfs", "ext2", "ext3"]),
    "",
    Required,
    Any,
    "the filesystem (XFS: delayed allocation; Ext2/Ext3: allocation in the write path)",
);
const IO_THREADS: Param = p(
    "threads",
    Counts,
    "",
    Required,
    RText("1 .. 4 × the machine's CPUs"),
    "thread counts to sweep; one file per thread, thread i on CPU i",
);
const STRIPE_UNIT: Param = p(
    "stripe_unit",
    Size,
    "B",
    DVal("\"512 KiB\""),
    RText("a multiple of block_size and of the page size"),
    "the volume's stripe unit (MD raid0 over DM stripe)",
);
const BLOCK_SIZE: Param = p(
    "block_size",
    Size,
    "B",
    DVal("\"4 KiB\""),
    RText("a power of two, 512 B .. 64 KiB"),
    "the filesystem block size",
);
const fn file_size(d: &'static str) -> Param {
    p(
        "file_size",
        Size,
        "B",
        DVal(d),
        RText("threads × file_size (× seeds) ≤ 256 GiB; past the volume: enospc"),
        "each thread's file",
    )
}
const READAHEAD: Param = p(
    "readahead",
    Size,
    "B",
    DVal("\"64 MiB\""),
    RText("more than zero"),
    "readahead window (blockdev --setra), refilled half at a time",
);
const ENOSPC: Metric = Metric {
    name: "enospc",
    unit: "flag",
    about: "1 if the files did not fit on the volume (no other metric then)",
};

pub static WORKLOADS: &[Spec] = &[
    Spec {
        name: "boot",
        about: "boot to a shell; report the boot-time hash tables",
        params: &[],
        one_of: &[],
        metrics: &[
            m("hash_bytes", "B", "size of each boot-time hash table (row key `table`)"),
            m("hash_requested_bytes", "B", "size asked for before caps"),
            m("tcp_ehash_bytes", "B", "TCP established hash"),
            m("tcp_ehash_requested_bytes", "B", "TCP established hash asked for"),
            m("max_node_hash_fraction", "fraction", "largest share of the tables on one node"),
            m("hash_nodes", "nodes", "nodes a table spans (row key `table`)"),
            m("hash_entries", "entries", "buckets of each table, as dmesg prints them (row key `table`)"),
            m("hash_order", "order", "ilog2(bytes) - PAGE_SHIFT, as dmesg prints it (row key `table`)"),
            m("hash_vmalloc", FLAG, "1 if the table was vmalloc'ed, 0 if linear (row key `table`)"),
            m("initcall_node", "node", "node the boot CPU ran initcalls on"),
        ],
        example_machine: "altix-hashdist-16",
        example_kernel: "",
        example: "workload = \"boot\"\n",
    },
    Spec {
        name: "meminfo",
        about: "per-node MemTotal/MemFree/MemUsed, as /sys/devices/system/node/node*/meminfo",
        params: &[],
        one_of: &[],
        metrics: &[
            m("mem_total_kb", "kB", "MemTotal (row key `node`)"),
            m("mem_free_kb", "kB", "MemFree"),
            m("mem_used_kb", "kB", "MemUsed"),
            m("hash_kb", "kB", "boot-time hash tables"),
            m("page_cache_kb", "kB", "page cache"),
            m("slab_kb", "kB", "slab"),
            m("anon_kb", "kB", "anonymous memory"),
        ],
        example_machine: "altix-hashdist-16",
        example_kernel: "",
        example: "workload = \"meminfo\"\nmetrics = [\"mem_used_kb\"]\n",
    },
    Spec {
        name: "touch",
        about: "threads first-touch memory under a policy; report where it landed",
        params: &[
            p("bytes", Size, "B", Required, RText("threads × bytes ≤ the machine's memory"), "memory each thread touches"),
            p("threads", Int, "", DText("give one of threads, cpus, nodes"), RText("1 .. min(the machine's CPUs, 4096)"), "threads on CPUs 0, 1, …"),
            p("cpus", IntList, "", DText("give one of threads, cpus, nodes"), RText("CPU ids 0 .. CPUs − 1"), "one thread on each listed CPU"),
            p("nodes", IntList, "", DText("give one of threads, cpus, nodes"), RText("node ids 0 .. nodes − 1"), "one thread on every CPU of the listed nodes"),
            p("policy", Choice(&["local", "bind", "preferred", "interleave", "round-robin"]), "", DVal("\"local\""), Any, "the memory policy (set_mempolicy/numactl)"),
            p("policy_nodes", IntList, "", DText("all nodes (interleave); required by bind and preferred"), RText("node ids 0 .. nodes − 1"), "the policy's node mask"),
        ],
        one_of: &["threads", "cpus", "nodes"],
        metrics: &[
            m("touched_kb", "kB", "memory placed on each node (row key `node`)"),
            m("job_remote_fraction", "fraction", "share of the job's memory off its threads' nodes"),
            m("max_thread_remote_fraction", "fraction", "the worst thread's remote share"),
            m("job_slowdown", "x", "a synchronised job's slowdown from remote memory"),
            m("oom", FLAG, "1 if the touch ran out of memory"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"touch\"\nbytes = \"1 GB\"\nnodes = [0, 1]\npolicy = \"interleave\"\n",
    },
    Spec {
        name: "read",
        about: "one process reads a file through the page cache (buffered I/O)",
        params: &[
            p("bytes", Size, "B", Required, Any, "the file's size"),
            CPU0,
        ],
        one_of: &[],
        metrics: &[
            m("reader_node_excess_pages", "pages", "pages beyond the reader's node share it took"),
            m("read_oom", FLAG, "1 if the read ran out of memory"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"read\"\nbytes = \"4 GB\"\n",
    },
    Spec {
        name: "vmstat",
        about: "machine-wide counters: kswapd wake-ups, nodes full of page cache",
        params: &[],
        one_of: &[],
        metrics: &[
            m("kswapd_woken", FLAG, "1 if kswapd woke at all"),
            m("kswapd_wakeups", "count", "kswapd wake-ups"),
            m("nodes_full_of_page_cache", "nodes", "nodes whose free memory is page cache"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"vmstat\"\n",
    },
    Spec {
        name: "hold",
        about: "a task takes anonymous memory and keeps it (memory + swap)",
        params: &[TASK_JOB, p("bytes", Size, "B", Required, RText("≤ memory + swap"), "memory held"), NODES_MEM],
        one_of: &[],
        metrics: &[
            m("held_gb", "GiB", "memory held"),
            m("held_in_swap_gb", "GiB", "of it, in swap"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"hold\"\nbytes = \"100 GB\"\n",
    },
    Spec {
        name: "write",
        about: "a task writes a file with buffered I/O while the clock runs: reclaim, swap, OOM",
        params: &[
            TASK_JOB,
            p("bytes", Size, "B", Required, Any, "the file's size"),
            CPU0,
            p("from_anon", Bool, "", DVal("true"), Any, "the data comes from the task's own anonymous memory"),
            HORIZON,
        ],
        one_of: &[],
        metrics: &[
            m("completed", FLAG, "1 if the write finished within horizon_s"),
            m("incomplete_at_s", "s", "the horizon at which a cut-short run stopped (null if it ended on its own)"),
            m("oom_kills", "count", "tasks the OOM killer killed"),
            m("swap_out_gb", "GiB", "swapped out"),
            m("swap_in_gb", "GiB", "swapped in"),
            m("write_gibps", "GiB/s", "the writer's rate"),
            m("file_io_gibps", "GiB/s", "file data reaching the disks"),
            m("hardware_gibps", "GiB/s", "what the disks can take"),
            m("write_fraction_of_hardware", "fraction", "write_gibps / hardware_gibps"),
            m("max_stall_s", "s", "longest allocation stall"),
            m("throttled_s", "s", "time throttled by the page-cache limit"),
            m("elapsed_s", "s", "simulated time of the step"),
            m("kswapd_cpu_s", "s", "CPU time of kswapd"),
            m("direct_reclaim_cpu_s", "s", "CPU time in direct reclaim"),
            m("reclaim_written_gb", "GiB", "dirty pages written by reclaim"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"write\"\nbytes = \"20 GB\"\nhorizon_s = 600\n",
    },
    Spec {
        name: "alloc",
        about: "threads first-touch anonymous memory while the clock runs: stalls, swap, spill",
        params: &[HORIZON, TASK_JOB, p("bytes", Size, "B", Required, Any, "memory each thread touches"), NODES_MEM],
        one_of: &[],
        metrics: &[
            m("completed", FLAG, "1 if every thread finished within horizon_s"),
            m("incomplete_at_s", "s", "the horizon at which a cut-short run stopped (null if it ended on its own)"),
            m("max_stall_s", "s", "longest allocation stall"),
            m("swap_out_gb", "GiB", "swapped out"),
            m("remote_alloc_fraction", "fraction", "share placed off the thread's node"),
            m("oom_kills", "count", "tasks the OOM killer killed"),
            m("elapsed_s", "s", "simulated time of the step"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"alloc\"\nbytes = \"1 GB\"\nnodes = [0]\nhorizon_s = 600\n",
    },
    Spec {
        name: "runaway",
        about: "a task allocates without end until the OOM killer stops it (or never)",
        params: &[
            HORIZON,
            p("task", Str, "", DVal("\"runaway\""), Any, "the task's name"),
            CPU0,
        ],
        one_of: &[],
        metrics: &[
            m("time_to_oom_kill_s", "s", "from start to the kill"),
            m("shrink_pass_s", "s", "one failed reclaim sweep"),
            m("oom_kills", "count", "tasks the OOM killer killed"),
        ],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"runaway\"\nhorizon_s = 600\n",
    },
    Spec {
        name: "bcfree",
        about: "SGI's bcfree command: drop every clean, unmapped page-cache page",
        params: &[],
        one_of: &[],
        metrics: &[m("bcfree_freed_gb", "GiB", "page cache freed")],
        example_machine: "altix-256g",
        example_kernel: "",
        example: "workload = \"bcfree\"\n",
    },
    Spec {
        name: "tick",
        about: "every CPU's timer tick and its shared-line work (profiler, timer adjust)",
        params: &[counts("cpus", DText("every CPU"), "CPU counts to sweep")],
        one_of: &[],
        metrics: &[
            m("tick_work_fraction", "fraction", "share of each CPU's time in the tick (row key `cpus`)"),
            m("forward_progress", "fraction", "share left to user work"),
            m("boots", FLAG, "1 if the machine gets through boot"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"tick\"\ncpus = [64, 512]\n",
    },
    Spec {
        name: "gettimeofday",
        about: "threads call gettimeofday() back to back (cmpxchg on a shared word)",
        params: &[
            counts("threads", Required, "thread counts to sweep"),
            p("calls", Int, "", DVal("200"), RInt(1, 100_000), "calls per thread; threads² × calls ≤ 2²⁶"),
        ],
        one_of: &[],
        metrics: &[
            m("time_per_call_ns", "ns", "mean time of one call (row key `threads`)"),
            m("slowdown_vs_one", "x", "against one thread"),
            m("cmpxchg_attempts_per_call", "count", "cmpxchg tries per call"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"gettimeofday\"\nthreads = [1, 64]\n",
    },
    Spec {
        name: "fault-touch",
        about: "threads of one process first-touch anonymous memory (mmap_sem, page_table_lock)",
        params: &[
            counts("threads", Required, "thread counts to sweep"),
            p("bytes", Size, "B", Required, RText("one page .. the machine's memory"), "memory the process touches, split over its threads"),
            p("sample", Int, "faults", DVal("64"), RInt(1, 1_000_000), "faults simulated per thread; threads (summed over the sweep) × sample ≤ 2²⁰"),
        ],
        one_of: &[],
        metrics: &[
            m("touch_time_s", "s", "time to touch it all (row key `threads`)"),
            m("lock_wait_fraction", "fraction", "share of time waiting for locks"),
            m("faults_per_s", "1/s", "page faults per second"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"fault-touch\"\nthreads = [1, 32]\nbytes = \"16 GB\"\n",
    },
    Spec {
        name: "devzero",
        about: "one process per CPU faults in a private /dev/zero mapping (superblock lock)",
        params: &[
            counts("processes", Required, "process counts to sweep"),
            p("bytes", Size, "B", Required, RText("one page .. memory / processes"), "each process's mapping"),
            p("sample", Int, "faults", DVal("64"), RInt(1, 1_000_000), "faults simulated per process; processes (summed over the sweep) × sample ≤ 2²²"),
        ],
        one_of: &[],
        metrics: &[
            m("faults_per_s", "1/s", "page faults per second (row key `processes`)"),
            m("improvement", "x", "against the 2.4 kernel on the same count"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"devzero\"\nprocesses = [1, 16]\nbytes = \"1 GB\"\n",
    },
    Spec {
        name: "hugetlb",
        about: "map huge pages and zero them: prefault in one thread or on fault in parallel",
        params: &[
            p("size", Size, "B", Required, RText("1 byte .. the machine's memory"), "the mapping"),
            counts("cpus", Required, "CPU counts to sweep"),
        ],
        one_of: &[],
        metrics: &[
            m("zero_time_s", "s", "time to zero the mapping (row key `cpus`)"),
            m("speedup_vs_one", "x", "against one CPU"),
            m("lock_hold_s", "s", "time the hugetlb lock is held"),
            m("hugetlb_gb", "GiB", "huge pages mapped"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"hugetlb\"\nsize = \"10 GB\"\ncpus = [1, 8]\n",
    },
    Spec {
        name: "pagecache-count",
        about: "CPUs insert and remove page-cache pages, updating the page count",
        params: &[
            counts("cpus", Required, "CPU counts to sweep"),
            p("ops", Int, "", DVal("100"), RInt(1, 100_000), "insertions per CPU; cpus (summed over the sweep) × ops ≤ 2²²"),
            p("work_ns", Int, "ns", DVal("2000"), RInt(0, 1_000_000_000), "other work per insertion"),
        ],
        one_of: &[],
        metrics: &[
            m("insertions_per_s", "1/s", "machine-wide (row key `cpus`)"),
            m("counter_share_of_time_pct", "%", "time spent on the counter's line"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"pagecache-count\"\ncpus = [1, 64]\n",
    },
    Spec {
        name: "spinlock",
        about: "every CPU loops on one spinlock with a short critical section",
        params: &[
            counts("cpus", DText("every CPU"), "contending CPUs (the largest count given)"),
            p("hold_ns", Int, "ns", DVal("200"), RInt(0, 1_000_000_000), "critical section"),
            p("think_ns", Int, "ns", DVal("0"), RInt(0, 1_000_000_000), "time between acquisitions"),
            p("duration_us", Int, "us", DVal("10000"), RInt(1, 1_000_000), "simulated time; cpus × duration_us ≤ 10⁸"),
        ],
        one_of: &[],
        metrics: &[
            m("acquisitions_per_s", "1/s", "machine-wide"),
            m("max_wait_us", "us", "longest wait (row key `node`)"),
            m("starved_nodes", "count", "nodes that never got the lock"),
        ],
        example_machine: "wildfire-gs320",
        example_kernel: "",
        example: "workload = \"spinlock\"\nduration_us = 1000\n",
    },
    Spec {
        name: "sched-ops",
        about: "every CPU loops: user work, then fork, wake or exit, then schedule() (run-queue locks)",
        params: &[
            p("cpus", Counts, "", Required, RText("1 .. min(the machine's CPUs, 16384); at most 64 counts"), "CPU counts to sweep"),
            p("tasks_per_cpu", Int, "", DVal("2"), RInt(1, 1000), "runnable tasks per CPU (what 2.4's goodness() walks)"),
            p("work_ns", Int, "ns", DVal("5000"), RInt(0, 1_000_000_000), "user work between operations"),
            p("duration_us", Int, "us", DVal("2000"), RInt(1, 1_000_000), "simulated time; cpus (summed over the sweep) × duration_us ≤ 10⁸"),
        ],
        one_of: &[],
        metrics: &[
            m("sched_ops_per_s", "1/s", "fork, exit, wake and schedule() calls per second (row key `cpus`)"),
            m("lock_wait_fraction", "fraction", "share of CPU time spent waiting for run-queue locks"),
        ],
        example_machine: "altix-512",
        example_kernel: "runqueue = \"global\"\n",
        example: "workload = \"sched-ops\"\ncpus = [2, 16]\n",
    },
    Spec {
        name: "boot-balance",
        about: "early boot: a few busy CPUs with pinned tasks, the rest idle and load-balancing against them",
        params: &[
            p("cpus", Counts, "", DText("every CPU"), RText("2 .. min(the machine's CPUs, 16384); at most 64 counts"), "CPU counts to sweep"),
            p("busy_cpus", Int, "", DVal("1"), RText("1 .. the smallest `cpus` − 1"), "CPUs running boot work (the first ones)"),
            p("pinned", Int, "", DVal("2"), RText("0 .. the smallest `cpus`"), "pinned tasks queued on the busy CPU besides the boot thread"),
            p("window_ms", Int, "ms", DVal("100"), RInt(10, 10_000), "simulated boot window (the first quarter is not measured); cpus (summed over the sweep) × window_ms ≤ 10⁷"),
        ],
        one_of: &[],
        metrics: &[
            m("busy_cpu_lock_share_pct", "%", "share of time the busy CPU is not waiting for its own run-queue lock (row key `cpus`)"),
            m("livelock", FLAG, "1 if the busy CPU waits longer than one tick for its own lock"),
            m("boot_progress", "fraction", "share of the busy CPU's time left to boot work"),
            m("max_wait_us", "us", "longest wait of the busy CPU for its own lock"),
            m("balance_attempts_per_s", "1/s", "load_balance() attempts that took the busiest lock"),
        ],
        example_machine: "altix-512",
        example_kernel: "balance_backoff = \"progressive\"\n",
        example: "workload = \"boot-balance\"\ncpus = [64, 128]\n",
    },
    Spec {
        name: "rq-peek",
        about: "one CPU reads every CPU's nr_running and cpu_load, as the balance loop does (TLB and cache)",
        params: &[
            p("cpus", Counts, "", Required, RText("1 .. min(the machine's CPUs, 16384); at most 64 counts"), "CPU counts to sweep"),
            p("other_pages", Int, "pages", DText("the machine's TLB entries"), RInt(0, 1 << 20), "pages the rest of a tick's work touches between two loops"),
        ],
        one_of: &[],
        metrics: &[
            m("peek_all_us", "us", "one loop over every CPU (row key `cpus`)"),
            m("tlb_misses", "count", "TLB misses in the loop"),
            m("cache_misses", "count", "cache misses in the loop"),
        ],
        example_machine: "altix-512",
        example_kernel: "rq_layout = \"global-array\"\n",
        example: "workload = \"rq-peek\"\ncpus = [64, 512]\n",
    },
    Spec {
        name: "aim7",
        about: "an AIM VII-like multi-user mix: tasks compute, sleep on I/O and wake (docs/sched.md)",
        params: &[
            p("tasks", Counts, "", Required, RInt(1, 20_000), "task counts to sweep"),
            p("cpu_ms", Float, "ms", DVal("70.0"), RText("0.001 … 10⁶"), "CPU time of one job with its memory local"),
            p("io_ms", Float, "ms", DVal("140.0"), RText("0 … 10⁶"), "I/O sleep of one job"),
            p("waits", Int, "", DVal("12"), RInt(1, 10_000), "I/O sleeps (and wake-ups) per job"),
            p("mem_stall_pct", Float, "%", DVal("20.0"), RText("0 … 100"), "share of CPU time stalled on memory at local latency"),
            p("warmup_s", Float, "s", DVal("5.0"), RText("0 … 3600"), "simulated time before measuring"),
            p("measure_s", Float, "s", DVal("10.0"), RText("0.01 … 3600; bursts simulated ≤ 5×10⁷"), "simulated time measured"),
        ],
        one_of: &[],
        metrics: &[
            m("jobs_per_min", "1/min", "jobs finished per minute, all tasks (row key `tasks`)"),
            m("jobs_per_min_per_task", "1/min", "per task"),
            m("lock_share_pct", "%", "share of CPU time spinning on or holding the run-queue lock"),
            m("local_bursts_pct", "%", "CPU bursts run on the node holding the job's memory"),
            m("migrations", "count", "bursts run on another node than the task's previous one"),
            m("mean_walk", "tasks", "mean queue length a schedule() walked with goodness()"),
        ],
        example_machine: "wildfire-gs320",
        example_kernel: "sched = \"numa\"\n",
        example: "workload = \"aim7\"\ntasks = [1, 64]\nmeasure_s = 2.0\n",
    },
    Spec {
        name: "zcb",
        about: "a Zepto compute binary's exec/brk/mmap/munmap/ptrace in Big Memory (BG/P)",
        params: &[
            ZCB,
            p("ops", StrList, "", Required, RText("at most 100000; the first is `exec`: `exec TEXT [DATA [STACK]]`, `brk SIZE`, `mmap SIZE`, `mmap-file SIZE`, `munmap N [OFFSET SIZE]`, `timeslice [K]`, `ptrace`, `fork`, `mprotect`"), "the calls, in order"),
        ],
        one_of: &[],
        metrics: &[
            m("bigmem_chunks", "chunks", "chunks in the Big Memory area"),
            m("bigmem_used_mb", "MB", "used"),
            m("bigmem_free_mb", "MB", "free"),
            m("bigmem_largest_free_mb", "MB", "largest free chunk"),
            m("paged_mb", "MB", "paged memory outside the area"),
            m("tlb_bigmem_entries", "entries", "TLB entries pinned for Big Memory"),
            m("tlb_paged_entries", "entries", "TLB entries left to paged memory"),
            m("tlb_installs", "count", "TLB installs"),
            m("tlb_removals", "count", "TLB removals"),
            m("tlb_misses", "count", "TLB misses"),
            m("tlb_temp_installs", "count", "temporary installs"),
        ],
        example_machine: "bgp-node",
        example_kernel: "bigmem_mb = 1792\n",
        example: "workload = \"zcb\"\nops = [\"exec 16MB\", \"mmap 256MB\", \"munmap 0\"]\n",
    },
    Spec {
        name: "stream-copy",
        about: "copy one half of a buffer to the other, pass after pass (TLB, prefetch, tick)",
        params: &[SIZES, ZCB, HOT],
        one_of: &[],
        metrics: &[
            m("copy_mbps", "MB/s", "copy bandwidth (row key `size`)"),
            m("tlb_misses_per_pass", "count", "TLB misses per pass"),
        ],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"stream-copy\"\nsize = [\"16 kB\", \"64 MB\"]\n",
    },
    Spec {
        name: "random-read",
        about: "random reads within a buffer: caches and TLB misses (sampled TLB)",
        params: &[
            p("read_bytes", Int, "B", DVal("8"), RText("1 .. the cache line"), "bytes per read"),
            p("samples", Int, "", DVal("100000"), RInt(1000, 1_000_000), "sampled accesses of the TLB simulation"),
            SIZES,
            ZCB,
            HOT,
        ],
        one_of: &[],
        metrics: &[
            m("random_mbps", "MB/s", "read bandwidth (row key `size`)"),
            m("ns_per_read", "ns", "mean time per read"),
            m("tlb_miss_rate", "fraction", "TLB misses per read"),
        ],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"random-read\"\nsize = [\"1 MB\", \"256 MB\"]\n",
    },
    Spec {
        name: "gettimeofday-cost",
        about: "one core calls gettimeofday() as a system call or in user space",
        params: &[p("gettimeofday", Choice(&["syscall", "user"]), "", DVal("\"syscall\""), Any, "how the time is read")],
        one_of: &[],
        metrics: &[m("time_per_call_us", "us", "time of one call")],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"gettimeofday-cost\"\n",
    },
    Spec {
        name: "selfish",
        about: "Selfish detour benchmark and an L1-resident FMA loop: OS noise",
        params: &[
            p("threshold_us", Float, "us", DVal("1.0"), Range::Float(0.0, 1e6), "a gap longer than this is a detour"),
            p("duration_s", Float, "s", DVal("1.0"), Range::Float(0.001, 3600.0), "simulated time"),
            ZCB,
        ],
        one_of: &[],
        metrics: &[
            m("noise_cpu_pct", "%", "share of time in detours"),
            m("detours_per_s", "1/s", "detours per second"),
            m("fpu_gflops", "Gflop/s", "the FMA loop's rate"),
        ],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"selfish\"\n",
    },
    Spec {
        name: "ring-copy",
        about: "LOFAR: copy blocks into the rows of a ring buffer (a TLB miss per row visit)",
        params: &[
            p("ring", Size, "B", DVal("\"1536 MiB\""), RText("1 byte .. the machine's memory"), "the ring buffer"),
            p("streams", Int, "", DVal("244"), RInt(1, 65_536), "rows (subbands); ring / streams > block_bytes"),
            p("block_bytes", Int, "B", DVal("128"), RInt(1, 1_048_576), "bytes copied into a row per visit"),
            p("copy_unit_bytes", Int, "B", DText("min(8, block_bytes)"), RText("1 .. block_bytes"), "bytes per load/store"),
            ZCB,
            HOT,
        ],
        one_of: &[],
        metrics: &[
            m("memcpy_mbps", "MB/s", "copy bandwidth"),
            m("tlb_miss_rate", "fraction", "TLB misses per access"),
            m("tlb_misses_per_block", "count", "TLB misses per block"),
            m("tlb_miss_ns", "ns", "cost of one TLB miss"),
        ],
        example_machine: "bgp-node",
        example_kernel: "",
        example: "workload = \"ring-copy\"\nring = \"256 MB\"\n",
    },
    Spec {
        name: "pio-read",
        about: "a CPU times PIO reads of a device register, normal (DMA flushed after the read, sn2) or relaxed, on an idle bus or beside a DMA stream",
        params: &[
            PCI_DEVICE_NODE,
            PCI_CPU,
            p("pio", StrList, "", DVal("[\"normal\", \"relaxed\"]"), RText("`normal`, `relaxed` (a name or a list)"), "read routine: `readX()` or `readX_relaxed()`"),
            PCI_LOAD,
            PCI_OPS,
            PCI_DMA_NODES,
        ],
        one_of: &[],
        metrics: &[
            m("time_ns", "ns", "mean time of one read (rows `pio`, `load`)"),
            m("time_max_ns", "ns", "slowest read"),
            m("dma_mbps", "MB/s", "background DMA written to memory meanwhile"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"pio-read\"\nload = [\"idle\", \"busy\"]\nops = 50\n",
    },
    Spec {
        name: "pio-flush",
        about: "a CPU posts PIO writes and orders them: a PIO read, a relaxed read, or sn_mmiob() polling the local hub",
        params: &[
            PCI_DEVICE_NODE,
            PCI_CPU,
            p("pio_flush", StrList, "", DVal("[\"pio-read\", \"relaxed-read\", \"mmiob\"]"), RText("`pio-read`, `relaxed-read`, `mmiob` (a name or a list)"), "how the writes are ordered"),
            p("writes", Int, "", DVal("5"), RInt(0, 1000), "posted writes before the ordering step"),
            PCI_LOAD,
            PCI_OPS,
            PCI_DMA_NODES,
        ],
        one_of: &[],
        metrics: &[
            m("time_ns", "ns", "mean time of the writes and their ordering (rows `pio_flush`, `load`)"),
            m("chipset_read_ns", "ns", "one poll of the local hub's register with nothing pending"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"pio-flush\"\nops = 50\n",
    },
    Spec {
        name: "dma-iops",
        about: "a storage adapter drives I/Os against command/status rings from pci_alloc_consistent() on its node or a remote one",
        params: &[
            PCI_DEVICE_NODE,
            PCI_CPU,
            p("dma_alloc", StrList, "", DVal("[\"local\", \"remote\"]"), RText("`local`, `remote` (a name or a list)"), "where the rings are: the device's node or each of `remote_nodes`"),
            p("remote_nodes", IntList, "", DText("the nearest node at each distance from the device"), RText("node ids other than the device's"), "ring nodes for `remote`, one row each"),
            p("io_size", Size, "B", DVal("\"4 KiB\""), RText("1 byte .. 16 MiB"), "data each I/O DMA-writes into memory"),
            p("queue_depth", Counts, "", DVal("1"), RInt(1, 256), "I/Os outstanding, one row each"),
            p("ios", Int, "", DVal("2000"), RInt(1, 100_000), "I/Os completed; more than the largest queue_depth"),
            p("device_ns", Float, "ns", DVal("5000.0"), Range::Float(0.0, 1e9), "the adapter's processing per command"),
            p("host_ns", Float, "ns", DVal("5000.0"), Range::Float(0.0, 1e9), "CPU time per completion (interrupt, midlayer, next submission)"),
        ],
        one_of: &[],
        metrics: &[
            m("iops", "1/s", "I/Os per second (rows `dma_alloc`, `ring_node`, `distance`, `queue_depth`)"),
            m("io_latency_us", "us", "mean time from writing a command to handling its completion"),
        ],
        example_machine: "altix-512",
        example_kernel: "",
        example: "workload = \"dma-iops\"\nremote_nodes = [1, 255]\nios = 200\n",
    },
    Spec {
        name: "direct-io",
        about: "one file per thread with direct I/O: write (allocating), overwrite, read back",
        params: &[
            FS,
            IO_THREADS,
            STRIPE_UNIT,
            BLOCK_SIZE,
            file_size("\"1 GiB\""),
            p("io_size", Size, "B", DVal("\"128 MiB\""), RText("more than zero"), "bytes per read/write call"),
        ],
        one_of: &[],
        metrics: &[
            m("write_gibps", "GiB/s", "allocating write (row key `threads`)"),
            m("overwrite_gibps", "GiB/s", "overwrite in place"),
            m("read_gibps", "GiB/s", "read back"),
            m("disk_busy_pct", "%", "mean disk utilisation while reading"),
            ENOSPC,
        ],
        example_machine: "altix-a3700",
        example_kernel: "",
        example: "workload = \"direct-io\"\nfs = \"xfs\"\nthreads = [1, 4]\nfile_size = \"256 MiB\"\n",
    },
    Spec {
        name: "buffered-read",
        about: "files laid down by parallel dd writers, then read back one per thread through the page cache",
        params: &[FS, IO_THREADS, STRIPE_UNIT, BLOCK_SIZE, file_size("\"128 MiB\""), READAHEAD],
        one_of: &[],
        metrics: &[
            m("read_gibps", "GiB/s", "all readers together (row key `threads`)"),
            m("cpu_pct_per_mibps", "%/(MiB/s)", "percent of one CPU per MiB/s, every CPU's I/O work counted"),
            m("disk_iops", "1/s", "disk requests per second"),
            m("avg_io_kib", "KiB", "average disk request"),
            m("kswapd_cpu_pct_per_node", "%", "kswapd's CPU on each node (mean)"),
            m("disk_busy_pct", "%", "mean disk utilisation"),
            ENOSPC,
        ],
        example_machine: "altix-a3700",
        example_kernel: "version = \"2.6.15\"\nbuffer_policy = \"interleave\"\n",
        example: "workload = \"buffered-read\"\nfs = \"xfs\"\nthreads = [1, 8]\n",
    },
    Spec {
        name: "read-variability",
        about: "buffered reads of file sets laid down by parallel writers, repeated over seeds",
        params: &[
            FS,
            IO_THREADS,
            STRIPE_UNIT,
            BLOCK_SIZE,
            file_size("\"128 MiB\""),
            READAHEAD,
            p("seeds", Int, "", DVal("10"), RInt(1, 100), "repetitions, seeds seed .. seed + seeds − 1"),
        ],
        one_of: &[],
        metrics: &[
            m("best_mibps", "MiB/s", "fastest repetition (row key `threads`)"),
            m("worst_mibps", "MiB/s", "slowest repetition"),
            m("mean_mibps", "MiB/s", "mean over repetitions"),
            ENOSPC,
        ],
        example_machine: "altix-a3700",
        example_kernel: "buffer_policy = \"interleave\"\n",
        example: "workload = \"read-variability\"\nfs = \"ext2\"\nthreads = [2]\nseeds = 3\nfile_size = \"32 MiB\"\n",
    },
    Spec {
        name: "buffered-write",
        about: "buffered writes, one file per thread, the previous file truncated in the timed run",
        params: &[FS, IO_THREADS, STRIPE_UNIT, BLOCK_SIZE, file_size("\"1 GiB\"")],
        one_of: &[],
        metrics: &[
            m("write_mibps", "MiB/s", "all writers together (row key `threads`)"),
            m("cpu_pct_per_mibps", "%/(MiB/s)", "percent of one CPU per MiB/s"),
            m("avg_io_kib", "KiB", "average disk write"),
            m("kswapd_cpu_pct_per_node", "%", "kswapd's CPU on each node"),
            m("pdflush_cpu_pct", "%", "pdflush's CPU (of one CPU)"),
            m("sb_lock_wait_pct", "%", "writers' time waiting for the filesystem's global lock"),
            m("sb_calls_per_s", "1/s", "critical sections entered per second"),
            m("disk_busy_pct", "%", "mean disk utilisation over the timed run"),
            m(
                "writeback_age_s",
                "s",
                "how long after being dirtied a page is written back (pdflush's periodic pass, background writeout, the dirty threshold, or its node's LRU tail)",
            ),
            m("kswapd_cpu_pct_max", "%", "the busiest node's kswapd"),
            m(
                "reclaim_write_pct",
                "%",
                "share of the written-back bytes reclaim wrote itself from the LRU tails (kswapd's pageout(), or the writers' direct reclaim)",
            ),
            ENOSPC,
        ],
        example_machine: "altix-a3700",
        example_kernel: "version = \"2.6.17\"\n",
        example: "workload = \"buffered-write\"\nfs = \"xfs\"\nthreads = [1, 4]\n",
    },
    // workload/membw.rs (issue 29): one entry each, specs beside their readers.
    super::membw::SPECS[0],
    super::membw::SPECS[1],
    super::membw::SPECS[2],
    super::membw::SPECS[3],
    super::membw::SPECS[4],
];

/// The spec of workload `name`.
pub fn find(name: &str) -> Option<&'static Spec> {
    WORKLOADS.iter().find(|s| s.name == name)
}

fn range_text(p: &Param) -> String {
    match p.range {
        Range::Int(lo, hi) => format!("{} … {}", group(lo), group(hi)),
        Range::Float(lo, hi) => format!("{lo} … {hi}"),
        Range::Text(t) => t.to_string(),
        Range::Any => match p.kind {
            Kind::Choice(_) => "one of the names".into(),
            _ => "any".into(),
        },
    }
}

fn default_text(p: &Param) -> String {
    match p.default {
        Default::Required => "required".into(),
        Default::Value(v) => format!("`{v}`"),
        Default::Text(t) => t.to_string(),
    }
}

/// 1000000 as 1_000_000, so long bounds can be read at a glance.
fn group(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

/// One workload as Markdown: the section `docs/scenario.md` holds and
/// `numasim workloads NAME` prints.
pub fn markdown(s: &Spec) -> String {
    let mut o = format!("### `{}`\n\n{}.\n\n", s.name, s.about);
    if s.params.is_empty() {
        o.push_str("Keys: none beyond `workload` and `metrics`.\n\n");
    } else {
        o.push_str(
            "| key | type | unit | default | allowed | meaning |\n|---|---|---|---|---|---|\n",
        );
        for p in s.params {
            o.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                p.key,
                p.kind.name(),
                p.unit,
                default_text(p),
                range_text(p),
                p.about
            ));
        }
        o.push('\n');
        if !s.one_of.is_empty() {
            let keys: Vec<String> = s.one_of.iter().map(|k| format!("`{k}`")).collect();
            o.push_str(&format!("Give exactly one of {}.\n\n", keys.join(", ")));
        }
    }
    o.push_str("| metric | unit | meaning |\n|---|---|---|\n");
    for m in s.metrics {
        o.push_str(&format!("| `{}` | {} | {} |\n", m.name, m.unit, m.about));
    }
    o.push_str(&format!(
        "\nExample:\n\n```toml\n{}```\n\n",
        example_scenario(s)
    ));
    o
}

/// A whole scenario around the example step: `numasim run` takes it as is.
pub fn example_scenario(s: &Spec) -> String {
    let kernel = if s.example_kernel.is_empty() {
        String::new()
    } else {
        format!("[kernel]\n{}", s.example_kernel)
    };
    format!(
        "name = \"{}-example\"\n[machine]\npreset = \"{}\"\n{kernel}[[run]]\n{}",
        s.name, s.example_machine, s.example
    )
}

/// Every workload as Markdown: the generated part of `docs/scenario.md`.
pub fn reference_markdown() -> String {
    let mut o = String::from(
        "Every step also takes `workload` (the name, required) and `metrics` \
         (a list: keep only these; default all). Sizes are integers of bytes or \
         strings with a unit (`\"16 kB\"`, `\"1.5 GiB\"`; kB/MB/GB are powers of \
         1000, KiB/MiB/GiB of 1024). A `flag` metric is 1 for yes and 0 for no.\n\n",
    );
    for s in WORKLOADS {
        o.push_str(&markdown(s));
    }
    o
}

/// One workload as plain text for a terminal.
pub fn text(s: &Spec) -> String {
    let mut o = format!("{} — {}\n", s.name, s.about);
    if s.params.is_empty() {
        o.push_str("\nkeys: none beyond `workload` and `metrics`\n");
    } else {
        o.push_str("\nkeys:\n");
        let w = s.params.iter().map(|p| p.key.len()).max().unwrap_or(0);
        for p in s.params {
            let unit = if p.unit.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.unit)
            };
            o.push_str(&format!(
                "  {:<w$}  {}{}; default: {}; allowed: {}\n  {:<w$}  {}\n",
                p.key,
                p.kind.name().replace("\\|", "|"),
                unit,
                default_text(p).replace('`', ""),
                range_text(p).replace('`', ""),
                "",
                p.about
            ));
        }
        if !s.one_of.is_empty() {
            o.push_str(&format!("  give exactly one of {}\n", s.one_of.join(", ")));
        }
    }
    o.push_str("\nmetrics:\n");
    let w = s.metrics.iter().map(|m| m.name.len()).max().unwrap_or(0);
    for m in s.metrics {
        o.push_str(&format!("  {:<w$}  {:<8}  {}\n", m.name, m.unit, m.about));
    }
    o.push_str(&format!("\nexample scenario:\n{}", example_scenario(s)));
    o
}
