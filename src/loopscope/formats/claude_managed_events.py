"""Claude managed-agents session events — ``claude_managed_events``.

JSONL of session events, bare (``{"id": "sevt_…", "type": "agent.tool_use", …}``) or wrapped by
a publisher as ``{"role", "kind", "time", "tool"?, "content", "raw": <event>}`` (read ``raw``;
the top-level ``content`` only when ``raw`` lacks it). One session per file. A turn is a maximal
run of ``agent.message`` / ``agent.thinking`` / ``*_tool_use`` events, ended by any result, any
user event or ``span.model_request_start``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_str, extract_text, json_objects
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import SessionBuilder, TurnDraft
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "claude_managed_events"

AGENT_NAME = "Claude managed agent"
_TOOL_USES = frozenset({"agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use"})
_TOOL_RESULTS = frozenset({"agent.tool_result", "agent.mcp_tool_result", "user.custom_tool_result"})


def _event(value: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The event itself, and whether it came wrapped."""
    raw = value.get("raw")
    if isinstance(raw, dict):
        if "content" not in raw and "content" in value:
            raw = {**raw, "content": value["content"]}
        return raw, True
    return value, False


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, 0)
    b = SessionBuilder()
    turn: TurnDraft | None = None
    skipped: Counter[str] = Counter()
    agent_version: str | None = None
    models: list[str] = []
    seen_ids: set[str] = set()
    duplicates = 0
    first_dup: int | None = None

    for record in json_objects(records, skipped, report, "a line is not a JSON object; skipped"):
        origin = Origin(line=record.line)
        event, wrapped = _event(record.value)
        typ = event.get("type")
        if not isinstance(typ, str) and wrapped:
            typ = record.value.get("type")
        if not isinstance(typ, str):
            typ = None
        event_id = event.get("id")
        if isinstance(event_id, str):
            if event_id in seen_ids:
                duplicates += 1
                first_dup = first_dup or record.line
                if typ in _TOOL_USES:
                    ctx.set_aside_calls("repeated event id", line=record.line)
                continue
            seen_ids.add(event_id)
        ts = as_str(event.get("processed_at")) or as_str(record.value.get("time"))
        content = event.get("content")
        if typ in ("agent.message", "agent.thinking"):
            if turn is None:
                turn = b.assistant("", [], timestamp=ts, origin=origin)
            elif ts is not None:
                b.timestamps.append(ts)
            turn.content.append(event)
            if typ == "agent.message":
                turn.text += extract_text(content, "")
            else:
                thinking = event.get("thinking")
                text = thinking if isinstance(thinking, str) else extract_text(content, "\n")
                if text:
                    turn.thinking = turn.thinking + "\n" + text if turn.thinking else text
            continue
        if typ in _TOOL_USES:
            if turn is None:
                turn = b.assistant("", [], timestamp=ts, origin=origin)
            elif ts is not None:
                b.timestamps.append(ts)
            turn.content.append(event)
            b.call(turn, event.get("name"), event.get("input"), "value", id=event_id,
                   origin=origin)
            continue
        if typ in _TOOL_RESULTS:
            turn = None
            call_id = event.get("tool_use_id")
            if not isinstance(call_id, str):
                call_id = event.get("custom_tool_use_id")
            b.result(call_id, content, extract_text(content, "\n"),
                     is_error=event.get("is_error") is True, timestamp=ts, origin=origin)
            continue
        if typ == "user.message":
            turn = None
            b.user(extract_text(content, "\n"), content, timestamp=ts, origin=origin)
            continue
        if typ == "user.define_outcome":
            turn = None
            description = event.get("description")
            b.user(description if isinstance(description, str) else extract_text(description, "\n"),
                   description, timestamp=ts, origin=origin)
            continue
        if typ == "user.interrupt":
            turn = None
            b.other(typ, extract_text(content, "\n"), content, timestamp=ts, origin=origin)
            continue
        if typ == "span.model_request_start":
            turn = None
            skipped[typ] += 1
            continue
        if isinstance(typ, str) and typ.startswith(("span.", "session.")):
            if agent_version is None and isinstance(event.get("agent_name"), str):
                agent_version = event["agent_name"]
            model = event.get("model")
            if isinstance(model, str):
                models.append(model)
            skipped[typ] += 1
            continue
        if isinstance(typ, str) and typ.startswith("user."):
            turn = None
        skipped[str(typ)] += 1
        report.aggregate("unknown_record_type",
                         f"an event of type {str(typ)[:40]!r} is not known; it made no event",
                         line=record.line)

    if duplicates:
        report("info", "duplicates_skipped",
               plural(duplicates, "repeated event (same event id) was",
                      "repeated events (same event id) were") + " dropped", line=first_dup,
               count=duplicates)
    report.flush({"unknown_record_type": lambda n: (f"{plural(n, 'event')} of unknown type "
                                                   "made no event")})
    metadata: dict[str, Any] = {}
    if skipped:
        metadata["skipped"] = dict(skipped)
    yield b.build(id="", source=ctx.path, format=FORMAT_ID,
                  agent=AgentInfo(AGENT_NAME, agent_version), models=models,
                  metadata=metadata, report=report)
