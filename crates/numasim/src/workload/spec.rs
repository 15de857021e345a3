//! What a workload's spec says: every `[[run]]` step's keys (type, unit,
//! default, allowed range), the metrics it reports (with units), the row
//! keys its records add and an example step. Each workload's file holds
//! its own [`Spec`] (in its [`super::Workload`]); the registry
//! (`super::WORKLOADS`) lists them, and the shared keys below are reused.
//!
//! The validator reads it (unknown and missing keys are found here before a
//! workload's own reader runs), `numasim workloads` prints it and
//! `docs/scenario.md` is generated from it. Tests hold it to the readers:
//! the keys each reader asks for, the stated defaults and the integer
//! ranges (`tests/workload_spec.rs`), and the metric units the examples
//! report.

/// What a key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A size: an integer of bytes or a string with a unit (`"1.5 GB"`).
    Size,
    /// A size or a list of sizes (one row per size).
    Sizes,
    /// A whole number.
    Int,
    /// A whole number or a list of them (one row per count).
    Counts,
    /// A list of whole numbers (CPU or node ids).
    IntList,
    /// A number.
    Float,
    /// `true`/`false` (or 1/0).
    Bool,
    /// A string.
    Str,
    /// One of the listed names.
    Choice(&'static [&'static str]),
    /// A list of strings.
    StrList,
}

impl Kind {
    pub fn name(&self) -> String {
        match self {
            Kind::Size => "size".into(),
            Kind::Sizes => "size or list of sizes".into(),
            Kind::Int => "integer".into(),
            Kind::Counts => "integer or list".into(),
            Kind::IntList => "list of integers".into(),
            Kind::Float => "number".into(),
            Kind::Bool => "boolean".into(),
            Kind::Str => "string".into(),
            Kind::Choice(c) => c.join(" \\| "),
            Kind::StrList => "list of strings".into(),
        }
    }
}

/// A key's value when the step leaves it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// The step must give it.
    Required,
    /// This TOML value (a test checks that writing it changes nothing).
    Value(&'static str),
    /// Depends on the machine or other keys; said in words.
    Text(&'static str),
}

/// What values a key allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// Whole numbers `lo..=hi` (a test checks `lo - 1` and `hi + 1` are refused).
    Int(u64, u64),
    /// Numbers `lo..=hi`.
    Float(f64, f64),
    /// In words (machine-dependent, or checked together with other keys).
    Text(&'static str),
    /// Whatever the type allows.
    Any,
}

#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub key: &'static str,
    pub kind: Kind,
    /// Unit of a number (`""` where none).
    pub unit: &'static str,
    pub default: Default,
    pub range: Range,
    /// What it means; extra limits that involve other keys.
    pub about: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub about: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub name: &'static str,
    pub about: &'static str,
    pub params: &'static [Param],
    /// Groups of keys of which exactly one must be given.
    pub one_of: &'static [&'static str],
    pub metrics: &'static [Metric],
    /// The built-in machine the example runs on.
    pub example_machine: &'static str,
    /// `[kernel]` knobs the example needs (TOML body; often none).
    pub example_kernel: &'static str,
    /// An example `[[run]]` step (TOML body, without the header).
    pub example: &'static str,
    /// Keys its records add per row beyond the case's and the step's own
    /// (`node`, `table`): a `[[view]]` may pivot on them.
    pub row_keys: &'static [&'static str],
}

impl Spec {
    pub fn param(&self, key: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.key == key)
    }
    pub fn metric_names(&self) -> Vec<&'static str> {
        self.metrics.iter().map(|m| m.name).collect()
    }
}

/// The keys every step may carry besides its own.
pub const COMMON: &[Param] = &[
    Param {
        key: "workload",
        kind: Kind::Str,
        unit: "",
        default: Default::Required,
        range: Range::Text("a workload name (`numasim workloads`)"),
        about: "which program the step runs",
    },
    Param {
        key: "metrics",
        kind: Kind::StrList,
        unit: "",
        default: Default::Text("every metric of the workload"),
        range: Range::Text("the workload's metrics"),
        about: "keep only these metrics",
    },
];

pub(crate) const fn p(
    key: &'static str,
    kind: Kind,
    unit: &'static str,
    default: Default,
    range: Range,
    about: &'static str,
) -> Param {
    Param {
        key,
        kind,
        unit,
        default,
        range,
        about,
    }
}

pub(crate) const fn m(name: &'static str, unit: &'static str, about: &'static str) -> Metric {
    Metric { name, unit, about }
}

use self::Default::{Required, Text as DText, Value as DVal};
use self::Kind::*;
use self::Range::{Any, Int as RInt, Text as RText};

pub(crate) const TASK_JOB: Param = p(
    "task",
    Str,
    "",
    DVal("\"job\""),
    Any,
    "the task's name: steps naming the same task share its memory",
);
pub(crate) const HORIZON: Param = p(
    "horizon_s",
    Int,
    "s",
    DVal("3600"),
    RInt(1, 86_400),
    "simulated time after which the step gives up",
);
pub(crate) const CPU0: Param = p(
    "cpu",
    Int,
    "",
    DVal("0"),
    RText("0 .. the machine's CPUs − 1"),
    "the CPU the task runs on",
);
pub(crate) const NODES_MEM: Param = p(
    "nodes",
    IntList,
    "",
    DText("every node with memory"),
    RText("node ids 0 .. nodes − 1, at least one"),
    "nodes the memory is spread over",
);
pub(crate) const ZCB: Param = p(
    "zcb",
    Bool,
    "",
    DVal("true"),
    Any,
    "under a `bigmem` kernel, run as a Zepto compute binary (buffers in Big Memory)",
);
pub(crate) const HOT: Param = p(
    "hot_pages",
    Int,
    "pages",
    DVal("2"),
    RInt(0, 64),
    "pages outside the buffer touched every pass (stack, code): TLB entries they keep",
);
pub(crate) const SIZES: Param = p(
    "size",
    Sizes,
    "B",
    Required,
    RText("two cache lines (random-read: `read_bytes`) .. the machine's memory"),
    "buffer sizes, one row each",
);
pub(crate) const fn counts(key: &'static str, default: Default, about: &'static str) -> Param {
    p(
        key,
        Counts,
        "",
        default,
        RText("1 .. min(the machine's CPUs, 16384); at most 64 counts, together at most 16384"),
        about,
    )
}

pub(crate) const PCI_DEVICE_NODE: Param = p(
    "device_node",
    Int,
    "",
    DVal("0"),
    RText("0 .. nodes − 1"),
    "node whose I/O chipset the device's bus hangs off",
);
pub(crate) const PCI_CPU: Param = p(
    "cpu",
    Int,
    "",
    DText("the first CPU of the device's node"),
    RText("0 .. the machine's CPUs − 1"),
    "the CPU that drives the device",
);
pub(crate) const PCI_LOAD: Param = p(
    "load",
    StrList,
    "",
    DVal("[\"idle\"]"),
    RText("`idle`, `busy` (a name or a list)"),
    "`busy`: a second bus master streams DMA writes as fast as the bus allows",
);
pub(crate) const PCI_OPS: Param = p(
    "ops",
    Int,
    "",
    DVal("200"),
    RInt(1, 100_000),
    "operations timed, one after another with random gaps",
);
pub(crate) const PCI_DMA_NODES: Param = p(
    "dma_nodes",
    IntList,
    "",
    DText("every node"),
    RText("node ids 0 .. nodes − 1"),
    "nodes the background DMA writes go to, in turn",
);

pub(crate) const FLAG: &str = "flag";

pub(crate) const FS: Param = p(
    "fs",
    Choice(&["xfs", "ext2", "ext3"]),
    "",
    Required,
    Any,
    "the filesystem (XFS: delayed allocation; Ext2/Ext3: allocation in the write path)",
);
pub(crate) const IO_THREADS: Param = p(
    "threads",
    Counts,
    "",
    Required,
    RText("1 .. 4 × the machine's CPUs"),
    "thread counts to sweep; one file per thread, thread i on CPU i",
);
pub(crate) const STRIPE_UNIT: Param = p(
    "stripe_unit",
    Size,
    "B",
    DVal("\"512 KiB\""),
    RText("a multiple of block_size and of the page size"),
    "the volume's stripe unit (MD raid0 over DM stripe)",
);
pub(crate) const BLOCK_SIZE: Param = p(
    "block_size",
    Size,
    "B",
    DVal("\"4 KiB\""),
    RText("a power of two, 512 B .. 64 KiB"),
    "the filesystem block size",
);
pub(crate) const fn file_size(d: &'static str) -> Param {
    p(
        "file_size",
        Size,
        "B",
        DVal(d),
        RText("threads × file_size (× seeds) ≤ 256 GiB; past the volume: enospc"),
        "each thread's file",
    )
}
pub(crate) const READAHEAD: Param = p(
    "readahead",
    Size,
    "B",
    DVal("\"64 MiB\""),
    RText("more than zero"),
    "readahead window (blockdev --setra), refilled half at a time",
);
pub(crate) const ENOSPC: Metric = Metric {
    name: "enospc",
    unit: "flag",
    about: "1 if the files did not fit on the volume (no other metric then)",
};

fn range_text(p: &Param) -> String {
    match p.range {
        Range::Int(lo, hi) => format!("{} … {}", group(lo), group(hi)),
        Range::Float(lo, hi) => format!("{lo} … {hi}"),
        Range::Text(t) => t.to_string(),
        Range::Any => match p.kind {
            Kind::Choice(_) => "one of the names".into(),
            _ => "any".into(),
        },
    }
}

fn default_text(p: &Param) -> String {
    match p.default {
        Default::Required => "required".into(),
        Default::Value(v) => format!("`{v}`"),
        Default::Text(t) => t.to_string(),
    }
}

/// 1000000 as 1_000_000, so long bounds can be read at a glance.
fn group(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

/// One workload as Markdown: the section `docs/scenario.md` holds and
/// `numasim workloads NAME` prints.
pub fn markdown(s: &Spec) -> String {
    let mut o = format!("### `{}`\n\n{}.\n\n", s.name, s.about);
    if s.params.is_empty() {
        o.push_str("Keys: none beyond `workload` and `metrics`.\n\n");
    } else {
        o.push_str(
            "| key | type | unit | default | allowed | meaning |\n|---|---|---|---|---|---|\n",
        );
        for p in s.params {
            o.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                p.key,
                p.kind.name(),
                p.unit,
                default_text(p),
                range_text(p),
                p.about
            ));
        }
        o.push('\n');
        if !s.one_of.is_empty() {
            let keys: Vec<String> = s.one_of.iter().map(|k| format!("`{k}`")).collect();
            o.push_str(&format!("Give exactly one of {}.\n\n", keys.join(", ")));
        }
    }
    o.push_str("| metric | unit | meaning |\n|---|---|---|\n");
    for m in s.metrics {
        o.push_str(&format!("| `{}` | {} | {} |\n", m.name, m.unit, m.about));
    }
    o.push_str(&format!(
        "\nExample:\n\n```toml\n{}```\n\n",
        example_scenario(s)
    ));
    o
}

/// A whole scenario around the example step: `numasim run` takes it as is.
pub fn example_scenario(s: &Spec) -> String {
    let kernel = if s.example_kernel.is_empty() {
        String::new()
    } else {
        format!("[kernel]\n{}", s.example_kernel)
    };
    format!(
        "name = \"{}-example\"\n[machine]\npreset = \"{}\"\n{kernel}[[run]]\n{}",
        s.name, s.example_machine, s.example
    )
}

/// Every workload of `specs` as Markdown: the generated part of
/// `docs/scenario.md` (`super::reference_markdown` passes the registry).
pub fn reference_markdown<'a>(specs: impl IntoIterator<Item = &'a Spec>) -> String {
    let mut o = String::from(
        "Every step also takes `workload` (the name, required) and `metrics` \
         (a list: keep only these; default all). Sizes are integers of bytes or \
         strings with a unit (`\"16 KiB\"`, `\"1.5 GiB\"`; every prefix is a power \
         of 1024, see \"Sizes\" above). A `flag` metric is 1 for yes and 0 for no.\n\n",
    );
    for s in specs {
        o.push_str(&markdown(s));
    }
    o
}

/// One workload as plain text for a terminal.
pub fn text(s: &Spec) -> String {
    let mut o = format!("{} — {}\n", s.name, s.about);
    if s.params.is_empty() {
        o.push_str("\nkeys: none beyond `workload` and `metrics`\n");
    } else {
        o.push_str("\nkeys:\n");
        let w = s.params.iter().map(|p| p.key.len()).max().unwrap_or(0);
        for p in s.params {
            let unit = if p.unit.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.unit)
            };
            o.push_str(&format!(
                "  {:<w$}  {}{}; default: {}; allowed: {}\n  {:<w$}  {}\n",
                p.key,
                p.kind.name().replace("\\|", "|"),
                unit,
                default_text(p).replace('`', ""),
                range_text(p).replace('`', ""),
                "",
                p.about
            ));
        }
        if !s.one_of.is_empty() {
            o.push_str(&format!("  give exactly one of {}\n", s.one_of.join(", ")));
        }
    }
    o.push_str("\nmetrics:\n");
    let w = s.metrics.iter().map(|m| m.name.len()).max().unwrap_or(0);
    for m in s.metrics {
        o.push_str(&format!("  {:<w$}  {:<8}  {}\n", m.name, m.unit, m.about));
    }
    o.push_str(&format!("\nexample scenario:\n{}", example_scenario(s)));
    o
}
