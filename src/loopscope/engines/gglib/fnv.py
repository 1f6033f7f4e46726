"""FNV-1a, 64-bit, over the UTF-8 bytes of a string: gglib hashes per-call signatures and prose
replies with it.

The hot path uses the C implementation of the ``fnv-c`` package (``fnv_c.fnv1a_64``) when it is
installed: it is verified at import time against known FNV-1a vectors and falls back to the pure
Python loop below if it is missing or disagrees. The fallback is exact but processes one byte
per iteration; FNV-1a is inherently sequential, so no stdlib primitive can do it in bulk.
Hashes are computed once per session in ``prepare`` (and memoised per distinct text there), so
the fallback only affects the first load, never a threshold re-run.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["FNV_OFFSET", "FNV_PRIME", "IMPLEMENTATION", "fnv1a_64", "fnv1a_64_bytes", "hex16"]

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_MASK = 0xFFFFFFFFFFFFFFFF
_SURROGATE = re.compile("[\ud800-\udfff]")


def _fnv1a_64_py(data: bytes) -> int:
    h = FNV_OFFSET
    prime = FNV_PRIME
    mask = _MASK
    for b in data:
        h = ((h ^ b) * prime) & mask
    return h


_VECTORS = (
    (b"", 0xCBF29CE484222325),
    (b"a", 0xAF63DC4C8601EC8C),
    (b"foobar", 0x85944171F73967E8),
    ("café".encode(), 0x48E8823ACFA40D89),
)


def _pick() -> tuple[Callable[[bytes], int], str]:
    try:
        from fnv_c import fnv1a_64 as c_impl
    except Exception:  # ImportError, or a broken cffi build
        return _fnv1a_64_py, "python"
    try:
        if all(c_impl(data) == want for data, want in _VECTORS):
            return c_impl, "fnv-c"
    except Exception:
        pass
    return _fnv1a_64_py, "python"


fnv1a_64_bytes, IMPLEMENTATION = _pick()
"""``fnv1a_64_bytes(data: bytes) -> int``; ``IMPLEMENTATION`` is ``"fnv-c"`` or ``"python"``."""


def utf8(text: str) -> bytes:
    """UTF-8 bytes; lone surrogates (which the serde loader never produces) become U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def fnv1a_64(text: str) -> int:
    """FNV-1a 64 of the UTF-8 bytes of ``text``."""
    return fnv1a_64_bytes(utf8(text))


def hex16(h: int) -> str:
    """16 lower-case hex digits, zero-padded."""
    return f"{h:016x}"
