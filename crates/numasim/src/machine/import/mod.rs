//! Importers that turn a real machine description (sysfs, numactl, hwloc) into a machine TOML.

use super::Machine;
use crate::error::InputError;

pub fn from_sysfs(_dir: &std::path::Path) -> Result<Machine, InputError> {
    Err(InputError::new("sysfs import is not built yet"))
}
pub fn from_numactl(_text: &str, _source: &str) -> Result<Machine, InputError> {
    Err(InputError::new("numactl import is not built yet"))
}
pub fn from_hwloc_xml(_text: &str, _source: &str) -> Result<Machine, InputError> {
    Err(InputError::new("hwloc import is not built yet"))
}
