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
        Spinlock::Tas => Lock::new(LockPolicy::Unfair, cost, rng).with_spinning(
            machine.coherence.spin_jitter_ns.round() as u64,
            machine.coherence.directory_ns.round() as u64,
        ),
        Spinlock::Fair => Lock::new(LockPolicy::Fifo, cost, rng),
    }
    .with_home(home)
}
