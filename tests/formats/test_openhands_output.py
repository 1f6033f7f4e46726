"""openhands_output: one instance per line, session fields, older pair
histories, candidate numbering, and the real ``openhands/multi_swe_bench_output.jsonl``."""

from __future__ import annotations

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    longest_identical_run,
    run_document,
    run_records,
    shape,
)

from loopscope.formats import openhands_output


def _instance(iid: str, history: object, **extra: object) -> dict:
    return {"instance_id": iid, "instruction": "fix it",
            "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": "m/x"},
                         "max_iterations": 50},
            "history": history, "error": None, "test_result": {"git_patch": "diff", "ok": True},
            **extra}


HISTORY = [
    {"id": 0, "source": "agent", "action": "system", "args": {"content": "sys"}},
    {"id": 1, "source": "user", "action": "message", "args": {"content": "task"}},
    {"id": 2, "source": "agent", "action": "run", "args": {"command": "ls"},
     "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_1",
                            "model_response": {"id": "r1", "model": "llama", "choices": [
                                {"message": {"content": "", "tool_calls": [
                                    {"id": "toolu_1", "function": {"name": "execute_bash",
                                                                   "arguments": '{"command":"ls"}'}}]}}]}}},
    {"id": 3, "source": "agent", "cause": 2, "observation": "run", "content": "a",
     "extras": {"metadata": {"exit_code": 1}}},
]


def test_one_session_per_line_with_session_fields():
    lines = [_instance("a__b-1", HISTORY), _instance("a__b-2", HISTORY,
                                                     error="Agent reached maximum iteration")]
    sessions, problems = run_records(openhands_output, lines)
    assert [s.id for s in sessions] == ["a__b-1", "a__b-2"]
    s = sessions[0]
    assert shape(s) == "S U A0[execute_bash] R0"
    assert s.title == "a__b-1"
    assert s.agent.name == "OpenHands" and s.agent.version == "CodeActAgent"
    assert s.models == ("m/x", "llama")
    assert s.metadata["max_iterations"] == 50
    assert s.metadata["test_result"] == {"git_patch": "diff", "ok": True}
    assert "error" not in s.metadata
    assert sessions[1].metadata["error"] == "Agent reached maximum iteration"
    assert s.events[3].meta["exit_code"] == 1
    assert s.events[2].origin.line == 1 and s.events[2].origin.pointer == "/history/2"
    assert not codes(problems, "warning")


def test_older_action_observation_pairs_are_flattened():
    pairs = [[HISTORY[1], {"id": 9, "observation": "null", "source": "user", "cause": 1}],
             [HISTORY[2], HISTORY[3]]]
    s = run_records(openhands_output, [_instance("p", pairs)])[0][0]
    assert s is not None
    assert shape(s) == "U A0[execute_bash] R0"


def test_a_line_without_history_list_keeps_its_number():
    lines = [_instance("x", HISTORY), {"instance_id": "y", "history": "nope"},
             _instance("z", HISTORY)]
    sessions, problems = run_records(openhands_output, lines)
    assert sessions[1] is None
    assert [s.id if s else None for s in sessions] == ["x", None, "z"]
    assert "invalid_record" in codes(problems, "warning")


def test_single_instance_document():
    sessions, _ = run_document(openhands_output, _instance("doc-1", HISTORY))
    assert [s.id for s in sessions if s] == ["doc-1"]


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)


@pytest.mark.corpus
def test_corpus_output_jsonl():
    imported = load_corpus("openhands/multi_swe_bench_output.jsonl")
    assert imported.detection.format == "openhands_output"
    s0, s1, s2 = imported.sessions
    assert [s.source.rsplit("#", 1)[1] for s in (s0, s1, s2)] == ["0", "1", "2"]
    assert [s.id for s in (s0, s1, s2)] == [
        "ponylang__ponyc-4595", "ponylang__ponyc-4593", "ponylang__ponyc-4588"]
    assert_counts(s0, calls=23, turns=23, user=1, results=22, unanswered=1)
    assert_counts(s1, calls=33, turns=33, user=1, results=32, unanswered=1)
    assert_counts(s2, calls=49, turns=49, user=1, results=49, unanswered=0)
    others = [sum(1 for e in s.events if e.kind == "other") for s in (s0, s1, s2)]
    assert others == [0, 1, 1]
    assert "maximum iteration" in s2.metadata["error"]
    names = {c.name for s in (s0, s1, s2) for c in s.calls}
    assert {"finish", "think"} <= names
    assert longest_identical_run(s1) == (2, 11, "str_replace_editor")
    assert not [p for p in imported.problems if p.severity != "info"]
