"""Equality classes of parsed tool-call arguments under Python ``==``.

OpenHands compares actions with pydantic/Python ``==``: dicts regardless of key order, lists in
order, and numbers by value (``1 == 1.0 == True``, ``0 == False == -0.0``). :func:`canonical`
maps a value parsed by ``json.loads`` to a hashable key such that two values are ``==`` exactly
when their keys are equal, so the fast path can code each distinct action by an integer once.

NaN: ``json.loads`` returns one shared ``float('nan')`` object for every ``NaN`` it reads, and
Python's container comparisons test identity before ``==``, so inside parsed arguments (which
are always a dict) a NaN equals every other parsed NaN. The key gives them one class.

The walk is iterative: arguments nested as deeply as Python's parser allows never exhaust the
stack.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any, Final

__all__ = ["NAN_KEY", "canonical"]

NAN_KEY: Final = ("nan",)
"""The key of a NaN (containers are tagged ``"d"``/``"l"``, so no other key looks like it)."""


def _scalar(value: Any) -> Hashable:
    if isinstance(value, float):
        if value != value:
            return NAN_KEY
        if math.isfinite(value) and value.is_integer():
            return int(value)  # 1.0 == 1, -0.0 == 0
        return value
    if isinstance(value, bool):
        return int(value)  # True == 1
    return value  # str, int, None


def canonical(value: Any) -> Hashable:
    """A hashable key equal for two ``json.loads`` values exactly when they are ``==``."""
    if not isinstance(value, dict | list):
        return _scalar(value)
    # Post-order walk with an explicit stack of [container, iterator, parts, is_dict, key].
    frame: list[Any] = [value, iter(value.items() if isinstance(value, dict) else value), [],
                        isinstance(value, dict), None]
    stack: list[list[Any]] = []
    while True:
        is_dict = frame[3]
        parts = frame[2]
        descended = False
        for item in frame[1]:
            if is_dict:
                key, child = item
            else:
                key, child = None, item
            if isinstance(child, dict | list):
                stack.append(frame)
                frame = [child, iter(child.items() if isinstance(child, dict) else child), [],
                         isinstance(child, dict), key]
                descended = True
                break
            parts.append((key, _scalar(child)) if is_dict else _scalar(child))
        if descended:
            continue
        done: Hashable = ("d", frozenset(parts)) if is_dict else ("l", tuple(parts))
        if not stack:
            return done
        key = frame[4]
        frame = stack.pop()
        frame[2].append((key, done) if frame[3] else done)
