"""The ``openclaw`` engine: OpenClaw's rolling-history tool-loop guard.

A faithful port of ``tools.loopDetection`` from ``openclaw@2026.6.11`` (the configurable
detector) and its post-compaction guard, replayed in shadow mode: one step per tool call.

Modules:

* (JS semantics — ``stableStringify``, number formatting, trim, ``JSON.parse`` — come from the
  neutral :mod:`loopscope.jsonrules.javascript`);
* :mod:`.hashing` — argsHash, resultHash, unknown-tool names;
* :mod:`.config` — resolution, schema validation, agent overlays, loopscope's config layers;
* :mod:`.detection` — the literal detector (``detect``/``record``/``outcome``), messages, keys;
* :mod:`.guard` — the post-compaction guard;
* :mod:`.reference` — session reading and the plain reference replay;
* :mod:`.fast` — hash once, count once per window size, select per configuration;
* :mod:`.explain` — plain-language explanations, limitations, guide examples;
* :mod:`.engine` — ``ENGINE``, the contract object, for every version;
* :mod:`.v2026_9` — OpenClaw 2026.9.6 (fixed thresholds, batch admission, one-shot recovery),
  which reuses the modules above where the code did not change.
"""

from __future__ import annotations

from typing import Final

from loopscope.engines.openclaw.config import (
    ENABLED_DEFAULT_NOTE,
    ENABLED_UNSET_BANNER,
    JSON5_EXPORT_COMMENT,
    SET_KEYS,
    OpenClawConfig,
    ResolvedLoopDetection,
    build_config,
    merge_agent_overlay,
    normalize_agent_id,
    resolve_loop_detection,
    validate_block,
)
from loopscope.engines.openclaw.detection import (
    DETECTORS,
    HistoryRecord,
    LoopState,
    LoopVerdict,
    WarningDeduper,
    detect_tool_call_loop,
    record_tool_call,
    record_tool_call_outcome,
    tool_call_stats,
)
from loopscope.engines.openclaw.engine import ENGINE, OpenClawEngine, loop_detection_json5
from loopscope.engines.openclaw.fast import PreparedSession, prepare, run
from loopscope.engines.openclaw.guard import PostCompactionGuard
from loopscope.engines.openclaw.hashing import hash_tool_call, hash_tool_outcome
from loopscope.engines.openclaw.reference import replay_session
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
