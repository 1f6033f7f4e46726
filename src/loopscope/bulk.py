"""Helpers for code that builds or reads sessions in bulk (importers, engines' ``prepare``).

Kept out of :mod:`loopscope.model`, which is the data model only.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any, TypeVar

import orjson


class CollectorPaused:
    """``with CollectorPaused():`` pauses the cyclic garbage collector while session data is
    built (a file imported, a session prepared for an engine), then examines the new objects
    at once (a collection of the youngest generation).

    Such data holds no reference cycles: the collector's passes only cost time. Left running,
    it re-examines the growing set of live objects again and again; paused and resumed without
    more, it takes its first look at every new object long after the object left the CPU
    caches (about 400 ns an object, more than building it). Examined right away, while still
    cached, they cost a tenth of that, and any cyclic garbage goes at once, so memory stays
    bounded by the live data. A caller that paused the collector itself keeps it paused.
    """

    __slots__ = ("_resume",)

    def __enter__(self) -> None:
        self._resume = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._resume:
            gc.enable()
            gc.collect(0)


def without_huge_pages() -> None:
    """Stop numpy asking the kernel for transparent huge pages for its large arrays, in this
    process (numpy's own switch, the one its ``NUMPY_MADVISE_HUGEPAGE=0`` environment
    variable sets when it is imported; absent from a numpy without it: nothing happens).

    On Linux, numpy marks every new array of 4 MiB or more ``MADV_HUGEPAGE``, and under the
    kernel's default policy for such memory a first write into it may wait for the kernel to
    find or make a free 2 MiB page. An ingest joins its parts into every table's columns,
    hundreds of megabytes of new arrays written once and read in a few passes: huge pages
    save them little and the kernel's waits cost more than half of that join (the figures
    are in ``benchmarks/README.md``)."""
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is not None:
        switch(False)


_MEMO_KEY_OPTIONS = (orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
                     | orjson.OPT_PASSTHROUGH_DATETIME)


def json_memo_key(value: Any) -> bytes | None:
    """A memo key for a recorded JSON value (tool arguments, say): its JSON text, keys in their
    recorded order; ``None`` when orjson cannot write it (a lone surrogate, an integer beyond
    64 bits, a subclass, a non-string key…).

    Equal keys mean equal JSON texts, not equal values: NaN and ±Infinity are written ``null``
    like ``None``, and a UUID or an enum like its string or number. A memo must therefore keep
    the value beside its result and reuse the result only when the stored value ``==`` the new
    one (``1``, ``1.0`` and ``true`` compare equal in Python, but their keys differ).
    """
    try:
        return orjson.dumps(value, option=_MEMO_KEY_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None


_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


def keep_shared(memo: dict[_Key, _Value], key: _Key, value: _Value, *, max_entries: int) -> None:
    """Store ``value`` in a memo kept across sessions (module-level), emptied first once it
    holds ``max_entries``: bounded memory, and a full memo refills with what is repeated now.
    Called on a miss only, so it stays off the hot path."""
    if len(memo) >= max_entries:
        memo.clear()
    memo[key] = value


def memoised_by_json(value: Any, compute: Callable[[Any], _Value],
                     session_memo: dict[bytes, tuple[Any, _Value]],
                     shared_memo: dict[bytes, tuple[Any, _Value]],
                     *, max_shared_key: int, max_shared: int) -> _Value:
    """``compute(value)`` for a recorded JSON value, memoised by :func:`json_memo_key` in
    ``session_memo`` (one session's) and in ``shared_memo`` (across sessions; only keys of up to
    ``max_shared_key`` bytes, and emptied once it holds ``max_shared`` entries, so it stays
    bounded). Agents repeat their arguments, in loops above all, so most calls hit.

    A stored result is reused only when the stored value ``==`` this one: equal keys are not
    always equal values (see :func:`json_memo_key`)."""
    key = json_memo_key(value)
    if key is None:
        return compute(value)
    found = session_memo.get(key)
    if found is None:
        found = shared_memo.get(key)
        if found is None:
            found = (value, compute(value))
            if len(key) <= max_shared_key:
                keep_shared(shared_memo, key, found, max_entries=max_shared)
        session_memo[key] = found
    return found[1] if found[0] == value else compute(value)


class LazyBytes:
    """A table's string pool read piece by piece, each piece checked as it is read (a pool in
    a snapshot: :class:`loopscope.cache.KeptBytes`), where a table otherwise holds one array
    of bytes (:mod:`loopscope.engines.table`). A table reads it through :meth:`read` only, so
    reading one session reads only the pieces that session needs."""

    damaged: bool = False
    """Whether a piece failed its check (the table is then prepared again)."""

    def read(self, begin: int, end: int) -> bytes:
        """Bytes ``begin:end`` of the pool."""
        raise NotImplementedError
