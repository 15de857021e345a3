//! The workload registry (`WORKLOADS` in `workload/mod.rs`: each
//! workload's spec and reader) against the readers it describes: what `numasim workloads` and docs/scenario.md say must be what
//! the validator does. Each test fails when the two drift apart.

use numasim::machine::presets;
use numasim::scenario::{run, Scenario};
use numasim::workload::spec::{self, Default, Range};
use numasim::workload::WORKLOADS;
use numasim::workload::{check_keys, parse_for_test};
use std::collections::BTreeSet;
use toml::{Table, Value};

fn example(s: &spec::Spec) -> Table {
    toml::from_str(s.example).unwrap_or_else(|e| panic!("{}: example: {e}", s.name))
}

#[test]
fn every_reader_asks_for_exactly_the_registered_keys() {
    for s in WORKLOADS {
        let m = presets::preset(s.example_machine).unwrap();
        let (_, known) = parse_for_test(&example(s), &m)
            .unwrap_or_else(|e| panic!("{}: example refused: {e}", s.name));
        let known: BTreeSet<&str> = known.into_iter().filter(|k| *k != "workload").collect();
        let spec: BTreeSet<&str> = s.params.iter().map(|p| p.key).collect();
        assert_eq!(
            known, spec,
            "{}: the reader's keys vs the registry's",
            s.name
        );
    }
}

#[test]
fn stated_defaults_are_the_readers_defaults() {
    let mut checked = 0;
    for s in WORKLOADS {
        let m = presets::preset(s.example_machine).unwrap();
        for p in s.params {
            let Default::Value(v) = p.default else {
                continue;
            };
            let mut without = example(s);
            without.remove(p.key);
            let mut with = without.clone();
            let value: Table = toml::from_str(&format!("x = {v}")).unwrap();
            with.insert(p.key.into(), value["x"].clone());
            let a = parse_for_test(&without, &m).unwrap().0;
            let b = parse_for_test(&with, &m)
                .unwrap_or_else(|e| panic!("{}.{} = {v} refused: {e}", s.name, p.key));
            assert_eq!(
                a, b.0,
                "{}.{}: the stated default {v} is not the reader's",
                s.name, p.key
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} defaults checked");
}

#[test]
fn stated_integer_ranges_are_enforced_at_both_ends() {
    let mut checked = 0;
    for s in WORKLOADS {
        let m = presets::preset(s.example_machine).unwrap();
        for p in s.params {
            let Range::Int(lo, hi) = p.range else {
                continue;
            };
            let mut outside = vec![hi + 1];
            if lo > 0 {
                outside.push(lo - 1);
            }
            for v in outside {
                let mut t = example(s);
                t.insert(p.key.into(), Value::Integer(v as i64));
                let e = parse_for_test(&t, &m).err().unwrap_or_else(|| {
                    panic!("{}.{} = {v} accepted (range {lo}..{hi})", s.name, p.key)
                });
                assert_eq!(e.key.as_deref(), Some(p.key), "{}: {e}", s.name);
                checked += 1;
            }
            // The upper end itself is allowed by this key's own check (other
            // keys' bounds may still refuse it together with the example).
            let mut t = example(s);
            t.insert(p.key.into(), Value::Integer(hi as i64));
            if let Err(e) = parse_for_test(&t, &m) {
                assert!(
                    !e.message.contains(&format!("allowed {lo}..{hi}")),
                    "{}.{} = {hi} refused as out of range: {e}",
                    s.name,
                    p.key
                );
            }
        }
    }
    assert!(checked >= 15, "only {checked} bounds checked");
}

#[test]
fn examples_run_and_report_registered_metrics_in_their_units() {
    for s in WORKLOADS {
        let body = spec::example_scenario(s);
        let sc = Scenario::from_str(&body, "example.toml", None)
            .unwrap_or_else(|e| panic!("{}: {e}", s.name));
        let records = run::run(&sc, &[]).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert!(!records.is_empty(), "{}: no records", s.name);
        for r in &records {
            let m = s
                .metrics
                .iter()
                .find(|m| m.name == r.metric)
                .unwrap_or_else(|| panic!("{}: `{}` is not registered", s.name, r.metric));
            assert_eq!(r.unit, m.unit, "{}: unit of {}", s.name, r.metric);
            // The example varies nothing, so every key a record carries is
            // one its rows add: a step key or a declared row key (which
            // views may pivot on).
            for (k, _) in &r.case {
                assert!(
                    s.row_keys.contains(&k.as_str()) || s.param(k).is_some(),
                    "{}: records carry `{k}`, neither a key nor in row_keys",
                    s.name
                );
            }
        }
        for k in s.row_keys {
            assert!(
                records.iter().any(|r| r.case.iter().any(|(c, _)| c == k)),
                "{}: row key `{k}` is in no record of the example",
                s.name
            );
        }
    }
}

#[test]
fn each_workload_is_registered_once_and_found_by_its_name() {
    let mut seen = BTreeSet::new();
    for w in WORKLOADS {
        assert!(seen.insert(w.name), "`{}` registered twice", w.name);
        assert!(std::ptr::eq(numasim::workload::find(w.name).unwrap(), w));
    }
    assert!(numasim::workload::find("no-such").is_none());
}

#[test]
fn unknown_keys_are_named_beside_missing_ones() {
    let s = numasim::workload::find("touch").unwrap();
    let t: Table = toml::from_str("workload = \"touch\"\nbyte = \"1 GB\"\nthreads = 4\n").unwrap();
    let e = check_keys(s, &t).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("byte"));
    assert!(
        e.message
            .contains("unknown key `byte` (did you mean `bytes`?)"),
        "{e}"
    );
    assert!(e.message.contains("missing `bytes`"), "{e}");
}

/// docs/scenario.md holds the generated reference between two markers;
/// regenerate it with `numasim workloads --markdown`.
#[test]
fn docs_scenario_md_is_the_generated_reference() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scenario.md");
    let doc = std::fs::read_to_string(path).expect("docs/scenario.md");
    let begin = "<!-- BEGIN generated by `numasim workloads --markdown` -->\n";
    let end = "<!-- END generated -->";
    let a = doc.find(begin).expect("begin marker") + begin.len();
    let b = doc.find(end).expect("end marker");
    let want = numasim::workload::reference_markdown();
    if doc[a..b] != want {
        panic!(
            "docs/scenario.md is out of date with the workload registry: replace the part between the \
             markers with the output of `cargo run --release -p numasim-cli -- workloads --markdown`"
        );
    }
}
