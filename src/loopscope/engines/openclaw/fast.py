"""The fast path: hash once, count once per ``historySize``, select per configuration (§7.8).

In shadow mode every call is recorded and its own outcome attached right after it, so the
history before call ``i`` is simply the calls ``max(0, i - historySize) .. i - 1``, and the
run-scoped history is the part of that window inside ``i``'s run (runs are contiguous). Every
count of §3.2 therefore depends only on the session and ``historySize``:

* :func:`prepare` hashes each call once (argsHash, resultHash, unknown-tool name, poll flag, run)
  and integer-codes the hashes;
* :meth:`PreparedSession.counters` computes, once per ``historySize``, the no-progress streak,
  the recent count, the unknown-tool streak and the ping-pong count/evidence of every call with
  incremental walks (no re-hashing, no re-stringifying);
* :func:`run` only selects among those counts (§3.3), runs the guard's small state machine and
  builds the steps.

``run(prepare(s), c) == replay(s, c)`` is a property test.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field, replace
from typing import Any

from loopscope.engines.base import FirstRefusal, SessionReplay, Step
from loopscope.engines.openclaw.config import OpenClawConfig
from loopscope.engines.openclaw.detection import (
    GENERIC_REPEAT,
    GLOBAL_CIRCUIT_BREAKER,
    KNOWN_POLL_NO_PROGRESS,
    PING_PONG,
    POST_COMPACTION_GUARD,
    UNKNOWN_TOOL_REPEAT,
    WarningDeduper,
    breaker_message,
    generic_critical_message,
    generic_warning_message,
    guard_message,
    ping_pong_critical_message,
    ping_pong_key,
    ping_pong_warning_message,
    poll_critical_message,
    poll_warning_message,
    unknown_tool_message,
)
from loopscope.engines.openclaw.hashing import (
    hash_tool_call,
    hash_tool_outcome,
    is_known_poll_call,
)
from loopscope.engines.openclaw.replay import (
    COMPACTION,
    ENGINE_NAME,
    USER,
    CallInput,
    make_step,
    session_ops,
)
from loopscope.model import Session

_USER_OP = -1
_COMPACTION_OP = -2


@dataclass(frozen=True, slots=True)
class Counters:
    """Per-call counts of §3.2 for one ``historySize`` (lists indexed by call position)."""

    no_progress: list[int]
    latest_result: list[int]
    """Result code of the newest hashed same-args record in the window (0 = none)."""
    recent: list[int]
    unknown_streak: list[int]
    unknown_name: list[int]
    ping_pong: list[int]
    ping_pong_evidence: list[bool]
    ping_pong_last: list[int]
    """Position of the newest record (the paired side) when ``ping_pong`` > 0, else -1."""
    peak: list[int]
    """The largest of the four counts: below the lowest threshold, the call passes."""
    keys: dict[tuple[int, str, str], str] = field(default_factory=dict)
    """Memo of warning keys (they depend on the window, not on thresholds)."""


@dataclass(eq=False)
class PreparedSession:
    """A session hashed for the OpenClaw engine; threshold-independent."""

    session: str
    source: str
    format: str
    calls: list[CallInput]
    """Light call descriptions (params and results dropped after hashing)."""
    args_hash: list[str]
    result_hash: list[str | None]
    unknown_tool: list[str | None]
    args_code: list[int]
    result_code: list[int]
    """0 = no hash."""
    unknown_code: list[int]
    """0 = no unknown-tool name."""
    tool_code: list[int]
    tool_empty: list[bool]
    poll: list[bool]
    run_start: list[int]
    ops: list[int]
    """Run starts, compactions and calls in transcript order (only kept when the session has a
    compaction; without one the guard never acts)."""
    unknown_names: list[str] = field(default_factory=list)
    result_hashes: list[str] = field(default_factory=list)
    _counters: dict[int, Counters] = field(default_factory=dict, repr=False)
    _guard: dict[int, dict[int, int]] = field(default_factory=dict, repr=False)
    run_ids: list[str] = field(default_factory=list)
    _pass_steps: list[tuple[Step, ...] | None] = field(default_factory=lambda: [None, None],
                                                       repr=False)
    _verdict_steps: dict[tuple[Any, ...], Step] = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.calls)

    def counters(self, history_size: int) -> Counters:
        found = self._counters.get(history_size)
        if found is None:
            found = self._counters[history_size] = _compute_counters(self, history_size)
        return found

    def guard_aborts(self, window_size: int) -> dict[int, int]:
        """Call position → identical-observation count, for every guard abort (guard on)."""
        found = self._guard.get(window_size)
        if found is None:
            found = self._guard[window_size] = _compute_guard(self, window_size)
        return found

    def pass_steps(self, after_divergence: bool) -> tuple[Step, ...]:
        """Every call's pass step (built once; the two variants share their ``extra``)."""
        index = 1 if after_divergence else 0
        found = self._pass_steps[index]
        if found is None:
            if after_divergence:
                found = tuple(replace(step, after_divergence=True)
                              for step in self.pass_steps(False))
            else:
                found = tuple(
                    make_step(c, self.args_hash[i], result_hash=self.result_hash[i],
                              unknown_tool=self.unknown_tool[i])
                    for i, c in enumerate(self.calls))
            self._pass_steps[index] = found
        return found

    def verdict_step(self, ctr: Counters, i: int, level: str | None, detector: str | None,
                     count: int, abort: int | None, emitted: bool | None, diverged: bool,
                     window_size: int) -> Step:
        """A warn or refuse step, cached by everything it shows."""
        key = (i, level, detector, count, abort, emitted, diverged,
               window_size if abort is not None else 0,
               ctr.ping_pong_last[i] if detector == PING_PONG else -1,
               ctr.latest_result[i], ctr.unknown_name[i])
        step = self._verdict_steps.get(key)
        if step is None:
            if len(self._verdict_steps) > 8 * self.n + 64:
                self._verdict_steps.clear()
            step = self._verdict_steps[key] = _detector_step(
                self, ctr, i, level, detector, count, abort, emitted, diverged, window_size)
        return step


class _Codes:
    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.values: list[str] = []

    def code(self, value: str | None) -> int:
        if value is None:
            return 0
        found = self.codes.get(value)
        if found is None:
            self.values.append(value)
            found = self.codes[value] = len(self.values)
        return found


def prepare(session: Session) -> PreparedSession:
    """Hash every call once and collect the threshold-independent facts (§7.8)."""
    args_codes, result_codes, unknown_codes, tool_codes = _Codes(), _Codes(), _Codes(), _Codes()
    calls: list[CallInput] = []
    args_hash: list[str] = []
    result_hash: list[str | None] = []
    unknown_tool: list[str | None] = []
    poll: list[bool] = []
    run_start: list[int] = []
    ops: list[int] = []
    has_compaction = False
    current_run_start = 0
    for op in session_ops(session):
        if op == USER:
            current_run_start = len(calls)
            ops.append(_USER_OP)
            continue
        if op == COMPACTION:
            has_compaction = True
            ops.append(_COMPACTION_OP)
            continue
        assert isinstance(op, CallInput)
        ops.append(len(calls))
        args_hash.append(hash_tool_call(op.name, op.params))
        outcome_hash, unknown = hash_tool_outcome(op.name, op.params, op.result, op.error)
        result_hash.append(outcome_hash or None)
        unknown_tool.append(unknown if outcome_hash else None)
        poll.append(is_known_poll_call(op.name, op.params))
        run_start.append(current_run_start)
        calls.append(CallInput(op.turn, op.call, op.name, None, op.tool_call_id, op.run,
                               recorded_block=op.recorded_block))
    return PreparedSession(
        session=session.id, source=session.source, format=session.format, calls=calls,
        args_hash=args_hash, result_hash=result_hash, unknown_tool=unknown_tool,
        args_code=[args_codes.code(h) for h in args_hash],
        result_code=[result_codes.code(h) for h in result_hash],
        unknown_code=[unknown_codes.code(u) for u in unknown_tool],
        tool_code=[tool_codes.code(c.name) for c in calls],
        tool_empty=[c.name == "" for c in calls],
        poll=poll, run_start=run_start, ops=ops if has_compaction else [],
        unknown_names=unknown_codes.values, result_hashes=result_codes.values,
        run_ids=[c.run_id for c in calls],
    )


def _compute_counters(p: PreparedSession, history_size: int) -> Counters:
    n = p.n
    args, res, unk, tool = p.args_code, p.result_code, p.unknown_code, p.tool_code
    run_start, tool_empty = p.run_start, p.tool_empty
    no_progress = [0] * n
    latest = [0] * n
    recent = [0] * n
    unknown_streak = [0] * n
    unknown_name = [0] * n
    ping = [0] * n
    evidence = [False] * n
    ping_last = [-1] * n
    # Incremental structures.
    hashed_positions: dict[int, list[int]] = {}  # args code -> positions with a result hash
    equal_run: dict[int, int] = {}  # args code -> equal-hash run length at its newest hashed
    window_counts: dict[int, int] = {}
    evict = 0
    current_run = -1
    unknown_run = [0] * n  # same tool + same unknown name run length ending at j
    alternation = [0] * n  # strict two-signature alternation length ending at j
    stable = [0] * n  # hashed suffix with equal hashes two apart, ending at j
    for i in range(n):
        a = args[i]
        start = run_start[i]
        lo = i - history_size
        if lo < start:
            lo = start
        # recent count: a sliding window of args codes over the run-scoped history
        if start != current_run:
            current_run = start
            window_counts.clear()
            evict = start
        else:
            previous = args[i - 1]
            window_counts[previous] = window_counts.get(previous, 0) + 1
        while evict < lo:
            gone = args[evict]
            window_counts[gone] -= 1
            evict += 1
        recent[i] = window_counts.get(a, 0)
        # no-progress streak
        positions = hashed_positions.get(a)
        if positions:
            in_window = len(positions) - bisect_left(positions, lo)
            if in_window > 0:
                run_length = equal_run[a]
                no_progress[i] = run_length if run_length < in_window else in_window
                latest[i] = res[positions[-1]]
        j = i - 1
        if j >= lo:
            # unknown-tool streak
            if tool[j] == tool[i] and unk[j]:
                span = j - lo + 1
                u = unknown_run[j]
                unknown_streak[i] = u if u < span else span
                unknown_name[i] = unk[j]
            # ping-pong
            span = j - lo + 1
            tail = alternation[j]
            if tail > span:
                tail = span
            if tail >= 2 and a == args[j - 1] and not tool_empty[j - 1]:
                ping[i] = tail + 1
                evidence[i] = stable[j] >= tail
                ping_last[i] = j
        # extend the per-position structures with call i
        r = res[i]
        if r:
            if positions:
                equal_run[a] = equal_run[a] + 1 if res[positions[-1]] == r else 1
                positions.append(i)
            else:
                hashed_positions[a] = [i]
                equal_run[a] = 1
        if unk[i]:
            unknown_run[i] = (unknown_run[i - 1] + 1 if i and unk[i - 1] == unk[i]
                              and tool[i - 1] == tool[i] else 1)
        if i == 0 or args[i - 1] == a:
            alternation[i] = 1
        elif i >= 2 and args[i - 2] == a and alternation[i - 1] >= 2:
            alternation[i] = alternation[i - 1] + 1
        else:
            alternation[i] = 2
        if not r:
            stable[i] = 0
        elif i == 0 or stable[i - 1] == 0:
            stable[i] = 1
        elif stable[i - 1] == 1:
            stable[i] = 2
        else:
            stable[i] = stable[i - 1] + 1 if res[i - 2] == r else 2
    peak = [max(a, b, c, d) for a, b, c, d in zip(no_progress, recent, unknown_streak, ping,
                                                  strict=True)]
    return Counters(no_progress, latest, recent, unknown_streak, unknown_name, ping, evidence,
                    ping_last, peak)


def _compute_guard(p: PreparedSession, window_size: int) -> dict[int, int]:
    aborts: dict[int, int] = {}
    remaining = 0
    history: list[tuple[int, int]] = []
    args, res = p.args_code, p.result_code
    for op in p.ops:
        if op == _USER_OP:
            remaining = 0
            history = []
        elif op == _COMPACTION_OP:
            remaining = window_size
            history = []
        elif remaining > 0 and res[op]:
            remaining -= 1
            triple = (args[op], res[op])  # argsHash starts with the tool name
            history.append(triple)
            matches = history.count(triple)
            if matches >= window_size:
                aborts[op] = matches
    return aborts


def run(p: PreparedSession, config: OpenClawConfig) -> SessionReplay:
    """Replay prepared data under ``config``: a selection over cached counts (§3.3, §7.4).

    Only calls whose largest count reaches the lowest threshold are evaluated; every other step
    is a cached pass step. Non-pass steps are cached too, keyed by everything they show.
    """
    r = config.resolved
    detection = r.detection_on
    aborts = p.guard_aborts(r.guard_window_size) if r.guard_enabled and p.ops else {}
    if not detection and not aborts:
        return SessionReplay(p.session, p.source, p.format, ENGINE_NAME, p.pass_steps(False),
                             None)
    ctr = p.counters(r.history_size)
    if detection:
        floor = min(r.warning_threshold, r.unknown_tool_threshold)
        indices = [i for i, peak in enumerate(ctr.peak) if peak >= floor]
        if aborts:
            indices = sorted(set(indices).union(aborts))
    else:
        indices = sorted(aborts)
    np_counts, recent, unk_counts = ctr.no_progress, ctr.recent, ctr.unknown_streak
    pings, evidence = ctr.ping_pong, ctr.ping_pong_evidence
    poll = p.poll
    warning, critical = r.warning_threshold, r.critical_threshold
    breaker, unknown = r.global_circuit_breaker_threshold, r.unknown_tool_threshold
    poll_on, ping_on, generic_on = (r.known_poll_no_progress_on, r.ping_pong_on,
                                    r.generic_repeat_on)
    deduper: WarningDeduper | None = None
    verdicts: list[tuple[int, str | None, str | None, int, int | None, bool | None]] = []
    first = -1
    for i in indices:
        level = detector = None
        count = 0
        if detection:
            streak = np_counts[i]
            is_poll = poll[i]
            if unk_counts[i] >= unknown:
                level, detector, count = "critical", UNKNOWN_TOOL_REPEAT, unk_counts[i]
            elif streak >= breaker:
                level, detector, count = "critical", GLOBAL_CIRCUIT_BREAKER, streak
            elif is_poll and poll_on and streak >= critical:
                level, detector, count = "critical", KNOWN_POLL_NO_PROGRESS, streak
            elif is_poll and poll_on and streak >= warning:
                level, detector, count = "warning", KNOWN_POLL_NO_PROGRESS, streak
            elif ping_on and pings[i] >= critical and evidence[i]:
                level, detector, count = "critical", PING_PONG, pings[i]
            elif ping_on and pings[i] >= warning:
                level, detector, count = "warning", PING_PONG, pings[i]
            elif not is_poll and generic_on and streak >= critical:
                level, detector, count = "critical", GENERIC_REPEAT, streak
            elif not is_poll and generic_on and recent[i] >= warning:
                level, detector, count = "warning", GENERIC_REPEAT, recent[i]
        abort = aborts.get(i) if aborts else None
        if detector is None and abort is None:
            continue
        emitted: bool | None = None
        if level == "warning":
            # Logged (and de-duplicated) before the call runs, even if the guard then aborts.
            if deduper is None:
                deduper = WarningDeduper()
            assert detector is not None
            emitted = deduper.should_emit(_warning_key(p, ctr, i, detector, "warning"),
                                          detector, p.calls[i].name, count, p.run_ids[i])
        if first < 0 and (level == "critical" or abort is not None):
            first = i
        verdicts.append((i, level, detector, count, abort, emitted))
    if first < 0:
        steps = list(p.pass_steps(False))
    else:
        steps = [*p.pass_steps(False)[:first + 1], *p.pass_steps(True)[first + 1:]]
    window = r.guard_window_size
    for i, level, detector, count, abort, emitted in verdicts:
        steps[i] = p.verdict_step(ctr, i, level, detector, count, abort, emitted, i > first >= 0,
                                  window)
    first_refusal = None
    if first >= 0:
        refused = steps[first]
        assert refused.detector is not None
        first_refusal = FirstRefusal(refused.turn, refused.call, refused.detector)
    return SessionReplay(p.session, p.source, p.format, ENGINE_NAME, tuple(steps), first_refusal)


def _warning_key(p: PreparedSession, ctr: Counters, i: int, detector: str, level: str) -> str:
    memo = (i, detector, level)
    found = ctr.keys.get(memo)
    if found is None:
        found = ctr.keys[memo] = _compute_warning_key(p, ctr, i, detector, level)
    return found


def _compute_warning_key(p: PreparedSession, ctr: Counters, i: int, detector: str,
                         level: str) -> str:
    tool = p.calls[i].name
    current = p.args_hash[i]
    if detector == UNKNOWN_TOOL_REPEAT:
        code = ctr.unknown_name[i]
        return f"unknown-tool:{tool}:{p.unknown_names[code - 1] if code else 'unknown'}"
    if detector == PING_PONG:
        return ping_pong_key(current, p.args_hash[ctr.ping_pong_last[i]])
    if detector == GENERIC_REPEAT and level == "warning":
        return f"generic:{tool}:{current}"
    code = ctr.latest_result[i]
    latest = p.result_hashes[code - 1] if code else "none"
    prefix = {GLOBAL_CIRCUIT_BREAKER: "global", KNOWN_POLL_NO_PROGRESS: "poll",
              GENERIC_REPEAT: "generic"}[detector]
    return f"{prefix}:{tool}:{current}:{latest}"


def _message(p: PreparedSession, ctr: Counters, i: int, detector: str, level: str,
             count: int) -> str:
    tool = p.calls[i].name
    if detector == UNKNOWN_TOOL_REPEAT:
        code = ctr.unknown_name[i]
        return unknown_tool_message(p.unknown_names[code - 1] if code else tool, count)
    if detector == GLOBAL_CIRCUIT_BREAKER:
        return breaker_message(tool, count)
    critical = level == "critical"
    if detector == KNOWN_POLL_NO_PROGRESS:
        return (poll_critical_message if critical else poll_warning_message)(tool, count)
    if detector == PING_PONG:
        return (ping_pong_critical_message if critical else ping_pong_warning_message)(count)
    return (generic_critical_message if critical else generic_warning_message)(tool, count)


def _detector_step(p: PreparedSession, ctr: Counters, i: int, level: str | None,
                   detector: str | None, count: int, abort: int | None,
                   emitted: bool | None, diverged: bool, window_size: int) -> Step:
    c = p.calls[i]
    common: dict[str, Any] = {
        "after_divergence": diverged, "result_hash": p.result_hash[i],
        "unknown_tool": p.unknown_tool[i], "guard_abort": abort is not None,
    }
    if detector is not None and level == "critical":
        return make_step(
            c, p.args_hash[i], verdict="refuse", detector=detector, count=count,
            level="critical", message=_message(p, ctr, i, detector, level, count),
            warning_key=_warning_key(p, ctr, i, detector, level),
            paired_tool=p.calls[ctr.ping_pong_last[i]].name if detector == PING_PONG else None,
            **common)
    if abort is not None:
        return make_step(c, p.args_hash[i], verdict="refuse", detector=POST_COMPACTION_GUARD,
                         count=abort, level="critical",
                         message=guard_message(c.name, abort, window_size), **common)
    assert detector is not None and level is not None
    return make_step(
        c, p.args_hash[i], verdict="warn", detector=detector, count=count, level="warning",
        message=_message(p, ctr, i, detector, level, count),
        warning_key=_warning_key(p, ctr, i, detector, level),
        paired_tool=p.calls[ctr.ping_pong_last[i]].name if detector == PING_PONG else None,
        warning_emitted=emitted, **common)
