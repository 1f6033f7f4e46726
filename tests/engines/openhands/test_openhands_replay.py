"""The rules, one test each: the worked examples, the event log a session becomes, argument
parsing, the window, the nudge and its memory, and the step output. Every test runs the plain
replay and the fast path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.engines.openhands._openhands_helpers import chat, verdicts

from loopscope.engines.base import SessionReplay
from loopscope.engines.openhands import ENGINE, OpenHandsConfig, parse_tool_call_arguments
from loopscope.engines.openhands.events import (
    CORRECTIVE_MESSAGE,
    ActionEvent,
    AgentErrorEvent,
    Condensation,
    MessageEvent,
    ObservationEvent,
    build_items,
    event_eq,
    sanitize_json_control_chars,
)
from loopscope.engines.openhands.upstream import nudge_text
from loopscope.model import Session


def replay(session: Session, **values: Any) -> SessionReplay:
    config = ENGINE.config(values).config
    plain = ENGINE.replay(session, config)
    fast = ENGINE.run(ENGINE.prepare(session), config)
    assert fast.to_json() == plain.to_json()
    assert fast == plain
    return plain


READ = ("read", '{"path":"a"}', "same")

# --------------------------------------------------------------------------- worked examples


def test_example_1_identical_call_and_result() -> None:
    r = replay(chat(*[[READ]] * 6))
    assert verdicts(r)[:4] == [("pass", None, None)] * 3 + [("refuse", "action_observation", 4)]
    assert [s.after_divergence for s in r.steps] == [False] * 4 + [True] * 2
    assert all(s.verdict == "refuse" for s in r.steps[4:])
    assert r.first_refusal is not None and r.first_refusal.to_json() == {
        "turn": 3, "call": 3, "detector": "action_observation"}


def test_example_2_failing_call_with_changing_errors() -> None:
    r = replay(chat(*[[("exec", '{"cmd":"x"}', ("error", f"err {k}"))] for k in range(7)]))
    assert verdicts(r) == [("pass", None, None)] * 2 + [
        ("warn", "action_error", 3), ("refuse", "action_error", 4),
        ("refuse", "action_error", 4), ("refuse", "action_error", 4),
        ("refuse", "action_error", 4)]
    warn = r.steps[2]
    assert warn.extra["message"] == nudge_text("exec", 3, "err 2")
    assert warn.extra["message"] == (
        "You've called `exec` with the same arguments 3 times in a row and gotten the same "
        "error each time: err 2. Repeating the exact same call again will not work — review "
        "the error message and either correct the arguments or try a different approach.")
    # The nudge takes a place in the window: user + 3 × (call, error) + the nudge.
    assert [s.extra["scan"] for s in r.steps[:4]] == [2, 4, 7, 9]
    assert not r.steps[2].after_divergence and not r.steps[3].after_divergence


def test_example_3_failing_call_with_the_same_error() -> None:
    r = replay(chat(*[[("exec", '{"cmd":"x"}', ("error", "Permission denied"))]] * 5))
    assert verdicts(r)[:4] == [("pass", None, None)] * 2 + [
        ("warn", "action_error", 3), ("refuse", "action_observation", 4)]


def test_example_4_monologue() -> None:
    r = replay(chat("Let me think.", "Still thinking.", "Hmm.", "Maybe.", "Well."))
    assert verdicts(r) == [("pass", None, None)] * 2 + [
        ("refuse", "monologue", 3), ("refuse", "monologue", 4), ("refuse", "monologue", 5)]
    assert [s.call for s in r.steps] == [None] * 5 and all(s.tools == () for s in r.steps)


def test_example_5_alternating() -> None:
    a = ("a", '{"x":1}', "one")
    b = ("b", '{"y":2}', "two")
    r = replay(chat(*[[a] if k % 2 == 0 else [b] for k in range(8)]))
    assert verdicts(r)[:6] == [("pass", None, None)] * 5 + [("refuse", "alternating_pattern", 6)]


def test_example_6_malformed_arguments() -> None:
    r = replay(chat(*[[("edit", '{"path": "a.py", ', "never used")]] * 5))
    assert verdicts(r)[:4] == [("pass", None, None)] * 2 + [
        ("warn", "action_error", 3), ("refuse", "action_observation", 4)]
    assert r.steps[2].extra["message"] == nudge_text(
        "edit", 3, "Error validating tool 'edit': Expecting property name enclosed in double "
                   "quotes: line 1 column 18 (char 17). Arguments: unparseable JSON")


# --------------------------------------------------------------------------- the event log


def _log(session: Session) -> list[Any]:
    return [item for item in build_items(session) if not hasattr(item, "turn")]


def test_log_of_a_turn_calls_then_results_in_call_order() -> None:
    from loopscope.formats.builder import SessionBuilder

    b = SessionBuilder()
    b.user("go")
    turn = b.assistant("Reading both.", "Reading both.")
    b.call(turn, "read", '{"p": 1}', "json_text", id="c1")
    b.call(turn, "bad", "{", "json_text", id="c2")
    b.call(turn, "grep", '{"q": 2}', "json_text", id="c3")
    b.result("c3", "found", "found", is_error=True)
    b.result("c2", "ignored", "ignored")
    b.result("c1", "one", "one")
    log = _log(b.build(id="s", source="s.json", format="openai_chat"))
    assert [type(e) for e in log] == [MessageEvent, ActionEvent, ActionEvent, AgentErrorEvent,
                                      ActionEvent, ObservationEvent, AgentErrorEvent]
    assert log[1].thought == ("Reading both.",) and log[2].thought == () == log[4].thought
    assert log[2].action is None and log[3].error.startswith("Error validating tool 'bad': ")
    assert (log[5].tool_name, log[5].text) == ("read", "one")
    assert (log[6].tool_name, log[6].error) == ("grep", "found")


def test_log_of_replies_and_compactions() -> None:
    log = _log(chat("Done.", " ", ("compaction",), ""))
    assert [(type(e).__name__, getattr(e, "source", None)) for e in log] == [
        ("MessageEvent", "user"), ("MessageEvent", "agent"), ("MessageEvent", "agent"),
        ("MessageEvent", "environment"), ("Condensation", None), ("MessageEvent", "agent"),
        ("MessageEvent", "environment")]
    assert log[3].text == CORRECTIVE_MESSAGE
    assert isinstance(log[4], Condensation)


def test_results_must_follow_their_turn() -> None:
    """Only the contiguous results right after a turn are its results; a call without an id
    has none."""
    from loopscope.formats.builder import SessionBuilder

    b = SessionBuilder()
    b.user("go")
    turn = b.assistant("", "")
    b.call(turn, "read", "{}", "json_text", id="c1")
    b.call(turn, "read", "{}", "json_text")
    b.assistant("in between", "in between")
    b.result("c1", "late", "late")
    log = _log(b.build(id="s", source="s.json", format="openai_chat"))
    assert [type(e) for e in log] == [MessageEvent, ActionEvent, ActionEvent, MessageEvent]


def test_thought_is_on_the_first_call_only() -> None:
    pair = [("read", '{"p": 1}', "x"), ("read", '{"p": 1}', "x")]
    # Without text the four actions are equal; with text the first of each turn differs.
    assert replay(chat(pair, pair)).steps[1].verdict == "refuse"
    assert replay(chat(pair, pair, thought="Checking.")).steps[1].verdict == "pass"


def test_arguments_equal_under_python_equality() -> None:
    variants = ['{"n": 1}', '{"n": 1.0}', '{"n": true, "x": null}', {"n": 1}]
    r = replay(chat(*[[("t", v, "same")] for v in variants]))
    assert r.steps[3].verdict == "refuse" and r.steps[3].detector == "action_observation"
    different = ['{"n": 1}', '{"n": 1.0}', '{"n": true}', '{"n": "1"}']
    assert replay(chat(*[[("t", v, "same")] for v in different])).first_refusal is None


def test_errors_compare_by_text_only() -> None:
    assert event_eq(AgentErrorEvent("boom", "a"), AgentErrorEvent("boom", "b"))
    assert not event_eq(ObservationEvent("a", "boom"), ObservationEvent("b", "boom"))
    assert not event_eq(ObservationEvent("a", "boom"), AgentErrorEvent("boom", "a"))
    assert event_eq(ActionEvent((), {"a": [1, {"b": 2}]}, "t"),
                    ActionEvent((), {"a": [1.0, {"b": True + 1}]}, "t"))


# --------------------------------------------------------------------------- argument parsing


@pytest.mark.parametrize(("text", "parsed"), [
    ('{"a": 1, "b": null}', {"a": 1}),
    ('{"a": {"b": null}}', {"a": {"b": None}}),
    ("[1, 2]", {}), ('"text"', {}), ("null", {}), ("3", {}),
    ('{"a": 1, "a": 2}', {"a": 2}),
    ('{"security_rort": "LOW", "x": 1}', {"x": 1, "security_risk": "LOW"}),
    ('{"security_risk": "HIGH", "security_riks": "LOW"}', {"security_risk": "LOW"}),
    # Only the first typo found is renamed (upstream's order varies between processes).
    ('{"securtiy_risk": 2, "security_rort": 1}', {"securtiy_risk": 2, "security_risk": 1}),
    ('{"p": "a\nb\tc\x01"}', {"p": "a\nb\tc\x01"}),
    ('{"n": 12345678901234567890123}', {"n": 12345678901234567890123}),
])
def test_parse_tool_call_arguments(text: str, parsed: dict[str, Any]) -> None:
    assert parse_tool_call_arguments(text) == parsed


def test_control_characters_are_escaped_on_the_retry_only() -> None:
    assert sanitize_json_control_chars("a\x00\x08\t\n\x0b\x0c\r\x1f") == (
        "a\\u0000\\b\\t\\n\\u000b\\f\\r\\u001f")
    raw = '{"p": "x\ny"}'
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    assert parse_tool_call_arguments(raw) == {"p": "x\ny"}
    # A structural control character outside a string is valid JSON whitespace already.
    assert parse_tool_call_arguments('{\n"p": 1}') == {"p": 1}


def test_unparseable_arguments_keep_the_second_error() -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        parse_tool_call_arguments("")
    assert str(caught.value) == "Expecting value: line 1 column 1 (char 0)"
    log = _log(chat([("x", "{\x01", None)]))
    # The retry escaped the control character, so the error is the retry's (column 2).
    assert log[2].error == ("Error validating tool 'x': Expecting property name enclosed in "
                            "double quotes: line 1 column 2 (char 1). Arguments: unparseable "
                            "JSON")


def test_recorded_values_are_json_encoded_first() -> None:
    log = _log(chat([("x", None, "r")], [("x", {"k": [1, None]}, "r")]))
    assert log[1].action == {} and log[3].action == {"k": [1, None]}


# --------------------------------------------------------------------------- the window


def test_a_user_message_starts_afresh() -> None:
    r = replay(chat([READ], [READ], [READ], ("user", "again"), [READ], [READ], [READ]))
    assert r.first_refusal is None
    assert [s.extra["scan"] for s in r.steps] == [2, 4, 6, 2, 4, 6]
    assert replay(chat([READ], [READ], [READ], [READ])).first_refusal is not None


def test_twenty_events_and_monologues_above_twenty() -> None:
    replies = [f"reply {k}" for k in range(25)]
    r = replay(chat(*replies), monologue=20)
    assert r.first_refusal is not None and r.first_refusal.turn == 19
    assert r.steps[19].count == 20 and r.steps[24].count == 20
    assert max(s.extra["scan"] for s in r.steps) == 20
    assert replay(chat(*replies), monologue=21).first_refusal is None
    # A what-if window of 30 lets 21 fire.
    wider = replay(chat(*replies), monologue=21, MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION=30)
    assert wider.first_refusal is not None and wider.first_refusal.turn == 20


def test_action_observation_above_ten_never_fires() -> None:
    session = chat(*[[READ]] * 30)
    # (Identical pairs also repeat with period 2: the alternating pattern is raised too.)
    assert replay(session, action_observation=10, alternating_pattern=11).first_refusal
    assert replay(session, action_observation=11, alternating_pattern=11).first_refusal is None
    # With the default alternating_pattern, the identical pairs are caught by it instead.
    assert replay(session, action_observation=11).steps[5].detector == "alternating_pattern"


def test_the_minimum_event_count() -> None:
    """``is_stuck`` needs at least min(action_observation, action_error, monologue) events;
    ``alternating_pattern`` takes no part in that minimum."""
    a, b = ("a", "{}", "1"), ("b", "{}", "2")
    turns = [[a], [b], [a], [b]]
    assert replay(chat(*turns), alternating_pattern=4).steps[3].detector == "alternating_pattern"
    blocked = replay(chat(*turns), alternating_pattern=4, action_observation=9,
                     action_error=9, monologue=9)
    assert blocked.first_refusal is None  # 8 events < 9


def test_alternating_threshold_one_and_two_compare_nothing() -> None:
    session = chat([("a", "{}", "1")], [("b", "{}", "2")])
    r = replay(session, alternating_pattern=1, monologue=1)
    assert verdicts(r) == [("refuse", "alternating_pattern", 1)] * 2
    r = replay(session, alternating_pattern=2)
    assert verdicts(r) == [("pass", None, None), ("refuse", "alternating_pattern", 2)]
    # With the default minimum of 3 events, the first check (2 events) asks nothing.
    r = replay(session, alternating_pattern=1)
    assert verdicts(r) == [("pass", None, None), ("refuse", "alternating_pattern", 1)]


def test_a_compaction_breaks_a_monologue() -> None:
    assert replay(chat("a", "b", ("compaction",), "c", "d")).first_refusal is None
    assert replay(chat("a", "b", "c")).first_refusal is not None


# --------------------------------------------------------------------------- the nudge


def test_a_frozen_streak_is_nudged_once() -> None:
    """After the nudge, a blank reply adds no action: the streak still ends on the error
    already nudged for, so no second nudge; the detector then asks is_stuck (3 is not > 3)."""
    fail = ("exec", '{"cmd":"x"}', ("error", "boom"))
    r = replay(chat([fail], [fail], [fail], "", ""))
    assert verdicts(r) == [("pass", None, None)] * 2 + [("warn", "action_error", 3)] + [
        ("pass", None, None)] * 2


def test_a_new_error_after_a_user_message_is_nudged_again() -> None:
    fail = ("exec", '{"cmd":"x"}', ("error", "boom"))
    r = replay(chat([fail], [fail], [fail], ("user", "try"), [fail], [fail], [fail]))
    assert [s.verdict for s in r.steps] == ["pass", "pass", "warn"] * 2


def test_action_error_one_nudges_at_the_first_failure() -> None:
    fail = ("exec", '{"cmd":"x"}', ("error", "boom"))
    r = replay(chat([fail], [fail], [fail]), action_error=1)
    # The streak is read up to max(action_observation, action_error + 1) = 4 pairs.
    assert verdicts(r) == [("warn", "action_error", 1), ("refuse", "action_error", 2),
                           ("refuse", "action_error", 3)]


def test_the_refusal_count_is_capped_by_the_collection() -> None:
    fail = [[("exec", '{"cmd":"x"}', ("error", f"e{k}"))] for k in range(9)]
    r = replay(chat(*fail), action_observation=6)
    assert [s.count for s in r.steps[3:]] == [4, 5, 6, 6, 6, 6]


# --------------------------------------------------------------------------- output


def test_disabled_passes_everything_without_extra_fields() -> None:
    r = replay(chat(*[[READ]] * 6), enabled=False)
    assert verdicts(r) == [("pass", None, None)] * 6
    assert all(s.to_json().keys() == {"turn", "call", "tools", "signature", "verdict",
                                      "detector", "count", "after_divergence"}
               for s in r.steps)


def test_step_fields() -> None:
    r = replay(chat([READ, ("grep", "{}", "x")], "prose", [READ]))
    assert [(s.turn, s.call, s.tools) for s in r.steps] == [
        (0, 0, ("read", "grep")), (1, None, ()), (2, 2, ("read",))]
    step = r.steps[0].to_json()
    assert step == {"turn": 0, "call": 0, "tools": ["read", "grep"], "signature": None,
                    "verdict": "pass", "detector": None, "count": None,
                    "after_divergence": False, "scan": 4}


def test_a_session_without_turns_has_no_steps() -> None:
    r = replay(chat(("user", "hello")))
    assert r.steps == () and r.first_refusal is None and r.to_json()["steps"] == []


def test_config_defaults_are_openhands_defaults() -> None:
    config = ENGINE.default_config()
    assert config == OpenHandsConfig(True, 4, 3, 3, 6, 20)


def test_an_integer_too_long_to_convert_is_an_argument_error() -> None:
    """``json.loads`` raises a plain ValueError (not a JSONDecodeError) for an integer of more
    than 4,300 digits. OpenHands 1.58.2 crashes on it (``Agent._emit_tool_error`` catches only
    JSONDecodeError); loopscope replays the call as one whose arguments did not parse, as it
    does for nesting too deep, instead of stopping the whole replay."""
    from loopscope.formats.builder import SessionBuilder

    builder = SessionBuilder()
    builder.user("go")
    for k in range(4):
        turn = builder.assistant("", "")
        builder.call(turn, "read", '{"n": ' + "7" * 5000 + "}", "json_text", id=f"c{k}")
        builder.result(f"c{k}", "same", "same")
    session = builder.build(id="huge", source="huge.json", format="openai_chat")
    errors = [e for e in build_items(session) if isinstance(e, AgentErrorEvent)]
    assert len(errors) == 4
    assert "Exceeds the limit (4300 digits)" in errors[0].error
    assert errors[0].error.endswith("Arguments: unparseable JSON")
    result = replay(session)
    assert len(result.steps) == 4
