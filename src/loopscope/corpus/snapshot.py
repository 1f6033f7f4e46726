"""A loaded corpus kept on disk (a *snapshot*, :func:`loopscope.cache.write_corpus`): every
file's import outcome and session heads, each engine's table of prepared sessions, and the
re-runs under each engine's default configuration, keyed by every file's stamp. A corpus
loaded again from unchanged files is read back from it; one with some files changed reuses
the unchanged files' rows of the folder's last snapshot. No pickle: the index is JSON and the
tables are arrays, every field and column checked when read; a damaged snapshot is deleted
and the corpus ingested again.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopscope import cache
from loopscope.bulk import LazyBytes
from loopscope.corpus.ingestion import (
    FileResult,
    Ingested,
    Progress,
    Runs,
    Wanted,
    table_spec_of,
)
from loopscope.engines.base import RunColumns
from loopscope.formats.base import Detection

if TYPE_CHECKING:
    from loopscope.engines.table import TableSpec

__all__ = ["KeptTable", "Snapshot", "SnapshotNames", "exact_snapshot", "load_or_ingest", "opened",
           "pool_damaged", "read_tables", "read_whole_pools", "snapshot_names", "snapshot_specs"]


def snapshot_specs(wanted: Wanted) -> list[TableSpec]:
    """The table specs of the wanted engines (one per engine and prepare key)."""
    specs: dict[tuple[str, str], TableSpec] = {}
    for engine, version in wanted:
        spec = table_spec_of(engine, version)
        if spec is not None:
            specs.setdefault((engine.name, spec.key), spec)
    return list(specs.values())


@dataclass(frozen=True, slots=True)
class SnapshotNames:
    """Where a corpus's snapshot is: its key, the folder's pointer, each file's stamp."""

    key: str
    pointer: str | None
    stamps: list[str]
    root: str | None


def load_or_ingest(files: Sequence[tuple[str, bool]], wanted: Wanted, root: str | None,
                   ingest_with: Callable[..., Ingested], workers: int | None,
                   progress: Progress | None, snapshot_in_background: bool) -> Ingested:
    """``files`` imported and prepared for ``wanted``
    (:func:`~loopscope.corpus.loaded.build_corpus`): read from the on-disk cache when kept,
    else ingested by ``ingest_with`` (and kept). With no snapshot to start from, the parts
    go straight into a new one (:func:`_ingest_into_snapshot`): a large corpus's tables are
    then never all in memory while it loads. ``snapshot_in_background``: a snapshot written
    from tables in memory is written in a thread (:func:`_keep`)."""
    names = snapshot_names(files, wanted, root) if cache.active() else None
    loaded, exact = None, False
    if names is not None:
        loaded, exact = _load_from_snapshots(names, files, wanted, ingest_with, workers,
                                             progress)
    if loaded is None and names is not None:
        return _ingest_into_snapshot(names, files, wanted, ingest_with, workers, progress,
                                     snapshot_in_background)
    if loaded is None:
        loaded = ingest_with(files, wanted, workers=workers, progress=progress)
    if names is not None and not exact:
        _keep(names, files, wanted, loaded, progress, snapshot_in_background)
    return loaded


HOLD_IN_MEMORY_BYTES = 1 << 30
"""The most bytes of tables the dashboard's cold ingest keeps in memory rather than in a
temporary file (:class:`~loopscope.corpus.spill.SpilledParts`). Below it the tables fit
comfortably beside the rest of the server, and the first chart should not wait for the
snapshot's write: they are joined in memory and the snapshot written in a thread. Above it,
memory wins: the parts go to the file, and the snapshot is written from it before the corpus
is returned. The command line (``loopscope prepare``) holds nothing: it waits for its
snapshot either way, and its memory stays bounded whatever the corpus."""


def _keep(names: SnapshotNames, files: Sequence[tuple[str, bool]], wanted: Wanted,
          loaded: Ingested, progress: Progress | None, in_background: bool) -> None:
    """Write the snapshot of ``loaded`` (its tables in memory): in a thread named
    ``loopscope-snapshot`` when ``in_background`` (the dashboard draws its first chart
    meanwhile; the process waits for it before it exits), else now, said."""
    if in_background:
        threading.Thread(target=_write_snapshot, args=(names, list(files), wanted, loaded),
                         name="loopscope-snapshot").start()
    else:
        if progress:
            progress(1.0, "Keeping the prepared sessions for the next start")
        _write_snapshot(names, files, wanted, loaded)


def snapshot_names(files: Sequence[tuple[str, bool]], wanted: Wanted,
                   root: str | None) -> SnapshotNames | None:
    """Where the snapshot of ``files`` prepared for ``wanted`` is kept; None when no wanted
    engine writes a table (nothing to keep)."""
    specs = snapshot_specs(wanted)
    if not specs:
        return None
    tables = [(spec.engine, spec.key) for spec in specs]
    stamps = [cache.file_stamp(path) for path, _ in files]
    return SnapshotNames(cache.corpus_key(files, tables, stamps),
                         cache.pointer_name(root, tables) if root else None, stamps, root)


def _load_from_snapshots(names: SnapshotNames, files: Sequence[tuple[str, bool]],
                         wanted: Wanted, ingest_with: Callable[..., Ingested], workers: int | None,
                         progress: Progress | None) -> tuple[Ingested | None, bool]:
    """``(corpus, exact)``: the corpus read from its snapshot (exact), else built from the
    folder's last snapshot and the files that changed since (not exact), else None."""
    def reading() -> None:  # said only once a kept snapshot is really there to read
        if progress:
            progress(0.0, "Reading the prepared sessions kept from an earlier start")

    found = exact_snapshot(names, files, wanted, reading)
    if found is not None:
        if names.root:  # (a snapshot kept before the folder marks existed)
            cache.mark_folder(names.root)
        return found.ingested, True
    previous = cache.last_corpus(names.pointer) if names.pointer else None
    if previous is None or previous == names.key:
        return None, False
    old = _read_snapshot(previous, wanted, reading)
    if old is None:
        return None, False
    return _with_changes(old, names, files, wanted, ingest_with, workers, progress), False


def exact_snapshot(names: SnapshotNames, files: Sequence[tuple[str, bool]], wanted: Wanted,
                   on_found: Callable[[], None] | None = None) -> Snapshot | None:
    """The snapshot of exactly ``files`` as they are now (``names.stamps``), if kept."""
    found = _read_snapshot(names.key, wanted, on_found)
    if found is None or found.files != [(path, explicit, stamp) for (path, explicit), stamp
                                        in zip(files, names.stamps, strict=True)]:
        return None
    return found


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A snapshot read back and checked: its files and what they gave."""

    files: list[tuple[str, bool, str]]
    """(path, named explicitly?, stamp) of each file."""
    ingested: Ingested


def _with_changes(old: Snapshot, names: SnapshotNames, files: Sequence[tuple[str, bool]],
                  wanted: Wanted, ingest_with: Callable[..., Ingested], workers: int | None,
                  progress: Progress | None) -> Ingested | None:
    """The corpus of ``files`` from an older snapshot ``old`` of the folder: every file it
    holds unchanged (same path and stamp) reused, the others imported and prepared; None when
    nothing can be reused."""
    import numpy as np

    from loopscope.engines.table import compact_pool, concat, gather

    where = {record: k for k, record in enumerate(old.files) if record[2] != "missing"}
    counts = [len(r.heads) for r in old.ingested.files]
    old_starts = [0]
    for c in counts:
        old_starts.append(old_starts[-1] + c)
    reuse: list[int | None] = [where.get((path, explicit, stamp)) for (path, explicit), stamp
                               in zip(files, names.stamps, strict=True)]
    if not any(k is not None for k in reuse):
        return None
    todo = [f for f, k in zip(files, reuse, strict=True) if k is None]
    if progress:
        progress(0.0, f"Reusing {len(files) - len(todo):,} unchanged files; reading "
                      f"{len(todo):,} new or changed")
    new = ingest_with(todo, wanted, workers=workers, progress=progress)
    old_n = old_starts[-1]
    new_starts = [0]
    for r in new.files:
        new_starts.append(new_starts[-1] + len(r.heads))
    order: list[Any] = []
    results: list[FileResult] = []
    t = 0
    for k in reuse:
        if k is not None:
            order.append(np.arange(old_starts[k], old_starts[k + 1]))
            results.append(old.ingested.files[k])
        else:
            order.append(np.arange(old_n + new_starts[t], old_n + new_starts[t + 1]))
            results.append(new.files[t])
            t += 1
    picked = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    dropped = len(picked) < old_n + new_starts[-1]
    prepared: dict[tuple[str, str], Sequence[Any]] = {}
    for spec in snapshot_specs(wanted):
        key = (spec.engine, spec.key)
        before, after = opened(old.ingested.prepared.get(key)), new.prepared.get(key)
        if before is None or after is None:
            return None
        columns = gather(spec.schema, concat(spec.schema, [before.columns,  # type: ignore[attr-defined]
                                                            after.columns]), picked)  # type: ignore[attr-defined]
        prepared[key] = spec.open(compact_pool(spec.schema, columns) if dropped else columns,
                                  trusted=True)
    runs: Runs = {}
    for run_key, kept in old.ingested.runs.items():
        added = new.runs.get(run_key)
        if added is None and todo:
            continue  # (run when asked)
        parts = [kept] if added is None else [kept, added]
        joined, detectors = RunColumns.join_compact(parts)
        for name in ("refusals", "warnings", "first"):
            joined[name] = joined[name][picked]
        runs[run_key] = (joined, detectors)
    return Ingested(results, prepared, runs)


def _ingest_into_snapshot(names: SnapshotNames, files: Sequence[tuple[str, bool]],
                          wanted: Wanted, ingest_with: Callable[..., Ingested],
                          workers: int | None, progress: Progress | None,
                          in_background: bool) -> Ingested:
    """``files`` ingested by ``ingest_with`` and kept as the snapshot ``names.key``, a large
    corpus's tables never all in memory: each part's columns go to a temporary file as the
    part arrives (:class:`~loopscope.corpus.spill.SpilledParts`), and each table is joined
    from it into the snapshot a column at a time. The corpus returned reads its tables from the
    snapshot when first used (:class:`KeptTable`, as a reopened corpus does); its files and
    re-runs are the ingest's own. When the snapshot cannot be written, the tables are joined
    in memory instead (and nothing is kept).

    ``in_background`` (the dashboard): the parts are held in memory up to
    :data:`HOLD_IN_MEMORY_BYTES`; when none had to go to the file, the tables are joined in
    memory and returned at once, and the snapshot is written from them in a thread
    (:func:`_keep`), as for a changed folder."""
    from loopscope.corpus.spill import SpilledParts

    hold = HOLD_IN_MEMORY_BYTES if in_background else 0
    with SpilledParts(wanted, str(cache.cache_dir() / "corpus"), hold_bytes=hold) as spill:
        ingest_with(files, wanted, workers=workers, progress=progress, into=spill.add)
        if spill.spilled or not in_background:
            if progress:
                progress(1.0, "Keeping the prepared sessions for the next start")
            written = _write_spilled(names, files, wanted, spill)
            return written if written is not None else spill.joined()
        loaded = spill.joined()
    _keep(names, files, wanted, loaded, progress, in_background)
    return loaded


def _write_spilled(names: SnapshotNames, files: Sequence[tuple[str, bool]], wanted: Wanted,
                   spill: Any) -> Ingested | None:
    """Write the snapshot of ``spill``'s parts (a table's columns streamed from it); the
    corpus, its tables read back from the snapshot as used; None when it is not written."""
    specs = snapshot_specs(wanted)
    keys = spill.keys()
    if not all((spec.engine, spec.key) in keys for spec in specs):
        return None
    runs = spill.runs()
    arrays: dict[str, Any] = {}
    for k, spec in enumerate(specs):
        key = (spec.engine, spec.key)
        for column, col in spec.schema.items():
            arrays[f"t{k}.{column}"] = cache.StreamedArray(
                col.dtype, spill.length(key, column),
                functools.partial(spill.column, key, spec.schema, column))
    index = _index_doc(names, files, spill.files, specs, runs, arrays)
    if not _kept(names, cache.write_corpus(names.key, index, arrays)):
        return None
    kept = cache.open_corpus(names.key)
    if kept is None:
        return None
    sessions = sum(len(r.heads) for r in spill.files)
    prepared: dict[tuple[str, str], Sequence[Any]] = {
        (spec.engine, spec.key): KeptTable(spec, kept, f"t{k}.", sessions)
        for k, spec in enumerate(specs)}
    return Ingested(spill.files, prepared, runs)


def _write_snapshot(names: SnapshotNames, files: Sequence[tuple[str, bool]],
                    wanted: Wanted, loaded: Ingested) -> None:
    """Keep ``loaded`` as the snapshot ``names.key`` (when every engine's table is there),
    remembered as the folder's last; then prune the cache."""
    from loopscope.engines.table import PreparedTable

    specs = snapshot_specs(wanted)
    tables = [loaded.prepared.get((spec.engine, spec.key)) for spec in specs]
    if not all(isinstance(t, PreparedTable) for t in tables):
        return
    arrays: dict[str, Any] = {}
    for k, table in enumerate(tables):
        assert isinstance(table, PreparedTable)
        for column, value in table.columns.items():
            arrays[f"t{k}.{column}"] = value
    runs = loaded.runs
    index = _index_doc(names, files, loaded.files, specs, runs, arrays)
    _kept(names, cache.write_corpus(names.key, index, arrays))


def _index_doc(names: SnapshotNames, files: Sequence[tuple[str, bool]],
               results: Sequence[FileResult], specs: Sequence[TableSpec], runs: Runs,
               arrays: dict[str, Any]) -> dict[str, Any]:
    """The snapshot's index (its re-runs' columns added to ``arrays``)."""
    for k, (_key, (columns, _detectors)) in enumerate(runs.items()):
        for column, value in columns.items():
            arrays[f"r{k}.{column}"] = value
    return {
        "files": [[path, explicit, stamp,
                   [r.detection.format, r.detection.layout, r.detection.reason,
                    r.detection.unsupported],
                   cache.problems_doc(r.problems), [r.tally[0], r.tally[1], dict(r.tally[2])],
                   len(r.heads)]
                  for (path, explicit), stamp, r in zip(files, names.stamps, results,
                                                        strict=True)],
        "heads": cache.heads_doc([h for r in results for h in r.heads]),
        "tables": [[spec.engine, spec.key] for spec in specs],
        "runs": [[engine, config, list(detectors)]
                 for (engine, config), (_columns, detectors) in runs.items()],
    }


def _kept(names: SnapshotNames, written: bool) -> bool:
    """After a snapshot's write: when ``written``, it is remembered as the folder's last;
    the cache is pruned. Returns ``written``."""
    if written and names.pointer and names.root:
        cache.remember_corpus(names.pointer, names.key)
        cache.mark_folder(names.root)
    cache.prune()
    return written


def _read_snapshot(key: str, wanted: Wanted,
                   on_found: Callable[[], None] | None = None) -> Snapshot | None:
    """The snapshot ``key``, checked; None when there is none or it is damaged (it is then
    deleted). ``on_found`` is called once one is there to read (and only then)."""
    from loopscope.engines.table import TableError

    kept = cache.open_corpus(key)
    if kept is None:
        return None
    if on_found is not None:
        on_found()
    doc = kept.index
    specs = snapshot_specs(wanted)
    try:
        records = doc["files"]
        if type(records) is not list:
            raise ValueError("files")
        heads = cache.heads_of(doc["heads"])
        files: list[tuple[str, bool, str]] = []
        results: list[FileResult] = []
        at = 0
        for record in records:
            path, explicit, stamp, detection, problems, tally, count = record
            if type(path) is not str or type(explicit) is not bool or type(stamp) is not str \
                    or type(count) is not int or not 0 <= count <= len(heads) - at:
                raise ValueError("files")
            files.append((path, explicit, stamp))
            results.append(FileResult(path, Detection(*cache.detection_of(detection)),
                                      tuple(cache.problems_of(problems)), heads[at:at + count],
                                      {}, from_cache=True, tally=cache.tally_of(tally)))
            at += count
        if at != len(heads) or doc["tables"] != [[s.engine, s.key] for s in specs]:
            raise ValueError("tables")
        prepared: dict[tuple[str, str], Sequence[Any]] = {
            (spec.engine, spec.key): KeptTable(spec, kept, f"t{k}.", len(heads))
            for k, spec in enumerate(specs)}
        runs = {}
        for k, (engine, config, detectors) in enumerate(doc["runs"]):
            columns = _run_columns(kept.read_group(f"r{k}."), len(heads), detectors)
            if type(engine) is not str or type(config) is not str:
                raise ValueError("runs")
            runs[(engine, config)] = (columns, tuple(detectors))
    except (ValueError, TypeError, KeyError, IndexError, TableError):
        kept.forget()
        return None
    return Snapshot(files, Ingested(results, prepared, runs))


class KeptTable(Sequence[Any]):
    """An engine's table in a snapshot, read from the file when first used (:meth:`opened`):
    a reopened corpus draws its first chart from the re-runs kept beside the tables, and its
    tables are most of the snapshot (see :class:`loopscope.cache.KeptCorpus`). Only its length
    is known before; :meth:`Corpus.prepared` opens it."""

    def __init__(self, spec: Any, kept: cache.KeptCorpus, prefix: str, sessions: int) -> None:
        self.spec = spec
        self._kept: cache.KeptCorpus | None = kept
        self._prefix = prefix
        self._sessions = sessions
        self._table: Any = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._sessions

    def __getitem__(self, index: Any) -> Any:
        return self.opened()[index]

    def opened(self) -> Any:
        """The table, read and validated (once); :class:`~loopscope.cache.DamagedSnapshot`
        when it is damaged (the snapshot is then deleted)."""
        from loopscope.engines.table import TableError

        with self._lock:
            if self._table is None:
                kept = self._kept
                if kept is None:
                    raise cache.DamagedSnapshot("a damaged table of a snapshot")
                self._kept = None  # (the file is closed once no table needs it)
                columns = kept.read_group(self._prefix)
                try:
                    table = self.spec.open(columns)
                    if len(table) != self._sessions:
                        raise TableError("sessions")
                except (TableError, ValueError, TypeError, KeyError, IndexError) as exc:
                    raise kept.damaged() from exc
                self._table = table
            return self._table


def pool_damaged(found: Sequence[Any]) -> bool:
    """Whether ``found`` is a table whose string pool, read piece by piece from a snapshot
    (:class:`~loopscope.bulk.LazyBytes`), had a piece fail its check."""
    from loopscope.engines.table import PreparedTable

    if not isinstance(found, PreparedTable):
        return False
    pool = found.columns.get("string_bytes")
    return isinstance(pool, LazyBytes) and pool.damaged


def read_whole_pools(found: Sequence[Any]) -> bool:
    """Read every piece of ``found``'s string pool now, when it is read piece by piece from a
    snapshot (a command line reads every session: better checked before the first line is
    printed); False when a piece is damaged."""
    from loopscope.engines.table import PreparedTable

    if not isinstance(found, PreparedTable):
        return True
    pool = found.columns.get("string_bytes")
    if not isinstance(pool, LazyBytes):
        return True
    import numpy as np

    try:
        found.columns["string_bytes"] = np.asarray(pool)
    except cache.DamagedSnapshot:
        return False
    return True


def read_tables(tables: Sequence[KeptTable]) -> None:
    for table in tables:
        opened(table)


def opened(found: Sequence[Any] | None) -> Sequence[Any] | None:
    """``found`` with a snapshot's table read (:class:`KeptTable`); None when it is
    damaged."""
    if isinstance(found, KeptTable):
        try:
            return found.opened()
        except cache.DamagedSnapshot:
            return None
    return found


def _run_columns(arrays: Mapping[str, Any], sessions: int, detectors: Any) -> dict[str, Any]:
    """Compact re-run columns (:meth:`RunColumns.compact`) of a snapshot, checked."""
    import numpy as np

    if type(detectors) is not list or any(type(d) is not str for d in detectors):
        raise ValueError("runs: detector names")
    columns = {name: arrays[name] for name in ("refusals", "warnings", "first", "turn", "call",
                                               "detector")}
    for value in columns.values():
        if type(value) is not np.ndarray or value.ndim != 1 or value.dtype != np.int64:
            raise ValueError("runs: columns")
    refused = len(columns["turn"])
    first, detector = columns["first"], columns["detector"]
    if not (len(columns["refusals"]) == len(columns["warnings"]) == len(first) == sessions
            and len(columns["call"]) == len(detector) == refused):
        raise ValueError("runs: lengths")
    if sessions and (int(first.min()) < -1 or int(first.max()) >= refused):
        raise ValueError("runs: first refusals")
    if refused and (int(detector.min()) < 0 or int(detector.max()) >= len(detectors)
                    or int(columns["turn"].min()) < 0 or int(columns["call"].min()) < -1):
        raise ValueError("runs: refusals")
    return columns
