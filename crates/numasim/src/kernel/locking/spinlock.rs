//! `spinlock_t`: test-and-set (the releaser's node wins more often) or a
//! queued fair lock ([WILDFIRE01] C7). The lock benchmark of
//! `wildfire-spinlock` that drives it is `workload/lock_bench.rs`.

use crate::engine::{stream, CostTable, Lock, LockPolicy};
use crate::kernel::locking::contention::Spinlock;
use crate::machine::Machine;

/// A spinlock of `kind` on `machine`. TAS waiters all spin on the lock word:
/// the winner of a release is drawn from the machine's spin jitter and every
/// other spinner adds its conflict cost. The fair lock is queued (MCS-like):
/// each waiter spins on its own line and the holder hands over to the next
/// in arrival order, one transfer, no bouncing. The lock word is in memory
/// on `home`.
pub fn spinlock<'a>(
    machine: &Machine,
    cost: &'a CostTable,
    kind: Spinlock,
    home: usize,
    seed: u64,
    name: &str,
) -> Lock<&'a CostTable> {
    let rng = stream(seed, name, 0);
    match kind {
        Spinlock::Tas => Lock::new(LockPolicy::Unfair, cost, rng)
            .with_spinning(
                machine.coherence.spin_jitter_ns.round() as u64,
                machine.coherence.directory_ns.round() as u64,
            )
            // Spinners wait on shared copies of the word (ia64 `ld4` in
            // `ia64_spinlock_contention`, alpha `ldl` before `ldl_l`), so the
            // release store and the winner's atomic are upgrades (issue 34).
            .with_read_spin(),
        // ia64's ld4-then-cmpxchg4.acq retry (`Lock::with_cmpxchg_stampede`)
        // is not switched on: with it the progressive back-off of
        // altix-loadbalance-livelock live-locks from 384 CPUs, against
        // [ALTIX04] (docs/sched.md, "Live lock").
        Spinlock::Fair => Lock::new(LockPolicy::Fifo, cost, rng),
    }
    .with_home(home)
}

/// A coherence request's round trip to a line's home when it moves no data
/// and waits for no owner (a NACK, a read served by memory), as a multiple
/// of the line's contended transfer time: a plain miss's round trip,
/// `mem_latency(n, home)`. Both scale with the same distance ratio, so the
/// multiple is `memory.latency_ns / interconnect.line_transfer_ns`
/// (altix-512: 150 / 400, i.e. 150 ns on the home's node to 525 ns at the
/// far end of the fat tree).
pub fn request_rt_per_transfer(machine: &Machine) -> f64 {
    let t = machine.interconnect.line_transfer_ns;
    if t > 0.0 {
        machine.memory.latency_ns / t
    } else {
        1.0
    }
}
