"""Qwen Code chat recording — ``qwen_code_chat``.

Qwen Code (``@qwen-code/qwen-code``) writes each session as JSON Lines under
``~/.qwen/projects/<sanitized-cwd>/chats/<sessionId>.jsonl`` (its ``ChatRecordingService``).
Every line is a record ``{uuid, parentUuid, sessionId, timestamp, type, cwd, version, …}``:

* ``user``: ``message`` is a Gemini API ``Content`` (``{"role": "user", "parts": [...]}``); its
  text parts are the prompt (``subtype: "goal_runtime"`` records are runtime-scheduled goal
  turns, which Qwen Code also treats as a new interaction);
* ``assistant``: ``message`` is a ``model`` content: ``text`` parts are the reply, parts with
  ``thought: true`` the thinking, ``functionCall`` parts (``{id, name, args}``) the tool calls;
  ``model`` names the model. A record without ``message`` makes an empty turn;
* ``tool_result``: ``functionResponse`` parts (``{id, name, response}``) answer calls by id;
  ``toolCallResult.status`` says whether the call failed;
* ``system``: slash commands, artifacts, compression and other bookkeeping — no event.

Records are read in file order (one session per file).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from loopscope.formats._ext_common import CandidateReporter, as_str, json_objects
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import SessionBuilder
from loopscope.formats.text import gemini_response_text
from loopscope.model import AgentInfo, Origin, Session

__all__ = ["FORMAT_ID", "import_records", "is_record"]

FORMAT_ID = "qwen_code_chat"
AGENT = AgentInfo("Qwen Code", None)
RECORD_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
_META_KEYS = ("cwd", "version", "gitBranch")


def is_record(value: Any) -> bool:
    """A Qwen Code chat record: a known ``type``, ``uuid`` and ``sessionId``, and a
    ``message`` that is a Gemini ``Content`` (``parts``, where Claude Code has ``content``)."""
    if type(value) is not dict:
        return False
    typ = value.get("type")
    if type(typ) is not str or typ not in RECORD_TYPES:
        return False
    message = value.get("message")
    return ("uuid" in value and "sessionId" in value and type(message) is dict
            and type(message.get("parts")) is list)


def _parts(value: dict[str, Any]) -> list[Any]:
    message = value.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return parts if isinstance(parts, list) else []


def _texts(parts: list[Any], *, thought: bool) -> list[str]:
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
            and (p.get("thought") is True) is thought]


def call_parts(value: Any) -> list[dict[str, Any]]:
    """The ``functionCall`` objects of an ``assistant`` record (for the import tally)."""
    if type(value) is not dict or value.get("type") != "assistant":
        return []
    return [p["functionCall"] for p in _parts(value)
            if type(p) is dict and type(p.get("functionCall")) is dict]


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    report = CandidateReporter(ctx, 0)
    b = SessionBuilder()
    skipped: Counter[str] = Counter()
    header: dict[str, Any] = {}
    session_id: str | None = None
    for record in json_objects(records, skipped, report, "a line is not a JSON object; skipped"):
        value = record.value
        origin = Origin(line=record.line)
        if session_id is None and isinstance(value.get("sessionId"), str):
            session_id = value["sessionId"]
        for key in _META_KEYS:
            if key not in header and isinstance(value.get(key), str):
                header[key] = value[key]
        typ = value.get("type")
        ts = as_str(value.get("timestamp"))
        parts = _parts(value)
        if typ == "user":
            b.user("\n".join(_texts(parts, thought=False)), value.get("message"), timestamp=ts,
                   origin=origin)
        elif typ == "assistant":
            turn = b.assistant("".join(_texts(parts, thought=False)), value.get("message"),
                               thinking="\n".join(_texts(parts, thought=True)),
                               model=as_str(value.get("model")), timestamp=ts, origin=origin)
            for call in call_parts(value):
                b.call(turn, call.get("name"), call.get("args"), "value", id=call.get("id"),
                       origin=origin)
        elif typ == "tool_result":
            result = value.get("toolCallResult")
            status = result.get("status") if isinstance(result, dict) else None
            for part in parts:
                response = part.get("functionResponse") if isinstance(part, dict) else None
                if not isinstance(response, dict):
                    continue
                content = response.get("response")
                b.result(response.get("id"), content, gemini_response_text(content),
                         is_error=status in ("error", "cancelled"),
                         meta={"status": status} if isinstance(status, str) else {},
                         name=as_str(response.get("name")), timestamp=ts, origin=origin)
        elif typ == "system":
            skipped["system"] += 1
        else:
            skipped[str(typ)[:40]] += 1
            report.aggregate("unknown_record_type",
                             f"a record of type {str(typ)[:40]!r} is not known; it made no event",
                             line=record.line)
    report.flush({"unknown_record_type": lambda n: f"{n} record(s) of unknown type made no event"})
    metadata: dict[str, Any] = dict(header)
    if skipped:
        metadata["skipped"] = dict(skipped)
    yield b.build(id=session_id or "", source=ctx.path, format=FORMAT_ID, agent=AGENT,
                  metadata=metadata, report=report)
