"""Issue #16: recordings in the shapes real agents and trace stores write import every call.

One test per shape, on the fixtures in ``fixtures/`` (see its README for where each shape comes
from) or on small files written here, asserting the exact number of sessions and calls, and
that the file's call tally (seen / imported / set aside) agrees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.formats._fmt_helpers import codes, jsonl, shape, write

from loopscope.cli import main
from loopscope.formats import load_file
from loopscope.formats.base import FileImport

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> FileImport:
    return load_file(str(FIXTURES / name))


def calls_per_session(result: FileImport) -> list[int]:
    return [len(s.calls) for s in result.sessions]


def assert_tally(result: FileImport, seen: int, set_aside: int = 0) -> None:
    assert result.calls_seen == seen
    assert result.calls_imported == sum(calls_per_session(result))
    assert sum(result.calls_set_aside.values()) == set_aside
    assert result.calls_lost == 0
    assert "calls_not_imported" not in codes(result)


def replay_json(path: str, engine: str) -> list[dict[str, Any]]:
    run = CliRunner().invoke(main, ["replay", path, "--engine", engine, "--json"])
    assert run.exit_code == 0, run.output
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()]


# --------------------------------------------------------------------------- OpenHands V1


def test_openhands_v1_event_list() -> None:
    result = fixture("openhands_v1_events.json")
    assert result.detection.format == "openhands_events"
    assert calls_per_session(result) == [5]
    (session,) = result.sessions
    assert shape(session) == ('S U A0[terminal] R0! A1[terminal, file_editor] R2 R1 A2[terminal] '
                              'R3! S A3("") S C A4[finish] R4')
    # the model's own argument text, not the parsed action
    assert session.calls[0].raw_arguments == '{"command": "pytest -q tests/test_app.py", ' \
                                             '"security_risk": "LOW"}'
    assert session.calls[0].arguments_kind == "json_text"
    # parallel calls of one response are one turn
    assert [c.turn for c in session.calls] == [0, 1, 1, 2, 4]
    assert_tally(result, seen=5)


def test_openhands_v1_environment_messages_are_not_user_turns() -> None:
    (session,) = fixture("openhands_v1_events.json").sessions
    systems = [e for e in session.events if e.kind == "system"]
    assert [e.recorded_role for e in systems] == ["system", "environment", "environment"]
    assert systems[1].text.startswith("You've called `terminal` with the same arguments 3 times")
    assert systems[2].text.startswith("Your last response did not include a function call")
    assert session.counts()["user_messages"] == 1


def test_openhands_v1_output_jsonl() -> None:
    result = fixture("openhands_v1_output.jsonl")
    assert result.detection.format == "openhands_output"
    assert calls_per_session(result) == [5, 1]
    assert [s.id for s in result.sessions] == ["demo__app-1", "demo__app-2"]
    assert_tally(result, seen=6)


def test_openhands_v0_environment_message_is_system(tmp_path: Path) -> None:
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "go"}},
        {"id": 2, "source": "environment", "action": "message",
         "args": {"content": "Please continue working on the task."}},
    ]
    (session,) = load_file(write(tmp_path, "e.json", json.dumps(events))).sessions
    assert shape(session) == "U S"


# --------------------------------------------------------------------------- text actions


def test_tau_bench_react_and_act_text_actions() -> None:
    result = fixture("tau_bench_react_act.json")
    assert result.detection.format == "tau_bench"
    assert calls_per_session(result) == [4, 2]
    react, act = result.sessions
    assert [c.name for c in react.calls] == ["get_user_details"] + ["get_reservation_details"] * 3
    assert react.calls[1].arguments == {"reservation_id": "EHGLP3"}
    # "API output:" answers are results; respond actions are replies, not calls
    results = [e for e in react.events if e.kind == "tool_result"]
    assert [r.text for r in results][1] == "Error: reservation not found"
    assert react.counts()["unanswered_calls"] == 0
    # act: the last action is not valid JSON, so tau-bench answered with text (no call)
    assert [c.name for c in act.calls] == ["get_user_details", "think"]
    assert "text_actions" in codes(result)
    assert_tally(result, seen=6)


def test_text_actions_reach_both_engines(tmp_path: Path) -> None:
    path = str(FIXTURES / "tau_bench_react_act.json")
    gglib = replay_json(path, "gglib")
    openclaw = replay_json(path, "openclaw")
    assert [sum(len(s["tools"]) for s in r["steps"]) for r in gglib] == [4, 2]
    assert [len(r["steps"]) for r in openclaw] == [4, 2]
    # three identical failing lookups in a row: gglib refuses the third
    assert gglib[0]["first_refusal"]["call"] == 3


def test_langchain_react_transcript() -> None:
    result = fixture("langchain_react_messages.jsonl")
    assert result.detection.format == "openai_chat"
    assert calls_per_session(result) == [2]
    (session,) = result.sessions
    assert [(c.name, c.arguments) for c in session.calls] == [
        ("search", "Eiffel Tower completion year"), ("calculator", "2024 - 1889")]
    assert shape(session).startswith("S U A0[search] R0 A1[calculator] R1 A2(")
    assert_tally(result, seen=2)


def test_structured_calls_are_never_reread_from_text(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": 'Action:\n{"name": "b", "arguments": {}}',
         "tool_calls": [{"id": "c", "type": "function",
                         "function": {"name": "a", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]
    result = load_file(write(tmp_path, "m.json", json.dumps({"messages": messages})))
    assert [c.name for c in result.sessions[0].calls] == ["a"]
    assert "text_actions" not in codes(result)


# --------------------------------------------------------------------------- Claude Code


def _cc(kind: str, uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=f"msg_{uuid}", model="claude-demo")
    return {"type": kind, "uuid": uuid, "sessionId": "s-1", "isSidechain": False,
            "timestamp": "2026-05-04T09:00:00.000Z", "message": message, **extra}


def test_claude_code_result_written_before_its_tool_use(tmp_path: Path) -> None:
    lines = [
        _cc("user", "u1", "Run both"),
        _cc("assistant", "a1", [{"type": "tool_use", "id": "t1", "name": "Bash",
                                 "input": {"command": "a"}}]),
        _cc("user", "u2", [{"type": "tool_result", "tool_use_id": "t2", "content": "two"}]),
        _cc("assistant", "a2", [{"type": "tool_use", "id": "t2", "name": "Bash",
                                 "input": {"command": "b"}}]),
        _cc("user", "u3", [{"type": "tool_result", "tool_use_id": "t1", "content": "one"}]),
    ]
    result = load_file(write(tmp_path, "s.jsonl", jsonl(*lines)))
    (session,) = result.sessions
    assert shape(session) == "U A0[Bash] A1[Bash] R1 R0"
    assert session.counts()["orphan_results"] == 0
    assert session.counts()["unanswered_calls"] == 0
    assert "orphan_result" not in codes(result)
    assert_tally(result, seen=2)


def test_claude_code_bookkeeping_lines_are_skipped_quietly(tmp_path: Path) -> None:
    lines = [
        {"type": "permission-mode", "permissionMode": "default", "sessionId": "s-1"},
        _cc("user", "u1", "hi"),
        _cc("assistant", "a1", [{"type": "text", "text": "hello"}]),
        {"type": "ai-title", "aiTitle": "Greeting", "sessionId": "s-1"},
        {"type": "last-prompt", "lastPrompt": "hi", "sessionId": "s-1"},
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s-1"},
        {"type": "attachment", "uuid": "x1", "sessionId": "s-1", "attachment": {}},
        {"type": "mode", "mode": "default", "sessionId": "s-1"},
    ]
    result = load_file(write(tmp_path, "s.jsonl", jsonl(*lines)))
    assert result.problems == []
    (session,) = result.sessions
    assert session.title == "Greeting"
    assert session.metadata["skipped"] == {"permission-mode": 1, "ai-title": 1,
                                           "last-prompt": 1, "queue-operation": 1,
                                           "attachment": 1, "mode": 1}


def test_claude_code_markdown_reflowed_by_prettier() -> None:
    plain = fixture("claude_code_export.md")
    reflowed = fixture("claude_code_export_prettier.md")
    assert reflowed.detection.format == "claude_code_markdown"
    assert calls_per_session(plain) == calls_per_session(reflowed) == [4]
    assert shape(reflowed.sessions[0]) == shape(plain.sessions[0]) == (
        "U A0[Bash] R0 A1[BashOutput] R1 A2[BashOutput] R2 A3[BashOutput] R3 "
        'A4("The server is still starting; **vite** has not printed its URL yet.")')
    assert [c.arguments for c in reflowed.sessions[0].calls][1:] == [{"bash_id": "b2f8b9"}] * 3
    assert_tally(reflowed, seen=4)


# --------------------------------------------------------------------------- OpenClaw / pi


def _pi(entry_id: str, parent: Any, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent,
            "timestamp": "2026-05-04T08:00:00.000Z", "message": message, **extra}


def _pi_call(call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "toolCall", "id": call_id, "name": "exec",
                                              "arguments": arguments}],
            "provider": "demo", "model": "m", "stopReason": "toolUse"}


def _pi_result(call_id: str) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "exec",
            "content": [{"type": "text", "text": "ok"}], "isError": False}


PI_HEADER = {"type": "session", "version": 3, "id": "s-pi", "timestamp": "2026-05-04T08:00:00Z"}


def test_openclaw_non_string_parent_keeps_the_earlier_entries(tmp_path: Path) -> None:
    lines = [PI_HEADER,
             _pi("e1", None, {"role": "user", "content": "go"}),
             _pi("e2", "e1", _pi_call("c1", command="ls")),
             _pi("e3", "e2", _pi_result("c1")),
             _pi("e4", 3, _pi_call("c2", command="ls")),
             _pi("e5", "e4", _pi_result("c2"))]
    result = load_file(write(tmp_path, "s.jsonl", jsonl(*lines)))
    assert calls_per_session(result) == [2]
    assert shape(result.sessions[0]) == "U A0[exec] R0 A1[exec] R1"
    problem = next(p for p in result.problems if p.code == "broken_parent_link")
    assert problem.line == 5 and problem.severity == "warning"
    assert_tally(result, seen=2)


def test_openclaw_entry_type_that_is_not_a_string(tmp_path: Path) -> None:
    lines = [PI_HEADER,
             _pi("e1", None, {"role": "user", "content": "go"}),
             {**_pi("e2", "e1", _pi_call("c1", command="ls")), "type": ["message"]},
             _pi("e3", "e2", _pi_result("c1"))]
    result = load_file(write(tmp_path, "s.jsonl", jsonl(*lines)))
    assert calls_per_session(result) == [1]
    assert shape(result.sessions[0]) == "U A0[exec] R0"
    assert "internal_error" not in codes(result)
    assert_tally(result, seen=1)


def test_openclaw_two_entries_on_one_line(tmp_path: Path) -> None:
    entries = [_pi("e1", None, {"role": "user", "content": "go"}),
               _pi("e2", "e1", _pi_call("c1", command="ls")),
               _pi("e3", "e2", _pi_result("c1")),
               _pi("e4", "e3", _pi_call("c2", command="pwd"))]
    text = (json.dumps(PI_HEADER) + "\n" + json.dumps(entries[0]) + "\n"
            + json.dumps(entries[1]) + json.dumps(entries[2]) + "\n"
            + json.dumps(entries[3]) + "\n")
    result = load_file(write(tmp_path, "s.jsonl", text))
    assert calls_per_session(result) == [2]
    assert shape(result.sessions[0]) == "U A0[exec] R0 A1[exec]"
    recovered = next(p for p in result.problems if p.code == "line_recovered")
    assert recovered.line == 3 and recovered.severity == "info"
    assert "invalid_json_line" not in codes(result)
    assert_tally(result, seen=2)


def test_openclaw_number_outside_the_double_range_is_infinity(tmp_path: Path) -> None:
    lines = [json.dumps(PI_HEADER),
             json.dumps(_pi("e1", None, {"role": "user", "content": "go"})),
             json.dumps(_pi("e2", "e1", _pi_call("c1", command="sleep", n=1))).replace(
                 '"n": 1', '"n": 1e400'),
             json.dumps(_pi("e3", "e2", _pi_result("c1")))]
    path = write(tmp_path, "s.jsonl", "\n".join(lines) + "\n")
    result = load_file(path)
    assert calls_per_session(result) == [1]
    assert result.sessions[0].calls[0].arguments == {"command": "sleep", "n": float("inf")}
    assert "invalid_json_line" not in codes(result)
    for engine in ("gglib", "openclaw"):
        assert len(replay_json(path, engine)) == 1


def test_an_openai_chat_file_keeps_its_number_rule(tmp_path: Path) -> None:
    """The OpenClaw reading is OpenClaw's: an OpenAI-chat file with 1e400 stays unreadable."""
    text = ('{"role": "user", "content": "x"}\n'
            '{"role": "assistant", "content": null, "n": 1e400}\n')
    result = load_file(write(tmp_path, "c.jsonl", text))
    assert result.sessions == [] and "invalid_json" in codes(result, "error")


# --------------------------------------------------------------------------- SWE-agent


def _step(action: Any, observation: str = "ok") -> dict[str, Any]:
    return {"action": action, "observation": observation, "response": "", "thought": "",
            "state": {"working_dir": "/repo"}, "execution_time": 0.1, "query": [],
            "extra_info": {}}


def test_swe_agent_step_without_action_keeps_the_file(tmp_path: Path) -> None:
    traj = {"environment": "main",
            "history": [{"role": "system", "content": "sys"},
                        {"role": "user", "content": "Fix it"}],
            "trajectory": [_step("ls\n"), {"observation": "Exit due to format error",
                                           "thought": "", "response": "bad"},
                           _step("submit\n")],
            "info": {"exit_status": "submitted"}}
    result = load_file(write(tmp_path, "x.traj", json.dumps(traj)))
    assert result.detection.format == "swe_agent_traj"
    assert calls_per_session(result) == [2]
    assert_tally(result, seen=2)


def test_swe_agent_retry_agent_attempts(tmp_path: Path) -> None:
    def attempt(*actions: str) -> dict[str, Any]:
        return {"trajectory": [_step(a) for a in actions],
                "history": [{"role": "user", "content": "Fix it"}],
                "info": {"exit_status": "submitted"}}
    attempts = [attempt("ls\n", "submit\n"), attempt("open a.py\n", "edit 1:1\nx\nend_of_edit\n",
                                                     "submit\n")]
    traj = {"attempts": attempts, **attempts[1],
            "info": {"best_attempt_idx": 1, "exit_status": "submitted"}}
    result = load_file(write(tmp_path, "r.traj", json.dumps(traj)))
    assert result.detection.format == "swe_agent_traj"
    assert calls_per_session(result) == [2, 3]
    assert [s.metadata.get("chosen") for s in result.sessions] == [False, True]
    assert_tally(result, seen=8, set_aside=3)
    # without the chosen copy (an intermediate save): still read
    only_attempts = load_file(write(tmp_path, "a.traj", json.dumps({"attempts": attempts})))
    assert calls_per_session(only_attempts) == [2, 3]


# --------------------------------------------------------------------------- Gemini CLI


def test_gemini_cli_checkpoint() -> None:
    result = fixture("gemini_cli_checkpoint.json")
    assert result.detection.format == "gemini_cli_chat"
    assert calls_per_session(result) == [3]
    (session,) = result.sessions
    assert shape(session) == ('U A0("Got it. Thanks for the context!") U A1[run_shell_command] '
                              'R0 A2[read_file, list_directory] R1 R2! S '
                              'A3("jest is not installed: run `npm install` first.")')
    assert session.turns[1].thinking.startswith("**Running the tests**")
    assert_tally(result, seen=3)


GEMINI_LOOP = ("System: Potential loop detected. Details: Repetitive patterns identified. "
               "Please take a step back and confirm you're making forward progress.")


def test_gemini_chat_recording_injected_messages_and_new_types(tmp_path: Path) -> None:
    call = {"id": "c1", "name": "read_file", "args": {"path": "a"}, "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "read_file",
                                             "response": {"output": "x"}}}]}
    doc = {"sessionId": "g-1", "projectHash": "ab", "startTime": "2026-05-04T12:00:00Z",
           "messages": [
               {"id": "m1", "type": "user", "content": "Read a"},
               {"id": "m2", "type": "gemini", "content": "", "toolCalls": [call]},
               {"id": "m3", "type": "user", "content": GEMINI_LOOP},
               {"id": "m4", "type": "gemini", "content": "", "toolCalls": [call]},
               {"id": "m5", "type": "user", "content": [{"text": "Please continue."}]},
               {"id": "m6", "type": "compression", "content": "…"},
               {"id": "m7", "type": "gemini", "content": "Done."}]}
    result = load_file(write(tmp_path, "session-x.json", json.dumps(doc)))
    assert result.detection.format == "gemini_cli_chat"
    (session,) = result.sessions
    assert shape(session) == 'U A0[read_file] R0 S A1[read_file] R1 S A2("Done.")'
    assert [e.recorded_role for e in session.events if e.kind == "system"] == ["user", "user"]
    assert_tally(result, seen=2)


def test_gemini_stream_injected_messages_are_system(tmp_path: Path) -> None:
    lines = [{"type": "init", "timestamp": "t", "session_id": "g", "model": "m"},
             {"type": "message", "timestamp": "t", "role": "user", "content": "go"},
             {"type": "tool_use", "timestamp": "t", "tool_name": "ls", "tool_id": "1",
              "parameters": {}},
             {"type": "tool_result", "timestamp": "t", "tool_id": "1", "status": "success",
              "output": "a"},
             {"type": "message", "timestamp": "t", "role": "user", "content": GEMINI_LOOP},
             {"type": "message", "timestamp": "t", "role": "user", "content": "Please continue."}]
    result = load_file(write(tmp_path, "t.jsonl", jsonl(*lines)))
    assert shape(result.sessions[0]) == "U A0[ls] R0 S S"


# --------------------------------------------------------------------------- not a recording


def test_a_hand_written_summary_is_rejected(tmp_path: Path) -> None:
    summary = {"session": "2026-05-04 debugging",
               "summary": "The agent fixed the flaky test after three pytest runs.",
               "messages": ["looked at the CI logs", "ran pytest three times"],
               "tools_used": {"Bash": 3}}
    path = write(tmp_path, "summary.json", json.dumps(summary))
    result = load_file(path)
    assert result.sessions == []
    (problem,) = [p for p in result.problems if p.severity == "error"]
    assert problem.code == "not_a_recording"
    assert 'keys "session", "summary", "messages", "tools_used"' in problem.message
    run = CliRunner().invoke(main, ["replay", path, "--engine", "gglib", "--json"])
    assert run.exit_code == 2
    assert "not a recording" in run.stderr


def test_a_user_only_conversation_is_still_a_session(tmp_path: Path) -> None:
    result = load_file(write(tmp_path, "u.json", json.dumps([{"role": "user", "content": "hi"}])))
    assert len(result.sessions) == 1 and not result.has_errors


# --------------------------------------------------------------------------- trace stores


def test_openinference_spans_jsonl() -> None:
    result = fixture("openinference_spans.jsonl")
    assert result.detection.format == "openinference_spans"
    assert calls_per_session(result) == [2, 3]
    first, second = result.sessions
    assert first.id == "6f1d2c3b4a5968778695a4b3c2d1e0f1"
    assert shape(first) == 'U A0[run_shell, read_file] R0 R1! A1("No: 2 tests fail.")'
    assert first.calls[0].raw_arguments == '{"command": "make test"}'
    errors = [e for e in first.events if e.kind == "tool_result" and e.is_error]
    assert errors[0].text == "FileNotFoundError: build.log"
    assert first.models == ("gpt-4o-2024-08-06",)
    # a trace that kept only its TOOL spans: each span is a call
    assert shape(second) == "U A0[check_status] R0 A1[check_status] R1 A2[check_status] R2"
    assert_tally(result, seen=7, set_aside=2)


def test_openinference_dataframe_rows_and_parquet(tmp_path: Path) -> None:
    rows = fixture("openinference_spans_dataframe.jsonl")
    assert rows.detection.format == "openinference_spans"
    assert calls_per_session(rows) == [3]
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    records = [json.loads(line) for line in
               (FIXTURES / "openinference_spans_dataframe.jsonl").read_text().splitlines()]
    columns = sorted({key for record in records for key in record})
    for record in records:
        record["events"] = json.dumps(record["events"])  # (a column of one type)
        for key in columns:  # a dataframe has every column in every row
            record.setdefault(key, None)
    path = tmp_path / "spans.parquet"
    pq.write_table(pa.Table.from_pylist(records), path)
    result = load_file(str(path))
    assert (result.detection.format, result.detection.layout) == ("openinference_spans",
                                                                  "parquet")
    assert calls_per_session(result) == [3]
    assert shape(result.sessions[0]) == shape(rows.sessions[0])
    assert_tally(result, seen=3)


def test_parquet_without_pyarrow_says_how_to_get_it(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    result = load_file(write(tmp_path, "spans.parquet", b"PAR1" + b"\x00" * 32 + b"PAR1"))
    (problem,) = result.problems
    assert problem.code == "unsupported_variant"
    assert "pip install 'loopscope[parquet]'" in problem.message


def test_langsmith_runs() -> None:
    result = fixture("langsmith_runs.jsonl")
    assert result.detection.format == "langsmith_runs"
    assert calls_per_session(result) == [3]
    (session,) = result.sessions
    # exported newest first; ordered by dotted_order
    assert shape(session) == ('U A0[get_weather, get_weather] R0 R1! A1[get_weather] R2 '
                              'A2("Paris: 18°C, sunny. Lyon: 16°C, cloudy.")')
    assert session.events[0].text == "What's the weather in Paris and in Lyon?"
    assert [c.id for c in session.calls] == ["call_p1", "call_l1", "call_l2"]
    assert session.calls[0].arguments == {"city": "Paris"}
    failed = [e for e in session.events if e.kind == "tool_result" and e.is_error]
    assert failed[0].text.startswith("TimeoutError('weather service did not answer')")
    assert_tally(result, seen=6, set_aside=3)


def test_langfuse_observations() -> None:
    result = fixture("langfuse_observations.json")
    assert result.detection.format == "langfuse_observations"
    assert calls_per_session(result) == [3]
    (session,) = result.sessions
    assert shape(session) == "U A0[lookup_order] R0 A1[issue_refund] R1! A2[issue_refund] R2!"
    assert session.events[0].text == "Refund order 1042"
    assert [e.text for e in session.events if e.kind == "tool_result"][1:] == [
        "PaymentGatewayError: card expired"] * 2
    assert session.models == ("claude-sonnet-4-5",)
    assert_tally(result, seen=5, set_aside=2)


def test_otel_genai_with_content() -> None:
    result = fixture("otel_genai_otlp.json")
    assert result.detection.format == "otel_genai"
    assert calls_per_session(result) == [2]
    (session,) = result.sessions
    assert shape(session) == "U A0[shell] R0 A1[shell] R1!"
    assert session.events[0].text == "Why is the disk full?"
    assert session.calls[1].arguments == {"command": "rm -rf /var/log/journal"}
    assert [e.text for e in session.events if e.kind == "tool_result"] == [
        "41G\t/var/log", "Permission denied"]
    assert "content_not_captured" not in codes(result)
    assert_tally(result, seen=3, set_aside=1)


def test_otel_genai_without_opt_in_content_warns_once_for_the_file() -> None:
    result = fixture("otel_genai_no_content.jsonl")
    assert result.detection.format == "otel_genai"
    assert calls_per_session(result) == [4]
    assert [c.raw_arguments for c in result.sessions[0].calls] == [None] * 4
    (warning,) = [p for p in result.problems if p.code == "content_not_captured"]
    assert warning.severity == "warning"
    assert warning.source == result.path  # the file, not one of its sessions
    assert "see only tool names" in warning.message
    assert_tally(result, seen=4)


def test_traces_group_by_trace_and_order_by_time(tmp_path: Path) -> None:
    lines = (FIXTURES / "openinference_spans.jsonl").read_text().splitlines()
    shuffled = "\n".join(reversed(lines)) + "\n"
    result = load_file(write(tmp_path, "s.jsonl", shuffled))
    assert sorted(calls_per_session(result)) == [2, 3]
    assert sorted(shape(s) for s in result.sessions) == sorted(
        shape(s) for s in fixture("openinference_spans.jsonl").sessions)
