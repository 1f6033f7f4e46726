"""Helpers for code that builds or reads sessions in bulk (importers, engines' ``prepare``).

Kept out of :mod:`loopscope.model`, which is the data model only.
"""

from __future__ import annotations

import gc
from typing import Any

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
