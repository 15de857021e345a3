//! Device drivers and the buses they sit on. `pci` is the bus model a
//! block or network driver attaches its device to: a device on a node's
//! I/O chipset, PIO from CPUs to it, DMA from it into memory over the
//! machine's distances ([ALTIX04] G1–G4; docs/pci.md).

pub(crate) mod pci;
