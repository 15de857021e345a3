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

pub mod bootlog;
pub mod drivers;
pub mod engine;
pub mod error;
pub mod experiments;
pub mod input;
pub mod kernel;
pub mod machine;
pub mod report;
pub mod scenario;
pub mod workload;
