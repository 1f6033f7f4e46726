"""The JavaScript string and JSON behaviour the loop detectors of Node agents depend on.

Gemini CLI (and its fork Qwen Code) runs under Node, so its loop detector (``dist/src/services/loopDetectionService.js``
of ``@google/gemini-cli-core``) measures text in UTF-16 code units, keys tool calls with
``JSON.stringify`` (insertion order, array-index keys first, ECMAScript number formatting) and
hashes JavaScript strings as UTF-8 with every lone surrogate written as U+FFFD. This module
reproduces exactly that:

* :func:`to_units` / :func:`from_units`: a Python string as one character per UTF-16 code unit
  (astral characters become their two surrogate halves) and back;
* :func:`node_utf8` / :func:`node_sha256`: what ``createHash('sha256').update(str)`` hashes;
* :func:`json_stringify`: ``JSON.stringify`` of a parsed JSON value;
* :func:`json_parse`: ``JSON.parse`` at any nesting depth (Python's parser is recursive and stops
  near 1,000 levels; V8's is not).

String escaping and number formatting come from :mod:`loopscope.jsonrules.javascript`.
"""

from __future__ import annotations

import hashlib
import json.decoder
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from loopscope.bulk import json_memo_key
from loopscope.jsonrules.javascript import (
    JS_WHITESPACE,
    JS_WHITESPACE_CLASS,
    js_json_parse,
    js_literal,
    js_number,
    js_string,
    js_trim,
    js_truthy,
)

__all__ = [
    "JS_WHITESPACE",
    "JS_WHITESPACE_CLASS",
    "from_units",
    "has_surrogates",
    "js_trim",
    "js_truthy",
    "json_parse",
    "json_stringify",
    "json_stringify_reference",
    "node_sha256",
    "node_utf8",
    "to_units",
]

_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


# --------------------------------------------------------------------------- UTF-16 code units


def _halves(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def to_units(text: str) -> str:
    """``text`` with one Python character per UTF-16 code unit, so that ``len``, indices and
    slices count as JavaScript does. Text without astral characters is returned unchanged."""
    if text.isascii() or _ASTRAL.search(text) is None:
        return text
    return _ASTRAL.sub(_halves, text)


def from_units(units: str) -> str:
    """The inverse of :func:`to_units`: adjacent surrogate halves become one character again
    (lone halves stay)."""
    if _SURROGATE.search(units) is None:
        return units
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def has_surrogates(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def node_utf8(text: str) -> bytes:
    """The UTF-8 bytes Node writes for a JavaScript string: surrogate pairs (also as two Python
    characters) become their astral character, every lone surrogate becomes U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode()


def node_sha256(text: str) -> str:
    """``createHash('sha256').update(text).digest('hex')`` under Node."""
    return hashlib.sha256(node_utf8(text)).hexdigest()


# --------------------------------------------------------------------------- JSON.stringify

_TWO_53: Final = 2**53
_INDEX_MAX: Final = 2**32 - 1


def _is_array_index(key: str) -> bool:
    """A canonical array index (``"0"``, ``"1"``, … ``"4294967294"``): JavaScript lists such
    object keys first, in ascending numeric order."""
    if not key or len(key) > 10 or not key.isascii() or not key.isdigit():
        return False
    return (key == "0" or key[0] != "0") and int(key) < _INDEX_MAX


def _ordered_items(value: Mapping[Any, Any]) -> list[tuple[str, Any]]:
    items = [(k if isinstance(k, str) else str(k), v) for k, v in value.items()]
    indices = [item for item in items if _is_array_index(item[0])]
    if not indices:
        return items
    indices.sort(key=lambda item: int(item[0]))
    return indices + [item for item in items if not _is_array_index(item[0])]


def _number(value: int | float) -> str:
    if isinstance(value, int):
        if -_TWO_53 < value < _TWO_53:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "null"
    if math.isnan(value) or math.isinf(value):
        return "null"  # JSON.stringify writes non-finite numbers as null
    return js_number(value)


def _scalar(value: Any) -> str:
    literal = js_literal(value)
    if literal is not None:
        return literal
    if isinstance(value, int | float):
        return _number(value)
    raise TypeError(f"JSON.stringify: unsupported value of type {type(value).__name__}")


def json_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for a value made of what ``JSON.parse`` returns (``dict``,
    ``list``/``tuple``, ``str``, ``int``, ``float``, ``bool``, ``None``): compact, object keys in
    insertion order with array-index keys first, ECMAScript number formatting (non-finite
    numbers as ``null``), lone surrogates escaped as ``\\udxxx``.

    Most tool arguments hold only strings, small integers, booleans and ``null`` under
    non-numeric keys; for those orjson writes exactly what JavaScript writes, at a fraction of
    the cost. :func:`_fast_stringify` tries it and the JavaScript printer
    (:func:`json_stringify_reference`) takes everything else; a property test holds them equal.
    """
    fast = _fast_stringify(value)
    return fast if fast is not None else json_stringify_reference(value)


def json_stringify_reference(value: Any) -> str:
    """:func:`json_stringify`, written after the ECMAScript algorithm for every value."""
    try:
        return _stringify(value)
    except RecursionError:
        return _stringify_iterative(value)


_JSON_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_ARRAY_INDEX_KEY: Final = re.compile(r'"(?:0|[1-9][0-9]*)":')
_NOT_SMALL_INTEGER: Final = re.compile(r"[.E]|[0-9]e|[0-9]{16}")
"""Outside strings: a float (orjson writes ``1.0``, ``1e+16``) or an integer of 16 digits or
more (JavaScript turns those above 2**53 into doubles)."""


def _fast_stringify(value: Any) -> str | None:
    """``JSON.stringify(value)`` by orjson, or ``None`` where the two could differ.

    orjson and JavaScript escape strings alike (``\\"``, ``\\\\``, ``\\b \\f \\n \\r \\t``, other
    control characters as lower-case ``\\u00xx``, nothing else) and both write non-finite
    numbers as ``null``. orjson refuses lone surrogate halves, non-string keys and deep nesting;
    it writes floats and integers beyond 2**53 differently and keeps array-index keys in
    insertion order (JavaScript lists them first): those go to the JavaScript printer.
    """
    written = json_memo_key(value)  # orjson, refusing what JSON.parse never returns
    if written is None:
        return None
    text = written.decode()
    if '"' in text:
        if _ARRAY_INDEX_KEY.search(text) is not None:
            return None
        bare = _JSON_STRING.sub("", text)
    else:
        bare = text
    if _NOT_SMALL_INTEGER.search(bare) is not None:
        return None
    return text


def _stringify(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ",".join(js_string(k) + ":" + _stringify(v)
                              for k, v in _ordered_items(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_stringify(v) for v in value) + "]"
    return _scalar(value)


def _stringify_iterative(value: Any) -> str:
    """:func:`json_stringify` with an explicit stack, for nesting deeper than Python's
    recursion limit."""
    out: list[str] = []
    stack: list[tuple[bool, Any]] = [(False, value)]  # (is literal text, item)
    while stack:
        literal, item = stack.pop()
        if literal:
            out.append(item)
            continue
        work: list[tuple[bool, Any]] = []
        if isinstance(item, Mapping):
            work.append((True, "{"))
            for n, (key, element) in enumerate(_ordered_items(item)):
                work.append((True, ("," if n else "") + js_string(key) + ":"))
                work.append((False, element))
            work.append((True, "}"))
        elif isinstance(item, list | tuple):
            work.append((True, "["))
            for n, element in enumerate(item):
                if n:
                    work.append((True, ","))
                work.append((False, element))
            work.append((True, "]"))
        else:
            out.append(_scalar(item))
            continue
        stack.extend(reversed(work))
    return "".join(out)


# --------------------------------------------------------------------------- JSON.parse

_JSON_WS: Final = " \t\n\r"
scanstring: Final[Callable[[str, int, bool], tuple[str, int]]] = (
    json.decoder.scanstring)  # type: ignore[attr-defined]
"""The ``json`` module's string scanner (the same escapes and surrogate handling as
:func:`json.loads`)."""
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class _ParseError(ValueError):
    pass


def json_parse(text: str) -> tuple[bool, Any]:
    """``JSON.parse(text)``: ``(True, value)`` or ``(False, reason)``.

    Strict JSON (no ``NaN``/``Infinity``, BOM, trailing text or single quotes), every number a
    double (an overflowing one is ``inf``), lone-surrogate escapes kept, a duplicated key keeps
    its first position and its last value, any nesting depth.
    """
    ok, value = js_json_parse(text)
    if ok or not isinstance(value, str) or "too deep" not in value:
        return ok, value
    try:
        return True, _parse_iterative(text)
    except ValueError as exc:  # _ParseError and scanstring's JSONDecodeError
        return False, str(exc)


def _number_value(literal: str, is_int: bool) -> Any:
    if is_int and len(literal) <= 300:
        return int(literal)
    return float(literal)  # a double, as in JavaScript (inf on overflow)


def _parse_iterative(text: str) -> Any:
    """A non-recursive JSON parser with :func:`json.loads`'s value semantics (used only for
    text nested too deeply for it)."""
    n = len(text)

    def skip(i: int) -> int:
        while i < n and text[i] in _JSON_WS:
            i += 1
        return i

    def key_at(i: int) -> tuple[str, int]:
        i = skip(i)
        if i >= n or text[i] != '"':
            raise _ParseError(f"expected a property name at {i}")
        key, i = scanstring(text, i + 1, True)
        i = skip(i)
        if i >= n or text[i] != ":":
            raise _ParseError(f"expected ':' at {i}")
        return key, i + 1

    stack: list[list[Any]] = []  # [container, pending key]
    i = 0
    while True:
        i = skip(i)
        if i >= n:
            raise _ParseError("unexpected end of JSON input")
        c = text[i]
        value: Any
        if c == "{":
            j = skip(i + 1)
            if j < n and text[j] == "}":
                value, i = {}, j + 1
            else:
                key, i = key_at(i + 1)
                stack.append([{}, key])
                continue
        elif c == "[":
            j = skip(i + 1)
            if j < n and text[j] == "]":
                value, i = [], j + 1
            else:
                stack.append([[], None])
                i += 1
                continue
        elif c == '"':
            value, i = scanstring(text, i + 1, True)
        elif text.startswith("true", i):
            value, i = True, i + 4
        elif text.startswith("false", i):
            value, i = False, i + 5
        elif text.startswith("null", i):
            value, i = None, i + 4
        else:
            match = _NUMBER.match(text, i)
            if match is None:
                raise _ParseError(f"unexpected character at {i}")
            value = _number_value(match.group(), match.group(1) is None and match.group(2) is None)
            i = match.end()
        # Attach the finished value to its containers, closing those that end here.
        while True:
            if not stack:
                if skip(i) != n:
                    raise _ParseError(f"unexpected text after JSON at {skip(i)}")
                return value
            top = stack[-1]
            container = top[0]
            if isinstance(container, list):
                container.append(value)
            else:
                container[top[1]] = value
            i = skip(i)
            if i >= n:
                raise _ParseError("unexpected end of JSON input")
            c = text[i]
            if c == ",":
                if isinstance(container, dict):
                    top[1], i = key_at(i + 1)
                else:
                    i += 1
                break
            if c == ("]" if isinstance(container, list) else "}"):
                stack.pop()
                value, i = container, i + 1
                continue
            raise _ParseError(f"expected ',' at {i}")
