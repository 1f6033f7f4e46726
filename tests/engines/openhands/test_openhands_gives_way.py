"""OpenHands' batch run over a corpus runs the sessions that nudge one by one in Python —
seconds on a large corpus, which the dashboard runs as idle work: it gives way between
sessions (:mod:`loopscope.background`), gives the same verdicts with a host's hook as without,
and a run made in the middle of another (at its give-way point) changes nothing it finds."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from loopscope import background
from loopscope.engines import get_engine
from loopscope.formats import load_paths

ENGINE = get_engine("openhands")


@pytest.fixture(scope="module")
def new_table(reference_dir: Path) -> Callable[[], Any]:
    """A fresh prepared table of the public OpenHands parity set (sessions that nudge)."""
    folder = reference_dir / "parity" / "openhands" / "sessions"
    if not folder.is_dir():
        pytest.skip(f"parity set not found at {folder}")
    prepared = [ENGINE.prepare(s) for s in load_paths([str(folder)]).sessions]
    spec = ENGINE.table_spec(None)
    assert spec is not None
    return lambda: spec.open(dict(spec.encode(prepared)))


@pytest.fixture()
def hook() -> Iterator[Callable[[Callable[[], None]], None]]:
    """Installs a give-way hook for the test, and the previous one back after it."""
    previous = background._hook
    yield background.set_give_way
    background.set_give_way(previous)


def _same_verdicts(a: Any, b: Any) -> bool:
    n = len(a.refusal_counts)
    return (np.array_equal(a.refusal_counts, b.refusal_counts)
            and np.array_equal(a.warning_counts, b.warning_counts)
            and [a.first_refusal(i) for i in range(n)] == [b.first_refusal(i) for i in range(n)])


def test_the_batch_run_gives_way_between_the_sessions_it_runs_one_by_one(
        new_table: Callable[[], Any], hook: Callable[[Callable[[], None]], None]) -> None:
    config = ENGINE.default_config()
    alone = ENGINE.run_many(new_table(), config)
    calls: list[int] = []
    hook(lambda: calls.append(1))
    with_hook = ENGINE.run_many(new_table(), config)
    assert calls  # (the set has sessions that nudge)
    assert _same_verdicts(alone, with_hook)


def test_a_run_between_the_sessions_of_another_leaves_its_verdicts_alone(
        new_table: Callable[[], Any], hook: Callable[[Callable[[], None]], None]) -> None:
    """The idle warm-up and a person's slider move (or two browser tabs) re-run the same
    table, sharing the sessions' views."""
    mine = ENGINE.resolve_config(None, [("action_error", "1")]).config
    other = ENGINE.resolve_config(
        None, [("action_observation", "2"), ("action_error", "2")]).config
    alone = ENGINE.run_many(new_table(), mine)
    shared = new_table()
    ENGINE.run_many(shared, mine)  # (every view either run reads is made: the runs only read)
    ENGINE.run_many(shared, other)
    between: list[Any] = []

    def another_run() -> None:
        if not between:  # (once: the other run's own give-way points come back here)
            between.append(None)
            between[0] = ENGINE.run_many(shared, other)

    hook(another_run)
    interrupted = ENGINE.run_many(shared, mine)
    assert between and between[0] is not None  # (the other run did run in the middle)
    assert _same_verdicts(interrupted, alone)
