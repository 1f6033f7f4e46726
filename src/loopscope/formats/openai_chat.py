"""OpenAI Chat Completions messages — ``openai_chat``.

Layouts: a request body ``{"messages": [...]}``; a litellm completion log (``messages`` plus
``response.choices[0].message``, appended as the last message); a bare list of messages; a list
of conversations (lists or ``{"messages": [...]}`` objects, one session each); JSONL with one
message per line (one session) or one conversation per line (one session per line).

Every recorded message and every ``tool_calls`` element is kept, whatever its shape or id
(providers reuse ids such as ``call_qwen_0``, and gglib counts even a junk element as a call):
``chat_messages`` is the recorded list, unchanged, and the events are built so that turns and
calls line up one-to-one with what the gglib engine reads.

:func:`session_from_messages` is public: ``tau_bench`` maps each ``traj`` with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from loopscope.formats._chat import chat_document, chat_records, conversation_lines
from loopscope.formats._ext_common import CandidateReporter
from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import (
    MAX_EVENTS,
    TRUNCATIONS,
    CallDraft,
    SessionBuilder,
    TurnDraft,
    call_origin,
    pointer_origin,
    pointer_origins,
)
from loopscope.formats.text import (
    TEXT_JOINER,
    extract_text,
    iso_timestamp,
    json_type,
    openai_assistant_text,
    openai_tool_result_text,
)
from loopscope.formats.text_actions import (
    RESPOND_ACTION,
    TextAction,
    observation_text,
    parse_text_action,
)
from loopscope.model import AgentInfo, Origin, Session, escape_for_display
from loopscope.words import plural

FORMAT_ID = "openai_chat"

__all__ = [
    "FORMAT_ID",
    "import_document",
    "import_records",
    "is_conversation",
    "session_from_messages",
    "tool_names",
]

_SYSTEM_ROLES = frozenset({"system", "developer"})


def tool_names(tools: Any) -> list[str]:
    """Function names of a ``tools`` catalogue (``{"type": "function", "function": {"name"}}``
    or ``{"name"}`` elements); anything else is ignored."""
    names: list[str] = []
    if not isinstance(tools, list):
        return names
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            names.append(name)
    return names


def session_from_messages(
    messages: Sequence[Any],
    ctx: ImportContext,
    *,
    id: str = "",
    candidate: int | None = None,
    pointer_prefix: str | None = "/messages",
    origins: Sequence[Origin] | None = None,
    timestamps: Sequence[str | None] | None = None,
    format: str = FORMAT_ID,
    title: str | None = None,
    agent: AgentInfo | None = None,
    models: Sequence[str] = (),
    metadata: dict[str, Any] | None = None,
) -> Session:
    """Build one session from a list of recorded OpenAI-chat messages.

    ``origins`` gives each message's :class:`Origin` (JSONL lines); otherwise each message's
    origin is the pointer ``f"{pointer_prefix}/{i}"`` (no origin when ``pointer_prefix`` is
    ``None``). ``timestamps`` optionally gives each message's ISO time. Problems go to ``ctx``
    with ``candidate``. ``chat_messages`` is ``messages`` itself (as a tuple), unchanged.
    """

    def origin_of(i: int) -> Origin:
        if origins is not None and i < len(origins):
            return origins[i]
        if pointer_prefix is None:
            return Origin()
        return pointer_origin(pointer_prefix, None, i)

    report = CandidateReporter(ctx, candidate)

    cap = MAX_EVENTS.get()
    if cap is not None and len(messages) > cap:
        # One message is one event: cut the recorded list too, so that the engines' view
        # (chat_messages) and the events keep the same turns and calls.
        sink = TRUNCATIONS.get()
        if sink is not None:
            sink.append((cap, len(messages) - cap))
        messages = messages[:cap]
    builder = SessionBuilder()
    unknown_roles: set[str] = set()
    actions = _text_actions(messages)
    pending: tuple[CallDraft, str] | None = None  # a text action waiting for its answer
    n = len(messages)
    if origins is not None and len(origins) >= n:
        origin_at: Sequence[Origin] = origins
    elif origins is None and pointer_prefix is not None:
        origin_at = pointer_origins(pointer_prefix, None, n)
    else:
        origin_at = [origin_of(i) for i in range(n)]
    time_at = ([None] * n if timestamps is None
               else [timestamps[i] if i < len(timestamps) else None for i in range(n)])
    for i, message in enumerate(messages):
        origin = origin_at[i]
        timestamp = time_at[i]
        if not isinstance(message, dict):
            key = f"<{type(message).__name__}>"
            if key not in unknown_roles:
                unknown_roles.add(key)
                report("info", "unknown_role",
                       f"message is not an object (a JSON {json_type(message)}); "
                       "it was kept as an 'other' event",
                       line=origin.line, pointer=origin.pointer)
            builder.other(None, "", message, timestamp=timestamp, origin=origin)
            continue
        role = message.get("role")
        content = message.get("content")
        if actions is not None and role == "user" and pending is not None:
            draft, style = pending
            pending = None
            answer = observation_text(extract_text(content, TEXT_JOINER), style)
            if answer is not None:
                builder.result(draft.id, answer, answer, structure_call=draft,
                               timestamp=timestamp, origin=origin)
                continue
        if role == "assistant":
            turn = _assistant(builder, message, origin, timestamp, report)
            action = actions.get(i) if actions is not None else None
            if action is not None:
                draft = builder.call(turn, action.name, action.arguments,
                                     action.kind,  # type: ignore[arg-type]
                                     id=f"ls-{builder.call_count}", id_synthetic=True,
                                     origin=origin)
                pending = (draft, action.style)
            else:
                pending = None
        elif role == "tool":
            name = message.get("name")
            builder.result(
                message.get("tool_call_id"), content, openai_tool_result_text(content),
                is_error=(message.get("is_error") is True or message.get("isError") is True
                          or message.get("status") == "error"),
                name=name if isinstance(name, str) else None,
                timestamp=timestamp, origin=origin,
            )
        elif role == "user":
            builder.user(extract_text(content, TEXT_JOINER), content, recorded_role="user",
                         timestamp=timestamp, origin=origin)
        elif isinstance(role, str) and role in _SYSTEM_ROLES:
            builder.system(extract_text(content, TEXT_JOINER), content, recorded_role=role,
                           timestamp=timestamp, origin=origin)
        elif role == "function":
            builder.other("function", extract_text(content, TEXT_JOINER), content,
                          timestamp=timestamp, origin=origin)
        else:
            key = role if isinstance(role, str) else f"<{json_type(role)}>"
            if key not in unknown_roles:
                unknown_roles.add(key)
                shown = (f'"{escape_for_display(role, 60)}"' if isinstance(role, str)
                         else "missing" if "role" not in message
                         else f"a JSON {json_type(role)}")
                report("info", "unknown_role",
                       f"message role {shown} is not an OpenAI-chat role; "
                       "it was kept as an 'other' event",
                       line=origin.line, pointer=origin.pointer)
            builder.other(role if isinstance(role, str) else None,
                          extract_text(content, TEXT_JOINER), content,
                          timestamp=timestamp, origin=origin)

    chat_messages: Sequence[Any] | None = messages
    if actions is not None:
        # The recorded messages carry no tool_calls, so the engines read the calls from the
        # events (the derived OpenAI-chat view), where the text actions are calls.
        chat_messages = None
        for i, action in actions.items():  # calls no structural counter can see
            where = origin_at[i]
            ctx.tally.saw(where.line if where.line is not None else where.pointer, action.name)
        styles = sorted({a.style for a in actions.values()})
        metadata = {**(metadata or {}), "text_actions": ", ".join(styles)}
        report("info", "text_actions",
               plural(len(actions), "tool call was", "tool calls were")
               + f" read from the assistant text ({' and '.join(styles)} "
               "text actions: the session records no structured tool call)", count=len(actions))
    return builder.build(
        id=id, source=ctx.path, format=format, title=title, agent=agent, models=list(models),
        metadata=metadata, chat_messages=chat_messages, report=report,
    )


def _text_actions(messages: Sequence[Any]) -> dict[int, TextAction] | None:
    """Message index → the tool call its assistant text writes, for a session that records no
    structured tool call and writes at least one in text (ReAct / act agents); else ``None``.
    A tau-bench ``respond`` action is a reply to the user, not a call."""
    found: dict[int, TextAction] = {}
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            return None
        text = openai_assistant_text(message.get("content"))
        if "Action" not in text:
            continue
        action = parse_text_action(text)
        if action is not None and action.name != RESPOND_ACTION:
            found[i] = action
    return found or None


def _assistant(builder: SessionBuilder, message: dict[str, Any], origin: Origin,
               timestamp: str | None, report: Any) -> TurnDraft:
    thinking = message.get("reasoning_content")
    if not isinstance(thinking, str):
        thinking = message.get("reasoning")
    model = message.get("model")
    stop = message.get("finish_reason")
    content = message.get("content")
    turn = builder.assistant(
        openai_assistant_text(content), content,
        thinking=thinking if isinstance(thinking, str) else "",
        model=model if isinstance(model, str) else None,
        stop_reason=stop if isinstance(stop, str) else None,
        timestamp=timestamp, origin=origin,
    )
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for position, element in enumerate(tool_calls):
            if isinstance(element, dict):
                function = element.get("function")
                call_id = element.get("id")
            else:
                function = call_id = None
            if not isinstance(function, dict):
                what = ("not an object" if not isinstance(element, dict)
                        else "has no 'function' object")
                draft = builder.call(turn, "", None, "value", id=call_id, origin=origin,
                                     element=("tool_calls", position))
                where = call_origin(draft)
                report("warning", "malformed_tool_call",
                       f"tool_calls element {position} {what}; it was kept as a call with "
                       "no name and no arguments", line=where.line, pointer=where.pointer)
                continue
            if "arguments" in function:
                raw = function["arguments"]
                kind = "json_text" if isinstance(raw, str) else "value"
            else:
                raw, kind = None, "value"
            builder.call(turn, function.get("name"), raw, kind, id=call_id,  # type: ignore[arg-type]
                         origin=origin, element=("tool_calls", position))
    elif tool_calls is not None:
        report("info", "malformed_tool_calls",
               f"'tool_calls' is a JSON {json_type(tool_calls)}, not a list; the turn has "
               "no tool calls", line=origin.line, pointer=origin.pointer)
    if message.get("function_call") is not None:
        report("info", "legacy_function_call",
               "assistant message uses the legacy 'function_call'; it is not read as a tool "
               "call (the turn is prose)", line=origin.line, pointer=origin.pointer)
    return turn


def is_conversation(value: Any) -> bool:
    """A list of messages, or an object with a ``messages`` list."""
    return isinstance(value, list) or (
        isinstance(value, dict) and isinstance(value.get("messages"), list)
    )


def _body_session(body: dict[str, Any], ctx: ImportContext, *, candidate: int | None,
                  prefix: str, line: int | None = None) -> Session:
    """One request body / litellm log / conversation object."""
    messages: list[Any] = list(body["messages"])
    origins: list[Origin]
    if line is not None:
        origins = [Origin(line=line)] * len(messages)
    else:
        origins = pointer_origins(prefix, "messages", len(messages))
    timestamps: list[str | None] | None = None
    metadata: dict[str, Any] = {}
    models: list[str] = []
    agent = AgentInfo()
    if isinstance(body.get("model"), str):
        models.append(body["model"])
    response = body.get("response")
    kwargs = body.get("kwargs")
    tools = body.get("tools")
    if tools is None and isinstance(kwargs, dict):
        tools = kwargs.get("tools")
    if isinstance(tools, list):
        metadata["tools"] = tool_names(tools)
    if isinstance(response, dict) and isinstance(response.get("choices"), list):
        agent = AgentInfo("litellm log", None)
        if isinstance(response.get("model"), str) and response["model"] not in models:
            models.append(response["model"])
        choices = response["choices"]
        reply = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        if isinstance(reply, dict):
            messages.append(reply)
            origins.append(Origin(line=line) if line is not None
                           else Origin(pointer=f"{prefix}/response/choices/0/message"))
            timestamps = [None] * (len(messages) - 1)
            timestamps.append(iso_timestamp(body.get("timestamp")))
        else:
            ctx.problem("warning", "invalid_record",
                        "litellm log has no response.choices[0].message; only the request "
                        "messages were imported", line=line,
                        pointer=None if line is not None else f"{prefix}/response",
                        candidate=candidate)
        for key in ("cost", "timestamp"):
            value = body.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                metadata[key] = value
        if isinstance(response.get("id"), str):
            metadata["response_id"] = response["id"]
    body_id = body.get("id")
    return session_from_messages(
        messages, ctx, id=body_id if isinstance(body_id, str) else "", candidate=candidate,
        origins=origins, timestamps=timestamps, agent=agent, models=models, metadata=metadata,
    )


def import_document(value: Any, ctx: ImportContext) -> Iterator[Session | None]:
    """A request body, a litellm log, a bare list of messages, or a list of conversations."""
    yield from chat_document(
        value, ctx,
        body=lambda body, n, prefix: _body_session(body, ctx, candidate=n, prefix=prefix),
        messages=lambda messages, n, prefix: session_from_messages(
            messages, ctx, candidate=n, pointer_prefix=prefix),
        no_messages="JSON object has no 'messages' list; nothing was imported",
        not_a_list=lambda value: f"expected a list of messages, found a JSON {json_type(value)}")


def import_records(records: Iterable[Record], ctx: ImportContext) -> Iterator[Session | None]:
    """Messages JSONL (one session) or conversation-per-line JSONL (one session per line)."""
    yield from chat_records(
        records,
        conversations=lambda lines: conversation_lines(
            lines, ctx,
            body=lambda body, n, line: _body_session(body, ctx, candidate=n, prefix="", line=line),
            messages=lambda messages, n, line: session_from_messages(
                messages, ctx, candidate=n, origins=[Origin(line=line)] * len(messages))),
        messages=lambda messages, origins: session_from_messages(messages, ctx, origins=origins))

