"""Tool names, argsHash and outcome hashing of ``openclaw@2026.9.6``.

Ports of ``normalizeToolPolicyName`` (``dist/tool-policy-shared-*.mjs``),
``digestToolOutcome``, ``hashExecFailureIdentity`` and ``hashToolOutcome``
(``dist/tool-loop-detection-*.mjs``, regions ``src/agents/tool-loop-detection.ts`` and
``src/agents/tool-loop-write-outcome.ts``). The JS value semantics (``stableStringify``, trim,
number formatting) and the parts that did not change since 2026.6.11 (``hashToolCall``,
``isKnownPollToolCall``, error formatting, unknown-tool names, send hashing helpers) come from
:mod:`..shared.hashing`.

What is new against 2026.6.11:

* tool names are normalised (trimmed, lowercased, ``bash``/``apply-patch``/``cron`` aliased);
* every outcome digest first replaces the 16-hex ids of ``<<<EXTERNAL_UNTRUSTED_CONTENT id="…">>>``
  markers by ``0000000000000000`` (in strings and object keys);
* an outcome carries more than a hash: whether it is a loop veto (counted, but hash-less), a
  terminal ``exec`` failure (with a failure identity that ignores timestamps, retries,
  durations and pids), and whether it is "no progress" (errors, unchanged writes).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.openclaw.shared.hashing import (
    extract_unknown_tool_name,
    format_error_for_hash,
    is_loop_veto,
    is_mapping,
    process_progress,
    result_text,
    strip_volatile_send_ids,
)
from loopscope.engines.openclaw.shared.hashing import is_volatile_send_result as _is_send_2026_6
from loopscope.jsonrules.javascript import (
    JS_WHITESPACE_CLASS,
    UNDEFINED,
    _stringify_float,
    _stringify_int,
    digest,
    js_number,
    js_string,
    js_trim,
    utf16_sort_key,
)

TOOL_NAME_ALIASES: Final = {"bash": "exec", "apply-patch": "apply_patch", "cron": "automations"}
"""``TOOL_NAME_ALIASES`` of ``dist/tool-policy-shared-*.mjs``."""

TOOL_LOOP_VETO: Final = "tool-loop-veto"
TERMINAL_EXEC_FAILURE: Final = "terminal-exec-failure"
OUTCOME_KINDS: Final = (TOOL_LOOP_VETO, TERMINAL_EXEC_FAILURE)

CANONICAL_MARKER_ID: Final = "0000000000000000"
_MARKER_HINT: Final = "<<<EXTERNAL_UNTRUSTED_CONTENT id="
# The marker pair around external content, as ``digestToolOutcome`` matches it: the opening
# and closing marker with the same 16-hex id, possibly inside JSON text that was escaped
# again (``escapes`` backslashes before each quote), with no other marker in between.
_MARKER_PAIR: Final = re.compile(
    r'(<<<EXTERNAL_UNTRUSTED_CONTENT id=(\\*)")([a-f0-9]{16})(\2">>>'
    r'(?:(?!<<<(?:END_)?EXTERNAL_UNTRUSTED_CONTENT)[\s\S])*'
    r'<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\2")\3(\2">>>)')
_QUOTE_RUN: Final = re.compile(r'(?<!\\)\\*"')

# ``hashExecFailureIdentity``'s volatile patterns. JS ``\d`` is ASCII; its ``\s`` is the JS
# whitespace set; under the ``iu`` flags ``s`` also matches U+017F (long s) and the word
# characters of ``\b`` include U+017F and U+212A (Kelvin sign), which fold to ASCII letters.
_S: Final = "[sS\u017f]"
_WORD: Final = "[A-Za-z0-9_\u017f\u212a]"
_B: Final = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_WS: Final = f"[{JS_WHITESPACE_CLASS}]"


def _ci(word: str) -> str:
    """``word`` matched case-insensitively as JS ``/iu`` does (ASCII letters, plus long s)."""
    return "".join(_S if ch == "s" else f"[{ch}{ch.upper()}]" if ch.isalpha() else ch
                   for ch in word)


VOLATILE_EXEC_FAILURE_PATTERNS: Final = (
    re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[tT ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?"
               r"(?:[zZ]|[+-][0-9]{2}:[0-9]{2})?"),
    re.compile(r"[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?"),
    re.compile(f"{_B}(?:{_ci('attempt')}|{_ci('retry')}){_B}[{JS_WHITESPACE_CLASS}#:=]*[0-9]+"),
    re.compile(f"{_B}[0-9]+(?:\\.[0-9]+)?{_WS}?(?:{_ci('ns')}|{_ci('us')}|{_ci('ms')}|"
               f"{_ci('second')}{_S}?|{_ci('minute')}{_S}?|{_ci('hour')}{_S}?|{_S}){_B}"),
    re.compile(f"{_B}(?:{_ci('pid')}|{_ci('ppid')}){_B}[{JS_WHITESPACE_CLASS}#:=]*[0-9]+"),
)
"""``VOLATILE_EXEC_FAILURE_PATTERNS``: ISO timestamps, clock times, ``attempt N``/``retry N``,
durations and ``pid N``/``ppid N``, each replaced by ``#``."""

_CONVERSATION_SENDS: Final = frozenset({"conversations_send", "conversations_turn"})
"""Sends by name in ``isMessagingToolSendAction`` besides ``sessions_send`` and ``message``."""


# --------------------------------------------------------------------------- names and args


def normalize_tool_name(name: Any) -> str:
    """``normalizeToolPolicyName(name || "tool")``: JS-trimmed, lowercased, aliased. An empty
    name is ``tool``; a name of only whitespace becomes ``""``."""
    if not isinstance(name, str):
        name = "" if name is None else str(name)
    if name == "":
        name = "tool"
    folded = js_trim(name).lower()
    return TOOL_NAME_ALIASES.get(folded, folded)


def detection_name(tool_name: str) -> str:
    """The name the detector sees for a call recorded under ``tool_name`` (already
    normalised). The admission step normalises the name it was given once more, as
    ``normalizeToolPolicyName(name || "tool")``: a name of only whitespace, recorded as ``""``,
    is detected as ``tool`` (and so never sees its own records)."""
    return tool_name or "tool"


# --------------------------------------------------------------------------- outcome digests


def canonicalize_markers(text: str) -> str:
    """``digestToolOutcome``'s string normaliser: marker ids set to zeros, unless the escaping
    around the marker is inconsistent (then the text is kept as it is)."""
    if _MARKER_HINT not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        start, escapes, _id, middle, end = match.groups()
        n = len(escapes)
        if n & (n + 1):
            return match.group(0)
        if any(len(q.group(0)) % (n + 1) for q in _QUOTE_RUN.finditer(middle)):
            return match.group(0)
        return start + CANONICAL_MARKER_ID + middle + CANONICAL_MARKER_ID + end

    return _MARKER_PAIR.sub(replace, text)


def _has_marker(value: Any) -> bool:
    """Whether any string or key inside ``value`` holds the opening marker (without one,
    canonicalising changes nothing)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _MARKER_HINT in item:
                return True
        elif is_mapping(item):
            for key, nested in item.items():
                if isinstance(key, str) and _MARKER_HINT in key:
                    return True
                stack.append(nested)
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _stringify_canonical(value: Any, out: list[str]) -> None:
    """``stableStringify(value, canonicalize_markers)``: strings and keys normalised, keys
    ordered by their normalised form, then by the original (UTF-16 code units)."""
    stack: list[Any] = [value]
    text_marker = object()
    while stack:
        item = stack.pop()
        if type(item) is tuple and len(item) == 2 and item[0] is text_marker:
            out.append(item[1])
            continue
        if isinstance(item, str):
            out.append(js_string(canonicalize_markers(item)))
        elif item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif isinstance(item, int):
            out.append(_stringify_int(item))
        elif isinstance(item, float):
            out.append(_stringify_float(item))
        elif item is UNDEFINED:
            out.append("undefined")
        elif is_mapping(item):
            keys = [(k if isinstance(k, str) else str(k)) for k in item]
            values = dict(zip(keys, item.values(), strict=True))
            entries = sorted(((canonicalize_markers(k), k) for k in keys),
                             key=lambda e: (utf16_sort_key(e[0]), utf16_sort_key(e[1])))
            work: list[Any] = [(text_marker, "{")]
            for n, (normalized, original) in enumerate(entries):
                work.append((text_marker, ("," if n else "") + js_string(normalized) + ":"))
                work.append(values[original])
            work.append((text_marker, "}"))
            stack.extend(reversed(work))
        elif isinstance(item, list | tuple):
            work = [(text_marker, "[")]
            for n, element in enumerate(item):
                if n:
                    work.append((text_marker, ","))
                work.append(element)
            work.append((text_marker, "]"))
            stack.extend(reversed(work))
        else:
            raise TypeError(f"stable_stringify: unsupported value of type {type(item).__name__}")


def digest_outcome(value: Any) -> str:
    """``digestToolOutcome``: sha256 of ``stableStringify`` with external-content marker ids
    canonicalised. Without any marker it is exactly ``digest(value)``."""
    if not _has_marker(value):
        return digest(value)
    out: list[str] = []
    _stringify_canonical(value, out)
    return hashlib.sha256("".join(out).encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- outcomes


@dataclass(frozen=True, slots=True)
class Outcome:
    """What ``hashToolOutcome`` returns for one outcome."""

    result_hash: str | None = None
    outcome_kind: str | None = None
    """``tool-loop-veto``, ``terminal-exec-failure`` or ``None``."""
    failure_identity_hash: str | None = None
    no_progress: bool = False
    unknown_tool_name: str | None = None

    @property
    def recorded(self) -> bool:
        """Whether ``recordToolCallOutcome`` records it (a hash, or a veto)."""
        return bool(self.result_hash) or bool(self.outcome_kind)


NOTHING: Final = Outcome()
LOOP_VETO: Final = Outcome(outcome_kind=TOOL_LOOP_VETO)


def _finite_number(value: Any) -> bool:
    """``typeof value === "number" && Number.isFinite(value)`` for a JSON value."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    return abs(value) < 2**1024  # a larger integer literal is Infinity in JS


def _js_number_text(value: int | float) -> str:
    """``${value}`` of a finite JS number."""
    return js_number(float(value))


def exec_failure_identity(details: Mapping[str, Any], exit_code: Any, output: str) -> str:
    """``hashExecFailureIdentity``: the failure with its volatile parts replaced by ``#``."""
    shape = output
    for pattern in VOLATILE_EXEC_FAILURE_PATTERNS:
        shape = pattern.sub("#", shape)
    return digest_outcome({"status": details.get("status", UNDEFINED), "exitCode": exit_code,
                           "timedOut": details.get("timedOut") is True, "output": shape})


def _normalize_nullable(value: Any) -> str | None:
    """``normalizeNullableString``: a trimmed non-empty string, else ``None``."""
    if not isinstance(value, str):
        return None
    return js_trim(value) or None


_EXEC_STATUSES: Final = frozenset({"running", "completed", "failed", "approval-pending",
                                   "approval-unavailable"})


def _exec_outcome(details: Mapping[str, Any], text: str) -> Outcome | None:
    """``hashExecToolOutcome`` (the objects 2026.6.11 hashed, digested with markers
    canonicalised), and whether the outcome is a terminal failure."""
    status = details.get("status")
    if not isinstance(status, str) or status not in _EXEC_STATUSES:
        return None
    if status in ("completed", "failed"):
        exit_code = details.get("exitCode")
        output = _normalize_nullable(details.get("aggregated")) or text
        result_hash = digest_outcome({
            "status": status,
            "exitCode": exit_code if isinstance(exit_code, int | float)
            and not isinstance(exit_code, bool) else None,
            "timedOut": details.get("timedOut") is True,
            "output": output,
        })
        if (_finite_number(exit_code) and exit_code != 0 and details.get("timedOut") is not True
                and output != ""
                and output != f"(Command exited with code {_js_number_text(exit_code)})"):  # type: ignore[arg-type]
            return Outcome(result_hash, TERMINAL_EXEC_FAILURE,
                           exec_failure_identity(details, exit_code, output))
        return Outcome(result_hash)
    if status == "running":
        tail = details.get("tail")
        return Outcome(digest_outcome({"status": status,
                                       "tail": tail if isinstance(tail, str) else ""}))
    command = details.get("command")
    warning_text = details.get("warningText")
    reason = details.get("reason")
    host = details.get("host")
    return Outcome(digest_outcome({
        "status": status,
        "reason": reason if isinstance(reason, str) else None,
        "host": host if isinstance(host, str) else None,
        "command": command if isinstance(command, str) else "",
        "warningText": warning_text if isinstance(warning_text, str) else "",
    }))


def is_volatile_send_result(tool_name: str, params: Any) -> bool:
    """``isVolatileSendResult``: 2026.6.11's sends plus ``conversations_send`` and
    ``conversations_turn`` (``isMessagingToolSendAction``). Channel tools would need their
    plugin loaded, so they are never send-like here."""
    return tool_name in _CONVERSATION_SENDS or _is_send_2026_6(tool_name, params)


def hash_tool_outcome(tool_name: str, params: Any, result: Any = UNDEFINED,
                      error: Any = UNDEFINED) -> Outcome:
    """``hashToolOutcome`` of ``openclaw@2026.9.6`` (``tool_name`` already normalised).

    Pass :data:`UNDEFINED` (the default) for an absent ``result`` or ``error``; ``None`` is JS
    ``null``.
    """
    if error is not UNDEFINED:
        return Outcome("error:" + digest_outcome(format_error_for_hash(error)), None, None, True,
                       extract_unknown_tool_name(error))
    if not is_mapping(result):
        return NOTHING if result is UNDEFINED else Outcome(digest_outcome(result))
    raw_details = result.get("details")
    details: Mapping[str, Any] = raw_details if is_mapping(raw_details) else {}
    text = result_text(result)
    if is_loop_veto(details):
        return LOOP_VETO
    if tool_name == "exec":
        found = _exec_outcome(details, text)
        if found is not None:
            return found
    if tool_name == "write" and details.get("changed", UNDEFINED) is False:
        return Outcome(digest_outcome({"status": "unchanged"}), no_progress=True)
    if tool_name == "process" and is_mapping(params):
        progress = process_progress(params.get("action"), details, text)
        if progress is not None:
            return Outcome(digest_outcome(progress))
    if is_volatile_send_result(tool_name, params):
        return Outcome(digest_outcome(strip_volatile_send_ids(details)))
    return Outcome(digest_outcome({"details": details, "text": text}))
