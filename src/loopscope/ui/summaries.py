"""The guard comparison over the loaded corpus: one row per guard shown.

Pure (no Streamlit): per guard, sessions refused and warned, where the first refusal lands
(median and earliest turn, counted from 1), and — where sessions are labelled — loops caught
and good sessions refused, with the guard's notes beside it (what cannot be replayed).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopscope.engines import SessionReplay, get_engine

__all__ = ["GuardRow", "guard_rows"]


@dataclass(frozen=True, slots=True)
class GuardRow:
    guard: str
    sessions: int
    refused: int
    warned: int
    median_turn: float | None
    """The median first-refusal turn of the refused sessions, counted from 1."""
    earliest_turn: int | None
    loops_labelled: int
    loops_caught: int
    good_labelled: int
    good_refused: int
    notes: str

    def as_dict(self) -> dict[str, Any]:
        share = f" ({self.refused / self.sessions:.0%})" if self.sessions else ""
        labelled = self.loops_labelled or self.good_labelled
        return {
            "guard": self.guard,
            "sessions refused": f"{self.refused}{share}",
            "with warnings": self.warned,
            "first refusal, median turn": ("" if self.median_turn is None
                                           else f"{self.median_turn:g}"),
            "earliest turn": "" if self.earliest_turn is None else str(self.earliest_turn),
            "loops caught": (f"{self.loops_caught} of {self.loops_labelled}"
                             if labelled else "no labels"),
            "good sessions refused": (f"{self.good_refused} of {self.good_labelled}"
                                      if labelled else "no labels"),
            "notes": self.notes,
        }


def guard_rows(replays: Mapping[str, Sequence[SessionReplay]], labels: Mapping[str, Any],
               sources: Sequence[str], turns: Sequence[int]) -> list[GuardRow]:
    """One row per guard (``replays``: guard → its replays, aligned with ``sources``, and
    ``turns`` each session's assistant turns; ``labels``: session source → label object).
    Read from a batch run's columns when there are some: no session or replay is built."""
    from loopscope.engines.base import RunColumns
    from loopscope.experiments.metrics import Outcome, metrics_from_outcomes

    loops = sum(1 for v in labels.values() if getattr(v, "label", None) == "loop")
    good = sum(1 for v in labels.values() if getattr(v, "label", None) == "ok")
    out = []
    for name, reps in replays.items():
        engine = get_engine(name)
        if isinstance(reps, RunColumns):
            firsts, warned = reps.first_refusals(), [bool(w) for w in reps.warned]
        else:
            firsts, warned = [r.first_refusal for r in reps], [r.warned for r in reps]
        refused_turns = [f.turn + 1 for f in firsts if f is not None]
        metrics = metrics_from_outcomes(
            (Outcome(src, None if f is None else f.turn, w, t)
             for src, f, w, t in zip(sources, firsts, warned, turns, strict=True)), labels)
        out.append(GuardRow(
            engine.title, len(firsts), len(refused_turns), sum(warned),
            statistics.median(refused_turns) if refused_turns else None,
            min(refused_turns) if refused_turns else None,
            loops, metrics.loops_caught, good, metrics.false_refusals, " ".join(engine.notes)))
    return out
