"""A recorded session as ``openclaw@2026.9.6`` consumes it: the calls of one message together.

Sessions are read as for every release (:func:`..shared.session.session_ops`: runs, turns, call
indexes, argument parsing, result pairing); 2026.9.6 then checks the calls of one assistant
message as one batch, recognises its own intervention texts as recorded blocks, and hashes
normalised tool names. Both the reference replay and the prepared data read sessions through
this module, so they see the same calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Final

from loopscope.engines.openclaw.shared.hashing import hash_tool_call
from loopscope.engines.openclaw.shared.session import CallInput, session_ops
from loopscope.engines.openclaw.v2026_9.hashing import (
    Outcome,
    hash_tool_outcome,
    normalize_tool_name,
)
from loopscope.model import Session

RECOVERY_MARKERS: Final = (
    "do not repeat this exact tool action",
    "this tool was not executed because another call in the batch",
    "critical tool-loop recovery failed",
    "openclaw stopped this run because tool-loop recovery",
)
"""Phrases of 2026.9's intervention results (lowercase): a recorded result holding one is an
upstream loop block, even when it is recorded as an error."""


def is_recovery_block_text(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in RECOVERY_MARKERS)


def _result_texts(c: CallInput) -> Iterator[str]:
    if isinstance(c.error, str):
        yield c.error
    result = c.result
    if isinstance(result, dict):
        content = result.get("content")
        if isinstance(content, list):
            for entry in content:
                if isinstance(entry, dict) and isinstance(entry.get("text"), str):
                    yield entry["text"]


def calls_2026_9(c: CallInput) -> CallInput:
    """The call with ``recorded_block`` also set by 2026.9's intervention texts."""
    if c.recorded_block or not any(is_recovery_block_text(t) for t in _result_texts(c)):
        return c
    return replace(c, recorded_block=True)

Message = list[CallInput]


def session_messages(session: Session) -> list[Message | str]:
    """:func:`session_ops` with the calls of one assistant message grouped (in order)."""
    out: list[Message | str] = []
    current: Message | None = None
    for op in session_ops(session):
        if isinstance(op, CallInput):
            op = calls_2026_9(op)
            if current is not None and current[0].turn == op.turn:
                current.append(op)
                continue
            current = [op]
            out.append(current)
        else:
            current = None
            out.append(op)
    return out


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What one call is, whatever the configuration."""

    name: str
    """Normalised (what OpenClaw hashes and detects on)."""
    args_hash: str
    outcome: Outcome


def call_facts(c: CallInput) -> CallFacts:
    name = normalize_tool_name(c.name)
    return CallFacts(name, hash_tool_call(name, c.params),
                     hash_tool_outcome(name, c.params, c.result, c.error))
