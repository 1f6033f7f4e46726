"""A loaded corpus: the sessions of some files, how their import went, their labels, and each
engine's prepared sessions (made on first use and kept).

The dashboard keeps one per data source; scripts build one with :func:`build_corpus`. Every
method takes the :class:`~loopscope.engines.contract.Engine` object itself: names are resolved
where a person typed them (the command line, the dashboard).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopscope.bulk import CollectorPaused, without_huge_pages
from loopscope.cache import SessionHead
from loopscope.corpus import ingestion
from loopscope.corpus.ingestion import Ingested, Progress, Runs, Wanted, every_engine, table_spec_of
from loopscope.corpus.sessions import CorpusSessions, FileSessions, head_of
from loopscope.corpus.snapshot import KeptTable, load_or_ingest, opened, pool_damaged, read_tables
from loopscope.engines import Engine
from loopscope.engines.base import PreparedSessions, RunColumns
from loopscope.formats.base import FileImport, ImportReport, ImportTotals
from loopscope.model import Problem, Session, escape_for_display

__all__ = ["LARGE_CORPUS", "Corpus", "build_corpus", "defaults_spelled", "file_stamp",
           "load_labels"]

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
    _runs: Runs = field(default_factory=dict, repr=False, compare=False)
    """Re-runs made while loading (:attr:`Ingested.runs`)."""
    _prepare_lock: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                          compare=False)
    _displayed: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """:meth:`display` results (asked for every session on every rerun)."""
    _warmed: set[tuple[str, str]] = field(default_factory=set, repr=False, compare=False)
    """Engines (and prepare keys) :meth:`warm` has run."""

    # ------------------------------------------------------------------ prepared sessions

    def prepared(self, engine: Engine[Any, Any], version: str | None = None,
                 progress: Progress | None = None) -> Sequence[Any]:
        """``engine.prepare(session, version)`` of every session, aligned with
        :attr:`sessions`; made once per engine and prepare key, then kept. For an engine with
        a ``table_spec`` loaded by :func:`build_corpus`, a
        :class:`~loopscope.engines.table.PreparedTable` (sessions decoded when read: read its
        columns, or ``run_many``, to go over all of them)."""
        key = (engine.name, engine.prepare_key(version))
        found = self._prepared.get(key)
        if found is not None:
            # A table of a snapshot is read now (under its own lock: another engine's table
            # read meanwhile does not hold this one up); one found damaged, now or as a
            # session was read, is prepared again below.
            usable = None if pool_damaged(found) else opened(found)
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
                                            f"{engine.title}")
                        found.append(engine.prepare(s, version))
                self._prepared[key] = found
        return found

    def _prepared_from_files(self, engine: Engine[Any, Any], version: str | None,
                             progress: Progress | None) -> Sequence[Any] | None:
        """``engine``'s table at ``version`` made as the corpus was loaded: every file
        imported again and prepared on every core, through the on-disk cache (another release
        of a guard on a large corpus: reading the files again here one by one is far slower).
        None for a corpus of fewer than :data:`PARALLEL_MIN_FILES` files, an engine without
        tables, or when a file no longer holds the sessions it held when the corpus was loaded
        (then they are prepared one by one, which says so)."""
        sessions = self.sessions
        if (not isinstance(sessions, CorpusSessions)
                or len(sessions.parts) < ingestion.PARALLEL_MIN_FILES
                or table_spec_of(engine, version) is None):
            return None
        files = [(part.path, part.explicit) for part in sessions.parts]
        loaded = load_or_ingest(files, [(engine, version)], self.root, ingestion.ingest, None,
                                progress, True)
        if [r.heads for r in loaded.files] != [part.heads for part in sessions.parts]:
            return None
        found = opened(loaded.prepared.get((engine.name, engine.prepare_key(version))))
        if found is not None:
            self._runs.update(loaded.runs)
        return found

    def read_ahead(self) -> None:
        """Read the engines' tables of the snapshot the corpus was opened from in a thread
        now, in engine order, rather than when each engine is first used: the dashboard draws
        its first chart from the re-runs kept beside them meanwhile, and the rows it draws
        need every engine's table (a cold disk read of seconds on a large corpus). A table
        found damaged is left to :meth:`prepared`."""
        kept = [t for t in self._prepared.values() if isinstance(t, KeptTable)]
        if kept:
            threading.Thread(target=read_tables, args=(kept,), daemon=True,
                             name="loopscope-read-tables").start()

    def run_many(self, engine: Engine[Any, Any], config: Any) -> RunColumns:
        """Every session under ``config`` (``engine.run_many`` over :meth:`prepared`): read
        off the re-run made while loading when ``config`` is the one it used (the engine's
        default), each replay built when read."""
        version = engine.version_of(config)
        # (A table kept in a snapshot is not read for a re-run kept beside it: only for the
        # replays read, the rows drawn and a session opened.)
        prepared = self._prepared.get((engine.name, engine.prepare_key(version)))
        if prepared is None:
            prepared = self.prepared(engine, version)
        kept = self._runs.get((engine.name, repr(config)))
        if kept is None and repr(config) == defaults_spelled(engine, version):
            kept = self._runs.get((engine.name, repr(engine.default_config(version))))
        if kept is not None and len(kept[0]["first"]) == len(prepared):
            columns, detectors = kept
            return RunColumns.from_compact(
                columns, detectors,
                lambda i: engine.run(self.prepared(engine, version)[i], config))
        return engine.run_many(self.prepared(engine, version), config)

    def reruns_in_columns(self, engine: Engine[Any, Any], version: str | None = None) -> bool:
        """Whether a re-run of ``engine`` is a few vectorised passes over columns (every
        built-in guard but OpenClaw 2026.9), not every session run one by one in Python
        (seconds on a large corpus)."""
        spec = table_spec_of(engine, version)
        return spec is not None and not spec.keep_all

    def warm(self, engine: Engine[Any, Any], version: str | None = None) -> None:
        """Derive now what ``engine`` derives from the whole corpus on its first re-run under
        another configuration than the default (its arrays laid out for :meth:`run_many`,
        OpenHands' views of the sessions that nudge), so that the first slider move does not
        wait for it. Engines whose table has columns of its own (their ``run_many`` reads
        them), prepared at ``version``, only; once per engine and version."""
        key = (engine.name, engine.prepare_key(version))
        if (key in self._warmed or key not in self._prepared
                or not self.reruns_in_columns(engine, version)):
            # (an engine that runs session by session derives nothing from the whole: its
            # re-run is the move's own work, and would decode every session)
            return
        self._warmed.add(key)
        engine.run_many(self.prepared(engine, version), engine.default_config(version))

    def is_prepared(self, engine: Engine[Any, Any], version: str | None = None) -> bool:
        """Whether :meth:`prepared` of ``engine`` at ``version`` is made (or read) already."""
        return (engine.name, engine.prepare_key(version)) in self._prepared

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
    prepare: Wanted | None = None,
    workers: int | None = None,
    ingest_with: Callable[..., Ingested] | None = None,
    snapshot_in_background: bool = False,
) -> Corpus:
    """Import ``files`` (path, named explicitly?) and prepare them for ``prepare``'s engines
    (engine, version; default: every engine at its default version), on every core
    (:func:`~loopscope.corpus.ingestion.ingest`, or ``ingest_with``: the same signature, e.g.
    on a Dask cluster) and
    through the on-disk cache: a corpus loaded before from unchanged files is read back from
    its snapshot (:func:`loopscope.cache.read_corpus`), else the snapshot is written once it
    is loaded.

    A file that fails to import yields its problems and no sessions; it never stops the others.
    The normalised sessions are not kept: :attr:`Corpus.sessions` reads one again from its file
    when asked. ``on_large`` is called once the files are in when there are at least
    :data:`LARGE_CORPUS` sessions (the dashboard freezes them out of the cyclic collector).
    Other engines prepare the sessions when first asked (:meth:`Corpus.prepared`).
    ``snapshot_in_background``: write the snapshot of a changed folder in a thread (the
    dashboard draws its first chart meanwhile; the process waits for it before it exits),
    and so that of a folder with no snapshot yet whose tables fit the dashboard's budget
    (:data:`~loopscope.corpus.snapshot.HOLD_IN_MEMORY_BYTES`). A larger one, or any without
    ``snapshot_in_background``, is written into its snapshot as it is joined, before this
    returns: its tables are then read back from it as used, never all held twice
    (:func:`~loopscope.corpus.snapshot.load_or_ingest`).
    """
    started = time.perf_counter()
    # (Its tables, joined from the workers' parts or read from a snapshot, are hundreds of MB
    # of new arrays at team scale: written faster in small pages, see there.)
    without_huge_pages()
    wanted = list(prepare) if prepare is not None else every_engine()
    loaded = load_or_ingest(files, wanted, root, ingest_with or ingestion.ingest, workers,
                            progress, snapshot_in_background)
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


def defaults_spelled(engine: Engine[Any, Any], version: str) -> str:
    """The repr of ``engine``'s configuration at ``version`` built from every setting's
    default spelled out — what the dashboard's controls give before any is moved. It may
    differ from the engine's ``default_config`` (OpenClaw's keeps the real guard's document,
    with no value given) while behaving the same (tested for every engine and version), so
    the re-run made while loading serves both."""
    defaults = {spec.name: spec.default for spec in engine.settings_for(version)}
    return repr(engine.config(defaults, version).config)


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
