//! `[kernel]` knobs declared once. Each subsystem keeps one table of
//! [`Knob`]s (name, allowed values, default by release and arch, a doc
//! line, how to read it and how records show it); reading a `[kernel]`
//! table, `--set kernel.*`, the JSONL `case` values, `numasim knobs`,
//! `docs/knobs.md` and the "did you mean" of a misspelt key all come from
//! those tables (ARCHITECTURE.md, "A knob").

use crate::error::InputError;
use crate::input::table::TableReader;
use crate::machine::Machine;
use serde_json::Value as Json;

/// What a knob accepts, as `numasim knobs` and docs/knobs.md print it.
#[derive(Clone, Copy)]
pub enum Allowed {
    /// One of an enum's names (`knob_enum!`'s `NAMES`).
    Names(fn() -> Vec<&'static str>),
    /// `0`/`1` or `false`/`true`.
    Bool,
    /// Anything else, in words (ranges, units, special values).
    Text(&'static str),
}

impl Allowed {
    pub fn describe(&self) -> String {
        match self {
            Allowed::Names(f) => f()
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" \\| "),
            Allowed::Bool => "`0` \\| `1`".into(),
            Allowed::Text(t) => (*t).into(),
        }
    }
}

/// One `[kernel]` key of a subsystem whose knobs are the struct `K`.
pub struct Knob<K: 'static> {
    /// The key, named as in Linux where Linux has it.
    pub name: &'static str,
    pub allowed: Allowed,
    /// The value when the file leaves it out, by release and arch, in words.
    pub default: &'static str,
    /// One line: what it does and where it comes from.
    pub doc: &'static str,
    /// Reads the key (when present) into `K`, checking it against what is
    /// already read: a table is read in order.
    pub read: fn(&mut TableReader, &mut K, &Machine) -> Result<(), InputError>,
    /// Its value in force, as records' `case` shows it.
    pub json: fn(&K) -> Json,
}

/// Read every knob of `table` that the `[kernel]` table sets, in order.
pub fn read_all<K>(
    table: &[Knob<K>],
    r: &mut TableReader,
    k: &mut K,
    machine: &Machine,
) -> Result<(), InputError> {
    for knob in table {
        (knob.read)(r, k, machine)?;
    }
    Ok(())
}

/// The value of knob `name` in force, if `table` declares it.
pub fn json_of<K>(table: &[Knob<K>], k: &K, name: &str) -> Option<Json> {
    table.iter().find(|n| n.name == name).map(|n| (n.json)(k))
}

/// A knob as documentation sees it, whatever its subsystem's struct.
#[derive(Debug, Clone)]
pub struct KnobDoc {
    pub subsystem: &'static str,
    pub name: &'static str,
    pub allowed: String,
    pub default: &'static str,
    pub doc: &'static str,
}

/// The documentation rows of one subsystem's table.
pub fn docs_of<K>(subsystem: &'static str, table: &[Knob<K>]) -> Vec<KnobDoc> {
    table
        .iter()
        .map(|n| KnobDoc {
            subsystem,
            name: n.name,
            allowed: n.allowed.describe(),
            default: n.default,
            doc: n.doc,
        })
        .collect()
}

/// A knob that is one of an enum's names (`knob_enum!`), stored in field
/// `$field` of `$K`: the common case, written once.
macro_rules! choice_knob {
    ($K:ty, $field:ident, $E:ty, default: $default:literal, doc: $doc:literal) => {
        $crate::kernel::knobs::Knob::<$K> {
            name: stringify!($field),
            allowed: $crate::kernel::knobs::Allowed::Names(|| {
                <$E>::NAMES.iter().map(|(n, _)| *n).collect()
            }),
            default: $default,
            doc: $doc,
            read: |r, k, _| {
                if let Some(v) = r.choice(stringify!($field), <$E>::NAMES)? {
                    k.$field = v;
                }
                Ok(())
            },
            json: |k| serde_json::json!(k.$field.name()),
        }
    };
}
pub(crate) use choice_knob;

/// A `0`/`1` knob stored in `bool` field `$field` of `$K`.
macro_rules! bool_knob {
    ($K:ty, $field:ident, default: $default:literal, doc: $doc:literal) => {
        $crate::kernel::knobs::Knob::<$K> {
            name: stringify!($field),
            allowed: $crate::kernel::knobs::Allowed::Bool,
            default: $default,
            doc: $doc,
            read: |r, k, _| {
                if let Some(v) = r.bool(stringify!($field))? {
                    k.$field = v;
                }
                Ok(())
            },
            json: |k| serde_json::json!(u8::from(k.$field)),
        }
    };
}
pub(crate) use bool_knob;

/// Markdown for docs/knobs.md and `numasim knobs --markdown`: one table
/// per subsystem.
pub fn markdown(rows: &[KnobDoc]) -> String {
    let mut out = String::new();
    let mut last = "";
    for k in rows {
        if k.subsystem != last {
            if !last.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!(
                "### {}\n\n| knob | allowed | default | what it does |\n|---|---|---|---|\n",
                k.subsystem
            ));
            last = k.subsystem;
        }
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            k.name, k.allowed, k.default, k.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Demo {
        on: bool,
    }

    const DEMO: &[Knob<Demo>] = &[bool_knob!(Demo, on, default: "0", doc: "a switch")];

    #[test]
    fn a_table_reads_what_it_declares_and_shows_it() {
        let m = Machine::basic(
            "m",
            vec![crate::machine::Node {
                cpus: 1,
                mem_bytes: 1 << 30,
            }],
            vec![vec![10]],
        )
        .unwrap();
        let t: toml::Table = toml::from_str("on = 1").unwrap();
        let mut r = TableReader::new("kernel", &t);
        let mut d = Demo::default();
        read_all(DEMO, &mut r, &mut d, &m).unwrap();
        r.finish().unwrap();
        assert!(d.on);
        assert_eq!(json_of(DEMO, &d, "on"), Some(serde_json::json!(1)));
        assert_eq!(json_of(DEMO, &d, "off"), None);
        let md = markdown(&docs_of("demo", DEMO));
        assert!(md.contains("| `on` | `0` \\| `1` | 0 | a switch |"), "{md}");
    }
}
