//! The simulated kernel, laid out like the Linux tree it models.

pub mod boot;
pub mod config;
pub mod contention;
pub mod locking;
pub mod mm;
pub mod time;

pub use config::KernelConfig;
