//! Readers of step keys that several workloads share, written once: a
//! bounded whole number, a count or a list of counts, a list of node ids.
//! Each keeps the messages its workloads gave (tests and users read them).

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::machine::Machine;
use toml::Value;

/// A whole number in `lo..=hi` under `key`, `d` where the step leaves it
/// out (bounds keep simulated clocks and event counts finite).
pub fn bounded(
    r: &mut TableReader,
    key: &'static str,
    d: u64,
    lo: u64,
    hi: u64,
) -> Result<u64, InputError> {
    Ok(r.u64_in(key, lo, hi)?.unwrap_or(d))
}

/// A count (`threads = 8`) or a list of counts (`threads = [1, 8]`, one
/// row each) under `key`: None where the step leaves it out, never an
/// empty list. Ranges are the caller's (they differ by workload).
pub fn count_list(r: &mut TableReader, key: &'static str) -> Result<Option<Vec<u64>>, InputError> {
    let list = match r.raw(key) {
        None => return Ok(None),
        Some(Value::Array(_)) => r.u64_list(key)?.unwrap_or_default(),
        Some(_) => vec![r.u64(key)?.unwrap_or(0)],
    };
    if list.is_empty() {
        return Err(InputError::at(r.key(key), "give at least one count"));
    }
    Ok(Some(list))
}

/// A list of node ids under `key`, each a node of `machine`, at least one;
/// None where the step leaves it out.
pub fn node_ids(
    r: &mut TableReader,
    key: &'static str,
    machine: &Machine,
) -> Result<Option<Vec<usize>>, InputError> {
    let Some(list) = r.u64_list(key)? else {
        return Ok(None);
    };
    if let Some(bad) = list.iter().find(|&&n| n >= machine.node_count() as u64) {
        return Err(InputError::at(
            r.key(key),
            format!(
                "node {bad} does not exist (nodes 0..{})",
                machine.node_count() - 1
            ),
        ));
    }
    if list.is_empty() {
        return Err(InputError::at(r.key(key), "must name at least one node"));
    }
    Ok(Some(list.into_iter().map(|n| n as usize).collect()))
}
