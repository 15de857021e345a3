//! Timekeeping, laid out like Linux `kernel/time/`: the per-CPU timer tick
//! and its shared-line work ([ALTIX04] C2, C3), and `do_gettimeofday()`
//! with its `cmpxchg` on a shared word (C5). The experiments that drive
//! them are `workload/timer_tick.rs` and `workload/gettimeofday.rs`.

pub(crate) mod gettimeofday;
pub(crate) mod tick;
