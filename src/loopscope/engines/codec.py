"""Checks shared by the engines' codecs for prepared data (``encode``/``decode`` in each
engine's ``fast.py``): the on-disk cache and the ingest workers hand prepared sessions over as
JSON-ready columns, and a decoder trusts none of them — damaged or foreign data raises
:class:`CodecError` and the session is prepared again instead."""

from __future__ import annotations

from typing import Any

__all__ = ["CodecError", "int_list", "ints_at", "require_strings", "str_list", "strs_at"]


class CodecError(ValueError):
    """Columns that a decoder cannot turn into a prepared session."""


def int_list(value: Any, what: str, n: int | None, lo: int, hi: int | None) -> list[int]:
    """``value`` if it is a list of ``n`` (any number if ``None``) integers from ``lo`` to
    ``hi`` (unbounded if ``None``); otherwise :class:`CodecError` naming ``what``."""
    if type(value) is not list or (n is not None and len(value) != n):
        raise CodecError(f"{what}: expected a list of {n} integers")
    # (type, min and max run in C: validating a cache entry must cost little next to reading it)
    if value and (set(map(type, value)) != {int} or min(value) < lo
                  or (hi is not None and max(value) > hi)):
        raise CodecError(f"{what}: expected integers from {lo} to {hi}")
    return value


def ints_at(doc: dict[str, Any], key: str, n: int | None, lo: int, hi: int | None) -> list[int]:
    """:func:`int_list` of ``doc[key]``."""
    return int_list(doc.get(key), key, n, lo, hi)


def str_list(value: Any, what: str, n: int | None = None) -> list[str]:
    """``value`` if it is a list of ``n`` (any number if ``None``) strings."""
    if type(value) is not list or (n is not None and len(value) != n) or any(
            type(v) is not str for v in value):
        raise CodecError(f"{what}: expected a list of strings")
    return value


def strs_at(doc: dict[str, Any], key: str, n: int | None = None) -> list[str]:
    """:func:`str_list` of ``doc[key]``."""
    return str_list(doc.get(key), key, n)


def require_strings(doc: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """``doc`` if it is an object whose ``keys`` all hold strings."""
    if type(doc) is not dict:
        raise CodecError("expected an object")
    for key in keys:
        if type(doc.get(key)) is not str:
            raise CodecError(f"{key}: expected a string")
    return doc
