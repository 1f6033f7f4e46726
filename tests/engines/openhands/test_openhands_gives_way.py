"""OpenHands' batch run over a corpus runs the sessions that nudge one by one in Python —
seconds on a large corpus, which the dashboard runs as idle work: it gives way between
sessions (:mod:`loopscope.background`), and gives the same verdicts with a host's hook as
without."""

from __future__ import annotations

from pathlib import Path

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
