"""A whole corpus's prepared sessions as one table of columns (numpy arrays).

An engine that writes its prepared data as columns (``engine.prepared_table``, an optional,
additive part of the contract) gives the rest of loopscope a :class:`PreparedTable`: a sequence
of prepared sessions, like the list ``[engine.prepare(s) for s in sessions]``, whose data lives
in a few flat arrays instead of millions of Python objects. A session's prepared object is
decoded from the arrays only when it is read (``table[i]``: a drawn row, an opened session) and
a few hundred of them are kept; a corpus-wide re-run (``run_many``) reads the arrays directly.
Worker processes hand tables back cheaply (arrays pickle as bytes), tables of consecutive
parts of a corpus join into one (:func:`concat`), and the on-disk cache keeps a whole corpus's
tables in one file (:mod:`loopscope.cache`).

A table is described by a :data:`Schema`: every column's dtype and *axis* (the sessions, the
steps, the string pool, …: every column on one axis has that axis's length) and, when its
values are positions on another axis, that axis (``ref``). Joining tables shifts such values
by the length of that axis in the tables before; a ``starts`` column gives, for each item of
its axis, where its contiguous range of the ``ref`` axis begins (a session's steps, a string's
bytes). Strings live in one pool per table: UTF-8 bytes (lone surrogates kept) and where each
string starts. :func:`validate` checks a table against its schema before it is trusted (dtype,
lengths, every position in range, starts in order), so a damaged table is refused, never read.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from loopscope.bulk import LazyBytes
from loopscope.engines.base import KeepsDerived, packed

if TYPE_CHECKING:
    from loopscope.engines.contract import Engine

__all__ = [
    "SESSION",
    "STRINGS",
    "Column",
    "PreparedTable",
    "Schema",
    "StringPool",
    "TableError",
    "TableSpec",
    "compact_pool",
    "concat",
    "gather",
    "json_table_spec",
    "laid_out",
    "pool_schema",
    "ranges",
    "starts_of",
    "validate",
]

SESSION = "session"
"""The axis of the sessions: every schema has at least one column on it."""
STRINGS = "string"
"""The axis of the string pool (a ``ref`` of string columns)."""
_STRING_BYTES = "string_byte"


class TableError(ValueError):
    """Columns that do not form a table of their schema (damaged or foreign data)."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table (see the module docstring)."""

    dtype: str
    """A numpy dtype name (``"int32"``, ``"bool"``, ``"uint8"`` …): the column's exact dtype."""
    axis: str
    ref: str | None = None
    """The axis whose positions the values are (shifted when tables are joined)."""
    nullable: bool = False
    """With ``ref``: -1 means "none" (kept as -1 when joined)."""
    starts: bool = False
    """With ``ref``: where each item's contiguous range of ``ref`` begins (first 0, never
    decreasing; an item's range ends where the next one's begins, the last at the axis end)."""


Schema = Mapping[str, Column]


def pool_schema() -> dict[str, Column]:
    """The string pool's columns, for a schema with string columns (``ref=STRINGS``)."""
    return {"string_start": Column("int64", STRINGS, _STRING_BYTES, starts=True),
            "string_bytes": Column("uint8", _STRING_BYTES)}


class StringPool:
    """Builds a table's string pool: each distinct string once, numbered in order."""

    __slots__ = ("_codes",)

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, text: str) -> int:
        codes = self._codes
        found = codes.get(text)
        if found is None:
            found = codes[text] = len(codes)
        return found

    def codes(self, texts: Iterable[str]) -> list[int]:
        code = self.code
        return [code(t) for t in texts]

    def columns(self) -> dict[str, Any]:
        return _pool_columns([t.encode("utf-8", "surrogatepass") for t in self._codes])


def _pool_columns(encoded: list[bytes]) -> dict[str, Any]:
    """The string pool's columns of each distinct string's UTF-8 bytes, in code order."""
    starts = np.zeros(len(encoded), dtype=np.int64)
    if len(encoded) > 1:
        np.cumsum(np.fromiter(map(len, encoded[:-1]), dtype=np.int64,
                              count=len(encoded) - 1), out=starts[1:])
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return {"string_start": starts, "string_bytes": blob}


def _axis_lengths(schema: Schema, columns: Mapping[str, Any]) -> dict[str, int]:
    lengths: dict[str, int] = {}
    for name, col in schema.items():
        n = len(columns[name])
        seen = lengths.setdefault(col.axis, n)
        if seen != n:
            raise TableError(f"{name}: {n} values on the {col.axis} axis of {seen}")
    return lengths


def validate(schema: Schema, columns: Mapping[str, Any]) -> dict[str, Any]:
    """``columns`` as a table of ``schema`` (plain arrays, in schema order), or
    :class:`TableError` naming the first problem. Extra columns are refused too."""
    if set(columns) != set(schema):
        missing = sorted(set(schema) - set(columns))
        extra = sorted(set(columns) - set(schema))
        raise TableError(f"columns differ from the schema (missing {missing}, extra {extra})")
    out: dict[str, Any] = {}
    for name, col in schema.items():
        value = columns[name]
        if col.axis == _STRING_BYTES and isinstance(value, LazyBytes):
            out[name] = value  # (a pool read piece by piece, each piece checked)
            continue
        if type(value) is not np.ndarray or value.ndim != 1 or value.dtype != np.dtype(
                col.dtype):
            raise TableError(f"{name}: expected a column of {col.dtype}")
        out[name] = value
    lengths = _axis_lengths(schema, out)
    if SESSION not in lengths:
        raise TableError("no column on the session axis")
    for name, col in schema.items():
        if col.ref is None:
            continue
        if col.ref not in lengths:
            raise TableError(f"{name}: refers to an axis without columns ({col.ref})")
        value = out[name]
        if not value.size:
            continue
        limit = lengths[col.ref]
        low = -1 if col.nullable else 0
        if int(value.min()) < low or int(value.max()) > (limit if col.starts else limit - 1):
            raise TableError(f"{name}: a position outside the {col.ref} axis")
        if col.starts and (int(value[0]) != 0 or bool((value[1:] < value[:-1]).any())):
            raise TableError(f"{name}: ranges out of order")
    return out


def concat(schema: Schema, parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The tables ``parts`` (of ``schema``), one after the other, as one table: positions
    shifted by the lengths of the tables before (a -1 of a nullable column kept)."""
    if len(parts) == 1:
        return dict(parts[0])
    lengths = [_axis_lengths(schema, part) for part in parts]
    out: dict[str, Any] = {}
    for name, col in schema.items():
        arrays = []
        shift = 0
        for part, sizes in zip(parts, lengths, strict=True):
            value = part[name]
            if col.ref is not None and shift:
                if col.nullable:
                    value = np.where(value >= 0, value + shift, value).astype(value.dtype)
                else:
                    value = value + np.asarray(shift, dtype=value.dtype)
            arrays.append(value)
            if col.ref is not None:
                shift += sizes.get(col.ref, 0)
        out[name] = (np.concatenate(arrays).astype(col.dtype, copy=False) if arrays
                     else np.zeros(0, dtype=col.dtype))
    return out


def ranges(starts: Any, ends: Any) -> Any:
    """The positions of the ranges ``starts[k] .. ends[k] - 1``, one range after the other."""
    lengths = ends - starts
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offsets = starts_of(lengths)
    return np.arange(total, dtype=np.int64) - np.repeat(offsets - starts, lengths)


def starts_of(counts: Any) -> Any:
    """Where each of the ranges of ``counts`` lengths, laid one after the other, starts
    (int64): the ``starts`` column of an axis whose ranges the sessions own."""
    out = np.zeros(len(counts), dtype=np.int64)
    if len(counts) > 1:
        np.cumsum(counts[:-1], out=out[1:])
    return out


def gather(schema: Schema, columns: Mapping[str, Any], sessions: Any) -> dict[str, Any]:
    """The table of the sessions ``sessions`` (indices, in the order given; each at most once)
    of ``columns``: every axis whose ranges the sessions own (a ``starts`` column on the
    session axis) is gathered and its starts rebuilt; other axes (the string pool) are kept
    whole. (A schema's other positions may only point into axes kept whole.)"""
    sessions = np.asarray(sessions, dtype=np.int64)
    lengths = _axis_lengths(schema, columns)
    owned: dict[str, str] = {name: col.ref for name, col in schema.items()
                             if col.axis == SESSION and col.starts and col.ref is not None}
    picked: dict[str, Any] = {SESSION: sessions}
    new_starts: dict[str, Any] = {}
    for name, axis in owned.items():
        begin = np.asarray(columns[name], dtype=np.int64)
        end = np.append(begin[1:], lengths.get(axis, 0))
        b, e = begin[sessions], end[sessions]
        picked[axis] = ranges(b, e)
        new_starts[name] = starts_of(e - b)
    out: dict[str, Any] = {}
    for name, col in schema.items():
        if name in new_starts:
            out[name] = new_starts[name].astype(col.dtype)
        elif col.axis in picked:
            out[name] = np.asarray(columns[name])[picked[col.axis]]
        else:
            out[name] = columns[name]
    return out


def unique_codes(values: Any, size: int) -> tuple[Any, Any]:
    """``np.unique(values, return_inverse=True)`` for codes known to lie in ``0 .. size-1``
    (string-pool references of a validated table): a pass over a presence map instead of a
    sort, linear instead of n log n in the steps of a large corpus's first re-run."""
    values = np.asarray(values)
    present = np.zeros(size, dtype=np.bool_)
    present[values] = True
    codes = np.flatnonzero(present).astype(values.dtype)
    rank = np.cumsum(present, dtype=np.int64) - 1
    return codes, rank[values]


def compact_pool(schema: Schema, columns: Mapping[str, Any]) -> dict[str, Any]:
    """``columns`` with a string pool holding only the strings some column refers to (after
    :func:`gather` dropped sessions)."""
    refs = [name for name, col in schema.items() if col.ref == STRINGS]
    if not refs or "string_start" not in columns:
        return dict(columns)
    used = np.unique(np.concatenate([np.asarray(columns[name], dtype=np.int64)
                                     for name in refs]))
    used = used[used >= 0]
    starts = np.asarray(columns["string_start"], dtype=np.int64)
    blob = columns["string_bytes"]
    ends = np.append(starts[1:], len(blob))
    b, e = starts[used], ends[used]
    new_starts = np.zeros(len(used), dtype=np.int64)
    if len(used) > 1:
        np.cumsum((e - b)[:-1], out=new_starts[1:])
    out = dict(columns)
    out["string_start"] = new_starts
    out["string_bytes"] = np.asarray(blob)[ranges(b, e)]
    for name in refs:
        value = np.asarray(columns[name])
        mapped = np.searchsorted(used, value).astype(value.dtype)
        out[name] = np.where(value >= 0, mapped, value).astype(value.dtype) if (
            schema[name].nullable) else mapped
    return out


def empty(schema: Schema) -> dict[str, Any]:
    """A table of no session."""
    return {name: np.zeros(0, dtype=col.dtype) for name, col in schema.items()}


KEEP_DECODED = 1024
"""Decoded sessions a table keeps (the rows drawn and sessions opened are read again and
again; a page that reads every session once should read the columns instead)."""


class PreparedTable(Sequence[Any], KeepsDerived):
    """Prepared sessions as columns (see the module docstring); ``table[i]`` is session ``i``'s
    prepared object, decoded when first read (``decode(table, i)``, the engine's) and kept
    among the last :data:`KEEP_DECODED` read.

    :attr:`derived` keeps what an engine derives from the whole table (its arrays for
    ``run_many``), as :class:`~loopscope.engines.base.PreparedSessions` does.
    """

    __slots__ = ("_decode", "_decoded", "_keep", "_lock", "_strings", "columns", "derived",
                 "engine", "key", "schema")

    def __init__(self, engine: str, key: str, schema: Schema, columns: Mapping[str, Any],
                 decode: Callable[[PreparedTable, int], Any],
                 keep: int | None = KEEP_DECODED) -> None:
        self.engine = engine
        """The engine's name."""
        self.key = key
        """The engine's prepare key the data was prepared for."""
        self.schema = schema
        self.columns: dict[str, Any] = dict(columns)
        self.derived: dict[Any, Any] = {}
        self._decode = decode
        self._keep = keep
        """Decoded sessions kept (None: all)."""
        self._decoded: OrderedDict[int, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._strings: dict[int, str] = {}

    def __len__(self) -> int:
        for name, col in self.schema.items():
            if col.axis == SESSION:
                return len(self.columns[name])
        return 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = int(index)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(index)
        with self._lock:
            found = self._decoded.get(i)
            if found is not None:
                self._decoded.move_to_end(i)
                return found
        found = self._decode(self, i)
        with self._lock:
            self._decoded[i] = found
            keep = self._keep
            while keep is not None and len(self._decoded) > keep:
                self._decoded.popitem(last=False)
        return found

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<PreparedTable {self.engine}/{self.key}: {len(self)} sessions>"

    @property
    def nbytes(self) -> int:
        return sum(int(v.nbytes) for v in self.columns.values())

    # ------------------------------------------------------------------ reading

    def span(self, starts: str, i: int) -> tuple[int, int]:
        """Item ``i``'s range ``(begin, end)`` of the axis its ``starts`` column refers to."""
        column = self.columns[starts]
        begin = int(column[i])
        if i + 1 < len(column):
            return begin, int(column[i + 1])
        ref = self.schema[starts].ref
        return begin, self.axis_length(ref) if ref is not None else begin

    def axis_length(self, axis: str) -> int:
        for name, col in self.schema.items():
            if col.axis == axis:
                return len(self.columns[name])
        return 0

    def string(self, code: int) -> str:
        """String ``code`` of the pool."""
        found = self._strings.get(code)
        if found is None:
            begin, end = self.span("string_start", code)
            found = _pool_reader(self.columns["string_bytes"])(begin, end).decode(
                "utf-8", "surrogatepass")
            if len(self._strings) > 200_000:
                self._strings.clear()
            self._strings[code] = found
        return found

    def strings(self, codes: Sequence[int]) -> list[str]:
        """Strings ``codes`` of the pool, sliced in one pass (not kept: for reading many once,
        as a table's first re-run does)."""
        starts = self.columns["string_start"]
        if not len(codes):
            return []
        at = np.asarray(codes, dtype=np.int64)
        # Each string ends where the next begins, the last at the pool's end: looked up for
        # ``codes`` only (a table's whole ``starts`` copied per call made reading every
        # session of a corpus quadratic in its size).
        after = at + 1
        last = after >= len(starts)
        ends = starts[np.where(last, 0, after)]
        if last.any():
            ends[last] = self.axis_length(_STRING_BYTES)
        read = _pool_reader(self.columns["string_bytes"])
        return [read(b, e).decode("utf-8", "surrogatepass")
                for b, e in zip(starts[at].tolist(), ends.tolist(), strict=True)]


def _pool_reader(pool: Any) -> Callable[[int, int], bytes]:
    """``read(begin, end)``: bytes of a string pool, an array or a pool read piece by piece
    from a snapshot (only the pieces asked for: :class:`loopscope.cache.KeptBytes`)."""
    if isinstance(pool, LazyBytes):
        return pool.read
    blob = np.ascontiguousarray(pool).data
    return lambda begin, end: bytes(blob[begin:end])


@dataclass(frozen=True, slots=True)
class TableSpec:
    """How an engine writes and reads its prepared data of one prepare key as a table
    (``engine.table_spec(version)``)."""

    engine: str
    key: str
    """The prepare key."""
    schema: Schema
    encode: Callable[[Sequence[Any]], Mapping[str, Any]]
    """Prepared sessions → columns (in order)."""
    decode: Callable[[PreparedTable, int], Any]
    """Session ``i`` of a table → its prepared object."""
    check: Callable[[PreparedTable], None] | None = None
    """What decoding relies on beyond the schema (raises :class:`TableError`)."""
    keep_all: bool = False
    """Keep every decoded session (engines that run session by session read them all on
    every re-run), instead of the last :data:`KEEP_DECODED`."""

    def table(self, prepared: Sequence[Any]) -> PreparedTable:
        """``prepared`` as a table."""
        return self.open(self.encode(prepared), trusted=True)

    def open(self, columns: Mapping[str, Any], *, trusted: bool = False) -> PreparedTable:
        """A table of ``columns``; unless ``trusted`` (written by this process or its workers),
        validated first (:class:`TableError`)."""
        keep = None if self.keep_all else KEEP_DECODED
        if trusted:
            return PreparedTable(self.engine, self.key, self.schema, columns, self.decode, keep)
        table = PreparedTable(self.engine, self.key, self.schema,
                              validate(self.schema, columns), self.decode, keep)
        if self.check is not None:
            self.check(table)
        return table

    def join(self, parts: Sequence[Mapping[str, Any]]) -> PreparedTable:
        """Tables' columns written by :meth:`encode` (this process's or its workers'), one
        after the other, as one table."""
        if not parts:
            return self.table([])
        return self.open(concat(self.schema, parts), trusted=True)


JSON_SCHEMA: dict[str, Column] = {
    "data": Column("int32", SESSION, STRINGS),
    **pool_schema(),
}
"""The table of an engine with a JSON codec only: each session's ``encode_prepared`` JSON as
one pool string."""


def json_table_spec(engine: Engine[Any, Any], version: str | None = None, *,
                    columns: Schema | None = None,
                    encode_columns: Callable[[Sequence[Any]], Mapping[str, Any]] | None = None,
                    check: Callable[[PreparedTable], None] | None = None) -> TableSpec:
    """A table spec for an engine whose prepared data has a JSON codec (``encode_prepared`` /
    ``decode_prepared``): one JSON text per session (what ``table[i]`` decodes).

    Without ``columns``, that is all: such an engine runs session by session, so its tables
    keep every session once decoded (:attr:`PreparedTable.keep_all`). An engine may add
    columns of its own (``columns``, written by ``encode_columns``; they must not use the
    names of :data:`JSON_SCHEMA`) for a vectorised ``run_many``; its tables then keep only the
    last :data:`KEEP_DECODED` sessions decoded, like any table with columns."""

    def encode(prepared: Sequence[Any]) -> dict[str, Any]:
        # The pool of StringPool, kept as the UTF-8 that orjson writes: no text decoded only to
        # be encoded again (equal texts, equal bytes: the same codes).
        pool: dict[bytes, int] = {}
        setdefault = pool.setdefault
        codes = [setdefault(_dumps_utf8(engine.encode_prepared(p)), len(pool))
                 for p in prepared]
        out = {"data": np.array(codes, dtype=np.int32), **_pool_columns(list(pool))}
        if encode_columns is not None:
            out.update(encode_columns(prepared))
        return out

    def decode(table: PreparedTable, i: int) -> Any:
        text = table.string(int(table.columns["data"][i]))
        return engine.decode_prepared(_loads(text))

    schema: Schema = JSON_SCHEMA
    if columns is not None:
        if set(columns) & set(JSON_SCHEMA) or encode_columns is None:
            raise ValueError("columns need encode_columns and names of their own")
        schema = {**JSON_SCHEMA, **columns}
    return TableSpec(engine.name, engine.prepare_key(version), schema, encode, decode,
                     check=check, keep_all=columns is None)


def laid_out(prepared: Sequence[Any], engine: str, kind: type,
             layout: Callable[[Mapping[str, Any]], Any],
             columns_of: Callable[[Sequence[Any]], Mapping[str, Any]]) -> Any:
    """``layout(columns)`` for an engine's vectorised ``run_many``: the columns of a table of
    ``engine``'s, or ``columns_of(prepared)`` when ``prepared`` is a list of ``kind`` objects
    that keeps what is derived from it (:class:`~loopscope.engines.base.KeepsDerived`);
    None for anything else (a plain list is run session by session).

    The layout is made once per corpus and kept with ``prepared`` (every slider move re-runs
    the same corpus; only the configuration changes)."""
    def build(prepared: Sequence[Any]) -> Any:
        if isinstance(prepared, PreparedTable):
            return layout(prepared.columns) if prepared.engine == engine else None
        if not isinstance(prepared, KeepsDerived) or not all(type(p) is kind for p in prepared):
            return None
        return layout(columns_of(prepared))

    return packed(prepared, (engine, "layout"), build)


def _dumps_utf8(doc: Any) -> bytes:
    """``doc``'s JSON text, as UTF-8."""
    if doc is None:
        raise TableError("the engine wrote no data for a session")
    try:
        return orjson.dumps(doc)
    except TypeError:  # a lone surrogate: the standard library writes it as an escape
        return json.dumps(doc, ensure_ascii=True, allow_nan=False).encode("ascii")


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def session_of(starts: Any, total: int) -> Any:
    """For each of ``total`` items: the index of the session whose range (``starts``) holds
    it."""
    if not len(starts):
        return np.zeros(0, dtype=np.int64)
    counts = np.diff(np.append(starts, total))
    return np.repeat(np.arange(len(starts), dtype=np.int64), counts)


def local_positions(starts: Any, total: int) -> Any:
    """For each of ``total`` items: its position inside its session's range."""
    return np.arange(total, dtype=np.int64) - np.asarray(starts, dtype=np.int64)[
        session_of(starts, total)] if total else np.zeros(0, dtype=np.int64)


def first_of_each(positions: Any, owners: Any, n: int, missing: int = -1) -> Any:
    """For each of ``n`` sessions: the first of the ascending ``positions`` it owns
    (``owners[k]`` owns ``positions[k]``), else ``missing`` (int64). Positions laid session
    after session keep each session's together, so its first is where the owner changes: a
    corpus pass finds every session's first refusal without a loop over sessions."""
    first = np.full(n, missing, dtype=np.int64)
    if len(positions):
        lead = np.ones(len(positions), dtype=np.bool_)
        lead[1:] = owners[1:] != owners[:-1]
        first[owners[lead]] = positions[lead]
    return first
