"""numasim from Python: simulate large NUMA machines and the Linux mechanisms
that make them scale, and get the results as pandas DataFrames.

    >>> import numasim
    >>> df = numasim.replay("hashdist-boot")
    >>> df = numasim.run("examples/epyc-touch.toml", set={"kernel.hashdist": 1})
    >>> df = numasim.sweep(scenario, grid={"machine.nodes": [4, 8, 16],
    ...                                     "kernel.hashdist": [0, 1]})

Every row is one tidy record (the contract of ``numasim run --format jsonl``):
``experiment``, one column per case key, ``metric``, ``unit``, ``value``,
``paper``, ``role``, ``comparable`` (False where an override changed the
machine or kernel a published value was measured on) and ``paper_bound``
(``"below"``/``"above"`` where the published value is an upper/lower bound,
``"at"`` where it is the value, None where nothing was published). Bad input raises
:class:`numasim.InputError`, naming the file, the key and what is allowed.

The simulation is the Rust library's (the extension module
``numasim._numasim``); this layer only converts.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Sized, Union

import numpy as np
import pandas as pd

from . import _cluster, _numasim
from ._cluster import ClusterError, QueueTimeout
from ._numasim import InputError

__all__ = [
    "InputError",
    "ClusterError",
    "QueueTimeout",
    "run",
    "replay",
    "sweep",
    "job_size",
    "experiments",
    "machines",
    "machine",
]

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]
"""A scenario: a path to a TOML file, TOML text, or a dict of the same shape."""

_RECORD_TAIL = ["metric", "unit", "value", "paper", "role", "comparable", "paper_bound", "paper_high"]


def _source(scenario: Scenario) -> tuple[str, str, Optional[str]]:
    """(TOML text, source name for errors, directory for relative machine paths)."""
    if isinstance(scenario, Mapping):
        return _numasim.toml_from_json(_json(scenario, "<dict>")), "<dict>", None
    if isinstance(scenario, os.PathLike):
        return _read(Path(scenario))
    if not isinstance(scenario, str):
        raise TypeError(
            f"scenario must be a path, TOML text or a dict, not {type(scenario).__name__}"
        )
    # TOML text has a line break or an `=`; a path has neither (or exists).
    if ("\n" in scenario or "=" in scenario) and not os.path.isfile(scenario):
        return scenario, "<string>", os.getcwd()
    return _read(Path(scenario))


def _input_error(
    file: str, message: str, key: Optional[str] = None, allowed: Optional[str] = None
) -> InputError:
    """An InputError raised by this layer, shaped as the library's are."""
    where = f"{file}: key `{key}`" if key else file
    err = InputError(f"{where}: {message}")
    err.file, err.key, err.message, err.allowed = file, key, message, allowed
    return err


def _read(path: Path) -> tuple[str, str, Optional[str]]:
    # Read with the library's bound: /dev/zero or an endless pipe is
    # refused after at most that many bytes, not read until memory runs out.
    limit = _numasim.MAX_INPUT_BYTES
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise _input_error(str(path), f"cannot read scenario: {e.strerror or e}") from None
    if len(data) > limit:
        raise _input_error(
            str(path),
            f"more than {limit >> 20} MiB (a scenario); numasim reads at most "
            f"{limit >> 20} MiB from one such file (docs/testing.md: input bounds)",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _input_error(
            str(path), f"not UTF-8 text (a bad byte at offset {e.start}); expected a scenario"
        ) from None
    return text, str(path), str(path.parent)


def _json(value: Any, where: str) -> str:
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise _input_error(where, str(e)) from None
    except RecursionError:
        # A dict nested a hundred thousand deep (json would recurse past
        # Python's limit): no scenario or override nests more than a few.
        raise _input_error(
            where, "nested too deeply; allowed: tables and lists a few levels deep"
        ) from None


def _overrides(set: Any) -> dict[str, Any]:
    """`set=` as a dict of dotted keys to plain values, or an InputError."""
    if set is None:
        return {}
    if not isinstance(set, Mapping):
        raise _input_error(
            "set",
            f"give a dict of dotted keys to values, e.g. {{'kernel.hashdist': 0}}, "
            f"not {type(set).__name__}",
            allowed="a dict",
        )
    out = {}
    for k, v in set.items():
        if not isinstance(k, str):
            raise _input_error(
                "set", f"keys are dotted names (str), not {type(k).__name__} {k!r}"
            )
        out[k] = _plain(v)
    return out


def _plain(v: Any) -> Any:
    """numpy scalars (from a grid built with numpy) as plain Python values."""
    item = getattr(v, "item", None)
    return item() if callable(item) and not isinstance(v, (list, tuple, dict)) else v


def _frame(jsonl: Iterable[str], extra: Sequence[Mapping[str, Any]] = ()) -> pd.DataFrame:
    """Tidy records (JSON lines, one string per run) as one DataFrame; the
    keys of ``extra[i]`` (a sweep's grid point) become columns of run i.

    Built column by column in plain Python, then handed to pandas once: a
    pandas call costs tens of microseconds, a record a microsecond."""
    recs: list[dict[str, Any]] = []
    cases: list[dict[str, Any]] = []
    keys: dict[str, None] = {}  # case keys in first-seen order
    loads = json.loads
    for i, text in enumerate(jsonl):
        point = extra[i] if extra else None
        if point:
            for k in point:
                keys.setdefault(k, None)
        # One parse per run, not per line (JSON escapes newlines in strings).
        body = text.strip().replace("\n", ",")
        for r in loads(f"[{body}]") if body else ():
            case = r["case"]
            for k in case:
                if k not in keys:
                    keys[k] = None
            cases.append({**case, **point} if point else case)
            recs.append(r)
    nan = float("nan")
    data: dict[str, Any] = {"experiment": [r["experiment"] for r in recs]}
    for k in keys:
        if k in data or k in _RECORD_TAIL:
            continue
        col = [c.get(k) for c in cases]
        present = [v for v in col if v is not None]
        # A case key some rows lack (``node`` beside whole-machine rows)
        # would turn integers into floats: keep them whole, missing <NA>.
        if len(present) < len(col) and present and all(
            type(v) is int for v in present
        ):
            data[k] = pd.array(col, dtype="Int64")
        else:
            data[k] = col
    data["metric"] = [r["metric"] for r in recs]
    data["unit"] = [r["unit"] for r in recs]
    data["value"] = np.array([nan if r["value"] is None else r["value"] for r in recs], dtype="float64")
    data["paper"] = np.array([nan if r["paper"] is None else r["paper"] for r in recs], dtype="float64")
    data["role"] = [r["role"] for r in recs]
    data["comparable"] = np.array([r.get("comparable", True) for r in recs], dtype=bool)
    # Written only where not "at", like "comparable" only where false.
    data["paper_bound"] = [
        None if r["paper"] is None else r.get("paper_bound", "at") for r in recs
    ]
    # A published range's high end ("paper" is its low end); NaN elsewhere.
    data["paper_high"] = np.array([r.get("paper_high", nan) for r in recs], dtype="float64")
    return pd.DataFrame(data)


def run(scenario: Scenario, set: Optional[Mapping[str, Any]] = None) -> pd.DataFrame:
    """Run a scenario and return its tidy records as a DataFrame.

    Args:
        scenario: a path to a scenario TOML file, the TOML text itself, or a
            dict of the same shape (``{"machine": {"preset": "xeon-4s"},
            "run": [{"workload": "boot"}]}``). See docs/scenario.md.
        set: overrides as ``{"kernel.hashdist": 0, "machine.nodes": 32}``,
            the same keys as the command line's ``--set`` (machine.*, kernel.*,
            seed); they win over the scenario's ``[[case]]`` values.

    Returns:
        One row per record: ``experiment``, a column per case key (``node``,
        ``kernel.hashdist``…), ``metric``, ``unit``, ``value``, ``paper``
        (NaN where nothing was published), ``role``, ``comparable`` and
        ``paper_bound`` (``"at"``, ``"below"``, ``"above"``; None where
        nothing was published).

    Raises:
        InputError: the scenario or an override is bad; ``.file``, ``.key``
            and ``.allowed`` say where and what would do.
    """
    text, source, folder = _source(scenario)
    sets = _json([_overrides(set)], "set")
    return _frame(_numasim.run_batch(text, source, folder, sets))


def replay(id: str, set: Optional[Mapping[str, Any]] = None) -> pd.DataFrame:
    """Run a published experiment (``numasim replay ID``); the ``paper`` and
    ``role`` columns hold the published values beside the simulated ones.

    Args:
        id: an experiment id from :func:`experiments` (e.g. ``"hashdist-boot"``).
        set: overrides, as for :func:`run` (changed cases are marked
            ``comparable = False``).
    """
    text, source = _numasim.experiment(id)
    sets = _json([_overrides(set)], "set")
    return _frame(_numasim.run_batch(text, source, None, sets))


def experiments() -> pd.DataFrame:
    """The published experiments :func:`replay` runs: ``id``, ``description``."""
    return pd.DataFrame(_numasim.experiment_list(), columns=["id", "description"])


def machines() -> pd.DataFrame:
    """The built-in machines: ``name``, ``nodes``, ``cpus``, ``memory_bytes``,
    ``description`` (as ``numasim machines`` lists them)."""
    return pd.DataFrame(
        _numasim.machine_list(),
        columns=["name", "nodes", "cpus", "memory_bytes", "description"],
    )


def machine(name: str) -> dict[str, Any]:
    """A built-in machine (or a machine TOML file, given a path) as a dict,
    every default filled in: the tables of ``numasim machines NAME``. A
    dict you change can go back as a scenario's ``"machine"`` table."""
    return json.loads(_numasim.machine_json(os.fspath(name)))


# The most combinations one sweep runs: 10⁵ (a boot sweep of 10⁴ takes
# 4.5 s and its frame 670,000 rows; docs/python.md: limits).
_MAX_GRID_POINTS = 100_000
# Combinations per extension call when a sweep runs here: each call's
# records stay well under the extension's bound on one call.
_LOCAL_CHUNK = 4096
# The most bytes of records (JSON lines) a sweep gathers before pandas
# holds them (several times that).
_MAX_SWEEP_BYTES = 2 << 30


def _grid(grid: Any) -> tuple[list[str], list[Any], int]:
    """The grid's keys, each key's values (not yet expanded or converted)
    and the number of combinations, counted without building them: a
    ``range(10**10)`` has a length, a product of lengths is a number."""
    if not isinstance(grid, Mapping) or not grid:
        raise _input_error("grid", "give a dict of dotted keys to lists of values")
    keys: list[str] = []
    values: list[Any] = []
    total = 1
    for k in grid:
        if not isinstance(k, str):
            raise _input_error("grid", f"keys are dotted names (str), not {type(k).__name__} {k!r}")
        v = grid[k]
        if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Iterable):
            raise _input_error(
                "grid", f"give a list of values, not {v!r:.80}", key=k, allowed="a list"
            )
        if not isinstance(v, Sized):
            # A generator: read one past the bound at most.
            v = list(itertools.islice(v, _MAX_GRID_POINTS + 1))
        keys.append(k)
        values.append(v)
        total *= len(v)
    return keys, values, total


def _grid_points(keys: list[str], values: list[Any]) -> list[dict[str, Any]]:
    plain = [[_plain(x) for x in v] for v in values]
    return [dict(zip(keys, combo)) for combo in itertools.product(*plain)]


def _run_points(
    text: str, source: str, folder: Optional[str], points: list[dict[str, Any]]
) -> list[str]:
    """One batch: the JSON lines of each grid point (a Dask task's work)."""
    return _numasim.run_batch(text, source, folder, json.dumps(points))


# A task should last this long at least: Dask's per-task cost is around a
# millisecond on a LocalCluster and a few on a busy cluster scheduler, so
# tasks of 0.2 s keep it under 5%.
_TASK_SECONDS = 0.2


def sweep(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    client: Any = None,
    set: Optional[Mapping[str, Any]] = None,
    batch_size: Optional[int] = None,
    queue_timeout: float = 600.0,
) -> pd.DataFrame:
    """Run a scenario at every combination of ``grid`` and concatenate the
    records, one column per grid key.

    Args:
        scenario: as for :func:`run`.
        grid: dotted keys to lists of values, e.g. ``{"machine.nodes": [4, 8,
            16], "kernel.hashdist": [0, 1]}``; combinations in
            ``itertools.product`` order (the last key varies fastest).
        client: a ``dask.distributed.Client`` (of a ``LocalCluster``, or of a
            ``dask_jobqueue.SLURMCluster`` on a cluster): the combinations
            run there as Dask tasks, one per batch. None runs them here.
        set: overrides applied to every combination (the grid wins).
        batch_size: combinations per task; by default enough for a task to
            last about 0.2 s (measured on the first combination) but at
            least as many tasks as the client has (or was asked for) workers.
        queue_timeout: seconds the sweep waits while the client has no
            worker at all (batch jobs still queued, or all ended) before it
            gives up with a :class:`QueueTimeout` naming the partition, the
            request and why Slurm holds the jobs. A worker lost mid-sweep
            is not an error: its tasks run again on the others.

    Returns:
        The same DataFrame, row for row, whatever the client and the number
        of workers: the simulation is deterministic and batches are put
        back in grid order.

    Raises:
        InputError: bad scenario, grid key or value (raised before anything
            is sent to the cluster where the first combination shows it);
            a grid of more than 100,000 combinations (counted, not built,
            after its keys are checked); records past 2 GiB.
        QueueTimeout: no worker for ``queue_timeout`` seconds.
        ClusterError: a batch killed every worker that ran it (Dask's
            ``allowed-failures``, 3 by default): memory or walltime.
    """
    out, points = _sweep_runs(scenario, grid, client, set, batch_size, queue_timeout)
    return _frame(out, points)


def _sweep_runs(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    client: Any,
    set: Optional[Mapping[str, Any]],
    batch_size: Optional[int],
    queue_timeout: float,
) -> tuple[list[str], list[dict[str, Any]]]:
    """A sweep's JSON lines (one string per combination, in grid order) and
    its grid points: :func:`sweep` without the DataFrame (the command
    line's ``sweep`` prints the lines)."""
    text, source, folder = _source(scenario)
    base = _overrides(set)
    keys, values, total = _grid(grid)
    if total == 0:
        return [], []
    # The keys first: the first combination is checked without running, so
    # a misspelt key is refused before the grid is counted or expanded.
    first_point = {k: _plain(next(iter(v))) for k, v in zip(keys, values)}
    _numasim.check_sets(text, source, folder, _json([{**base, **first_point}], "grid"))
    if total > _MAX_GRID_POINTS:
        sizes = " × ".join(str(len(v)) for v in values)
        raise _input_error(
            "grid",
            f"{sizes} = {total} combinations: allowed at most {_MAX_GRID_POINTS} "
            f"(docs/python.md: limits); split the sweep or use fewer values",
            allowed=f"at most {_MAX_GRID_POINTS} combinations",
        )
    points = _grid_points(keys, values)
    runs = [{**base, **p} for p in points]
    _json(runs, "grid")
    # The first combination runs here: it checks the input before a cluster
    # sees it, and its time sizes the batches.
    t0 = time.perf_counter()
    first = _run_points(text, source, folder, runs[:1])
    per_case = max(time.perf_counter() - t0, 1e-6)
    rest = runs[1:]
    out = list(first)
    gathered = sum(len(x) for x in out)

    def keep(parts: list[str]) -> None:
        nonlocal gathered
        gathered += sum(len(x) for x in parts)
        if gathered > _MAX_SWEEP_BYTES:
            raise _input_error(
                "grid",
                f"the records pass {_MAX_SWEEP_BYTES >> 30} GiB after {len(out) + len(parts)} "
                f"of {total} combinations (docs/python.md: limits); split the sweep or keep "
                f"fewer metrics (a step's `metrics` list)",
            )
        out.extend(parts)

    if rest:
        if client is None:
            for i in range(0, len(rest), _LOCAL_CHUNK):
                keep(_run_points(text, source, folder, rest[i : i + _LOCAL_CHUNK]))
        else:
            # Sent at once, workers or not: an adaptive cluster starts jobs
            # only for tasks it sees (gather() times out a queue that never
            # gives one).
            size = batch_size or max(1, math.ceil(_TASK_SECONDS / per_case))
            # No fewer tasks than workers, counting those asked for but not
            # yet started (jobs still in the queue).
            workers = max(_cluster.worker_count(client), _cluster.planned_workers(client))
            if not batch_size and workers:
                size = min(size, max(1, math.ceil(len(rest) / workers)))
            batches = [rest[i : i + size] for i in range(0, len(rest), size)]
            futures = client.map(
                _run_points,
                [text] * len(batches),
                [source] * len(batches),
                [folder] * len(batches),
                batches,
                pure=False,
            )
            # Gathered in grid order, whichever worker ran a batch and
            # however often (a lost worker's batches run again elsewhere).
            for part in _cluster.gather(client, futures, batches, queue_timeout):
                keep(part)
    return out, points


def job_size(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Any]],
    cores: int,
    set: Optional[Mapping[str, Any]] = None,
    node_memory: Union[int, str, None] = None,
) -> dict[str, Any]:
    """Cores and memory for each batch job of a ``dask_jobqueue`` cluster
    that runs this sweep, from the largest machine the grid simulates.

    The grid's largest cases (the greatest value of every numeric key, each
    value of the others) run once here, one at a time, in a fresh
    interpreter that started a Dask worker and imported numasim as a job
    does; their peak resident memory above that, plus their records, is
    one case's share. A job runs ``cores`` cases at once
    (``RAYON_NUM_THREADS``), so it asks for its nanny's memory, plus the
    worker's own and ``cores`` such shares divided by the share of its
    limit a Dask worker may use before it pauses
    (``distributed.worker.memory.pause``, 0.8).

    Args:
        scenario, grid, set: as for :func:`sweep`.
        cores: the most cores a job may take (a compute node's, or fewer).
        node_memory: a compute node's memory (bytes, or ``"192GB"``); when
            given, a job runs no more cases at once than fit in it.

    Returns:
        ``{"cores", "processes", "memory", "job_script_prologue"}``, the
        keyword arguments of ``SLURMCluster`` (and of dask-jobqueue's
        other clusters) that size a job: ``SLURMCluster(queue=…,
        account=…, walltime=…, **numasim.job_size(…))``.

    Raises:
        InputError: bad scenario or grid; ``cores`` below 1; the largest
            case does not fit in ``node_memory`` even alone.
    """
    text, source, folder = _source(scenario)
    base = _overrides(set)
    keys, values, total = _grid(grid)
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise _input_error("cores", f"give a whole number of cores, 1 or more, not {cores!r}")
    if total == 0:
        raise _input_error("grid", "the grid has no combinations: nothing to size")
    lists = [[_plain(x) for x in itertools.islice(v, _MAX_GRID_POINTS + 1)] for v in values]
    probes = [{**base, **p} for p in _cluster.largest_points(keys, lists)]
    _numasim.check_sets(text, source, folder, _json(probes, "grid"))
    m = _cluster.measure(text, source, folder, probes)
    per_case = max(m["peak"] - m["base"], 0) + max(r[1] for r in m["runs"])
    fraction = _cluster.memory_fraction()
    threads = cores
    if node_memory is not None:
        limit = _bytes(node_memory)
        fits = int(((limit - m["nanny"]) * fraction - m["base"]) // max(per_case, 1))
        if fits < 1:
            need = _cluster.job_memory(m["nanny"], m["base"], per_case, 1, fraction)
            raise _input_error(
                "node_memory",
                f"one job running the grid's largest case alone ({probes[0]}) needs "
                f"{need >> 20} MiB, more than a node's {limit >> 20} MiB: use nodes with "
                f"more memory or a smaller machine",
            )
        threads = min(cores, fits)
    memory = _cluster.job_memory(m["nanny"], m["base"], per_case, threads, fraction)
    return {
        "cores": threads,
        "processes": 1,
        "memory": f"{math.ceil(memory / (1 << 20))}MiB",
        # The batch's cases run on the Rust side's thread pool: as many at
        # once as the memory above was sized for, whatever the node has.
        "job_script_prologue": [f"export RAYON_NUM_THREADS={threads}"],
    }


def _bytes(v: Union[int, str]) -> int:
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    if isinstance(v, str):
        try:
            from dask.utils import parse_bytes

            return int(parse_bytes(v))
        except (ImportError, ValueError):
            pass
    raise _input_error(
        "node_memory", f"give bytes (an int) or a size such as \"192GB\", not {v!r}"
    )
