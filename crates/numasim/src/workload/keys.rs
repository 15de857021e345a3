//! Readers of step keys that several workloads share, written once: a
//! bounded whole number, a count or a list of counts, a list of node ids,
//! a task's name, its CPU and its horizon. Each keeps the messages its
//! workloads gave (tests and users read them).

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

/// `nodes = [..]` checked against the machine, or every node with memory.
pub fn nodes_key(r: &mut TableReader, machine: &Machine) -> Result<Vec<usize>, InputError> {
    Ok(node_ids(r, "nodes", machine)?.unwrap_or_else(|| {
        (0..machine.node_count())
            .filter(|&n| machine.nodes[n].mem_bytes > 0)
            .collect()
    }))
}

/// `task = "name"` (default `default`).
pub fn task_key(r: &mut TableReader, default: &str) -> Result<String, InputError> {
    Ok(r.str("task")?.unwrap_or(default).to_string())
}

/// `horizon_s`: 1 s .. 1 day. The memory timeline stays bounded on any
/// machine: a long run on many nodes samples it less often
/// (`vm::sample_period_ns`).
/// Simulated time after which a timed step gives up, unless `horizon_s` says.
pub const DEFAULT_HORIZON_S: u64 = 3600;

pub fn horizon_key(r: &mut TableReader) -> Result<u64, InputError> {
    let h = r.u64("horizon_s")?.unwrap_or(DEFAULT_HORIZON_S);
    if !(1..=86_400).contains(&h) {
        return Err(InputError::at(
            r.key("horizon_s"),
            format!("{h}: allowed 1..86400 s"),
        ));
    }
    Ok(h)
}

pub fn cpu_key(r: &mut TableReader, machine: &Machine) -> Result<u64, InputError> {
    let cpu = r.u64("cpu")?.unwrap_or(0);
    if cpu >= machine.cpu_count() {
        return Err(InputError::at(
            r.key("cpu"),
            format!(
                "CPU {cpu} does not exist (CPUs 0..{})",
                machine.cpu_count().saturating_sub(1)
            ),
        ));
    }
    Ok(cpu)
}
