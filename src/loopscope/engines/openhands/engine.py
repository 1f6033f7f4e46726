"""The OpenHands engine object: the V1 ``StuckDetector`` of ``openhands-sdk`` in shadow mode,
behind :class:`loopscope.engines.contract.Engine`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from loopscope.bulk import CollectorPaused
from loopscope.engines.base import ConfigError, SessionReplay
from loopscope.engines.contract import BaseEngine, DetectorInfo, ExportFile
from loopscope.engines.openhands import fast
from loopscope.engines.openhands.config import (
    ACTION_ERROR,
    ACTION_OBSERVATION,
    ALTERNATING_PATTERN,
    ENABLED,
    MONOLOGUE,
    SDK_VERSION,
    SETTINGS,
    THRESHOLDS,
    OpenHandsConfig,
)
from loopscope.engines.openhands.explain import EXPLAINER
from loopscope.engines.openhands.fast import PreparedSession, counters, prepare, run
from loopscope.engines.openhands.reference import replay_session
from loopscope.model import Session

if TYPE_CHECKING:
    from loopscope.engines.contract import CounterSeries, GuideExample, SettingSpec

__all__ = ["ENGINE", "OpenHandsEngine", "python_snippet"]

STUCK_DETECTION: Final = "stuck_detection"
"""``Conversation(stuck_detection=…)``: accepted in config files as another name of
``enabled``."""
STUCK_DETECTION_THRESHOLDS: Final = "stuck_detection_thresholds"
"""``Conversation(stuck_detection_thresholds=…)``: accepted in config files as an object of the
four thresholds."""


class OpenHandsEngine(BaseEngine[OpenHandsConfig, PreparedSession]):
    """OpenHands' stuck detector in shadow mode: one step per assistant turn."""

    name = "openhands"
    title = "OpenHands"
    summary = ("OpenHands checks the newest 20 events of a conversation (since the latest user "
               "message) before every agent step and stops the run when the agent repeats the "
               "same call with the same result, keeps failing the same way (after one nudge), "
               "talks without acting, or goes back and forth between two calls.")
    versions = (SDK_VERSION,)
    default_version = SDK_VERSION
    notes = (
        "Modelled on openhands-sdk 1.58.2 (StuckDetector); stuck detection is on by default, "
        "as in OpenHands.",
        "loopscope checks after every assistant turn, including replies without tool calls "
        "(OpenHands finishes the run on those), and replays every call as an MCP tool whose "
        "arguments are taken as parsed.",
    )
    step_unit: Literal["call", "turn"] = "turn"
    schema: tuple[SettingSpec, ...] = SETTINGS
    explainer = EXPLAINER
    config_type = OpenHandsConfig
    columns_module = "loopscope.engines.openhands.columns"
    detectors = (
        DetectorInfo(
            ACTION_OBSERVATION, "the same call with the same result",
            "OpenHands compares the newest calls (tool, arguments and the agent's reasoning "
            "text) and the newest results. When the last 4 calls are identical and so are the "
            "last 4 results, the run stops.",
            ("refuse",)),
        DetectorInfo(
            ACTION_ERROR, "the same call failing again and again",
            "When the same call has failed 3 times in a row, OpenHands tells the agent once "
            "that repeating it will not work (a warning); if it fails once more, the run stops.",
            ("warn", "refuse")),
        DetectorInfo(
            MONOLOGUE, "talking without acting",
            "Three agent replies in a row without a tool call or a user message stop the run. "
            "The replies need not be the same.",
            ("refuse",)),
        DetectorInfo(
            ALTERNATING_PATTERN, "back and forth between two calls",
            "When the last 6 calls and the last 6 results repeat every second step "
            "(A, B, A, B, …), the run stops.",
            ("refuse",)),
    )

    # ------------------------------------------------------------------ configs

    def file_values(self, file_settings: Mapping[str, Any], version: str) -> dict[str, Any]:
        """Flat setting names, or OpenHands' own ``Conversation`` keywords
        (``stuck_detection``, ``stuck_detection_thresholds``). Any other key is refused."""
        flat: dict[str, Any] = {}
        for key, value in file_settings.items():
            if key == STUCK_DETECTION:
                flat[ENABLED] = value
            elif key == STUCK_DETECTION_THRESHOLDS:
                if not isinstance(value, Mapping):
                    raise ConfigError(f"{STUCK_DETECTION_THRESHOLDS}: expected an object of "
                                      f"{', '.join(THRESHOLDS)}, got {value!r}")
                for inner, inner_value in value.items():
                    if inner not in THRESHOLDS:
                        raise ConfigError(f"unknown setting {STUCK_DETECTION_THRESHOLDS}."
                                          f"{inner} for the openhands engine (known: "
                                          f"{', '.join(THRESHOLDS)})")
                    flat[inner] = inner_value
            else:
                self.spec(key, version)  # raises, naming the key, for an unknown one
                flat[key] = value
        return super().file_values(flat, version)

    def settings_from_document(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        part = document.get(self.name)
        if isinstance(part, Mapping):
            return part
        names = {s.name for s in SETTINGS} | {STUCK_DETECTION, STUCK_DETECTION_THRESHOLDS}
        if any(key in names for key in document):
            return document
        return None

    def exports(self, config: OpenHandsConfig) -> tuple[ExportFile, ...]:
        """``StuckDetectionThresholds`` as Python (with the ``Conversation`` keywords) and as a
        JSON object of the four thresholds. The what-if is never part of them."""
        return (
            ExportFile(
                "OpenHands (Python)", "openhands_stuck_detection.py", "text/x-python",
                python_snippet(config),
                "StuckDetectionThresholds and the Conversation keywords, for openhands-sdk "
                f"{SDK_VERSION}."),
            ExportFile(
                "OpenHands thresholds (JSON)", "openhands-stuck-detection-thresholds.json",
                "application/json", json.dumps(config.thresholds(), indent=2) + "\n",
                "The four StuckDetectionThresholds fields; Conversation(stuck_detection_"
                "thresholds=…) also accepts this object as a dict."),
        )

    # ------------------------------------------------------------------ replay

    def prepare(self, session: Session, version: str | None = None) -> PreparedSession:
        self.check_version(version)
        with CollectorPaused():  # (the prepared data holds no reference cycles)
            return prepare(session)

    def run(self, prepared: PreparedSession, config: OpenHandsConfig) -> SessionReplay:
        return run(prepared, config)

    def encode_prepared(self, prepared: Any) -> dict[str, Any] | None:
        return fast.encode(prepared) if type(prepared) is PreparedSession else None

    def decode_prepared(self, data: Any) -> PreparedSession:
        return fast.decode(data)

    def replay(self, session: Session, config: OpenHandsConfig) -> SessionReplay:
        return replay_session(session, config)

    def counters(self, prepared: PreparedSession, replay: SessionReplay,
                 config: OpenHandsConfig) -> tuple[CounterSeries, ...]:
        """What each pattern reads after every turn, against its threshold."""
        del replay
        return counters(prepared, config)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        from loopscope.engines.openhands.explain import guide_examples

        return guide_examples()


def python_snippet(config: OpenHandsConfig) -> str:
    """The configuration as Python for ``openhands-sdk``: ``StuckDetectionThresholds(...)``
    passed to ``Conversation(..., stuck_detection=..., stuck_detection_thresholds=...)``."""
    lines = [
        f"# OpenHands stuck detection (openhands-sdk {SDK_VERSION}), exported by loopscope.",
        "from openhands.sdk import Conversation",
        "from openhands.sdk.conversation.types import StuckDetectionThresholds",
        "",
        "stuck_detection_thresholds = StuckDetectionThresholds(",
        *(f"    {name}={value}," for name, value in config.thresholds().items()),
        ")",
        "",
        "conversation = Conversation(",
        "    agent=agent,  # your Agent",
        "    workspace=workspace,  # your workspace folder",
        f"    stuck_detection={config.enabled!r},",
        "    stuck_detection_thresholds=stuck_detection_thresholds,",
        ")",
    ]
    return "\n".join(lines) + "\n"


ENGINE: Final = OpenHandsEngine()

