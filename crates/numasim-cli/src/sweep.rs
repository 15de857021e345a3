//! `numasim sweep FILE --grid KEY=V1,V2,…`: a scenario at every combination
//! of the grid, as Python's `numasim.sweep` runs it (same order, same
//! records, the grid keys in every record's case), and the `--set` keys a
//! run records. The keys a `--set` or `--grid` may name are checked here.

use numasim::error::{Error, InputError};
use numasim::report::Record;
use numasim::scenario::{parse_set, run, Scenario};
use rayon::prelude::*;
use serde_json::Value as Json;
use toml::Value;

/// The most combinations one sweep runs: Python's bound (docs/python.md:
/// limits), counted before anything is built.
pub const MAX_POINTS: usize = 100_000;

/// What a `--set` or a grid key may name: the keys a `[[case]]` may vary
/// (docs/scenario.md, "Overrides"). Anything else dotted would be applied
/// to a table no reader looks at, and so do nothing.
pub fn check_key(flag: &str, key: &str) -> Result<(), InputError> {
    let ok = key.starts_with("machine.") || key.starts_with("kernel.") || !key.contains('.');
    if ok && !key.is_empty() {
        return Ok(());
    }
    Err(InputError::at(
        key,
        "this key cannot be overridden: give machine.*, kernel.*, seed or a [[run]] step key",
    )
    .in_file(flag)
    .allowing(
        "`machine.*`, `kernel.*`, `seed`, or a key of the scenario's [[run]] steps \
             (e.g. `threads`, which sets it in every step that has it)",
    ))
}

/// `--set` arguments as (key, value), each key checked.
pub fn parse_sets(sets: &[String]) -> Result<Vec<(String, Value)>, Error> {
    let mut out = Vec::with_capacity(sets.len());
    for s in sets {
        let (k, v) = parse_set(s).map_err(|e| e.in_file("--set"))?;
        check_key("--set", &k)?;
        out.push((k, v));
    }
    Ok(out)
}

/// `--grid KEY=V1,V2,…` arguments: each key once, its values split at
/// commas and read as a `--set` value is (TOML if it parses, else text).
pub fn parse_grid(grid: &[String]) -> Result<Vec<(String, Vec<Value>)>, Error> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for g in grid {
        let (k, vs) = g.split_once('=').ok_or_else(|| {
            InputError::new(format!(
                "`{g}`: write KEY=V1,V2,…, e.g. --grid kernel.hashdist=0,1"
            ))
            .in_file("--grid")
        })?;
        let key = k.trim();
        check_key("--grid", key)?;
        if out.iter().any(|(k, _)| k == key) {
            return Err(
                InputError::at(key, "given twice; list all its values in one --grid")
                    .in_file("--grid")
                    .into(),
            );
        }
        let mut values = Vec::new();
        for v in vs.split(',') {
            if v.trim().is_empty() {
                return Err(InputError::at(key, format!("an empty value in `{vs}`"))
                    .in_file("--grid")
                    .allowing("values separated by commas, e.g. 4,8,16")
                    .into());
            }
            values.push(parse_set(&format!("{key}={v}"))?.1);
        }
        out.push((key.to_string(), values));
    }
    Ok(out)
}

/// The number of combinations, or an error past [`MAX_POINTS`].
pub fn count(grid: &[(String, Vec<Value>)]) -> Result<usize, Error> {
    let mut total: usize = 1;
    for (_, v) in grid {
        total = total.saturating_mul(v.len());
    }
    if total > MAX_POINTS {
        let sizes: Vec<String> = grid.iter().map(|(_, v)| v.len().to_string()).collect();
        return Err(InputError::new(format!(
            "{} = {total} combinations; split the sweep or use fewer values",
            sizes.join(" × ")
        ))
        .in_file("--grid")
        .allowing(format!("at most {MAX_POINTS} combinations"))
        .into());
    }
    Ok(total)
}

/// Every combination in `itertools.product` order (the last key varies
/// fastest), as Python's sweep makes them.
pub fn points(grid: &[(String, Vec<Value>)]) -> Vec<Vec<(String, Value)>> {
    let mut out: Vec<Vec<(String, Value)>> = vec![Vec::new()];
    for (k, vs) in grid {
        out = out
            .into_iter()
            .flat_map(|p| {
                vs.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((k.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    out
}

/// Put each override into every record's case (replacing the case's own
/// value: the override is what ran), as Python's sweep adds its grid
/// columns, so a record says which values produced it.
pub fn mark(records: &mut [Record], sets: &[(String, Value)]) {
    if sets.is_empty() {
        return;
    }
    let json: Vec<(String, Json)> = sets
        .iter()
        .map(|(k, v)| (k.clone(), numasim::scenario::toml_to_json(v)))
        .collect();
    for r in records {
        for (k, v) in &json {
            match r.case.iter_mut().find(|(ck, _)| ck == k) {
                Some((_, cv)) => *cv = v.clone(),
                None => r.case.push((k.clone(), v.clone())),
            }
        }
    }
}

/// The scenario's records at every grid point, in grid order, each marked
/// with the base overrides and its point (the point wins). Points run in
/// parallel (rayon; each point's cases in parallel too).
pub fn run_grid(
    sc: &Scenario,
    base: &[(String, Value)],
    points: &[Vec<(String, Value)>],
) -> Result<Vec<Record>, Error> {
    let per_point: Vec<Result<Vec<Record>, Error>> = points
        .par_iter()
        .map(|p| {
            let mut sets: Vec<(String, Value)> = base
                .iter()
                .filter(|(k, _)| !p.iter().any(|(pk, _)| pk == k))
                .cloned()
                .collect();
            sets.extend(p.iter().cloned());
            let mut recs = run::run(sc, &sets)?;
            mark(&mut recs, &sets);
            Ok(recs)
        })
        .collect();
    let mut out = Vec::new();
    for r in per_point {
        out.extend(r?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_vary_the_last_key_fastest() {
        let g = parse_grid(&["a=1,2".into(), "kernel.b=x,y,z".into()]).unwrap();
        let p = points(&g);
        assert_eq!(p.len(), 6);
        assert_eq!(p[1][1].1, Value::String("y".into()));
        assert_eq!(p[3][0].1, Value::Integer(2));
    }

    #[test]
    fn grid_and_set_keys_outside_the_case_keys_are_refused() {
        assert!(parse_grid(&["report.title=a,b".into()]).is_err());
        assert!(parse_sets(&["foo.bar=1".into()]).is_err());
        assert!(parse_sets(&["threads=4".into(), "machine.nodes=4".into()]).is_ok());
        assert!(parse_grid(&["a=1,,2".into()]).is_err());
        assert!(parse_grid(&["a=1".into(), "a=2".into()]).is_err());
    }

    #[test]
    fn a_grid_past_the_bound_is_refused_before_it_is_built() {
        let big: Vec<String> = (0..3)
            .map(|i| format!("k{i}={}", vec!["1"; 100].join(",")))
            .collect();
        assert!(count(&parse_grid(&big).unwrap()).is_err());
    }
}
