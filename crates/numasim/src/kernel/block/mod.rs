//! The block layer. `disk` is the single streaming budget the VM's swap and
//! writeback draw from; the rest is the request-level stack of [XFS06]
//! section F: disks with seek, rotation and transfer (`blkdev`), a queue per
//! disk that merges adjacent requests and serves them in C-LOOK order, an
//! MD raid0 / DM striped volume that splits every I/O at stripe-unit
//! boundaries (`stripe`), and the HBAs, I/O nodes and node ports each
//! request's DMA crosses (`path`). The unit of simulation is a request.

pub mod blkdev;
pub(crate) mod disk;
pub mod layer;
pub(crate) mod path;
pub mod segments;
pub(crate) mod stripe;

pub use blkdev::{DiskModel, Req};
pub use disk::Disk;
pub use layer::{BlockLayer, Done, Requests};
pub use path::Link;
pub use stripe::Stripe;
