"""A literal port of Gemini CLI's ``LoopDetectionService`` (tool-call and content loops).

Upstream: ``dist/src/services/loopDetectionService.js`` of ``@google/gemini-cli-core@0.61.0``.
Every length, index and window is in UTF-16 code units (the text is kept as
:func:`~loopscope.jsonrules.node_json.to_units` strings), hashes are SHA-256 of Node's
UTF-8 (lone surrogates as U+FFFD), and the structure checks are the upstream JavaScript regular
expressions rewritten for Python with JavaScript's meaning (``\\s`` is JavaScript whitespace,
``.`` stops at CR, LF, U+2028 and U+2029, ``$`` only at the very end, ``\\d`` is ASCII).

The LLM check (``turnStarted``) needs a live model and is not ported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from loopscope.jsonrules.node_json import (
    JS_WHITESPACE_CLASS,
    from_units,
    js_trim,
    json_stringify,
    node_sha256,
    to_units,
)

__all__ = [
    "CONTENT_LOOP",
    "TOOL_CALL_LOOP",
    "Constants",
    "Content",
    "LoopDetectionService",
    "LoopResult",
    "Structure",
    "ToolCallRequest",
    "content_detail",
    "structure",
    "tool_call_detail",
    "tool_call_detail_text",
    "tool_call_key",
]

TOOL_CALL_LOOP: Final = "consecutive_identical_tool_calls"
"""``LoopType.CONSECUTIVE_IDENTICAL_TOOL_CALLS`` (it also covers cycles of 2–5 calls)."""
CONTENT_LOOP: Final = "chanting_identical_sentences"
"""``LoopType.CONTENT_CHANTING_LOOP``."""

MAX_CYCLE: Final = 5
"""Cycle lengths 1…5 (a literal in ``checkToolCallLoop``)."""
DETAIL_CONTEXT: Final = 20
"""Units of text before the looping window quoted in the detail (a literal upstream)."""


@dataclass(frozen=True, slots=True)
class Constants:
    """The module constants of ``loopDetectionService.js`` (Gemini CLI's values by default)."""

    tool_call_loop_threshold: int = 5
    content_loop_threshold: int = 10
    content_chunk_size: int = 50
    max_history_length: int = 5000


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """``{type: ToolCallRequest, value: {name, args}}``: ``name`` already trimmed (or
    ``generic_tool``), ``args`` already ``fnCall.args || {}``."""

    name: str
    args: Any


@dataclass(frozen=True, slots=True)
class Content:
    """``{type: Content, value: text}`` (non-empty text)."""

    text: str


@dataclass(frozen=True, slots=True)
class LoopResult:
    """What ``addAndCheck`` returns: ``count`` 0 means no loop."""

    count: int
    type: str | None = None
    detail: str | None = None


# --------------------------------------------------------------------------- structure checks

_S: Final = f"[{JS_WHITESPACE_CLASS}]"
_HAS_TABLE: Final = re.compile(f"(?:^|\\n){_S}*(?:\\|[^\\n\\r\\u2028\\u2029]*\\||[|+-]{{3,}})")
# ``[*-+]`` upstream is the character range ``*``…``+``: only ``*`` and ``+`` (not ``-``).
_HAS_BULLET: Final = re.compile(f"(?:^|\\n){_S}*[*+]{_S}")
_HAS_NUMBERED: Final = re.compile(f"(?:^|\\n){_S}*[0-9]+\\.{_S}")
_HAS_HEADING: Final = re.compile(f"(?:^|\\n)#+{_S}")
_HAS_BLOCKQUOTE: Final = re.compile(f"(?:^|\\n)>{_S}")
# ``/^[+-_=*\u2500-\u257F]+$/``: ``+-_`` is the range U+002B…U+005F (digits, upper-case letters,
# punctuation); ``$`` without the multiline flag matches only at the very end.
_IS_DIVIDER: Final = re.compile("[+-_=*\u2500-\u257f]+")


class Structure(NamedTuple):
    """What ``checkContentLoop`` finds in one content value."""

    fences: int
    """Occurrences of a code fence (three backticks)."""
    resets: bool
    """A fence, table, list item, heading, blockquote or divider: the tracking is reset."""
    divider: bool


def structure(units: str) -> Structure:
    """The structure checks of ``checkContentLoop`` on one content value (code units)."""
    fences = units.count("```")
    divider = _IS_DIVIDER.fullmatch(units) is not None
    resets = bool(
        fences or divider
        or _HAS_TABLE.search(units) is not None
        or _HAS_BULLET.search(units) is not None
        or _HAS_NUMBERED.search(units) is not None
        or _HAS_HEADING.search(units) is not None
        or _HAS_BLOCKQUOTE.search(units) is not None)
    return Structure(fences, resets, divider)


# --------------------------------------------------------------------------- texts and keys


def tool_call_key(name: str, args: Any) -> str:
    """``getToolCallKey``: SHA-256 hex of ``name + ":" + JSON.stringify(args)``."""
    return node_sha256(f"{name}:{json_stringify(args)}")


def tool_call_detail(name: str, args: Any) -> str:
    return tool_call_detail_text(name, json_stringify(args))


def tool_call_detail_text(name: str, args_text: str) -> str:
    """:func:`tool_call_detail` of arguments already written by ``JSON.stringify``."""
    return f"Repeated tool call: {name} with arguments {args_text}"


def content_detail(history_units: str, index: int, chunk_size: int) -> str:
    """The detail of a content loop whose window starts at ``index`` of the history."""
    snippet = history_units[max(0, index - DETAIL_CONTEXT):index + chunk_size]
    return f'Repeating content detected: "{from_units(js_trim(snippet))}..."'


# --------------------------------------------------------------------------- the service


class LoopDetectionService:
    """One session's detector, as upstream (without the LLM check)."""

    def __init__(self, constants: Constants = Constants(), disabled: bool = False) -> None:
        self.c = constants
        self.disabled = disabled
        self.prompt_id = ""
        self.tool_call_history: list[str] = []
        self.stream_content_history = ""  # UTF-16 code units
        self.content_stats: dict[str, list[int]] = {}
        self.last_content_index = 0
        self.loop_detected = False
        self.detected_count = 0
        self.last_loop_detail: str | None = None
        self.in_code_block = False
        self.last_loop_type: str | None = None

    def add_and_check(self, event: Any) -> LoopResult:
        if self.disabled:
            return LoopResult(0)
        if self.loop_detected:
            return LoopResult(self.detected_count, self.last_loop_type, self.last_loop_detail)
        is_loop = False
        detail: str | None = None
        if isinstance(event, ToolCallRequest):
            # Content chanting only happens within one stream: a tool call resets it.
            self.reset_content_tracking()
            is_loop = self.check_tool_call_loop(event)
            if is_loop:
                detail = tool_call_detail(event.name, event.args)
        elif isinstance(event, Content):
            is_loop = self.check_content_loop(event.text)
            if is_loop:
                detail = content_detail(self.stream_content_history, self.last_content_index,
                                        self.c.content_chunk_size)
        if not is_loop:
            return LoopResult(0)
        self.loop_detected = True
        self.detected_count += 1
        self.last_loop_detail = detail
        self.last_loop_type = TOOL_CALL_LOOP if isinstance(event, ToolCallRequest) else CONTENT_LOOP
        return LoopResult(self.detected_count, self.last_loop_type, self.last_loop_detail)

    # ------------------------------------------------------------------ tool calls

    def check_tool_call_loop(self, call: ToolCallRequest) -> bool:
        key = tool_call_key(call.name, call.args)
        self.tool_call_history.append(key)
        repeats = self.c.tool_call_loop_threshold
        max_required = MAX_CYCLE * repeats
        if len(self.tool_call_history) > max_required:
            self.tool_call_history = self.tool_call_history[-max_required:]
        history = self.tool_call_history
        n = len(history)
        for k in range(1, MAX_CYCLE + 1):
            required = k * repeats
            if n >= required:
                cycle = history[-k:]
                if all(history[n - required + i] == cycle[i % k] for i in range(required)):
                    return True
        return False

    # ------------------------------------------------------------------ content

    def check_content_loop(self, content: str) -> bool:
        units = to_units(content)
        found = structure(units)
        if found.resets:
            # Different content elements (code, tables, lists, …) restart the analysis.
            self.reset_content_tracking()
        was_in_code_block = self.in_code_block
        if found.fences % 2 == 1:
            self.in_code_block = not self.in_code_block
        if was_in_code_block or self.in_code_block or found.divider:
            return False
        self.stream_content_history += units
        self.truncate_and_update()
        return self.analyze_content_chunks_for_loop()

    def truncate_and_update(self) -> None:
        history = self.stream_content_history
        if len(history) <= self.c.max_history_length:
            return
        amount = len(history) - self.c.max_history_length
        self.stream_content_history = history[amount:]
        self.last_content_index = max(0, self.last_content_index - amount)
        for key in list(self.content_stats):
            adjusted = [i - amount for i in self.content_stats[key] if i - amount >= 0]
            if adjusted:
                self.content_stats[key] = adjusted
            else:
                del self.content_stats[key]

    def analyze_content_chunks_for_loop(self) -> bool:
        size = self.c.content_chunk_size
        while self.last_content_index + size <= len(self.stream_content_history):
            start = self.last_content_index
            chunk = self.stream_content_history[start:start + size]
            if self.is_loop_detected_for_chunk(chunk, node_sha256(chunk)):
                return True
            self.last_content_index += 1
        return False

    def is_loop_detected_for_chunk(self, chunk: str, digest: str) -> bool:
        indices = self.content_stats.get(digest)
        if indices is None:
            self.content_stats[digest] = [self.last_content_index]
            return False
        if not self.is_actual_content_match(chunk, indices[0]):
            return False  # a hash collision (lone surrogates all hash as U+FFFD)
        indices.append(self.last_content_index)
        threshold = self.c.content_loop_threshold
        if len(indices) < threshold:
            return False
        recent = indices[-threshold:]
        total = recent[-1] - recent[0]
        # averageDistance = total / (threshold - 1) > 5 × chunk size, in exact integers.
        if total > self.c.content_chunk_size * 5 * (threshold - 1):
            return False
        history = self.stream_content_history
        periods = {history[recent[i]:recent[i + 1]] for i in range(len(recent) - 1)}
        # Mostly distinct periods: a list of distinct items sharing a prefix, not a loop.
        return len(periods) <= threshold // 2

    def is_actual_content_match(self, chunk: str, original_index: int) -> bool:
        size = self.c.content_chunk_size
        return self.stream_content_history[original_index:original_index + size] == chunk

    # ------------------------------------------------------------------ resets

    def reset(self, prompt_id: str) -> None:
        """A new prompt: everything but the code-block flag starts again."""
        self.prompt_id = prompt_id
        self.tool_call_history = []
        self.reset_content_tracking()
        self.loop_detected = False
        self.detected_count = 0
        self.last_loop_detail = None
        self.last_loop_type = None

    def clear_detection(self) -> None:
        """What Gemini CLI's loop recovery does: the count is kept."""
        self.loop_detected = False

    def reset_content_tracking(self) -> None:
        self.stream_content_history = ""
        self.content_stats.clear()
        self.last_content_index = 0
