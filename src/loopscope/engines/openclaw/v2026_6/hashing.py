"""resultHash of ``openclaw@2026.6.11``.

A port of ``hashToolOutcome`` from ``dist/tool-loop-detection-*.js``: exec results hash their
status and output, process polls and logs their progress fields, message sends drop their
volatile ids, and every other result hashes its details and text. Hashes depend only on the
session, never on the configuration, so the replay computes them once per session. The helpers
2026.9.6 kept (argsHash, error formatting, unknown-tool names, send ids) are in
:mod:`..shared.hashing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopscope.engines.openclaw.shared.hashing import (
    extract_unknown_tool_name,
    format_error_for_hash,
    is_loop_veto,
    is_mapping,
    is_volatile_send_result,
    process_progress,
    result_text,
    strip_volatile_send_ids,
)
from loopscope.jsonrules.javascript import UNDEFINED, digest, js_trim


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
        progress = process_progress(params.get("action"), details, text)
        if progress is not None:
            return digest(progress), None
    if is_volatile_send_result(tool_name, params):
        return digest(strip_volatile_send_ids(details)), None
    return digest({"details": details, "text": text}), None
