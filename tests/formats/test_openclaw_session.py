"""The OpenClaw / pi session JSONL v3 importer (hand-written cases and the real
``openclaw`` / ``pi-agent`` recordings)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from tests.engines.openclaw._openclaw_helpers import CORPUS, load_file_sessions

from loopscope.formats.base import ImportContext, ImportLimits, Record
from loopscope.formats.openclaw_session import FORMAT_ID, import_records, tool_result_text
from loopscope.model import AssistantTurn, Compaction, Session, SystemMessage, ToolResult

PI = CORPUS / "pi-agent"

# file, id, calls, turns, user, results, unanswered, system events, expected warnings
CONFORMANCE = [
    ("gjc__01-youtube-transcript-extraction__session.jsonl",
     "gjc__01-youtube-transcript-extraction__session", 205, 156, 8, 204, 1, 7,
     {(1, "broken_parent_link"), (60, "invalid_escape")}),
    ("gjc__04-awesome-agent-ide__session.jsonl", "scc6968a3db48", 78, 60, 6, 78, 0, 6,
     {(44, "invalid_escape")}),
    ("lamurian-paradocs__session.jsonl", "019f6dc0-804c-7dde-9ec1-e78ed4f4a0af", 54, 32, 4, 54,
     0, 0, set()),
]


@pytest.mark.corpus
@pytest.mark.parametrize("row", CONFORMANCE, ids=[r[0] for r in CONFORMANCE])
def test_corpus_conformance(row: tuple[Any, ...]) -> None:
    name, session_id, calls, turns, users, results, unanswered, systems, warnings = row
    path = PI / name
    if not path.is_file():
        pytest.skip(f"corpus file not found: {path}")
    sessions, problems = load_file_sessions(path)
    assert len(sessions) == 1
    session = sessions[0]
    assert session.format == FORMAT_ID
    assert session.id == session_id
    counts = session.counts()
    assert (counts["calls"], counts["turns"], counts["user_messages"], counts["results"],
            counts["unanswered_calls"], counts["compactions"]) == (calls, turns, users, results,
                                                                   unanswered, 0)
    assert sum(isinstance(e, SystemMessage) for e in session.events) == systems
    assert {(p.line, p.code) for p in problems if p.severity == "warning"} == warnings
    assert not [p for p in problems if p.severity == "error"]


@pytest.mark.corpus
def test_corpus_spot_checks() -> None:
    path = PI / "lamurian-paradocs__session.jsonl"
    if not path.is_file():
        pytest.skip("corpus absent")
    session = load_file_sessions(path)[0][0]
    first = session.turns[0]
    assert [c.name for c in first.tool_calls] == ["ask", "search_para_docs"]
    errors = [t for t in session.turns if t.stop_reason == "error"]
    assert len(errors) == 6
    assert all(t.error == "Request timed out." and not t.tool_calls for t in errors)
    assert session.agent.name == "pi-compatible session"


# --------------------------------------------------------------------------- synthetic files


def _import(lines: list[Any], skipped: dict[int, str] | None = None
            ) -> tuple[list[Session | None], ImportContext]:
    ctx = ImportContext("f.jsonl", ImportLimits())
    records = []
    for number, value in enumerate(lines, start=1):
        if value is _SKIP:
            ctx.skipped_lines[number] = "invalid_json_line"
            continue
        records.append(Record(number, value))
    if skipped:
        ctx.skipped_lines.update(skipped)
    return list(import_records(records, ctx)), ctx


_SKIP = object()


def header(**extra: Any) -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": "sess-1", "timestamp":
            "2026-05-04T08:00:00.000Z", "cwd": "/srv/demo", **extra}


def msg(entry_id: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent,
            "timestamp": "2026-05-04T08:00:01.000Z", "message": message}


def user(entry_id: str, parent: str | None, text: str = "hi") -> dict[str, Any]:
    return msg(entry_id, parent, {"role": "user", "content": [{"type": "text", "text": text}]})


def assistant(entry_id: str, parent: str | None, *calls: tuple[str, str, Any],
              text: str = "") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": cid, "name": name, "arguments": args}
                for cid, name, args in calls]
    return msg(entry_id, parent, {"role": "assistant", "content": content, "provider": "demo",
                                  "model": "small-1", "stopReason": "toolUse"})


def result(entry_id: str, parent: str | None, call_id: str, text: str, **extra: Any
           ) -> dict[str, Any]:
    return msg(entry_id, parent, {"role": "toolResult", "toolCallId": call_id, "toolName": "x",
                                  "content": [{"type": "text", "text": text}],
                                  "isError": False, **extra})


def test_spec_example() -> None:
    lines = [
        header(),
        user("b1", None, "Is the nightly job done?"),
        assistant("b2", "b1", ("call_7", "exec", {"command": "tail -n 1 nightly.log"})),
        result("b3", "b2", "call_7", "step 4/9", details={"status": "completed", "exitCode": 0,
                                                           "aggregated": "step 4/9"}),
        {"type": "compaction", "id": "b4", "parentId": "b3", "summary": "Nightly at 4/9.",
         "firstKeptEntryId": "b2", "tokensBefore": 120000},
        assistant("b5", "b4", text="Still running (step 4/9)."),
    ]
    (session,), ctx = _import(lines)
    assert session is not None
    kinds = [e.kind for e in session.events]
    assert kinds == ["user", "assistant", "tool_result", "compaction", "assistant"]
    res = session.events[2]
    assert isinstance(res, ToolResult)
    assert res.details == {"status": "completed", "exitCode": 0, "aggregated": "step 4/9"}
    compaction = session.events[3]
    assert isinstance(compaction, Compaction)
    assert (compaction.tokens_before, compaction.first_kept) == (120000, "b2")
    assert session.id == "sess-1" and session.models == ("demo/small-1",)
    assert session.metadata["cwd"] == "/srv/demo"
    assert session.turns[1].text == "Still running (step 4/9)."
    assert not [p for _, p in ctx.problems if p.severity != "info"]


def test_active_branch_only() -> None:
    lines = [
        header(),
        user("u1", None),
        assistant("a1", "u1", ("c1", "read", {"path": "/old"})),  # abandoned branch
        result("r1", "a1", "c1", "old"),
        assistant("a2", "u1", ("c2", "read", {"path": "/new"})),
        result("r2", "a2", "c2", "new"),
    ]
    (session,), _ = _import(lines)
    assert session is not None
    assert [c.arguments for c in session.calls] == [{"path": "/new"}]
    assert session.metadata["abandoned_entries"] == 2


def test_missing_parent_ends_the_walk() -> None:
    lines = [header(), user("u1", None), assistant("a1", "zz", ("c1", "read", {}))]
    (session,), ctx = _import(lines)
    assert session is not None
    assert session.counts()["user_messages"] == 0
    assert [(p.line, p.code) for _, p in ctx.problems if p.severity == "warning"] == [
        (3, "broken_parent_link")]


def test_skipped_line_continues_with_previous_line() -> None:
    lines = [header(), user("u1", None), assistant("a1", "u1", ("c1", "read", {})), _SKIP,
             assistant("a2", "lost", text="after")]
    (session,), ctx = _import(lines)
    assert session is not None
    assert [e.kind for e in session.events] == ["user", "assistant", "assistant"]
    assert [(p.line, p.code) for _, p in ctx.problems if p.severity == "warning"] == [
        (5, "broken_parent_link")]


def test_cycle_is_reported() -> None:
    lines = [header(), user("u1", "a1"), assistant("a1", "u1", text="x")]
    (session,), ctx = _import(lines)
    assert session is not None
    assert any(p.code == "broken_parent_link" and "cycle" in p.message for _, p in ctx.problems)


def test_legacy_entries_without_ids_are_read_in_file_order() -> None:
    lines = [{"type": "message", "message": {"role": "user", "content": "hi"}},
             {"type": "message", "message": {"role": "assistant", "content": [
                 {"type": "toolCall", "id": "c", "name": "ls", "arguments": {}}]}}]
    (session,), _ = _import(lines)
    assert session is not None and session.counts()["calls"] == 1
    assert session.id == ""


def test_partial_json_arguments_and_error_results() -> None:
    lines = [header(), user("u1", None),
             msg("a1", "u1", {"role": "assistant", "content": [
                 {"type": "toolCall", "id": "c1", "name": "read", "partialJson": '{"path": "/a"'},
                 {"type": "thinking", "thinking": "hmm"}], "stopReason": "toolUse"}),
             msg("r1", "a1", {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                              "content": [{"type": "text", "text": " a "},
                                          {"type": "image", "data": "x"},
                                          {"type": "text", "text": "b"}], "isError": True})]
    (session,), _ = _import(lines)
    assert session is not None
    call = session.calls[0]
    assert (call.arguments_kind, call.raw_arguments) == ("json_text", '{"path": "/a"')
    assert session.turns[0].thinking == "hmm"
    res = session.events[2]
    assert isinstance(res, ToolResult) and res.is_error and res.text == " a \nb"


def test_compaction_summary_message_fills_the_summary() -> None:
    lines = [header(), user("u1", None),
             {"type": "compaction", "id": "k1", "parentId": "u1", "tokensBefore": 5},
             msg("s1", "k1", {"role": "compactionSummary", "summary": "the summary"}),
             msg("s2", "s1", {"role": "compactionSummary", "summary": "orphan"})]
    (session,), _ = _import(lines)
    assert session is not None
    compaction = session.events[1]
    assert isinstance(compaction, Compaction) and compaction.summary == "the summary"
    assert [e.kind for e in session.events] == ["user", "compaction", "other"]


def test_other_entry_types() -> None:
    lines = [header(),
             {"type": "model_change", "id": "m1", "parentId": None, "provider": "p",
              "modelId": "m"},
             {"type": "custom", "id": "x1", "parentId": "m1",
              "customType": "openclaw:bootstrap-context:full", "data": {"runId": "r-1"}},
             {"type": "custom_message", "id": "x2", "parentId": "x1",
              "customType": "volatile-project-context", "content": "ctx", "display": False},
             {"type": "session_info", "id": "x3", "parentId": "x2", "name": "My session"},
             {"type": "branch_summary", "id": "x4", "parentId": "x3", "fromId": "a",
              "summary": "bs"},
             msg("x5", "x4", {"role": "bashExecution", "command": "ls", "output": "a"}),
             {"type": "mystery", "id": "x6", "parentId": "x5"},
             msg("x7", "x6", {"role": "robot", "content": "beep"})]
    (session,), ctx = _import(lines)
    assert session is not None
    assert [e.kind for e in session.events] == ["system", "other", "other", "other"]
    assert session.events[0].recorded_role == "volatile-project-context"  # type: ignore[union-attr]
    assert session.events[2].text == "ls\na"  # type: ignore[union-attr]
    assert session.title == "My session"
    assert session.models == ("p/m",)
    assert session.metadata["run_ids"] == ["r-1"]
    assert {p.code for _, p in ctx.problems} >= {"unknown_record_type", "unknown_role"}


def test_invalid_records_are_skipped() -> None:
    lines = [header(), [1, 2], {"type": "message", "id": "a", "parentId": None},
             user("u1", "a")]
    (session,), ctx = _import(lines)
    assert session is not None and session.counts()["user_messages"] == 1
    codes = [p.code for _, p in ctx.problems]
    assert codes.count("invalid_record") == 2


def test_header_only_file_gives_no_session() -> None:
    (session,), ctx = _import([header()])
    assert session is None
    assert [p.code for _, p in ctx.problems] == ["empty_session"]


def test_error_turns_are_prose_turns() -> None:
    lines = [header(), user("u1", None),
             msg("a1", "u1", {"role": "assistant", "content": [], "stopReason": "error",
                              "errorMessage": "Request timed out."})]
    (session,), _ = _import(lines)
    assert session is not None
    turn = session.events[1]
    assert isinstance(turn, AssistantTurn) and turn.error == "Request timed out."


def test_tool_result_text_rule() -> None:
    assert tool_result_text("as is ") == "as is "
    assert tool_result_text([{"type": "x", "text": "a"}, {"text": "b"}, "c"]) == "a"
    assert tool_result_text(None) == ""


def test_never_raises_on_random_records() -> None:
    rng = random.Random(3)
    pool: list[Any] = [None, 1, "x", [], {}, {"type": "message"}, {"type": "message",
                                                                    "message": 5},
                       {"type": "message", "id": 3, "parentId": []},
                       {"type": "compaction", "id": "k", "parentId": "k"},
                       msg("a", "b", {"role": "assistant", "content": [{"type": "toolCall"}]}),
                       msg("b", "a", {"role": "toolResult", "content": {"x": 1},
                                      "details": [1]}),
                       {"type": "session", "id": 5}]
    for _ in range(300):
        lines = [rng.choice(pool) for _ in range(rng.randint(0, 8))]
        sessions, ctx = _import(json.loads(json.dumps(lines)))
        assert len(sessions) == 1
        assert not [p for _, p in ctx.problems if p.code == "internal_error"]


def test_parity_jsonl_files_import_cleanly() -> None:
    from tests.conftest import SHARED

    parity = SHARED / "reference" / "parity" / "openclaw" / "sessions"
    if not parity.is_dir():
        pytest.skip("parity set absent")
    for path in sorted(parity.glob("*.jsonl")):
        sessions, problems = load_file_sessions(path)
        assert len(sessions) == 1 and sessions[0].id
        assert not [p for p in problems if p.severity != "info"], path.name
