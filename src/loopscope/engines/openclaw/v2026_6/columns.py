"""OpenClaw's prepared sessions of a whole corpus as one table (:mod:`loopscope.engines.table`),
and the corpus-wide re-run over it (:func:`run_columns`).

:func:`table_columns` writes prepared sessions as columns (one entry per session and per call,
each session's tool names, argument hashes, result hashes and unknown-tool names, its
transcript operations when it has a compaction, and a string pool); :func:`decode_row` gives
one session's :class:`~.fast.PreparedSession` back (a property test:
its JSON codec writing is the original's). A table carries the detector's counts of the
default ``historySize``; :func:`window_counters` counts any other window for every call of the
corpus in a few vectorised passes (equal to :meth:`PreparedSession.counters`, a property test).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from loopscope.engines.openclaw.shared.guard import COMPACTION_OP
from loopscope.engines.openclaw.shared.session import ENGINE_NAME
from loopscope.engines.openclaw.v2026_6.config import DEFAULT_HISTORY_SIZE, OpenClawConfig
from loopscope.engines.openclaw.v2026_6.fast import (
    _DETECTOR_CODES,
    PREPARE_KEY,
    Counters,
    HashesByCall,
    PreparedSession,
    _position_of,
    code_tables,
    run,
)
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
)

__all__ = ["SCHEMA", "Pack", "decode_row", "pack", "run_columns", "table_columns", "table_spec",
           "window_counters"]

_CALL = "call"
_COUNTER_FIELDS = ("no_progress", "latest_result", "recent", "unknown_streak", "unknown_name",
                   "ping_pong", "ping_pong_evidence", "ping_pong_last", "peak")

SCHEMA: dict[str, Column] = {
    "id": Column("int32", SESSION, STRINGS),
    "source": Column("int32", SESSION, STRINGS),
    "format": Column("int32", SESSION, STRINGS),
    "call_start": Column("int64", SESSION, _CALL, starts=True),
    "tool_start": Column("int64", SESSION, "tool", starts=True),
    "args_start": Column("int64", SESSION, "args", starts=True),
    "result_start": Column("int64", SESSION, "result", starts=True),
    "unknown_start": Column("int64", SESSION, "unknown", starts=True),
    "op_start": Column("int64", SESSION, "op", starts=True),
    # Per call; the codes are the session's own (1-based; 0 = none for results and unknown
    # tools), as in PreparedSession.
    "turn": Column("int32", _CALL),
    "call": Column("int32", _CALL),
    "run": Column("int32", _CALL),
    "blocked": Column("bool", _CALL),
    "poll": Column("bool", _CALL),
    "tool_code": Column("int32", _CALL),
    "args_code": Column("int32", _CALL),
    "result_code": Column("int32", _CALL),
    "unknown_code": Column("int32", _CALL),
    "run_start": Column("int32", _CALL),
    # The detector's counts under the default historySize (Counters' fields).
    **{f"w_{name}": Column("bool" if name == "ping_pong_evidence" else "int32", _CALL)
       for name in _COUNTER_FIELDS},
    # Each session's tool names, argument hashes, result hashes and unknown-tool names, by
    # code - 1; its operations (run starts, compactions and calls) when it has a compaction.
    "tool": Column("int32", "tool", STRINGS),
    "args": Column("int32", "args", STRINGS),
    "result": Column("int32", "result", STRINGS),
    "unknown": Column("int32", "unknown", STRINGS),
    "op": Column("int32", "op"),
    **pool_schema(),
}


def table_columns(prepared: Sequence[PreparedSession]) -> dict[str, Any]:
    """The columns of ``prepared``, in order."""
    pool = StringPool()
    code = pool.code
    codes = pool.codes
    per_session: dict[str, list[int]] = {k: [] for k in (
        "id", "source", "format", "calls", "tools", "args", "results", "unknowns", "ops")}
    calls: dict[str, list[Any]] = {k: [] for k in (
        "turn", "call", "run", "blocked", "poll", "tool_code", "args_code", "result_code",
        "unknown_code", "run_start", *(f"w_{f}" for f in _COUNTER_FIELDS))}
    tool_col: list[int] = []
    args_col: list[int] = []
    result_col: list[int] = []
    unknown_col: list[int] = []
    op_col: list[int] = []
    # Freshly prepared sessions (ingest's) have no counts yet: those of the default window are
    # counted for all of them at once (window_counters, a property test holds it equal to
    # each session's own count) and handed to each session as its own count would have been.
    # When some session was already counted, each session gives its own.
    at_once = all(DEFAULT_HISTORY_SIZE not in p._counters for p in prepared)
    tool_empty: list[bool] = []
    for p in prepared:
        tools, first_args, hashes = code_tables(p)
        per_session["id"].append(code(p.session))
        per_session["source"].append(code(p.source))
        per_session["format"].append(code(p.format))
        per_session["calls"].append(p.n)
        per_session["tools"].append(len(tools))
        per_session["args"].append(len(first_args))
        per_session["results"].append(len(hashes))
        per_session["unknowns"].append(len(p.unknown_names))
        per_session["ops"].append(len(p.ops))
        tool_col += codes(tools)
        args_col += codes(first_args)
        result_col += codes(hashes)
        unknown_col += codes(p.unknown_names)
        op_col += p.ops
        calls["turn"] += p.turn
        calls["call"] += p.call
        calls["run"] += p.run
        calls["blocked"] += p.recorded_block
        calls["poll"] += p.poll
        calls["tool_code"] += p.tool_code
        calls["args_code"] += p.args_code
        calls["result_code"] += p.result_code
        calls["unknown_code"] += p.unknown_code
        calls["run_start"] += p.run_start
        if at_once:
            tool_empty += p.tool_empty
            continue
        counters = p.counters(DEFAULT_HISTORY_SIZE)
        for f in _COUNTER_FIELDS:
            calls[f"w_{f}"] += getattr(counters, f)
    out: dict[str, Any] = {
        "id": np.array(per_session["id"], dtype=np.int32),
        "source": np.array(per_session["source"], dtype=np.int32),
        "format": np.array(per_session["format"], dtype=np.int32),
        "call_start": starts_of(per_session["calls"]),
        "tool_start": starts_of(per_session["tools"]),
        "args_start": starts_of(per_session["args"]),
        "result_start": starts_of(per_session["results"]),
        "unknown_start": starts_of(per_session["unknowns"]),
        "op_start": starts_of(per_session["ops"]),
        "tool": np.array(tool_col, dtype=np.int32), "args": np.array(args_col, dtype=np.int32),
        "result": np.array(result_col, dtype=np.int32),
        "unknown": np.array(unknown_col, dtype=np.int32), "op": np.array(op_col, dtype=np.int32),
        **pool.columns(),
    }
    for name, values in calls.items():
        if not (at_once and name.startswith("w_")):
            out[name] = np.array(values, dtype=SCHEMA[name].dtype)
    if at_once:
        _count_at_once(prepared, out, tool_empty)
    return out


def _count_at_once(prepared: Sequence[PreparedSession], out: dict[str, Any],
                   tool_empty: list[bool]) -> None:
    """The ``w_`` columns of ``out`` (the other columns of ``prepared``) counted for every call
    at once, and each session's :meth:`PreparedSession.counters` of the default window set to
    its part of them (what counting it alone gives)."""
    starts = out["call_start"]
    total = len(out["turn"])
    owner = session_of(starts, total)
    position = np.arange(total, dtype=np.int64) - starts[owner]
    counted = window_counters(owner, position, out["args_code"], out["result_code"],
                              out["unknown_code"], out["tool_code"], out["run_start"],
                              np.array(tool_empty, dtype=np.bool_), DEFAULT_HISTORY_SIZE)
    as_lists = []
    for f in _COUNTER_FIELDS:
        out[f"w_{f}"] = counted[f].astype(SCHEMA[f"w_{f}"].dtype, copy=False)
        as_lists.append(counted[f].tolist())
    bounds = [*starts.tolist(), total]
    for s, p in enumerate(prepared):
        a, b = bounds[s], bounds[s + 1]
        p._counters[DEFAULT_HISTORY_SIZE] = Counters(*(values[a:b] for values in as_lists))


def _sizes(table: PreparedTable, starts: str, axis: str) -> Any:
    column = table.columns[starts]
    return np.diff(np.append(column, table.axis_length(axis)))


def check(table: PreparedTable) -> None:
    """What :func:`decode_row`, :func:`window_counters` and :func:`run_columns` rely on beyond
    the schema (each code and position inside its session's own range); :class:`TableError`
    otherwise."""
    c = table.columns
    n = table.axis_length(_CALL)
    if not n:
        return
    owner = session_of(c["call_start"], n)
    position = np.arange(n, dtype=np.int64) - c["call_start"][owner]
    calls = _sizes(table, "call_start", _CALL)[owner]
    limits = {
        "tool_code": (1, _sizes(table, "tool_start", "tool")[owner]),
        "args_code": (1, _sizes(table, "args_start", "args")[owner]),
        "result_code": (0, _sizes(table, "result_start", "result")[owner]),
        "unknown_code": (0, _sizes(table, "unknown_start", "unknown")[owner]),
        "w_latest_result": (0, _sizes(table, "result_start", "result")[owner]),
        "w_unknown_name": (0, _sizes(table, "unknown_start", "unknown")[owner]),
        "run_start": (0, position),
        "w_ping_pong_last": (-1, calls - 1),
    }
    for name, (low, high) in limits.items():
        value = c[name]
        if bool((value < low).any()) or bool((value > high).any()):
            raise TableError(f"{name}: outside its session's range")
    for name in ("turn", "call", "run", "w_no_progress", "w_recent", "w_unknown_streak",
                 "w_ping_pong", "w_peak"):
        if int(c[name].min()) < 0:
            raise TableError(f"{name}: negative")
    ops = c["op"]
    if ops.size:
        op_owner = session_of(c["op_start"], len(ops))
        if bool((ops < COMPACTION_OP).any()) or bool(
                (ops >= _sizes(table, "call_start", _CALL)[op_owner]).any()):
            raise TableError("op: outside its session's calls")


def decode_row(table: PreparedTable, i: int) -> PreparedSession:
    """Session ``i`` of an OpenClaw table."""
    c = table.columns
    a, b = table.span("call_start", i)
    strings = table.strings

    def part(starts: str, column: str) -> list[str]:
        begin, end = table.span(starts, i)
        return strings(c[column][begin:end].tolist())

    tools = part("tool_start", "tool")
    args = part("args_start", "args")
    hashes = part("result_start", "result")
    unknown_names = part("unknown_start", "unknown")
    oa, ob = table.span("op_start", i)
    tool_code = c["tool_code"][a:b].tolist()
    args_code = c["args_code"][a:b].tolist()
    result_code = c["result_code"][a:b].tolist()
    unknown_code = c["unknown_code"][a:b].tolist()
    run_of = c["run"][a:b].tolist()
    tool_name = [tools[k - 1] for k in tool_code]
    counters = Counters(*(c[f"w_{f}"][a:b].tolist() for f in _COUNTER_FIELDS))
    return PreparedSession(
        session=table.string(int(c["id"][i])), source=table.string(int(c["source"][i])),
        format=table.string(int(c["format"][i])), turn=c["turn"][a:b].tolist(),
        call=c["call"][a:b].tolist(), tool_name=tool_name, run=run_of,
        recorded_block=c["blocked"][a:b].tolist(),
        args_hash=[args[k - 1] for k in args_code],
        result_hash=HashesByCall(result_code, hashes),
        unknown_tool=[unknown_names[k - 1] if k else None for k in unknown_code],
        args_code=args_code, result_code=result_code, unknown_code=unknown_code,
        tool_code=tool_code, tool_empty=[name == "" for name in tool_name],
        poll=c["poll"][a:b].tolist(), run_start=c["run_start"][a:b].tolist(),
        ops=c["op"][oa:ob].tolist(), unknown_names=unknown_names, result_hashes=hashes,
        run_ids=[f"run-{r}" for r in run_of], _counters={DEFAULT_HISTORY_SIZE: counters},
    )


def _run_lengths(breaks: Any) -> Any:
    """For each position: how many positions since the last break (itself included), i.e.
    ``position - (last position <= it where breaks is True) + 1``."""
    index = np.arange(len(breaks), dtype=np.int64)
    return index - np.maximum.accumulate(np.where(breaks, index, 0)) + 1


def window_counters(owner: Any, position: Any, args: Any, res: Any, unk: Any, tool: Any,
                    run_start: Any, tool_empty: Any, history_size: int) -> dict[str, Any]:
    """:class:`~.fast.Counters`' fields (each an array over every
    call of a corpus) under ``history_size``, from the calls' session (``owner``), position in
    it, the session's own argument, result, unknown-tool and tool codes, run start (a
    position) and whether the tool's name is empty. The rules of ``_compute_counters`` over
    every call at once:

    * the window before call ``i`` is its run's calls ``lo .. i - 1``, ``lo = max(i -
      historySize, run start)``;
    * ``recent``: calls of the window with ``i``'s arguments;
    * ``no_progress``: among the session's earlier calls with ``i``'s arguments and a result
      hash, those inside the window, capped by how many of them in a row (the newest
      included) got the newest one's result;
    * ``unknown_streak``: when call ``i - 1`` is in the window, has ``i``'s tool and an
      unknown-tool name, the length of the run of calls (ending there) with that tool and name,
      capped by the window;
    * ``ping_pong``: when ``i - 1`` is in the window and ends an alternation of two argument
      hashes (its length capped by the window) of at least two calls that ``i`` continues (it
      has the arguments of ``i - 2``, whose tool name is not empty), that length + 1; its
      evidence: the results two apart were equal along it.
    """
    n = len(args)
    if not n:
        empty_int = np.zeros(0, dtype=np.int32)
        return {f: (np.zeros(0, dtype=np.bool_) if f == "ping_pong_evidence" else empty_int)
                for f in _COUNTER_FIELDS}
    g = np.arange(n, dtype=np.int64)
    position = position.astype(np.int64)
    base = g - position
    lo = base + np.maximum(position - history_size, run_start.astype(np.int64))
    # Group the calls by (session, arguments), each group in call order.
    order = np.lexsort((g, args, owner))
    so, sa = owner[order], args[order]
    new = np.ones(n, dtype=np.bool_)
    new[1:] = (so[1:] != so[:-1]) | (sa[1:] != sa[:-1])
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(new) - 1
    keyed = group * n + g
    sorted_keys = keyed[order]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = g
    window_low = group * n + lo
    recent = rank - np.searchsorted(sorted_keys, window_low)
    # no-progress: the group's calls with a result hash.
    hashed = order[res[order] != 0]
    no_progress = np.zeros(n, dtype=np.int64)
    latest = np.zeros(n, dtype=np.int64)
    if hashed.size:
        h_keys = keyed[hashed]
        h_res = res[hashed]
        h_group = group[hashed]
        breaks = np.ones(hashed.size, dtype=np.bool_)
        breaks[1:] = (h_group[1:] != h_group[:-1]) | (h_res[1:] != h_res[:-1])
        equal_run = _run_lengths(breaks)
        before = np.searchsorted(h_keys, keyed)
        in_window = before - np.searchsorted(h_keys, window_low)
        has = in_window > 0
        last = np.maximum(before - 1, 0)
        no_progress = np.where(has, np.minimum(equal_run[last], in_window), 0)
        latest = np.where(has, h_res[last], 0)
    # The previous call, when it is in the window (same run, same session).
    j = np.maximum(g - 1, 0)
    previous_in = (position >= 1) & (g - 1 >= lo)
    span = g - lo
    # unknown-tool streak
    named = unk != 0
    same_unknown = np.zeros(n, dtype=np.bool_)
    same_unknown[1:] = (position[1:] >= 1) & (unk[1:] == unk[:-1]) & (tool[1:] == tool[:-1])
    unknown_run = np.where(named, _run_lengths(~same_unknown), 0)
    streak_on = previous_in & (tool[j] == tool) & named[j]
    unknown_streak = np.where(streak_on, np.minimum(unknown_run[j], span), 0)
    unknown_name = np.where(streak_on, unk[j], 0)
    # ping-pong: the strict two-hash alternation ending at each call (session-wide) ...
    repeat = np.zeros(n, dtype=np.bool_)
    repeat[1:] = (position[1:] >= 1) & (args[1:] == args[:-1])
    extends = np.zeros(n, dtype=np.bool_)
    extends[2:] = (position[2:] >= 2) & (args[2:] == args[:-2]) & ~repeat[2:]
    alternation = np.where(extends, _run_lengths(~extends) + 1,
                           np.where((position == 0) | repeat, 1, 2))
    # ... and the hashed stretch whose results two apart stayed equal.
    hashed_call = res != 0
    after_hashed = np.zeros(n, dtype=np.bool_)
    after_hashed[1:] = hashed_call[:-1] & (position[1:] >= 1)
    third = np.zeros(n, dtype=np.bool_)
    third[1:] = after_hashed[:-1]
    third &= after_hashed
    same_two_back = np.zeros(n, dtype=np.bool_)
    same_two_back[2:] = res[2:] == res[:-2]
    chained = hashed_call & third & same_two_back
    stable = np.where(~hashed_call, 0, np.where(
        ~after_hashed, 1, np.where(~third, 2, np.where(chained, _run_lengths(~chained) + 1, 2))))
    tail = np.minimum(alternation[j], span)
    k = np.maximum(g - 2, 0)
    ping_on = previous_in & (tail >= 2) & (args == args[k]) & ~tool_empty[k]
    ping_pong = np.where(ping_on, tail + 1, 0)
    evidence = ping_on & (stable[j] >= tail)
    ping_last = np.where(ping_on, position - 1, -1)
    peak = np.maximum(np.maximum(no_progress, recent), np.maximum(unknown_streak, ping_pong))
    as32 = np.int32
    return {"no_progress": no_progress.astype(as32), "latest_result": latest.astype(as32),
            "recent": recent.astype(as32), "unknown_streak": unknown_streak.astype(as32),
            "unknown_name": unknown_name.astype(as32), "ping_pong": ping_pong.astype(as32),
            "ping_pong_evidence": evidence, "ping_pong_last": ping_last.astype(as32),
            "peak": peak.astype(as32)}


class Pack:
    """A table laid out for :func:`run_columns` (one entry per call, sessions one after the
    other)."""

    def __init__(self, table: PreparedTable) -> None:
        c = table.columns
        self.table = table
        total = table.axis_length(_CALL)
        self.n = len(table)
        self.offsets = np.append(c["call_start"], total).astype(np.int64)
        self.owner = session_of(c["call_start"], total)
        self.position = (np.arange(total, dtype=np.int64) - c["call_start"][self.owner]
                         ).astype(np.int32)
        self.turn = c["turn"]
        self.call = c["call"]
        self.poll = c["poll"]
        self.with_ops = _sizes(table, "op_start", "op") > 0
        self._windows: dict[int, tuple[Any, ...]] = {DEFAULT_HISTORY_SIZE: tuple(
            c[f"w_{f}"] for f in ("no_progress", "recent", "unknown_streak", "ping_pong",
                                  "ping_pong_evidence", "peak"))}
        self._tool_empty: Any = None

    def __len__(self) -> int:
        return self.n

    def window(self, history_size: int) -> tuple[Any, ...]:
        """``(no_progress, recent, unknown_streak, ping_pong, evidence, peak)`` of every call."""
        found = self._windows.get(history_size)
        if found is None:
            c = self.table.columns
            counters = window_counters(
                self.owner, self.position, c["args_code"], c["result_code"], c["unknown_code"],
                c["tool_code"], c["run_start"], self.tool_empty(), history_size)
            found = tuple(counters[f] for f in ("no_progress", "recent", "unknown_streak",
                                                "ping_pong", "ping_pong_evidence", "peak"))
            if len(self._windows) >= 4:
                self._windows.pop(next(k for k in self._windows if k != DEFAULT_HISTORY_SIZE))
            self._windows[history_size] = found
        return found

    def tool_empty(self) -> Any:
        """Per call: its tool's name is empty."""
        if self._tool_empty is None:
            c = self.table.columns
            pool_sizes = _sizes(self.table, "string_start", "string_byte")
            entry = c["tool_start"][self.owner] + c["tool_code"] - 1
            self._tool_empty = pool_sizes[c["tool"][entry]] == 0 if entry.size else (
                np.zeros(0, dtype=np.bool_))
        return self._tool_empty


def run_columns(pack: Pack, config: OpenClawConfig) -> dict[str, Any]:
    """Every session's first refusal, refusal and warning counts under ``config``, as arrays
    (see :class:`loopscope.engines.base.RunColumns`): ``_evaluate``'s precedence applied to
    every call at once. Sessions the post-compaction guard may act on (with a compaction,
    guard on) are run one by one through :func:`~.fast.run`."""
    r = config.resolved
    n_sessions = len(pack)
    offsets = pack.offsets
    total = int(offsets[-1])
    detector = np.full(total, -1, dtype=np.int8)
    refused = warned = np.zeros(0, dtype=np.int64)
    if r.detection_on and total:
        streak, recent, unknown, ping, evidence, peak = pack.window(r.history_size)
        warning, critical = r.warning_threshold, r.critical_threshold
        floor = warning if warning < r.unknown_tool_threshold else r.unknown_tool_threshold
        # Only the calls whose largest count reaches the lowest threshold can be flagged.
        at = np.flatnonzero(peak >= floor)
        streak, recent, unknown, ping = streak[at], recent[at], unknown[at], ping[at]
        evidence, poll = evidence[at], pack.poll[at]
        never = np.zeros(at.size, dtype=np.bool_)
        poll_on = poll if r.known_poll_no_progress_on else never
        # (condition, refuses?, detector code) in _evaluate's order: the first that holds wins.
        chain: list[tuple[Any, bool, int]] = [
            (unknown >= r.unknown_tool_threshold, True, 0),
            (streak >= r.global_circuit_breaker_threshold, True, 1),
            (poll_on & (streak >= critical), True, 2),
            (poll_on & (streak >= warning), False, 2),
        ]
        if r.ping_pong_on:
            chain += [((ping >= critical) & evidence, True, 3), (ping >= warning, False, 3)]
        if r.generic_repeat_on:
            chain += [(~poll & (streak >= critical), True, 4),
                      (~poll & (recent >= warning), False, 4)]
        code = np.full(at.size, -1, dtype=np.int8)
        refuses = np.zeros(at.size, dtype=np.bool_)
        for cond, refusing, which in reversed(chain):  # the earliest condition written last
            code[cond] = which
            refuses[cond] = refusing
        hit = code >= 0
        detector[at[hit]] = code[hit]
        refused = at[hit & refuses]
        warned = at[hit & ~refuses]
    owner = pack.owner
    refusals = np.bincount(owner[refused], minlength=n_sessions).astype(np.int64)
    warnings = np.bincount(owner[warned], minlength=n_sessions).astype(np.int64)
    first = first_of_each(refused, owner[refused], n_sessions)
    out = {"refusals": refusals, "warnings": warnings, "first": first, "detector": detector,
           "turn": pack.turn, "call": pack.call, "offsets": offsets}
    if r.guard_enabled and pack.with_ops.any():
        for s in np.flatnonzero(pack.with_ops).tolist():
            p = pack.table[s]
            one = run(p, config)
            refusals[s], warnings[s] = one.refusal_count, one.warning_count
            f = one.first_refusal
            first[s] = -1 if f is None else int(offsets[s]) + _position_of(p, f)
            if f is not None:
                detector[first[s]] = _DETECTOR_CODES.index(f.detector) if (
                    f.detector in _DETECTOR_CODES) else len(_DETECTOR_CODES)
    return out



def table_spec() -> TableSpec:
    """The configurable releases' prepared data as one table of columns."""
    return TableSpec(ENGINE_NAME, PREPARE_KEY, SCHEMA, table_columns, decode_row, check)


def pack(prepared: Sequence[Any]) -> Pack | None:
    """The arrays of ``prepared`` (a table of this release's prepared data, or this release's
    prepared objects), or None for another release's."""
    if isinstance(prepared, PreparedTable):
        ok = prepared.engine == ENGINE_NAME and prepared.key == PREPARE_KEY
        return Pack(prepared) if ok else None
    if not all(type(p) is PreparedSession for p in prepared):
        return None
    return Pack(table_spec().table(prepared))
