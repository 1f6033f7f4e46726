"""OpenClaw 2026.9.6 has no column table: a corpus is run session by session.

Its batch admission and one-shot recovery make each call's verdict depend on the verdicts
before it in the same run, so there is no vectorised corpus pass to feed; a corpus of 2026.9.6
prepared data is written as one JSON text per session (:func:`loopscope.engines.table.
json_table_spec`, the codec of :mod:`.fast`), and :meth:`run_many` runs each session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopscope.engines.contract import Engine
    from loopscope.engines.table import TableSpec


def table_spec(engine: Engine[Any, Any], version: str) -> TableSpec:
    """One JSON text per session, encoded and decoded by ``engine``'s codec (:mod:`.fast`)."""
    from loopscope.engines.table import json_table_spec

    return json_table_spec(engine, version)
