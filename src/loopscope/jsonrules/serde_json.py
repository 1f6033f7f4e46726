"""JSON parsing and writing as Rust's ``serde_json`` does it (gglib parses and writes with
serde_json, and Python's ``json`` accepts more, classifies numbers differently and prints floats
another way).

Two parsing entry points:

* :func:`parse_json_serde` / :func:`parse_serde_json`: the loader for argument strings. Strict
  JSON, serde number classification, nesting below 128, no lone surrogates.
* :func:`loads_file_level`: the loader for whole session files. Only the number rules apply
  (non-finite and out-of-range numbers rejected, serde number classes, so bare-object arguments
  and structured tool contents hash as in argument strings): no depth cap, lone surrogate
  escapes are kept as Python keeps them.

Both use ``orjson`` where it provably gives the same answer (it is strict, rejects non-finite
numbers, lone surrogate escapes, trailing commas, a BOM and trailing text, classifies integers
beyond u64/i64 as floats and rounds floats correctly) and fall back to a ``json`` module path
with hooks otherwise. The differences that force the fallback are: an integer literal ``-0``
(orjson gives the int ``0``, serde gives ``-0.0``), nesting of 128 or more (argument strings
only) and every text orjson rejects (so the answer and the message come from one place).

Writing: :func:`compact_json` is serde_json's compact serialisation with sorted keys
(:func:`write_scalar` for strings and numbers, :func:`render_float` for ryu's float layout);
gglib hashes these texts, so a float printed any other way would change a verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

import orjson

__all__ = [
    "MAX_NESTING",
    "SCALAR_WRITERS",
    "SerdeJsonError",
    "compact_json",
    "json_string",
    "loads_file_level",
    "parse_json_serde",
    "parse_serde_json",
    "render_float",
    "serde_number_decoder",
    "write_scalar",
]

MAX_NESTING = 128
"""A container at this nesting level (the root container is level 1) is rejected."""

_U64_MAX = 18446744073709551615
_I64_MIN = -9223372036854775808
_INF = float("inf")

# A ``-0`` number token: preceded by start, ``[``, ``:`` or ``,`` and followed by a delimiter.
# A match inside a string is a harmless false positive (it only selects the slow path).
_NEG_ZERO_TOKEN = re.compile(r"(?:^|[\[:,])[ \t\n\r]*-0[ \t\n\r]*(?:$|[,\]\}])")
_SURROGATE = re.compile("[\ud800-\udfff]")


class SerdeJsonError(ValueError):
    """serde_json would reject this text. The message says why."""


def serde_number_decoder(out_of_range: Callable[[str], Exception],
                         not_a_number: Callable[[str], Exception]) -> json.JSONDecoder:
    """A strict ``json`` decoder that classifies numbers as serde_json does.

    ``-0`` is the float ``-0.0`` and an integer beyond i64 / u64 a float, because serde_json
    reads them as ``f64``; a number that overflows to infinity raises
    ``out_of_range(literal)`` and ``NaN`` / ``Infinity`` raise ``not_a_number(name)``, because
    serde_json rejects both. The caller chooses the exceptions so each reader keeps its own
    message while the number rules stay in one place.
    """

    def parse_int(literal: str) -> int | float:
        if literal == "-0":
            return -0.0
        # More than 20 digits can never fit u64/i64; float() has no digit limit, int() has.
        if len(literal) <= 21:
            value = int(literal)
            if _I64_MIN <= value <= _U64_MAX:
                return value
        return parse_float(literal)

    def parse_float(literal: str) -> float:
        f = float(literal)
        if f == _INF or f == -_INF:
            raise out_of_range(literal)
        return f

    def reject_constant(name: str) -> Any:
        raise not_a_number(name)

    return json.JSONDecoder(parse_int=parse_int, parse_float=parse_float,
                            parse_constant=reject_constant, strict=True)


_DECODER = serde_number_decoder(lambda literal: SerdeJsonError("number out of range"),
                                lambda name: SerdeJsonError(f"invalid value: {name}"))


def _check_depth_and_surrogates(value: Any) -> None:
    """Reject nesting of MAX_NESTING or more and lone surrogates (iterative walk)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                raise SerdeJsonError("lone leading or trailing surrogate in string escape")
        elif isinstance(v, dict):
            depth += 1
            if depth >= MAX_NESTING:
                raise SerdeJsonError("recursion limit exceeded")
            for k, item in v.items():
                if _SURROGATE.search(k):
                    raise SerdeJsonError("lone leading or trailing surrogate in string escape")
                stack.append((item, depth))
        elif isinstance(v, list):
            depth += 1
            if depth >= MAX_NESTING:
                raise SerdeJsonError("recursion limit exceeded")
            stack.extend((item, depth) for item in v)


def _slow_loads(text: str) -> Any:
    try:
        return _DECODER.decode(text)
    except SerdeJsonError:
        raise
    except RecursionError:
        raise SerdeJsonError("recursion limit exceeded") from None
    except (ValueError, OverflowError) as exc:  # json.JSONDecodeError is a ValueError
        raise SerdeJsonError(str(exc)) from None


def parse_json_serde(text: str) -> Any:
    """Parse an argument string as serde_json does; raise :class:`SerdeJsonError` on rejection."""
    try:
        value = orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        value = _slow_loads(text)
        _check_depth_and_surrogates(value)
        return value
    if "-0" in text and _NEG_ZERO_TOKEN.search(text):  # cheap literal test first (the regex has no prefix)
        value = _slow_loads(text)
        _check_depth_and_surrogates(value)
        return value
    if text.count("[") + text.count("{") >= MAX_NESTING:
        _check_depth_and_surrogates(value)
    # orjson rejects every lone surrogate escape itself.
    return value


def parse_serde_json(text: str) -> tuple[bool, Any]:
    """``(True, value)`` when serde_json accepts ``text``, else ``(False, reason)``.

    This is the function importers use for ``ToolCall.arguments`` of a JSON-text call: on
    ``(False, reason)`` the arguments are the raw string and ``reason`` is ``arguments_error``.
    """
    try:
        return True, parse_json_serde(text)
    except SerdeJsonError as exc:
        return False, str(exc)


def loads_file_level(text: str | bytes) -> Any:
    """Parse a whole session file with the file-level rules only: number range and classes.

    Non-finite or out-of-range numbers raise :class:`SerdeJsonError`; so does any JSON syntax
    error (the message carries the position). ``-0`` becomes ``-0.0`` and integers beyond
    u64 / i64 become floats. Nesting and lone surrogate escapes are not checked here.
    """
    if isinstance(text, bytes | bytearray | memoryview):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SerdeJsonError(f"invalid UTF-8: {exc}") from None
    try:
        value = orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return _slow_loads(text)
    if "-0" in text and _NEG_ZERO_TOKEN.search(text):
        return _slow_loads(text)
    return value


json_string = encode_basestring
"""serde_json string escaping (= ``json.dumps(s, ensure_ascii=False)``): short escapes for
``\\b \\f \\n \\r \\t``, ``\\u00xx`` (lower-case) for other controls, everything else raw."""


def render_float(x: float) -> str:
    """serde_json (ryu) layout of the shortest round-trip digits of ``x``: plain decimals up to
    16 integer digits (always with a ``.0`` or a fraction), ``0.000ddd`` down to 5 leading zeros,
    exponent form (``1e20``, ``1.5e-7``) beyond."""
    if x == 0.0:
        return "-0.0" if str(x)[0] == "-" else "0.0"
    if x != x or x in (float("inf"), float("-inf")):
        # Cannot come out of the serde loader; serde_json writes null for these.
        return "null"
    sign = "-" if x < 0 else ""
    r = repr(abs(x))
    mantissa, _, exp = r.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    point = len(int_part) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    n = len(digits)
    if n <= point <= 16:
        body = digits + "0" * (point - n) + ".0"
    elif 0 < point <= 16:
        body = digits[:point] + "." + digits[point:]
    elif -5 < point <= 0:
        body = "0." + "0" * (-point) + digits
    elif n == 1:
        body = digits + "e" + str(point - 1)
    else:
        body = digits[0] + "." + digits[1:] + "e" + str(point - 1)
    return sign + body


SCALAR_WRITERS: dict[type, Callable[[Any], str]] = {
    str: json_string,
    int: str,
    float: render_float,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}
"""serde_json's writer for each exact JSON scalar type (what the loaders produce): a writer
looked up by type before :func:`write_scalar`'s ``isinstance`` chain, which is only needed
for subclasses."""


def write_scalar(value: Any) -> str | None:
    """serde_json's text of a string, null, boolean or number; None for a container (the
    caller writes those, with or without a depth cap)."""
    write = SCALAR_WRITERS.get(type(value))
    if write is not None:
        return write(value)
    if isinstance(value, str):
        return json_string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return render_float(value)
    return None


def compact_json(value: Any) -> str:
    """serde_json compact serialisation: keys sorted, numbers as :func:`write_scalar`, no depth
    cap (gglib hashes structured tool results this way)."""
    write = SCALAR_WRITERS.get(type(value))
    if write is not None:
        return write(value)
    if isinstance(value, dict):
        return "{" + ",".join(json_string(k) + ":" + compact_json(value[k]) for k in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    text = write_scalar(value)
    if text is not None:
        return text
    raise TypeError(f"not a JSON value: {type(value).__name__}")
