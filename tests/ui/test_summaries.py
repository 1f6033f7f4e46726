"""The guard comparison table: its vectorised counts equal a plain count over every replay,
read from a batch run's columns or from the replays themselves, with and without labels."""

from __future__ import annotations

import random
import statistics

import pytest
from tests.conftest import SAMPLES

from loopscope.engines import engine_names, get_engine
from loopscope.formats import load_paths
from loopscope.labels import Label
from loopscope.ui.summaries import guard_rows

SESSIONS = load_paths([SAMPLES]).sessions


def _plain_row(replays: list, labels: dict[str, Label]) -> tuple:  # type: ignore[type-arg]
    """The row's numbers counted one replay at a time, the obvious way."""
    firsts = [r.first_refusal for r in replays]
    turns = [f.turn + 1 for f in firsts if f is not None]
    caught = good_refused = 0
    for s, r in zip(SESSIONS, replays, strict=True):
        label = labels.get(s.source)
        if label is None or r.first_refusal is None:
            continue
        if label.label == "ok":
            good_refused += 1
        elif r.first_refusal.turn >= (label.from_turn or 0):
            caught += 1
    return (len(replays), len(turns), sum(r.warned for r in replays),
            statistics.median(turns) if turns else None, min(turns) if turns else None,
            caught, good_refused)


@pytest.mark.parametrize("seed", range(6))
def test_guard_rows_equal_a_plain_count(seed: int) -> None:
    rng = random.Random(seed)
    labels = {s.source: (Label(s.source, "loop", rng.choice([None, 0, 1, 3]))
                         if rng.random() < 0.5 else Label(s.source, "ok"))
              for s in SESSIONS if rng.random() < 0.6}
    sources = [s.source for s in SESSIONS]
    turns = [len(s.turns) for s in SESSIONS]
    for name in engine_names():
        engine = get_engine(name)
        config = engine.default_config()
        prepared = [engine.prepare(s) for s in SESSIONS]
        replays = [engine.run(p, config) for p in prepared]
        expected = _plain_row(replays, labels)
        for given in (replays, engine.run_many(prepared, config)):
            (row,) = guard_rows({name: given}, labels, sources, turns)
            assert (row.sessions, row.refused, row.warned, row.median_turn, row.earliest_turn,
                    row.loops_caught, row.good_refused) == expected, (name, type(given))
            assert row.loops_labelled == sum(v.label == "loop" for v in labels.values())
            assert row.good_labelled == sum(v.label == "ok" for v in labels.values())
    assert any(_plain_row([get_engine(n).run(get_engine(n).prepare(s), get_engine(n)
               .default_config()) for s in SESSIONS], labels)[1] for n in engine_names())
