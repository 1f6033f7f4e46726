"""Compare: A vs B agrees with two plain ``replay`` runs, session by session."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopscope.engines import get_engine
from loopscope.engines.base import FirstRefusal
from loopscope.experiments.compare import classify, compare, compare_replays
from tests.experiments._sessions import fake_replay, make_session
from tests.experiments.test_sweep import AXES, engine_or_skip, sessions_strategy

R2 = FirstRefusal(2, 2, "loop")


@pytest.mark.parametrize(
    ("a", "b", "change"),
    [
        (None, None, "same"),
        (R2, FirstRefusal(2, 2, "loop"), "same"),
        (None, R2, "gained"),
        (R2, None, "lost"),
        (R2, FirstRefusal(4, 4, "loop"), "moved"),
        (R2, FirstRefusal(2, 2, "stagnation"), "moved"),
        (FirstRefusal(2, 5, "generic_repeat"), FirstRefusal(2, 6, "generic_repeat"), "moved"),
    ],
)
def test_classify(a: FirstRefusal | None, b: FirstRefusal | None, change: str) -> None:
    assert classify(a, b) == change


def test_compare_replays_lists_changes_in_corpus_order_and_counts_the_rest() -> None:
    pairs = [
        (fake_replay("s1", None), fake_replay("s1", 3)),
        (fake_replay("s2", 1), fake_replay("s2", 1)),
        (fake_replay("s3", 2), fake_replay("s3", None)),
        (fake_replay("s4", 2), fake_replay("s4", 5)),
        (fake_replay("s5", None), fake_replay("s5", None)),
        (fake_replay("s6", None), fake_replay("s6", 0)),
    ]
    result = compare_replays(pairs)
    assert [(c.source, c.change) for c in result] == [
        ("s1", "gained"), ("s3", "lost"), ("s4", "moved"), ("s6", "gained"),
    ]
    assert result.summary == {"gained": 2, "lost": 1, "moved": 1, "same": 2}
    assert result.changes[0].to_json() == {
        "source": "s1", "a": None, "b": {"turn": 3, "call": 3, "detector": "loop"}, "change": "gained",
    }
    assert result.summary_json() == {"summary": result.summary}


def test_compare_replays_refuses_mismatched_pairs() -> None:
    with pytest.raises(ValueError, match="not the same session"):
        compare_replays([(fake_replay("a", None), fake_replay("b", None))])


def test_raising_the_repeat_limit_loses_or_moves_refusals() -> None:
    loop = make_session("loop.json", [("user", "go")] + [("call", "write_file", {"p": 1}, "ok")] * 4)
    engine = get_engine("gglib")
    a = engine.resolve_config(None, [("max_repeated_batch_steps", "2")]).config
    b = engine.resolve_config(None, [("max_repeated_batch_steps", "3")]).config
    c = engine.resolve_config(None, [("max_repeated_batch_steps", "10")]).config
    moved = compare("gglib", [loop], a, b)
    assert [(x.change, x.a, x.b) for x in moved] == [
        ("moved", engine.replay(loop, a).first_refusal, engine.replay(loop, b).first_refusal)
    ]
    assert moved.changes[0].a is not None and moved.changes[0].b is not None
    assert moved.changes[0].a.turn < moved.changes[0].b.turn
    assert compare("gglib", [loop], a, c).summary == {"gained": 0, "lost": 1, "moved": 0, "same": 0}
    assert compare("gglib", [loop], c, a).summary == {"gained": 1, "lost": 0, "moved": 0, "same": 0}


@pytest.mark.parametrize("engine_name", ["gglib", "openclaw"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compare_agrees_with_two_replays(engine_name: str, data: st.DataObject) -> None:
    engine = engine_or_skip(engine_name)
    sessions = data.draw(sessions_strategy)

    def config() -> object:
        keys = data.draw(st.lists(st.sampled_from(AXES[engine_name]), max_size=3, unique=True))
        pairs = [(k, str(data.draw(st.integers(lo, hi)))) for k, lo, hi in keys]
        return engine.resolve_config(None, pairs).config

    config_a, config_b = config(), config()
    result = compare(engine_name, sessions, config_a, config_b)

    expected = []
    same = 0
    for s in sessions:
        a = engine.replay(s, config_a).first_refusal
        b = engine.replay(s, config_b).first_refusal
        if a == b:
            same += 1
        else:
            expected.append((s.source, a, b))
    assert [(c.source, c.a, c.b) for c in result] == expected
    assert result.same == same
    assert sum(result.summary.values()) == len(sessions)
    for c in result:
        assert c.change == ("gained" if c.a is None else "lost" if c.b is None else "moved")
