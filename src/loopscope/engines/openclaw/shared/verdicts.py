"""A detector verdict's message and warning key, built from what a fast path counted.

The fast paths do not run ``detectToolCallLoop``: they know a call's detector, level and
count and the names and hashes behind them, and write the texts the detector would. Both
releases build them with the same template literals per detector (``dist/tool-loop-detection-*``
of ``openclaw@2026.6.11`` and ``openclaw@2026.9.6``), except the circuit-breaker and generic
critical messages that 2026.9.6 reworded: the caller passes its release's two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress
from typing import Final

from loopscope.engines.openclaw.shared.upstream import (
    GENERIC_REPEAT,
    GLOBAL_CIRCUIT_BREAKER,
    KNOWN_POLL_NO_PROGRESS,
    PING_PONG,
    UNKNOWN_TOOL_REPEAT,
    generic_warning_message,
    ping_pong_critical_message,
    ping_pong_key,
    ping_pong_warning_message,
    poll_critical_message,
    poll_warning_message,
    unknown_tool_message,
)

_STREAK_KEY_PREFIX: Final = {GLOBAL_CIRCUIT_BREAKER: "global", KNOWN_POLL_NO_PROGRESS: "poll",
                             GENERIC_REPEAT: "generic"}
"""The key prefix of the verdicts keyed by the no-progress streak's latest result hash."""


def positions_reaching(peak: Sequence[int], floor: int) -> list[int]:
    """Positions (ascending) of the calls whose largest count is at least ``floor``: below the
    lowest threshold no detector gives a verdict, so only these calls need to be checked."""
    return list(compress(range(len(peak)), map(floor.__le__, peak)))


def verdict_message(detector: str, critical: bool, tool: str, count: int,
                    unknown_name: str | None, *, breaker: Callable[[str, int], str],
                    generic_critical: Callable[[str, int], str]) -> str:
    """The ``message`` of a verdict of one of the five shared detectors. ``unknown_name`` is the
    unknown-tool streak's name (``None``: the call's own ``tool`` stands in); ``breaker`` and
    ``generic_critical`` are the release's own circuit-breaker and generic critical messages."""
    if detector == UNKNOWN_TOOL_REPEAT:
        return unknown_tool_message(tool if unknown_name is None else unknown_name, count)
    if detector == GLOBAL_CIRCUIT_BREAKER:
        return breaker(tool, count)
    if detector == KNOWN_POLL_NO_PROGRESS:
        return (poll_critical_message if critical else poll_warning_message)(tool, count)
    if detector == PING_PONG:
        return (ping_pong_critical_message if critical else ping_pong_warning_message)(count)
    return (generic_critical if critical else generic_warning_message)(tool, count)


def verdict_warning_key(detector: str, level: str, tool: str, args_hash: str, *,
                        unknown_name: str | None, paired_args_hash: str, latest_code: int,
                        result_hashes: Sequence[str]) -> str:
    """The ``warningKey`` of a verdict of one of the five shared detectors.

    ``unknown_name``: the unknown-tool streak's name, or ``None``; ``paired_args_hash``: the
    other side of a ping-pong (used by that detector only); the streak's latest result hash
    is ``result_hashes[latest_code - 1]`` (0: none), read only for the keys that carry it, so
    that a lazily hashed table is not made to hash."""
    if detector == UNKNOWN_TOOL_REPEAT:
        return f"unknown-tool:{tool}:{'unknown' if unknown_name is None else unknown_name}"
    if detector == PING_PONG:
        return ping_pong_key(args_hash, paired_args_hash)
    if detector == GENERIC_REPEAT and level == "warning":
        return f"generic:{tool}:{args_hash}"
    latest = result_hashes[latest_code - 1] if latest_code else "none"
    return f"{_STREAK_KEY_PREFIX[detector]}:{tool}:{args_hash}:{latest}"
