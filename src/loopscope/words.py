"""Counts in words, as a person reads them: "1 session", "2 sessions", "1,204 tool calls".

One helper for every text a person reads (the CLI, the dashboard, reports, import messages),
so no text says "session(s)": a count picks its own singular or plural. Pure, no dependency.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["join_words", "plural"]


def plural(count: int, one: str, many: str | None = None) -> str:
    """``count`` with the word that fits it: ``plural(1, "session")`` → "1 session",
    ``plural(2, "entry", "entries")`` → "2 entries" (thousands separated: "20,000 sessions").
    ``many`` defaults to ``one`` + "s"; when ``one`` is several words, the first is the noun
    (``plural(2, "file was", "files were")``)."""
    return f"{count:,} {one if count == 1 else (many if many is not None else one + 's')}"


def join_words(parts: Sequence[str], last: str = "and") -> str:
    """"a", "a and b", "a, b and c": a list as a sentence says it."""
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + f" {last} " + parts[-1]
