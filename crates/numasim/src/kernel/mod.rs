//! The simulated kernel, laid out like the Linux tree it models.

pub mod block;
pub mod boot;
pub mod config;
pub mod mm;
pub mod sysctl_vm;

pub use config::KernelConfig;
