"""The smallest verified setting change, for any engine (``loopscope.advice``), on the cases the
engines' own rules make clear; and the side effects of a change over a corpus."""

from __future__ import annotations

from typing import Any

from loopscope.advice import corpus_effect, describe_outcome, smallest_changes
from loopscope.engines import FirstRefusal, get_engine
from tests.engines.gglib._gglib_helpers import DEF, A, P, T, U
from tests.engines.openclaw.test_openclaw_replay import S

GGLIB = get_engine("gglib")
OPENCLAW = get_engine("openclaw")
WF = "write_file"


def looping(n: int) -> list[Any]:
    return [A(WF, '{"path":"src/main.rs"}', "c1"), T("c1", "1 file changed")] * n


def moving(n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(n):
        out += [A(WF, id=f"w{i}"), T(f"w{i}", f"{i} changed")]
    return out


def gglib(messages: list[Any], goal: str = "pass", turn: int | None = None,
          **values: Any) -> list[Any]:
    prepared = GGLIB.prepare_messages(messages)
    config = GGLIB.config(values).config if values else DEF
    target = None
    if turn is not None:
        target = next(s for s in GGLIB.run(prepared, config).steps if s.turn == turn)
    return smallest_changes(GGLIB, prepared, config, target, goal)  # type: ignore[arg-type]


def by_setting(changes: list[Any]) -> dict[str, Any]:
    return {c.setting: c for c in changes if len(c.changes) == 1}


def test_a_strike_is_let_through_by_one_more_repeat() -> None:
    changes = gglib(looping(3))
    first = changes[0]
    assert first.changes == (("max_repeated_batch_steps", 2, 3),)
    assert first.first_refusal is None and first.effect == "the session is never refused"
    assert first.set_args(GGLIB.settings) == ["max_repeated_batch_steps=3"]
    assert "Repeats allowed for tools that change things" in first.description
    reclass = [c for c in changes if c.setting == "observation_tools"]
    assert reclass and WF in reclass[0].to_value  # the engine's own candidate, verified


def test_a_ceiling_trip_needs_the_ceiling_raised() -> None:
    changes = by_setting(gglib(moving(16)))
    assert changes["max_repeated_batch_steps"].to_value == 16
    assert changes["max_observation_steps"].to_value == 16


def test_stagnation() -> None:
    changes = gglib([P("a"), P("b")] * 6)
    assert changes[0].changes == (("max_stagnation_steps", 5, 6),)


def test_a_change_that_only_moves_the_refusal_says_so() -> None:
    changes = gglib([*looping(3), U("x"), *looping(4)])
    first = changes[0]
    assert first.changes == (("max_repeated_batch_steps", 2, 3),)
    assert first.first_refusal is not None and first.first_refusal.turn == 6
    assert first.effect.startswith("the session is first refused later")


def test_nothing_to_change_on_a_pass() -> None:
    assert gglib(looping(2)) == []


def test_catching_a_missed_loop_lowers_a_threshold() -> None:
    msgs = [A("read_file", '{"path":"a.rs"}', f"c{i}") for i in range(5)]
    changes = gglib(msgs, "refuse", turn=4)
    found = by_setting(changes)
    assert found["max_observation_steps"].to_value == 4
    assert found["max_observation_steps"].first_refusal.turn == 4
    assert "max_repeated_batch_steps" not in found  # an exempt read-only batch
    prose = gglib([P("x")] * 3, "refuse", turn=2)
    assert prose[0].changes == (("max_stagnation_steps", 5, 2),)


def test_every_change_is_verified_and_minimal_on_openclaw() -> None:
    s = S().user()
    for _ in range(25):
        s.call("read", {"path": "/a"}, "same")
    session = s.build()
    prepared = OPENCLAW.prepare(session)
    config = OPENCLAW.default_config()
    refused = next(st for st in OPENCLAW.run(prepared, config).steps if st.verdict == "refuse")
    changes = smallest_changes(OPENCLAW, prepared, config)
    found = by_setting(changes)
    assert found["criticalThreshold"].to_value == 21
    assert found["detectors.genericRepeat"].to_value is False
    for change in changes:  # each lets the step through; one value nearer does not
        rerun = OPENCLAW.replay(session, change.config)
        assert rerun.steps[refused.call].verdict != "refuse"
    below = OPENCLAW.config({**OPENCLAW.values(config), "criticalThreshold": 20}).config
    assert OPENCLAW.replay(session, below).steps[refused.call].verdict == "refuse"


def test_the_post_compaction_guard_has_two_levers() -> None:
    s = S().user().compaction()
    for _ in range(3):
        s.call("gateway", {"action": "lookup"}, "same")
    prepared = OPENCLAW.prepare(s.build())
    changes = smallest_changes(OPENCLAW, prepared, OPENCLAW.default_config())
    assert [c.changes for c in changes] == [(("postCompactionGuard.windowSize", 3, 4),),
                                            (("enabled", True, False),)]


def test_a_warning_is_silenced_by_raising_the_warning_level() -> None:
    s = S().user()
    for i in range(12):
        s.call("read", {"path": "/a"}, f"v{i}")
    prepared = OPENCLAW.prepare(s.build())
    config = OPENCLAW.default_config()
    warn = next(st for st in OPENCLAW.run(prepared, config).steps if st.verdict == "warn")
    changes = by_setting(smallest_changes(OPENCLAW, prepared, config, warn))
    assert {"warningThreshold", "detectors.genericRepeat"} <= set(changes)
    assert changes["warningThreshold"].to_value == (warn.count or 0) + 1


def test_outcomes_and_side_effects_in_words() -> None:
    a, b = FirstRefusal(2, 4, "loop"), FirstRefusal(3, 6, "loop")
    assert describe_outcome(None, a) == "the session is never refused"
    assert describe_outcome(b, a) == "the session is first refused later, at call 7 (turn 4)"
    assert describe_outcome(a, b).startswith("the session is first refused earlier")
    # A turn-level step (no call) after a call-level one is later when its turn is later.
    assert "later" in describe_outcome(FirstRefusal(7, None, "x"), FirstRefusal(6, 5, "x"))
    effect = corpus_effect([a, None, b, None], [None, a, b, FirstRefusal(0, 0, "x")],
                           ["loop", "ok", None, "loop"])
    assert effect.no_longer_refused == (0,) and effect.loops_no_longer_caught == (0,)
    assert effect.newly_refused == (1, 3) and effect.good_newly_refused == (1,)
    assert effect.loops_newly_caught == (3,)
    assert effect.summary() == ("2 newly refused · 1 no longer refused · 1 labelled loop no "
                                "longer caught · 1 good session newly refused · 1 labelled loop "
                                "newly caught")
