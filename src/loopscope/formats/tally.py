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

from loopscope.formats.text import parse_json_text
from loopscope.model import escape_for_display

__all__ = [
    "IMPORTED_CALLS",
    "Anchor",
    "CallTally",
    "ElementAnchor",
    "count_document",
    "count_records",
    "count_text",
    "count_unknown_records",
    "count_unknown_text",
    "count_unknown_value",
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


# OpenTelemetry spans (OTLP JSON, console-exporter dumps), whatever GenAI convention each span
# follows: a tool span (OpenInference ``TOOL``, Langfuse ``tool``, GenAI ``execute_tool``) is a
# call, and so is every tool call in a model span's recorded output. The convention of a span
# is its own (``openinference.span.kind``, else ``langfuse.observation.type``, else ``gen_ai.*``),
# as the importer decides it, so that a call is not counted twice from two conventions.

_OI_OUTPUT_CALL = re.compile(r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.")
_INDEXED_COMPLETION_CALL = re.compile(r"^gen_ai\.completion\.(\d+)\.tool_calls\.(\d+)\.")
_LANGFUSE_TYPES = frozenset({"GENERATION", "SPAN", "EVENT", "TOOL", "AGENT", "CHAIN",
                             "RETRIEVER", "EVALUATOR", "EMBEDDING", "GUARDRAIL"})
_GENAI_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})


def _any_value(value: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as a plain value (only what a call's name or output needs)."""
    if type(value) is not dict or depth > 64:
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "intValue", "bytesValue"):
        if key in value:
            return value[key]
    array = value.get("arrayValue")
    if type(array) is dict and type(array.get("values")) is list:
        return [_any_value(v, depth + 1) for v in array["values"]]
    return None


def _span_attributes(items: Any) -> dict[str, Any]:
    """Span or event attributes: OTLP's ``[{"key", "value"}]`` list, or a plain object."""
    if type(items) is dict:
        return items
    out: dict[str, Any] = {}
    if type(items) is list:
        for item in items:
            if type(item) is dict and isinstance(item.get("key"), str):
                out[item["key"]] = _any_value(item.get("value"))
    return out


def _openai_output(value: Any, anchor: Anchor, saw: Saw, depth: int = 0) -> None:
    """Tool calls of a model output in the OpenAI shapes (a message, a choice, a list of
    them; in a list only messages without a role or with the role ``assistant``)."""
    if depth > 8:
        return
    if type(value) is list:
        for item in value:
            if type(item) is dict and isinstance(item.get("role"), str) \
                    and item["role"] != "assistant":
                continue
            _openai_output(item, anchor, saw, depth + 1)
    elif type(value) is dict:
        if type(value.get("message")) is dict:
            _openai_output(value["message"], anchor, saw, depth + 1)
            return
        calls = value.get("tool_calls")
        if type(calls) is list:
            for call in calls:
                if type(call) is dict:
                    function = call.get("function")
                    saw((anchor, function.get("name") if type(function) is dict
                         else call.get("name")))


def _indexed_pairs(attrs: dict[str, Any], pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    pairs: dict[tuple[str, str], None] = {}
    for key in attrs:
        match = pattern.match(key)
        if match is not None:
            pairs.setdefault((match.group(1), match.group(2)), None)
    return sorted(pairs, key=lambda p: (int(p[0]), int(p[1])))


def _span_calls(attrs: dict[str, Any], events: list[tuple[Any, dict[str, Any]]], name: Any,
                anchor: Anchor, saw: Saw) -> None:
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str) and kind:
        if kind.upper() == "TOOL":
            saw((anchor, attrs.get("tool.name") or attrs.get("tool_call.function.name") or name))
        elif kind.upper() == "LLM":
            for i, j in _indexed_pairs(attrs, _OI_OUTPUT_CALL):
                saw((anchor, attrs.get(f"llm.output_messages.{i}.message.tool_calls.{j}"
                                       ".tool_call.function.name")))
        return
    ltype = attrs.get("langfuse.observation.type")
    if isinstance(ltype, str) and ltype.upper() in _LANGFUSE_TYPES and (
            ltype.lower() not in ("span", "event") or "gen_ai.operation.name" not in attrs):
        if ltype.upper() == "TOOL":
            saw((anchor, attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or name))
        if ltype.upper() != "GENERATION":
            return
        for key in ("langfuse.observation.output", "gen_ai.completion", "output.value"):
            if attrs.get(key) is not None:
                _openai_output(parse_json_text(attrs[key]), anchor, saw)
                return
        _genai_output_calls(attrs, events, anchor, saw)
        return
    operation = attrs.get("gen_ai.operation.name")
    if operation is None and isinstance(attrs.get("llm.request.type"), str):
        operation = attrs["llm.request.type"]
    if operation == "execute_tool" or (operation is None and "gen_ai.tool.name" in attrs):
        saw((anchor, attrs.get("gen_ai.tool.name") or name))
        return
    if operation is None or operation in _GENAI_MODEL_OPERATIONS:
        _genai_output_calls(attrs, events, anchor, saw)


def _genai_output_calls(attrs: dict[str, Any], events: list[tuple[Any, dict[str, Any]]],
                        anchor: Anchor, saw: Saw) -> None:
    details = [a for n, a in events if n == "gen_ai.client.inference.operation.details"]
    for source in [attrs, *details]:
        if "gen_ai.output.messages" in source:
            messages = parse_json_text(source["gen_ai.output.messages"])
            for message in messages if type(messages) is list else []:
                parts = message.get("parts") if type(message) is dict else None
                for part in parts if type(parts) is list else []:
                    if type(part) is dict and part.get("type") == "tool_call":
                        saw((anchor, part.get("name")))
            return
    completions = [a for n, a in events if n == "gen_ai.content.completion"]
    for source in [attrs, *completions]:
        if "gen_ai.completion" in source:
            _openai_output(parse_json_text(source["gen_ai.completion"]), anchor, saw)
            return
    for i, j in _indexed_pairs(attrs, _INDEXED_COMPLETION_CALL):
        saw((anchor, attrs.get(f"gen_ai.completion.{i}.tool_calls.{j}.name")))


def _span(span: Any, anchor: Anchor, saw: Saw) -> None:
    if type(span) is not dict:
        return
    events = span.get("events")
    _span_calls(_span_attributes(span.get("attributes")),
                [(e.get("name"), _span_attributes(e.get("attributes")))
                 for e in (events if type(events) is list else []) if type(e) is dict],
                span.get("name"), anchor, saw)


def _otlp(value: Any, saw: Saw, line: int | None) -> None:
    if type(value) is not dict or type(value.get("resourceSpans")) is not list:
        return
    for r, resource in enumerate(value["resourceSpans"]):
        scopes = resource.get("scopeSpans") if type(resource) is dict else None
        for s, scope in enumerate(scopes if type(scopes) is list else []):
            spans = scope.get("spans") if type(scope) is dict else None
            for k, span in enumerate(spans if type(spans) is list else []):
                _span(span, line if line is not None
                      else f"/resourceSpans/{r}/scopeSpans/{s}/spans/{k}", saw)


def _otlp_document(value: Any, saw: Saw) -> None:
    _otlp(value, saw, None)


def _otlp_record(value: Any, line: int, saw: Saw) -> None:
    _otlp(value, saw, line)


def _console_document(value: Any, saw: Saw) -> None:
    """Console-exporter spans: one span object, or the spans one after another (a list; a span
    printed twice is counted twice, and the importer sets the repeat's calls aside)."""
    if type(value) is dict:
        _span(value, "", saw)
    elif type(value) is list:
        for i, span in enumerate(value):
            _span(span, f"/{i}", saw)


def _console_record(value: Any, line: int, saw: Saw) -> None:
    _span(value, line, saw)


# mini-swe-agent: an assistant message's action is its one fenced ``bash`` (or, from version 2,
# ``mswea_bash_command``) block; a message with none or several made no call (the agent answered
# it with a format error). A tool-calling model's messages carry OpenAI ``tool_calls`` instead.
MINI_SWE_ACTION = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)


def _mini_swe_document(value: Any, saw: Saw) -> None:
    messages = value.get("messages") if type(value) is dict else None
    if type(messages) is not list:
        return
    for i, message in enumerate(messages):
        if type(message) is not dict or message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls")
        if type(calls) is list and calls:
            for call in calls:
                function = call.get("function") if type(call) is dict else None
                saw((f"/messages/{i}", function.get("name") if type(function) is dict else ""))
            continue
        content = message.get("content")
        if isinstance(content, str) and len(MINI_SWE_ACTION.findall(content)) == 1:
            saw((f"/messages/{i}", "bash"))
# SpecStory Markdown: in an assistant message, outside fences, every ``<tool-use`` tag, and at
# the start of a bubble (after a role heading, ``---`` or ``_****_``) the older call shapes: a
# ``Tool use: **`` line, a ``<details>`` whose summary names a tool or a search, ``Read file:``,
# ``### Rule:``, a shell or diff fence. One per bubble for the older shapes.
_SS_ROLE = re.compile(r"^_\*\*(User|Assistant|Agent)\b[^*]*\*\*_\s*$")
_SS_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
_SS_START = re.compile(r"^(?:Read file: |### Rule: |Tool use: \*\*)")
_SS_SUMMARY = re.compile(r"<summary>\s*(?:Tool use: \*\*|Listed |Searched |Grep search for )")
_SS_FENCED_CALLS = frozenset({"bash", "sh", "shell", "zsh", "console", "powershell", "ps1",
                              "cmd", "fish", "diff"})


def _specstory_text(text: str, saw: Saw) -> None:
    assistant = False
    fence: str | None = None
    region: str | None = None
    fresh = False  # at the start of an assistant bubble
    details = False  # a bubble opened with <details>; its summary may be on the next line
    rule = False  # in a "### Rule:" bubble: it ends at the first "---" after a blank line
    previous = ""
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip()
        blank_before = not previous.strip()
        previous = line
        if rule:
            if stripped == "---" and blank_before:
                rule, fresh = False, assistant
            continue
        opener = _SS_FENCE.match(line)
        if fence is not None:
            if opener is not None and not opener.group(2) and stripped == opener.group(1) \
                    and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = None
            continue
        if opener is not None:
            fence = opener.group(1)
            if assistant and fresh and region is None \
                    and opener.group(2).lower() in _SS_FENCED_CALLS:
                saw((number, opener.group(2).lower()))
            fresh = details = False
            continue
        role = _SS_ROLE.match(line)
        if role is not None:
            assistant = role.group(1) != "User"
            region = None
            fresh, details = assistant, False
            continue
        if region is not None:
            if region in line:
                region = None
            continue
        if stripped in ("---", "_****_"):
            fresh, details = assistant, False
            continue
        if not stripped or not assistant:
            continue
        if stripped.startswith("<tool-use"):
            saw((number, "tool-use"))
            if "</tool-use>" not in line:
                region = "</tool-use>"
            fresh = details = False
            continue
        if stripped.startswith("<think>"):
            if "</think>" not in line:
                region = "</think>"
            continue
        if fresh and (_SS_START.match(stripped) or (
                (details or stripped.startswith("<details")) and _SS_SUMMARY.search(stripped))):
            saw((number, stripped[:40]))
            rule = stripped.startswith("### Rule: ")
            fresh = details = False
            continue
        details = fresh and stripped.startswith("<details")
        fresh = details


# Aider's chat history: Aider's own lines saying it edited a file, refused an edit, ran or was
# refused a command, and the /run, /test and ! commands the user typed (a fence the model
# opened hides ``> `` lines until it closes or Aider writes its ``> Tokens:`` line).
_AIDER_CALL = re.compile(
    r"^> (?:Applied edit to |Did not apply edit to |Skipping edits to |Running |"
    r"The LLM did not conform to the edit format|Run shell commands?\? .*\]: ?[^yYaA\s])")
_AIDER_USER_RUN = re.compile(r"^#### (?:/run |/test |!)\S")


def _aider_text(text: str, saw: Saw) -> None:
    fence: str | None = None
    previous = ""
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if fence is not None:
            opener = _SS_FENCE.match(line)
            if line.startswith("> Tokens: ") or (
                    opener is not None and not opener.group(2)
                    and line.strip() == opener.group(1) and opener.group(1)[0] == fence[0]):
                fence = None
            previous = line
            continue
        if _AIDER_CALL.match(line) or (
                _AIDER_USER_RUN.match(line) and not previous.startswith("####")):
            saw((number, line[2:42]))
        elif not line.startswith(("> ", "####")):
            opener = _SS_FENCE.match(line)
            if opener is not None:
                fence = opener.group(1)
        previous = line


# Cline / Roo Code. The API history: ``tool_use`` blocks and the tags of the agents' tools in
# assistant text (a tag inside an open call is part of it); the UI messages: the finished
# (not ``partial``) records that show a call.
_CLINE_TOOLS = (
    "execute_command|read_file|write_to_file|replace_in_file|search_files|list_files|"
    "list_code_definition_names|browser_action|use_mcp_tool|access_mcp_resource|"
    "ask_followup_question|plan_mode_respond|load_mcp_documentation|attempt_completion|"
    "new_task|condense|summarize_task|report_bug|new_rule|web_fetch|web_search|apply_patch|"
    "focus_chain|apply_diff|insert_content|search_and_replace|switch_mode|fetch_instructions|"
    "codebase_search|update_todo_list|run_slash_command|generate_image|simple_read_file|"
    "edit_file|search_replace")
_CLINE_TAG = re.compile(r"<(/?)(" + _CLINE_TOOLS + r")>")
_CLINE_UI_CALLS = frozenset({
    ("ask", "tool"), ("say", "tool"), ("ask", "command"), ("say", "command"),
    ("ask", "use_mcp_server"), ("say", "use_mcp_server"), ("ask", "browser_action_launch"),
    ("say", "browser_action_launch"), ("say", "browser_action"),
    ("say", "load_mcp_documentation"), ("ask", "followup"), ("ask", "plan_mode_respond"),
    ("say", "completion_result"), ("ask", "new_task"), ("ask", "condense"),
    ("ask", "report_bug"), ("ask", "summarize_task")})


def _cline_tags(text: str, anchor: Anchor, saw: Saw) -> None:
    inside: str | None = None
    for match in _CLINE_TAG.finditer(text):
        closing, name = match.group(1), match.group(2)
        if inside is None and not closing:
            inside = name
            saw((anchor, name))
        elif inside == name and closing and name not in ("write_to_file", "new_rule"):
            inside = None
        elif inside == name and closing:  # (file content may hold the closing tag: the last)
            rest = text[match.end():]
            if f"</{name}>" not in rest:
                inside = None


def _cline_document(value: Any, saw: Saw) -> None:
    if type(value) is not list:
        return
    ui = [v for v in value[:50] if type(v) is dict and v.get("type") in ("ask", "say")
          and "ts" in v]
    if value and len(ui) * 2 > len(value[:50]):
        for i, record in enumerate(value):
            if type(record) is dict and record.get("partial") is not True:
                kind = record.get("type")
                what = record.get(kind) if kind in ("ask", "say") else None
                if type(what) is str and (kind, what) in _CLINE_UI_CALLS:
                    saw((f"/{i}", what))
        return
    for i, message in enumerate(value):
        if type(message) is not dict or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if type(content) is str:
            _cline_tags(content, f"/{i}", saw)
        elif type(content) is list:
            for k, block in enumerate(content):
                if type(block) is not dict:
                    continue
                if block.get("type") == "tool_use":
                    saw((("", i, "content", k), block.get("name")))
                elif block.get("type") == "text" and type(block.get("text")) is str:
                    _cline_tags(block["text"], f"/{i}", saw)


def _opencode_document(value: Any, saw: Saw) -> bool | None:
    """An export's ``tool`` parts of assistant messages; a storage session file (its parts
    live in other files) is not counted."""
    if type(value) is not dict or type(value.get("messages")) is not list:
        return False
    for i, message in enumerate(value["messages"]):
        if type(message) is not dict or type(message.get("parts")) is not list:
            continue
        info = message.get("info")
        if type(info) is dict and info.get("role") not in ("assistant", None):
            continue
        for k, part in enumerate(message["parts"]):
            if type(part) is dict and part.get("type") == "tool":
                saw((("/messages", i, "parts", k), part.get("tool")))
    return None


# opencode /export Markdown: a ``**Tool: name**`` line of an ``## Assistant`` section, outside
# the fenced blocks.
_OC_TOOL = re.compile(r"^\*\*Tool: (.+)\*\*\s*$")


def _opencode_markdown_text(text: str, saw: Saw) -> None:
    assistant = False
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if line.startswith("```"):
            if not fenced:
                fenced = True  # (any fence opens a block)
            elif line.strip() == "```":
                fenced = False  # (only a bare fence closes it)
            continue
        if fenced:
            continue
        if line.startswith("## "):
            assistant = line.startswith("## Assistant")
            continue
        if assistant:
            match = _OC_TOOL.match(line)
            if match is not None:
                saw((number, match.group(1).strip()))


RecordCounter = Callable[[Any, int, Saw], None]
DocumentCounter = Callable[[Any, Saw], bool | None]
"""Returns ``False`` when the document's shape is not counted (calls kept in other files)."""

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
    "otel_genai": _otlp_record,
    "otel_console": _console_record,
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
    "otel_genai": _otlp_document,
    "otel_console": _console_document,
    "mini_swe_agent_traj": _mini_swe_document,
    "cline_task": _cline_document,
    "opencode_session": _opencode_document,
}
_TEXT_COUNTERS: dict[str, Callable[[str, Saw], None]] = {
    "claude_code_markdown": _claude_markdown_text,
    "cursor_specstory": _specstory_text,
    "aider_history": _aider_text,
    "opencode_markdown": _opencode_markdown_text,
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
        tally.counted = counter(value, tally.seen.append) is not False


def count_text(format_id: str, text: str, tally: CallTally) -> None:
    counter = _TEXT_COUNTERS.get(format_id)
    if counter is not None:
        tally.counted = True
        counter(text, tally.seen.append)


# ----------------------------------------------------------------------------- files no importer reads
#
# A file that no importer reads (an agent loopscope does not support yet, a summary that
# borrows a recorder's names, a damaged document) still holds calls a user expects replayed.
# These counters find call-shaped content in any JSON value or text, so that a refused file
# says "N tool calls not imported" instead of vanishing. They know the call shapes of the
# common recorders and APIs, not any one file layout; they never decide whether a file imports.

_UNKNOWN_CALL_TYPES = frozenset({
    "tool_use", "server_tool_use", "mcp_tool_use",          # Anthropic content blocks
    "toolCall", "tool_call", "tool-call",                   # pi, Vercel AI SDK, GenAI parts
    "function_call", "custom_tool_call", "local_shell_call", "mcp_call",  # Responses items
})
_CLINE_CALLS = frozenset({"tool", "command", "use_mcp_server", "browser_action_launch"})
_CLINE_TOOL = re.compile(r'^\s*\{\s*"tool"\s*:\s*"([^"\\]{1,60})"')
_CALL_ARGUMENTS = ("arguments", "args", "input", "tool_input", "parameters")
_BASH_BLOCK = re.compile(r"```(?:bash|sh|shell)\s*\n")


def _unknown_call(node: dict[str, Any]) -> tuple[bool, Any]:
    """Whether one JSON object of an unknown file is shaped like a tool call, and its name.

    Anthropic/pi/Responses/Vercel call objects by their ``type``; an OpenAI ``tool_calls``
    element (``function`` with a ``name``); a Gemini ``functionCall`` part; an opencode tool
    part (``type: "tool"`` with ``tool``); a Cline ``ui_messages`` entry asking or saying a
    tool, command or MCP use; an object naming a tool with its arguments (``tool_name`` +
    ``tool_input``, ``toolName`` + ``args``); an OpenTelemetry tool span; a mini-swe-agent
    style assistant message whose action is a ``bash`` block."""
    kind = node.get("type")
    if type(kind) is str:
        if kind in _UNKNOWN_CALL_TYPES:
            return True, node.get("name") or node.get("toolName") or node.get("tool_name")
        if kind == "tool" and type(node.get("tool")) is str:
            return True, node["tool"]
        if kind in ("say", "ask") and _text(node.get(kind)) in _CLINE_CALLS:
            # (a tool's name is in the JSON of its text: {"tool": "readFile", …})
            named = _CLINE_TOOL.search(node["text"][:300]) if type(node.get("text")) is str \
                else None
            return True, named.group(1) if named else node[kind]
    function = node.get("function")
    if type(function) is dict and type(function.get("name")) is str and (
            "arguments" in function or node.get("type") == "function"):
        return True, function["name"]
    call = node.get("functionCall")
    if type(call) is dict:
        return True, call.get("name")
    for key in ("tool_name", "toolName"):
        if type(node.get(key)) is str and any(k in node for k in _CALL_ARGUMENTS):
            return True, node[key]
    attributes = node.get("attributes")
    if type(attributes) is dict and (
            attributes.get("gen_ai.operation.name") == "execute_tool"
            or attributes.get("openinference.span.kind") == "TOOL"):
        return True, attributes.get("gen_ai.tool.name") or attributes.get("tool.name")
    if node.get("role") == "assistant" and type(node.get("content")) is str \
            and _BASH_BLOCK.search(node["content"]):
        return True, "bash"
    return False, None


def count_unknown_value(value: Any, saw: Saw, prefix: str = "",
                        line: int | None = None) -> None:
    """Every call-shaped object in a parsed JSON value (see :func:`_unknown_call`), anchored
    at ``line`` (a JSON Lines record) or at its JSON Pointer under ``prefix``. The value is
    walked without recursion (it is already within the parser's depth limit); a call's own
    arguments are not searched for more calls."""
    stack: list[tuple[Any, str]] = [(value, prefix)]
    while stack:
        node, where = stack.pop()
        if type(node) is dict:
            is_call, name = _unknown_call(node)
            if is_call:
                saw((line if line is not None else where, name))
                continue
            children = list(node.items())
        elif type(node) is list:
            children = list(enumerate(node))
        else:
            continue
        for key, child in reversed(children):
            if type(child) is dict or type(child) is list:
                stack.append((child, f"{where}/{key}" if line is None else where))


def count_unknown_records(records: Iterable[Any], saw: Saw) -> None:
    """:func:`count_unknown_value` over the records of a JSON Lines file."""
    for record in records:
        count_unknown_value(record.value, saw, line=record.line)


# Text: one call per line that names a tool the way transcripts and exports write it (the
# group "name", where a pattern has one, is the tool's name).
_TEXT_CALLS = (
    # a JSON call object inside text (a pasted or broken export): its "type" or key
    re.compile(r'"type"\s*:\s*"(?:tool_use|server_tool_use|mcp_tool_use|toolCall|tool_call|'
               r'function_call|custom_tool_call|local_shell_call)"'),
    re.compile(r'"functionCall"\s*:\s*\{\s*"name"\s*:\s*"(?P<name>[^"\\]{1,60})"|'
               r'"functionCall"\s*:\s*\{'),
    re.compile(r'"function"\s*:\s*\{\s*"name"\s*:\s*"(?P<name>[^"\\]{1,60})"'),
    # a label: "**Tool: bash**", "Tool use: **read_file**", "### Tool call: search",
    # "<summary>Tool use: …", "🔧 Tool: …", "Calling tool: …", "Function call: …"
    re.compile(r"^[\s>#*_|-]{0,12}(?:(?:🔧|🛠\ufe0f?|<summary>)\s*)?(?:\*\*|__)?"
               r"(?:tool(?:[ _-]?(?:use|call))?|function[ _-]call|calling tool)(?:\*\*|__)?"
               r"\s*:\s*(?:\*\*|__|`)?(?P<name>[\w.\-/]+)", re.IGNORECASE),
    # XML-style tool tags (Anthropic's prompt format, Hermes, many agents' transcripts)
    re.compile(r'<invoke\s+name="(?P<name>[^"]{1,60})"|<(?:tool_use|tool_call|function_call)>'),
    # aider's chat history: an applied edit, a shell command it ran
    re.compile(r"^> (?P<name>Applied edit|Running) \S"),
    # Cursor's SpecStory exports: a tool's summary line
    re.compile(r"^\s*(?:<summary>)?\s*(?P<name>Read file|Listed directory|Searched codebase|"
               r"Grep search|Searched files|Searched web|Edited file|Deleted file)\b"),
)
_SPECSTORY = "<!-- Generated by SpecStory -->"
_SHELL_FENCE = re.compile(r"^```(?:bash|sh|shell|zsh)\s*$")
_ACTION = re.compile(r"^\s*Action\s*:\s*(?P<name>\S.{0,59})")
_ACTION_INPUT = re.compile(r"^\s*Action Input\s*:")
_LONG_LINE = 10_000
"""Characters of a line searched (minified JSON: one count for the line is all it can say)."""


def count_unknown_text(text: str, saw: Saw) -> None:
    """Call-shaped lines of a text that no importer reads (a Markdown transcript of an agent
    loopscope does not support, a JSON file too damaged to parse), anchored at their 1-based
    line: at most one call per line. A ReAct ``Action:`` line counts only when an
    ``Action Input:`` follows within three lines (a prose "Action:" is no call)."""
    lines = text.split("\n")
    specstory = _SPECSTORY in text[:4096]
    previous = ""  # the last line that is not blank
    for number, line in enumerate(lines, 1):
        line = line[:_LONG_LINE]
        after, previous = previous, (line if line.strip() else previous)
        for pattern in _TEXT_CALLS:
            found = pattern.search(line)
            if found is not None:
                saw((number, found.groupdict().get("name") or ""))
                break
        else:
            if specstory and (line.startswith("### Rule:") or (
                    _SHELL_FENCE.match(line) and after.strip() == "---")):
                # (SpecStory's Cursor exports: a rule fetched; a terminal command, a shell
                # block opening a separated section — elsewhere a shell block is an example)
                saw((number, "fetch_rules" if line.startswith("#") else "run_terminal_cmd"))
                continue
            action = _ACTION.match(line)
            if action is not None and any(_ACTION_INPUT.match(following)
                                          for following in lines[number:number + 3]):
                saw((number, action.group("name").strip()))


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
