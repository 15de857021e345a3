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

#[repr(align(128))]
struct Padded(AtomicU64);

/// ns per `fetch_add` seen by each of `threads` threads: all on one shared
/// counter (`shared = true`), or each on its own cache line (per-CPU).
pub fn atomic_add(shared: bool, threads: usize, cpus: &[usize], effort: Effort) -> (f64, f64) {
    let counters: Vec<Padded> = (0..threads).map(|_| Padded(AtomicU64::new(0))).collect();
    let mut v = Vec::new();
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
        v.push(res.iter().map(|r| r.ns_per_op()).sum::<f64>() / res.len() as f64);
        if sys::stop_requested() {
            break;
        }
    }
    (bench::median(&v), bench::spread(&v))
}
