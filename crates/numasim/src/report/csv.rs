//! CSV view: one row per record, case keys as columns (union over records).

use super::table::fmt_json;
use super::Record;

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn to_csv(records: &[Record]) -> String {
    let mut keys: Vec<String> = Vec::new();
    for r in records {
        for (k, _) in &r.case {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let mut out = String::from("experiment");
    for k in &keys {
        out.push(',');
        out.push_str(&quote(k));
    }
    out.push_str(",metric,unit,value,paper,role\n");
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in records {
        out.push_str(&quote(&r.experiment));
        for k in &keys {
            out.push(',');
            out.push_str(
                &r.case_value(k)
                    .map(|v| quote(&fmt_json(v)))
                    .unwrap_or_default(),
            );
        }
        out.push_str(&format!(
            ",{},{},{},{},{}\n",
            quote(&r.metric),
            quote(&r.unit),
            num(r.value),
            num(r.paper),
            r.role.map(|x| x.as_str()).unwrap_or_default()
        ));
    }
    out
}
