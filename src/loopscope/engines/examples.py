"""Tiny sessions built in code, for the engines' worked examples (the Guide page).

An example is a list of turns; it is written as an OpenClaw/pi session file and read back by
the real importer, so every engine sees it exactly as it would see a recorded session
(compactions and user messages included).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from loopscope.model import Session

Call = tuple[str, dict[str, Any], str] | tuple[str, dict[str, Any], str, dict[str, Any]]
"""(tool, arguments, answer[, details]); an answer starting with ``ERROR:`` is recorded as an
error; ``details`` (optional) is recorded as the result's ``details`` object, as the guard's
tools write it (an exit code, ``changed: false``, …)."""

Turn = Any
"""A list of calls (one assistant turn), a ``str`` (a reply without tools),
``("user", text)`` or ``("compaction", summary)``."""


def session_jsonl(key: str, turns: Sequence[Turn]) -> str:
    """The example as an OpenClaw v3 session file (one user request, then ``turns``)."""
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": f"guide-{key}",
         "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/guide"}
    ]
    parent: str | None = None
    n = 0

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent, n
        n += 1
        entry_id = f"e{n:04d}"
        entry = {**entry, "id": entry_id, "parentId": parent,
                 "timestamp": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z"}
        parent = entry_id
        lines.append(entry)

    def text(role: str, value: str, **more: Any) -> dict[str, Any]:
        return {"type": "message",
                "message": {"role": role, "content": [{"type": "text", "text": value}], **more}}

    add(text("user", "Please fix the failing build."))
    call_no = 0
    for turn in turns:
        if isinstance(turn, str):
            add(text("assistant", turn, stopReason="stop"))
        elif isinstance(turn, tuple) and turn[0] == "user":
            add(text("user", turn[1]))
        elif isinstance(turn, tuple) and turn[0] == "compaction":
            add({"type": "compaction", "summary": turn[1], "firstKeptEntryId": parent,
                 "tokensBefore": 150000})
        else:
            content = []
            results = []
            for tool, args, answer, *more in turn:
                call_no += 1
                cid = f"call_{call_no:03d}"
                content.append({"type": "toolCall", "id": cid, "name": tool, "arguments": args})
                is_error = answer.startswith("ERROR:")
                body = answer[len("ERROR:"):].strip() if is_error else answer
                result = {"role": "toolResult", "toolCallId": cid, "toolName": tool,
                          "content": [{"type": "text", "text": body}], "isError": is_error}
                if more:
                    result["details"] = more[0]
                results.append(result)
            add({"type": "message",
                 "message": {"role": "assistant", "content": content, "stopReason": "toolUse"}})
            for r in results:
                add({"type": "message", "message": r})
    return "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"


def tiny_session(key: str, turns: Sequence[Turn]) -> Session:
    """The example read by the OpenClaw session importer, source ``guide/<key>.jsonl``."""
    from loopscope.formats import ImportContext, ImportLimits, Record
    from loopscope.formats.openclaw_session import import_records

    text = session_jsonl(key, turns)
    records = [Record(n, json.loads(line)) for n, line in enumerate(text.splitlines(), 1)]
    ctx = ImportContext(f"guide/{key}.jsonl", ImportLimits())
    sessions = [s for s in import_records(records, ctx) if s is not None]
    if len(sessions) != 1:
        raise ValueError(f"guide example {key!r} did not import as one session")
    return sessions[0]
