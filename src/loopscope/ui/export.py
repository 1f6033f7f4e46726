"""Export documents: the loopscope config (via :mod:`loopscope.config_io`; each guard's own
config format comes from its engine's ``exports``) and verdict reports.

Pure functions returning text, so tests can parse what a download would contain.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from loopscope import config_io, csvsafe
from loopscope.engines.base import SessionReplay
from loopscope.model import Session

CSV_COLUMNS = (
    "session", "source", "format", "engine", "label", "calls", "turns", "steps", "refused",
    "first_refusal_turn", "first_refusal_call", "first_refusal_detector", "refusals", "warnings",
)


def loopscope_config(configs: Mapping[str, Any]) -> str:
    """The loopscope config document (every engine given) as JSON text."""
    return config_io.loopscope_config_json(configs)


def verdict_report_jsonl(replays: Mapping[str, Sequence[SessionReplay]]) -> str:
    """The ``loopscope replay --json`` lines of every engine, engine by engine."""
    out = io.StringIO()
    for engine in replays:
        for r in replays[engine]:
            out.write(json.dumps(r.to_json(), ensure_ascii=False, separators=(",", ":")))
            out.write("\n")
    return out.getvalue()


def verdict_report_csv(
    sessions: Sequence[Session],
    replays: Mapping[str, Sequence[SessionReplay]],
    labels: Mapping[str, str | None] | None = None,
) -> str:
    """One row per session and engine: the first refusal and the counts."""
    out = io.StringIO()
    writer = csvsafe.writer(out, lineterminator="\n")  # no cell a spreadsheet would run
    writer.writerow(CSV_COLUMNS)
    for engine, reps in replays.items():
        for s, r in zip(sessions, reps, strict=True):
            fr = r.first_refusal
            writer.writerow([
                r.session, r.source, r.format, engine,
                (labels or {}).get(s.source) or "", len(s.calls), len(s.turns), len(r.steps),
                "yes" if fr else "no",
                "" if fr is None else fr.turn,
                "" if fr is None or fr.call is None else fr.call,
                "" if fr is None else fr.detector,
                sum(1 for st in r.steps if st.verdict == "refuse"),
                sum(1 for st in r.steps if st.verdict == "warn"),
            ])
    return out.getvalue()
