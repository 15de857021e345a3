//! Combining TOML tables: presets with inline overrides, `[[case]]` and
//! `--set` dotted keys.

use crate::error::InputError;
use toml::{Table, Value};

/// Keys that say the same thing in different ways: setting one in an
/// override removes the others from the base, so `machine.memory = "4 TB"`
/// replaces a preset's `mem_per_node`.
const ALTERNATIVES: &[&[&str]] = &[
    &["memory", "mem_per_node", "node_mem"],
    &["cpus_per_node", "node_cpus"],
    &["matrix", "groups", "levels", "remote"],
];

/// Merge `over` into `base`: tables recursively, anything else replaced.
pub fn deep_merge(base: &mut Table, over: Table) {
    for (k, v) in over {
        drop_alternatives(base, &k);
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => deep_merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn drop_alternatives(base: &mut Table, key: &str) {
    for group in ALTERNATIVES {
        if group.contains(&key) {
            for other in group.iter().filter(|o| **o != key) {
                // `groups` and `levels` go together: keep the partner.
                if matches!((key, *other), ("groups", "levels") | ("levels", "groups")) {
                    continue;
                }
                base.remove(*other);
            }
        }
    }
}

/// Set a dotted key (`machine.nodes`, `kernel.hashdist`) in a document.
pub fn apply_dotted(doc: &mut Table, key: &str, value: Value) -> Result<(), InputError> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(InputError::at(key, "not a valid dotted key"));
    }
    match parts[0] {
        "machine" | "kernel" | "seed" => {}
        _ if parts.len() == 1 => return Ok(()), // a [[run]] step key, applied by the caller
        other => {
            let hint = crate::input::table::nearest(other, ["machine", "kernel"].into_iter())
                .map(|n| format!(" Did you mean `{n}`?"))
                .unwrap_or_default();
            return Err(InputError::at(
                key,
                format!("overrides start with `machine.` or `kernel.`.{hint}"),
            ));
        }
    }
    let mut t = doc;
    for p in &parts[..parts.len() - 1] {
        let entry = t
            .entry(p.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        t = match entry {
            Value::Table(inner) => inner,
            _ => {
                return Err(InputError::at(
                    key,
                    format!("`{p}` is not a table, so `{key}` cannot be set"),
                ))
            }
        };
    }
    let last = parts[parts.len() - 1];
    drop_alternatives(t, last);
    t.insert(last.to_string(), value);
    Ok(())
}

/// A table's leaves as dotted keys (`{kernel = {hashdist = 0}}` → `kernel.hashdist`).
pub fn flatten(t: &Table) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    fn walk(prefix: &str, t: &Table, out: &mut Vec<(String, Value)>) {
        for (k, v) in t {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                Value::Table(inner) => walk(&key, inner, out),
                other => out.push((key, other.clone())),
            }
        }
    }
    walk("", t, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_memory_replaces_per_node_memory() {
        let mut doc: Table = toml::from_str("[machine]\nmem_per_node = \"2 GiB\"").unwrap();
        apply_dotted(&mut doc, "machine.memory", Value::String("4 TB".into())).unwrap();
        let m = doc["machine"].as_table().unwrap();
        assert!(m.get("mem_per_node").is_none());
        assert_eq!(m["memory"].as_str(), Some("4 TB"));
    }

    #[test]
    fn flatten_keeps_file_order() {
        let t: Table = toml::from_str("kernel.hashdist = 0\nkernel.thash_entries = 5").unwrap();
        let keys: Vec<String> = flatten(&t).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["kernel.hashdist", "kernel.thash_entries"]);
    }
}
