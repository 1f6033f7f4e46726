"""Qwen Code's rules on hand-built sessions (no node needed): the always-on guards under the
defaults, the adaptive cap (soft cap, stuck signal, hard backstop) against the explicit one,
the opt-in checks, shadow-mode counting, the batch path equal to per-session runs, the Guide's
examples and the explanations."""

from __future__ import annotations

import json
import random

import pytest
from tests.engines.qwen_code._qwen_gen import CONFIGS, random_session

from loopscope.engines.qwen_code.config import QwenConfig
from loopscope.engines.qwen_code.engine import ENGINE
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Session


def calls_session(calls: list[tuple[str, dict[str, object]]], *, per_turn: int = 1,
                  prompts: int = 1) -> Session:
    """``calls`` in turns of ``per_turn`` calls, repeated over ``prompts`` user messages."""
    b = SessionBuilder()
    n = 0
    for _ in range(prompts):
        b.user("go")
        for start in range(0, len(calls), per_turn):
            turn = b.assistant("")
            for name, args in calls[start:start + per_turn]:
                n += 1
                b.call(turn, name, json.dumps(args), "json_text", id=f"c{n}")
    return b.build(id="hand", source="hand", format="openai_chat")


def refusals(session: Session, config: QwenConfig) -> list[tuple[int | None, str | None]]:
    return [(s.call, s.detector) for s in ENGINE.replay(session, config).steps
            if s.verdict == "refuse"]


def distinct(n: int) -> list[tuple[str, dict[str, object]]]:
    return [("read_file", {"path": f"/f{i}"}) for i in range(n)]


def test_defaults_stop_five_identical_calls_in_a_row() -> None:
    session = calls_session([("read_file", {"path": "/a"})] * 5)
    assert refusals(session, QwenConfig()) == [(4, "consecutive_identical_tool_calls")]
    # Key order does not matter (canonicalizeForHash sorts the keys) …
    session = calls_session([("edit", {"a": 1, "b": 2}), ("edit", {"b": 2, "a": 1})] * 3)
    assert refusals(session, QwenConfig()) == [(4, "consecutive_identical_tool_calls"),
                                               (5, "consecutive_identical_tool_calls")]
    # … and a user message starts again.
    session = calls_session([("read_file", {"path": "/a"})] * 4, prompts=2)
    assert refusals(session, QwenConfig()) == []


def test_adaptive_cap_lets_diverse_calls_run_to_the_backstop() -> None:
    assert refusals(calls_session(distinct(1000), per_turn=50), QwenConfig()) == []
    assert refusals(calls_session(distinct(1001), per_turn=50), QwenConfig()) == [
        (1000, "turn_tool_call_cap")]


def test_adaptive_cap_stops_a_stuck_prompt_past_100() -> None:
    stuck = ("grep_search", {"pattern": "x"})
    calls = distinct(95) + [c for i in range(6) for c in (stuck, ("edit", {"n": i}))]
    calls += distinct(5)
    # The 6th scattered repeat comes at call 106 (> 100): that call is stopped, and every
    # later one too (the signal stays for the prompt).
    got = refusals(calls_session(calls, per_turn=10), QwenConfig())
    assert got[0] == (105, "turn_tool_call_cap")
    assert all(detector == "turn_tool_call_cap" for _, detector in got)


def test_adaptive_cap_counts_repeats_since_the_prompt_began() -> None:
    """Six repeats long before the soft cap still count as "stuck" once it is passed (the
    package's behaviour, where its documentation speaks of a model that "keeps repeating")."""
    early = [c for i in range(6) for c in (("grep_search", {"pattern": "x"}),
                                           ("read_file", {"path": f"/e{i}"}))]
    calls = early + distinct(95)
    got = refusals(calls_session(calls, per_turn=10), QwenConfig())
    assert got[0] == (100, "turn_tool_call_cap") and len(got) == 7


def test_explicit_cap_is_hard() -> None:
    config = QwenConfig(max_tool_calls_per_turn=100, cap_mode="explicit")
    assert refusals(calls_session(distinct(101), per_turn=20), config) == [
        (100, "turn_tool_call_cap")]
    off = QwenConfig(max_tool_calls_per_turn=0, cap_mode="explicit")
    assert refusals(calls_session(distinct(1200), per_turn=100), off) == []


def test_git_inspection_stagnation_is_always_on() -> None:
    commands = ["git status", "git diff", "git diff --stat HEAD~1", "git ls-files"] * 2
    calls = [("run_shell_command", {"command": c}) for c in commands]
    assert refusals(calls_session(calls), QwenConfig()) == [(7, "shell_command_stagnation")]
    calls[3] = ("run_shell_command", {"command": "git diff -- src/a.py"})  # a path: not overview
    assert refusals(calls_session(calls), QwenConfig()) == []


def test_opt_in_checks_only_when_not_skipped() -> None:
    a, b = ("read_file", {"path": "/a"}), ("run_shell_command", {"command": "make"})
    session = calls_session([a, b] * 3)
    assert refusals(session, QwenConfig()) == []
    on = QwenConfig(skip_loop_detection=False)
    assert refusals(session, on) == [(5, "alternating_tool_call_pattern")]


def test_shadow_mode_counts_detections_per_prompt() -> None:
    session = calls_session([("read_file", {"path": "/a"})] * 7, prompts=2)
    steps = [s for s in ENGINE.replay(session, QwenConfig()).steps if s.verdict == "refuse"]
    assert [(s.count, s.extra["intervention"], s.extra["prompt"]) for s in steps] == [
        (1, "halt", 1), (2, "shadow", 1), (3, "shadow", 1),
        (1, "halt", 2), (2, "shadow", 2), (3, "shadow", 2)]
    assert [s.after_divergence for s in steps] == [False] + [True] * 5


@pytest.mark.parametrize("name", list(CONFIGS))
def test_run_many_equals_per_session_runs(name: str) -> None:
    rng = random.Random(len(name))
    sessions = [random_session(rng) for _ in range(25)]
    prepared = [ENGINE.prepare(s) for s in sessions]
    config = CONFIGS[name]
    columns = ENGINE.run_many(prepared, config)
    singles = [ENGINE.run(p, config) for p in prepared]
    assert singles == [ENGINE.replay(s, config) for s in sessions]
    assert len(columns) == len(singles)
    for i, one in enumerate(singles):
        assert bool(columns.refused[i]) == one.refused, i
        assert int(columns.refusal_counts[i]) == one.refusal_count, i
        assert columns.first_refusal(i) == one.first_refusal, i
        assert columns[i] == one, i
    assert any(one.refused for one in singles)


def test_guide_examples_refuse_where_they_say() -> None:
    examples = ENGINE.guide_examples()
    assert len(examples) == 3
    for example in examples:
        resolution = ENGINE.config(example.values)
        got = refusals(example.session, resolution.config)
        assert got and got[0][1] == example.detector, example.title
    assert [refusals(e.session, ENGINE.config(e.values).config)[0][0] for e in examples] == [
        4, 5, 10]


def test_explanations_name_the_rule_and_the_action() -> None:
    session = calls_session([("read_file", {"path": "/a"})] * 6)
    replay = ENGINE.replay(session, QwenConfig())
    first, second = [s for s in replay.steps if s.verdict == "refuse"]
    text = ENGINE.explainer.explain_step(first, replay, QwenConfig()).text
    assert "5 times in a row" in text and "stopped this prompt" in text
    assert "earlier loop" in ENGINE.explainer.explain_step(second, replay, QwenConfig()).text
    passed = ENGINE.explainer.explain_step(replay.steps[0], replay, QwenConfig())
    assert "let read_file through" in passed.headline
    limits = ENGINE.explainer.limitations(session, replay, QwenConfig())
    assert any("daemon/ACP" in limit.text for limit in limits)


def test_prepared_data_round_trips_and_damage_is_refused() -> None:
    rng = random.Random(7)
    sessions = [random_session(rng) for _ in range(15)]
    for session in sessions:
        prepared = ENGINE.prepare(session)
        data = json.loads(json.dumps(ENGINE.encode_prepared(prepared)))
        back = ENGINE.decode_prepared(data)
        assert back == prepared
        for config in CONFIGS.values():
            assert ENGINE.run(back, config) == ENGINE.replay(session, config)
    # A call that resolves to itself is written with its key once; a tool_call envelope
    # with both its names and keys: the random sessions have both, and both round-trip.
    calls = [row for s in sessions for row in ENGINE.encode_prepared(ENGINE.prepare(s))["items"]
             if row[0] == "c"]
    assert {len(row) for row in calls} == {6, 8}
    assert all(row[5] != row[3] or row[6] != row[4] for row in calls if len(row) == 8)
    good = ENGINE.encode_prepared(ENGINE.prepare(sessions[0]))
    assert good is not None
    for damage in ({"items": "x"}, {"session": 3}, {"items": [["c", 0, 0, "a", "k", "a", "k", 1]]},
                   {"items": [["c", 0, 0, "a", "k", 1]]}, {"items": [["c", 0, 0, "a", 5, True]]},
                   {"items": [["u", -1]]}, {"items": [["t", 0, "", "piece"]]}, {"items": [[]]}):
        with pytest.raises(ValueError):
            ENGINE.decode_prepared({**good, **damage})
    for bad in (None, [], "x"):
        with pytest.raises(ValueError):
            ENGINE.decode_prepared(bad)
