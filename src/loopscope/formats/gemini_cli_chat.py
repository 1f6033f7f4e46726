"""Gemini CLI chat recording — ``gemini_cli_chat``.

Two layouts, one session per file:

* a JSON document ``{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...]}``;
* a JSONL recording: a metadata line, then message records, ``{"$set": {...}}`` metadata updates
  and ``{"$rewindTo": id}`` (drops that message and everything after it). A message id written
  several times keeps its first position and its last content.

Each ``gemini`` message is one assistant turn; its ``toolCalls[]`` carry their own results, which
are emitted right after the turn in call order, paired by structure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from loopscope.formats._ext_common import (
    CandidateReporter,
    as_str,
    extract_text,
    gemini_user,
    json_pointer,
)
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import CallDraft, SessionBuilder
from loopscope.formats.text import gemini_response_text
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "gemini_cli_chat"

AGENT = AgentInfo("Gemini CLI", None)
_MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_NOTICE_TYPES = frozenset({"info", "error", "warning"})
_META_KEYS = ("projectHash", "startTime", "lastUpdated", "kind", "summary")
_SHORT_DISPLAY = 200


def _thinking(thoughts: Any) -> str:
    if not isinstance(thoughts, list):
        return ""
    lines = []
    for thought in thoughts:
        if isinstance(thought, dict):
            subject = thought.get("subject")
            description = thought.get("description")
            if isinstance(subject, str) and isinstance(description, str):
                lines.append(f"{subject}: {description}")
            elif isinstance(description, str):
                lines.append(description)
            elif isinstance(subject, str):
                lines.append(subject)
        elif isinstance(thought, str):
            lines.append(thought)
    return "\n".join(lines)


def _result_content(result: Any) -> Any:
    """The ``response`` object of the first ``functionResponse`` (else the value as recorded)."""
    if isinstance(result, list):
        for part in result:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                response = part["functionResponse"].get("response")
                return response
        return result
    if isinstance(result, dict) and isinstance(result.get("functionResponse"), dict):
        return result["functionResponse"].get("response")
    return result


def _result_text(content: Any) -> str:
    """A Gemini response object gives its ``output``, else its ``error`` text, else compact JSON."""
    return gemini_response_text(content)


def _build(messages: list[tuple[Any, Origin]], header: dict[str, Any], ctx: ImportContext,
           report: CandidateReporter) -> Session | None:
    b = SessionBuilder()
    skipped: Counter[str] = Counter()
    for message, origin in messages:
        if not isinstance(message, dict):
            skipped["non-object"] += 1
            report.aggregate("unknown_record_type", "a message record is not an object; skipped",
                             line=origin.line, pointer=origin.pointer)
            continue
        typ = message.get("type")
        ts = as_str(message.get("timestamp"))
        content = message.get("content")
        if typ == "user":
            gemini_user(b, extract_text(content, "\n"), content, timestamp=ts, origin=origin)
        elif typ == "gemini":
            model = as_str(message.get("model"))
            turn = b.assistant(extract_text(content, ""), content,
                               thinking=_thinking(message.get("thoughts")), model=model,
                               timestamp=ts, origin=origin)
            tool_calls = message.get("toolCalls")
            if tool_calls is None:
                continue
            if not isinstance(tool_calls, list):
                report.once("toolCalls", "info", "malformed_tool_calls",
                            "a gemini message has 'toolCalls' that is not a list; no calls",
                            line=origin.line, pointer=origin.pointer)
                continue
            embedded: list[tuple[CallDraft, dict[str, Any], Origin]] = []
            for k, tc in enumerate(tool_calls):
                call_origin = Origin(origin.line, origin.pointer and f"{origin.pointer}/toolCalls/{k}")
                if not isinstance(tc, dict):
                    report("warning", "malformed_tool_call",
                           "a toolCalls element is not an object; it was kept as a call "
                           "without name or arguments", line=origin.line,
                           pointer=call_origin.pointer)
                    b.call(turn, "", None, "value", origin=call_origin)
                    continue
                draft = b.call(turn, tc.get("name"), tc.get("args"), "value", id=tc.get("id"),
                               origin=call_origin)
                if "result" in tc and tc["result"] is not None:
                    embedded.append((draft, tc, call_origin))
            for draft, tc, call_origin in embedded:
                result = tc["result"]
                content_value = _result_content(result)
                status = tc.get("status")
                meta: dict[str, Any] = {}
                if isinstance(status, str):
                    meta["status"] = status
                display = tc.get("resultDisplay")
                if isinstance(display, str) and len(display) <= _SHORT_DISPLAY:
                    meta["display"] = display
                b.result(draft.id, content_value, _result_text(content_value),
                         is_error=status in ("error", "cancelled"), meta=meta,
                         name=as_str(tc.get("name")), structure_call=draft,
                         timestamp=as_str(tc.get("timestamp")), origin=call_origin)
        elif isinstance(typ, str) and typ in _NOTICE_TYPES:
            skipped[str(typ)] += 1
        else:
            skipped[str(typ)] += 1
            report.aggregate("unknown_record_type",
                             f"a message of type {str(typ)[:40]!r} is not known; it made no event",
                             line=origin.line, pointer=origin.pointer)
    report.flush({"unknown_record_type": lambda n: (f"{plural(n, 'message')} of unknown type "
                                                   "made no event")})
    metadata: dict[str, Any] = {k: header[k] for k in _META_KEYS if k in header
                                and isinstance(header[k], str | int | float | bool)}
    if skipped:
        metadata["skipped"] = dict(skipped)
    session_id = header.get("sessionId")
    return b.build(id=session_id if isinstance(session_id, str) else "", source=ctx.path,
                   format=FORMAT_ID, agent=AGENT, metadata=metadata, report=report)


def _call_count(message: Any) -> int:
    """The tool calls a ``gemini`` message record holds (for the tally)."""
    if not isinstance(message, dict) or message.get("type") != "gemini":
        return 0
    calls = message.get("toolCalls")
    return len(calls) if isinstance(calls, list) else 0


def _contents(contents: list[Any], prefix: str, ctx: ImportContext,
              report: CandidateReporter) -> Session:
    """A checkpoint: Gemini API ``Content`` objects, the history the model was sent. A
    ``model`` content is one turn (``text`` parts; ``thought`` parts are thinking;
    ``functionCall`` parts are calls); a ``user`` content gives its ``functionResponse`` parts
    as results (by id, else by position), then its text as a user message."""
    b = SessionBuilder()
    for i, content in enumerate(contents):
        origin = Origin(pointer=f"{prefix}/{i}")
        parts = content.get("parts") if isinstance(content, dict) else None
        parts = parts if isinstance(parts, list) else []
        if isinstance(content, dict) and content.get("role") == "model":
            texts: list[str] = []
            thoughts: list[str] = []
            calls: list[tuple[int, dict[str, Any]]] = []
            for k, part in enumerate(parts):
                if not isinstance(part, dict):
                    continue
                if isinstance(part.get("functionCall"), dict):
                    calls.append((k, part["functionCall"]))
                elif isinstance(part.get("text"), str):
                    (thoughts if part.get("thought") is True else texts).append(part["text"])
            turn = b.assistant("".join(texts), parts, thinking="\n".join(thoughts),
                               origin=origin)
            for k, call in calls:
                b.call(turn, call.get("name"), call.get("args"), "value", id=call.get("id"),
                       origin=origin, element=("parts", k))
            continue
        texts = []
        for k, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            response = part.get("functionResponse")
            if isinstance(response, dict):
                value = response.get("response")
                b.result(response.get("id"), value, _result_text(value),
                         is_error=isinstance(value, dict) and "error" in value
                         and "output" not in value,
                         name=as_str(response.get("name")),
                         origin=Origin(pointer=f"{prefix}/{i}/parts/{k}"))
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
        if texts:
            gemini_user(b, "\n".join(texts), parts, origin=origin)
    return b.build(id="", source=ctx.path, format=FORMAT_ID, agent=AGENT,
                   metadata={"layout": "checkpoint"}, report=report)


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, 0)
    if isinstance(value, list):
        yield _contents(value, "", ctx, report)
        return
    if isinstance(value, dict) and isinstance(value.get("history"), list) \
            and not isinstance(value.get("messages"), list):
        yield _contents(value["history"], "/history", ctx, report)
        return
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        report("error", "session_failed", "the chat recording has no 'messages' list")
        yield None
        return
    messages = [(m, Origin(pointer=json_pointer("messages", i)))
                for i, m in enumerate(value["messages"])]
    yield _build(messages, value, ctx, report)


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, 0)
    header: dict[str, Any] = {}
    ordered: dict[Any, tuple[Any, Origin]] = {}
    for record in records:
        value = record.value
        origin = Origin(line=record.line)
        if not isinstance(value, dict):
            report.aggregate("unknown_record_type", "a line is not a JSON object; skipped",
                             line=record.line)
            continue
        if "$set" in value:
            update = value["$set"]
            if isinstance(update, dict):
                header.update(update)
            continue
        if "$rewindTo" in value:
            target = value["$rewindTo"]
            keys = list(ordered)
            if isinstance(target, str) and target in ordered:
                cut = keys.index(target)
                for key in keys[cut:]:
                    removed, removed_origin = ordered.pop(key)
                    calls = _call_count(removed)
                    if calls:  # the recording itself took these back
                        ctx.set_aside_calls("removed by $rewindTo", line=removed_origin.line,
                                            count=calls)
            else:
                report("warning", "invalid_record",
                       f"$rewindTo names message {str(target)[:60]!r}, which is not in the "
                       "recording; nothing was removed", line=record.line)
            continue
        typ = value.get("type")
        if "sessionId" in value and not (isinstance(typ, str) and typ in _MESSAGE_TYPES):
            header.update(value)
            continue
        if typ is None and "messages" not in value and not ordered and not header:
            header.update(value)
            continue
        message_id = value.get("id")
        slot: Any = message_id if isinstance(message_id, str) else ("line", record.line)
        # a dict keeps the first insertion position: the last copy wins at the first position
        earlier = ordered.get(slot)
        if earlier is not None:
            calls = _call_count(earlier[0])
            if calls:  # an earlier copy of a message that was written again
                ctx.set_aside_calls("superseded copy of a message", line=earlier[1].line,
                                    count=calls)
        ordered[slot] = (value, origin)
    yield _build(list(ordered.values()), header, ctx, report)
