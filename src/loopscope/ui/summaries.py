"""The guard comparison over the loaded corpus: one row per guard shown.

Pure (no Streamlit): per guard, sessions refused and warned, where the first refusal lands
(median and earliest turn, counted from 1), and — where sessions are labelled — loops caught
and good sessions refused, with the guard's notes beside it (what cannot be replayed).
"""

from __future__ import annotations

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
    Read from a batch run's columns when there are some: no session or replay is built, and
    only the labelled sessions are visited one by one (the page redraws this table on every
    slider move, over every loaded session)."""
    import numpy as np

    from loopscope.engines.base import RunColumns
    from loopscope.experiments.metrics import Outcome, metrics_from_outcomes

    loops = sum(1 for v in labels.values() if getattr(v, "label", None) == "loop")
    good = sum(1 for v in labels.values() if getattr(v, "label", None) == "ok")
    labelled = [i for i, src in enumerate(sources) if src in labels] if labels else []
    out = []
    for name, reps in replays.items():
        engine = get_engine(name)
        if isinstance(reps, RunColumns):
            first_turn = reps.first_refusal_columns()[0]
            warned = np.asarray(reps.warned, dtype=bool)
        else:
            first_turn = np.array([-1 if r.first_refusal is None else r.first_refusal.turn
                                   for r in reps], dtype=np.int64)
            warned = np.array([r.warned for r in reps], dtype=bool)
        refused_turns = first_turn[first_turn >= 0] + 1
        metrics = metrics_from_outcomes(
            (Outcome(sources[i], None if first_turn[i] < 0 else int(first_turn[i]),
                     bool(warned[i]), turns[i]) for i in labelled), labels)
        out.append(GuardRow(
            engine.title, len(first_turn), len(refused_turns), int(warned.sum()),
            float(np.median(refused_turns)) if len(refused_turns) else None,
            int(refused_turns.min()) if len(refused_turns) else None,
            loops, metrics.loops_caught, good, metrics.false_refusals, " ".join(engine.notes)))
    return out
