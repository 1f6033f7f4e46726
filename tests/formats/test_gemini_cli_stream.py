"""gemini_cli_stream: turns, deltas, results, runs split at ``init``."""

from __future__ import annotations

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    longest_identical_run,
    only,
    run_records,
    shape,
)

from loopscope.formats import gemini_cli_stream


def init(sid: str, ts: str = "2026-05-04T11:00:00.000Z") -> dict:
    return {"type": "init", "timestamp": ts, "session_id": sid, "model": "gemini-demo"}


def user(text: str, **extra: object) -> dict:
    return {"type": "message", "role": "user", "content": text, **extra}


def tool_use(tid: str, name: str = "run_shell_command", params: object = None) -> dict:
    return {"type": "tool_use", "timestamp": "2026-05-04T11:00:02.000Z", "tool_name": name,
            "tool_id": tid, "parameters": {"command": "ls"} if params is None else params}


def tool_result(tid: str, status: str = "success", **extra: object) -> dict:
    return {"type": "tool_result", "timestamp": "2026-05-04T11:00:02.300Z", "tool_id": tid,
            "status": status, **extra}


def test_spec_example():
    lines = [
        init("gem-1"),
        user("Check the port.", timestamp="2026-05-04T11:00:00.100Z"),
        tool_use("run_shell_command-1", params={"command": "ss -ltn"}),
        tool_result("run_shell_command-1", "error", output="ss: not found",
                    error={"type": "execution_failed", "message": "ss: not found"}),
        {"type": "message", "timestamp": "2026-05-04T11:00:03.000Z", "role": "assistant",
         "content": "Cannot check: ", "delta": True},
        {"type": "message", "timestamp": "2026-05-04T11:00:03.050Z", "role": "assistant",
         "content": "ss is missing.", "delta": True},
        {"type": "result", "timestamp": "2026-05-04T11:00:03.100Z", "status": "success",
         "stats": {"total_tokens": 900}},
    ]
    sessions, problems = run_records(gemini_cli_stream, lines)
    s = only(sessions)
    assert shape(s) == "U A0[run_shell_command] R0! A1"
    assert s.id == "gem-1" and s.models == ("gemini-demo",)
    assert s.agent.name == "Gemini CLI"
    assert s.turns[1].text == "Cannot check: ss is missing."
    call = s.calls[0]
    assert call.id == "run_shell_command-1" and call.arguments_kind == "value"
    assert call.arguments == {"command": "ss -ltn"}
    result = s.events[2]
    assert result.text == "ss: not found" and result.meta["status"] == "error"
    assert result.paired_by == "id"
    assert s.metadata["result"]["stats"] == {"total_tokens": 900}
    assert s.started_at == "2026-05-04T11:00:00.100Z"
    assert not codes(problems, "warning")


def test_parallel_calls_share_a_turn_and_result_text_falls_back_to_error_message():
    lines = [init("g"), user("go"), tool_use("a"), tool_use("b", "write_file", '{"p": 1}'),
             tool_result("b", "success"),
             tool_result("a", "error", error={"type": "x", "message": "denied"})]
    s = only(run_records(gemini_cli_stream, lines)[0])
    assert shape(s) == "U A0[run_shell_command, write_file] R1 R0!"
    assert s.calls[1].arguments_kind == "json_text" and s.calls[1].arguments == {"p": 1}
    no_output = s.events[2]
    assert no_output.content is None and no_output.text == ""
    assert s.events[3].text == "denied"


def test_each_later_init_starts_a_session_and_takes_the_harness_prompt_before_it():
    lines = [user("harness 1"), init("run-1"), user("cli 1"), tool_use("a"), tool_result("a"),
             {"type": "result", "status": "success", "stats": {}},
             user("harness 2"), init("run-2"), user("cli 2"), tool_use("b")]
    sessions, problems = run_records(gemini_cli_stream, lines)
    assert [s.id for s in sessions] == ["run-1", "run-2"]
    assert shape(sessions[0]) == "U U A0[run_shell_command] R0"
    assert shape(sessions[1]) == "U U A0[run_shell_command]"
    assert sessions[1].events[0].text == "harness 2"
    unanswered = [p for p in problems if p.code == "unanswered_calls"]
    assert len(unanswered) == 1
    # the problem is attributed to candidate 1 (the loader turns it into path#1)


def test_error_record_is_an_upstream_error_info_and_unknown_records_are_counted():
    lines = [init("g"), user("x"), {"type": "error", "severity": "warning", "message": "quota"},
             {"type": "mystery"}]
    sessions, problems = run_records(gemini_cli_stream, lines)
    s = only(sessions)
    assert shape(s) == "U"
    assert "upstream_error" in codes(problems, "info")
    assert any("quota" in p.message for p in problems)
    assert "unknown_record_type" in codes(problems, "info")
    assert s.metadata["skipped"]["mystery"] == 1


def test_harness_ts_is_used_when_timestamp_is_missing():
    lines = [user("first", ts="2026-01-30T06:18:17.750897"), init("g")]
    s = only(run_records(gemini_cli_stream, lines)[0])
    assert s.events[0].timestamp == "2026-01-30T06:18:17.750897"


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)


@pytest.mark.corpus
def test_corpus_two_runs_in_one_file():
    imported = load_corpus("gemini-cli/figma-eval-010ac575__transcript.jsonl")
    assert imported.detection.format == "gemini_cli_stream"
    first, second = imported.sessions
    assert first.source.endswith("#0") and second.source.endswith("#1")
    assert first.id == "6727b31e-11a1-4351-b526-77ba7b90da09"
    assert second.id == "65b8f8e4-6941-4eba-b2b8-a3f492435908"
    assert_counts(first, calls=40, turns=41, user=2, results=40, unanswered=0)
    assert_counts(second, calls=28, turns=28, user=2, results=27, unanswered=1)
    assert first.turns[-1].text.startswith("I have converted the Figma design")
    assert not [p for p in imported.problems if p.severity != "info"]
    assert longest_identical_run(first)[0] == 1


@pytest.mark.corpus
def test_corpus_single_runs_end_with_an_unanswered_call():
    for relative, sid, calls, results in [
        ("gemini-cli/figma-eval-65829f23__transcript.jsonl",
         "0550b100-9836-4f5a-956c-11296b0d2d28", 34, 33),
        ("gemini-cli/figma-eval-d00f7a9b__transcript.jsonl",
         "cac225da-e1f4-46c2-8c80-d7930185f8d6", 41, 40),
    ]:
        imported = load_corpus(relative)
        s = only(imported.sessions)
        assert s.id == sid and s.source.endswith(relative)
        assert_counts(s, calls=calls, turns=calls, user=2, results=results, unanswered=1)
        assert s.calls[-1].result is None
        assert not [p for p in imported.problems if p.severity != "info"]
