"""The four core formats on small hand-written inputs: openai_chat (including the odd
``tool_calls`` shapes gglib still reads as calls), openai_responses, anthropic_messages and
claude_code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.formats._fmt_helpers import codes, jsonl, load, shape

from loopscope.formats.base import ImportContext, ImportLimits
from loopscope.formats.openai_chat import session_from_messages

EXAMPLE_1_11 = {"messages": [
    {"role": "system", "content": "You are a build assistant."},
    {"role": "user", "content": "Is the build green?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function",
         "function": {"name": "run", "arguments": "{\"cmd\": \"make test\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "read",
                                                          "arguments": "{not json"}}]},
    {"role": "tool", "tool_call_id": "call_b", "content": "no such file"},
    {"role": "tool", "tool_call_id": "call_a", "content": [{"type": "text",
                                                            "text": "FAIL: 2 tests"}]},
    {"role": "assistant", "content": "Two tests fail."},
]}


# ----------------------------------------------------------------------------- openai_chat


def test_example_1_11(tmp_path: Path) -> None:
    result = load(tmp_path, "build.json", EXAMPLE_1_11)
    assert result.detection.format == "openai_chat"
    (s,) = result.sessions
    assert shape(s) == 'S U A0[run, read] R1 R0 A1("Two tests fail.")'
    assert s.source == str(tmp_path / "build.json") and s.id == "build"
    assert s.title == "Is the build green?" and s.format == "openai_chat"
    run, read = s.calls
    assert (run.raw_arguments, run.arguments_kind, run.arguments, run.result) == (
        '{"cmd": "make test"}', "json_text", {"cmd": "make test"}, 4)
    assert read.arguments == "{not json" and read.arguments_error and read.result == 3
    r3, r4 = s.events[3], s.events[4]
    assert (r3.call_id, r3.call_index, r3.paired_by, r3.text, r3.is_error, dict(r3.details)) == (
        "call_b", 1, "id", "no such file", False, {})
    assert r4.text == "FAIL: 2 tests" and r4.content == EXAMPLE_1_11["messages"][4]["content"]
    assert s.chat_messages == tuple(EXAMPLE_1_11["messages"])
    assert codes(result) == ["bad_arguments"]


def test_messages_jsonl_positional_pairing(tmp_path: Path) -> None:
    result = load(tmp_path, "m.jsonl", jsonl(
        {"role": "user", "content": "List the logs folder."},
        {"role": "assistant", "content": "Listing.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "exec", "arguments": "{\"command\": \"ls logs\"}"}}]},
        {"role": "tool", "tool_call_id": "call_x", "content": "a.log\nb.log"},
        {"role": "assistant", "content": "Two files."}))
    (s,) = result.sessions
    assert shape(s) == 'U A0[exec] R0 A1("Two files.")'
    (p,) = [p for p in result.problems if p.code == "positional_pairing"]
    assert p.line == 3 and p.severity == "warning"
    assert [e.origin.line for e in s.events] == [1, 2, 3, 4]


ODD_TOOL_CALLS = [
    {"id": "c1", "type": "function", "function": {"name": "read_file",
                                                  "arguments": "{\"path\":\"a.rs\"}"}},
    {"function": {"name": "read_file", "arguments": {"path": "a.rs"}}},
    {"id": "c1"},
    {"id": 42, "function": {"name": ["read_file"], "arguments": "{}"}},
    {"function": "search"},
    7,
    None,
    {"id": "c9", "function": {"name": "x"}},
]


def test_odd_tool_call_elements_are_all_calls() -> None:
    ctx = ImportContext("mem.json", ImportLimits())
    messages = [{"role": "assistant", "content": [{"type": "text", "text": "a"},
                                                  {"type": "output_text", "text": "b"}],
                 "tool_calls": ODD_TOOL_CALLS}]
    s = session_from_messages(messages, ctx, id="x")
    calls = s.calls
    assert len(calls) == len(ODD_TOOL_CALLS)
    assert [c.index for c in calls] == list(range(8))
    assert [c.name for c in calls] == ["read_file", "read_file", "", "", "", "", "", "x"]
    assert [c.id for c in calls] == ["c1", None, "c1", None, None, None, None, "c9"]
    assert calls[0].arguments == {"path": "a.rs"} and calls[0].arguments_kind == "json_text"
    assert calls[1].arguments == {"path": "a.rs"} and calls[1].arguments_kind == "value"
    assert calls[2].raw_arguments is None and calls[7].raw_arguments is None
    assert calls[3].arguments == {}
    assert s.turns[0].text == "a"  # gglib rule: only type == "text"
    problems = [p for _, p in ctx.problems]
    assert [p.code for p in problems].count("malformed_tool_call") == 4
    assert s.chat_messages == tuple(messages)


@pytest.mark.parametrize("tool_calls", [None, "write_file", {}, 7, True])
def test_tool_calls_not_a_list_gives_no_calls(tool_calls: Any) -> None:
    ctx = ImportContext("mem.json", ImportLimits())
    s = session_from_messages([{"role": "assistant", "content": "x",
                                "tool_calls": tool_calls}], ctx)
    assert not s.calls and len(s.turns) == 1
    expected = [] if tool_calls is None else ["malformed_tool_calls"]
    assert [p.code for _, p in ctx.problems] == expected


def test_odd_roles_and_messages() -> None:
    ctx = ImportContext("mem.json", ImportLimits())
    messages: list[Any] = [
        {"role": "developer", "content": [{"type": "text", "text": "dev"}]},
        {"role": "Assistant", "content": "not a turn"},
        {"role": "model", "content": "x"},
        {"role": "model", "content": "y"},
        {"content": "no role"},
        {"role": 5, "content": "numeric role"},
        "a string message",
        {"role": "function", "name": "f", "content": "legacy result"},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "tool", "content": None, "isError": True},
        {"role": "tool", "tool_call_id": 3, "status": "error"},
        {"role": "assistant", "content": "r", "reasoning_content": "think"},
    ]
    s = session_from_messages(messages, ctx)
    assert shape(s) == 'S O O O O O O O A0("") R?! R?! A1("r")'
    assert s.events[0].recorded_role == "developer"
    assert s.events[9].is_error and s.events[10].is_error
    assert s.events[9].content is None and s.events[10].call_id is None
    assert s.turns[1].thinking == "think"
    found = [p.code for _, p in ctx.problems]
    assert found.count("unknown_role") == 5  # Assistant, model (once), missing, number, string
    assert "legacy_function_call" in found
    assert len(s.chat_messages or ()) == len(messages)


def test_litellm_log_appends_the_response(tmp_path: Path) -> None:
    log = {
        "messages": [{"role": "system", "content": [{"type": "text", "text": "sys"}]},
                     {"role": "user", "content": [{"type": "text", "text": "go"}]}],
        "response": {"id": "resp", "model": "m-1", "choices": [{"message": {
            "role": "assistant", "content": None, "function_call": None, "tool_calls": [
                {"id": "toolu_1", "type": "function",
                 "function": {"name": "finish", "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}], "usage": {}},
        "args": [], "kwargs": {"tools": [{"type": "function", "function": {"name": "finish"}}]},
        "timestamp": 1777881601.0, "cost": 0.1,
    }
    result = load(tmp_path, "llm.json", log)
    assert result.detection.format == "openai_chat" and "litellm" in result.detection.reason
    (s,) = result.sessions
    assert shape(s) == "S U A0[finish]"
    assert s.agent.name == "litellm log" and s.models == ("m-1",)
    assert s.metadata["tools"] == ["finish"]
    assert s.chat_messages is not None and len(s.chat_messages) == 3
    assert s.turns[0].timestamp == "2026-05-04T08:00:01.000Z"
    assert "legacy_function_call" not in codes(result)  # "function_call": null


def test_conversation_per_line_and_list_of_conversations(tmp_path: Path) -> None:
    conv = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant",
                                                            "content": "a"}]}
    result = load(tmp_path, "ft.jsonl", jsonl(dict(conv, id="first"), conv, conv)
                  .replace('"q"}, {"role": "assistant", "content": "a"}]}\n', '"q"}, {"role": '
                           '"assistant", "content": "a"}]}\n', 2))
    path = str(tmp_path / "ft.jsonl")
    assert [s.source for s in result.sessions] == [f"{path}#0", f"{path}#1", f"{path}#2"]
    assert [s.id for s in result.sessions] == ["first", "ft#1", "ft#2"]
    listed = load(tmp_path, "list.json", [conv["messages"], conv])
    assert len(listed.sessions) == 2 and listed.sessions[1].id == "list#1"


def test_conversation_per_line_broken_line_keeps_numbering(tmp_path: Path) -> None:
    conv = json.dumps({"messages": [{"role": "user", "content": "q"}]})
    result = load(tmp_path, "ft.jsonl", f"{conv}\n{{broken\n{conv}\n")
    path = str(tmp_path / "ft.jsonl")
    assert [s.source for s in result.sessions] == [f"{path}#0", f"{path}#2"]
    failed = [p for p in result.problems if p.code == "session_failed"]
    assert failed and failed[0].source == f"{path}#1"
    assert "invalid_json_line" in codes(result)


def test_non_finite_number_makes_openai_chat_unreadable(tmp_path: Path) -> None:
    doc = json.dumps(EXAMPLE_1_11).replace('"Two tests fail."', "1e400")
    result = load(tmp_path, "n.json", doc)
    # (the call the unreadable file holds is counted in its text and said to be lost)
    assert not result.sessions and codes(result) == ["invalid_json", "calls_not_imported"]
    assert result.calls_lost == 1
    lines = jsonl({"role": "user", "content": "x"}) + '{"role": "tool", "content": NaN}\n'
    result = load(tmp_path, "n.jsonl", lines + jsonl({"role": "user", "content": "x"}))
    assert not result.sessions
    assert codes(result) == ["invalid_json"] and result.problems[0].line == 2


def test_negative_zero_follows_serde(tmp_path: Path) -> None:
    result = load(tmp_path, "z.json", '{"messages": [{"role": "tool", "tool_call_id": "a", '
                                      '"content": [{"type": "text", "text": "x", "n": -0}]}]}')
    value = result.sessions[0].chat_messages[0]["content"][0]["n"]  # type: ignore[index]
    assert isinstance(value, float) and str(value) == "-0.0"


# ----------------------------------------------------------------------------- responses

RESPONSES_EXAMPLE = {"instructions": "You are a build assistant.", "input": [
    {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                     "text": "Is the build green?"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
                                                     "text": "Run the tests."}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "run",
     "arguments": "{\"cmd\":\"make test\"}"},
    {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "run",
     "arguments": "{\"cmd\":\"make lint\"}"},
    {"type": "function_call_output", "call_id": "call_2", "output": "lint ok"},
    {"type": "function_call_output", "call_id": "call_1",
     "output": [{"type": "input_text", "text": "FAIL: 2 tests"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                          "text": "Two tests fail."}]},
]}


def test_responses_example(tmp_path: Path) -> None:
    result = load(tmp_path, "r.json", RESPONSES_EXAMPLE)
    assert result.detection.format == "openai_responses"
    (s,) = result.sessions
    assert shape(s) == 'S U A0[run, run] R1 R0 A1("Two tests fail.")'
    assert s.turns[0].thinking == "Run the tests."
    assert s.calls[0].id == "call_1" and s.calls[0].arguments == {"cmd": "make test"}
    assert s.events[4].text == "FAIL: 2 tests"


def test_responses_other_items(tmp_path: Path) -> None:
    response = {"object": "response", "id": "resp_9", "model": "gpt-x", "output": [
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** x"},
        {"type": "local_shell_call", "id": "ls1", "action": {"type": "exec",
                                                              "command": ["ls"]}},
        {"type": "web_search_call", "id": "ws1", "action": {"query": "q"},
         "results": [{"text": "hit"}]},
        {"type": "mcp_call", "id": "m1", "name": "lookup", "server_label": "s",
         "arguments": "", "error": "boom"},
        {"type": "mcp_list_tools", "id": "l1"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"},
        {"type": "mystery"},
        {"type": "message", "role": "assistant", "content": [{"type": "refusal",
                                                              "refusal": "no"}]},
    ]}
    result = load(tmp_path, "resp.json", response)
    (s,) = result.sessions
    assert s.id == "resp_9" and s.models == ("gpt-x",)
    assert shape(s) == 'A0[apply_patch, local_shell, web_search, lookup] R2 R3! R0 A1("no")'
    patch, shell, search, mcp = s.calls
    assert patch.arguments_kind == "free_text" and patch.arguments == "*** x"
    assert shell.arguments == {"type": "exec", "command": ["ls"]}
    assert search.arguments == {"query": "q"} and search.id == "ws1"
    assert mcp.arguments_kind == "json_text" and mcp.arguments_error
    assert s.events[1].paired_by == "structure"
    assert s.metadata["skipped"] == {"mcp_list_tools": 1, "mystery": 1}
    assert "unknown_record_type" in codes(result)


def test_responses_jsonl_items(tmp_path: Path) -> None:
    result = load(tmp_path, "items.jsonl", jsonl(*RESPONSES_EXAMPLE["input"]))
    assert result.detection.format == "openai_responses"
    assert shape(result.sessions[0]) == 'U A0[run, run] R1 R0 A1("Two tests fail.")'


# ----------------------------------------------------------------------------- anthropic

ANTHROPIC_EXAMPLE = {"model": "demo-model", "system": "You are a build assistant.", "messages": [
    {"role": "user", "content": "Is the build green?"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {"cmd": "make test"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "FAIL: 2 tests",
         "is_error": True},
        {"type": "text", "text": "Also run lint."}]},
]}


def test_anthropic_example(tmp_path: Path) -> None:
    result = load(tmp_path, "a.json", ANTHROPIC_EXAMPLE)
    assert result.detection.format == "anthropic_messages"
    (s,) = result.sessions
    assert shape(s) == "S U A0[run] R0! U"
    assert s.turns[0].text == "Checking." and s.models == ("demo-model",)
    assert s.calls[0].arguments == {"cmd": "make test"} and s.calls[0].arguments_kind == "value"
    assert s.events[-1].text == "Also run lint."
    assert s.chat_messages is None


def test_anthropic_blocks(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "", "signature": "sig"},
            {"type": "thinking", "thinking": "plan"},
            {"type": "redacted_thinking", "data": "x"},
            {"type": "tool_use", "id": "t1", "name": "a", "input": {}},
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": 1}},
            {"type": "web_search_tool_result", "tool_use_id": "s1",
             "content": {"type": "web_search_tool_result_error", "error_code": "x"}}]},
        {"role": "assistant", "content": "second turn"},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1",
             "content": [{"type": "text", "text": "ok"}, {"type": "image", "source": {}}]},
            {"type": "text", "text": "   "}]},
        {"role": "Model", "content": "odd"},
    ]
    result = load(tmp_path, "bare.json", messages)
    assert result.detection.format == "anthropic_messages"
    (s,) = result.sessions
    assert shape(s) == 'U A0[a, web_search] R1! A1("second turn") R0 O'
    assert s.turns[0].thinking == "plan"
    assert s.events[4].text == "ok"
    assert "unknown_role" in codes(result)


def test_anthropic_conversations_jsonl(tmp_path: Path) -> None:
    result = load(tmp_path, "c.jsonl", jsonl({"messages": ANTHROPIC_EXAMPLE["messages"]},
                                             {"messages": ANTHROPIC_EXAMPLE["messages"]}))
    assert result.detection.format == "anthropic_messages"
    assert [shape(s) for s in result.sessions] == ["U A0[run] R0! U"] * 2


@pytest.mark.parametrize(("format", "kept"), [("openai_chat", [0, 1, 3]),
                                              ("anthropic_messages", [0, 3])])
def test_conversation_per_line_reads_each_line_alone(tmp_path: Path, format: str,
                                                     kept: list[int]) -> None:
    """A body line is a conversation in both chat formats; a bare list of messages on a line is
    one in openai_chat only; any other line is skipped with a problem naming it, and the lines
    after it are still read."""
    body = {"messages": ANTHROPIC_EXAMPLE["messages"]}
    result = load(tmp_path, "c.jsonl", jsonl(body, body["messages"], {"x": 1}, body),
                  format=format)
    path = str(tmp_path / "c.jsonl")
    assert [s.source for s in result.sessions] == [f"{path}#{n}" for n in kept]
    failed = {p.source: p for p in result.problems if p.code == "session_failed"}
    assert set(failed) == {f"{path}#{n}" for n in range(4) if n not in kept}
    assert failed[f"{path}#2"].line == 3


# ----------------------------------------------------------------------------- claude_code

CLAUDE_EXAMPLE = [
    {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s-42",
     "timestamp": "2026-05-04T09:00:00.000Z", "isSidechain": False, "version": "2.1.0",
     "cwd": "/w", "message": {"role": "user", "content": "Run the tests"}},
    {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s-42",
     "timestamp": "2026-05-04T09:00:02.000Z", "requestId": "req_1",
     "message": {"id": "msg_1", "model": "claude-demo", "role": "assistant",
                 "content": [{"type": "text", "text": "Running them."}]}},
    {"type": "progress", "uuid": "p1", "parentUuid": "a1", "sessionId": "s-42",
     "timestamp": "2026-05-04T09:00:02.100Z", "data": {"type": "hook_progress"}},
    {"type": "assistant", "uuid": "a2", "parentUuid": "a1", "sessionId": "s-42",
     "timestamp": "2026-05-04T09:00:02.200Z", "requestId": "req_1",
     "message": {"id": "msg_1", "model": "claude-demo", "role": "assistant",
                 "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                              "input": {"command": "pytest -q"}}]}},
    {"type": "user", "uuid": "u2", "parentUuid": "a2", "sessionId": "s-42",
     "timestamp": "2026-05-04T09:00:09.000Z",
     "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                              "content": "2 failed", "is_error": True}]},
     "toolUseResult": {"stdout": "2 failed", "interrupted": False}},
    {"type": "system", "subtype": "compact_boundary", "uuid": "c1", "parentUuid": None,
     "sessionId": "s-42", "timestamp": "2026-05-04T09:30:00.000Z",
     "content": "Conversation compacted", "compactMetadata": {"trigger": "auto",
                                                              "preTokens": 150000}},
    {"type": "user", "uuid": "u3", "parentUuid": "c1", "sessionId": "s-42",
     "timestamp": "2026-05-04T09:30:00.100Z", "isCompactSummary": True,
     "message": {"role": "user", "content": "This session is being continued from a previous "
                                            "conversation. Summary: tests were failing."}},
]


def test_claude_code_example(tmp_path: Path) -> None:
    result = load(tmp_path, "s.jsonl", jsonl(*CLAUDE_EXAMPLE))
    assert result.detection.format == "claude_code"
    (s,) = result.sessions
    assert shape(s) == "U A0[Bash] R0! C"
    assert s.turns[0].text == "Running them." and s.id == "s-42"
    assert s.agent.name == "Claude Code" and s.agent.version == "2.1.0"
    compaction = s.events[-1]
    assert compaction.trigger == "auto" and compaction.tokens_before == 150000
    assert compaction.summary.startswith("This session is being continued")
    assert s.events[2].meta == {"interrupted": False}
    assert s.metadata["skipped"] == {"progress": 1} and s.metadata["cwd"] == "/w"
    assert s.started_at == "2026-05-04T09:00:00.000Z"


def test_claude_code_duplicates_meta_and_sidechains(tmp_path: Path) -> None:
    base = {"sessionId": "s-1", "timestamp": "2026-05-04T09:00:00.000Z"}
    lines = [
        dict(base, type="summary", summary="The title", leafUuid="x"),
        dict(base, type="user", uuid="u1", isMeta=True,
             message={"role": "user", "content": "<context>"}),
        dict(base, type="user", uuid="u2", message={"role": "user", "content": "do it"}),
        dict(base, type="assistant", uuid="a1", message={
            "id": "m1", "model": "<synthetic>", "role": "assistant",
            "content": [{"type": "text", "text": "API Error"}]}, isApiErrorMessage=True),
        dict(base, type="user", uuid="u2", message={"role": "user", "content": "do it"}),
        dict(base, type="assistant", uuid="s1", isSidechain=True, parentUuid="u2",
             agentId="agent-7", message={"id": "m2", "role": "assistant", "content": [
                 {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}),
        dict(base, type="user", uuid="s2", isSidechain=True, parentUuid="s1", message={
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                         "content": "x"}]}),
        dict(base, type="mystery", uuid="q1"),
    ]
    result = load(tmp_path, "side.jsonl", jsonl(*lines))
    main, side = result.sessions
    path = str(tmp_path / "side.jsonl")
    assert (main.source, side.source) == (f"{path}#0", f"{path}#1")
    assert shape(main) == 'S U A0("API Error")'
    assert main.title == "The title" and main.id == "s-1"
    assert main.turns[0].synthetic and main.turns[0].error == "API Error"
    assert shape(side) == "A0[Read] R0" and side.id == "agent-7"
    assert "duplicates_skipped" in codes(result)


def test_claude_code_only_snapshots_is_empty_session(tmp_path: Path) -> None:
    result = load(tmp_path, "snap.jsonl", jsonl(
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        {"type": "file-history-snapshot", "messageId": "n", "snapshot": {}}))
    assert result.detection.format == "claude_code"
    assert not result.sessions and codes(result) == ["empty_session"]
