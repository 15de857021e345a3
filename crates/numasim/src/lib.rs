//! numasim: a simulator of large NUMA machines and of the Linux mechanisms
//! that make them scale. Everything simulated lives here; the library does
//! no I/O beyond reading its inputs.

// The simulator is plain safe Rust; only the probe crate touches the host.
#![forbid(unsafe_code)]
// Index loops over n×n matrices read clearer than iterator chains here.
#![allow(clippy::needless_range_loop, clippy::type_complexity)]

/// An enum whose variants are the values of a knob as written in scenario
/// and machine files: `NAMES` (name, variant) for `TableReader::choice`,
/// and `name()` back. Defined before the modules so every one can use it.
macro_rules! knob_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($(#[$vm])* $v),+ }
        impl $name {
            pub const NAMES: &'static [(&'static str, $name)] = &[$(($s, $name::$v)),+];
            pub fn name(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }
        }
    };
}

// The public surface a program driving numasim needs (the command line,
// the Python binding, a user's tool): load a scenario or a built-in
// experiment, run it, read its records and their scores. The modules
// below stay public where the model's own tests, benches or the probe
// reach into a mechanism; the rest are crate-private (ARCHITECTURE.md,
// "The public surface").
pub use error::{Error, InputError};
pub use experiments::{load as load_experiment, EXPERIMENTS};
pub use machine::Machine;
pub use report::{Bound, Record, Role, Summary};
pub use scenario::run::run;
pub use scenario::Scenario;

pub mod bootlog;
pub(crate) mod drivers;
pub mod engine;
pub mod error;
pub mod experiments;
pub mod input;
pub mod kernel;
pub mod machine;
pub mod report;
pub mod scenario;
pub mod workload;
