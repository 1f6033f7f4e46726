"""Equality classes of parsed tool-call arguments under Python ``==``.

OpenHands compares actions with pydantic/Python ``==``: dicts regardless of key order, lists in
order, and numbers by value (``1 == 1.0 == True``, ``0 == False == -0.0``). :func:`canonical`
maps a value parsed by ``json.loads`` to a flat text such that two values are ``==`` exactly
when their texts are equal, so the fast path can code each distinct action by an integer once.

* numbers: an integral finite float or a bool is written as the integer it equals (Python
  compares ints and floats exactly, so ``2**53 + 1`` and ``2.0**53`` stay apart); other floats
  by ``repr`` (which round-trips); NaN as ``n``;
* strings are length-prefixed, so no text can imitate a structure;
* an object's entries are written in key order (keys are unique strings, so equal objects give
  the same order).

NaN: ``json.loads`` returns one shared ``float('nan')`` object for every ``NaN`` it reads, and
Python's container comparisons test identity before ``==``, so inside parsed arguments (which
are always a dict) a NaN equals every other parsed NaN. The text gives them one class.

The key is a flat string and the walk is iterative: arguments nested as deeply as Python's
parser allows never exhaust the stack, neither here nor when keys are hashed or compared.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["canonical"]


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return f"s{len(value)}:{value}"
    if value is None:
        return "z"
    if isinstance(value, bool):
        return "i1;" if value else "i0;"
    if isinstance(value, int):
        return f"i{value};"
    if isinstance(value, float):
        if value != value:
            return "n"
        if math.isfinite(value) and value.is_integer():
            return f"i{int(value)};"  # 1.0 == 1, -0.0 == 0
        return f"f{value!r};"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def canonical(value: Any) -> str:
    """A text equal for two ``json.loads`` values (inside an object) exactly when they are
    ``==``."""
    if not isinstance(value, dict | list):
        return _scalar(value)
    # Post-order walk with an explicit stack of [iterator, parts, is_dict, key in parent].
    frame: list[Any] = [iter(value.items() if isinstance(value, dict) else value), [],
                        isinstance(value, dict), None]
    stack: list[list[Any]] = []
    while True:
        parts = frame[1]
        is_dict = frame[2]
        descended = False
        for item in frame[0]:
            key, child = item if is_dict else (None, item)
            if isinstance(child, dict | list):
                stack.append(frame)
                frame = [iter(child.items() if isinstance(child, dict) else child), [],
                         isinstance(child, dict), key]
                descended = True
                break
            parts.append((key, _scalar(child)) if is_dict else _scalar(child))
        if descended:
            continue
        if is_dict:
            parts.sort(key=lambda kv: kv[0])
            done = "{" + "".join(f"{len(k)}:{k}{v}" for k, v in parts) + "}"
        else:
            done = "[" + "".join(parts) + "]"
        if not stack:
            return done
        key = frame[3]
        frame = stack.pop()
        frame[1].append((key, done) if frame[2] else done)
