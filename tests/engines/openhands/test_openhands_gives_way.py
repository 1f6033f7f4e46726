"""OpenHands' batch run over a corpus runs the sessions that nudge one by one in Python —
seconds on a large corpus, which the dashboard runs as idle work: it gives way between
sessions (:mod:`loopscope.background`), and gives the same verdicts with a host's hook as
without."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loopscope import background
from loopscope.engines import get_engine
from loopscope.formats import load_paths


def test_the_batch_run_gives_way_between_the_sessions_it_runs_one_by_one(
        reference_dir: Path) -> None:
    folder = reference_dir / "parity" / "openhands" / "sessions"
    if not folder.is_dir():
        pytest.skip(f"parity set not found at {folder}")
    eng = get_engine("openhands")
    sessions = load_paths([str(folder)]).sessions
    spec = eng.table_spec(None)
    assert spec is not None
    table = spec.open(dict(spec.encode([eng.prepare(s) for s in sessions])))
    calls: list[int] = []
    config = eng.default_config()
    alone = eng.run_many(table, config)
    previous = background._hook
    background.set_give_way(lambda: calls.append(1))
    try:
        with_hook = eng.run_many(
            spec.open(dict(spec.encode([eng.prepare(s) for s in sessions]))), config)
    finally:
        background.set_give_way(previous)
    assert calls  # (the set has sessions that nudge)
    for name in ("refusal_counts", "warning_counts"):
        assert np.array_equal(getattr(alone, name), getattr(with_hook, name))
    assert [alone.first_refusal(i) for i in range(len(sessions))] == [
        with_hook.first_refusal(i) for i in range(len(sessions))]


def _runs_equal(a: Any, b: Any, n: int) -> bool:
    return (np.array_equal(a.refusal_counts, b.refusal_counts)
            and np.array_equal(a.warning_counts, b.warning_counts)
            and [a.first_refusal(i) for i in range(n)] == [b.first_refusal(i) for i in range(n)])


def test_a_run_between_the_sessions_of_another_leaves_its_verdicts_alone(
        reference_dir: Path) -> None:
    """The idle warm-up and a person's slider move (or two browser tabs) re-run the same
    table, sharing the sessions' views: one run in the middle of another (here: at the other's
    give-way point) must not change what the other one finds."""
    folder = reference_dir / "parity" / "openhands" / "sessions"
    if not folder.is_dir():
        pytest.skip(f"parity set not found at {folder}")
    eng = get_engine("openhands")
    sessions = load_paths([str(folder)]).sessions
    spec = eng.table_spec(None)
    assert spec is not None

    def table() -> Any:
        return spec.open(dict(spec.encode([eng.prepare(s) for s in sessions])))

    mine = eng.resolve_config(None, [("action_error", "1")]).config
    other = eng.resolve_config(None, [("action_observation", "2"), ("action_error", "2")]).config
    alone = eng.run_many(table(), mine)
    shared = table()
    eng.run_many(shared, mine)  # (every view either run reads is made: the runs only read them)
    eng.run_many(shared, other)
    between: list[Any] = []

    def another_run() -> None:
        if not between:  # (once: the other run's own give-way points come back here)
            between.append(None)
            between[0] = eng.run_many(shared, other)

    previous = background._hook
    background.set_give_way(another_run)
    try:
        interrupted = eng.run_many(shared, mine)
    finally:
        background.set_give_way(previous)
    assert between and between[0] is not None  # (the other run did run in the middle)
    assert _runs_equal(interrupted, alone, len(sessions))
