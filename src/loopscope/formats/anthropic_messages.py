"""Anthropic Messages — ``anthropic_messages``.

Layouts: a request body ``{"model", "system"?, "messages": [...]}``; a bare list of messages;
JSONL with one message per line; a list or JSONL of ``{"messages": [...]}`` conversations (one
session each, ``path#n``).

The block rules (:func:`assistant_blocks`, :func:`user_blocks`) are shared with Claude Code
and its markdown export.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from loopscope.formats._chat import chat_document, chat_records, conversation_lines
from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import (
    SessionBuilder,
    TurnDraft,
    new_origin,
    pointer_origin,
    pointer_origins,
)
from loopscope.formats.text import TEXT_JOINER, extract_text, type_of
from loopscope.model import Origin, Session, escape_for_display

FORMAT_ID = "anthropic_messages"

__all__ = [
    "CALL_BLOCKS",
    "FORMAT_ID",
    "SERVER_RESULT_BLOCKS",
    "assistant_blocks",
    "import_document",
    "import_records",
    "session_from_messages",
    "user_blocks",
]

CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
SERVER_RESULT_BLOCKS = frozenset({"web_search_tool_result", "web_fetch_tool_result",
                                  "code_execution_tool_result", "mcp_tool_result",
                                  "bash_code_execution_tool_result",
                                  "text_editor_code_execution_tool_result",
                                  "tool_search_tool_result"})
_USER_KEEP = frozenset({"text", "image", "document"})


def _server_result_is_error(block: dict[str, Any]) -> bool:
    if block.get("is_error") is True:
        return True
    content = block.get("content")
    if isinstance(content, dict):
        ctype = content.get("type")
        return isinstance(ctype, str) and ctype.endswith("_error")
    return False


def assistant_blocks(builder: SessionBuilder, turn: TurnDraft, blocks: Any, origin: Origin, *,
                     seen_call_ids: set[str] | None = None,
                     on_duplicate: Callable[[], None] | None = None,
                     pending_results: list[tuple[dict[str, Any], Origin]] | None = None,
                     ) -> list[tuple[dict[str, Any], Origin]]:
    """Add an assistant message's content to ``turn``: text (no separator), thinking
    (``"\\n"``), calls (kind ``value``). Returns the server tool result blocks to emit after the
    turn (appended to ``pending_results`` when given). With ``seen_call_ids``, a ``tool_use``
    id already seen is dropped (``on_duplicate`` is called)."""
    results = pending_results if pending_results is not None else []
    if isinstance(blocks, str):
        turn.text += blocks
        return results
    if not isinstance(blocks, list):
        return results
    thinking: list[str] = [turn.thinking] if turn.thinking else []
    for position, block in enumerate(blocks):
        if not isinstance(block, dict):
            if isinstance(block, str):
                turn.text += block
            continue
        btype = type_of(block)
        if btype == "text":
            if isinstance(block.get("text"), str):
                turn.text += block["text"]
        elif btype == "thinking":
            if isinstance(block.get("thinking"), str) and block["thinking"]:
                thinking.append(block["thinking"])
        elif btype in CALL_BLOCKS:
            call_id = block.get("id")
            if _repeated(call_id, seen_call_ids, on_duplicate):
                continue
            builder.call(turn, block.get("name"), block.get("input"), "value", id=call_id,
                         origin=origin, element=("content", position))
        elif btype in SERVER_RESULT_BLOCKS:
            results.append((block, _block_origin(origin, position)))
    turn.thinking = "\n".join(thinking)
    return results


def _repeated(block_id: Any, seen: set[str] | None,
              on_duplicate: Callable[[], None] | None) -> bool:
    """Whether a block repeats one already read: its id is in ``seen`` (``on_duplicate`` is
    told, and the block is dropped, so a message written again does not count its calls or
    results twice); a new id is remembered. Never without ``seen`` or a string id."""
    if seen is None or not isinstance(block_id, str):
        return False
    if block_id in seen:
        if on_duplicate:
            on_duplicate()
        return True
    seen.add(block_id)
    return False


def _block_origin(origin: Origin, position: int) -> Origin:
    """The origin of block ``position`` of the content of the message at ``origin``."""
    if origin.pointer is None:
        return origin  # (a JSON Lines message: the line is the block's origin too)
    if origin.line is None:
        return pointer_origin(origin.pointer, "content", position)
    return new_origin(origin.line, f"{origin.pointer}/content/{position}")


def emit_server_results(builder: SessionBuilder,
                        results: list[tuple[dict[str, Any], Origin]],
                        timestamp: str | None = None) -> None:
    for block, origin in results:
        content = block.get("content")
        builder.result(block.get("tool_use_id"), content, extract_text(content, TEXT_JOINER),
                       is_error=_server_result_is_error(block), timestamp=timestamp,
                       origin=origin)


def user_blocks(builder: SessionBuilder, content: Any, origin: Origin, *,
                timestamp: str | None = None, as_system: bool = False,
                recorded_role: str = "user",
                answered: set[str] | None = None,
                on_duplicate: Callable[[], None] | None = None,
                meta: dict[str, Any] | None = None) -> None:
    """The Anthropic user-message rule: ``tool_result`` blocks become results first, in block
    order; then one ``user`` (or ``system``) event with the remaining text (non-blank), image and
    document blocks. A string content is one event. With ``answered``, a result whose
    ``tool_use_id`` was already answered is dropped."""
    add = builder.system if as_system else builder.user
    if not isinstance(content, list):
        add(extract_text(content, TEXT_JOINER), content, recorded_role=recorded_role,
            timestamp=timestamp, origin=origin)
        return
    remaining: list[Any] = []
    for position, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            if _repeated(call_id, answered, on_duplicate):
                continue
            value = block.get("content")
            builder.result(call_id, value, extract_text(value, TEXT_JOINER),
                           is_error=block.get("is_error") is True, meta=meta,
                           timestamp=timestamp,
                           origin=_block_origin(origin, position))
        elif isinstance(block, dict) and type_of(block) in _USER_KEEP:
            if block.get("type") == "text" and not (
                    isinstance(block.get("text"), str) and block["text"].strip()):
                continue
            remaining.append(block)
        elif isinstance(block, str) and block.strip():
            remaining.append(block)
    if remaining:
        add(extract_text(remaining, TEXT_JOINER), remaining, recorded_role=recorded_role,
            timestamp=timestamp, origin=origin)


def session_from_messages(messages: Sequence[Any], ctx: ImportContext, *, id: str = "",
                          candidate: int | None = None, system: Any = None,
                          model: Any = None, origins: Sequence[Origin] | None = None,
                          pointer_prefix: str = "/messages",
                          metadata: dict[str, Any] | None = None) -> Session:
    """One Anthropic conversation."""
    report = CandidateReporter(ctx, candidate)

    builder = SessionBuilder()
    if system is not None:
        builder.system(extract_text(system, TEXT_JOINER), system, recorded_role="system",
                       origin=Origin(pointer=pointer_prefix.rsplit("/", 1)[0] + "/system")
                       if origins is None else Origin(origins[0].line if origins else None))
    unknown: set[str] = set()
    # Each message's origin: as given (JSON Lines), else its pointer.
    origin_at = list(origins or ())
    if len(origin_at) < len(messages):
        origin_at += pointer_origins(pointer_prefix, None, len(messages))[len(origin_at):]
    for i, message in enumerate(messages):
        origin = origin_at[i]
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else message
        if role == "assistant":
            msg_model = message.get("model")
            stop = message.get("stop_reason")
            turn = builder.assistant("", content, model=msg_model if isinstance(
                msg_model, str) else None, stop_reason=stop if isinstance(stop, str) else None,
                origin=origin)
            pending = assistant_blocks(builder, turn, content, origin)
            if pending:
                emit_server_results(builder, pending)
        elif role == "user":
            user_blocks(builder, content, origin)
        elif role == "system":
            builder.system(extract_text(content, TEXT_JOINER), content, origin=origin)
        else:
            key = role if isinstance(role, str) else f"<{type(role).__name__}>"
            if key not in unknown:
                unknown.add(key)
                shown = (f'"{escape_for_display(role, 60)}"' if isinstance(role, str)
                         else "missing or not a string")
                report("info", "unknown_role",
                       f"message role {shown} is not an Anthropic role; it was kept as an "
                       "'other' event", line=origin.line, pointer=origin.pointer)
            builder.other(role if isinstance(role, str) else None,
                          extract_text(content, TEXT_JOINER), content, origin=origin)
    models = [model] if isinstance(model, str) else []
    return builder.build(id=id, source=ctx.path, format=FORMAT_ID, models=models,
                         metadata=metadata, report=report)


def _tool_names(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return []
    return [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]


def _body(body: dict[str, Any], ctx: ImportContext, candidate: int | None, prefix: str,
          line: int | None = None) -> Session:
    messages = body["messages"]
    origins = [Origin(line=line)] * len(messages) if line is not None else None
    metadata: dict[str, Any] = {}
    if isinstance(body.get("tools"), list):
        metadata["tools"] = _tool_names(body["tools"])
    return session_from_messages(messages, ctx, candidate=candidate, system=body.get("system"),
                                 model=body.get("model"), origins=origins,
                                 pointer_prefix=f"{prefix}/messages", metadata=metadata)


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    yield from chat_document(
        value, ctx,
        body=lambda body, n, prefix: _body(body, ctx, n, prefix),
        messages=lambda messages, n, prefix: session_from_messages(
            messages, ctx, candidate=n, pointer_prefix=prefix),
        no_messages="JSON object has no 'messages' list",
        not_a_list=lambda value: "expected a list of messages")


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    yield from chat_records(
        records,
        conversations=lambda lines: conversation_lines(
            lines, ctx, body=lambda body, n, line: _body(body, ctx, n, "", line=line)),
        messages=lambda values, origins: session_from_messages(values, ctx, origins=origins))
