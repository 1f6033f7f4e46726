"""What the engines' ``columns.py`` share: lists of column values as a schema's arrays
(:func:`schema_arrays`), and the table and re-run of an engine whose corpus columns sit beside
each session's JSON (:class:`JsonColumns`: Gemini CLI, OpenHands, Qwen Code).

Such an engine's corpus table holds each session's JSON (``encode_prepared``, what a drawn row
or an opened session decodes) beside columns of its own (what its vectorised re-run reads).
The columns are laid out for the re-run once per corpus and kept with it (every slider move
re-runs the same corpus; only the configuration changes). :class:`JsonColumns` holds what an
engine's ``columns.py`` names once for both its ``table_spec`` and its ``run_many``: the
schema, the writer and check of its columns, its prepared type and its layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from loopscope.engines.base import RunColumns, SessionReplay, columns_of
from loopscope.engines.table import PreparedTable, Schema, TableSpec, json_table_spec, laid_out

if TYPE_CHECKING:
    from loopscope.engines.contract import BaseEngine

__all__ = ["JsonColumns", "ReplayOf", "schema_arrays"]

LayoutT = TypeVar("LayoutT")

ReplayOf = Callable[[int], SessionReplay]
"""Session ``i`` of the corpus run one by one under the configuration being run."""


def schema_arrays(schema: Schema, values: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """Each list of ``values`` as an array of its column's dtype in ``schema``: a writer states
    no dtype of its own, so what it writes always has the dtype the table is checked against
    when it is opened again."""
    return {name: np.array(column, dtype=schema[name].dtype) for name, column in values.items()}


@dataclass(frozen=True, slots=True)
class JsonColumns(Generic[LayoutT]):
    """An engine's corpus columns beside each session's JSON (see the module docstring)."""

    schema: Schema
    """The engine's own columns (their names differ from the JSON table's)."""
    encode: Callable[[Sequence[Any]], Mapping[str, Any]]
    """Prepared sessions → the columns of :attr:`schema`, in order."""
    check: Callable[[PreparedTable], None]
    """What the re-run relies on beyond the schema (raises
    :class:`~loopscope.engines.table.TableError`)."""
    prepared_type: type
    """The engine's prepared-session class: a list of anything else is not laid out."""
    layout: Callable[[Mapping[str, Any]], LayoutT]
    """The columns laid out for the re-run."""
    detectors: tuple[str, ...]
    """Detector names by the codes of the re-run's ``detector`` array."""

    def table_spec(self, engine: BaseEngine[Any, Any], version: str | None = None) -> TableSpec:
        """The table of ``engine``'s prepared sessions of ``version``: each session's JSON
        beside these columns."""
        engine.check_version(version)
        return json_table_spec(engine, version, columns=self.schema, encode_columns=self.encode,
                               check=self.check)

    def run_many(self, engine: BaseEngine[Any, Any], prepared: Sequence[Any], config: Any,
                 run: Callable[[LayoutT, ReplayOf], Mapping[str, Any]]) -> RunColumns | None:
        """The corpus's :class:`~loopscope.engines.base.RunColumns` under ``config``, from
        ``run(layout, replay_of)`` (the arrays of the vectorised re-run; ``replay_of`` runs one
        session by ``engine.run``), for a table of ``engine``'s or a list of its prepared
        sessions that keeps derived data (the layout kept with it); None for anything else (a
        plain list is run session by session)."""
        layout = laid_out(prepared, engine.name, self.prepared_type, self.layout, self.encode)
        if layout is None:
            return None

        def replay_of(i: int) -> SessionReplay:
            return engine.run(prepared[i], config)

        return columns_of(run(layout, replay_of), replay_of, self.detectors)
