"""The one ``openclaw`` engine, serving every modelled OpenClaw release.

OpenClaw's loop code changed shape between releases: 2026.6.11 (and 2026.7.35, which ships the
same loop code) has a configurable detector; 2026.9.6 fixes the thresholds and adds batch
admission and one-shot recovery. Each line lives in its own sibling package (:mod:`.v2026_6`,
:mod:`.v2026_9`) behind one :class:`~.shared.release.Release` object; the engine picks the
release of a version (or of a configuration, by its type) once and hands the call over, so the
registry, the CLI and the dashboard see one engine with a version selector, and no method
branches on the version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from loopscope.bulk import CollectorPaused
from loopscope.engines.base import ConfigError, ConfigResolution, RunColumns, SessionReplay
from loopscope.engines.contract import BaseEngine, DetectorInfo
from loopscope.engines.openclaw.shared.release import Release
from loopscope.engines.openclaw.v2026_6.config import (
    DEFAULT_VERSION,
    ENABLED_DEFAULT_NOTE,
    OpenClawConfig,
)
from loopscope.engines.openclaw.v2026_6.fast import PreparedSession
from loopscope.engines.openclaw.v2026_6.release import RELEASE as V2026_6
from loopscope.engines.openclaw.v2026_9.config import OpenClaw9Config
from loopscope.engines.openclaw.v2026_9.fast import Prepared9
from loopscope.engines.openclaw.v2026_9.release import RELEASE as V2026_9
from loopscope.model import Session

if TYPE_CHECKING:
    from loopscope.engines.contract import (
        CounterSeries,
        Explainer,
        ExportFile,
        FileSettings,
        GuideExample,
        Limitation,
        Overrides,
        SettingSpec,
        StepExplanation,
    )
    from loopscope.engines.table import TableSpec

__all__ = ["ENGINE", "OpenClawEngine"]

RELEASES: Final[tuple[Release, ...]] = (V2026_6, V2026_9)
"""Every release line, oldest first."""
DEFAULT_RELEASE: Final[Release] = V2026_6

ENABLED_DEFAULTED_NOTE: Final = (
    "OpenClaw's own default is enabled: false; loopscope replays with enabled: true (use "
    "--set enabled=false to replay OpenClaw as shipped).")
"""Said whenever no layer set ``enabled`` and loopscope's ``true`` applied."""

VERSIONS: Final = tuple(v for release in RELEASES for v in release.versions)
"""Every release the engine replays, oldest first."""

AnyConfig = OpenClawConfig | OpenClaw9Config
AnyPrepared = PreparedSession | Prepared9

VERSION_KEY: Final = "version"
"""Where a loopscope config document records the OpenClaw release (``{"openclaw": {"version":
"2026.7.35", "tools": {...}}}``); ``--openclaw-version`` wins over it."""

_BY_VERSION: Final = {v: release for release in RELEASES for v in release.versions}


def release_of(config: Any) -> Release:
    """The release a configuration belongs to (by its type); the default one for anything
    else (an explainer may be asked without a configuration). Looked up by the exact type
    first: a replay asks once per session."""
    found = _BY_CONFIG_TYPE.get(type(config))
    if found is not None:
        return found
    for release in RELEASES:
        if isinstance(config, release.config_type):
            return release
    return DEFAULT_RELEASE


_BY_CONFIG_TYPE: Final = {release.config_type: release for release in RELEASES}


class _ReleaseExplainer:
    """The explainer of the configuration's release."""

    def explain_step(self, step: Any, replay: SessionReplay, config: Any) -> StepExplanation:
        return release_of(config).explainer.explain_step(step, replay, config)

    def limitations(self, session: Any, replay: SessionReplay, config: Any,
                    warnings: Sequence[str] = ()) -> tuple[Limitation, ...]:
        return release_of(config).explainer.limitations(session, replay, config, warnings)

    def extra_changes(self, step: Any, replay: SessionReplay, config: Any,
                      goal: Any) -> Sequence[Mapping[str, Any]]:
        return release_of(config).explainer.extra_changes(step, replay, config, goal)


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
    schema: tuple[SettingSpec, ...] = DEFAULT_RELEASE.settings
    explainer: Explainer = _ReleaseExplainer()
    strict_bool = True
    set_keys: tuple[str, ...] = tuple(s.name for s in DEFAULT_RELEASE.settings)
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
                     versions=V2026_9.versions),
        DetectorInfo("tool_loop_recovery_terminated", "a second loop in the same run",
                     "OpenClaw 2026.9 lets the agent try once more after its first critical "
                     "loop in a run. A second critical loop in the same run ends the run.",
                     ("refuse",), versions=V2026_9.versions),
        DetectorInfo("tool_loop_batch_skipped", "not run because of another call",
                     "OpenClaw 2026.9 checks all the calls of one message together: when one "
                     "of them is stopped for a loop, none of the others run either.",
                     ("refuse",), versions=V2026_9.versions),
    )

    def release(self, version: str | None = None) -> Release:
        """The release line that replays ``version`` (the default when None)."""
        return _BY_VERSION[self.check_version(version)]

    # ------------------------------------------------------------------ configs

    def settings_for(self, version: str | None = None) -> tuple[SettingSpec, ...]:
        """2026.9.6: ``enabled`` and the fixed values as what-ifs; earlier: every setting."""
        return self.release(version).settings

    def default_config(self, version: str | None = None) -> AnyConfig:
        """OpenClaw's defaults with ``enabled: true`` (loopscope's default)."""
        version = self.check_version(version)
        return _BY_VERSION[version].default_config(version)

    def build_config(self, values: Mapping[str, Any], version: str
                     ) -> tuple[AnyConfig, tuple[str, ...]]:
        return self.release(version).build_config(values, version)

    def config(self, values: Mapping[str, Any], version: str | None = None
               ) -> ConfigResolution[AnyConfig]:
        """A configuration from setting values. Keys a release retired (2026.9.6: those of
        the configurable releases) are accepted and ignored; a note names them."""
        version = self.check_version(version)
        release = _BY_VERSION[version]
        merged = self.default_values(version)
        retired: list[str] = []
        for key, value in values.items():
            if key in release.retired_keys:
                retired.append(key.partition(".")[0])
            else:
                merged[key] = self.spec(key, version).check(value)
        config, notes = release.build_config(merged, version, retired)
        return ConfigResolution(config, tuple(notes), release.unreachable_notes(config))

    def config_values(self, config: AnyConfig) -> dict[str, Any]:
        return config.settings()

    def version_of(self, config: AnyConfig) -> str:
        return config.version

    def resolve_config(self, file_settings: FileSettings, overrides: Overrides,
                       agent: str | None = None, version: str | None = None
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
        release = _BY_VERSION[version]
        config, warnings = release.resolve(file_settings, overrides, agent, version)
        notes: tuple[str, ...] = release.unreachable_notes(config)
        if config.enabled_defaulted:
            notes = (ENABLED_DEFAULTED_NOTE, *notes)
            if file_settings is not None:
                notes = (release.enabled_unset_banner, *notes)
        return ConfigResolution(config, tuple(warnings), notes)

    def settings_from_document(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """A loopscope document's ``openclaw`` part, an OpenClaw config (``tools`` /
        ``agents``), or a bare ``loopDetection`` block of any release."""
        part = document.get(self.name)
        if isinstance(part, Mapping):
            return part
        keys = ("tools", "agents", "loopDetection",
                *(k for release in RELEASES for k in release.document_keys))
        if any(k in document for k in keys):
            return document
        return None

    def settings_document(self, config: AnyConfig) -> dict[str, Any]:
        """The ``openclaw`` part of a loopscope config document: the version, the block, and
        whatever the release needs beside it to read back the same configuration."""
        doc: dict[str, Any] = {VERSION_KEY: config.version,
                               "tools": {"loopDetection": config.export_block()}}
        doc.update(release_of(config).document_extras(config))
        return doc

    def exports(self, config: AnyConfig) -> tuple[ExportFile, ...]:
        return release_of(config).exports(config)

    # ------------------------------------------------------------------ replay

    def prepare_key(self, version: str | None = None) -> str:
        return self.release(version).prepare_key

    def prepare(self, session: Session, version: str | None = None) -> AnyPrepared:
        release = self.release(version)
        with CollectorPaused():  # (the prepared data holds no reference cycles)
            prepared: AnyPrepared = release.prepare(session)
            return prepared

    def run(self, prepared: AnyPrepared, config: AnyConfig) -> SessionReplay:
        release = release_of(config)
        if not release.owns(prepared):
            raise TypeError(f"a session prepared for another OpenClaw release than "
                            f"{release.prepare_key} cannot be run with an OpenClaw "
                            f"{config.version} configuration; prepare it with version "
                            f"{config.version!r}")
        return release.run(prepared, config)

    def replay(self, session: Session, config: AnyConfig) -> SessionReplay:
        return release_of(config).replay(session, config)

    def run_many(self, prepared: Sequence[Any], config: AnyConfig) -> RunColumns:
        """The release's vectorised pass over the corpus's calls where it has one (and the
        prepared data is its own), else session by session."""
        columns = release_of(config).run_many(prepared, config)
        return super().run_many(prepared, config) if columns is None else columns

    def caches_prepared(self, version: str | None = None) -> bool:
        return True

    def table_spec(self, version: str | None = None) -> TableSpec | None:
        version = self.check_version(version)
        return _BY_VERSION[version].table_spec(self, version)

    def encode_prepared(self, prepared: Any) -> dict[str, Any] | None:
        for release in RELEASES:
            if release.owns(prepared):
                return release.encode(prepared)
        return None

    def decode_prepared(self, data: Any) -> AnyPrepared:
        """Any release's data: each release knows its own (2026.9.6's is marked)."""
        for release in RELEASES:
            if release.reads(data):
                decoded: AnyPrepared = release.decode(data)
                return decoded
        raise AssertionError("every prepared document is some release's")

    def counters(self, prepared: AnyPrepared, replay: SessionReplay, config: AnyConfig
                 ) -> tuple[CounterSeries, ...]:
        """Before each call: how many identical results in a row the same call got (what
        blocking counts) and how often the same call appears in the window (what warning
        counts), against the release's levels."""
        return release_of(config).counters(prepared, replay, config)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        return tuple(example for release in RELEASES for example in release.guide_examples())


ENGINE: Final = OpenClawEngine()
