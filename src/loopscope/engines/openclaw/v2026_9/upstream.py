"""The 2026.9.6 detector and batch admission, ported literally.

``detect_tool_call_loop``, ``record_tool_call`` and ``record_tool_call_outcome`` mirror the
exports of ``openclaw@2026.9.6``'s ``dist/tool-loop-detection-*.mjs`` (regions
``src/agents/tool-loop-detection.ts``, ``tool-loop-no-progress.ts``,
``tool-loop-argument-churn.ts``); :func:`admit_tool_call_batch` mirrors ``admitToolCallBatch``
(``dist/agent-tools.before-tool-call-*.mjs``, region ``src/agents/tool-loop-admission.ts``).
This is the reference path; the fast path is proven equal to it.

The unknown-tool and ping-pong walks, most messages and the warning buckets
(``shouldEmitLoopWarning``) did not change since 2026.6.11 and are imported from
:mod:`..shared.upstream`. The fixed values come from a :class:`~.config.Limits`, so that they
can be explored as what-ifs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from loopscope.engines.openclaw.shared.hashing import hash_tool_call, is_known_poll_call
from loopscope.engines.openclaw.shared.upstream import (
    GENERIC_REPEAT,
    GLOBAL_CIRCUIT_BREAKER,
    KNOWN_POLL_NO_PROGRESS,
    PING_PONG,
    POST_COMPACTION_GUARD,
    UNKNOWN_TOOL_REPEAT,
    HistoryRecord,
    LoopVerdict,
    WarningBuckets,
    generic_warning_message,
    normalize_run_id,
    ping_pong_critical_message,
    ping_pong_key,
    ping_pong_streak,
    ping_pong_warning_message,
    poll_critical_message,
    poll_warning_message,
    select_history,
    unknown_tool_message,
    unknown_tool_streak,
)
from loopscope.engines.openclaw.v2026_9.config import (
    MIN_STABLE_CALLS_PER_VARIANT,
    UPSTREAM,
    Limits,
)
from loopscope.engines.openclaw.v2026_9.hashing import (
    TERMINAL_EXEC_FAILURE,
    TOOL_LOOP_VETO,
    Outcome,
    detection_name,
    hash_tool_outcome,
)
from loopscope.jsonrules.javascript import UNDEFINED, js_truthy

ARGUMENT_CHURN: Final = "argument_churn"
TOOL_LOOP_RECOVERY_TERMINATED: Final = "tool_loop_recovery_terminated"
TOOL_LOOP_BATCH_SKIPPED: Final = "tool_loop_batch_skipped"

LOOP_DETECTORS: Final = (UNKNOWN_TOOL_REPEAT, GLOBAL_CIRCUIT_BREAKER, KNOWN_POLL_NO_PROGRESS,
                         PING_PONG, GENERIC_REPEAT, ARGUMENT_CHURN)
"""The detector's verdict ids, in evaluation order (argument churn sits between generic
critical and generic warning)."""
DETECTORS: Final = (*LOOP_DETECTORS, POST_COMPACTION_GUARD, TOOL_LOOP_RECOVERY_TERMINATED,
                    TOOL_LOOP_BATCH_SKIPPED)
"""Every ``detector`` a 2026.9.6 step can carry."""

RECOVERY: Final = "recovery"
TERMINAL: Final = "terminal"

TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE: Final = (
    "OpenClaw stopped this run because tool-loop recovery encountered another critical loop. "
    "No blocked tool action was executed."
)
"""``TOOL_LOOP_RECOVERY_TERMINATED_MESSAGE`` (``dist/agent-core-*.mjs``)."""
RECOVERY_TRIGGER_SUFFIX: Final = (
    "Do not repeat this exact tool action. Reassess the task. You may answer the user, ask for "
    "clarification, or continue with a different tool or different arguments."
)
RECOVERY_SKIPPED_TEXT: Final = (
    "This tool was not executed because another call in the batch triggered critical "
    "tool-loop recovery. Reassess the task before choosing the next action."
)
TERMINAL_TRIGGER_SUFFIX: Final = (
    "Critical tool-loop recovery failed because another critical loop was detected. This run "
    "is stopping now."
)
TERMINAL_SKIPPED_TEXT: Final = (
    "This tool was not executed because another call in the batch repeated a critical tool "
    "loop. This run is stopping now."
)


def intervention_result_text(reason: str, trigger: bool, terminal: bool) -> str:
    """The text ``completeToolLoopInterventionBatch`` gives a call of an intervention batch."""
    if terminal:
        return f"{reason}\n\n{TERMINAL_TRIGGER_SUFFIX}" if trigger else TERMINAL_SKIPPED_TEXT
    return f"{reason}\n\n{RECOVERY_TRIGGER_SUFFIX}" if trigger else RECOVERY_SKIPPED_TEXT


# --------------------------------------------------------------------------- messages


def breaker_message(tool: str, count: int) -> str:
    return (f"CRITICAL: {tool} repeated identical no-progress outcomes {count} times. Session "
            "execution blocked by global circuit breaker to prevent runaway loops.")


def generic_critical_message(tool: str, count: int) -> str:
    return (f"CRITICAL: Called {tool} with identical outcomes {count} times. Session execution "
            "blocked to prevent runaway loops.")


def argument_churn_message(tool: str, variants: int, count: int) -> str:
    return (f"WARNING: {tool} has cycled through {variants} repeated argument patterns with the "
            f"same stable outcome {count} times. Continued churn is treated as stalled run "
            "activity, but this tool call remains allowed.")


# --------------------------------------------------------------------------- state


@dataclass(slots=True)
class HistoryRecord9(HistoryRecord):
    """A history entry of 2026.9.6: 2026.6.11's fields plus the outcome's kind, its failure
    identity and its no-progress flag."""

    outcome_kind: str | None = None
    failure_identity_hash: str | None = None
    no_progress: bool = False


@dataclass(slots=True)
class LoopState9:
    """Per-session detector state: the history list, oldest first."""

    history: list[HistoryRecord9] = field(default_factory=list)


LoopVerdict9 = LoopVerdict
"""The verdict type is the same as 2026.6.11's (``detectToolCallLoop``'s stuck result)."""


# --------------------------------------------------------------------------- walks


def count_no_progress_streak(history: Sequence[HistoryRecord9], tool_name: str,
                             args_hash: str, terminal_exec_failures_only: bool
                             ) -> tuple[int, str | None]:
    """``countNoProgressStreak``: ``(count, latest result hash)``.

    Newest first over the same tool (and, unless following terminal exec failures, the same
    arguments): a loop veto adds 1 together with the next older outcome (or alone when none
    follows); identical result hashes extend the streak. Following terminal exec failures, the
    walk crosses changed arguments while the failure identity repeats, and stops at another
    tool, a non-failure outcome, or on returning to the current arguments."""
    streak = 0
    latest: HistoryRecord9 | None = None
    crossed = False
    pending = 0
    for record in reversed(history):
        if record.tool_name != tool_name:
            if terminal_exec_failures_only:
                break
            continue
        if not terminal_exec_failures_only and record.args_hash != args_hash:
            continue
        if record.outcome_kind == TOOL_LOOP_VETO:
            pending += 1
            continue
        if not isinstance(record.result_hash, str) or not record.result_hash:
            continue
        if terminal_exec_failures_only and record.outcome_kind != TERMINAL_EXEC_FAILURE:
            break
        if latest is None:
            latest = record
            crossed = record.args_hash != args_hash
            streak = pending + 1
            pending = 0
            continue
        if terminal_exec_failures_only:
            if crossed and record.args_hash == args_hash:
                break
            if record.args_hash != args_hash:
                crossed = True
        repeats_failure = (terminal_exec_failures_only
                           and record.failure_identity_hash is not None
                           and record.failure_identity_hash == latest.failure_identity_hash)
        if record.result_hash != latest.result_hash and not repeats_failure:
            break
        streak += pending + 1
        pending = 0
    if latest is not None:
        return streak, latest.result_hash
    return (0 if terminal_exec_failures_only else pending), None


def no_progress_streak(history: Sequence[HistoryRecord9], tool_name: str,
                       args_hash: str) -> tuple[int, str | None]:
    """``getNoProgressStreak``: the same-arguments streak; for ``exec`` the terminal-failure
    streak instead when it is longer."""
    repeated = count_no_progress_streak(history, tool_name, args_hash, False)
    if tool_name != "exec":
        return repeated
    failures = count_no_progress_streak(history, tool_name, args_hash, True)
    return failures if failures[0] > repeated[0] else repeated


def argument_churn_streak(history: Sequence[HistoryRecord9], tool_name: str,
                          current_args_hash: str) -> tuple[int, int]:
    """``getArgumentChurnNoProgressStreak``: ``(count, variants)``, or ``(0, 0)``.

    Over the unbroken newest tail of this tool whose outcomes are all no-progress (calls
    without an outcome skipped), each argument variant keeping one result hash: at least two
    variants, each seen at least three times, all sharing one result hash, and the current
    call's variant among them."""
    outcomes: dict[str, list[Any]] = {}
    for record in reversed(history):
        if record.tool_name != tool_name:
            break
        if not record.result_hash:
            continue
        if record.no_progress is not True:
            break
        previous = outcomes.get(record.args_hash)
        if previous is not None and previous[0] != record.result_hash:
            break
        outcomes[record.args_hash] = [record.result_hash,
                                      (previous[1] if previous is not None else 0) + 1]
    values = list(outcomes.values())
    count = sum(v[1] for v in values)
    stable = [v for v in values if v[1] >= MIN_STABLE_CALLS_PER_VARIANT]
    shared = len({v[0] for v in stable}) == 1
    current = outcomes.get(current_args_hash)
    only_stable = sum(v[1] for v in stable) == count
    if (len(stable) > 1 and only_stable and shared
            and (current[1] if current is not None else 0) >= MIN_STABLE_CALLS_PER_VARIANT):
        return count, len(stable)
    return 0, 0


# --------------------------------------------------------------------------- the detector


def detect_tool_call_loop(
    state: LoopState9 | Sequence[HistoryRecord9], tool_name: str, params: Any, enabled: Any,
    run_id: Any = None, limits: Limits = UPSTREAM, *, args_hash: str | None = None,
) -> LoopVerdict9 | None:
    """``detectToolCallLoop`` of 2026.9.6: the verdict before this call, or ``None``.

    ``state`` is the session state or a history list (the admission step passes its projected
    copy). ``enabled`` is the config's value (JS truthiness)."""
    if not js_truthy(enabled):
        return None
    records = state.history if isinstance(state, LoopState9) else state
    # (2026.6.11's walks take its record type; every record here is a HistoryRecord9)
    scoped = select_history(cast(list[HistoryRecord], list(records)), run_id)
    history = cast(list[HistoryRecord9], scoped)
    current = args_hash if args_hash is not None else hash_tool_call(tool_name, params)
    unknown_count, unknown_name = unknown_tool_streak(scoped, tool_name)
    streak, latest = no_progress_streak(history, tool_name, current)
    churn, variants = argument_churn_streak(history, tool_name, current)
    poll = is_known_poll_call(tool_name, params)
    ping = ping_pong_streak(scoped, current)
    latest_key = latest or "none"
    if unknown_count >= limits.unknown_tool:
        return LoopVerdict9("critical", UNKNOWN_TOOL_REPEAT, unknown_count,
                            unknown_tool_message(unknown_name or tool_name, unknown_count),
                            f"unknown-tool:{tool_name}:{unknown_name or 'unknown'}")
    if streak >= limits.breaker:
        return LoopVerdict9("critical", GLOBAL_CIRCUIT_BREAKER, streak,
                            breaker_message(tool_name, streak),
                            f"global:{tool_name}:{current}:{latest_key}")
    if poll and streak >= limits.critical:
        return LoopVerdict9("critical", KNOWN_POLL_NO_PROGRESS, streak,
                            poll_critical_message(tool_name, streak),
                            f"poll:{tool_name}:{current}:{latest_key}")
    if poll and streak >= limits.warning:
        return LoopVerdict9("warning", KNOWN_POLL_NO_PROGRESS, streak,
                            poll_warning_message(tool_name, streak),
                            f"poll:{tool_name}:{current}:{latest_key}")
    ping_key = (ping_pong_key(current, ping.paired_signature) if ping.paired_signature
                else f"pingpong:{tool_name}:{current}")
    if ping.count >= limits.critical and ping.evidence:
        return LoopVerdict9("critical", PING_PONG, ping.count,
                            ping_pong_critical_message(ping.count), ping_key,
                            ping.paired_tool_name)
    if ping.count >= limits.warning:
        return LoopVerdict9("warning", PING_PONG, ping.count,
                            ping_pong_warning_message(ping.count), ping_key,
                            ping.paired_tool_name)
    if not poll and streak >= limits.critical:
        return LoopVerdict9("critical", GENERIC_REPEAT, streak,
                            generic_critical_message(tool_name, streak),
                            f"generic:{tool_name}:{current}:{latest_key}")
    if churn >= limits.argument_churn:
        return LoopVerdict9("warning", ARGUMENT_CHURN, churn,
                            argument_churn_message(tool_name, variants, churn),
                            f"argument-churn:{tool_name}")
    recent = sum(1 for r in history if r.tool_name == tool_name and r.args_hash == current)
    if not poll and recent >= limits.warning:
        return LoopVerdict9("warning", GENERIC_REPEAT, recent,
                            generic_warning_message(tool_name, recent),
                            f"generic:{tool_name}:{current}")
    return None


def _trim(history: list[HistoryRecord9], history_size: int) -> None:
    excess = len(history) - history_size
    if excess > 0:
        del history[:excess]


def record_tool_call(
    state: LoopState9, tool_name: str, params: Any, tool_call_id: str | None,
    run_id: Any = None, limits: Limits = UPSTREAM, *, args_hash: str | None = None,
) -> HistoryRecord9:
    """``recordToolCall``: append a hash-less record, keep the newest ``TOOL_CALL_HISTORY_SIZE``."""
    record = HistoryRecord9(
        tool_name=tool_name,
        args_hash=args_hash if args_hash is not None else hash_tool_call(tool_name, params),
        tool_call_id=tool_call_id, run_id=normalize_run_id(run_id))
    state.history.append(record)
    _trim(state.history, limits.history_size)
    return record


def record_tool_call_outcome(
    state: LoopState9, tool_name: str, params: Any, tool_call_id: str | None,
    result: Any = UNDEFINED, error: Any = UNDEFINED, run_id: Any = None,
    limits: Limits = UPSTREAM, *, args_hash: str | None = None, outcome: Outcome | None = None,
) -> HistoryRecord9 | None:
    """``recordToolCallOutcome``: attach the outcome (hash, veto, failure identity, no-progress
    flag) to the newest matching record without one, or append a record carrying it. ``None``
    when nothing is recorded (no result and no error).

    ``outcome`` may pass a precomputed ``hash_tool_outcome`` result."""
    found = outcome if outcome is not None else hash_tool_outcome(tool_name, params, result, error)
    if not found.result_hash and not found.outcome_kind:
        return None
    run = normalize_run_id(run_id)
    current = args_hash if args_hash is not None else hash_tool_call(tool_name, params)
    matched: HistoryRecord9 | None = None
    for record in reversed(state.history):
        if normalize_run_id(record.run_id) != run:
            continue
        if tool_call_id and record.tool_call_id != tool_call_id:
            continue
        if record.tool_name != tool_name or record.args_hash != current:
            continue
        if record.result_hash is not None or record.outcome_kind is not None:
            continue
        record.outcome_kind = found.outcome_kind
        record.result_hash = found.result_hash
        record.failure_identity_hash = found.failure_identity_hash
        record.no_progress = found.no_progress
        record.unknown_tool_name = found.unknown_tool_name
        matched = record
        break
    if matched is None:
        matched = HistoryRecord9(tool_name, current, tool_call_id, run, found.result_hash,
                                 found.unknown_tool_name, None, found.outcome_kind,
                                 found.failure_identity_hash, found.no_progress)
        state.history.append(matched)
    _trim(state.history, limits.history_size)
    return matched


# --------------------------------------------------------------------------- warning buckets


# --------------------------------------------------------------------------- admission


@dataclass(frozen=True, slots=True)
class BatchCall:
    """One call of an assistant message, as the admission step sees it."""

    tool_name: str
    """Normalised: what the call is recorded under."""
    params: Any
    tool_call_id: str | None
    args_hash: str
    """Of ``tool_name``."""

    @property
    def detected_as(self) -> str:
        """The name the detector is given (:func:`~.hashing.detection_name`)."""
        return detection_name(self.tool_name)


@dataclass(frozen=True, slots=True)
class Admission:
    """What ``admitToolCallBatch`` decided for one message.

    ``verdicts[k]`` is call ``k``'s own verdict and whether its warning would be shown, for the
    calls checked before the first critical one (all of them when ``trigger`` is ``None``)."""

    verdicts: tuple[tuple[LoopVerdict9 | None, bool | None], ...]
    trigger: int | None = None
    """The position of the call whose critical verdict stopped the batch."""
    intervention: LoopVerdict9 | None = None


NO_ADMISSION: Final = Admission(())


def admit_tool_call_batch(
    state: LoopState9, calls: Sequence[BatchCall], enabled: Any, run_id: str | None,
    buckets: WarningBuckets, limits: Limits = UPSTREAM,
) -> Admission:
    """``admitToolCallBatch``: check the message's calls in order against the run's history
    plus a projected loop-veto record for every earlier call of the message; the first
    critical verdict stops the batch (an intervention). Warnings go through the buckets.

    Only the checks: the history itself is not changed (the caller records the calls)."""
    if enabled is not True:
        return NO_ADMISSION
    projected = list(state.history)
    run = normalize_run_id(run_id)
    verdicts: list[tuple[LoopVerdict9 | None, bool | None]] = []
    for k, call in enumerate(calls):
        name = call.detected_as
        verdict = detect_tool_call_loop(projected, name, call.params, enabled, run_id, limits,
                                        args_hash=call.args_hash if name == call.tool_name
                                        else None)
        if verdict is not None and verdict.critical:
            return Admission(tuple(verdicts), k, verdict)
        emitted: bool | None = None
        if verdict is not None:
            emitted = buckets.should_emit(verdict.warning_key, verdict.detector, name,
                                          verdict.count, run_id)
        verdicts.append((verdict, emitted))
        projected.append(HistoryRecord9(call.tool_name, call.args_hash, call.tool_call_id, run,
                                        outcome_kind=TOOL_LOOP_VETO))
    return Admission(tuple(verdicts))
