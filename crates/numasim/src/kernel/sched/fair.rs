//! `load_balance()` at boot and its back-off ([ALTIX04] E2), and the peek
//! at every CPU's `nr_running`/`cpu_load` (E3).
//!
//! **Boot balance.** The first `busy_cpus` CPUs run the boot thread and
//! `pinned` pinned kernel threads; every other CPU is idle. An idle CPU's
//! rebalance tick finds the busiest queue (CPU 0: ties go to the first
//! found), takes its lock (`double_rq_lock()`), walks its tasks in
//! `move_tasks()`, finds every one pinned (or running) and fails. The busy
//! CPU needs its own lock at every tick (`scheduler_tick()`). Nothing here
//! counts CPUs: the idle CPUs' attempts queue on the busy CPU's lock (an
//! engine [`Lock`](crate::engine::Lock): test-and-set spinners near the releaser win, and every
//! hand-off serves a NACK per spinner) and the busy CPU waits behind them.
//! **Live lock** is declared when, after the first quarter of the window,
//! the busy CPU waits longer than one tick for its own lock: its next
//! timer interrupt is then due before it has finished the last, so it falls
//! behind at every tick and boot cannot proceed (the bound of
//! `workload/timer_tick.rs`).
//!
//! When an idle CPU balances:
//! - `none`, `progressive`: on the jiffy, as mainline O(1) `rebalance_tick()`
//!   did (`!(jiffies % IDLE_NODE_REBALANCE_TICK)`), so every idle CPU tries in
//!   the same jiffy, spread only by where each CPU's tick falls
//!   (`timer.tick_phase`). `progressive` adds `balance_backoff_step_ticks`
//!   per failure to the CPU's next interval (capped), counted from when the
//!   attempt finished.
//! - `2.6.7`: sched domains. A CPU balances when `jiffies + CPU_OFFSET(cpu)`
//!   reaches `last_balance + interval`; an imbalance resets the interval to
//!   the minimum even when nothing moved, and after `cache_nice_tries + 2`
//!   failures it takes the busiest lock again to set `active_balance` and
//!   wakes the busiest CPU's migration thread (a wake-up: the lock again),
//!   which runs on the busy CPU, takes the lock and fails in turn.
//!
//! The boot experiment that drives this is `workload/boot_balance.rs`, on
//! the busiest queue's [`RqLock`](super::rq::RqLock).

use crate::engine::rng::stream;
use crate::kernel::mm::tlb::Tlb;
use crate::kernel::sched::RqLayout;
use crate::machine::Machine;

/// Run-queue lines a failed `load_balance()` reads under the busiest
/// lock (2.6.0 `find_busiest_queue()`/`load_balance()`): the lock and
/// `nr_running`, the array pointers, the array's `nr_active` and bitmap,
/// the first non-empty priority list head.
pub const RQ_LINES: usize = 4;
/// Lines of each queued task `can_migrate_task()` reads: the `run_list`
/// link, and `last_run`/`cpus_allowed`/`array`.
pub const TASK_LINES: usize = 2;

// ---------------------------------------------------------------------
// E3: peeking at every CPU's run-queue fields.

/// Ways of the set-associative cache the peek loop's lines sit in: not in
/// the machine description; Itanium 2's L3 is 12-way, its L2 8-way
/// (docs/sched.md: sensitivity).
pub const PEEK_CACHE_WAYS: usize = 8;
/// Bytes one CPU's entry takes in the global array (`nr_running`, `cpu_load`).
pub const ARRAY_ENTRY_BYTES: u64 = 16;
/// Cycles of the loop body per CPU (compare, add, branch).
pub const PEEK_LOOP_CYCLES: f64 = 10.0;

/// Outcome of [`peek_all`].
#[derive(Debug, Clone, PartialEq)]
pub struct PeekResult {
    /// One loop over every CPU, us.
    pub peek_all_us: f64,
    pub tlb_misses: u64,
    pub cache_misses: u64,
}

/// A set-associative, virtually indexed cache of line addresses with LRU
/// replacement in each set.
struct ViCache {
    sets: Vec<Vec<u64>>,
    ways: usize,
    line: u64,
}

impl ViCache {
    fn new(size: u64, line: u64, ways: usize) -> Self {
        let sets = (size / (line * ways as u64)).max(1) as usize;
        ViCache {
            sets: vec![Vec::with_capacity(ways); sets],
            ways,
            line,
        }
    }
    /// True on a hit; a miss fills the line, evicting the set's LRU line.
    fn access(&mut self, vaddr: u64) -> bool {
        let l = vaddr / self.line;
        let nsets = self.sets.len();
        let set = &mut self.sets[(l % nsets as u64) as usize];
        if let Some(i) = set.iter().position(|&x| x == l) {
            let v = set.remove(i);
            set.push(v);
            return true;
        }
        if set.len() == self.ways {
            set.remove(0);
        }
        set.push(l);
        false
    }
}

/// CPU 0 reads `nr_running` and `cpu_load` of CPUs `0..cpus`, as the
/// balance loop does, in the machine's TLB and last-level cache; between
/// two loops the rest of a tick's work touches `other_pages` pages. The
/// second loop is timed. Per-CPU areas: each CPU's run queue at the same
/// offset of its own area (`boot.percpu_area` apart), the two fields on
/// two lines. Global array: the fields of all CPUs packed in one array.
pub fn peek_all(
    machine: &Machine,
    layout: RqLayout,
    cpus: u64,
    other_pages: u64,
    seed: u64,
) -> PeekResult {
    let page = machine.page_size.max(1);
    let line_b = u64::from(machine.cpu.cache_line.max(1));
    let llc = machine.cpu.last_level_cache();
    let (llc_size, llc_cycles) = llc.map_or((1 << 20, 10.0), |c| (c.size, c.latency_cycles));
    let cycle = 1e3 / machine.cpu.clock_mhz.max(1.0);
    let repl = match machine.tlb.refill {
        crate::machine::TlbRefill::Software => crate::kernel::mm::flavour::Replacement::RoundRobin,
        crate::machine::TlbRefill::Hardware => crate::kernel::mm::flavour::Replacement::Lru,
    };
    let entries = machine
        .tlb
        .entries
        .saturating_sub(machine.tlb.kernel_entries)
        .max(1);
    let mut tlb = Tlb::new(entries, repl, stream(seed, "peek-tlb", cpus));
    let mut cache = ViCache::new(llc_size, line_b, PEEK_CACHE_WAYS);
    let area = machine.boot.percpu_area.max(page);
    // Kernel virtual addresses: per-CPU areas from one base, the array in
    // the kernel's static data (both page aligned).
    const PERCPU_BASE: u64 = 1 << 40;
    const ARRAY_BASE: u64 = 1 << 41;
    const OTHER_BASE: u64 = 1 << 42;
    let fields = |c: u64| -> [(u64, usize); 2] {
        let owner = machine.cpu_node(c).unwrap_or(0);
        match layout {
            RqLayout::PercpuAreas => {
                let rq = PERCPU_BASE + c * area;
                [(rq, owner), (rq + line_b, owner)]
            }
            // Static kernel data: on the boot node.
            RqLayout::GlobalArray => {
                let e = ARRAY_BASE + c * ARRAY_ENTRY_BYTES;
                [(e, 0), (e + 8, 0)]
            }
        }
    };
    let run = |tlb: &mut Tlb, cache: &mut ViCache| -> (f64, u64, u64) {
        let (mut ns, mut tm, mut cm) = (0.0, 0u64, 0u64);
        for c in 0..cpus {
            for (va, owner) in fields(c) {
                if !tlb.access(va / page) {
                    tm += 1;
                    ns += machine.tlb.miss_ns;
                }
                if cache.access(va) {
                    ns += llc_cycles * cycle;
                } else {
                    cm += 1;
                    ns += machine.mem_latency_ns(0, owner);
                }
            }
            ns += PEEK_LOOP_CYCLES * cycle;
        }
        (ns, tm, cm)
    };
    run(&mut tlb, &mut cache);
    for p in 0..other_pages {
        tlb.access((OTHER_BASE + p * page) / page);
    }
    let (ns, tlb_misses, cache_misses) = run(&mut tlb, &mut cache);
    PeekResult {
        peek_all_us: ns / 1e3,
        tlb_misses,
        cache_misses,
    }
}
