"""Canonical rendering of JSON values, as gglib's ``stable_repr`` and serde_json write them.

``stable_repr`` is the deterministic, compact, key-sorted rendering that per-call signatures
and results keys hash; it caps nesting at :data:`MAX_REPR_DEPTH` with the ``"..."`` sentinel.
``compact_json`` is serde_json's compact serialisation with sorted keys and no cap, used for
structured tool results.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any

__all__ = [
    "DEPTH_SENTINEL",
    "MAX_REPR_DEPTH",
    "compact_json",
    "json_string",
    "render_float",
    "stable_repr",
]

MAX_REPR_DEPTH = 16
DEPTH_SENTINEL = '"..."'

json_string = encode_basestring
"""serde_json string escaping (= ``json.dumps(s, ensure_ascii=False)``): short escapes for
``\\b \\f \\n \\r \\t``, ``\\u00xx`` (lower-case) for other controls, everything else raw."""


def render_float(x: float) -> str:
    """serde_json (ryu) layout of the shortest round-trip digits of ``x``."""
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


def stable_repr(value: Any, depth: int = 0) -> str:
    """gglib's canonical rendering: no whitespace, object keys sorted by code point, floats in
    serde layout, and every value at depth :data:`MAX_REPR_DEPTH` or deeper (scalars too)
    replaced by the ``"..."`` sentinel, so all nests of 16 or more levels collide upstream."""
    if depth >= MAX_REPR_DEPTH:
        return DEPTH_SENTINEL
    if isinstance(value, str):
        return json_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return render_float(value)
    d = depth + 1
    if isinstance(value, dict):
        if not value:
            return "{}"
        return (
            "{"
            + ",".join(
                json_string(k) + ":" + stable_repr(value[k], d) for k in sorted(value)
            )
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(stable_repr(v, d) for v in value) + "]"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def compact_json(value: Any) -> str:
    """serde_json compact serialisation: keys sorted, numbers as in :func:`stable_repr`, no depth
    cap (gglib hashes structured tool results this way)."""
    if isinstance(value, str):
        return json_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return render_float(value)
    if isinstance(value, dict):
        return "{" + ",".join(json_string(k) + ":" + compact_json(value[k]) for k in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    raise TypeError(f"not a JSON value: {type(value).__name__}")
