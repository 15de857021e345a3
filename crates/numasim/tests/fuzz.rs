//! Structure-aware fuzzing of everything a user can hand numasim: the
//! embedded experiments, the machine presets (as machine files named by
//! path) and the importer fixtures (numactl, hwloc, sysfs), each mutated with
//! fixed seeds (numbers to 0, -1, huge, NaN; keys dropped, duplicated,
//! retyped; unsafe names; truncation). For every mutant:
//!
//! - the library answers with a result or an input error that names a file
//!   (the CLI's exit 0 or 2), never a panic and never an internal error;
//! - a bad value in a machine file is reported against that file;
//! - boot logs (`bootlog`) are mutated too: truncated and dropped lines,
//!   binary bytes, huge numbers, node lines repeated with huge ids or
//!   ranges, two boots in one log; each checks within a time bound;
//! - `--out` writes only direct children of its folder;
//! - the run's peak heap stays under [`PEAK_BOUND`] (a counting allocator);
//! - no input runs longer than [`time_bound`] (a watchdog aborts the test
//!   binary, naming the input, if one does);
//! - a second run writes byte-identical files, and the run's other outputs
//!   (the HTML report, the boot log `dmesg` prints) are made without error.
//!
//! Machine files with a large explicit distance matrix (read compactly,
//! machine/slit_text.rs) are mutated too. The command line's own harness
//! (every command, as a process under a time and a memory bound) is in
//! crates/numasim-cli/tests/hardening.rs; the Python API's in
//! crates/numasim-py/tests/test_hardening.py.
//!
//! Seeds, bounds and how to run longer (`.ci/fuzz`): docs/testing.md.

use numasim::error::{Error, InputError};
use numasim::machine::import::{from_hwloc_xml, from_numactl, from_sysfs};
use numasim::machine::presets::PRESETS;
use numasim::machine::Machine;
use numasim::report::out::run_files;
use numasim::scenario::run::run_with_artifacts;
use numasim::scenario::Scenario;
use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use toml::{Table, Value};

// ---------------------------------------------------------------- memory

/// The most heap one mutated scenario may hold at once (all its cases,
/// which run in parallel). The largest seen with the fixed seeds is a few
/// MiB (docs/testing.md).
const PEAK_BOUND: usize = 512 << 20;
/// Beyond this the allocator refuses (and the test aborts with Rust's
/// "memory allocation of N bytes failed"), so a missing bound fails the test
/// instead of swapping the CI host.
const HARD_CAP: usize = 4 << 30;

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    fn take(size: usize) -> bool {
        let now = CURRENT.fetch_add(size, Ordering::Relaxed) + size;
        if now > HARD_CAP {
            CURRENT.fetch_sub(size, Ordering::Relaxed);
            return false;
        }
        PEAK.fetch_max(now, Ordering::Relaxed);
        true
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !Counting::take(l.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc(l);
        if p.is_null() {
            CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !Counting::take(l.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc_zeroed(l);
        if p.is_null() {
            CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() && !Counting::take(new - l.size()) {
            return std::ptr::null_mut();
        }
        let q = System.realloc(p, l, new);
        if q.is_null() {
            if new > l.size() {
                CURRENT.fetch_sub(new - l.size(), Ordering::Relaxed);
            }
        } else if new < l.size() {
            CURRENT.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak heap growth (bytes) while `f` runs.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// The three tests share the allocator's counters: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

// ---------------------------------------------------------------- seeds

/// Fixed seeds; `NUMASIM_FUZZ_SEED` picks another stream and
/// `NUMASIM_FUZZ_SCALE` multiplies the mutant counts (docs/testing.md).
fn seed() -> u64 {
    std::env::var("NUMASIM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6e75_6d61_7369_6d31)
}

fn scale() -> usize {
    std::env::var("NUMASIM_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

fn verbose() -> bool {
    std::env::var_os("NUMASIM_FUZZ_VERBOSE").is_some()
}

/// Progress straight to stderr (not captured): if a mutant aborts the
/// process, the last line names it.
fn trace(what: &str) {
    if verbose() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "fuzz: {what}");
    }
}

/// The longest one input may run (load, run twice, write): 30 s by
/// default, `NUMASIM_FUZZ_TIME_BOUND` seconds otherwise. The slowest
/// mutants of the fixed seeds take about 2 s on a loaded 2-core host.
fn time_bound() -> f64 {
    std::env::var("NUMASIM_FUZZ_TIME_BOUND")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30.0)
}

/// The input being checked and since when; a watchdog thread aborts the
/// test binary (naming it on stderr) when one runs past [`time_bound`]: a
/// simulation cannot be stopped from outside, and a hung test would only
/// time out in CI without saying which input.
static CURRENT_INPUT: Mutex<Option<(String, std::time::Instant)>> = Mutex::new(None);

fn watch(label: &str) {
    static WATCHDOG: std::sync::Once = std::sync::Once::new();
    WATCHDOG.call_once(|| {
        std::thread::spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let cur = CURRENT_INPUT.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((label, t0)) = cur.as_ref() {
                if t0.elapsed().as_secs_f64() > time_bound() {
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "fuzz: `{label}` ran past the time bound of {} s; aborting",
                        time_bound()
                    );
                    std::process::abort();
                }
            }
        });
    });
    *CURRENT_INPUT.lock().unwrap_or_else(|e| e.into_inner()) =
        Some((label.to_string(), std::time::Instant::now()));
}

fn unwatch() -> f64 {
    CURRENT_INPUT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .map_or(0.0, |(_, t0)| t0.elapsed().as_secs_f64())
}

/// splitmix64: small, fixed and the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// An empty folder for one mutant (reused: file-system calls are slow on a
/// loaded CI host, so each test keeps one folder and empties it).
fn fresh(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
}

fn scratch(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-{test}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---------------------------------------------------------------- TOML mutation

#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Idx(usize),
}

/// Every value's path in a document (tables and lists included).
fn paths(v: &Value, here: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                here.push(Seg::Key(k.clone()));
                out.push(here.clone());
                paths(x, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                here.push(Seg::Idx(i));
                out.push(here.clone());
                paths(x, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn get<'a>(root: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    let mut v = root;
    for s in path {
        v = match (s, v) {
            (Seg::Key(k), Value::Table(t)) => t.get(k)?,
            (Seg::Idx(i), Value::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

fn at<'a>(root: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    let mut v = root;
    for s in path {
        v = match (s, v) {
            (Seg::Key(k), Value::Table(t)) => t.get_mut(k)?,
            (Seg::Idx(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Numbers a careless or hostile user types: zero, negative, past every
/// integer width, not a number.
fn bad_number(rng: &mut Rng) -> Value {
    match rng.below(15) {
        // Small legal-looking values let mutants run into the model.
        12 => Value::Integer(1),
        13 => Value::Integer(3),
        14 => Value::Float(0.5),
        0 => Value::Integer(0),
        1 => Value::Integer(-1),
        2 => Value::Integer(1 << 31),
        3 => Value::Integer((1 << 32) + 64),
        4 => Value::Integer(1 << 40),
        5 => Value::Integer(i64::MAX),
        6 => Value::Float(f64::NAN),
        7 => Value::Float(f64::INFINITY),
        8 => Value::Float(-0.5),
        9 => Value::Float(1e300),
        10 => Value::String("inf GB".into()),
        _ => Value::String("16 EiB".into()),
    }
}

/// Strings that must not become paths or odd file names.
fn bad_string(rng: &mut Rng, root: &Path) -> Value {
    Value::String(match rng.below(8) {
        0 => String::new(),
        1 => "../escaped".into(),
        2 => root.join("abs").display().to_string(),
        3 => "a/b".into(),
        4 => "..".into(),
        5 => "bell\u{7}".into(),
        6 => "x".repeat(300),
        _ => "ünïcode ✓".into(),
    })
}

fn retype(v: &Value) -> Value {
    match v {
        Value::Integer(i) => Value::String(i.to_string()),
        Value::Float(_) => Value::Boolean(true),
        Value::String(_) => Value::Integer(7),
        Value::Boolean(_) => Value::String("yes".into()),
        Value::Array(_) => Value::Integer(1),
        Value::Table(_) => Value::String("table".into()),
        Value::Datetime(_) => Value::Integer(0),
    }
}

/// One to three structure-aware edits, then perhaps a text-level one
/// (a duplicated line: a duplicate key or table; or truncation).
fn mutate(text: &str, rng: &mut Rng, root: &Path) -> (String, String) {
    let mut doc = Value::Table(text.parse::<Table>().expect("fixture parses"));
    let mut what = Vec::new();
    for _ in 0..*rng.pick(&[1, 1, 1, 2, 3]) {
        let mut all = Vec::new();
        paths(&doc, &mut Vec::new(), &mut all);
        if all.is_empty() {
            break;
        }
        let op = rng.below(6);
        // Numbers get numeric edits and strings string edits where the op wants one.
        let want = |v: &Value| match op {
            0 => v.is_integer() || v.is_float(),
            1 => v.is_str(),
            _ => true,
        };
        let fit: Vec<&Vec<Seg>> = all
            .iter()
            .filter(|p| get(&doc, p).is_some_and(want))
            .collect();
        let path = match fit.is_empty() {
            true => rng.pick(&all).clone(),
            false => (*rng.pick(&fit)).clone(),
        };
        let (parent, last) = path.split_at(path.len() - 1);
        let label = format!("{path:?}");
        match op {
            0 => {
                let v = bad_number(rng);
                what.push(format!("{label} = {v}"));
                *at(&mut doc, &path).unwrap() = v;
            }
            1 => {
                let v = bad_string(rng, root);
                what.push(format!("{label} = {v}"));
                *at(&mut doc, &path).unwrap() = v;
            }
            2 => {
                let v = at(&mut doc, &path).unwrap();
                *v = retype(v);
                what.push(format!("{label} retyped"));
            }
            3 | 4 => {
                let dup = op == 4;
                what.push(format!(
                    "{label} {}",
                    if dup { "duplicated" } else { "dropped" }
                ));
                match (at(&mut doc, parent).unwrap(), &last[0]) {
                    (Value::Table(t), Seg::Key(k)) if !dup => {
                        t.remove(k);
                    }
                    (Value::Table(t), Seg::Key(k)) => {
                        // The same value under a second, misspelt key.
                        let v = t[k].clone();
                        t.insert(format!("{k}s"), v);
                    }
                    (Value::Array(a), Seg::Idx(i)) if !dup => {
                        a.remove(*i);
                    }
                    (Value::Array(a), Seg::Idx(i)) => {
                        let v = a[*i].clone();
                        a.insert(*i, v);
                    }
                    _ => {}
                }
            }
            _ => {
                what.push(format!("{label} = {{}}"));
                *at(&mut doc, &path).unwrap() = Value::Table(Table::new());
            }
        }
    }
    // One mutant in eight renames the document to a hostile name: the stem
    // of every file --out writes.
    if rng.below(8) == 0 {
        if let Value::Table(t) = &mut doc {
            let v = bad_string(rng, root);
            what.push(format!("name = {v}"));
            t.insert("name".into(), v);
        }
    }
    let mut text = toml::to_string(&doc).expect("a TOML value serialises");
    match rng.below(12) {
        0 => {
            let lines: Vec<&str> = text.lines().collect();
            let i = rng.below(lines.len());
            what.push(format!("line {i} duplicated"));
            let mut l: Vec<&str> = lines.clone();
            l.insert(i, lines[i]);
            text = l.join("\n");
        }
        1 => {
            let mut cut = rng.below(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            what.push(format!("truncated at byte {cut}"));
            text.truncate(cut);
        }
        _ => {}
    }
    (text, what.join("; "))
}

// ---------------------------------------------------------------- running

/// The files a run wrote, by name, in name order.
type Files = Vec<(String, Vec<u8>)>;

/// Load, run and write one scenario into `out` as `run --out` does (the
/// library names and renders the files, the command line writes them).
fn run_to(text: &str, source: &str, dir: Option<PathBuf>, out: &Path) -> Result<Files, Error> {
    let sc = Scenario::from_str(text, source, dir)?;
    let (records, artifacts) = run_with_artifacts(&sc, &[], true, &|| {})?;
    let rendered = run_files(&sc.describe(), &records, &sc.varied_keys(), &artifacts)?;
    std::fs::create_dir_all(out).unwrap();
    for (name, content) in &rendered {
        // Each name must be one plain component, as the CLI's OutDir
        // requires: never a path beside or outside --out.
        let mut parts = Path::new(name).components();
        assert!(
            matches!(
                (parts.next(), parts.next()),
                (Some(std::path::Component::Normal(c)), None) if c == std::ffi::OsStr::new(name)
            ) && !name.contains(['/', '\\'])
                && !name.chars().any(char::is_control),
            "{name:?} is not a plain file name"
        );
        std::fs::write(out.join(name), content).unwrap();
    }
    let mut files: Files = std::fs::read_dir(out)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The checks every scenario mutant passes; returns what went wrong, if anything.
fn check_scenario(
    text: &str,
    source: &str,
    dir: Option<PathBuf>,
    case_dir: &Path,
    machine_file: Option<(&Path, &str)>,
) -> Result<bool, String> {
    let out = case_dir.join("out");
    let again = case_dir.join("again");
    let (first, peak) = match catch_unwind(AssertUnwindSafe(|| {
        peak_of(|| run_to(text, source, dir.clone(), &out))
    })) {
        Ok(r) => r,
        Err(_) => return Err("panicked".into()),
    };
    trace(&format!("  peak heap {} KiB", peak >> 10));
    if peak > PEAK_BOUND {
        return Err(format!("peak heap {} MiB", peak >> 20));
    }
    // Nothing but the two --out folders may appear beside them.
    for e in std::fs::read_dir(case_dir).unwrap() {
        let name = e.unwrap().file_name();
        if !["out", "again", "m.toml"].contains(&name.to_string_lossy().as_ref()) {
            return Err(format!("wrote {name:?} outside --out"));
        }
    }
    if let Some((path, mtext)) = machine_file {
        // A bad value in the machine file is reported against that file.
        if let Err(e) = Machine::from_toml_str(mtext, "m.toml") {
            if !e.message.starts_with("missing") {
                match &first {
                    Err(Error::Input(ie))
                        if ie.file.as_deref() == Some(&*path.display().to_string()) => {}
                    other => {
                        return Err(format!(
                            "machine file error `{e}` not reported against the file: {:?}",
                            other.as_ref().err().map(|e| e.to_string())
                        ))
                    }
                }
            }
        }
    }
    match first {
        Ok(files) => {
            let second = catch_unwind(AssertUnwindSafe(|| {
                run_to(text, source, dir.clone(), &again)
            }))
            .map_err(|_| "panicked on the second run".to_string())?;
            match second {
                Ok(f2) if f2 == files => {}
                Ok(_) => return Err("second run wrote different files".into()),
                Err(e) => return Err(format!("second run failed: {e}")),
            }
            // The other outputs of a scenario that runs: `run --report`'s
            // page and `dmesg`'s boot log of its first case.
            catch_unwind(AssertUnwindSafe(|| other_outputs(text, source, dir)))
                .map_err(|_| "panicked writing the report or the boot log".to_string())?
                .map(|_| true)
        }
        Err(Error::Input(e)) => clean(&e).map(|_| false),
        Err(e @ Error::Internal(_)) => Err(format!("internal error (exit 1): {e}")),
    }
}

/// `run --report`'s page (without run times) and `dmesg`'s boot log for
/// the first case; an input error is fine (a case too small to boot), an
/// internal one is not.
fn other_outputs(text: &str, source: &str, dir: Option<PathBuf>) -> Result<(), String> {
    let sc = Scenario::from_str(text, source, dir).map_err(|e| e.to_string())?;
    let (records, artifacts) =
        run_with_artifacts(&sc, &[], true, &|| {}).map_err(|e| e.to_string())?;
    let run = sc.describe();
    let page = numasim::report::html::page(
        "fuzz",
        &[numasim::report::html::Entry {
            run: &run,
            records: &records,
            artifacts: &artifacts,
            run_ms: None,
            doc_href: None,
        }],
    );
    if !page.starts_with("<!DOCTYPE html>") {
        return Err("the report page is not a page".into());
    }
    let rc = sc.resolve(0, &[]).map_err(|e| e.to_string())?;
    match numasim::kernel::boot::boot(&rc.machine, &rc.kernel, rc.seed) {
        Ok(booted) => {
            numasim::bootlog::render(&rc.machine, &rc.kernel, &booted);
            Ok(())
        }
        Err(Error::Input(_)) => Ok(()),
        Err(e) => Err(format!("dmesg: internal error: {e}")),
    }
}

/// A clean input error names a file and says something.
fn clean(e: &InputError) -> Result<(), String> {
    if e.file.is_none() || e.message.trim().is_empty() {
        return Err(format!("input error without a file or a message: {e:?}"));
    }
    Ok(())
}

/// An input that finished, but past the time bound, fails too.
fn within_time(ran: bool, secs: f64) -> Result<bool, String> {
    if secs > time_bound() {
        return Err(format!("took {secs:.1} s (bound {} s)", time_bound()));
    }
    Ok(ran)
}

fn report(kind: &str, failures: Vec<String>, total: usize, ok: usize) {
    trace(&format!(
        "{kind}: {total} mutants, {ok} ran, {} failed",
        failures.len()
    ));
    assert!(
        failures.is_empty(),
        "{} of {total} {kind} mutants failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The mutants must not all be refused: some must run to exercise the model.
    assert!(ok * 20 >= total, "only {ok} of {total} {kind} mutants ran");
}

// ---------------------------------------------------------------- tests

#[test]
fn mutated_experiments() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = scratch("experiments");
    let mut rng = Rng(seed());
    let (mut failures, mut total, mut ok) = (Vec::new(), 0, 0);
    let case_dir = root.join("case");
    for (id, text) in numasim::experiments::EXPERIMENTS {
        // The slowest experiments (about 0.2 to 1 s a run) get fewer mutants.
        let count = match *id {
            "altix-bigio" | "altix-devzero-faults" | "altix-toss" => 2,
            "modern-hugepage-random" | "altix-touch-96g" | "oom-never-triggers" => 4,
            _ => 8,
        };
        for n in 0..count * scale() {
            let (mutant, what) = mutate(text, &mut rng, &root);
            fresh(&case_dir);
            trace(&format!("{id} #{n}: {what}"));
            let source = format!("experiments/{id}.toml");
            watch(&format!("{id} #{n} ({what})"));
            let r = check_scenario(&mutant, &source, None, &case_dir, None);
            let secs = unwatch();
            trace(&format!("  {secs:.3} s"));
            let r = r.and_then(|ran| within_time(ran, secs));
            match r {
                Ok(ran) => ok += usize::from(ran),
                Err(why) => failures.push(format!("{id} #{n} ({what}): {why}")),
            }
            total += 1;
        }
    }
    // Only the case folder is in the root: nothing escaped through `name`
    // (absolute names point here).
    for e in std::fs::read_dir(&root).unwrap() {
        let e = e.unwrap();
        assert_eq!(e.path(), case_dir, "written outside --out");
    }
    report("experiment", failures, total, ok);
}

/// A small scenario that boots each mutated machine, reads its memory,
/// touches a little of it and reads at random through the sampled TLB:
/// enough to use the placement, TLB and hierarchy tables.
const MACHINE_SCENARIO: &str = "name = \"machine-fuzz\"\n[machine]\npreset = \"m.toml\"\n\
    [[run]]\nworkload = \"boot\"\n[[run]]\nworkload = \"meminfo\"\n\
    [[run]]\nworkload = \"touch\"\nthreads = 1\nbytes = \"16 MiB\"\n\
    [[run]]\nworkload = \"random-read\"\nsize = [\"1 MiB\"]\nsamples = 1000\n";

#[test]
fn mutated_machine_files() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = scratch("machines");
    let mut rng = Rng(seed() ^ 0x6d61_6368);
    let (mut failures, mut total, mut ok) = (Vec::new(), 0, 0);
    let case_dir = root.join("case");
    for (name, text) in PRESETS {
        for n in 0..12 * scale() {
            let (mutant, what) = mutate(text, &mut rng, &root);
            fresh(&case_dir);
            let mpath = case_dir.join("m.toml");
            std::fs::write(&mpath, &mutant).unwrap();
            trace(&format!("{name} #{n}: {what}"));
            let source = case_dir.join("scenario.toml").display().to_string();
            watch(&format!("{name} #{n} ({what})"));
            let r = check_scenario(
                MACHINE_SCENARIO,
                &source,
                Some(case_dir.clone()),
                &case_dir,
                Some((&mpath, &mutant)),
            );
            let r = r.and_then(|ran| within_time(ran, unwatch()));
            match r {
                Ok(ran) => ok += usize::from(ran),
                Err(why) => failures.push(format!("{name} #{n} ({what}): {why}")),
            }
            total += 1;
        }
    }
    report("machine", failures, total, ok);
}

/// Text-level edits for the importers' formats: a number replaced, a line
/// dropped or duplicated, the text truncated.
fn mutate_text(text: &str, rng: &mut Rng) -> (String, String) {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let mut what = Vec::new();
    for _ in 0..1 + rng.below(2) {
        let i = rng.below(lines.len());
        match rng.below(4) {
            0 => {
                // Replace the k-th run of digits on the line.
                let l = &lines[i];
                let runs: Vec<(usize, usize)> = {
                    let b = l.as_bytes();
                    let mut v = Vec::new();
                    let mut j = 0;
                    while j < b.len() {
                        if b[j].is_ascii_digit() {
                            let s = j;
                            while j < b.len() && b[j].is_ascii_digit() {
                                j += 1;
                            }
                            v.push((s, j));
                        } else {
                            j += 1;
                        }
                    }
                    v
                };
                if runs.is_empty() {
                    continue;
                }
                let (s, e) = *rng.pick(&runs);
                let new = *rng.pick(&[
                    "0",
                    "-1",
                    "4294967360",
                    "18446744073709551616",
                    "99999999999999999999999",
                    "NaN",
                    "1e400",
                ]);
                what.push(format!("line {i}: {} -> {new}", &l[s..e]));
                lines[i] = format!("{}{new}{}", &l[..s], &l[e..]);
            }
            1 => {
                what.push(format!("line {i} dropped"));
                lines.remove(i);
                if lines.is_empty() {
                    lines.push(String::new());
                }
            }
            2 => {
                what.push(format!("line {i} duplicated"));
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            _ => {
                let l = &mut lines[i];
                let mut cut = rng.below(l.len() + 1);
                while !l.is_char_boundary(cut) {
                    cut -= 1;
                }
                what.push(format!("line {i} cut at {cut}"));
                l.truncate(cut);
                lines.truncate(i + 1);
            }
        }
    }
    (lines.join("\n") + "\n", what.join("; "))
}

/// An imported machine is a valid machine: it writes as TOML that reads
/// back to the same TOML.
fn check_import(r: std::thread::Result<Result<Machine, InputError>>) -> Result<bool, String> {
    match r {
        Err(_) => Err("panicked".into()),
        Ok(Err(e)) => clean(&e).map(|_| false),
        Ok(Ok(m)) => {
            let t = m.to_toml_string();
            let back = Machine::from_toml_str(&t, "imported.toml")
                .map_err(|e| format!("imported machine does not read back: {e}\n{t}"))?;
            match back.to_toml_string() == t {
                true => Ok(true),
                false => Err("imported machine changes on a round trip".into()),
            }
        }
    }
}

fn copy_tree(from: &Path, to: &Path, files: &mut Vec<PathBuf>) {
    std::fs::create_dir_all(to).unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest, files);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
            files.push(dest);
        }
    }
}

#[test]
fn mutated_importer_inputs() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = scratch("import");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let mut rng = Rng(seed() ^ 0x696d_706f);
    let (mut failures, mut total, mut ok) = (Vec::new(), 0, 0);
    let mut tally = |r: Result<bool, String>, label: String| {
        match r {
            Ok(ran) => ok += usize::from(ran),
            Err(why) => failures.push(format!("{label}: {why}")),
        }
        total += 1;
    };
    for m in ["one-node", "two-node", "eight-node", "memoryless"] {
        for (kind, ext) in [("numactl", "txt"), ("hwloc", "xml")] {
            let p = fixtures.join(kind).join(format!("{m}.{ext}"));
            let text = std::fs::read_to_string(&p).unwrap();
            for n in 0..24 * scale() {
                let (mutant, what) = mutate_text(&text, &mut rng);
                trace(&format!("{kind}/{m} #{n}: {what}"));
                let src = p.display().to_string();
                watch(&format!("{kind}/{m} #{n} ({what})"));
                let r = catch_unwind(AssertUnwindSafe(|| match kind {
                    "numactl" => from_numactl(&mutant, &src),
                    _ => from_hwloc_xml(&mutant, &src),
                }));
                let r = check_import(r).and_then(|ran| within_time(ran, unwatch()));
                tally(r, format!("{kind}/{m} #{n} ({what})"));
            }
        }
        // One copy of the tree; each mutant edits or removes one file and
        // puts it back afterwards.
        let dir = root.join(m);
        let mut files = Vec::new();
        copy_tree(&fixtures.join("sysfs").join(m), &dir, &mut files);
        for n in 0..16 * scale() {
            let f = rng.pick(&files).clone();
            let orig = std::fs::read_to_string(&f).unwrap();
            let what = match rng.below(4) {
                0 => {
                    std::fs::remove_file(&f).unwrap();
                    format!("{} removed", f.display())
                }
                _ => {
                    let (t, w) = mutate_text(&orig, &mut rng);
                    std::fs::write(&f, t).unwrap();
                    format!("{}: {w}", f.display())
                }
            };
            trace(&format!("sysfs/{m} #{n}: {what}"));
            watch(&format!("sysfs/{m} #{n} ({what})"));
            let r = catch_unwind(AssertUnwindSafe(|| from_sysfs(&dir)));
            let r = check_import(r).and_then(|ran| within_time(ran, unwatch()));
            tally(r, format!("sysfs/{m} #{n} ({what})"));
            std::fs::write(&f, orig).unwrap();
        }
    }
    report("importer", failures, total, ok);
}

/// Boot-log mutations on top of [`mutate_text`]: binary bytes in a line,
/// a node line repeated with a huge id or range, a second boot appended.
fn mutate_boot_log(text: &str, rng: &mut Rng) -> (String, String) {
    let (mut t, mut what) = mutate_text(text, rng);
    match rng.below(4) {
        0 => {
            // Binary junk, read lossily as bootlog reads a serial console.
            let junk: Vec<u8> = (0..1 + rng.below(64)).map(|_| rng.next() as u8).collect();
            let at = rng.below(t.len() + 1);
            let mut b = t.into_bytes();
            b.splice(at..at, junk);
            t = String::from_utf8_lossy(&b).into_owned();
            what.push_str("; binary bytes");
        }
        1 => {
            let line = rng
                .pick(&[
                    "On node 4294967295 totalpages: 1",
                    "On node 1023 totalpages: 18446744073709551615",
                    "  node 1023: [mem 0x0000000000000000-0xfffffffffffffffe]",
                    "  node   0: [mem 0x0000000000000000-0xffffffffbfffffff]",
                    "Built 4294967295 zonelists, mobility grouping on.  Total pages: 18446744073709551615",
                    "smpboot: Allowing 18446744073709551615 CPUs, 0 hotplug CPUs",
                    "Memory: 1K/18446744073709551615K available (0K kernel code)",
                    "Dentry cache hash table entries: 9223372036854775808 (order: 64, 18446744073709551615 bytes, linear)",
                ])
                .to_string();
            t.push_str(&line);
            t.push('\n');
            t.push_str(&line);
            t.push('\n');
            what.push_str(&format!("; `{line}` twice"));
        }
        2 => {
            t = format!("{t}{t}");
            what.push_str("; a second boot");
        }
        _ => {}
    }
    (t, what)
}

/// Every mutant of every boot-log fixture: a check or an input error naming
/// the log, never a panic, within the time and memory bounds.
#[test]
fn mutated_boot_logs() {
    use numasim::bootlog::{check, parse_log_named, render_check, render_check_jsonl, Given};
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    /// A generous bound per input: the fixtures check in microseconds.
    const TIME_BOUND: std::time::Duration = std::time::Duration::from_secs(2);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bootlog");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt" || e == "journal"))
        .collect();
    names.sort();
    let mut rng = Rng(seed() ^ 0x626f_6f74);
    let (mut failures, mut total, mut ok) = (Vec::new(), 0, 0);
    for p in &names {
        let text = std::fs::read_to_string(p).unwrap();
        for n in 0..24 * scale() {
            let (mutant, what) = mutate_boot_log(&text, &mut rng);
            let label = format!("{} #{n} ({what})", p.display());
            trace(&label);
            let start = std::time::Instant::now();
            let (r, peak) = peak_of(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    let f = parse_log_named("fuzz.txt", &mutant);
                    check(&f, &Given::default()).map(|c| {
                        // Both renderings must hold up too.
                        render_check(&c).len() + render_check_jsonl(&c).len()
                    })
                }))
            });
            let took = start.elapsed();
            total += 1;
            let verdict = match r {
                Err(_) => Err("panicked".to_string()),
                Ok(Ok(_)) => Ok(true),
                Ok(Err(Error::Input(e))) if e.file.as_deref() == Some("fuzz.txt") => Ok(false),
                Ok(Err(e)) => Err(format!("error not naming the log: {e}")),
            };
            match verdict {
                _ if took > TIME_BOUND => failures.push(format!("{label}: took {took:?}")),
                _ if peak > PEAK_BOUND => failures.push(format!("{label}: peak heap {peak} bytes")),
                Ok(ran) => ok += usize::from(ran),
                Err(why) => failures.push(format!("{label}: {why}")),
            }
        }
    }
    report("boot-log", failures, total, ok);
}

/// A machine file with an explicit matrix large enough to be read
/// compactly (machine/slit_text.rs: 200 nodes, about 160 kB of matrix),
/// mutated: an entry and its mirror set to another distance (loads) or to
/// 256, -1, 20.5, 0x14, NaN, 1e400, 10^20, `"x"` or nothing; a row dropped
/// or duplicated; or the line-level edits of the importers' text. Each
/// loads and prints back to the same TOML, or is an input error naming the
/// file, within the bounds.
#[test]
fn mutated_large_matrices() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng(seed() ^ 0x736c_6974);
    let n: usize = 200;
    let base: Vec<Vec<String>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| match i.abs_diff(j) {
                    0 => "10".to_string(),
                    d => (10 + (d % 4) * 10).to_string(),
                })
                .collect()
        })
        .collect();
    let write = |rows: &[Vec<String>]| {
        let mut t = format!(
            "name = \"dense\"\nnodes = {n}\ncpus_per_node = 2\nmem_per_node = \"1 GiB\"\n\
             [distance]\nlocal = 10\nmatrix = [\n"
        );
        for r in rows {
            t += &format!("    [{}],\n", r.join(", "));
        }
        t + "]\n[dram]\nlatency_ns = 90.0\n"
    };
    let (mut failures, mut total, mut ok) = (Vec::new(), 0, 0);
    for k in 0..24 * scale() {
        let mut rows = base.clone();
        let (i, j) = (rng.below(n), rng.below(n));
        let (mutant, what) = match rng.below(4) {
            0 if i != j => {
                let v = (11 + rng.below(245)).to_string();
                rows[i][j] = v.clone();
                rows[j][i] = v.clone();
                (write(&rows), format!("[{i}][{j}] and [{j}][{i}] = {v}"))
            }
            0 | 1 => {
                let v = *rng.pick(&[
                    "256",
                    "-1",
                    "20.5",
                    "0x14",
                    "nan",
                    "1e400",
                    "100000000000000000000",
                    "\"x\"",
                    "",
                ]);
                rows[i][j] = v.to_string();
                rows[j][i] = v.to_string();
                (write(&rows), format!("[{i}][{j}] and [{j}][{i}] = {v}"))
            }
            2 => {
                let dup = rng.below(2) == 0;
                match dup {
                    true => rows.insert(i, rows[i].clone()),
                    false => drop(rows.remove(i)),
                }
                let how = if dup { "duplicated" } else { "dropped" };
                (write(&rows), format!("row {i} {how}"))
            }
            _ => mutate_text(&write(&rows), &mut rng),
        };
        trace(&format!("matrix #{k}: {what}"));
        watch(&format!("matrix #{k} ({what})"));
        let (r, peak) = peak_of(|| {
            catch_unwind(AssertUnwindSafe(|| {
                Machine::from_toml_str(&mutant, "dense.toml")
            }))
        });
        let r = check_import(r)
            .and_then(|ran| within_time(ran, unwatch()))
            .and_then(|ran| match peak > PEAK_BOUND {
                true => Err(format!("peak heap {} MiB", peak >> 20)),
                false => Ok(ran),
            });
        match r {
            Ok(ran) => ok += usize::from(ran),
            Err(why) => failures.push(format!("matrix #{k} ({what}): {why}")),
        }
        total += 1;
    }
    report("large-matrix", failures, total, ok);
}
