"""The Python package against the Rust library it wraps: the same scenario
in every form gives the same records, overrides act, sweeps are the same
whatever runs them, and bad input is a numasim.InputError, never a crash."""

from __future__ import annotations

import pickle
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import numasim
from _scenarios import BOOT

REPO = Path(__file__).resolve().parents[3]
EPYC = REPO / "examples" / "epyc-touch.toml"


def test_replay_carries_published_values_with_roles():
    df = numasim.replay("hashdist-boot")
    assert list(df.columns[:1]) == ["experiment"]
    assert list(df.columns[-8:]) == [
        "metric", "unit", "value", "paper", "role", "comparable", "paper_bound", "paper_high"
    ]
    assert {"kernel.hashdist", "node"} <= set(df.columns)
    published = df[df.paper.notna()]
    assert len(published) > 0
    assert set(published.role) <= {"calibration", "validation", "input"}
    assert df[df.paper.isna()].role.isna().all()
    assert df.comparable.all()
    # No hashdist-boot row is a bound; unpublished rows have none.
    assert (published.paper_bound == "at").all()
    assert df[df.paper.isna()].paper_bound.isna().all()
    assert df.paper_high.isna().all()


def test_a_published_range_carries_its_high_end():
    # altix-toss's "10s of seconds" is the range [10, 100].
    df = numasim.replay("altix-toss")
    row = df[df.paper.notna()].iloc[0]
    assert row.paper_bound == "range"
    assert (row.paper, row.paper_high) == (10.0, 100.0)
    assert row.paper <= row.value <= row.paper_high


def test_path_text_and_dict_give_the_same_records():
    by_path = numasim.run(EPYC)
    by_str_path = numasim.run(str(EPYC))
    text = EPYC.read_text()
    by_text = numasim.run(text)
    by_dict = numasim.run(tomllib.loads(text))
    assert len(by_path) > 0
    pd.testing.assert_frame_equal(by_path, by_str_path)
    pd.testing.assert_frame_equal(by_path, by_text)
    pd.testing.assert_frame_equal(by_path, by_dict)


def test_set_changes_the_machine_and_marks_published_values_incomparable():
    base = numasim.replay("hashdist-boot")
    changed = numasim.replay("hashdist-boot", set={"kernel.thash_entries": 65536})
    assert not changed.comparable.any()
    ehash = lambda df: df[df.metric == "tcp_ehash_bytes"].value.tolist()  # noqa: E731
    assert len(set(ehash(changed))) == 1 and ehash(changed) != ehash(base)
    # A seed is only a draw: published values stay comparable.
    assert numasim.replay("hashdist-boot", set={"seed": 2}).comparable.all()


def test_machine_dict_round_trips_as_a_scenario_machine():
    m = numasim.machine("altix-512")
    row = numasim.machines().set_index("name").loc["altix-512"]
    assert m["nodes"] == row.nodes
    inline = numasim.run({**BOOT, "machine": m})
    preset = numasim.run(BOOT)
    pd.testing.assert_frame_equal(inline, preset)


def test_experiments_lists_replayable_ids():
    ex = numasim.experiments()
    assert "hashdist-boot" in set(ex.id)
    assert ex.description.str.len().gt(0).all()


def test_serial_sweep_is_the_runs_it_names():
    grid = {"machine.nodes": [4, 16], "kernel.hashdist": [0, 1]}
    df = numasim.sweep(BOOT, grid)
    assert list(df.columns[1:3]) == ["machine.nodes", "kernel.hashdist"]
    for nodes in grid["machine.nodes"]:
        for hd in grid["kernel.hashdist"]:
            one = numasim.run(BOOT, set={"machine.nodes": nodes, "kernel.hashdist": hd})
            part = df[(df["machine.nodes"] == nodes) & (df["kernel.hashdist"] == hd)]
            assert list(part.value) == list(one.value)
    # hashdist moves the tables off node 0: the knob reaches the model.
    used0 = df[(df.metric == "mem_used_kb") & (df.node == 0) & (df["machine.nodes"] == 16)]
    assert used0[used0["kernel.hashdist"] == 0].value.iloc[0] > used0[used0["kernel.hashdist"] == 1].value.iloc[0]


# --- bad input -------------------------------------------------------------


def test_unknown_key_names_file_key_and_what_is_allowed():
    with pytest.raises(numasim.InputError) as e:
        numasim.run(EPYC, set={"kernel.hashdsit": 1})
    err = e.value
    assert err.file == str(EPYC)
    assert err.key == "kernel.hashdsit"
    assert "hashdist" in err.allowed
    assert isinstance(err, ValueError)


def test_bad_value_in_a_dict_scenario():
    with pytest.raises(numasim.InputError) as e:
        numasim.run({**BOOT, "machine": {"preset": "altix-512", "nodes": "many"}})
    assert e.value.file == "<dict>"
    assert e.value.key == "machine.nodes"
    assert "whole number" in e.value.allowed


def test_unknown_experiment_machine_and_file():
    with pytest.raises(numasim.InputError, match="Did you mean `hashdist-boot`"):
        numasim.replay("hashdist-bot")
    with pytest.raises(numasim.InputError) as e:
        numasim.machine("altx-512")
    assert e.value.key == "machine.preset" and "altix-512" in e.value.allowed
    with pytest.raises(numasim.InputError):
        numasim.run("no/such/scenario.toml")
    with pytest.raises(numasim.InputError, match="not valid TOML"):
        numasim.run("name = \n")
    with pytest.raises(numasim.InputError):
        numasim.run(BOOT, set={"kernel.hashdist": None})


def test_bad_grid():
    with pytest.raises(numasim.InputError):
        numasim.sweep(BOOT, {"machine.nodes": 4})
    with pytest.raises(numasim.InputError) as e:
        numasim.sweep(BOOT, {"kernel.hashdits": [0, 1]})
    assert e.value.key == "kernel.hashdits"


def test_input_error_survives_pickling():
    # Errors raised on a Dask worker come back pickled.
    try:
        numasim.replay("hashdist-boot", set={"kernel.hashdsit": 1})
    except numasim.InputError as err:
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is numasim.InputError
        assert (again.file, again.key, again.allowed) == (err.file, err.key, err.allowed)
    else:
        pytest.fail("no error")


# --- Dask ------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None, processes=True
    ) as cluster, distributed.Client(cluster) as c:
        yield c


GRID = {"machine.nodes": list(range(2, 102)), "kernel.hashdist": [0, 1]}  # 200 cases


def test_local_cluster_sweep_equals_serial(client):
    serial = numasim.sweep(BOOT, GRID)
    assert serial[["machine.nodes", "kernel.hashdist"]].drop_duplicates().shape[0] == 200
    spread = numasim.sweep(BOOT, GRID, client=client)
    pd.testing.assert_frame_equal(serial, spread)
    # Small batches: many tasks on both workers, gathered back in grid order.
    small = numasim.sweep(BOOT, GRID, client=client, batch_size=7)
    pd.testing.assert_frame_equal(serial, small)


def test_bad_input_with_a_client_is_an_input_error(client):
    with pytest.raises(numasim.InputError) as e:
        numasim.sweep(BOOT, {"machine.nodes": [4, 0]}, client=client, batch_size=1)
    assert e.value.key == "machine.nodes"
