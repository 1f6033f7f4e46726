"""Turns and calls as people count them: from 1.

The model, the replay, ``labels.csv`` (its ``loop_from_turn_index`` column) and every
``--json`` output hold 0-based positions: the spec's ``turn`` and ``call``, which the public
parity sets compare. Everything a person reads or types — the command line's text, the
dashboard, its reports and its verdict CSV — counts from 1, so that "turn 4" read on one
screen is "turn 4" typed into another. Every conversion between the two goes through this
module, so the surfaces cannot drift apart.

Pure: no UI, no engine.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Position", "at", "call_then_turn", "index_of", "number", "turn_and_call"]


class Position(Protocol):
    """Anything with a 0-based ``turn`` and an optional 0-based ``call`` (a first refusal,
    a step)."""

    @property
    def turn(self) -> int: ...

    @property
    def call(self) -> int | None: ...


def number(index: int) -> int:
    """The number a person reads for the 0-based ``index`` (``0`` → ``1``)."""
    return index + 1


def index_of(shown: int) -> int:
    """The 0-based index of the number a person typed (``1`` → ``0``).

    ``ValueError`` for a number below 1: people count turns and calls from 1, so a 0 is a
    mistake (most likely a 0-based index), not the first turn.
    """
    if isinstance(shown, bool) or not isinstance(shown, int):
        raise ValueError(f"a turn or call number must be a whole number, not {shown!r}")
    if shown < 1:
        raise ValueError(f"turns and calls count from 1 (as the replay prints them), not {shown}")
    return shown - 1


def turn_and_call(turn: int, call: int | None = None) -> str:
    """``turn 4, call 4`` (``turn 4`` for a step without a call), from 0-based positions."""
    text = f"turn {number(turn)}"
    return text if call is None else f"{text}, call {number(call)}"


def call_then_turn(turn: int, call: int | None = None) -> str:
    """``call 4 (turn 3)`` (``turn 3`` for a step without a call), from 0-based positions."""
    if call is None:
        return f"turn {number(turn)}"
    return f"call {number(call)} (turn {number(turn)})"


def at(position: Position) -> str:
    """:func:`turn_and_call` of a first refusal or a step."""
    return turn_and_call(position.turn, position.call)
