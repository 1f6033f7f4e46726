"""Fuzzing ``load_file``: random bytes and mutated valid files never raise, never produce an
``internal_error``, and always give a deterministic result."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopscope.formats import ImportLimits, load_file
from loopscope.formats.base import FileImport

SEEDS: list[bytes] = [
    json.dumps({"messages": [
        {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "run",
                                                         "arguments": "{\"x\": 1}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "ok"}]},
    ]}).encode(),
    b"".join(json.dumps(r).encode() + b"\n" for r in [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user",
                                                                    "content": "go"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s", "message": {
            "id": "m", "role": "assistant", "content": [{"type": "tool_use", "id": "t",
                                                         "name": "Bash", "input": {}}]}},
        {"type": "user", "uuid": "u2", "sessionId": "s", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": "x"}]}},
    ]),
    json.dumps({"instructions": "i", "input": [
        {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "o"}]}).encode(),
    json.dumps({"system": "s", "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": "r"}]}]}).encode(),
    json.dumps([{"task_id": 1, "trial": 0, "traj": [{"role": "user", "content": "x"}]}]).encode(),
    b"".join(json.dumps(r).encode() + b"\n" for r in [
        {"type": "session", "version": 3, "id": "s"},
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "user",
                                                                    "content": "x"}}]),
    b"# Claude Session Export\n\n## Conversation\n\n### User\n\nhello\n",
    # Cline / Roo Code: an API history with a tag call and its result blocks; UI messages
    json.dumps([
        {"role": "user", "content": [{"type": "text", "text": "<task>\ngo\n</task>"}]},
        {"role": "assistant", "content": [{"type": "text", "text":
                                           "<read_file>\n<path>a</path>\n</read_file>"}]},
        {"role": "user", "content": [{"type": "text", "text": "[read_file for 'a'] Result:"},
                                     {"type": "text", "text": "x"},
                                     {"type": "text", "text":
                                      "<environment_details>\n</environment_details>"}]}]).encode(),
    json.dumps([
        {"ts": 1, "type": "say", "say": "text", "text": "go"},
        {"ts": 2, "type": "ask", "ask": "tool", "text": "{\"tool\":\"readFile\",\"path\":\"a\"}"},
        {"ts": 3, "type": "say", "say": "api_req_started",
         "text": "{\"request\":\"[read_file for 'a'] Result:\\n\\nx\"}"},
        {"ts": 4, "type": "say", "say": "command", "text": "ls"},
        {"ts": 5, "type": "ask", "ask": "command_output", "text": "a"}]).encode(),
    # opencode: an export, and an /export transcript
    json.dumps({"info": {"id": "ses_1", "title": "t"}, "messages": [
        {"info": {"role": "user"}, "parts": [{"type": "text", "text": "go"}]},
        {"info": {"role": "assistant"}, "parts": [
            {"type": "step-start"}, {"type": "tool", "tool": "bash", "callID": "c",
                                     "state": {"status": "completed", "input": {"c": "ls"},
                                               "output": "a"}}]}]}).encode(),
    b"# t\n\n**Session ID:** ses_1\n\n---\n\n## User\n\ngo\n\n---\n\n## Assistant\n\n"
    b"**Tool: bash**\n\n**Input:**\n```json\n{\"c\": 1}\n```\n\n**Output:**\n```\na\n```\n\n"
    b"---\n\n",
]

SMALL = ImportLimits(max_line_bytes=4096, max_json_depth=64, max_value_chars=500,
                     max_events_per_session=200, max_sessions_per_file=20)


@pytest.fixture(scope="module")
def scratch() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        yield folder


def _load(folder: str, name: str, data: bytes, limits: ImportLimits) -> FileImport:
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    result = load_file(path, limits)
    assert not any(p.code == "internal_error" for p in result.problems), [
        p.text() for p in result.problems]
    for problem in result.problems:
        problem.text()
    for session in result.sessions:
        session.counts()
        session.chat_view()
    return result


def _mutate(seed: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    data = bytearray(seed)
    for kind, position, payload in edits:
        if not data:
            data.extend(payload)
            continue
        i = position % (len(data) + 1)
        if kind == 0:
            data[i:i] = payload  # insert
        elif kind == 1:
            del data[i:i + len(payload) + 1]  # delete
        elif kind == 2:
            data[i:i + len(payload)] = payload  # overwrite
        else:
            data = data[:i]  # truncate
    return bytes(data)


_SNIPPETS = st.sampled_from([b"{", b"}", b"[", b"]", b'"', b",", b":", b"\n", b"\r\n", b"\\",
                             b"null", b"-0", b"1e400", b"NaN", b"\x00", b"\xff\xfe", b"\xc3",
                             b"\xef\xbb\xbf", b'"role"', b'"tool_calls"', b"\\ud800",
                             b"\xe2\x80\xa8", b"[[[[[[[[", b'"messages"'])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2000), name=st.sampled_from(["f.json", "f.jsonl", "f.md"]))
def test_random_bytes_never_raise(scratch: str, data: bytes, name: str) -> None:
    _load(scratch, name, data, SMALL)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS),
       edits=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10_000), _SNIPPETS),
                      min_size=1, max_size=6))
def test_mutated_valid_files_never_raise(scratch: str, seed: bytes,
                                         edits: list[tuple[int, int, bytes]]) -> None:
    data = _mutate(seed, edits)
    first = _load(scratch, "m.jsonl", data, SMALL)
    again = _load(scratch, "m.jsonl", data, SMALL)
    assert [p.text() for p in first.problems] == [p.text() for p in again.problems]
    assert [s.counts() for s in first.sessions] == [s.counts() for s in again.sessions]


@settings(max_examples=60, deadline=None)
@given(value=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "tool_calls", "type", "messages", "id",
                         "function", "arguments", "text", "tool_call_id", "name"]),
        children, max_size=5),
    max_leaves=30))
def test_random_json_shapes_never_raise(scratch: str, value: object) -> None:
    for wrapped in (value, {"messages": value}, [value], {"messages": [value]}):
        _load(scratch, "v.json", json.dumps(wrapped).encode(), SMALL)
        if isinstance(wrapped, list):
            lines = b"".join(json.dumps(v).encode() + b"\n" for v in wrapped)
            _load(scratch, "v.jsonl", lines, SMALL)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS[-4:]),
       edits=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10_000), _SNIPPETS),
                      min_size=1, max_size=6),
       name=st.sampled_from(["api_conversation_history.json", "ui_messages.json", "x.md"]))
def test_mutated_agent_task_files_never_raise(scratch: str, seed: bytes,
                                              edits: list[tuple[int, int, bytes]],
                                              name: str) -> None:
    """The Cline / Roo Code and opencode seeds, damaged, under the names their agents give
    them (a UI file then meets a damaged API history beside it)."""
    _load(scratch, name, _mutate(seed, edits), SMALL)
