"""Prepare once, run many times: a session's events with every tool call's arguments parsed
and its key hashed, so a run under another configuration only feeds the service."""

from __future__ import annotations

from dataclasses import dataclass

from loopscope.engines.base import SessionReplay
from loopscope.engines.qwen_code.config import QwenConfig
from loopscope.engines.qwen_code.reference import Item, replay_items, session_items
from loopscope.model import Session

__all__ = ["PreparedSession", "prepare", "run"]


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
