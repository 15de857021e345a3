//! Deterministic discrete-event core: clock, event queue, RNG streams, shared resources.
//!
//! See `docs/engine.md` for the design and each resource's model.

pub(crate) mod cacheline;
pub(crate) mod cost;
pub(crate) mod lock;
pub(crate) mod queue;
pub mod rng;
pub(crate) mod server;
pub(crate) mod time;

pub use cacheline::{CacheLine, LineCell, LineSet, LineState, LineStats, Sharers};
pub use cost::{CostTable, FnCost, TransferCost, UniformCost};
pub use lock::{Grant, Lock, LockCell, LockPolicy, LockSet, LockStats, NodeLockStats};
pub use queue::{EventQueue, LaneQueue, PastEvent, TopQueue};
pub use rng::{stream, SimRng, Streams};
pub use server::{Server, ServerStats};
pub use time::{ceil_u64, round_u64, Dur, Time};
