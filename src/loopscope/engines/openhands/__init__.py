"""The OpenHands engine: the V1 ``StuckDetector`` of ``openhands-sdk`` 1.58.2 in shadow mode.

Modules: :mod:`.config` (``OpenHandsConfig``, the settings schema), :mod:`.events` (the event
log a session becomes, OpenHands' argument parsing and event equality), :mod:`.python_equality` (equality
classes of arguments), :mod:`.reference` (the literal ``StuckDetector`` port and the plain
replay), :mod:`.fast` (prepare once, re-run cheaply), :mod:`.explain` and :mod:`.engine`
(``ENGINE``).
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
from loopscope.engines.openhands.upstream import StuckDetector, nudge_text, replay_session

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
