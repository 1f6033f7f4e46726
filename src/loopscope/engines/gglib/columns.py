"""gglib's prepared sessions of a whole corpus as one table (:mod:`loopscope.engines.table`),
and the corpus-wide re-run over it (:func:`run_columns`).

:func:`table_columns` writes prepared sessions as columns (one entry per session, per step and
per recorded prose step, plus a string pool); :func:`decode_row` gives one session's
:class:`~loopscope.engines.gglib.fast.PreparedSession` back (a property test: its JSON codec
writing is the original's). :class:`Pack` lays a table out for :func:`run_columns`: a
threshold change is a few vectorised passes over every step, never Python work per session;
observation flags are worked out once per distinct set of tool names and pattern list, and the
stagnation counts of a new window in one vectorised pass (:func:`stagnation_counts`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from loopscope.engines.base import RunColumns, columns_of, packed
from loopscope.engines.gglib.config import GglibConfig
from loopscope.engines.gglib.fast import _OUTCOMES, NO_REFUSAL, PreparedMessages, PreparedSession
from loopscope.engines.gglib.upstream import WINDOW_FACTOR, is_observation_name
from loopscope.engines.table import (
    SESSION,
    STRINGS,
    Column,
    PreparedTable,
    StringPool,
    TableError,
    TableSpec,
    first_of_each,
    pool_schema,
    session_of,
    starts_of,
    unique_codes,
)

if TYPE_CHECKING:
    from loopscope.engines.contract import BaseEngine

__all__ = ["DETECTORS", "SCHEMA", "STAGNATION_WINDOW", "Pack", "decode_row", "run_columns",
           "run_many", "stagnation_counts", "table_columns", "table_spec"]

STAGNATION_WINDOW = GglibConfig().max_stagnation_steps
"""The ``max_stagnation_steps`` whose counts a table carries (the default one): a cached start
need not count them again."""

_STEP = "step"
_PROSE = "prose"

SCHEMA: dict[str, Column] = {
    "id": Column("int32", SESSION, STRINGS),
    "source": Column("int32", SESSION, STRINGS),
    "format": Column("int32", SESSION, STRINGS),
    "n_messages": Column("int64", SESSION),
    "step_start": Column("int64", SESSION, _STEP, starts=True),
    "prose_start": Column("int64", SESSION, _PROSE, starts=True),
    "batch": Column("bool", _STEP),
    "call": Column("int32", _STEP),
    # The step's tool names and lower-cased names, each as the JSON text of a list (one pool
    # string per distinct set).
    "tools": Column("int32", _STEP, STRINGS),
    "names": Column("int32", _STEP, STRINGS),
    "signature": Column("int32", _STEP, STRINGS, nullable=True),
    "identical": Column("bool", _STEP),
    "not_evaluated": Column("bool", _STEP),
    "joined": Column("bool", _STEP),
    "costly": Column("bool", _STEP),
    "count": Column("int32", _STEP),
    "total": Column("int32", _STEP),
    "outcome": Column("int8", _STEP),
    "run": Column("int32", _STEP),
    "text_hash": Column("int32", _STEP, STRINGS, nullable=True),
    # A recorded prose step's position among its session's steps, and its stagnation count
    # under STAGNATION_WINDOW.
    "prose_step": Column("int32", _PROSE),
    "prose_text": Column("int32", _PROSE),
    "prose_segment": Column("int32", _PROSE),
    "stagnation": Column("int32", _PROSE),
    **pool_schema(),
}


def table_columns(prepared: Sequence[Any]) -> dict[str, Any]:
    """The columns of ``prepared`` (:class:`~.fast.PreparedSession` objects), in order."""
    pool = StringPool()
    code = pool.code
    set_codes: dict[tuple[str, ...], int] = {}

    def set_code(names: tuple[str, ...]) -> int:
        found = set_codes.get(names)
        if found is None:
            # (json, not orjson: a recorded tool name may hold a lone surrogate)
            found = set_codes[names] = code(json.dumps(list(names)))
        return found

    ids: list[int] = []
    sources: list[int] = []
    formats: list[int] = []
    n_messages: list[int] = []
    steps: list[int] = []
    proses: list[int] = []
    batch: list[bool] = []
    call: list[int] = []
    tools: list[int] = []
    names: list[int] = []
    signature: list[int] = []
    identical: list[bool] = []
    not_evaluated: list[bool] = []
    joined: list[bool] = []
    costly: list[bool] = []
    count: list[int] = []
    total: list[int] = []
    outcome: list[int] = []
    run: list[int] = []
    text_hash: list[int] = []
    prose_step: list[int] = []
    prose_text: list[int] = []
    prose_segment: list[int] = []
    stagnation: list[int] = []
    outcome_code = {o: k for k, o in enumerate(_OUTCOMES)}
    for ps in prepared:
        p: PreparedMessages = ps.messages
        ids.append(code(ps.session))
        sources.append(code(ps.source))
        formats.append(code(ps.format))
        n_messages.append(p.n_messages)
        steps.append(p.n_steps)
        proses.append(len(p.prose_steps))
        batch += p.batch
        call += p.call
        tools += map(set_code, p.tools)
        names += map(set_code, p.names_lower)
        signature += [-1 if s is None else code(s) for s in p.signature]
        identical += p.identical
        not_evaluated += p.not_evaluated
        joined += p.joined
        costly += p.costly
        count += p.count
        total += p.total
        outcome += map(outcome_code.__getitem__, p.outcome)
        run += p.run
        text_hash += [-1 if h is None else code(h) for h in p.text_hash]
        prose_step += p.prose_steps
        prose_text += p.prose_text
        prose_segment += p.prose_segment
        if p.prose_steps:
            stagnation += p.stagnation(STAGNATION_WINDOW)[0]
    out = {
        "id": np.array(ids, dtype=np.int32), "source": np.array(sources, dtype=np.int32),
        "format": np.array(formats, dtype=np.int32),
        "n_messages": np.array(n_messages, dtype=np.int64),
        "step_start": starts_of(steps), "prose_start": starts_of(proses),
        "batch": np.array(batch, dtype=np.bool_), "call": np.array(call, dtype=np.int32),
        "tools": np.array(tools, dtype=np.int32), "names": np.array(names, dtype=np.int32),
        "signature": np.array(signature, dtype=np.int32),
        "identical": np.array(identical, dtype=np.bool_),
        "not_evaluated": np.array(not_evaluated, dtype=np.bool_),
        "joined": np.array(joined, dtype=np.bool_), "costly": np.array(costly, dtype=np.bool_),
        "count": np.array(count, dtype=np.int32), "total": np.array(total, dtype=np.int32),
        "outcome": np.array(outcome, dtype=np.int8), "run": np.array(run, dtype=np.int32),
        "text_hash": np.array(text_hash, dtype=np.int32),
        "prose_step": np.array(prose_step, dtype=np.int32),
        "prose_text": np.array(prose_text, dtype=np.int32),
        "prose_segment": np.array(prose_segment, dtype=np.int32),
        "stagnation": np.array(stagnation, dtype=np.int32),
        **pool.columns(),
    }
    return out


def check(table: PreparedTable) -> None:
    """What :func:`decode_row` and :class:`Pack` rely on beyond the schema (positions inside
    each session's own range); :class:`TableError` otherwise."""
    c = table.columns
    n_steps = table.axis_length(_STEP)
    outcome = c["outcome"]
    if outcome.size and (int(outcome.min()) < 0 or int(outcome.max()) >= len(_OUTCOMES)):
        raise TableError("outcome: unknown code")
    for name in ("call", "count", "total"):
        if c[name].size and int(c[name].min()) < 0:
            raise TableError(f"{name}: negative")
    if c["run"].size and int(c["run"].min()) < -1:
        raise TableError("run: below -1")
    prose = c["prose_step"]
    if prose.size:
        owner = session_of(c["prose_start"], len(prose))
        begin = c["step_start"][owner]
        end = np.append(c["step_start"], n_steps)[owner + 1]
        at = begin + prose
        if bool((prose < 0).any()) or bool((at >= end).any()) or bool(c["batch"][at].any()):
            raise TableError("prose_step: not a prose step of its session")
        if int(c["stagnation"].min()) < 1:
            raise TableError("stagnation: a count below 1")


def decode_row(table: PreparedTable, i: int) -> Any:
    """Session ``i`` of a gglib table, as a :class:`~.fast.PreparedSession`."""
    c = table.columns
    a, b = table.span("step_start", i)
    pa, pb = table.span("prose_start", i)
    sets = table.derived.get("gglib.sets")
    if sets is None:
        sets = table.derived["gglib.sets"] = {}

    def names_of(k: int) -> tuple[str, ...]:
        found = sets.get(k)
        if found is None:
            found = sets[k] = tuple(json.loads(table.string(k)))
        return found

    string = table.string
    prose_steps = c["prose_step"][pa:pb].tolist()
    messages = PreparedMessages(
        int(c["n_messages"][i]), c["batch"][a:b].tolist(), c["call"][a:b].tolist(),
        [names_of(k) for k in c["tools"][a:b].tolist()],
        [None if k < 0 else string(k) for k in c["signature"][a:b].tolist()],
        c["identical"][a:b].tolist(), c["not_evaluated"][a:b].tolist(),
        c["joined"][a:b].tolist(), c["costly"][a:b].tolist(),
        [names_of(k) for k in c["names"][a:b].tolist()],
        c["count"][a:b].tolist(), c["total"][a:b].tolist(),
        [_OUTCOMES[k] for k in c["outcome"][a:b].tolist()], c["run"][a:b].tolist(),
        [None if k < 0 else string(k) for k in c["text_hash"][a:b].tolist()],
        prose_steps, c["prose_text"][pa:pb].tolist(), c["prose_segment"][pa:pb].tolist(),
    )
    if prose_steps:  # (as table_columns counted them)
        counts = c["stagnation"][pa:pb].tolist()
        first = next((k for k, n in zip(prose_steps, counts, strict=True)
                      if n > STAGNATION_WINDOW), NO_REFUSAL)
        messages._stagnation[STAGNATION_WINDOW] = (counts, first)
    return PreparedSession(string(int(c["id"][i])), string(int(c["source"][i])),
                           string(int(c["format"][i])), messages)


def stagnation_counts(owner: Any, text: Any, segment: Any, max_steps: int) -> Any:
    """The stagnation count of every recorded prose step of a corpus (``owner``: each step's
    session, ``text``/``segment`` as in :class:`PreparedMessages`): how many of the last
    ``4 × max_steps`` recorded prose steps of its segment (itself included) have its text.
    Equal to :meth:`PreparedMessages.stagnation` (a property test)."""
    n = len(text)
    if not n:
        return np.zeros(0, dtype=np.int32)
    window = max(max_steps * WINDOW_FACTOR, 1)
    position = np.arange(n, dtype=np.int64)
    order = np.lexsort((position, text, segment, owner))
    o, t, s = owner[order], text[order], segment[order]
    new_group = np.ones(n, dtype=np.bool_)
    new_group[1:] = (o[1:] != o[:-1]) | (t[1:] != t[:-1]) | (s[1:] != s[:-1])
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(new_group) - 1
    # The steps of one session's segment are consecutive, so "the last ``window`` recorded
    # steps of its segment" are positions p - window + 1 .. p of the same group.
    keyed = group * n + position
    sorted_keys = keyed[order]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = position
    low = np.searchsorted(sorted_keys, group * n + np.maximum(position - (window - 1), 0))
    return (rank - low + 1).astype(np.int32)


class Pack:
    """A table laid out for :func:`run_columns` (one entry per step, sessions one after the
    other)."""

    def __init__(self, table: PreparedTable) -> None:
        c = table.columns
        self.table = table
        total = table.axis_length(_STEP)
        n = len(table)
        self.offsets = np.append(c["step_start"], total).astype(np.int64)
        self.owner = session_of(c["step_start"], total).astype(np.int32)
        self.batch = c["batch"]
        self.costly = c["costly"]
        self.count = c["count"]
        self.total = c["total"]
        self.names = c["names"]
        self.turn = np.arange(total, dtype=np.int32) - c["step_start"].astype(np.int32)[
            self.owner] if total else np.zeros(0, dtype=np.int32)
        self.call = np.where(self.batch, c["call"], -1).astype(np.int32)
        self.detector = np.where(self.batch, 0, 1).astype(np.int8)
        prose_owner = session_of(c["prose_start"], len(c["prose_step"]))
        self.prose_owner = prose_owner
        self.prose = (c["step_start"][prose_owner] + c["prose_step"]).astype(np.int64)
        self._prose_text = c["prose_text"]
        self._prose_segment = c["prose_segment"]
        # The batch steps, and for each the index (among them) of its run's first step (runs
        # never cross sessions).
        self.batch_at = np.flatnonzero(self.batch)
        runs_b = c["run"][self.batch_at]
        owners_b = self.owner[self.batch_at]
        starts = np.ones(self.batch_at.size, dtype=np.bool_)
        starts[1:] = (runs_b[1:] != runs_b[:-1]) | (owners_b[1:] != owners_b[:-1])
        self.run_start = np.maximum.accumulate(
            np.where(starts, np.arange(self.batch_at.size), 0)) if starts.size else starts
        self.n = n
        # Each distinct set of lower-cased names once (the parts a table was joined from each
        # wrote their own strings): per batch step, the index of its set in ``name_sets``.
        codes, inverse = unique_codes(self.names[self.batch_at],
                                      table.axis_length(STRINGS))
        by_text: dict[str, int] = {}
        set_of_code = np.array([by_text.setdefault(text, len(by_text))
                                for text in table.strings(codes)] or [0], dtype=np.int32)
        self.name_sets = [tuple(json.loads(text)) for text in by_text]
        self.batch_set = set_of_code[inverse.reshape(-1)] if codes.size else np.zeros(
            0, dtype=np.int32)
        self._obs: dict[tuple[str, ...], Any] = {}
        self._stagnation: dict[int, Any] = {STAGNATION_WINDOW: c["stagnation"]}

    def __len__(self) -> int:
        return self.n

    def observation(self, patterns: Sequence[str]) -> Any:
        """Per batch step (``batch_at``): an observation batch under ``patterns`` (as
        :meth:`PreparedMessages.observation_flags`)."""
        key = tuple(patterns)
        found = self._obs.get(key)
        if found is None:
            lowered = [p.lower() for p in key]
            flags = np.array([bool(lowered) and all(is_observation_name(n, lowered)
                                                    for n in names)
                              for names in self.name_sets] or [False], dtype=np.bool_)
            found = flags[self.batch_set]
            if len(self._obs) >= 8:
                self._obs.pop(next(iter(self._obs)))
            self._obs[key] = found
        return found

    def stagnation(self, max_steps: int) -> Any:
        """The stagnation count of every recorded prose step (aligned with ``prose``)."""
        found = self._stagnation.get(max_steps)
        if found is None:
            found = stagnation_counts(self.prose_owner, self._prose_text, self._prose_segment,
                                      max_steps)
            if len(self._stagnation) >= 8:
                self._stagnation.pop(next(k for k in self._stagnation
                                          if k != STAGNATION_WINDOW))
            self._stagnation[max_steps] = found
        return found


def run_columns(pack: Pack, config: GglibConfig) -> dict[str, Any]:
    """Every session's first refusal and refusal count under ``config``, as arrays (see
    :class:`loopscope.engines.base.RunColumns`), by the rules of
    :meth:`PreparedMessages.first_refusal_index` and the steps' walk applied to every step at
    once: a batch step is refused from the first step of its run whose no-refusal count or
    total exceeds its class's threshold; a recorded prose step when its stagnation count
    exceeds ``max_stagnation_steps``. gglib never warns."""
    S = config.max_repeated_batch_steps
    O = config.max_observation_steps  # noqa: E741 - the spec's name
    observation_max = O if O is not None else S
    ceiling = observation_max if observation_max > S else S
    batch_at = pack.batch_at
    n = len(pack)
    refused_at: list[Any] = []
    first_at: list[Any] = []
    if batch_at.size:
        # Over the batch steps only: their count, total and class.
        obs = pack.observation(config.observation_tools)
        count, total = pack.count[batch_at], pack.total[batch_at]
        if observation_max == S:
            cond = count > S
        else:
            cond = np.where(obs, count > observation_max, count > S)
        over = total > ceiling
        if O is not None:
            over &= ~(obs & ~pack.costly[batch_at])  # read-only, not costly: no ceiling
        cond |= over
        # Refused from the first step meeting ``cond`` in their run on.
        sums = np.cumsum(cond, dtype=np.int32)
        refuse = sums > (sums - cond)[pack.run_start]
        refused_at.append(batch_at[refuse])
        first_at.append(batch_at[cond])
    if pack.prose.size:
        M = config.max_stagnation_steps
        stagnated = pack.prose[pack.stagnation(M) > M]
        refused_at.append(stagnated)
        first_at.append(stagnated)
    refused = np.concatenate(refused_at) if refused_at else np.zeros(0, dtype=np.int64)
    refusals = np.bincount(pack.owner[refused], minlength=n).astype(np.int64)
    flagged = _merged(first_at)
    first = first_of_each(flagged, pack.owner[flagged], n)
    # Detector codes: 0 loop (a batch step), 1 stagnation (a prose step).
    return {"refusals": refusals, "warnings": np.zeros(n, dtype=np.int64), "first": first,
            "detector": pack.detector, "turn": pack.turn, "call": pack.call,
            "offsets": pack.offsets}


def _merged(parts: list[Any]) -> Any:
    """Sorted step positions from sorted parts."""
    if not parts:
        return np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0]
    out = np.concatenate(parts)
    out.sort(kind="stable")
    return out


DETECTORS = ("loop", "stagnation")
"""Detector names by the codes of :func:`run_columns`."""


def table_spec(engine: BaseEngine[Any, Any], version: str | None = None) -> TableSpec:
    """The table of gglib's prepared sessions: these columns, one row a session
    (:func:`table_columns` writes them, :func:`decode_row` reads one back)."""
    return TableSpec(engine.name, engine.prepare_key(version), SCHEMA, table_columns, decode_row,
                     check)


def run_many(engine: BaseEngine[Any, Any], prepared: Sequence[Any], config: GglibConfig
             ) -> RunColumns | None:
    """A vectorised pass over the corpus's steps (:func:`run_columns`), the pack kept with a
    table or a list that keeps derived data; None when ``prepared`` holds another engine's
    data (the engine then runs it session by session)."""
    def pack_of(prepared: Sequence[Any]) -> Pack | None:
        if isinstance(prepared, PreparedTable):
            return Pack(prepared) if prepared.engine == engine.name else None
        if not all(type(p) is PreparedSession for p in prepared):
            return None
        return Pack(table_spec(engine).table(prepared))

    pack = packed(prepared, (engine.name, "pack"), pack_of)
    if pack is None:
        return None
    return columns_of(run_columns(pack, config), lambda i: engine.run(prepared[i], config),
                      DETECTORS)
