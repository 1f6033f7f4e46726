"""Text extraction and small value helpers shared by every format.

* :func:`extract_text` — the one generic rule, with joiner ``""`` (assistant text) or ``"\\n"``
  (tool results, user, system and other messages);
* :func:`openai_assistant_text` / :func:`openai_tool_result_text` — the two OpenAI-chat rules
  that win over the generic one (gglib's reply text, OpenClaw's result text);
* :func:`compact_json` — keys sorted, separators ``,``/``:``, non-ASCII kept raw;
* :func:`iso_timestamp` — epoch numbers to ISO-8601 UTC, recorded strings kept as written.

Nothing here raises on any JSON value; every walk is bounded by the nesting the JSON loader
already allowed (``max_json_depth``).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime
from typing import Any

__all__ = [
    "ASSISTANT_JOINER",
    "TEXT_JOINER",
    "compact_json",
    "extract_text",
    "gemini_response_text",
    "iso_timestamp",
    "json_type",
    "openai_assistant_text",
    "openai_tool_result_text",
    "parse_json_text",
    "str_or_none",
    "type_of",
]

ASSISTANT_JOINER = ""
"""Joiner for an assistant turn's ``text`` (parts concatenated with no separator)."""
TEXT_JOINER = "\n"
"""Joiner for tool result, user, system and other ``text``."""

_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
# Parts that contribute nothing (images, files, audio, reasoning); a top-level object of one of
# these types is a part too, so it also gives "" instead of its JSON rendering.
_SILENT_PART_TYPES = frozenset({
    "image", "image_url", "input_image", "input_audio", "audio", "file", "input_file",
    "reasoning", "thinking", "redacted_thinking", "video",
})


def compact_json(value: Any) -> str:
    """Compact JSON: keys sorted, separators ``,`` and ``:``, non-ASCII kept raw."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          default=repr)
    except (TypeError, ValueError, RecursionError):
        # Mixed key types cannot be sorted; nothing a JSON loader produces hits this.
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=repr)
        except (TypeError, ValueError, RecursionError):
            return repr(value)


def parse_json_text(value: Any) -> Any:
    """A JSON text recorded inside a field (a span attribute, a completion), parsed; any other
    value, or a text that is no JSON, as it is: such fields hold JSON by convention only, so
    a text that is not JSON is still the recorded value."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value (``null``, ``boolean``, ``number``, ``string``,
    ``array``, ``object``), for messages that say what was found where something else was
    expected: a person reads the file as JSON, not as Python types."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _scalar_text(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "null"
    return compact_json(value)


def gemini_response_text(response: Any) -> str:
    """The text of a Gemini ``functionResponse.response``: ``output``, else ``error`` (or
    ``error.message``), else the compact JSON."""
    if isinstance(response, dict):
        output = response.get("output")
        if isinstance(output, str):
            return output
        error = response.get("error")
        if isinstance(error, str):
            return error
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        return compact_json(response)
    return extract_text(response, TEXT_JOINER)


def _part_text(part: dict[str, Any], joiner: str) -> str | None:
    """What one list element that is an object contributes; ``None`` = nothing."""
    text = part.get("text")
    ptype = type_of(part)
    if isinstance(text, str) and (ptype is None or ptype in _TEXT_PART_TYPES):
        return text
    if ptype == "refusal" and isinstance(part.get("refusal"), str):
        return str(part["refusal"])
    content = part.get("content")
    if isinstance(content, list | str) and ptype not in _SILENT_PART_TYPES:
        return extract_text(content, joiner)
    if ptype == "document":
        source = part.get("source")
        if isinstance(source, dict) and source.get("type") == "text" and isinstance(
            source.get("data"), str
        ):
            return str(source["data"])
        return None
    function_response = part.get("functionResponse")
    if isinstance(function_response, dict) and "response" in function_response:
        return gemini_response_text(function_response["response"])
    return None


def extract_text(value: Any, joiner: str = TEXT_JOINER) -> str:
    """The generic text of a recorded value.

    ``None`` → ``""``; a string → itself; a list → its parts' texts joined with ``joiner``; an
    object → its text when it is itself a part, else compact JSON; a number or boolean → its
    JSON rendering. Never raises.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        pieces: list[str] = []
        for element in value:
            if isinstance(element, str):
                pieces.append(element)
            elif isinstance(element, dict):
                # The usual part, a text one, answered here: _part_text's first rule.
                text = element.get("text")
                ptype = element.get("type")
                if isinstance(text, str) and (ptype is None or (
                        isinstance(ptype, str) and ptype in _TEXT_PART_TYPES)):
                    pieces.append(text)
                    continue
                piece = _part_text(element, joiner)
                if piece is not None:
                    pieces.append(piece)
        return joiner.join(pieces)
    if isinstance(value, dict):
        piece = _part_text(value, joiner)
        if piece is not None:
            return piece
        if type_of(value) in _SILENT_PART_TYPES:
            return ""
        return compact_json(value)
    return _scalar_text(value)


def openai_assistant_text(content: Any) -> str:
    """gglib's reply text (its ``extract_text``): a string as is; a list contributes the string
    ``text`` of elements with ``type == "text"``, concatenated; anything else ``""``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join([
            part["text"] for part in content
            if isinstance(part, dict) and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ])
    return ""


def openai_tool_result_text(content: Any) -> str:
    """The OpenAI-chat tool-result text (OpenClaw's hashing rule): a string as is; a list
    contributes the string ``text`` of every object element (whatever its ``type``), joined
    with ``"\\n"``; anything else ``""``. Nothing is trimmed."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join([
            part["text"] for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ])
    return ""


NON_STRING_TYPE = "\x00<non-string type>"


def type_of(obj: dict[str, Any], key: str = "type") -> str | None:
    """``obj[key]`` when it is a string, ``None`` when absent or null, else a sentinel that
    matches no known type (so a list or object ``type`` never breaks a set lookup)."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    return NON_STRING_TYPE


def str_or_none(value: Any) -> str | None:
    """``value`` when it is a string, else ``None``."""
    return value if isinstance(value, str) else None


# Epoch numbers at or above this are milliseconds (1e11 s is the year 5138).
_MILLISECONDS_FROM = 1e11
# Integer epochs below this many milliseconds (2**33 s, the year 2242) take the exact integer
# path of iso_timestamp: there ``float(ms) / 1000`` is within 0.48 µs of the true value, so
# ``datetime.fromtimestamp`` (which rounds to the microsecond) lands on ``ms % 1000`` exactly.
_INTEGER_PATH_BELOW_MS = (1 << 33) * 1000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_minute_texts: dict[int, str] = {}  # minutes since the epoch → "YYYY-MM-DDTHH:MM:" (a cache)
_TWO_DIGITS = tuple(f"{n:02d}" for n in range(60))
_THREE_DIGITS = tuple(f"{n:03d}" for n in range(1000))  # (table lookups: format specs are slow)


def _utc_text(seconds: int, milliseconds: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` for a non-negative epoch second, as ``datetime`` writes it."""
    minute, second = divmod(seconds, 60)
    prefix = _minute_texts.get(minute)
    if prefix is None:
        if len(_minute_texts) >= 4096:
            _minute_texts.clear()
        days, rest = divmod(minute, 1440)
        hours, minutes = divmod(rest, 60)
        day = date.fromordinal(_EPOCH_ORDINAL + days).isoformat()
        prefix = _minute_texts[minute] = f"{day}T{hours:02d}:{minutes:02d}:"
    return f"{prefix}{_TWO_DIGITS[second]}.{_THREE_DIGITS[milliseconds]}Z"


def iso_timestamp(value: Any) -> str | None:
    """ISO-8601 for a recorded time: a string is kept as written (blank → ``None``); an epoch
    number (seconds, or milliseconds when ≥ 1e11) becomes UTC with millisecond precision and a
    ``Z`` suffix; anything else (or an out-of-range number) → ``None``."""
    # Integer epochs (the usual recording) are formatted with integer arithmetic: the same
    # text as the datetime path below, at a fraction of its cost.
    if type(value) is int and value >= 0:
        if value < _MILLISECONDS_FROM:
            return _utc_text(value, 0)
        if value < _INTEGER_PATH_BELOW_MS:
            return _utc_text(value // 1000, value % 1000)
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value)
    if not math.isfinite(seconds):
        return None
    if abs(seconds) >= _MILLISECONDS_FROM:
        seconds /= 1000.0
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
