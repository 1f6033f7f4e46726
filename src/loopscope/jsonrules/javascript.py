"""JavaScript value semantics the ports of JavaScript guards need.

OpenClaw, for one, hashes tool arguments and outcomes with ``stableStringify`` under Node
(openclaw@2026.6.11: ``dist/stable-stringify-*.js``). To reproduce its hashes byte for byte,
this module mirrors the few JS behaviours that differ from Python:

* ``stable_stringify``: sorted keys in UTF-16 code-unit order, JS number formatting, the bare
  ``undefined`` token, ``"NaN"``/``"Infinity"`` strings, and lone surrogates written as
  ``\\udxxx`` escapes;
* ``js_trim``: ``String.prototype.trim`` (its whitespace set differs from ``str.strip``);
* ``js_json_parse``: ``JSON.parse`` (no ``NaN`` literals, every number a double);
* ``js_truthy``: JS truthiness, used by the config resolution.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from json.encoder import encode_basestring  # the C encoder: escapes only '"', '\\' and C0
from typing import Any, Final

import orjson


class _Undefined:
    """JavaScript ``undefined``: absent, distinct from ``None`` (JS ``null``)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = _Undefined()
"""The JS ``undefined`` value. ``stable_stringify`` writes it as the bare token ``undefined``."""


# --------------------------------------------------------------------------- trim and whitespace

JS_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""The characters JS ``trim`` removes and JS regex ``\\s`` matches (ECMAScript WhiteSpace +
LineTerminator)."""

JS_WHITESPACE_CLASS: Final = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
"""The same set as the body of a Python regex character class."""


def js_trim(text: str) -> str:
    """``String.prototype.trim``: unlike ``str.strip()`` it keeps U+001C–U+001F and U+0085 and
    removes U+FEFF."""
    return text.strip(JS_WHITESPACE)


def js_truthy(value: Any) -> bool:
    """JS truthiness (``{}`` and ``[]`` are truthy, ``NaN`` and ``""`` are not)."""
    if value is None or value is UNDEFINED:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, float):
        return not (value == 0 or math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def js_is_plain_object(value: Any) -> bool:
    """OpenClaw's ``isPlainObject``: a JSON object (never a list or ``null``)."""
    return isinstance(value, Mapping)


# --------------------------------------------------------------------------- numbers

_TWO_53: Final = 2**53


def js_number(value: float) -> str:
    """``Number.prototype.toString`` of a finite double (OpenClaw reads every JSON number as one)."""
    if value == 0:
        return "0"  # 0 and -0
    if value < 0:
        return "-" + js_number(-value)
    if value < _TWO_53 and value.is_integer():
        return str(int(value))
    mantissa, _, exponent_text = repr(value).partition("e")
    exponent = int(exponent_text) if exponent_text else 0
    integer_part, _, fraction = mantissa.partition(".")
    if fraction == "0":
        fraction = ""
    raw = integer_part + fraction
    stripped = raw.lstrip("0")
    digits = stripped.rstrip("0")
    trailing = len(stripped) - len(digits)
    k = len(digits)
    # value = int(digits) * 10**(exponent - len(fraction) + trailing) = 0.digits * 10**n
    n = exponent - len(fraction) + trailing + k
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{head}e{'+' if e >= 0 else '-'}{abs(e)}"


def _stringify_float(value: float) -> str:
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return js_number(value)


def _stringify_int(value: int) -> str:
    if -_TWO_53 < value < _TWO_53:
        return str(value)
    try:
        as_double = float(value)
    except OverflowError:
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return _stringify_float(as_double)


# --------------------------------------------------------------------------- strings

_SURROGATE = re.compile("[\ud800-\udfff]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def js_string(text: str) -> str:
    """``JSON.stringify`` of a string, well-formed form (a lone surrogate becomes ``\\udxxx``)."""
    try:
        # orjson escapes exactly as ``encode_basestring`` (every code point checked) and raises
        # on a surrogate; it is several times faster on long strings.
        return orjson.dumps(text).decode()
    except TypeError:
        pass
    encoded: str = encode_basestring(text)
    if _SURROGATE.search(encoded) is None:
        return encoded
    # Re-pair adjacent surrogate halves into astral characters; escape the lone ones.
    repaired = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    encoded = encode_basestring(repaired)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)


def js_literal(value: Any) -> str | None:
    """A string, ``null``, ``true`` or ``false`` as JavaScript's JSON writers write it; ``None``
    for any other value. ``stableStringify`` and ``JSON.stringify`` agree on these and differ
    on numbers and containers, so each printer starts here and goes its own way after."""
    if isinstance(value, str):
        return js_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return None


def utf16_sort_key(key: str) -> bytes:
    """Sort key giving JS's default string order (UTF-16 code units)."""
    return key.encode("utf-16-be", "surrogatepass")


def _sorted_keys(keys: list[str]) -> list[str]:
    ordered = sorted(keys)
    # Code-point order equals UTF-16 order unless an astral character takes part.
    for key in ordered:
        if not key.isascii() and _ASTRAL.search(key) is not None:
            return sorted(keys, key=utf16_sort_key)
    return ordered


# --------------------------------------------------------------------------- stable stringify


def stable_stringify(value: Any) -> str:
    """OpenClaw's ``stableStringify`` for JSON-like Python values.

    ``None`` is ``null``, :data:`UNDEFINED` is ``undefined``; ``bytes`` serialise like a
    ``Uint8Array``. A container that is its own ancestor becomes ``"[Circular]"``.
    """
    try:
        return _stringify(value, set())
    except RecursionError:
        return _stringify_iterative(value)


def _stringify(value: Any, ancestors: set[int]) -> str:
    literal = js_literal(value)
    if literal is not None:
        return literal
    if isinstance(value, int):
        return _stringify_int(value)
    if isinstance(value, float):
        return _stringify_float(value)
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, Mapping):
        marker = id(value)
        if marker in ancestors:
            return '"[Circular]"'
        ancestors.add(marker)
        try:
            items: Mapping[str, Any] = value
            keys = list(value)
            if not all(type(k) is str for k in keys):
                items = {(k if isinstance(k, str) else str(k)): v for k, v in value.items()}
                keys = list(items)
            return "{" + ",".join(
                js_string(k) + ":" + _stringify(items[k], ancestors) for k in _sorted_keys(keys)
            ) + "}"
        finally:
            ancestors.discard(marker)
    if isinstance(value, list | tuple):
        marker = id(value)
        if marker in ancestors:
            return '"[Circular]"'
        ancestors.add(marker)
        try:
            return "[" + ",".join(_stringify(v, ancestors) for v in value) + "]"
        finally:
            ancestors.discard(marker)
    if isinstance(value, bytes | bytearray):
        import base64

        return _stringify({"type": "Uint8Array", "data": base64.b64encode(bytes(value)).decode()},
                          ancestors)
    raise TypeError(f"stable_stringify: unsupported value of type {type(value).__name__}")


def _stringify_iterative(value: Any) -> str:
    """The same serialisation with an explicit stack, for nesting deeper than Python's recursion
    limit (JS ``JSON.parse`` accepts such arguments)."""
    out: list[str] = []
    # Work items: ("v", value) to serialise a value, ("s", text) to emit text, ("x", id) to
    # leave an ancestor.
    stack: list[tuple[str, Any]] = [("v", value)]
    ancestors: set[int] = set()
    while stack:
        kind, item = stack.pop()
        if kind == "s":
            out.append(item)
            continue
        if kind == "x":
            ancestors.discard(item)
            continue
        if isinstance(item, Mapping | list | tuple):
            marker = id(item)
            if marker in ancestors:
                out.append('"[Circular]"')
                continue
            ancestors.add(marker)
            work: list[tuple[str, Any]] = []
            if isinstance(item, Mapping):
                items = {(k if isinstance(k, str) else str(k)): v for k, v in item.items()}
                work.append(("s", "{"))
                for n, key in enumerate(_sorted_keys(list(items))):
                    work.append(("s", ("," if n else "") + js_string(key) + ":"))
                    work.append(("v", items[key]))
                work.append(("s", "}"))
            else:
                work.append(("s", "["))
                for n, element in enumerate(item):
                    if n:
                        work.append(("s", ","))
                    work.append(("v", element))
                work.append(("s", "]"))
            work.append(("x", marker))
            stack.extend(reversed(work))
            continue
        out.append(_stringify(item, ancestors))
    return "".join(out)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest(value: Any) -> str:
    """``sha256_hex(utf8(stableStringify(value)))``, 64 lowercase hex characters."""
    parts: list[bytes] = []
    try:
        fast = _stable_parts(value, parts, 0)
    except TypeError:  # orjson refuses a string with a surrogate
        fast = False
    if fast:
        return hashlib.sha256(b"".join(parts)).hexdigest()
    return hashlib.sha256(stable_stringify(value).encode("utf-8")).hexdigest()


_FAST_DEPTH: Final = 100


def _stable_parts(value: Any, out: list[bytes], depth: int) -> bool:
    """The UTF-8 of ``stableStringify(value)`` appended to ``out`` in pieces, for the plain
    values parsed JSON is made of (exact types ``str``, ``int``, ``float``, ``bool``, ``None``,
    ``dict`` with ``str`` keys, ``list``, ``tuple``, and :data:`UNDEFINED`); strings through
    orjson, whose escaping is ``JSON.stringify``'s for every string without a surrogate (it
    raises ``TypeError`` on one). Returns False for anything else, or nesting past
    ``_FAST_DEPTH`` (which also stops a cycle); :func:`stable_stringify` then answers."""
    t = type(value)
    if t is str:
        out.append(orjson.dumps(value))
    elif value is None:
        out.append(b"null")
    elif t is bool:
        out.append(b"true" if value else b"false")
    elif t is int:
        out.append((str(value) if -_TWO_53 < value < _TWO_53 else _stringify_int(value)).encode())
    elif t is dict:
        if depth >= _FAST_DEPTH:
            return False
        keys = list(value)
        for key in keys:
            if type(key) is not str:
                return False
        out.append(b"{")
        first = True
        for key in _sorted_keys(keys):
            if first:
                first = False
                out.append(orjson.dumps(key) + b":")
            else:
                out.append(b"," + orjson.dumps(key) + b":")
            if not _stable_parts(value[key], out, depth + 1):
                return False
        out.append(b"}")
    elif t is list or t is tuple:
        if depth >= _FAST_DEPTH:
            return False
        out.append(b"[")
        first = True
        for item in value:
            if first:
                first = False
            else:
                out.append(b",")
            if not _stable_parts(item, out, depth + 1):
                return False
        out.append(b"]")
    elif t is float:
        out.append(_stringify_float(value).encode())
    elif value is UNDEFINED:
        out.append(b"undefined")
    else:
        return False
    return True


# --------------------------------------------------------------------------- JSON.parse


class _Rejected(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _Rejected(f"JSON.parse rejects the literal {name}")


def _parse_int(text: str) -> Any:
    # Every JS number is a double; a very long digit string goes straight to float so that
    # Python's int-conversion limit never applies (overflow gives inf, as in JS).
    return int(text) if len(text) <= 300 else float(text)


_FAST_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def fast_json_parse(text: str) -> tuple[bool, Any]:
    """:func:`js_json_parse` for the engine's hashing: the same answer, faster.

    Integers are parsed natively (no per-number hook); an integer of more than 300 digits may
    then be an ``int`` where :func:`js_json_parse` gives the ``float`` JS would, which
    ``stableStringify`` writes identically. Anything the fast decoder rejects (a BOM, a huge
    integer, every syntax error) is answered by :func:`js_json_parse` itself.
    """
    if type(text) is str and not text.startswith("\ufeff"):
        try:
            return True, _FAST_DECODER.decode(text)
        except (ValueError, RecursionError):
            pass
    return js_json_parse(text)


def js_json_parse(text: str) -> tuple[bool, Any]:
    """Parse ``text`` with JavaScript ``JSON.parse`` rules, as OpenClaw reads recorded arguments.

    Returns ``(True, value)`` or ``(False, reason)``. ``NaN``/``Infinity`` literals, a BOM,
    trailing commas or text, single quotes and the empty string are rejected; an overflowing
    number becomes ``inf``; lone surrogate escapes are kept; duplicate keys keep the last value.
    """
    try:
        return True, json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)
    except RecursionError:
        return False, "nesting too deep for this parser"
    except ValueError as exc:  # JSONDecodeError and _Rejected
        return False, str(exc)
