"""OpenClaw 2026.9.6 as one release of the ``openclaw`` engine.

Its only loop setting is ``enabled``; the fixed values are what-ifs, never exported, and the
retired keys of the configurable releases are accepted and ignored. A corpus runs session by
session (:mod:`.columns`), and its prepared data carries a release mark so that it is never
read as another release's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from loopscope.engines.base import RunColumns, SessionReplay
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
from loopscope.engines.openclaw.v2026_9 import columns, fast
from loopscope.engines.openclaw.v2026_9.config import (
    ENABLED_UNSET_BANNER_2026_9,
    LEGACY_SET_KEYS,
    SETTINGS_2026_9,
    VERSIONS,
    WHAT_IF_NAMES,
    OpenClaw9Config,
    build_config_2026_9,
    make_config,
)
from loopscope.engines.openclaw.v2026_9.explain import EXPLAINER_2026_9, guide_examples_2026_9
from loopscope.engines.openclaw.v2026_9.reference import replay_session_2026_9
from loopscope.model import Session

if TYPE_CHECKING:
    from loopscope.engines.contract import Engine
    from loopscope.engines.table import TableSpec

EXPORT_CAPTION: Final = (
    "OpenClaw 2026.9 has a single loop setting, enabled; its thresholds are fixed, so no what-if "
    "is exported. enabled is written explicitly: OpenClaw's own default is false, loopscope "
    "replays with true. Paste it into openclaw.json.")


class Release2026_9:
    """The fixed-threshold detector with batch admission and one-shot recovery."""

    versions: tuple[str, ...] = VERSIONS
    settings: tuple[SettingSpec, ...] = SETTINGS_2026_9
    config_type: type = OpenClaw9Config
    prepare_key: str = fast.PREPARE_KEY
    retired_keys: tuple[str, ...] = LEGACY_SET_KEYS
    document_keys: tuple[str, ...] = WHAT_IF_NAMES
    enabled_unset_banner: str = ENABLED_UNSET_BANNER_2026_9
    explainer: Explainer = EXPLAINER_2026_9

    # ------------------------------------------------------------------ configs

    def default_config(self, version: str) -> OpenClaw9Config:
        return make_config(True, enabled_defaulted=True)

    def build_config(self, values: Mapping[str, Any], version: str,
                     retired: Sequence[str] = ()) -> tuple[OpenClaw9Config, tuple[str, ...]]:
        """``enabled`` and the what-ifs; ``retired`` keys are named in a note and ignored."""
        config = make_config(values["enabled"],
                             {k: v for k, v in values.items() if k in WHAT_IF_NAMES}, retired)
        return config, config.notes

    def resolve(self, file_settings: Mapping[str, Any] | None,
                overrides: Sequence[tuple[str, str]], agent: str | None,
                version: str) -> tuple[OpenClaw9Config, Sequence[str]]:
        return build_config_2026_9(file_settings, overrides, agent)

    def unreachable_notes(self, config: OpenClaw9Config) -> tuple[str, ...]:
        limits = config.limits
        return unreachable_notes(limits.history_size, (
            ("warning", limits.warning), ("stop", limits.critical),
            ("hard stop", limits.breaker)))

    def document_extras(self, config: OpenClaw9Config) -> dict[str, Any]:
        """The what-ifs set to something else than OpenClaw's value: they sit beside ``tools``
        (they are not OpenClaw settings), so that the document reads back the same."""
        values = config.settings()
        return {name: values[name] for name in config.hypothetical}

    def exports(self, config: OpenClaw9Config) -> tuple[ExportFile, ...]:
        caption = EXPORT_CAPTION
        if config.hypothetical:
            caption += (" This configuration explores what-ifs (" +
                        ", ".join(config.hypothetical) + "): OpenClaw will run with its "
                        "fixed values.")
        return (json5_export(config, caption),)

    # ------------------------------------------------------------------ replay

    def owns(self, prepared: Any) -> bool:
        return type(prepared) is fast.Prepared9

    def reads(self, data: Any) -> bool:
        """This release's prepared data is marked (:data:`.fast.RELEASE_MARK`)."""
        return type(data) is dict and "release" in data

    def prepare(self, session: Session) -> fast.Prepared9:
        return fast.prepare(session)

    def run(self, prepared: fast.Prepared9, config: OpenClaw9Config) -> SessionReplay:
        return fast.run(prepared, config)

    def replay(self, session: Session, config: OpenClaw9Config) -> SessionReplay:
        return replay_session_2026_9(session, config)

    def run_many(self, prepared: Sequence[Any], config: OpenClaw9Config) -> RunColumns | None:
        """None: 2026.9.6 runs session by session (:mod:`.columns`)."""
        return None

    def table_spec(self, engine: Engine[Any, Any], version: str) -> TableSpec:
        return columns.table_spec(engine, version)

    def encode(self, prepared: fast.Prepared9) -> dict[str, Any]:
        return fast.encode(prepared)

    def decode(self, data: Any) -> fast.Prepared9:
        return fast.decode(data)

    def counters(self, prepared: fast.Prepared9, replay: SessionReplay,
                 config: OpenClaw9Config) -> tuple[CounterSeries, ...]:
        n = len(replay.steps)
        limits = config.limits
        no_progress, recent = fast.step_counts(prepared, limits.history_size, n)
        levels = ((("warn at", limits.warning), ("stop at", limits.critical),
                   ("hard stop at", limits.breaker)) if config.detection_on else ())
        return counter_series(no_progress, recent, levels, n)

    def guide_examples(self) -> tuple[GuideExample, ...]:
        return guide_examples_2026_9()


RELEASE: Final = Release2026_9()
