"""The gglib engine: a port of gglib's tool-call loop guard as its proxy walks a transcript.

Modules (serde_json-compatible parsing is the neutral :mod:`loopscope.jsonrules.serde_json`): :mod:`.fnv` (FNV-1a 64),
:mod:`.canon` (``stable_repr``), :mod:`.core` (signatures, results hashes, classifiers,
``LoopDetector``, ``StagnationDetector``, ``scan_history``), :mod:`.config`
(``GglibConfig``, ``resolve_config``), :mod:`.reference` (the plain replay), :mod:`.fast` (prepare once, re-run cheaply), :mod:`.explain` and
:mod:`.engine` (``ENGINE``).
"""

from __future__ import annotations

from loopscope.engines.gglib.canon import MAX_REPR_DEPTH, compact_json, render_float, stable_repr
from loopscope.engines.gglib.config import (
    DEFAULT_OBSERVATION_TOOLS,
    GglibConfig,
    resolve_config,
)
from loopscope.engines.gglib.core import (
    COSTLY_OBSERVATION_TOOLS,
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
    tool_signature,
    turn_results_hash,
)
from loopscope.engines.gglib.engine import ENGINE, GglibEngine, PreparedSession
from loopscope.engines.gglib.fast import (
    PreparedMessages,
    prepare_events,
    prepare_messages,
    run_lazy,
    run_prepared,
)
from loopscope.engines.gglib.fnv import fnv1a_64, hex16
from loopscope.engines.gglib.reference import STEP_FIELDS, replay_messages
from loopscope.jsonrules.serde_json import (
    SerdeJsonError,
    loads_file_level,
    parse_json_serde,
    parse_serde_json,
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
