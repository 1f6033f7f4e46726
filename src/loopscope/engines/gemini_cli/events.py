"""A normalized session as the stream of events Gemini CLI's loop detector would have seen.

* A user message starts a new prompt (Gemini CLI calls ``reset`` when the prompt id changes;
  tool results, the loop-recovery feedback and "Please continue." keep the prompt id). Before
  the first user message the detector is in its initial state ("prompt 0").
* An assistant turn streams its text first, then its tool calls in recorded order
  (``dist/src/core/turn.js`` yields a chunk's text before its function calls). Thinking text
  is never sent: Gemini CLI keeps thoughts out of ``Content`` events.
* The stream's chunk boundaries are not recorded, so the text is cut after every line feed
  (U+000A only; each piece keeps its line feed; empty pieces are not sent). The structure
  checks are written per line, so fences, list items, headings and table rows then act at their
  own line, as in a streamed reply.
* A tool call's name is JavaScript-trimmed (``generic_tool`` when that leaves nothing); its
  arguments are ``JSON.parse``d when recorded as JSON text (the raw string when that fails),
  and falsy arguments (``null``, ``false``, ``0``, ``""``, none recorded) become ``{}``
  (``fnCall.args || {}``).
* Tool results, system messages and compactions change nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from loopscope.jsonrules.node_json import js_trim, js_truthy, json_parse
from loopscope.model import AssistantTurn, Session, ToolCall, UserMessage

__all__ = [
    "GENERIC_TOOL",
    "CallItem",
    "ContentItem",
    "PromptItem",
    "args_of",
    "call_args",
    "call_name",
    "session_items",
    "split_pieces",
]

GENERIC_TOOL: Final = "generic_tool"
_AFTER_LINE_FEED: Final = re.compile(r"(?<=\n)")


def split_pieces(text: str) -> list[str]:
    """The reply text as streamed pieces: cut after every U+000A, empty pieces dropped."""
    if not text:
        return []
    return [piece for piece in _AFTER_LINE_FEED.split(text) if piece]


def call_name(call: ToolCall) -> str:
    """``fnCall.name?.trim() || "generic_tool"``."""
    return js_trim(call.name) or GENERIC_TOOL


def call_args(call: ToolCall) -> Any:
    """``fnCall.args || {}`` for the recorded arguments."""
    return args_of(call.arguments_kind, call.raw_arguments)


def args_of(arguments_kind: str, raw: Any) -> Any:
    """``fnCall.args || {}`` for arguments recorded as ``raw`` (:attr:`ToolCall.arguments_kind`
    says how)."""
    if raw is None:
        return {}
    value = raw
    if arguments_kind == "json_text" and isinstance(raw, str):
        ok, parsed = json_parse(raw)
        value = parsed if ok else raw
    return value if js_truthy(value) else {}


@dataclass(frozen=True, slots=True)
class PromptItem:
    """A user message: prompt number ``prompt`` starts."""

    prompt: int


@dataclass(frozen=True, slots=True)
class ContentItem:
    """The content step of an assistant turn."""

    turn: int
    pieces: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CallItem:
    """One tool call."""

    turn: int
    call: int
    name: str
    recorded: ToolCall

    @property
    def args(self) -> Any:
        """``fnCall.args || {}`` (parsed on every read: the fast path memoises the printed
        text per recorded arguments instead)."""
        return call_args(self.recorded)


Item = PromptItem | ContentItem | CallItem


def session_items(session: Session) -> Iterator[Item]:
    """The session's steps and prompt starts, in transcript order."""
    prompt = 0
    for event in session.events:
        if isinstance(event, UserMessage):
            prompt += 1
            yield PromptItem(prompt)
        elif isinstance(event, AssistantTurn):
            if event.text or not event.tool_calls:
                yield ContentItem(event.turn, tuple(split_pieces(event.text)))
            for call in event.tool_calls:
                yield CallItem(event.turn, call.index, call_name(call), call)
