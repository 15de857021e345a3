//! The block layer: devices that file writeback and swap share. Only what a
//! streaming writer needs is here (a bandwidth per tick); filesystems and
//! volumes come later behind the same seam.

pub mod disk;

pub use disk::Disk;
