"""OpenHands' stuck-detection settings, and the one what-if loopscope adds.

OpenHands configures its stuck detector through the conversation: ``Conversation(...,
stuck_detection=True|False, stuck_detection_thresholds=StuckDetectionThresholds(...))``
(``openhands/sdk/conversation/impl/local_conversation.py``). The four thresholds are the
pydantic model ``StuckDetectionThresholds`` (``openhands/sdk/conversation/types.py``): integers,
``Field(ge=1)``, no upper bound. loopscope calls the switch ``enabled`` (on by default, as in
OpenHands).

The scan of the last 20 events (``MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION`` in
``openhands/sdk/conversation/stuck_detector.py``) is a module constant upstream. It can be
explored as a what-if named after the constant: it is never exported, and a configuration that
changes it carries a warning saying that it is hypothetical.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.contract import SettingSpec

__all__ = [
    "ACTION_ERROR",
    "ACTION_OBSERVATION",
    "ALTERNATING_PATTERN",
    "DEFAULT_SCAN",
    "ENABLED",
    "MAX_EVENTS",
    "MONOLOGUE",
    "SDK_VERSION",
    "SETTINGS",
    "THRESHOLDS",
    "OpenHandsConfig",
]

SDK_VERSION: Final = "1.58.2"
"""The ``openhands-sdk`` release the engine models."""

ENABLED: Final = "enabled"
ACTION_OBSERVATION: Final = "action_observation"
ACTION_ERROR: Final = "action_error"
MONOLOGUE: Final = "monologue"
ALTERNATING_PATTERN: Final = "alternating_pattern"
MAX_EVENTS: Final = "MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION"

THRESHOLDS: Final = (ACTION_OBSERVATION, ACTION_ERROR, MONOLOGUE, ALTERNATING_PATTERN)
"""The fields of ``StuckDetectionThresholds``, in its order."""

DEFAULT_SCAN: Final = 20
"""``MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION``: the detector reads only the newest 20 events."""

_THRESHOLDS_GROUP: Final = "Thresholds (StuckDetectionThresholds)"
_WHAT_IF_GROUP: Final = "What-ifs (not OpenHands settings)"

SETTINGS: Final[tuple[SettingSpec, ...]] = (
    SettingSpec(
        ENABLED, "Stuck detection on", "bool", True,
        "Conversation(stuck_detection=…). On by default in OpenHands. Off: OpenHands checks "
        "nothing, every step passes and the agent is never nudged.",
        group="Switches"),
    SettingSpec(
        ACTION_OBSERVATION, "Stop after this many identical call + result pairs", "int", 4,
        "StuckDetectionThresholds.action_observation: the same call (same tool, arguments and "
        "reasoning text) getting the same result this many times in a row stops the run. "
        "It needs that many calls and that many results inside the 20 events OpenHands reads, "
        "so a value above 10 can never fire.",
        min=1, slider_min=1, slider_max=12, group=_THRESHOLDS_GROUP),
    SettingSpec(
        ACTION_ERROR, "Nudge after this many identical failing calls (stop one later)", "int", 3,
        "StuckDetectionThresholds.action_error: when the same call has failed exactly this "
        "many times in a row, OpenHands tells the agent once to change approach; one more "
        "failure stops the run. Each failure takes a call and an error inside the 20 events "
        "OpenHands reads, so 10 can only nudge and a value above 10 can never fire.",
        min=1, slider_min=1, slider_max=12, group=_THRESHOLDS_GROUP),
    SettingSpec(
        MONOLOGUE, "Stop after this many replies without a tool call in a row", "int", 3,
        "StuckDetectionThresholds.monologue: this many agent messages in a row (no tool call, "
        "no user message in between) stops the run; the messages need not be the same. "
        "Only the 20 events OpenHands reads count, so a value above 20 can never fire.",
        min=1, slider_min=1, slider_max=22, group=_THRESHOLDS_GROUP),
    SettingSpec(
        ALTERNATING_PATTERN, "Stop after this many calls alternating between two", "int", 6,
        "StuckDetectionThresholds.alternating_pattern: the last N calls and the last N results "
        "repeating with period 2 (A, B, A, B …) stops the run. It needs N calls and N results "
        "inside the 20 events OpenHands reads, so a value above 10 can never fire; 1 and 2 "
        "compare nothing and fire as soon as that many calls and results exist.",
        min=1, slider_min=1, slider_max=12, group=_THRESHOLDS_GROUP),
    SettingSpec(
        MAX_EVENTS, "Events the detector reads (what-if: not an OpenHands setting)", "int",
        DEFAULT_SCAN,
        "Hypothetical: not an OpenHands setting. OpenHands always reads the newest 20 events "
        "(MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION), cut at the latest user message. Change it "
        "to see what a modified OpenHands would do with a longer or shorter memory.",
        min=1, slider_min=6, slider_max=60, deployable=False, group=_WHAT_IF_GROUP),
)

_SPECS: Final = {s.name: s for s in SETTINGS}


@dataclass(frozen=True, slots=True)
class OpenHandsConfig:
    """One configuration: the switch, ``StuckDetectionThresholds`` and the scan what-if."""

    enabled: bool = True
    action_observation: int = 4
    action_error: int = 3
    monologue: int = 3
    alternating_pattern: int = 6
    max_events: int = DEFAULT_SCAN
    """``MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION`` (20 in OpenHands; other values are
    hypothetical)."""

    def __post_init__(self) -> None:
        _SPECS[ENABLED].check(self.enabled)
        for name, value in zip((*THRESHOLDS, MAX_EVENTS), (
                self.action_observation, self.action_error, self.monologue,
                self.alternating_pattern, self.max_events), strict=True):
            _SPECS[name].check(value)

    @property
    def version(self) -> str:
        return SDK_VERSION

    def values(self) -> dict[str, Any]:
        """Setting name → value, in schema order."""
        return {
            ENABLED: self.enabled,
            ACTION_OBSERVATION: self.action_observation,
            ACTION_ERROR: self.action_error,
            MONOLOGUE: self.monologue,
            ALTERNATING_PATTERN: self.alternating_pattern,
            MAX_EVENTS: self.max_events,
        }

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> OpenHandsConfig:
        merged = {s.name: s.default for s in SETTINGS}
        merged.update(values)
        return cls(merged[ENABLED], merged[ACTION_OBSERVATION], merged[ACTION_ERROR],
                   merged[MONOLOGUE], merged[ALTERNATING_PATTERN], merged[MAX_EVENTS])

    def thresholds(self) -> dict[str, int]:
        """``StuckDetectionThresholds`` as a JSON object (deployable values only)."""
        return {
            ACTION_OBSERVATION: self.action_observation,
            ACTION_ERROR: self.action_error,
            MONOLOGUE: self.monologue,
            ALTERNATING_PATTERN: self.alternating_pattern,
        }

    @property
    def hypothetical(self) -> bool:
        """The what-if differs from OpenHands' constant."""
        return self.max_events != DEFAULT_SCAN

    @property
    def notes(self) -> tuple[str, ...]:
        if not self.hypothetical:
            return ()
        return (f"{MAX_EVENTS}={self.max_events} is hypothetical: it is not an OpenHands "
                f"setting (openhands-sdk {SDK_VERSION} always reads the newest {DEFAULT_SCAN} "
                "events), so this run shows what a modified OpenHands would do.",)

    def effective(self) -> dict[str, Any]:
        """What the replay runs with, named as in the parity set's ``effective`` objects."""
        return {ENABLED: self.enabled, **self.thresholds(), "max_events_to_scan": self.max_events}
