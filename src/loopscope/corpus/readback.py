"""A folder's sessions read back from the on-disk cache for the command line: the snapshot
that ``loopscope prepare`` or the dashboard wrote serves ``replay``, ``sweep`` and ``compare``
when it holds exactly the folder's files as they are now, so a command line neither imports
nor prepares them again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loopscope import cache
from loopscope.bulk import without_huge_pages
from loopscope.cache import SessionHead
from loopscope.corpus.ingestion import FileResult, every_engine
from loopscope.corpus.snapshot import exact_snapshot, opened, read_whole_pools, snapshot_names
from loopscope.engines import Engine
from loopscope.model import Problem

__all__ = ["PreparedFile", "PreparedFolder", "prepared_folder_files", "read_prepared",
           "root_of"]


def prepared_folder_files(target: Path) -> tuple[list[tuple[str, bool]], int, str]:
    """The files of a resolved folder (or one file) as ``loopscope prepare`` and the dashboard
    open it — ``(path, named explicitly?)`` in sorted order — the number of files the scan
    ignored, and the corpus root (the folder; a file's own folder)."""
    from loopscope.formats import expand_paths

    found, ignored = expand_paths([str(target)])
    return [(p, not scanned) for p, scanned in found], ignored, root_of(target)


def root_of(target: Path) -> str:
    """The corpus root of a resolved folder or file: the folder; a file's own folder."""
    return str(target if target.is_dir() else target.parent)


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


def read_prepared(path: str, engine: Engine[Any, Any], version: str | None, *,
                  whole_pools: bool = True) -> PreparedFolder | None:
    """The sessions under ``path`` prepared for ``engine`` at ``version``, when the on-disk
    cache holds them for exactly these files as they are now: the snapshot that ``loopscope
    prepare`` or the dashboard wrote for the folder (every engine at its default version).
    ``None`` otherwise — the cache is off, a file changed, was added or removed, the engine
    or version was not prepared, or the snapshot is damaged — and the caller imports.

    Read-only: a cold command line pays nothing for the cache. What the files give is what an
    import gives (the snapshot is keyed by every file's stamp, and checked when read).

    ``whole_pools``: the table's string pool is read and checked whole here (a command that
    prints every session's steps reads all of it anyway, and a damaged piece then makes this
    ``None`` before the first line). Without it, the pool is read piece by piece when used —
    a batch run (``run_many``) of the engines' columns reads none of it — and the caller must
    take :class:`~loopscope.cache.DamagedSnapshot` from any use of :attr:`PreparedFolder.prepared`
    as "import instead".
    """
    from loopscope.formats import expand_paths

    if not cache.active() or not cache.has_corpora():
        return None
    target = Path(path).resolve()
    if not target.exists() or not cache.folder_marked(root_of(target)):
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
    names = snapshot_names(files, wanted, root)
    snapshot = exact_snapshot(names, files, wanted) if names is not None else None
    if snapshot is None:
        return None
    prepared = opened(snapshot.ingested.prepared.get((engine.name, engine.prepare_key(version))))
    if prepared is None or (whole_pools and not read_whole_pools(prepared)):
        return None
    out: list[PreparedFile] = []
    at = 0
    for (reached, scanned), (resolved, _), result in zip(given, files, snapshot.ingested.files,
                                                         strict=True):
        out.append(PreparedFile(reached, scanned, result, range(at, at + len(result.heads)),
                                resolved))
        at += len(result.heads)
    return PreparedFolder(out, prepared)
