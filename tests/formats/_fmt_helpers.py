"""Helpers for the importer-framework tests: write a file, load it, render a session compactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopscope.formats import ImportLimits, load_file
from loopscope.formats.base import FileImport
from loopscope.model import Session


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def jsonl(*values: Any) -> str:
    return "".join(json.dumps(v) + "\n" for v in values)


def load(tmp_path: Path, name: str, content: str | bytes | Any, *,
         limits: ImportLimits | None = None, format: str | None = None) -> FileImport:
    if not isinstance(content, str | bytes):
        content = json.dumps(content)
    return load_file(write(tmp_path, name, content), limits, format)


def shape(session: Session) -> str:
    """A compact shape of the events: ``S U A0[run, read] R1 R0 A1("…")`` (system, user, turn 0
    with its calls, results paired with calls 1 and 0, a prose turn)."""
    out: list[str] = []
    for e in session.events:
        if e.kind == "assistant":
            if e.tool_calls:
                out.append(f"A{e.turn}[{', '.join(c.name for c in e.tool_calls)}]")
            else:
                out.append(f'A{e.turn}("{e.text}")')
        elif e.kind == "tool_result":
            mark = "?" if e.call_index is None else str(e.call_index)
            out.append(f"R{mark}{'!' if e.is_error else ''}")
        else:
            out.append({"user": "U", "system": "S", "other": "O", "compaction": "C"}[e.kind])
    return " ".join(out)


def codes(result: FileImport, severity: str | None = None) -> list[str]:
    return [p.code for p in result.problems if severity is None or p.severity == severity]


def texts(result: FileImport) -> list[str]:
    return [p.text() for p in result.problems]
