"""The parts of OpenClaw's rolling-history detector that every modelled release ships alike.

Detector ids, the history record, the verdict, the unknown-tool and ping-pong walks, the run
filter and the messages that did not change between ``openclaw@2026.6.11`` and
``openclaw@2026.9.6`` (``dist/tool-loop-detection-*``), ported literally once so that both
releases' detectors (:mod:`..v2026_6.upstream`, :mod:`..v2026_9.upstream`) run the same code
where upstream runs the same code.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from loopscope.jsonrules.javascript import js_trim, utf16_sort_key

UNKNOWN_TOOL_REPEAT: Final = "unknown_tool_repeat"
GLOBAL_CIRCUIT_BREAKER: Final = "global_circuit_breaker"
KNOWN_POLL_NO_PROGRESS: Final = "known_poll_no_progress"
PING_PONG: Final = "ping_pong"
GENERIC_REPEAT: Final = "generic_repeat"
POST_COMPACTION_GUARD: Final = "post_compaction_guard"


def normalize_run_id(run_id: Any) -> str | None:
    """``normalizeOptionalString``: a JS-trimmed non-empty string, else ``None``."""
    if not isinstance(run_id, str):
        return None
    trimmed = js_trim(run_id)
    return trimmed or None


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
# Each walks the run-scoped history from the newest record. The unknown-tool streak stops at
# any other tool; ping-pong needs a strict A/B alternation that the current call continues,
# and counts the current call.


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


# --------------------------------------------------------------------------- warning buckets


WARNING_BUCKET_SIZE: Final = 10
"""Repetitions per warning bucket (``LOOP_WARNING_BUCKET_SIZE``)."""
MAX_WARNING_KEYS: Final = 256
"""Warning keys the bucket map keeps (``MAX_LOOP_WARNING_KEYS``)."""


class WarningBuckets:
    """Upstream's de-duplication of warnings (``shouldEmitLoopWarning`` in 2026.9.6, the
    wrapper's log de-duplication in 2026.6.11; the same rule): a warning is shown once per
    bucket of ``bucket_size`` repetitions per (run-prefixed) warning key, and the map keeps the
    newest :data:`MAX_WARNING_KEYS` keys, so a loop that goes on is reported again without
    flooding the log."""

    __slots__ = ("_buckets", "bucket_size")

    def __init__(self, bucket_size: int = WARNING_BUCKET_SIZE) -> None:
        self.bucket_size = bucket_size
        self._buckets: OrderedDict[str, int] = OrderedDict()

    def should_emit(self, warning_key: str | None, detector: str, tool_name: str, count: int,
                    run_id: str | None = None) -> bool:
        key = warning_key or f"{detector}:{tool_name}"
        if run_id:
            key = f"{run_id}:{key}"
        bucket = count // self.bucket_size
        if bucket <= self._buckets.get(key, 0):
            return False
        self._buckets[key] = bucket  # (updating keeps the insertion position)
        while len(self._buckets) > MAX_WARNING_KEYS:
            self._buckets.popitem(last=False)
        return True
