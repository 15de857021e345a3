//! ia64 `do_gettimeofday()` ([ALTIX04] C5): inside a seqlock read loop on
//! `xtime_lock`, read the shared "last value returned", read the clock,
//! then `cmpxchg` the shared word from the old value to the new one; if
//! another CPU changed it in between, the `cmpxchg` fails and the whole
//! sequence is retried (so time never goes backwards). A failed `cmpxchg`
//! still takes the line exclusively. The structure follows mainline 2.6
//! `time_interpolator_get_counter()` as the spec describes it.
//!
//! N CPUs call it back to back; the model reports the mean time per call.

use crate::engine::{Dur, EventQueue, Time};
use crate::kernel::locking::line;
use crate::kernel::locking::seqlock::SeqLock;
use crate::machine::Machine;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GtodResult {
    /// Mean wall time of one call, ns.
    pub time_per_call_ns: f64,
    /// `cmpxchg` attempts per completed call.
    pub attempts_per_call: f64,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    /// Enter the system call and open the seqlock read section.
    Enter,
    /// Read the shared last-value word.
    ReadLast,
    /// Clock read done: try the `cmpxchg`.
    Cmpxchg,
    /// Close the seqlock read section and leave.
    Exit,
}

/// `threads` CPUs (0..threads) each make `calls` calls.
pub fn simulate(machine: &Machine, threads: u64, calls: u64) -> GtodResult {
    let cost = machine.line_cost_table();
    let mut last = line(machine, &cost, 0);
    let mut xtime = SeqLock::new(line(machine, &cost, 0));
    // Version of the shared word: bumped by every successful cmpxchg.
    let mut version = 0u64;
    let n = threads as usize;
    let node: Vec<usize> = (0..threads)
        .map(|c| machine.cpu_node(c).unwrap_or(0))
        .collect();
    let syscall = Dur::from_ns_f64(machine.timer.syscall_ns);
    let clock = Dur::from_ns_f64(machine.timer.clock_read_ns);
    let mut seen = vec![0u64; n];
    let mut seq = vec![0u64; n];
    let mut done = vec![0u64; n];
    let mut finish = vec![Time::ZERO; n];
    let mut attempts = 0u64;
    let mut q = EventQueue::with_capacity(n);
    for c in 0..n {
        q.push(Time::ZERO, (c, Step::Enter)).expect("empty queue");
    }
    while let Some((now, (c, step))) = q.pop() {
        let (at, next) = match step {
            Step::Enter => {
                let (t, s) = xtime.read_begin(now + syscall, c, node[c]);
                seq[c] = s;
                (t, Step::ReadLast)
            }
            Step::ReadLast => {
                // Serialised at the line in request order: the version seen
                // is the one in force when this read is served.
                seen[c] = version;
                (last.read(now, c, node[c]) + clock, Step::Cmpxchg)
            }
            Step::Cmpxchg => {
                attempts += 1;
                let t = last.write(now, c, node[c]);
                if seen[c] == version {
                    version += 1;
                    (t, Step::Exit)
                } else {
                    (t, Step::ReadLast)
                }
            }
            Step::Exit => {
                let (t, retry) = xtime.read_retry(now, c, node[c], seq[c]);
                if retry {
                    (t, Step::ReadLast)
                } else {
                    done[c] += 1;
                    if done[c] == calls {
                        finish[c] = t;
                        continue;
                    }
                    (t, Step::Enter)
                }
            }
        };
        q.push(at, (c, next))
            .expect("completion is not in the past");
    }
    let mean =
        finish.iter().map(|t| t.as_secs_f64() * 1e9).sum::<f64>() / (n as f64 * calls as f64);
    GtodResult {
        time_per_call_ns: mean,
        attempts_per_call: attempts as f64 / (n as f64 * calls as f64),
    }
}
