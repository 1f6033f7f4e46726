"""A loaded corpus: the sessions of some files, how their import went, their labels, and each
engine's prepared sessions (made on first use and kept).

The dashboard keeps one per data source; scripts build one with :func:`build_corpus`.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopscope.bulk import CollectorPaused
from loopscope.engines import get_engine
from loopscope.formats.base import FileImport, ImportReport
from loopscope.model import Problem, Session, escape_for_display

__all__ = ["LARGE_CORPUS", "Corpus", "Progress", "build_corpus"]

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
    sessions: list[Session]
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
    _prepared: dict[tuple[str, str], list[Any]] = field(default_factory=dict, repr=False)
    _prepare_lock: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                          compare=False)
    _displayed: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    """:meth:`display` results (asked for every session on every rerun)."""

    # ------------------------------------------------------------------ prepared sessions

    def prepared(self, engine: str, version: str | None = None,
                 progress: Progress | None = None) -> list[Any]:
        """``engine.prepare(session, version)`` of every session, aligned with
        :attr:`sessions`; made once per engine and prepare key, then kept."""
        eng = get_engine(engine)
        key = (engine, eng.prepare_key(version))
        found = self._prepared.get(key)
        if found is not None:
            return found
        with self._prepare_lock:
            found = self._prepared.get(key)
            if found is None:
                found = []
                n = max(len(self.sessions), 1)
                with CollectorPaused():
                    for i, s in enumerate(self.sessions):
                        if progress is not None and i % 200 == 0:
                            progress(i / n, f"Preparing {len(self.sessions)} sessions for "
                                            f"{eng.title}")
                        found.append(eng.prepare(s, version))
                self._prepared[key] = found
        return found

    def is_prepared(self, engine: str, version: str | None = None) -> bool:
        eng = get_engine(engine)
        return (engine, eng.prepare_key(version)) in self._prepared

    # ------------------------------------------------------------------ columns

    # Per-session columns the overview sorts by and tabulates on every slider move; they never
    # change for a loaded corpus, so they are computed once.

    @functools.cached_property
    def session_names(self) -> list[str]:
        """:meth:`display` of every session's source, aligned with :attr:`sessions`."""
        return [self.display(s.source) for s in self.sessions]

    @functools.cached_property
    def call_counts(self) -> list[int]:
        """Every session's number of tool calls, aligned with :attr:`sessions`."""
        return [len(s.calls) for s in self.sessions]

    @functools.cached_property
    def import_problem_counts(self) -> tuple[int, int]:
        """``(errors, warnings)`` of the import report (it never changes)."""
        severities = [p.severity for p in self.report.problems]
        return severities.count("error"), severities.count("warning")

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
        for s in self.sessions:
            label = self.labels.get(s.source)
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
) -> Corpus:
    """Import ``files`` (path, named explicitly?) one by one.

    A file that fails to import yields its problems and no sessions; it never stops the others.
    ``on_large`` is called once the sessions are imported when there are at least
    :data:`LARGE_CORPUS` of them (the dashboard freezes them out of the cyclic collector).
    Engines prepare the sessions when first asked (:meth:`Corpus.prepared`).
    """
    from loopscope.formats import load_file

    started = time.perf_counter()
    imports: list[FileImport] = []
    n = max(len(files), 1)
    for i, (path, explicit) in enumerate(files):
        if progress:
            progress(i / n, f"Reading {escape_for_display(Path(path).name, 80)} "
                            f"({i + 1}/{len(files)})")
        imports.append(_load_one(load_file, path, explicit))
    report = ImportReport(files=imports, ignored_files=ignored_files)
    sessions = report.sessions
    if len(sessions) >= LARGE_CORPUS and on_large is not None:
        on_large()
    labels, label_problems, label_file = load_labels(root)
    if progress:
        progress(1.0, f"Loaded {len(sessions)} sessions")
    return Corpus(
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
    )


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
