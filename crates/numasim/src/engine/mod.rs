//! Deterministic discrete-event core: clock, event queue, RNG streams, shared resources.
//!
//! See `docs/engine.md` for the design and each resource's model.

pub mod cost;
pub mod lock;
pub mod queue;
pub mod rng;
pub mod time;

pub use cost::{CostTable, FnCost, TransferCost, UniformCost};
pub use lock::{Grant, Lock, LockPolicy, LockStats, NodeLockStats};
pub use queue::{EventQueue, PastEvent};
pub use rng::{stream, SimRng, Streams};
pub use time::{Dur, Time};
