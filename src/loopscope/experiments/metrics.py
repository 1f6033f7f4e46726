"""How a configuration did on a labelled corpus: refusals measured against the labels.

Positions are 0-based assistant-turn indices on both sides: ``p`` is a session's
``first_refusal.turn`` (the replay output's ``turn``) and a label's ``from_turn`` is the index
``labels.csv`` stores as ``loop_from_turn_index`` (people type and read both from 1; the
dashboard and ``loopscope label`` convert before saving, so nothing here adds or subtracts 1).
A label says a session is a real ``loop`` (starting at ``from_turn``, default 0) or ``ok``
(good work that must not be refused):

=========================  =====================================================================
``sessions``               every replayed session
``refused``                sessions with a first refusal
``warned``                 sessions with at least one ``warn`` step
``false_refusals``         ``ok`` sessions that were refused
``turns_lost``             summed over false refusals: assistant turns in the session − ``p``
``loops_caught``           ``loop`` sessions refused at ``p ≥ from_turn``
``wasted_turns``           summed over caught loops: ``p − from_turn``
``refused_early``          ``loop`` sessions refused before the loop began (``p < from_turn``)
``loops_missed``           ``loop`` sessions never refused
``precision``              caught / (caught + false_refusals + refused_early); ``None`` if 0/0
``recall``                 caught / labelled loops; ``None`` when nothing is labelled a loop
=========================  =====================================================================

Unlabelled sessions count only in ``sessions``, ``refused`` and ``warned``.

The counts are additive over disjoint sets of sessions (:meth:`Metrics.__add__`), which is
what lets a sweep compute them in pieces on several workers and still get the same answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from loopscope.engines.base import RunColumns, SessionReplay
    from loopscope.model import Session

__all__ = [
    "METRIC_NAMES",
    "LabelLike",
    "Metrics",
    "Outcome",
    "compute_metrics",
    "metrics_from_outcomes",
    "metrics_of_columns",
    "outcome_of",
    "outcomes_of_columns",
]

LabelValue = Literal["loop", "ok"]


class LabelLike(Protocol):
    """What the metrics read from a label (``loopscope.labels`` provides the real one)."""

    @property
    def label(self) -> str:
        """``"loop"`` or ``"ok"``; anything else counts as unlabelled."""
        ...

    @property
    def from_turn(self) -> int | None:
        """The 0-based index of the assistant turn a loop starts at; ``None`` means 0."""
        ...


@dataclass(frozen=True, slots=True)
class Outcome:
    """The little a metric needs to know about one replayed session.

    A sweep ships these between processes instead of whole replays.
    """

    source: str
    refused_turn: int | None
    """``first_refusal.turn``, or ``None`` when the session was not refused."""
    warned: bool
    turns: int
    """Assistant turns in the session (for ``turns_lost``)."""


def outcome_of(replay: SessionReplay, turns: int) -> Outcome:
    """The outcome of one replay of a session with ``turns`` assistant turns."""
    fr = replay.first_refusal
    return Outcome(replay.source, None if fr is None else fr.turn, replay.warned, turns)


@dataclass(frozen=True, slots=True)
class Metrics:
    """The labels-based metrics of one engine and configuration over a corpus."""

    sessions: int = 0
    """Sessions replayed."""
    refused: int = 0
    """Sessions with a first refusal."""
    warned: int = 0
    """Sessions with at least one warning."""
    false_refusals: int = 0
    """Sessions labelled ``ok`` that were refused."""
    turns_lost: int = 0
    """Assistant turns after (and including) a false refusal, summed over false refusals."""
    loops_caught: int = 0
    """Sessions labelled ``loop`` refused at or after the turn the loop starts."""
    wasted_turns: int = 0
    """Turns from the start of a loop to its refusal, summed over caught loops."""
    refused_early: int = 0
    """Sessions labelled ``loop`` refused before the loop started."""
    loops_missed: int = 0
    """Sessions labelled ``loop`` never refused."""
    labelled_loops: int = 0
    """Sessions labelled ``loop`` (the recall denominator); not part of the JSON output."""

    @property
    def precision(self) -> float | None:
        """Caught loops over every refusal of a labelled session; ``None`` when there is none."""
        denominator = self.loops_caught + self.false_refusals + self.refused_early
        return None if denominator == 0 else self.loops_caught / denominator

    @property
    def recall(self) -> float | None:
        """Caught loops over labelled loops; ``None`` when no session is labelled a loop."""
        return None if self.labelled_loops == 0 else self.loops_caught / self.labelled_loops

    def __add__(self, other: Metrics) -> Metrics:
        """The metrics of two disjoint sets of sessions together."""
        if not isinstance(other, Metrics):
            return NotImplemented
        return Metrics(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def to_json(self) -> dict[str, Any]:
        """The ``metrics`` object of ``loopscope sweep --json``: every count under its field's
        name, in field order, but the recall denominator, then the two ratios."""
        counts = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "labelled_loops"}
        return {**counts, "precision": self.precision, "recall": self.recall}


METRIC_NAMES: tuple[str, ...] = tuple(Metrics().to_json())
"""The keys of :meth:`Metrics.to_json`, in output order."""


def _label_parts(label: LabelLike | None) -> tuple[str | None, int]:
    if label is None:
        return None, 0
    value = label.label
    if value not in ("loop", "ok"):
        return None, 0
    start = label.from_turn
    return value, 0 if start is None else start


def metrics_from_outcomes(
    outcomes: Iterable[Outcome], labels: Mapping[str, LabelLike]
) -> Metrics:
    """Count ``outcomes`` against ``labels`` (keyed by session ``source``)."""
    n = refused = warned = false_refusals = turns_lost = 0
    caught = wasted = early = missed = loops = 0
    for o in outcomes:
        n += 1
        p = o.refused_turn
        if p is not None:
            refused += 1
        if o.warned:
            warned += 1
        kind, start = _label_parts(labels.get(o.source))
        if kind == "ok":
            if p is not None:
                false_refusals += 1
                turns_lost += o.turns - p
        elif kind == "loop":
            loops += 1
            if p is None:
                missed += 1
            elif p >= start:
                caught += 1
                wasted += p - start
            else:
                early += 1
    return Metrics(
        sessions=n,
        refused=refused,
        warned=warned,
        false_refusals=false_refusals,
        turns_lost=turns_lost,
        loops_caught=caught,
        wasted_turns=wasted,
        refused_early=early,
        loops_missed=missed,
        labelled_loops=loops,
    )


def outcomes_of_columns(replays: RunColumns, sources: Sequence[str],
                        turns: Sequence[int]) -> list[Outcome]:
    """Every session's outcome read off a batch run's columns (no replay built: at 20,000
    sessions building them costs seconds), aligned with ``sources`` and ``turns``. The same as
    :func:`outcome_of` of each replay (a test)."""
    turn, _call, _detector, _names = replays.first_refusal_columns()
    return [Outcome(source, None if t < 0 else t, w, n) for source, t, w, n in zip(
        sources, turn.tolist(), replays.warned.tolist(), turns, strict=True)]


def metrics_of_columns(replays: RunColumns, labels: Mapping[str, LabelLike],
                       sources: Sequence[str], turns: Sequence[int]) -> Metrics:
    """:func:`compute_metrics` of a batch run, read off its columns."""
    return metrics_from_outcomes(outcomes_of_columns(replays, sources, turns), labels)


def compute_metrics(
    replays: Iterable[SessionReplay],
    labels: Mapping[str, LabelLike],
    sessions: Iterable[Session] | Mapping[str, int],
) -> Metrics:
    """The metrics of ``replays`` (one per session) against ``labels``.

    ``sessions`` supplies each session's number of assistant turns, for ``turns_lost``: the
    sessions themselves, or a mapping ``source → turns``.
    """
    if isinstance(sessions, Mapping):
        turns: Mapping[str, int] = sessions
    else:
        turns = {s.source: len(s.turns) for s in sessions}
    return metrics_from_outcomes((outcome_of(r, turns[r.source]) for r in replays), labels)
