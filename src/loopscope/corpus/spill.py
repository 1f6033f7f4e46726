"""The parts of a cold ingest kept on disk as they arrive (:class:`SpilledParts`), so that a
large corpus's tables are written into its snapshot a column at a time, never held whole.

Why: the workers' parts of an ingest are, together, as large as the corpus's tables (at
100,000 sessions ~3.5 GB), and joining them in memory held the parts and the joined tables
at once. Here each part's columns go to one unnamed temporary file beside the snapshots as
the part arrives; a joined column is then read back from it a part at a time, each part's
positions shifted as :func:`loopscope.engines.table.concat` shifts them, so what is held is
one part's column, the files' outcomes and the re-runs (small).

A budget (``hold_bytes``) keeps the parts in memory while their tables are small: they are
then joined in memory, and nothing waits for the file (the dashboard draws its first chart
from them while its snapshot is written). The first part that would take the parts held past
it sends every held part to the file, and every later part goes there as it arrives: what
is held is never more than the budget and the part arriving.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from loopscope.corpus.ingestion import FileResult, Ingested, Runs, Wanted, table_spec_of
from loopscope.engines.base import RunColumns

__all__ = ["SpilledParts"]

_Layout = tuple[tuple[str, str], ...]
"""A part's table as written to the temporary file: each column's name and dtype, in order
(the same for every part of an engine: kept once)."""


class SpilledParts:
    """The parts of an ingest (:func:`~loopscope.corpus.ingestion.ingest_part` results) in
    file order, handed one at a time to :meth:`add`: their files' outcomes and re-runs kept
    here, their tables' columns written to a temporary file in ``folder`` (deleted when
    closed, or when the process ends). If that file cannot be written (a full disk), the
    columns are kept in memory instead.

    ``hold_bytes``: the parts' columns are kept in memory, not written, while all those
    held come to no more than this many bytes; the first part that would pass it sends
    every held part to the file (in file order) and no part is held after it. 0: every part
    is written as it arrives. The file is made when the first part is written."""

    def __init__(self, wanted: Wanted, folder: str, hold_bytes: int = 0) -> None:
        self.wanted = list(wanted)
        self.hold_bytes = hold_bytes
        self._holding = hold_bytes > 0
        """Whether parts are still held (until the budget is first passed)."""
        self.held_bytes = 0
        """The bytes of the columns of the parts held now (never more than the budget)."""
        self.peak_held_bytes = 0
        """The most held at once: the parts held and the part arriving (the budget plus one
        part at most)."""
        self._folder = folder
        self.files: list[FileResult] = []
        self._runs: list[Runs] = []
        """The parts' re-runs; the first ``_runs_joined`` each joined from
        :data:`_RUNS_AT_ONCE` parts."""
        self._runs_joined = 0
        self._tables: list[dict[tuple[str, str], Any]] = []
        """Each part's tables: engine key → ``(layout, offset, lengths)``, where its columns
        lie one after the other in the file; or its columns themselves (not written)."""
        self._layouts: dict[_Layout, dict[str, tuple[int, int]]] = {}
        """Each layout's columns: name → (position, bytes per value)."""
        self._fh: Any = None
        self._writing = True
        """Whether columns still go to the file (not after it could not be made or
        written)."""
        self._size = 0
        self._written = False

    def __enter__(self) -> SpilledParts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._tables = []

    @property
    def spilled(self) -> bool:
        """Whether any part's table went to the file (else every table is in memory)."""
        return self._written

    def add(self, part: Any) -> None:
        """Keep the next part: held in memory within the budget, else its columns written
        out (and those of every part held before it)."""
        import numpy as np

        results, data, runs = part
        self.files.extend(results)
        self._runs.append(runs)
        if len(self._runs) - self._runs_joined >= _RUNS_AT_ONCE:  # (a few large arrays, not
            self._runs[self._runs_joined:] = [_joined_runs(self._runs[self._runs_joined:])]
            self._runs_joined += 1  # thousands of small ones: they are joined in the end)
        tables = {key: {name: np.ascontiguousarray(value) for name, value in columns.items()}
                  for key, (kind, columns) in data.items() if kind == "table"}
        if self._holding:
            size = sum(a.nbytes for arrays in tables.values() for a in arrays.values())
            self.peak_held_bytes = max(self.peak_held_bytes, self.held_bytes + size)
            if self.held_bytes + size <= self.hold_bytes:
                self.held_bytes += size
                self._tables.append(tables)
                return
            self._write_held()
        self._tables.append({key: self._spilled(arrays) for key, arrays in tables.items()})

    def _write_held(self) -> None:
        """Write every part held to the file, in file order; hold none from now on."""
        self._holding = False
        for tables in self._tables:
            for key, arrays in tables.items():
                tables[key] = self._spilled(arrays)
        self.held_bytes = 0

    def _spilled(self, arrays: Mapping[str, Any]) -> Any:
        """A part's table (its columns, contiguous) written to the file (where it lies), or
        kept as it is."""
        import numpy as np

        if not self._writing or any(a.dtype.hasobject or a.ndim != 1
                                    for a in arrays.values()):
            return arrays
        if self._fh is None:
            try:
                os.makedirs(self._folder, exist_ok=True)
                self._fh = tempfile.TemporaryFile(  # noqa: SIM115 (closed by close())
                    dir=self._folder, prefix=".part-", suffix=".spill", buffering=0)
            except OSError:
                self._writing = False
                return arrays
        layout = tuple((name, a.dtype.str) for name, a in arrays.items())
        if layout not in self._layouts:
            self._layouts[layout] = {name: (k, np.dtype(dtype).itemsize)
                                     for k, (name, dtype) in enumerate(layout)}
        offset = self._size
        try:
            for value in arrays.values():
                view = value.data.cast("B")
                while view:
                    view = view[os.write(self._fh.fileno(), view):]
        except OSError:
            self._writing = False  # (what was written before stays readable)
            return arrays
        self._written = True
        self._size += sum(a.nbytes for a in arrays.values())
        return (next(k for k in self._layouts if k == layout), offset,
                tuple(len(a) for a in arrays.values()))

    def _read(self, found: Any, name: str) -> Any:
        """The column ``name`` of a part's table (as :meth:`_spilled` gave it)."""
        import numpy as np

        if isinstance(found, dict):
            return found[name]
        layout, offset, lengths = found
        places = self._layouts[layout]
        k, itemsize = places[name]
        for other, _ in layout[:k]:
            j, size = places[other]
            offset += lengths[j] * size
        size = lengths[k] * itemsize
        data = bytearray(size)  # (writable: a table joined from it is an ordinary one)
        if size and os.preadv(self._reader(), [data], offset) != size:
            raise OSError("the ingest's temporary file is shorter than written")
        return np.frombuffer(data, dtype=layout[k][1])

    def _reader(self) -> int:
        if self._fh is None:
            raise OSError("the ingest's temporary file is closed")
        return int(self._fh.fileno())

    def keys(self) -> list[tuple[str, str]]:
        """The engine keys every part has a table of (in ``wanted`` order), as
        :func:`~loopscope.corpus.ingestion.join_parts` joins them."""
        out: list[tuple[str, str]] = []
        for eng, version in self.wanted:
            key = (eng.name, eng.prepare_key(version))
            if key not in out and table_spec_of(eng, version) is not None \
                    and all(key in tables for tables in self._tables):
                out.append(key)
        return out

    def length(self, key: tuple[str, str], name: str) -> int:
        """The length of the joined column ``name`` of the table ``key``."""
        return sum(_count(tables[key], name, self._layouts) for tables in self._tables)

    def column(self, key: tuple[str, str], schema: Mapping[str, Any], name: str
               ) -> Iterator[Any]:
        """The joined column ``name`` of the table ``key`` (of ``schema``), a part at a time:
        each part's values as :func:`~loopscope.engines.table.concat` gives them (positions
        on another axis shifted by that axis's length in the parts before, a -1 of a
        nullable column kept)."""
        import numpy as np

        col = schema[name]
        on_ref = [other for other, c in schema.items() if c.axis == col.ref] \
            if col.ref is not None else []
        shift = 0
        for tables in self._tables:
            part = tables[key]
            value = self._read(part, name)
            if col.ref is not None and shift:
                if col.nullable:
                    value = np.where(value >= 0, value + shift, value).astype(value.dtype)
                else:
                    value = value + np.asarray(shift, dtype=value.dtype)
            yield value.astype(col.dtype, copy=False)
            del value
            if on_ref:
                shift += _count(part, on_ref[0], self._layouts)

    def table(self, key: tuple[str, str]) -> Any:
        """The table ``key`` joined in memory (:meth:`TableSpec.join`): when it cannot be
        written to a snapshot."""
        spec = self._spec(key)
        return spec.join([{name: self._read(tables[key], name) for name in spec.schema}
                          for tables in self._tables])

    def _spec(self, key: tuple[str, str]) -> Any:
        for eng, version in self.wanted:
            if (eng.name, eng.prepare_key(version)) == key:
                return table_spec_of(eng, version)
        raise KeyError(key)

    def runs(self) -> Runs:
        """The re-runs of every part joined, as :func:`join_parts` joins them."""
        return _joined_runs(self._runs)

    def joined(self) -> Ingested:
        """Every part as one :class:`Ingested`, its tables joined in memory. Each table
        leaves the parts as it is joined (as :func:`join_parts` does: the parts held and the
        joined tables are never both held whole), so this is the parts' last use."""
        prepared: dict[tuple[str, str], Sequence[Any]] = {}
        for key in self.keys():
            prepared[key] = self.table(key)
            for tables in self._tables:
                del tables[key]
        return Ingested(self.files, prepared, self.runs())


_RUNS_AT_ONCE = 64
"""Parts whose re-runs are joined into one as they come."""


def _joined_runs(parts: Sequence[Runs]) -> Runs:
    """The re-runs of consecutive parts as one, as :func:`join_parts` joins them: those of
    each configuration every part has (joining joined parts again gives the same)."""
    runs: Runs = {}
    for run_key in (parts[0] if parts else {}):
        if all(run_key in part_runs for part_runs in parts):
            runs[run_key] = RunColumns.join_compact([part_runs[run_key] for part_runs in parts])
    return runs


def _count(found: Any, name: str, layouts: Mapping[_Layout, dict[str, tuple[int, int]]]) -> int:
    """The length of the column ``name`` of a part's table (as :meth:`_spilled` gave it)."""
    if isinstance(found, dict):
        return len(found[name])
    layout, _, lengths = found
    return int(lengths[layouts[layout][name][0]])
