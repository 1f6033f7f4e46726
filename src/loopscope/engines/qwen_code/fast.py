"""Prepare once, run many times: a session's events with every tool call already reduced to
its name, key and inspection flag (:func:`~.upstream.prepare_call`), so a run under another
configuration only feeds the service; and the prepared data as JSON (the on-disk cache and
worker processes carry it).

The run is the reference loop itself (:func:`~.reference.replay_items`) over the prepared
events: what preparing saves is the per-call parsing and hashing, which no setting changes. The
detectors' state (histories, windows, per-prompt counts) is not summarised ahead of a run, so
``run(prepare(s), c) == replay(s, c)`` holds by construction (the oracle test checks it on
random sessions) and there is no columnar re-run (:mod:`.columns`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopscope.engines.base import SessionReplay
from loopscope.engines.qwen_code.config import QwenConfig
from loopscope.engines.qwen_code.events import (
    CallItem,
    ContentItem,
    Item,
    PromptItem,
    session_items,
)
from loopscope.engines.qwen_code.reference import replay_items
from loopscope.engines.qwen_code.upstream import PreparedCall
from loopscope.model import Session

__all__ = ["PreparedSession", "decode", "encode", "prepare", "run"]


@dataclass(frozen=True, slots=True)
class PreparedSession:
    """One session's configuration-independent events."""

    session: str
    source: str
    format: str
    items: tuple[Item, ...]


def prepare(session: Session) -> PreparedSession:
    return PreparedSession(session.id, session.source, session.format,
                           tuple(session_items(session)))


def run(prepared: PreparedSession, config: QwenConfig) -> SessionReplay:
    return replay_items(prepared.items, config, prepared.session, prepared.source,
                        prepared.format)


def encode(prepared: PreparedSession) -> dict[str, Any]:
    """JSON-ready data: ``["u", prompt]``, ``["t", turn, thinking, pieces]`` and
    ``["c", turn, call, name, key, resolved name, resolved key, inspection]`` per item, or
    ``["c", turn, call, name, key, inspection]`` for a call that resolves to itself (the
    usual case: no ``tool_call`` envelope), whose 64-character key is then written once."""
    items: list[list[Any]] = []
    for item in prepared.items:
        if isinstance(item, PromptItem):
            items.append(["u", item.prompt])
        elif isinstance(item, ContentItem):
            items.append(["t", item.turn, item.thinking, list(item.pieces)])
        else:
            p = item.prepared
            if p.name == item.name and p.key == item.key:
                items.append(["c", item.turn, item.call, item.name, item.key, p.inspection])
            else:
                items.append(["c", item.turn, item.call, item.name, item.key, p.name, p.key,
                              p.inspection])
    return {"session": prepared.session, "source": prepared.source, "format": prepared.format,
            "items": items}


def _int(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"expected a count, got {value!r}")
    return value


def _str(value: Any) -> str:
    if type(value) is not str:
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


def _item(row: Any) -> Item:
    if type(row) is not list or not row:
        raise ValueError("a prepared item is not a list")
    tag = row[0]
    if tag == "u" and len(row) == 2:
        return PromptItem(_int(row[1]))
    if tag == "t" and len(row) == 4 and type(row[3]) is list:
        return ContentItem(_int(row[1]), _str(row[2]), tuple(_str(p) for p in row[3]))
    if tag == "c" and len(row) == 6 and type(row[5]) is bool:
        name, key = _str(row[3]), _str(row[4])
        return CallItem(_int(row[1]), _int(row[2]), name, key, PreparedCall(name, key, row[5]))
    if tag == "c" and len(row) == 8 and type(row[7]) is bool:
        return CallItem(_int(row[1]), _int(row[2]), _str(row[3]), _str(row[4]),
                        PreparedCall(_str(row[5]), _str(row[6]), row[7]))
    raise ValueError(f"not a prepared item: {str(row)[:80]}")


def decode(data: Any) -> PreparedSession:
    """The inverse of :func:`encode`; ``ValueError`` for anything it did not write."""
    if not isinstance(data, Mapping) or type(data.get("items")) is not list:
        raise ValueError("not prepared qwen-code data")
    return PreparedSession(_str(data.get("session")), _str(data.get("source")),
                           _str(data.get("format")), tuple(_item(r) for r in data["items"]))
