"""Gemini CLI's prepared sessions of a whole corpus as columns, and the corpus-wide re-run
over them (:func:`run_columns`).

A session's verdicts under a configuration (:func:`.fast._verdicts`) are the tool-call steps
whose ``repeats`` reach ``TOOL_CALL_LOOP_THRESHOLD`` together with the steps the content walk
flags; the two sets never share a step (a content step is never a call). The content walk
depends only on the three content constants, and a corpus is prepared with Gemini CLI's own:
so under those constants, whatever the tool-call threshold, every session's refusal count and
first refusal are two vectorised passes over one entry per step. A configuration that changes a
content constant (a what-if) walks every session's text again, session by session.

The table keeps each session's JSON (:func:`~loopscope.engines.table.json_table_spec`) for
the sessions that are read (a drawn row, an opened session), beside these columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.detector import CONTENT_LOOP, TOOL_CALL_LOOP
from loopscope.engines.table import SESSION, Column, PreparedTable, TableError, session_of

__all__ = ["DETECTORS", "SCHEMA", "Steps", "check", "run_columns", "step_columns"]

_STEP: Final = "step"

SCHEMA: Final[dict[str, Column]] = {
    "step_start": Column("int64", SESSION, _STEP, starts=True),
    "turn": Column("int32", _STEP),
    "call": Column("int32", _STEP),
    "repeats": Column("int32", _STEP),
    "content": Column("bool", _STEP),
}
"""Per step: its turn, its call (-1: a text step), the repeats of the best call cycle ending
there (0: a text step), and whether the content walk under Gemini CLI's own constants flags
it."""

DETECTORS: Final = (TOOL_CALL_LOOP, CONTENT_LOOP)
"""Detector names by the codes of :func:`run_columns`."""

_OWN_CONSTANTS: Final = GeminiConfig().content_constants


def step_columns(prepared: Sequence[Any]) -> dict[str, Any]:
    """The columns of :data:`SCHEMA` for prepared sessions (:class:`.fast.PreparedSession`)."""
    starts: list[int] = []
    turn: list[int] = []
    call: list[int] = []
    repeats: list[int] = []
    content: list[bool] = []
    for p in prepared:
        starts.append(len(turn))
        n = p.n
        turn.extend(p.turn)
        call.extend(-1 if c is None else c for c in p.call)
        by_step = p.repeats
        repeats.extend(by_step.get(i, 0) for i in range(n))
        flagged = [False] * n
        for hit in p.content_run(*_OWN_CONSTANTS).detections:
            flagged[hit.position] = True
        content.extend(flagged)
    return {"step_start": np.array(starts, dtype=np.int64),
            "turn": np.array(turn, dtype=np.int32), "call": np.array(call, dtype=np.int32),
            "repeats": np.array(repeats, dtype=np.int32),
            "content": np.array(content, dtype=np.bool_)}


def check(table: PreparedTable) -> None:
    """What :func:`run_columns` relies on beyond the schema: a call or none per step, no
    negative turn or repeats, repeats on call steps only and the content walk on text steps
    only."""
    cols = table.columns
    call, repeats = cols["call"], cols["repeats"]
    if call.size and (int(call.min()) < -1 or int(cols["turn"].min()) < 0
                      or int(repeats.min()) < 0):
        raise TableError("steps: a negative turn, call or count")
    text = call < 0
    if bool((repeats[text] != 0).any()) or bool((repeats[~text] == 0).any()) or bool(
            cols["content"][~text].any()):
        raise TableError("steps: tool-call and text data mixed up")


class Steps:
    """A corpus's step columns laid out for :func:`run_columns` (made once per corpus)."""

    __slots__ = ("call", "content", "detector", "owner", "repeats", "sessions", "turn")

    def __init__(self, columns: Mapping[str, Any]) -> None:
        starts = columns["step_start"]
        # (read as they are: 32-bit, one byte a detector code; RunColumns widens what it keeps)
        self.turn, self.call = columns["turn"], columns["call"]
        self.repeats = columns["repeats"]
        self.content = columns["content"]
        self.owner = session_of(starts, len(self.turn))
        self.sessions = len(starts)
        self.detector = (self.call < 0).view(np.int8)

    def __len__(self) -> int:
        return self.sessions


def run_columns(steps: Steps, config: GeminiConfig) -> dict[str, Any] | None:
    """Every session's refusal count and first refusal under ``config`` (the arrays of
    :class:`loopscope.engines.base.RunColumns`), or ``None`` when ``config`` changes a content
    constant (then the text is walked again, session by session). Gemini CLI never warns."""
    n = len(steps)
    if not config.enabled:
        zeros = np.zeros(n, dtype=np.int64)
        return {"refusals": zeros, "warnings": zeros.copy(), "first": np.full(n, -1, np.int64),
                "detector": steps.detector, "turn": steps.turn, "call": steps.call}
    if config.content_constants != _OWN_CONSTANTS:
        return None
    flagged = np.flatnonzero((steps.repeats >= config.tool_call_loop_threshold)
                             | steps.content)
    owners = steps.owner[flagged]
    first = np.full(n, -1, dtype=np.int64)
    if flagged.size:
        lead = np.ones(flagged.size, dtype=np.bool_)
        lead[1:] = owners[1:] != owners[:-1]
        first[owners[lead]] = flagged[lead]
    return {"refusals": np.bincount(owners, minlength=n).astype(np.int64),
            "warnings": np.zeros(n, dtype=np.int64), "first": first,
            "detector": steps.detector, "turn": steps.turn, "call": steps.call}
