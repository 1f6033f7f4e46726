"""The rolling-history detector, ported literally.

``detect_tool_call_loop``, ``record_tool_call`` and ``record_tool_call_outcome`` mirror the
exports ``t``, ``n`` and ``r`` of openclaw@2026.6.11: ``dist/tool-loop-detection-*.js``
(``detectToolCallLoop``, ``recordToolCall``, ``recordToolCallOutcome``), including their quirks.
This is the reference path (``replay``) and what the upstream test cases and the differential
oracle exercise; the fast path (:mod:`.fast`) is proven equal to it.

``config`` arguments accept a raw ``loopDetection`` block (any JSON value, ``None`` = absent) or
an already resolved :class:`~loopscope.engines.openclaw.config.ResolvedLoopDetection`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from loopscope.engines.openclaw.config import ResolvedLoopDetection, resolve_loop_detection
from loopscope.engines.openclaw.hashing import (
    hash_tool_call,
    hash_tool_outcome,
    is_known_poll_call,
)
from loopscope.jsonrules.javascript import UNDEFINED, js_trim, utf16_sort_key

UNKNOWN_TOOL_REPEAT: Final = "unknown_tool_repeat"
GLOBAL_CIRCUIT_BREAKER: Final = "global_circuit_breaker"
KNOWN_POLL_NO_PROGRESS: Final = "known_poll_no_progress"
PING_PONG: Final = "ping_pong"
GENERIC_REPEAT: Final = "generic_repeat"
POST_COMPACTION_GUARD: Final = "post_compaction_guard"

DETECTORS: Final = (UNKNOWN_TOOL_REPEAT, GLOBAL_CIRCUIT_BREAKER, KNOWN_POLL_NO_PROGRESS,
                    PING_PONG, GENERIC_REPEAT, POST_COMPACTION_GUARD)
"""The six detector ids of a step, in evaluation order (the guard last)."""


def normalize_run_id(run_id: Any) -> str | None:
    """``normalizeOptionalString``: a JS-trimmed non-empty string, else ``None``."""
    if not isinstance(run_id, str):
        return None
    trimmed = js_trim(run_id)
    return trimmed or None


def resolve(config: Any) -> ResolvedLoopDetection:
    if isinstance(config, ResolvedLoopDetection):
        return config
    return resolve_loop_detection(config)


# --------------------------------------------------------------------------- state


@dataclass(slots=True)
class HistoryRecord:
    """One entry of the per-session history."""

    tool_name: str
    args_hash: str
    tool_call_id: str | None = None
    run_id: str | None = None
    result_hash: str | None = None
    unknown_tool_name: str | None = None
    timestamp: Any = None


@dataclass(slots=True)
class LoopState:
    """Per-session detector state: the history list, oldest first, shared by every run."""

    history: list[HistoryRecord] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class LoopVerdict:
    """A stuck verdict of ``detectToolCallLoop``."""

    level: str
    """``"warning"`` or ``"critical"``."""
    detector: str
    count: int
    message: str
    warning_key: str
    paired_tool_name: str | None = None
    """Ping-pong only: the other side of the alternation."""

    @property
    def critical(self) -> bool:
        return self.level == "critical"


# --------------------------------------------------------------------------- messages and keys


def unknown_tool_message(name: str, count: int) -> str:
    return (f"CRITICAL: attempted unavailable tool {name} {count} times. Stop retrying that "
            "missing tool and answer without it.")


def breaker_message(tool: str, count: int) -> str:
    return (f"CRITICAL: {tool} has repeated identical no-progress outcomes {count} times. "
            "Session execution blocked by global circuit breaker to prevent runaway loops.")


def poll_critical_message(tool: str, count: int) -> str:
    return (f"CRITICAL: Called {tool} with identical arguments and no progress {count} times. "
            "This appears to be a stuck polling loop. Session execution blocked to prevent "
            "resource waste.")


def poll_warning_message(tool: str, count: int) -> str:
    return (f"WARNING: You have called {tool} {count} times with identical arguments and no "
            "progress. Stop polling and either (1) increase wait time between checks, or (2) "
            "report the task as failed if the process is stuck.")


def ping_pong_critical_message(count: int) -> str:
    return (f"CRITICAL: You are alternating between repeated tool-call patterns ({count} "
            "consecutive calls) with no progress. This appears to be a stuck ping-pong loop. "
            "Session execution blocked to prevent resource waste.")


def ping_pong_warning_message(count: int) -> str:
    return (f"WARNING: You are alternating between repeated tool-call patterns ({count} "
            "consecutive calls). This looks like a ping-pong loop; stop retrying and report the "
            "task as failed.")


def generic_critical_message(tool: str, count: int) -> str:
    return (f"CRITICAL: Called {tool} with identical arguments and identical outcomes {count} "
            "times. Session execution blocked to prevent runaway loops.")


def generic_warning_message(tool: str, count: int) -> str:
    return (f"WARNING: You have called {tool} {count} times with identical arguments. If this "
            "is not making progress, stop retrying and report the task as failed.")


def guard_message(tool: str, count: int, window_size: int) -> str:
    """The post-compaction guard's abort message."""
    return (f"CRITICAL: tool {tool} repeated {count} times with identical arguments and "
            f"identical results within {window_size} attempts after auto-compaction. The "
            "compaction did not break the loop. Aborting to prevent runaway resource use.")


def ping_pong_key(signature_a: str, signature_b: str) -> str:
    """``pingpong:A|B`` with the two signatures in UTF-16 order."""
    first, second = sorted((signature_a, signature_b), key=utf16_sort_key)
    return f"pingpong:{first}|{second}"


# --------------------------------------------------------------------------- walks
# Each walks the run-scoped history from the newest record. The no-progress streak skips other
# calls and hash-less records and stops at the first different result; the unknown-tool streak
# stops at any other tool; ping-pong needs a strict A/B alternation that the current call
# continues, and counts the current call.


def unknown_tool_streak(history: list[HistoryRecord], tool_name: str) -> tuple[int, str | None]:
    streak = 0
    name: str | None = None
    for record in reversed(history):
        if record.tool_name != tool_name or not record.unknown_tool_name:
            break
        if name is None:
            name = record.unknown_tool_name
            streak = 1
            continue
        if record.unknown_tool_name != name:
            break
        streak += 1
    return streak, name


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


@dataclass(frozen=True, slots=True)
class PingPong:
    count: int = 0
    evidence: bool = False
    paired_tool_name: str | None = None
    paired_signature: str | None = None


_NO_PING_PONG: Final = PingPong()


def ping_pong_streak(history: list[HistoryRecord], current_signature: str) -> PingPong:
    if not history:
        return _NO_PING_PONG
    last = history[-1]
    other_signature: str | None = None
    other_tool: str | None = None
    for record in reversed(history[:-1]):
        if record.args_hash != last.args_hash:
            other_signature = record.args_hash
            other_tool = record.tool_name
            break
    if not other_signature or not other_tool:
        return _NO_PING_PONG
    tail = 0
    for record in reversed(history):
        expected = last.args_hash if tail % 2 == 0 else other_signature
        if record.args_hash != expected:
            break
        tail += 1
    if tail < 2 or current_signature != other_signature:
        return _NO_PING_PONG
    first_a: str | None = None
    first_b: str | None = None
    evidence = True
    for record in history[len(history) - tail:]:
        if not record.result_hash:
            evidence = False
            break
        if record.args_hash == last.args_hash:
            if first_a is None:
                first_a = record.result_hash
            elif first_a != record.result_hash:
                evidence = False
                break
            continue
        if record.args_hash == other_signature:
            if first_b is None:
                first_b = record.result_hash
            elif first_b != record.result_hash:
                evidence = False
                break
            continue
        evidence = False
        break
    if not first_a or not first_b:
        evidence = False
    return PingPong(tail + 1, evidence, last.tool_name, last.args_hash)


def select_history(history: list[HistoryRecord], run_id: Any) -> list[HistoryRecord]:
    wanted = normalize_run_id(run_id)
    return [r for r in history if normalize_run_id(r.run_id) == wanted]


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

WARNING_BUCKET_SIZE: Final = 10
MAX_WARNING_KEYS: Final = 256


class WarningDeduper:
    """Upstream's wrapper-level log de-duplication of warnings: emitted once per bucket of 10."""

    __slots__ = ("_buckets",)

    def __init__(self) -> None:
        self._buckets: OrderedDict[str, int] = OrderedDict()

    def should_emit(self, warning_key: str | None, detector: str, tool_name: str, count: int,
                    run_id: str | None = None) -> bool:
        key = warning_key or f"{detector}:{tool_name}"
        if run_id:
            key = f"{run_id}:{key}"
        bucket = count // WARNING_BUCKET_SIZE
        if bucket <= self._buckets.get(key, 0):
            return False
        if key in self._buckets:
            self._buckets[key] = bucket  # updating keeps the insertion position
        else:
            self._buckets[key] = bucket
            if len(self._buckets) > MAX_WARNING_KEYS:
                self._buckets.popitem(last=False)
        return True


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
