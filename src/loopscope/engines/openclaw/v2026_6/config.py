"""``tools.loopDetection``: resolution, validation, agent overlays and loopscope's layers.

Three levels, from upstream's to loopscope's:

* :func:`resolve_loop_detection` is OpenClaw's run-time ``resolveLoopDetectionConfig``
  (openclaw@2026.6.11: ``dist/tool-loop-detection-config-*.js``), plus the post-compaction
  guard's ``enabled``/``windowSize``: tolerant of any value, with ``asPositiveInt`` fallbacks
  and the critical/breaker clamp;
* :func:`validate_block` is OpenClaw's schema check of one block (strict keys and types, and the
  two ordering messages);
* :func:`build_config` stacks loopscope's layers (config file with its agent overlay, ``--set``,
  ``enabled`` defaulted to ``true``) into an :class:`OpenClawConfig`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from loopscope.engines.base import ConfigError
from loopscope.engines.contract import SettingSpec
from loopscope.engines.openclaw.shared.config import (
    DEFAULT_GUARD_WINDOW_SIZE,
    as_positive_int,
    normalize_agent_id,
    parse_set_value,
    type_name,
)
from loopscope.jsonrules.javascript import UNDEFINED, js_truthy

CONFIGURABLE_VERSIONS: Final = ("2026.6.11", "2026.7.35")
"""The versions whose loop detector is the configurable one modelled here (2026.7.35 ships the
same loop code as 2026.6.11)."""
DEFAULT_VERSION: Final = "2026.6.11"

DEFAULT_HISTORY_SIZE: Final = 30
DEFAULT_WARNING_THRESHOLD: Final = 10
DEFAULT_CRITICAL_THRESHOLD: Final = 20
DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD: Final = 30
DEFAULT_UNKNOWN_TOOL_THRESHOLD: Final = 10

ENABLED_DEFAULT_NOTE: Final = (
    "OpenClaw's own default is off; loopscope turns it on so you can see what it would do."
)
"""Shown next to the ``enabled`` control and in help texts: OpenClaw's own default (off) would
show nothing, so loopscope replays with ``true`` and says so."""

ENABLED_UNSET_BANNER: Final = (
    "In OpenClaw this config leaves the rolling detectors off; only the post-compaction guard "
    "would act."
)
"""Shown when a loaded OpenClaw config leaves ``enabled`` unset (``OpenClawConfig.enabled_defaulted``)."""


ORDER_WARNING_CRITICAL: Final = "tools.loopDetection.warningThreshold must be lower than criticalThreshold."
ORDER_CRITICAL_BREAKER: Final = (
    "tools.loopDetection.criticalThreshold must be lower than globalCircuitBreakerThreshold."
)
WOULD_REFUSE_SUFFIX: Final = "OpenClaw would refuse to load this config"

INT_FIELDS: Final = (
    "historySize", "warningThreshold", "unknownToolThreshold", "criticalThreshold",
    "globalCircuitBreakerThreshold",
)
DETECTOR_FIELDS: Final = ("genericRepeat", "knownPollNoProgress", "pingPong")
BLOCK_FIELDS: Final = ("enabled", *INT_FIELDS, "detectors", "postCompactionGuard")


# --------------------------------------------------------------------------- run-time resolution


def _get(block: Any, key: str) -> Any:
    if isinstance(block, Mapping):
        return block.get(key, UNDEFINED)
    return UNDEFINED


def _nullish(value: Any, default: Any) -> Any:
    return default if value is None or value is UNDEFINED else value


@dataclass(frozen=True, slots=True)
class ResolvedLoopDetection:
    """The values OpenClaw runs with, after ``resolveLoopDetectionConfig`` (run on every call).

    ``enabled`` and the three detector gates keep the configured value (JS uses its
    truthiness); the ``*_on`` properties give the booleans.
    """

    enabled: Any
    history_size: int
    warning_threshold: int
    unknown_tool_threshold: int
    critical_threshold: int
    global_circuit_breaker_threshold: int
    generic_repeat: Any = True
    known_poll_no_progress: Any = True
    ping_pong: Any = True
    guard_enabled: bool = True
    """The post-compaction guard is on unless ``enabled`` is exactly ``false``."""
    guard_window_size: int = DEFAULT_GUARD_WINDOW_SIZE

    @property
    def detection_on(self) -> bool:
        return js_truthy(self.enabled)

    @property
    def generic_repeat_on(self) -> bool:
        return js_truthy(self.generic_repeat)

    @property
    def known_poll_no_progress_on(self) -> bool:
        return js_truthy(self.known_poll_no_progress)

    @property
    def ping_pong_on(self) -> bool:
        return js_truthy(self.ping_pong)

    def to_json(self) -> dict[str, Any]:
        """The shape of the reference data's ``resolved``/``effective`` objects."""
        return {
            "enabled": self.enabled,
            "historySize": self.history_size,
            "warningThreshold": self.warning_threshold,
            "unknownToolThreshold": self.unknown_tool_threshold,
            "criticalThreshold": self.critical_threshold,
            "globalCircuitBreakerThreshold": self.global_circuit_breaker_threshold,
            "detectors": {
                "genericRepeat": self.generic_repeat,
                "knownPollNoProgress": self.known_poll_no_progress,
                "pingPong": self.ping_pong,
            },
            "postCompactionGuard": {
                "enabled": self.guard_enabled,
                "windowSize": self.guard_window_size,
            },
        }


def resolve_loop_detection(block: Any) -> ResolvedLoopDetection:
    """OpenClaw's run-time resolution of a ``loopDetection`` block (any value, ``None`` = absent)."""
    warning = as_positive_int(_get(block, "warningThreshold"), DEFAULT_WARNING_THRESHOLD)
    critical = as_positive_int(_get(block, "criticalThreshold"), DEFAULT_CRITICAL_THRESHOLD)
    breaker = as_positive_int(_get(block, "globalCircuitBreakerThreshold"),
                              DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD)
    if critical <= warning:
        critical = warning + 1
    if breaker <= critical:
        breaker = critical + 1
    detectors = _get(block, "detectors")
    guard = _get(block, "postCompactionGuard")
    enabled = _get(block, "enabled")
    return ResolvedLoopDetection(
        enabled=_nullish(enabled, False),
        history_size=as_positive_int(_get(block, "historySize"), DEFAULT_HISTORY_SIZE),
        warning_threshold=warning,
        unknown_tool_threshold=as_positive_int(_get(block, "unknownToolThreshold"),
                                               DEFAULT_UNKNOWN_TOOL_THRESHOLD),
        critical_threshold=critical,
        global_circuit_breaker_threshold=breaker,
        generic_repeat=_nullish(_get(detectors, "genericRepeat"), True),
        known_poll_no_progress=_nullish(_get(detectors, "knownPollNoProgress"), True),
        ping_pong=_nullish(_get(detectors, "pingPong"), True),
        guard_enabled=enabled is not False,
        guard_window_size=as_positive_int(_get(guard, "windowSize"), DEFAULT_GUARD_WINDOW_SIZE),
    )


def describe_resolution(block: Any) -> list[str]:
    """Plain sentences for every fallback and clamp the resolution applied, for the UI."""
    notes: list[str] = []
    defaults = {
        "historySize": DEFAULT_HISTORY_SIZE, "warningThreshold": DEFAULT_WARNING_THRESHOLD,
        "unknownToolThreshold": DEFAULT_UNKNOWN_TOOL_THRESHOLD,
        "criticalThreshold": DEFAULT_CRITICAL_THRESHOLD,
        "globalCircuitBreakerThreshold": DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
    }
    for name, default in defaults.items():
        value = _get(block, name)
        if value is UNDEFINED:
            continue
        if as_positive_int(value, -1) == -1:
            notes.append(f"{name} {_show(value)} is not a positive whole number; OpenClaw uses {default}")
    window = _get(_get(block, "postCompactionGuard"), "windowSize")
    if window is not UNDEFINED and as_positive_int(window, -1) == -1:
        notes.append(f"postCompactionGuard.windowSize {_show(window)} is not a positive whole "
                     f"number; OpenClaw uses {DEFAULT_GUARD_WINDOW_SIZE}")
    warning = as_positive_int(_get(block, "warningThreshold"), DEFAULT_WARNING_THRESHOLD)
    critical = as_positive_int(_get(block, "criticalThreshold"), DEFAULT_CRITICAL_THRESHOLD)
    resolved = resolve_loop_detection(block)
    if resolved.critical_threshold != critical:
        notes.append(f"criticalThreshold raised to {resolved.critical_threshold} because it must "
                     f"exceed warningThreshold ({warning})")
    breaker = as_positive_int(_get(block, "globalCircuitBreakerThreshold"),
                              DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD)
    if resolved.global_circuit_breaker_threshold != breaker:
        notes.append(f"globalCircuitBreakerThreshold raised to "
                     f"{resolved.global_circuit_breaker_threshold} because it must exceed "
                     f"criticalThreshold ({resolved.critical_threshold})")
    return notes


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    return str(value)


# --------------------------------------------------------------------------- schema validation


def _is_positive_integer(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float) and not value.is_integer():
        return False
    return value > 0


def validate_block(block: Any, path: str) -> list[str]:
    """OpenClaw's schema check of one ``loopDetection`` block.

    Raises :class:`ConfigError` for a type error (unknown key, wrong type, non-positive or
    non-integer number); returns the ordering messages, which loopscope reports as warnings.
    """
    if not isinstance(block, Mapping):
        raise ConfigError(f"{path}: must be an object, not {type_name(block)}")
    for key, value in block.items():
        where = f"{path}.{key}"
        if key == "enabled":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: must be true or false, not {_show(value)}")
        elif key in INT_FIELDS:
            if not _is_positive_integer(value):
                raise ConfigError(f"{where}: must be a positive whole number, not {_show(value)}")
        elif key == "detectors":
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}: must be an object, not {type_name(value)}")
            for name, gate in value.items():
                if name not in DETECTOR_FIELDS:
                    raise ConfigError(f"{where}.{name}: unknown key (known: "
                                      f"{', '.join(DETECTOR_FIELDS)})")
                if not isinstance(gate, bool):
                    raise ConfigError(f"{where}.{name}: must be true or false, not {_show(gate)}")
        elif key == "postCompactionGuard":
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}: must be an object, not {type_name(value)}")
            for name, window in value.items():
                if name != "windowSize":
                    raise ConfigError(f"{where}.{name}: unknown key (known: windowSize)")
                if not _is_positive_integer(window):
                    raise ConfigError(f"{where}.{name}: must be a positive whole number, "
                                      f"not {_show(window)}")
        else:
            raise ConfigError(f"{where}: unknown key (known: {', '.join(BLOCK_FIELDS)})")
    return ordering_messages(block)


def ordering_messages(block: Mapping[str, Any]) -> list[str]:
    """OpenClaw's two ordering checks; each applies only when both values are in the block."""
    messages: list[str] = []
    warning = block.get("warningThreshold")
    critical = block.get("criticalThreshold")
    breaker = block.get("globalCircuitBreakerThreshold")
    if warning is not None and critical is not None and warning >= critical:
        messages.append(ORDER_WARNING_CRITICAL)
    if critical is not None and breaker is not None and critical >= breaker:
        messages.append(ORDER_CRITICAL_BREAKER)
    return messages


# --------------------------------------------------------------------------- agent overlay


def agent_loop_detection(cfg: Any, agent_id: str) -> tuple[bool, Any]:
    """``(entry found, its tools.loopDetection or UNDEFINED)`` for ``agent_id``."""
    agents = _get(cfg, "agents")
    entries = _get(agents, "list")
    if not isinstance(entries, list):
        return False, UNDEFINED
    wanted = normalize_agent_id(agent_id)
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        if normalize_agent_id(entry.get("id")) == wanted:
            return True, _get(_get(entry, "tools"), "loopDetection")
    return False, UNDEFINED


def merge_agent_overlay(cfg: Any, agent_id: str | None) -> Any:
    """``resolveToolLoopDetectionConfig({cfg, agentId})``: the global block with the agent's
    block overlaid (agent keys win; ``detectors`` and ``postCompactionGuard`` merge one level).
    Returns :data:`UNDEFINED` when neither block exists."""
    global_block = _get(_get(cfg, "tools"), "loopDetection")
    agent_block: Any = UNDEFINED
    if agent_id and isinstance(cfg, Mapping):
        _, agent_block = agent_loop_detection(cfg, agent_id)
    if not js_truthy(agent_block):
        return global_block
    if not js_truthy(global_block):
        return agent_block
    merged = {**global_block, **agent_block}
    merged["detectors"] = {**_as_dict(_get(global_block, "detectors")),
                           **_as_dict(_get(agent_block, "detectors"))}
    merged["postCompactionGuard"] = {**_as_dict(_get(global_block, "postCompactionGuard")),
                                     **_as_dict(_get(agent_block, "postCompactionGuard"))}
    return merged


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


# --------------------------------------------------------------------------- loopscope's config


@dataclass(frozen=True)
class OpenClawConfig:
    """What the engine replays with: the ``loopDetection`` block (config file with its agent
    overlay, then ``--set``, then ``enabled`` defaulted to ``true``) and its resolution. Build
    it with :meth:`from_block`, :func:`build_config` or ``ENGINE.resolve_config``; derive
    variants with :meth:`with_settings`."""

    block: Mapping[str, Any]
    """The unresolved block passed to every upstream function; each resolves and clamps it
    itself, as upstream does, which supplies the defaults."""
    resolved: ResolvedLoopDetection
    enabled_defaulted: bool = False
    """True when no layer set ``enabled`` and loopscope's ``true`` default applied."""
    notes: tuple[str, ...] = field(default=(), compare=False)
    """Fallbacks and clamps, in plain words (:func:`describe_resolution`)."""
    version: str = DEFAULT_VERSION
    """The OpenClaw release replayed (a configurable-detector release)."""

    @classmethod
    def from_block(cls, block: Mapping[str, Any] | None = None,
                   version: str = DEFAULT_VERSION) -> OpenClawConfig:
        """The config for a ``loopDetection`` block; ``enabled`` defaults to ``true``."""
        data = copy.deepcopy(dict(block or {}))
        defaulted = "enabled" not in data
        if defaulted:
            data["enabled"] = True
        return cls(block=data, resolved=resolve_loop_detection(data),
                   enabled_defaulted=defaulted, notes=tuple(describe_resolution(data)),
                   version=version)

    def with_settings(self, **settings: Any) -> OpenClawConfig:
        """A copy with some fields changed, by ``--set`` name: ``with_settings(criticalThreshold=25)``
        or ``with_settings(**{"detectors.pingPong": False})``. No validation."""
        data = copy.deepcopy(dict(self.block))
        for key, value in settings.items():
            _assign(data, key, value)
        result = OpenClawConfig.from_block(data, self.version)
        if self.enabled_defaulted and "enabled" not in settings:
            result = OpenClawConfig(result.block, result.resolved, True, result.notes, self.version)
        return result

    # Convenience views -----------------------------------------------------------------

    @property
    def history_size(self) -> int:
        return self.resolved.history_size

    @property
    def warning_threshold(self) -> int:
        return self.resolved.warning_threshold

    @property
    def critical_threshold(self) -> int:
        return self.resolved.critical_threshold

    @property
    def global_circuit_breaker_threshold(self) -> int:
        return self.resolved.global_circuit_breaker_threshold

    @property
    def unknown_tool_threshold(self) -> int:
        return self.resolved.unknown_tool_threshold

    @property
    def guard_window_size(self) -> int:
        return self.resolved.guard_window_size

    def effective(self) -> dict[str, Any]:
        """The effective values (the parity set's ``effective`` shape)."""
        return self.resolved.to_json()

    def settings(self) -> dict[str, Any]:
        """The effective values as ``--set`` pairs (name → value), ``enabled`` included."""
        r = self.resolved
        return {
            "enabled": r.detection_on, "historySize": r.history_size,
            "warningThreshold": r.warning_threshold, "criticalThreshold": r.critical_threshold,
            "globalCircuitBreakerThreshold": r.global_circuit_breaker_threshold,
            "unknownToolThreshold": r.unknown_tool_threshold,
            "detectors.genericRepeat": r.generic_repeat_on,
            "detectors.knownPollNoProgress": r.known_poll_no_progress_on,
            "detectors.pingPong": r.ping_pong_on,
            "postCompactionGuard.windowSize": r.guard_window_size,
        }

    def export_block(self) -> dict[str, Any]:
        """A ``loopDetection`` block OpenClaw's schema accepts: effective, clamped values with
        ``enabled`` written explicitly, because OpenClaw's own default differs from the replay's."""
        r = self.resolved
        return {
            "enabled": r.detection_on,
            "historySize": r.history_size,
            "warningThreshold": r.warning_threshold,
            "criticalThreshold": r.critical_threshold,
            "globalCircuitBreakerThreshold": r.global_circuit_breaker_threshold,
            "unknownToolThreshold": r.unknown_tool_threshold,
            "detectors": {"genericRepeat": r.generic_repeat_on,
                          "knownPollNoProgress": r.known_poll_no_progress_on,
                          "pingPong": r.ping_pong_on},
            "postCompactionGuard": {"windowSize": r.guard_window_size},
        }


def _assign(block: dict[str, Any], dotted: str, value: Any) -> None:
    head, _, tail = dotted.partition(".")
    if not tail:
        block[head] = value
        return
    inner = block.get(head)
    if not isinstance(inner, dict):
        inner = dict(inner) if isinstance(inner, Mapping) else {}
        block[head] = inner
    inner[tail] = value


def _config_shape(file_settings: Mapping[str, Any]) -> tuple[str, Any]:
    """``("openclaw", cfg)`` for an OpenClaw config file, ``("block", block)`` for a bare
    ``loopDetection`` block (also ``{"loopDetection": {...}}``)."""
    if "tools" in file_settings or "agents" in file_settings:
        return "openclaw", file_settings
    if set(file_settings) == {"loopDetection"}:
        return "block", file_settings["loopDetection"]
    if any(key in BLOCK_FIELDS for key in file_settings):
        return "block", file_settings
    return "openclaw", file_settings


def build_config(
    file_settings: Mapping[str, Any] | None,
    overrides: Sequence[tuple[str, str]] = (),
    agent: str | None = None,
    version: str = DEFAULT_VERSION,
) -> tuple[OpenClawConfig, list[str]]:
    """loopscope's config layers: the file's block (agent overlay applied when
    ``agent`` is given), then ``--set`` pairs, then ``enabled`` defaulted to ``true``.

    Returns the config and the warnings to show (OpenClaw's ordering messages, an unknown
    agent, clamps). Raises :class:`ConfigError` for unusable keys or values.
    """
    warnings: list[str] = []
    block: dict[str, Any] = {}
    if file_settings is not None:
        if not isinstance(file_settings, Mapping):
            raise ConfigError(f"config file: expected an object, not {type_name(file_settings)}")
        shape, data = _config_shape(file_settings)
        if shape == "block":
            for message in validate_block(data, "loopDetection"):
                warnings.append(f"{message} {WOULD_REFUSE_SUFFIX}")
            block = copy.deepcopy(dict(data))
            if agent:
                warnings.append(f"--agent {agent!r} ignored: the config file is a bare "
                                "loopDetection block without agents")
        else:
            block = _blocks_of_openclaw_config(data, agent, warnings)
    set_keys: set[str] = set()
    for key, text in overrides:
        value = parse_set_value(key, text)
        _assign(block, key, value)
        set_keys.add(key.partition(".")[0])
    if set_keys & {"warningThreshold", "criticalThreshold", "globalCircuitBreakerThreshold"}:
        for message in ordering_messages(block):
            involved = ({"warningThreshold", "criticalThreshold"} if message == ORDER_WARNING_CRITICAL
                        else {"criticalThreshold", "globalCircuitBreakerThreshold"})
            if involved & set_keys:
                text = f"{message} {WOULD_REFUSE_SUFFIX}"
                if text not in warnings:
                    warnings.append(text)
    config = OpenClawConfig.from_block(block, version)
    warnings.extend(config.notes)
    return config, warnings


def _blocks_of_openclaw_config(cfg: Mapping[str, Any], agent: str | None,
                               warnings: list[str]) -> dict[str, Any]:
    tools = cfg.get("tools")
    if tools is not None and not isinstance(tools, Mapping):
        raise ConfigError(f"tools: must be an object, not {type_name(tools)}")
    global_block = tools.get("loopDetection", UNDEFINED) if isinstance(tools, Mapping) else UNDEFINED
    if global_block is not UNDEFINED:
        for message in validate_block(global_block, "tools.loopDetection"):
            warnings.append(f"{message} {WOULD_REFUSE_SUFFIX}")
    agents = cfg.get("agents")
    entries = agents.get("list") if isinstance(agents, Mapping) else None
    if isinstance(entries, list):
        for n, entry in enumerate(entries):
            block = _get(_get(entry, "tools"), "loopDetection")
            if block is UNDEFINED:
                continue
            for message in validate_block(block, f"agents.list[{n}].tools.loopDetection"):
                warnings.append(f"{message} (agents.list[{n}]) {WOULD_REFUSE_SUFFIX}")
    if agent:
        found, _ = agent_loop_detection(cfg, agent)
        if not found:
            warnings.append(f"no entry of agents.list matches agent {agent!r}; using the "
                            "global tools.loopDetection block")
    elif global_block is UNDEFINED:
        warnings.append("the config file has no tools.loopDetection block; OpenClaw's defaults apply")
    merged = merge_agent_overlay(cfg, agent)
    return copy.deepcopy(dict(merged)) if isinstance(merged, Mapping) else {}


# --------------------------------------------------------------------------- the schema

SETTINGS: Final[tuple[SettingSpec, ...]] = (
    SettingSpec(
        "enabled", "Loop detection on", "bool", True,
        "OpenClaw's own default is off; loopscope turns it on so you can see what it would do. "
        "Off also turns off the post-compaction guard.",
        group="Switches"),
    SettingSpec(
        "warningThreshold", "Warn after this many repeats", "int", DEFAULT_WARNING_THRESHOLD,
        "The warning level of the repeat, polling and back-and-forth detectors. OpenClaw only "
        "writes warnings to its log; the agent is not told.",
        min=1, slider_min=1, slider_max=40, group="Thresholds"),
    SettingSpec(
        "criticalThreshold", "Block after this many repeats", "int", DEFAULT_CRITICAL_THRESHOLD,
        "The blocking level of the repeat, polling and back-and-forth detectors. It must be "
        "above the warning level; OpenClaw raises it otherwise.",
        min=1, slider_min=2, slider_max=60, group="Thresholds"),
    SettingSpec(
        "globalCircuitBreakerThreshold", "Hard stop after this many identical results", "int",
        DEFAULT_GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
        "The same call with the same result this many times in a row is blocked, whatever the "
        "detector switches say. It must be above the blocking level.",
        min=1, slider_min=3, slider_max=80, group="Thresholds"),
    SettingSpec(
        "unknownToolThreshold", "Block calls to a missing tool after", "int",
        DEFAULT_UNKNOWN_TOOL_THRESHOLD,
        "How many calls in a row to a tool that does not exist are allowed before they are "
        "blocked. It has no switch.",
        min=1, slider_min=1, slider_max=40, group="Thresholds"),
    SettingSpec(
        "historySize", "Calls remembered", "int", DEFAULT_HISTORY_SIZE,
        "How many recent calls OpenClaw keeps to look for repeats. A threshold above this can "
        "never be reached.",
        min=1, slider_min=5, slider_max=100, group="Thresholds"),
    SettingSpec(
        "detectors.genericRepeat", "Detect repeated calls", "bool", True,
        "The same call made over and over.", group="Switches"),
    SettingSpec(
        "detectors.knownPollNoProgress", "Detect polling without progress", "bool", True,
        "A status check (command_status, process poll/log) whose answer stops changing.",
        group="Switches"),
    SettingSpec(
        "detectors.pingPong", "Detect back-and-forth between two calls", "bool", True,
        "An A, B, A, B … alternation between two calls.", group="Switches"),
    SettingSpec(
        "postCompactionGuard.windowSize", "After a compaction, stop after", "int",
        DEFAULT_GUARD_WINDOW_SIZE,
        "After the conversation is compacted, the same call with the same result this many "
        "times stops the run.",
        min=1, slider_min=1, slider_max=20, group="Thresholds"),
)
"""The settings of the configurable releases, named as in ``tools.loopDetection`` (``--set``
uses the same names, dots for nested keys)."""
