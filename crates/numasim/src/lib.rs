//! numasim: a simulator of large NUMA machines and of the Linux mechanisms
//! that make them scale. Everything simulated lives here; the library does
//! no I/O beyond reading its inputs.

pub mod engine;
pub mod error;
pub mod kernel;
pub mod machine;
pub mod report;
pub mod scenario;
pub mod workload;
