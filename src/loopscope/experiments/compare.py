"""Configuration A against configuration B: which sessions gain, lose or move a refusal.

A session's *outcome* is its first refusal (turn, call, detector) or none. Comparing two
replays of the same session gives one of:

* ``gained`` — B refuses a session A let through;
* ``lost`` — B lets through a session A refused;
* ``moved`` — both refuse, at a different point or by a different detector;
* ``same`` — the outcome is identical (not listed, only counted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from loopscope.engines import get_engine

if TYPE_CHECKING:
    from loopscope.engines.base import FirstRefusal, RunColumns, SessionReplay
    from loopscope.model import Session

__all__ = ["Change", "CompareResult", "SessionChange", "classify", "compare", "compare_columns",
           "compare_replays"]

Change = Literal["gained", "lost", "moved", "same"]


def classify(a: FirstRefusal | None, b: FirstRefusal | None) -> Change:
    """How the outcome changed from ``a`` to ``b``."""
    if a == b:
        return "same"
    if a is None:
        return "gained"
    if b is None:
        return "lost"
    return "moved"


@dataclass(frozen=True, slots=True)
class SessionChange:
    """One session whose outcome differs between A and B."""

    source: str
    session: str
    a: FirstRefusal | None
    b: FirstRefusal | None
    change: Change

    def to_json(self) -> dict[str, Any]:
        """One line of ``loopscope compare --json``."""
        return {
            "source": self.source,
            "a": None if self.a is None else self.a.to_json(),
            "b": None if self.b is None else self.b.to_json(),
            "change": self.change,
        }


@dataclass(frozen=True, slots=True)
class CompareResult:
    """Every changed session, in corpus order, and how many sessions fell in each class."""

    changes: tuple[SessionChange, ...]
    same: int

    def count(self, change: Change) -> int:
        if change == "same":
            return self.same
        return sum(1 for c in self.changes if c.change == change)

    @property
    def summary(self) -> dict[str, int]:
        return {k: self.count(k) for k in ("gained", "lost", "moved", "same")}

    def summary_json(self) -> dict[str, Any]:
        """The closing line of ``loopscope compare --json``."""
        return {"summary": self.summary}

    def __iter__(self) -> Iterator[SessionChange]:
        return iter(self.changes)


def compare_replays(
    pairs: Iterable[tuple[SessionReplay, SessionReplay]],
) -> CompareResult:
    """Compare already-computed replays, given as ``(a, b)`` pairs of the same session."""

    def rows() -> Iterator[tuple[str, str, FirstRefusal | None, FirstRefusal | None]]:
        for ra, rb in pairs:
            if ra.source != rb.source:
                raise ValueError(f"not the same session: {ra.source!r} vs {rb.source!r}")
            yield ra.source, ra.session, ra.first_refusal, rb.first_refusal

    return _compared(rows())


def compare_columns(a: RunColumns, b: RunColumns, sources: Sequence[str],
                    sessions: Sequence[str]) -> CompareResult:
    """:func:`compare_replays` of two batch runs of the same sessions (``sources`` and session
    ids aligned with them), read off their columns: no replay is built."""
    return _compared(zip(sources, sessions, a.first_refusals(), b.first_refusals(),
                         strict=True))


def _compared(rows: Iterable[tuple[str, str, FirstRefusal | None, FirstRefusal | None]]
              ) -> CompareResult:
    """Every (source, session id, A's first refusal, B's) classified."""
    changes: list[SessionChange] = []
    same = 0
    for source, session, fa, fb in rows:
        change = classify(fa, fb)
        if change == "same":
            same += 1
        else:
            changes.append(SessionChange(source, session, fa, fb, change))
    return CompareResult(tuple(changes), same)


def compare(
    engine: str,
    sessions: Iterable[Session],
    config_a: Any,
    config_b: Any,
    *,
    progress: Callable[[int], object] | None = None,
) -> CompareResult:
    """Replay ``sessions`` under both configurations (preparing each session once) and compare.

    ``progress`` is called with 1 after each session.
    """
    eng = get_engine(engine)
    version_a, version_b = eng.version_of(config_a), eng.version_of(config_b)
    shared = eng.prepare_key(version_a) == eng.prepare_key(version_b)

    def pairs() -> Iterator[tuple[SessionReplay, SessionReplay]]:
        for session in sessions:
            prepared_a = eng.prepare(session, version_a)
            prepared_b = prepared_a if shared else eng.prepare(session, version_b)
            yield eng.run(prepared_a, config_a), eng.run(prepared_b, config_b)
            if progress is not None:
                progress(1)

    return compare_replays(pairs())
