"""Export documents: the loopscope config (via :mod:`loopscope.config_io`; each guard's own
config format comes from its engine's ``exports``) and verdict reports.

Pure functions returning text, so tests can parse what a download would contain.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from loopscope import config_io, csvsafe
from loopscope.cache import SessionHead
from loopscope.engines import get_engine
from loopscope.engines.base import SessionReplay

CSV_COLUMNS = (
    "session", "source", "format", "engine", "engine_version", "label", "calls", "turns",
    "steps", "refused", "first_refusal_turn", "first_refusal_call", "first_refusal_detector",
    "refusals", "warnings", "settings",
)
"""The verdict CSV. Turns and calls count from 1, as the dashboard shows them (the JSONL keeps
``loopscope replay --json``'s 0-based positions); ``source`` is relative to the loaded folder
(an upload by its file name), never a path on the server; ``settings`` is the guard's
configuration that produced the row, as JSON."""


def loopscope_config(configs: Mapping[str, Any]) -> str:
    """The loopscope config document (every engine given) as JSON text."""
    return config_io.loopscope_config_json(configs)


def _settings(engine: str, config: Any) -> dict[str, Any]:
    return get_engine(engine).settings_document(config)


def verdict_report_jsonl(
    replays: Mapping[str, Sequence[SessionReplay]],
    configs: Mapping[str, Any] | None = None,
    names: Mapping[str, str] | None = None,
) -> str:
    """The ``loopscope replay --json`` lines of every engine, engine by engine, each with the
    ``settings`` that produced it; ``names`` maps a session's source to what to write instead
    (relative to the loaded folder), so no server path leaves the server."""
    out = io.StringIO()
    for engine in replays:
        settings = _settings(engine, configs[engine]) if configs and engine in configs else None
        for r in replays[engine]:
            line = r.to_json()
            if names is not None:
                line["source"] = names.get(r.source, r.source)
            if settings is not None:
                line["settings"] = settings
            out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
            out.write("\n")
    return out.getvalue()


def verdict_report_csv(
    sessions: Sequence[SessionHead],
    replays: Mapping[str, Sequence[SessionReplay]],
    labels: Mapping[str, str | None] | None = None,
    configs: Mapping[str, Any] | None = None,
    names: Mapping[str, str] | None = None,
) -> str:
    """One row per session and engine: the first refusal (from 1), the counts, and the
    settings that produced them. ``sessions``: each session's head (identity and size: a large
    corpus's sessions are not kept in memory), aligned with each engine's replays."""
    out = io.StringIO()
    writer = csvsafe.writer(out, lineterminator="\n")  # no cell a spreadsheet would run
    writer.writerow(CSV_COLUMNS)
    for engine, reps in replays.items():
        config = configs.get(engine) if configs else None
        version = get_engine(engine).version_of(config) if config is not None else ""
        settings = (json.dumps(_settings(engine, config), ensure_ascii=False,
                               separators=(",", ":"), sort_keys=True)
                    if config is not None else "")
        for s, r in zip(sessions, reps, strict=True):
            fr = r.first_refusal
            source = (names or {}).get(r.source, r.source)
            writer.writerow([
                r.session, source, r.format, engine, version,
                (labels or {}).get(s.source) or "", s.calls, s.turns, len(r.steps),
                "yes" if fr else "no",
                "" if fr is None else fr.turn + 1,
                "" if fr is None or fr.call is None else fr.call + 1,
                "" if fr is None else fr.detector,
                r.refusal_count,
                r.warning_count,
                settings,
            ])
    return out.getvalue()
