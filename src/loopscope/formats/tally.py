"""Counting the tool calls a file holds, apart from the importer that reads it.

A replay tool that silently drops the very calls a loop is made of is worse than none. So the
loader counts, for every file, the call-shaped records it **saw** (with a small per-format
counter that looks only at the raw parsed values, never at what the importer decided), and the
calls that reached the imported sessions (the builder reports each call it freezes). Importers
report the calls they leave out on purpose (a repeated ``tool_use`` id, an abandoned pi
branch, a message a Gemini ``$rewindTo`` removed) as *set aside*, with the reason. Any other
difference is a ``calls_not_imported`` warning naming the file and the line or pointer of the
first call that was lost.

The counters are deliberately lenient: they count what *looks* like a call in each format, so
that an importer that fails to recognise a variant is caught rather than excused.
"""

from __future__ import annotations

import contextvars
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from loopscope.model import escape_for_display

__all__ = [
    "IMPORTED_CALLS",
    "Anchor",
    "CallTally",
    "ElementAnchor",
    "count_document",
    "count_records",
    "count_text",
    "counts_format",
]

Anchor = int | str | None
"""Where a call was recorded: the 1-based line (JSON Lines, Markdown), a JSON Pointer
(documents), or ``None`` when unknown."""
ElementAnchor = tuple[str | None, int, str, int]
"""``(prefix, i, name, k)``: the pointer ``f"{prefix}/{i}/{name}/{k}"`` (element ``k`` of list
``name`` of message ``i``), written only when the counts disagree (see :func:`lost_calls`): the
counters of the largest documents meet a call per message, and writing a pointer for each cost
more than the rest of their walk."""

IMPORTED_CALLS: contextvars.ContextVar[list[Any] | None] = \
    contextvars.ContextVar("loopscope_imported_calls", default=None)
"""Set by the loader while a file imports: the builder adds the draft of every call it freezes
(its origin is resolved to an anchor only when the counts disagree)."""


@dataclass
class CallTally:
    """Tool calls of one file: seen in the file, imported, set aside on purpose."""

    seen: list[tuple[Anchor | ElementAnchor, Any]] = field(default_factory=list)
    """One ``(anchor, tool name)`` per call-shaped record the counter found, in file order."""
    counted: bool = False
    """Whether a counter ran (``False``: this layout is not counted, e.g. a zip archive)."""
    set_aside: list[tuple[str, Anchor]] = field(default_factory=list)
    """``(reason, anchor)`` per call an importer left out on purpose."""

    def saw(self, anchor: Anchor, name: Any) -> None:
        self.seen.append((anchor, name))  # (a name that is no string is shown as none)

    def aside(self, reason: str, anchor: Anchor = None, count: int = 1) -> None:
        self.set_aside.extend([(reason, anchor)] * count)

    @property
    def seen_count(self) -> int | None:
        return len(self.seen) if self.counted else None

    def reasons(self) -> dict[str, int]:
        return dict(Counter(reason for reason, _ in self.set_aside))


def _name(value: Any) -> str:
    return value if isinstance(value, str) else ""


# ----------------------------------------------------------------------------- per format
#
# A record counter takes one parsed JSONL record (with its line) and reports its calls through
# ``saw((anchor, name))``; a document counter takes the whole parsed document. Anchors match the
# origins the importers give their calls, so that a lost call can be named.

Saw = Callable[[tuple[Anchor | ElementAnchor, Any]], None]
"""``CallTally.seen.append``: each counter adds ``(anchor, tool name)`` per call it finds."""


def _at(anchor: Anchor) -> Callable[[int], Anchor]:
    """Every element of a record at one anchor (a JSONL line)."""
    return lambda _k: anchor


def _under(pointer: str) -> Callable[[int], Anchor]:
    """Element ``k`` of the list at ``pointer``."""
    return lambda k: f"{pointer}/{k}"


def _chat_message(message: Any, anchor: Callable[[int], Anchor], saw: Saw) -> None:
    """OpenAI chat: every ``tool_calls`` element of an ``assistant`` message is a call (junk
    elements included: the gglib engine counts them)."""
    if type(message) is not dict or message.get("role") != "assistant":
        return
    calls = message.get("tool_calls")
    if type(calls) is list:
        for k, element in enumerate(calls):
            function = element.get("function") if type(element) is dict else None
            saw((anchor(k), function.get("name") if type(function) is dict else ""))


def _chat_messages(messages: Any, prefix: str | None, saw: Saw, line: int | None = None) -> None:
    if type(messages) is not list:
        return
    for i, message in enumerate(messages):
        if type(message) is not dict:
            continue
        calls = message.get("tool_calls")
        # (the anchors are made only for a message that holds calls: most do not)
        if type(calls) is list and calls and message.get("role") == "assistant":
            for k, element in enumerate(calls):
                function = element.get("function") if type(element) is dict else None
                saw((line if line is not None else (prefix, i, "tool_calls", k),
                     function.get("name") if type(function) is dict else ""))


def _chat_body(body: Any, prefix: str, saw: Saw, line: int | None = None) -> None:
    if type(body) is dict:
        _chat_messages(body.get("messages"), f"{prefix}/messages", saw, line)
        response = body.get("response")
        if type(response) is dict and type(response.get("choices")) is list \
                and response["choices"] and type(response["choices"][0]) is dict:
            reply = response["choices"][0].get("message")
            where = f"{prefix}/response/choices/0/message"
            _chat_message(reply, (lambda _k: line) if line is not None
                          else (lambda k: f"{where}/tool_calls/{k}"), saw)
    elif type(body) is list:
        _chat_messages(body, prefix, saw, line)


def _openai_chat_document(value: Any, saw: Saw) -> None:
    if type(value) is dict:
        _chat_body(value, "", saw)
    elif type(value) is list:
        if value and all(type(e) is list or (type(e) is dict and "role" not in e
                                             and type(e.get("messages")) is list)
                         for e in value):
            for n, element in enumerate(value):
                _chat_body(element, f"/{n}", saw)
        else:
            _chat_messages(value, "", saw)


def _openai_chat_record(value: Any, line: int, saw: Saw) -> None:
    if type(value) is dict and "role" not in value and type(value.get("messages")) is list:
        _chat_body(value, "", saw, line)
    elif type(value) is list:
        _chat_messages(value, None, saw, line)
    else:
        _chat_message(value, lambda _k: line, saw)


def _tau_bench_document(value: Any, saw: Saw) -> None:
    if type(value) is list:
        for n, element in enumerate(value):
            if type(element) is dict:
                _chat_messages(element.get("traj"), f"/{n}/traj", saw)


_RESPONSES_CALL = re.compile(r"^[a-z_]+_call$")


def _responses_item(item: Any, anchor: Anchor, saw: Saw) -> None:
    if type(item) is dict:
        itype = item.get("type")
        if isinstance(itype, str) and _RESPONSES_CALL.match(itype):
            saw((anchor, item.get("name") or itype[: -len("_call")]))


def _openai_responses_document(value: Any, saw: Saw) -> None:
    if type(value) is list:
        for i, item in enumerate(value):
            _responses_item(item, f"/{i}", saw)
    elif type(value) is dict:
        for key in ("input", "output"):
            items = value.get(key)
            if type(items) is list:
                for i, item in enumerate(items):
                    _responses_item(item, f"/{key}/{i}", saw)


def _openai_responses_record(value: Any, line: int, saw: Saw) -> None:
    _responses_item(value, line, saw)


def _text(value: Any) -> str | None:
    """``value`` if it is a string, else ``None``: a damaged record may hold a list where a
    type name belongs, and a list cannot be looked up in a set."""
    return value if type(value) is str else None


_ANTHROPIC_CALLS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def _anthropic_message(message: Any, anchor: Callable[[int], Anchor], saw: Saw) -> None:
    if type(message) is not dict or message.get("role") != "assistant":
        return
    content = message.get("content")
    if type(content) is list:
        for k, block in enumerate(content):
            if type(block) is dict and _text(block.get("type")) in _ANTHROPIC_CALLS:
                saw((anchor(k), block.get("name")))


def _anthropic_messages(messages: Any, prefix: str, saw: Saw, line: int | None) -> None:
    if type(messages) is not list:
        return
    calls = _ANTHROPIC_CALLS
    for i, message in enumerate(messages):
        if type(message) is not dict or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if type(content) is list:
            for k, block in enumerate(content):
                if type(block) is dict and block.get("type") in calls:
                    saw((line if line is not None else (prefix, i, "content", k),
                         block.get("name")))


def _anthropic_document(value: Any, saw: Saw) -> None:
    if type(value) is dict:
        _anthropic_messages(value.get("messages"), "/messages", saw, None)
    elif type(value) is list:
        if value and all(type(e) is list or (type(e) is dict and "role" not in e
                                             and type(e.get("messages")) is list)
                         for e in value):
            for n, element in enumerate(value):
                if type(element) is dict:
                    _anthropic_messages(element.get("messages"), f"/{n}/messages", saw, None)
                else:
                    _anthropic_messages(element, f"/{n}", saw, None)
        else:
            _anthropic_messages(value, "", saw, None)


def _anthropic_record(value: Any, line: int, saw: Saw) -> None:
    if type(value) is dict and "role" not in value:
        _anthropic_messages(value.get("messages"), "", saw, line)
    elif type(value) is list:
        _anthropic_messages(value, "", saw, line)
    else:
        _anthropic_message(value, lambda _k: line, saw)


def _openclaw_record(value: Any, line: int, saw: Saw) -> None:
    """pi/OpenClaw: ``toolCall`` blocks of any entry that carries an assistant message,
    whatever its ``type`` says."""
    if type(value) is not dict:
        return
    message = value.get("message")
    if type(message) is dict and message.get("role") == "assistant":
        content = message.get("content")
        if type(content) is list:
            for block in content:
                if type(block) is dict and block.get("type") == "toolCall":
                    saw((line, block.get("name")))


def _claude_code_record(value: Any, line: int, saw: Saw) -> None:
    if type(value) is not dict:
        return
    message = value.get("message")
    if type(message) is dict and (value.get("type") == "assistant"
                                  or message.get("role") == "assistant"):
        content = message.get("content")
        if type(content) is list:
            for block in content:
                if type(block) is dict and _text(block.get("type")) in _ANTHROPIC_CALLS:
                    saw((line, block.get("name")))


_CODEX_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "mcp_call",
                          "web_search_call", "file_search_call", "code_interpreter_call",
                          "image_generation_call", "computer_call"})


def _codex_record(value: Any, line: int, saw: Saw) -> None:
    if type(value) is not dict:
        return
    item = value.get("payload") if value.get("type") == "response_item" else value
    if type(item) is dict and _text(item.get("type")) in _CODEX_CALLS:
        saw((line, item.get("name") or item.get("type")))


def _gemini_stream_record(value: Any, line: int, saw: Saw) -> None:
    if type(value) is dict and value.get("type") == "tool_use":
        saw((line, value.get("tool_name")))


def _gemini_chat_message(message: Any, anchor: Callable[[int], Anchor], saw: Saw) -> None:
    if type(message) is dict and message.get("type") == "gemini":
        calls = message.get("toolCalls")
        if type(calls) is list:
            for k, call in enumerate(calls):
                saw((anchor(k), call.get("name") if type(call) is dict else ""))


def _gemini_contents(contents: Any, prefix: str, saw: Saw) -> None:
    """A checkpoint: ``functionCall`` parts of ``model`` contents."""
    if type(contents) is not list:
        return
    for i, content in enumerate(contents):
        if type(content) is dict and content.get("role") == "model" \
                and type(content.get("parts")) is list:
            for k, part in enumerate(content["parts"]):
                if type(part) is dict and type(part.get("functionCall")) is dict:
                    saw((f"{prefix}/{i}/parts/{k}", part["functionCall"].get("name")))


def _gemini_chat_document(value: Any, saw: Saw) -> None:
    if type(value) is list:
        _gemini_contents(value, "", saw)
    elif type(value) is dict and type(value.get("history")) is list \
            and type(value.get("messages")) is not list:
        _gemini_contents(value["history"], "/history", saw)
    if type(value) is dict and type(value.get("messages")) is list:
        for i, message in enumerate(value["messages"]):
            _gemini_chat_message(message, _under(f"/messages/{i}/toolCalls"), saw)


def _gemini_chat_record(value: Any, line: int, saw: Saw) -> None:
    _gemini_chat_message(value, lambda _k: line, saw)


def _qwen_chat_record(value: Any, line: int, saw: Saw) -> None:
    from loopscope.formats.qwen_code_chat import call_parts

    for call in call_parts(value):
        saw((line, call.get("name")))


_OPENHANDS_NOT_CALLS = frozenset({"change_agent_state", "recall", "null", "pause", "resume",
                                  "system", "condensation", "message"})


def openhands_event_is_call(event: Any) -> tuple[bool, Any]:
    """Whether an OpenHands event (V0 or V1) is a tool call of the model, and its name."""
    if type(event) is not dict:
        return False, None
    if event.get("kind") == "ActionEvent":  # V1 (openhands-sdk)
        return True, event.get("tool_name")
    action = event.get("action")
    if not isinstance(action, str) or event.get("source") != "agent":
        return False, None
    tcm = event.get("tool_call_metadata")
    if type(tcm) is dict:
        return True, tcm.get("function_name") if isinstance(tcm.get("function_name"), str) \
            else action
    return action not in _OPENHANDS_NOT_CALLS, action


def _openhands_history(history: Any, anchor: Callable[[int], Anchor], saw: Saw) -> None:
    if type(history) is not list:
        return
    for i, element in enumerate(history):
        for event in (element if type(element) is list else [element]):
            is_call, name = openhands_event_is_call(event)
            if is_call:
                saw((anchor(i), name))


def _openhands_events_document(value: Any, saw: Saw) -> None:
    _openhands_history(value, lambda i: f"/{i}", saw)


def _openhands_output_record(value: Any, line: int, saw: Saw) -> None:
    if type(value) is dict:
        _openhands_history(value.get("history"), lambda _i: line, saw)


def _openhands_output_document(value: Any, saw: Saw) -> None:
    if type(value) is dict:
        _openhands_history(value.get("history"), lambda i: f"/history/{i}", saw)


def _swe_agent_trajectory(value: Any, prefix: str, saw: Saw) -> None:
    if type(value) is dict and type(value.get("trajectory")) is list:
        for k, step in enumerate(value["trajectory"]):
            if type(step) is dict:
                action = step.get("action")
                if isinstance(action, str) and action.strip():
                    saw((f"{prefix}/trajectory/{k}", action.split(None, 1)[0]))


def _swe_agent_document(value: Any, saw: Saw) -> None:
    _swe_agent_trajectory(value, "", saw)
    if type(value) is dict and type(value.get("attempts")) is list:
        for n, attempt in enumerate(value["attempts"]):
            _swe_agent_trajectory(attempt, f"/attempts/{n}", saw)


def _inspect_document(value: Any, saw: Saw) -> None:
    if type(value) is not dict or type(value.get("samples")) is not list:
        return
    for n, sample in enumerate(value["samples"]):
        if type(sample) is not dict or type(sample.get("messages")) is not list:
            continue
        for i, message in enumerate(sample["messages"]):
            if type(message) is dict and message.get("role") == "assistant" \
                    and type(message.get("tool_calls")) is list:
                for k, call in enumerate(message["tool_calls"]):
                    saw((f"/samples/{n}/messages/{i}/tool_calls/{k}",
                        call.get("function") if type(call) is dict else ""))


_MANAGED_CALLS = frozenset({"agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use"})


def _managed_record(value: Any, line: int, saw: Saw) -> None:
    if type(value) is not dict:
        return
    raw = value.get("raw")
    event: dict[str, Any] = raw if type(raw) is dict else value
    typ = event.get("type")
    if not isinstance(typ, str):
        typ = value.get("type")
    if _text(typ) in _MANAGED_CALLS:
        saw((line, event.get("name")))


# Markdown export: a pretty-printed ``"type": "tool_use"`` line inside an ``### Assistant``
# section (JSON strings escape their quotes, so the pattern cannot come from inside a text).
_MD_HEADING = re.compile(r"^#{2,3}\s+(\S.*?)\s*$")
_MD_TOOL_USE = re.compile(r'^\s*"type":\s*"tool_use"\s*,?\s*$')
_MD_NAME = re.compile(r'^\s*"name":\s*"((?:[^"\\]|\\.)*)"\s*,?\s*$')


def _claude_markdown_text(text: str, saw: Saw) -> None:
    section: str | None = None
    section_line = 0
    pending: int | None = None  # a tool_use line whose name is still to come
    for number, line in enumerate(text.split("\n"), 1):
        heading = _MD_HEADING.match(line)
        if heading is not None:
            if pending is not None:
                saw((section_line, ""))
                pending = None
            section = heading.group(1).strip().lower()
            section_line = number
            continue
        if section != "assistant":
            continue
        if _MD_TOOL_USE.match(line):
            if pending is not None:
                saw((section_line, ""))
            pending = number
            continue
        if pending is not None:
            name = _MD_NAME.match(line)
            if name is not None:
                saw((section_line, name.group(1)))
                pending = None
    if pending is not None:
        saw((section_line, ""))


RecordCounter = Callable[[Any, int, Saw], None]
DocumentCounter = Callable[[Any, Saw], None]

_RECORD_COUNTERS: dict[str, RecordCounter] = {
    "openai_chat": _openai_chat_record,
    "openai_responses": _openai_responses_record,
    "anthropic_messages": _anthropic_record,
    "openclaw_session": _openclaw_record,
    "claude_code": _claude_code_record,
    "codex_rollout": _codex_record,
    "gemini_cli_stream": _gemini_stream_record,
    "gemini_cli_chat": _gemini_chat_record,
    "qwen_code_chat": _qwen_chat_record,
    "openhands_output": _openhands_output_record,
    "claude_managed_events": _managed_record,
}
_DOCUMENT_COUNTERS: dict[str, DocumentCounter] = {
    "openai_chat": _openai_chat_document,
    "openai_responses": _openai_responses_document,
    "anthropic_messages": _anthropic_document,
    "gemini_cli_chat": _gemini_chat_document,
    "openhands_events": _openhands_events_document,
    "openhands_output": _openhands_output_document,
    "swe_agent_traj": _swe_agent_document,
    "tau_bench": _tau_bench_document,
    "inspect_eval": _inspect_document,
}
_TEXT_COUNTERS: dict[str, Callable[[str, Saw], None]] = {
    "claude_code_markdown": _claude_markdown_text,
}


def register(format_id: str, *, record: RecordCounter | None = None,
             document: DocumentCounter | None = None) -> None:
    """Add the counters of a format that lives in its own module (the trace-store formats)."""
    if record is not None:
        _RECORD_COUNTERS[format_id] = record
    if document is not None:
        _DOCUMENT_COUNTERS[format_id] = document


def counts_format(format_id: str, layout: str) -> bool:
    """Whether a counter exists for this format and layout."""
    tables: dict[str, Any] = {"jsonl": _RECORD_COUNTERS, "document": _DOCUMENT_COUNTERS,
                              "markdown": _TEXT_COUNTERS}
    return format_id in tables.get(layout, {})


def _openclaw_records(records: Iterable[Any], saw: Saw) -> Iterator[Any]:
    """``_openclaw_record`` written into the pass itself: pi/OpenClaw files are the largest
    JSON Lines files, and a call per line cost a few percent of their import."""
    for record in records:
        value = record.value
        if type(value) is dict:
            message = value.get("message")
            if type(message) is dict and message.get("role") == "assistant":
                content = message.get("content")
                if type(content) is list:
                    line = record.line
                    for block in content:
                        if type(block) is dict and block.get("type") == "toolCall":
                            saw((line, block.get("name")))
        yield record


_RECORD_PASSES: dict[str, Callable[[Iterable[Any], Saw], Iterator[Any]]] = {
    "openclaw_session": _openclaw_records,
}


def count_records(format_id: str, records: Iterable[Any], tally: CallTally) -> Iterator[Any]:
    """Pass the records through unchanged, counting the calls of each."""
    counter = _RECORD_COUNTERS.get(format_id)
    if counter is None:
        return iter(records)
    tally.counted = True
    saw = tally.seen.append
    inline = _RECORD_PASSES.get(format_id)
    if inline is not None:
        return inline(records, saw)
    return _counted(records, counter, saw)


def _counted(records: Iterable[Any], counter: RecordCounter, saw: Saw) -> Iterator[Any]:
    for record in records:
        counter(record.value, record.line, saw)
        yield record


def count_document(format_id: str, value: Any, tally: CallTally) -> None:
    counter = _DOCUMENT_COUNTERS.get(format_id)
    if counter is not None:
        tally.counted = True
        counter(value, tally.seen.append)


def count_text(format_id: str, text: str, tally: CallTally) -> None:
    counter = _TEXT_COUNTERS.get(format_id)
    if counter is not None:
        tally.counted = True
        counter(text, tally.seen.append)


# ----------------------------------------------------------------------------- the check


def _written(anchor: Anchor | ElementAnchor) -> Anchor:
    """An anchor, its pointer written out (see :data:`ElementAnchor`)."""
    if type(anchor) is tuple:
        prefix, i, name, k = anchor
        return f"{prefix}/{i}/{name}/{k}"
    return anchor  # type: ignore[return-value]


def _anchor_of(call: Any) -> Anchor:
    origin, element = call.origin, call.element
    if origin is None:
        return None
    if origin.line is not None:
        return origin.line
    if origin.pointer is None:
        return None
    if element is not None:
        return f"{origin.pointer}/{element[0]}/{element[1]}"
    return origin.pointer


def lost_calls(tally: CallTally, imported: list[Any],
               imported_count: int) -> tuple[int, str | None, Anchor]:
    """How many seen calls are neither in the sessions (``imported_count``) nor set aside, a
    description of the first (``line 12: "Bash"``) and its anchor, when the anchors of the
    calls the builder froze (``imported``) tell which."""
    missing = len(tally.seen) - imported_count - len(tally.set_aside)
    if missing <= 0:
        return 0, None, None
    seen = [(_written(anchor), name) for anchor, name in tally.seen]
    left = Counter(anchor for anchor, _ in seen)
    left.subtract(_anchor_of(call) for call in imported)
    left.subtract(anchor for _, anchor in tally.set_aside)
    for anchor, name in seen:
        if left.get(anchor, 0) > 0:
            where = f"line {anchor}" if isinstance(anchor, int) else (
                f"at {escape_for_display(anchor, 80)}" if anchor else "")
            shown = (f'"{escape_for_display(name, 60)}"' if isinstance(name, str) and name
                     else "a call without a name")
            return missing, f"{where}: {shown}" if where else shown, anchor
    return missing, None, None
