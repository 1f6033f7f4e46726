"""Gemini CLI's loop-detection configuration, and the what-if constants loopscope adds.

Gemini CLI has one loop-detection setting: ``model.disableLoopDetection`` in ``settings.json``
(default ``false``). loopscope calls it ``enabled`` (``enabled = not disableLoopDetection``) and
accepts the upstream spelling as an alias, in ``--set`` and in config files
(``{"model": {"disableLoopDetection": true}}``).

Everything else is a module-level constant of ``dist/src/services/loopDetectionService.js``.
Four of them can be explored as what-ifs, named after the constant; they are not Gemini CLI
settings, are never exported, and any configuration that changes one carries a warning saying
that it is hypothetical. The derived values follow their base constant exactly as the code
derives them: the tool-call history keeps ``5 × TOOL_CALL_LOOP_THRESHOLD`` keys (cycle lengths
are always 1–5), the content check allows an average distance of ``5 × CONTENT_CHUNK_SIZE``
and at most ``⌊CONTENT_LOOP_THRESHOLD / 2⌋`` distinct periods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from loopscope.engines.base import ConfigError
from loopscope.engines.contract import SettingSpec, parse_bool

__all__ = [
    "ALIAS",
    "CONTENT_CHUNK_SIZE",
    "CONTENT_LOOP_THRESHOLD",
    "DEFAULTS",
    "ENABLED",
    "LLM_CHECK_AFTER_TURNS",
    "LLM_NOTE",
    "MAX_HISTORY_LENGTH",
    "SETTINGS",
    "TOOL_CALL_LOOP_THRESHOLD",
    "VERSION",
    "WHAT_IFS",
    "GeminiConfig",
    "resolve",
]

VERSION: Final = "0.61.0"
"""The ``@google/gemini-cli-core`` release the engine models."""

ENABLED: Final = "enabled"
ALIAS: Final = "model.disableLoopDetection"
"""Gemini CLI's own key: ``true`` turns loop detection off."""

TOOL_CALL_LOOP_THRESHOLD: Final = "TOOL_CALL_LOOP_THRESHOLD"
CONTENT_LOOP_THRESHOLD: Final = "CONTENT_LOOP_THRESHOLD"
CONTENT_CHUNK_SIZE: Final = "CONTENT_CHUNK_SIZE"
MAX_HISTORY_LENGTH: Final = "MAX_HISTORY_LENGTH"

DEFAULTS: Final[Mapping[str, int]] = {
    TOOL_CALL_LOOP_THRESHOLD: 5,
    CONTENT_LOOP_THRESHOLD: 10,
    CONTENT_CHUNK_SIZE: 50,
    MAX_HISTORY_LENGTH: 5000,
}

LLM_CHECK_AFTER_TURNS: Final = 30
"""The LLM check starts at the 30th model turn of one prompt (never replayed)."""

LLM_NOTE: Final = ("Gemini CLI's LLM loop check is not replayed (it needs a live model); a real "
                   "Gemini CLI run could also stop on it after 30 turns in one prompt.")

_WHAT_IF_GROUP: Final = "What-ifs (not Gemini CLI settings)"
_NOT_A_SETTING: Final = "Hypothetical: not a Gemini CLI setting."

SETTINGS: Final[tuple[SettingSpec, ...]] = (
    SettingSpec(
        ENABLED, "Loop detection on", "bool", True,
        "Gemini CLI's model.disableLoopDetection, inverted (enabled = not disableLoopDetection). "
        "Off: Gemini CLI checks nothing and every step passes.",
        group="Switches"),
    SettingSpec(
        TOOL_CALL_LOOP_THRESHOLD,
        "Repeats of a tool-call cycle that count as a loop (what-if: not a Gemini CLI setting)",
        "int", DEFAULTS[TOOL_CALL_LOOP_THRESHOLD],
        f"{_NOT_A_SETTING} Gemini CLI always uses 5: a cycle of 1 to 5 identical calls repeated "
        "5 times in a row within one prompt is a loop. Lower it to see what a stricter tool-call "
        "check would have caught.",
        min=1, max=100, slider_min=2, slider_max=15, deployable=False, group=_WHAT_IF_GROUP),
    SettingSpec(
        CONTENT_LOOP_THRESHOLD,
        "Repeats of a text window that count as a loop (what-if: not a Gemini CLI setting)",
        "int", DEFAULTS[CONTENT_LOOP_THRESHOLD],
        f"{_NOT_A_SETTING} Gemini CLI always uses 10: the same stretch of text seen 10 times, "
        "close together, is a content loop. It also sets how many different repeat periods "
        "are tolerated (half of it).",
        min=2, max=100, slider_min=3, slider_max=30, deployable=False, group=_WHAT_IF_GROUP),
    SettingSpec(
        CONTENT_CHUNK_SIZE,
        "Length of the compared text window (what-if: not a Gemini CLI setting)",
        "int", DEFAULTS[CONTENT_CHUNK_SIZE],
        f"{_NOT_A_SETTING} Gemini CLI always compares windows of 50 characters (UTF-16 code "
        "units); repeats must lie on average within 5 windows of each other.",
        min=1, max=1000, slider_min=10, slider_max=200, deployable=False, group=_WHAT_IF_GROUP),
    SettingSpec(
        MAX_HISTORY_LENGTH,
        "Text remembered by the content check (what-if: not a Gemini CLI setting)",
        "int", DEFAULTS[MAX_HISTORY_LENGTH],
        f"{_NOT_A_SETTING} Gemini CLI keeps the last 5,000 characters (UTF-16 code units) of "
        "text since the last reset; older text and its statistics are dropped.",
        min=1, max=1_000_000, slider_min=500, slider_max=20_000, deployable=False,
        group=_WHAT_IF_GROUP),
)

WHAT_IFS: Final = tuple(s.name for s in SETTINGS if not s.deployable)
_SPECS: Final = {s.name: s for s in SETTINGS}
ACCEPTED: Final = (ENABLED, ALIAS, *WHAT_IFS)


@dataclass(frozen=True, slots=True)
class GeminiConfig:
    """One configuration: Gemini CLI's switch plus the (normally fixed) constants."""

    enabled: bool = True
    tool_call_loop_threshold: int = DEFAULTS[TOOL_CALL_LOOP_THRESHOLD]
    content_loop_threshold: int = DEFAULTS[CONTENT_LOOP_THRESHOLD]
    content_chunk_size: int = DEFAULTS[CONTENT_CHUNK_SIZE]
    max_history_length: int = DEFAULTS[MAX_HISTORY_LENGTH]

    @property
    def version(self) -> str:
        return VERSION

    def values(self) -> dict[str, Any]:
        """Setting name → value."""
        return {
            ENABLED: self.enabled,
            TOOL_CALL_LOOP_THRESHOLD: self.tool_call_loop_threshold,
            CONTENT_LOOP_THRESHOLD: self.content_loop_threshold,
            CONTENT_CHUNK_SIZE: self.content_chunk_size,
            MAX_HISTORY_LENGTH: self.max_history_length,
        }

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> GeminiConfig:
        merged = {ENABLED: True, **DEFAULTS, **values}
        return cls(
            enabled=bool(merged[ENABLED]),
            tool_call_loop_threshold=int(merged[TOOL_CALL_LOOP_THRESHOLD]),
            content_loop_threshold=int(merged[CONTENT_LOOP_THRESHOLD]),
            content_chunk_size=int(merged[CONTENT_CHUNK_SIZE]),
            max_history_length=int(merged[MAX_HISTORY_LENGTH]),
        )

    @property
    def content_constants(self) -> tuple[int, int, int]:
        """``(CONTENT_CHUNK_SIZE, CONTENT_LOOP_THRESHOLD, MAX_HISTORY_LENGTH)``."""
        return self.content_chunk_size, self.content_loop_threshold, self.max_history_length

    def hypothetical(self) -> dict[str, int]:
        """The what-if constants that differ from Gemini CLI's."""
        values = self.values()
        return {name: values[name] for name in WHAT_IFS if values[name] != DEFAULTS[name]}

    @property
    def notes(self) -> tuple[str, ...]:
        """One warning per changed what-if: such a run is not a Gemini CLI configuration."""
        return tuple(
            f"{name}={value} is hypothetical: it is not a Gemini CLI setting (Gemini CLI "
            f"{VERSION} always uses {DEFAULTS[name]}), so this run shows what a modified "
            "Gemini CLI would do."
            for name, value in self.hypothetical().items())

    def settings_json(self) -> dict[str, Any]:
        """The Gemini CLI ``settings.json`` fragment for this configuration (what-ifs are not
        Gemini CLI settings and are never part of it)."""
        return {"model": {"disableLoopDetection": not self.enabled}}


# --------------------------------------------------------------------------- resolution


def _unknown(key: str) -> ConfigError:
    return ConfigError(f"unknown setting {key!r} for the gemini-cli engine; accepted: "
                       f"{', '.join(ACCEPTED)}")


def _file_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value


def _file_value(key: str, value: Any) -> Any:
    spec = _SPECS[key]
    if spec.kind == "bool":
        return _file_bool(key, value)
    return spec.check(value)


def file_values(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Typed values from a config file's part for this engine: flat setting names, the
    upstream ``{"model": {"disableLoopDetection": …}}`` object, or the dotted alias.

    A Gemini CLI ``settings.json`` as users have it (it has a ``model`` object) holds many other
    settings (``ui``, ``tools``, ``model.name`` …): they are not about loop detection and are
    ignored. In any other object (a loopscope config's ``gemini-cli`` part) an unknown key is a
    typo and is refused, naming the accepted ones."""
    if not isinstance(settings, Mapping):
        raise ConfigError("the gemini-cli settings must be an object")
    values: dict[str, Any] = {}
    alias: bool | None = None
    users_settings_file = isinstance(settings.get("model"), Mapping)
    for key, value in settings.items():
        if key == "model":
            if not isinstance(value, Mapping):
                raise ConfigError("model: expected an object with disableLoopDetection")
            if "disableLoopDetection" in value:
                alias = _file_bool(ALIAS, value["disableLoopDetection"])
        elif key == ALIAS:
            alias = _file_bool(ALIAS, value)
        elif key in _SPECS:
            values[key] = _file_value(key, value)
        elif not users_settings_file:
            raise _unknown(key)
    if alias is not None:
        if ENABLED in values and values[ENABLED] == alias:
            raise ConfigError(f"{ENABLED}={str(values[ENABLED]).lower()} contradicts "
                              f"{ALIAS}={str(alias).lower()} (enabled = not disableLoopDetection)")
        values[ENABLED] = not alias
    return values


def override_value(key: str, text: str) -> tuple[str, Any]:
    """``(setting name, typed value)`` of one ``--set KEY=VALUE``."""
    key = key.strip()
    if key == ALIAS:
        return ENABLED, not parse_bool(ALIAS, text, strict=True)
    spec = _SPECS.get(key)
    if spec is None:
        raise _unknown(key)
    return key, spec.check(spec.parse(text, strict_bool=True))


def check_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Type- and range-checked setting values (unknown names refused)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key == ALIAS:
            out[ENABLED] = not _file_bool(ALIAS, value)
            continue
        spec = _SPECS.get(key)
        if spec is None:
            raise _unknown(key)
        out[key] = spec.check(value)
    return out


def resolve(file_settings: Mapping[str, Any] | None,
            overrides: Sequence[tuple[str, str]]) -> tuple[GeminiConfig, tuple[str, ...]]:
    """A configuration from a config file's part and ``--set`` pairs (later ones win), with
    its notes."""
    values: dict[str, Any] = {}
    if file_settings is not None:
        values.update(file_values(file_settings))
    for key, text in overrides:
        name, value = override_value(key, text)
        values[name] = value
    config = GeminiConfig.from_values(values)
    return config, config.notes
