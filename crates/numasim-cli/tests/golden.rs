//! The golden replay: `numasim replay --all --format jsonl` must equal the
//! committed `tests/golden/replay-all.jsonl` byte for byte. Any change to a
//! model, an experiment or a summary shows up here as a readable diff of
//! the records that changed; an intended change is made by regenerating
//! the file (the command below) and committing its diff with a message
//! that explains it.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

const REGENERATE: &str =
    "cargo run --release -p numasim-cli -- replay --all --format jsonl > tests/golden/replay-all.jsonl";

/// How many changed records the failure lists before it says "and N more".
const SHOWN: usize = 40;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/replay-all.jsonl")
}

/// A line's identity: experiment, then case and metric for a record, or
/// "summary" for an experiment's summary line.
fn key_of(line: &str) -> String {
    match serde_json::from_str::<Value>(line) {
        Ok(v) if v.get("summary").is_some() => format!("{} summary", v["experiment"]),
        Ok(v) => format!("{} {} {}", v["experiment"], v["case"], v["metric"]),
        Err(_) => format!("unparsed {line}"),
    }
}

/// The lines of `text` by key; a key seen twice keeps its order number.
fn keyed(text: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let mut k = key_of(line);
        let base = k.clone();
        let mut n = 1;
        while m.contains_key(&k) {
            n += 1;
            k = format!("{base} #{n}");
        }
        m.insert(k, line.to_string());
    }
    m
}

/// The records that differ, one paragraph each: the old and new line, or
/// which side lacks it.
fn diff(old: &str, new: &str) -> Vec<String> {
    let (a, b) = (keyed(old), keyed(new));
    let mut out = Vec::new();
    for (k, la) in &a {
        match b.get(k) {
            Some(lb) if lb == la => {}
            Some(lb) => out.push(format!("changed {k}\n  - {la}\n  + {lb}")),
            None => out.push(format!("removed {k}\n  - {la}")),
        }
    }
    for (k, lb) in &b {
        if !a.contains_key(k) {
            out.push(format!("added {k}\n  + {lb}"));
        }
    }
    if out.is_empty() && old != new {
        out.push("the same records in another order".into());
    }
    out
}

#[test]
fn replay_all_matches_the_golden_file() {
    let o = Command::new(env!("CARGO_BIN_EXE_numasim"))
        .args(["replay", "--all", "--format", "jsonl"])
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let new = String::from_utf8(o.stdout).expect("UTF-8");
    let path = golden_path();
    let old = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; create it with:\n  {REGENERATE}", path.display()));
    if old == new {
        return;
    }
    let changes = diff(&old, &new);
    let mut msg = format!(
        "replay --all differs from {} in {} record(s):\n\n",
        path.display(),
        changes.len()
    );
    for c in changes.iter().take(SHOWN) {
        msg += c;
        msg += "\n";
    }
    if changes.len() > SHOWN {
        msg += &format!("… and {} more\n", changes.len() - SHOWN);
    }
    msg += &format!(
        "\nIf the change is intended, regenerate the file and commit its diff with a \
         message that explains each change:\n  {REGENERATE}\n"
    );
    panic!("{msg}");
}

#[test]
fn the_diff_names_a_changed_an_added_and_a_removed_record() {
    let old = r#"{"experiment":"e","case":{"n":1},"metric":"m","value":1.0}
{"experiment":"e","case":{"n":2},"metric":"m","value":2.0}
{"experiment":"e","summary":{"x":1}}"#;
    let new = r#"{"experiment":"e","case":{"n":1},"metric":"m","value":1.5}
{"experiment":"e","case":{"n":3},"metric":"m","value":3.0}
{"experiment":"e","summary":{"x":1}}"#;
    let d = diff(old, new);
    assert_eq!(d.len(), 3, "{d:?}");
    assert!(d[0].starts_with("changed \"e\" {\"n\":1} \"m\"") && d[0].contains("1.5"));
    assert!(d[1].starts_with("removed \"e\" {\"n\":2}"));
    assert!(d[2].starts_with("added \"e\" {\"n\":3}"));
    assert!(diff(old, old).is_empty());
}
