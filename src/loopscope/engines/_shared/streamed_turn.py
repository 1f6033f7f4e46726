"""A recorded assistant turn as the stream Gemini CLI and its fork Qwen Code feed their loop
detectors.

Qwen Code forked Gemini CLI's ``turn.ts`` and ``client.ts``, and both loop detectors read the
same stream, so the rules below are one rule, not two copies:

* A user message starts a new prompt (the detector is reset); before the first one the detector
  is in its initial state ("prompt 0").
* The stream's chunk boundaries are not recorded, so a reply's text is cut after every line feed
  (U+000A only; each piece keeps its line feed; empty pieces are not sent). The detectors'
  structure checks are written per line, so fences, list items, headings and table rows then
  act at their own line, as in a streamed reply.
* A call's arguments are ``fnCall.args || {}``: arguments recorded as JSON text are
  ``JSON.parse``d (the raw string when that fails), and a falsy value (``null``, ``false``,
  ``0``, ``""``, none recorded) becomes ``{}``.

What each fork does with a call's name and with thinking text differs, and stays in its engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from loopscope.jsonrules.node_json import js_truthy, json_parse
from loopscope.model import AssistantTurn, Session, ToolCall, UserMessage

__all__ = ["PromptItem", "args_of", "split_pieces", "stream_items"]

ContentT = TypeVar("ContentT")
CallT = TypeVar("CallT")

_AFTER_LINE_FEED: Final = re.compile(r"(?<=\n)")


def split_pieces(text: str) -> list[str]:
    """The reply text as streamed pieces: cut after every U+000A, empty pieces dropped."""
    if not text:
        return []
    return [piece for piece in _AFTER_LINE_FEED.split(text) if piece]


def args_of(arguments_kind: str, raw: Any) -> Any:
    """``fnCall.args || {}`` for arguments recorded as ``raw`` (:attr:`ToolCall.arguments_kind`
    says how): JSON text is ``JSON.parse``d, the raw string kept when that fails."""
    if raw is None:
        return {}
    value = raw
    if arguments_kind == "json_text" and isinstance(raw, str):
        ok, parsed = json_parse(raw)
        value = parsed if ok else raw
    return value if js_truthy(value) else {}


@dataclass(frozen=True, slots=True)
class PromptItem:
    """A user message: prompt number ``prompt`` starts (the detector is reset)."""

    prompt: int


def stream_items(session: Session, content: Callable[[AssistantTurn], ContentT | None],
                 call: Callable[[AssistantTurn, ToolCall], CallT],
                 ) -> Iterator[PromptItem | ContentT | CallT]:
    """The session as the detector's stream, in transcript order: a :class:`PromptItem` per
    user message, and per assistant turn its content step (``content(turn)``, when that is not
    None) before one step per tool call (``call(turn, tool_call)``), since a streamed turn
    yields a chunk's text before its function calls. Tool results, system messages and
    compactions change nothing."""
    prompt = 0
    for event in session.events:
        if isinstance(event, UserMessage):
            prompt += 1
            yield PromptItem(prompt)
        elif isinstance(event, AssistantTurn):
            step = content(event)
            if step is not None:
                yield step
            for tool_call in event.tool_calls:
                yield call(event, tool_call)
