"""OpenHands' prepared sessions of a whole corpus as columns, and the corpus-wide re-run over
them (:func:`run_columns`).

A check's verdict (:func:`.fast._evaluate`) reads what the check's row holds and the prefix
counts of the log inside its window. The window depends on the configuration only through its
size and the action-error nudges made before the check (a nudge takes a place in the window),
and that is the one sequential thing in the detector. A session where no check nudges has the
plain window at every check; whether the first nudge happens is itself read off that plain
window (no nudge comes before it). So the re-run takes every check of every session at once,
in vectorised passes, with plain windows, up to each session's first nudge; from there on,
the sessions that nudge are run one by one, in Python, by the per-session rule itself over
their rows of the columns.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from loopscope.background import give_way
from loopscope.engines.base import RunColumns
from loopscope.engines.corpus_columns import JsonColumns, schema_arrays
from loopscope.engines.openhands.config import OpenHandsConfig
from loopscope.engines.openhands.fast import PreparedSession, _evaluate
from loopscope.engines.openhands.upstream import (
    ACTION_ERROR,
    ACTION_OBSERVATION,
    ALTERNATING_PATTERN,
    MONOLOGUE,
)
from loopscope.engines.table import (
    SESSION,
    Column,
    PreparedTable,
    TableError,
    TableSpec,
    first_of_each,
    ranges,
    session_of,
)

if TYPE_CHECKING:
    from loopscope.engines.contract import BaseEngine

__all__ = ["DETECTORS", "SCHEMA", "Checks", "check", "check_columns", "run_columns", "run_many",
           "table_spec"]

_CHECK: Final = "check"
_PREFIX: Final = "prefix"

_ROW_FIELDS: Final = ("base", "user", "ra", "ro", "re", "ka", "ko", "mono_start", "newest_obs")
_PREFIX_FIELDS: Final = ("pre_actions", "pre_observations", "pre_agent")

SCHEMA: Final[dict[str, Column]] = {
    "check_start": Column("int64", SESSION, _CHECK, starts=True),
    "prefix_start": Column("int64", SESSION, _PREFIX, starts=True),
    "turn": Column("int32", _CHECK),
    "call": Column("int32", _CHECK),
    **{name: Column("int32", _CHECK) for name in _ROW_FIELDS},
    **{name: Column("int32", _PREFIX) for name in _PREFIX_FIELDS},
}
"""Per check: its turn, call (-1: none) and the fields of its row in
:class:`.fast.PreparedSession` (log positions are the session's own); per log position
(events + 1 per session): the prefix counts of actions, observations and agent messages."""

DETECTORS: Final = (ACTION_OBSERVATION, ACTION_ERROR, MONOLOGUE, ALTERNATING_PATTERN)
"""Detector names by the codes of :func:`run_columns`."""

_BEYOND_ANY_COUNT: Final = 1 << 40
"""Thresholds (and scanned windows) are capped here for the arithmetic on 64-bit arrays: the
columns' counts are 32-bit, so a larger value compares with every count as this one does."""


def check_columns(prepared: Sequence[Any]) -> dict[str, Any]:
    """The columns of :data:`SCHEMA` for prepared sessions (:class:`.fast.PreparedSession`)."""
    check_start: list[int] = []
    prefix_start: list[int] = []
    lists: dict[str, list[int]] = {name: [] for name in (*_ROW_FIELDS, *_PREFIX_FIELDS)}
    turn: list[int] = []
    call: list[int] = []
    for p in prepared:
        check_start.append(len(turn))
        prefix_start.append(len(lists["pre_actions"]))
        turn.extend(p.turn)
        call.extend(-1 if c is None else c for c in p.call)
        for name, values in lists.items():
            values.extend(getattr(p, name))
    return schema_arrays(SCHEMA, {"check_start": check_start, "prefix_start": prefix_start,
                                  "turn": turn, "call": call, **lists})


def check(table: PreparedTable) -> None:
    """What :func:`run_columns` relies on beyond the schema: every log position a check reads
    lies in its own session's log, and the counts are counts."""
    cols = table.columns
    n = len(table)
    prefix_start = cols["prefix_start"]
    prefix_end = np.append(prefix_start[1:], len(cols["pre_actions"]))
    events = prefix_end - prefix_start - 1  # a session's log: events + 1 prefix counts
    if n and int(events.min()) < 0:
        raise TableError("prefix counts: a session without its first count")
    owner = session_of(cols["check_start"], len(cols["turn"]))
    last = events[owner]
    for name, low, high in (("base", 0, last), ("mono_start", 0, last),
                            ("user", -1, last - 1), ("newest_obs", -1, last - 1)):
        value = cols[name]
        if bool((value < low).any()) or bool((value > high).any()):
            raise TableError(f"{name}: a log position outside its session")
    for name in ("turn", "ra", "ro", "re", "ka", "ko", *_PREFIX_FIELDS):
        if cols[name].size and int(cols[name].min()) < 0:
            raise TableError(f"{name}: a negative count")
    if cols["call"].size and int(cols["call"].min()) < -1:
        raise TableError("call: a negative call")


class Checks:
    """A corpus's check columns laid out for :func:`run_columns`, with what no configuration
    changes: each check's log positions in the flat prefix counts, and the four upper bounds
    of :attr:`.fast.PreparedSession.reach` (a check whose bounds all lie below their
    thresholds can hold nothing). The columns are read as they are, and what is derived is
    32-bit too (a million checks: fresh memory costs more than the arithmetic)."""

    __slots__ = ("alternation", "at_base", "at_mono", "base", "call", "check_start", "ka", "ko",
                 "newest_obs", "owner", "pre_a", "pre_g", "pre_o", "prefix_start", "ra", "re",
                 "ro", "same_pair", "sessions", "streak", "talk", "turn", "user", "views")

    def __init__(self, columns: Mapping[str, Any]) -> None:
        self.turn, self.call = columns["turn"], columns["call"]
        self.base, self.user = columns["base"], columns["user"]
        self.ra, self.ro, self.re = columns["ra"], columns["ro"], columns["re"]
        self.ka, self.ko = columns["ka"], columns["ko"]
        self.newest_obs = columns["newest_obs"]
        self.pre_a, self.pre_o = columns["pre_actions"], columns["pre_observations"]
        self.pre_g = columns["pre_agent"]
        self.check_start = np.asarray(columns["check_start"], dtype=np.int64)
        self.sessions = len(self.check_start)
        self.prefix_start = np.asarray(columns["prefix_start"], dtype=np.int64)
        owner = session_of(self.check_start, len(self.turn))
        # Positions in the flat prefix counts, 32-bit while they fit (as the counts are).
        positions = np.int32 if len(self.pre_a) < 2**31 else np.int64
        offset = self.prefix_start[owner].astype(positions)
        self.owner = owner.astype(np.int32) if self.sessions < 2**31 else owner
        self.at_base = offset + self.base
        self.at_mono = offset + columns["mono_start"]
        # The bounds of fast._reach: the counts since the latest user message.
        since_user = offset + self.user
        since_user += 1
        pair = np.minimum(self.pre_a[self.at_base] - self.pre_a[since_user],
                          self.pre_o[self.at_base] - self.pre_o[since_user])
        self.streak = np.minimum(np.minimum(self.ra, self.re), pair)
        self.same_pair = np.minimum(np.minimum(self.ra, self.ro), pair)
        self.talk = self.pre_g[self.at_base] - self.pre_g[self.at_mono]
        self.alternation = np.minimum(np.minimum(self.ka, self.ko) + 2, pair)
        self.views: dict[int, _SessionView] = {}
        """Sessions that nudged under some configuration, as :func:`_views` made them."""

    def __len__(self) -> int:
        return self.sessions

    def prefix_range(self, sessions: Any) -> tuple[Any, Any]:
        """Where the prefix counts of ``sessions`` begin and end."""
        end = np.append(self.prefix_start[1:], len(self.pre_a))
        return self.prefix_start[sessions], end[sessions]


def run_columns(checks: Checks, config: OpenHandsConfig) -> dict[str, Any]:
    """Every session's refusal and warning counts and first refusal under ``config`` (the
    arrays of :class:`loopscope.engines.base.RunColumns`); the sessions that nudge are run
    one by one, by :func:`.fast._evaluate` over their columns (see the module docstring)."""
    n = len(checks)
    total = len(checks.turn)
    detector = np.zeros(total, dtype=np.int8)  # (read at first refusals only)
    out = {"refusals": np.zeros(n, dtype=np.int64), "warnings": np.zeros(n, dtype=np.int64),
           "first": np.full(n, -1, dtype=np.int64), "detector": detector,
           "turn": checks.turn, "call": checks.call}
    if not config.enabled or not total:
        return out
    ao, ae, mono, alt, size = (min(value, _BEYOND_ANY_COUNT) for value in (
        config.action_observation, config.action_error, config.monologue,
        config.alternating_pattern, config.max_events))
    candidate = ((checks.streak >= ae) | (checks.same_pair >= ao) | (checks.talk >= mono)
                 | (checks.alternation >= alt))
    at = np.flatnonzero(candidate)
    c = _Candidates(checks, at)
    # The plain window (no nudge in it): the newest ``max_events`` events, after the latest
    # user message.
    start = np.maximum(np.maximum(c.base - size, c.user + 1), 0)
    at_start = c.offset + start
    n_a = checks.pre_a[c.at_base] - checks.pre_a[at_start]
    n_o = checks.pre_o[c.at_base] - checks.pre_o[at_start]
    streak = np.minimum(np.minimum(np.minimum(c.ra, c.re), np.minimum(n_a, n_o)), ae + 1)
    # A session's first nudge: up to it, the plain windows are the session's windows.
    nudge_at = at[(streak == ae) & (c.newest_obs >= 0)]
    first_nudge = first_of_each(nudge_at, checks.owner[nudge_at], n, missing=total)
    one_by_one = np.flatnonzero(first_nudge < total)
    before_nudge = at < first_nudge[c.owner]
    length = c.base - start
    same_pair = (n_a >= ao) & (n_o >= ao) & (c.ra >= ao) & (c.ro >= ao)
    failing = streak > ae  # (fast._evaluate reads it capped at max(ao, ae + 1): the same)
    talk = (length >= mono) & (checks.pre_g[c.at_base]
                                - checks.pre_g[np.maximum(at_start, c.at_mono)] >= mono)
    alternating = (length >= alt) & (n_a >= alt) & (n_o >= alt)
    if alt > 2:
        alternating &= (c.ka >= alt - 2) & (c.ko >= alt - 2)
    refused = before_nudge & (length >= min(ao, ae, mono)) & (
        same_pair | failing | talk | alternating)
    flagged = at[refused]
    detector[flagged] = np.select([same_pair[refused], failing[refused], talk[refused]],
                                  [0, 1, 2], 3)
    owners = checks.owner[flagged]
    refusals = out["refusals"] = np.bincount(owners, minlength=n).astype(np.int64)
    first = out["first"] = first_of_each(flagged, owners, n)
    # From its first nudge on, a session is run by the per-session rule (no nudge before:
    # it starts from the same state as a run from the first check would reach there).
    codes = {name: code for code, name in enumerate(DETECTORS)}
    check_start = checks.check_start
    for i, session, candidates in _views(checks, one_by_one, at[~before_nudge]):
        give_way()  # (a loop of seconds over a large corpus: see loopscope.background)
        # (a view has every attribute of a PreparedSession that _evaluate reads)
        verdicts, _nudges, first_check = _evaluate(
            session, config, candidates)  # type: ignore[arg-type]
        refused_later = sum(1 for v in verdicts.values() if v[0] == "refuse")
        refusals[i] += refused_later
        out["warnings"][i] = len(verdicts) - refused_later
        if first[i] < 0 and first_check >= 0:
            first[i] = at_first = int(check_start[i]) + first_check
            detector[at_first] = codes[verdicts[first_check][1]]
    return out


class _NoText:
    """Stands for the nudge texts, which the batch does not read (it counts verdicts)."""

    __slots__ = ()

    def __getitem__(self, i: int) -> str:
        return ""


class _SessionView:
    """One session's rows read off the columns, with the attributes of
    :class:`.fast.PreparedSession` that :func:`.fast._evaluate` reads (the same values: the
    columns are those attributes, :func:`check_columns`)."""

    __slots__ = ("base", "ka", "ko", "mono_start", "newest_obs",
                 "nudge_error", "nudge_tool", "pre_actions", "pre_agent", "pre_observations",
                 "ra", "re", "ro", "user")

    base: array[int]
    user: array[int]
    ra: array[int]
    ro: array[int]
    re: array[int]
    ka: array[int]
    ko: array[int]
    newest_obs: array[int]
    mono_start: array[int]
    pre_actions: array[int]
    pre_observations: array[int]
    pre_agent: array[int]
    nudge_tool: _NoText
    nudge_error: _NoText


_VIEW_ROWS: Final = ("base", "user", "ra", "ro", "re", "ka", "ko", "newest_obs")


def _views(checks: Checks, sessions: Any, candidates: Any
           ) -> Iterator[tuple[int, _SessionView, list[int]]]:
    """``(i, view, its candidates)`` for each session ``i`` of ``sessions`` (sorted), its
    candidate checks from ``candidates`` (flat positions, sorted) as positions in the session.
    Views are made once per session (kept in
    :attr:`Checks.views`), from gathered columns turned into Python arrays (read by index as
    fast as a list, unlike a numpy array's scalars)."""
    if not sessions.size:
        return
    views = checks.views
    missing = np.array([i for i in sessions.tolist() if i not in views], dtype=np.int64)
    if missing.size:
        views.update(_made_views(checks, missing))
    by_session = checks.owner[candidates]
    local = (candidates - checks.check_start[by_session]).tolist()
    lows = np.searchsorted(by_session, sessions, "left").tolist()
    highs = np.searchsorted(by_session, sessions, "right").tolist()
    for i, low, high in zip(sessions.tolist(), lows, highs, strict=True):
        # (the candidates go beside the view, not on it: views are shared by every re-run,
        # and two may run at once — a person's and the idle warm-up, or two browser tabs)
        yield i, views[i], local[low:high]


def _ints(values: Any) -> array[int]:
    """32-bit ``values`` as a Python array: read by index like a list (an ``int`` each time),
    held in 4 bytes a value instead of a list's pointer and ``int`` object (views of thousands
    of sessions stay small)."""
    return array("i", np.asarray(values, dtype=np.int32).tobytes())


def _made_views(checks: Checks, sessions: Any) -> Iterator[tuple[int, _SessionView]]:
    """``(i, view)`` for the sessions ``sessions`` (sorted), without candidates."""
    rows = np.flatnonzero(np.isin(checks.owner, sessions))
    check_counts = np.bincount(checks.owner[rows], minlength=checks.sessions)[sessions]
    lists = {name: _ints(getattr(checks, name)[rows]) for name in _VIEW_ROWS}
    lists["mono_start"] = _ints(checks.at_mono[rows] - checks.at_base[rows] + checks.base[rows])
    begin, end = checks.prefix_range(sessions)
    spans = ranges(begin, end)
    prefix = {name: _ints(getattr(checks, attr)[spans]) for name, attr in (
        ("pre_actions", "pre_a"), ("pre_observations", "pre_o"), ("pre_agent", "pre_g"))}
    no_text = _NoText()
    row = pos = 0
    for i, n_checks, length in zip(sessions.tolist(), check_counts.tolist(),
                                   (end - begin).tolist(), strict=True):
        give_way()
        view = _SessionView()
        for name, values in lists.items():
            setattr(view, name, values[row:row + n_checks])
        for name, values in prefix.items():
            setattr(view, name, values[pos:pos + length])
        view.nudge_tool = view.nudge_error = no_text
        row += n_checks
        pos += length
        yield i, view


class _Candidates:
    """The columns of :class:`Checks` at the candidate checks ``at``."""

    __slots__ = ("at_base", "at_mono", "base", "ka", "ko", "newest_obs", "offset", "owner",
                 "ra", "re", "ro", "user")

    def __init__(self, checks: Checks, at: Any) -> None:
        # (64-bit: they meet thresholds in arithmetic, ``ae + 1``, ``base - max_events``)
        def pick(column: Any) -> Any:
            return column[at].astype(np.int64, copy=False)

        self.at_base, self.at_mono = pick(checks.at_base), pick(checks.at_mono)
        self.base, self.user = pick(checks.base), pick(checks.user)
        self.offset = self.at_base - self.base  # (where the session's prefix counts begin)
        self.ra, self.ro, self.re = pick(checks.ra), pick(checks.ro), pick(checks.re)
        self.ka, self.ko = pick(checks.ka), pick(checks.ko)
        self.newest_obs, self.owner = pick(checks.newest_obs), pick(checks.owner)


_COLUMNS: Final = JsonColumns(SCHEMA, check_columns, check, PreparedSession, Checks, DETECTORS)
"""These columns beside each session's JSON, laid out as :class:`Checks`."""


def table_spec(engine: BaseEngine[Any, Any], version: str | None = None) -> TableSpec:
    """The table of the engine's prepared sessions: each session's JSON (what a drawn row or an
    opened session reads) beside these columns (what :func:`run_columns` reads)."""
    return _COLUMNS.table_spec(engine, version)


def run_many(engine: BaseEngine[Any, Any], prepared: Sequence[Any], config: OpenHandsConfig
             ) -> RunColumns | None:
    """Vectorised passes over every check of the corpus (:func:`run_columns`; the sessions
    that nudge run one by one), for a table of the engine's or a list of its prepared sessions
    that keeps derived data (the layout kept with it); None for anything else (a plain list is
    run session by session)."""
    return _COLUMNS.run_many(engine, prepared, config,
                             lambda checks, _replay_of: run_columns(checks, config))
