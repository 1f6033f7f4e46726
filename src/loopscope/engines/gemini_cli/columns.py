"""Gemini CLI's prepared sessions of a whole corpus as columns, and the corpus-wide re-run
over them (:func:`run_columns`).

A session's verdicts under a configuration (:func:`.fast._verdicts`) are the tool-call steps
whose ``repeats`` reach ``TOOL_CALL_LOOP_THRESHOLD`` together with the steps the content walk
flags; the two sets never share a step (a content step is never a call). The content walk
depends only on the three content constants, and a corpus is prepared with Gemini CLI's own:
so under those constants, whatever the tool-call threshold, every session's refusal count and
first refusal are two vectorised passes over one entry per step.

A configuration that changes a content constant (a what-if) needs the content walk under its
constants. The table keeps the analysed text for it (every stretch's UTF-16 code units, where
each piece ends and which step sent it), and :func:`content_flags` walks only the stretches
that could loop at all. Before a stretch's first detection the walk has no memory beyond its
windows: the window starting at ``i`` fires only if its ``CONTENT_LOOP_THRESHOLD - 1``-th
previous occurrence ``j`` (same text, same stretch) is no further than the allowed average
distance times ``threshold - 1`` and not yet dropped by the history truncation (``j`` at or
after ``max(stretch start, end of the piece that completes window i - MAX_HISTORY_LENGTH)``,
the window's own floor: every window in between was walked). So a stretch in which no window
meets that condition (with window hashes standing in for texts: equal texts have equal hashes,
so the hashed condition holds wherever the exact one does) never fires, and only the others
are walked exactly, by the same code as a single session (:func:`.fast.walk_stretch`). Finding
them is a sort of one key per window, a block of the corpus's text at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from loopscope.engines.base import RunColumns
from loopscope.engines.corpus_columns import JsonColumns, schema_arrays
from loopscope.engines.gemini_cli.config import GeminiConfig
from loopscope.engines.gemini_cli.fast import (
    ContentHit,
    PreparedSession,
    remembered_walk,
    walk_stretch,
)
from loopscope.engines.gemini_cli.upstream import CONTENT_LOOP, TOOL_CALL_LOOP
from loopscope.engines.table import (
    SESSION,
    Column,
    PreparedTable,
    TableError,
    TableSpec,
    first_of_each,
    session_of,
)

if TYPE_CHECKING:
    from loopscope.engines.contract import BaseEngine

__all__ = ["DETECTORS", "SCHEMA", "Steps", "check", "content_flags", "run_columns", "run_many",
           "step_columns", "table_spec"]

_STEP: Final = "step"
_PIECE: Final = "piece"
_UNIT: Final = "text_unit"

SCHEMA: Final[dict[str, Column]] = {
    "step_start": Column("int64", SESSION, _STEP, starts=True),
    "turn": Column("int32", _STEP),
    "call": Column("int32", _STEP),
    "repeats": Column("int32", _STEP),
    "content": Column("bool", _STEP),
    "piece_start": Column("int64", SESSION, _PIECE, starts=True),
    "piece_end": Column("int32", _PIECE),
    "piece_step": Column("int32", _PIECE),
    "piece_opens": Column("bool", _PIECE),
    "text_start": Column("int64", SESSION, _UNIT, starts=True),
    "text": Column("uint16", _UNIT),
}
"""Per step: its turn, its call (-1: a text step), the repeats of the best call cycle ending
there (0: a text step), and whether the content walk under Gemini CLI's own constants flags
it. Per analysed piece of text (:attr:`.fast.PreparedSession.stretches`, in order): where it
ends in its session's analysed text (its stretches one after the other), the step that sent it
(in its session) and whether it opens a stretch. Per session: that text, in UTF-16 code units
(``text``)."""

DETECTORS: Final = (TOOL_CALL_LOOP, CONTENT_LOOP)
"""Detector names by the codes of :func:`run_columns`."""

_OWN_CONSTANTS: Final = GeminiConfig().content_constants


def step_columns(prepared: Sequence[Any]) -> dict[str, Any]:
    """The columns of :data:`SCHEMA` for prepared sessions (:class:`.fast.PreparedSession`)."""
    out: dict[str, list[Any]] = {name: [] for name in SCHEMA if name != "text"}
    texts: list[str] = []
    units = 0
    for p in prepared:
        out["step_start"].append(len(out["turn"]))
        out["piece_start"].append(len(out["piece_end"]))
        out["text_start"].append(units)
        session_units = units
        for stretch in p.stretches:
            out["piece_end"].extend([units - session_units + end for end in stretch.ends])
            out["piece_step"].extend(stretch.positions)
            out["piece_opens"].append(True)
            out["piece_opens"].extend([False] * (len(stretch.ends) - 1))
            texts.append(stretch.text)
            units += len(stretch.text)
        n = p.n
        out["turn"].extend(p.turn)
        out["call"].extend(-1 if c is None else c for c in p.call)
        by_step = p.repeats
        out["repeats"].extend(by_step.get(i, 0) for i in range(n))
        flagged = [False] * n
        for hit in p.content_run(*_OWN_CONSTANTS).detections:
            flagged[hit.position] = True
        out["content"].extend(flagged)
    columns = schema_arrays(SCHEMA, out)
    # (one Python character per code unit: each one is its own UTF-16 unit)
    columns["text"] = np.frombuffer("".join(texts).encode("utf-16-le", "surrogatepass"),
                                    dtype="<u2").astype(np.uint16)
    return columns


def check(table: PreparedTable) -> None:
    """What :func:`run_columns` relies on beyond the schema: a call or none per step, no
    negative turn or repeats, repeats on call steps only and the content walk on text steps
    only; every session's analysed text cut into its pieces exactly (each piece non-empty, in
    order, the first one opening a stretch), each piece sent by a text step of its session, in
    step order."""
    cols = table.columns
    call, repeats = cols["call"], cols["repeats"]
    if call.size and (int(call.min()) < -1 or int(cols["turn"].min()) < 0
                      or int(repeats.min()) < 0):
        raise TableError("steps: a negative turn, call or count")
    text = call < 0
    if bool((repeats[text] != 0).any()) or bool((repeats[~text] == 0).any()) or bool(
            cols["content"][~text].any()):
        raise TableError("steps: tool-call and text data mixed up")
    piece_end = cols["piece_end"].astype(np.int64)
    n_pieces = len(piece_end)
    owner = session_of(cols["piece_start"], n_pieces)
    units = np.diff(np.append(cols["text_start"], len(cols["text"])))
    steps = np.diff(np.append(cols["step_start"], len(call)))
    pieces = np.diff(np.append(cols["piece_start"], n_pieces))
    first = np.zeros(n_pieces, dtype=np.bool_)
    first[cols["piece_start"][pieces > 0]] = True
    last = np.zeros(n_pieces, dtype=np.bool_)
    last[(cols["piece_start"] + pieces - 1)[pieces > 0]] = True
    previous = np.append(0, piece_end[:-1])
    previous[first] = 0
    if bool((piece_end <= previous).any()) or bool((piece_end[last] != units[owner[last]]).any(
            )) or bool((units[pieces == 0] != 0).any()):
        raise TableError("piece_end: the analysed text not cut into its pieces")
    if not bool(cols["piece_opens"][first].all()):
        raise TableError("piece_opens: a session's first piece opens no stretch")
    step = cols["piece_step"].astype(np.int64)
    if n_pieces and (int(step.min()) < 0 or bool((step >= steps[owner]).any())):
        raise TableError("piece_step: a step outside its session")
    if bool((call[cols["step_start"][owner] + step] >= 0).any()):
        raise TableError("piece_step: a piece of a tool-call step")
    earlier = np.append(0, step[:-1])
    earlier[first] = 0
    if bool((step < earlier).any()):
        raise TableError("piece_step: pieces out of step order")


class Steps:
    """A corpus's step columns laid out for :func:`run_columns` (made once per corpus), and
    the content flags of the last few content what-ifs."""

    __slots__ = (
        "_pieces",
        "_stretches",
        "_walks",
        "call",
        "content",
        "detector",
        "owner",
        "repeats",
        "sessions",
        "text",
        "turn",
    )

    def __init__(self, columns: Mapping[str, Any]) -> None:
        starts = columns["step_start"]
        # (read as they are: 32-bit, one byte a detector code; RunColumns widens what it keeps)
        self.turn, self.call = columns["turn"], columns["call"]
        self.repeats = columns["repeats"]
        self.content = columns["content"]
        self.owner = session_of(starts, len(self.turn))
        self.sessions = len(starts)
        self.detector = (self.call < 0).view(np.int8)
        self.text = columns["text"]
        self._pieces = (columns["step_start"], columns["piece_start"], columns["piece_end"],
                        columns["piece_step"], columns["piece_opens"], columns["text_start"])
        self._stretches: _Stretches | None = None
        self._walks: dict[tuple[int, int, int], Any] = {}

    def __len__(self) -> int:
        return self.sessions

    @property
    def stretches(self) -> _Stretches:
        """The analysed text's stretches and pieces in corpus-wide positions (made on the
        first content what-if)."""
        if self._stretches is None:
            self._stretches = _Stretches(*self._pieces)
        return self._stretches


class _Stretches:
    """Pieces and stretches in corpus-wide positions: each piece's end in :attr:`Steps.text`,
    its step and its stretch; each stretch's text range and pieces."""

    __slots__ = ("begin", "end", "first", "piece_end", "piece_step", "piece_stretch")

    def __init__(self, step_start: Any, piece_start: Any, piece_end: Any, piece_step: Any,
                 piece_opens: Any, text_start: Any) -> None:
        owner = session_of(piece_start, len(piece_end))
        self.piece_end = text_start[owner] + piece_end  # (ascending: sessions in order)
        self.piece_step = step_start[owner] + piece_step
        self.first = np.flatnonzero(piece_opens)
        self.piece_stretch = np.cumsum(piece_opens, dtype=np.int64) - 1
        self.end = self.piece_end[np.append(self.first[1:] - 1, len(piece_end) - 1)
                                  ] if len(self.first) else np.zeros(0, dtype=np.int64)
        # A stretch's text begins where the piece before its first one ends (its session's
        # text follows the sessions before it, and every session's pieces cover its text).
        self.begin = np.where(self.first > 0, self.piece_end[np.maximum(self.first - 1, 0)], 0)


def content_flags(steps: Steps, chunk: int, threshold: int, history: int) -> Any:
    """Per step (a bool array): whether the content walk under ``(CONTENT_CHUNK_SIZE,
    CONTENT_LOOP_THRESHOLD, MAX_HISTORY_LENGTH)`` flags it; the last few kept."""
    return remembered_walk(steps._walks, (chunk, threshold, history),
                           lambda: _content_flags(steps, chunk, threshold, history))


_BLOCK: Final = 1 << 18
"""Code units of text whose windows are hashed and sorted together (a stretch is never cut:
a longer one is a block of its own). The work arrays of a what-if hold ~56 bytes a unit of
one block."""
_BASE: Final = 0x9E3779B97F4A7C15
"""The odd base of the window hashes (modulo 2**64)."""
_HIGH: Final = np.uint64(0xFFFFFFFF00000000)
_LOW: Final = np.uint64(0xFFFFFFFF)
_POWERS: list[Any] = []
"""``[B**j, B**-j]`` modulo 2**64 for j = 0, 1, …, as long as the longest block asked for
(kept up to a block's length: a longer stretch's are made for it alone)."""


def _powers(n: int) -> tuple[Any, Any]:
    found = _POWERS[:]  # (another thread may grow them meanwhile: each list is whole)
    if not found or len(found[0]) < n:
        size = max(n, 1024)
        up = np.full(size, _BASE, dtype=np.uint64)
        up[0] = 1
        down = np.full(size, pow(_BASE, -1, 1 << 64), dtype=np.uint64)
        down[0] = 1
        found = [np.cumprod(up, dtype=np.uint64), np.cumprod(down, dtype=np.uint64)]
        if size <= _BLOCK + 1:
            _POWERS[:] = found
    return found[0], found[1]


def _content_flags(steps: Steps, chunk: int, threshold: int, history: int) -> Any:
    flags = np.zeros(len(steps.turn), dtype=np.bool_)
    layout = steps.stretches
    text = steps.text
    hits: list[ContentHit] = []
    for s in _candidates(layout, text, chunk, threshold, history):
        b, e = int(layout.begin[s]), int(layout.end[s])
        first = int(layout.first[s])
        last = int(layout.first[s + 1]) if s + 1 < len(layout.first) else len(layout.piece_end)
        walk_stretch(text[b:e].astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass"),
                     (layout.piece_end[first:last] - b).tolist(),
                     layout.piece_step[first:last].tolist(), s, chunk, threshold, history, hits,
                     {})
    for hit in hits:
        flags[hit.position] = True
    return flags


def _candidates(layout: _Stretches, text: Any, chunk: int, threshold: int, history: int
                ) -> list[int]:
    """The stretches in which some window meets the hashed condition of the module docstring
    (ascending).

    Every window of a block of text is hashed, those that cross a stretch's end too: such a
    window and any window of another stretch lie before the floor of every window of a later
    stretch, so they never meet the condition, and within a stretch they are never between a
    window and its earlier occurrences."""
    total = len(text)
    if not len(layout.end) or total < chunk:
        return []
    back = threshold - 1
    reach = chunk * 5 * back
    work = min(total, _BLOCK) + 1
    up, down = _powers(max(work, int((layout.end - layout.begin).max()) + 1))
    terms = np.empty(work, dtype=np.uint64)
    prefix = np.zeros(work, dtype=np.uint64)
    keys = np.empty(work, dtype=np.uint64)
    high = np.empty(work, dtype=np.uint64)
    iota = np.arange(work, dtype=np.uint64)
    found: list[Any] = []
    base = 0
    while base < total:
        # The block: whole stretches from base, as many as fit (at least one).
        cut = int(np.searchsorted(layout.end, base + _BLOCK, "right"))
        end = int(layout.end[max(cut - 1, int(np.searchsorted(layout.end, base, "right")))])
        size = end - base
        windows = size - chunk + 1
        if windows > back:
            if size + 1 > len(terms):  # (one stretch longer than a block)
                terms, prefix, keys, high = (np.empty(size + 1, dtype=np.uint64)
                                             for _ in range(4))
                prefix[0] = 0
                iota = np.arange(size + 1, dtype=np.uint64)
            np.multiply(text[base:end], down[:size], out=terms[:size])
            np.cumsum(terms[:size], out=prefix[1:size + 1])
            # The window at i: the sum of text[i + m] * B**-m (its prefix sums' terms times
            # B**i); its top 32 bits, then i, make one key to sort.
            h = keys[:windows]
            np.subtract(prefix[chunk:size + 1], prefix[:windows], out=h)
            np.multiply(h, up[:windows], out=h)
            np.bitwise_and(h, _HIGH, out=h)
            np.bitwise_or(h, iota[:windows], out=h)
            h.sort()
            g = high[:windows]
            np.right_shift(h, np.uint64(32), out=g)
            same = np.flatnonzero(g[back:] == g[:-back])
            if same.size:
                window = (h[same + back] & _LOW).astype(np.int64)
                earlier = (h[same] & _LOW).astype(np.int64)
                near = window - earlier <= reach
                window, earlier = window[near] + base, earlier[near] + base
                piece = np.searchsorted(layout.piece_end, window + chunk, "left")
                stretch = layout.piece_stretch[piece]
                floor = np.maximum(layout.begin[stretch], layout.piece_end[piece] - history)
                found.append(stretch[earlier >= floor])
        base = end
    return np.unique(np.concatenate(found)).tolist() if found else []


def run_columns(steps: Steps, config: GeminiConfig) -> dict[str, Any]:
    """Every session's refusal count and first refusal under ``config`` (the arrays of
    :class:`loopscope.engines.base.RunColumns`). Gemini CLI never warns."""
    n = len(steps)
    if not config.enabled:
        zeros = np.zeros(n, dtype=np.int64)
        return {"refusals": zeros, "warnings": zeros.copy(), "first": np.full(n, -1, np.int64),
                "detector": steps.detector, "turn": steps.turn, "call": steps.call}
    content = steps.content
    if config.content_constants != _OWN_CONSTANTS:
        content = content_flags(steps, *config.content_constants)
    flagged = np.flatnonzero((steps.repeats >= config.tool_call_loop_threshold) | content)
    owners = steps.owner[flagged]
    return {"refusals": np.bincount(owners, minlength=n).astype(np.int64),
            "warnings": np.zeros(n, dtype=np.int64), "first": first_of_each(flagged, owners, n),
            "detector": steps.detector, "turn": steps.turn, "call": steps.call}


_COLUMNS: Final = JsonColumns(SCHEMA, step_columns, check, PreparedSession, Steps, DETECTORS)
"""These columns beside each session's JSON, laid out as :class:`Steps`."""


def table_spec(engine: BaseEngine[Any, Any], version: str | None = None) -> TableSpec:
    """The table of the engine's prepared sessions: each session's JSON (what a drawn row or an
    opened session reads) beside these columns (what :func:`run_columns` reads)."""
    return _COLUMNS.table_spec(engine, version)


def run_many(engine: BaseEngine[Any, Any], prepared: Sequence[Any], config: GeminiConfig
             ) -> RunColumns | None:
    """Two vectorised passes over the corpus's steps (:func:`run_columns`), for a table of the
    engine's or a list of its prepared sessions that keeps derived data (the layout kept with
    it); a configuration that changes a content constant first walks the stretches of text
    that could loop under it (:func:`content_flags`). None for anything else (a plain list is
    run session by session)."""
    return _COLUMNS.run_many(engine, prepared, config,
                            lambda steps, _replay_of: run_columns(steps, config))
