//! Scaling benchmarks with 1..N pinned threads: first-touch page faults
//! ([ALTIX04] Figures 1 and 2), `gettimeofday` ([ALTIX04], [BGP-BIGMEM]
//! Table 4) and atomic adds on one shared counter vs per-CPU counters.

use crate::bench::{self, Effort};
use crate::sys::{self, Mapping, PageKind};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// First-touch faults of `threads` threads in one address space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultRate {
    /// Faults per second of wall time (first start to last end), median
    /// of the repetitions, and its spread.
    pub per_s: f64,
    pub spread: f64,
    /// Faults per second of the threads' own CPU time
    /// (`CLOCK_THREAD_CPUTIME_ID`, user and system: the fault handler runs
    /// in the faulting thread, spinning on a lock included), scaled to
    /// `threads` CPUs: the wall-clock rate had every thread held its CPU
    /// throughout. Median and spread.
    pub on_cpu_per_s: f64,
    pub on_cpu_spread: f64,
    /// Median share of the threads' wall time (`threads` × span) they
    /// were on a CPU.
    pub on_cpu_share: f64,
    /// The first repetition's on-CPU rate alone: the later ones reuse the
    /// frames it freed, which a guest's host already backs (docs/probe.md,
    /// "Round 17").
    pub first_on_cpu_per_s: f64,
}

/// First-touch faults per second with `threads` threads in one address space,
/// each touching one byte per base page of its share of `bytes`. Median of
/// the repetitions (each repetition is a fresh mapping).
pub fn fault_threads(
    bytes: usize,
    threads: usize,
    cpus: &[usize],
    reps: usize,
) -> std::io::Result<FaultRate> {
    let page = sys::page_size() as usize;
    let mut rates = Vec::new();
    let mut on_cpu = Vec::new();
    let mut shares = Vec::new();
    for _ in 0..reps {
        let mut m = Mapping::new(bytes, PageKind::Base)?;
        let pages = m.len() / page;
        let per = pages.div_ceil(threads) * page;
        let chunks: Vec<Mutex<&mut [u8]>> =
            m.as_mut_slice().chunks_mut(per).map(Mutex::new).collect();
        let (res, _) = bench::run_pinned(threads, cpus, None, |i, _| {
            let Some(c) = chunks.get(i) else { return 0 };
            let mut c = c.lock().expect("own chunk");
            let mut n = 0;
            let mut off = 0;
            while off < c.len() {
                touch(&mut c[off]);
                off += page;
                n += 1;
            }
            n
        });
        let total: u64 = res.iter().map(|r| r.ops).sum();
        let span = bench::span_ns(&res) as f64;
        rates.push(total as f64 * 1e9 / span);
        let cpu: f64 = res.iter().map(|r| r.cpu_ns as f64).sum::<f64>().max(1.0);
        on_cpu.push(total as f64 * 1e9 * threads as f64 / cpu);
        shares.push(cpu / (threads as f64 * span));
        drop(chunks);
        drop(m);
        if sys::stop_requested() {
            break;
        }
    }
    Ok(FaultRate {
        per_s: bench::median(&rates),
        spread: bench::spread(&rates),
        on_cpu_per_s: bench::median(&on_cpu),
        on_cpu_spread: bench::spread(&on_cpu),
        on_cpu_share: bench::median(&shares),
        first_on_cpu_per_s: on_cpu.first().copied().unwrap_or(0.0),
    })
}

/// A store the compiler cannot drop: the first write to a page faults it in.
#[inline(always)]
fn touch(b: &mut u8) {
    *b = black_box(1);
}

/// First-touch faults per second with `procs` processes, each with its own
/// private mapping of `bytes / procs`. Median of the repetitions.
pub fn fault_processes(
    bytes: usize,
    procs: usize,
    cpus: &[usize],
    reps: usize,
) -> std::io::Result<(f64, f64)> {
    let page = sys::page_size() as usize;
    let per = (bytes / procs).div_ceil(page) * page;
    let pages = (per / page * procs) as f64;
    let mut rates = Vec::new();
    for _ in 0..reps {
        let ns = sys::fault_in_processes(procs, per, cpus)?;
        rates.push(pages * 1e9 / ns.max(1) as f64);
        if sys::stop_requested() {
            break;
        }
    }
    Ok((bench::median(&rates), bench::spread(&rates)))
}

/// Which clock call to time.
#[derive(Debug, Clone, Copy)]
pub enum ClockCall {
    Gettimeofday,
    ClockGettime,
}

/// ns per call seen by each of `threads` threads calling at once (mean over
/// threads; median over repetitions).
pub fn clock_cost(call: ClockCall, threads: usize, cpus: &[usize], effort: Effort) -> (f64, f64) {
    let mut v = Vec::new();
    for _ in 0..effort.reps {
        let (res, _) = bench::run_pinned(threads, cpus, Some(effort.rep_time), |_, stop| {
            let mut n = 0u64;
            let mut acc = 0i64;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..256 {
                    acc = acc.wrapping_add(match call {
                        ClockCall::Gettimeofday => sys::gettimeofday_us(),
                        ClockCall::ClockGettime => sys::clock_gettime_ns(),
                    });
                }
                n += 256;
            }
            black_box(acc);
            n
        });
        v.push(res.iter().map(|r| r.ns_per_op()).sum::<f64>() / res.len() as f64);
        if sys::stop_requested() {
            break;
        }
    }
    (bench::median(&v), bench::spread(&v))
}

/// One thread's first-touch faults on its own CPU clock (faults per
/// second of its CPU time) on `cpus[0]`, while `readers` threads on
/// `cpus[1..]` each read their own `read_bytes` buffer in a loop, touching
/// no new page: whether a fault slows with the node's load alone, without
/// any other thread faulting (docs/probe.md, "Round 17"). Median of
/// `reps` and its spread; `None` where there are too few CPUs.
pub fn fault_beside_readers(
    bytes: usize,
    readers: usize,
    read_bytes: usize,
    cpus: &[usize],
    reps: usize,
) -> std::io::Result<Option<(f64, f64)>> {
    if readers + 1 > cpus.len() {
        return Ok(None);
    }
    let page = sys::page_size() as usize;
    let mut bufs = (0..readers)
        .map(|_| Mapping::new(read_bytes, PageKind::Base))
        .collect::<std::io::Result<Vec<_>>>()?;
    // Fault the readers' buffers in before anything is timed.
    for b in &mut bufs {
        for x in b.as_mut_slice().iter_mut().step_by(page) {
            touch(x);
        }
    }
    let slices: Vec<&[u8]> = bufs.iter().map(|b| b.as_slice()).collect();
    let mut rates = Vec::new();
    for _ in 0..reps {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let rate = std::thread::scope(|s| -> std::io::Result<f64> {
            for (words, &cpu) in slices.iter().zip(&cpus[1..]) {
                let (stop, words): (_, &[u8]) = (&stop, words);
                s.spawn(move || {
                    let _ = sys::pin_to_cpu(cpu);
                    let mut acc = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for line in words.chunks(64) {
                            acc = acc.wrapping_add(line[0] as u64);
                        }
                    }
                    black_box(acc);
                });
            }
            let faulter = s.spawn(|| -> std::io::Result<f64> {
                let _ = sys::pin_to_cpu(cpus[0]);
                // Let the readers reach their loops first.
                std::thread::sleep(std::time::Duration::from_millis(20));
                let mut m = Mapping::new(bytes, PageKind::Base)?;
                let c0 = sys::thread_cpu_ns();
                let mut n = 0u64;
                for x in m.as_mut_slice().iter_mut().step_by(page) {
                    touch(x);
                    n += 1;
                }
                let cpu_ns = sys::thread_cpu_ns().saturating_sub(c0).max(1);
                Ok(n as f64 * 1e9 / cpu_ns as f64)
            });
            let r = faulter.join().expect("fault thread panicked");
            stop.store(true, Ordering::Relaxed);
            r
        })?;
        rates.push(rate);
        if sys::stop_requested() {
            break;
        }
    }
    Ok(Some((bench::median(&rates), bench::spread(&rates))))
}

#[repr(align(128))]
struct Padded(AtomicU64);

/// ns per `fetch_add` seen by each of `threads` threads: all on one shared
/// counter (`shared = true`), or each on its own cache line (per-CPU).
pub fn atomic_add(shared: bool, threads: usize, cpus: &[usize], effort: Effort) -> (f64, f64) {
    let (ns, sp, _) = atomic_add_each(shared, threads, cpus, effort);
    (ns, sp)
}

/// [`atomic_add`], with each thread's own figure too (median over the
/// repetitions; thread `i` on `cpus[i % len]`): which CPU a mean's
/// difference comes from.
pub fn atomic_add_each(
    shared: bool,
    threads: usize,
    cpus: &[usize],
    effort: Effort,
) -> (f64, f64, Vec<f64>) {
    let counters: Vec<Padded> = (0..threads).map(|_| Padded(AtomicU64::new(0))).collect();
    let mut v = Vec::new();
    let mut each: Vec<Vec<f64>> = vec![Vec::new(); threads];
    for _ in 0..effort.reps {
        let (res, _) = bench::run_pinned(threads, cpus, Some(effort.rep_time), |i, stop| {
            let c = &counters[if shared { 0 } else { i }].0;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..256 {
                    c.fetch_add(1, Ordering::SeqCst);
                }
                n += 256;
            }
            n
        });
        for (e, r) in each.iter_mut().zip(&res) {
            e.push(r.ns_per_op());
        }
        v.push(res.iter().map(|r| r.ns_per_op()).sum::<f64>() / res.len() as f64);
        if sys::stop_requested() {
            break;
        }
    }
    let each = each.iter().map(|e| bench::median(e)).collect();
    (bench::median(&v), bench::spread(&v), each)
}
