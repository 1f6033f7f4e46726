"""The rolling-history detector, ported literally.

``detect_tool_call_loop``, ``record_tool_call`` and ``record_tool_call_outcome`` mirror the
exports ``t``, ``n`` and ``r`` of openclaw@2026.6.11: ``dist/tool-loop-detection-*.js``
(``detectToolCallLoop``, ``recordToolCall``, ``recordToolCallOutcome``), including their quirks.
This is the reference path (``replay``) and what the upstream test cases and the differential
oracle exercise; the fast path (:mod:`.fast`) is proven equal to it.

The detector ids, history records, walks and messages 2026.9.6 kept are ported once in
:mod:`..shared.upstream` and imported here; this release's other modules take them from this
module, the release's port.

``config`` arguments accept a raw ``loopDetection`` block (any JSON value, ``None`` = absent) or
an already resolved :class:`~.config.ResolvedLoopDetection`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

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
from loopscope.engines.openclaw.v2026_6.config import ResolvedLoopDetection, resolve_loop_detection
from loopscope.engines.openclaw.v2026_6.hashing import hash_tool_outcome
from loopscope.jsonrules.javascript import UNDEFINED

DETECTORS: Final = (UNKNOWN_TOOL_REPEAT, GLOBAL_CIRCUIT_BREAKER, KNOWN_POLL_NO_PROGRESS,
                    PING_PONG, GENERIC_REPEAT, POST_COMPACTION_GUARD)
"""The six detector ids of a step, in evaluation order (the guard last)."""


def resolve(config: Any) -> ResolvedLoopDetection:
    if isinstance(config, ResolvedLoopDetection):
        return config
    return resolve_loop_detection(config)


# --------------------------------------------------------------------------- state


@dataclass(slots=True)
class LoopState:
    """Per-session detector state: the history list, oldest first, shared by every run."""

    history: list[HistoryRecord] = field(default_factory=list)


# --------------------------------------------------------------------------- messages and keys


def breaker_message(tool: str, count: int) -> str:
    return (f"CRITICAL: {tool} has repeated identical no-progress outcomes {count} times. "
            "Session execution blocked by global circuit breaker to prevent runaway loops.")


def generic_critical_message(tool: str, count: int) -> str:
    return (f"CRITICAL: Called {tool} with identical arguments and identical outcomes {count} "
            "times. Session execution blocked to prevent runaway loops.")


# --------------------------------------------------------------------------- walks
# The no-progress streak walks the run-scoped history from the newest record, skips other calls
# and hash-less records and stops at the first different result (the unknown-tool and ping-pong
# walks are shared with 2026.9.6).


def no_progress_streak(history: list[HistoryRecord], tool_name: str,
                       args_hash: str) -> tuple[int, str | None]:
    streak = 0
    latest: str | None = None
    for record in reversed(history):
        if record.tool_name != tool_name or record.args_hash != args_hash:
            continue
        if not record.result_hash:
            continue
        if latest is None:
            latest = record.result_hash
            streak = 1
            continue
        if record.result_hash != latest:
            break
        streak += 1
    return streak, latest


# --------------------------------------------------------------------------- the three exports


def detect_tool_call_loop(
    state: LoopState, tool_name: str, params: Any, config: Any, run_id: Any = None,
    *, args_hash: str | None = None,
) -> LoopVerdict | None:
    """``detectToolCallLoop``: the verdict before this call runs, or ``None`` (not stuck).

    ``args_hash`` may be passed when already known (it must equal ``hash_tool_call``)."""
    resolved = resolve(config)
    if not resolved.detection_on:
        return None
    history = select_history(state.history, run_id)
    current = args_hash if args_hash is not None else hash_tool_call(tool_name, params)
    unknown_count, unknown_name = unknown_tool_streak(history, tool_name)
    streak, latest = no_progress_streak(history, tool_name, current)
    poll = is_known_poll_call(tool_name, params)
    ping = ping_pong_streak(history, current)
    latest_key = latest or "none"

    if unknown_count >= resolved.unknown_tool_threshold:
        return LoopVerdict("critical", UNKNOWN_TOOL_REPEAT, unknown_count,
                           unknown_tool_message(unknown_name or tool_name, unknown_count),
                           f"unknown-tool:{tool_name}:{unknown_name or 'unknown'}")
    if streak >= resolved.global_circuit_breaker_threshold:
        return LoopVerdict("critical", GLOBAL_CIRCUIT_BREAKER, streak,
                           breaker_message(tool_name, streak),
                           f"global:{tool_name}:{current}:{latest_key}")
    if poll and resolved.known_poll_no_progress_on:
        if streak >= resolved.critical_threshold:
            return LoopVerdict("critical", KNOWN_POLL_NO_PROGRESS, streak,
                               poll_critical_message(tool_name, streak),
                               f"poll:{tool_name}:{current}:{latest_key}")
        if streak >= resolved.warning_threshold:
            return LoopVerdict("warning", KNOWN_POLL_NO_PROGRESS, streak,
                               poll_warning_message(tool_name, streak),
                               f"poll:{tool_name}:{current}:{latest_key}")
    ping_key = (ping_pong_key(current, ping.paired_signature) if ping.paired_signature
                else f"pingpong:{tool_name}:{current}")
    if resolved.ping_pong_on:
        if ping.count >= resolved.critical_threshold and ping.evidence:
            return LoopVerdict("critical", PING_PONG, ping.count,
                               ping_pong_critical_message(ping.count), ping_key,
                               ping.paired_tool_name)
        if ping.count >= resolved.warning_threshold:
            return LoopVerdict("warning", PING_PONG, ping.count,
                               ping_pong_warning_message(ping.count), ping_key,
                               ping.paired_tool_name)
    if not poll and resolved.generic_repeat_on:
        if streak >= resolved.critical_threshold:
            return LoopVerdict("critical", GENERIC_REPEAT, streak,
                               generic_critical_message(tool_name, streak),
                               f"generic:{tool_name}:{current}:{latest_key}")
        recent = sum(1 for r in history if r.tool_name == tool_name and r.args_hash == current)
        if recent >= resolved.warning_threshold:
            return LoopVerdict("warning", GENERIC_REPEAT, recent,
                               generic_warning_message(tool_name, recent),
                               f"generic:{tool_name}:{current}")
    return None


def _trim(state: LoopState, history_size: int) -> None:
    excess = len(state.history) - history_size
    if excess > 0:
        del state.history[:excess]


def record_tool_call(
    state: LoopState, tool_name: str, params: Any, tool_call_id: str | None, config: Any,
    run_id: Any = None, *, args_hash: str | None = None, timestamp: Any = None,
) -> HistoryRecord:
    """``recordToolCall``: append a record, then trim the whole history (every run) to
    ``historySize``."""
    resolved = resolve(config)
    record = HistoryRecord(
        tool_name=tool_name,
        args_hash=args_hash if args_hash is not None else hash_tool_call(tool_name, params),
        tool_call_id=tool_call_id,
        run_id=normalize_run_id(run_id),
        timestamp=timestamp,
    )
    state.history.append(record)
    _trim(state, resolved.history_size)
    return record


def record_tool_call_outcome(
    state: LoopState, tool_name: str, params: Any, tool_call_id: str | None,
    result: Any = UNDEFINED, error: Any = UNDEFINED, config: Any = None, run_id: Any = None,
    *, args_hash: str | None = None, outcome: tuple[str | None, str | None] | None = None,
    timestamp: Any = None,
) -> HistoryRecord | None:
    """``recordToolCallOutcome``: attach the outcome hash to the newest matching
    hash-less record of the same run, or append a record carrying it. Returns ``None`` when the
    outcome has no hash (no result at all, or a loop veto).

    ``outcome`` may pass a precomputed ``hash_tool_outcome`` result."""
    resolved = resolve(config)
    run = normalize_run_id(run_id)
    result_hash, unknown_name = (outcome if outcome is not None
                                 else hash_tool_outcome(tool_name, params, result, error))
    if not result_hash:
        return None
    current = args_hash if args_hash is not None else hash_tool_call(tool_name, params)
    matched: HistoryRecord | None = None
    for record in reversed(state.history):
        if normalize_run_id(record.run_id) != run:
            continue
        if tool_call_id and record.tool_call_id != tool_call_id:
            continue
        if record.tool_name != tool_name or record.args_hash != current:
            continue
        if record.result_hash is not None:
            continue
        record.result_hash = result_hash
        record.unknown_tool_name = unknown_name
        matched = record
        break
    if matched is None:
        matched = HistoryRecord(tool_name, current, tool_call_id, run, result_hash, unknown_name,
                                timestamp)
        state.history.append(matched)
    _trim(state, resolved.history_size)
    return matched


# --------------------------------------------------------------------------- de-duplication

WarningDeduper = WarningBuckets
"""Upstream's wrapper-level log de-duplication of warnings: emitted once per bucket of 10."""


# --------------------------------------------------------------------------- statistics


def tool_call_stats(state: LoopState) -> dict[str, Any]:
    """``{total_calls, unique_patterns, most_frequent}`` over the whole history, no run filter."""
    counts: dict[str, int] = {}
    tools: dict[str, str] = {}
    for record in state.history:
        counts[record.args_hash] = counts.get(record.args_hash, 0) + 1
        tools.setdefault(record.args_hash, record.tool_name)
    most: dict[str, Any] | None = None
    best = 0
    for args_hash, count in counts.items():
        if count > best:
            best = count
            most = {"tool_name": tools[args_hash], "count": count}
    return {"total_calls": len(state.history), "unique_patterns": len(counts),
            "most_frequent": most}
