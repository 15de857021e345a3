//! The process scheduler, laid out like Linux `kernel/sched/`:
//!
//! - [`core`]: `schedule()` and wake-ups and their costs. The 2.4
//!   global queue under `runqueue_lock` with `goodness()` and
//!   `reschedule_idle()`, the O(1) per-CPU queues with per-CPU locks, and
//!   the wildfire per-node queues with three-step wake-up placement
//!   ([ALTIX04] E1, [WILDFIRE01] E4).
//! - [`rq`]: the run queue as structs the drivers share: its lock and
//!   what each CPU wants it for, the queued tasks and `goodness()`'s pick.
//! - [`fair`]: `load_balance()` and its back-off variants at boot
//!   ([ALTIX04] E2), and the peek at every CPU's `nr_running`/`cpu_load`
//!   through per-CPU areas or a global array (E3).
//!
//! The experiments that drive these (`sched_ops`, `aim7`, `boot_balance`)
//! are in `workload/`.
//! - [`trace`]: the schedule as Chrome trace-event JSON and a run-queue
//!   length SVG (`--out`).
//!
//! Every run-queue lock is the engine's [`Lock`](crate::engine::Lock) on
//! the machine's line costs (via `kernel/locking/spinlock.rs`), and every
//! shared field an engine [`CacheLine`](crate::engine::CacheLine): a
//! run-queue lock costs what any contended line costs on that machine.
//! docs/sched.md gives the knobs, the parameters and their sources.

pub(crate) mod core;
pub use self::core::{SchedCosts, WalkCost};
pub mod fair;
pub(crate) mod rq;
pub(crate) mod trace;

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::kernel::knobs::{self, choice_knob, Allowed, Knob};
use crate::machine::Machine;
use serde_json::{json, Value as Json};

knob_enum! {
    /// Run-queue structure on Altix (E1): 2.4's one queue or O(1)'s per-CPU queues.
    Runqueue { Global = "global", PerCpu = "per-cpu" }
}
knob_enum! {
    /// Scheduler on wildfire (E4): stock 2.4 or the NUMA scheduler.
    Sched { Smp = "smp", Numa = "numa" }
}
knob_enum! {
    /// What an idle CPU does after a failed `load_balance()` (E2).
    BalanceBackoff {
        /// Balance at the normal interval whatever the outcome.
        None = "none",
        /// SGI: each failure adds an increment to the CPU's next interval.
        Progressive = "progressive",
        /// 2.6.7-rc2 sched domains: reset to `min_interval` on imbalance,
        /// double only when balanced, active balance after
        /// `cache_nice_tries + 2` failures.
        V267 = "2.6.7",
    }
}
knob_enum! {
    /// Where the fields a balance loop peeks at live (E3).
    RqLayout { PercpuAreas = "percpu-areas", GlobalArray = "global-array" }
}

/// The scheduler knobs in force. Intervals are in ticks of the machine's HZ.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedKnobs {
    pub runqueue: Runqueue,
    pub sched: Sched,
    pub balance_backoff: BalanceBackoff,
    pub rq_layout: RqLayout,
    /// `IDLE_REBALANCE_TICK`: an idle CPU's balance interval within its node.
    pub idle_rebalance_ticks: u64,
    /// `BUSY_REBALANCE_TICK`.
    pub busy_rebalance_ticks: u64,
    /// `IDLE_NODE_REBALANCE_TICK / IDLE_REBALANCE_TICK`: cross-node factor when idle.
    pub idle_node_factor: u64,
    /// Cross-node factor when busy.
    pub busy_node_factor: u64,
    /// Progressive back-off: ticks added to the interval per failed pull.
    pub balance_backoff_step_ticks: u64,
    /// Progressive back-off: the longest interval, ticks.
    pub balance_backoff_max_ticks: u64,
    /// 2.6.7: `max_interval` of the node domain, ticks.
    pub max_interval_ticks: u64,
    /// 2.6.7: `cache_nice_tries` of the node domain.
    pub cache_nice_tries: u64,
}

/// Longest interval any knob accepts, ticks (a minute at HZ = 1024):
/// keeps a scenario's event count finite.
pub const MAX_INTERVAL_TICKS: u64 = 61_440;

impl SchedKnobs {
    pub fn defaults(machine: &Machine) -> Self {
        let hz = u64::from(machine.timer.hz.max(1));
        SchedKnobs {
            // The period's kernels: the Altix product kernel had O(1)
            // queues; wildfire ran stock 2.4.
            runqueue: Runqueue::PerCpu,
            sched: Sched::Smp,
            balance_backoff: BalanceBackoff::None,
            rq_layout: RqLayout::PercpuAreas,
            // Mainline O(1) sched.c: IDLE_REBALANCE_TICK = max(HZ/1000, 1),
            // BUSY_REBALANCE_TICK = max(HZ/5, 1), node balancing 5x (idle)
            // and 2x (busy) less often.
            idle_rebalance_ticks: (hz / 1000).max(1),
            busy_rebalance_ticks: (hz / 5).max(1),
            idle_node_factor: 5,
            busy_node_factor: 2,
            // Not stated by SGI: one tick per failure, capped at the busy
            // interval (docs/sched.md).
            balance_backoff_step_ticks: 1,
            balance_backoff_max_ticks: (hz / 5).max(1),
            // 2.6.7 node domain: max_interval 32x the minimum (docs/sched.md).
            max_interval_ticks: 32 * 5 * (hz / 1000).max(1),
            cache_nice_tries: 2,
        }
    }

    pub fn knob_json(&self, knob: &str) -> Option<Json> {
        knobs::json_of(KNOBS, self, knob)
    }

    pub fn read(r: &mut TableReader, machine: &Machine) -> Result<Self, InputError> {
        let mut k = SchedKnobs::defaults(machine);
        knobs::read_all(KNOBS, r, &mut k, machine)?;
        Ok(k)
    }

    /// An idle CPU's interval for the cross-node balance, ticks.
    pub fn idle_node_interval(&self) -> u64 {
        (self.idle_rebalance_ticks * self.idle_node_factor).max(1)
    }
}

/// An interval or count knob in ticks, `$lo..=MAX_INTERVAL_TICKS`.
macro_rules! ticks_knob {
    ($field:ident, $lo:literal, $allowed:literal, default: $default:literal, doc: $doc:literal) => {
        Knob::<SchedKnobs> {
            name: stringify!($field),
            allowed: Allowed::Text($allowed),
            default: $default,
            doc: $doc,
            read: |r, k, _| {
                let key = stringify!($field);
                match r.raw(key) {
                    Some(toml::Value::Integer(i)) if *i < $lo || *i > MAX_INTERVAL_TICKS as i64 => {
                        Err(InputError::at(
                            r.key(key),
                            format!("{i}: allowed {}..{MAX_INTERVAL_TICKS} (ticks)", $lo),
                        ))
                    }
                    Some(_) => {
                        k.$field = r.u64(key)?.unwrap_or(k.$field);
                        Ok(())
                    }
                    None => Ok(()),
                }
            },
            json: |k| json!(k.$field),
        }
    };
}

/// The scheduler knobs, declared once (kernel/knobs.rs); read in this order.
pub const KNOBS: &[Knob<SchedKnobs>] = &[
    choice_knob!(SchedKnobs, runqueue, Runqueue,
        default: "`per-cpu`",
        doc: "run-queue structure (E1): 2.4's one global queue or O(1)'s per-CPU queues"),
    choice_knob!(SchedKnobs, sched, Sched,
        default: "`smp`",
        doc: "wildfire's scheduler (E4): stock 2.4 or the NUMA scheduler"),
    choice_knob!(SchedKnobs, balance_backoff, BalanceBackoff,
        default: "`none`",
        doc: "what an idle CPU does after a failed load_balance() (E2): nothing, SGI's progressive back-off, or 2.6.7's sched domains"),
    choice_knob!(SchedKnobs, rq_layout, RqLayout,
        default: "`percpu-areas`",
        doc: "where the fields a balance loop peeks at live (E3)"),
    ticks_knob!(idle_rebalance_ticks, 1, "1..61440 ticks",
        default: "max(HZ/1000, 1)",
        doc: "IDLE_REBALANCE_TICK: an idle CPU's balance interval within its node"),
    ticks_knob!(busy_rebalance_ticks, 1, "1..61440 ticks",
        default: "max(HZ/5, 1)",
        doc: "BUSY_REBALANCE_TICK"),
    ticks_knob!(idle_node_factor, 1, "1..61440",
        default: "5",
        doc: "cross-node balancing this many times less often than within the node, idle"),
    ticks_knob!(busy_node_factor, 1, "1..61440",
        default: "2",
        doc: "the same, busy"),
    ticks_knob!(balance_backoff_step_ticks, 1, "1..61440 ticks",
        default: "1",
        doc: "progressive back-off: ticks added to the interval per failed pull (not stated by SGI; docs/sched.md)"),
    ticks_knob!(balance_backoff_max_ticks, 1, "1..61440 ticks",
        default: "max(HZ/5, 1)",
        doc: "progressive back-off: the longest interval"),
    ticks_knob!(max_interval_ticks, 1, "1..61440 ticks",
        default: "160 × max(HZ/1000, 1)",
        doc: "2.6.7: max_interval of the node domain (32× its minimum)"),
    ticks_knob!(cache_nice_tries, 0, "0..61440",
        default: "2",
        doc: "2.6.7: cache_nice_tries of the node domain; active balance after this + 2 failures"),
];
