"""A normalized session as the stream of events Gemini CLI's loop detector would have seen.

The rules Gemini CLI shares with its fork Qwen Code (prompt starts, text cut after every line
feed, ``fnCall.args || {}``) are :mod:`loopscope.engines._shared.streamed_turn`. Gemini CLI's own:

* A user message starts a new prompt (Gemini CLI calls ``reset`` when the prompt id changes;
  tool results, the loop-recovery feedback and "Please continue." keep the prompt id).
* An assistant turn streams its text first, then its tool calls in recorded order
  (``dist/src/core/turn.js`` yields a chunk's text before its function calls). Thinking text
  is never sent: Gemini CLI keeps thoughts out of ``Content`` events.
* A tool call's name is JavaScript-trimmed (``generic_tool`` when that leaves nothing).
* Tool results, system messages and compactions change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines._shared.streamed_turn import PromptItem, args_of, split_pieces, stream_items
from loopscope.jsonrules.node_json import js_trim
from loopscope.model import AssistantTurn, Session, ToolCall

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


def call_name(call: ToolCall) -> str:
    """``fnCall.name?.trim() || "generic_tool"``."""
    return js_trim(call.name) or GENERIC_TOOL


def call_args(call: ToolCall) -> Any:
    """``fnCall.args || {}`` for the recorded arguments."""
    return args_of(call.arguments_kind, call.raw_arguments)


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


def _content_item(turn: AssistantTurn) -> ContentItem | None:
    """A content step for a turn with text, or with no tool call at all."""
    if turn.text or not turn.tool_calls:
        return ContentItem(turn.turn, tuple(split_pieces(turn.text)))
    return None


def _call_item(turn: AssistantTurn, call: ToolCall) -> CallItem:
    return CallItem(turn.turn, call.index, call_name(call), call)


def session_items(session: Session) -> Iterator[Item]:
    """The session's steps and prompt starts, in transcript order."""
    return stream_items(session, _content_item, _call_item)
