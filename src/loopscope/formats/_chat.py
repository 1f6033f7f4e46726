"""The file layouts the chat-API importers (OpenAI chat, Anthropic messages) share.

Both APIs are recorded the same ways: a request body (an object with a ``messages`` list), a
bare list of messages, a list of bodies or of message lists, or JSON Lines holding either one
message or one body per line. Which layout a file has is decided here, once, so the two
importers cannot drift apart; reading a body or a message list stays with each importer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from loopscope.formats.base import ImportContext, Record
from loopscope.formats.builder import line_origin
from loopscope.model import Origin, Session

__all__ = ["chat_document", "chat_records", "conversation_lines"]

Body = Callable[[dict[str, Any], int | None, str], Session]
"""Reads a request body: ``(body, candidate, pointer prefix)``."""
Messages = Callable[[list[Any], int | None, str], Session]
"""Reads a bare list of messages: ``(messages, candidate, pointer prefix)``."""
LineReader = Callable[[Any, int, int], Session | None]
"""Reads the value of a line that is a conversation of its own: ``(value, candidate, line)``."""


def _is_body(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("messages"), list)


def chat_document(value: Any, ctx: ImportContext, *, body: Body, messages: Messages,
                  no_messages: str, not_a_list: Callable[[Any], str]) -> Iterator[Session | None]:
    """A JSON document: one body, a list of bodies or message lists (one session each), or one
    list of messages.

    A list counts as a list of conversations only when every element is one; a single message
    among them makes the whole list one conversation, as the API would read it. An object
    without ``messages`` (``no_messages``) or a value that is no list (``not_a_list(value)``)
    is an error and imports nothing.
    """
    if isinstance(value, dict):
        if _is_body(value):
            yield body(value, None, "")
        else:
            ctx.problem("error", "session_failed", no_messages)
        return
    if not isinstance(value, list):
        ctx.problem("error", "session_failed", not_a_list(value))
        return
    if value and all(isinstance(e, list) or _is_body(e) for e in value):
        for n, element in enumerate(value):
            if isinstance(element, list):
                yield messages(element, n, f"/{n}")
            else:
                yield body(element, n, f"/{n}")
        return
    yield messages(value, None, "")


def chat_records(records: Iterable[Record], *,
                 conversations: Callable[[Iterator[Record]], Iterator[Session | None]],
                 messages: Callable[[list[Any], list[Origin]], Session]
                 ) -> Iterator[Session | None]:
    """JSON Lines: one conversation per line, or one conversation whose messages are the lines.

    The first line decides: an object with a ``messages`` list and no ``role`` is a request
    body, so every line is a conversation of its own (``conversations`` reads them all, the
    first included); anything else is a message, since every message has a ``role``, and the
    lines are one conversation (``messages`` gets the values and their line origins).
    """
    iterator = iter(records)
    first = next(iterator, None)
    if first is None:
        return
    if _is_body(first.value) and "role" not in first.value:
        yield from conversations(itertools.chain([first], iterator))
        return
    values: list[Any] = [first.value]
    origins: list[Origin] = [line_origin(first.line)]
    for record in iterator:
        values.append(record.value)
        origins.append(line_origin(record.line))
    yield messages(values, origins)


def conversation_lines(lines: Iterator[Record], ctx: ImportContext, *, body: LineReader,
                       messages: LineReader | None = None) -> Iterator[Session | None]:
    """JSON Lines with one conversation per line (:func:`chat_records`'s ``conversations``):
    ``body`` reads a line holding a request body, ``messages`` one holding a bare list of
    messages (``None``: the importer takes no such line).

    Any other line, and a line the loader could not read, is an error that skips that one
    conversation: it keeps its candidate number, and the other lines are still read. An
    importer bug in one line's conversation loses that conversation alone (reported as such)."""
    for n, record in ctx.one_candidate_per_line(lines):
        if record is None:
            yield None
        elif _is_body(record.value) or (messages is not None and isinstance(record.value, list)):
            read = body if _is_body(record.value) else messages
            assert read is not None
            try:
                session = read(record.value, n, record.line)
            except Exception as exc:  # one bad conversation never loses the others
                ctx.internal_error(exc, candidate=n, line=record.line)
                session = None
            yield session
        else:
            ctx.problem("error", "session_failed",
                        "line is not a conversation (no 'messages' list); it was skipped",
                        line=record.line, candidate=n)
            yield None
