"""Qwen Code's loop-guard settings, and the what-if constants loopscope adds.

Qwen Code's settings schema has two loop-related keys, both under ``model`` in
``settings.json``: ``skipLoopDetection`` (default ``true``: the opt-in heuristics are skipped)
and ``maxToolCallsPerTurn`` (default 100). The second behaves differently when it is present
(a hard cap) and when it is left unset (an adaptive cap with a hard backstop of 10 × 100), so
loopscope adds ``capMode`` (``adaptive`` = the key is left unset, ``explicit`` = it is
written). An adaptive cap other than 100 cannot be configured in Qwen Code: such a run carries
a note and its export leaves the key out.

The what-ifs are module-level constants of the service, named after the constant; they are
never exported and any change carries a note saying it is hypothetical.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from loopscope.engines.contract import SettingSpec
from loopscope.engines.qwen_code.upstream import Constants

__all__ = [
    "ADAPTIVE",
    "CAP",
    "CAP_MODE",
    "DEFAULT_CAP",
    "EXPLICIT",
    "NOT_REPLAYED_NOTE",
    "SETTINGS",
    "SKIP",
    "VERSION",
    "WHAT_IFS",
    "QwenConfig",
]

VERSION: Final = "0.24.4"
"""The ``@qwen-code/qwen-code`` release the engine models."""

SKIP: Final = "model.skipLoopDetection"
CAP: Final = "model.maxToolCallsPerTurn"
CAP_MODE: Final = "capMode"
ADAPTIVE: Final = "adaptive"
EXPLICIT: Final = "explicit"
DEFAULT_CAP: Final = 100

_CONSTANT_FIELDS: Final = {
    "TOOL_CALL_LOOP_THRESHOLD": "tool_call_loop_threshold",
    "GLOBAL_DUPLICATE_THRESHOLD": "global_duplicate_threshold",
    "ALTERNATING_PATTERN_CYCLES": "alternating_pattern_cycles",
    "FILE_READ_THRESHOLD": "file_read_threshold",
    "STAGNATION_THRESHOLD": "stagnation_threshold",
    "ADAPTIVE_CAP_HARD_MULTIPLIER": "adaptive_cap_hard_multiplier",
    "CONTENT_LOOP_THRESHOLD": "content_loop_threshold",
    "THOUGHT_REPEAT_THRESHOLD": "thought_repeat_threshold",
}
DEFAULTS: Final[Mapping[str, int]] = {
    name: getattr(Constants(), attribute) for name, attribute in _CONSTANT_FIELDS.items()}

NOT_REPLAYED_NOTE: Final = (
    "Replays Qwen Code as its interactive and -p runs check loops. Not replayed: daemon/ACP "
    "sessions (they check the cap once per group of parallel calls, and also stop repeated "
    "invalid tool arguments), the retry warning Qwen Code adds after 3 identical invalid "
    "calls (it needs Qwen Code's tool definitions), and its allowance for a task-list check "
    "whose answer keeps changing.")

_WHAT_IF_GROUP: Final = "What-ifs (not Qwen Code settings)"
_NOT_A_SETTING: Final = "Hypothetical: not a Qwen Code setting."


def _what_if(name: str, label: str, help_text: str, lo: int, hi: int, slider: tuple[int, int]
             ) -> SettingSpec:
    return SettingSpec(name, f"{label} (what-if: not a Qwen Code setting)", "int",
                       DEFAULTS[name], f"{_NOT_A_SETTING} {help_text}", min=lo, max=hi,
                       slider_min=slider[0], slider_max=slider[1], deployable=False,
                       group=_WHAT_IF_GROUP)


SETTINGS: Final[tuple[SettingSpec, ...]] = (
    SettingSpec(
        SKIP, "Skip the extra loop checks", "bool", True,
        "Qwen Code's default (true) runs only the always-on guards: 5 identical calls in a "
        "row, 8 git status/diff checks in a row, and the per-turn cap. false adds the opt-in "
        "checks: the same call 6 times in a prompt, A-B-A-B-A-B, mostly file reads, the same "
        "tool 8 times in a row, repeated text and repeated thoughts.",
        group="Switches"),
    SettingSpec(
        CAP, "Tool calls allowed per prompt", "int", DEFAULT_CAP,
        "Every tool call answering one user message counts. Explicit: the call after this "
        "many is stopped. Adaptive (left unset, Qwen Code's default): past 100 the prompt is "
        "stopped only if one call has repeated 6 times, or past 1000 calls. 0 turns the cap "
        "off.",
        min=0, max=1_000_000, slider_min=0, slider_max=300, group="Per-prompt cap"),
    SettingSpec(
        CAP_MODE, "How the cap applies", "choice", ADAPTIVE,
        "adaptive: model.maxToolCallsPerTurn is left out of settings.json (Qwen Code's "
        "default). explicit: the value is written into settings.json and becomes a hard cap.",
        choices=(ADAPTIVE, EXPLICIT), group="Per-prompt cap"),
    _what_if("TOOL_CALL_LOOP_THRESHOLD", "Identical calls in a row that stop a prompt",
             "Qwen Code always uses 5, whatever skipLoopDetection says.", 1, 100, (2, 15)),
    _what_if("GLOBAL_DUPLICATE_THRESHOLD", "Times one call may come in a prompt",
             "Qwen Code always uses 6: the opt-in global-duplicate check, and the adaptive cap's "
             "'stuck' signal.", 1, 100, (2, 20)),
    _what_if("ALTERNATING_PATTERN_CYCLES", "A-B cycles that count as ping-pong",
             "Qwen Code always uses 3 (A B A B A B).", 1, 50, (2, 10)),
    _what_if("FILE_READ_THRESHOLD", "Reads among the last 15 calls that count as a read loop",
             "Qwen Code always uses 8.", 1, 15, (3, 15)),
    _what_if("STAGNATION_THRESHOLD", "Same tool (or git inspection) in a row",
             "Qwen Code always uses 8, for the opt-in same-tool check and the always-on git "
             "status/diff check.", 1, 100, (2, 20)),
    _what_if("ADAPTIVE_CAP_HARD_MULTIPLIER", "Hard backstop, in multiples of the cap",
             "Qwen Code always uses 10: an adaptive cap of 100 always stops at call 1001.",
             1, 1000, (1, 20)),
    _what_if("CONTENT_LOOP_THRESHOLD", "Repeats of a 50-character window that count as a loop",
             "Qwen Code always uses 10 (with skipLoopDetection false).", 2, 100, (3, 30)),
    _what_if("THOUGHT_REPEAT_THRESHOLD", "Identical thoughts in a row that count as a loop",
             "Qwen Code always uses 3 (with skipLoopDetection false).", 1, 50, (2, 10)),
)

WHAT_IFS: Final = tuple(_CONSTANT_FIELDS)


@dataclass(frozen=True, slots=True)
class QwenConfig:
    """One configuration: Qwen Code's two settings, the cap mode and the constants."""

    skip_loop_detection: bool = True
    max_tool_calls_per_turn: int = DEFAULT_CAP
    cap_mode: str = ADAPTIVE
    constants: Constants = field(default_factory=Constants)

    @property
    def version(self) -> str:
        return VERSION

    @property
    def explicit(self) -> bool:
        return self.cap_mode == EXPLICIT

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {SKIP: self.skip_loop_detection, CAP: self.max_tool_calls_per_turn,
                               CAP_MODE: self.cap_mode}
        for name, attribute in _CONSTANT_FIELDS.items():
            out[name] = getattr(self.constants, attribute)
        return out

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> QwenConfig:
        merged = {SKIP: True, CAP: DEFAULT_CAP, CAP_MODE: ADAPTIVE, **DEFAULTS, **values}
        return cls(bool(merged[SKIP]), int(merged[CAP]), str(merged[CAP_MODE]),
                   Constants(**{attribute: int(merged[name])
                                for name, attribute in _CONSTANT_FIELDS.items()}))

    def hypothetical(self) -> dict[str, int]:
        """The what-if constants that differ from Qwen Code's."""
        values = self.values()
        return {name: values[name] for name in WHAT_IFS if values[name] != DEFAULTS[name]}

    @property
    def adaptive_off_default(self) -> bool:
        """An adaptive cap other than 100: not configurable in Qwen Code."""
        return not self.explicit and self.max_tool_calls_per_turn != DEFAULT_CAP

    @property
    def notes(self) -> tuple[str, ...]:
        notes = [f"{name}={value} is hypothetical: it is not a Qwen Code setting (Qwen Code "
                 f"{VERSION} always uses {DEFAULTS[name]}), so this run shows what a modified "
                 "Qwen Code would do." for name, value in self.hypothetical().items()]
        if self.adaptive_off_default:
            notes.append(f"An adaptive cap of {self.max_tool_calls_per_turn} is hypothetical: "
                         f"Qwen Code's adaptive cap is always {DEFAULT_CAP} (any value written "
                         f"into settings.json is a hard cap: capMode=explicit).")
        return tuple(notes)

    def settings_json(self) -> dict[str, Any]:
        """The ``settings.json`` fragment: the cap only when explicit."""
        model: dict[str, Any] = {"skipLoopDetection": self.skip_loop_detection}
        if self.explicit:
            model["maxToolCallsPerTurn"] = self.max_tool_calls_per_turn
        return {"model": model}
