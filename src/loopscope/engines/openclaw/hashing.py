"""argsHash, resultHash and unknown-tool names.

Ports of ``hashToolCall``, ``hashToolOutcome`` and ``extractUnknownToolName`` from
``openclaw@2026.6.11`` (``dist/tool-loop-detection-*.js``). Hashes depend only on the session,
never on the configuration, so the replay computes them once per session.
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


def _string_field(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _hash_exec_outcome(details: Mapping[str, Any], text: str) -> str | None:
    status = _string_field(details.get("status"))
    if not status:
        return None
    if status == "running":
        return digest({"status": status, "tail": _string_field(details.get("tail")) or ""})
    if status in ("completed", "failed"):
        exit_code = details.get("exitCode")
        aggregated = details.get("aggregated")
        trimmed = js_trim(aggregated) if isinstance(aggregated, str) else ""
        return digest({
            "status": status,
            "exitCode": exit_code if isinstance(exit_code, int | float)
            and not isinstance(exit_code, bool) else None,
            "timedOut": details.get("timedOut") is True,
            "output": trimmed or text,
        })
    if status in ("approval-pending", "approval-unavailable"):
        command = _string_field(details.get("command"))
        warning_text = _string_field(details.get("warningText"))
        return digest({
            "status": status,
            "reason": _string_field(details.get("reason")),
            "host": _string_field(details.get("host")),
            "command": "" if command is None else command,
            "warningText": "" if warning_text is None else warning_text,
        })
    return None


def _or_null(details: Mapping[str, Any], key: str) -> Any:
    value = details.get(key)
    return None if value is None or value is UNDEFINED else value


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


def hash_tool_outcome(
    tool_name: str, params: Any, result: Any = UNDEFINED, error: Any = UNDEFINED
) -> tuple[str | None, str | None]:
    """``(result_hash, unknown_tool_name)`` of one outcome (``hashToolOutcome``).

    Pass :data:`UNDEFINED` (the default) for an absent ``result`` or ``error``; ``None`` is JS
    ``null``. ``result_hash`` is ``None`` when nothing would be recorded: no result and no
    error, or a loop veto.
    """
    if error is not UNDEFINED:
        return "error:" + digest(format_error_for_hash(error)), extract_unknown_tool_name(error)
    if not is_mapping(result):
        return (None if result is UNDEFINED else digest(result)), None
    raw_details = result.get("details")
    details: Mapping[str, Any] = raw_details if is_mapping(raw_details) else {}
    text = result_text(result)
    if is_loop_veto(details):
        return None, None
    if tool_name == "exec":
        exec_hash = _hash_exec_outcome(details, text)
        if exec_hash is not None:
            return exec_hash, None
    if tool_name == "process" and is_mapping(params):
        action = params.get("action")
        if action == "poll":
            return digest({
                "action": action,
                "status": details.get("status", UNDEFINED),
                "exitCode": _or_null(details, "exitCode"),
                "exitSignal": _or_null(details, "exitSignal"),
                "aggregated": _or_null(details, "aggregated"),
                "text": text,
            }), None
        if action == "log":
            return digest({
                "action": action,
                "status": details.get("status", UNDEFINED),
                "totalLines": _or_null(details, "totalLines"),
                "totalChars": _or_null(details, "totalChars"),
                "truncated": _or_null(details, "truncated"),
                "exitCode": _or_null(details, "exitCode"),
                "exitSignal": _or_null(details, "exitSignal"),
                "text": text,
            }), None
    if is_volatile_send_result(tool_name, params):
        return digest(strip_volatile_send_ids(details)), None
    return digest({"details": details, "text": text}), None
