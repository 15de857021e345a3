//! The Rust half of the `numasim` Python package (`numasim._numasim`): thin
//! calls into the library, the same ones the `numasim` command makes
//! (`Scenario::from_str`, `run::run`, `experiments::load`, `presets`).
//! Records cross as JSON lines, the tidy-record contract of ARCHITECTURE.md, so
//! the Python side sees exactly what `--format jsonl` prints. The pandas
//! layer lives in `python/numasim/__init__.py`.

use numasim::error::{Error, InputError as LibInputError};
use numasim::experiments::{self, EXPERIMENTS};
use numasim::input;
use numasim::machine::{presets, Machine};
use numasim::scenario::{run, Scenario};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

// `numasim.InputError`: module "numasim" so that a pickled error (from a
// Dask worker) is looked up where users import it.
create_exception!(
    numasim,
    InputError,
    PyValueError,
    "Bad input: a scenario, override, machine or experiment id numasim refuses.\n\n\
     Attributes: `file` (the file, `set`, or None), `key` (the dotted key, or None),\n\
     `message` (what is wrong and what is allowed), `allowed` (what would do,\n\
     where the reader that refused the value knows it: the valid keys, a\n\
     choice's names, a range; else None)."
);

fn input_err(py: Python<'_>, e: &LibInputError) -> PyErr {
    let err = InputError::new_err(e.to_string());
    let v = err.value(py);
    // Setting attributes on a fresh exception cannot fail in practice; if it
    // did, the message still carries everything.
    let _ = v.setattr("file", e.file.clone());
    let _ = v.setattr("key", e.key.clone());
    let _ = v.setattr("message", e.message.clone());
    let _ = v.setattr("allowed", e.allowed.clone());
    err
}

fn to_py(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Input(i) => input_err(py, &i),
        Error::Internal(m) => PyRuntimeError::new_err(format!("numasim internal error: {m}")),
    }
}

/// JSON overrides `{"kernel.hashdist": 0, ...}` as the library's `--set` list.
fn parse_sets(json: &str) -> Result<Vec<(String, toml::Value)>, LibInputError> {
    let t: toml::Table = serde_json::from_str(json).map_err(|e| {
        LibInputError::new(format!(
            "overrides must map dotted keys to numbers, strings, booleans or lists (no None): {e}"
        ))
        .in_file("set")
    })?;
    Ok(t.into_iter().collect())
}

fn scenario(text: &str, source: &str, dir: Option<String>) -> Result<Scenario, LibInputError> {
    Scenario::from_str(text, source, dir.map(PathBuf::from))
}

/// The JSON list of `set=` overrides one call carries, one entry a case.
fn override_list(py: Python<'_>, sets_json: &str) -> PyResult<Vec<serde_json::Value>> {
    serde_json::from_str(sets_json).map_err(|e| {
        input_err(
            py,
            &LibInputError::new(format!("overrides: {e}")).in_file("set"),
        )
    })
}

/// Parse a scenario and run it once per override set (`sets_json`: a JSON
/// array of objects), in parallel; one JSON-lines string per set, in order.
/// Parsing once per batch keeps a sweep's cost the simulation's.
#[pyfunction]
#[pyo3(signature = (text, source, dir, sets_json))]
fn run_batch(
    py: Python<'_>,
    text: &str,
    source: &str,
    dir: Option<String>,
    sets_json: &str,
) -> PyResult<Vec<String>> {
    let list = override_list(py, sets_json)?;
    let sets = list
        .iter()
        .map(|v| parse_sets(&v.to_string()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| input_err(py, &e))?;
    // Each set's steps are read on the machine that set makes (a
    // `machine.nodes` override can admit `threads` the file's own machine
    // refuses), as the command line's `--set` does (Scenario::from_str_with_sets).
    if sets.is_empty() {
        scenario(text, source, dir.clone()).map_err(|e| input_err(py, &e))?;
    }
    let dir = dir.map(PathBuf::from);
    // The simulation runs without the interpreter lock: other Python
    // threads (a Dask worker's) go on meanwhile. The records of one call
    // are bounded (MAX_BATCH_BYTES): an allocation that fails in Rust
    // aborts the process, the interpreter (a Jupyter kernel) with it, so
    // a batch whose records would not fit is refused instead.
    let total = std::sync::atomic::AtomicUsize::new(0);
    let out: Result<Vec<String>, Error> = py.detach(|| {
        sets.par_iter()
            .map(|s| {
                let sc = Scenario::from_str_with_sets(text, source, dir.clone(), s)?;
                let recs = run::run(&sc, s)?;
                let mut text = String::new();
                for r in &recs {
                    let line = r.to_json_line();
                    let so_far =
                        total.fetch_add(line.len() + 1, std::sync::atomic::Ordering::Relaxed);
                    if so_far + line.len() + 1 > MAX_BATCH_BYTES {
                        return Err(too_many_records(sets.len()));
                    }
                    text.try_reserve(line.len() + 1)
                        .map_err(|_| too_many_records(sets.len()))?;
                    text.push_str(&line);
                    text.push('\n');
                }
                Ok(text)
            })
            .collect()
    });
    out.map_err(|e| to_py(py, e))
}

/// The most bytes of records (JSON lines) one `run_batch` call returns:
/// 1 GiB, several GB once pandas holds them.
const MAX_BATCH_BYTES: usize = 1 << 30;

fn too_many_records(runs: usize) -> Error {
    Error::Input(
        LibInputError::new(format!(
            "the records of these {runs} run(s) pass {} MiB (numasim's bound on one call's \
             records, docs/python.md: limits); run fewer combinations at a time or keep fewer \
             metrics (a step's `metrics` list)",
            MAX_BATCH_BYTES >> 20
        ))
        .in_file("grid"),
    )
}

/// Check a scenario with each override set (`sets_json`: a JSON array of
/// objects) without running it: every key and value is resolved as a run
/// would resolve it, so a misspelt grid key is refused before a sweep
/// expands its grid.
#[pyfunction]
#[pyo3(signature = (text, source, dir, sets_json))]
fn check_sets(
    py: Python<'_>,
    text: &str,
    source: &str,
    dir: Option<String>,
    sets_json: &str,
) -> PyResult<()> {
    let list = override_list(py, sets_json)?;
    if list.is_empty() {
        scenario(text, source, dir.clone()).map_err(|e| input_err(py, &e))?;
    }
    for v in &list {
        let sets = parse_sets(&v.to_string()).map_err(|e| input_err(py, &e))?;
        // Every case resolved on the machine these overrides make.
        Scenario::from_str_with_sets(text, source, dir.clone().map(PathBuf::from), &sets)
            .map_err(|e| input_err(py, &e))?;
    }
    Ok(())
}

/// Check a scenario without running it; returns its name.
#[pyfunction]
#[pyo3(signature = (text, source, dir=None))]
fn check(py: Python<'_>, text: &str, source: &str, dir: Option<String>) -> PyResult<String> {
    scenario(text, source, dir)
        .map(|s| s.name)
        .map_err(|e| input_err(py, &e))
}

/// A scenario given as a JSON object, written as TOML text (key order kept).
#[pyfunction]
fn toml_from_json(py: Python<'_>, json: &str) -> PyResult<String> {
    let t: toml::Table = serde_json::from_str(json).map_err(|e| {
        input_err(
            py,
            &LibInputError::new(format!(
                "a scenario dict holds tables, numbers, strings, booleans and lists (no None): {e}"
            ))
            .in_file("<dict>"),
        )
    })?;
    toml::to_string(&t).map_err(|e| {
        input_err(
            py,
            &LibInputError::new(format!("cannot write as TOML: {e}")).in_file("<dict>"),
        )
    })
}

/// (TOML text, source name) of a published experiment.
#[pyfunction]
fn experiment(py: Python<'_>, id: &str) -> PyResult<(String, String)> {
    // `load` gives the error (with its "did you mean") for an unknown id.
    experiments::load(id).map_err(|e| input_err(py, &e))?;
    let text = EXPERIMENTS
        .iter()
        .find(|(n, _)| *n == id)
        .map(|(_, t)| t.to_string())
        .unwrap_or_default();
    Ok((text, format!("experiments/{id}.toml")))
}

/// (id, description) of every published experiment.
#[pyfunction]
fn experiment_list(py: Python<'_>) -> PyResult<Vec<(String, String)>> {
    EXPERIMENTS
        .iter()
        .map(|(id, _)| {
            experiments::load(id)
                .map(|s| (id.to_string(), s.description))
                .map_err(|e| input_err(py, &e))
        })
        .collect()
}

/// (name, nodes, cpus, memory bytes, description) of a preset.
type PresetRow = (String, usize, u64, u64, String);

/// Every preset, in `numasim machines` order.
#[pyfunction]
fn machine_list(py: Python<'_>) -> PyResult<Vec<PresetRow>> {
    presets::PRESETS
        .iter()
        .map(|(n, _)| {
            presets::preset(n)
                .map(|m| {
                    (
                        n.to_string(),
                        m.node_count(),
                        m.cpu_count(),
                        m.mem_bytes(),
                        m.description,
                    )
                })
                .map_err(|e| input_err(py, &e))
        })
        .collect()
}

/// A preset or a machine file, every default filled in, as JSON.
#[pyfunction]
fn machine_json(py: Python<'_>, name: &str) -> PyResult<String> {
    // As `numasim machines NAME`: a path is a machine file, else a preset.
    let m = if name.contains('/') || name.ends_with(".toml") || Path::new(name).is_file() {
        input::read_bounded_text(Path::new(name), input::MAX_INPUT_BYTES, "a machine file")
            .and_then(|t| Machine::from_toml_str(&t, name))
    } else {
        presets::preset(name)
    }
    .map_err(|e| input_err(py, &e))?;
    let t: toml::Table = numasim::machine::slit_text::parse_toml(&m.to_toml_string())
        .map_err(|e| PyRuntimeError::new_err(format!("machine TOML does not read back: {e}")))?;
    // toml_to_json: a large matrix arrives compact (machine/slit_text.rs)
    // and leaves as rows of numbers.
    let json = numasim::scenario::toml_to_json(&toml::Value::Table(t));
    serde_json::to_string(&json)
        .map_err(|e| PyRuntimeError::new_err(format!("machine as JSON: {e}")))
}

#[pymodule]
fn _numasim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add_function(wrap_pyfunction!(run_batch, m)?)?;
    m.add_function(wrap_pyfunction!(check_sets, m)?)?;
    // The bounds the Python layer applies itself (docs/python.md: limits).
    m.add("MAX_INPUT_BYTES", input::MAX_INPUT_BYTES)?;
    m.add("MAX_BATCH_BYTES", MAX_BATCH_BYTES)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(toml_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(experiment, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_list, m)?)?;
    m.add_function(wrap_pyfunction!(machine_list, m)?)?;
    m.add_function(wrap_pyfunction!(machine_json, m)?)?;
    Ok(())
}
