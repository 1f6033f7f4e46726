"""The OpenHands engine: the V1 ``StuckDetector`` of ``openhands-sdk`` 1.58.2 in shadow mode.

The engine package shape (README, "An engine"): :mod:`.config` (``OpenHandsConfig``, the
settings schema), :mod:`.upstream` (the literal ``StuckDetector`` port), :mod:`.reference` (the
plain shadow replay), :mod:`.fast` (prepare once, re-run cheaply; owns ``PreparedSession``),
:mod:`.columns` (a corpus as columns, re-run in vectorised passes), :mod:`.explain` and
:mod:`.engine` (``ENGINE``). Helpers: :mod:`.events` (OpenHands' event model and argument
parsing, and the log a session becomes) and :mod:`.python_equality` (a text per equality class
of parsed arguments under Python ``==``).
"""

from __future__ import annotations

from loopscope.engines.openhands.config import SDK_VERSION, SETTINGS, OpenHandsConfig
from loopscope.engines.openhands.engine import ENGINE, OpenHandsEngine, python_snippet
from loopscope.engines.openhands.events import (
    build_items,
    event_eq,
    parse_tool_call_arguments,
    sanitize_json_control_chars,
)
from loopscope.engines.openhands.fast import PreparedSession, prepare, run
from loopscope.engines.openhands.python_equality import canonical
from loopscope.engines.openhands.reference import replay_session
from loopscope.engines.openhands.upstream import StuckDetector, nudge_text

__all__ = [
    "ENGINE",
    "SDK_VERSION",
    "SETTINGS",
    "OpenHandsConfig",
    "OpenHandsEngine",
    "PreparedSession",
    "StuckDetector",
    "build_items",
    "canonical",
    "event_eq",
    "nudge_text",
    "parse_tool_call_arguments",
    "prepare",
    "python_snippet",
    "replay_session",
    "run",
    "sanitize_json_control_chars",
]
