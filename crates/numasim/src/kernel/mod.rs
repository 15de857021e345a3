//! The simulated kernel, laid out like the Linux tree it models.

pub mod block;
pub mod boot;
pub mod config;
pub mod era;
pub mod fs;
pub mod knobs;
pub mod locking;
pub mod mm;
pub mod release;
pub mod sched;
pub(crate) mod time;

pub use config::KernelConfig;
