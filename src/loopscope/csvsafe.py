"""CSV cells that a spreadsheet program will not run as formulas.

Session content (tool names, file names, error texts) and notes reach the CSV files loopscope
writes (``labels.csv``, the verdict report). A spreadsheet that opens one treats a cell that
starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage return before one) as a formula:
``=HYPERLINK("https://…")`` or ``=cmd|' /c calc'!A1`` would run on the reader's machine. Every
CSV loopscope writes goes through :func:`writer`, which does what OWASP's "CSV Injection" page
recommends: such a cell gets a single quote in front (``'=SUM(A1)``), so the program shows it as
text and a person still reads the value.

So that a value read back is the value written (a label's ``source`` must match its session
file again), the quote is reversible: :func:`neutralise` also quotes a value that already
*looks* quoted (quotes followed by a trigger, ``'=x`` → ``''=x``), and :func:`restore` removes
exactly one quote from a cell whose text after its leading quotes starts with a trigger.
``restore(neutralise(v)) == v`` for every string, and ``neutralise(restore(c)) == c`` for every
cell already neutral, so a file edited by hand and saved again does not change.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

__all__ = ["TRIGGERS", "SafeWriter", "neutralise", "restore", "writer"]

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP's list)."""


def _needs_quote(value: str) -> bool:
    return value.lstrip("'").startswith(TRIGGERS)


def neutralise(value: Any) -> Any:
    """``value`` with a leading ``'`` when a spreadsheet would read it as a formula; anything
    that is not a string (numbers loopscope computed) is returned unchanged."""
    if isinstance(value, str) and _needs_quote(value):
        return "'" + value
    return value


def restore(cell: str) -> str:
    """The value :func:`neutralise` was given: one leading ``'`` removed when it was added."""
    if cell.startswith("'") and _needs_quote(cell):
        return cell[1:]
    return cell


class SafeWriter:
    """A ``csv.writer`` whose every string cell is :func:`neutralise`-d."""

    def __init__(self, out: Any, **fmtparams: Any) -> None:
        self._writer = csv.writer(out, **fmtparams)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([neutralise(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(out: Any, **fmtparams: Any) -> SafeWriter:
    """Like ``csv.writer(out, **fmtparams)``, with formula cells neutralised."""
    return SafeWriter(out, **fmtparams)
