"""The normalized session model every engine, the CLI and the dashboard consume.

Importers (``loopscope.formats``) build these values; engines only read them. Values are frozen
dataclasses; a ``Session`` is frozen too, and
its derived views (``turns``, ``calls``, ``counts()``, ``chat_view()``) are computed on first
use and cached.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

Severity = Literal["error", "warning", "info"]
ArgumentsKind = Literal["json_text", "value", "free_text"]
PairedBy = Literal["id", "position", "structure"]


# --------------------------------------------------------------------------- problems


def escape_for_display(text: str, limit: int | None = None) -> str:
    """Escape control characters, newlines and bidi marks so a hostile name cannot forge output.

    Used for file names and quoted values in every message. Every character escaped is one
    Python calls unprintable, so a printable text (nearly every name) is returned as it is
    without looking at each character: the dashboard shows 100,000 session names.
    """
    escaped = text if text.isprintable() else text.translate(_DISPLAY_ESCAPES)
    if limit is not None and len(escaped) > limit:
        escaped = escaped[:limit] + "…"
    return escaped


_MARKDOWN_ESCAPES = str.maketrans({ch: "\\" + ch for ch in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"})
"""Every ASCII punctuation character, backslash-escaped: CommonMark lets any of them be escaped
and shows it as itself, and each one starts some Markdown or extension syntax somewhere —
backticks (code spans), ``[ ] ( )`` and ``!`` (links, images), ``<`` and ``&`` (HTML, entities),
``* _ ~`` (emphasis, strikethrough), ``#``, ``>``, ``-``, ``+``, ``=``, digits followed by ``.``
(headings, quotes, lists, setext underlines), ``|`` (tables), ``$`` (Streamlit's LaTeX), ``:``
(Streamlit's ``:red[…]`` and icons), and ``:`` ``/`` ``.`` ``@`` inside a bare URL, ``www.`` host
or e-mail address, which GFM would otherwise turn into a link."""


def escape_markdown(text: str, limit: int | None = None) -> str:
    """``text`` (from a recording: a tool name, a file name, an error) made safe to put in
    Markdown text — ``st.markdown``, captions, labels: it renders as exactly
    :func:`escape_for_display` shows it, and cannot open a link, load an image, add HTML or
    format anything.

    Control characters are escaped first (:func:`escape_for_display`, with ``limit``), then
    every ASCII punctuation character gets a backslash. Not for the inside of a code span
    (backslashes are literal there): use :func:`markdown_code` for that.
    """
    return escape_for_display(text, limit).translate(_MARKDOWN_ESCAPES)


def markdown_code(text: str, limit: int | None = None) -> str:
    """``text`` as a Markdown code span that it cannot break out of: the fence is one backtick
    longer than the longest run of backticks in the text, and spaces pad it so a leading or
    trailing backtick stays inside (CommonMark strips one space on each side)."""
    shown = escape_for_display(text, limit)
    longest = run = 0
    for ch in shown:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    return f"{fence} {shown} {fence}"


# Bidi overrides/isolates, zero-width characters and line/paragraph separators.
_INVISIBLE_FORMAT_CHARS = frozenset(
    [0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2028, 0x2029, 0x2060, 0xFEFF,
     *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
)

_DISPLAY_ESCAPES: dict[int, str] = {
    **{code: f"\\x{code:02x}" for code in [*range(0x20), 0x7F]},
    **{code: f"\\u{code:04x}" for code in [*range(0x80, 0xA0), *_INVISIBLE_FORMAT_CHARS]},
    ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t",
}
"""What :func:`escape_for_display` writes for each character it escapes: newline, return and
tab as in Python; other C0 controls and DEL as ``\\xNN``; C1 controls, zero-width and bidi
marks as ``\\uNNNN``."""


@dataclass(frozen=True, slots=True)
class Problem:
    """Something an importer skipped, guessed or failed on."""

    source: str
    """The file path, or ``path#n`` when the problem concerns one session candidate."""
    line: int | None
    """1-based physical line, when known."""
    pointer: str | None
    """JSON Pointer inside a document, when known."""
    severity: Severity
    code: str
    """A stable slug; tests assert on codes, not wording."""
    message: str
    count: int = 1

    def text(self) -> str:
        """``<source>[:<line>| at <pointer>]: <severity>: <message> [<code>]``."""
        where = escape_for_display(self.source)
        if self.line is not None:
            where += f":{self.line}"
        elif self.pointer is not None:
            where += f" at {escape_for_display(self.pointer)}"
        return f"{where}: {self.severity}: {self.message} [{self.code}]"


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class Origin:
    """Where in the file an event came from."""

    line: int | None = None
    """1-based physical line (JSONL, markdown)."""
    pointer: str | None = None
    """JSON Pointer (``/messages/12``) for documents."""


@dataclass(frozen=True, slots=True)
class AgentInfo:
    name: str | None = None
    version: str | None = None


@dataclass(frozen=True, slots=True)
class Wrapper:
    """The recorded wrapper tool a call was extracted from (Codex code mode)."""

    name: str
    input: Any
    extracted: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call."""

    index: int
    """0-based among all tool calls of the session: the replay output's ``call``."""
    turn: int
    position: int
    """0-based position within its turn."""
    id: str | None
    name: str
    """As recorded; ``""`` when absent or not a string."""
    raw_arguments: Any
    arguments_kind: ArgumentsKind
    arguments: Any
    arguments_error: str | None = None
    id_synthetic: bool = False
    wrapper: Wrapper | None = None
    result: int | None = None
    """Event index of the paired ``tool_result``."""


@dataclass(frozen=True, slots=True)
class UserMessage:
    index: int
    text: str
    content: Any = None
    recorded_role: str = "user"
    timestamp: str | None = None
    origin: Origin = field(default_factory=Origin)
    kind: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class SystemMessage:
    index: int
    text: str
    content: Any = None
    recorded_role: str = "system"
    timestamp: str | None = None
    origin: Origin = field(default_factory=Origin)
    kind: Literal["system"] = "system"


@dataclass(frozen=True, slots=True)
class OtherMessage:
    index: int
    role: str | None
    text: str
    content: Any = None
    timestamp: str | None = None
    origin: Origin = field(default_factory=Origin)
    kind: Literal["other"] = "other"


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """One model response."""

    index: int
    turn: int
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: str = ""
    content: Any = None
    model: str | None = None
    stop_reason: str | None = None
    error: str | None = None
    synthetic: bool = False
    timestamp: str | None = None
    origin: Origin = field(default_factory=Origin)
    kind: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The answer to one tool call."""

    index: int
    call_id: str | None
    text: str
    content: Any = None
    call_index: int | None = None
    paired_by: PairedBy | None = None
    name: str | None = None
    is_error: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    timestamp: str | None = None
    origin: Origin = field(default_factory=Origin)
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class Compaction:
    index: int
    summary: str = ""
    tokens_before: int | None = None
    trigger: str | None = None
    first_kept: str | None = None
    timestamp: str | None = None
    origin: Origin = field(default_factory=Origin)
    kind: Literal["compaction"] = "compaction"


Event = UserMessage | SystemMessage | OtherMessage | AssistantTurn | ToolResult | Compaction


# --------------------------------------------------------------------------- session


@dataclass(frozen=True)
class Session:
    """One recorded conversation, normalized."""

    id: str
    source: str
    format: str
    events: tuple[Event, ...]
    title: str = ""
    agent: AgentInfo = field(default_factory=AgentInfo)
    models: tuple[str, ...] = ()
    started_at: str | None = None
    ended_at: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    labels: Mapping[str, Any] = field(default_factory=dict)
    chat_messages: tuple[Any, ...] | None = None
    """``openai_chat`` and ``tau_bench`` only: the recorded message objects, in order."""
    problems: tuple[Problem, ...] = ()

    # Derived views. ``functools.cached_property`` needs a ``__dict__``, which a non-slots
    # frozen dataclass has; it writes through ``object.__setattr__`` semantics internally.

    @functools.cached_property
    def turns(self) -> tuple[AssistantTurn, ...]:
        return tuple(e for e in self.events if isinstance(e, AssistantTurn))

    @functools.cached_property
    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(c for t in self.turns for c in t.tool_calls)

    def counts(self) -> dict[str, int]:
        """The figures the corpus conformance tests check for every real recorded file."""
        results = [e for e in self.events if isinstance(e, ToolResult)]
        return {
            "turns": len(self.turns),
            "calls": len(self.calls),
            "user_messages": sum(1 for e in self.events if isinstance(e, UserMessage)),
            "results": len(results),
            "unanswered_calls": sum(1 for c in self.calls if c.result is None),
            "orphan_results": sum(1 for r in results if r.call_index is None),
            "compactions": sum(1 for e in self.events if isinstance(e, Compaction)),
        }

    def chat_view(self) -> list[Any]:
        """The OpenAI-chat messages the gglib engine walks.

        ``openai_chat`` and ``tau_bench`` give their recorded messages unchanged (gglib reads
        the wire as it is, junk included); every other format gives one message per event, so
        the view's assistant messages and ``tool_calls`` are exactly the session's turns and
        calls and ``turn`` / ``call`` agree between engines."""
        return list(self._chat_view)

    @functools.cached_property
    def _chat_view(self) -> tuple[Any, ...]:
        if self.chat_messages is not None:
            return tuple(self.chat_messages)
        return tuple(_chat_view_of_events(self.events))


def _chat_view_of_events(events: tuple[Event, ...]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, UserMessage):
            messages.append({"role": "user", "content": event.text})
        elif isinstance(event, SystemMessage):
            messages.append({"role": "system", "content": event.text})
        elif isinstance(event, OtherMessage):
            messages.append({"role": "other", "content": event.text})
        elif isinstance(event, AssistantTurn):
            message: dict[str, Any] = {"role": "assistant", "content": event.text}
            if event.tool_calls:
                message["tool_calls"] = [_chat_view_call(c) for c in event.tool_calls]
            messages.append(message)
        elif isinstance(event, ToolResult):
            tool_message: dict[str, Any] = {"role": "tool", "content": event.content}
            if isinstance(event.call_id, str):
                tool_message["tool_call_id"] = event.call_id
            messages.append(tool_message)
        # Compaction: no message.
    return messages


def _chat_view_call(call: ToolCall) -> dict[str, Any]:
    if call.arguments_kind == "free_text":
        # The JSON encoding of the string, so the engine reads back exactly that string.
        arguments: Any = orjson.dumps(call.raw_arguments).decode()
    else:
        arguments = call.raw_arguments
    element: dict[str, Any] = {"type": "function", "function": {"name": call.name, "arguments": arguments}}
    if call.id is not None:
        element = {"id": call.id, **element}
    return element
