"""Qwen Code's prepared sessions of a whole corpus as columns, and the corpus-wide re-run over
them (:func:`run_columns`).

A step is refused when one of its events is detected (shadow mode: every detection is cleared
and the replay goes on). What each check reads, and which part of it a configuration changes:

* **Always on, per tool call** (:meth:`~.upstream.LoopDetectionService.check_always_on_safeties`,
  whatever ``skipLoopDetection`` says). The consecutive-identical check runs on every call, so
  its run length (``rep``) is fixed by the session; so is the cap's largest key repeat
  (``capmax``: counted for every call before any check). The two later checks run only when
  the ones before did not fire (``a or b or c``): the git-inspection streak counts the
  inspection calls in a row among the calls the consecutive check let through, and the cap's
  total counts the calls neither check fired on. Each is a run length or a count within the
  prompt over a subsequence of the calls: a vectorised pass each.
* **Opt-in, per tool call** (``skipLoopDetection`` false): the four checks read only the
  calls fed to them, those the always-on tier let through. Over that subsequence, the times
  the call came in the prompt (global duplicate), the alternating run, the reads among the
  last 15 and the same-name run are again counts and run lengths: vectorised passes.
* **Opt-in, per reply** (repeated text, repeated thoughts). Their walk depends on the reply
  text and on where the state is cleared: a prompt, a list, table or heading line, and every
  tool call fed to the heuristics. The table keeps, per reply step, what the walk with every
  call fed finds under Qwen Code's own ``CONTENT_LOOP_THRESHOLD`` and
  ``THOUGHT_REPEAT_THRESHOLD`` (``text_hit``), and per call whether that walk had text or
  thoughts pending when the call cleared them (``dirty``). A call the always-on tier fires on
  is not fed, so it clears nothing: when nothing was pending, clearing changed nothing and the
  walk is the same; nor does it matter when no reply text or thought comes before the next
  fed call or the prompt's end (either clears everything). So a session's reply verdicts are
  the table's unless some call the always-on tier fires on had text pending and more text
  follows; such a session is replayed one by one (the per-session rule itself), as is any
  session with reply text or thoughts under a changed content or thought constant (a
  what-if).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from loopscope.engines.base import RunColumns, SessionReplay
from loopscope.engines.corpus_columns import JsonColumns, schema_arrays
from loopscope.engines.qwen_code.config import QwenConfig
from loopscope.engines.qwen_code.events import CallItem, ContentItem, Item, PromptItem
from loopscope.engines.qwen_code.fast import PreparedSession
from loopscope.engines.qwen_code.upstream import (
    ALTERNATING,
    CAP,
    CHANTING,
    CONSECUTIVE,
    CONTENT_CHUNK_SIZE,
    GLOBAL_DUPLICATE,
    READ_FILE,
    READ_LIKE_NAME_PREFIXES,
    READ_LIKE_TOOL_NAMES,
    SHELL_STAGNATION,
    STAGNATION,
    STATEFUL_READ_TOOLS,
    THOUGHTS,
    Constants,
    Content,
    LoopDetectionService,
    Thought,
)
from loopscope.engines.table import (
    SESSION,
    Column,
    PreparedTable,
    TableError,
    first_of_each,
    session_of,
)

if TYPE_CHECKING:
    from loopscope.engines.contract import BaseEngine
    from loopscope.engines.table import TableSpec

__all__ = ["DETECTORS", "SCHEMA", "Steps", "check", "run_columns", "run_many", "step_columns",
           "table_spec"]

_STEP: Final = "step"

DETECTORS: Final = (CONSECUTIVE, SHELL_STAGNATION, CAP, GLOBAL_DUPLICATE, ALTERNATING,
                    READ_FILE, STAGNATION, CHANTING, THOUGHTS)
"""Detector names by the codes of :func:`run_columns` (and of ``text_hit``)."""
_CODE: Final = {name: code for code, name in enumerate(DETECTORS)}

SCHEMA: Final[dict[str, Column]] = {
    "step_start": Column("int64", SESSION, _STEP, starts=True),
    "turn": Column("int32", _STEP),
    "call": Column("int32", _STEP),
    "prompt": Column("int32", _STEP),
    "key": Column("int32", _STEP),
    "name": Column("int32", _STEP),
    "rep": Column("int32", _STEP),
    "capmax": Column("int32", _STEP),
    "inspection": Column("bool", _STEP),
    "stateful": Column("bool", _STEP),
    "read_like": Column("bool", _STEP),
    "dirty": Column("bool", _STEP),
    "text_hit": Column("int8", _STEP),
    "text_kind": Column("int8", _STEP),
}
"""Per step: its turn, its call (-1: a reply step) and its prompt (the user messages before
it). Per tool-call step (-1 or 0 on a reply step): the resolved call's key and name as codes
of its session (equal codes, equal keys), the consecutive-identical run length ending there
(``rep``), the cap's largest key repeat so far in the prompt (``capmax``), whether it is a git
inspection command, a stateful read tool (``task_list``), a read-like tool, and whether text
or thoughts were pending when it cleared them (``dirty``). Per reply step (-1 / 0 on a call
step): the detector code of its first detection with every call fed (``text_hit``, -1: none)
and what it sends (``text_kind``: 0 nothing, 1 text, 2 a thought too)."""

_OWN: Final = Constants()


def _is_read_like(name: str) -> bool:
    return name in READ_LIKE_TOOL_NAMES or name.startswith(READ_LIKE_NAME_PREFIXES)


class _Walk(LoopDetectionService):
    """The service, with each text window's occurrences filed under the window itself
    rather than its SHA-256 (equal windows, equal digests; two different 50-unit windows with
    one SHA-256 are not known): the same walk, without hashing every window of the text."""

    def analyze_content_chunks_for_loop(self) -> bool:
        history = self.stream_content_history
        while self.last_content_index + CONTENT_CHUNK_SIZE <= len(history):
            start = self.last_content_index
            chunk = history[start:start + CONTENT_CHUNK_SIZE]
            if self.is_loop_detected_for_chunk(chunk, chunk):
                self.last_loop_type = CHANTING
                return True
            self.last_content_index += 1
        return False


def _session_rows(items: Sequence[Item], out: dict[str, list[Any]]) -> None:
    """One session's rows of :data:`SCHEMA` (but ``step_start``), appended to ``out``."""
    # The reply walk with every call fed to the heuristics, under Qwen Code's own constants.
    walk = _Walk(_OWN, skip=False, cap=0)
    keys: dict[str, int] = {}
    names: dict[str, int] = {}
    prompt = 0
    last_key = -1
    rep = 0
    counts: dict[int, int] = {}
    capmax = 0
    for item in items:
        if isinstance(item, PromptItem):
            prompt = item.prompt
            walk.reset("")
            last_key, rep, capmax = -1, 0, 0
            counts = {}
            continue
        out["turn"].append(item.turn)
        out["prompt"].append(prompt)
        if isinstance(item, ContentItem):
            events: list[Any] = [Thought("", item.thinking)] if item.thinking else []
            events.extend(Content(piece) for piece in item.pieces)
            hit = -1
            for event in events:
                walk.loop_detected = False
                if walk.add_and_check_heuristic_loops(event) and hit < 0:
                    hit = _CODE[walk.last_loop_type or ""]
            walk.loop_detected = False
            out["call"].append(-1)
            for name in ("key", "name"):
                out[name].append(-1)
            for name in ("rep", "capmax", "inspection", "stateful", "read_like", "dirty"):
                out[name].append(0)
            out["text_hit"].append(hit)
            out["text_kind"].append(2 if item.thinking else 1 if item.pieces else 0)
            continue
        assert isinstance(item, CallItem)
        p = item.prepared
        key = keys.setdefault(p.key, len(keys))
        rep = rep + 1 if key == last_key else 1
        last_key = key
        stateful = p.name in STATEFUL_READ_TOOLS
        if not stateful:
            count = counts[key] = counts.get(key, 0) + 1
            capmax = max(capmax, count)
        out["call"].append(item.call)
        out["key"].append(key)
        out["name"].append(names.setdefault(p.name, len(names)))
        out["rep"].append(rep)
        out["capmax"].append(capmax)
        out["inspection"].append(p.inspection)
        out["stateful"].append(stateful)
        out["read_like"].append(_is_read_like(p.name))
        out["dirty"].append(bool(walk.stream_content_history) or bool(walk.thought_history))
        out["text_hit"].append(-1)
        out["text_kind"].append(0)
        walk.add_and_check_heuristic_loops(p)
        walk.loop_detected = False


def step_columns(prepared: Sequence[Any]) -> dict[str, Any]:
    """The columns of :data:`SCHEMA` for prepared sessions (:class:`.fast.PreparedSession`)."""
    out: dict[str, list[Any]] = {name: [] for name in SCHEMA if name != "step_start"}
    starts: list[int] = []
    for p in prepared:
        starts.append(len(out["turn"]))
        _session_rows(p.items, out)
    return schema_arrays(SCHEMA, {"step_start": starts, **out})


def check(table: PreparedTable) -> None:
    """What :func:`run_columns` relies on beyond the schema: a call or none per step, codes and
    counts in range, and call data on call steps only."""
    cols = table.columns
    call = cols["call"]
    if not call.size:
        return
    if int(call.min()) < -1 or int(cols["turn"].min()) < 0 or int(cols["prompt"].min()) < 0:
        raise TableError("steps: a negative turn, call or prompt")
    calls = call >= 0
    for name in ("key", "name"):
        if bool((cols[name][calls] < 0).any()) or bool((cols[name][~calls] != -1).any()):
            raise TableError(f"{name}: a code on a reply step or none on a call")
    if bool((cols["rep"][calls] < 1).any()) or bool((cols["capmax"][calls] < 0).any()):
        raise TableError("steps: a call without its counts")
    hit, kind = cols["text_hit"], cols["text_kind"]
    if int(hit.min()) < -1 or int(hit.max()) >= len(DETECTORS) or int(kind.min()) < 0 or int(
            kind.max()) > 2:
        raise TableError("text_hit: a code outside the detectors")
    if bool((hit[calls] != -1).any()) or bool((kind[calls] != 0).any()):
        raise TableError("steps: reply data on a tool-call step")


class Steps:
    """A corpus's step columns laid out for :func:`run_columns` (made once per corpus): the
    tool-call steps' columns gathered, where each prompt begins, and the calls sorted by
    prompt and key (for the global-duplicate counts)."""

    __slots__ = (
        "call",
        "call_step",
        "capmax",
        "dirty",
        "group_begin",
        "group_order",
        "inspection",
        "key",
        "name",
        "owner",
        "prompt_end",
        "prompt_of",
        "read_like",
        "rep",
        "sessions",
        "stateful",
        "text_hit",
        "text_sessions",
        "text_steps",
        "thought_sessions",
        "turn",
    )

    def __init__(self, columns: Mapping[str, Any]) -> None:
        starts = columns["step_start"]
        self.turn, self.call = columns["turn"], columns["call"]
        self.sessions = len(starts)
        owner = session_of(starts, len(self.turn))
        self.owner = owner
        self.text_hit = columns["text_hit"]
        kind = columns["text_kind"]
        self.text_sessions = np.unique(owner[kind > 0])
        self.thought_sessions = np.unique(owner[kind == 2])
        self.text_steps = np.zeros(len(kind) + 1, dtype=np.int64)
        np.cumsum(kind > 0, out=self.text_steps[1:])
        at = np.flatnonzero(self.call >= 0)
        self.call_step = at
        self.key, self.name = columns["key"][at], columns["name"][at]
        self.rep, self.capmax = columns["rep"][at], columns["capmax"][at]
        self.inspection, self.stateful = columns["inspection"][at], columns["stateful"][at]
        self.read_like, self.dirty = columns["read_like"][at], columns["dirty"][at]
        prompt = np.asarray(columns["prompt"], dtype=np.int64)[at]
        call_owner = owner[at]
        new = np.ones(len(at), dtype=np.bool_)
        new[1:] = (call_owner[1:] != call_owner[:-1]) | (prompt[1:] != prompt[:-1])
        self.prompt_of = np.cumsum(new, dtype=np.int64) - 1
        # Where each call's prompt ends (a step position).
        step_prompt = np.asarray(columns["prompt"], dtype=np.int64)
        opens = np.ones(len(self.turn), dtype=np.bool_)
        opens[1:] = (owner[1:] != owner[:-1]) | (step_prompt[1:] != step_prompt[:-1])
        ends = np.append(np.flatnonzero(opens)[1:], len(self.turn))
        self.prompt_end = ends[(np.cumsum(opens, dtype=np.int64) - 1)[at]]
        # Calls grouped by (prompt, key), in call order within a group.
        group = self.prompt_of
        order = np.lexsort((np.arange(len(at)), self.key, group))
        first = np.ones(len(at), dtype=np.bool_)
        if len(at) > 1:
            g, k = group[order], self.key[order]
            first[1:] = (g[1:] != g[:-1]) | (k[1:] != k[:-1])
        self.group_order = order
        self.group_begin = _segment_starts(first)

    def __len__(self) -> int:
        return self.sessions


def _segment_starts(new: Any) -> Any:
    """For each item: the position where its segment begins (``new``: an item opens one)."""
    idx = np.arange(len(new), dtype=np.int64)
    return np.maximum.accumulate(np.where(new, idx, 0)) if len(new) else idx


def _run_length(flag: Any, begin: Any) -> Any:
    """For each item: how many items in a row, ending with it and within its segment (which
    begins at ``begin``), have ``flag`` (0 where it has not)."""
    idx = np.arange(len(flag), dtype=np.int64)
    if not len(flag):
        return idx
    last_off = np.maximum.accumulate(np.where(flag, -1, idx))
    return np.where(flag, idx - np.maximum(last_off + 1, begin) + 1, 0)


def _segment_cumsum(values: Any, begin: Any) -> Any:
    """The running sum of ``values`` within each segment (which begins at ``begin``)."""
    total = np.cumsum(values, dtype=np.int64)
    if not len(total):
        return total
    return total - (total[begin] - np.asarray(values, dtype=np.int64)[begin])


def _kept(steps: Steps, keep: Any) -> tuple[Any, Any]:
    """The calls ``keep`` (a mask) as positions, and for each, where its prompt begins among
    them."""
    kept = np.flatnonzero(keep)
    prompt = steps.prompt_of[kept]
    new = np.ones(len(kept), dtype=np.bool_)
    new[1:] = prompt[1:] != prompt[:-1]
    return kept, _segment_starts(new)


def _always_on(steps: Steps, config: QwenConfig) -> tuple[Any, Any]:
    """Per tool call: whether the always-on tier fires, and which check (a detector code)."""
    c = config.constants
    passed = steps.rep < c.tool_call_loop_threshold  # (the consecutive check did not fire)
    kept, begin = _kept(steps, passed)
    streak = _run_length(steps.inspection[kept], begin)
    shell = np.zeros(len(passed), dtype=np.bool_)
    shell[kept] = streak >= c.stagnation_threshold
    counted = passed & ~shell
    cap_fire = np.zeros(len(passed), dtype=np.bool_)
    cap = config.max_tool_calls_per_turn
    if cap > 0:
        kept, begin = _kept(steps, counted)
        total = np.arange(1, len(kept) + 1, dtype=np.int64) - begin
        hard = cap * c.adaptive_cap_hard_multiplier
        stuck = steps.capmax[kept] >= c.global_duplicate_threshold
        cap_fire[kept] = (total > cap) & (config.explicit | (total > hard) | stuck)
    fired = ~passed | shell | cap_fire
    code = np.where(~passed, _CODE[CONSECUTIVE],
                    np.where(shell, _CODE[SHELL_STAGNATION], _CODE[CAP])).astype(np.int8)
    return fired, code


def _heuristics(steps: Steps, fed: Any, c: Constants) -> tuple[Any, Any]:
    """Per tool call: whether the opt-in checks fire on it (only the ``fed`` calls reach them),
    and which (the last that fired, as the service reports)."""
    kept, begin = _kept(steps, fed)
    n = len(kept)
    pos = np.arange(n, dtype=np.int64) - begin
    key, name = steps.key[kept], steps.name[kept]
    # Global duplicate: the times this call came among the fed calls of the prompt.
    counted = fed & ~steps.stateful
    order = steps.group_order
    times = np.empty(len(fed), dtype=np.int64)
    times[order] = _segment_cumsum(counted[order], steps.group_begin)
    duplicate = (counted & (times >= c.global_duplicate_threshold))[kept]
    # Alternating: the last 2 × cycles keys are A B A B … with A ≠ B.
    differs = np.zeros(n, dtype=np.bool_)
    differs[1:] = key[1:] != key[:-1]
    differs &= pos >= 1
    period = np.zeros(n, dtype=np.bool_)
    period[2:] = key[2:] == key[:-2]
    period &= pos >= 2
    window = 2 * c.alternating_pattern_cycles
    alternating = (pos >= window - 1) & differs & (_run_length(period, begin) >= window - 2)
    # Read-file loop: reads among the last 15 fed calls, once a non-read call came.
    reads = steps.read_like[kept]
    prefix = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(reads, out=prefix[1:])
    recent = prefix[1:] - prefix[np.maximum(np.arange(1 - 15, n + 1 - 15, dtype=np.int64),
                                            begin)]
    seen_other = _segment_cumsum(~reads, begin) > 0
    read_loop = seen_other & (recent >= c.file_read_threshold)
    # Action stagnation: the same tool name in a row.
    same = np.zeros(n, dtype=np.bool_)
    same[1:] = name[1:] == name[:-1]
    same &= pos >= 1
    stagnation = _run_length(same, begin) + 1 >= c.stagnation_threshold
    fired = np.zeros(len(fed), dtype=np.bool_)
    fired[kept] = duplicate | alternating | read_loop | stagnation
    code = np.full(len(fed), -1, dtype=np.int8)
    code[kept] = np.select([stagnation, read_loop, alternating, duplicate],
                           [_CODE[STAGNATION], _CODE[READ_FILE], _CODE[ALTERNATING],
                            _CODE[GLOBAL_DUPLICATE]], -1)
    return fired, code


def one_by_one(steps: Steps, config: QwenConfig, always: Any) -> Any:
    """The sessions :func:`run_columns` replays one by one under ``config`` (sorted): with the
    opt-in checks on, those where a call the always-on tier fires on had reply text or
    thoughts pending and more comes before the next call fed to the heuristics (or the
    prompt's end: either clears it all), and those with reply text (thoughts) under a changed
    content (thought) constant."""
    if config.skip_loop_detection:
        return np.zeros(0, dtype=np.int64)
    pending = np.flatnonzero(always & steps.dirty)
    # The next fed call at or after each call (a step position; past the end: none).
    fed_at = np.where(always, len(steps.turn), steps.call_step)
    after = np.minimum.accumulate(fed_at[::-1])[::-1][pending]
    end = np.minimum(after, steps.prompt_end[pending])
    text = steps.text_steps
    more = text[end] - text[steps.call_step[pending] + 1] > 0
    parts = [steps.owner[steps.call_step[pending[more]]]]
    c = config.constants
    if c.content_loop_threshold != _OWN.content_loop_threshold:
        parts.append(steps.text_sessions)
    elif c.thought_repeat_threshold != _OWN.thought_repeat_threshold:
        parts.append(steps.thought_sessions)
    return np.unique(np.concatenate(parts))


def run_columns(steps: Steps, config: QwenConfig,
                replay_of: Callable[[int], SessionReplay]) -> dict[str, Any]:
    """Every session's refusal count and first refusal under ``config`` (the arrays of
    :class:`loopscope.engines.base.RunColumns`); the sessions of :func:`one_by_one` from
    ``replay_of(i)`` (the per-session run). Qwen Code never warns."""
    n = len(steps)
    always, always_code = _always_on(steps, config)
    hit = np.zeros(len(steps.turn), dtype=np.bool_)
    detector = np.full(len(steps.turn), -1, dtype=np.int8)
    at = steps.call_step
    call_hit, call_code = always, always_code
    if not config.skip_loop_detection:
        heuristic, heuristic_code = _heuristics(steps, ~always, config.constants)
        call_hit = always | heuristic
        call_code = np.where(always, always_code, heuristic_code).astype(np.int8)
        text = steps.text_hit >= 0
        hit |= text
        detector[text] = steps.text_hit[text]
    hit[at] = call_hit
    detector[at] = np.where(call_hit, call_code, -1)
    flagged = np.flatnonzero(hit)
    owners = steps.owner[flagged]
    first = first_of_each(flagged, owners, n)
    refusals = np.bincount(owners, minlength=n).astype(np.int64)
    turn, call = steps.turn, steps.call
    alone = one_by_one(steps, config, always)
    if alone.size:
        extra_turn: list[int] = []
        extra_call: list[int] = []
        extra_code: list[int] = []
        base = len(turn)
        for i in alone.tolist():
            replay = replay_of(i)
            refusals[i] = replay.refusal_count
            found = replay.first_refusal
            if found is None:
                first[i] = -1
                continue
            first[i] = base + len(extra_turn)
            extra_turn.append(found.turn)
            extra_call.append(-1 if found.call is None else found.call)
            extra_code.append(_CODE[found.detector])
        turn = np.concatenate([turn, np.array(extra_turn, dtype=turn.dtype)])
        call = np.concatenate([call, np.array(extra_call, dtype=call.dtype)])
        detector = np.concatenate([detector, np.array(extra_code, dtype=np.int8)])
    return {"refusals": refusals, "warnings": np.zeros(n, dtype=np.int64), "first": first,
            "detector": np.maximum(detector, 0), "turn": turn, "call": call}


_COLUMNS: Final = JsonColumns(SCHEMA, step_columns, check, PreparedSession, Steps, DETECTORS)
"""These columns beside each session's JSON, laid out as :class:`Steps`."""


def table_spec(engine: BaseEngine[Any, Any], version: str | None = None) -> TableSpec:
    """The table of the engine's prepared sessions: each session's JSON (what a drawn row or an
    opened session reads) beside these step columns (what :func:`run_columns` reads)."""
    return _COLUMNS.table_spec(engine, version)


def run_many(engine: BaseEngine[Any, Any], prepared: Sequence[Any], config: QwenConfig
             ) -> RunColumns | None:
    """Vectorised passes over every step of the corpus (:func:`run_columns`), for a table of
    the engine's or a list of its prepared sessions that keeps derived data (the layout kept
    with it); with the opt-in checks on, the few sessions whose reply checks an always-on
    detection changes, and any session with reply text under a content or thought what-if, are
    run one by one. None for anything else (a plain list is run session by session)."""
    return _COLUMNS.run_many(engine, prepared, config,
                             lambda steps, replay_of: run_columns(steps, config, replay_of))
