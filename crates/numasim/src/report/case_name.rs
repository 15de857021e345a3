//! How each case of a run is named among the others, in file names
//! (`--out`) and in titles (the report's figures and timelines): by the
//! keys whose values tell the cases apart.

use super::table::fmt_json;
use super::CASE_LABEL_KEYS;
use serde_json::Value as Json;

/// How a case is named among the others: in a file name and in a title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseName {
    /// `default`, `page_cache_limit=5,page_cache_limit_threshold=2`; empty
    /// when there is only one case.
    pub file: String,
    /// `config = default`, `page_cache_limit = 5, page_cache_limit_threshold = 2`.
    pub title: String,
}

/// Longest case part of a file name, in bytes; with the stem and a kind it
/// stays under the usual 255-byte limit.
const MAX_CASE_NAME: usize = 80;

/// Names for each of `cases` (repeats allowed) by the keys whose values
/// differ among them, not every varied key: a label key (`config`, `label`,
/// `kernel`) alone where it tells the cases apart, else each differing key
/// by its last dotted part (whole where two share one) and its value.
/// Different cases always get different names: a clash or an over-long
/// name takes the case's number.
pub fn case_names(cases: &[&[(String, Json)]]) -> Vec<CaseName> {
    let mut distinct: Vec<&[(String, Json)]> = Vec::new();
    for c in cases {
        if !distinct.contains(c) {
            distinct.push(c);
        }
    }
    let value = |c: &[(String, Json)], k: &str| -> Json {
        c.iter()
            .find(|(ck, _)| ck == k)
            .map_or(Json::Null, |(_, v)| v.clone())
    };
    let mut keys: Vec<&str> = Vec::new();
    for c in &distinct {
        for (k, _) in c.iter() {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let differs = |k: &str| {
        distinct
            .iter()
            .any(|c| value(c, k) != value(distinct[0], k))
    };
    let mut varying: Vec<&str> = keys.into_iter().filter(|k| differs(k)).collect();
    let label = varying
        .iter()
        .copied()
        .find(|k| CASE_LABEL_KEYS.contains(k));
    if let Some(l) = label {
        let vals: Vec<Json> = distinct.iter().map(|c| value(c, l)).collect();
        if vals.iter().enumerate().all(|(i, v)| !vals[..i].contains(v)) {
            varying = vec![l];
        }
    }
    let short = |k: &str| -> String {
        let s = k.rsplit('.').next().unwrap_or(k);
        let clash = varying
            .iter()
            .filter(|o| o.rsplit('.').next() == Some(s))
            .count()
            > 1;
        if clash { k } else { s }.to_string()
    };
    let safe = |t: &str| -> String {
        t.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '=') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut named: Vec<CaseName> = distinct
        .iter()
        .map(|c| {
            let shown: Vec<(String, String)> = varying
                .iter()
                .map(|k| (short(k), fmt_json(&value(c, k))))
                .collect();
            let file = match shown.as_slice() {
                [(k, v)] if Some(k.as_str()) == label => safe(v),
                _ => shown
                    .iter()
                    .map(|(k, v)| format!("{}={}", safe(k), safe(v)))
                    .collect::<Vec<_>>()
                    .join(","),
            };
            let title = shown
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            CaseName { file, title }
        })
        .collect();
    for i in 0..named.len() {
        let clash = named
            .iter()
            .enumerate()
            .any(|(j, n)| j != i && n.file == named[i].file);
        if clash || named[i].file.len() > MAX_CASE_NAME {
            let mut f = named[i].file.clone();
            f.truncate(MAX_CASE_NAME - 10);
            named[i].file = format!("{f}{}case{}", if f.is_empty() { "" } else { "-" }, i + 1);
        }
    }
    cases
        .iter()
        .map(|c| named[distinct.iter().position(|d| d == c).unwrap_or(0)].clone())
        .collect()
}

#[cfg(test)]
mod case_name_tests {
    use super::*;
    use serde_json::json;

    fn kv(pairs: &[(&str, Json)]) -> Vec<(String, Json)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn files(cases: &[Vec<(String, Json)>]) -> Vec<String> {
        let refs: Vec<&[(String, Json)]> = cases.iter().map(Vec::as_slice).collect();
        case_names(&refs).into_iter().map(|n| n.file).collect()
    }

    #[test]
    fn a_label_that_tells_cases_apart_names_them_alone() {
        // altix-bigio: every key varies, but `config` already says which case.
        let cases = [
            kv(&[
                ("config", json!("default")),
                ("machine.swap_gb", json!(16)),
                ("kernel.toss", json!(0)),
            ]),
            kv(&[
                ("config", json!("swap-quarter")),
                ("machine.swap_gb", json!(64)),
                ("kernel.toss", json!(0)),
            ]),
            kv(&[
                ("config", json!("page-cache-limit")),
                ("machine.swap_gb", json!(16)),
                ("kernel.toss", json!(1)),
            ]),
        ];
        assert_eq!(
            files(&cases),
            ["default", "swap-quarter", "page-cache-limit"]
        );
    }

    #[test]
    fn only_the_keys_that_differ_name_a_case() {
        let cases = [
            kv(&[
                ("kernel.page_cache_limit", json!(5)),
                ("kernel.page_cache_limit_threshold", json!(2)),
                ("seed", json!(1)),
            ]),
            kv(&[
                ("kernel.page_cache_limit", json!(10)),
                ("kernel.page_cache_limit_threshold", json!(2)),
                ("seed", json!(1)),
            ]),
        ];
        assert_eq!(files(&cases), ["page_cache_limit=5", "page_cache_limit=10"]);
        let refs: Vec<&[(String, Json)]> = cases.iter().map(Vec::as_slice).collect();
        assert_eq!(case_names(&refs)[1].title, "page_cache_limit = 10");
        // Two keys with the same last part keep their prefixes.
        let cases = [
            kv(&[("machine.numa", json!("a b")), ("kernel.numa", json!(1))]),
            kv(&[("machine.numa", json!("c")), ("kernel.numa", json!(2))]),
        ];
        assert_eq!(
            files(&cases),
            [
                "machine.numa=a_b,kernel.numa=1",
                "machine.numa=c,kernel.numa=2"
            ]
        );
        // One case: no case part at all.
        assert_eq!(files(&[kv(&[("seed", json!(1))])]), [""]);
    }

    #[test]
    fn different_cases_never_share_a_name() {
        // A label that repeats does not name cases alone; over-long names
        // and values that sanitise alike take the case's number.
        let long = "x".repeat(200);
        let cases = [
            kv(&[("config", json!("a")), ("threads", json!(1))]),
            kv(&[("config", json!("a")), ("threads", json!(2))]),
            kv(&[("config", json!("b/c")), ("threads", json!(2))]),
            kv(&[("config", json!("b?c")), ("threads", json!(2))]),
            kv(&[("config", json!(long)), ("threads", json!(2))]),
        ];
        let f = files(&cases);
        for (i, a) in f.iter().enumerate() {
            assert!(a.len() <= MAX_CASE_NAME, "{a}");
            assert!(!a.contains(['/', '\\', ' ', '?']), "{a}");
            for b in &f[..i] {
                assert_ne!(a, b, "{f:?}");
            }
        }
        assert_eq!(f[0], "config=a,threads=1");
        // Repeats of one case share its name.
        let rep = [cases[0].clone(), cases[1].clone(), cases[0].clone()];
        let f = files(&rep);
        assert_eq!(f[0], f[2]);
    }
}
