"""Gemini CLI ``--output-format stream-json`` transcript — ``gemini_cli_stream``.

One JSON event per line. Each ``init`` after the first starts a new session candidate (a new
CLI run); ``user`` messages written directly before that ``init`` belong to the new run.
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
    json_objects,
)
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import SessionBuilder, TurnDraft
from loopscope.model import AgentInfo, Origin, Session
from loopscope.words import plural

FORMAT_ID = "gemini_cli_stream"

AGENT = AgentInfo("Gemini CLI", None)


def _is_user_message(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("type") == "message"
            and value.get("role") == "user")


def _timestamp(value: dict[str, Any]) -> str | None:
    return as_str(value.get("timestamp")) or as_str(value.get("ts"))


def _build_run(records: list[Record], ctx: ImportContext, candidate: int | None) -> Session | None:
    report = CandidateReporter(ctx, candidate)
    b = SessionBuilder()
    turn: TurnDraft | None = None
    session_id: str | None = None
    models: list[str] = []
    skipped: Counter[str] = Counter()
    metadata: dict[str, Any] = {}

    for record in json_objects(records, skipped, report,
                               "a line is not a JSON object; it made no event"):
        value = record.value
        origin = Origin(line=record.line)
        typ = value.get("type")
        ts = _timestamp(value)
        if typ == "message":
            role = value.get("role")
            content = value.get("content")
            if role == "assistant":
                if turn is None:
                    turn = b.assistant("", [], timestamp=ts, origin=origin)
                turn.text += extract_text(content, "")
                turn.content.append(content)
                continue
            turn = None
            if role == "user":
                gemini_user(b, extract_text(content, "\n"), content, timestamp=ts, origin=origin)
            else:
                shown = role if isinstance(role, str) else None
                report.once(str(role), "info", "unknown_role",
                            f"a message with role {str(role)[:40]!r} was kept as an 'other' event",
                            line=record.line)
                b.other(shown, extract_text(content, "\n"), content, timestamp=ts, origin=origin)
        elif typ == "tool_use":
            if turn is None:
                turn = b.assistant("", [], timestamp=ts, origin=origin)
            turn.content.append({k: v for k, v in value.items() if k != "ts"})
            parameters = value.get("parameters")
            b.call(turn, value.get("tool_name"), parameters,
                   "json_text" if isinstance(parameters, str) else "value",
                   id=value.get("tool_id"), origin=origin)
        elif typ == "tool_result":
            turn = None
            status = value.get("status")
            output = value.get("output")
            error = value.get("error")
            if isinstance(output, str):
                text = output
            elif output is None and isinstance(error, dict) and isinstance(error.get("message"), str):
                text = error["message"]
            elif output is None and isinstance(error, str):
                text = error
            else:
                text = extract_text(output, "\n")
            meta: dict[str, Any] = {}
            if isinstance(status, str):
                meta["status"] = status
            if isinstance(error, dict) and isinstance(error.get("type"), str):
                meta["error_type"] = error["type"]
            b.result(value.get("tool_id"), output, text, is_error=status == "error", meta=meta,
                     timestamp=ts, origin=origin)
        elif typ == "init":
            turn = None
            if session_id is None and isinstance(value.get("session_id"), str):
                session_id = value["session_id"]
            if isinstance(value.get("model"), str):
                models.append(value["model"])
        elif typ == "result":
            turn = None
            metadata["result"] = {k: value[k] for k in ("status", "stats", "error")
                                  if k in value}
            skipped["result"] += 1
        elif typ == "error":
            turn = None
            message = value.get("message")
            severity = value.get("severity")
            report("info", "upstream_error",
                   f"Gemini CLI logged an error ({str(severity)[:20]}): "
                   f"{str(message)[:200]}", line=record.line)
            skipped["error"] += 1
        else:
            turn = None
            skipped[str(typ)] += 1
            report.aggregate("unknown_record_type",
                             f"a record of type {str(typ)[:40]!r} is not known; it made no event",
                             line=record.line)

    report.flush({"unknown_record_type": lambda n: (f"{plural(n, 'record')} of unknown type "
                                                   "made no event")})
    if skipped:
        metadata["skipped"] = dict(skipped)
    return b.build(id=session_id or "", source=ctx.path, format=FORMAT_ID, agent=AGENT,
                   models=models, metadata=metadata, report=report)


def _split_runs(records: Iterable[Record]) -> Iterator[list[Record]]:
    """Group records into CLI runs: each ``init`` starts one (one session per run), taking along
    the user messages written directly before it."""
    current: list[Record] = []
    seen_init = False
    for record in records:
        value = record.value
        if isinstance(value, dict) and value.get("type") == "init":
            if seen_init:
                # user messages written directly before this init belong to the new run
                cut = len(current)
                while cut > 0 and _is_user_message(current[cut - 1].value):
                    cut -= 1
                carried = current[cut:]
                del current[cut:]
                yield current
                current = carried
            seen_init = True
        current.append(record)
    yield current


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    for n, run in enumerate(_split_runs(records)):
        yield _build_run(run, ctx, n)
