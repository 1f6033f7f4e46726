"""A loaded corpus: the sessions of some files, how their import went, their labels, and each
engine's prepared sessions (made on first use and kept).

The dashboard keeps one per data source; scripts build one with :func:`build_corpus`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loopscope import cache
from loopscope.bulk import CollectorPaused, without_huge_pages
from loopscope.cache import SessionHead
from loopscope.engines import get_engine
from loopscope.engines.base import PreparedSessions, RunColumns, run_many
from loopscope.formats.base import Detection, FileImport, ImportReport, ImportTotals
from loopscope.model import Problem, Session, escape_for_display

__all__ = ["LARGE_CORPUS", "Corpus", "CorpusSessions", "FileResult", "Ingested", "PreparedFile",
           "PreparedFolder", "Progress", "build_corpus", "every_engine", "ingest",
           "prepared_folder_files", "read_prepared", "reading_message", "time_left"]

Progress = Callable[[float, str], object]
"""``progress(fraction done, what is happening)``."""

LARGE_CORPUS = 500
"""From this many sessions, a corpus counts as large (callers may tune the collector)."""


@dataclass
class Corpus:
    """What is loaded: the sessions, how the files went, labels, and prepared sessions."""

    fingerprint: str
    origin: str
    """Where the sessions came from (the dashboard: ``samples``, ``upload`` or ``folder``)."""
    root: str | None
    report: ImportReport
    sessions: Sequence[Session]
    """Every session, in file order. When the corpus was ingested by :func:`ingest` the
    normalised sessions are not kept (only prepared data is): a session is read again from
    its file when asked for (:class:`CorpusSessions`); read the cheap columns
    (:attr:`heads`, :attr:`sources`, :attr:`call_counts`…) to go over all of them."""
    display_names: dict[str, str] = field(default_factory=dict)
    """Stored path → what to show (the original upload name)."""
    labels: Mapping[str, Any] = field(default_factory=dict)
    """Session source → label object (``loopscope.labels``), when a sidecar was found."""
    label_file: str | None = None
    """The top-level ``labels.csv`` of :attr:`root`, when there is one."""
    label_problems: list[Problem] = field(default_factory=list)
    load_seconds: float = 0.0
    label_stamp: tuple[int, int] | None = None
    """(mtime, size) of :attr:`label_file` when the labels were read."""
    cached_files: int = 0
    """Files whose prepared sessions came from the on-disk cache."""
    _prepared: dict[tuple[str, str], Sequence[Any]] = field(default_factory=dict, repr=False)
    _runs: dict[tuple[str, str], tuple[dict[str, Any], tuple[str, ...]]] = field(
        default_factory=dict, repr=False, compare=False)
    """Re-runs made while loading (:attr:`Ingested.runs`)."""
    _prepare_lock: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                          compare=False)
    _displayed: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """:meth:`display` results (asked for every session on every rerun)."""
    _warmed: set[tuple[str, str]] = field(default_factory=set, repr=False, compare=False)
    """Engines (and prepare keys) :meth:`warm` has run."""

    # ------------------------------------------------------------------ prepared sessions

    def prepared(self, engine: str, version: str | None = None,
                 progress: Progress | None = None) -> Sequence[Any]:
        """``engine.prepare(session, version)`` of every session, aligned with
        :attr:`sessions`; made once per engine and prepare key, then kept. For an engine with
        a ``table_spec`` loaded by :func:`build_corpus`, a
        :class:`~loopscope.engines.table.PreparedTable` (sessions decoded when read: read its
        columns, or ``run_many``, to go over all of them)."""
        eng = get_engine(engine)
        key = (engine, eng.prepare_key(version))
        found = self._prepared.get(key)
        if found is not None:
            # A table of a snapshot is read now (under its own lock: another engine's table
            # read meanwhile does not hold this one up); one found damaged, now or as a
            # session was read, is prepared again below.
            usable = None if _pool_damaged(found) else _opened(found)
            if usable is not found:
                with self._prepare_lock:
                    if self._prepared.get(key) is found:
                        if usable is None:
                            del self._prepared[key]
                        else:
                            self._prepared[key] = usable
            found = usable
        if found is not None:
            return found
        with self._prepare_lock:
            found = self._prepared.get(key)
            if found is None:
                found = self._prepared_from_files(engine, version, progress)
                if found is not None:
                    self._prepared[key] = found
            if found is None:
                found = PreparedSessions()
                n = max(len(self.sessions), 1)
                with CollectorPaused():
                    for i, s in enumerate(self.sessions):
                        if progress is not None and i % 200 == 0:
                            progress(i / n, f"Preparing {len(self.sessions):,} sessions for "
                                            f"{eng.title}")
                        found.append(eng.prepare(s, version))
                self._prepared[key] = found
        return found

    def _prepared_from_files(self, engine: str, version: str | None,
                             progress: Progress | None) -> Sequence[Any] | None:
        """``engine``'s table at ``version`` made as the corpus was loaded: every file
        imported again and prepared on every core, through the on-disk cache (another release
        of a guard, at 20,000 sessions: the files read again in this process one by one took
        minutes). None for a corpus of fewer than :data:`PARALLEL_MIN_FILES` files, an engine
        without tables, or when a file no longer holds the sessions it held when the corpus
        was loaded (then they are prepared one by one, which says so)."""
        sessions = self.sessions
        if (not isinstance(sessions, CorpusSessions) or len(sessions.parts) < PARALLEL_MIN_FILES
                or _table_spec(engine, version) is None):
            return None
        files = [(part.path, part.explicit) for part in sessions.parts]
        loaded = _ingested(files, [(engine, version)], self.root, ingest, None, progress, True)
        if [r.heads for r in loaded.files] != [part.heads for part in sessions.parts]:
            return None
        found = _opened(loaded.prepared.get((engine, get_engine(engine).prepare_key(version))))
        if found is not None:
            self._runs.update(loaded.runs)
        return found

    def read_ahead(self) -> None:
        """Read the engines' tables of the snapshot the corpus was opened from in a thread
        now, in engine order, rather than when each engine is first used: the dashboard draws
        its first chart from the re-runs kept beside them meanwhile, and the rows it draws
        need every engine's table (a cold disk read of seconds at 20,000 sessions). A table
        found damaged is left to :meth:`prepared`."""
        kept = [t for t in self._prepared.values() if isinstance(t, _KeptTable)]
        if kept:
            threading.Thread(target=_read_tables, args=(kept,), daemon=True,
                             name="loopscope-read-tables").start()

    def run_many(self, engine: str, config: Any) -> RunColumns:
        """Every session under ``config`` (``engine.run_many`` over :meth:`prepared`): read
        off the re-run made while loading when ``config`` is the one it used (the engine's
        default), each replay built when read."""
        eng = get_engine(engine)
        version = eng.version_of(config)
        # (A table kept in a snapshot is not read for a re-run kept beside it: only for the
        # replays read, the rows drawn and a session opened.)
        prepared = self._prepared.get((engine, eng.prepare_key(version)))
        if prepared is None:
            prepared = self.prepared(engine, version)
        kept = self._runs.get((engine, repr(config)))
        if kept is None and repr(config) == _defaults_spelled(engine, version):
            kept = self._runs.get((engine, repr(eng.default_config(version))))
        if kept is not None and len(kept[0]["first"]) == len(prepared):
            columns, detectors = kept
            return RunColumns.from_compact(
                columns, detectors, lambda i: eng.run(self.prepared(engine, version)[i], config))
        return run_many(eng, self.prepared(engine, version), config)

    def reruns_in_columns(self, engine: str, version: str | None = None) -> bool:
        """Whether a re-run of ``engine`` is a few vectorised passes over columns (every
        built-in guard but OpenClaw 2026.9), not every session run one by one in Python
        (seconds at 20,000 sessions)."""
        spec = _table_spec(engine, version)
        return spec is not None and not spec.keep_all

    def warm(self, engine: str, version: str | None = None) -> None:
        """Derive now what ``engine`` derives from the whole corpus on its first re-run under
        another configuration than the default (its arrays laid out for :meth:`run_many`,
        OpenHands' views of the sessions that nudge: 0.1-0.6 s each at 20,000 sessions), so
        that the first slider move does not wait for it. Engines whose table has columns of
        its own (their ``run_many`` reads them), prepared at ``version``, only; once per
        engine and version."""
        eng = get_engine(engine)
        key = (engine, eng.prepare_key(version))
        if (key in self._warmed or key not in self._prepared
                or not self.reruns_in_columns(engine, version)):
            # (an engine that runs session by session derives nothing from the whole: its
            # re-run is the move's own work, and would decode every session)
            return
        self._warmed.add(key)
        run_many(eng, self.prepared(engine, version), eng.default_config(version))

    def is_prepared(self, engine: str, version: str | None = None) -> bool:
        eng = get_engine(engine)
        return (engine, eng.prepare_key(version)) in self._prepared

    # ------------------------------------------------------------------ columns

    # Per-session columns the overview sorts by and tabulates on every slider move; they never
    # change for a loaded corpus, so they are computed once.

    @functools.cached_property
    def session_names(self) -> list[str]:
        """:meth:`display` of every session's source, aligned with :attr:`sessions`."""
        return [self.display(source) for source in self.sources]

    @functools.cached_property
    def heads(self) -> list[SessionHead]:
        """Every session's identity and size, aligned with :attr:`sessions` (without reading
        a session again)."""
        if isinstance(self.sessions, CorpusSessions):
            return self.sessions.heads
        return [head_of(s) for s in self.sessions]

    @functools.cached_property
    def call_counts(self) -> list[int]:
        """Every session's number of tool calls, aligned with :attr:`sessions`."""
        return [h.calls for h in self.heads]

    @functools.cached_property
    def turn_counts(self) -> list[int]:
        """Every session's number of assistant turns, aligned with :attr:`sessions`."""
        return [h.turns for h in self.heads]

    @functools.cached_property
    def sources(self) -> list[str]:
        """Every session's source, aligned with :attr:`sessions`."""
        return [h.source for h in self.heads]

    @functools.cached_property
    def formats(self) -> list[str]:
        """Every session's format id, aligned with :attr:`sessions`."""
        return [h.format for h in self.heads]

    @functools.cached_property
    def import_problem_counts(self) -> tuple[int, int]:
        """``(errors, warnings)`` of the import report (it never changes)."""
        severities = [p.severity for p in self.report.problems]
        return severities.count("error"), severities.count("warning")

    @functools.cached_property
    def import_totals(self) -> ImportTotals:
        """Files read, calls imported and calls not imported, of the import report (it never
        changes): the overview's banner."""
        return self.report.totals()

    # ------------------------------------------------------------------ labels

    def refresh_labels(self) -> None:
        """Re-read the labels sidecars (after a labelling change was saved)."""
        self.labels, self.label_problems, self.label_file = load_labels(self.root)
        self.label_stamp = file_stamp(self.label_file)

    def refresh_labels_if_changed(self) -> None:
        """Pick up a ``labels.csv`` edited outside the app, without re-importing sessions."""
        sidecar = _label_file_name(self.root)
        if sidecar != self.label_file or file_stamp(sidecar) != self.label_stamp:
            self.refresh_labels()

    def label_values(self) -> list[str | None]:
        """``"loop"``, ``"ok"`` or ``None`` per session, aligned with :attr:`sessions`."""
        out: list[str | None] = []
        for source in self.sources:
            label = self.labels.get(source)
            out.append(getattr(label, "label", None) if label is not None else None)
        return out

    # ------------------------------------------------------------------ names

    def display(self, source: str) -> str:
        """A session source or file path as a person should see it (uploads by their name,
        folder files relative to the folder)."""
        shown = self._displayed.get(source)
        if shown is None:
            shown = self._displayed[source] = self._display(source)
        return shown

    def _display(self, source: str) -> str:
        base, sep, rest = source.partition("#")
        shown = self.display_names.get(base)
        if shown is None and self.root and base.startswith(self.root):
            shown = base[len(self.root):].lstrip("/\\") or base
        return escape_for_display((shown or base) + (sep + rest if sep else ""), 160)


def build_corpus(
    files: Sequence[tuple[str, bool]],
    *,
    fingerprint: str,
    origin: str,
    root: str | None,
    display_names: Mapping[str, str] | None = None,
    ignored_files: int = 0,
    progress: Progress | None = None,
    on_large: Callable[[], object] | None = None,
    prepare: Sequence[tuple[str, str | None]] | None = None,
    workers: int | None = None,
    ingest_with: Callable[..., Ingested] | None = None,
    snapshot_in_background: bool = False,
) -> Corpus:
    """Import ``files`` (path, named explicitly?) and prepare them for ``prepare``'s engines
    (engine, version; default: every engine at its default version), on every core
    (:func:`ingest`, or ``ingest_with``: the same signature, e.g. on a Dask cluster) and
    through the on-disk cache: a corpus loaded before from unchanged files is read back from
    its snapshot (:func:`loopscope.cache.read_corpus`), else the snapshot is written once it
    is loaded.

    A file that fails to import yields its problems and no sessions; it never stops the others.
    The normalised sessions are not kept: :attr:`Corpus.sessions` reads one again from its file
    when asked. ``on_large`` is called once the files are in when there are at least
    :data:`LARGE_CORPUS` sessions (the dashboard freezes them out of the cyclic collector).
    Other engines prepare the sessions when first asked (:meth:`Corpus.prepared`).
    ``snapshot_in_background``: write the snapshot in a thread (the dashboard draws its first
    chart meanwhile; the process waits for it before it exits).
    """
    started = time.perf_counter()
    # (Its tables, joined from the workers' parts or read from a snapshot, are hundreds of MB
    # of new arrays at team scale: written faster in small pages, see there.)
    without_huge_pages()
    wanted = list(prepare) if prepare is not None else every_engine()
    loaded = _ingested(files, wanted, root, ingest_with or ingest, workers, progress,
                       snapshot_in_background)
    imports: list[FileImport] = []
    heads: list[SessionHead] = []
    parts: list[FileSessions] = []
    for (path, explicit), result in zip(files, loaded.files, strict=True):
        file_sessions = FileSessions(path, explicit, result.heads)
        seen, imported, aside = result.tally
        imports.append(FileImport(path, result.detection, file_sessions,  # type: ignore[arg-type]
                                  list(result.problems), calls_seen=seen,
                                  calls_imported=imported, calls_set_aside=dict(aside)))
        heads.extend(result.heads)
        parts.append(file_sessions)
    report = ImportReport(files=imports, ignored_files=ignored_files)
    sessions = CorpusSessions(parts, heads)
    if len(sessions) >= LARGE_CORPUS and on_large is not None:
        on_large()
    labels, label_problems, label_file = load_labels(root)
    if progress:
        progress(1.0, f"Loaded {len(sessions):,} sessions")
    corpus = Corpus(
        fingerprint=fingerprint,
        origin=origin,
        root=root,
        report=report,
        sessions=sessions,
        display_names=dict(display_names or {}),
        labels=labels,
        label_file=label_file,
        label_problems=label_problems,
        label_stamp=file_stamp(label_file),
        load_seconds=time.perf_counter() - started,
        cached_files=sum(r.from_cache for r in loaded.files),
    )
    corpus._prepared.update(loaded.prepared)
    corpus._runs.update(loaded.runs)
    return corpus


def every_engine() -> list[tuple[str, str | None]]:
    """Every registered engine at its default version: what a corpus is prepared for unless
    told otherwise (the dashboard, ``loopscope prepare``), and so its snapshot's engines."""
    from loopscope.engines import engine_names

    return [(name, None) for name in engine_names()]


def prepared_folder_files(target: Path) -> tuple[list[tuple[str, bool]], int, str]:
    """The files of a resolved folder (or one file) as ``loopscope prepare`` and the dashboard
    open it — ``(path, named explicitly?)`` in sorted order — the number of files the scan
    ignored, and the corpus root (the folder; a file's own folder)."""
    from loopscope.formats import expand_paths

    found, ignored = expand_paths([str(target)])
    return [(p, not scanned) for p, scanned in found], ignored, _root_of(target)


def _root_of(target: Path) -> str:
    """The corpus root of a resolved folder or file: the folder; a file's own folder."""
    return str(target if target.is_dir() else target.parent)


def _keys(wanted: Sequence[tuple[str, str | None]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((name, get_engine(name).prepare_key(version))
                              for name, version in wanted))


def head_of(session: Session) -> SessionHead:
    return SessionHead(session.id, session.source, session.format, len(session.turns),
                       len(session.calls))


# --------------------------------------------------------------------------- ingest


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
    runs: dict[tuple[str, str], tuple[dict[str, Any], tuple[str, ...]]] = field(
        default_factory=dict)
    """(engine, repr of its default configuration) → the compact columns of ``run_many``
    under that configuration (:meth:`RunColumns.compact`) and their detector names: a first
    chart needs no session decoded."""


PARALLEL_MIN_FILES = 64
"""Below this many files, ingest runs in this process (starting workers costs ~0.5 s)."""
PART_MAX_FILES = 64
"""The most files a worker imports as one part. Each part costs a fixed amount beyond its
files (each engine's table encoded and re-run, the arrays pickled back, and joined here):
at 20,000 files, parts of 64 files instead of 16 took ~1.5 s less of this process's time
and ~2 s less of the whole ingest (``benchmarks/README.md``, round 8)."""
PARTS_PER_WORKER = 8
"""With fewer files, parts as small as makes this many per worker: the workers then finish
close together (at the end, one may wait on another's last part)."""


def part_size(n_files: int, workers: int) -> int:
    """How many files go in one part of an ingest of ``n_files`` on ``workers``."""
    return max(1, min(PART_MAX_FILES, -(-n_files // (workers * PARTS_PER_WORKER))))


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
_Runs = dict[tuple[str, str], tuple[dict[str, Any], tuple[str, ...]]]
_PartResult = tuple[list["FileResult"], dict[tuple[str, str], _Part], _Runs]


def ingest(files: Sequence[tuple[str, bool]], wanted: Sequence[tuple[str, str | None]], *,
           workers: int | None = None, progress: Progress | None = None) -> Ingested:
    """Import and prepare every file: on every core (a process pool of ``workers``, default
    one per core) when there are many files. Each part of the files comes back with its
    sessions prepared as tables (arrays) and re-run under each engine's default
    configuration, joined here (:func:`join_parts`)."""
    if workers is None:
        workers = os.cpu_count() or 1
    without_huge_pages()  # (the parts are joined here: see there)
    wanted = list(wanted)
    n = len(files)
    parts: list[_PartResult] = []
    if workers <= 1 or n < PARALLEL_MIN_FILES:
        step = 50 if n >= 200 else 1
        for at in range(0, n, step):
            if progress:
                name = escape_for_display(Path(files[at][0]).name, 80)
                progress(at / max(n, 1), f"Reading {name} ({at + 1}/{n})")
            parts.append(ingest_part(list(files[at:at + step]), wanted))
    else:
        parts = _ingest_pool(files, wanted, workers, progress)
    return join_parts(parts, wanted)


def _ingest_pool(files: Sequence[tuple[str, bool]], wanted: list[tuple[str, str | None]],
                 workers: int, progress: Progress | None) -> list[_PartResult]:
    import concurrent.futures
    import multiprocessing

    n = len(files)
    size = part_size(n, workers)
    chunks = [list(files[i:i + size]) for i in range(0, n, size)]
    # "spawn": the dashboard's server runs threads, which a forked child must not inherit.
    context = multiprocessing.get_context("spawn")
    parts: list[_PartResult] = []
    done = 0
    message = reading_message(n, f"{workers} cores")
    try:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers,
                                                    mp_context=context) as pool:
            for part in pool.map(ingest_part, chunks, [wanted] * len(chunks)):
                parts.append(part)
                done += len(part[0])
                if progress:
                    progress(done / n, message(done))
    except concurrent.futures.process.BrokenProcessPool:
        # Workers could not start (e.g. a script without an ``if __name__ == "__main__"``
        # guard, which "spawn" needs): the rest in this process.
        for chunk in chunks[len(parts):]:
            parts.append(ingest_part(chunk, wanted))
    return parts


def ingest_part(files: list[tuple[str, bool]],
                wanted: list[tuple[str, str | None]]) -> _PartResult:
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
                 wanted: list[tuple[str, str | None]]) -> _PartResult:
    from loopscope.engines.base import run_many

    results = [ingest_file(path, explicit, wanted) for path, explicit in files]
    out: dict[tuple[str, str], _Part] = {}
    runs: _Runs = {}
    for name, version in wanted:
        eng = get_engine(name)
        key = (name, eng.prepare_key(version))
        spec = _table_spec(name, version)
        if spec is None or not all(key in r.prepared for r in results):
            continue
        objects = [p for r in results for p in r.prepared[key]]
        table = None
        if key not in out:
            out[key] = ("table", dict(spec.encode(objects)))
            if not spec.keep_all:  # columns of its own: run_many reads them
                table = spec.open(out[key][1], trusted=True)
        config = eng.default_config(version)
        run_key = (name, repr(config))
        if run_key not in runs:
            with contextlib.suppress(Exception):  # (then run when asked)
                columns = run_many(eng, table if table is not None else objects, config)
                runs[run_key] = (columns.compact(), columns.detectors)
    return [replace(r, prepared={}) for r in results], out, runs


def join_parts(parts: Sequence[_PartResult],
               wanted: Sequence[tuple[str, str | None]]) -> Ingested:
    """The parts of :func:`ingest_part`, in file order, as one :class:`Ingested`.

    Each engine's columns leave the parts as soon as they are joined (the parts' dicts are
    emptied of them): the parts and the joined tables are never both held whole, so the
    peak is the tables plus one engine's parts, not twice the tables."""
    from loopscope.engines.base import RunColumns

    files = [r for results, _, _ in parts for r in results]
    prepared: dict[tuple[str, str], Sequence[Any]] = {}
    for name, version in wanted:
        key = (name, get_engine(name).prepare_key(version))
        if key in prepared or not all(key in data for _, data, _ in parts):
            continue
        spec = _table_spec(name, version)
        if spec is not None:
            columns = [data.pop(key)[1] for _, data, _ in parts]
            prepared[key] = spec.join(columns)
            del columns
    runs: _Runs = {}
    for run_key in (parts[0][2] if parts else {}):
        if all(run_key in part_runs for _, _, part_runs in parts):
            runs[run_key] = RunColumns.join_compact([part_runs[run_key]
                                                     for _, _, part_runs in parts])
    return Ingested(files, prepared, runs)


def _table_spec(name: str, version: str | None) -> Any:
    """The engine's ``table_spec(version)``, or None (engines written before tables).

    Kept per engine object and version: ingest asks for it per file and engine, and making it
    cost as much as preparing a short session."""
    eng = get_engine(name)
    found = _TABLE_SPECS.get((name, version))
    if found is not None and found[0] is eng:
        return found[1]
    make = getattr(eng, "table_spec", None)
    spec = make(version) if make is not None else None
    _TABLE_SPECS[(name, version)] = (eng, spec)
    return spec


_TABLE_SPECS: dict[tuple[str, str | None], tuple[Any, Any]] = {}
"""(engine name, version) → (the engine, its table spec), for :func:`_table_spec`."""


def ingest_file(path: str, explicit: bool,
                wanted: Sequence[tuple[str, str | None]]) -> FileResult:
    """One file imported and prepared for each wanted engine that writes its prepared data as
    a table (``table_spec``; the others prepare where they are used). Never raises for a bad
    file."""
    from loopscope.formats import load_file

    imported = _load_one(load_file, path, explicit)
    prepared: dict[tuple[str, str], list[Any]] = {}
    for name, version in wanted:
        eng = get_engine(name)
        key = (name, eng.prepare_key(version))
        if key in prepared or _table_spec(name, version) is None:
            continue
        with contextlib.suppress(Exception):  # an engine failing on one file must not lose
            prepared[key] = [eng.prepare(s, version) for s in imported.sessions]  # the others
    return FileResult(path, imported.detection, tuple(imported.problems),
                      [head_of(s) for s in imported.sessions], prepared,
                      tally=(imported.calls_seen, imported.calls_imported,
                             dict(imported.calls_set_aside)))


# --------------------------------------------------------------------------- read back


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """One file of a folder read back from the on-disk cache (see :func:`read_prepared`)."""

    path: str
    """The path as the caller reached it (``expand_paths`` of the path it gave)."""
    scanned: bool
    result: FileResult
    """Its import outcome (problems, detection, call tally, session heads)."""
    rows: range
    """Its sessions' positions in :attr:`PreparedFolder.prepared`."""
    reached_as: str
    """The path the snapshot names it by (the resolved folder's); a session's ``source``
    starts with it."""

    def source(self, recorded: str) -> str:
        """A session's or problem's ``source`` as if the file had been imported by
        :attr:`path`."""
        if recorded.startswith(self.reached_as):
            return self.path + recorded[len(self.reached_as):]
        return recorded

    def problems(self) -> list[Problem]:
        """The file's import problems, named as if imported by :attr:`path`."""
        return [p if self.source(p.source) == p.source else replace(p, source=self.source(p.source))
                for p in self.result.problems]


@dataclass(frozen=True, slots=True)
class PreparedFolder:
    """A folder's sessions prepared for one engine, read back from the on-disk cache."""

    files: list[PreparedFile]
    prepared: Sequence[Any]
    """The engine's prepared sessions, file after file (indexable: a table decodes a row
    when it is read)."""

    def problems(self) -> list[Problem]:
        """Every file's import problems, in file order, as an import of the folder gives."""
        return [p for f in self.files for p in f.problems()]

    def heads(self) -> list[SessionHead]:
        """Every session's identity and size, in file order, its ``source`` named as an import
        of the folder names it."""
        return [replace(h, source=f.source(h.source)) for f in self.files for h in f.result.heads]


def read_prepared(path: str, engine: str, version: str | None) -> PreparedFolder | None:
    """The sessions under ``path`` prepared for ``engine`` at ``version``, when the on-disk
    cache holds them for exactly these files as they are now: the snapshot that ``loopscope
    prepare`` or the dashboard wrote for the folder (every engine at its default version).
    ``None`` otherwise — the cache is off, a file changed, was added or removed, the engine
    or version was not prepared, or the snapshot is damaged — and the caller imports.

    Read-only: a cold command line pays nothing for the cache. What the files give is what an
    import gives (the snapshot is keyed by every file's stamp, and checked when read).
    """
    from loopscope.formats import expand_paths

    if not cache.active() or not cache.has_corpora():
        return None
    target = Path(path).resolve()
    if not target.exists() or not cache.folder_marked(_root_of(target)):
        return None
    given, _ = expand_paths([path])
    files, _, root = prepared_folder_files(target)
    # The files as the dashboard and ``loopscope prepare`` list them (the resolved folder),
    # one for one with the files as reached through ``path``.
    given_root, found_root = os.fspath(path), str(target)
    if len(given) != len(files) or any(
            g_scanned == f_explicit or not g.startswith(given_root) or not f.startswith(found_root)
            or g[len(given_root):].lstrip("/\\") != f[len(found_root):].lstrip("/\\")
            for (g, g_scanned), (f, f_explicit) in zip(given, files, strict=True)):
        return None
    without_huge_pages()  # (a table of hundreds of MB is read: see there)
    wanted = every_engine()
    names = _snapshot_names(files, wanted, root)
    snapshot = _exact_snapshot(names, files, wanted) if names is not None else None
    if snapshot is None:
        return None
    prepared = _opened(snapshot.ingested.prepared.get(
        (engine, get_engine(engine).prepare_key(version))))
    if prepared is None or not _read_whole_pools(prepared):
        return None
    out: list[PreparedFile] = []
    at = 0
    for (reached, scanned), (resolved, _), result in zip(given, files, snapshot.ingested.files,
                                                         strict=True):
        out.append(PreparedFile(reached, scanned, result, range(at, at + len(result.heads)),
                                resolved))
        at += len(result.heads)
    return PreparedFolder(out, prepared)


# --------------------------------------------------------------------------- snapshots


def _snapshot_specs(wanted: Sequence[tuple[str, str | None]]) -> list[Any]:
    """The table specs of the wanted engines (one per engine and prepare key)."""
    specs: dict[tuple[str, str], Any] = {}
    for name, version in wanted:
        spec = _table_spec(name, version)
        if spec is not None:
            specs.setdefault((name, spec.key), spec)
    return list(specs.values())


@dataclass(frozen=True, slots=True)
class _Names:
    """Where a corpus's snapshot is: its key, the folder's pointer, each file's stamp."""

    key: str
    pointer: str | None
    stamps: list[str]
    root: str | None


def _ingested(files: Sequence[tuple[str, bool]], wanted: Sequence[tuple[str, str | None]],
              root: str | None, ingest_with: Callable[..., Ingested], workers: int | None,
              progress: Progress | None, snapshot_in_background: bool) -> Ingested:
    """``files`` imported and prepared for ``wanted`` (:func:`build_corpus`): read from the
    on-disk cache when kept, else ingested (and kept)."""
    names = _snapshot_names(files, wanted, root) if cache.active() else None
    loaded, exact = None, False
    if names is not None:
        loaded, exact = _load_from_snapshots(names, files, wanted, ingest_with, workers,
                                             progress)
    if loaded is None:
        loaded = ingest_with(files, wanted, workers=workers, progress=progress)
    if names is not None and not exact:
        if snapshot_in_background:
            threading.Thread(target=_write_snapshot, args=(names, list(files), wanted, loaded),
                             name="loopscope-snapshot").start()
        else:
            if progress:
                progress(1.0, "Keeping the prepared sessions for the next start")
            _write_snapshot(names, files, wanted, loaded)
    return loaded


def _snapshot_names(files: Sequence[tuple[str, bool]], wanted: Sequence[tuple[str, str | None]],
                    root: str | None) -> _Names | None:
    specs = _snapshot_specs(wanted)
    if not specs:
        return None
    tables = [(spec.engine, spec.key) for spec in specs]
    stamps = [cache.file_stamp(path) for path, _ in files]
    return _Names(cache.corpus_key(files, tables, stamps),
                  cache.pointer_name(root, tables) if root else None, stamps, root)


def _load_from_snapshots(names: _Names, files: Sequence[tuple[str, bool]],
                         wanted: Sequence[tuple[str, str | None]],
                         ingest_with: Callable[..., Ingested], workers: int | None,
                         progress: Progress | None) -> tuple[Ingested | None, bool]:
    """``(corpus, exact)``: the corpus read from its snapshot (exact), else built from the
    folder's last snapshot and the files that changed since (not exact), else None."""
    def reading() -> None:  # said only once a kept snapshot is really there to read
        if progress:
            progress(0.0, "Reading the prepared sessions kept from an earlier start")

    found = _exact_snapshot(names, files, wanted, reading)
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


def _exact_snapshot(names: _Names, files: Sequence[tuple[str, bool]],
                    wanted: Sequence[tuple[str, str | None]],
                    on_found: Callable[[], None] | None = None) -> _Snapshot | None:
    """The snapshot of exactly ``files`` as they are now (``names.stamps``), if kept."""
    found = _read_snapshot(names.key, wanted, on_found)
    if found is None or found.files != [(path, explicit, stamp) for (path, explicit), stamp
                                        in zip(files, names.stamps, strict=True)]:
        return None
    return found


@dataclass(frozen=True, slots=True)
class _Snapshot:
    files: list[tuple[str, bool, str]]
    """(path, named explicitly?, stamp) of each file."""
    ingested: Ingested


def _with_changes(old: _Snapshot, names: _Names, files: Sequence[tuple[str, bool]],
                  wanted: Sequence[tuple[str, str | None]],
                  ingest_with: Callable[..., Ingested], workers: int | None,
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
    for spec in _snapshot_specs(wanted):
        key = (spec.engine, spec.key)
        before, after = _opened(old.ingested.prepared.get(key)), new.prepared.get(key)
        if before is None or after is None:
            return None
        columns = gather(spec.schema, concat(spec.schema, [before.columns,  # type: ignore[attr-defined]
                                                            after.columns]), picked)  # type: ignore[attr-defined]
        prepared[key] = spec.open(compact_pool(spec.schema, columns) if dropped else columns,
                                  trusted=True)
    runs: _Runs = {}
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


def _write_snapshot(names: _Names, files: Sequence[tuple[str, bool]],
                    wanted: Sequence[tuple[str, str | None]], loaded: Ingested) -> None:
    """Keep ``loaded`` as the snapshot ``names.key`` (when every engine's table is there),
    remembered as the folder's last; then prune the cache."""
    from loopscope.engines.table import PreparedTable

    specs = _snapshot_specs(wanted)
    tables = [loaded.prepared.get((spec.engine, spec.key)) for spec in specs]
    if not all(isinstance(t, PreparedTable) for t in tables):
        return
    arrays: dict[str, Any] = {}
    for k, table in enumerate(tables):
        assert isinstance(table, PreparedTable)
        for column, value in table.columns.items():
            arrays[f"t{k}.{column}"] = value
    runs = list(loaded.runs.items())
    for k, (_key, (columns, _detectors)) in enumerate(runs):
        for column, value in columns.items():
            arrays[f"r{k}.{column}"] = value
    index = {
        "files": [[path, explicit, stamp,
                   [r.detection.format, r.detection.layout, r.detection.reason,
                    r.detection.unsupported],
                   cache.problems_doc(r.problems), [r.tally[0], r.tally[1], dict(r.tally[2])],
                   len(r.heads)]
                  for (path, explicit), stamp, r in zip(files, names.stamps, loaded.files,
                                                        strict=True)],
        "heads": cache.heads_doc([h for r in loaded.files for h in r.heads]),
        "tables": [[spec.engine, spec.key] for spec in specs],
        "runs": [[engine, config, list(detectors)]
                 for (engine, config), (_columns, detectors) in runs],
    }
    if cache.write_corpus(names.key, index, arrays) and names.pointer and names.root:
        cache.remember_corpus(names.pointer, names.key)
        cache.mark_folder(names.root)
    cache.prune()


def _read_snapshot(key: str, wanted: Sequence[tuple[str, str | None]],
                   on_found: Callable[[], None] | None = None) -> _Snapshot | None:
    """The snapshot ``key``, checked; None when there is none or it is damaged (it is then
    deleted). ``on_found`` is called once one is there to read (and only then)."""
    from loopscope.engines.table import TableError

    kept = cache.open_corpus(key)
    if kept is None:
        return None
    if on_found is not None:
        on_found()
    doc = kept.index
    specs = _snapshot_specs(wanted)
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
            (spec.engine, spec.key): _KeptTable(spec, kept, f"t{k}.", len(heads))
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
    return _Snapshot(files, Ingested(results, prepared, runs))


class _KeptTable(Sequence[Any]):
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


def _defaults_spelled(engine: str, version: str) -> str:
    """The repr of ``engine``'s configuration at ``version`` built from every setting's
    default spelled out — what the dashboard's controls give before any is moved. It may
    differ from the engine's ``default_config`` (OpenClaw's keeps the real guard's document,
    with no value given) while behaving the same (tested for every engine and version), so
    the re-run made while loading serves both."""
    eng = get_engine(engine)
    defaults = {spec.name: spec.default for spec in eng.settings_for(version)}
    return repr(eng.config(defaults, version).config)


def _pool_damaged(found: Sequence[Any]) -> bool:
    """Whether ``found`` is a table whose string pool, read piece by piece from a snapshot
    (:class:`~loopscope.cache.KeptBytes`), had a piece fail its check."""
    columns = getattr(found, "columns", None)
    return isinstance(columns, dict) and bool(getattr(columns.get("string_bytes"), "damaged",
                                                      False))


def _read_whole_pools(found: Any) -> bool:
    """Read every piece of ``found``'s string pool now, when it is read piece by piece from a
    snapshot (a command line reads every session: better checked before the first line is
    printed); False when a piece is damaged."""
    columns = getattr(found, "columns", None)
    if not isinstance(columns, dict):
        return True
    pool = columns.get("string_bytes")
    if not getattr(pool, "lazy_bytes", False):
        return True
    import numpy as np

    try:
        columns["string_bytes"] = np.asarray(pool)
    except cache.DamagedSnapshot:
        return False
    return True


def _read_tables(tables: Sequence[_KeptTable]) -> None:
    for table in tables:
        _opened(table)


def _opened(found: Sequence[Any] | None) -> Sequence[Any] | None:
    """``found`` with a snapshot's table read (:class:`_KeptTable`); None when it is
    damaged."""
    if isinstance(found, _KeptTable):
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


# --------------------------------------------------------------------------- sessions again


KEEP_SESSIONS_UP_TO = int(os.environ.get("LOOPSCOPE_KEEP_SESSIONS", "3000"))
"""A corpus of at most this many sessions keeps each file's sessions once they were read
again (pages that walk every session then pay for it once); a larger one keeps only the last
few files, so memory stays that of the prepared data."""


class FileSessions(Sequence[Session]):
    """A file's sessions, read again from the file when asked (:func:`reload`), and kept when
    ``keep`` (a small corpus)."""

    def __init__(self, path: str, explicit: bool, heads: Sequence[SessionHead],
                 keep: bool = False) -> None:
        self.path = path
        self.explicit = explicit
        self.heads = list(heads)
        self.keep = keep
        self._kept: list[Session] | None = None

    def _sessions(self) -> list[Session]:
        if self._kept is not None:
            return self._kept
        found = reload(self.path, self.explicit, self.heads) if self.heads else []
        if self.keep:
            self._kept = found
        return found

    def __len__(self) -> int:
        return len(self.heads)

    def __getitem__(self, index: Any) -> Any:
        return self._sessions()[index]

    def __iter__(self) -> Any:
        return iter(self._sessions())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class CorpusSessions(Sequence[Session]):
    """Every session of a corpus, in file order, each read again from its file when asked;
    :attr:`heads` tells their identity and size without reading them."""

    def __init__(self, parts: Sequence[FileSessions], heads: list[SessionHead]) -> None:
        self.parts = list(parts)
        self.heads = heads
        if len(heads) <= KEEP_SESSIONS_UP_TO:
            for part in self.parts:
                part.keep = True
        self._part_of: list[tuple[int, int]] = [
            (k, j) for k, part in enumerate(self.parts) for j in range(len(part))]

    def __len__(self) -> int:
        return len(self.heads)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        k, j = self._part_of[index]
        return self.parts[k][j]

    def __iter__(self) -> Any:
        for part in self.parts:
            yield from part

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


_RELOADED: OrderedDict[str, list[Session]] = OrderedDict()
_RELOADED_FILES = 8
_reload_lock = threading.Lock()


class SessionsChanged(RuntimeError):
    """A file no longer holds the sessions it held when the corpus was loaded."""


def reload(path: str, explicit: bool, heads: Sequence[SessionHead]) -> list[Session]:
    """A file's sessions read again (the last few files are kept); :class:`SessionsChanged`
    when they are not the ones loaded before (the file was rewritten: load the folder again)."""
    from loopscope.formats import load_file

    with _reload_lock:
        found = _RELOADED.get(path)
        if found is not None:
            _RELOADED.move_to_end(path)
    if found is None:
        found = _load_one(load_file, path, explicit).sessions
        with _reload_lock:
            _RELOADED[path] = found
            while len(_RELOADED) > _RELOADED_FILES:
                _RELOADED.popitem(last=False)
    if [head_of(s) for s in found] != list(heads):
        with _reload_lock:
            _RELOADED.pop(path, None)
        raise SessionsChanged(f"{escape_for_display(path)} changed since it was loaded; "
                              "load the sessions again")
    return found


def _load_one(load_file: Callable[..., FileImport], path: str, explicit: bool) -> FileImport:
    from loopscope.formats.base import Detection

    try:
        return load_file(path, scanned=not explicit)
    except Exception as exc:  # an importer must never raise; if one does, keep going
        return FileImport(
            path,
            Detection(None, "unknown", "the importer failed"),
            [],
            [Problem(path, None, None, "error", "internal_error", f"the importer failed: {exc!r}")],
        )


def file_stamp(path: str | None) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of ``path``, or ``None`` when it cannot be read."""
    if path is None:
        return None
    try:
        st_ = os.stat(path)
    except OSError:
        return None
    return (st_.st_mtime_ns, st_.st_size)


def _label_file_name(root: str | None) -> str | None:
    from loopscope.labels import find_label_file

    return find_label_file(root) if root else None


def load_labels(root: str | None) -> tuple[Mapping[str, Any], list[Problem], str | None]:
    """Labels from the ``labels.csv`` sidecars under ``root``, keyed by session source."""
    if root is None:
        return {}, [], None
    from loopscope import labels as labels_mod

    try:
        loaded = labels_mod.labels_for_sessions([root])
    except OSError as exc:
        return {}, [Problem(root, None, None, "warning", "labels_unreadable", str(exc))], None
    return loaded.labels, list(loaded.problems), labels_mod.find_label_file(root)
