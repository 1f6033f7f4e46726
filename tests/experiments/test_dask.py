"""The same sweep on a Dask LocalCluster gives exactly the local answer."""

from __future__ import annotations

import pytest

from loopscope.experiments.sweep import build_cells, parse_axis, run_sweep
from tests.experiments._sessions import Label, make_session

distributed = pytest.importorskip("distributed")

from loopscope.experiments.dask_backend import dask_client, dask_runner  # noqa: E402


def test_dask_local_cluster_matches_the_local_sweep() -> None:
    sessions = [
        make_session("d/loop.json", [("user", "go")] + [("call", "write_file", {"p": 1}, "ok")] * 6),
        make_session("d/poll.json", [("call", "get_terminal_output", {}, "same")] * 20),
        make_session("d/good.json", [("call", "write_file", {"p": 1}, "ok"), ("call", "run_tests", {}, "fail")] * 3),
        make_session("d/prose.json", [("say", "thinking")] * 8),
        make_session("d/mixed.json", [("call", "read_file", {"p": 2}, "x")] * 4 + [("say", "done")]),
    ]
    labels = {
        "d/loop.json": Label("loop", 1),
        "d/poll.json": Label("loop", 3),
        "d/good.json": Label("ok"),
        "d/prose.json": Label("loop"),
    }
    axes = [parse_axis("max_repeated_batch_steps=1:4"), parse_axis("max_observation_steps=2:10:4")]
    cells = build_cells("gglib", axes)
    local = run_sweep("gglib", sessions, cells, labels, axes=axes, workers=1)

    seen: list[int] = []
    with dask_client("local", workers=2, processes=False) as client:
        on_dask = run_sweep(
            "gglib", sessions, cells, labels, axes=axes, workers=2,
            runner=dask_runner(client), progress=seen.append,
        )
    assert on_dask.cells == local.cells
    assert sum(seen) == len(sessions)
    assert len({c.metrics for c in local}) > 1


def test_cluster_workers_counts_the_local_cluster() -> None:
    from loopscope.experiments.dask_backend import cluster_workers

    with dask_client("local", workers=2, processes=False) as client:
        assert cluster_workers(client) == 2


def test_an_unreachable_scheduler_is_a_clear_error() -> None:
    from loopscope.experiments.dask_backend import DaskUnavailable

    with pytest.raises(DaskUnavailable, match=r"tcp://127\.0\.0\.1:9"), dask_client("tcp://127.0.0.1:9", timeout="1s"):
        pass
