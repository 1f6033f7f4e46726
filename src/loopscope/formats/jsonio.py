"""The shared JSON loader (sessions spec §2.0 step 2, §3.4, §3.5).

* Documents: size and memory guards, then ``orjson`` (fast path) with a ``json``-module
  fallback carrying the file-level number rules of engine-gglib §2.2 (``-0`` → ``-0.0``,
  integers beyond u64/i64 → float, ``NaN``/``Infinity``/overflow rejected). Nesting deeper than
  ``max_json_depth`` is :data:`TOO_DEEP`; a ``RecursionError`` never escapes. Truncated
  top-level arrays are salvaged element by element.
* JSONL: streamed in binary chunks, split on ``\\n`` only (a ``\\r`` before it is dropped;
  U+2028 and friends are ordinary characters); over-long lines are skipped without being held;
  an unparsable last line without a newline is ``truncated_line``.
* Encoding: a UTF-8 BOM is stripped; a UTF-16 BOM makes the file decode as UTF-16 (streamed);
  invalid UTF-8 becomes U+FFFD with one ``encoding`` warning per file.
* Strings longer than ``max_value_chars`` become a 1,000,000-character head followed by
  ``…[truncated: <n> characters, sha256 <hex>]``.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from loopscope.formats.base import ImportContext, ImportLimits, Record

__all__ = [
    "CHUNK_BYTES",
    "INVALID_JSON",
    "NUMBER",
    "TOO_DEEP",
    "JsonError",
    "RawLine",
    "available_memory",
    "iter_lines",
    "iter_records",
    "loads",
    "open_chunks",
    "read_document",
    "salvage_array",
    "sniff_encoding",
]

CHUNK_BYTES = 1 << 20
ORJSON_MAX_DEPTH = 1024
"""orjson refuses nesting beyond this; the effective depth limit is min(max_json_depth, it)."""
TRUNCATED_HEAD_CHARS = 1_000_000

INVALID_JSON = "invalid_json"
TOO_DEEP = "too_deep"
NUMBER = "number"
"""Syntactically JSON except for a non-finite or out-of-range number (engine-gglib §2.2)."""


class JsonError(Exception):
    """The text is not acceptable JSON. ``kind`` is :data:`INVALID_JSON`, :data:`TOO_DEEP` or
    :data:`NUMBER`; ``detail`` is the parser's message without position; ``line``/``column``
    are 1-based when known; ``at_end`` when the error sits at the end of the data."""

    def __init__(self, kind: str, detail: str, *, line: int | None = None,
                 column: int | None = None, at_end: bool = False) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.line = line
        self.column = column
        self.at_end = at_end

    def where(self, *, with_line: bool = True) -> str:
        if self.line is None:
            return ""
        if with_line:
            return f" at line {self.line}, column {self.column}"
        return f" at column {self.column}"


class _NumberRejected(ValueError):
    pass


_U64_MAX = 18446744073709551615
_I64_MIN = -9223372036854775808
_INF = float("inf")


def _parse_int(literal: str) -> int | float:
    if literal == "-0":
        return -0.0
    if len(literal) <= 21:
        value = int(literal)
        if _I64_MIN <= value <= _U64_MAX:
            return value
    f = float(literal)
    if f in (_INF, -_INF):
        raise _NumberRejected(f"number out of range ({literal[:40]})")
    return f


def _parse_float(literal: str) -> float:
    f = float(literal)
    if f in (_INF, -_INF):
        raise _NumberRejected(f"number out of range ({literal[:40]})")
    return f


def _reject_constant(name: str) -> Any:
    raise _NumberRejected(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float,
                            parse_constant=_reject_constant, strict=True)
_JSON_WS = b" \t\n\r"


def has_negative_zero(data: bytes) -> bool:
    """Whether ``data`` may hold the integer token ``-0`` (outside strings, usually).

    A cheap scan: each ``-0`` is checked for a value position before it (start, ``[``, ``:``
    or ``,``) and a delimiter after it. A match inside a string is a harmless false positive
    (it only selects the slower exact path).
    """
    start = data.find(b"-0")
    n = len(data)
    while start != -1:
        j = start + 2
        while j < n and data[j] in _JSON_WS:
            j += 1
        if j == n or data[j] in b",]}":
            i = start - 1
            while i >= 0 and data[i] in _JSON_WS:
                i -= 1
            if i < 0 or data[i] in b"[:,":
                return True
        start = data.find(b"-0", start + 2)
    return False


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, column


def _slow_loads(text: str) -> Any:
    """The ``json``-module path with the file-level number rules. Raises :class:`JsonError`."""
    try:
        return _DECODER.decode(text)
    except _NumberRejected as exc:
        raise JsonError(NUMBER, str(exc)) from None
    except RecursionError:
        raise JsonError(TOO_DEEP, "nesting too deep") from None
    except json.JSONDecodeError as exc:
        rest = text[exc.pos:].strip()
        at_end = not rest or exc.pos >= len(text.rstrip())
        detail = exc.msg[:1].lower() + exc.msg[1:]
        detail = detail.removesuffix(" at").removesuffix(":")
        raise JsonError(INVALID_JSON, detail, line=exc.lineno, column=exc.colno,
                        at_end=at_end) from None
    except (ValueError, OverflowError) as exc:
        raise JsonError(INVALID_JSON, str(exc)[:200]) from None


def _bracket_count(data: bytes | str) -> int:
    if isinstance(data, bytes):
        return data.count(b"[") + data.count(b"{")
    return data.count("[") + data.count("{")


def _truncate_string(value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return (value[:TRUNCATED_HEAD_CHARS]
            + f"…[truncated: {len(value)} characters, sha256 {digest}]")


def _escape_pointer_token(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _walk(value: Any, max_depth: int, max_chars: int | None,
          on_truncate: Callable[[str], None] | None) -> Any:
    """Check nesting (root container = level 1) and truncate over-long strings, iteratively.

    Returns the (possibly replaced) root value.
    """
    if isinstance(value, str):
        if max_chars is not None and len(value) > max_chars:
            if on_truncate:
                on_truncate("")
            return _truncate_string(value)
        return value
    if not isinstance(value, dict | list):
        return value
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        container, depth, pointer = stack.pop()
        if depth > max_depth:
            raise JsonError(TOO_DEEP, f"nesting is deeper than {max_depth} levels")
        items = container.items() if isinstance(container, dict) else enumerate(container)
        replacements: list[tuple[Any, str]] = []
        for key, item in items:
            if isinstance(item, str):
                if max_chars is not None and len(item) > max_chars:
                    replacements.append((key, _truncate_string(item)))
                    if on_truncate:
                        on_truncate(f"{pointer}/{_escape_pointer_token(key)}")
            elif isinstance(item, dict | list):
                stack.append((item, depth + 1, f"{pointer}/{_escape_pointer_token(key)}"))
        for key, replacement in replacements:
            container[key] = replacement
    return value


def loads(data: bytes | str, limits: ImportLimits,
          on_truncate: Callable[[str], None] | None = None) -> Any:
    """Parse one JSON text (a document or one JSONL line). Raises :class:`JsonError`.

    ``data`` as bytes must be valid UTF-8 (callers decode with replacement first otherwise).
    ``on_truncate(pointer)`` is called for each string cut to ``max_value_chars``.
    """
    max_depth = min(limits.max_json_depth, ORJSON_MAX_DEPTH)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc) or "recursion" in str(exc):
            raise JsonError(TOO_DEEP, f"nesting is deeper than {max_depth} levels") from None
        if isinstance(data, bytes):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise JsonError(INVALID_JSON, f"invalid UTF-8 at byte {exc.start}") from None
        else:
            text = data
        # orjson rejects lone surrogate escapes, which the file-level rules keep.
        value = _slow_loads(text)
    else:
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        if has_negative_zero(raw):
            if _bracket_count(data) > max_depth:
                _walk(value, max_depth, None, None)  # fail before the recursive path
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            value = _slow_loads(text)
    check_depth = _bracket_count(data) > max_depth
    max_chars = limits.max_value_chars if len(data) > limits.max_value_chars else None
    if check_depth or max_chars is not None:
        value = _walk(value, max_depth if check_depth else 1 << 62, max_chars, on_truncate)
    return value


# ------------------------------------------------------------------------------ encodings


def sniff_encoding(head: bytes) -> str:
    """``utf-8``, ``utf-8-sig`` (BOM to strip), ``utf-16`` (a UTF-16 BOM)."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not head.startswith(
            codecs.BOM_UTF32_LE):
        return "utf-16"
    return "utf-8"


def open_chunks(path: str, encoding: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The file's bytes as UTF-8 chunks: BOM removed, UTF-16 transcoded on the fly."""
    with open(path, "rb") as handle:
        if encoding == "utf-8-sig":
            handle.read(3)
        if encoding == "utf-16":
            decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
            while True:
                chunk = handle.read(chunk_bytes)
                final = not chunk
                text = decoder.decode(chunk, final=final)
                if text:
                    yield text.encode("utf-8", "surrogatepass")
                if final:
                    return
        while True:
            chunk = handle.read(chunk_bytes)
            if not chunk:
                return
            yield chunk


def available_memory() -> int | None:
    """Bytes of memory the platform reports as available, or ``None`` when unknown."""
    try:
        with open("/proc/meminfo", "rb") as handle:
            for raw in handle:
                if raw.startswith(b"MemAvailable:"):
                    return int(raw.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and size > 0:
            return int(pages * size)
    except (ValueError, OSError, AttributeError):
        pass
    return None


# ------------------------------------------------------------------------------ JSONL


@dataclass(frozen=True, slots=True)
class RawLine:
    """One physical line. ``data`` is ``None`` when the line was over ``max_line_bytes``."""

    number: int
    data: bytes | None
    final_without_newline: bool = False
    length: int = 0


def iter_lines(chunks: Iterator[bytes], max_line_bytes: int) -> Iterator[RawLine]:
    """Split a byte stream on ``\\n`` only, dropping one ``\\r`` before it. Lines longer than
    ``max_line_bytes`` are yielded with ``data=None`` and never held whole in memory."""
    pending: list[bytes] = []
    pending_size = 0
    skipping = False
    number = 1
    for chunk in chunks:
        parts = chunk.split(b"\n")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if skipping:
                pending_size += len(part)
            else:
                pending.append(part)
                pending_size += len(part)
                if pending_size > max_line_bytes:
                    pending = []
                    skipping = True
            if last:
                break
            # A complete line.
            if skipping:
                yield RawLine(number, None, length=pending_size)
            else:
                data = b"".join(pending)
                if data.endswith(b"\r"):
                    data = data[:-1]
                yield RawLine(number, data, length=len(data))
            pending = []
            pending_size = 0
            skipping = False
            number += 1
    if skipping:
        yield RawLine(number, None, final_without_newline=True, length=pending_size)
    elif pending_size:
        data = b"".join(pending)
        if data.endswith(b"\r"):
            data = data[:-1]
        yield RawLine(number, data, final_without_newline=True, length=len(data))


def _is_blank(data: bytes) -> bool:
    return not data.strip()


def decode_lossy(data: bytes) -> tuple[bytes, bool]:
    """``(utf-8 bytes, had_invalid)``: invalid UTF-8 sequences become U+FFFD."""
    try:
        data.decode("utf-8")
        return data, False
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace").encode("utf-8"), True


def parse_line(data: bytes, limits: ImportLimits,
               on_truncate: Callable[[str], None] | None = None) -> tuple[Any, bool]:
    """Parse one JSONL line: ``(value, had_invalid_utf8)``. Raises :class:`JsonError`."""
    try:
        return loads(data, limits, on_truncate), False
    except JsonError as first:
        if first.kind == TOO_DEEP:
            raise
        fixed, bad = decode_lossy(data)
        if not bad:
            raise
        return loads(fixed, limits, on_truncate), True


def _size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"


def iter_records(path: str, limits: ImportLimits, ctx: ImportContext, *,
                 encoding: str = "utf-8",
                 on_number_error: Callable[[int, str], None] | None = None,
                 report: bool = True) -> Iterator[Record]:
    """Stream the parsed records of a JSONL file. Bad lines are skipped and reported to
    ``ctx`` (and recorded in ``ctx.skipped_lines``); blank lines are ignored. ``report=False``
    samples silently (detection)."""
    encoding_reported = False

    def problem(severity: Any, code: str, message: str, line: int) -> None:
        if report:
            ctx.problem(severity, code, message, line=line)

    for raw in iter_lines(open_chunks(path, encoding), limits.max_line_bytes):
        if raw.data is None:
            ctx.skipped_lines[raw.number] = "line_too_long"
            problem("warning", "line_too_long",
                    f"line is {_size(raw.length)}, over the {_size(limits.max_line_bytes)} limit "
                    "(max_line_bytes); the line was skipped", raw.number)
            continue
        if _is_blank(raw.data):
            continue
        truncated_at: list[str] = []
        try:
            value, bad_utf8 = parse_line(raw.data, limits, truncated_at.append)
        except JsonError as exc:
            if exc.kind == TOO_DEEP:
                ctx.skipped_lines[raw.number] = TOO_DEEP
                problem("warning", TOO_DEEP,
                        f"line is nested deeper than "
                        f"{min(limits.max_json_depth, ORJSON_MAX_DEPTH)} levels "
                        "(max_json_depth); the line was skipped", raw.number)
            elif raw.final_without_newline:
                ctx.skipped_lines[raw.number] = "truncated_line"
                problem("warning", "truncated_line",
                        f"the last line has no newline and is not valid JSON ({exc.detail}"
                        f"{exc.where(with_line=False)}) — the file looks truncated; "
                        "the line was skipped", raw.number)
            else:
                ctx.skipped_lines[raw.number] = "invalid_json_line"
                problem("warning", "invalid_json_line",
                        f"line is not valid JSON ({exc.detail}{exc.where(with_line=False)}); "
                        "the line was skipped", raw.number)
            if exc.kind == NUMBER and on_number_error is not None:
                on_number_error(raw.number, exc.detail)
            continue
        if bad_utf8 and not encoding_reported:
            encoding_reported = True
            problem("warning", "encoding",
                    "invalid UTF-8 bytes (first on this line) were replaced with U+FFFD",
                    raw.number)
        if truncated_at:
            problem("info", "value_truncated",
                    f"{len(truncated_at)} string value(s) longer than {limits.max_value_chars:,} "
                    "characters (max_value_chars) were replaced by a head and a sha256 digest",
                    raw.number)
        yield Record(raw.number, value)


# ------------------------------------------------------------------------------ documents


@dataclass
class DocumentText:
    """A whole file decoded for parsing: UTF-8 bytes (or str after lossy decoding)."""

    data: bytes
    bad_utf8_line: int | None = None
    utf16: bool = False
    bom: bool = False


def read_text_bytes(path: str, encoding: str) -> DocumentText:
    """Read a whole (size-checked) file as UTF-8 bytes, fixing the encoding."""
    with open(path, "rb") as handle:
        raw = handle.read()
    if encoding == "utf-16":
        return DocumentText(raw.decode("utf-16", "replace").encode("utf-8", "surrogatepass"),
                            utf16=True)
    bom = False
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[3:]
        bom = True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        return DocumentText(raw.decode("utf-8", "replace").encode("utf-8"), line, bom=bom)
    return DocumentText(raw, bom=bom)


def read_document(data: bytes, limits: ImportLimits,
                  on_truncate: Callable[[str], None] | None = None) -> Any:
    """Parse a whole document (already size-checked and UTF-8). Raises :class:`JsonError`."""
    return loads(data, limits, on_truncate)


_WS = " \t\n\r"


def salvage_array(data: bytes, limits: ImportLimits) -> tuple[list[Any], int] | None:
    """Decode the complete leading elements of a truncated top-level array.

    Returns ``(elements, count)`` or ``None`` when the data is not an array or no element is
    complete. Each element obeys the same depth and number rules as a whole document.
    """
    text = data.decode("utf-8", "replace")
    i = 0
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    if i >= n or text[i] != "[":
        return None
    i += 1
    elements: list[Any] = []
    max_depth = min(limits.max_json_depth, ORJSON_MAX_DEPTH) - 1
    while True:
        while i < n and text[i] in _WS:
            i += 1
        if i >= n or text[i] == "]":
            break
        try:
            value, end = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            break
        try:
            value = _walk(value, max(max_depth, 0), limits.max_value_chars, None)
        except JsonError:
            break
        elements.append(value)
        i = end
        while i < n and text[i] in _WS:
            i += 1
        if i < n and text[i] == ",":
            i += 1
            continue
        break
    if not elements:
        return None
    return elements, len(elements)
