//! Importers that turn a real machine description (sysfs, numactl, hwloc) into a machine TOML.
