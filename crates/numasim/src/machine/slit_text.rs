//! Large distance matrices in TOML text, without the TOML document tree.
//!
//! A TOML parser keeps every value of a document as a node of its tree,
//! about 250 bytes an entry once parsed: a 5,000-node `matrix` (a 75 MB
//! file) took more than 4 GiB, and the 8,192 nodes numasim models would
//! need 16 GB. So before a machine or scenario text is parsed, each
//! `matrix = [[…], …]` array of more than [`THRESHOLD`] bytes is read here,
//! entry by entry, into one byte per entry ([`SlitRows`]), and replaced in
//! the text by a short string that carries those bytes ([`TOKEN`], two hex
//! digits an entry); the machine reader ([`decode`]) turns it back into the
//! rows. A smaller matrix goes through the TOML parser as before, so its
//! errors read exactly as they always did.
//!
//! A large matrix must be plain decimal integers from 0 to 255 (what a SLIT
//! holds); anything else in one (a float, a string, a number past 255) is
//! reported against the `matrix` key with its row and entry, as an input
//! error, not parsed into a tree. The scan understands enough TOML (strings,
//! comments, tables, inline tables, arrays) to find the key; on anything it
//! does not follow it leaves the text as it is, for the TOML parser to
//! report.

use super::distance::SlitRows;
use std::borrow::Cow;

/// Arrays of `matrix` text at least this long are read compactly (about
/// 16,000 entries, a 128-node matrix).
pub const THRESHOLD: usize = 64 << 10;

/// The start of a string that carries a compact matrix: `ROWS:` then each
/// row's entries as two lower-case hex digits, rows separated by `;`.
pub const TOKEN: &str = "\u{1}numasim-slit:";
/// The start of a string that carries why a large matrix was refused.
pub const ERROR_TOKEN: &str = "\u{1}numasim-slit-error:";

/// Rows of entries as a compact-matrix string (an error string where an
/// entry is past 255, with the message a list item past its range gets).
pub fn encode<R: AsRef<[u32]>>(rows: &[R]) -> String {
    let total: usize = rows.iter().map(|r| r.as_ref().len()).sum();
    let mut s = String::with_capacity(TOKEN.len() + 12 + total * 2 + rows.len());
    s.push_str(TOKEN);
    s.push_str(&rows.len().to_string());
    s.push(':');
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            s.push(';');
        }
        for &v in r.as_ref() {
            if v > 255 {
                return format!("{ERROR_TOKEN}item {i}: {v}: allowed 0..255");
            }
            push_hex(&mut s, v as u8);
        }
    }
    s
}

fn push_hex(s: &mut String, v: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    s.push(HEX[(v >> 4) as usize] as char);
    s.push(HEX[(v & 15) as usize] as char);
}

/// The rows a compact-matrix string carries; `None` for any other string,
/// `Some(Err(why))` for a refused (or forged and malformed) one.
pub fn decode(s: &str) -> Option<Result<SlitRows, String>> {
    if let Some(why) = s.strip_prefix(ERROR_TOKEN) {
        return Some(Err(why.to_string()));
    }
    let body = s.strip_prefix(TOKEN)?;
    Some(decode_body(body).ok_or_else(|| "not a valid compact distance matrix".to_string()))
}

fn decode_body(body: &str) -> Option<SlitRows> {
    let (count, rest) = body.split_once(':')?;
    let count: usize = count.parse().ok()?;
    let mut data = Vec::with_capacity(rest.len() / 2);
    let mut starts = vec![0];
    if count > 0 {
        for row in rest.split(';') {
            let b = row.as_bytes();
            if b.len() % 2 != 0 {
                return None;
            }
            for pair in b.chunks_exact(2) {
                let hi = (pair[0] as char).to_digit(16)?;
                let lo = (pair[1] as char).to_digit(16)?;
                data.push((hi * 16 + lo) as u8);
            }
            starts.push(data.len());
        }
    } else if !rest.is_empty() {
        return None;
    }
    (starts.len() == count + 1).then(|| SlitRows::from_parts(data, starts))
}

/// The value of a compact-matrix string as JSON (rows of numbers), for
/// records that carry a case's keys.
pub fn to_json(s: &str) -> Option<serde_json::Value> {
    Some(match decode(s)? {
        Ok(m) => serde_json::Value::Array(
            (0..m.rows())
                .map(|i| serde_json::Value::Array(m.row(i).iter().map(|&v| v.into()).collect()))
                .collect(),
        ),
        Err(why) => serde_json::Value::String(why),
    })
}

/// Parse TOML text as a table, large `matrix` arrays read compactly.
pub fn parse_toml(text: &str) -> Result<toml::Table, toml::de::Error> {
    compact(text).parse()
}

/// `text` with every large `matrix` array replaced by a compact-matrix
/// string; unchanged where there is none or the scan cannot follow it.
pub fn compact(text: &str) -> Cow<'_, str> {
    if text.len() < THRESHOLD || !text.contains("matrix") {
        return Cow::Borrowed(text);
    }
    let mut lex = Lex {
        b: text.as_bytes(),
        i: 0,
        found: Vec::new(),
    };
    if lex.document().is_none() || lex.found.is_empty() {
        return Cow::Borrowed(text);
    }
    let size = lex
        .found
        .iter()
        .fold(text.len(), |n, (s, e, w)| n - (e - s) + w.len());
    let mut out = String::with_capacity(size);
    let mut at = 0;
    for (start, end, with) in &lex.found {
        out.push_str(&text[at..*start]);
        out.push_str(with);
        at = *end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// A scanner over TOML text that finds `matrix = [` values; every method
/// returns `None` where the text is not TOML it follows.
struct Lex<'a> {
    b: &'a [u8],
    i: usize,
    /// (start, end, replacement) of each large matrix, in order.
    found: Vec<(usize, usize, String)>,
}

impl Lex<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn at(&self, s: &str) -> bool {
        self.b[self.i..].starts_with(s.as_bytes())
    }

    /// Spaces and tabs.
    fn blank(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    /// Blanks, line breaks and comments.
    fn space(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r' | b'\n') => self.i += 1,
                Some(b'#') => self.comment(),
                _ => return,
            }
        }
    }

    fn comment(&mut self) {
        while !matches!(self.peek(), None | Some(b'\n')) {
            self.i += 1;
        }
    }

    fn document(&mut self) -> Option<()> {
        loop {
            self.space();
            match self.peek() {
                None => return Some(()),
                Some(b'[') => self.header()?,
                Some(_) => self.keyval()?,
            }
            // The rest of the line: blanks and a comment.
            self.blank();
            if self.peek() == Some(b'#') {
                self.comment();
            }
            match self.peek() {
                None | Some(b'\n') => {}
                Some(b'\r') if self.b.get(self.i + 1) == Some(&b'\n') => {}
                _ => return None,
            }
        }
    }

    /// `[a.b]` or `[[a.b]]`.
    fn header(&mut self) -> Option<()> {
        self.i += 1;
        let double = self.peek() == Some(b'[');
        if double {
            self.i += 1;
        }
        self.blank();
        self.key()?;
        self.blank();
        if self.peek() != Some(b']') {
            return None;
        }
        self.i += 1;
        if double {
            if self.peek() != Some(b']') {
                return None;
            }
            self.i += 1;
        }
        Some(())
    }

    /// A dotted key; its last part (quotes kept off) is returned.
    fn key(&mut self) -> Option<&[u8]> {
        let mut last;
        loop {
            self.blank();
            let start = self.i;
            match self.peek()? {
                b'"' => {
                    self.basic_string()?;
                    last = (start + 1, self.i - 1);
                }
                b'\'' => {
                    self.literal_string()?;
                    last = (start + 1, self.i - 1);
                }
                _ => {
                    while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
                    {
                        self.i += 1;
                    }
                    if self.i == start {
                        return None;
                    }
                    last = (start, self.i);
                }
            }
            self.blank();
            if self.peek() == Some(b'.') {
                self.i += 1;
            } else {
                return Some(&self.b[last.0..last.1]);
            }
        }
    }

    fn keyval(&mut self) -> Option<()> {
        let is_matrix = self.key()? == b"matrix";
        self.blank();
        if self.peek() != Some(b'=') {
            return None;
        }
        self.i += 1;
        self.blank();
        if is_matrix && self.peek() == Some(b'[') {
            let start = self.i;
            self.array()?;
            let end = self.i;
            if end - start >= THRESHOLD {
                let text = std::str::from_utf8(&self.b[start..end]).ok()?;
                let with = match read_rows(text) {
                    Ok(rows) => rows,
                    Err(why) => format!("{ERROR_TOKEN}{why}"),
                };
                self.found.push((start, end, quoted(&with)));
            }
            return Some(());
        }
        self.value()
    }

    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.basic_string(),
            b'\'' => self.literal_string(),
            b'[' => self.array(),
            b'{' => self.inline_table(),
            _ => {
                let start = self.i;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b']' | b'}' | b'\n' | b'\r' | b'#')
                ) {
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }

    fn array(&mut self) -> Option<()> {
        self.i += 1;
        loop {
            self.space();
            if self.peek()? == b']' {
                self.i += 1;
                return Some(());
            }
            self.value()?;
            self.space();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn inline_table(&mut self) -> Option<()> {
        self.i += 1;
        loop {
            self.space();
            if self.peek()? == b'}' {
                self.i += 1;
                return Some(());
            }
            self.keyval()?;
            self.space();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn basic_string(&mut self) -> Option<()> {
        if self.at("\"\"\"") {
            self.i += 3;
            loop {
                match self.peek()? {
                    b'\\' => self.i += 2,
                    b'"' if self.at("\"\"\"") => {
                        self.i += 3;
                        // Up to two more quotes belong to the string.
                        while self.peek() == Some(b'"') {
                            self.i += 1;
                        }
                        return Some(());
                    }
                    _ => self.i += 1,
                }
            }
        }
        self.i += 1;
        loop {
            match self.peek()? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\n' => return None,
                _ => self.i += 1,
            }
        }
    }

    fn literal_string(&mut self) -> Option<()> {
        if self.at("'''") {
            self.i += 3;
            loop {
                if self.at("'''") {
                    self.i += 3;
                    while self.peek() == Some(b'\'') {
                        self.i += 1;
                    }
                    return Some(());
                }
                self.peek()?;
                self.i += 1;
            }
        }
        self.i += 1;
        loop {
            match self.peek()? {
                b'\'' => {
                    self.i += 1;
                    return Some(());
                }
                b'\n' => return None,
                _ => self.i += 1,
            }
        }
    }
}

/// A compact-matrix or error string as a TOML basic string (the error
/// text is kept to characters that need no escape).
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    out.push('"');
    for c in s.chars() {
        match c {
            '\u{1}' => out.push_str("\\u0001"),
            '"' | '\\' => out.push('\''),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `[[10, 20], [20, 10]]` (comments and line breaks allowed between
/// entries) as a compact-matrix string, or why not.
fn read_rows(text: &str) -> Result<String, String> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut out = String::with_capacity(TOKEN.len() + 12 + text.len() * 2 / 3);
    let mut body = String::with_capacity(text.len() * 2 / 3);
    let skip = |i: &mut usize| loop {
        match b.get(*i) {
            Some(b' ' | b'\t' | b'\r' | b'\n') => *i += 1,
            Some(b'#') => {
                while !matches!(b.get(*i), None | Some(b'\n')) {
                    *i += 1;
                }
            }
            _ => return,
        }
    };
    let bad = |row: usize, entry: usize, i: usize| {
        let tok: String = text[i..]
            .chars()
            .take_while(|c| !matches!(c, ',' | ']' | '\n'))
            .take(24)
            .filter(|c| c.is_ascii_alphanumeric() || "+-._ ".contains(*c))
            .collect();
        format!(
            "item {row}: entry {entry}: `{}` is not a whole number from 0 to 255 (a matrix \
             this large is read as plain decimal integers, docs/machine.md)",
            tok.trim()
        )
    };
    // The outer bracket; the scan found its match.
    i += 1;
    let mut rows = 0usize;
    loop {
        skip(&mut i);
        match b.get(i) {
            Some(b']') => break,
            Some(b'[') => i += 1,
            _ => return Err(format!("item {rows}: expected a row (list of numbers)")),
        }
        if rows > 0 {
            body.push(';');
        }
        let mut entry = 0usize;
        loop {
            skip(&mut i);
            if b.get(i) == Some(&b']') {
                i += 1;
                break;
            }
            let start = i;
            if b.get(i) == Some(&b'+') {
                i += 1;
            }
            let mut v: u32 = 0;
            let mut digits = 0;
            while let Some(&c) = b.get(i) {
                if c.is_ascii_digit() {
                    v = v.saturating_mul(10).saturating_add((c - b'0') as u32);
                    digits += 1;
                    i += 1;
                } else if c == b'_' && digits > 0 && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                } else {
                    break;
                }
            }
            let ends = matches!(
                b.get(i),
                Some(b',' | b']' | b' ' | b'\t' | b'\r' | b'\n' | b'#')
            );
            // TOML forbids leading zeros ("010"); the parser would refuse them.
            let leading_zero = digits > 1 && b[start..].first() == Some(&b'0');
            if digits == 0 || !ends || v > 255 || leading_zero {
                return Err(bad(rows, entry, start));
            }
            push_hex(&mut body, v as u8);
            entry += 1;
            skip(&mut i);
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b']') => {
                    i += 1;
                    break;
                }
                _ => return Err(bad(rows, entry, i)),
            }
        }
        rows += 1;
        skip(&mut i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b']') => break,
            _ => return Err(format!("item {rows}: expected `,` or `]` after a row")),
        }
    }
    out.push_str(TOKEN);
    out.push_str(&rows.to_string());
    out.push(':');
    out.push_str(&body);
    Ok(out)
}

/// A TOML value as records carry it in `case` (integers stay integers, a
/// compact-matrix string becomes its rows). Here rather than in `scenario`
/// because workloads label records with it too, and they sit below it.
pub fn toml_to_json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => {
            to_json(s).unwrap_or_else(|| serde_json::Value::String(s.clone()))
        }
        toml::Value::Integer(i) => serde_json::Value::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        toml::Value::Boolean(b) => serde_json::Value::Bool(*b),
        toml::Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        toml::Value::Array(a) => serde_json::Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => serde_json::Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(n: usize, entry: &str) -> String {
        let row = |i: usize| {
            let v: Vec<&str> = (0..n).map(|j| if i == j { "10" } else { entry }).collect();
            format!("[{}]", v.join(", "))
        };
        let rows: Vec<String> = (0..n).map(row).collect();
        format!(
            "name = \"m\" # a comment with matrix = [\n[distance]\nlocal = 10\nmatrix = [\n  {},\n]\n[dram]\nlatency_ns = 90.0\n",
            rows.join(",\n  # between rows\n  ")
        )
    }

    #[test]
    fn a_large_matrix_reads_as_the_parser_reads_it() {
        let text = big(200, "20");
        let t = parse_toml(&text).unwrap();
        let m = t["distance"]["matrix"].as_str().expect("a compact string");
        let rows = decode(m).unwrap().unwrap();
        assert_eq!(rows.rows(), 200);
        assert_eq!(rows.row(3)[3], 10);
        assert_eq!(rows.row(3)[4], 20);
        assert_eq!(t["dram"]["latency_ns"].as_float(), Some(90.0));
        // The same document through the TOML parser alone.
        let plain: toml::Table = text.parse().unwrap();
        let want: Vec<Vec<i64>> = plain["distance"]["matrix"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_integer().unwrap())
                    .collect()
            })
            .collect();
        for (i, r) in want.iter().enumerate() {
            let got: Vec<i64> = rows.row(i).iter().map(|&v| v as i64).collect();
            assert_eq!(&got, r, "row {i}");
        }
    }

    #[test]
    fn a_bad_entry_in_a_large_matrix_is_named() {
        for (entry, want) in [("20.5", "`20.5`"), ("300", "`300`"), ("\"x\"", "entry 1")] {
            let text = big(200, entry);
            let t = parse_toml(&text).unwrap();
            let why = decode(t["distance"]["matrix"].as_str().unwrap())
                .unwrap()
                .unwrap_err();
            assert!(
                why.contains("item 0") && why.contains(want),
                "{entry}: {why}"
            );
        }
    }

    #[test]
    fn small_matrices_and_other_keys_are_left_alone() {
        let small = "[distance]\nmatrix = [[10, 20], [20, 10]]\n";
        assert!(matches!(compact(small), Cow::Borrowed(_)));
        // A large array under another key, or `matrix` in a string.
        let other = format!(
            "x = [{}]\ns = \"matrix = [\"\n",
            vec!["1"; 40_000].join(", ")
        );
        assert!(matches!(compact(&other), Cow::Borrowed(_)));
    }

    fn machine(n: usize) -> crate::machine::Machine {
        let nodes = (0..n)
            .map(|_| crate::machine::Node {
                cpus: 1,
                mem_bytes: 1 << 30,
            })
            .collect();
        let rows: Vec<Vec<u32>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i == j { 10 } else { 20 + (i + j) as u32 % 7 })
                    .collect()
            })
            .collect();
        crate::machine::Machine::basic("m", nodes, rows).unwrap()
    }

    /// Up to 128 nodes a machine prints exactly as the TOML writer would
    /// print it (one line of rows); beyond, a row a line; both read back to
    /// the same machine and the same text.
    #[test]
    fn machines_with_matrices_print_and_read_back() {
        for n in [1, 8, 128, 129, 300] {
            let m = machine(n);
            let text = m.to_toml_string();
            if n <= 128 {
                let t: toml::Table = text.parse().unwrap();
                assert_eq!(toml::to_string(&t).unwrap(), text, "{n} nodes");
            } else {
                assert!(text.contains("matrix = [\n    [10, "), "{n} nodes");
            }
            let back = crate::machine::Machine::from_toml_str(&text, "m.toml").unwrap();
            assert_eq!(back.distances, m.distances, "{n} nodes");
            assert_eq!(back.to_toml_string(), text, "{n} nodes");
        }
    }

    #[test]
    fn encode_and_decode_agree() {
        let rows = vec![vec![10, 20, 255], vec![], vec![0]];
        let m = decode(&encode(&rows)).unwrap().unwrap();
        assert_eq!(m.rows(), 3);
        assert_eq!(m.row(0), &[10, 20, 255]);
        assert!(m.row(1).is_empty());
        assert!(decode(&encode(&[vec![256u32]])).unwrap().is_err());
        assert!(decode("plain").is_none());
    }
}
