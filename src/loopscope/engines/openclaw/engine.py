"""The OpenClaw engine object behind :class:`loopscope.engines.contract.Engine`.

One engine, three OpenClaw releases: the configurable detector of 2026.6.11 (and 2026.7.35,
which ships the same loop code), and the fixed-threshold detector of 2026.9.6 with its batch
admission and one-shot recovery (:mod:`.v2026_9`). Every method dispatches on the version: a
configuration knows its release (:class:`OpenClawConfig` / :class:`OpenClaw9Config`), and the
two families keep separate prepared data.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

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
from loopscope.engines.openclaw.v2026_9 import fast as fast_2026_9
from loopscope.engines.openclaw.v2026_9.config import (
    ENABLED_UNSET_BANNER_2026_9,
    LEGACY_SET_KEYS,
    SETTINGS_2026_9,
    WHAT_IF_NAMES,
    OpenClaw9Config,
    build_config_2026_9,
    make_config,
)
from loopscope.engines.openclaw.v2026_9.config import (
    VERSIONS as FIXED_VERSIONS,
)
from loopscope.engines.openclaw.v2026_9.explain import EXPLAINER_2026_9
from loopscope.engines.openclaw.v2026_9.reference import replay_session_2026_9
from loopscope.model import Session

if TYPE_CHECKING:
    from loopscope.engines.table import TableSpec

__all__ = ["ENGINE", "OpenClawEngine"]

ENABLED_DEFAULTED_NOTE: Final = (
    "OpenClaw's own default is enabled: false; loopscope replays with enabled: true (use "
    "--set enabled=false to replay OpenClaw as shipped).")
"""Said whenever no layer set ``enabled`` and loopscope's ``true`` applied."""

VERSIONS: Final = (*CONFIGURABLE_VERSIONS, *FIXED_VERSIONS)
"""Every release the engine replays, oldest first."""

AnyConfig = OpenClawConfig | OpenClaw9Config
AnyPrepared = PreparedSession | fast_2026_9.Prepared9

VERSION_KEY: Final = "version"
"""Where a loopscope config document records the OpenClaw release (``{"openclaw": {"version":
"2026.7.35", "tools": {...}}}``); ``--openclaw-version`` wins over it."""


class _VersionExplainer:
    """The explainer of the configuration's release."""

    def explain_step(self, step: Any, replay: SessionReplay, config: Any) -> Any:
        return _explainer_of(config).explain_step(step, replay, config)

    def limitations(self, session: Any, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Any, ...]:
        return _explainer_of(config).limitations(session, replay, config, warnings)

    def extra_changes(self, step: Any, replay: SessionReplay, config: Any,
                      goal: Any) -> Sequence[Mapping[str, Any]]:
        return _explainer_of(config).extra_changes(step, replay, config, goal)


def _explainer_of(config: Any) -> Any:
    return EXPLAINER_2026_9 if isinstance(config, OpenClaw9Config) else EXPLAINER


class OpenClawEngine(BaseEngine[AnyConfig, AnyPrepared]):
    """OpenClaw's ``tools.loopDetection`` in shadow mode: one step per tool call."""

    name = "openclaw"
    title = "OpenClaw"
    summary = ("OpenClaw checks each tool call against a rolling history of recent calls: it "
               "warns (in its log; from 2026.9 the agent reads the warning too) and then blocks "
               "a call that keeps repeating with the same result, a status poll that stops "
               "changing, a back-and-forth between two calls, or retries of a missing tool.")
    versions = VERSIONS
    default_version = DEFAULT_VERSION
    notes = (ENABLED_DEFAULT_NOTE,)
    step_unit: Literal["call", "turn"] = "call"
    schema: tuple[SettingSpec, ...] = SETTINGS
    explainer = _VersionExplainer()
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
        DetectorInfo("argument_churn", "cycling through a few arguments without progress",
                     "A tool keeps failing (or writing nothing new) while the agent cycles "
                     "through a few argument variants, all with the same result. OpenClaw "
                     "2026.9 warns the agent; the call still runs.", ("warn",),
                     versions=FIXED_VERSIONS),
        DetectorInfo("tool_loop_recovery_terminated", "a second loop in the same run",
                     "OpenClaw 2026.9 lets the agent try once more after its first critical "
                     "loop in a run. A second critical loop in the same run ends the run.",
                     ("refuse",), versions=FIXED_VERSIONS),
        DetectorInfo("tool_loop_batch_skipped", "not run because of another call",
                     "OpenClaw 2026.9 checks all the calls of one message together: when one "
                     "of them is stopped for a loop, none of the others run either.",
                     ("refuse",), versions=FIXED_VERSIONS),
    )

    # ------------------------------------------------------------------ configs

    def settings_for(self, version: str | None = None) -> tuple[SettingSpec, ...]:
        """2026.9.6: ``enabled`` and the fixed values as what-ifs; earlier: every setting."""
        return SETTINGS_2026_9 if self.is_fixed(version) else SETTINGS

    def is_fixed(self, version: str | None) -> bool:
        """Whether ``version`` has the fixed-threshold detector (2026.9.6)."""
        return self.check_version(version) in FIXED_VERSIONS

    def default_config(self, version: str | None = None) -> AnyConfig:
        """OpenClaw's defaults with ``enabled: true`` (loopscope's default)."""
        if self.is_fixed(version):
            return make_config(True, enabled_defaulted=True)
        return OpenClawConfig.from_block({}, self.check_version(version))

    def build_config(self, values: Mapping[str, Any], version: str
                     ) -> tuple[AnyConfig, tuple[str, ...]]:
        if self.is_fixed(version):
            fixed = make_config(values["enabled"],
                                {k: v for k, v in values.items() if k in WHAT_IF_NAMES})
            return fixed, fixed.notes
        block: dict[str, Any] = {}
        for key, value in values.items():
            _assign(block, key, value)
        config = OpenClawConfig.from_block(block, version)
        notes = [f"{m} OpenClaw would refuse to load this config" for m in ordering_messages(block)]
        notes.extend(config.notes)
        return config, tuple(notes)

    def config(self, values: Mapping[str, Any], version: str | None = None
               ) -> ConfigResolution[AnyConfig]:
        """A configuration from setting values. At 2026.9.6 the retired keys of the
        configurable releases are accepted too, and ignored (a warning names them)."""
        if self.is_fixed(version):
            merged = self.default_values(version)
            retired: list[str] = []
            for key, value in values.items():
                if key in LEGACY_SET_KEYS:
                    retired.append(key.partition(".")[0])
                else:
                    merged[key] = self.spec(key, version).check(value)
            fixed = make_config(merged["enabled"],
                                {k: v for k, v in merged.items() if k in WHAT_IF_NAMES}, retired)
            return ConfigResolution(fixed, fixed.notes, unreachable_notes(fixed))
        res = super().config(values, version)
        return ConfigResolution(res.config, res.warnings, unreachable_notes(res.config))

    def config_values(self, config: AnyConfig) -> dict[str, Any]:
        return config.settings()

    def version_of(self, config: AnyConfig) -> str:
        return config.version

    def resolve_config(
        self,
        file_settings: Mapping[str, Any] | None,
        overrides: Sequence[tuple[str, str]],
        agent: str | None = None,
        version: str | None = None,
    ) -> ConfigResolution[AnyConfig]:
        if isinstance(file_settings, Mapping) and VERSION_KEY in file_settings:
            file_version = file_settings[VERSION_KEY]
            if version is None:
                if not isinstance(file_version, str):
                    raise ConfigError(f"{VERSION_KEY}: expected a version string, got "
                                      f"{file_version!r}")
                version = file_version
            file_settings = {k: v for k, v in file_settings.items() if k != VERSION_KEY}
        version = self.check_version(version)
        config: AnyConfig
        if self.is_fixed(version):
            config, warnings = build_config_2026_9(file_settings, overrides, agent)
            banner = ENABLED_UNSET_BANNER_2026_9
        else:
            config, warnings = build_config(file_settings, overrides, agent, version)
            banner = ENABLED_UNSET_BANNER
        notes: tuple[str, ...] = unreachable_notes(config)
        if config.enabled_defaulted:
            notes = (ENABLED_DEFAULTED_NOTE, *notes)
            if file_settings is not None:
                notes = (banner, *notes)
        return ConfigResolution(config, tuple(warnings), notes)

    def settings_from_document(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """A loopscope document's ``openclaw`` part, an OpenClaw config (``tools`` /
        ``agents``), or a bare ``loopDetection`` block."""
        part = document.get(self.name)
        if isinstance(part, Mapping):
            return part
        if any(k in document for k in ("tools", "agents", "loopDetection", *BLOCK_FIELDS,
                                       *WHAT_IF_NAMES)):
            return document
        return None

    def settings_document(self, config: AnyConfig) -> dict[str, Any]:
        """The ``openclaw`` part of a loopscope config document. At 2026.9.6 the what-ifs
        set to something else than OpenClaw's value sit beside ``tools`` (they are not
        OpenClaw settings), so that the document reads back to the same configuration."""
        doc: dict[str, Any] = {VERSION_KEY: config.version,
                               "tools": {"loopDetection": config.export_block()}}
        if isinstance(config, OpenClaw9Config):
            values = config.settings()
            doc.update({name: values[name] for name in config.hypothetical})
        return doc

    def exports(self, config: AnyConfig) -> tuple[ExportFile, ...]:
        if isinstance(config, OpenClaw9Config):
            caption = ("OpenClaw 2026.9 has a single loop setting, enabled; its thresholds are "
                       "fixed, so no what-if is exported. enabled is written explicitly: "
                       "OpenClaw's own default is false, loopscope replays with true. Paste it "
                       "into openclaw.json.")
            if config.hypothetical:
                caption += (" This configuration explores what-ifs (" +
                            ", ".join(config.hypothetical) + "): OpenClaw will run with its "
                            "fixed values.")
            return (ExportFile(
                f"OpenClaw {config.version} (tools.loopDetection)",
                "openclaw-loopDetection.json5", "application/json5",
                loop_detection_json5(config.export_block(), config.version), caption),)
        return (ExportFile(
            f"OpenClaw {config.version} (tools.loopDetection)", "openclaw-loopDetection.json5",
            "application/json5", loop_detection_json5(config.export_block(), config.version),
            "enabled is written explicitly: OpenClaw's own default is false, loopscope replays "
            "with true. Paste it into openclaw.json."),)

    # ------------------------------------------------------------------ replay

    def prepare_key(self, version: str | None = None) -> str:
        if self.is_fixed(version):
            return "fixed-2026.9"  # normalised names and 2026.9's outcome hashing
        return "configurable"  # every configurable release shares the same prepared data

    def prepare(self, session: Session, version: str | None = None) -> AnyPrepared:
        fixed = self.is_fixed(version)
        with CollectorPaused():  # (the prepared data holds no reference cycles)
            return fast_2026_9.prepare(session) if fixed else prepare(session)

    def run(self, prepared: AnyPrepared, config: AnyConfig) -> SessionReplay:
        if isinstance(config, OpenClaw9Config):
            if not isinstance(prepared, fast_2026_9.Prepared9):
                raise TypeError(f"a session prepared for {self.prepare_key(None)} cannot be run "
                                f"with an OpenClaw {config.version} configuration; prepare it "
                                f"with version {config.version!r}")
            return fast_2026_9.run(prepared, config)
        if not isinstance(prepared, PreparedSession):
            raise TypeError(f"a session prepared for OpenClaw 2026.9 cannot be run with an "
                            f"OpenClaw {config.version} configuration; prepare it with version "
                            f"{config.version!r}")
        return run(prepared, config)

    def replay(self, session: Session, config: AnyConfig) -> SessionReplay:
        if isinstance(config, OpenClaw9Config):
            return replay_session_2026_9(session, config)
        return replay_session(session, config)

    def run_many(self, prepared: Sequence[Any], config: AnyConfig) -> RunColumns:
        """A vectorised pass over the corpus's calls (:func:`fast.run_columns`); 2026.9 runs
        session by session."""
        if isinstance(config, OpenClaw9Config):
            return super().run_many(prepared, config)
        from loopscope.engines.openclaw import columns

        pack = packed(prepared, (self.name, "pack"), _pack)
        if pack is None:  # another release's prepared data
            return super().run_many(prepared, config)
        return columns_of(columns.run_columns(pack, config),
                          lambda i: run(prepared[i], config), fast.DETECTORS)

    def caches_prepared(self, version: str | None = None) -> bool:
        return True

    def table_spec(self, version: str | None = None) -> TableSpec | None:
        if self.is_fixed(version):
            # 2026.9 runs session by session: one JSON text per session
            return super().table_spec(version)
        from loopscope.engines.openclaw import columns
        from loopscope.engines.table import TableSpec

        return TableSpec(self.name, self.prepare_key(version), columns.SCHEMA,
                         columns.table_columns, columns.decode_row, columns.check)

    def encode_prepared(self, prepared: Any) -> dict[str, Any] | None:
        if type(prepared) is PreparedSession:
            return fast.encode(prepared)
        if type(prepared) is fast_2026_9.Prepared9:
            return fast_2026_9.encode(prepared)
        return None

    def decode_prepared(self, data: Any) -> AnyPrepared:
        """Either release line's data: 2026.9's is marked (:data:`fast_2026_9.RELEASE_MARK`)."""
        if type(data) is dict and "release" in data:
            return fast_2026_9.decode(data)
        return fast.decode(data)

    def counters(self, prepared: AnyPrepared, replay: SessionReplay, config: AnyConfig
                 ) -> tuple[CounterSeries, ...]:
        """Before each call: how many identical results in a row the same call got (what
        blocking counts) and how often the same call appears in the window (what warning
        counts), against the three levels."""
        n = len(replay.steps)
        if isinstance(config, OpenClaw9Config):
            assert isinstance(prepared, fast_2026_9.Prepared9)
            limits = config.limits
            no_progress, recent = fast_2026_9.step_counts(prepared, limits.history_size, n)
            series = [
                CounterSeries("same result in a row (before this call)", tuple(no_progress),
                              hover="identical results in a row"),
                CounterSeries("same call in the window", tuple(recent),
                              hover="same call earlier in the window"),
            ]
            if config.detection_on:
                for label, value in (("warn at", limits.warning), ("stop at", limits.critical),
                                     ("hard stop at", limits.breaker)):
                    series.append(CounterSeries(f"{label} {value}", (value,) * n, role="limit",
                                                hover=label))
            return tuple(series)
        assert isinstance(prepared, PreparedSession)
        r = config.resolved
        counters = prepared.counters(r.history_size)
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
        from loopscope.engines.openclaw.v2026_9.explain import guide_examples_2026_9

        return (*guide_examples(), *guide_examples_2026_9())


def unreachable_notes(config: AnyConfig) -> tuple[str, ...]:
    """Levels above the history window can never be reached: counts never exceed the calls
    remembered."""
    if isinstance(config, OpenClaw9Config):
        limits = config.limits
        over = [(name, value) for name, value in (
            ("warning", limits.warning), ("stop", limits.critical),
            ("hard stop", limits.breaker)) if value > limits.history_size + 1]
        if not over:
            return ()
        return ("Counts never exceed the calls remembered (" + str(limits.history_size) +
                "), so " + ", ".join(f"the {n} level ({v})" for n, v in over) +
                " can never be reached.",)
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


def _pack(prepared: Sequence[Any]) -> Any:
    """The arrays of ``prepared`` (a table of this engine's configurable releases, or this
    module's prepared objects), or None."""
    from loopscope.engines.openclaw import columns
    from loopscope.engines.table import PreparedTable

    if isinstance(prepared, PreparedTable):
        ok = prepared.engine == ENGINE.name and prepared.key == ENGINE.prepare_key(None)
        return columns.Pack(prepared) if ok else None
    if not all(type(p) is PreparedSession for p in prepared):
        return None
    spec = ENGINE.table_spec()
    assert spec is not None
    return columns.Pack(spec.table(prepared))
