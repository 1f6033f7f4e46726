"""The metrics panel: how a configuration scores against the labels.

:func:`metrics_for` computes :class:`~loopscope.experiments.metrics.Metrics` for one engine
and configuration over the loaded corpus (from cached replays); :func:`render` shows the
current configuration of each engine, :func:`render_pair` A against B with the differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from loopscope.experiments.metrics import Metrics, metrics_of_columns
from loopscope.ui import state
from loopscope.ui.labelling import current_labels
from loopscope.words import plural

__all__ = ["ROWS", "metrics_for", "render", "render_pair"]

ROWS: tuple[tuple[str, str, str, bool], ...] = (
    # (metric, what a person reads, what it means, lower is better)
    ("refused", "Sessions refused", "Sessions the guard would have stopped.", True),
    ("false_refusals", "Good sessions refused", "Sessions labelled good work that were refused "
     "(false refusals).", True),
    ("turns_lost", "Turns lost to false refusals", "Assistant turns from a false refusal to the "
     "end of the session, summed.", True),
    ("loops_caught", "Loops caught", "Sessions labelled a real loop, refused once the loop had "
     "started.", False),
    ("wasted_turns", "Turns wasted before a catch", "Turns from where a caught loop started to "
     "its refusal, summed.", True),
    ("refused_early", "Loops refused too early", "Sessions labelled a real loop but refused "
     "before the loop started.", True),
    ("loops_missed", "Loops missed", "Sessions labelled a real loop that were never refused.",
     True),
    ("precision", "Precision", "Caught loops ÷ every refusal of a labelled session.", False),
    ("recall", "Recall", "Caught loops ÷ sessions labelled a real loop.", False),
)


def metrics_for(engine: str, config: Any) -> Metrics:
    """The metrics of ``engine`` under ``config`` over the loaded corpus and its labels."""
    corpus = state.corpus()
    return metrics_of_columns(state.replays_for(engine, config), current_labels(corpus),
                              corpus.sources, corpus.turn_counts)


def _fmt(value: float | int | None, metric: str) -> str:
    if value is None:
        return "–"
    if metric in ("precision", "recall"):
        return f"{value:.0%}"
    return f"{value:,}"


def _label_note() -> str:
    labels = current_labels(state.corpus())
    counts = labels.counts()
    n = len(state.corpus().sessions)
    return (
        f"Against {plural(counts['loop'], 'session')} labelled a real loop and {counts['ok']:,} "
        f"labelled good work, of {n:,}. Unlabelled sessions count only in “Sessions refused”."
    )


def render(engines: Sequence[str] | None = None, *, key: str = "metrics") -> dict[str, Metrics]:
    """A table of the metrics of each engine's current configuration (default: the guards
    shown); returns them."""
    import pandas as pd

    engines = list(engines) if engines is not None else state.shown_engines()
    configs = state.current_configs()
    results = {e: metrics_for(e, configs[e].config) for e in engines}
    frame = pd.DataFrame(
        {
            "Metric": [label for _, label, _, _ in ROWS],
            **{
                state.engine_titles()[e]: [_fmt(getattr(results[e], m), m) for m, *_ in ROWS]
                for e in engines
            },
        }
    )
    st.dataframe(frame, hide_index=True, width="stretch", key=key)
    st.caption(_label_note())
    return results


def render_pair(a: Metrics, b: Metrics, *, names: tuple[str, str] = ("A", "B")) -> None:
    """A and B side by side, each metric with B's change from A (coloured good/bad)."""
    per_row = 4  # five to a row cut the longer labels off ("Turns wasted before a c…")
    cols = [c for start in range(0, len(ROWS), per_row) for c in st.columns(per_row)]
    for col, (metric, label, help_text, lower_better) in zip(cols, ROWS, strict=False):
        va, vb = getattr(a, metric), getattr(b, metric)
        delta: str | None = None
        if va is not None and vb is not None and va != vb:
            diff = vb - va
            delta = f"{diff:+.0%}" if metric in ("precision", "recall") else f"{diff:+,d}"
        with col:
            st.metric(
                label,
                _fmt(vb, metric),
                delta=delta,
                delta_color="inverse" if lower_better else "normal",
                help=f"{help_text} {names[0]}: {_fmt(va, metric)}; {names[1]}: {_fmt(vb, metric)}.",
            )
    st.caption(_label_note())
