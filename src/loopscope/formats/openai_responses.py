"""OpenAI Responses API items — ``openai_responses``.

Layouts: a request body (``instructions`` → leading system event; ``input`` items or a string);
a response object (``output`` items); a logged pair (``input`` then ``output``); a bare list of
items; JSONL with one item per line. One session per file.

An assistant turn is a maximal run of consecutive *output* items (assistant ``message``,
``reasoning``, every ``*_call``): one model response, parallel calls together. Results that a
hosted call embeds are emitted right after its turn, paired by structure.

:func:`add_items` is public so that other formats built on Responses items can reuse it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import CallDraft, SessionBuilder, TurnDraft
from loopscope.formats.detect import RESPONSES_ITEM_TYPES
from loopscope.formats.text import TEXT_JOINER, extract_text, iso_timestamp, type_of
from loopscope.model import Origin, Session, escape_for_display
from loopscope.words import plural

FORMAT_ID = "openai_responses"

__all__ = ["FORMAT_ID", "add_items", "import_document", "import_records", "session_from_items"]

_HOSTED = frozenset({"web_search_call", "file_search_call", "code_interpreter_call",
                     "image_generation_call", "computer_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output",
                      "local_shell_call_output", "computer_call_output"})
_NO_EVENT = frozenset({"mcp_list_tools", "mcp_approval_request", "mcp_approval_response",
                       "item_reference"})
_ARGUMENT_FIELDS = ("action", "queries", "code", "arguments")
_OUTCOME_FIELDS = ("results", "outputs", "result", "error")


def _is_output_item(item: dict[str, Any]) -> bool:
    itype = type_of(item)
    if itype == "reasoning":
        return True
    if isinstance(itype, str) and itype.endswith("_call"):
        return True
    return (itype in (None, "message")) and item.get("role") == "assistant"


class _State:
    def __init__(self, builder: SessionBuilder) -> None:
        self.builder = builder
        self.turn: TurnDraft | None = None
        self.thinking: list[str] = []
        self.pending: list[tuple[CallDraft, dict[str, Any], Origin]] = []
        self.skipped: dict[str, int] = {}
        self.unknown: dict[str, int] = {}
        self.unknown_roles: set[str] = set()

    def end_turn(self) -> None:
        if self.turn is not None:
            self.turn.thinking = "\n".join(self.thinking)
        for call, item, origin in self.pending:
            outcome_key = next(k for k in (*_OUTCOME_FIELDS, "output") if item.get(k)
                               is not None)
            error = item.get("error")
            content = item.get(outcome_key) if error is None else error
            if type_of(item) == "mcp_call" and error is None:
                content = item.get("output")
            self.builder.result(call.id, content, extract_text(content, TEXT_JOINER),
                                is_error=error is not None, structure_call=call,
                                origin=origin)
        self.turn = None
        self.thinking = []
        self.pending = []

    def current_turn(self, origin: Origin, timestamp: str | None,
                     model: str | None) -> TurnDraft:
        if self.turn is None:
            self.turn = self.builder.assistant("", [], model=model, timestamp=timestamp,
                                               origin=origin)
        return self.turn


def add_items(builder: SessionBuilder, items: Iterable[tuple[Any, Origin]], ctx: ImportContext,
              *, candidate: int | None = None, model: str | None = None) -> dict[str, int]:
    """Map Responses items to events in ``builder``; returns ``{skipped type: count}``."""
    state = _State(builder)
    for item, origin in items:
        if not isinstance(item, dict):
            state.end_turn()
            state.skipped["<not an object>"] = state.skipped.get("<not an object>", 0) + 1
            continue
        _item(state, item, origin, ctx, candidate, model)
    state.end_turn()
    for name, count in state.unknown.items():
        ctx.problem("info", "unknown_record_type",
                    f'item type "{escape_for_display(name, 60)}" is not a Responses item; '
                    f"{plural(count, 'item')} made no event", candidate=candidate, count=count)
    return state.skipped


def _item(state: _State, item: dict[str, Any], origin: Origin, ctx: ImportContext,
          candidate: int | None, model: str | None) -> None:
    builder = state.builder
    itype = type_of(item)
    timestamp = iso_timestamp(item.get("timestamp")) if "timestamp" in item else None
    role = item.get("role")
    if _is_output_item(item):
        turn = state.current_turn(origin, timestamp, model)
        if isinstance(turn.content, list):
            turn.content.append(item)
        if itype == "reasoning":
            summary = item.get("summary")
            if isinstance(summary, list):
                for part in summary:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        state.thinking.append(part["text"])
            return
        if itype in (None, "message"):
            turn.text += _assistant_text(item.get("content"))
            return
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            call_id = item.get("id")
        if itype == "function_call":
            raw = item.get("arguments")
            builder.call(turn, item.get("name"), raw,
                         "json_text" if isinstance(raw, str) else "value", id=call_id,
                         origin=origin)
        elif itype == "custom_tool_call":
            raw = item.get("input")
            builder.call(turn, item.get("name"), raw,
                         "free_text" if isinstance(raw, str) else "value", id=call_id,
                         origin=origin)
        elif itype == "local_shell_call":
            builder.call(turn, "local_shell", item.get("action"), "value", id=call_id,
                         origin=origin)
        elif itype == "mcp_call":
            raw = item.get("arguments")
            call = builder.call(turn, item.get("name"), raw,
                                "json_text" if isinstance(raw, str) else "value",
                                id=item.get("id"), origin=origin)
            if item.get("output") is not None or item.get("error") is not None:
                state.pending.append((call, item, origin))
        else:
            name = itype[: -len("_call")] if isinstance(itype, str) else ""
            raw = next((item[k] for k in _ARGUMENT_FIELDS if k in item), {})
            call = builder.call(turn, name, raw, "value", id=call_id, origin=origin)
            if any(item.get(k) is not None for k in _OUTCOME_FIELDS):
                state.pending.append((call, item, origin))
        return
    # Anything else ends the current turn.
    state.end_turn()
    if itype in _OUTPUTS:
        output = item.get("output")
        builder.result(item.get("call_id"), output, extract_text(output, TEXT_JOINER),
                       timestamp=timestamp, origin=origin)
        return
    if itype in _NO_EVENT:
        state.skipped[str(itype)] = state.skipped.get(str(itype), 0) + 1
        return
    if itype in (None, "message") or (role is not None and itype not in RESPONSES_ITEM_TYPES):
        content = item.get("content")
        text = extract_text(content, TEXT_JOINER)
        if role == "user":
            builder.user(text, content, timestamp=timestamp, origin=origin)
        elif role in ("system", "developer"):
            builder.system(text, content, recorded_role=str(role), timestamp=timestamp,
                           origin=origin)
        else:
            key = role if isinstance(role, str) else "<missing>"
            if key not in state.unknown_roles:
                state.unknown_roles.add(key)
                ctx.problem("info", "unknown_role",
                            f'message role "{escape_for_display(key, 60)}" is not a Responses '
                            "role; it was kept as an 'other' event", line=origin.line,
                            pointer=origin.pointer, candidate=candidate)
            builder.other(role if isinstance(role, str) else None, text, content,
                          timestamp=timestamp, origin=origin)
        return
    name = itype if isinstance(itype, str) else "<no type>"
    state.skipped[name] = state.skipped.get(name, 0) + 1
    state.unknown[name] = state.unknown.get(name, 0) + 1


def _assistant_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    pieces: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("output_text", "text", "input_text") and isinstance(
                part.get("text"), str):
            pieces.append(part["text"])
        elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            pieces.append(part["refusal"])
    return "".join(pieces)


def session_from_items(items: Sequence[tuple[Any, Origin]], ctx: ImportContext, *,
                       id: str = "", candidate: int | None = None, instructions: Any = None,
                       model: str | None = None,
                       metadata: dict[str, Any] | None = None) -> Session:
    report = CandidateReporter(ctx, candidate)

    builder = SessionBuilder()
    if isinstance(instructions, str):
        builder.system(instructions, instructions, recorded_role="instructions",
                       origin=Origin(pointer="/instructions"))
    skipped = add_items(builder, items, ctx, candidate=candidate, model=model)
    meta = dict(metadata or {})
    if skipped:
        meta["skipped"] = skipped
    return builder.build(id=id, source=ctx.path, format=FORMAT_ID,
                         models=[model] if model else [], metadata=meta, report=report)


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    if isinstance(value, list):
        yield session_from_items([(v, Origin(pointer=f"/{i}")) for i, v in enumerate(value)],
                                 ctx)
        return
    if not isinstance(value, dict):
        ctx.problem("error", "session_failed", "expected Responses items")
        return
    items: list[tuple[Any, Origin]] = []
    source = value.get("input")
    if isinstance(source, str):
        items.append(({"type": "message", "role": "user", "content": source},
                      Origin(pointer="/input")))
    elif isinstance(source, list):
        items.extend((v, Origin(pointer=f"/input/{i}")) for i, v in enumerate(source))
    output = value.get("output")
    if isinstance(output, list):
        items.extend((v, Origin(pointer=f"/output/{i}")) for i, v in enumerate(output))
    sid = value.get("id")
    conversation = value.get("conversation")
    if not isinstance(sid, str):
        sid = conversation.get("id") if isinstance(conversation, dict) else conversation
    model = value.get("model")
    metadata: dict[str, Any] = {}
    tools = value.get("tools")
    if isinstance(tools, list):
        metadata["tools"] = [t["name"] for t in tools
                             if isinstance(t, dict) and isinstance(t.get("name"), str)]
    yield session_from_items(items, ctx, id=sid if isinstance(sid, str) else "",
                             instructions=value.get("instructions"),
                             model=model if isinstance(model, str) else None,
                             metadata=metadata)


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    items = [(r.value, Origin(line=r.line)) for r in records]
    yield session_from_items(items, ctx)
