"""gglib engine configuration: defaults, keys and user-facing clamps."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopscope.engines.base import ConfigError, ConfigResolution
from loopscope.engines.contract import SettingSpec

__all__ = [
    "CLAMP_MAX",
    "CLAMP_MIN",
    "DEFAULT_OBSERVATION_TOOLS",
    "KEYS",
    "SETTINGS",
    "GglibConfig",
    "parse_observation_tools",
    "pattern_notes",
    "resolve_config",
]

DEFAULT_OBSERVATION_TOOLS: tuple[str, ...] = (
    "snapshot",
    "screenshot",
    "read_page",
    "navigate",
    "click",
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "list_dir",
    "list_files",
    "list_allowed_directories",
    "directory_tree",
    "file_search",
    "grep_search",
    "search_files",
    "semantic_search",
    "codebase_search",
    "test_search",
    "get_file_info",
    "get_errors",
    "get_changed_files",
    "get_terminal_output",
    "list_code_usages",
    "list_code_definition_names",
    "fetch_webpage",
)

KEYS: tuple[str, ...] = (
    "max_repeated_batch_steps",
    "max_observation_steps",
    "observation_tools",
    "max_stagnation_steps",
)
CLAMP_MIN = 1
CLAMP_MAX = 100
_DEFAULT_STAGNATION = 5


@dataclass(frozen=True, slots=True)
class GglibConfig:
    """The four values the gglib engine runs with.

    The engine core accepts any non-negative integers (0 included, for the upstream vectors);
    :func:`resolve_config` applies loopscope's user-facing clamps.
    """

    max_repeated_batch_steps: int = 2
    max_observation_steps: int | None = 15
    """None switches the observation tier off: read-only batches get the mutating threshold and
    the ceiling, so every third occurrence is refused whatever the answers."""
    observation_tools: tuple[str, ...] = DEFAULT_OBSERVATION_TOOLS
    max_stagnation_steps: int = _DEFAULT_STAGNATION

    def to_json(self) -> dict[str, Any]:
        return {
            "max_repeated_batch_steps": self.max_repeated_batch_steps,
            "max_observation_steps": self.max_observation_steps,
            "observation_tools": list(self.observation_tools),
            "max_stagnation_steps": self.max_stagnation_steps,
        }

    @property
    def uses_default_tools(self) -> bool:
        return self.observation_tools == DEFAULT_OBSERVATION_TOOLS


_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_NONE_WORDS = ("none", "null")


def _int_from_text(key: str, text: str) -> int:
    t = text.strip()
    if not _INT_TEXT.fullmatch(t):
        raise ConfigError(f"{key}: expected an integer, got {text!r}")
    return int(t)


def parse_observation_tools(text: str) -> tuple[str, ...]:
    """The comma form: entries trimmed, empty entries dropped (``""`` gives ``()``)."""
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _from_set(key: str, value: str, current: dict[str, Any]) -> None:
    if key == "observation_tools":
        current[key] = parse_observation_tools(value)
    elif key == "max_observation_steps":
        if value.strip().lower() in _NONE_WORDS:
            current[key] = None
        else:
            current[key] = _int_from_text(key, value)
    elif key in ("max_repeated_batch_steps", "max_stagnation_steps"):
        if value.strip().lower() in _NONE_WORDS:
            raise ConfigError(f"{key}: expected an integer, got {value!r} (none is not allowed)")
        current[key] = _int_from_text(key, value)
    else:
        raise ConfigError(
            f"unknown gglib key {key!r}; known keys: {', '.join(KEYS)}"
        )


def _from_file(key: str, value: Any, current: dict[str, Any]) -> None:
    if key == "observation_tools":
        if isinstance(value, str):
            current[key] = parse_observation_tools(value)
        elif isinstance(value, list | tuple):
            bad = [v for v in value if not isinstance(v, str)]
            if bad:
                raise ConfigError(
                    f"observation_tools: every entry must be a string, got {bad[0]!r}"
                )
            current[key] = tuple(value)
        else:
            raise ConfigError(
                "observation_tools: expected an array of strings or a comma-separated string, "
                f"got {value!r}"
            )
        return
    if value is None:
        if key == "max_observation_steps":
            current[key] = None
        elif key == "max_stagnation_steps":
            current[key] = _DEFAULT_STAGNATION
        else:
            raise ConfigError(f"{key}: null is not allowed (expected an integer)")
        return
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if isinstance(value, str):
        _from_set(key, value, current)
    else:
        current[key] = value


def resolve_config(
    file_settings: Mapping[str, Any] | None,
    overrides: Sequence[tuple[str, str]] | Sequence[str],
    agent: str | None = None,
) -> ConfigResolution[GglibConfig]:
    """Defaults, then the gglib settings object of ``--config``, then each ``--set`` in order.

    The three integers are clamped to 1..100 after merging, with one warning per clamped key.
    Keys of ``file_settings`` other than the four gglib keys are ignored (the file may hold an
    OpenClaw block too); an unknown ``--set`` key or an unusable value raises
    :class:`~loopscope.engines.base.ConfigError`. ``agent`` has no meaning for gglib.
    """
    del agent
    current: dict[str, Any] = GglibConfig().to_json()
    current["observation_tools"] = DEFAULT_OBSERVATION_TOOLS
    if file_settings is not None:
        if not isinstance(file_settings, Mapping):
            raise ConfigError("the gglib settings must be an object at the top level")
        for key in KEYS:
            if key in file_settings:
                _from_file(key, file_settings[key], current)
    for item in overrides:
        if isinstance(item, str):
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"{item!r}: expected KEY=VALUE")
        else:
            key, value = item
        _from_set(key.strip(), value, current)

    warnings: list[str] = []
    for key in ("max_repeated_batch_steps", "max_observation_steps", "max_stagnation_steps"):
        v = current[key]
        if v is None:
            continue
        clamped = min(max(v, CLAMP_MIN), CLAMP_MAX)
        if clamped != v:
            warnings.append(
                f"gglib: {key}={v} is outside {CLAMP_MIN}..{CLAMP_MAX}; "
                f"replaying with {key}={clamped} (gglib clamps user-supplied values)"
            )
            current[key] = clamped
    config = GglibConfig(
        max_repeated_batch_steps=current["max_repeated_batch_steps"],
        max_observation_steps=current["max_observation_steps"],
        observation_tools=tuple(current["observation_tools"]),
        max_stagnation_steps=current["max_stagnation_steps"],
    )
    return ConfigResolution(config, tuple(warnings))


# --------------------------------------------------------------------------- the schema

SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "max_repeated_batch_steps", "Repeats allowed for tools that change things", "int", 2,
        "How many times in a row the same set of tool calls may get the same answer before "
        "gglib refuses: with 2, the third identical repeat is refused. It is also the lowest "
        "the hard ceiling can be.",
        min=CLAMP_MIN, max=CLAMP_MAX, slider_min=1, slider_max=20, group="Repeats"),
    SettingSpec(
        "max_observation_steps", "Repeats allowed for read-only tools", "int_or_off", 15,
        "The allowance for calls that only read (every tool matches a read-only pattern), and "
        "the hard ceiling for everything else, whatever the answers. Off switches the "
        "read-only allowance off: every repeat is then refused at its third occurrence.",
        min=CLAMP_MIN, max=CLAMP_MAX, slider_min=1, slider_max=50, group="Repeats"),
    SettingSpec(
        "max_stagnation_steps", "Identical replies allowed", "int", _DEFAULT_STAGNATION,
        "How many times the assistant may write exactly the same reply (without tool calls) "
        "within its last 4 × this many replies.",
        min=CLAMP_MIN, max=CLAMP_MAX, slider_min=1, slider_max=30, group="Repeats"),
    SettingSpec(
        "observation_tools", "Read-only tool patterns", "str_list", DEFAULT_OBSERVATION_TOOLS,
        "A set of calls counts as read-only when every tool name contains one of these "
        "patterns (case-insensitive). The list replaces the defaults; the empty pattern \"\" "
        "matches every tool.",
        group="Read-only tools"),
)
"""gglib's settings schema: every setting is a real gglib setting (all deployable)."""


def pattern_notes(patterns: Sequence[str]) -> tuple[str, ...]:
    """What an unusual read-only pattern list does: the empty pattern matches every tool and
    short patterns catch more than expected (``read`` also matches ``thread_create``)."""
    notes = []
    if "" in patterns:
        notes.append('The empty pattern "" matches every tool: every set of tool calls counts as read-only.')
    short = [p for p in patterns if 0 < len(p) < 4]
    if short:
        notes.append("Short read-only patterns catch more than you may expect ("
                     + ", ".join(short) + "; read would also match thread_create).")
    if not patterns:
        notes.append("No read-only patterns: every set of tool calls is treated as changing things.")
    return tuple(notes)
