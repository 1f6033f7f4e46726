"""The 2026.9.6 fast path: hash once, count once per history size, select per configuration.

In shadow mode every call of a message is recorded as though it ran and every recorded outcome
attached, whatever the verdicts; the projected vetoes of the batch admission live only in its
copy of the history. So the history before each message, and every count the detector reads
for each call of it (with the projected vetoes of the earlier calls of the message), depend
only on the session and the history size:

* :func:`prepare` reads and hashes each call once (normalised names, argsHash, the outcome with
  its kind, failure identity and no-progress flag, unknown-tool name, poll flag, run, message)
  and integer-codes everything a walk compares;
* :meth:`Prepared9.counters` simulates the coded history once per history size and keeps, per
  call, the unknown-tool streak, the no-progress streak (vetoes and the exec failure streak
  included), the argument churn, the ping-pong count and evidence, and the recent count;
* :func:`run` selects each call's verdict by the (what-if) thresholds, finds the interventions
  (the first critical call of a message; recovery first in a run, terminal afterwards) and the
  guard's aborts; steps, messages, warning keys and the warning buckets are built when read.

``run(prepare(s), c) == replay(s, c)`` is a property test, for every field of every step.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from loopscope.engines.base import (
    FirstRefusal,
    FlaggedStep,
    Marker,
    SessionReplay,
    Step,
    new_step,
)
from loopscope.engines.codec import CodecError, ints_at, require_strings, strs_at
from loopscope.engines.openclaw.shared.guard import COMPACTION_OP, USER_OP, coded_guard_aborts
from loopscope.engines.openclaw.shared.hashing import hash_tool_call, is_known_poll_call
from loopscope.engines.openclaw.shared.session import COMPACTION, ENGINE_NAME, USER
from loopscope.engines.openclaw.shared.upstream import guard_message
from loopscope.engines.openclaw.shared.verdicts import (
    positions_reaching,
    verdict_message,
    verdict_warning_key,
)
from loopscope.engines.openclaw.v2026_9 import upstream as rules
from loopscope.engines.openclaw.v2026_9.config import (
    MIN_STABLE_CALLS_PER_VARIANT,
    Limits,
    OpenClaw9Config,
)
from loopscope.engines.openclaw.v2026_9.hashing import (
    TERMINAL_EXEC_FAILURE,
    TOOL_LOOP_VETO,
    detection_name,
)
from loopscope.engines.openclaw.v2026_9.session import call_facts, session_messages
from loopscope.model import Session

PREPARE_KEY: Final = "fixed-2026.9"
"""The key of this prepared data: normalised names and 2026.9's outcome hashing."""

_VETO: Final = 1
_FAILURE: Final = 2
_KIND_CODES: Final = {None: 0, TOOL_LOOP_VETO: _VETO, TERMINAL_EXEC_FAILURE: _FAILURE}

# A coded history record: [tool, args, call id, run, result, kind, failure identity,
# no progress, unknown name] (0 = none for the codes).
_TOOL, _ARGS, _ID, _RUN, _RES, _KIND, _FID, _NOPROG, _UNK = range(9)


@dataclass(frozen=True, slots=True)
class Counters9:
    """What the detector reads for each call, for one history size (by call position)."""

    unknown: list[int]
    unknown_name: list[int]
    no_progress: list[int]
    latest: list[int]
    """Result code behind the no-progress streak (0 = none)."""
    churn: list[int]
    variants: list[int]
    ping: list[int]
    evidence: list[bool]
    paired_tool: list[int]
    """Tool code of the newest record when ``ping`` > 0."""
    paired_args: list[int]
    recent: list[int]
    peak: list[int]
    """The largest count: below the lowest threshold, no verdict."""

    def reaching(self, floor: int) -> list[int]:
        return positions_reaching(self.peak, floor)


@dataclass(eq=False)
class Prepared9:
    """A session read and hashed for OpenClaw 2026.9.6; independent of the configuration."""

    session: str
    source: str
    format: str
    turn: list[int]
    call: list[int]
    raw_name: list[str]
    """As recorded (the step's ``tools``)."""
    name: list[str]
    """Normalised (what the call is recorded under)."""
    args_hash: list[str]
    result_hash: list[str | None]
    outcome_kind: list[str | None]
    unknown_tool: list[str | None]
    recorded_block: list[bool]
    run: list[int]
    run_ids: list[str]
    poll: list[bool]
    is_exec: list[bool]
    """The detector sees ``exec`` (the terminal-failure streak applies)."""
    tool_code: list[int]
    """Of the recorded name; the detected name's code is ``detect_tool``."""
    detect_tool: list[int]
    args_code: list[int]
    detect_args: list[int]
    id_code: list[int]
    """0 for a call without a (truthy) id."""
    result_code: list[int]
    kind_code: list[int]
    fid_code: list[int]
    no_progress_flag: list[bool]
    unknown_code: list[int]
    message_of: list[int]
    messages: list[tuple[int, int]]
    """``(first, end)`` positions of each message's calls."""
    ops: list[int]
    """User messages, compactions and messages (by index) in transcript order."""
    tool_names: list[str] = field(default_factory=list)
    """By tool code - 1."""
    args_hashes: list[str] = field(default_factory=list)
    result_hashes: list[str] = field(default_factory=list)
    unknown_names: list[str] = field(default_factory=list)
    _counters: dict[int, Counters9] = field(default_factory=dict, repr=False)
    _guard: dict[int, dict[int, int]] = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.turn)

    def counters(self, history_size: int) -> Counters9:
        found = self._counters.get(history_size)
        if found is None:
            found = self._counters[history_size] = _compute_counters(self, history_size)
        return found

    def guard_aborts(self, window_size: int) -> dict[int, int]:
        """Call position → identical observations, for every abort of the guard (when on)."""
        found = self._guard.get(window_size)
        if found is None:
            found = self._guard[window_size] = _compute_guard(self, window_size)
        return found

    def detected_name(self, i: int) -> str:
        return self.tool_names[self.detect_tool[i] - 1]


class _Codes:
    """Integer codes for strings, 1-based, with the strings kept in order."""

    __slots__ = ("codes", "values")

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.values: list[str] = []

    def __call__(self, value: str | None) -> int:
        if value is None:
            return 0
        code = self.codes.get(value)
        if code is None:
            self.values.append(value)
            code = self.codes[value] = len(self.values)
        return code


def prepare(session: Session) -> Prepared9:
    """Read and hash every call once (the same reading and hashing as the reference path)."""
    tools, args, results, fids, unknowns, ids = (_Codes(), _Codes(), _Codes(), _Codes(),
                                                 _Codes(), _Codes())
    rows: list[tuple[Any, ...]] = []
    messages: list[tuple[int, int]] = []
    message_of: list[int] = []
    ops: list[int] = []
    for item in session_messages(session):
        if item == USER:
            ops.append(USER_OP)
            continue
        if item == COMPACTION:
            ops.append(COMPACTION_OP)
            continue
        assert isinstance(item, list)
        ops.append(len(messages))
        first = len(rows)
        for c in item:
            facts = call_facts(c)
            detected = detection_name(facts.name)
            detect_hash = (facts.args_hash if detected == facts.name
                           else hash_tool_call(detected, c.params))
            outcome = facts.outcome
            rows.append((
                c.turn, c.call, c.name, facts.name, facts.args_hash, outcome.result_hash,
                outcome.outcome_kind, outcome.unknown_tool_name, c.recorded_block, c.run,
                c.run_id, is_known_poll_call(detected, c.params), detected == "exec",
                tools(facts.name), tools(detected), args(facts.args_hash), args(detect_hash),
                ids(c.tool_call_id or None), results(outcome.result_hash),
                _KIND_CODES[outcome.outcome_kind], fids(outcome.failure_identity_hash),
                outcome.no_progress, unknowns(outcome.unknown_tool_name),
            ))
            message_of.append(len(messages))
        messages.append((first, len(rows)))
    columns = [list(column) for column in zip(*rows, strict=True)] if rows else [
        [] for _ in range(23)]
    (turn, call, raw_name, name, args_hash, result_hash, outcome_kind, unknown_tool,
     recorded_block, run, run_ids, poll, is_exec, tool_code, detect_tool, args_code,
     detect_args, id_code, result_code, kind_code, fid_code, no_progress, unknown_code) = columns
    return Prepared9(
        session=session.id, source=session.source, format=session.format, turn=turn,
        call=call, raw_name=raw_name, name=name, args_hash=args_hash, result_hash=result_hash,
        outcome_kind=outcome_kind, unknown_tool=unknown_tool, recorded_block=recorded_block,
        run=run, run_ids=run_ids, poll=poll, is_exec=is_exec, tool_code=tool_code,
        detect_tool=detect_tool, args_code=args_code, detect_args=detect_args, id_code=id_code,
        result_code=result_code, kind_code=kind_code, fid_code=fid_code,
        no_progress_flag=no_progress, unknown_code=unknown_code, message_of=message_of,
        messages=messages, ops=ops, tool_names=tools.values, args_hashes=args.values,
        result_hashes=results.values, unknown_names=unknowns.values,
    )


# --------------------------------------------------------------------------- counting


def _no_progress(window: list[list[int]], tool: int, args: int, failures_only: bool
                 ) -> tuple[int, int]:
    streak = 0
    latest: list[int] | None = None
    crossed = False
    pending = 0
    for record in reversed(window):
        if record[_TOOL] != tool:
            if failures_only:
                break
            continue
        if not failures_only and record[_ARGS] != args:
            continue
        if record[_KIND] == _VETO:
            pending += 1
            continue
        if not record[_RES]:
            continue
        if failures_only and record[_KIND] != _FAILURE:
            break
        if latest is None:
            latest = record
            crossed = record[_ARGS] != args
            streak = pending + 1
            pending = 0
            continue
        if failures_only:
            if crossed and record[_ARGS] == args:
                break
            if record[_ARGS] != args:
                crossed = True
        if record[_RES] != latest[_RES] and not (
                failures_only and record[_FID] and record[_FID] == latest[_FID]):
            break
        streak += pending + 1
        pending = 0
    if latest is not None:
        return streak, latest[_RES]
    return (0 if failures_only else pending), 0


def _churn(window: list[list[int]], tool: int, args: int) -> tuple[int, int]:
    seen: dict[int, list[int]] = {}
    for record in reversed(window):
        if record[_TOOL] != tool:
            break
        if not record[_RES]:
            continue
        if not record[_NOPROG]:
            break
        entry = seen.get(record[_ARGS])
        if entry is None:
            seen[record[_ARGS]] = [record[_RES], 1]
        elif entry[0] != record[_RES]:
            break
        else:
            entry[1] += 1
    if len(seen) < 2:
        return 0, 0
    total = 0
    stable = 0
    stable_results = set()
    for result, count in seen.values():
        total += count
        if count >= MIN_STABLE_CALLS_PER_VARIANT:
            stable += 1
            stable_results.add(result)
    mine = seen.get(args)
    if (stable > 1 and len(stable_results) == 1
            and sum(c for _r, c in seen.values() if c >= MIN_STABLE_CALLS_PER_VARIANT) == total
            and mine is not None and mine[1] >= MIN_STABLE_CALLS_PER_VARIANT):
        return total, stable
    return 0, 0


def _compute_counters(p: Prepared9, history_size: int) -> Counters9:
    n = p.n
    unknown, unknown_name = [0] * n, [0] * n
    no_progress, latest = [0] * n, [0] * n
    churn, variants = [0] * n, [0] * n
    ping, evidence = [0] * n, [False] * n
    paired_tool, paired_args = [0] * n, [0] * n
    recent = [0] * n
    empty_tool = p.tool_names.index("") + 1 if "" in p.tool_names else -1
    history: list[list[int]] = []
    for first, end in p.messages:
        run = p.run[first]
        start = len(history)
        while start > 0 and history[start - 1][_RUN] == run:
            start -= 1
        window = history[start:]
        for i in range(first, end):
            tool, args = p.detect_tool[i], p.detect_args[i]
            # unknown-tool streak
            count = 0
            name = 0
            for record in reversed(window):
                if record[_TOOL] != tool or not record[_UNK]:
                    break
                if not name:
                    name, count = record[_UNK], 1
                elif record[_UNK] != name:
                    break
                else:
                    count += 1
            unknown[i], unknown_name[i] = count, name
            # no-progress streak (exec: the terminal failure streak when longer)
            streak, result = _no_progress(window, tool, args, False)
            if p.is_exec[i]:
                failures = _no_progress(window, tool, args, True)
                if failures[0] > streak:
                    streak, result = failures
            no_progress[i], latest[i] = streak, result
            churn[i], variants[i] = _churn(window, tool, args)
            # ping-pong
            if window:
                last = window[-1]
                other: list[int] | None = None
                for record in reversed(window[:-1]):
                    if record[_ARGS] != last[_ARGS]:
                        other = record
                        break
                if other is not None and other[_TOOL] != empty_tool:
                    tail = 0
                    for record in reversed(window):
                        if record[_ARGS] != (last[_ARGS] if tail % 2 == 0 else other[_ARGS]):
                            break
                        tail += 1
                    if tail >= 2 and args == other[_ARGS]:
                        ping[i] = tail + 1
                        paired_tool[i], paired_args[i] = last[_TOOL], last[_ARGS]
                        hash_a = hash_b = 0
                        ok = True
                        for record in window[len(window) - tail:]:
                            r = record[_RES]
                            if not r:
                                ok = False
                                break
                            if record[_ARGS] == last[_ARGS]:
                                if not hash_a:
                                    hash_a = r
                                elif hash_a != r:
                                    ok = False
                                    break
                            elif not hash_b:
                                hash_b = r
                            elif hash_b != r:
                                ok = False
                                break
                        evidence[i] = ok and bool(hash_a) and bool(hash_b)
            recent[i] = sum(1 for record in window
                            if record[_TOOL] == tool and record[_ARGS] == args)
            # the projected veto of this call, for the next calls of the message
            window.append([p.tool_code[i], p.args_code[i], p.id_code[i], run, 0, _VETO, 0, 0, 0])
        # shadow recording: the calls, then their outcomes
        for i in range(first, end):
            history.append([p.tool_code[i], p.args_code[i], p.id_code[i], run, 0, 0, 0, 0, 0])
            if len(history) > history_size:
                del history[:len(history) - history_size]
        for i in range(first, end):
            result, kind = p.result_code[i], p.kind_code[i]
            if not result and not kind:
                continue
            tool, args, call_id = p.tool_code[i], p.args_code[i], p.id_code[i]
            matched = None
            for record in reversed(history):
                if (record[_RUN] == run and (not call_id or record[_ID] == call_id)
                        and record[_TOOL] == tool and record[_ARGS] == args
                        and not record[_RES] and not record[_KIND]):
                    matched = record
                    break
            if matched is None:
                matched = [tool, args, call_id, run, 0, 0, 0, 0, 0]
                history.append(matched)
            matched[_RES], matched[_KIND], matched[_FID] = result, kind, p.fid_code[i]
            matched[_NOPROG] = int(p.no_progress_flag[i])
            matched[_UNK] = p.unknown_code[i]
            if len(history) > history_size:
                del history[:len(history) - history_size]
    peak = [max(values) for values in zip(unknown, no_progress, churn, ping, recent,
                                          strict=True)]
    return Counters9(unknown, unknown_name, no_progress, latest, churn, variants, ping,
                     evidence, paired_tool, paired_args, recent, peak)


def _compute_guard(p: Prepared9, window_size: int) -> dict[int, int]:
    return coded_guard_aborts(_call_ops(p), p.args_code, p.result_code, window_size)


def _call_ops(p: Prepared9) -> Iterator[int]:
    """The transcript with each message replaced by the positions of its calls."""
    for op in p.ops:
        if op < 0:
            yield op
        else:
            yield from range(*p.messages[op])


# --------------------------------------------------------------------------- selection


# A checked verdict: (position, level, detector, count)
_Checked = tuple[int, str, str, int]


def _select(p: Prepared9, ctr: Counters9, limits: Limits, i: int) -> tuple[str, str, int] | None:
    """The detector's order of checks, over the cached counts."""
    streak = ctr.no_progress[i]
    poll = p.poll[i]
    if ctr.unknown[i] >= limits.unknown_tool:
        return "critical", rules.UNKNOWN_TOOL_REPEAT, ctr.unknown[i]
    if streak >= limits.breaker:
        return "critical", rules.GLOBAL_CIRCUIT_BREAKER, streak
    if poll and streak >= limits.critical:
        return "critical", rules.KNOWN_POLL_NO_PROGRESS, streak
    if poll and streak >= limits.warning:
        return "warning", rules.KNOWN_POLL_NO_PROGRESS, streak
    if ctr.ping[i] >= limits.critical and ctr.evidence[i]:
        return "critical", rules.PING_PONG, ctr.ping[i]
    if ctr.ping[i] >= limits.warning:
        return "warning", rules.PING_PONG, ctr.ping[i]
    if not poll and streak >= limits.critical:
        return "critical", rules.GENERIC_REPEAT, streak
    if ctr.churn[i] >= limits.argument_churn:
        return "warning", rules.ARGUMENT_CHURN, ctr.churn[i]
    if not poll and ctr.recent[i] >= limits.warning:
        return "warning", rules.GENERIC_REPEAT, ctr.recent[i]
    return None


@dataclass(frozen=True, slots=True)
class _Intervention:
    trigger: int
    detector: str
    count: int
    kind: str


@dataclass(frozen=True, slots=True)
class _Evaluation:
    checked: list[_Checked]
    """Every warning verdict the admission checked, in order (the buckets see these)."""
    interventions: dict[int, _Intervention]
    """By message index."""
    aborts: dict[int, int]
    first: int
    """Position of the first refused step, or -1."""

    def in_intervention(self, p: Prepared9, i: int) -> _Intervention | None:
        return self.interventions.get(p.message_of[i]) if self.interventions else None


def _evaluate(p: Prepared9, config: OpenClaw9Config) -> _Evaluation:
    limits = config.limits
    if not config.detection_on:
        return _Evaluation([], {}, {}, -1)
    ctr = p.counters(limits.history_size)
    aborts = p.guard_aborts(limits.guard_window) if config.guard_enabled else {}
    floor = min(limits.unknown_tool, limits.breaker, limits.critical, limits.warning,
                limits.argument_churn)
    checked: list[_Checked] = []
    interventions: dict[int, _Intervention] = {}
    seen_runs: set[int] = set()
    stopped = -1  # the message whose admission stopped
    for i in ctr.reaching(floor):
        message = p.message_of[i]
        if message == stopped:
            continue
        verdict = _select(p, ctr, limits, i)
        if verdict is None:
            continue
        level, detector, count = verdict
        if level == "critical":
            run = p.run[i]
            kind = rules.TERMINAL if run in seen_runs else rules.RECOVERY
            seen_runs.add(run)
            interventions[message] = _Intervention(i, detector, count, kind)
            stopped = message
        else:
            checked.append((i, level, detector, count))
    first = -1
    if interventions:
        first = p.messages[min(interventions)][0]
    for i in sorted(aborts):
        if p.message_of[i] not in interventions:
            if first < 0 or i < first:
                first = i
            break
    return _Evaluation(checked, interventions, aborts, first)


def run(p: Prepared9, config: OpenClaw9Config) -> SessionReplay:
    """Replay prepared data under ``config``: a selection over cached counts; the steps are
    built when read."""
    evaluation = _evaluate(p, config)
    first_refusal = None
    if evaluation.first >= 0:
        i = evaluation.first
        found = evaluation.in_intervention(p, i)
        if found is None:
            detector = rules.POST_COMPACTION_GUARD
        elif found.trigger != i:
            detector = rules.TOOL_LOOP_BATCH_SKIPPED
        else:
            detector = (found.detector if found.kind == rules.RECOVERY
                        else rules.TOOL_LOOP_RECOVERY_TERMINATED)
        first_refusal = FirstRefusal(p.turn[i], p.call[i], detector)
    warned = any(evaluation.in_intervention(p, i) is None and i not in evaluation.aborts
                 for i, *_ in evaluation.checked)
    return SessionReplay.lazy(p.session, p.source, p.format, ENGINE_NAME, first_refusal, warned,
                              _Detail(p, config, evaluation))


class _Detail:
    """The steps of one prepared session under one configuration, built when read."""

    __slots__ = ("config", "evaluation", "prepared")

    def __init__(self, prepared: Prepared9, config: OpenClaw9Config,
                 evaluation: _Evaluation) -> None:
        self.prepared = prepared
        self.config = config
        self.evaluation = evaluation

    def _flagged(self) -> list[tuple[int, str, str, int | None, dict[str, Any]]]:
        """``(position, verdict, detector, count, fields)`` of every warn/refuse step."""
        p, e, config = self.prepared, self.evaluation, self.config
        limits = config.limits
        out: dict[int, tuple[int, str, str, int | None, dict[str, Any]]] = {}
        buckets = rules.WarningBuckets(limits.bucket_size)
        ctr = p.counters(limits.history_size) if e.checked or e.interventions else None
        for i, _level, detector, count in e.checked:
            assert ctr is not None
            name = p.detected_name(i)
            key = _warning_key(p, ctr, i, detector, "warning")
            emitted = buckets.should_emit(key, detector, name, count, p.run_ids[i])
            if e.in_intervention(p, i) is not None or i in e.aborts:
                continue
            out[i] = (i, "warn", detector, count, {
                "level": "warning", "message": _message(p, ctr, i, detector, "warning", count),
                "warning_key": key, "paired_tool": _paired(p, ctr, i, detector),
                "warning_emitted": emitted})
        for message, found in e.interventions.items():
            assert ctr is not None
            first, end = p.messages[message]
            t = found.trigger
            key = _warning_key(p, ctr, t, found.detector, "critical")
            for i in range(first, end):
                fields: dict[str, Any] = {"level": "critical", "intervention": found.kind,
                                          "loop_detector": found.detector}
                if i != t:
                    out[i] = (i, "refuse", rules.TOOL_LOOP_BATCH_SKIPPED, None, fields)
                    continue
                fields.update(warning_key=key, paired_tool=_paired(p, ctr, t, found.detector))
                if found.kind == rules.TERMINAL:
                    fields["message"] = rules.TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE
                    out[i] = (i, "refuse", rules.TOOL_LOOP_RECOVERY_TERMINATED, found.count, fields)
                else:
                    fields["message"] = _message(p, ctr, t, found.detector, "critical",
                                                 found.count)
                    out[i] = (i, "refuse", found.detector, found.count, fields)
        for i, count in e.aborts.items():
            if e.in_intervention(p, i) is None:
                out[i] = (i, "refuse", rules.POST_COMPACTION_GUARD, count, {
                    "level": "critical",
                    "message": guard_message(p.name[i], count, limits.guard_window)})
        return [out[i] for i in sorted(out)]

    def _step(self, i: int, verdict: str, detector: str | None, count: int | None,
              fields: dict[str, Any]) -> Step:
        p, first = self.prepared, self.evaluation.first
        return new_step(p.turn[i], p.call[i], (p.raw_name[i],), p.args_hash[i], verdict,
                        detector, count, i > first >= 0, self._extra(i, fields))

    def _extra(self, i: int, fields: dict[str, Any]) -> dict[str, Any]:
        p = self.prepared
        return {
            "level": fields.get("level"),
            "message": fields.get("message"),
            "warning_key": fields.get("warning_key"),
            "paired_tool": fields.get("paired_tool"),
            "args_hash": p.args_hash[i],
            "result_hash": p.result_hash[i],
            "outcome_kind": p.outcome_kind[i],
            "run_id": p.run_ids[i],
            "guard_abort": i in self.evaluation.aborts,
            "intervention": fields.get("intervention"),
            "loop_detector": fields.get("loop_detector"),
            "warning_emitted": fields.get("warning_emitted"),
            "unknown_tool": p.unknown_tool[i],
            "recorded_block": p.recorded_block[i],
        }

    def steps(self) -> tuple[Step, ...]:
        flagged = {entry[0]: entry for entry in self._flagged()}
        out = []
        for i in range(self.prepared.n):
            entry = flagged.get(i)
            if entry is None:
                out.append(self._step(i, "pass", None, None, {}))
            else:
                _i, verdict, detector, count, fields = entry
                out.append(self._step(i, verdict, detector, count, fields))
        return tuple(out)

    def flagged(self) -> tuple[FlaggedStep, ...]:
        call = self.prepared.call
        return tuple(FlaggedStep(i, call[i], self._step(i, verdict, detector, count, fields))
                     for i, verdict, detector, count, fields in self._flagged())

    def markers(self) -> tuple[Marker, ...]:
        p = self.prepared
        return tuple(Marker(i, p.turn[i], p.call[i], p.call[i], verdict,  # type: ignore[arg-type]
                            detector, count)
                     for i, verdict, detector, count, _fields in self._flagged())

    def verdict_counts(self) -> tuple[int, int]:
        flagged = self._flagged()
        refusals = sum(1 for entry in flagged if entry[1] == "refuse")
        return refusals, len(flagged) - refusals

    def step_json(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.steps()]


def _paired(p: Prepared9, ctr: Counters9, i: int, detector: str) -> str | None:
    return p.tool_names[ctr.paired_tool[i] - 1] if detector == rules.PING_PONG else None


def _warning_key(p: Prepared9, ctr: Counters9, i: int, detector: str, level: str) -> str:
    tool = p.detected_name(i)
    if detector == rules.ARGUMENT_CHURN:
        return f"argument-churn:{tool}"
    code = ctr.unknown_name[i]
    return verdict_warning_key(
        detector, level, tool, p.args_hashes[p.detect_args[i] - 1],
        unknown_name=p.unknown_names[code - 1] if code else None,
        paired_args_hash=p.args_hashes[ctr.paired_args[i] - 1],
        latest_code=ctr.latest[i], result_hashes=p.result_hashes)


def _message(p: Prepared9, ctr: Counters9, i: int, detector: str, level: str,
             count: int) -> str:
    tool = p.detected_name(i)
    if detector == rules.ARGUMENT_CHURN:
        return rules.argument_churn_message(tool, ctr.variants[i], count)
    code = ctr.unknown_name[i]
    return verdict_message(detector, level == "critical", tool, count,
                           p.unknown_names[code - 1] if code else None,
                           breaker=rules.breaker_message,
                           generic_critical=rules.generic_critical_message)


def step_counts(p: Prepared9, history_size: int, n: int) -> tuple[Sequence[int], Sequence[int]]:
    """``(no-progress streak, recent count)`` before each of the first ``n`` calls (what the
    session chart draws)."""
    ctr = p.counters(history_size)
    return ctr.no_progress[:n], ctr.recent[:n]


# --------------------------------------------------------------------------- codec
# Prepared data as plain JSON columns (the on-disk cache, worker processes).

CODEC_VERSION = 1
"""Bumped whenever :func:`encode` writes something :func:`decode` of an older loopscope would
read differently."""

RELEASE_MARK: Final = "2026.9"
"""What :func:`encode` writes under ``"release"``: the engine's codec tells this release's
data from the configurable line's by it."""

_CODE_FIELDS: Final = ("tool_code", "detect_tool", "args_code", "detect_args", "id_code",
                       "result_code", "kind_code", "fid_code", "unknown_code")
_BOOL_FIELDS: Final = ("recorded_block", "poll", "is_exec", "no_progress_flag")
_TEXT_FIELDS: Final = ("raw_name", "name", "args_hash", "run_ids")
_OPTIONAL_TEXT_FIELDS: Final = ("result_hash", "outcome_kind", "unknown_tool")
_NAME_LISTS: Final = ("tool_names", "args_hashes", "result_hashes", "unknown_names")


def encode(p: Prepared9) -> dict[str, Any]:
    """``p`` as JSON-ready columns; :func:`decode` gives it back (a property test)."""
    return {
        "release": RELEASE_MARK, "session": p.session, "source": p.source, "format": p.format,
        "turn": p.turn, "call": p.call, "run": p.run,
        **{name: getattr(p, name) for name in (*_CODE_FIELDS, *_BOOL_FIELDS, *_TEXT_FIELDS,
                                               *_OPTIONAL_TEXT_FIELDS, *_NAME_LISTS)},
        "messages": [[first, end] for first, end in p.messages], "ops": p.ops,
    }


def decode(doc: Any) -> Prepared9:
    """The :class:`Prepared9` that :func:`encode` wrote; :class:`CodecError` for anything
    else (damaged or foreign data is never trusted: every code lies in its table, every
    message's calls follow the one before)."""
    require_strings(doc, ("release", "session", "source", "format"))
    if doc["release"] != RELEASE_MARK:
        raise CodecError("release: not OpenClaw 2026.9's prepared data")
    names = {name: strs_at(doc, name) for name in _NAME_LISTS}
    turn = ints_at(doc, "turn", None, 0, None)
    n = len(turn)
    texts = {name: strs_at(doc, name, n) for name in _TEXT_FIELDS}
    optional: dict[str, list[str | None]] = {}
    for name in _OPTIONAL_TEXT_FIELDS:
        value = doc.get(name)
        if type(value) is not list or len(value) != n or any(
                v is not None and type(v) is not str for v in value):
            raise CodecError(f"{name}: expected a text or null per call")
        optional[name] = value
    flags: dict[str, list[bool]] = {}
    for name in _BOOL_FIELDS:
        value = doc.get(name)
        if type(value) is not list or len(value) != n or any(type(v) is not bool
                                                              for v in value):
            raise CodecError(f"{name}: expected a flag per call")
        flags[name] = value
    tools, hashes = len(names["tool_names"]), len(names["args_hashes"])
    codes = {
        "tool_code": ints_at(doc, "tool_code", n, 1, tools),
        "detect_tool": ints_at(doc, "detect_tool", n, 1, tools),
        "args_code": ints_at(doc, "args_code", n, 1, hashes),
        "detect_args": ints_at(doc, "detect_args", n, 1, hashes),
        "id_code": ints_at(doc, "id_code", n, 0, None),
        "result_code": ints_at(doc, "result_code", n, 0, len(names["result_hashes"])),
        "kind_code": ints_at(doc, "kind_code", n, 0, max(_KIND_CODES.values())),
        "fid_code": ints_at(doc, "fid_code", n, 0, None),
        "unknown_code": ints_at(doc, "unknown_code", n, 0, len(names["unknown_names"])),
    }
    raw_messages = doc.get("messages")
    if type(raw_messages) is not list or any(type(m) is not list or len(m) != 2
                                             for m in raw_messages):
        raise CodecError("messages: expected pairs")
    messages = [(m[0], m[1]) for m in raw_messages]
    message_of: list[int] = []
    at = 0
    for k, (first, end) in enumerate(messages):
        if type(first) is not int or type(end) is not int or first != at or end < first:
            raise CodecError("messages: calls out of order")
        message_of.extend([k] * (end - first))
        at = end
    if at != n:
        raise CodecError("messages: not every call")
    return Prepared9(
        session=doc["session"], source=doc["source"], format=doc["format"], turn=turn,
        call=ints_at(doc, "call", n, 0, None), raw_name=texts["raw_name"], name=texts["name"],
        args_hash=texts["args_hash"], result_hash=optional["result_hash"],
        outcome_kind=optional["outcome_kind"], unknown_tool=optional["unknown_tool"],
        recorded_block=flags["recorded_block"], run=ints_at(doc, "run", n, 0, None),
        run_ids=texts["run_ids"], poll=flags["poll"], is_exec=flags["is_exec"],
        tool_code=codes["tool_code"], detect_tool=codes["detect_tool"],
        args_code=codes["args_code"], detect_args=codes["detect_args"],
        id_code=codes["id_code"], result_code=codes["result_code"],
        kind_code=codes["kind_code"], fid_code=codes["fid_code"],
        no_progress_flag=flags["no_progress_flag"], unknown_code=codes["unknown_code"],
        message_of=message_of, messages=messages,
        ops=ints_at(doc, "ops", None, COMPACTION_OP, len(messages) - 1),
        tool_names=names["tool_names"], args_hashes=names["args_hashes"],
        result_hashes=names["result_hashes"], unknown_names=names["unknown_names"],
    )
