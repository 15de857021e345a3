//! The library's layers only point down (ARCHITECTURE.md, "Layers of the
//! library"): every `crate::` path in `crates/numasim/src`, in `use` lines
//! and inline, and every `super::`/`self::`/child-module path, resolved to
//! the file it names, must name a module of the same or a lower layer; and
//! no files import each other in a circle, except inside `kernel/mm` (whose
//! models call each other, as `mm/` does in Linux).
//!
//! A path to a module's `mod.rs` item that the `mod.rs` only re-exports
//! (`pub use child::Item`) is followed to the child that defines it, and
//! the re-export line itself is no import of the parent's, so a facade
//! does not make a circle of its own children.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level modules of the library, lowest first. Modules of one
/// layer may use each other (but not in a circle).
const LAYERS: &[(&str, u32)] = &[
    ("error", 0),
    ("input", 0),
    ("engine", 1),
    ("machine", 2),
    ("kernel", 3),
    ("drivers", 3),
    ("report", 4),
    ("workload", 5),
    ("scenario", 6),
    ("experiments", 7),
    ("bootlog", 7),
];

/// Files that may import each other in a circle (the issue allows it in
/// `kernel/mm`).
const CYCLES_ALLOWED_UNDER: &str = "kernel/mm/";

/// Circles allowed elsewhere, each with the files it may span and why. A
/// circle outside these fails; so does an entry no circle needs any more
/// (delete it then). None today.
const KNOWN_CIRCLES: &[(&[&str], &str)] = &[];

fn layer(top: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == top).map(|&(_, l)| l)
}

// ------------------------------------------------------------ lexing

/// The source with comments, strings and char literals blanked (newlines
/// kept, so line numbers stay right).
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let keep_newlines = |out: &mut String, s: &[char]| {
        for &ch in s {
            if ch == '\n' {
                out.push('\n');
            }
        }
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let (start, mut depth) = (i, 0);
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            keep_newlines(&mut out, &c[start..i.min(c.len())]);
        } else if ch == '"' || (ch == 'b' && next == Some('"')) {
            let start = i;
            i += if ch == 'b' { 2 } else { 1 };
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
            keep_newlines(&mut out, &c[start..i.min(c.len())]);
        } else if (ch == 'r' || (ch == 'b' && next == Some('r')))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
            && raw_string_hashes(&c[i + usize::from(ch == 'b')..]).is_some()
        {
            let start = i;
            i += usize::from(ch == 'b');
            let hashes = raw_string_hashes(&c[i..]).unwrap_or(0);
            i += 2 + hashes;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
            keep_newlines(&mut out, &c[start..i.min(c.len())]);
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{..}'), else a lifetime.
            if next == Some('\\') {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(ch);
                i += 1;
            }
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out
}

/// `r"`, `r#"`, ...: the number of hashes.
fn raw_string_hashes(c: &[char]) -> Option<usize> {
    if c.first() != Some(&'r') {
        return None;
    }
    let h = c[1..].iter().take_while(|&&x| x == '#').count();
    (c.get(1 + h) == Some(&'"')).then_some(h)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Path, // ::
    Punct(char),
}

fn lex(src: &str) -> Vec<(Tok, usize)> {
    let s = strip(src);
    let c: Vec<char> = s.chars().collect();
    let (mut i, mut line) = (0, 1);
    let mut toks = Vec::new();
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let w: String = c[start..i].iter().collect();
            // r#ident
            toks.push((Tok::Ident(w.trim_start_matches("r#").to_string()), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                i += 1;
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            toks.push((Tok::Path, line));
            i += 2;
        } else {
            toks.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    toks
}

// ------------------------------------------------------------ use trees

/// The paths of a `use` tree starting at `toks[*i]`, up to `;` (or the
/// group's closing brace), each with the name it binds.
fn use_tree(toks: &[(Tok, usize)], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    while *i < toks.len() {
        match &toks[*i].0 {
            Tok::Ident(w) if w == "as" => {
                // `as alias`: the path stays; the alias is not tracked.
                *i += 2;
            }
            Tok::Ident(w) => {
                path.push(w.clone());
                *i += 1;
            }
            Tok::Path => *i += 1,
            Tok::Punct('*') => {
                path.push("*".into());
                *i += 1;
            }
            Tok::Punct('{') => {
                *i += 1;
                loop {
                    use_tree(toks, i, &path, out);
                    match toks.get(*i).map(|t| &t.0) {
                        Some(Tok::Punct(',')) => *i += 1,
                        Some(Tok::Punct('}')) => {
                            *i += 1;
                            break;
                        }
                        _ => break,
                    }
                    if matches!(toks.get(*i).map(|t| &t.0), Some(Tok::Punct('}'))) {
                        *i += 1;
                        break;
                    }
                }
                return;
            }
            _ => break,
        }
    }
    if path.len() > prefix.len() {
        out.push(path);
    }
}

// ------------------------------------------------------------ the graph

/// One path in a file: where, what it says, whether inside `#[cfg(test)]`.
#[derive(Debug, Clone)]
struct Ref {
    line: usize,
    /// The module the path is written in (file module plus inline modules).
    here: Vec<String>,
    segs: Vec<String>,
    in_test: bool,
}

struct Crate {
    /// Module path -> file (relative to src).
    mods: BTreeMap<Vec<String>, String>,
    /// (module, name) -> absolute path it re-exports (`pub use`).
    reexports: BTreeMap<(Vec<String>, String), Vec<String>>,
    /// Per file: its references, and names it imports as modules.
    refs: BTreeMap<String, Vec<Ref>>,
}

fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] {
        parts.clear();
    }
    parts
}

/// `segs` as an absolute path (`crate` dropped), from module `here`; None
/// for a path into another crate or to a local item.
fn absolute(c: &Crate, here: &[String], segs: &[String]) -> Option<Vec<String>> {
    let first = segs.first()?;
    if first == "crate" {
        return Some(segs[1..].to_vec());
    }
    if first == "super" || first == "self" {
        let mut cur = here.to_vec();
        let mut k = 0;
        while k < segs.len() && (segs[k] == "super" || segs[k] == "self") {
            if segs[k] == "super" {
                cur.pop();
            }
            k += 1;
        }
        cur.extend_from_slice(&segs[k..]);
        return Some(cur);
    }
    // A child module of the file's module (`run::run`, `use spec::X`).
    let file_mod: Vec<String> = longest_module(c, here);
    let mut child = file_mod.clone();
    child.push(first.clone());
    if c.mods.contains_key(&child) {
        let mut p = file_mod;
        p.extend_from_slice(segs);
        return Some(p);
    }
    None
}

fn longest_module(c: &Crate, p: &[String]) -> Vec<String> {
    (0..=p.len())
        .rev()
        .map(|n| p[..n].to_vec())
        .find(|m| c.mods.contains_key(m))
        .unwrap_or_default()
}

/// The file an absolute path lands in: the deepest module it names,
/// following `pub use` re-exports of the item it names there.
fn target(c: &Crate, abs: &[String], depth: usize) -> Vec<String> {
    let mut cur: Vec<String> = Vec::new();
    for (k, x) in abs.iter().enumerate() {
        let mut next = cur.clone();
        next.push(x.clone());
        if c.mods.contains_key(&next) {
            cur = next;
            continue;
        }
        if let Some(to) = c.reexports.get(&(cur.clone(), x.clone())) {
            if depth < 16 {
                let mut p = to.clone();
                p.extend_from_slice(&abs[k + 1..]);
                return target(c, &p, depth + 1);
            }
        }
        break;
    }
    cur
}

fn parse(files: &[(String, String)]) -> Crate {
    let mut c = Crate {
        mods: files
            .iter()
            .map(|(rel, _)| (module_of(rel), rel.clone()))
            .collect(),
        reexports: BTreeMap::new(),
        refs: BTreeMap::new(),
    };
    let mut pub_uses: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (rel, src) in files {
        let file_mod = module_of(rel);
        let toks = lex(src);
        let mut refs = Vec::new();
        // Inline modules: (name, brace depth inside it, is a test module).
        let mut stack: Vec<(String, usize, bool)> = Vec::new();
        let mut depth = 0usize;
        let mut cfg_test = false;
        let mut i = 0;
        while i < toks.len() {
            let here: Vec<String> = file_mod
                .iter()
                .cloned()
                .chain(stack.iter().map(|s| s.0.clone()))
                .collect();
            let in_test = stack.iter().any(|s| s.2);
            let line = toks[i].1;
            match &toks[i].0 {
                Tok::Punct('#') => {
                    // #[cfg(test)]
                    let w: Vec<&Tok> = toks[i..].iter().take(7).map(|t| &t.0).collect();
                    if w.len() == 7
                        && w[2] == &Tok::Ident("cfg".into())
                        && w[4] == &Tok::Ident("test".into())
                    {
                        cfg_test = true;
                    }
                    i += 1;
                }
                Tok::Punct('{') => {
                    depth += 1;
                    i += 1;
                }
                Tok::Punct('}') => {
                    if stack.last().is_some_and(|s| s.1 == depth) {
                        stack.pop();
                    }
                    depth = depth.saturating_sub(1);
                    i += 1;
                }
                Tok::Punct(';') => {
                    cfg_test = false;
                    i += 1;
                }
                Tok::Ident(w) if w == "mod" => {
                    match (toks.get(i + 1), toks.get(i + 2)) {
                        (Some((Tok::Ident(name), _)), Some((Tok::Punct('{'), _))) => {
                            depth += 1;
                            stack.push((name.clone(), depth, cfg_test || in_test));
                            i += 3;
                        }
                        _ => i += 1,
                    }
                    cfg_test = false;
                }
                Tok::Ident(w) if w == "use" => {
                    let is_pub = i > 0
                        && (matches!(&toks[i - 1].0, Tok::Ident(p) if p == "pub")
                            || matches!(&toks[i - 1].0, Tok::Punct(')')));
                    i += 1;
                    let mut paths = Vec::new();
                    use_tree(&toks, &mut i, &[], &mut paths);
                    for segs in paths {
                        if is_pub && stack.is_empty() {
                            pub_uses.push((file_mod.clone(), segs.clone()));
                            // Re-exporting a child's item forwards a name:
                            // users resolve through it to the child, and the
                            // parent's own code does not use it.
                            if segs.first().is_some_and(|f| {
                                c.mods
                                    .contains_key(&[file_mod.clone(), vec![f.clone()]].concat())
                            }) || segs.first().is_some_and(|f| f == "self")
                            {
                                continue;
                            }
                        }
                        refs.push(Ref {
                            line,
                            here: here.clone(),
                            segs,
                            in_test: in_test || cfg_test,
                        });
                    }
                    cfg_test = false;
                }
                Tok::Ident(w)
                    if matches!(toks.get(i + 1), Some((Tok::Path, _)))
                        && !(i > 0 && toks[i - 1].0 == Tok::Path) =>
                {
                    let mut segs = vec![w.clone()];
                    let mut k = i + 1;
                    while let (Some((Tok::Path, _)), Some((Tok::Ident(x), _))) =
                        (toks.get(k), toks.get(k + 1))
                    {
                        segs.push(x.clone());
                        k += 2;
                    }
                    refs.push(Ref {
                        line,
                        here,
                        segs,
                        in_test,
                    });
                    i = k;
                }
                _ => i += 1,
            }
        }
        c.refs.insert(rel.clone(), refs);
    }
    for (m, segs) in pub_uses {
        if let Some(abs) = absolute(&c, &m, &segs) {
            if let Some(name) = segs.last().filter(|n| *n != "*" && *n != "self") {
                c.reexports.insert((m, name.clone()), abs);
            }
        }
    }
    c
}

/// One import between files: from, line, to, whether test-only.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    line: usize,
    to: String,
    path: String,
    in_test: bool,
}

fn edges(c: &Crate) -> Vec<Edge> {
    let mut out = Vec::new();
    for (file, refs) in &c.refs {
        // Names a `use` line brought in as modules (`use crate::kernel::mm;`).
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in refs {
            let segs = match aliases.get(&r.segs[0]) {
                Some(m) if absolute(c, &r.here, &r.segs).is_none() => {
                    let mut p = vec!["crate".to_string()];
                    p.extend(m.iter().cloned());
                    p.extend_from_slice(&r.segs[1..]);
                    p
                }
                _ => r.segs.clone(),
            };
            let Some(abs) = absolute(c, &r.here, &segs) else {
                continue;
            };
            let t = target(c, &abs, 0);
            if t.len() == abs.len() && c.mods.contains_key(&t) {
                if let Some(name) = r.segs.last() {
                    aliases.insert(name.clone(), t.clone());
                }
            }
            if t.is_empty() {
                continue; // the crate root (lib.rs): macros, declarations
            }
            let to = c.mods[&t].clone();
            if &to != file {
                out.push(Edge {
                    from: file.clone(),
                    line: r.line,
                    to,
                    path: segs.join("::"),
                    in_test: r.in_test,
                });
            }
        }
    }
    out
}

fn top(file: &str) -> &str {
    file.split('/')
        .next()
        .unwrap_or(file)
        .trim_end_matches(".rs")
}

/// Every import of a higher layer, as "file:line: path (layer a imports b)".
fn upward(c: &Crate) -> Vec<String> {
    let mut bad = Vec::new();
    // The crate root only declares the modules.
    for e in edges(c).into_iter().filter(|e| e.from != "lib.rs") {
        let (a, b) = (top(&e.from), top(&e.to));
        match (layer(a), layer(b)) {
            (Some(la), Some(lb)) if lb > la => bad.push(format!(
                "{}:{}: `{}` points up: {a} (layer {la}) imports {b} (layer {lb})",
                e.from, e.line, e.path
            )),
            (Some(_), Some(_)) => {}
            _ => bad.push(format!(
                "{}:{}: `{}`: {a} or {b} is not in LAYERS (tests/layers.rs, ARCHITECTURE.md)",
                e.from, e.line, e.path
            )),
        }
    }
    bad
}

/// Strongly connected components of more than one node.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan, iterative enough for a few hundred files.
    struct St<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        if let Some(ws) = s.g.get(v) {
            for w in ws {
                if !s.index.contains_key(w.as_str()) {
                    visit(s, w);
                    let lw = s.low[w.as_str()];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on.contains(w.as_str()) {
                    let iw = s.index[w.as_str()];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = graph
        .iter()
        .flat_map(|(a, bs)| std::iter::once(a.as_str()).chain(bs.iter().map(String::as_str)))
        .collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Circles among top-level modules, and among files not all under
/// `kernel/mm`, each with the imports that close it. A test module's
/// imports are left out: nothing imports a test module, so it closes no
/// circle.
fn bad_circles(c: &Crate) -> Vec<String> {
    let es: Vec<Edge> = edges(c).into_iter().filter(|e| !e.in_test).collect();
    let mut tops: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in &es {
        if top(&e.from) != top(&e.to) {
            tops.entry(top(&e.from).to_string())
                .or_default()
                .insert(top(&e.to).to_string());
        }
        files
            .entry(e.from.clone())
            .or_default()
            .insert(e.to.clone());
    }
    let mut bad = Vec::new();
    for comp in circles(&tops) {
        let why: Vec<String> = es
            .iter()
            .filter(|e| {
                top(&e.from) != top(&e.to)
                    && comp.iter().any(|m| m == top(&e.from))
                    && comp.iter().any(|m| m == top(&e.to))
            })
            .map(|e| format!("{}:{} `{}`", e.from, e.line, e.path))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        bad.push(format!(
            "top-level modules in a circle: {}; by {}",
            comp.join(", "),
            why.join(", ")
        ));
    }
    let mut known_used = vec![false; KNOWN_CIRCLES.len()];
    for comp in circles(&files) {
        if comp.iter().all(|f| f.starts_with(CYCLES_ALLOWED_UNDER)) {
            continue;
        }
        if let Some(k) = KNOWN_CIRCLES
            .iter()
            .position(|(fs, _)| comp.iter().all(|f| fs.contains(&f.as_str())))
        {
            known_used[k] = true;
            continue;
        }
        let why: Vec<String> = es
            .iter()
            .filter(|e| comp.contains(&e.from) && comp.contains(&e.to))
            .map(|e| format!("{}:{} -> {}", e.from, e.line, e.to))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        bad.push(format!(
            "files in a circle: {}; by {}",
            comp.join(", "),
            why.join(", ")
        ));
    }
    if c.mods.len() > 100 {
        // The real source (not a synthetic test): stale entries fail.
        for ((fs, _), used) in KNOWN_CIRCLES.iter().zip(known_used) {
            if !used {
                bad.push(format!(
                    "KNOWN_CIRCLES lists a circle that is gone (delete the entry): {}",
                    fs.join(", ")
                ));
            }
        }
    }
    bad
}

fn source_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("src is readable") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p
                    .strip_prefix(&root)
                    .expect("under src")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&p).expect("utf-8 source")));
            }
        }
    }
    out.sort();
    out
}

// ------------------------------------------------------------ the tests

#[test]
fn every_import_points_down() {
    let files = source_files();
    assert!(files.len() > 100, "found only {} files", files.len());
    let c = parse(&files);
    // Every top-level module is placed in a layer.
    for (rel, _) in &files {
        let t = top(rel);
        assert!(
            t == "lib" || layer(t).is_some(),
            "{rel}: the module `{t}` has no layer in tests/layers.rs (and ARCHITECTURE.md)"
        );
    }
    let bad = upward(&c);
    assert!(bad.is_empty(), "imports that point up:\n{}", bad.join("\n"));
}

#[test]
fn no_import_circle_outside_kernel_mm() {
    let c = parse(&source_files());
    let bad = bad_circles(&c);
    assert!(bad.is_empty(), "import circles:\n{}", bad.join("\n\n"));
}

fn synthetic(files: &[(&str, &str)]) -> Crate {
    let owned: Vec<(String, String)> = files
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    parse(&owned)
}

#[test]
fn an_upward_import_is_named_by_file_and_line() {
    let base = [
        (
            "lib.rs",
            "pub mod kernel; pub mod scenario; pub mod report;",
        ),
        ("scenario/mod.rs", "pub struct Scenario;"),
        ("report/mod.rs", "pub mod html;\npub use html::page;"),
        ("report/html.rs", "pub fn page() {}"),
        ("kernel/mod.rs", "pub mod sched;"),
    ];
    // A `use` line, a grouped one, an inline path, and `super::` reaching
    // the crate root: each points up from kernel.
    for (src, line, what) in [
        ("use crate::scenario::Scenario;", 1, "crate::scenario::Scenario"),
        (
            "use std::fmt;\nuse crate::{engine, report::{html, Record}};",
            2,
            "crate::report::html",
        ),
        (
            "// crate::report::page in a comment does not count\nfn f() {\n    let s = \"crate::scenario\";\n    crate::report::page();\n}",
            4,
            "crate::report::page",
        ),
        ("use super::super::scenario::Scenario;", 1, "super::super::scenario::Scenario"),
    ] {
        let mut files = base.to_vec();
        files.push(("kernel/sched.rs", src));
        let bad = upward(&synthetic(&files));
        assert!(!bad.is_empty(), "{src}: not found");
        assert!(
            bad[0].starts_with(&format!("kernel/sched.rs:{line}: `{what}`"))
                && bad.iter().all(|b| b.starts_with(&format!("kernel/sched.rs:{line}:"))),
            "{src}: {bad:?}"
        );
    }
    // Downward imports pass, whatever their form.
    let mut files = base.to_vec();
    files.push((
        "scenario/run.rs",
        "use super::Scenario;\nuse crate::report::page;\nfn f() { crate::kernel::sched::x(); }",
    ));
    files.push(("kernel/sched.rs", "pub fn x() {}"));
    assert_eq!(upward(&synthetic(&files)), Vec::<String>::new());
}

#[test]
fn a_circle_of_files_is_found_outside_kernel_mm_only() {
    // Two sibling files that use each other.
    let pair = |dir: &str| {
        vec![
            ("lib.rs".to_string(), "pub mod kernel;".to_string()),
            (
                "kernel/mod.rs".to_string(),
                "pub mod fs; pub mod mm;".to_string(),
            ),
            (format!("{dir}/mod.rs"), "pub mod a; pub mod b;".to_string()),
            (
                format!("{dir}/a.rs"),
                "use super::b::B; pub struct A;".to_string(),
            ),
            (
                format!("{dir}/b.rs"),
                "pub struct B;\nfn f() { super::a::A; }".to_string(),
            ),
        ]
    };
    let bad = bad_circles(&parse(&pair("kernel/fs")));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].contains("kernel/fs/a.rs:1 -> kernel/fs/b.rs"),
        "{bad:?}"
    );
    assert!(
        bad[0].contains("kernel/fs/b.rs:2 -> kernel/fs/a.rs"),
        "{bad:?}"
    );
    assert!(bad_circles(&parse(&pair("kernel/mm"))).is_empty());
    // A test module's `use super::*` closes no circle; a re-export through
    // mod.rs is followed to the file that defines the item.
    let files = synthetic(&[
        ("lib.rs", "pub mod engine;"),
        ("engine/mod.rs", "pub mod time; pub mod lock;\npub use time::Time;\n#[cfg(test)]\nmod tests { use super::lock::Lock; }"),
        ("engine/time.rs", "pub struct Time;"),
        ("engine/lock.rs", "use super::Time;\npub struct Lock;\n#[cfg(test)]\nmod tests { use super::super::*; }"),
    ]);
    assert!(bad_circles(&files).is_empty(), "{:?}", bad_circles(&files));
    assert!(edges(&files)
        .iter()
        .any(|e| e.from == "engine/lock.rs" && e.to == "engine/time.rs" && !e.in_test));
    // Top-level modules in a circle are named even when their layers allow
    // each way (kernel and drivers share one).
    let files = synthetic(&[
        ("lib.rs", "pub mod kernel; pub mod drivers;"),
        ("kernel/mod.rs", "use crate::drivers::D; pub struct K;"),
        ("drivers/mod.rs", "use crate::kernel::K; pub struct D;"),
    ]);
    let bad = bad_circles(&files);
    assert!(
        bad.iter()
            .any(|b| b.starts_with("top-level modules in a circle: drivers, kernel")),
        "{bad:?}"
    );
}
