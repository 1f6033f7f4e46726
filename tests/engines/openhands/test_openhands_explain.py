"""Explanations a non-engineer can read, the limitations that apply, and the Guide's worked
examples (each replayed: the detector fires where its text says)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.openhands._openhands_helpers import chat

from loopscope.engines.contract import Explainer
from loopscope.engines.openhands import ENGINE
from loopscope.engines.openhands.explain import GUIDE, LIMITATIONS

READ = ("read", '{"path":"a"}', "same")
FAIL = ("exec", '{"cmd":"x"}', ("error", "boom"))


def _replay(session: Any, **values: Any) -> tuple[Any, Any]:
    config = ENGINE.config(values).config
    return ENGINE.run(ENGINE.prepare(session), config), config


def _explain(session: Any, position: int, **values: Any) -> Any:
    replay, config = _replay(session, **values)
    return ENGINE.explainer.explain_step(replay.steps[position], replay, config)


def test_the_explainer_follows_the_contract() -> None:
    assert isinstance(ENGINE.explainer, Explainer)


def test_pass() -> None:
    e = _explain(chat([READ]), 0)
    assert e.headline.startswith("OpenHands would have let the agent go on")
    assert "the last 20 events after the latest user message" in e.headline
    off = _explain(chat([READ]), 0, enabled=False)
    assert "stuck detection is off" in off.headline and off.levers == ("enabled",)


def test_warn_quotes_the_nudge() -> None:
    e = _explain(chat([FAIL], [FAIL], [FAIL]), 2)
    message = ("You've called `exec` with the same arguments 3 times in a row and gotten the "
               "same error each time: boom. Repeating the exact same call again will not work "
               "— review the error message and either correct the arguments or try a different "
               "approach.")
    assert e.headline == ("The agent called `exec` with the same arguments 3 times in a row "
                          "and got an error each time.")
    assert e.guard_action == f"OpenHands would have told the agent: “{message}”"
    assert e.upstream == (("OpenHands' message to the agent", message),)
    assert "exactly 3 times in a row" in e.which_limit
    assert "the last 20 events after the latest user message" in e.which_limit
    assert e.levers[0] == "action_error"


def test_refusals() -> None:
    e = _explain(chat(*[[READ]] * 4), 3)
    assert e.headline == ("The agent made the same call (`read`, same arguments and reasoning) "
                          "4 times in a row and got the same result each time.")
    assert e.guard_action is not None and "stopped the run" in e.guard_action
    assert "4 identical call + result pairs" in e.which_limit
    assert e.levers[0] == "action_observation"

    errors = chat(*[[("exec", '{"cmd":"x"}', ("error", f"e{k}"))] for k in range(4)])
    e = _explain(errors, 3)
    assert "4 times in a row and it failed each time" in e.headline
    assert e.levers[0] == "action_error"

    e = _explain(chat("a", "b", "c"), 2)
    assert e.headline == ("The agent replied 3 times in a row without calling a tool or "
                          "hearing from the user.")
    assert [lim.id for lim in e.limitations] == ["prose_checks"]

    a, b = ("a", "{}", "1"), ("b", "{}", "2")
    e = _explain(chat(*[[a] if k % 2 == 0 else [b] for k in range(6)]), 5)
    assert e.headline.startswith("The agent went back and forth between `b` and `a`")
    assert e.levers[0] == "alternating_pattern"


def test_after_divergence() -> None:
    e = _explain(chat(*[[READ]] * 5), 4)
    assert "already have stopped the run" in e.text
    assert "shadow_mode" in [lim.id for lim in e.limitations]


def test_hypothetical_window_is_said_plainly() -> None:
    e = _explain(chat([READ]), 0, MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION=30)
    assert "the last 30 events after the latest user message" in e.headline
    assert any("hypothetical" in lim.text for lim in e.limitations)


def _limitations(session: Any, **values: Any) -> list[str]:
    replay, config = _replay(session, **values)
    return [lim.id for lim in ENGINE.explainer.limitations(session, replay, config)]


@pytest.mark.parametrize(("session", "values", "expected"), [
    (chat(*[[READ]] * 12), {}, {"window", "mcp_tools", "shadow_mode"}),
    (chat("a", "b", "c", "d"), {}, {"prose_checks", "shadow_mode", "mcp_tools"}),
    (chat([FAIL], [FAIL], [FAIL], [FAIL]), {}, {"same_error_stops_as_repeat"}),
    (chat([("x", "{", None)]), {}, {"malformed"}),
    (chat([("a", "{}", ("error", "E"))], [("b", "{}", ("error", "E"))]), {},
     {"errors_by_text"}),
    (chat([("a", "{}", None)]), {}, {"unpaired"}),
    (chat([READ], ("user", "again"), [READ]), {}, {"user_resets"}),
    (chat([READ], [READ]), {"action_observation": 11}, {"unreachable"}),
    (chat([READ]), {"MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION": 9}, {"hypothetical"}),
])
def test_limitations_that_apply(session: Any, values: dict[str, Any],
                                expected: set[str]) -> None:
    found = _limitations(session, **values)
    assert expected <= set(found), found
    assert found == [key for key in LIMITATIONS if key in found]  # table order


def test_reasoning_text_limitation() -> None:
    session = chat([READ], thought="One.")
    assert "reasoning_counts" not in _limitations(session)
    from loopscope.formats.builder import SessionBuilder

    b = SessionBuilder()
    b.user("go")
    for k, text in enumerate(["Let me read it.", "Reading again."]):
        turn = b.assistant(text, text)
        b.call(turn, "read", '{"path":"a"}', "json_text", id=f"c{k}")
        b.result(f"c{k}", "same", "same")
    assert "reasoning_counts" in _limitations(b.build(id="s", source="s", format="openai_chat"))


def test_no_limitations_on_a_quiet_session() -> None:
    assert _limitations(chat([READ], [("grep", "{}", "x")])) == []


def test_every_limitation_is_plain_words() -> None:
    for key, text in LIMITATIONS.items():
        assert text.endswith(".") and len(text) > 40, key
        assert "_" not in key or key not in text  # ids are never the explanation


@pytest.mark.parametrize("example", GUIDE, ids=[g[0] for g in GUIDE])
def test_guide_examples_fire_where_they_say(example: Any) -> None:
    key, detector, *_rest, values, expected = example
    (guide,) = [g for g in ENGINE.guide_examples() if g.session.id == f"guide-{key}"]
    assert guide.detector == detector
    config = ENGINE.config(values).config
    replay = ENGINE.replay(guide.session, config)
    assert ENGINE.run(ENGINE.prepare(guide.session), config) == replay
    flagged = [(s.turn, s.verdict, s.detector) for s in replay.steps if s.verdict != "pass"]
    assert flagged[:len(expected)] == list(expected)
    first = expected[0][0]
    assert all(s.verdict == "pass" for s in replay.steps[:first])
    # The story counts turns from 1.
    assert f"turn {first + 1}" in guide.story or "sixth call" in guide.story


def test_one_guide_example_per_detector() -> None:
    assert sorted(g.detector for g in ENGINE.guide_examples()) == sorted(
        d.id for d in ENGINE.detectors)
