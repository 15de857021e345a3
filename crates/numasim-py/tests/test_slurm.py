"""Sweeps on a real Slurm (docs/python.md: on a Slurm cluster): a
single-host Slurm started from Debian's packages (munged, slurmctld,
slurmd; this host the only node), a sweep through dask_jobqueue's
SLURMCluster with three jobs, one worker process killed mid-sweep, and the
result row for row the serial sweep's; jobs that never start end in a
QueueTimeout naming the partition; the command line's --slurm sweep prints
what it prints here. Everything started is stopped by its process id.

Skipped, saying why, where Slurm is not installed or cannot start (not
root, no dask-jobqueue); .ci/run sets NUMASIM_REQUIRE_SLURM=1 where it
installed the packages, and then a Slurm that does not start fails."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import numasim
from _scenarios import BOOT, BOOT_TOML

REQUIRED = os.environ.get("NUMASIM_REQUIRE_SLURM") == "1"
DAEMONS = ["munged", "slurmctld", "slurmd"]
CLIENTS = ["sinfo", "sbatch", "squeue", "scancel"]

# BOOT on Altix machines of 1,024 to 4,096 nodes: a case takes about 0.1 s
# on one core, so a task of two cases is still running when its worker is
# killed.
GRID = {"machine.nodes": list(range(1024, 4097, 256)), "kernel.hashdist": [0, 1]}  # 26 cases
JOBS = 3


def _skip_or_fail(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"NUMASIM_REQUIRE_SLURM=1 but {why}")
    pytest.skip(why)


def _stop(procs: list[subprocess.Popen]) -> None:
    """Stop what this file started, by process id, newest first."""
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _slurm_conf(d: Path, host: str, cpus: int, mem_mib: int) -> str:
    # One node (this host), two partitions: `ci` runs jobs, `closed` is
    # down, so a job sent there waits for ever (reason PartitionDown).
    # proctrack/linuxproc and task/none: no cgroups, which a container
    # lacks. config_overrides: the node may claim more CPUs than the
    # machine has, so three one-core jobs run at once on a 2-CPU runner.
    return f"""\
ClusterName=numasimci
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.socket
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mib} State=UNKNOWN
PartitionName=ci Nodes={host} Default=YES MaxTime=INFINITE State=UP
PartitionName=closed Nodes={host} MaxTime=INFINITE State=DOWN
"""


def _log_tail(d: Path) -> str:
    out = []
    for f in sorted((d / "log").glob("*")):
        lines = f.read_text(errors="replace").splitlines()[-8:]
        out.append(f"--- {f.name}\n" + "\n".join(lines))
    return "\n".join(out)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    pytest.importorskip("dask.distributed", reason="needs dask[distributed]")
    try:
        import dask_jobqueue  # noqa: F401
    except ImportError:
        _skip_or_fail("dask-jobqueue is not installed (pip install dask-jobqueue)")
    missing = [b for b in DAEMONS + CLIENTS if shutil.which(b) is None and not Path(f"/usr/sbin/{b}").exists()]
    if missing:
        _skip_or_fail(
            f"Slurm is not installed here (no {', '.join(missing)}): "
            f"apt-get install slurm-wlm munge (.ci/run does, where it can)"
        )
    if os.geteuid() != 0:
        _skip_or_fail("starting slurmd and munged as configured here (SlurmUser=root) needs root")
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "log", "jobs"):
        (d / sub).mkdir()
    # munged wants its socket's folder searchable by all, its key private.
    d.chmod(0o755)
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    host = socket.gethostname().split(".")[0]
    cpus = max(os.cpu_count() or 1, JOBS + 1)
    with open("/proc/meminfo") as f:
        mem_mib = int(f.readline().split()[1]) // 1024
    conf = d / "slurm.conf"
    conf.write_text(_slurm_conf(d, host, cpus, mem_mib))
    sbin = lambda b: shutil.which(b) or f"/usr/sbin/{b}"  # noqa: E731
    procs: list[subprocess.Popen] = []
    env_before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)  # sbatch from dask-jobqueue reads it
    try:
        procs.append(subprocess.Popen(
            [sbin("munged"), "-F", "--force", f"--socket={d}/munge.socket",
             f"--key-file={key}", f"--pid-file={d}/munged.pid",
             f"--seed-file={d}/munged.seed", f"--log-file={d}/log/munged.log"],
            stdout=subprocess.DEVNULL, stderr=open(d / "log" / "munged.err", "w"),
        ))
        _until(lambda: (d / "munge.socket").exists(), 20)
        for daemon in ("slurmctld", "slurmd"):
            procs.append(subprocess.Popen(
                [sbin(daemon), "-D", "-f", str(conf)],
                stdout=subprocess.DEVNULL, stderr=open(d / "log" / f"{daemon}.err", "w"),
            ))
        if not _until(lambda: _node_state() == "idle", 60):
            dead = [p.args[0] for p in procs if p.poll() is not None]
            _skip_or_fail(
                f"Slurm did not start here (node state `{_node_state()}` after 60 s"
                f"{', exited: ' + ', '.join(dead) if dead else ''}):\n{_log_tail(d)}"
            )
        yield d
    finally:
        # Jobs first (their slurmstepd outlive slurmd), then the daemons.
        subprocess.run(["scancel", "--user", "root"], capture_output=True)
        _until(lambda: not _squeue(), 30)
        _stop(procs)
        if env_before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = env_before


def _until(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.25)
    return cond()


def _node_state() -> str:
    r = subprocess.run(["sinfo", "-h", "-N", "-p", "ci", "-o", "%T"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else f"sinfo failed: {r.stderr.strip()}"


def _squeue() -> list[str]:
    r = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True)
    return r.stdout.split("\n") if r.returncode == 0 and r.stdout.strip() else []


def _cluster(d: Path, queue: str, **size):
    from dask_jobqueue import SLURMCluster

    return SLURMCluster(
        queue=queue,
        walltime="00:10:00",
        log_directory=str(d / "jobs"),
        interface="lo",
        scheduler_options={"dashboard_address": None},
        **size,
    )


class _Losses:
    """A scheduler plugin: the workers the scheduler removed and the tasks
    it took back from a worker while they ran (to run them again)."""

    name = "numasim-test-losses"

    def __init__(self):
        self.removed: list[str] = []
        self.taken_back: set = set()

    def remove_worker(self, scheduler=None, worker=None, **kwargs):
        self.removed.append(worker)

    def transition(self, key, start, finish, *args, **kwargs):
        if start == "processing" and finish in ("released", "waiting"):
            self.taken_back.add(key)


def test_slurm_sweep_with_a_killed_worker_equals_serial(slurm):
    from dask.distributed import Client
    from distributed.diagnostics.plugin import SchedulerPlugin

    serial = numasim.sweep(BOOT, GRID)
    # Each job's cores and memory measured on the grid's largest machine;
    # a worker over its share would pause (80%) and the sweep stall.
    size = numasim.job_size(BOOT, GRID, cores=1)
    assert size["cores"] == 1 and size["memory"].endswith("MiB")
    with _cluster(slurm, "ci", **size) as cluster, Client(cluster) as client:
        assert "--mem=" in cluster.job_script() and "RAYON_NUM_THREADS=1" in cluster.job_script()
        losses = type("Losses", (_Losses, SchedulerPlugin), {})()
        cluster.scheduler.add_plugin(losses)
        cluster.scale(jobs=JOBS)
        client.wait_for_workers(JOBS, timeout=120)
        # Three Slurm jobs, three workers.
        assert len([ln for ln in _squeue() if "RUNNING" in ln]) == JOBS
        # Each worker's process id now, so that the kill follows the look
        # at what a worker runs within a millisecond.
        pids = client.run(os.getpid)

        got: dict = {}

        def run():
            try:
                got["df"] = numasim.sweep(BOOT, GRID, client=client, batch_size=2, queue_timeout=120)
            except BaseException as e:  # noqa: BLE001 - reported below
                got["error"] = e

        t = threading.Thread(target=run)
        t.start()
        victim, running = None, set()
        deadline = time.monotonic() + 60
        while victim is None and time.monotonic() < deadline and t.is_alive():
            for w, keys in client.processing().items():
                if keys:
                    victim, running = w, set(keys)
                    break
            else:
                time.sleep(0.02)
        assert victim is not None, "no worker ever ran a task"
        os.kill(pids[victim], signal.SIGKILL)
        t.join(timeout=300)
        assert not t.is_alive(), "the sweep did not finish after a worker was killed"
        assert "error" not in got, got.get("error")
        # The worker is gone, the tasks it was running were run again, and
        # every case came back once, in grid order.
        assert victim in losses.removed
        assert running & losses.taken_back, (running, losses.taken_back)
        pd.testing.assert_frame_equal(serial, got["df"])
    assert _until(lambda: not _squeue(), 30), _squeue()
    # The size job_size measured sufficed: no worker paused for memory
    # (Dask pauses one at 80% of its limit and would stall its batches).
    logs = list((slurm / "jobs").glob("*.err"))
    assert len(logs) == JOBS
    assert not [f.name for f in logs if "Pausing worker" in f.read_text()]


def test_jobs_that_never_start_time_out_naming_partition_and_request(slurm):
    from dask.distributed import Client

    with _cluster(slurm, "closed", cores=1, memory="1GiB") as cluster, Client(cluster) as client:
        cluster.scale(jobs=1)
        t0 = time.monotonic()
        with pytest.raises(numasim.QueueTimeout) as e:
            numasim.sweep(BOOT, {"machine.nodes": [16, 32]}, client=client, queue_timeout=6)
        assert time.monotonic() - t0 < 60
    msg = str(e.value)
    print(msg)  # docs/python.md quotes it
    assert "partition `closed`" in msg
    assert "PartitionDown" in msg  # squeue's reason
    assert "--mem=" in msg and "-t 00:10:00" in msg and "--cpus-per-task=1" in msg


def test_command_line_slurm_sweep_prints_the_local_records(slurm):
    scenario = slurm / "boot.toml"
    scenario.write_text(BOOT_TOML)
    args = [sys.executable, "-m", "numasim", "sweep", str(scenario),
            "--grid", "machine.nodes=16,64,256", "--grid", "kernel.hashdist=0,1"]
    here = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert here.returncode == 0, here.stderr
    there = subprocess.run(
        args + ["--slurm", "--partition", "ci", "--jobs", "2", "--cores", "1",
                "--walltime", "00:10:00", "--log-directory", str(slurm / "jobs"),
                "--interface", "lo", "--batch-size", "1", "--queue-timeout", "120"],
        capture_output=True, text=True, timeout=300,
    )
    assert there.returncode == 0, there.stderr
    # The job's request, its memory measured on the grid's largest case.
    assert "#SBATCH -p ci" in there.stderr and "#SBATCH --mem=" in there.stderr
    assert here.stdout == there.stdout and here.stdout.count("\n") > 4
