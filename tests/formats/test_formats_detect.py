"""Detection: every document row (D1–D10), every JSONL record row (L1–L10), the
content test, the layout step and the unknown_format descriptions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.formats._fmt_helpers import codes, jsonl, write

from loopscope.formats import detect_format, load_file
from loopscope.formats.detect import content_test, document_signature, record_signatures

MSG = {"role": "user", "content": "hi"}

DOCUMENTS: list[tuple[str, Any, str | None]] = [
    ("D1", {"eval": {"task": "t"}, "samples": []}, "inspect_eval"),
    ("D1-header", {"eval": {}, "version": 2, "status": "success"}, "inspect_eval"),
    ("D2", {"trajectory": [{"action": "ls", "observation": ""}], "history": []},
     "swe_agent_traj"),
    ("D3", {"trajectory_format": "mini-swe-agent-1", "messages": [MSG]}, "mini_swe_agent_traj"),
    ("D4", [{"task_id": 1, "traj": [MSG], "reward": 1.0}], "tau_bench"),
    ("D5", {"messages": [MSG], "response": {"choices": []}}, "openai_chat"),
    ("D6", {"sessionId": "s", "messages": [{"type": "user", "content": "x"},
                                           {"type": "gemini", "content": "y"}]},
     "gemini_cli_chat"),
    ("D7", [{"source": "user", "action": "message"}, {"source": "agent",
                                                      "observation": "run"}],
     "openhands_events"),
    ("D8", {"instance_id": "i", "history": []}, "openhands_output"),
    ("D9-response", {"object": "response", "output": []}, "openai_responses"),
    ("D9-input", {"input": [{"type": "function_call", "name": "x"}]}, "openai_responses"),
    ("D9-list", [{"type": "message", "role": "user"}, {"type": "function_call"}],
     "openai_responses"),
    ("D10-body", {"messages": [MSG]}, "openai_chat"),
    ("D10-anthropic-system", {"system": "s", "messages": [MSG]}, "anthropic_messages"),
    ("D10-list", [MSG, {"role": "assistant", "content": [{"type": "tool_use"}]}],
     "anthropic_messages"),
    ("D10-list-openai", [MSG, {"role": "tool", "tool_call_id": "x"}], "openai_chat"),
    ("D10-list-responses", [{"role": "user", "content": [{"type": "input_text",
                                                          "text": "x"}]}],
     "openai_responses"),
    ("D10-conversations", [[MSG], {"messages": [MSG]}], "openai_chat"),
]


@pytest.mark.parametrize(("row", "value", "expected"), DOCUMENTS, ids=[d[0] for d in DOCUMENTS])
def test_document_rows(row: str, value: Any, expected: str | None, tmp_path: Path) -> None:
    detection = document_signature(value)
    assert detection is not None
    assert detection.format == expected
    assert detection.layout == "document"
    # Pretty-printed (multi-line) file: the document path of step 2.
    path = write(tmp_path, "doc.json", json.dumps(value, indent=2))
    assert detect_format(path).format == expected


def test_d3_mini_swe_agent_is_read_not_taken_for_openai_chat(tmp_path: Path) -> None:
    value = {"trajectory_format": "mini-swe-agent-1", "messages": [
        MSG, {"role": "assistant", "content": "```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"}]}
    result = load_file(write(tmp_path, "mini.json", json.dumps(value, indent=1)))
    assert result.detection.format == "mini_swe_agent_traj"
    assert [c.name for c in result.sessions[0].calls] == ["bash"]


RECORDS: list[tuple[str, list[Any], str]] = [
    ("L1", [{"type": "session_meta", "payload": {}}, {"type": "response_item", "payload": {}}],
     "codex_rollout"),
    ("L1-legacy", [{"id": "x", "timestamp": "t", "instructions": ""}, {"type": "message",
                                                                       "role": "user"}],
     "codex_rollout"),
    ("L1-record_type", [{"record_type": "state"}], "codex_rollout"),
    ("L2", [{"type": "session", "version": 3, "id": "s"},
            {"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}}],
     "openclaw_session"),
    ("L2-headerless", [{"type": "message", "message": {"role": "user"}}], "openclaw_session"),
    ("L3", [{"type": "user", "uuid": "u", "message": {}}, {"type": "progress",
                                                          "sessionId": "s"}], "claude_code"),
    ("L4", [{"type": "init", "session_id": "s"}, {"type": "message", "role": "user",
                                                  "content": "x"},
            {"type": "tool_use", "tool_name": "a", "tool_id": "1"}], "gemini_cli_stream"),
    ("L5", [{"sessionId": "s", "projectHash": "h"}, {"type": "user", "id": "1",
                                                     "content": "x"}, {"$set": {}}],
     "gemini_cli_chat"),
    ("L6", [{"instance_id": "i", "history": []}, {"instance_id": "j", "history": []}],
     "openhands_output"),
    ("L7", [{"type": "agent.message", "id": "e"}, {"raw": {"type": "span.model_request_start"}}],
     "claude_managed_events"),
    ("L8", [{"messages": [MSG]}, {"messages": [MSG]}], "openai_chat"),
    ("L8-anthropic", [{"messages": [{"role": "assistant", "content": [{"type": "tool_use"}]}]}],
     "anthropic_messages"),
    ("L9", [MSG, {"role": "assistant", "content": "x"}], "openai_chat"),
    ("L9-anthropic", [MSG, {"role": "user", "content": [{"type": "tool_result"}]}],
     "anthropic_messages"),
    ("L9-responses", [{"type": "message", "role": "user", "content": "x"}],
     "openai_responses"),
    ("L10", [{"type": "function_call", "name": "x"}, {"type": "function_call_output"}],
     "openai_responses"),
]


@pytest.mark.parametrize(("row", "records", "expected"), RECORDS, ids=[r[0] for r in RECORDS])
def test_record_rows(row: str, records: list[Any], expected: str, tmp_path: Path) -> None:
    detection = record_signatures(records)
    assert detection is not None and detection.format == expected
    assert detection.layout == "jsonl" and row.split("-")[0] in detection.reason
    if len(records) > 1:
        path = write(tmp_path, "f.jsonl", jsonl(*records))
        assert detect_format(path).format == expected


def test_l4_message_records_need_stream_context() -> None:
    assert record_signatures([{"type": "message", "role": "user", "content": "x"}]).format \
        == "openai_responses"  # type: ignore[union-attr]


def test_majority_wins_ties_by_table_order() -> None:
    mixed = [{"type": "user", "uuid": "u"}, {"role": "user"}, {"role": "user"}]
    assert record_signatures(mixed).format == "openai_chat"  # type: ignore[union-attr]
    tie = [{"type": "user", "uuid": "u"}, {"role": "user"}]
    assert record_signatures(tie).format == "claude_code"  # type: ignore[union-attr]
    assert record_signatures([{"ts": 1}]) is None


def test_content_test_order() -> None:
    assert content_test([{"role": "tool"}, {"content": [{"type": "tool_use"}]}]) == "openai_chat"
    assert content_test([{"content": [{"type": "thinking"}]}]) == "anthropic_messages"
    assert content_test([MSG], top_level_system=True) == "anthropic_messages"
    assert content_test([{"content": [{"type": "output_text"}]}]) == "openai_responses"
    assert content_test([MSG]) == "openai_chat"


def test_single_line_file_tries_documents_then_records(tmp_path: Path) -> None:
    one_doc = write(tmp_path, "one.json", json.dumps({"messages": [MSG]}) + "\n")
    assert detect_format(one_doc).layout == "document"
    one_rec = write(tmp_path, "one.jsonl", json.dumps({"type": "user", "uuid": "u",
                                                       "message": MSG}))
    detection = detect_format(one_rec)
    assert (detection.format, detection.layout) == ("claude_code", "jsonl")


def test_markdown_and_zip(tmp_path: Path) -> None:
    md = write(tmp_path, "x.md", "\n\n# Claude Session Export\n\n## Session Information\n")
    assert (detect_format(md).format, detect_format(md).layout) == ("claude_code_markdown",
                                                                    "markdown")
    import zipfile
    inspect_zip = tmp_path / "log.eval"
    with zipfile.ZipFile(inspect_zip, "w") as archive:
        archive.writestr("header.json", "{}")
    assert detect_format(inspect_zip).format == "inspect_eval"
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("a.txt", "x")
    result = load_file(other)
    assert codes(result) == ["unknown_format"] and "zip archive" in result.problems[0].message


@pytest.mark.parametrize(("content", "seen"), [
    (json.dumps({"items": [], "owner": "me"}), 'JSON object with keys "items", "owner"'),
    (json.dumps(["a"] * 12, indent=1), "JSON array of 12 strings"),
    (jsonl({"ts": 1, "level": "info", "msg": "x"}, {"ts": 2, "level": "info", "msg": "y"}),
     'JSON Lines; first record has keys "ts", "level", "msg"'),
    ("hello world", 'not JSON; starts with "hello world"'),
    ("\x1b[31mred", 'not JSON; starts with "\\x1b[31mred"'),
    ("[]", "empty JSON array"),
    ("42", "not JSON; starts with"),
])
def test_unknown_format_describes_what_was_seen(content: str, seen: str, tmp_path: Path) -> None:
    result = load_file(write(tmp_path, "x.json", content))
    assert codes(result) == ["unknown_format"]
    (problem,) = result.problems
    assert problem.severity == "error" and seen in problem.message, problem.message
    assert "\x1b" not in problem.text()


def test_jsonl_with_bad_first_line(tmp_path: Path) -> None:
    path = write(tmp_path, "b.jsonl", "{broken\n" + jsonl(MSG, {"role": "assistant",
                                                                 "content": "x"}))
    result = load_file(path)
    assert result.detection.format == "openai_chat"
    assert codes(result, "warning") == ["invalid_json_line"]
    assert len(result.sessions) == 1
