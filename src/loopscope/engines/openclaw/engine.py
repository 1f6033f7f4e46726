"""The OpenClaw engine object behind :class:`loopscope.engines.contract.Engine`."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from loopscope.bulk import CollectorPaused
from loopscope.engines.base import (
    ConfigError,
    ConfigResolution,
    RunColumns,
    SessionReplay,
    columns_of,
    packed,
)
from loopscope.engines.contract import (
    BaseEngine,
    CounterSeries,
    DetectorInfo,
    ExportFile,
    GuideExample,
    SettingSpec,
)
from loopscope.engines.openclaw import fast
from loopscope.engines.openclaw.config import (
    BLOCK_FIELDS,
    CONFIGURABLE_VERSIONS,
    DEFAULT_VERSION,
    ENABLED_DEFAULT_NOTE,
    ENABLED_UNSET_BANNER,
    JSON5_EXPORT_COMMENT,
    SETTINGS,
    OpenClawConfig,
    _assign,
    build_config,
    ordering_messages,
)
from loopscope.engines.openclaw.explain import EXPLAINER
from loopscope.engines.openclaw.fast import PreparedSession, prepare, run
from loopscope.engines.openclaw.reference import replay_session
from loopscope.model import Session

__all__ = ["ENGINE", "OpenClawEngine"]

ENABLED_DEFAULTED_NOTE: Final = (
    "OpenClaw's own default is enabled: false; loopscope replays with enabled: true (use "
    "--set enabled=false to replay OpenClaw as shipped).")
"""Said whenever no layer set ``enabled`` and loopscope's ``true`` applied."""

VERSION_KEY: Final = "version"
"""Where a loopscope config document records the OpenClaw release (``{"openclaw": {"version":
"2026.7.35", "tools": {...}}}``); ``--openclaw-version`` wins over it."""


class OpenClawEngine(BaseEngine[OpenClawConfig, PreparedSession]):
    """OpenClaw's ``tools.loopDetection`` in shadow mode: one step per tool call."""

    name = "openclaw"
    title = "OpenClaw"
    summary = ("OpenClaw checks each tool call against a rolling history of recent calls: it "
               "warns (in its log) and then blocks a call that keeps repeating with the same "
               "result, a status poll that stops changing, a back-and-forth between two calls, "
               "or retries of a missing tool.")
    versions = CONFIGURABLE_VERSIONS
    default_version = DEFAULT_VERSION
    notes = (ENABLED_DEFAULT_NOTE,)
    step_unit: Literal["call", "turn"] = "call"
    schema: tuple[SettingSpec, ...] = SETTINGS
    explainer = EXPLAINER
    strict_bool = True
    set_keys: tuple[str, ...] = tuple(s.name for s in SETTINGS)
    enabled_default_note: str = ENABLED_DEFAULT_NOTE
    detectors = (
        DetectorInfo("generic_repeat", "the same call again and again",
                     "OpenClaw warns when the same call (same tool, same input) keeps appearing "
                     "in its recent history, and blocks it when it also returns the same result "
                     "many times in a row.", ("warn", "refuse")),
        DetectorInfo("known_poll_no_progress", "a status check that stops changing",
                     "A known status poll (process poll/log, command_status) whose answer does "
                     "not change is counted on its own: it warns and then blocks.",
                     ("warn", "refuse")),
        DetectorInfo("ping_pong", "back and forth between two calls",
                     "An exact A, B, A, B … alternation between two calls is counted as one "
                     "pattern. It warns on the alternation alone and blocks when both sides "
                     "keep returning the same results.", ("warn", "refuse")),
        DetectorInfo("unknown_tool_repeat", "retrying a tool that does not exist",
                     "When the same tool keeps failing with 'unknown tool' or 'not found', "
                     "OpenClaw blocks it after a number of tries.", ("refuse",)),
        DetectorInfo("global_circuit_breaker", "the hard stop on identical results",
                     "A hard limit on the same call returning the same result, which applies "
                     "even when the detector switches are off.", ("refuse",)),
        DetectorInfo("post_compaction_guard", "looping on right after a compaction",
                     "After the conversation is compacted, OpenClaw watches the next few calls. "
                     "If they are all the same call with the same result, the run is stopped.",
                     ("refuse",)),
    )

    # ------------------------------------------------------------------ configs

    def default_config(self, version: str | None = None) -> OpenClawConfig:
        """OpenClaw's defaults with ``enabled: true`` (loopscope's default)."""
        return OpenClawConfig.from_block({}, self.check_version(version))

    def build_config(self, values: Mapping[str, Any], version: str
                     ) -> tuple[OpenClawConfig, tuple[str, ...]]:
        block: dict[str, Any] = {}
        for key, value in values.items():
            _assign(block, key, value)
        config = OpenClawConfig.from_block(block, version)
        notes = [f"{m} OpenClaw would refuse to load this config" for m in ordering_messages(block)]
        notes.extend(config.notes)
        return config, tuple(notes)

    def config(self, values: Mapping[str, Any], version: str | None = None
               ) -> ConfigResolution[OpenClawConfig]:
        res = super().config(values, version)
        return ConfigResolution(res.config, res.warnings, unreachable_notes(res.config))

    def config_values(self, config: OpenClawConfig) -> dict[str, Any]:
        return config.settings()

    def version_of(self, config: OpenClawConfig) -> str:
        return config.version

    def resolve_config(
        self,
        file_settings: Mapping[str, Any] | None,
        overrides: Sequence[tuple[str, str]],
        agent: str | None = None,
        version: str | None = None,
    ) -> ConfigResolution[OpenClawConfig]:
        if isinstance(file_settings, Mapping) and VERSION_KEY in file_settings:
            file_version = file_settings[VERSION_KEY]
            if version is None:
                if not isinstance(file_version, str):
                    raise ConfigError(f"{VERSION_KEY}: expected a version string, got "
                                      f"{file_version!r}")
                version = file_version
            file_settings = {k: v for k, v in file_settings.items() if k != VERSION_KEY}
        version = self.check_version(version)
        config, warnings = build_config(file_settings, overrides, agent, version)
        notes: tuple[str, ...] = ()
        if config.enabled_defaulted:
            notes = (ENABLED_DEFAULTED_NOTE,)
            if file_settings is not None:
                notes = (ENABLED_UNSET_BANNER, *notes)
        return ConfigResolution(config, tuple(warnings), notes)

    def settings_from_document(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """A loopscope document's ``openclaw`` part, an OpenClaw config (``tools`` /
        ``agents``), or a bare ``loopDetection`` block."""
        part = document.get(self.name)
        if isinstance(part, Mapping):
            return part
        if any(k in document for k in ("tools", "agents", "loopDetection", *BLOCK_FIELDS)):
            return document
        return None

    def settings_document(self, config: OpenClawConfig) -> dict[str, Any]:
        """The ``openclaw`` part of a loopscope config document."""
        return {VERSION_KEY: config.version, "tools": {"loopDetection": config.export_block()}}

    def exports(self, config: OpenClawConfig) -> tuple[ExportFile, ...]:
        return (ExportFile(
            f"OpenClaw {config.version} (tools.loopDetection)", "openclaw-loopDetection.json5",
            "application/json5", loop_detection_json5(config.export_block(), config.version),
            "enabled is written explicitly: OpenClaw's own default is false, loopscope replays "
            "with true. Paste it into openclaw.json."),)

    # ------------------------------------------------------------------ replay

    def prepare_key(self, version: str | None = None) -> str:
        self.check_version(version)
        return "configurable"  # every configurable release shares the same prepared data

    def prepare(self, session: Session, version: str | None = None) -> PreparedSession:
        self.check_version(version)
        with CollectorPaused():  # (the prepared data holds no reference cycles)
            return prepare(session)

    def run(self, prepared: PreparedSession, config: OpenClawConfig) -> SessionReplay:
        return run(prepared, config)

    def replay(self, session: Session, config: OpenClawConfig) -> SessionReplay:
        return replay_session(session, config)

    def run_many(self, prepared: Sequence[Any], config: OpenClawConfig) -> RunColumns:
        """A vectorised pass over the corpus's calls (:func:`fast.run_columns`)."""
        pack = packed(prepared, (self.name, "pack"), _pack)
        if pack is None:  # another release's prepared data
            return super().run_many(prepared, config)
        return columns_of(fast.run_columns(pack, config),
                          lambda i: run(prepared[i], config), fast.DETECTORS)

    def encode_prepared(self, prepared: Any) -> dict[str, Any] | None:
        return fast.encode(prepared) if type(prepared) is PreparedSession else None

    def decode_prepared(self, data: Any) -> PreparedSession:
        return fast.decode(data)

    def counters(self, prepared: PreparedSession, replay: SessionReplay, config: OpenClawConfig
                 ) -> tuple[CounterSeries, ...]:
        """Before each call: how many identical results in a row the same call got (what
        blocking counts) and how often the same call appears in the window (what warning
        counts), against the three levels."""
        r = config.resolved
        counters = prepared.counters(r.history_size)
        n = len(replay.steps)
        out = [
            CounterSeries("same result in a row (before this call)",
                          tuple(counters.no_progress[:n]), hover="identical results in a row"),
            CounterSeries("same call in the window", tuple(counters.recent[:n]),
                          hover="same call earlier in the window"),
        ]
        if r.detection_on:
            for label, value in (("warn at", r.warning_threshold),
                                 ("block at", r.critical_threshold),
                                 ("hard stop at", r.global_circuit_breaker_threshold)):
                out.append(CounterSeries(f"{label} {value}", (value,) * n, role="limit",
                                         hover=label))
        return tuple(out)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        from loopscope.engines.openclaw.explain import guide_examples

        return guide_examples()


def unreachable_notes(config: OpenClawConfig) -> tuple[str, ...]:
    """Levels above the history window can never be reached: counts never exceed the calls
    remembered."""
    r = config.resolved
    over = [(name, value) for name, value in (
        ("warning", r.warning_threshold), ("block", r.critical_threshold),
        ("hard stop", r.global_circuit_breaker_threshold)) if value > r.history_size + 1]
    if not over:
        return ()
    return ("Counts never exceed the calls remembered (" + str(r.history_size) + "), so "
            + ", ".join(f"the {n} level ({v})" for n, v in over) + " can never be reached.",)


def loop_detection_json5(block: Mapping[str, Any], version: str = DEFAULT_VERSION) -> str:
    """``{tools: {loopDetection: {...}}}`` as JSON5 text, ready to paste into ``openclaw.json``.

    ``enabled`` comes first and is always written, with a comment: OpenClaw's own default is
    false and loopscope replays with true.
    """
    data = copy.deepcopy(dict(block))
    enabled = data.pop("enabled", True)
    data = {"enabled": True if enabled is None else bool(enabled), **data}
    lines = [
        f"// OpenClaw {version} tool-loop detection settings, exported by loopscope.",
        "// Paste into your OpenClaw config (openclaw.json).",
        "{",
        "  tools: {",
        "    loopDetection: {",
    ]
    for key, value in data.items():
        if key == "enabled":
            lines.append(f"      {JSON5_EXPORT_COMMENT}")
        lines.append(f"      {_json5_key(key)}: {_json5_value(value, indent=6)},")
    lines += ["    },", "  },", "}"]
    return "\n".join(lines) + "\n"


def _json5_key(key: str) -> str:
    return key if key.isidentifier() else json.dumps(key)


def _json5_value(value: Any, indent: int) -> str:
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        pad = " " * (indent + 2)
        inner = [f"{pad}{_json5_key(str(k))}: {_json5_value(v, indent + 2)},"
                 for k, v in value.items()]
        return "{\n" + "\n".join(inner) + "\n" + " " * indent + "}"
    return json.dumps(value)


ENGINE: Final = OpenClawEngine()


def _pack(prepared: Sequence[Any]) -> fast.Pack | None:
    """The arrays of ``prepared``, when every session is this module's prepared data."""
    if not all(type(p) is PreparedSession for p in prepared):
        return None
    return fast.Pack(prepared)
