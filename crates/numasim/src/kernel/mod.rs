//! The simulated kernel, laid out like the Linux tree it models.

pub mod block;
pub mod boot;
pub mod config;
pub mod contention;
pub mod era;
pub mod flavour;
pub mod fs;
pub mod locking;
pub mod mm;
pub mod release;
pub mod sched;
pub mod sysctl_vm;
pub mod time;

pub use config::KernelConfig;
