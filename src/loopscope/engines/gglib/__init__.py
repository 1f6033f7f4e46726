"""The gglib engine: a port of gglib's tool-call loop guard as its proxy walks a transcript.

The engine package shape (README, "An engine"): :mod:`.config` (``GglibConfig``, the settings
and their parsing), :mod:`.upstream` (the literal port: ``stable_repr``, signatures, results
hashes, classifiers, ``LoopDetector``, ``StagnationDetector``, ``scan_history``),
:mod:`.reference` (the plain replay), :mod:`.fast` (prepare once, re-run cheaply; owns
``PreparedSession``), :mod:`.columns` (a corpus as one table, re-run in vectorised passes),
:mod:`.explain` and :mod:`.engine` (``ENGINE``); :mod:`.fnv` is gglib's FNV-1a 64 hash.
serde_json's parsing and writing rules are the neutral :mod:`loopscope.jsonrules.serde_json`.
"""

from __future__ import annotations

from loopscope.engines.gglib.config import DEFAULT_OBSERVATION_TOOLS, GglibConfig, resolve_config
from loopscope.engines.gglib.engine import ENGINE, GglibEngine
from loopscope.engines.gglib.fast import (
    PreparedMessages,
    PreparedSession,
    prepare_events,
    prepare_messages,
    run_lazy,
    run_prepared,
)
from loopscope.engines.gglib.fnv import fnv1a_64, hex16
from loopscope.engines.gglib.reference import STEP_FIELDS, replay_messages
from loopscope.engines.gglib.upstream import (
    COSTLY_OBSERVATION_TOOLS,
    MAX_REPR_DEPTH,
    WINDOW_FACTOR,
    BatchRecord,
    LoopDetected,
    LoopDetector,
    RepeatOutcome,
    Run,
    ScanOutcome,
    StagnationDetected,
    StagnationDetector,
    ToolCall,
    batch_results_hash,
    batch_signature,
    domain_calls,
    extract_text,
    hash_result_content,
    hash_result_text,
    is_costly_batch,
    is_observation_batch,
    scan_history,
    stable_repr,
    tool_signature,
    turn_results_hash,
)
from loopscope.jsonrules.serde_json import (
    SerdeJsonError,
    compact_json,
    loads_file_level,
    parse_json_serde,
    parse_serde_json,
    render_float,
)

__all__ = [
    "COSTLY_OBSERVATION_TOOLS",
    "DEFAULT_OBSERVATION_TOOLS",
    "ENGINE",
    "MAX_REPR_DEPTH",
    "STEP_FIELDS",
    "WINDOW_FACTOR",
    "BatchRecord",
    "GglibConfig",
    "GglibEngine",
    "LoopDetected",
    "LoopDetector",
    "PreparedMessages",
    "PreparedSession",
    "RepeatOutcome",
    "Run",
    "ScanOutcome",
    "SerdeJsonError",
    "StagnationDetected",
    "StagnationDetector",
    "ToolCall",
    "batch_results_hash",
    "batch_signature",
    "compact_json",
    "domain_calls",
    "extract_text",
    "fnv1a_64",
    "hash_result_content",
    "hash_result_text",
    "hex16",
    "is_costly_batch",
    "is_observation_batch",
    "loads_file_level",
    "parse_json_serde",
    "parse_serde_json",
    "prepare_events",
    "prepare_messages",
    "render_float",
    "replay_messages",
    "resolve_config",
    "run_lazy",
    "run_prepared",
    "scan_history",
    "stable_repr",
    "tool_signature",
    "turn_results_hash",
]
