"""The shared JSON loader: documents, JSONL streams, encodings and bounds.

* Documents: size and memory guards, then ``orjson`` (fast path) with a ``json``-module
  fallback carrying gglib's file-level number rules, as serde_json reads (``-0`` → ``-0.0``,
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
import io
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import getitem
from typing import Any

import orjson

from loopscope.formats._construct import positional_constructor
from loopscope.formats.base import ImportContext, ImportLimits, Record
from loopscope.jsonrules.serde_json import serde_number_decoder
from loopscope.words import plural

__all__ = [
    "CHUNK_BYTES",
    "INVALID_JSON",
    "NUMBER",
    "STRAY_BACKSLASH_WARNING",
    "TOO_DEEP",
    "JsonError",
    "ParsedLine",
    "RawLine",
    "available_memory",
    "file_lines",
    "iter_lines",
    "iter_records",
    "loads",
    "open_chunks",
    "read_document",
    "salvage_array",
    "sniff_encoding",
    "with_stray_backslashes_kept",
]

CHUNK_BYTES = 1 << 20
ORJSON_MAX_DEPTH = 1024
"""orjson refuses nesting beyond this; the effective depth limit is min(max_json_depth, it)."""
TRUNCATED_HEAD_CHARS = 1_000_000

INVALID_JSON = "invalid_json"
TOO_DEEP = "too_deep"
NUMBER = "number"
"""Syntactically JSON except for a non-finite or out-of-range number, which serde_json (and so
gglib) rejects."""


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


_DECODER = serde_number_decoder(
    lambda literal: _NumberRejected(f"number out of range ({literal[:40]})"),
    lambda name: _NumberRejected(f"{name} is not a JSON number"))
_JSON_WS = b" \t\n\r"


_MINUS_ZERO_THEN_END = re.compile(rb"-(?=0[ \t\n\r]*(?:[,\]}]|\Z))")
"""``-0`` followed by JSON whitespace and the end or a delimiter. The literal ``-`` lets the
regex engine skip ahead with ``memchr``; the lookahead drops dates and such (``-05``) in C."""


_DASHES_BEFORE_SCAN = 32


def has_negative_zero(data: bytes) -> bool:
    """Whether ``data`` may hold the integer token ``-0`` (outside strings, usually).

    A cheap scan: each ``-0`` is checked for a value position before it (start, ``[``, ``:``
    or ``,``) and a delimiter after it. A match inside a string is a harmless false positive
    (it only selects the slower exact path).

    The first dashes are found with ``bytes.find`` (``memchr``, twenty times the speed of the
    regex engine's scan, which took a third as long as parsing a document); a text with many
    dashes is scanned by the regex from there on.
    """
    find = data.find
    end = len(data) - 1
    at = find(b"-")
    for _ in range(_DASHES_BEFORE_SCAN):
        if at < 0:
            return False
        if at < end and data[at + 1] == 0x30 and _MINUS_ZERO_THEN_END.match(data, at) \
                and _value_position_before(data, at):
            return True
        at = find(b"-", at + 1)
    if at < 0:
        return False
    return any(_value_position_before(data, match.start())
               for match in _MINUS_ZERO_THEN_END.finditer(data, at))


def _value_position_before(data: bytes, at: int) -> bool:
    """Whether a value may start at ``at``: only JSON whitespace after the start, ``[``, ``:``
    or ``,``."""
    i = at - 1
    while i >= 0 and data[i] in _JSON_WS:
        i -= 1
    return i < 0 or data[i] in b"[:,"


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, column


_PARTIAL_TOKEN = re.compile(r"[-+.\w\\]{1,40}")
"""What is left at the end of a text cut inside a literal, a number or an escape."""


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
        # The data ends inside a value — a truncated file — when nothing follows the error, or
        # the string that starts there is never closed (the parser reports where it starts),
        # or only the start of a literal or a number follows ("tr", "-1.", "1e").
        at_end = (not rest or exc.pos >= len(text.rstrip())
                  or exc.msg.startswith("Unterminated string")
                  or _PARTIAL_TOKEN.fullmatch(rest) is not None)
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


def _more_brackets_than(data: bytes | str, limit: int) -> bool:
    """``_bracket_count(data) > limit``, usually without reading the text byte by byte.

    A JSON Lines record holds a few dozen brackets in kilobytes of text: finding them one by
    one (``find`` is a ``memchr``) and stopping past ``limit`` costs a fraction of two
    ``count`` passes. A text dense with brackets is counted after all.
    """
    opening: tuple[bytes, bytes] | tuple[str, str] = (
        (b"[", b"{") if isinstance(data, bytes) else ("[", "{"))
    find = data.find
    worth_finding = len(data) >> 6  # more brackets than this: counting is cheaper
    found = 0
    for bracket in opening:
        at = find(bracket)  # type: ignore[arg-type]
        while at >= 0:
            found += 1
            if found > limit:
                return True
            if found > worth_finding:
                return _bracket_count(data) > limit
            at = find(bracket, at + 1)  # type: ignore[arg-type]
    return False


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


def _orjson_depth_limit_is(limit: int) -> bool:
    """Whether orjson accepts exactly ``limit`` levels of nesting (checked once, at import)."""
    try:
        orjson.loads(b"[" * limit + b"]" * limit)
    except orjson.JSONDecodeError:
        return False
    try:
        orjson.loads(b"[" * (limit + 1) + b"]" * (limit + 1))
    except orjson.JSONDecodeError:
        return True
    return False


_DEPTH_BY_WRAPPING = _orjson_depth_limit_is(ORJSON_MAX_DEPTH)
"""Whether :func:`_loads_within_depth` may be used (orjson's own limit is as expected)."""
_WRAP_WITHOUT_COUNTING = 32 * 1024
"""From this length on, a text is parsed wrapped without counting its brackets first."""
_NOT_PARSED: Any = object()
_FIRST_ELEMENT = (0,) * ORJSON_MAX_DEPTH


def _nested(depth: int, innermost: Any) -> Any:
    """``depth`` levels of nesting (the root container is level 1) around ``innermost``:
    lists, except one object in the middle (so that both kinds count)."""
    value = innermost
    for level in range(depth):
        value = {"k": value} if level == depth // 2 else [value]
    return value


def _orjson_writing_limit() -> int:
    """The deepest nesting orjson writes (it refuses to write deeper values): found once, at
    import; 0 when it is not a plain limit (then :func:`_loads_shallow` is not used)."""
    def writes(depth: int) -> bool:
        try:
            orjson.dumps(_nested(depth, 0))
        except orjson.JSONEncodeError:
            return False
        return True

    low, high = 0, ORJSON_MAX_DEPTH + 1  # writes(low) holds, writes(high) is not known yet
    if writes(high):
        return 0
    while high - low > 1:
        middle = (low + high) // 2
        if writes(middle):
            low = middle
        else:
            high = middle
    return low


_WRITING_LIMIT = _orjson_writing_limit()
"""orjson writes a value iff its nesting is at most this (254 in orjson 3)."""


def _loads_shallow(data: bytes | str, max_depth: int) -> Any:
    """Parse ``data`` with orjson and prove its nesting at most ``max_depth`` by writing the
    value back: orjson refuses to write nesting beyond :data:`_WRITING_LIMIT`, which is at
    most ``max_depth`` here. :data:`_NOT_PARSED` when this cannot tell (invalid JSON, a deeper
    value, a lower ``max_depth``…): the caller then takes the other paths.

    A parsed document holds no cycle and only what orjson writes, and writing is a fifth of
    the cost of parsing inside :func:`_loads_within_depth`'s wrapper arrays (which builds and
    checks hundreds of levels around every document).
    """
    if max_depth < _WRITING_LIMIT or not _WRITING_LIMIT:
        return _NOT_PARSED
    try:
        value = orjson.loads(data)
        orjson.dumps(value)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return _NOT_PARSED
    return value


def _loads_within_depth(data: bytes | str, max_depth: int) -> Any:
    """Parse ``data`` with orjson, which then also enforces nesting ≤ ``max_depth``; or
    :data:`_NOT_PARSED` when this cannot tell (invalid JSON, nested too deep, …): the caller
    then takes the ordinary path, which gives the exact error.

    orjson refuses nesting beyond ``ORJSON_MAX_DEPTH``. Inside ``k = ORJSON_MAX_DEPTH -
    max_depth`` extra arrays, ``data`` parses iff it is valid JSON nested at most
    ``max_depth`` deep. The wrapper is peeled off again, and each of its ``k`` levels must be an
    array of exactly one element: that rules out texts that are only valid inside an array
    (``1, 2``, an empty text, ``1], [2``). This replaces a Python walk over the whole value
    (several times the cost of the parse) for every text with more than ``max_depth`` brackets.
    """
    k = ORJSON_MAX_DEPTH - max_depth
    try:
        if isinstance(data, bytes):
            value = orjson.loads(b"[" * k + data + b"]" * k)
        else:
            value = orjson.loads("[" * k + data + "]" * k)
    except orjson.JSONDecodeError:
        return _NOT_PARSED
    if k <= 0:
        return value
    # The k wrapper levels, outermost first, walked and checked in C: a loop over hundreds of
    # levels cost more than the parse of a typical document.
    try:
        levels = list(accumulate(_FIRST_ELEMENT[:k - 1], getitem, initial=value))
    except (LookupError, TypeError):  # a level is empty, an object, a number…
        return _NOT_PARSED
    if set(map(type, levels)) != {list} or set(map(len, levels)) != {1}:
        return _NOT_PARSED
    return levels[-1][0]


def loads(data: bytes | str, limits: ImportLimits,
          on_truncate: Callable[[str], None] | None = None) -> Any:
    """Parse one JSON text (a document or one JSONL line). Raises :class:`JsonError`.

    ``data`` as bytes must be valid UTF-8 (callers decode with replacement first otherwise).
    ``on_truncate(pointer)`` is called for each string cut to ``max_value_chars``.
    """
    max_depth = min(limits.max_json_depth, ORJSON_MAX_DEPTH)
    # Nesting needs a check when the text has more brackets than max_depth. Valid JSON nested
    # deeper than max_depth holds at least 2 × (max_depth + 1) of them (every level opens and
    # closes), and nesting only matters for a text that parses: shorter texts, most JSONL lines,
    # skip the check. Counting costs two passes over the text, more than a long text's plain
    # parse proven shallow by writing it back, or its wrapped parse: those are tried first.
    value: Any = _NOT_PARSED
    check_depth = False
    if len(data) >= 2 * (max_depth + 1):
        if len(data) >= _WRAP_WITHOUT_COUNTING:
            value = _loads_shallow(data, max_depth)
            if value is _NOT_PARSED and _DEPTH_BY_WRAPPING:
                value = _loads_within_depth(data, max_depth)
            if value is _NOT_PARSED:
                check_depth = _more_brackets_than(data, max_depth)
        else:
            check_depth = _more_brackets_than(data, max_depth)
            if check_depth and _DEPTH_BY_WRAPPING:
                value = _loads_within_depth(data, max_depth)
                if value is not _NOT_PARSED:
                    check_depth = False  # orjson kept the nesting within max_depth
    try:
        if value is _NOT_PARSED:
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
        # ``b"-" in raw`` first: a memchr that rules out most lines at once.
        if b"-" in raw and has_negative_zero(raw):
            if check_depth:
                _walk(value, max_depth, None, None)  # fail before the recursive path
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            value = _slow_loads(text)
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


def open_chunks(path: str, encoding: str, chunk_bytes: int = CHUNK_BYTES,
                data: bytes | None = None) -> Iterator[bytes]:
    """The file's bytes as UTF-8 chunks: BOM removed, UTF-16 transcoded on the fly.

    ``data``, when given, is the file's content already read (detection reads small files
    once, whole): it is chunked exactly as the file would be, and ``path`` is not opened.
    """
    with io.BytesIO(data) if data is not None else open(path, "rb") as handle:
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
    for number, data, final, length in _split_lines(chunks, max_line_bytes):
        yield RawLine(number, data, final, length)


def file_lines(path: str, encoding: str, max_line_bytes: int,
               data: bytes | None = None) -> Iterator[RawLine]:
    """:func:`iter_lines` of a file (``data``: its content when already read)."""
    for number, line, final, length in _lines(path, encoding, max_line_bytes, data):
        yield RawLine(number, line, final, length)


def _lines(path: str, encoding: str, max_line_bytes: int, data: bytes | None, *,
           every: bool = False) -> Iterator[tuple[int, bytes | None, bool, int]]:
    """:func:`_split_lines` of a file; ``every``: the caller reads every line."""
    if data is not None and encoding in ("utf-8", "utf-8-sig"):
        content = data[3:] if encoding == "utf-8-sig" else data
        if every:
            return _all_memory_lines(content, max_line_bytes)
        return _memory_lines(content, max_line_bytes)
    return _split_lines(open_chunks(path, encoding, data=data), max_line_bytes)


def _all_memory_lines(content: bytes,
                      max_line_bytes: int) -> Iterator[tuple[int, bytes | None, bool, int]]:
    """:func:`_split_lines` for content held in memory, all of it read: one split in C."""
    lines = content.split(b"\n")
    last = lines.pop()  # after the last newline: a last line without one, or nothing
    number = 0
    for number, line in enumerate(lines, 1):
        length = len(line)
        if length > max_line_bytes:
            yield number, None, False, length
        elif line.endswith(b"\r"):
            yield number, line[:-1], False, length - 1
        else:
            yield number, line, False, length
    if last:
        length = len(last)
        if length > max_line_bytes:
            yield number + 1, None, True, length
        elif last.endswith(b"\r"):
            yield number + 1, last[:-1], True, length - 1
        else:
            yield number + 1, last, True, length


def _memory_lines(content: bytes,
                  max_line_bytes: int) -> Iterator[tuple[int, bytes | None, bool, int]]:
    """:func:`_split_lines` for content held in memory: the same lines, found one at a time
    (detection reads only the first lines of a file; splitting it all at once, three times,
    cost more than finding them)."""
    find = content.find
    end = len(content)
    start = 0
    number = 1
    while start < end:
        newline = find(b"\n", start)
        final = newline < 0
        stop = end if final else newline
        if stop - start > max_line_bytes:
            yield number, None, final, stop - start
        else:
            line = content[start:stop]
            if line.endswith(b"\r"):
                line = line[:-1]
            yield number, line, final, len(line)
        number += 1
        start = stop + 1


def _split_lines(chunks: Iterator[bytes],
                 max_line_bytes: int) -> Iterator[tuple[int, bytes | None, bool, int]]:
    """:func:`iter_lines` as plain tuples ``(number, data, final_without_newline, length)``.

    The lines strictly inside a chunk (the common case) are yielded straight from the split;
    only a line crossing a chunk boundary is assembled from pieces.
    """
    pending: list[bytes] = []  # the pieces of the line crossing into the next chunk
    pending_size = 0
    skipping = False  # the pending line is over max_line_bytes: pieces are counted, not kept
    number = 1
    for chunk in chunks:
        parts = chunk.split(b"\n")
        # The first piece ends the pending line (or is a line of its own).
        first = parts[0]
        pending_size += len(first)
        if not skipping:
            pending.append(first)
            if pending_size > max_line_bytes:
                pending = []
                skipping = True
        if len(parts) == 1:
            continue  # no newline in this chunk: the line goes on
        if skipping:
            yield number, None, False, pending_size
        else:
            data = pending[0] if len(pending) == 1 else b"".join(pending)
            if data.endswith(b"\r"):
                data = data[:-1]
            yield number, data, False, len(data)
        number += 1
        # Whole lines.
        for i in range(1, len(parts) - 1):
            data = parts[i]
            if len(data) > max_line_bytes:
                yield number, None, False, len(data)
            else:
                if data.endswith(b"\r"):
                    data = data[:-1]
                yield number, data, False, len(data)
            number += 1
        # The last piece starts the next line.
        tail = parts[-1]
        pending_size = len(tail)
        skipping = pending_size > max_line_bytes
        pending = [] if skipping else [tail]
    if skipping:
        yield number, None, True, pending_size
    elif pending_size:
        data = b"".join(pending)
        if data.endswith(b"\r"):
            data = data[:-1]
        yield number, data, True, len(data)


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


_STRAY_BACKSLASH = re.compile(rb'\\(.)', re.S)
_JSON_ESCAPES = frozenset(b'"\\/bfnrtu')


def parse_line_keeping_stray_backslashes(
        data: bytes, limits: ImportLimits,
        on_truncate: Callable[[str], None] | None = None,
) -> tuple[Any, bool, JsonError | None]:
    """:func:`parse_line`, and a line whose only fault is a stray backslash read as
    :func:`with_stray_backslashes_kept` says: ``(value, had_invalid_utf8, the original error or
    None)``; the caller warns with the error. Raises the original :class:`JsonError` when the
    line has another fault."""
    try:
        value, bad_utf8 = parse_line(data, limits, on_truncate)
        return value, bad_utf8, None
    except JsonError as first:
        kept = with_stray_backslashes_kept(data, first,
                                           lambda text: parse_line(text, limits, on_truncate))
        if kept is None:
            raise
        (value, bad_utf8), = kept
        return value, bad_utf8, first


def with_stray_backslashes_kept(data: bytes, error: JsonError,
                                read: Callable[[bytes], Any]) -> tuple[Any] | None:
    """``(read(data with each stray backslash doubled),)`` when ``error`` is a backslash that
    starts no JSON escape (``\\*``, ``\\'``) and the text so mended reads; else None.

    Why: GitHub's e-mail scrubbing leaves ``\\***@***.***`` where a recording it shows had
    ``\\nname@host``, and the whole line or file (a tool call, a result) was lost for one
    character. Kept as a character, the backslash is what the text shows; the caller warns
    that the file was mended and names the line."""
    if error.kind != INVALID_JSON or not error.detail.startswith("invalid \\escape"):
        return None
    kept = _STRAY_BACKSLASH.sub(
        lambda m: m.group(0) if m.group(1)[0] in _JSON_ESCAPES else b"\\" + m.group(0), data)
    try:
        return (read(kept),)
    except JsonError:
        return None


STRAY_BACKSLASH_WARNING = ("it was read with each backslash that starts no JSON escape kept "
                           "as a character")
"""How a warning of code ``invalid_escape`` ends (:func:`with_stray_backslashes_kept`)."""


def _size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return f"{n} bytes"


_new_record = positional_constructor(Record)  # Record(line, value), one per JSONL line
_NOT_TRUNCATED: tuple[str, ...] = ()

ParsedLine = tuple[Any, bool, Sequence[str]]
"""A JSONL line's parse result kept for reuse: ``(value, had_invalid_utf8, truncated_at)``."""


def _plain_loads(data: bytes, max_depth: int | None = None) -> Any:
    """:func:`parse_line` of a text too short to hold a string over ``max_value_chars`` and to
    nest deeper than allowed, or (with ``max_depth``) proven not to by :func:`_loads_shallow`:
    orjson's parse, unless orjson fails or the text may hold the number ``-0`` (see
    :func:`loads`); :data:`_NOT_PARSED` then, for the full path."""
    if max_depth is None:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return _NOT_PARSED
    else:
        value = _loads_shallow(data, max_depth)
        if value is _NOT_PARSED:
            return _NOT_PARSED
    if b"-" in data and has_negative_zero(data):
        return _NOT_PARSED
    return value


def iter_records(path: str, limits: ImportLimits, ctx: ImportContext, *,
                 encoding: str = "utf-8",
                 on_number_error: Callable[[int, str], None] | None = None,
                 report: bool = True, data: bytes | None = None,
                 parsed: dict[int, ParsedLine] | None = None,
                 recover: Callable[[bytes], tuple[list[Any], str] | None] | None = None,
                 ) -> Iterator[Record]:
    """Stream the parsed records of a JSONL file. Bad lines are skipped and reported to
    ``ctx`` (and recorded in ``ctx.skipped_lines``); blank lines are ignored. ``report=False``
    samples silently (detection).

    ``data`` is the file's content when already read (see :func:`open_chunks`). ``parsed``
    carries parse results from detection to the import, so that the sampled lines are parsed
    once: a silent pass adds every line it parses, a reporting pass takes (and removes) the
    lines it finds there instead of parsing them again. Both passes use the same limits.

    ``recover(line)`` is the format's second reading of a line that is not valid JSON (or
    breaks the number rules): ``(values, what)`` when the format's own reader would still read
    it (each value becomes a record of that line, and an info says ``what``), else ``None``.
    """
    encoding_reported = False
    truncated_at: list[str] = []
    note_truncation = truncated_at.append
    max_line_bytes = limits.max_line_bytes
    # A line shorter than this can neither nest too deep (that takes 2 × (max_depth + 1)
    # brackets) nor hold a string over max_value_chars: most lines. _plain_loads parses them,
    # and (its nesting proven within the limit as it goes) every longer line up to the length
    # of a string over max_value_chars.
    max_depth = min(limits.max_json_depth, ORJSON_MAX_DEPTH)
    plain_below = min(2 * (max_depth + 1), limits.max_value_chars + 1)
    proven_below = limits.max_value_chars + 1

    def problem(severity: Any, code: str, message: str, line: int) -> None:
        if report:
            ctx.problem(severity, code, message, line=line)

    for number, line, final, length in _lines(path, encoding, max_line_bytes, data,
                                              every=report):
        if line is None:
            ctx.skipped_lines[number] = "line_too_long"
            problem("warning", "line_too_long",
                    f"line is {_size(length)}, over the {_size(max_line_bytes)} limit "
                    "(max_line_bytes); the line was skipped", number)
            continue
        # A record line starts with "{": then it is not blank, and no stripped copy is made.
        if not line.startswith(b"{") and _is_blank(line):
            continue
        reused = None
        if parsed:
            reused = parsed.pop(number, None) if report else parsed.get(number)
        stray = None
        if reused is not None:
            value, bad_utf8, truncated = reused
        else:
            try:
                if length < plain_below:
                    value = _plain_loads(line)
                elif length < proven_below:
                    value = _plain_loads(line, max_depth)
                else:
                    value = _NOT_PARSED
                if value is not _NOT_PARSED:
                    bad_utf8 = False
                else:
                    value, bad_utf8, stray = parse_line_keeping_stray_backslashes(
                        line, limits, note_truncation)
                    if stray is not None:
                        problem("warning", "invalid_escape",
                                f"line is not valid JSON ({stray.detail}"
                                f"{stray.where(with_line=False)}); {STRAY_BACKSLASH_WARNING}",
                                number)
            except JsonError as exc:
                truncated_at.clear()
                recovered = recover(line) if recover is not None and exc.kind != TOO_DEEP \
                    else None
                if recovered is not None:
                    values, what = recovered
                    problem("info", "line_recovered", what, number)
                    for value in values:
                        yield _new_record(number, value)
                    continue
                if exc.kind == TOO_DEEP:
                    ctx.skipped_lines[number] = TOO_DEEP
                    problem("warning", TOO_DEEP,
                            f"line is nested deeper than "
                            f"{min(limits.max_json_depth, ORJSON_MAX_DEPTH)} levels "
                            "(max_json_depth); the line was skipped", number)
                elif final:
                    ctx.skipped_lines[number] = "truncated_line"
                    problem("warning", "truncated_line",
                            f"the last line has no newline and is not valid JSON ({exc.detail}"
                            f"{exc.where(with_line=False)}) — the file looks truncated; "
                            "the line was skipped", number)
                else:
                    ctx.skipped_lines[number] = "invalid_json_line"
                    problem("warning", "invalid_json_line",
                            f"line is not valid JSON ({exc.detail}{exc.where(with_line=False)}); "
                            "the line was skipped", number)
                if exc.kind == NUMBER and on_number_error is not None:
                    on_number_error(number, exc.detail)
                continue
            if truncated_at:
                truncated = truncated_at[:]
                truncated_at.clear()
            else:
                truncated = _NOT_TRUNCATED
            if parsed is not None and not report and stray is None:
                # (A line read with its stray backslashes kept is read again by the
                # reporting pass, which warns.)
                parsed[number] = (value, bad_utf8, truncated)
        if bad_utf8 and not encoding_reported:
            encoding_reported = True
            problem("warning", "encoding",
                    "invalid UTF-8 bytes (first on this line) were replaced with U+FFFD",
                    number)
        if truncated:
            problem("info", "value_truncated",
                    f"{plural(len(truncated), 'string value')} longer than "
                    f"{limits.max_value_chars:,} characters (max_value_chars) "
                    f"{'was' if len(truncated) == 1 else 'were'} replaced by a head and a sha256 "
                    "digest",
                    number)
        yield _new_record(number, value)


# ------------------------------------------------------------------------------ documents


@dataclass
class DocumentText:
    """A whole file decoded for parsing: UTF-8 bytes (or str after lossy decoding)."""

    data: bytes
    bad_utf8_line: int | None = None
    utf16: bool = False
    bom: bool = False


def read_text_bytes(path: str, encoding: str, data: bytes | None = None) -> DocumentText:
    """Read a whole (size-checked) file as UTF-8 bytes, fixing the encoding. ``data`` is the
    file's content when already read."""
    if data is not None:
        raw = data
    else:
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


def salvage_array(data: bytes, limits: ImportLimits
                  ) -> tuple[list[Any], int, tuple[int, int]] | None:
    """Decode the complete leading elements of a truncated top-level array.

    Returns ``(elements, count, (line, column))`` — where the first incomplete element starts,
    1-based, to say where the file was cut — or ``None`` when the data is not an array or no
    element is complete. Each element obeys the same depth and number rules as a whole
    document.
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
    while i < n and text[i] in _WS:
        i += 1
    return elements, len(elements), _line_col(text, min(i, n))


CONCATENATED_FAILED_TRIES = 100
""":func:`concatenated_objects` gives up after this many lines that start like an object but
do not decode (each try may read to the end of the text)."""


def concatenated_objects(data: bytes, limits: ImportLimits) -> tuple[list[Any], int] | None:
    """JSON objects written one after another, each starting a line, as a program prints them
    (OpenTelemetry's Python console exporter prints every span as indented JSON): ``(objects,
    skipped)``, where ``skipped`` counts the other non-blank lines between them (the program's
    own output, an object cut short). ``None`` when the text does not start with a complete
    object. Each object obeys the depth and string-length rules of a whole document."""
    text = data.decode("utf-8", "replace")
    n = len(text)
    max_depth = max(min(limits.max_json_depth, ORJSON_MAX_DEPTH) - 1, 0)
    objects: list[Any] = []
    skipped = failed = 0
    i = 0
    while i < n:
        while i < n and text[i] in _WS:
            i += 1
        if i >= n:
            break
        value: Any = None
        if text[i] == "{" and failed < CONCATENATED_FAILED_TRIES:
            try:
                value, end = _DECODER.raw_decode(text, i)
                value = _walk(value, max_depth, limits.max_value_chars, None)
            except (ValueError, RecursionError, JsonError):
                value = None
                failed += 1
            if isinstance(value, dict):
                objects.append(value)
                i = end
                continue
        if not objects:
            return None
        skipped += 1
        newline = text.find("\n", i)
        if newline < 0:
            break
        i = newline + 1
    return (objects, skipped) if objects else None
