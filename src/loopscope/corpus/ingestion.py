"""Files imported and prepared for a corpus: on every core when there are many (a process pool,
or a Dask cluster through :func:`ingest_part` and :func:`join_parts`), each part's sessions
prepared as an engine's table of columns (cheap to send back) and re-run under each engine's
default configuration, so the first chart needs no session decoded.

What is prepared for which engine is a ``wanted`` list of ``(engine, version)``: the engine
objects themselves travel to the worker processes (an engine holds no state beyond its class).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopscope.bulk import CollectorPaused, without_huge_pages
from loopscope.cache import SessionHead
from loopscope.corpus.sessions import head_of, load_one
from loopscope.engines import Engine
from loopscope.engines.base import RunColumns
from loopscope.formats.base import Detection
from loopscope.model import Problem, escape_for_display

if TYPE_CHECKING:
    from loopscope.engines.table import TableSpec

__all__ = ["PARALLEL_MIN_FILES", "FileResult", "Ingested", "PartSink", "Progress", "Runs",
           "Wanted", "every_engine", "ingest", "ingest_file", "ingest_part", "ingest_part_size",
           "join_parts", "part_size", "reading_message", "table_spec_of", "time_left"]

Progress = Callable[[float, str], object]
"""``progress(fraction done, what is happening)``."""

Wanted = Sequence[tuple[Engine[Any, Any], str | None]]
"""What a corpus is prepared for: ``(engine, version)`` pairs (``None``: its default
version)."""

Runs = dict[tuple[str, str], tuple[dict[str, Any], tuple[str, ...]]]
"""(engine name, repr of a configuration) → the compact columns of ``run_many`` under it
(:meth:`~loopscope.engines.base.RunColumns.compact`) and their detector names."""


def every_engine() -> list[tuple[Engine[Any, Any], str | None]]:
    """Every registered engine at its default version: what a corpus is prepared for unless
    told otherwise (the dashboard, ``loopscope prepare``), and so its snapshot's engines."""
    from loopscope.engines import all_engines

    return [(engine, None) for engine in all_engines()]


@dataclass(frozen=True, slots=True)
class FileResult:
    """One file ingested: its import outcome without the sessions, and the prepared sessions
    of each engine that can write its prepared data (engine, prepare key → list; emptied
    once they are in a table)."""

    path: str
    detection: Detection
    problems: tuple[Problem, ...]
    heads: list[SessionHead]
    prepared: dict[tuple[str, str], list[Any]]
    from_cache: bool = False
    tally: tuple[int | None, int, dict[str, int]] = (None, 0, {})
    """The file's tool calls: seen in it, imported, set aside on purpose (by reason)."""


@dataclass(frozen=True, slots=True)
class Ingested:
    """Files ingested (:func:`ingest`): each file's outcome, aligned with the files, and each
    engine's prepared sessions of every file in order (engine, prepare key → a
    :class:`~loopscope.engines.table.PreparedTable` for engines with a ``table_spec``, else a
    :class:`~loopscope.engines.base.PreparedSessions`). A key is missing when some file's
    sessions could not be prepared for it (the corpus then prepares them when asked)."""

    files: list[FileResult]
    prepared: dict[tuple[str, str], Sequence[Any]]
    runs: Runs = field(default_factory=dict)
    """The re-runs under each engine's default configuration: a first chart needs no session
    decoded."""


PARALLEL_MIN_FILES = 64
"""Below this many files, ingest runs in this process (starting worker processes costs more
than it saves)."""
PART_MAX_FILES = 64
"""The most files a worker imports as one part. Each part costs a fixed amount beyond its
files (each engine's table encoded and re-run, the arrays pickled back, and joined here), so
parts are as large as keeps the workers finishing together (``benchmarks/README.md``)."""
PARTS_PER_WORKER = 8
"""With fewer files, parts as small as makes this many per worker: the workers then finish
close together (at the end, one may wait on another's last part)."""


def part_size(n_files: int, workers: int) -> int:
    """How many files go in one part of an ingest of ``n_files`` on ``workers``."""
    return max(1, min(PART_MAX_FILES, -(-n_files // (workers * PARTS_PER_WORKER))))


def ingest_part_size(n_files: int, workers: int) -> int:
    """How many files each part of :func:`ingest` of ``n_files`` with ``workers`` processes
    holds: on a process pool, :func:`part_size`; in this process (one worker, or too few
    files for a pool) 50, or one with fewer than 200 files, so that its progress moves file
    by file. A part's string pools are its own (joined one after the other), so the same cut
    gives the same snapshot bytes: the Dask import cuts its tasks with this too."""
    if workers <= 1 or n_files < PARALLEL_MIN_FILES:
        return 50 if n_files >= 200 else 1
    return part_size(n_files, workers)


_clock = time.monotonic
"""The clock of the time left (a test moves it)."""


def time_left(elapsed_s: float, done: int, total: int) -> str:
    """`` · about 40 s left`` for an ingest that read ``done`` of ``total`` files in
    ``elapsed_s`` seconds, at the same pace; ``""`` while too little is done to say (the
    first few per cent, the first two seconds: the workers are still starting) and at the end.

    A large folder takes a minute or more to load the first time: the loading message says
    how long is left, not only how far it got."""
    if done <= 0 or done >= total or elapsed_s < 2.0 or done < 0.03 * total:
        return ""
    left = elapsed_s * (total - done) / done
    if left < 10:
        return " · a few seconds left"
    if left <= 90:
        return f" · about {max(10, 5 * round(left / 5))} s left"
    return f" · about {round(left / 60)} min left"


def reading_message(total: int, where: str) -> Callable[[int], str]:
    """``message(done)``: "Read 3,840 of 20,000 files on 2 cores · about 20 s left", the time
    left at the pace since this call (the ingest's progress, on this machine's cores or on a
    Dask cluster)."""
    started = _clock()

    def message(done: int) -> str:
        left = time_left(_clock() - started, done, total)
        return f"Read {done:,} of {total:,} files on {where}{left}"

    return message


# What a part of the files gives back for one engine: ("table", columns) or ("list", objects).
_Part = tuple[str, Any]
_PartResult = tuple[list["FileResult"], dict[tuple[str, str], _Part], Runs]


PartSink = Callable[[Any], object]
"""Where :func:`ingest` hands each part of the files as it arrives (in file order), instead
of holding them all: ``into(part)`` with the :func:`ingest_part` result."""


def ingest(files: Sequence[tuple[str, bool]], wanted: Wanted, *,
           workers: int | None = None, progress: Progress | None = None,
           into: PartSink | None = None) -> Ingested:
    """Import and prepare every file: on every core (a process pool of ``workers``, default
    one per core) when there are many files. Each part of the files comes back with its
    sessions prepared as tables (arrays) and re-run under each engine's default
    configuration, joined here (:func:`join_parts`).

    ``into``: each part is handed to it as it arrives, in file order, and not kept (the
    caller writes them out as they come: the parts of a large corpus are as large as its
    tables); nothing is joined, and the :class:`Ingested` returned is empty."""
    if workers is None:
        workers = os.cpu_count() or 1
    without_huge_pages()  # (the parts are joined here: see there)
    wanted = list(wanted)
    n = len(files)
    parts: list[_PartResult] = []
    keep: PartSink = into if into is not None else parts.append
    if workers <= 1 or n < PARALLEL_MIN_FILES:
        step = ingest_part_size(n, workers)
        for at in range(0, n, step):
            if progress:
                name = escape_for_display(Path(files[at][0]).name, 80)
                progress(at / max(n, 1), f"Reading {name} ({at + 1}/{n})")
            keep(ingest_part(list(files[at:at + step]), wanted))
    else:
        _ingest_pool(files, wanted, workers, progress, keep)
    if into is not None:
        return Ingested([], {}, {})
    return join_parts(parts, wanted)


def _ingest_pool(files: Sequence[tuple[str, bool]], wanted: Wanted,
                 workers: int, progress: Progress | None, keep: PartSink) -> None:
    import concurrent.futures
    import multiprocessing

    n = len(files)
    size = ingest_part_size(n, workers)
    chunks = [list(files[i:i + size]) for i in range(0, n, size)]
    # "spawn": the dashboard's server runs threads, which a forked child must not inherit.
    context = multiprocessing.get_context("spawn")
    kept = 0
    done = 0
    message = reading_message(n, f"{workers} cores")
    try:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers,
                                                    mp_context=context) as pool:
            for part in pool.map(ingest_part, chunks, [wanted] * len(chunks)):
                done += len(part[0])
                keep(part)
                del part  # (not held while the next one is awaited)
                kept += 1
                if progress:
                    progress(done / n, message(done))
    except concurrent.futures.process.BrokenProcessPool:
        # Workers could not start (e.g. a script without an ``if __name__ == "__main__"``
        # guard, which "spawn" needs): the rest in this process.
        for chunk in chunks[kept:]:
            keep(ingest_part(chunk, wanted))
            kept += 1


def ingest_part(files: list[tuple[str, bool]],
                wanted: Wanted) -> _PartResult:
    """A part of the files (in a worker process, a Dask worker, or here): each file's outcome
    (prepared sessions emptied); for each engine whose data every file of the part has, the
    part's prepared sessions as a table's columns (arrays: cheap to send back); and each
    engine's re-run under its default configuration (:attr:`Ingested.runs`)."""
    with CollectorPaused():
        # (In a function of its own: the prepared objects and sessions, its locals, are gone
        # when the collector resumes and examines what is new, so it examines only what is
        # kept.)
        return _ingest_part(files, wanted)


def _ingest_part(files: list[tuple[str, bool]],
                 wanted: Wanted) -> _PartResult:
    results = [ingest_file(path, explicit, wanted) for path, explicit in files]
    out: dict[tuple[str, str], _Part] = {}
    runs: Runs = {}
    for eng, version in wanted:
        key = (eng.name, eng.prepare_key(version))
        spec = table_spec_of(eng, version)
        if spec is None or not all(key in r.prepared for r in results):
            continue
        objects = [p for r in results for p in r.prepared[key]]
        table = None
        if key not in out:
            out[key] = ("table", dict(spec.encode(objects)))
            if not spec.keep_all:  # columns of its own: run_many reads them
                table = spec.open(out[key][1], trusted=True)
        config = eng.default_config(version)
        run_key = (eng.name, repr(config))
        if run_key not in runs:
            with contextlib.suppress(Exception):  # (then run when asked)
                columns = eng.run_many(table if table is not None else objects, config)
                runs[run_key] = (columns.compact(), columns.detectors)
    return [replace(r, prepared={}) for r in results], out, runs


def join_parts(parts: Sequence[_PartResult],
               wanted: Wanted) -> Ingested:
    """The parts of :func:`ingest_part`, in file order, as one :class:`Ingested`.

    Each engine's columns leave the parts as soon as they are joined (the parts' dicts are
    emptied of them): the parts and the joined tables are never both held whole, so the
    peak is the tables plus one engine's parts, not twice the tables."""
    files = [r for results, _, _ in parts for r in results]
    prepared: dict[tuple[str, str], Sequence[Any]] = {}
    for eng, version in wanted:
        key = (eng.name, eng.prepare_key(version))
        if key in prepared or not all(key in data for _, data, _ in parts):
            continue
        spec = table_spec_of(eng, version)
        if spec is not None:
            columns = [data.pop(key)[1] for _, data, _ in parts]
            prepared[key] = spec.join(columns)
            del columns
    runs: Runs = {}
    for run_key in (parts[0][2] if parts else {}):
        if all(run_key in part_runs for _, _, part_runs in parts):
            runs[run_key] = RunColumns.join_compact([part_runs[run_key]
                                                     for _, _, part_runs in parts])
    return Ingested(files, prepared, runs)


def table_spec_of(engine: Engine[Any, Any], version: str | None) -> TableSpec | None:
    """``engine.table_spec(version)``, kept per engine object and version: ingest asks for it
    per file and engine, and making it costs as much as preparing a short session."""
    found = _TABLE_SPECS.get((engine.name, version))
    if found is not None and found[0] is engine:
        return found[1]
    spec = engine.table_spec(version)
    _TABLE_SPECS[(engine.name, version)] = (engine, spec)
    return spec


_TABLE_SPECS: dict[tuple[str, str | None], tuple[Engine[Any, Any], TableSpec | None]] = {}
"""(engine name, version) → (the engine, its table spec), for :func:`table_spec_of`."""


def ingest_file(path: str, explicit: bool,
                wanted: Wanted) -> FileResult:
    """One file imported and prepared for each wanted engine that writes its prepared data as
    a table (``table_spec``; the others prepare where they are used). Never raises for a bad
    file."""
    from loopscope.formats import load_file

    imported = load_one(load_file, path, explicit)
    prepared: dict[tuple[str, str], list[Any]] = {}
    for eng, version in wanted:
        key = (eng.name, eng.prepare_key(version))
        if key in prepared or table_spec_of(eng, version) is None:
            continue
        with contextlib.suppress(Exception):  # an engine failing on one file must not lose
            prepared[key] = [eng.prepare(s, version) for s in imported.sessions]  # the others
    return FileResult(path, imported.detection, tuple(imported.problems),
                      [head_of(s) for s in imported.sessions], prepared,
                      tally=(imported.calls_seen, imported.calls_imported,
                             dict(imported.calls_set_aside)))
