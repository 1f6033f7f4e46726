"""What a release package gives the one ``openclaw`` engine, and the pieces releases share.

The engine (:mod:`..engine`) picks the release of a version or a configuration once and hands
the call over; it never asks which release it holds. Each release package (``v2026_6``,
``v2026_9``) exports one :class:`Release` object, so that a new OpenClaw release is a new
sibling package and one line in the engine, and no method grows another branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from loopscope.engines.contract import CounterSeries, ExportFile, GuideExample, SettingSpec
from loopscope.engines.openclaw.shared.config import loop_detection_json5

if TYPE_CHECKING:
    from loopscope.engines.base import RunColumns, SessionReplay
    from loopscope.engines.contract import Engine, Explainer
    from loopscope.engines.table import TableSpec
    from loopscope.model import Session


class ReleaseConfig(Protocol):
    """What the engine reads of any release's configuration."""

    @property
    def version(self) -> str: ...

    @property
    def enabled_defaulted(self) -> bool: ...

    def settings(self) -> dict[str, Any]: ...

    def export_block(self) -> dict[str, Any]: ...


class Release(Protocol):
    """One line of OpenClaw releases whose loop code is the same (one detector, one prepared
    type). Methods taking a configuration or prepared data are only given this release's."""

    versions: tuple[str, ...]
    """The OpenClaw versions this release object replays, oldest first."""
    settings: tuple[SettingSpec, ...]
    config_type: type
    """Its configurations are instances of this type (how a configuration finds its release)."""
    prepare_key: str
    """Versions sharing prepared data share this key."""
    retired_keys: tuple[str, ...]
    """Setting keys of earlier releases accepted here and ignored (a note names them)."""
    document_keys: tuple[str, ...]
    """Top-level keys that mark a bare document as this release's settings."""
    enabled_unset_banner: str
    explainer: Explainer

    def default_config(self, version: str) -> Any: ...

    def build_config(self, values: Mapping[str, Any], version: str,
                     retired: Sequence[str] = ()) -> tuple[Any, tuple[str, ...]]: ...

    def resolve(self, file_settings: Mapping[str, Any] | None,
                overrides: Sequence[tuple[str, str]], agent: str | None,
                version: str) -> tuple[Any, Sequence[str]]: ...

    def unreachable_notes(self, config: Any) -> tuple[str, ...]: ...

    def document_extras(self, config: Any) -> dict[str, Any]: ...

    def exports(self, config: Any) -> tuple[ExportFile, ...]: ...

    def owns(self, prepared: Any) -> bool: ...

    def reads(self, data: Any) -> bool: ...

    def prepare(self, session: Session) -> Any: ...

    def run(self, prepared: Any, config: Any) -> SessionReplay: ...

    def replay(self, session: Session, config: Any) -> SessionReplay: ...

    def run_many(self, prepared: Sequence[Any], config: Any) -> RunColumns | None: ...

    def table_spec(self, engine: Engine[Any, Any], version: str) -> TableSpec | None: ...

    def encode(self, prepared: Any) -> dict[str, Any]: ...

    def decode(self, data: Any) -> Any: ...

    def counters(self, prepared: Any, replay: SessionReplay, config: Any
                 ) -> tuple[CounterSeries, ...]: ...

    def guide_examples(self) -> tuple[GuideExample, ...]: ...


def unreachable_notes(history_size: int, levels: Sequence[tuple[str, int]]) -> tuple[str, ...]:
    """Levels above the history window can never be reached: counts never exceed the calls
    remembered. ``levels`` are ``(name, value)`` in the release's own words."""
    over = [(name, value) for name, value in levels if value > history_size + 1]
    if not over:
        return ()
    return ("Counts never exceed the calls remembered (" + str(history_size) + "), so "
            + ", ".join(f"the {n} level ({v})" for n, v in over) + " can never be reached.",)


def counter_series(no_progress: Sequence[int], recent: Sequence[int],
                   limits: Sequence[tuple[str, int]], n: int) -> tuple[CounterSeries, ...]:
    """Before each call: how many identical results in a row the same call got (what
    blocking counts) and how often the same call appears in the window (what warning
    counts), then one flat line per level in ``limits`` (empty when detection is off)."""
    series = [
        CounterSeries("same result in a row (before this call)", tuple(no_progress),
                      hover="identical results in a row"),
        CounterSeries("same call in the window", tuple(recent),
                      hover="same call earlier in the window"),
    ]
    for label, value in limits:
        series.append(CounterSeries(f"{label} {value}", (value,) * n, role="limit", hover=label))
    return tuple(series)


def json5_export(config: ReleaseConfig, caption: str) -> ExportFile:
    """The ``tools.loopDetection`` block of ``config`` as a JSON5 file to paste into
    ``openclaw.json``; every release exports the same file, with its own caption."""
    return ExportFile(
        f"OpenClaw {config.version} (tools.loopDetection)", "openclaw-loopDetection.json5",
        "application/json5", loop_detection_json5(config.export_block(), config.version),
        caption)
