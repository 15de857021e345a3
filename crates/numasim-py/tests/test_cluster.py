"""What a sweep meets on a cluster, checked without one (a LocalCluster
stands in; test_slurm.py runs the same on a real Slurm): a lost worker's
batches run again, a batch that kills every worker is a ClusterError, no
worker at all is a QueueTimeout, job sizes come from the grid's largest
machine, and `python -m numasim sweep` prints the sweep's records."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

import numasim
from _scenarios import BOOT, BOOT_TOML
from numasim import _cluster

GRID = {"machine.nodes": [4, 8, 16, 32, 64, 128], "kernel.hashdist": [0, 1]}


def _mib(size: dict) -> int:
    assert size["memory"].endswith("MiB")
    return int(size["memory"][:-3])


# --- job sizes ---------------------------------------------------------------


def test_largest_points_take_each_numeric_maximum_and_every_name():
    pts = _cluster.largest_points(
        ["machine.nodes", "machine.preset", "kernel.hashdist"],
        [[64, 4096, 16], ["altix-512", "xeon-4s", "altix-512"], [0, 1]],
    )
    assert pts == [
        {"machine.nodes": 4096, "machine.preset": "altix-512", "kernel.hashdist": 1},
        {"machine.nodes": 4096, "machine.preset": "xeon-4s", "kernel.hashdist": 1},
    ]


def test_job_memory_grows_with_the_simulated_machine():
    small = numasim.job_size(BOOT, {"machine.nodes": [16]}, cores=4)
    big = numasim.job_size(BOOT, {"machine.nodes": [16, 4096]}, cores=4)
    # A 4,096-node Altix peaks some 15 MiB above a 16-node one (its
    # distance matrix and per-node state); four at once, under Dask's 80%.
    assert _mib(big) - _mib(small) > 40, (small, big)
    assert big["cores"] == 4 and big["processes"] == 1
    assert big["job_script_prologue"] == ["export RAYON_NUM_THREADS=4"]


def test_node_memory_bounds_the_cases_a_job_runs_at_once():
    grid = {"machine.nodes": [16, 4096]}
    three = numasim.job_size(BOOT, grid, cores=3)
    capped = numasim.job_size(BOOT, grid, cores=64, node_memory=three["memory"])
    assert 1 <= capped["cores"] < 64
    assert _mib(capped) <= _mib(three)
    assert capped["job_script_prologue"] == [f"export RAYON_NUM_THREADS={capped['cores']}"]
    with pytest.raises(numasim.InputError) as e:
        numasim.job_size(BOOT, grid, cores=4, node_memory="50MiB")
    assert e.value.file == "node_memory" and "4096" in str(e.value)
    with pytest.raises(numasim.InputError) as e:
        numasim.job_size(BOOT, grid, cores=0)
    assert e.value.file == "cores"
    with pytest.raises(numasim.InputError) as e:
        numasim.job_size(BOOT, {"machine.nodez": [4]}, cores=1)
    assert e.value.key == "machine.nodez"


# --- a lost worker, no worker ------------------------------------------------

distributed = pytest.importorskip("dask.distributed")


def _die_once():
    """On a worker: the next batch kills this worker's process (as the
    kernel's OOM killer or a job's walltime would); its restart is clean."""
    import numasim as n

    def die(*args):
        os._exit(9)

    n._run_points = die
    return os.getpid()


@pytest.fixture
def local():
    import dask

    def make(n_workers=2, allowed_failures=3):
        with dask.config.set({"distributed.scheduler.allowed-failures": allowed_failures}):
            cluster = distributed.LocalCluster(
                n_workers=n_workers, threads_per_worker=1, dashboard_address=None, processes=True
            )
        made.append(cluster)
        return cluster, distributed.Client(cluster)

    made: list = []
    yield make
    for c in made:
        c.close()


def test_a_killed_workers_batches_run_again_in_grid_order(local):
    serial = numasim.sweep(BOOT, GRID)
    cluster, client = local()
    with client:
        pids = client.run(_die_once)
        assert len(pids) == 2
        spread = numasim.sweep(BOOT, GRID, client=client, batch_size=1, queue_timeout=60)
        # Both first workers died (each on its first batch) and came back.
        assert not set(pids.values()) & set(client.run(os.getpid).values())
    pd.testing.assert_frame_equal(serial, spread)


def test_a_batch_that_kills_every_worker_is_a_cluster_error(local):
    cluster, client = local(n_workers=1, allowed_failures=0)
    with client:
        client.run(_die_once)
        with pytest.raises(numasim.ClusterError) as e:
            numasim.sweep(BOOT, GRID, client=client, batch_size=1, queue_timeout=60)
    msg = str(e.value)
    assert "machine.nodes" in msg and "memory" in msg and "walltime" in msg


def test_no_worker_is_a_queue_timeout(local):
    cluster, client = local(n_workers=0)
    with client:
        with pytest.raises(numasim.QueueTimeout, match="no Dask worker joined") as e:
            numasim.sweep(BOOT, GRID, client=client, queue_timeout=1)
    assert isinstance(e.value, TimeoutError)
    assert "11 case(s)" in str(e.value)  # all but the first, run here


# --- the command line ----------------------------------------------------------


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "numasim", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def test_command_line_sweep_prints_the_sweeps_records(tmp_path, local):
    f = tmp_path / "boot.toml"
    f.write_text(BOOT_TOML)
    grid = ["--grid", "machine.nodes=4,8,16", "--grid", "kernel.hashdist=0,1"]
    here = _cli("sweep", str(f), *grid, "--set", "seed=3")
    assert here.returncode == 0, here.stderr
    recs = [json.loads(ln) for ln in here.stdout.splitlines()]
    df = numasim.sweep(f, {"machine.nodes": [4, 8, 16], "kernel.hashdist": [0, 1]}, set={"seed": 3})
    assert len(recs) == len(df)
    assert [r["value"] for r in recs] == df.value.tolist()
    # The grid point (and the --set keys) in every record's case, grid order.
    assert [(r["case"]["machine.nodes"], r["case"]["kernel.hashdist"]) for r in recs] == list(
        zip(df["machine.nodes"], df["kernel.hashdist"])
    )
    assert all(r["case"]["seed"] == 3 for r in recs)
    cluster, client = local()
    with client:
        there = _cli("sweep", str(f), *grid, "--set", "seed=3",
                     "--dask-scheduler", cluster.scheduler_address, "--batch-size", "1")
    assert there.returncode == 0, there.stderr
    assert there.stdout == here.stdout


def test_command_line_bad_input_exits_2_and_no_scheduler_1(tmp_path, capsys):
    from numasim.__main__ import main

    f = str(tmp_path / "boot.toml")
    (tmp_path / "boot.toml").write_text(BOOT_TOML)
    for args, says in [
        (["--grid", "kernel.hashdsit=0,1"], "Did you mean `hashdist`"),
        (["--grid", "kernel.hashdist"], "--grid: `kernel.hashdist`: write KEY=V1,V2"),
        (["--grid", "kernel.hashdist=0,,1"], "empty value"),
        (["--grid", "kernel.hashdist=0,1", "--jobs", "0", "--slurm"], "--jobs"),
        (["--grid", "kernel.hashdist=0,1", "--partition", "compute"], "add --slurm"),
    ]:
        assert main(["sweep", f, *args]) == 2
        assert says in capsys.readouterr().err
    no = ["--grid", "kernel.hashdist=0,1", "--dask-scheduler", "tcp://127.0.0.1:9", "--queue-timeout", "2"]
    assert main(["sweep", f, *no]) == 1
    assert "--dask-scheduler tcp://127.0.0.1:9: no scheduler answered" in capsys.readouterr().err
