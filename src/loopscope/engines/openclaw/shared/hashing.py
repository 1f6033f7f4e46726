"""argsHash, error formatting, unknown-tool names and send ids: hashing every release shares.

Ports of ``hashToolCall``, ``isKnownPollToolCall``, ``formatErrorForHash``,
``extractUnknownToolName`` and the send-id stripping from ``dist/tool-loop-detection-*``,
which did not change between ``openclaw@2026.6.11`` and ``openclaw@2026.9.6``; each release's
``hashToolOutcome`` (:mod:`..v2026_6.hashing`, :mod:`..v2026_9.hashing`) builds on them. Hashes
depend only on the session, never on the configuration, so a replay computes them once per
session.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from loopscope.jsonrules.javascript import (
    JS_WHITESPACE_CLASS,
    UNDEFINED,
    digest,
    js_number,
    js_trim,
    stable_stringify,
)

KNOWN_POLL_ACTIONS: Final = frozenset({"poll", "log"})

SEND_LIKE_MESSAGE_ACTIONS: Final = frozenset({
    "send", "broadcast", "reply", "thread-reply", "sendWithEffect", "sendAttachment",
    "upload-file", "sticker", "poll",
})

VOLATILE_SEND_RESULT_KEYS: Final = frozenset({
    "messageId", "message_id", "messageIds", "platformMessageId", "platformMessageIds",
    "fileId", "file_id", "fileKey", "pollId", "poll_id", "receipt", "runId", "idempotencyKey",
    "ts", "timestamp", "sentAt", "deliveredAt", "createdAt",
})

_UNKNOWN_TOOL_PATTERNS: Final = (
    re.compile(f"unknown tool[:{JS_WHITESPACE_CLASS}]+[\"']?([a-z0-9_.-]+)[\"']?",
               re.IGNORECASE | re.ASCII),
    re.compile(f"tool[{JS_WHITESPACE_CLASS}]+[\"']?([a-z0-9_.-]+)[\"']?[{JS_WHITESPACE_CLASS}]+"
               "(?:not found|is not available)", re.IGNORECASE | re.ASCII),
)


def is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, answering plain dicts without the ABC machinery."""
    return type(value) is dict or isinstance(value, Mapping)


def hash_tool_call(tool_name: str, params: Any) -> str:
    """argsHash: ``"<tool>:<sha256 hex of stableStringify(params)>"``, params exactly as passed."""
    return f"{tool_name}:{digest(params)}"


def is_known_poll_call(tool_name: str, params: Any) -> bool:
    """``command_status`` with any params, or ``process`` with ``action`` ``poll``/``log``."""
    if tool_name == "command_status":
        return True
    if tool_name != "process" or not is_mapping(params):
        return False
    action = params.get("action", UNDEFINED)
    return isinstance(action, str) and action in KNOWN_POLL_ACTIONS


def format_error_for_hash(error: Any) -> str:
    """``formatErrorForHash``: a string as is, a primitive's string form, else stable JSON."""
    if isinstance(error, str):
        return error
    if isinstance(error, BaseException):
        message = str(error)
        return message or type(error).__name__
    if isinstance(error, bool):
        return "true" if error else "false"
    if isinstance(error, int):
        return str(error) if abs(error) < 2**53 else js_number(float(error))
    if isinstance(error, float):
        if error != error:
            return "NaN"
        if error in (float("inf"), float("-inf")):
            return "Infinity" if error > 0 else "-Infinity"
        return js_number(error)
    return stable_stringify(error)


def extract_unknown_tool_name(error: Any) -> str | None:
    """The lowercase unavailable-tool name an error names, if any (only the error path has one)."""
    raw = js_trim(format_error_for_hash(error))
    if not raw:
        return None
    for pattern in _UNKNOWN_TOOL_PATTERNS:
        match = pattern.search(raw)
        if match is not None:
            name = js_trim(match.group(1))
            return name.lower() if name else None
    return None


def result_text(result: Mapping[str, Any]) -> str:
    """``extractTextContent``: the string ``text`` of content entries that are objects with a
    string ``type``, joined with ``"\\n"`` and JS-trimmed."""
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    return js_trim("\n".join(
        entry["text"] for entry in content
        if is_mapping(entry) and isinstance(entry.get("type"), str)
        and isinstance(entry.get("text"), str)
    ))


def is_loop_veto(details: Mapping[str, Any]) -> bool:
    """OpenClaw's own block result: ``{status: "blocked", deniedReason: "tool-loop"}``."""
    return details.get("status") == "blocked" and details.get("deniedReason") == "tool-loop"


def _is_message_delivery_object(value: Mapping[str, Any]) -> bool:
    return (
        isinstance(value.get("id"), str) and isinstance(value.get("text"), str)
        and (isinstance(value.get("direction"), str) or isinstance(value.get("senderId"), str)
             or isinstance(value.get("accountId"), str)
             or isinstance(value.get("conversation"), Mapping))
    )


def strip_volatile_send_ids(value: Any) -> Any:
    """Drop message/file/poll ids, receipts and timestamps at any depth, so repeated identical
    sends hash alike; ``id`` only from a message delivery object, never a route or chat id."""
    if isinstance(value, list | tuple):
        return [strip_volatile_send_ids(v) for v in value]
    if not is_mapping(value):
        return value
    drop_id = _is_message_delivery_object(value)
    return {
        key: strip_volatile_send_ids(nested)
        for key, nested in value.items()
        if key not in VOLATILE_SEND_RESULT_KEYS and not (key == "id" and drop_id)
    }


def is_volatile_send_result(tool_name: str, params: Any) -> bool:
    """Message sends, whose results carry fresh ids every time. Channel tools (``telegram``…)
    would need their plugin loaded upstream, so they are never send-like here."""
    if tool_name == "sessions_send":
        return True
    if tool_name == "message":
        action = params.get("action") if is_mapping(params) else None
        return isinstance(action, str) and action in SEND_LIKE_MESSAGE_ACTIONS
    return False




def _or_null(details: Mapping[str, Any], key: str) -> Any:
    value = details.get(key)
    return None if value is None or value is UNDEFINED else value


_POLL_FIELDS: Final[tuple[str, ...]] = ("exitCode", "exitSignal", "aggregated")
_LOG_FIELDS: Final[tuple[str, ...]] = ("totalLines", "totalChars", "truncated", "exitCode", "exitSignal")


def process_progress(action: Any, details: Mapping[str, Any], text: str
                     ) -> dict[str, Any] | None:
    """What a ``process`` poll or log outcome is hashed as (its progress fields and text, so
    that a poll whose process moves on hashes differently), or None for another action. Every
    release hashes this object; only the digest around it changed."""
    if action == "poll":
        fields = _POLL_FIELDS
    elif action == "log":
        fields = _LOG_FIELDS
    else:
        return None
    progress: dict[str, Any] = {"action": action, "status": details.get("status", UNDEFINED)}
    for key in fields:
        progress[key] = _or_null(details, key)
    progress["text"] = text
    return progress
