"""``tools.loopDetection`` of ``openclaw@2026.9.6``: one key, fixed values, and what-ifs.

OpenClaw 2026.9 accepts a strict ``loopDetection`` block with the single key ``enabled``
(``dist/zod-schema.agent-runtime-*.mjs``). Everything else of the configurable releases is
fixed: the thresholds are constants (or literals) of ``dist/tool-loop-detection-*.mjs``, the
post-compaction window is ``DEFAULT_WINDOW_SIZE`` of the guard
(``dist/embedded-agent-*.mjs``), and the warning bucket is ``LOOP_WARNING_BUCKET_SIZE`` of
``dist/agent-tools.before-tool-call-*.mjs``.

loopscope lets those fixed values be explored as what-ifs (settings named after the upstream
constant, never exported, always flagged as hypothetical), and accepts the retired keys of the
configurable releases (``historySize``, ``warningThreshold``, …, ``detectors``,
``postCompactionGuard``) but ignores them, as OpenClaw 2026.9 would have no use for them — it
refuses to load such a file, and ``openclaw doctor`` strips them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from loopscope.engines.base import ConfigError
from loopscope.engines.contract import SettingSpec
from loopscope.engines.openclaw.shared.config import SET_KEYS as LEGACY_SET_KEYS_WITH_ENABLED
from loopscope.engines.openclaw.shared.config import normalize_agent_id, parse_set_value, type_name
from loopscope.jsonrules.javascript import UNDEFINED, js_truthy

VERSION: Final = "2026.9.6"
VERSIONS: Final = (VERSION,)
"""The releases with the fixed-threshold detector, batch admission and one-shot recovery."""

# The fixed values of openclaw@2026.9.6, by their upstream names.
TOOL_CALL_HISTORY_SIZE: Final = 30
"""``TOOL_CALL_HISTORY_SIZE`` (``dist/tool-loop-detection-*.mjs``)."""
WARNING_THRESHOLD: Final = 10
"""The literal ``10`` of every warning level (``resolveToolLoopWarningThreshold()``)."""
CRITICAL_THRESHOLD: Final = 20
"""``CRITICAL_THRESHOLD``."""
GLOBAL_CIRCUIT_BREAKER_THRESHOLD: Final = 30
"""``GLOBAL_CIRCUIT_BREAKER_THRESHOLD``."""
UNKNOWN_TOOL_THRESHOLD: Final = 10
"""The literal ``10`` of ``unknownToolStreak.count >= 10``."""
ARGUMENT_CHURN_THRESHOLD: Final = 10
"""The literal ``10`` of ``argumentChurn.count >= 10``."""
DEFAULT_WINDOW_SIZE: Final = 3
"""``DEFAULT_WINDOW_SIZE`` of the post-compaction guard (``dist/embedded-agent-*.mjs``)."""
LOOP_WARNING_BUCKET_SIZE: Final = 10
"""``LOOP_WARNING_BUCKET_SIZE`` (``dist/agent-tools.before-tool-call-*.mjs``)."""
MAX_LOOP_WARNING_KEYS: Final = 256
"""``MAX_LOOP_WARNING_KEYS``: the warning bucket map keeps the newest 256 keys."""
MIN_STABLE_CALLS_PER_VARIANT: Final = 3
"""``MIN_STABLE_CALLS_PER_VARIANT`` of the argument-churn detector."""

LEGACY_KEYS: Final = (
    "historySize", "warningThreshold", "criticalThreshold", "globalCircuitBreakerThreshold",
    "unknownToolThreshold", "detectors", "postCompactionGuard",
)
"""Keys of the configurable releases that 2026.9.6 no longer has (top level of a block)."""
LEGACY_SET_KEYS: Final = tuple(k for k in LEGACY_SET_KEYS_WITH_ENABLED if k != "enabled")

WHAT_IF_NOTE: Final = "not settable in OpenClaw 2026.9 — a proposal to take upstream"
"""The label every what-if carries."""
ENABLED_UNSET_BANNER_2026_9: Final = (
    "In OpenClaw 2026.9 this config leaves the rolling detector off; only the post-compaction "
    "guard would act."
)


@dataclass(frozen=True, slots=True)
class Limits:
    """The fixed values the detector, the admission step and the guard use."""

    history_size: int = TOOL_CALL_HISTORY_SIZE
    warning: int = WARNING_THRESHOLD
    critical: int = CRITICAL_THRESHOLD
    breaker: int = GLOBAL_CIRCUIT_BREAKER_THRESHOLD
    unknown_tool: int = UNKNOWN_TOOL_THRESHOLD
    argument_churn: int = ARGUMENT_CHURN_THRESHOLD
    guard_window: int = DEFAULT_WINDOW_SIZE
    bucket_size: int = LOOP_WARNING_BUCKET_SIZE


UPSTREAM: Final = Limits()
"""The values openclaw@2026.9.6 runs with."""

_WHAT_IF_FIELDS: Final = {
    "TOOL_CALL_HISTORY_SIZE": "history_size",
    "WARNING_THRESHOLD": "warning",
    "CRITICAL_THRESHOLD": "critical",
    "GLOBAL_CIRCUIT_BREAKER_THRESHOLD": "breaker",
    "UNKNOWN_TOOL_THRESHOLD": "unknown_tool",
    "ARGUMENT_CHURN_THRESHOLD": "argument_churn",
    "DEFAULT_WINDOW_SIZE": "guard_window",
    "LOOP_WARNING_BUCKET_SIZE": "bucket_size",
}
"""What-if setting name → :class:`Limits` field."""


def _what_if(name: str, label: str, default: int, help_text: str, low: int, high: int,
             replaces: str = "") -> SettingSpec:
    return SettingSpec(name, label, "int", default, f"{help_text} ({WHAT_IF_NOTE}.)", min=1,
                       slider_min=low, slider_max=high, deployable=False,
                       group=f"What-ifs ({WHAT_IF_NOTE})", replaces=replaces)


SETTINGS_2026_9: Final[tuple[SettingSpec, ...]] = (
    SettingSpec(
        "enabled", "Loop detection on", "bool", True,
        "OpenClaw's own default is off; loopscope turns it on so you can see what it would do. "
        "Off also turns off the post-compaction guard. It is the only loop setting OpenClaw "
        "2026.9 has.", group="Switches"),
    _what_if("TOOL_CALL_HISTORY_SIZE", "Calls remembered", TOOL_CALL_HISTORY_SIZE,
             "How many recent calls OpenClaw keeps to look for repeats (TOOL_CALL_HISTORY_SIZE, "
             "30 in OpenClaw 2026.9)", 5, 100, "historySize"),
    _what_if("WARNING_THRESHOLD", "Warn after this many repeats", WARNING_THRESHOLD,
             "The warning level of the repeat, polling and back-and-forth detectors (the "
             "literal 10 of OpenClaw 2026.9)", 1, 40, "warningThreshold"),
    _what_if("CRITICAL_THRESHOLD", "Stop after this many repeats", CRITICAL_THRESHOLD,
             "The level at which a repeat, a stuck poll or a back-and-forth stops the call "
             "(CRITICAL_THRESHOLD, 20 in OpenClaw 2026.9)", 2, 60, "criticalThreshold"),
    _what_if("GLOBAL_CIRCUIT_BREAKER_THRESHOLD", "Hard stop after this many identical results",
             GLOBAL_CIRCUIT_BREAKER_THRESHOLD,
             "The same call with the same result this many times in a row is stopped "
             "(GLOBAL_CIRCUIT_BREAKER_THRESHOLD, 30 in OpenClaw 2026.9)", 3, 80,
             "globalCircuitBreakerThreshold"),
    _what_if("UNKNOWN_TOOL_THRESHOLD", "Stop calls to a missing tool after",
             UNKNOWN_TOOL_THRESHOLD,
             "How many calls in a row to a tool that does not exist are allowed (the literal "
             "10 of OpenClaw 2026.9)", 1, 40, "unknownToolThreshold"),
    _what_if("ARGUMENT_CHURN_THRESHOLD", "Warn about argument churn after",
             ARGUMENT_CHURN_THRESHOLD,
             "How many failing calls of one tool, cycling through a few argument variants "
             "with the same result, earn a warning (the literal 10 of OpenClaw 2026.9)", 1, 40),
    _what_if("DEFAULT_WINDOW_SIZE", "After a compaction, stop after", DEFAULT_WINDOW_SIZE,
             "After the conversation is compacted, the same call with the same result this "
             "many times stops the run (the post-compaction guard's DEFAULT_WINDOW_SIZE, 3 in "
             "OpenClaw 2026.9)", 1, 20, "postCompactionGuard.windowSize"),
    _what_if("LOOP_WARNING_BUCKET_SIZE", "Show a warning once per", LOOP_WARNING_BUCKET_SIZE,
             "OpenClaw shows the model a warning once per this many repetitions, never below "
             "it (LOOP_WARNING_BUCKET_SIZE, 10 in OpenClaw 2026.9)", 1, 40),
)
"""The settings of OpenClaw 2026.9: ``enabled`` (deployable) and the what-ifs."""

WHAT_IF_NAMES: Final = tuple(s.name for s in SETTINGS_2026_9 if not s.deployable)
SET_KEYS_2026_9: Final = ("enabled", *WHAT_IF_NAMES)


# --------------------------------------------------------------------------- the config


@dataclass(frozen=True)
class OpenClaw9Config:
    """What the 2026.9.6 replay runs with: ``enabled`` and the (possibly hypothetical) fixed
    values. Build it with :func:`build_config_2026_9` or ``ENGINE.config(values,
    "2026.9.6")``."""

    enabled: bool = True
    limits: Limits = UPSTREAM
    enabled_defaulted: bool = False
    """True when no layer set ``enabled`` and loopscope's ``true`` default applied."""
    ignored_keys: tuple[str, ...] = ()
    """Retired keys found in the configuration (top-level names, sorted); they change
    nothing."""
    notes: tuple[str, ...] = field(default=(), compare=False)
    version: str = VERSION

    @property
    def detection_on(self) -> bool:
        """The admission step checks ``enabled === true``."""
        return self.enabled is True

    @property
    def guard_enabled(self) -> bool:
        """The post-compaction guard is on unless ``enabled`` is exactly ``false``."""
        return self.enabled is not False

    @property
    def hypothetical(self) -> tuple[str, ...]:
        """The what-ifs set to something else than OpenClaw's value."""
        return tuple(name for name, attr in _WHAT_IF_FIELDS.items()
                     if getattr(self.limits, attr) != getattr(UPSTREAM, attr))

    def settings(self) -> dict[str, Any]:
        """Every setting's value (name → value), ``enabled`` first."""
        return {"enabled": self.enabled,
                **{name: getattr(self.limits, attr) for name, attr in _WHAT_IF_FIELDS.items()}}

    def effective(self) -> dict[str, Any]:
        """The values the replay runs with (the parity set's ``effective`` shape)."""
        limits = self.limits
        return {
            "enabled": self.enabled,
            "historySize": limits.history_size,
            "warningThreshold": limits.warning,
            "criticalThreshold": limits.critical,
            "globalCircuitBreakerThreshold": limits.breaker,
            "unknownToolThreshold": limits.unknown_tool,
            "warningBucketSize": limits.bucket_size,
            "postCompactionGuard": {"enabled": self.guard_enabled,
                                    "windowSize": limits.guard_window},
            "ignoredKeys": list(self.ignored_keys),
        }

    def export_block(self) -> dict[str, Any]:
        """The ``loopDetection`` block OpenClaw 2026.9 accepts: ``enabled`` only."""
        return {"enabled": self.enabled}

    def with_settings(self, **settings: Any) -> OpenClaw9Config:
        """A copy with some settings changed, by name (``enabled`` or a what-if); no
        validation beyond the names. Notes are recomputed."""
        enabled = self.enabled
        changes: dict[str, Any] = {}
        for key, value in settings.items():
            if key == "enabled":
                enabled = value
            elif key in _WHAT_IF_FIELDS:
                changes[_WHAT_IF_FIELDS[key]] = value
            else:
                raise ConfigError(_unknown_key_message(key))
        limits = replace(self.limits, **changes)
        config = OpenClaw9Config(enabled, limits, self.enabled_defaulted
                                 and "enabled" not in settings, self.ignored_keys, (),
                                 self.version)
        return replace(config, notes=tuple(_notes(config)))


def hypothetical_note(config: OpenClaw9Config) -> str | None:
    """The warning a configuration with non-default what-ifs carries."""
    changed = config.hypothetical
    if not changed:
        return None
    values = ", ".join(f"{name}={config.settings()[name]}" for name in changed)
    return (f"Hypothetical: {values} — not settable in OpenClaw 2026.9 (a constant of the real "
            "guard). This replay shows what OpenClaw would do if it were; it is a proposal to "
            "take upstream, and no export contains it.")


def legacy_note(keys: Sequence[str]) -> str | None:
    """The warning for retired keys: named, ignored, and refused by OpenClaw 2026.9."""
    if not keys:
        return None
    return (f"{', '.join(keys)}: no effect in OpenClaw {VERSION}, ignored. OpenClaw 2026.9 "
            "would refuse to load a config that sets them (`openclaw doctor` removes them); "
            "its thresholds are fixed (explore them here as what-ifs).")


def _notes(config: OpenClaw9Config) -> list[str]:
    notes = []
    legacy = legacy_note(config.ignored_keys)
    if legacy:
        notes.append(legacy)
    hypothetical = hypothetical_note(config)
    if hypothetical:
        notes.append(hypothetical)
    return notes


def make_config(enabled: Any, values: Mapping[str, int] | None = None,
                ignored: Sequence[str] = (), enabled_defaulted: bool = False) -> OpenClaw9Config:
    """A config from ``enabled`` and what-if values (by setting name)."""
    limits = replace(UPSTREAM, **{_WHAT_IF_FIELDS[k]: v for k, v in (values or {}).items()})
    config = OpenClaw9Config(bool(enabled), limits, enabled_defaulted,
                             tuple(sorted(set(ignored))), ())
    return replace(config, notes=tuple(_notes(config)))


def _unknown_key_message(key: str) -> str:
    return (f"unknown setting {key!r} for the openclaw engine at OpenClaw {VERSION} (known: "
            f"{', '.join(SET_KEYS_2026_9)}; the retired keys {', '.join(LEGACY_SET_KEYS)} are "
            "accepted and ignored)")


# --------------------------------------------------------------------------- files and --set


def validate_block_2026_9(block: Any, path: str) -> list[str]:
    """OpenClaw 2026.9's schema for one ``loopDetection`` block, with the retired keys allowed
    (returned, to be ignored). Raises :class:`ConfigError` for anything else."""
    if not isinstance(block, Mapping):
        raise ConfigError(f"{path}: must be an object, not {type_name(block)}")
    retired: list[str] = []
    for key, value in block.items():
        if key == "enabled":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}.enabled: must be true or false, not "
                                  f"{type_name(value) if value is not None else 'null'}")
        elif key in LEGACY_KEYS:
            retired.append(key)
        else:
            raise ConfigError(f"{path}.{key}: unknown key (OpenClaw {VERSION} accepts only "
                              "enabled)")
    return retired


def _get(value: Any, key: str) -> Any:
    return value.get(key, UNDEFINED) if isinstance(value, Mapping) else UNDEFINED


def agent_blocks(cfg: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(path, agent id, tools.loopDetection)`` of every agent entry with a block, from
    ``agents.entries`` (keyed by id) when present, else ``agents.list``."""
    agents = _get(cfg, "agents")
    out: list[tuple[str, Any, Any]] = []
    entries = _get(agents, "entries")
    if entries is not UNDEFINED:
        if isinstance(entries, Mapping):
            for key, entry in entries.items():
                block = _get(_get(entry, "tools"), "loopDetection")
                if isinstance(entry, Mapping) and block is not UNDEFINED:
                    out.append((f"agents.entries.{key}.tools.loopDetection", key, block))
        return out
    listed = _get(agents, "list")
    if isinstance(listed, list):
        for n, entry in enumerate(listed):
            block = _get(_get(entry, "tools"), "loopDetection")
            if isinstance(entry, Mapping) and block is not UNDEFINED:
                out.append((f"agents.list[{n}].tools.loopDetection", entry.get("id"), block))
    return out


def find_agent(cfg: Mapping[str, Any], agent_id: str) -> tuple[bool, Any]:
    """``(entry found, its tools.loopDetection or UNDEFINED)`` (``resolveAgentConfig``:
    ``agents.entries`` first, then ``agents.list``; ids normalised)."""
    wanted = normalize_agent_id(agent_id)
    agents = _get(cfg, "agents")
    entries = _get(agents, "entries")
    if entries is not UNDEFINED:
        if isinstance(entries, Mapping):
            for key, entry in entries.items():
                if isinstance(entry, Mapping) and normalize_agent_id(key) == wanted:
                    return True, _get(_get(entry, "tools"), "loopDetection")
        return False, UNDEFINED
    listed = _get(agents, "list")
    if isinstance(listed, list):
        for entry in listed:
            if isinstance(entry, Mapping) and normalize_agent_id(entry.get("id")) == wanted:
                return True, _get(_get(entry, "tools"), "loopDetection")
    return False, UNDEFINED


def merge_agent_overlay_2026_9(cfg: Mapping[str, Any], agent_id: str | None) -> Any:
    """``resolveToolLoopDetectionConfig`` of 2026.9.6: no agent block → the global block; no
    global block → the agent block; both → ``{enabled: agent.enabled ?? global.enabled}``.
    :data:`UNDEFINED` when neither exists."""
    global_block = _get(_get(cfg, "tools"), "loopDetection")
    agent_block: Any = UNDEFINED
    if agent_id:
        _, agent_block = find_agent(cfg, agent_id)
    if not js_truthy(agent_block):
        return global_block
    if not js_truthy(global_block):
        return agent_block
    enabled = _get(agent_block, "enabled")
    if enabled is UNDEFINED or enabled is None:
        enabled = _get(global_block, "enabled")
    return {} if enabled is UNDEFINED else {"enabled": enabled}


def _split_file(file_settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(what-if values, the rest)``: loopscope's config document keeps what-ifs at the top
    level, beside the OpenClaw part."""
    what_ifs = {k: v for k, v in file_settings.items() if k in _WHAT_IF_FIELDS}
    rest = {k: v for k, v in file_settings.items() if k not in _WHAT_IF_FIELDS}
    return what_ifs, rest


def _check_what_if(name: str, value: Any) -> int:
    spec = next(s for s in SETTINGS_2026_9 if s.name == name)
    if isinstance(value, str):
        value = spec.parse(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    checked: int = spec.check(value)
    return checked


def build_config_2026_9(
    file_settings: Mapping[str, Any] | None,
    overrides: Sequence[tuple[str, str]] = (),
    agent: str | None = None,
) -> tuple[OpenClaw9Config, list[str]]:
    """loopscope's config layers for 2026.9.6: the file's block (agent overlay applied when
    ``agent`` is given), then ``--set`` pairs, then ``enabled`` defaulted to ``true``.

    Retired keys are accepted anywhere and ignored (one warning names them); what-ifs come
    from the file's top level or ``--set``. Returns the config and the warnings to show."""
    warnings: list[str] = []
    enabled: Any = UNDEFINED
    what_ifs: dict[str, int] = {}
    retired: list[str] = []
    if file_settings is not None:
        if not isinstance(file_settings, Mapping):
            raise ConfigError(f"config file: expected an object, not {type_name(file_settings)}")
        file_what_ifs, rest = _split_file(file_settings)
        for name, value in file_what_ifs.items():
            what_ifs[name] = _check_what_if(name, value)
        block = _block_of_file(rest, agent, warnings, retired)
        enabled = _get(block, "enabled")
    for key, text in overrides:
        if key == "enabled":
            value = text.strip()
            if value not in ("true", "false"):
                raise ConfigError(f"enabled: expected true or false, got {text!r}")
            enabled = value == "true"
        elif key in _WHAT_IF_FIELDS:
            what_ifs[key] = _check_what_if(key, text)
        elif key in LEGACY_SET_KEYS:
            parse_set_value(key, text)  # a malformed value is still bad usage
            retired.append(key.partition(".")[0])
        else:
            raise ConfigError(_unknown_key_message(key))
    defaulted = enabled is UNDEFINED or enabled is None
    config = make_config(True if defaulted else enabled, what_ifs, retired, defaulted)
    warnings.extend(config.notes)
    return config, warnings


def _block_of_file(data: Mapping[str, Any], agent: str | None, warnings: list[str],
                   retired: list[str]) -> Any:
    if "tools" in data or "agents" in data:
        tools = data.get("tools")
        if tools is not None and not isinstance(tools, Mapping):
            raise ConfigError(f"tools: must be an object, not {type_name(tools)}")
        global_block = _get(tools, "loopDetection")
        if global_block is not UNDEFINED:
            retired.extend(validate_block_2026_9(global_block, "tools.loopDetection"))
        for path, _agent_id, agent_block in agent_blocks(data):
            retired.extend(validate_block_2026_9(agent_block, path))
        if agent:
            found, _ = find_agent(data, agent)
            if not found:
                warnings.append(f"no agent entry matches agent {agent!r}; using the global "
                                "tools.loopDetection block")
        elif global_block is UNDEFINED:
            warnings.append("the config file has no tools.loopDetection block; OpenClaw's "
                            "defaults apply")
        merged = merge_agent_overlay_2026_9(data, agent)
        return copy.deepcopy(dict(merged)) if isinstance(merged, Mapping) else {}
    block: Any = data["loopDetection"] if set(data) == {"loopDetection"} else data
    retired.extend(validate_block_2026_9(block, "loopDetection"))
    if agent:
        warnings.append(f"--agent {agent!r} ignored: the config file is a bare loopDetection "
                        "block without agents")
    return block



def config_from_values(values: Mapping[str, Any]) -> tuple[OpenClaw9Config, tuple[str, ...]]:
    """The config of complete, type-checked setting values (``ENGINE.config``), retired keys
    included among ``values`` (ignored, named in a note)."""
    retired = [k.partition(".")[0] for k in values if k in LEGACY_SET_KEYS]
    what_ifs = {k: v for k, v in values.items() if k in _WHAT_IF_FIELDS}
    config = make_config(values.get("enabled", True), what_ifs, retired)
    return config, config.notes
