"""``python -m numasim sweep FILE --grid KEY=V1,V2 …``: the command line's
sweep on a Dask cluster, without Python code (docs/python.md: on a Slurm
cluster). The records are those of ``numasim sweep``: the tidy JSON lines,
one per record, in grid order, the grid keys (and ``--set`` keys) in each
record's ``case``.

    python -m numasim sweep my.toml --grid machine.nodes=4,8,16 \\
        --dask-scheduler tcp://login1:8786
    python -m numasim sweep my.toml --grid machine.nodes=4,8,16 \\
        --slurm --partition compute --account myproject --walltime 01:00:00 \\
        --jobs 8 --cores 32

Bad input exits 2 with a message naming the file or flag, the key and what
is allowed; a cluster that never gave a worker (or lost every one) exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional

from . import ClusterError, InputError, _input_error, _sweep_runs, job_size

try:
    import tomllib
except ImportError:  # Python < 3.11: JSON reads the numbers and booleans
    tomllib = None  # type: ignore[assignment]


def _value(text: str) -> Any:
    """A `--set`/`--grid` value as the Rust command reads it: TOML if it
    parses (4, 0.5, true, "4 TB"), else the text itself (interleave)."""
    s = text.strip()
    if tomllib is not None:
        try:
            return tomllib.loads(f"v = {s}")["v"]
        except tomllib.TOMLDecodeError:
            return s
    try:
        return json.loads(s)
    except ValueError:
        return s


def _pairs(flag: str, args: list[str], many: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    example = "--grid kernel.hashdist=0,1" if many else "--set kernel.hashdist=0"
    for a in args:
        key, eq, vals = a.partition("=")
        key = key.strip()
        if not eq or not key:
            raise _input_error(flag, f"`{a}`: write KEY={'V1,V2,…' if many else 'VALUE'}, e.g. {example}")
        if key in out:
            raise _input_error(
                flag, "given twice; list all its values in one --grid" if many else "given twice", key=key
            )
        if not many:
            out[key] = _value(vals)
            continue
        parts = vals.split(",")
        if any(not p.strip() for p in parts):
            raise _input_error(
                flag, f"an empty value in `{vals}`", key=key, allowed="values separated by commas, e.g. 4,8,16"
            )
        out[key] = [_value(p) for p in parts]
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m numasim", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser(
        "sweep",
        help="run a scenario at every combination of a grid, here or on a Dask/Slurm cluster",
        description="Run SCENARIO at every combination of the --grid values (the last key "
        "varies fastest) and print the records as JSON lines, the grid keys in each "
        "record's case. Without --dask-scheduler or --slurm it runs here.",
    )
    s.add_argument("scenario", help="a scenario TOML file")
    s.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,…", required=True,
                   help="a key and its values, e.g. machine.nodes=4,8,16 (repeat for more keys)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="an override for every combination (the grid wins)")
    s.add_argument("--format", choices=["jsonl", "csv"], default="jsonl",
                   help="jsonl: the tidy records, one JSON object a line (default; `numasim sweep "
                   "--format jsonl` prints the same); csv: the DataFrame")
    s.add_argument("--batch-size", type=int, metavar="N", help="combinations per Dask task")
    s.add_argument("--queue-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="give up after this long with no worker (jobs still queued); default 600")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--dask-scheduler", metavar="ADDRESS",
                       help="a running Dask scheduler, e.g. tcp://login1:8786 (workers started by you)")
    where.add_argument("--slurm", action="store_true",
                       help="start Dask workers as Slurm jobs (dask-jobqueue's SLURMCluster)")
    g = s.add_argument_group("Slurm (with --slurm)")
    g.add_argument("--partition", help="the partition (sbatch -p); default: the cluster's default")
    g.add_argument("--account", help="the account charged (sbatch -A)")
    g.add_argument("--walltime", default="01:00:00", help="each job's time limit (sbatch -t); default 01:00:00")
    g.add_argument("--jobs", type=int, default=4, help="batch jobs, one Dask worker each; default 4")
    g.add_argument("--cores", type=int, help="cores per job; default: this machine's")
    g.add_argument("--node-memory", metavar="SIZE",
                   help="a compute node's memory, e.g. 192GB: a job runs no more cases at once than fit")
    g.add_argument("--memory", metavar="SIZE",
                   help="memory per job instead of the size measured on the grid's largest case")
    g.add_argument("--job-extra", action="append", default=[], metavar="DIRECTIVE",
                   help="an extra #SBATCH directive, e.g. --job-extra=--exclusive (repeatable)")
    g.add_argument("--log-directory", default="numasim-slurm-logs",
                   help="where each job's stdout/stderr go; default ./numasim-slurm-logs")
    g.add_argument("--interface", help="network interface the scheduler and workers listen on, e.g. ib0")
    return p


def _slurm_cluster(a: argparse.Namespace, grid: dict, sets: dict) -> Any:
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise _input_error("--slurm", "needs dask-jobqueue: pip install dask-jobqueue") from None
    size = job_size(a.scenario, grid, cores=a.cores or os.cpu_count() or 1, set=sets,
                    node_memory=a.node_memory)
    if a.memory:
        size["memory"] = a.memory
    kwargs: dict[str, Any] = dict(
        walltime=a.walltime,
        job_extra_directives=a.job_extra,
        log_directory=a.log_directory,
        **size,
    )
    if a.partition:
        kwargs["queue"] = a.partition
    if a.account:
        kwargs["account"] = a.account
    if a.interface:
        kwargs["interface"] = a.interface
    cluster = SLURMCluster(**kwargs)
    cluster.scale(jobs=a.jobs)
    print(f"numasim: {a.jobs} Slurm job(s), each:\n{cluster.job_header}", file=sys.stderr)
    return cluster


def _lines(out: list[str], points: list[dict], sets: dict) -> Any:
    """Each record with its grid point (and `--set` keys) in its case, the
    point winning, as `numasim sweep` marks them."""
    for text, point in zip(out, points):
        mark = {**sets, **point}
        for line in text.splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            r["case"] = {**r.get("case", {}), **mark}
            yield json.dumps(r, separators=(",", ":"), ensure_ascii=False)


def sweep_main(a: argparse.Namespace) -> int:
    grid = _pairs("--grid", a.grid, many=True)
    sets = _pairs("--set", a.set, many=False)
    if not a.slurm:
        given = [f for f, v in (("--partition", a.partition), ("--account", a.account),
                                ("--cores", a.cores), ("--node-memory", a.node_memory),
                                ("--memory", a.memory), ("--job-extra", a.job_extra),
                                ("--interface", a.interface)) if v]
        if given:
            raise _input_error(given[0], "a Slurm option: add --slurm (or leave it out)")
    for flag, n in (("--jobs", a.jobs), ("--batch-size", a.batch_size), ("--cores", a.cores)):
        if n is not None and n < 1:
            raise _input_error(flag, f"give 1 or more, not {n}")
    cluster = client = None
    try:
        if a.dask_scheduler or a.slurm:
            try:
                from dask.distributed import Client
            except ImportError:
                raise _input_error(
                    "--dask-scheduler" if a.dask_scheduler else "--slurm",
                    'needs Dask: pip install "dask[distributed]"',
                ) from None
            if a.slurm:
                cluster = _slurm_cluster(a, grid, sets)
                client = Client(cluster)
            else:
                try:
                    client = Client(a.dask_scheduler, timeout=a.queue_timeout)
                except OSError as e:
                    raise ClusterError(
                        f"--dask-scheduler {a.dask_scheduler}: no scheduler answered ({e}); "
                        f"start one (`dask scheduler`) or check the address"
                    ) from None
        out, points = _sweep_runs(a.scenario, grid, client, sets, a.batch_size, a.queue_timeout)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    # Standard output only: `numasim sweep --out DIR` writes a folder of
    # files, a name this entry point does not reuse for something else.
    if a.format == "csv":
        from . import _frame

        _frame(out, points).to_csv(sys.stdout, index=False)
    else:
        for line in _lines(out, points, sets):
            sys.stdout.write(line + "\n")
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    a = _parser().parse_args(argv)
    try:
        return sweep_main(a)
    except InputError as e:
        print(f"numasim: {e}", file=sys.stderr)
        return 2
    except (ClusterError, OSError) as e:
        print(f"numasim: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
