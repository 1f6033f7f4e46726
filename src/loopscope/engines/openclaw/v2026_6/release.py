"""OpenClaw 2026.6.11 and 2026.7.35 as one release of the ``openclaw`` engine.

Both versions ship the same configurable loop code, so they share one configuration type, one
prepared type and one column table; the version only names the release in exports and notes.
The column table (:mod:`.columns`, numpy) is imported when a corpus is run or written, never
for a single session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from loopscope.engines.base import RunColumns, SessionReplay, columns_of, packed
from loopscope.engines.contract import (
    CounterSeries,
    Explainer,
    ExportFile,
    GuideExample,
    SettingSpec,
)
from loopscope.engines.openclaw.shared.release import (
    counter_series,
    json5_export,
    unreachable_notes,
)
from loopscope.engines.openclaw.shared.session import ENGINE_NAME
from loopscope.engines.openclaw.v2026_6 import fast
from loopscope.engines.openclaw.v2026_6.config import (
    BLOCK_FIELDS,
    CONFIGURABLE_VERSIONS,
    ENABLED_UNSET_BANNER,
    SETTINGS,
    OpenClawConfig,
    _assign,
    build_config,
    ordering_messages,
)
from loopscope.engines.openclaw.v2026_6.explain import EXPLAINER, guide_examples
from loopscope.engines.openclaw.v2026_6.reference import replay_session
from loopscope.model import Session

if TYPE_CHECKING:
    from loopscope.engines.contract import Engine
    from loopscope.engines.table import TableSpec

EXPORT_CAPTION: Final = (
    "enabled is written explicitly: OpenClaw's own default is false, loopscope replays with "
    "true. Paste it into openclaw.json.")


class Release2026_6:
    """The configurable detector: every ``tools.loopDetection`` setting is OpenClaw's."""

    versions: tuple[str, ...] = CONFIGURABLE_VERSIONS
    settings: tuple[SettingSpec, ...] = SETTINGS
    config_type: type = OpenClawConfig
    prepare_key: str = fast.PREPARE_KEY
    retired_keys: tuple[str, ...] = ()
    document_keys: tuple[str, ...] = BLOCK_FIELDS
    enabled_unset_banner: str = ENABLED_UNSET_BANNER
    explainer: Explainer = EXPLAINER

    # ------------------------------------------------------------------ configs

    def default_config(self, version: str) -> OpenClawConfig:
        return OpenClawConfig.from_block({}, version)

    def build_config(self, values: Mapping[str, Any], version: str,
                     retired: Sequence[str] = ()) -> tuple[OpenClawConfig, tuple[str, ...]]:
        """A block from the setting values; OpenClaw's ordering checks become notes (it would
        refuse to load the block, loopscope replays it as resolved)."""
        del retired  # no earlier release's keys are retired here
        block: dict[str, Any] = {}
        for key, value in values.items():
            _assign(block, key, value)
        config = OpenClawConfig.from_block(block, version)
        notes = [f"{m} OpenClaw would refuse to load this config" for m in ordering_messages(block)]
        notes.extend(config.notes)
        return config, tuple(notes)

    def resolve(self, file_settings: Mapping[str, Any] | None,
                overrides: Sequence[tuple[str, str]], agent: str | None,
                version: str) -> tuple[OpenClawConfig, Sequence[str]]:
        return build_config(file_settings, overrides, agent, version)

    def unreachable_notes(self, config: OpenClawConfig) -> tuple[str, ...]:
        r = config.resolved
        return unreachable_notes(r.history_size, (
            ("warning", r.warning_threshold), ("block", r.critical_threshold),
            ("hard stop", r.global_circuit_breaker_threshold)))

    def document_extras(self, config: OpenClawConfig) -> dict[str, Any]:
        return {}

    def exports(self, config: OpenClawConfig) -> tuple[ExportFile, ...]:
        return (json5_export(config, EXPORT_CAPTION),)

    # ------------------------------------------------------------------ replay

    def owns(self, prepared: Any) -> bool:
        return type(prepared) is fast.PreparedSession

    def reads(self, data: Any) -> bool:
        """This release's prepared data carries no release mark (it predates them)."""
        return not (type(data) is dict and "release" in data)

    def prepare(self, session: Session) -> fast.PreparedSession:
        return fast.prepare(session)

    def run(self, prepared: fast.PreparedSession, config: OpenClawConfig) -> SessionReplay:
        return fast.run(prepared, config)

    def replay(self, session: Session, config: OpenClawConfig) -> SessionReplay:
        return replay_session(session, config)

    def run_many(self, prepared: Sequence[Any], config: OpenClawConfig) -> RunColumns | None:
        """A vectorised pass over the corpus's calls (:func:`.columns.run_columns`), or None
        for prepared data of another release."""
        from loopscope.engines.openclaw.v2026_6 import columns

        pack = packed(prepared, (ENGINE_NAME, "pack"), columns.pack)
        if pack is None:
            return None
        return columns_of(columns.run_columns(pack, config),
                          lambda i: fast.run(prepared[i], config), fast.DETECTORS)

    def table_spec(self, engine: Engine[Any, Any], version: str) -> TableSpec:
        from loopscope.engines.openclaw.v2026_6 import columns

        del engine, version  # one table for both versions
        return columns.table_spec()

    def encode(self, prepared: fast.PreparedSession) -> dict[str, Any]:
        return fast.encode(prepared)

    def decode(self, data: Any) -> fast.PreparedSession:
        return fast.decode(data)

    def counters(self, prepared: fast.PreparedSession, replay: SessionReplay,
                 config: OpenClawConfig) -> tuple[CounterSeries, ...]:
        n = len(replay.steps)
        r = config.resolved
        counters = prepared.counters(r.history_size)
        limits = ((("warn at", r.warning_threshold), ("block at", r.critical_threshold),
                   ("hard stop at", r.global_circuit_breaker_threshold))
                  if r.detection_on else ())
        return counter_series(counters.no_progress[:n], counters.recent[:n], limits, n)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        return guide_examples()


RELEASE: Final = Release2026_6()

