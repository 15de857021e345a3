//! Page faults under contention ([ALTIX04] C9, C10, C11): many threads
//! fault pages in at once and meet on shared locks and lines.
//!
//! A fault is a short program of stages run by one thread:
//!
//! - `Sem`: an atomic on the address space's `mmap_sem` count line
//!   (`down_read()` or `up_read()`: readers take the line exclusively too);
//! - `Lock(i)`: take spinlock `i`, hold it for its critical section, release;
//! - `Work`: the fault's own CPU time: the fixed fault path plus zeroing the
//!   page at the rate of the memory it landed on.
//!
//! Anonymous first touch (`kernel.anon_fault`): stock 2.4.21 is
//! `Sem, Lock(page_table_lock), Work, Lock(page_table_lock), Sem`
//! (`handle_mm_fault()` then `do_anonymous_page()`); the Altix path is
//! `Sem, Work, Sem` (the PTE goes in with a `cmpxchg` on a line only the
//! faulting thread touches). Private `/dev/zero` (`kernel.devzero`): each
//! process has its own `mm`, so only the superblock lock is shared:
//! `Lock(sb), Work` per fault plus one `Lock(sb)` per mapping.
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
use crate::kernel::contention::Spinlock;
use crate::kernel::locking::spinlock::spinlock;
use crate::kernel::locking::{line, rwsem::RwSem};
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
    Work,
}

/// The stock anonymous fault path (page_table_lock twice).
pub const ANON_PTL: &[Stage] = &[
    Stage::Sem,
    Stage::Lock(0),
    Stage::Work,
    Stage::Lock(0),
    Stage::Sem,
];
/// The Altix anonymous fault path (PTE by `cmpxchg`).
pub const ANON_CMPXCHG: &[Stage] = &[Stage::Sem, Stage::Work, Stage::Sem];
/// A private `/dev/zero` fault with the superblock lock.
pub const DEVZERO_LOCKED: &[Stage] = &[Stage::Lock(0), Stage::Work];
/// A private `/dev/zero` fault without it.
pub const DEVZERO_ALTIX: &[Stage] = &[Stage::Work];

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

/// Run `threads` through `stages` with `locks` spinlocks of `kind`, each
/// held `hold_ns` per critical section.
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    machine: &Machine,
    threads: &[FaultThread],
    stages: &[Stage],
    locks: usize,
    kind: Spinlock,
    hold_ns: u64,
    sample: u64,
    seed: u64,
) -> FaultRun {
    #[derive(Clone, Copy)]
    enum Ev {
        Start(usize),
        Release(usize, usize),
    }
    let cost: CostTable = machine.line_cost_table();
    let mut sem = RwSem::new(line(machine, &cost, 0));
    let mut lk: Vec<Lock<&CostTable>> = (0..locks)
        .map(|i| {
            spinlock(
                machine,
                &cost,
                kind,
                seed.wrapping_add(i as u64),
                "fault-lock",
            )
        })
        .collect();
    let n = threads.len();
    let sample = sample.max(1);
    let mut fault = vec![0u64; n];
    // Index into setup (negative phase) then stages.
    let mut stage = vec![0usize; n];
    let mut in_setup: Vec<bool> = threads.iter().map(|t| !t.setup.is_empty()).collect();
    let mut finish = vec![None::<Time>; n];
    let mut wait = Dur(0);
    let mut asked = vec![Time::ZERO; n];
    let mut waiting = vec![false; n];
    let mut reached = 0usize;
    let mut simulated = 0u64;
    let mut q = EventQueue::with_capacity(2 * n);
    for (i, t) in threads.iter().enumerate() {
        if t.faults == 0 && t.setup.is_empty() {
            finish[i] = Some(Time::ZERO);
            reached += 1;
        } else {
            q.push(Time::ZERO, Ev::Start(i)).expect("empty queue");
        }
    }
    let mut t_end = Time::ZERO;
    // Move thread i past its current stage at `now`; false when it is done.
    let advance = |i: usize,
                   now: Time,
                   fault: &mut [u64],
                   stage: &mut [usize],
                   in_setup: &mut [bool],
                   finish: &mut [Option<Time>],
                   reached: &mut usize,
                   simulated: &mut u64|
     -> bool {
        stage[i] += 1;
        let len = if in_setup[i] {
            threads[i].setup.len()
        } else {
            stages.len()
        };
        if stage[i] < len {
            return true;
        }
        stage[i] = 0;
        if in_setup[i] {
            in_setup[i] = false;
        } else {
            fault[i] += 1;
            *simulated += 1;
            if fault[i] == sample.min(threads[i].faults) {
                *reached += 1;
            }
        }
        if fault[i] >= threads[i].faults {
            finish[i] = Some(now);
            return false;
        }
        true
    };
    // The window ends when every thread has done its sample or, if a lock
    // starves some, when the threads together have done as many faults.
    let budget: u64 = threads.iter().map(|t| sample.min(t.faults)).sum();
    while let Some((now, ev)) = q.pop() {
        if reached == n || simulated >= budget {
            t_end = now;
            break;
        }
        t_end = now;
        match ev {
            Ev::Start(i) => {
                let st = if in_setup[i] {
                    threads[i].setup[stage[i]]
                } else {
                    stages[stage[i]]
                };
                let node = threads[i].node;
                match st {
                    Stage::Sem => {
                        let done = sem.down_read(now, i, node);
                        wait += done - now;
                        if advance(
                            i,
                            done,
                            &mut fault,
                            &mut stage,
                            &mut in_setup,
                            &mut finish,
                            &mut reached,
                            &mut simulated,
                        ) {
                            q.push(done, Ev::Start(i)).expect("future");
                        }
                    }
                    Stage::Work => {
                        let done = now + Dur(threads[i].work_ns);
                        if advance(
                            i,
                            done,
                            &mut fault,
                            &mut stage,
                            &mut in_setup,
                            &mut finish,
                            &mut reached,
                            &mut simulated,
                        ) {
                            q.push(done, Ev::Start(i)).expect("future");
                        }
                    }
                    Stage::Lock(l) => {
                        asked[i] = now;
                        waiting[i] = true;
                        if let Some(at) = lk[l].acquire(now, i, node) {
                            waiting[i] = false;
                            wait += at - now;
                            q.push(at + Dur(hold_ns), Ev::Release(i, l))
                                .expect("future");
                        }
                    }
                }
            }
            Ev::Release(i, l) => {
                if let Some(g) = lk[l].release(now, i) {
                    waiting[g.cpu] = false;
                    wait += g.at - asked[g.cpu];
                    q.push(g.at + Dur(hold_ns), Ev::Release(g.cpu, l))
                        .expect("future");
                }
                if advance(
                    i,
                    now,
                    &mut fault,
                    &mut stage,
                    &mut in_setup,
                    &mut finish,
                    &mut reached,
                    &mut simulated,
                ) {
                    q.push(now, Ev::Start(i)).expect("now");
                }
            }
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
        done_faults += fault[i];
        let end = match finish[i] {
            Some(f) => {
                active += f.as_secs_f64();
                f.as_secs_f64()
            }
            None => {
                active += t_end.as_secs_f64();
                if fault[i] >= sample.min(t.faults) {
                    t_end.as_secs_f64() * t.faults as f64 / fault[i] as f64
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
        simulated_faults: simulated,
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
