"""Helpers for the per-format tests of the strongly-wanted and optional importers.

Format modules are driven directly on small hand-written inputs (``run_records``,
``run_document``, ``run_text``) and, for the corpus rows, through ``loopscope.formats.load_file``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from loopscope.formats.base import ImportContext, ImportLimits, Record
from loopscope.model import (
    AssistantTurn,
    Compaction,
    OtherMessage,
    Problem,
    Session,
    SystemMessage,
    ToolResult,
    UserMessage,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("LOOPSCOPE_CORPUS", REPO_ROOT.parent / "shared" / "corpus"))


def corpus_path(relative: str) -> str:
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"corpus file {relative} not found under {CORPUS}")
    return str(path)


def load_corpus(relative: str) -> Any:
    """``FileImport`` of one corpus file through the public loader."""
    from loopscope.formats import load_file

    return load_file(corpus_path(relative))


def records(text: str) -> list[Record]:
    out = []
    for n, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            out.append(Record(n, orjson.loads(line)))
    return out


def jsonl(*values: Any) -> str:
    return "\n".join(json.dumps(v) for v in values) + "\n"


def new_ctx(path: str = "mem/input") -> ImportContext:
    return ImportContext(path, ImportLimits())


def _collect(items: Any, ctx: ImportContext) -> tuple[list[Session | None], list[Problem]]:
    sessions = list(items)
    return sessions, [p for _, p in ctx.problems]


def run_records(module: ModuleType, text_or_values: str | list[Any],
                path: str = "mem/input.jsonl") -> tuple[list[Session | None], list[Problem]]:
    ctx = new_ctx(path)
    text = text_or_values if isinstance(text_or_values, str) else jsonl(*text_or_values)
    return _collect(module.import_records(records(text), ctx), ctx)


def run_document(module: ModuleType, value: Any,
                 path: str = "mem/input.json") -> tuple[list[Session | None], list[Problem]]:
    ctx = new_ctx(path)
    return _collect(module.import_document(value, ctx), ctx)


def run_text(module: ModuleType, text: str,
             path: str = "mem/input.md") -> tuple[list[Session | None], list[Problem]]:
    ctx = new_ctx(path)
    return _collect(module.import_text(text, ctx), ctx)


def only(sessions: list[Session | None]) -> Session:
    assert len(sessions) == 1, sessions
    session = sessions[0]
    assert session is not None
    return session


def shape(session: Session) -> str:
    """A compact shape of the events: ``S U A0[run, read] R1 R0! A1 C O`` (``!`` an error result,
    ``R?`` an orphan, ``C`` a compaction, ``O`` another message)."""
    out = []
    for event in session.events:
        if isinstance(event, UserMessage):
            out.append("U")
        elif isinstance(event, SystemMessage):
            out.append("S")
        elif isinstance(event, OtherMessage):
            out.append("O")
        elif isinstance(event, Compaction):
            out.append("C")
        elif isinstance(event, AssistantTurn):
            calls = ", ".join(c.name for c in event.tool_calls)
            out.append(f"A{event.turn}[{calls}]" if calls else f"A{event.turn}")
        elif isinstance(event, ToolResult):
            mark = "?" if event.call_index is None else str(event.call_index)
            out.append(f"R{mark}{'!' if event.is_error else ''}")
    return " ".join(out)


def codes(problems: list[Problem], severity: str | None = None) -> list[str]:
    return [p.code for p in problems if severity is None or p.severity == severity]


def _call_key(call: Any) -> tuple[str, str]:
    if call.arguments_kind == "free_text":
        return call.name, "T:" + str(call.arguments)
    return call.name, "J:" + json.dumps(call.arguments, sort_keys=True, default=repr)


def longest_identical_run(session: Session) -> tuple[int, int, str | None]:
    """(length, first call index, tool) of the first longest run of identical calls."""
    calls = session.calls
    best = (0, 0, None) if not calls else (1, 0, calls[0].name)
    run_start = 0
    for i in range(1, len(calls) + 1):
        if i == len(calls) or _call_key(calls[i]) != _call_key(calls[run_start]):
            length = i - run_start
            if length > best[0]:
                best = (length, run_start, calls[run_start].name)
            run_start = i
    return best


def assert_counts(session: Session, *, calls: int, turns: int, user: int, results: int,
                  unanswered: int, compactions: int = 0) -> None:
    c = session.counts()
    got = (c["calls"], c["turns"], c["user_messages"], c["results"], c["unanswered_calls"],
           c["compactions"])
    assert got == (calls, turns, user, results, unanswered, compactions), c
