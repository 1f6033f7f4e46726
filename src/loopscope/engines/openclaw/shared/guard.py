"""The post-compaction loop guard, ported from ``createPostCompactionLoopGuard`` of
openclaw@2026.6.11: ``dist/embedded-agent-*.js`` (``src/agents/embedded-agent-runner/
post-compaction-loop-guard.ts``); 2026.9.6 ships the same guard, so both releases run this one.

After a compaction arms it, the guard watches the next ``windowSize`` hashed outcomes of the
run; if all of them are the identical ``(tool, argsHash, resultHash)`` triple, the run aborts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.openclaw.shared.config import DEFAULT_GUARD_WINDOW_SIZE, as_positive_int
from loopscope.engines.openclaw.shared.upstream import guard_message

GUARD_UPSTREAM_DETECTOR: Final = "compaction_loop_persisted"
GUARD_ERROR_NAME: Final = "PostCompactionLoopPersistedError"

USER_OP: Final = -1
"""In a fast path's coded transcript: a user message (a new run, so a fresh, unarmed guard)."""
COMPACTION_OP: Final = -2
"""In a fast path's coded transcript: a compaction (arms the guard)."""


@dataclass(frozen=True, slots=True)
class GuardObservation:
    """What ``observe`` returns."""

    should_abort: bool
    armed: bool
    remaining_attempts: int
    count: int | None = None
    tool_name: str | None = None
    message: str | None = None
    detector: str | None = None
    """``compaction_loop_persisted`` on an abort."""

    @property
    def error_name(self) -> str | None:
        """The name of the error the run fails with upstream, on an abort."""
        return GUARD_ERROR_NAME if self.should_abort else None


_IDLE: Final = GuardObservation(False, False, 0)


class PostCompactionGuard:
    """One guard per run. ``enabled`` is false only when the config's ``enabled`` is ``false``."""

    __slots__ = ("enabled", "history", "remaining_attempts", "window_size")

    def __init__(self, window_size: Any = None, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.window_size = as_positive_int(window_size, DEFAULT_GUARD_WINDOW_SIZE)
        self.remaining_attempts = 0
        self.history: list[tuple[str, str, str]] = []

    @property
    def armed(self) -> bool:
        return self.remaining_attempts > 0

    def arm(self) -> None:
        """After a compaction: watch the next ``window_size`` observations (restarts a window)."""
        self.remaining_attempts = self.window_size
        self.history = []

    def observe(self, tool_name: str, args_hash: str, result_hash: str) -> GuardObservation:
        if not self.enabled or self.remaining_attempts <= 0:
            return _IDLE
        self.remaining_attempts -= 1
        triple = (tool_name, args_hash, result_hash)
        self.history.append(triple)
        armed_after = self.remaining_attempts > 0
        matches = sum(1 for entry in self.history if entry == triple)
        if matches >= self.window_size:
            return GuardObservation(
                True, armed_after, self.remaining_attempts, matches, tool_name,
                guard_message(tool_name, matches, self.window_size), GUARD_UPSTREAM_DETECTOR,
            )
        return GuardObservation(False, armed_after, self.remaining_attempts)


def coded_guard_aborts(ops: Iterable[int], args_code: Sequence[int], result_code: Sequence[int],
                       window_size: int) -> dict[int, int]:
    """The guard over a fast path's coded transcript: call position → identical observations,
    for every abort.

    ``ops`` is the transcript in order: :data:`USER_OP`, :data:`COMPACTION_OP`, or the position
    of a call. As :class:`PostCompactionGuard` (enabled) run per run: a call whose result code
    is 0 has no result hash and is not observed; the ``(args code, result code)`` pair stands
    for the ``(tool, argsHash, resultHash)`` triple, because an argsHash starts with its tool
    name."""
    aborts: dict[int, int] = {}
    remaining = 0
    seen: list[tuple[int, int]] = []
    for op in ops:
        if op == USER_OP:
            remaining = 0
            seen = []
        elif op == COMPACTION_OP:
            remaining = window_size
            seen = []
        elif remaining > 0 and result_code[op]:
            remaining -= 1
            pair = (args_code[op], result_code[op])
            seen.append(pair)
            matches = seen.count(pair)
            if matches >= window_size:
                aborts[op] = matches
    return aborts
