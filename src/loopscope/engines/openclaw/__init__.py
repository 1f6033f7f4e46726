"""The ``openclaw`` engine: OpenClaw's rolling-history tool-loop guard.

Faithful ports of ``tools.loopDetection`` and the post-compaction guard, replayed in shadow
mode (one step per tool call), one sibling package per line of releases whose loop code is the
same, so that a difference between releases is a difference between two packages:

* :mod:`.engine` — ``ENGINE``, the one contract object; it picks a release once per call;
* :mod:`.v2026_6` — 2026.6.11 and 2026.7.35: the configurable detector;
* :mod:`.v2026_9` — 2026.9.6: fixed thresholds, batch admission, one-shot recovery;
* :mod:`.shared` — what the releases really share (upstream code that did not change, session
  reading, the guard, hashing helpers, the release interface). A release package imports
  :mod:`.shared`, never its sibling.

Each release package has the same roles: ``config`` (settings and resolution), ``upstream``
(the literal port of upstream's detector), ``reference`` (the plain replay loop), ``fast``
(the prepared type and the fast path), ``columns`` (the corpus table, or why there is none),
``explain`` (plain-language explanations) and ``release`` (what the engine calls). JS semantics
come from the neutral :mod:`loopscope.jsonrules.javascript`. The names below are the
configurable release's, kept here for callers of the package.
"""

from __future__ import annotations

from typing import Final

from loopscope.engines.openclaw.engine import ENGINE, OpenClawEngine
from loopscope.engines.openclaw.shared.config import (
    JSON5_EXPORT_COMMENT,
    SET_KEYS,
    loop_detection_json5,
    normalize_agent_id,
)
from loopscope.engines.openclaw.shared.guard import PostCompactionGuard
from loopscope.engines.openclaw.shared.hashing import hash_tool_call
from loopscope.engines.openclaw.shared.upstream import HistoryRecord, LoopVerdict
from loopscope.engines.openclaw.v2026_6.config import (
    ENABLED_DEFAULT_NOTE,
    ENABLED_UNSET_BANNER,
    OpenClawConfig,
    ResolvedLoopDetection,
    build_config,
    merge_agent_overlay,
    resolve_loop_detection,
    validate_block,
)
from loopscope.engines.openclaw.v2026_6.fast import PreparedSession, prepare, run
from loopscope.engines.openclaw.v2026_6.hashing import hash_tool_outcome
from loopscope.engines.openclaw.v2026_6.reference import replay_session
from loopscope.engines.openclaw.v2026_6.upstream import (
    DETECTORS,
    LoopState,
    WarningDeduper,
    detect_tool_call_loop,
    record_tool_call,
    record_tool_call_outcome,
    tool_call_stats,
)
from loopscope.engines.openclaw.v2026_9.config import OpenClaw9Config
from loopscope.jsonrules.javascript import UNDEFINED, stable_stringify

STEP_FIELDS: Final = (
    "turn", "call", "tools", "signature", "verdict", "detector", "count", "after_divergence",
    "level", "message", "warning_key", "paired_tool", "args_hash", "result_hash", "run_id",
    "guard_abort",
)
"""The required step keys, in output order (``unknown_tool``, ``warning_emitted`` and
``recorded_block`` follow as optional extras)."""

STEP_FIELDS_2026_9: Final = (
    "turn", "call", "tools", "signature", "verdict", "detector", "count", "after_divergence",
    "level", "message", "warning_key", "paired_tool", "args_hash", "result_hash", "outcome_kind",
    "run_id", "guard_abort", "intervention", "loop_detector", "warning_emitted", "unknown_tool",
    "recorded_block",
)
"""The step keys at OpenClaw 2026.9.6, in output order."""




__all__ = [
    "DETECTORS",
    "ENABLED_DEFAULT_NOTE",
    "ENABLED_UNSET_BANNER",
    "ENGINE",
    "JSON5_EXPORT_COMMENT",
    "SET_KEYS",
    "STEP_FIELDS",
    "STEP_FIELDS_2026_9",
    "UNDEFINED",
    "HistoryRecord",
    "LoopState",
    "LoopVerdict",
    "OpenClaw9Config",
    "OpenClawConfig",
    "OpenClawEngine",
    "PostCompactionGuard",
    "PreparedSession",
    "ResolvedLoopDetection",
    "WarningDeduper",
    "build_config",
    "detect_tool_call_loop",
    "hash_tool_call",
    "hash_tool_outcome",
    "loop_detection_json5",
    "merge_agent_overlay",
    "normalize_agent_id",
    "prepare",
    "record_tool_call",
    "record_tool_call_outcome",
    "replay_session",
    "resolve_loop_detection",
    "run",
    "stable_stringify",
    "tool_call_stats",
    "validate_block",
]
