//! Which values of a machine file were left to numasim's defaults (issue
//! 29): `numasim machines FILE` names them, because a default chosen for a
//! 2004 machine (`fault_ns` 1000, 10 GB/s DRAM, a 64-entry TLB) silently
//! decides results on a machine of today.

use super::Machine;
use crate::input::merge::flatten;
use toml::{Table, Value};

/// The dotted keys the machine as written back has and `input` (the file
/// as read) does not, with the value each took: the defaults in force.
/// Keys the file spells another way (`cpus_per_node` for `node_cpus`,
/// `preset`) are not defaults and are left out.
pub fn defaulted_keys(input: &Table, m: &Machine) -> Vec<(String, Value)> {
    let Ok(written) = super::slit_text::parse_toml(&m.to_toml_string()) else {
        return Vec::new();
    };
    // The input layer's dotted-key walk, the one `--set` uses.
    let have = flatten(input);
    let all = flatten(&written);
    // Spelled differently in files: per-node lists vs uniform keys, the
    // distance forms.
    const ALIASES: &[&str] = &[
        "node_cpus",
        "node_mem",
        "nodes",
        "distance.matrix",
        "distance.groups",
        "distance.levels",
        "distance.remote",
        "cpu.cache",
    ];
    all.into_iter()
        .filter(|(k, _)| !have.iter().any(|(h, _)| h == k))
        .filter(|(k, _)| !ALIASES.contains(&k.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that omits `[dram]` is told that its DRAM figures are the
    /// defaults; a key it gives is not listed.
    #[test]
    fn omitted_keys_are_named_and_given_ones_are_not() {
        let text = "name = \"t\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = \"1 GiB\"\n[tlb]\nentries = 1536\n";
        let t = super::super::slit_text::parse_toml(text).unwrap();
        let m = Machine::from_table(&t).unwrap();
        let d = defaulted_keys(&t, &m);
        let keys: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
        assert!(keys.contains(&"dram.bandwidth_gbps"), "{keys:?}");
        assert!(keys.contains(&"fault.fault_ns"), "{keys:?}");
        assert!(!keys.contains(&"tlb.entries"), "{keys:?}");
        assert!(!keys.contains(&"name"), "{keys:?}");
    }
}
