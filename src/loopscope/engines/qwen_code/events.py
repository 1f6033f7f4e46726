"""A normalized session as the events Qwen Code's client feeds its ``LoopDetectionService``.

The rules Qwen Code shares with Gemini CLI, which it forked (prompt starts, text cut after every
line feed, ``fnCall.args || {}``), are :mod:`loopscope.engines._shared.streamed_turn`. Qwen
Code's own:

* A user message starts a new prompt: ``reset`` (``LlmClient.sendMessageStream`` resets only when
  an interaction starts; tool-result continuations keep the state).
* An assistant turn streams, as ``turn.ts`` yields them: its thinking as one ``Thought``
  (``subject`` empty, as OpenAI-compatible providers deliver reasoning), its text pieces (one
  ``Content`` per piece), then one ``tool_call_request`` per call with
  ``name || "undefined_tool_name"`` and ``args || {}``.
* Each tool call is reduced once to what the guards read (:func:`~.upstream.prepare_call`: the
  resolved name, its key, whether it is a git inspection command).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from loopscope.bulk import memoised_by_json
from loopscope.engines._shared.streamed_turn import PromptItem, args_of, split_pieces, stream_items
from loopscope.engines.qwen_code.upstream import PreparedCall, prepare_call, tool_call_key
from loopscope.model import AssistantTurn, Session, ToolCall

__all__ = [
    "UNDEFINED_TOOL",
    "CallItem",
    "ContentItem",
    "Item",
    "PromptItem",
    "args_of",
    "session_items",
    "split_pieces",
]

UNDEFINED_TOOL: Final = "undefined_tool_name"


@dataclass(frozen=True, slots=True)
class ContentItem:
    """The content step of an assistant turn: its thinking and its text pieces."""

    turn: int
    thinking: str
    pieces: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CallItem:
    """One tool call: its recorded-name key (``getToolCallRepeatKey`` of ``name`` and args, the
    step's signature) and what the guards read of it (:func:`~.upstream.prepare_call`)."""

    turn: int
    call: int
    name: str
    key: str
    prepared: PreparedCall


Item = PromptItem | ContentItem | CallItem


def _content_item(turn: AssistantTurn) -> ContentItem | None:
    """A content step for a turn with text or thinking, or with no tool call at all."""
    if turn.text or turn.thinking or not turn.tool_calls:
        return ContentItem(turn.turn, turn.thinking, tuple(split_pieces(turn.text)))
    return None


_SHARED_CALLS_MAX = 50_000
_SHARED_CALLS_MAX_KEY = 512
_SHARED_CALLS: dict[bytes, tuple[Any, tuple[str, PreparedCall]]] = {}
"""Calls across sessions: the :func:`~loopscope.bulk.json_memo_key` of ``(name, arguments
kind, recorded arguments)`` → (that triple, its key and prepared call); bounded."""

_Memo = dict[bytes, tuple[Any, tuple[str, PreparedCall]]]


def _call_keys(recorded: tuple[str, str, Any]) -> tuple[str, PreparedCall]:
    """A call's key and what the guards read of it, from its name and recorded arguments.
    The key of the call as recorded is the prepared call's key whenever the call is no
    ``tool_call`` envelope (resolving it changes nothing): hashed once, not twice."""
    name, kind, raw = recorded
    args = args_of(kind, raw)
    key = tool_call_key(name, args)
    return key, prepare_call(name, args, key)


def _call_item(turn: AssistantTurn, call: ToolCall, memo: _Memo) -> CallItem:
    """One call's item. Agents repeat their calls, in loops above all: the key and prepared
    call are memoised by the recorded name and arguments, in ``memo`` (the session's) and
    across sessions (:func:`~loopscope.bulk.memoised_by_json`, which reuses a result only for
    an equal recording)."""
    name = call.name or UNDEFINED_TOOL
    key, prepared = memoised_by_json(
        (name, call.arguments_kind, call.raw_arguments), _call_keys, memo, _SHARED_CALLS,
        max_shared_key=_SHARED_CALLS_MAX_KEY, max_shared=_SHARED_CALLS_MAX)
    return CallItem(turn.turn, call.index, name, key, prepared)


def session_items(session: Session) -> Iterator[Item]:
    """The session's steps and prompt starts, in transcript order."""
    memo: _Memo = {}

    def call_item(turn: AssistantTurn, call: ToolCall) -> CallItem:
        return _call_item(turn, call, memo)

    return stream_items(session, _content_item, call_item)
