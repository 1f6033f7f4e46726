"""claude_managed_events: bare and wrapped events, turns per model
request, results, interrupts, no-event spans."""

from __future__ import annotations

import pytest
from tests.formats._ext_formats_helpers import (
    assert_counts,
    codes,
    load_corpus,
    only,
    run_records,
    shape,
)

from loopscope.formats import claude_managed_events

SPEC = [
    {"id": "sevt_1", "type": "user.message", "processed_at": "2026-05-04T14:00:00Z",
     "content": [{"type": "text", "text": "Fetch the paper."}]},
    {"id": "sevt_2", "type": "span.model_request_start", "processed_at": "2026-05-04T14:00:00.1Z"},
    {"id": "sevt_3", "type": "agent.tool_use", "processed_at": "2026-05-04T14:00:02Z",
     "name": "web_fetch", "input": {"url": "https://example.org/paper"}},
    {"id": "sevt_4", "type": "agent.tool_result", "processed_at": "2026-05-04T14:00:03Z",
     "tool_use_id": "sevt_3", "is_error": True,
     "content": [{"type": "text", "text": "url_not_accessible"}]},
]


def test_spec_example_bare_events():
    sessions, problems = run_records(claude_managed_events, SPEC)
    s = only(sessions)
    assert shape(s) == "U A0[web_fetch] R0!"
    assert s.calls[0].id == "sevt_3" and s.calls[0].arguments == {"url": "https://example.org/paper"}
    assert s.events[2].text == "url_not_accessible"
    assert s.events[0].text == "Fetch the paper."
    assert s.agent.name == "Claude managed agent"
    assert s.started_at == "2026-05-04T14:00:00Z"
    assert not codes(problems, "warning")


def wrap(event: dict, **top: object) -> dict:
    return {"role": "agent", "kind": event["type"].split(".", 1)[1], "time": "t", "raw": event,
            **top}


def test_wrapped_events_use_raw_and_turns_end_at_model_request_start():
    events = [
        wrap({"id": "e0", "type": "session.thread_status_running", "agent_name": "auditor"}),
        wrap({"id": "e1", "type": "user.define_outcome", "description": "Audit it."}),
        wrap({"id": "e2", "type": "span.model_request_start"}),
        wrap({"id": "e3", "type": "agent.thinking"}),
        wrap({"id": "e4", "type": "agent.message", "content": [{"type": "text", "text": "Hi."}]}),
        wrap({"id": "e5", "type": "agent.tool_use", "name": "bash", "input": {"command": "ls"}}),
        wrap({"id": "e6", "type": "agent.tool_use", "name": "bash", "input": {"command": "pwd"}}),
        wrap({"id": "e7", "type": "span.model_request_end"}),
        wrap({"id": "e8", "type": "agent.tool_result", "tool_use_id": "e6", "is_error": True,
              "content": [{"type": "text", "text": "boom"}]}, content="error: boom"),
        wrap({"id": "e9", "type": "agent.tool_result", "tool_use_id": "e5"}, content="a b"),
        wrap({"id": "e10", "type": "span.model_request_start"}),
        wrap({"id": "e11", "type": "agent.message", "content": [{"type": "text", "text": "Ok"}]}),
        wrap({"id": "e12", "type": "span.model_request_start"}),
        wrap({"id": "e13", "type": "agent.message", "content": [{"type": "text", "text": "2"}]}),
        wrap({"id": "e14", "type": "user.interrupt"}),
        wrap({"id": "e14", "type": "user.interrupt"}),  # repeated event id
    ]
    sessions, problems = run_records(claude_managed_events, events)
    s = only(sessions)
    assert shape(s) == "U A0[bash, bash] R1! R0 A1 A2 O"
    assert s.events[0].text == "Audit it."
    assert s.turns[0].text == "Hi."
    assert s.events[2].text == "boom"  # from raw, not the wrapper's "error: " text
    assert s.events[3].text == "a b"  # raw lacks content: the wrapper's is used
    assert s.agent.version == "auditor"
    assert s.metadata["skipped"]["span.model_request_start"] == 3
    assert "duplicates_skipped" in codes(problems, "info")


# --------------------------------------------------------------------------- the real recordings (../shared/corpus)


@pytest.mark.corpus
def test_corpus_transcript():
    imported = load_corpus("claude-managed-agents/point-of-no-undo__transcript.jsonl")
    assert imported.detection.format == "claude_managed_events"
    s = only(imported.sessions)
    assert s.id == "point-of-no-undo__transcript"
    assert_counts(s, calls=95, turns=79, user=1, results=95, unanswered=0)
    others = [e for e in s.events if e.kind == "other"]
    assert len(others) == 1 and others[0] is s.events[-1]
    assert s.agent.version == "repro-auditor"
    errors = [e for e in s.events if e.kind == "tool_result" and e.is_error]
    assert all(not e.text.startswith("error: ") for e in errors)
    assert not [p for p in imported.problems if p.severity != "info"]
