//! Typed reading of a TOML table with exact error paths.
//!
//! Every input table (scenario, machine, kernel knobs, workload step) is read
//! through a [`TableReader`]: each `get_*` marks its key as known, and
//! [`TableReader::finish`] refuses whatever is left, naming the nearest valid
//! key. That is how an unknown key becomes an error with a "did you mean"
//! hint instead of being ignored.

use crate::error::InputError;
use crate::input::size::parse_size;
use std::collections::BTreeSet;
use toml::{Table, Value};

pub struct TableReader<'a> {
    path: String,
    table: &'a Table,
    known: BTreeSet<&'static str>,
}

impl<'a> TableReader<'a> {
    /// `path` is the dotted prefix of this table (`""` for the file root).
    pub fn new(path: impl Into<String>, table: &'a Table) -> Self {
        Self {
            path: path.into(),
            table,
            known: BTreeSet::new(),
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// The full dotted key of `key` in this table.
    pub fn key(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn err(&self, key: &str, message: impl Into<String>) -> InputError {
        InputError::at(self.key(key), message)
    }

    /// Declare a key valid without reading it (read elsewhere, or ignored on purpose).
    pub fn allow(&mut self, key: &'static str) {
        self.known.insert(key);
    }

    pub fn has(&self, key: &str) -> bool {
        self.table.contains_key(key)
    }

    pub fn raw(&mut self, key: &'static str) -> Option<&'a Value> {
        self.known.insert(key);
        self.table.get(key)
    }

    pub fn str(&mut self, key: &'static str) -> Result<Option<&'a str>, InputError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(self
                .err(key, format!("expected a string, found {}", describe(v)))
                .allowing(A_STRING)),
        }
    }

    pub fn u64(&mut self, key: &'static str) -> Result<Option<u64>, InputError> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) => value_u64(v)
                .map(Some)
                .map_err(|m| self.err(key, m).allowing(A_WHOLE)),
        }
    }

    /// A whole number in `lo..=hi`: the checked form of a narrowing read,
    /// so `2^32 + 64` is refused with the key and range, never wrapped to 64.
    pub fn u64_in(
        &mut self,
        key: &'static str,
        lo: u64,
        hi: u64,
    ) -> Result<Option<u64>, InputError> {
        match self.u64(key)? {
            Some(v) if v < lo || v > hi => Err(self
                .err(key, format!("{v}: allowed {lo}..{hi}"))
                .allowing(format!("{lo}..{hi}"))),
            v => Ok(v),
        }
    }

    /// As [`TableReader::u64_in`], for fields stored as `u32`.
    pub fn u32_in(
        &mut self,
        key: &'static str,
        lo: u32,
        hi: u32,
    ) -> Result<Option<u32>, InputError> {
        Ok(self
            .u64_in(key, lo.into(), hi.into())?
            .map(|v| u32::try_from(v).unwrap_or(hi)))
    }

    /// A list of whole numbers, each in `lo..=hi`, as `u32`.
    pub fn u32_list_in(
        &mut self,
        key: &'static str,
        lo: u32,
        hi: u32,
    ) -> Result<Option<Vec<u32>>, InputError> {
        self.list(key, |v| value_u32_in(v, lo, hi))
            .map_err(|e| e.allowing(format!("a list of whole numbers {lo}..{hi}")))
    }

    pub fn f64(&mut self, key: &'static str) -> Result<Option<f64>, InputError> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) => value_f64(v)
                .map(Some)
                .map_err(|m| self.err(key, m).allowing(A_NUMBER)),
        }
    }

    /// A non-negative, finite number.
    pub fn nonneg_f64(&mut self, key: &'static str) -> Result<Option<f64>, InputError> {
        let v = self.f64(key)?;
        if let Some(x) = v {
            if x < 0.0 {
                return Err(self
                    .err(key, format!("must not be negative (got {x})"))
                    .allowing("a number ≥ 0"));
            }
        }
        Ok(v)
    }

    pub fn bool(&mut self, key: &'static str) -> Result<Option<bool>, InputError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(Value::Integer(0)) => Ok(Some(false)),
            Some(Value::Integer(1)) => Ok(Some(true)),
            Some(v) => Err(self
                .err(
                    key,
                    format!("expected true/false (or 0/1), found {}", describe(v)),
                )
                .allowing("true/false (or 0/1)")),
        }
    }

    /// A size in bytes: an integer, or a string with a unit.
    pub fn size(&mut self, key: &'static str) -> Result<Option<u64>, InputError> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) => value_size(v)
                .map(Some)
                .map_err(|m| self.err(key, m).allowing(A_SIZE)),
        }
    }

    pub fn size_list(&mut self, key: &'static str) -> Result<Option<Vec<u64>>, InputError> {
        self.list(key, value_size)
            .map_err(|e| e.allowing(format!("a list of sizes ({A_SIZE})")))
    }

    pub fn u64_list(&mut self, key: &'static str) -> Result<Option<Vec<u64>>, InputError> {
        self.list(key, value_u64)
            .map_err(|e| e.allowing("a list of non-negative whole numbers"))
    }

    pub fn list<T>(
        &mut self,
        key: &'static str,
        each: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<Option<Vec<T>>, InputError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| each(v).map_err(|m| self.err(key, format!("item {i}: {m}"))))
                .collect::<Result<Vec<T>, _>>()
                .map(Some),
            Some(v) => Err(self
                .err(key, format!("expected a list, found {}", describe(v)))
                .allowing("a list")),
        }
    }

    /// One of a fixed set of names.
    pub fn choice<T: Copy>(
        &mut self,
        key: &'static str,
        options: &[(&str, T)],
    ) -> Result<Option<T>, InputError> {
        let Some(v) = self.raw(key) else {
            return Ok(None);
        };
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            other => {
                return Err(self
                    .err(
                        key,
                        format!(
                            "expected one of {}, found {}",
                            names(options),
                            describe(other)
                        ),
                    )
                    .allowing(names(options)));
            }
        };
        options
            .iter()
            .find(|(n, _)| *n == text)
            .map(|(_, t)| Some(*t))
            .ok_or_else(|| {
                let hint = nearest(&text, options.iter().map(|(n, _)| *n))
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                self.err(
                    key,
                    format!(
                        "`{}` is not allowed{hint}; allowed: {}",
                        crate::error::clip(&text, 80),
                        names(options)
                    ),
                )
                .allowing(names(options))
            })
    }

    pub fn table(&mut self, key: &'static str) -> Result<Option<TableReader<'a>>, InputError> {
        match self.raw(key) {
            None => Ok(None),
            Some(Value::Table(t)) => Ok(Some(TableReader::new(self.key(key), t))),
            Some(v) => Err(self
                .err(key, format!("expected a table, found {}", describe(v)))
                .allowing("a table")),
        }
    }

    /// The keys asked for so far.
    pub fn known_keys(&self) -> Vec<&'static str> {
        self.known.iter().copied().collect()
    }

    /// Refuse every key that no getter asked for.
    pub fn finish(self) -> Result<(), InputError> {
        for key in self.table.keys() {
            if !self.known.contains(key.as_str()) {
                let hint = nearest(key, self.known.iter().copied())
                    .map(|n| format!(" Did you mean `{n}`?"))
                    .unwrap_or_default();
                let valid: Vec<&str> = self.known.iter().copied().collect();
                return Err(self
                    .err(
                        key,
                        format!("unknown key.{hint} Valid keys here: {}.", valid.join(", ")),
                    )
                    .allowing(valid.join(", ")));
            }
        }
        Ok(())
    }
}

/// What the typed readers allow, as [`InputError::allowed`] says it.
const A_STRING: &str = "a string";
const A_WHOLE: &str = "a non-negative whole number";
const A_NUMBER: &str = "a number";
const A_SIZE: &str = "a size: bytes, or a string with a unit (\"1.5 GB\")";

fn names<T>(options: &[(&str, T)]) -> String {
    options
        .iter()
        .map(|(n, _)| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A short description of a value's type, for error messages.
pub fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string \"{}\"", crate::error::clip(s, 80)),
        Value::Integer(i) => format!("the integer {i}"),
        Value::Float(f) => format!("the number {f}"),
        Value::Boolean(b) => format!("the boolean {b}"),
        Value::Datetime(_) => "a date".into(),
        Value::Array(_) => "a list".into(),
        Value::Table(_) => "a table".into(),
    }
}

pub fn value_u64(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        Value::Integer(i) => Err(format!("must not be negative (got {i})")),
        Value::Float(f) if *f >= 0.0 && f.fract() == 0.0 && *f < 9.0e18 => Ok(*f as u64),
        other => Err(format!(
            "expected a non-negative whole number, found {}",
            describe(other)
        )),
    }
}

/// One whole number in `lo..=hi`, as `u32` (list items, matrix rows).
pub fn value_u32_in(v: &Value, lo: u32, hi: u32) -> Result<u32, String> {
    let x = value_u64(v)?;
    match u32::try_from(x) {
        Ok(x) if (lo..=hi).contains(&x) => Ok(x),
        _ => Err(format!("{x}: allowed {lo}..{hi}")),
    }
}

pub fn value_f64(v: &Value) -> Result<f64, String> {
    match v {
        Value::Integer(i) => Ok(*i as f64),
        Value::Float(f) if f.is_finite() => Ok(*f),
        other => Err(format!("expected a number, found {}", describe(other))),
    }
}

pub fn value_size(v: &Value) -> Result<u64, String> {
    match v {
        Value::String(s) => parse_size(s).map_err(|e| e.message),
        Value::Integer(i) if *i < 0 => Err(format!("a size must not be negative (got {i})")),
        _ => value_u64(v).map_err(|_| {
            format!(
                "expected a size such as 4096 or \"16 KiB\", found {}",
                describe(v)
            )
        }),
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough
/// to be a plausible typo.
pub fn nearest<'c>(word: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    let limit = (word.len() / 3).max(2);
    let chars = word.chars().count();
    candidates
        // The distance is at least the difference in length: a word far
        // longer than every candidate (a 10 MB name) costs one pass, not
        // an edit distance against each.
        .filter(|c| chars.abs_diff(c.chars().count()) <= limit)
        .map(|c| (levenshtein(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_is_refused_with_suggestion() {
        let t: Table = toml::from_str("nodez = 3\ncpus_per_node = 2").unwrap();
        let mut r = TableReader::new("machine", &t);
        r.u64("nodes").unwrap();
        r.u64("cpus_per_node").unwrap();
        let e = r.finish().unwrap_err();
        assert_eq!(e.key.as_deref(), Some("machine.nodez"));
        assert!(e.message.contains("Did you mean `nodes`?"), "{}", e.message);
    }

    #[test]
    fn wrong_types_name_the_key() {
        let t: Table =
            toml::from_str("nodes = \"many\"\nsize = -4\nmode = \"intreleave\"").unwrap();
        let mut r = TableReader::new("", &t);
        assert_eq!(r.u64("nodes").unwrap_err().key.as_deref(), Some("nodes"));
        assert!(r.size("size").unwrap_err().message.contains("negative"));
        let e = r
            .choice("mode", &[("local", 0), ("interleave", 1)])
            .unwrap_err();
        assert!(
            e.message.contains("did you mean `interleave`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn the_readers_say_what_is_allowed_beside_the_message() {
        let t: Table =
            toml::from_str("nodes = \"many\"\nops = 0\nmode = \"intreleave\"\nbogus = 1").unwrap();
        let mut r = TableReader::new("", &t);
        let e = r.u64("nodes").unwrap_err();
        assert_eq!(e.allowed.as_deref(), Some("a non-negative whole number"));
        let e = r.u64_in("ops", 1, 100).unwrap_err();
        assert_eq!(e.message, "0: allowed 1..100");
        assert_eq!(e.allowed.as_deref(), Some("1..100"));
        let e = r
            .choice("mode", &[("local", 0), ("interleave", 1)])
            .unwrap_err();
        assert!(
            e.message.ends_with("; allowed: `local`, `interleave`"),
            "{}",
            e.message
        );
        assert_eq!(e.allowed.as_deref(), Some("`local`, `interleave`"));
        let e = r.finish().unwrap_err();
        assert_eq!(e.key.as_deref(), Some("bogus"));
        assert_eq!(e.allowed.as_deref(), Some("mode, nodes, ops"));
        // A message built without a reader says nothing it does not know.
        assert_eq!(InputError::at("k", "bad").allowed, None);
    }
}
