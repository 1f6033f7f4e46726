"""openhands_events: actions with tool_call_metadata, observations by
cause, turns per model response, noise records, condensation, agents without function calling."""

from __future__ import annotations

import json

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    longest_identical_run,
    only,
    run_document,
    shape,
)

from loopscope.formats import openhands_events


def tcm(call_id: str, name: str, arguments: str, response_id: str, content: str = "",
        others: list | None = None) -> dict:
    calls = [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]
    calls += others or []
    return {"function_name": name, "tool_call_id": call_id, "total_calls_in_response": len(calls),
            "model_response": {"id": response_id, "model": "demo", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content,
                                         "tool_calls": calls}}]}}


SPEC = [
    {"id": 0, "timestamp": "2026-05-04T13:00:00", "source": "environment",
     "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "running"},
     "message": ""},
    {"id": 1, "timestamp": "2026-05-04T13:00:01", "source": "user", "action": "message",
     "args": {"content": "Rename a.txt to b.txt"}, "message": "Rename a.txt to b.txt"},
    {"id": 2, "timestamp": "2026-05-04T13:00:03", "source": "agent", "action": "run",
     "message": "Running command: mv a.txt b.txt",
     "args": {"command": "mv a.txt b.txt", "is_input": False, "thought": "Renaming."},
     "tool_call_metadata": tcm("toolu_9", "execute_bash", '{"command": "mv a.txt b.txt"}',
                               "resp_1", "Renaming.")},
    {"id": 3, "timestamp": "2026-05-04T13:00:04", "source": "agent", "cause": 2,
     "observation": "run", "content": "", "message": "Command executed with exit code 0.",
     "extras": {"command": "mv a.txt b.txt", "metadata": {"exit_code": 0}}},
]


def test_spec_example():
    sessions, problems = run_document(openhands_events, SPEC)
    s = only(sessions)
    assert shape(s) == "U A0[execute_bash] R0"
    assert s.id == ""  # the loader fills the file stem
    assert s.agent.name == "OpenHands"
    assert s.turns[0].text == "Renaming."
    call = s.calls[0]
    assert call.raw_arguments == '{"command": "mv a.txt b.txt"}'
    assert call.arguments_kind == "json_text" and call.arguments == {"command": "mv a.txt b.txt"}
    assert call.id == "toolu_9"
    result = s.events[2]
    assert result.paired_by == "structure" and result.call_id == "toolu_9"
    assert result.meta["exit_code"] == 0 and result.is_error is False
    assert s.metadata["skipped"]["observation:agent_state_changed"] == 1
    assert not codes(problems, "warning")


def _action(i: int, call_id: str, response_id: str, others: list | None = None) -> dict:
    return {"id": i, "source": "agent", "action": "run", "args": {"command": f"c{i}"},
            "tool_call_metadata": tcm(call_id, "execute_bash", json.dumps({"command": f"c{i}"}),
                                      response_id, "parallel", others)}


def _obs(i: int, cause: int, kind: str = "run", content: str = "out") -> dict:
    return {"id": i, "source": "agent", "cause": cause, "observation": kind, "content": content}


def test_actions_of_one_response_form_one_turn_with_their_observations_after_it():
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
        _action(2, "t1", "resp"), _obs(3, 2),
        _action(4, "t2", "resp"), _obs(5, 4, "error", "bad"),
        _action(6, "t3", "resp2"), _obs(7, 6),
    ]
    s = only(run_document(openhands_events, events)[0])
    assert shape(s) == "U A0[execute_bash, execute_bash] R0 R1! A1[execute_bash] R2"
    assert s.turns[0].text == "parallel"


def test_args_are_used_when_the_model_response_has_no_matching_call_and_noise_is_skipped():
    events = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OH."}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
        {"id": 2, "source": "user", "action": "recall", "args": {"query": "go"}},
        {"id": 3, "source": "environment", "cause": 2, "observation": "recall", "content": ""},
        {"id": 4, "source": "agent", "action": "read", "args": {"path": "/w"},
         "tool_call_metadata": {"function_name": "str_replace_editor", "tool_call_id": "x",
                                "model_response": {"id": "r", "choices": []}}},
        {"id": 5, "source": "agent", "observation": "error", "content": "Parameter bad",
         "extras": {"error_id": ""}},
        {"id": 6, "source": "agent", "action": "condensation", "args": {"summary": "older"}},
        {"id": 7, "source": "agent", "action": "message", "args": {"content": "All done."}},
        {"id": 8, "source": "agent", "cause": 7, "observation": "null", "content": ""},
        {"id": 9, "source": "agent", "action": "finish", "args": {},
         "tool_call_metadata": tcm("f", "finish", "{}", "rf")},
    ]
    sessions, _ = run_document(openhands_events, events)
    s = only(sessions)
    assert shape(s) == "S U A0[str_replace_editor] O C A1 A2[finish]"
    assert s.calls[0].arguments_kind == "value" and s.calls[0].arguments == {"path": "/w"}
    assert s.events[3].role == "error" and s.events[3].text == "Parameter bad"
    assert s.events[4].summary == "older"
    assert s.turns[1].text == "All done."
    assert s.calls[1].result is None and s.calls[1].raw_arguments == "{}"


def test_agent_without_function_calling_gets_synthesized_ids():
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
        {"id": 2, "source": "agent", "action": "run", "args": {"command": "ls", "thought": "look"}},
        {"id": 3, "source": "agent", "cause": 2, "observation": "run", "content": "a b"},
        {"id": 4, "source": "agent", "action": "run", "args": {"command": "pwd"}},
    ]
    s = only(run_document(openhands_events, events)[0])
    assert shape(s) == "U A0[run] R0 A1[run]"
    assert [c.id for c in s.calls] == ["ls-0", "ls-1"]
    assert all(c.id_synthetic for c in s.calls)
    assert s.events[2].call_id == "ls-0" and s.events[2].paired_by == "structure"
    assert s.turns[0].text == "look"


def test_duplicate_observation_is_dropped():
    events = [{"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
              _action(2, "t1", "r"), _obs(3, 2), _obs(4, 2)]
    sessions, problems = run_document(openhands_events, events)
    assert shape(only(sessions)) == "U A0[execute_bash] R0"
    assert "duplicates_skipped" in codes(problems, "info")


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)


@pytest.mark.corpus
def test_corpus_basic_gui_mode():
    imported = load_corpus("openhands/events__basic_gui_mode.json")
    assert imported.detection.format == "openhands_events"
    s = only(imported.sessions)
    assert s.id == "events__basic_gui_mode"
    assert_counts(s, calls=4, turns=5, user=1, results=4, unanswered=0)
    assert not [p for p in imported.problems if p.severity != "info"]


@pytest.mark.corpus
def test_corpus_wrong_initial_state():
    imported = load_corpus("openhands/events__wrong_initial_state.json")
    s = only(imported.sessions)
    assert_counts(s, calls=4, turns=4, user=1, results=3, unanswered=1)
    c1 = s.calls[1]
    assert c1.name == "execute_bash"
    assert c1.raw_arguments == ('{"command": "mv /workspace/game_2048.py /workspace/2048.py", '
                                '"is_input": "false"}')
    c3 = s.calls[3]
    assert c3.name == "finish" and c3.raw_arguments == "{}" and c3.result is None
    assert longest_identical_run(s)[0] == 1
