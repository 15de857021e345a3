//! Page faults under contention ([ALTIX04] C9, C10, C11): many threads
//! fault pages in at once and meet on shared locks and lines.
//!
//! A fault is a short program of stages run by one thread:
//!
//! - `Sem`: an atomic on the address space's `mmap_sem` count line
//!   (`down_read()` or `up_read()`: readers take the line exclusively too);
//! - `Lock(i)` / `Unlock(i)`: take or release spinlock `i`;
//! - `Write(i)`: write shared line `i` (a list head, a counter), wherever
//!   it was written last;
//! - `PtlWork`: CPU work inside a `page_table_lock` section
//!   (`fault.ptl_hold_ns`);
//! - `Work`: the fault's own CPU time: the fixed fault path plus zeroing the
//!   page at the rate of the memory it landed on.
//!
//! A lock or line is global or one per node ([`Scope`]); so the hold time
//! of a lock is whatever its section's stages cost on that machine, never a
//! number of its own.
//!
//! Anonymous write fault, stock 2.4.21 (`handle_mm_fault()` then
//! `do_anonymous_page()`): `page_table_lock` for the walk, dropped to
//! allocate and zero, retaken to install the page, and inside it
//! `lru_cache_add()` under `pagemap_lru_lock`: `list_add()` writes the list
//! head and the `struct page` of the page added before, and
//! `nr_inactive_pages++`. The Altix path takes no `page_table_lock` (PTE by
//! `cmpxchg` on a line only the faulting thread touches) and its LRU lists
//! and their lock are per node ([ALTIX04] B2). Private `/dev/zero` faults
//! (`kernel.devzero`): each process has its own `mm`; what they share is
//! the superblock lock, whose section updates the two counters it guards
//! (one line), and the LRU.
//!
//! **Batching.** Millions of faults repeat the same contention pattern. The
//! simulator runs every fault of every thread as events until each thread
//! has done `sample` faults (threads keep faulting meanwhile, so contention
//! stays realistic), then finishes each thread at the rate it achieved in
//! that window. With `sample` ≥ the faults per thread it simulates every
//! fault; `tests/contention.rs` checks the two agree at small scale and
//! docs/contention.md discusses the limits.

use crate::engine::{CostTable, Dur, EventQueue, Lock, Time};
use crate::kernel::boot::Booted;
use crate::kernel::locking::contention::Spinlock;
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::{line, rwsem::RwSem, Line};
use crate::kernel::mm::mempolicy::{alloc_pages, Allocator};
use crate::kernel::mm::{Gfp, MemPolicy, Placement, Use};
use crate::machine::Machine;

/// Faults every thread runs as events before the rest is extrapolated.
pub const DEFAULT_SAMPLE: u64 = 64;

/// One stage of a fault; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Sem,
    Lock(usize),
    Unlock(usize),
    Write(usize),
    PtlWork,
    Work,
}

/// Whether a lock or line is one for the machine or one per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    PerNode,
}

/// The locks and lines a fault path names by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPath {
    pub stages: &'static [Stage],
    /// Scope of each lock index.
    pub locks: &'static [Scope],
    /// Scope of each line index.
    pub lines: &'static [Scope],
}

/// Lock and line indices every fault path uses: its own lock (0), the LRU
/// lock (1), the LRU's lines, and the superblock counters' line.
pub(crate) mod idx {
    /// `mm->page_table_lock`, or the `/dev/zero` superblock lock.
    pub const OWN_LOCK: usize = 0;
    /// `pagemap_lru_lock` (stock 2.4), or the node's LRU lock.
    pub const LRU_LOCK: usize = 1;
    /// The inactive list head.
    pub const LRU_HEAD: usize = 0;
    /// The `struct page` that `list_add()` links the new page in front of.
    pub const LRU_PREV: usize = 1;
    /// `nr_inactive_pages`.
    pub const LRU_COUNT: usize = 2;
    /// The two counters the `/dev/zero` superblock lock guards.
    pub const SB_COUNT: usize = 3;
}

use idx::*;
use Stage::*;

/// `lru_cache_add()`: the LRU lock around `add_page_to_inactive_list()`.
const LRU_ADD: [Stage; 5] = [
    Lock(LRU_LOCK),
    Write(LRU_HEAD),
    Write(LRU_PREV),
    Write(LRU_COUNT),
    Unlock(LRU_LOCK),
];

const fn concat<const N: usize>(parts: &[&[Stage]]) -> [Stage; N] {
    let mut out = [Work; N];
    let (mut i, mut k) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[k] = parts[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

const ANON_PTL_STAGES: [Stage; 14] = concat(&[
    &[
        Sem,
        Lock(OWN_LOCK),
        PtlWork,
        Unlock(OWN_LOCK),
        Work,
        Lock(OWN_LOCK),
    ],
    &LRU_ADD,
    &[PtlWork, Unlock(OWN_LOCK), Sem],
]);
const ANON_CMPXCHG_STAGES: [Stage; 8] = concat(&[&[Sem, Work], &LRU_ADD, &[Sem]]);

/// `mmap()` of `/dev/zero` with the superblock lock: the section that
/// updates its two counters, also taken once per fault.
pub const DEVZERO_SETUP: &[Stage] = &[Lock(OWN_LOCK), Write(SB_COUNT), Unlock(OWN_LOCK)];
const DEVZERO_LOCKED_STAGES: [Stage; 9] = concat(&[DEVZERO_SETUP, &[Work], &LRU_ADD]);

/// Stock 2.4.21 anonymous write fault with `lru` LRU lists.
pub fn anon_ptl(lru: Scope) -> FaultPath {
    FaultPath {
        stages: &ANON_PTL_STAGES,
        locks: lock_scopes(lru),
        lines: line_scopes(lru),
    }
}

/// The Altix anonymous fault: no `page_table_lock`, PTE by `cmpxchg`.
pub fn anon_cmpxchg(lru: Scope) -> FaultPath {
    FaultPath {
        stages: &ANON_CMPXCHG_STAGES,
        locks: lock_scopes(lru),
        lines: line_scopes(lru),
    }
}

/// A private `/dev/zero` fault, with the superblock lock (2.4, 2.6) or
/// without it (Altix), and `lru` LRU lists.
pub fn devzero_fault(locked: bool, lru: Scope) -> FaultPath {
    FaultPath {
        stages: if locked {
            &DEVZERO_LOCKED_STAGES
        } else {
            &DEVZERO_LOCKED_STAGES[DEVZERO_SETUP.len()..]
        },
        locks: lock_scopes(lru),
        lines: line_scopes(lru),
    }
}

/// The path's own lock is global; the LRU lock has `lru`'s scope.
fn lock_scopes(lru: Scope) -> &'static [Scope] {
    match lru {
        Scope::Global => &[Scope::Global, Scope::Global],
        Scope::PerNode => &[Scope::Global, Scope::PerNode],
    }
}

/// The LRU's lines have `lru`'s scope; the superblock counters are global.
fn line_scopes(lru: Scope) -> &'static [Scope] {
    match lru {
        Scope::Global => &[Scope::Global; 4],
        Scope::PerNode => &[
            Scope::PerNode,
            Scope::PerNode,
            Scope::PerNode,
            Scope::Global,
        ],
    }
}

/// One faulting thread.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultThread {
    pub cpu: u64,
    pub node: usize,
    pub faults: u64,
    /// CPU time of one fault outside locks and shared lines, ns.
    pub work_ns: u64,
    /// Stages run once before the first fault (e.g. `mmap()` taking the
    /// superblock lock).
    pub setup: &'static [Stage],
}

impl FaultThread {
    /// The threads on `cpus` faulting in the pages `placed` (one placement
    /// per CPU, in `unit`-byte pages): each fault costs the machine's fault
    /// path plus zeroing its page where it landed, under the zeroing load
    /// of every thread on the same memory.
    pub fn on_placements(
        machine: &Machine,
        cpus: &[u64],
        placed: &[Placement],
        unit: u64,
        setup: &'static [Stage],
    ) -> Vec<FaultThread> {
        let sharers = sharers(machine, placed);
        cpus.iter()
            .zip(placed)
            .map(|(&cpu, p)| {
                let node = machine.cpu_node(cpu).unwrap_or(0);
                FaultThread {
                    cpu,
                    node,
                    faults: p.pages(),
                    work_ns: (machine.fault.fault_ns
                        + mean_zero_ns(machine, node, p, unit, &sharers))
                    .round() as u64,
                    setup,
                }
            })
            .collect()
    }
}

/// The result of [`simulate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultRun {
    /// When the last thread finishes, s.
    pub time_s: f64,
    /// Share of the threads' time spent acquiring `mmap_sem` and spinlocks.
    pub lock_wait_fraction: f64,
    /// Longest single lock hold, s.
    pub max_hold_s: f64,
    /// Faults run as events (the rest extrapolated).
    pub simulated_faults: u64,
}

/// Index of the instance of a resource of `scope` used from `node`.
fn instance(base: &[usize], scope: &[Scope], i: usize, node: usize) -> usize {
    base[i]
        + match scope[i] {
            Scope::Global => 0,
            Scope::PerNode => node,
        }
}

/// Where every thread is in its program.
struct Progress<'a> {
    threads: &'a [FaultThread],
    sample: u64,
    /// Index into the setup stages (while `in_setup`) or the fault's.
    stage: Vec<usize>,
    in_setup: Vec<bool>,
    fault: Vec<u64>,
    finish: Vec<Option<Time>>,
    /// Threads that have done their sample.
    reached: usize,
    /// Faults run as events.
    simulated: u64,
}

impl<'a> Progress<'a> {
    fn new(threads: &'a [FaultThread], sample: u64) -> Self {
        let n = threads.len();
        Progress {
            threads,
            sample,
            stage: vec![0; n],
            in_setup: threads.iter().map(|t| !t.setup.is_empty()).collect(),
            fault: vec![0; n],
            finish: vec![None; n],
            reached: 0,
            simulated: 0,
        }
    }

    fn current(&self, i: usize, path: &FaultPath) -> Stage {
        if self.in_setup[i] {
            self.threads[i].setup[self.stage[i]]
        } else {
            path.stages[self.stage[i]]
        }
    }

    /// Move thread `i` past its current stage at `now`; false when it has
    /// done all its faults.
    fn advance(&mut self, i: usize, now: Time, path: &FaultPath) -> bool {
        self.stage[i] += 1;
        let len = if self.in_setup[i] {
            self.threads[i].setup.len()
        } else {
            path.stages.len()
        };
        if self.stage[i] < len {
            return true;
        }
        self.stage[i] = 0;
        if self.in_setup[i] {
            self.in_setup[i] = false;
        } else {
            self.fault[i] += 1;
            self.simulated += 1;
            if self.fault[i] == self.sample.min(self.threads[i].faults) {
                self.reached += 1;
            }
        }
        if self.fault[i] >= self.threads[i].faults {
            self.finish[i] = Some(now);
            return false;
        }
        true
    }
}

/// Run `threads` through `path` with spinlocks of `kind`.
pub fn simulate(
    machine: &Machine,
    threads: &[FaultThread],
    path: &FaultPath,
    kind: Spinlock,
    sample: u64,
    seed: u64,
) -> FaultRun {
    let cost: CostTable = machine.line_cost_table();
    let nodes = machine.node_count();
    let count = |s: &Scope| match s {
        Scope::Global => 1,
        Scope::PerNode => nodes,
    };
    let prefix = |scopes: &[Scope]| -> Vec<usize> {
        scopes
            .iter()
            .scan(0, |acc, s| {
                let b = *acc;
                *acc += count(s);
                Some(b)
            })
            .collect()
    };
    let lock_base = prefix(path.locks);
    let line_base = prefix(path.lines);
    let mut sem = RwSem::new(line(machine, &cost, 0));
    // A per-node lock or line lives on its node; a global one on node 0
    // (boot-time or static data; `mm_struct` of a process started there).
    let homes = |scopes: &[Scope]| -> Vec<usize> {
        scopes
            .iter()
            .flat_map(|s| match s {
                Scope::Global => vec![0],
                Scope::PerNode => (0..nodes).collect(),
            })
            .collect()
    };
    let mut lk: Vec<Lock<&CostTable>> = homes(path.locks)
        .into_iter()
        .enumerate()
        .map(|(i, home)| {
            spinlock(
                machine,
                &cost,
                kind,
                home,
                seed.wrapping_add(i as u64),
                "fault-lock",
            )
        })
        .collect();
    let mut lines: Vec<Line> = homes(path.lines)
        .into_iter()
        .map(|home| line(machine, &cost, home))
        .collect();
    let hold_ns = machine.fault.ptl_hold_ns.round() as u64;
    let n = threads.len();
    let sample = sample.max(1);
    let mut p = Progress::new(threads, sample);
    let mut wait = Dur(0);
    let mut asked = vec![Time::ZERO; n];
    let mut waiting = vec![false; n];
    let mut q = EventQueue::with_capacity(2 * n);
    for (i, t) in threads.iter().enumerate() {
        if t.faults == 0 && t.setup.is_empty() {
            p.finish[i] = Some(Time::ZERO);
            p.reached += 1;
        } else {
            q.push(Time::ZERO, i).expect("empty queue");
        }
    }
    let mut t_end = Time::ZERO;
    // The window ends when every thread has done its sample or, if a lock
    // starves some, when the threads together have done as many faults.
    let budget: u64 = threads.iter().map(|t| sample.min(t.faults)).sum();
    // The handled event stays on top until its thread's next replaces it
    // (one heap sift a stage, not two: the heap is every thread's).
    while let Some((now, i)) = q.peek_pending() {
        t_end = now;
        if p.reached == n || p.simulated >= budget {
            break;
        }
        let node = threads[i].node;
        // When this stage is over (None: the thread waits for a lock and
        // the release moves it on).
        let done = match p.current(i, path) {
            Sem => {
                let d = sem.down_read(now, i, node);
                wait += d - now;
                Some(d)
            }
            PtlWork => Some(now + Dur(hold_ns)),
            Work => Some(now + Dur(threads[i].work_ns)),
            Write(l) => Some(lines[instance(&line_base, path.lines, l, node)].write(now, i, node)),
            Lock(l) => {
                asked[i] = now;
                waiting[i] = true;
                let at = lk[instance(&lock_base, path.locks, l, node)].acquire(now, i, node);
                if let Some(at) = at {
                    waiting[i] = false;
                    wait += at - now;
                }
                at
            }
            Unlock(l) => {
                let li = instance(&lock_base, path.locks, l, node);
                if let Some(g) = lk[li].release(now, i) {
                    waiting[g.cpu] = false;
                    wait += g.at - asked[g.cpu];
                    if p.advance(g.cpu, g.at, path) {
                        q.push(g.at, g.cpu).expect("future");
                    }
                }
                Some(now)
            }
        };
        match done {
            Some(d) if p.advance(i, d, path) => q.replace_top(d, i).expect("future"),
            _ => q.discard_top(),
        }
    }
    // Waits still in progress when the window closed count too (a starved
    // thread's wait would otherwise vanish from the share).
    for i in 0..n {
        if waiting[i] && t_end > asked[i] {
            wait += t_end - asked[i];
        }
    }
    // Finish the run at the rates of the window: each thread that did its
    // sample at its own rate, and all of them together at the aggregate
    // rate (which also covers threads a lock starved in the window).
    let mut total = 0.0f64;
    let mut active = 0.0f64;
    let (mut all_faults, mut done_faults) = (0u64, 0u64);
    for (i, t) in threads.iter().enumerate() {
        all_faults += t.faults;
        done_faults += p.fault[i];
        let end = match p.finish[i] {
            Some(f) => {
                active += f.as_secs_f64();
                f.as_secs_f64()
            }
            None => {
                active += t_end.as_secs_f64();
                if p.fault[i] >= sample.min(t.faults) {
                    t_end.as_secs_f64() * t.faults as f64 / p.fault[i] as f64
                } else {
                    0.0
                }
            }
        };
        total = total.max(end);
    }
    if done_faults < all_faults && done_faults > 0 {
        total = total.max(t_end.as_secs_f64() * all_faults as f64 / done_faults as f64);
    }
    let max_hold = lk
        .iter()
        .map(|l| l.stats().max_hold)
        .max()
        .unwrap_or_default();
    FaultRun {
        time_s: total,
        lock_wait_fraction: if active > 0.0 {
            (wait.as_secs_f64() / active).min(1.0)
        } else {
            0.0
        },
        max_hold_s: max_hold.as_secs_f64(),
        simulated_faults: p.simulated,
    }
}

/// Where `threads` first-touching `bytes_per_thread` each land, allocated
/// concurrently (every thread in turn takes `1/rounds` of its pages, as in
/// the `touch` workload) in `booted`; `chunk` bytes per allocation unit.
/// Returns each thread's placement in units of `chunk`, or None if memory
/// runs out.
pub fn first_touch(
    booted: &mut Booted,
    machine: &Machine,
    cpus: &[u64],
    bytes_per_thread: u64,
    chunk: u64,
    rounds: u64,
) -> Option<Vec<Placement>> {
    let per_chunk = (chunk / booted.mm.page_size()).max(1);
    let chunks = bytes_per_thread.div_ceil(chunk);
    let rounds = rounds.clamp(1, chunks.max(1));
    let mut placed = vec![Placement::default(); cpus.len()];
    for round in 0..rounds {
        let share = chunks / rounds + u64::from(round < chunks % rounds);
        for (t, &cpu) in cpus.iter().enumerate() {
            let node = machine.cpu_node(cpu).unwrap_or(0);
            let who = Allocator {
                task: 1 + t as u32,
                cpu,
                node,
            };
            for _ in 0..if per_chunk > 1 { share } else { 1 } {
                let pages = if per_chunk > 1 { per_chunk } else { share };
                if pages == 0 {
                    continue;
                }
                let p = alloc_pages(
                    &mut booted.mm,
                    &mut booted.cursors,
                    &MemPolicy::Local,
                    who,
                    pages,
                    Gfp::Normal,
                    Use::Anon,
                )
                .ok()?;
                placed[t].merge(&p);
            }
        }
    }
    // Back to units of `chunk`.
    for p in &mut placed {
        for part in &mut p.parts {
            part.1 /= per_chunk;
        }
    }
    Some(placed)
}

/// Mean ns to zero one `unit`-byte page of `p` from a CPU on `node`, when
/// `load[m]` threads on average zero into node `m` at once (they split its
/// memory bandwidth).
pub fn mean_zero_ns(machine: &Machine, node: usize, p: &Placement, unit: u64, load: &[f64]) -> f64 {
    let pages = p.pages().max(1) as f64;
    p.parts
        .iter()
        .map(|&(m, k)| {
            let m = m as usize;
            let cpu_rate = machine.fault.zero_gbps / machine.distances.ratio(node, m);
            let mem_rate = machine.memory.bandwidth_gbps / load[m].max(1.0);
            k as f64 * unit as f64 / cpu_rate.min(mem_rate)
        })
        .sum::<f64>()
        / pages
}

/// How many threads zero into each node at once, on average: each thread
/// spends the share of its pages that lie on a node zeroing into it.
pub fn sharers(machine: &Machine, placed: &[Placement]) -> Vec<f64> {
    let mut s = vec![0.0f64; machine.node_count()];
    for p in placed {
        let total = p.pages().max(1) as f64;
        for &(m, k) in &p.parts {
            s[m as usize] += k as f64 / total;
        }
    }
    s
}
