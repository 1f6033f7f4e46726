"""gemini_cli_chat: the JSON document and the JSONL recording ($set,
$rewindTo, last copy wins at the first position), embedded results paired by structure."""

from __future__ import annotations

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    only,
    run_document,
    run_records,
    shape,
)

from loopscope.formats import gemini_cli_chat

SPEC_DOC = {
    "sessionId": "gem-2", "projectHash": "ab12", "startTime": "2026-05-04T12:00:00.000Z",
    "lastUpdated": "2026-05-04T12:00:09.000Z",
    "messages": [
        {"id": "m1", "timestamp": "2026-05-04T12:00:00.000Z", "type": "user",
         "content": "What is in src?"},
        {"id": "m2", "timestamp": "2026-05-04T12:00:03.000Z", "type": "gemini", "content": "",
         "model": "gemini-demo",
         "thoughts": [{"subject": "Listing", "description": "look at src", "timestamp": "t"}],
         "toolCalls": [
             {"id": "ls-1", "name": "list_directory", "args": {"dir_path": "src"},
              "status": "success", "resultDisplay": "Listed 1 item(s).",
              "result": [{"functionResponse": {"id": "ls-1", "name": "list_directory",
                                               "response": {"output": "main.py"}}}]},
             {"id": "rd-1", "name": "read_file", "args": {"file_path": "src/missing.py"},
              "status": "error",
              "result": [{"functionResponse": {"id": "rd-1", "name": "read_file",
                                               "response": {"error": "File not found"}}}]}]},
        {"id": "m3", "timestamp": "2026-05-04T12:00:09.000Z", "type": "gemini",
         "content": "src holds main.py."},
    ],
}


def test_spec_example_document():
    sessions, problems = run_document(gemini_cli_chat, SPEC_DOC)
    s = only(sessions)
    assert shape(s) == "U A0[list_directory, read_file] R0 R1! A1"
    assert s.id == "gem-2" and s.agent.name == "Gemini CLI"
    assert s.models == ("gemini-demo",)
    assert s.metadata["projectHash"] == "ab12"
    assert s.turns[0].thinking == "Listing: look at src"
    ok, err = s.events[2], s.events[3]
    assert ok.content == {"output": "main.py"} and ok.text == "main.py"
    assert ok.paired_by == "structure" and ok.call_id == "ls-1"
    assert ok.meta == {"status": "success", "display": "Listed 1 item(s)."}
    assert err.content == {"error": "File not found"} and err.text == "File not found"
    assert err.is_error
    assert s.calls[0].arguments == {"dir_path": "src"} and s.calls[0].arguments_kind == "value"
    assert s.events[1].origin.pointer == "/messages/1"
    assert not codes(problems, "warning")


def test_cancelled_is_an_error_and_calls_without_result_stay_unanswered():
    doc = {"sessionId": "s", "messages": [
        {"id": "a", "type": "user", "content": [{"text": "go"}]},
        {"id": "b", "type": "gemini", "content": "", "toolCalls": [
            {"id": "c1", "name": "t", "args": {}, "status": "cancelled",
             "result": [{"functionResponse": {"id": "c1", "response": {"error": {"message": "x"}}}}]},
            {"id": "c2", "name": "t", "args": {}, "status": "executing"}]},
        {"id": "i", "type": "info", "content": "notice"},
    ]}
    s = only(run_document(gemini_cli_chat, doc)[0])
    assert shape(s) == "U A0[t, t] R0!"
    assert s.events[0].text == "go"
    assert s.events[2].text == "x"
    assert s.calls[1].result is None
    assert s.metadata["skipped"] == {"info": 1}


def test_jsonl_recording_set_rewind_and_last_copy_wins():
    lines = [
        {"sessionId": "rec-1", "projectHash": "p", "startTime": "t0", "kind": "main"},
        {"id": "u1", "type": "user", "content": "first"},
        {"id": "g1", "type": "gemini", "content": "draft", "toolCalls": []},
        {"id": "u2", "type": "user", "content": "abandoned"},
        {"$rewindTo": "u2"},
        {"id": "g1", "type": "gemini", "content": "final", "toolCalls": [
            {"id": "c", "name": "ls", "args": {}, "status": "success",
             "result": [{"functionResponse": {"id": "c", "response": {"output": "ok"}}}]}]},
        {"$set": {"lastUpdated": "t9"}},
        {"id": "u3", "type": "user", "content": "next"},
    ]
    sessions, _ = run_records(gemini_cli_chat, lines)
    s = only(sessions)
    assert s.id == "rec-1"
    assert shape(s) == "U A0[ls] R0 U"
    assert s.turns[0].text == "final"
    assert s.turns[0].origin.line == 6  # the last copy
    assert s.metadata["lastUpdated"] == "t9" and s.metadata["kind"] == "main"


def test_rewind_to_unknown_id_is_a_warning():
    lines = [{"sessionId": "r", "projectHash": "p"}, {"id": "u", "type": "user", "content": "a"},
             {"$rewindTo": "nope"}]
    sessions, problems = run_records(gemini_cli_chat, lines)
    assert shape(only(sessions)) == "U"
    assert "invalid_record" in codes(problems, "warning")


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)


@pytest.mark.corpus
def test_corpus_document():
    imported = load_corpus(
        "gemini-cli/figma-eval-010ac575__chats__session-2026-01-30T06-08-7befeae5.json")
    assert imported.detection.format == "gemini_cli_chat"
    s = only(imported.sessions)
    assert s.id == "7befeae5-6b85-4b89-a3e3-c161793cc484"
    assert_counts(s, calls=62, turns=31, user=1, results=62, unanswered=0)
    assert max(len(t.tool_calls) for t in s.turns) == 6
    errors = [e for e in s.events if e.kind == "tool_result" and e.is_error]
    assert len(errors) == 2
    assert all(e.paired_by == "structure" for e in s.events if e.kind == "tool_result")
    assert not [p for p in imported.problems if p.severity != "info"]
