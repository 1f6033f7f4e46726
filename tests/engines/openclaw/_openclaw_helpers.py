"""Shared helpers for the OpenClaw engine tests: paths, session loading, call-level drivers.

:func:`load_session` reads a session file through ``loopscope.formats.load_file`` when the
loader is importable and works, and otherwise through a small local reader: OpenClaw JSONL via
``loopscope.formats.openclaw_session.import_records`` and OpenAI-chat ``.json`` bodies via
``SessionBuilder``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from loopscope.engines.openclaw import (
    UNDEFINED,
    LoopState,
    OpenClawConfig,
    detect_tool_call_loop,
    record_tool_call,
    record_tool_call_outcome,
)
from loopscope.formats.base import ImportContext, ImportLimits, Record
from loopscope.formats.builder import SessionBuilder
from loopscope.model import Problem, Session

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("LOOPSCOPE_SHARED", REPO_ROOT.parent / "shared"))
VECTORS = SHARED / "reference" / "openclaw_vectors.json"
PARITY = SHARED / "reference" / "parity" / "openclaw"
CORPUS = Path(os.environ.get("LOOPSCOPE_CORPUS", SHARED / "corpus"))

EN: dict[str, Any] = {"enabled": True}


# --------------------------------------------------------------------------- loading


def _load_via_loader(path: Path) -> tuple[list[Session], list[Problem]] | None:
    try:
        from loopscope.formats import load_file
    except ImportError:
        return None
    try:
        imported = load_file(str(path))
    except Exception:  # the loader is still being written: fall back
        return None
    if imported.detection.format is None:
        return None
    return list(imported.sessions), list(imported.problems)


def read_jsonl_records(path: Path, ctx: ImportContext) -> Iterator[Record]:
    """Parse lines (``\\n`` only) with orjson; invalid lines are reported and skipped."""
    data = path.read_bytes()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            ctx.skipped_lines[number] = "invalid_json_line"
            ctx.problem("warning", "invalid_json_line", f"line is not valid JSON ({exc})",
                        line=number)
            continue
        yield Record(number, value)


def _openclaw_fallback(path: Path) -> tuple[list[Session], list[Problem]]:
    from loopscope.formats.openclaw_session import import_records

    ctx = ImportContext(str(path), ImportLimits())
    sessions = [s for s in import_records(read_jsonl_records(path, ctx), ctx) if s is not None]
    fixed = []
    for s in sessions:
        if not s.id:
            s = _with_id(s, path.stem)
        fixed.append(s)
    return fixed, [p for _, p in ctx.problems]


def _with_id(session: Session, new_id: str) -> Session:
    import dataclasses

    title = session.title or new_id
    return dataclasses.replace(session, id=new_id, title=title)


def openai_tool_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def openai_assistant_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict)
                       and p.get("type") == "text" and isinstance(p.get("text"), str))
    return ""


def session_from_chat(messages: list[Any], *, id: str, source: str) -> Session:
    """An ``openai_chat`` session built directly with the builder."""
    b = SessionBuilder()
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        content = m.get("content") if isinstance(m, dict) else None
        if role in ("system", "developer"):
            b.system(openai_tool_text(content), content)
        elif role == "user":
            b.user(openai_tool_text(content), content)
        elif role == "assistant":
            turn = b.assistant(openai_assistant_text(content), content)
            calls = m.get("tool_calls")
            if isinstance(calls, list):
                for element in calls:
                    fn = element.get("function") if isinstance(element, dict) else None
                    if not isinstance(fn, dict):
                        b.call(turn, "", None, "value")
                        continue
                    args = fn.get("arguments")
                    b.call(turn, fn.get("name"), args,
                           "json_text" if isinstance(args, str) else "value",
                           id=element.get("id"))
        elif role == "tool":
            is_error = (m.get("is_error") is True or m.get("isError") is True
                        or m.get("status") == "error")
            b.result(m.get("tool_call_id"), content, openai_tool_text(content), is_error=is_error)
        else:
            b.other(role if isinstance(role, str) else None, openai_tool_text(content), content)
    return b.build(id=id, source=source, format="openai_chat", chat_messages=messages)


def _chat_fallback(path: Path) -> tuple[list[Session], list[Problem]]:
    body = json.loads(path.read_text(encoding="utf-8"))
    messages = body["messages"] if isinstance(body, dict) else body
    session_id = body.get("id") if isinstance(body, dict) else None
    return [session_from_chat(messages, id=session_id if isinstance(session_id, str)
                              else path.stem, source=str(path))], []


def load_file_sessions(path: Path, *, use_loader: bool = True) -> tuple[list[Session],
                                                                        list[Problem]]:
    """Sessions and problems of one file (the real loader when it is available)."""
    if use_loader:
        loaded = _load_via_loader(path)
        if loaded is not None:
            return loaded
    if path.suffix == ".jsonl":
        return _openclaw_fallback(path)
    return _chat_fallback(path)


def load_session(path: Path, *, use_loader: bool = True) -> Session:
    sessions, _ = load_file_sessions(path, use_loader=use_loader)
    assert len(sessions) == 1, f"{path}: expected one session, got {len(sessions)}"
    return sessions[0]


# --------------------------------------------------------------------------- call-level driver


class Driver:
    """Drives the literal upstream functions on one state: ``R`` records a call, ``S`` records it
    with a result (id ``<tool>-<i>``), ``F`` with an error, ``D`` detects."""

    def __init__(self) -> None:
        self.state = LoopState()
        self.counter: dict[str, int] = {}

    def R(self, tool: str, params: Any, call_id: str | None = None, config: Any = EN,
          run: Any = None) -> None:
        record_tool_call(self.state, tool, params, call_id, config, run)

    def S(self, tool: str, params: Any, result: Any, *, config: Any = EN, run: Any = None,
          call_id: str | None = None) -> Any:
        i = self.counter.get(tool, 0)
        self.counter[tool] = i + 1
        cid = call_id or f"{tool}-{i}"
        record_tool_call(self.state, tool, params, cid, config, run)
        return record_tool_call_outcome(self.state, tool, params, cid, result, UNDEFINED, config,
                                        run)

    def F(self, tool: str, params: Any, error: Any, *, config: Any = EN) -> None:
        i = self.counter.get(tool + "-error", 0)
        self.counter[tool + "-error"] = i + 1
        cid = f"{tool}-error-{i}"
        record_tool_call(self.state, tool, params, cid, config)
        record_tool_call_outcome(self.state, tool, params, cid, UNDEFINED, error, config)

    def D(self, tool: str, params: Any, config: Any = EN, run: Any = None) -> Any:
        return detect_tool_call_loop(self.state, tool, params, config, run)


def text_result(text: str, details: Any = None) -> dict[str, Any]:
    """An OpenClaw tool result: one text part, and ``details`` when given."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if details is not None:
        result["details"] = details
    return result


def verdict_tuple(v: Any) -> tuple[str, str, int] | None:
    return None if v is None else (v.level, v.detector, v.count)


def config_of(block: dict[str, Any]) -> OpenClawConfig:
    return OpenClawConfig.from_block(block)


Maker = Callable[..., Any]
