//! numasim: a simulator of large NUMA machines and of the Linux mechanisms
//! that make them scale. Everything simulated lives here; the library does
//! no I/O beyond reading its inputs.

// Index loops over n×n matrices read clearer than iterator chains here.
#![allow(clippy::needless_range_loop, clippy::type_complexity)]

pub mod engine;
pub mod error;
pub mod experiments;
pub mod kernel;
pub mod machine;
pub mod report;
pub mod scenario;
pub mod workload;
