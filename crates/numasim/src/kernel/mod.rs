//! The simulated kernel, laid out like the Linux tree it models.

pub mod mm;
