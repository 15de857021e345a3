"""What a sweep meets on a cluster (docs/python.md: on a Slurm cluster):
jobs that never start, workers that die mid-sweep, and the size of a job,
measured on the largest machine the grid simulates rather than guessed.

Dask and dask-jobqueue are imported only when used: the package itself
needs neither."""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import time
from typing import Any, Optional, Sequence


class ClusterError(RuntimeError):
    """A sweep on a Dask cluster could not finish: its workers kept dying
    (memory, walltime) or never came. The message says what the cluster
    asked for and what to change."""


class QueueTimeout(ClusterError, TimeoutError):
    """No Dask worker for ``queue_timeout`` seconds while a sweep waited:
    the batch jobs never started (or all ended). The message names the
    partition, the request and, from ``squeue``, why Slurm holds them."""


# How often the gathering loop looks at the cluster (seconds): a worker's
# loss or a queue time-out is seen within this.
_POLL = 1.0


def worker_count(client: Any) -> int:
    """Workers connected now. `nthreads()` lists them all;
    `scheduler_info()` lists only the first five in recent distributed."""
    return len(client.nthreads())


def planned_workers(client: Any) -> int:
    """Workers the client's cluster was asked for (`cluster.scale(jobs=…)`
    on a dask-jobqueue cluster, `n_workers` on a LocalCluster), 0 unknown."""
    plan = getattr(getattr(client, "cluster", None), "plan", None)
    try:
        return len(plan) if plan is not None else 0
    except TypeError:
        return 0


def _job_request(client: Any) -> tuple[Optional[str], list[str], list[str]]:
    """(partition, the job's `#SBATCH` options, the job ids) of a
    dask-jobqueue Slurm cluster; (None, [], []) for any other."""
    cluster = getattr(client, "cluster", None)
    script = getattr(cluster, "job_script", None)
    if not callable(script):
        return None, [], []
    try:
        text = script()
    except Exception:  # a cluster that cannot write its script: say less
        return None, [], []
    opts = [ln[len("#SBATCH") :].strip() for ln in text.splitlines() if ln.startswith("#SBATCH")]
    partition = None
    for o in opts:
        for flag in ("-p ", "--partition=", "--partition "):
            if o.startswith(flag):
                partition = o[len(flag) :].strip()
    ids = []
    for job in getattr(cluster, "workers", {}).values():
        jid = getattr(job, "job_id", None)
        if jid:
            ids.append(str(jid))
    return partition, [o for o in opts if not o.startswith(("-J ", "-e ", "-o "))], ids


def _squeue(ids: Sequence[str]) -> list[str]:
    """`squeue`'s word on these jobs: id, partition, state, reason."""
    if not ids or shutil.which("squeue") is None:
        return []
    try:
        out = subprocess.run(
            ["squeue", "-h", "-j", ",".join(ids), "-o", "%i %P %T (%r)"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]


def queue_timeout_error(client: Any, waited: float, cases: int) -> QueueTimeout:
    partition, opts, ids = _job_request(client)
    if opts:
        where = f"partition `{partition}`" if partition else "the default partition"
        jobs = _squeue(ids)
        said = (
            "; squeue: " + "; ".join(jobs)
            if jobs
            else (f"; jobs {', '.join(ids)} are not in squeue (ended or refused)" if ids else "")
        )
        check = f"sinfo -p {partition}" if partition else "sinfo"
        msg = (
            f"no Dask worker for {waited:.0f} s while {cases} case(s) waited: the Slurm jobs "
            f"in {where} did not start{said}. Each job asks `{' '.join(opts)}`. Check "
            f"`{check}` and `squeue --start`; ask for a partition that runs now, fewer cores, "
            f"less memory or a shorter walltime, or pass a longer queue_timeout"
        )
    else:
        addr = getattr(client, "scheduler", None)
        addr = getattr(addr, "address", None) or "the scheduler"
        msg = (
            f"no Dask worker joined {addr} for {waited:.0f} s while {cases} case(s) waited: "
            f"start workers (`dask worker ADDRESS`, or scale the cluster) or pass a longer "
            f"queue_timeout"
        )
    return QueueTimeout(msg)


def gather(client: Any, futures: list, batches: list, timeout: float) -> list:
    """The futures' results, in the order given. A worker that dies takes
    its tasks back to the scheduler, which runs them elsewhere (Dask's
    `allowed-failures` times); a cluster left with no worker for `timeout`
    seconds is a QueueTimeout, and a batch that killed worker after worker
    a ClusterError naming its cases, not Dask's bare KilledWorker."""
    from distributed import wait

    idle_since: Optional[float] = None
    while True:
        try:
            wait(futures, timeout=_POLL)
            break
        except (TimeoutError, asyncio.TimeoutError):
            pass
        if any(f.status == "error" for f in futures):
            break
        if worker_count(client):
            idle_since = None
            continue
        now = time.monotonic()
        idle_since = idle_since or now
        if now - idle_since >= timeout:
            left = sum(len(b) for f, b in zip(futures, batches) if not f.done())
            client.cancel([f for f in futures if not f.done()])
            raise queue_timeout_error(client, now - idle_since, left)
    try:
        return client.gather(futures)
    except Exception as e:
        if type(e).__name__ != "KilledWorker":
            raise
        i = next((i for i, f in enumerate(futures) if f.status == "error"), None)
        first = batches[i][0] if i is not None and batches[i] else {}
        n = len(batches[i]) if i is not None else 0
        raise ClusterError(
            f"a batch of {n} case(s) (the first {first}) was running on every worker that "
            f"died under it ({e}): each loss was a worker's process killed (out of memory, "
            f"or its job's walltime). Ask for more memory per job (numasim.job_size), a "
            f"longer walltime, or smaller batches (batch_size=)"
        ) from e


# ---- the size of a job ----------------------------------------------------

# The largest-machine candidates measured (combinations of a grid's
# non-numeric values); past this, the first ones.
_MAX_PROBES = 16

_PROBE = r"""
import json, os, resource, sys, time
def peak():
    # VmHWM: this process's own peak. ru_maxrss would not do: Linux keeps
    # it across execve, so it starts at the parent's size at fork.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024
def rss():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return peak()
nanny = worker = rss()
try:
    import asyncio
    import distributed
    # A job's other process: the nanny that starts the worker.
    nanny = rss()
    async def up():
        # A worker as a job runs it, on a scheduler of its own here.
        async with distributed.Scheduler(host="127.0.0.1", dashboard_address=None) as s:
            async with distributed.Worker(s.address, nthreads=1, memory_limit=0):
                pass
    asyncio.run(up())
except Exception:
    pass
import numasim._numasim as m
a = json.load(sys.stdin)
worker = rss()
try:
    # The peak from here on: the worker's start-up transient is not a case's.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
runs = []
for p in a["points"]:
    t = time.perf_counter()
    out = m.run_batch(a["text"], a["source"], a["folder"], json.dumps([p]))
    runs.append([time.perf_counter() - t, sum(len(x) + 1 for x in out)])
    del out
print(json.dumps({"nanny": nanny, "base": worker, "peak": peak(), "runs": runs}))
"""


def largest_points(keys: list[str], values: list[list[Any]]) -> list[dict[str, Any]]:
    """The grid's largest machines: the greatest value of every numeric key
    (more nodes, CPUs, memory, bigger tables: a bigger simulation) with
    each value of the others (a preset's name), at most _MAX_PROBES."""
    choices = []
    for v in values:
        nums = [x for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if nums and len(nums) == len(v):
            choices.append([max(nums)])
        else:
            seen: list[Any] = []
            for x in v:
                if x not in seen:
                    seen.append(x)
            choices.append(seen)
    points: list[dict[str, Any]] = [{}]
    for k, c in zip(keys, choices):
        points = [{**p, k: x} for p in points for x in c][:_MAX_PROBES]
    return points


def measure(text: str, source: str, folder: Optional[str], runs: list[dict]) -> dict:
    """Run each case alone in a fresh interpreter that started a Dask
    worker (and imported numasim) as a job does, and report the resident
    memory of a nanny (distributed imported), of that worker before the
    runs, its peak after them, and each run's seconds and record bytes."""
    payload = json.dumps({"text": text, "source": source, "folder": folder, "points": runs})
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE],
        input=payload,
        capture_output=True,
        text=True,
        env={**os.environ, "RAYON_NUM_THREADS": "1"},
    )
    if proc.returncode != 0:
        raise ClusterError(
            f"measuring the grid's largest case failed (exit {proc.returncode}): "
            f"{proc.stderr.strip()[-2000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def memory_fraction() -> float:
    """The share of its memory limit a Dask worker may use before it stops
    running tasks (`distributed.worker.memory.pause`, 0.8 by default)."""
    try:
        import dask
        import distributed  # noqa: F401 - its defaults join dask.config on import

        cfg = dask.config.get("distributed.worker.memory", {})
    except ImportError:
        cfg = {}
    for key in ("pause", "terminate"):
        f = cfg.get(key)
        if isinstance(f, (int, float)) and not isinstance(f, bool) and 0 < f <= 1:
            return float(f)
    return 1.0


def job_memory(nanny: int, base: int, per_case: int, threads: int, fraction: float) -> int:
    """Bytes a job asks for: its nanny, and the worker's own memory with
    `threads` cases at their peak at once under the share of its limit
    Dask lets a worker use (dask-jobqueue gives the worker the job's
    memory as its limit, so the nanny's share is headroom for it)."""
    return nanny + math.ceil((base + threads * per_case) / fraction)
