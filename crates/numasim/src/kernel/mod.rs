//! The simulated kernel, laid out like the Linux tree it models.

pub mod boot;
pub mod config;
pub mod contention;
pub mod locking;
pub mod time;
pub mod mm;

pub use config::KernelConfig;
